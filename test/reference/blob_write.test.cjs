'use strict';
// Blob v2 columns written by the encoder from SQL, read back by the reference (npm lancedb 0.39).
//
//  - write_dataset append of a query with a bytea column into 2.2 and 2.3 datasets the reference
//    wrote with lancedb.blob(...) thresholds (inline up to 64 bytes, dedicated above 1024): the
//    payloads, around both thresholds, with empties and NULLs, become inline, packed and
//    dedicated descriptors; the reference's blob API (fetchBlobs) returns every
//    payload of the old and the new rows exactly (sha256), and the new sidecars hold exactly the
//    packed and dedicated bytes under the new data file's sidecar directory.
//  - a jsonb column of External descriptors (absolute blob_uri and a range) is written as is;
//    descriptors a new data file cannot hold (Packed, Dedicated, non-empty Inline, Managed) are
//    refused and the dataset is left as it was.
//  - an ERROR in the middle of the write (after inline, packed and dedicated payloads of the
//    first rows were written) leaves no data file, no sidecar and no new version.
//  - write_part into a target of a dataset the reference wrote: no payload is inline (none of
//    their bytes is in the part file), the target's sidecar directory holds one pack file with the
//    packed payloads in row order and a sidecar per dedicated payload, all named by ids of the
//    lease the result's blob_ids returns; a second part gets another lease; descriptors of
//    write_packed_blobs are taken inside their lease (blob_ids is that lease), ids outside every
//    lease refused; an ERROR mid-write leaves no part and no sidecar.
//  - write_dataset create with blob_columns (Lance's default thresholds: payloads of 64 KiB inline,
//    of 4 MiB + 1 dedicated): the reference reads every payload and sees a blob column; 2.1 and
//    unknown names are refused and leave nothing.
//  - end to end (issue 13's acceptance): two sessions write parts of one target at once, each
//    under its own lease; registered with those leases, assembled and committed, every payload of
//    the old and new rows reads back exactly through the reference's blob API.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const lancedb = require('@lancedb/lancedb');
const { APPENDS, DEDICATED_MIN, payload, sha256, writeBlobDataset } = require('./blob_data.cjs');
const { psqlLines, psqlAsync, literal } = require('./pg.cjs');
const { scratchDir } = require('./harness.cjs');

const dir = scratchDir('blob_write');
const OLD_ROWS = APPENDS[0] + APPENDS[1];
const NEW_ROWS = 40;

psqlLines('CREATE EXTENSION IF NOT EXISTS lance_parts;\n');

// The payload of new row g (ids from OLD_ROWS on): sizes around the thresholds, empty, null.
const NEW_SIZES = [0, 1, 64, 65, 500, DEDICATED_MIN, DEDICATED_MIN + 1, 3000, null, 700];

function newPayload(g)
{
	const size = NEW_SIZES[g % NEW_SIZES.length];

	return size === null ? null : Buffer.from(Array.from({ length: size }, (_, i) => (g * 37 + i * 11) & 0xff));
}

// A SQL expression of newPayload(g) for g, from a generate_series column g.
function payloadSql()
{
	const cases = NEW_SIZES.map((size, k) => size === null ? `WHEN ${k} THEN NULL` :
		`WHEN ${k} THEN (SELECT coalesce(string_agg(set_byte('\\x00'::bytea, 0, (g * 37 + i * 11) & 255), ''::bytea ORDER BY i), ''::bytea) FROM generate_series(0, ${size - 1}) i)`);

	return `CASE g % ${NEW_SIZES.length} ${cases.join(' ')} END`;
}

function dataFiles(dataset)
{
	return fs.readdirSync(path.join(dataset, 'data')).filter((f) => f.endsWith('.lance')).sort();
}

function sidecarFiles(dataset)
{
	const out = [];

	for (const entry of fs.readdirSync(path.join(dataset, 'data'), { withFileTypes: true }))
		if (entry.isDirectory())
			for (const file of fs.readdirSync(path.join(dataset, 'data', entry.name)))
				out.push(entry.name + '/' + file);
	return out.sort();
}

async function fetchAll(dataset)
{
	const table = await (await lancedb.connect(path.dirname(dataset))).openTable(path.basename(dataset, '.lance'));
	const rows = await table.query().select(['id']).withRowId().toArray();
	const fetched = await table.fetchBlobs('payload', rows.map((r) => r._rowid));
	const out = new Map();

	rows.forEach((r, i) => out.set(Number(r.id), sha256(fetched[i] === null ? null : Buffer.from(fetched[i]))));
	return { out, version: await table.version() };
}

