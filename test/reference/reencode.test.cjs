'use strict';
// The re-encode fallback: parts lancedb wrote in another file version are decoded and encoded
// again by assemble(..., on_unsupported => 'reencode') and ingest, joined in caller order with
// parts copied page by page, and lancedb reads the new fragment exactly; compact(...,
// rewrite_deletions => true) rewrites fragments lancedb deleted rows from, and lancedb reads
// exactly the live rows and keeps working on the result.  Nested columns (lists, structs) are
// re-encoded from 2.1 on; a 2.0 target refuses lists with a clear error.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const arrow = require('apache-arrow');
const h = require('./harness.cjs');
const { psqlAsync } = require('./pg.cjs');
const { readManifest } = require('./lancemeta.cjs');

const dir = h.scratchDir('reencode');
const VERSIONS = ['2.0', '2.1', '2.2', '2.3'];
const VEC_TYPE = new arrow.FixedSizeList(4, new arrow.Field('item', new arrow.Float32(), true));

// A bool vector with nulls (vectorFromArray's bool builder leaves short bitmaps lancedb refuses).
function boolVector(values)
{
	const bytes = ((values.length + 63) & ~63) >> 3;
	const bits = new Uint8Array(bytes);
	const valid = new Uint8Array(bytes);
	let nullCount = 0;

	values.forEach((v, i) => {
		if (v === null)
			nullCount++;
		else
			valid[i >> 3] |= 1 << (i & 7);
		if (v)
			bits[i >> 3] |= 1 << (i & 7);
	});
	return arrow.makeVector(arrow.makeData({ type: new arrow.Bool(), length: values.length, nullCount,
		nullBitmap: nullCount > 0 ? valid : undefined, data: bits }));
}

// Rows [first, first + count) of the flat test table: nulls, empty strings, a constant
// column, long strings (full-zip pages in 2.1+), fixed-size lists.  Every multiple of 100
// is null-free: lancedbModifies adds the first row through a one-row batch, and the Arrow
// IPC bridge of lancedb 0.39 refuses one-row batches with a null bool.
function rowsOf(first, count)
{
	const ids = Array.from({ length: count }, (_, i) => first + i);
	const text = (id) => (id % 11 === 5 ? null : id % 7 === 0 ? '' :
		id % 50 === 0 ? 'long ' + String(id).repeat(60) : 'v' + id);

	return new arrow.Table({
		id: arrow.vectorFromArray(BigInt64Array.from(ids, (id) => BigInt(id))),
		s: arrow.vectorFromArray(ids.map(text), new arrow.Utf8()),
		x: arrow.vectorFromArray(ids.map((id) => (id % 13 === 3 ? null : id * 0.25)), new arrow.Float64()),
		b: boolVector(ids.map((id) => (id % 17 === 5 ? null : id % 3 === 0))),
		c: arrow.vectorFromArray(ids.map(() => 42), new arrow.Int32()),
		vec: arrow.vectorFromArray(ids.map((id) => (id % 19 === 7 ? null : [id, -id, id / 2, 1])), VEC_TYPE),
	});
}

function storage(version)
{
	return { storageOptions: { newTableDataStorageVersion: version } };
}

// A dataset lancedb writes in `version` from the given tables (one fragment each).
async function writeDataset(name, version, tables)
{
	const db = await h.lancedb.connect(dir);
	const table = await db.createTable(name, tables[0], storage(version));

	for (const more of tables.slice(1))
		await table.add(more);
	return { dataset: path.join(dir, name + '.lance'), table };
}

// A part: the one data file of a dataset lancedb writes in `version`, and its rows.
async function writePart(name, version, first, count)
{
	const { dataset, table } = await writeDataset(name, version, [rowsOf(first, count)]);
	const files = fs.readdirSync(path.join(dataset, 'data')).filter((f) => f.endsWith('.lance'));

	assert.equal(files.length, 1);
	const { fragments } = await h.readFragments(table);

	return { path: path.join(dataset, 'data', files[0]), rows: fragments.get(0), count };
}

