'use strict';
// Blob v2 on S3 (Ceph RGW, s3_server.cjs): blob-id leases claimed by two sessions at once with
// conditional PUTs never overlap; packed, dedicated and copied sidecars land under the
// target's sidecar prefix with exactly the bytes given (a large copied object is copied on the
// server); and lance_fdw reads every payload of a dataset the reference wrote on S3 as the
// reference's blob API returns it. LP_S3_PORT, LP_S3_MON_PORT and LP_S3_OSD_PORTS choose the
// server's ports.
const test = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const lancedb = require('@lancedb/lancedb');
const { startS3Server } = require('./s3_server.cjs');
const { APPENDS, sha256, writeBlobDataset } = require('./blob_data.cjs');
const { psqlLines, psqlAsync, literal } = require('./pg.cjs');
const s3 = require('./s3_requests.cjs');

const PREFIX = 'blobs';
const LEASES_PER_SESSION = 15;

const { settings, storageOptions, root, fdwServerSql } = startS3Server('s3-blob-server');
const ROOT = root(PREFIX);
const keyOf = (uri) => uri.slice(('s3://' + settings.LP_S3_BUCKET + '/').length);
const PORT = new URL(settings.LP_S3_ENDPOINT).port;

test.before(() => {
	psqlLines(`CREATE EXTENSION IF NOT EXISTS lance_parts;
DROP SCHEMA IF EXISTS blob_s3 CASCADE;
DROP SERVER IF EXISTS blob_s3_server CASCADE;
${fdwServerSql('blob_s3_server', ROOT)}
CREATE SCHEMA blob_s3;
`);
});

let expected = null;
const DATASET = ROOT + '/media.lance';

test('lance_fdw reads every payload on S3 as the reference\'s blob API returns it', async () => {
	expected = await writeBlobDataset(await lancedb.connect(ROOT, { storageOptions }), 'media', '2.3');
	psqlLines(`CREATE FOREIGN TABLE blob_s3.media (
    id bigint,
    payload bytea OPTIONS (blob 'payload'),
    descriptor jsonb OPTIONS (column_name 'payload'))
  SERVER blob_s3_server OPTIONS (uri ${literal(DATASET)});
`);
	assert.deepEqual(psqlLines('SELECT DISTINCT descriptor->>\'kind\' FROM blob_s3.media WHERE descriptor IS NOT NULL ORDER BY 1;\n'),
		['0', '1', '2']);
	const lines = psqlLines('SELECT id || \' \' || coalesce(encode(sha256(payload), \'hex\'), \'null\') FROM blob_s3.media ORDER BY id;\n');

	assert.equal(lines.length, APPENDS[0] + APPENDS[1]);
	for (const line of lines)
	{
		const [id, hash] = line.split(' ');

		assert.equal(hash === 'null' ? null : hash, expected.get(Number(id)), 'payload of row ' + id);
	}
});