for (const version of ['2.2', '2.3'])
{
	const name = 'blobs_' + version.replace('.', '_');
	const dataset = path.join(dir, name + '.lance');

	test(version + ': write_dataset append of bytea payloads: the reference reads every payload', async () => {
		await writeBlobDataset(await lancedb.connect(dir), name, version);
		const filesBefore = dataFiles(dataset);

		const result = psqlLines(`SELECT dataset_version || ' ' || fragments || ' ' || num_rows
  FROM lance_parts.write_dataset(${literal(dataset)},
    $q$SELECT g::bigint AS id, ${payloadSql()} AS payload FROM generate_series(${OLD_ROWS}, ${OLD_ROWS + NEW_ROWS - 1}) g ORDER BY g$q$,
    'append');
`);
		assert.deepEqual(result, ['3 1 ' + NEW_ROWS]);

		const { out } = await fetchAll(dataset);

		assert.equal(out.size, OLD_ROWS + NEW_ROWS);
		for (let g = 0; g < OLD_ROWS; g++)
			assert.equal(out.get(g), sha256(payload(g)), 'old row ' + g);
		for (let g = OLD_ROWS; g < OLD_ROWS + NEW_ROWS; g++)
			assert.equal(out.get(g), sha256(newPayload(g)), 'new row ' + g);

		// the new file's sidecars: one pack (the packed payloads in row order), one per dedicated payload
		const added = dataFiles(dataset).filter((f) => !filesBefore.includes(f));

		assert.equal(added.length, 1);
		const stem = added[0].replace(/\.lance$/, '');
		const sidecars = sidecarFiles(dataset).filter((s) => s.startsWith(stem + '/'));
		const packed = [];
		const dedicated = [];

		for (let g = OLD_ROWS; g < OLD_ROWS + NEW_ROWS; g++)
		{
			const p = newPayload(g);

			if (p !== null && p.length > DEDICATED_MIN)
				dedicated.push(p);
			else if (p !== null && p.length > 64)
				packed.push(p);
		}
		assert.equal(sidecars.length, 1 + dedicated.length);
		const contents = sidecars.map((s) => fs.readFileSync(path.join(dataset, 'data', s)));
		const pack = Buffer.concat(packed);

		assert.equal(contents.filter((c) => c.equals(pack)).length, 1, 'one pack file holds the packed payloads in order');
		for (const d of dedicated)
			assert.ok(contents.some((c) => c.equals(d)), 'a dedicated sidecar of ' + d.length + ' bytes');
	});

	test(version + ': jsonb External descriptors are written as is; other kinds are refused', async () => {
		const external = path.join(dir, 'external-' + name + '.bin');
		const bytes = Buffer.from(Array.from({ length: 5000 }, (_, i) => (i * 7 + 3) & 0xff));

		fs.writeFileSync(external, bytes);
		const before = await fetchAll(dataset);
		const first = OLD_ROWS + NEW_ROWS;

		for (const bad of [
			'{"kind": 1, "position": 0, "size": 10, "blob_id": 1, "blob_uri": ""}',
			'{"kind": 2, "position": 0, "size": 10, "blob_id": 1, "blob_uri": ""}',
			'{"kind": 0, "position": 0, "size": 10, "blob_id": 0, "blob_uri": ""}',
			'{"kind": 4, "position": 0, "size": 10, "blob_id": 1, "blob_uri": "x"}',
			'{"kind": 3, "position": 0, "size": 10, "blob_id": 0, "blob_uri": "relative/path"}',
			'{"kind": 3, "position": 0, "size": 10, "blob_uri": "/x"}',
		])
		{
			const { err } = await psqlAsync(`SELECT lance_parts.write_dataset(${literal(dataset)},
    $q$SELECT ${first}::bigint AS id, ${literal(bad)}::jsonb AS payload$q$, 'append');
`, true);

			assert.match(err.join('\n'), /ERROR: {2}(descriptor of kind \d cannot be written to blob column "payload"|blob descriptor of column "payload" has)/, bad);
		}
		const after = await fetchAll(dataset);

		assert.equal(after.version, before.version, 'refused writes make no version');
		assert.equal(after.out.size, before.out.size);

		// rows first..first+2: External ranges of the file, an empty Inline descriptor and a null
		psqlLines(`SELECT lance_parts.write_dataset(${literal(dataset)}, $q$
SELECT * FROM (VALUES
  (${first}::bigint, jsonb_build_object('kind', 3, 'position', 100, 'size', 2000, 'blob_id', 0, 'blob_uri', ${literal(external)})),
  (${first + 1}::bigint, jsonb_build_object('kind', 3, 'position', 4000, 'size', 1000, 'blob_id', 0, 'blob_uri', ${literal(external)})),
  (${first + 2}::bigint, '{"kind": 0, "position": 0, "size": 0, "blob_id": 0, "blob_uri": ""}'::jsonb),
  (${first + 3}::bigint, NULL::jsonb)) v(id, payload)$q$, 'append');
`);
		const { out } = await fetchAll(dataset);

		assert.equal(out.get(first), sha256(bytes.subarray(100, 2100)));
		assert.equal(out.get(first + 1), sha256(bytes.subarray(4000, 5000)));
		assert.equal(out.get(first + 2), sha256(Buffer.alloc(0)));
		assert.equal(out.get(first + 3), null);
		assert.equal(out.get(0), sha256(payload(0)), 'old rows stay readable');
	});

	test(version + ': an ERROR in the middle of the write leaves no data file, sidecar or version', async () => {
		const filesBefore = dataFiles(dataset);
		const sidecarsBefore = sidecarFiles(dataset);
		const { version: versionBefore } = await fetchAll(dataset);

		// rows of every kind first, then a division by zero
		const { err } = await psqlAsync(`SELECT lance_parts.write_dataset(${literal(dataset)},
    $q$SELECT g::bigint AS id, CASE WHEN g < 1000 THEN ${payloadSql()} ELSE (1 / (g - g))::text::bytea END AS payload
       FROM generate_series(1000 - 25, 1001) g ORDER BY g$q$, 'append');
`, true);

		assert.match(err.join('\n'), /division by zero/);
		assert.deepEqual(dataFiles(dataset), filesBefore);
		assert.deepEqual(sidecarFiles(dataset), sidecarsBefore);
		assert.deepEqual(fs.readdirSync(path.join(dataset, 'data')).filter((f) => f.startsWith('.')), []);
		assert.equal((await fetchAll(dataset)).version, versionBefore);
	});
}