function assemble(target, parts, extra)
{
	return h.sqlRows('SELECT * FROM lance_parts.assemble(' + h.sqlJsonb(target) + ', ' +
		h.sqlTextArray(parts.map((p) => p.path)) + (extra ? ', ' + extra : '') + ')')[0];
}

function commit(target)
{
	return h.sqlRows('SELECT * FROM lance_parts.commit(' + h.sqlJsonb(target) + ')')[0];
}

for (const version of VERSIONS)
{
	test('parts of other versions into a ' + version + ' dataset: re-encoded, in caller order', async () => {
		const tag = version.replace('.', '_');
		const others = VERSIONS.filter((v) => v !== version);
		const { dataset, table } = await writeDataset('target_' + tag, version, [rowsOf(0, 300)]);
		// a part of the target's version between the others: page copy and re-encoding mixed
		const parts = [
			await writePart('part_' + tag + '_a', others[0], 1000, 10000),
			await writePart('part_' + tag + '_b', version, 20000, 500),
			await writePart('part_' + tag + '_c', others[1], 30000, 700),
			await writePart('part_' + tag + '_d', others[2], 40000, 1),
		];
		const target = h.createTarget(dataset);
		const total = parts.reduce((n, p) => n + p.count, 0);

		// the default still refuses, and writes nothing
		const refused = assemble(target, parts);

		assert.equal(refused.status, 'unsupported');
		assert.equal(refused.reason, 'version_mismatch');
		assert.deepEqual(refused.reencoded_parts, []);

		const written = assemble(target, parts, "on_unsupported => 'reencode'");

		assert.equal(written.status, 'written', JSON.stringify(written));
		assert.equal(written.version, version);
		assert.equal(Number(written.num_rows), total);
		assert.deepEqual(written.reencoded_parts, [1, 3, 4]);
		// the re-encoded files are gone: only the parts' own files stay in the staging area
		const staging = path.join(dataset, 'data', '_parts', target.file_name.replace(/\.lance$/, ''));

		assert.deepEqual(fs.existsSync(staging) ? fs.readdirSync(staging) : [], []);

		const committed = commit(target);
		const reopened = await h.openTable(dataset);
		const { schema, fragments } = await h.readFragments(reopened);

		assert.equal(await reopened.countRows(), 300 + total);
		h.assertRowsEqual(schema, fragments.get(Number(committed.fragment_id)),
			parts.flatMap((p) => p.rows), 'new fragment');
		await h.lancedbModifies(reopened);
		assert.equal(await table.countRows(), 300, 'the old handle still sees its version');
	});
}

// Files of lancedb 0.5.2 (2.0, strings stored as lists of u8 in two columns: bytes_as_lists,
// which lancedb 0.39 no longer reads) re-encoded into 2.0 and 2.2 datasets lancedb 0.39
// wrote with their schema; lancedb 0.39 reads the rows 0.5.2 read from them.
test('lancedb 0.5.2 parts (bytes_as_lists) re-encoded into 2.0 and 2.2 datasets', async () => {
	const legacy = JSON.parse(fs.readFileSync(path.join(h.TESTDATA, 'legacy', 'legacy.json'), 'utf8'))
		.datasets.find((d) => d.name === 'strlist_2_0');
	const rows = JSON.parse(fs.readFileSync(legacy.rows_file, 'utf8'));
	const parts = legacy.data_files.slice().sort((a, b) => a.fragment_id - b.fragment_id)
		.map((f) => ({ path: path.join(legacy.path, 'data', f.file) }));
	const f = (name, type, nullable) => new arrow.Field(name, type, nullable);
	const schema = new arrow.Schema([f('id', new arrow.Int64(), false), f('s', new arrow.Utf8(), true),
		f('ls', new arrow.LargeUtf8(), true), f('bin', new arrow.Binary(), true),
		f('lbin', new arrow.LargeBinary(), true), f('small_u32', new arrow.Uint32(), false),
		f('small_i64', new arrow.Int64(), false), f('u8', new arrow.Uint8(), false), f('n_i32', new arrow.Int32(), true)]);
	const one = new arrow.Table(schema, arrow.makeData({ type: new arrow.Struct(schema.fields), length: 1,
		children: schema.fields.map((field) => arrow.vectorFromArray(
			[/int64/i.test(String(field.type)) ? -1n : /binary/i.test(String(field.type)) ? new Uint8Array([7]) :
				/utf8/i.test(String(field.type)) ? 'x' : 7], field.type).data[0]) }));

	for (const version of ['2.0', '2.2'])
	{
		const { dataset } = await writeDataset('strlist_into_' + version.replace('.', '_'), version, [one]);
		const target = h.createTarget(dataset);

		assert.equal(assemble(target, parts).reason, 'bytes_as_lists');
		const written = assemble(target, parts, "on_unsupported => 'reencode'");

		assert.equal(written.status, 'written', JSON.stringify(written));
		assert.deepEqual(written.reencoded_parts, [1, 2]);
		const committed = commit(target);
		const read = await h.readFragments(await h.openTable(dataset));

		h.assertRowsEqual(read.schema, read.fragments.get(Number(committed.fragment_id)), rows, dataset);
	}
});

