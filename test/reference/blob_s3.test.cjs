'use strict';
// Blob v2 on S3 (Ceph RGW, s3_server.cjs, reached through the logging proxy of s3_proxy.cjs):
// blob-id leases claimed by two sessions at once with conditional PUTs never overlap; packed,
// dedicated and copied sidecars land under the target's sidecar prefix with exactly the bytes
// given; write_dedicated_blob_from copies objects of the same server on the server whatever
// their size (CopyObject under 5 MiB, UploadPartCopy from there on: the proxy sees no GET of
// the source), streams objects of another server, and leaves nothing for a missing source; and
// lance_fdw reads every payload (inline, packed, dedicated) of a dataset the reference wrote on
// S3 as the reference's blob API returns it, and External payloads at s3:// URIs of the server
// (an object, a range of it) as the reference does, refusing a URI no server covers.
// LP_S3_PORT, LP_S3_MON_PORT and LP_S3_OSD_PORTS choose the server's ports.
const test = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const lancedb = require('@lancedb/lancedb');
const { startS3Server } = require('./s3_server.cjs');
const { APPENDS, sha256, writeBlobDataset } = require('./blob_data.cjs');
const { psqlLines, psqlAsync, literal } = require('./pg.cjs');
const s3 = require('./s3_requests.cjs');
const { startFaultProxy } = require('./s3_proxy.cjs');
const h = require('./harness.cjs');

const PREFIX = 'blobs';
const LEASES_PER_SESSION = 15;

const { settings, storageOptions, root, fdwServerSql } = startS3Server('s3-blob-server');
const ROOT = root(PREFIX);
const keyOf = (uri) => uri.slice(('s3://' + settings.LP_S3_BUCKET + '/').length);
// objects of another lance_fdw server: the server itself, not the proxy (another endpoint)
const ELSEWHERE = 'elsewhere';
let proxy = null;

test.after(() => {
	if (proxy !== null)
		proxy.stop();
});

