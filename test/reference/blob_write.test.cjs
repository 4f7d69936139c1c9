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