test('ingest with on_unsupported => reencode', async () => {
	const { dataset } = await writeDataset('ingest_target', '2.2', [rowsOf(0, 50)]);
	const parts = [await writePart('ingest_a', '2.0', 100, 30), await writePart('ingest_b', '2.2', 200, 40)];
	const list = h.sqlTextArray(parts.map((p) => p.path));

	assert.throws(() => h.sqlRows('SELECT * FROM lance_parts.ingest(' + h.literal(dataset) + ', ' + list + ')'),
		/parts cannot be assembled into dataset/);
	const [row] = h.sqlRows('SELECT * FROM lance_parts.ingest(' + h.literal(dataset) + ', ' + list +
		", on_unsupported => 'reencode')");

	assert.equal(Number(row.num_rows), 70);
	assert.deepEqual(row.reencoded_parts, [1]);
	const { schema, fragments } = await h.readFragments(await h.openTable(dataset));

	h.assertRowsEqual(schema, fragments.get(Number(row.fragment_id)), parts.flatMap((p) => p.rows), 'ingested fragment');
});

test('a cancelled re-encode leaves no file behind; the progress view shows its phase and bytes', async () => {
	const { dataset } = await writeDataset('cancel_target', '2.2', [rowsOf(0, 10)]);
	// a million rows (one lancedb file), so that the re-encode outlasts several progress reports
	const rows = 1000000;
	const part = await writePart('cancel_part', '2.1', 0, rows);
	const target = h.createTarget(dataset);
	const staging = path.join(dataset, 'data', '_parts', target.file_name);
	const call = 'SELECT * FROM lance_parts.assemble(' + h.sqlJsonb(target) + ', ' +
		h.sqlTextArray([part.path]) + ", on_unsupported => 'reencode');\n";
	const phases = new Set();
	let bytesDone = 0;
	const running = psqlAsync("SET application_name = 'reencode_cancel';\n" + call, true);

	// watch the phase and the source bytes re-encoded, then cancel the call while it re-encodes
	// a deadline, not a count of polls: each poll runs psql, slow on a loaded machine
	for (const deadline = Date.now() + 60000; Date.now() < deadline && bytesDone === 0;)
	{
		for (const row of h.sqlRows("SELECT phase, bytes_done FROM lance_parts.progress WHERE target_file LIKE '%" +
			target.file_name + "'"))
		{
			phases.add(row.phase);
			if (row.phase === 'reencoding')
				bytesDone = Number(row.bytes_done);
		}
		await new Promise((resolve) => setTimeout(resolve, 10));
	}
	h.sqlRows("SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = 'reencode_cancel'");
	const { err } = await running;

	assert.ok(phases.has('reencoding'), 'phase reencoding seen: ' + [...phases].join(', '));
	assert.ok(bytesDone > 0 && bytesDone <= fs.statSync(part.path).size, 'bytes re-encoded: ' + bytesDone);
	assert.match(err.join('\n'), /canceling statement due to user request/);
	assert.deepEqual(fs.existsSync(staging) ? fs.readdirSync(staging) : [], [], 'no re-encoded file left');
	assert.ok(!fs.existsSync(path.join(dataset, 'data', target.file_name)), 'no data file');
	assert.deepEqual(fs.readdirSync(path.join(dataset, 'data')).filter((f) => f.endsWith('.tmp') || f.startsWith('.')), []);

	// the same call, not cancelled, writes the file
	const [row] = h.sqlRows(call.replace(/;\n$/, ''));

	assert.equal(row.status, 'written');
	assert.equal(Number(row.num_rows), rows);
});