test('leases of two sessions on S3 never overlap; sidecars hold exactly the bytes written', async () => {
	assert.ok(expected !== null, 'the dataset was written');
	const target = psqlLines(`SELECT lance_parts.create_target(${literal(DATASET)});\n`)[0];
	const lease = (count) => `SELECT lance_parts.lease_blob_ids(${literal(target)}, ${count});\n`;
	// the same counts in both sessions: their competing records would have the same ranges, so
	// only the claimer token tells them apart (S3 takes a 412 over its own bytes for its own retry)
	const sessions = await Promise.all([1, 2].map(() =>
		psqlAsync(Array.from({ length: LEASES_PER_SESSION }, () => lease(2)).join(''))));
	const ranges = sessions.flat().map((r) => r.match(/^\[(\d+),(\d+)\)$/).slice(1).map(Number))
		.sort((a, b) => a[0] - b[0]);
	let next = 1;

	for (const [start, end] of ranges)
	{
		assert.equal(start, next, 'lease [' + start + ',' + end + ') follows the one before');
		next = end;
	}
	const t = JSON.parse(target);
	const staging = keyOf(t.data_dir) + '/_parts/' + t.file_name + '/blob_leases/';
	assert.equal((await s3.listKeys(settings, staging)).length, 2 * LEASES_PER_SESSION, 'one record per lease');

	const packed = [Buffer.from('first payload'), Buffer.alloc(0), crypto.randomBytes(700)];
	const dedicated = crypto.randomBytes(3000);
	const source = (await s3.listKeys(settings, PREFIX + '/media.lance/data/')).find((k) => k.endsWith('.lance'));
	const bytea = (b) => "'\\x" + b.toString('hex') + "'::bytea";
	const descriptors = psqlLines(`SELECT lance_parts.write_packed_blobs(${literal(target)}, 1,
    ARRAY[${packed.map(bytea).join(', ')}, NULL]);
SELECT lance_parts.write_dedicated_blob(${literal(target)}, 2, ${bytea(dedicated)});
SELECT lance_parts.write_dedicated_blob_from(${literal(target)}, 3, ${literal('s3://' + settings.LP_S3_BUCKET + '/' + source)});
`);
	assert.equal(descriptors.length, 3);
	const sidecars = keyOf(t.data_dir) + '/' + t.file_name.replace(/\.lance$/, '') + '/';
	const object = (name) => s3.objectSha256(settings, sidecars + name);

	assert.equal(await object('10000000000000000000000000000000.blob'), sha256(Buffer.concat(packed)));
	assert.equal(await object('01000000000000000000000000000000.blob'), sha256(dedicated));
	assert.equal(await object('11000000000000000000000000000000.blob'), await s3.objectSha256(settings, source));
	assert.equal(JSON.parse(descriptors[1]).size, dedicated.length);
	assert.deepEqual((await s3.listKeys(settings, sidecars)).sort(), [
		sidecars + '01000000000000000000000000000000.blob',
		sidecars + '10000000000000000000000000000000.blob',
		sidecars + '11000000000000000000000000000000.blob',
	]);

	// an id written already is refused, and nothing replaces the sidecar
	const again = await psqlAsync(`SELECT lance_parts.write_dedicated_blob(${literal(target)}, 2, '\\x00');\n`, true);
	assert.match(again.err.join('\n'), /already exists/);
	assert.equal(await object('01000000000000000000000000000000.blob'), sha256(dedicated));

	// a large object is copied on the server (UploadPartCopy): its bytes do not pass through PostgreSQL
	const big = 12 * 1024 * 1024;
	psqlLines(`SELECT lance_parts.write_dedicated_blob(${literal(target)}, 4, convert_to(repeat('q', ${big}), 'UTF8')) IS NOT NULL;\n`);
	const bigUri = 's3://' + settings.LP_S3_BUCKET + '/' + sidecars + '00100000000000000000000000000000.blob';
	const io = psqlLines('CREATE TEMP TABLE io (label text, sent bigint, received bigint);\n' +
		`SELECT lance_parts.lease_blob_ids(${literal(target)}, 1) IS NOT NULL;\n` +
		s3.backendTrafficSql('before', PORT) +
		`SELECT lance_parts.write_dedicated_blob_from(${literal(target)}, 5, ${literal(bigUri)})->>'size';\n` +
		s3.backendTrafficSql('after', PORT) +
		"SELECT a.sent - b.sent, a.received - b.received FROM io a, io b WHERE a.label = 'after' AND b.label = 'before';\n");
	const [sent, received] = io[2].split('|').map(Number);

	assert.equal(Number(io[1]), big);
	assert.ok(sent + received > 0, 'the measurement sees the requests');
	assert.ok(sent + received < big / 100, 'the backend sent ' + sent + ' and received ' + received + ' bytes for ' + big);
	assert.equal(await object('10100000000000000000000000000000.blob'), await object('00100000000000000000000000000000.blob'));

	// cleanup_target removes the sidecars and the lease records
	assert.deepEqual(psqlLines(`SELECT lance_parts.cleanup_target(${literal(target)});\n`), ['t']);
	assert.deepEqual(await s3.listKeys(settings, sidecars), []);
	assert.deepEqual(await s3.listKeys(settings, staging), []);
});
