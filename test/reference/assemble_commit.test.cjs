'use strict';
// Assembly and append commit, read back by the reference implementation: for every file
// version (2.0-2.3) and both manifest naming schemes, the data files of a generated dataset
// are assembled (a) in fragment order through the session registry and (b) in reverse order
// through the one-call form, each committed as an append; lancedb must then read the new
// fragments as exactly the inputs' rows in that order, for every column, and keep working
// (add, index, optimize) on top of our versions.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const arrow = require('apache-arrow');
const { encodeRows } = require('./values.cjs');
const h = require('./harness.cjs');

const DATASETS = [];

for (const version of ['2_0', '2_1', '2_2', '2_3'])
	for (const scheme of ['v1', 'v2'])
		DATASETS.push('types_' + version + '_' + scheme);
for (const version of ['2_0', '2_1', '2_2', '2_3'])
	DATASETS.push('multipage_' + version);

const dir = h.scratchDir('assemble-commit');

// Assemble through the session registry: register each part, then assemble(target).
function assembleRegistered(target, parts)
{
	const t = h.sqlJsonb(target);
	const script = parts.map((p) =>
		'SELECT lance_parts.register_part(' + t + ', ' + h.literal(p.path) + ', ' + p.rows + ');\n').join('') +
		'SELECT to_jsonb(r) FROM lance_parts.registered_parts(' + t + ') r;\n' +
		'SELECT to_jsonb(a) FROM lance_parts.assemble(' + t + ') a;\n';
	const lines = h.psqlLines(script);
	const positions = lines.slice(0, parts.length).map(Number);
	const registered = lines.slice(parts.length, 2 * parts.length).map((l) => JSON.parse(l));

	assert.deepEqual(positions, parts.map((_, i) => i + 1), 'register_part positions');
	assert.deepEqual(registered.map((r) => [r.position, r.uri, r.num_rows]),
		parts.map((p, i) => [i + 1, p.path, p.rows]), 'registered_parts');
	assert.equal(lines.length, 2 * parts.length + 1);
	return JSON.parse(lines[lines.length - 1]);
}

function assembleOneCall(target, parts)
{
	return h.sqlRows('SELECT * FROM lance_parts.assemble(' + h.sqlJsonb(target) + ', ' +
		h.sqlTextArray(parts.map((p) => p.path)) + ', ' +
		h.sqlBigintArray(parts.map((p) => p.rows)) + ')')[0];
}

function commit(target)
{
	return h.sqlRows('SELECT * FROM lance_parts.commit(' + h.sqlJsonb(target) + ')')[0];
}

for (const name of DATASETS)
{
	test(name + ': assemble in order and reversed, append, lancedb reads the rows', async () => {
		const info = h.datasetInfo(name);
		const dataset = h.copyDataset(name, dir);
		const parts = h.dataFiles(name).map((f) => ({
			path: path.join(dataset, 'data', f.file), rows: f.num_rows, fragment: f.fragment_id,
		}));
		const reversed = parts.slice().reverse();
		const oldRows = info.num_rows;
		const oldVersion = info.version;
		const nextFragment = Math.max(...parts.map((p) => p.fragment)) + 1;

		// Both targets are made at the same dataset version: the second commit rebases.
		const inOrder = h.createTarget(dataset);
		const inReverse = h.createTarget(dataset);

		assert.equal(inOrder.dataset_version, oldVersion);
		assert.equal(inOrder.file_version, info.file_version);
		assert.notEqual(inOrder.file_name, inReverse.file_name, 'each target names a new file');

		const a = assembleRegistered(inOrder, parts);
		const b = assembleOneCall(inReverse, reversed);

		for (const [result, target] of [[a, inOrder], [b, inReverse]])
		{
			assert.equal(result.status, 'written', JSON.stringify(result));
			assert.equal(result.reason, null);
			assert.equal(result.path, path.join(dataset, 'data', target.file_name));
			assert.equal(result.version, info.file_version);
			assert.equal(Number(result.num_rows), oldRows);
			assert.equal(Number(result.size_bytes), fs.statSync(result.path).size);
		}

		const ca = commit(inOrder);
		const cb = commit(inReverse);

		assert.deepEqual([Number(ca.dataset_version), Number(ca.fragment_id)], [oldVersion + 1, nextFragment]);
		assert.deepEqual([Number(cb.dataset_version), Number(cb.fragment_id)], [oldVersion + 2, nextFragment + 1]);

		// The dataset's own manifest naming, never the other one.
		const names = h.manifestNames(dataset);
		const scheme = info.manifest_scheme;

		assert.deepEqual(names[scheme === 'v1' ? 'v2' : 'v1'], [], 'no manifest under the other naming scheme');
		for (const v of [oldVersion + 1, oldVersion + 2])
			assert.ok(names.all.includes(h.manifestName(v, scheme)), 'manifest of version ' + v);

		const table = await h.openTable(dataset);

		assert.equal(await table.version(), oldVersion + 2);
		assert.equal(await table.countRows(), 3 * oldRows);

		const { schema, fragments } = await h.readFragments(table);
		const expected = h.expectedFragments(name);
		const inputs = (list) => list.flatMap((p) => expected.get(p.fragment));

		assert.deepEqual([...fragments.keys()].sort((x, y) => x - y),
			[...parts.map((p) => p.fragment), nextFragment, nextFragment + 1]);
		for (const p of parts)
			h.assertRowsEqual(schema, fragments.get(p.fragment), expected.get(p.fragment),
				'old fragment ' + p.fragment);
		h.assertRowsEqual(schema, fragments.get(nextFragment), inputs(parts),
			'fragment ' + nextFragment + ' (registered, in order)');
		h.assertRowsEqual(schema, fragments.get(nextFragment + 1), inputs(reversed),
			'fragment ' + (nextFragment + 1) + ' (one call, reversed)');

		await h.lancedbModifies(table);
	});
}