// write_part into a target of a dataset the reference wrote with a blob column.
for (const version of ['2.2', '2.3'])
{
	const name = 'parts_' + version.replace('.', '_');
	const dataset = path.join(dir, name + '.lance');

	function newTarget()
	{
		const [target] = psqlLines(`SELECT lance_parts.create_target(${literal(dataset)});\n`);

		return { target, sidecarDir: path.join(dataset, 'data', JSON.parse(target).file_name.replace(/\.lance$/, '')) };
	}

	// The reversed-bit name of blob id n.
	function sidecarName(n)
	{
		return n.toString(2).padStart(32, '0').split('').reverse().join('') + '.blob';
	}

	test(version + ': write_part puts every non-empty payload in the target\'s sidecars under its lease', async () => {
		await writeBlobDataset(await lancedb.connect(dir), name, version);
		const { target, sidecarDir } = newTarget();
		const [row] = psqlLines(`SELECT uri || ' ' || num_rows || ' ' || lower(blob_ids) || ' ' || upper(blob_ids)
  FROM lance_parts.write_part(${literal(target)},
    $q$SELECT g::bigint AS id, ${payloadSql()} AS payload FROM generate_series(${OLD_ROWS}, ${OLD_ROWS + NEW_ROWS - 1}) g ORDER BY g$q$,
    ${NEW_ROWS});
`);
		const [uri, rows, start, end] = row.split(' ');

		assert.equal(Number(rows), NEW_ROWS);
		assert.ok(Number(start) >= 1 && Number(end) > Number(start));

		// no payload is inline: none of their bytes are in the part file
		const part = fs.readFileSync(uri);
		const packed = [];
		const dedicated = [];

		for (let g = OLD_ROWS; g < OLD_ROWS + NEW_ROWS; g++)
		{
			const p = newPayload(g);

			if (p !== null && p.length >= 16)
				assert.equal(part.indexOf(p), -1, 'payload of row ' + g + ' is not in the part file');
			if (p !== null && p.length > DEDICATED_MIN)
				dedicated.push(p);
			else if (p !== null && p.length > 0)
				packed.push(p);
		}
		// one pack file (the packed payloads in row order), a sidecar per dedicated payload, all named by leased ids
		const names = fs.readdirSync(sidecarDir).sort();
		const leased = new Set();

		for (let id = Number(start); id < Number(end); id++)
			leased.add(sidecarName(id));
		assert.equal(names.length, 1 + dedicated.length);
		for (const n of names)
			assert.ok(leased.has(n), n + ' is named by a leased id');
		const contents = names.map((n) => fs.readFileSync(path.join(sidecarDir, n)));

		assert.equal(contents.filter((c) => c.equals(Buffer.concat(packed))).length, 1, 'the pack file');
		for (const d of dedicated)
			assert.ok(contents.some((c) => c.equals(d)), 'a dedicated sidecar of ' + d.length + ' bytes');

		// a second part, of unknown rows, leases other ids (1024 at a time)
		const [second] = psqlLines(`SELECT lower(blob_ids) || ' ' || upper(blob_ids) FROM lance_parts.write_part(${literal(target)},
  $q$SELECT 1000::bigint AS id, '\\x0102'::bytea AS payload$q$);
`);
		const [secondStart, secondEnd] = second.split(' ').map(Number);

		assert.ok(secondStart >= Number(end));
		assert.equal(secondEnd - secondStart, 1024);
	});

	test(version + ': write_part takes descriptors of write_packed_blobs inside a lease of the target', async () => {
		const { target, sidecarDir } = newTarget();
		const [lease] = psqlLines(`SELECT lower(lance_parts.lease_blob_ids(${literal(target)}, 4));\n`);
		const [range] = psqlLines(`SELECT blob_ids FROM lance_parts.write_part(${literal(target)}, $q$
SELECT row_number() OVER ()::bigint AS id, d AS payload
  FROM unnest(lance_parts.write_packed_blobs(${literal(target)}, ${lease}, ARRAY['\\x010203'::bytea, NULL, '\\x04'::bytea])) d$q$, 3);
`);
		assert.equal(range, `[${lease},${Number(lease) + 4})`);
		assert.deepEqual(fs.readdirSync(sidecarDir), [sidecarName(Number(lease))]);

		const { err } = await psqlAsync(`SELECT lance_parts.write_part(${literal(target)},
  $q$SELECT 1::bigint AS id, '{"kind": 1, "position": 0, "size": 3, "blob_id": ${Number(lease) + 100}, "blob_uri": ""}'::jsonb AS payload$q$);
`, true);

		assert.match(err.join('\n'), /blob id \d+ of blob column "payload" is not leased/);
	});

	test(version + ': an ERROR in the middle of write_part leaves no part and no sidecar', async () => {
		const { target, sidecarDir } = newTarget();
		const [staging] = psqlLines(`SELECT lance_parts.staging_dir(${literal(target)});\n`);
		const { err } = await psqlAsync(`SELECT lance_parts.write_part(${literal(target)},
    $q$SELECT g::bigint AS id, CASE WHEN g < 1000 THEN ${payloadSql()} ELSE (1 / (g - g))::text::bytea END AS payload
       FROM generate_series(1000 - 25, 1001) g ORDER BY g$q$);
`, true);

		assert.match(err.join('\n'), /division by zero/);
		assert.deepEqual(fs.existsSync(sidecarDir) ? fs.readdirSync(sidecarDir) : [], []);
		assert.deepEqual((fs.existsSync(staging) ? fs.readdirSync(staging) : []).filter((f) => f.endsWith('.lance') || f.endsWith('.tmp')), []);
	});
}