test('parts whose rows do not fit the target stay unsupported', async () => {
	const { dataset } = await writeDataset('other_schema_target', '2.2', [rowsOf(0, 10)]);
	const db = await h.lancedb.connect(dir);

	await db.createTable('other_schema_part', new arrow.Table({
		id: arrow.vectorFromArray(BigInt64Array.from([1n, 2n])),
		s: arrow.vectorFromArray([1.5, 2.5], new arrow.Float64()),
	}), storage('2.1'));
	const data = path.join(dir, 'other_schema_part.lance', 'data');
	const part = { path: path.join(data, fs.readdirSync(data)[0]) };
	const result = assemble(h.createTarget(dataset), [part], "on_unsupported => 'reencode'");

	assert.equal(result.status, 'unsupported');
	assert.equal(result.reason, 'version_mismatch');
	assert.deepEqual(result.reencoded_parts, []);
});

// Nested columns (lists, structs, nulls at every level) of every version re-encoded into
// the 2.1+ reference datasets; the rows are those the generator wrote.
for (const version of ['2_1', '2_2', '2_3'])
{
	test('types_' + version + '_v2: nested parts of the other versions re-encoded, in caller order', async () => {
		const dataset = h.copyDataset('types_' + version + '_v2', h.scratchDir('reencode-types'));
		const sources = ['2_0', '2_1', '2_2', '2_3'].filter((v) => v !== version).map((v) => 'types_' + v + '_v2');
		const parts = sources.map((name) => {
			const file = h.dataFiles(name)[1];

			return { path: path.join(h.TESTDATA, name + '.lance', 'data', file.file),
				rows: h.expectedFragments(name).get(file.fragment_id) };
		});
		const target = h.createTarget(dataset);
		const written = assemble(target, parts, "on_unsupported => 'reencode'");

		assert.equal(written.status, 'written', JSON.stringify(written));
		assert.deepEqual(written.reencoded_parts, [1, 2, 3]);
		const committed = commit(target);
		const table = await h.openTable(dataset);
		const { schema, fragments } = await h.readFragments(table);

		h.assertRowsEqual(schema, fragments.get(Number(committed.fragment_id)), parts.flatMap((p) => p.rows), 'new fragment');
		await h.lancedbModifies(table);
	});
}

test('null structs in a 2.0 target are refused with a clear error', () => {
	const dataset = h.copyDataset('types_2_0_v2', h.scratchDir('reencode-2_0'));
	const target = h.createTarget(dataset);
	const part = { path: path.join(h.TESTDATA, 'types_2_1_v2.lance', 'data', h.dataFiles('types_2_1_v2')[0].file) };

	assert.throws(() => assemble(target, [part], "on_unsupported => 'reencode'"),
		/part 1 \(.*\) cannot be re-encoded: a struct in field "st" is null at row \d+, which the encoder cannot write in a 2.0 file/);
	const staging = path.join(dataset, 'data', '_parts', target.file_name);

	assert.deepEqual(fs.existsSync(staging) ? fs.readdirSync(staging) : [], [], 'no re-encoded file left');
});

// lancedb writes three fragments and deletes rows from the first and the last.
async function datasetWithDeletions(name, version)
{
	const { dataset, table } = await writeDataset(name, version,
		[rowsOf(0, 9000), rowsOf(9000, 150), rowsOf(9150, 400)]);

	await table.delete('(id < 9000 AND id % 4 = 1) OR (id >= 9200 AND id < 9300) OR id = 9549');
	return { dataset, table };
}

