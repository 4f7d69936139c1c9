'use strict';
// lance_fdw over S3 reads only what a query needs: on a real S3 server (Ceph RGW, started here
// with scripts/s3-server.sh and stopped by PID at the end) the reference writes a dataset of
// an int64 column and a column of 256-float vectors; a query of the int64 column makes the
// backend exchange a small fraction of the bytes that a query of every column does (the
// kernel's counters of the backend's connections to the server), and every value of both
// queries is the value the reference reads. LP_S3_PORT, LP_S3_MON_PORT and LP_S3_OSD_PORTS
// choose the server's ports.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const lancedb = require('@lancedb/lancedb');
const { startS3Server } = require('./s3_server.cjs');
const { vectorSchema, vectorRows, vectorDigests } = require('./vectors.cjs');
const { psqlLines, literal } = require('./pg.cjs');
const s3 = require('./s3_requests.cjs');

const { settings, storageOptions, root, fdwServerSql } = startS3Server('s3-fdw-server');
const ROOT = root('fdw');
const PORT = new URL(settings.LP_S3_ENDPOINT).port;

// The output of query, run after a first query that opens the backend's connection to the
// server, and the bytes the backend exchanged with the server during it.
function measuredQuery(query)
{
	const lines = psqlLines('CREATE TEMP TABLE io (label text, sent bigint, received bigint);\n' +
		'SELECT count(*) FROM (SELECT id FROM s3_vectors LIMIT 1) t;\n' +
		s3.backendTrafficSql('before', PORT) +
		'\\o ' + path.join(process.env.LP_SCRATCH, 's3_fdw_query.out') + '\n' + query + '\n\\o\n' +
		s3.backendTrafficSql('after', PORT) +
		"SELECT a.sent - b.sent + a.received - b.received FROM io a, io b WHERE a.label = 'after' AND b.label = 'before';\n");
	const output = fs.readFileSync(path.join(process.env.LP_SCRATCH, 's3_fdw_query.out'), 'utf8');

	return { rows: output.split('\n').filter((l) => l.length > 0), bytes: Number(lines[1]) };
}

test('a query of one column reads a small fraction of what a query of every column reads; every value is the reference\'s', async (t) => {
	const db = await lancedb.connect(ROOT, { storageOptions });
	const table = await db.createTable('vectors', vectorRows(0, 6000), { schema: vectorSchema, mode: 'overwrite' });

	await table.add(vectorRows(6000, 6000));
	psqlLines(`CREATE EXTENSION IF NOT EXISTS lance_parts;
DROP SERVER IF EXISTS s3_fdw_server CASCADE;
${fdwServerSql('s3_fdw_server', ROOT)}
CREATE FOREIGN TABLE s3_vectors (id bigint, vec real[]) SERVER s3_fdw_server
  OPTIONS (uri ${literal(ROOT + '/vectors.lance')});
`);
	const expected = await vectorDigests(table);
	const ids = measuredQuery('SELECT id FROM s3_vectors;');
	const all = measuredQuery('SELECT id, vec FROM s3_vectors;');
	const vectorBytes = 12000 * 256 * 4;

	t.diagnostic('bytes exchanged: ' + ids.bytes + ' for the ids, ' + all.bytes + ' for every column');
	// the values
	assert.equal(expected.length, 12000);
	assert.deepEqual(ids.rows.map(BigInt).sort((a, b) => (a < b ? -1 : a > b)),
		expected.map((r) => BigInt(r.split(':')[0])).sort((a, b) => (a < b ? -1 : a > b)));
	assert.deepEqual(all.rows.map((line) => {
		const [id, vec] = line.split('|');
		const values = Float32Array.from(vec.slice(1, -1).split(','), Number);

		return id + ':' + Buffer.from(values.buffer).toString('base64');
	}).sort(), expected);

	// the bytes: every vector for all columns, a few pages and the metadata for the ids
	assert.ok(all.bytes >= vectorBytes, 'every column: ' + all.bytes + ' bytes for ' + vectorBytes + ' bytes of vectors');
	assert.ok(ids.bytes > 0 && ids.bytes < all.bytes / 20,
		'one column: ' + ids.bytes + ' bytes, against ' + all.bytes + ' for every column');
});
