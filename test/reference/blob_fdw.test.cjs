'use strict';
// lance_fdw reads Blob v2 payloads (column option blob 'payload'): datasets of Lance 2.2 and 2.3
// written by the reference with blob thresholds set so that inline, packed and dedicated payloads
// (and empty payloads and nulls) all occur, in two fragments each; every payload read through a
// foreign table equals, by sha256, what the reference's blob API (fetchBlobs) returns for its row.
// External payloads (descriptors written by write_dataset: a local path, a range of it, a
// file:// URI of the whole file) equal the reference's too; an External name with a ".."
// segment, another scheme, an s3:// URI no server covers, a range beyond the file's end and a
// role without pg_read_server_files are refused with their SQLSTATEs.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const lancedb = require('@lancedb/lancedb');
const { APPENDS, payload, sha256, writeBlobDataset } = require('./blob_data.cjs');
const { psqlLines, psqlAsync, literal } = require('./pg.cjs');
const { scratchDir } = require('./harness.cjs');

const dir = scratchDir('blob_fdw');

psqlLines(`CREATE EXTENSION IF NOT EXISTS lance_parts;
DROP SCHEMA IF EXISTS blob_fdw CASCADE;
DROP SERVER IF EXISTS blob_fdw_server CASCADE;
CREATE SERVER blob_fdw_server FOREIGN DATA WRAPPER lance_fdw;
CREATE SCHEMA blob_fdw;
`);

for (const version of ['2.2', '2.3'])
{
	test(version + ': every payload read through lance_fdw is the one the reference\'s blob API returns', async () => {
		const name = 'blobs_' + version.replace('.', '_');
		const expected = await writeBlobDataset(await lancedb.connect(dir), name, version);
		const dataset = path.join(dir, name + '.lance');
		const table = 'blob_fdw.t_' + version.replace('.', '_');

		// what the rows are written from, read back by the reference
		for (let g = 0; g < APPENDS[0] + APPENDS[1]; g++)
			assert.equal(expected.get(g), sha256(payload(g)), 'the reference returns row ' + g + ' as written');

		psqlLines(`CREATE FOREIGN TABLE ${table} (
    id bigint,
    payload bytea OPTIONS (blob 'payload'),
    descriptor jsonb OPTIONS (column_name 'payload'))
  SERVER blob_fdw_server OPTIONS (uri ${literal(dataset)});
`);
		// every kind occurs, in both fragments
		const kinds = psqlLines(`SELECT DISTINCT descriptor->>'kind' FROM ${table} WHERE descriptor IS NOT NULL ORDER BY 1;\n`);
		assert.deepEqual(kinds, ['0', '1', '2']);

		// small batches: a packed sidecar is read across batches, one fragment after the other
		const lines = psqlLines(`SET lance_parts.fdw_batch_rows = 3;
SELECT id || ' ' || coalesce(encode(sha256(payload), 'hex'), 'null') FROM ${table} ORDER BY id;
`);
		assert.equal(lines.length, expected.size);
		for (const line of lines)
		{
			const [id, hash] = line.split(' ');

			assert.equal(hash === 'null' ? null : hash, expected.get(Number(id)), 'payload of row ' + id);
		}
	});
}

// The sha256 of the payload of every row with an id below end, as the reference's blob API returns it.
async function referencePayloads(dataset, end)
{
	const table = await (await lancedb.connect(path.dirname(dataset))).openTable(path.basename(dataset, '.lance'));
	const rows = (await table.query().select(['id']).withRowId().toArray()).filter((r) => Number(r.id) < end);
	const fetched = await table.fetchBlobs('payload', rows.map((r) => r._rowid));

	return new Map(rows.map((r, i) => [Number(r.id), sha256(fetched[i] === null ? null : Buffer.from(fetched[i]))]));
}

// SQL appending rows (id, External descriptor) to dataset with write_dataset.
const appendExternal = (dataset, rows) => `SELECT lance_parts.write_dataset(${literal(dataset)}, $q$
SELECT * FROM (VALUES ${rows.map(([id, position, size, uri]) => `(${id}::bigint, jsonb_build_object('kind', 3, 'position', ${position}, 'size', ${size}, 'blob_id', 0, 'blob_uri', ${literal(uri)}))`).join(', ')}) v(id, payload)$q$, 'append') IS NOT NULL;
`;