test.before(async () => {
	proxy = await startFaultProxy(settings.LP_S3_ENDPOINT, h.scratchDir('blob-s3-proxy'));
	psqlLines(`CREATE EXTENSION IF NOT EXISTS lance_parts;
DROP SCHEMA IF EXISTS blob_s3 CASCADE;
DROP SERVER IF EXISTS blob_s3_server CASCADE;
DROP SERVER IF EXISTS blob_s3_elsewhere CASCADE;
${fdwServerSql('blob_s3_server', ROOT, proxy.endpoint)}
${fdwServerSql('blob_s3_elsewhere', root(ELSEWHERE))}
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

	// cleanup_target removes the sidecars and the lease records
	assert.deepEqual(psqlLines(`SELECT lance_parts.cleanup_target(${literal(target)});\n`), ['t']);
	assert.deepEqual(await s3.listKeys(settings, sidecars), []);
	assert.deepEqual(await s3.listKeys(settings, staging), []);
});

test('write_dedicated_blob_from copies on the server whatever the size, streams another server\'s objects, and leaves nothing for a missing source', async () => {
	assert.ok(expected !== null, 'the dataset was written');
	const target = psqlLines(`SELECT lance_parts.create_target(${literal(DATASET)});\n`)[0];
	const t = JSON.parse(target);
	const sidecars = keyOf(t.data_dir) + '/' + t.file_name.replace(/\.lance$/, '') + '/';
	const uriOf = (key) => 's3://' + settings.LP_S3_BUCKET + '/' + key;
	const sidecarKey = (id) => sidecars + id.toString(2).padStart(32, '0').split('').reverse().join('') + '.blob';
	const copyFrom = (id, uri) => `SELECT lance_parts.write_dedicated_blob_from(${literal(target)}, ${id}, ${literal(uri)})->>'size';\n`;

	assert.deepEqual(psqlLines(`SELECT lance_parts.lease_blob_ids(${literal(target)}, 5);\n`), ['[1,6)']);
	// sources: the reference's data file (small) and a dedicated sidecar of 6 MiB
	const small = (await s3.listKeys(settings, PREFIX + '/media.lance/data/')).find((k) => k.endsWith('.lance'));
	const smallSize = Number(psqlLines(`SELECT size_bytes FROM lance_parts.file_info(${literal(uriOf(small))});\n`)[0]);
	const large = 6 * 1024 * 1024;

	assert.ok(smallSize > 0 && smallSize < 5 * 1024 * 1024, 'the small source has ' + smallSize + ' bytes');
	psqlLines(`SELECT lance_parts.write_dedicated_blob(${literal(target)}, 1, convert_to(repeat('z', ${large}), 'UTF8')) IS NOT NULL;\n`);

	for (const [id, source, size, copy] of [[2, small, smallSize, /^PUT [^?]*$/], [3, sidecarKey(1), large, /^PUT .*\?partNumber=1&uploadId=/]])
	{
		const mark = proxy.mark();

		assert.deepEqual(psqlLines(copyFrom(id, uriOf(source))), [String(size)]);
		const requests = proxy.log(mark);
		const onSource = requests.filter((r) => r.target.startsWith('/' + settings.LP_S3_BUCKET + '/' + source));
		const onSidecar = requests.filter((r) => r.target.startsWith('/' + settings.LP_S3_BUCKET + '/' + sidecarKey(id)))
			.map((r) => r.method + ' ' + r.target.slice(('/' + settings.LP_S3_BUCKET + '/' + sidecarKey(id)).length));

		assert.deepEqual(onSource.filter((r) => r.method === 'GET'), [], 'no GET of the source of ' + size + ' bytes');
		assert.ok(onSidecar.some((r) => copy.test(r)), 'the copy of ' + size + ' bytes: ' + JSON.stringify(onSidecar));
		if (size < 5 * 1024 * 1024)
			assert.ok(!onSidecar.some((r) => /uploads/.test(r)), 'one CopyObject, no multipart upload: ' + JSON.stringify(onSidecar));
		assert.equal(await s3.objectSha256(settings, sidecarKey(id)), await s3.objectSha256(settings, source));
	}

	// an object of another server (another endpoint) cannot be copied on the server: its bytes pass through
	const other = ELSEWHERE + '/copy.lance';
	await s3.copyKey(settings, small, other);
	const mark = proxy.mark();

	assert.deepEqual(psqlLines(copyFrom(4, uriOf(other))), [String(smallSize)]);
	assert.deepEqual(proxy.log(mark).filter((r) => r.target.startsWith('/' + settings.LP_S3_BUCKET + '/' + sidecarKey(4)))
		.map((r) => r.method + ' ' + r.target.includes('?')), ['PUT false', 'HEAD false'], 'one conditional PUT of the bytes, and the check of its size');
	assert.equal(await s3.objectSha256(settings, sidecarKey(4)), await s3.objectSha256(settings, small));

	// a missing source: 58P01, and no sidecar, no upload
	const missing = await psqlAsync('\\set VERBOSITY verbose\n' + copyFrom(5, uriOf(PREFIX + '/no-such-object')), true);

	assert.match(missing.err.join('\n'), /ERROR: {2}58P01: /);
	assert.deepEqual((await s3.listKeys(settings, sidecars)).sort(), [1, 2, 3, 4].map(sidecarKey).sort());
	assert.deepEqual(await s3.listUploads(settings, sidecars), []);
	assert.deepEqual(psqlLines(`SELECT lance_parts.cleanup_target(${literal(target)});\n`), ['t']);
	await s3.deleteKey(settings, other);
});

test('External payloads on S3: s3:// URIs of the dataset\'s server are read as the reference reads them; a URI no server covers is refused', async () => {
	assert.ok(expected !== null, 'the dataset was written');
	const small = (await s3.listKeys(settings, PREFIX + '/media.lance/data/')).find((k) => k.endsWith('.lance'));
	const objectUri = 's3://' + settings.LP_S3_BUCKET + '/' + small;
	const external = (id, position, size, uri) => `(${id}::bigint, jsonb_build_object('kind', 3, 'position', ${position}, 'size', ${size}, 'blob_id', 0, 'blob_uri', ${literal(uri)}))`;

	psqlLines(`SELECT lance_parts.write_dataset(${literal(DATASET)}, $q$
SELECT * FROM (VALUES ${external(1000, 0, 0, objectUri)}, ${external(1001, 10, 100, objectUri)}) v(id, payload)$q$, 'append') IS NOT NULL;
`);
	const table = await (await lancedb.connect(ROOT, { storageOptions })).openTable('media');
	const rows = (await table.query().select(['id']).withRowId().toArray()).filter((r) => Number(r.id) >= 1000);
	const fetched = await table.fetchBlobs('payload', rows.map((r) => r._rowid));
	const reference = new Map(rows.map((r, i) => [Number(r.id), sha256(Buffer.from(fetched[i]))]));

	assert.equal(reference.get(1000), await s3.objectSha256(settings, small), 'the reference reads the whole object');
	const mark = proxy.mark();

	assert.deepEqual(psqlLines('SELECT id || \' \' || encode(sha256(payload), \'hex\') FROM blob_s3.media WHERE id >= 1000 ORDER BY id;\n'),
		[1000, 1001].map((id) => id + ' ' + reference.get(id)));
	assert.ok(proxy.log(mark).some((r) => r.method === 'GET' && r.target.startsWith('/' + settings.LP_S3_BUCKET + '/' + small)),
		'read through the server covering the URI');

	// a URI outside every server's root: refused, with a hint
	psqlLines(`SELECT lance_parts.write_dataset(${literal(DATASET)}, $q$
SELECT * FROM (VALUES ${external(1002, 0, 0, 's3://' + settings.LP_S3_BUCKET + '/unserved/x')}) v(id, payload)$q$, 'append') IS NOT NULL;
`);
	const { err } = await psqlAsync('\\set VERBOSITY verbose\nSELECT length(payload) FROM blob_s3.media WHERE id = 1002;\n', true);

	assert.match(err.join('\n'), /ERROR: {2}42704: .*unserved/);
	assert.match(err.join('\n'), /HINT: {2}Create a server/);
});
