'use strict';
// lance_fdw reads Blob v2 payloads (column option blob 'payload'): datasets of Lance 2.2 and 2.3
// written by the reference with blob thresholds set so that inline, packed and dedicated payloads
// (and empty payloads and nulls) all occur, in two fragments each; every payload read through a
// foreign table equals, by sha256, what the reference's blob API (fetchBlobs) returns for its row.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const lancedb = require('@lancedb/lancedb');
const { APPENDS, payload, sha256, writeBlobDataset } = require('./blob_data.cjs');
const { psqlLines, literal } = require('./pg.cjs');
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
