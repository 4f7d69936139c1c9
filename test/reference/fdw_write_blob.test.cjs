'use strict';
// Writes through lance_fdw tables over datasets with a Blob v2 column, which lancedb wrote with
// inline, packed and dedicated payloads (blob_data.cjs), in file versions 2.2 and 2.3, locally
// and on S3: INSERT of bytea payloads of every size class, empty and NULL into the column read
// as payloads (blob 'payload'), an UPDATE of a payload and a DELETE; lancedb's blob API
// (fetchBlobs) returns exactly the payloads PostgreSQL wrote and the old ones, and lance_fdw
// reads the same bytes back.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const lancedb = require('@lancedb/lancedb');
const { payload, sha256, writeBlobDataset } = require('./blob_data.cjs');
const { startS3Server } = require('./s3_server.cjs');
const { psqlLines, literal } = require('./pg.cjs');
const { scratchDir } = require('./harness.cjs');

const dir = scratchDir('fdw-write-blob');
const NEW_IDS = Array.from({ length: 30 }, (_, i) => 100 + i);

psqlLines(`CREATE EXTENSION IF NOT EXISTS lance_parts;
DROP SERVER IF EXISTS fdw_write_blob_local CASCADE;
CREATE SERVER fdw_write_blob_local FOREIGN DATA WRAPPER lance_fdw;
`);

const hex = (bytes) => (bytes === null ? 'NULL' : `'\\x${bytes.toString('hex')}'::bytea`);

// Every payload of the table through lancedb's blob API: sha256 by id.
async function lancedbPayloads(table)
{
	const rows = await table.query().select(['id']).withRowId().toArray();
	const fetched = await table.fetchBlobs('payload', rows.map((r) => r._rowid));

	return new Map(rows.map((r, i) => [Number(r.id), sha256(fetched[i] === null ? null : Buffer.from(fetched[i]))]));
}

// The same through lance_fdw.
function fdwPayloads(foreignTable)
{
	return new Map(psqlLines(`SELECT id, encode(sha256(payload), 'hex') FROM ${foreignTable};\n`)
		.map((line) => line.split('|')).map(([id, hash]) => [Number(id), hash === '' ? null : hash]));
}

// INSERT, UPDATE and DELETE through foreignTable; returns the payloads expected after them.
function writeThrough(foreignTable, before)
{
	const expected = new Map(before);
	const updated = payload(7 * 3 + 6);		// a dedicated-size payload for row 3

	psqlLines(`INSERT INTO ${foreignTable} (id, payload) VALUES
${NEW_IDS.map((id) => `(${id}, ${hex(payload(id))})`).join(',\n')};
UPDATE ${foreignTable} SET payload = ${hex(updated)} WHERE id = 3;
DELETE FROM ${foreignTable} WHERE id = 4;
`);
	for (const id of NEW_IDS)
		expected.set(id, sha256(payload(id)));
	expected.set(3, sha256(updated));
	expected.delete(4);
	return expected;
}

const sorted = (map) => [...map.entries()].sort((a, b) => a[0] - b[0]);

for (const version of ['2.2', '2.3'])
{
	test(`${version}: INSERT, UPDATE and DELETE of Blob v2 payloads through lance_fdw, read by lancedb`, async () => {
		const name = 'blobs_' + version.replace('.', '_');
		const db = await lancedb.connect(dir);
		const before = await writeBlobDataset(db, name, version);
		const foreignTable = 'fdw_write_blob_' + version.replace('.', '_');

		psqlLines(`DROP FOREIGN TABLE IF EXISTS ${foreignTable};
CREATE FOREIGN TABLE ${foreignTable} (id bigint, payload bytea OPTIONS (blob 'payload'))
  SERVER fdw_write_blob_local OPTIONS (uri ${literal(path.join(dir, name + '.lance'))});
`);
		const expected = writeThrough(foreignTable, before);
		const table = await db.openTable(name);

		assert.deepEqual(sorted(await lancedbPayloads(table)), sorted(expected), 'lancedb reads every payload');
		assert.deepEqual(sorted(fdwPayloads(foreignTable)), sorted(expected), 'lance_fdw reads every payload');
	});
}

test('on S3: INSERT, UPDATE and DELETE of Blob v2 payloads through lance_fdw, read by lancedb', async (t) => {
	const { storageOptions, root, fdwServerSql } = startS3Server('fdw-write-blob-s3', t);
	const ROOT = root('blobs');
	const db = await lancedb.connect(ROOT, { storageOptions });
	const before = await writeBlobDataset(db, 'media', '2.2');

	psqlLines(`DROP SERVER IF EXISTS fdw_write_blob_s3 CASCADE;
${fdwServerSql('fdw_write_blob_s3', ROOT)}
CREATE FOREIGN TABLE fdw_write_blob_s3_media (id bigint, payload bytea OPTIONS (blob 'payload'))
  SERVER fdw_write_blob_s3 OPTIONS (uri 'media.lance');
`);
	const expected = writeThrough('fdw_write_blob_s3_media', before);
	const table = await db.openTable('media');

	assert.deepEqual(sorted(await lancedbPayloads(table)), sorted(expected), 'lancedb reads every payload');
	assert.deepEqual(sorted(fdwPayloads('fdw_write_blob_s3_media')), sorted(expected), 'lance_fdw reads every payload');
});