// write_dataset create with blob_columns: a new dataset whose bytea column is a Blob v2 column
// with Lance's default thresholds (inline up to 64 KiB, dedicated above 4 MiB).
for (const version of ['2.2', '2.3'])
{
	test(version + ': write_dataset create with blob_columns: the reference reads every payload', async () => {
		const dataset = path.join(dir, 'created_' + version.replace('.', '_') + '.lance');
		const sizes = [0, 10, 65536, 65537, 200000, 4 * 1024 * 1024 + 1, null, 1000];
		const query = `SELECT g::bigint AS id, CASE g % ${sizes.length} ${sizes.map((s, k) => s === null ? `WHEN ${k} THEN NULL` :
			`WHEN ${k} THEN decode(repeat(lpad(to_hex(g % 256), 2, '0'), ${s}), 'hex')`).join(' ')} END AS payload
  FROM generate_series(0, ${2 * sizes.length - 1}) g`;
		const expected = new Map(psqlLines(`SELECT id || ' ' || coalesce(encode(sha256(payload), 'hex'), 'null') FROM (${query}) q;\n`)
			.map((l) => l.split(' ')).map(([id, h]) => [Number(id), h === 'null' ? null : h]));

		psqlLines(`SELECT lance_parts.write_dataset(${literal(dataset)}, $q$${query}$q$, 'create', '${version}',
  blob_columns => ARRAY['payload']);
`);
		const { out } = await fetchAll(dataset);

		assert.equal(out.size, expected.size);
		for (const [id, hash] of expected)
			assert.equal(out.get(id), hash, 'row ' + id);
		// the table's schema is lancedb's blob field, so it takes lancedb's own appends
		const table = await (await lancedb.connect(dir)).openTable(path.basename(dataset, '.lance'));

		assert.deepEqual(await table.blobColumns(), ['payload']);

		const { err } = await psqlAsync(`SELECT lance_parts.write_dataset(${literal(dataset + '-x')}, $q$${query}$q$, 'create', '2.1',
  blob_columns => ARRAY['payload']);
SELECT lance_parts.write_dataset(${literal(dataset + '-y')}, $q$${query}$q$, 'create', '${version}',
  blob_columns => ARRAY['nope']);
`, true);
		const text = err.join('\n');

		assert.match(text, /Blob v2 columns need file version 2\.2 or later, not 2\.1/);
		assert.match(text, /blob column "nope" is not a column of the query/);
		assert.equal(fs.existsSync(dataset + '-x'), false);
		assert.equal(fs.existsSync(dataset + '-y'), false);
	});
}