for (const version of VERSIONS)
{
	test('compact rewrite_deletions on ' + version + ': lancedb reads exactly the live rows', async () => {
		const { dataset, table } = await datasetWithDeletions('deleted_' + version.replace('.', '_'), version);
		const before = await h.readFragments(table);
		const live = [...before.fragments.keys()].sort((a, b) => a - b).flatMap((id) => before.fragments.get(id));
		const versionBefore = await table.version();

		// the default keeps them
		const skipped = h.sqlRows('SELECT * FROM lance_parts.compact(' + h.literal(dataset) + ')');

		assert.deepEqual(skipped.map((r) => [Number(r.fragment_id), r.action, r.reason]),
			[[0, 'skipped', 'deletion_file'], [1, 'skipped', 'no_adjacent_fragment'], [2, 'skipped', 'deletion_file']]);

		const result = h.sqlRows('SELECT * FROM lance_parts.compact(' + h.literal(dataset) +
			', rewrite_deletions => true)');

		assert.deepEqual(result.map((r) => [Number(r.fragment_id), r.action]),
			[[0, 'rewritten'], [1, 'rewritten'], [2, 'rewritten']]);
		assert.equal(new Set(result.map((r) => r.new_fragment_id)).size, 1);
		assert.equal(Number(result[0].dataset_version), versionBefore + 1);

		const reopened = await h.openTable(dataset);
		const after = await h.readFragments(reopened);

		assert.deepEqual([...after.fragments.keys()], [Number(result[0].new_fragment_id)]);
		h.assertRowsEqual(after.schema, after.fragments.get(Number(result[0].new_fragment_id)), live, 'live rows');
		assert.equal(await reopened.countRows(), live.length);
		assert.deepEqual(fs.readdirSync(path.join(dataset, 'data', '_parts')), [], 'no re-encode directory left');
		await h.lancedbModifies(reopened);
	});
}

test('compact rewrite_deletions on deleted_2_2 (nested columns): lancedb reads exactly the live rows', async () => {
	const dataset = h.copyDataset('deleted_2_2', h.scratchDir('reencode-nested'));
	const expected = h.expectedFragments('deleted_2_2');
	const live = [...expected.keys()].sort((a, b) => a - b).flatMap((id) => expected.get(id));
	const result = h.sqlRows('SELECT * FROM lance_parts.compact(' + h.literal(dataset) +
		', rewrite_deletions => true)');

	assert.deepEqual(result.map((r) => [Number(r.fragment_id), r.action]),
		[[0, 'rewritten'], [1, 'rewritten'], [2, 'rewritten']]);
	const table = await h.openTable(dataset);
	const after = await h.readFragments(table);

	assert.deepEqual([...after.fragments.keys()], [Number(result[0].new_fragment_id)]);
	h.assertRowsEqual(after.schema, after.fragments.get(Number(result[0].new_fragment_id)), live, 'live rows');
	assert.deepEqual(fs.readdirSync(path.join(dataset, 'data', '_parts')), [], 'no re-encode directory left');
	await h.lancedbModifies(table);
});

// Rows of a long run: numbers, strings of several lengths (FSST tables of their own per
// piece) and nulls.
const pieceRowsOf = (first, n) => new arrow.Table({
	id: arrow.vectorFromArray(BigInt64Array.from({ length: n }, (_, i) => BigInt(first + i))),
	s: arrow.vectorFromArray(Array.from({ length: n }, (_, i) => ((first + i) % 11 === 5 ? null :
		'row ' + (first + i) + ' '.repeat((first + i) % 7) + (Math.imul(first + i, 2654435761) >>> 0).toString(16) +
		'x'.repeat((first + i) % 23))), new arrow.Utf8()),
	x: arrow.vectorFromArray(Float64Array.from({ length: n }, (_, i) => (first + i) * 0.25)),
});