test('2.3: External payloads (a path, a range, a file:// URI of the whole file) are the reference\'s; other names, ranges and roles are refused', async () => {
	const name = 'external_2_3';
	const dataset = path.join(dir, name + '.lance');
	const file = path.join(dir, 'external.bin');
	const bytes = Buffer.from(Array.from({ length: 5000 }, (_, i) => (i * 7 + 3) & 0xff));
	const first = APPENDS[0] + APPENDS[1];

	fs.writeFileSync(file, bytes);
	await writeBlobDataset(await lancedb.connect(dir), name, '2.3');
	psqlLines(appendExternal(dataset, [[first, 100, 2000, file], [first + 1, 0, 0, 'file://' + file],
		[first + 2, 4000, 1000, file]]));
	// refused when read, each in a fragment of its own
	const refused = [
		[first + 3, 0, 10, dir + '/sub/../external.bin', 'XX001', /"\.\." segment/],
		[first + 4, 0, 10, 'http://127.0.0.1:1/external.bin', '0A000', /scheme other than/],
		[first + 5, 0, 10, 's3://lance-parts-no-such-bucket/external.bin', '42704', /s3:\/\/lance-parts-no-such-bucket/],
		[first + 6, 4900, 200, file, 'XX001', /beyond the end/],
	];
	for (const [id, position, size, uri] of refused)
		psqlLines(appendExternal(dataset, [[id, position, size, uri]]));
	psqlLines(`CREATE FOREIGN TABLE blob_fdw.external (
    id bigint,
    payload bytea OPTIONS (blob 'payload'),
    descriptor jsonb OPTIONS (column_name 'payload'))
  SERVER blob_fdw_server OPTIONS (uri ${literal(dataset)});
`);
	const reference = await referencePayloads(dataset, first + 3);
	const lines = psqlLines(`SELECT id || ' ' || coalesce(encode(sha256(payload), 'hex'), 'null') FROM blob_fdw.external WHERE id < ${first + 3} ORDER BY id;\n`);

	assert.equal(lines.length, first + 3);
	for (const line of lines)
	{
		const [id, hash] = line.split(' ');

		assert.equal(hash === 'null' ? null : hash, reference.get(Number(id)), 'payload of row ' + id);
	}
	assert.equal(reference.get(first), sha256(bytes.subarray(100, 2100)));
	assert.equal(reference.get(first + 1), sha256(bytes));
	assert.equal(reference.get(first + 2), sha256(bytes.subarray(4000, 5000)));

	for (const [id, , , uri, state, message] of refused)
	{
		const { err } = await psqlAsync(`\\set VERBOSITY verbose
SELECT length(payload) FROM blob_fdw.external WHERE id = ${id};
`, true);

		assert.match(err.join('\n'), new RegExp('ERROR: {2}' + state + ': '), uri);
		assert.match(err.join('\n'), message, uri);
	}

	// a role without pg_read_server_files reads what lies in the dataset, but no External file
	psqlLines(`DROP ROLE IF EXISTS lp_blob_reader;
CREATE ROLE lp_blob_reader;
GRANT USAGE ON SCHEMA blob_fdw TO lp_blob_reader;
GRANT SELECT ON blob_fdw.external TO lp_blob_reader;
`);
	assert.deepEqual(psqlLines(`SET ROLE lp_blob_reader;
SELECT encode(sha256(payload), 'hex') FROM blob_fdw.external WHERE id = 1;
`), [reference.get(1)]);
	const { err } = await psqlAsync(`\\set VERBOSITY verbose
SET ROLE lp_blob_reader;
SELECT length(payload) FROM blob_fdw.external WHERE id = ${first};
`, true);

	assert.match(err.join('\n'), /ERROR: {2}42501: /);
	psqlLines(`DROP OWNED BY lp_blob_reader;
DROP ROLE lp_blob_reader;
`);
});
