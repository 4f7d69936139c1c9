'use strict';
// lance_fdw reads Blob v2 payloads (column option blob 'payload'): datasets of Lance 2.2 and 2.3
// written by the reference with blob thresholds set so that inline, packed and dedicated payloads
// (and empty payloads and nulls) all occur, in two fragments each; every payload read through a
// foreign table equals, by sha256, what the reference's blob API (fetchBlobs) returns for its row.
const test = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const path = require('node:path');
const arrow = require('apache-arrow');
const lancedb = require('@lancedb/lancedb');
const C = require('./columns.cjs');
const { psqlLines, literal } = require('./pg.cjs');
const { scratchDir } = require('./harness.cjs');

const INLINE_MAX = 64;
const DEDICATED_MIN = 1024;
// around both thresholds, empty and null
const SIZES = [0, 10, INLINE_MAX, INLINE_MAX + 1, 300, DEDICATED_MIN, DEDICATED_MIN + 1, 5000, null, 40];
const APPENDS = [13, 9];

function payload(g)
{
	const size = SIZES[g % SIZES.length];

	return size === null ? null : Buffer.from(Array.from({ length: size }, (_, i) => (g * 131 + i * 17) & 0xff));
}

function sha256(bytes)
{
	return bytes === null ? null : crypto.createHash('sha256').update(bytes).digest('hex');
}

async function writeBlobDataset(dir, version)
{
	const blobField = lancedb.blob('payload', {
		inlineSizeThreshold: INLINE_MAX,
		dedicatedSizeThreshold: DEDICATED_MIN,
	});
	const columns = [
		{
			field: new arrow.Field('id', new arrow.Int64(), false),
			value: (g) => BigInt(g),
			build: (values) => C.fixedData(new arrow.Int64(), BigInt64Array, values, 0n),
		},
		{
			field: blobField,
			value: payload,
			build: (values) => C.structData(blobField.type, values, (rows) => [
				C.varData(new arrow.LargeBinary(), rows, true),
				C.varData(new arrow.Utf8(), rows.map(() => null), false),
			]),
		},
	];
	const db = await lancedb.connect(dir);
	const name = 'blobs_' + version.replace('.', '_');
	let first = 0;
	let table = null;

	for (const count of APPENDS)
	{
		const data = C.makeTable(columns, first, count);

		first += count;
		if (table === null)
			table = await db.createTable(name, data, { storageOptions: { newTableDataStorageVersion: version } });
		else
			await table.add(data);
	}
	// what the reference's blob API returns, by id
	const rows = await table.query().select(['id']).withRowId().toArray();
	const fetched = await table.fetchBlobs('payload', rows.map((r) => r._rowid));
	const expected = new Map();

	rows.forEach((r, i) => expected.set(Number(r.id), sha256(fetched[i] === null ? null : Buffer.from(fetched[i]))));
	return { path: path.join(dir, name + '.lance'), expected };
}

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
		const { path: dataset, expected } = await writeBlobDataset(dir, version);
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
