'use strict';
// Parallel server-side assembly on S3: the UploadPartCopy requests of an assembly whose parts
// are on the S3 server (Ceph RGW, s3_server.cjs) are issued by parallel workers. The file
// assembled with 2 workers is the one assembled by the backend alone (0 workers) and the one
// of the serial fallback when no worker can start, byte for byte; the reference reads every
// row of a dataset assembled that way; a cancel while the workers copy, and a worker's failure
// (a part removed meanwhile), end the statement and leave no multipart upload and no object.
// LP_S3_PORT, LP_S3_MON_PORT and LP_S3_OSD_PORTS choose the server's ports.
const test = require('node:test');
const assert = require('node:assert/strict');
const lancedb = require('@lancedb/lancedb');
const { startS3Server } = require('./s3_server.cjs');
const { vectorSchema, vectorRows, vectorDigests } = require('./vectors.cjs');
const { psqlLines, psqlAsync, literal } = require('./pg.cjs');
const h = require('./harness.cjs');
const s3 = require('./s3_requests.cjs');

const PREFIX = 'parallel';

const { settings, storageOptions, root, fdwServerSql } = startS3Server('s3-parallel-server');
const ROOT = root(PREFIX);
const keyOf = (uri) => uri.slice(('s3://' + settings.LP_S3_BUCKET + '/').length);
const uriOf = (key) => 's3://' + settings.LP_S3_BUCKET + '/' + key;

async function remote()
{
	return lancedb.connect(ROOT, { storageOptions });
}

// The data files of a reference dataset on S3, one per fragment.
async function dataFileUris(datasetName)
{
	const table = await (await remote()).openTable(datasetName);
	const keys = await s3.listKeys(settings, PREFIX + '/' + datasetName + '.lance/data/');

	assert.equal(keys.length, (await table.stats()).fragmentStats.numFragments, 'one data file per fragment');
	return keys.map(uriOf);
}

test.before(() => {
	psqlLines(`CREATE EXTENSION IF NOT EXISTS lance_parts;
DROP SERVER IF EXISTS s3_parallel_server CASCADE;
${fdwServerSql('s3_parallel_server', ROOT)}
`);
});

// concat_files of parts into output after the settings; { status, messages } where messages
// are psql's standard error (NOTICEs, DEBUG1 with client_min_messages debug1).
async function concat(output, parts, settingsSql)
{
	const { out, err } = await psqlAsync(settingsSql + '\n\\set VERBOSITY verbose\n' +
		'SELECT status FROM lance_parts.concat_files(' + literal(output) + ', ' + h.sqlTextArray(parts) + ');\n', true);

	return { status: out.join('\n'), messages: err.join('\n') };
}

const PARALLEL = 'SET lance_parts.max_copy_workers = 2; SET parallel_leader_participation = off; SET client_min_messages = debug1;';

test('parts copied on the server by 2 parallel workers make the same file as the backend alone', async () => {
	const db = await remote();
	const parts = await db.createTable('vectors_parts', vectorRows(0, 6000), { schema: vectorSchema, mode: 'overwrite' });

	await parts.add(vectorRows(6000, 7000));
	await parts.add(vectorRows(13000, 8000));
	const partUris = await dataFileUris('vectors_parts');

	const serial = await concat(ROOT + '/serial.lance', partUris, 'SET lance_parts.max_copy_workers = 0;');
	const parallel = await concat(ROOT + '/parallel.lance', partUris, PARALLEL);
	const fallback = await concat(ROOT + '/fallback.lance', partUris, PARALLEL + ' SET max_parallel_workers = 0;');

	for (const run of [serial, parallel, fallback])
		assert.equal(run.status, 'written', run.messages);
	assert.match(parallel.messages, /copying 3 of \d+ upload parts of ".*parallel\.lance" with 2 parallel workers/);
	assert.match(fallback.messages, /NOTICE: {2}00000: no parallel workers could be started to copy parts into ".*fallback\.lance", copying serially/);
	assert.doesNotMatch(serial.messages, /parallel workers/);
	const digest = await s3.objectSha256(settings, PREFIX + '/serial.lance');

	assert.equal(await s3.objectSha256(settings, PREFIX + '/parallel.lance'), digest, '2 workers, same bytes');
	assert.equal(await s3.objectSha256(settings, PREFIX + '/fallback.lance'), digest, 'serial fallback, same bytes');
	assert.deepEqual(await s3.listUploads(settings, PREFIX + '/'), [], 'every upload completed');

	// a dataset assembled and committed with the workers: the reference reads every row
	await db.createTable('vectors', vectorRows(100000, 10), { schema: vectorSchema, mode: 'overwrite' });
	psqlLines(PARALLEL.replace('SET client_min_messages = debug1;', '') + '\n' +
		'SELECT dataset_version FROM lance_parts.ingest(' + literal(ROOT + '/vectors.lance') + ', ' + h.sqlTextArray(partUris) + ');\n');
	const expected = await vectorDigests(parts);
	const assembled = await (await remote()).openTable('vectors');

	assert.equal(expected.length, 21000);
	assert.deepEqual((await vectorDigests(assembled)).filter((r) => BigInt(r.split(':')[0]) < 100000n), expected);
	assert.equal(await assembled.countRows(), expected.length + 10);
});