test('a committed target: cleanup_target refuses its file', () => {
	const name = 'types_2_1_v2';
	const dataset = h.copyDataset(name, fs.mkdtempSync(path.join(dir, 'cleanup-')));
	const target = h.createTarget(dataset);
	const parts = h.dataFiles(name).slice(0, 2).map((f) => ({ path: path.join(dataset, 'data', f.file), rows: f.num_rows }));

	assert.equal(assembleOneCall(target, parts).status, 'written');
	commit(target);
	assert.throws(() => h.sqlRows('SELECT lance_parts.cleanup_target(' + h.sqlJsonb(target) + ')'),
		/is part of version 4 of dataset/);
	assert.ok(fs.existsSync(path.join(dataset, 'data', target.file_name)));
});

// Retrying a whole ingest after an unknown outcome (a dropped connection, a pg_cron rerun)
// must not publish the same rows twice.
test('committing the same target twice is refused', async () => {
	const name = 'types_2_2_v2';
	const info = h.datasetInfo(name);
	const dataset = h.copyDataset(name, fs.mkdtempSync(path.join(dir, 'twice-')));
	const target = h.createTarget(dataset);
	const file = h.dataFiles(name)[2];

	assert.equal(assembleOneCall(target, [{ path: path.join(dataset, 'data', file.file), rows: file.num_rows }]).status, 'written');
	commit(target);
	assert.throws(() => commit(target), /already committed in version/);
	const table = await h.openTable(dataset);

	assert.equal(await table.version(), info.version + 1);
	assert.equal(await table.countRows(), info.num_rows + file.num_rows);
});

// Deletion files belong to fragments, not to data files: assembling the data files of
// fragments with deleted rows gives all their physical rows, and the old fragments keep
// their deletions.  The generator's rows depend only on the row number, so the physical rows
// of deleted_2_2 are rows 0..359 of types_2_2_v2.
test('deleted_2_2: assembling files of fragments with deletion files', async () => {
	const name = 'deleted_2_2';
	const info = h.datasetInfo(name);
	const dataset = h.copyDataset(name, dir);
	const files = h.dataFiles(name);
	const physical = files.reduce((n, f) => n + f.num_rows, 0);
	const target = h.createTarget(dataset);
	const result = assembleOneCall(target, files.map((f) => ({ path: path.join(dataset, 'data', f.file), rows: f.num_rows })));

	assert.equal(result.status, 'written', JSON.stringify(result));
	assert.equal(Number(result.num_rows), physical);
	const committed = commit(target);
	const table = await h.openTable(dataset);

	assert.equal(await table.countRows(), info.num_rows + physical);
	const { schema, fragments } = await h.readFragments(table);
	const expected = h.expectedFragments(name);
	const allRows = [...h.expectedFragments('types_2_2_v2').values()].flat();

	for (const f of files)
		h.assertRowsEqual(schema, fragments.get(f.fragment_id), expected.get(f.fragment_id) || [], 'old fragment ' + f.fragment_id);
	h.assertRowsEqual(schema, fragments.get(Number(committed.fragment_id)), allRows.slice(0, physical), 'new fragment');
	await h.lancedbModifies(table);
});

// A dataset with stable row ids: the appended fragment gets the next row ids (Lance's row id
// sequence), lancedb reads them in order and keeps counting after our version.
test('stable row ids: the new fragment continues the row id sequence', async () => {
	const db = await h.lancedb.connect(dir);
	const rowsOf = (first, count) => new arrow.Table({
		id: arrow.vectorFromArray(BigInt64Array.from({ length: count }, (_, i) => BigInt(first + i))),
		s: arrow.vectorFromArray(Array.from({ length: count }, (_, i) => 'value ' + (first + i)), new arrow.Utf8()),
	});
	const table = await db.createTable('stable_row_ids', rowsOf(0, 10),
		{ storageOptions: { newTableEnableStableRowIds: 'true' } });

	await table.add(rowsOf(10, 6));
	const dataset = path.join(dir, 'stable_row_ids.lance');
	const read = async (t) => encodeRows(await t.query().withRowId().toArrow())
		.sort((a, b) => Number(a._rowid) - Number(b._rowid));
	const before = await read(table);
	const [first, second] = [before.filter((r) => Number(r.id) < 10), before.filter((r) => Number(r.id) >= 10)];
	const byRows = (rows) => fs.readdirSync(path.join(dataset, 'data'))
		.map((f) => path.join(dataset, 'data', f))
		.find((f) => Number(h.sqlRows('SELECT num_rows FROM lance_parts.file_info(' + h.literal(f) + ')')[0].num_rows) === rows);
	const target = h.createTarget(dataset);

	assert.equal(assembleOneCall(target, [{ path: byRows(6), rows: 6 }, { path: byRows(10), rows: 10 }]).status, 'written');
	commit(target);

	const reopened = await h.openTable(dataset);
	const after = await read(reopened);
	const strip = (rows) => rows.map((r) => ({ id: r.id, s: r.s }));

	assert.deepEqual(after.map((r) => r._rowid), Array.from({ length: 32 }, (_, i) => String(i)), 'row ids 0..31');
	assert.deepEqual(strip(after.slice(16)), strip([...second, ...first]), 'new rows in row id order');
	assert.deepEqual(strip(after.slice(0, 16)), strip(before));
	await h.lancedbModifies(reopened);
	const last = await read(reopened);

	assert.equal(last.length, 33);
	assert.ok(new Set(last.map((r) => r._rowid)).size === 33, 'row ids stay unique after add and optimize');
	assert.ok(last.some((r) => r._rowid === '32'), 'the row lancedb added gets row id 32');
});