// Enough rows that compaction cuts the run of fragments with deletions into pieces of about
// 2 MiB of source, which parallel workers re-encode beside the leader.
async function largeDatasetWithDeletions(name)
{
	const tables = Array.from({ length: 8 }, (_, f) => pieceRowsOf(f * 40000, 40000));
	const { dataset, table } = await writeDataset(name, '2.1', tables);

	await table.delete('id % 10 = 7 OR (id >= 81000 AND id < 83000)');
	return { dataset, table };
}

// compact with lance_parts.max_copy_workers = workers; startable: whether workers can start.
async function compactInPieces(dataset, workers, startable)
{
	const { out, err } = await psqlAsync(`SET lance_parts.max_copy_workers = ${workers};
${startable ? '' : 'SET max_parallel_workers = 0;'}
SET client_min_messages = debug1;
SELECT count(*) FILTER (WHERE action = 'rewritten') FROM lance_parts.compact(${h.literal(dataset)}, rewrite_deletions => true);
`, true);

	return { out, messages: err.filter((l) => /re-encod/.test(l)) };
}

test('compact rewrite_deletions of a long run: pieces re-encoded by parallel workers, by the leader when none starts, or the run whole without them, read the same', async () => {
	const { dataset, table } = await largeDatasetWithDeletions('deleted_pieces');
	const before = await h.readFragments(table);
	const live = [...before.fragments.keys()].sort((a, b) => a - b).flatMap((id) => before.fragments.get(id));
	const copies = [
		{ label: '2 workers', dataset, workers: 2, startable: true, pieces: 3 },
		{ label: 'no worker starts', dataset: path.join(dir, 'deleted_pieces_fallback.lance'), workers: 2, startable: false, pieces: 3 },
		// the pieces follow the setting, not the workers that start; without workers the run is one file
		{ label: 'max_copy_workers 0', dataset: path.join(dir, 'deleted_pieces_serial.lance'), workers: 0, startable: true, pieces: 1 },
	];
	const bytes = [];

	for (const copy of copies.slice(1))
		fs.cpSync(dataset, copy.dataset, { recursive: true });
	for (const copy of copies)
	{
		const { out, messages } = await compactInPieces(copy.dataset, copy.workers, copy.startable);
		const text = messages.join('\n');

		assert.deepEqual(out, ['8'], text);
		assert.equal(messages.filter((l) => /re-encoded \d+ part\(s\)/.test(l)).length, copy.pieces, `${copy.label}: ${text}`);
		assert.equal(messages.some((l) => /re-encoding 3 runs of parts with [12] parallel workers/.test(l)),
			copy.label === '2 workers', `${copy.label}: ${text}`);
		assert.equal(messages.some((l) => /NOTICE: {2}no parallel workers could be started to re-encode parts into ".*_parts\/[0-9a-f]+\.lance", re-encoding serially/.test(l)),
			copy.label === 'no worker starts', `${copy.label}: ${text}`);
		const reopened = await h.openTable(copy.dataset);
		const after = await h.readFragments(reopened);

		assert.equal(after.fragments.size, 1);
		h.assertRowsEqual(after.schema, [...after.fragments.values()][0], live, `live rows, ${copy.label}`);
		assert.deepEqual(fs.readdirSync(path.join(copy.dataset, 'data', '_parts')), [], 'no re-encode directory left');
		const { fragments } = readManifest(copy.dataset);

		bytes.push(fs.readFileSync(path.join(copy.dataset, 'data', fragments[0].files[0].path)));
	}
	assert.ok(bytes[0].equals(bytes[1]), 'the same file whether the workers or the leader re-encode the pieces');
	await h.lancedbModifies(await h.openTable(dataset));
});