// Issue 13's acceptance, end to end: parts of one target written from SQL by two sessions at
// once, each under the lease its write_part claimed, registered with those leases, assembled and
// committed into a dataset the reference wrote; the reference reads every payload of every row.
for (const version of ['2.2', '2.3'])
{
	test(version + ': two sessions write parts with blobs; registered, assembled, committed; the reference reads every payload', async () => {
		const name = 'e2e_' + version.replace('.', '_');
		const dataset = path.join(dir, name + '.lance');

		await writeBlobDataset(await lancedb.connect(dir), name, version);
		const [target] = psqlLines(`SELECT lance_parts.create_target(${literal(dataset)});\n`);
		const half = NEW_ROWS / 2;
		const slice = (first) => psqlAsync(`SELECT uri || ' ' || blob_ids FROM lance_parts.write_part(${literal(target)},
  $q$SELECT g::bigint AS id, ${payloadSql()} AS payload FROM generate_series(${first}, ${first + half - 1}) g ORDER BY g$q$, ${half});
`);
		const [a, b] = await Promise.all([slice(OLD_ROWS), slice(OLD_ROWS + half)]);
		const parts = [a[0].split(' '), b[0].split(' ')];

		assert.notEqual(parts[0][1], parts[1][1], 'each part has its own lease');
		const out = psqlLines(`SELECT lance_parts.register_part(${literal(target)}, ${literal(parts[0][0])}, ${half}, '${parts[0][1]}');
SELECT lance_parts.register_part(${literal(target)}, ${literal(parts[1][0])}, ${half}, '${parts[1][1]}');
SELECT status FROM lance_parts.assemble(${literal(target)});
SELECT dataset_version FROM lance_parts.commit(${literal(target)});
`);
		assert.deepEqual(out, ['1', '2', 'written', '3']);

		const { out: fetched } = await fetchAll(dataset);

		assert.equal(fetched.size, OLD_ROWS + NEW_ROWS);
		for (let g = 0; g < OLD_ROWS; g++)
			assert.equal(fetched.get(g), sha256(payload(g)), 'old row ' + g);
		for (let g = OLD_ROWS; g < OLD_ROWS + NEW_ROWS; g++)
			assert.equal(fetched.get(g), sha256(newPayload(g)), 'new row ' + g);
	});
}