// Start concat_files of parts into output with the workers, in a session named application;
// once its upload is open on the server, call whenOpen(), then resolve with the end of the
// call ({ status, messages }) and whether the upload was seen open.
async function whileUploading(output, parts, application, whenOpen)
{
	const run = concat(output, parts, "SET application_name = '" + application + "'; " + PARALLEL);
	let seen = false;

	for (let i = 0; i < 3000 && !seen; i++)
	{
		if ((await s3.listUploads(settings, keyOf(output))).length > 0)
		{
			await whenOpen();
			seen = true;
		}
		else
			await new Promise((resolve) => setTimeout(resolve, 5));
	}
	return { end: await run, seen };
}

test('a cancel while the workers copy ends the assembly and leaves no upload and no object', async () => {
	const db = await remote();

	await db.createTable('kept', vectorRows(0, 6000), { schema: vectorSchema, mode: 'overwrite' });
	const [part] = await dataFileUris('kept');
	const output = ROOT + '/aborted/canceled.lance';
	const application = 'lp-parallel-cancel';
	const { end, seen } = await whileUploading(output, Array(40).fill(part), application, () =>
		psqlLines("SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = '" + application +
			"' AND backend_type = 'client backend';\n"));

	assert.ok(seen, 'the upload was seen open: ' + end.messages);
	assert.match(end.messages, /ERROR: {2}57014: canceling statement due to user request/);
	assert.deepEqual(await s3.listUploads(settings, PREFIX + '/aborted/'), [], 'no upload left after the cancel');
	assert.deepEqual(await s3.listKeys(settings, PREFIX + '/aborted/'), [], 'no object after the cancel');
});

test('a worker whose copy fails ends the assembly with its ERROR and leaves no upload and no object', async () => {
	const db = await remote();

	await db.createTable('source', vectorRows(0, 6000), { schema: vectorSchema, mode: 'overwrite' });
	const [part] = await dataFileUris('source');
	const output = ROOT + '/aborted/failed.lance';
	// remove the part once the upload is open: the workers' next copies find it gone
	const { end, seen } = await whileUploading(output, Array(40).fill(part), 'lp-parallel-failure',
		() => s3.deleteKey(settings, keyOf(part)));

	assert.ok(seen, 'the upload was seen open: ' + end.messages);
	assert.match(end.messages, /ERROR: {2}58P01: could not copy a part into ".*failed\.lance": .*NoSuchKey/);
	assert.match(end.messages, /DETAIL: {2}Part \d+ is bytes 0 to \d+ of ".*source\.lance.*"\./);
	assert.match(end.messages, /CONTEXT: {2}parallel worker/);
	assert.deepEqual(await s3.listUploads(settings, PREFIX + '/aborted/'), [], 'no upload left after the ERROR');
	assert.deepEqual(await s3.listKeys(settings, PREFIX + '/aborted/'), [], 'no object after the ERROR');
});