test('a damaged fragment in a piece of a long run: ERROR XX001 naming the piece\'s parts, the dataset as it was', async () => {
	const { dataset } = await largeDatasetWithDeletions('deleted_pieces_damaged');
	const { fragments } = readManifest(dataset);
	const last = path.join(dataset, 'data', fragments[fragments.length - 1].files[0].path);
	const bytes = fs.readFileSync(last);
	const versionsBefore = fs.readdirSync(path.join(dataset, '_versions')).sort();

	// page bytes overwritten (the footer intact): found while decoding, by whoever re-encodes the piece
	bytes.fill(0xff, 1000, bytes.length >> 1);
	fs.writeFileSync(last, bytes);
	const { out, err } = await psqlAsync(`\\set VERBOSITY verbose
SET lance_parts.max_copy_workers = 2;
SELECT count(*) FROM lance_parts.compact(${h.literal(dataset)}, rewrite_deletions => true);
`, true);

	assert.deepEqual(out, []);
	assert.match(err.join('\n'), /ERROR: {2}XX001: parts [2-7] to 8 cannot be re-encoded: .* of file ".*\/data\/[0-9a-f]+\.lance"/);
	assert.deepEqual(fs.readdirSync(path.join(dataset, '_versions')).sort(), versionsBefore);
	assert.deepEqual(fs.readdirSync(path.join(dataset, 'data', '_parts')), [], 'no re-encoded file left');
	assert.equal(fs.readdirSync(path.join(dataset, 'data')).filter((f) => f.endsWith('.lance')).length, 8,
		'no compacted file left');
});

test('a compaction cancelled while workers re-encode pieces: no worker, no file and no version left', async () => {
	// 8 fragments of 150,000 rows, so that the re-encode outlasts several progress reports
	const tables = Array.from({ length: 8 }, (_, f) => pieceRowsOf(f * 150000, 150000));
	const { dataset, table } = await writeDataset('deleted_pieces_cancel', '2.1', tables);

	await table.delete('id % 10 = 7');
	const versionsBefore = fs.readdirSync(path.join(dataset, '_versions')).sort();
	const dataBefore = fs.readdirSync(path.join(dataset, 'data')).sort();
	const running = psqlAsync(`SET application_name = 'pieces_cancel';
SET lance_parts.max_copy_workers = 2;
SELECT count(*) FROM lance_parts.compact(${h.literal(dataset)}, rewrite_deletions => true);
`, true);
	let bytesDone = 0;
	let workers = 0;
	let leader = 0;

	// until the leader reports bytes and its workers show, then cancel; a deadline, not a count
	// of polls: each poll runs psql, slow on a loaded machine
	for (const deadline = Date.now() + 60000; Date.now() < deadline && (bytesDone === 0 || workers === 0);)
	{
		for (const row of h.sqlRows(`SELECT p.pid, p.phase, p.bytes_done,
	(SELECT count(*) FROM pg_stat_activity w WHERE w.leader_pid = p.pid AND w.pid <> p.pid) AS workers
FROM lance_parts.progress_entries() p WHERE p.dataset LIKE '%deleted_pieces_cancel.lance'`))
		{
			if (row.phase === 'reencoding' && Number(row.bytes_done) > 0)
			{
				bytesDone = Number(row.bytes_done);
				workers = Number(row.workers);
				leader = Number(row.pid);
			}
		}
		await new Promise((resolve) => setTimeout(resolve, 10));
	}
	h.sqlRows("SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = 'pieces_cancel' AND leader_pid IS NULL");
	const { err } = await running;

	assert.ok(bytesDone > 0, 'the re-encoding phase seen');
	assert.ok(workers > 0, 'parallel workers seen re-encoding');
	assert.match(err.join('\n'), /canceling statement due to user request/);
	assert.deepEqual(h.sqlRows(`SELECT pid FROM pg_stat_activity WHERE leader_pid = ${leader} AND pid <> ${leader}`), [],
		'no worker outlives the cancelled call');
	assert.deepEqual(fs.readdirSync(path.join(dataset, '_versions')).sort(), versionsBefore);
	assert.deepEqual(fs.readdirSync(path.join(dataset, 'data')).filter((f) => f !== '_parts').sort(),
		dataBefore.filter((f) => f !== '_parts'), 'no compacted or temporary file left');
	assert.deepEqual(fs.existsSync(path.join(dataset, 'data', '_parts')) ?
		fs.readdirSync(path.join(dataset, 'data', '_parts')) : [], [], 'no re-encoded piece left');
});
