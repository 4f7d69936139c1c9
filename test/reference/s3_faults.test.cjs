'use strict';
// Faults between PostgreSQL and a real S3 server (Ceph RGW, s3_server.cjs): the requests of
// a lance_fdw server go through test/tools/s3_fault_proxy.py, started here and stopped by
// PID, which drops connections, loses answers, answers 500 InternalError or 503 SlowDown, or
// never answers, at chosen requests. A read and an assembly succeed through fewer faults than
// lance_parts.s3_max_retries; after the retries they fail with 08006 (dropped connections)
// or 58030 (error answers); a cancel during a retried request ends it within a second; and
// after each failure no multipart upload and no object remains under the dataset. The socket
// to the server is close-on-exec: a program the backend starts does not hold it.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const arrow = require('apache-arrow');
const lancedb = require('@lancedb/lancedb');
const { startS3Server } = require('./s3_server.cjs');
const { psqlLines, psqlAsync, literal } = require('./pg.cjs');
const h = require('./harness.cjs');
const s3 = require('./s3_requests.cjs');
const { startFaultProxy } = require('./s3_proxy.cjs');

const { settings, storageOptions, root, fdwServerSql } = startS3Server('s3-faults-server');
const PREFIX = 'faults';
const ROOT = root(PREFIX);
const scratch = h.scratchDir('s3-faults');
// a few retries, soon: each test's own SET changes what it needs
const RETRIES = 'SET lance_parts.s3_max_retries = 3;\nSET lance_parts.s3_retry_base_delay = 10;\n' +
	'SET lance_parts.s3_retry_max_delay = 20;\n\\set VERBOSITY verbose\n';
const ROWS_PER_PART = 1000000;

const keyOf = (uri) => uri.slice(('s3://' + settings.LP_S3_BUCKET + '/').length);
const uriOf = (key) => 's3://' + settings.LP_S3_BUCKET + '/' + key;
const escapeRegex = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

let proxy = null;			// the fault proxy (s3_proxy.cjs), from the first test on

test.after(() => {
	if (proxy !== null)
		proxy.stop();
});

// Random doubles: pages no encoding shrinks, 8 bytes a row.
function doubles(count)
{
	return arrow.tableFromArrays({ x: Float64Array.from({ length: count }, () => Math.random()) });
}

// The uploads in progress and the objects under the dataset's data/ directory.
async function leftUnder(dataset)
{
	const prefix = keyOf(dataset) + '/data/';

	return { uploads: await s3.listUploads(settings, prefix), objects: await s3.listKeys(settings, prefix) };
}

let part = null;			// a data file on S3 (through the proxy's server)
let localParts = null;		// two local data files of ROWS_PER_PART rows (8 MB each)
let partRows = 0;

test.before(async () => {
	proxy = await startFaultProxy(settings.LP_S3_ENDPOINT, scratch);
	psqlLines(`CREATE EXTENSION IF NOT EXISTS lance_parts;
DROP SERVER IF EXISTS s3_faults_proxy CASCADE;
${fdwServerSql('s3_faults_proxy', ROOT, proxy.endpoint)}
DROP SERVER IF EXISTS s3_faults_direct CASCADE;
${fdwServerSql('s3_faults_direct', root('direct'))}
`);
	const remote = await lancedb.connect(ROOT, { storageOptions });

	await remote.createTable('small', doubles(1000));
	part = ROOT + '/small.lance/data/' + (await s3.listKeys(settings, PREFIX + '/small.lance/data/'))
		.map((k) => path.basename(k))[0];
	partRows = 1000;
	const local = await lancedb.connect(scratch);
	const big = await local.createTable('big', doubles(ROWS_PER_PART));

	await big.add(doubles(ROWS_PER_PART));
	localParts = fs.readdirSync(path.join(scratch, 'big.lance', 'data')).map((f) => path.join(scratch, 'big.lance', 'data', f));
	assert.equal(localParts.length, 2);
});

// A dataset on S3 (through the proxy's server) of one small fragment, with a target to assemble into.
async function freshDataset(name)
{
	await (await lancedb.connect(ROOT, { storageOptions })).createTable(name, doubles(10));
	const dataset = ROOT + '/' + name + '.lance';

	return { dataset, target: h.createTarget(dataset) };
}

function assembleSql(target, parts)
{
	return 'SELECT status FROM lance_parts.assemble(' + h.sqlJsonb(target) + ', ' + h.sqlTextArray(parts) + ');\n';
}

test('a read succeeds through fewer faults than s3_max_retries, each retried', async () => {
	const mark = proxy.mark();
	const pattern = new RegExp(escapeRegex(keyOf(part)) + '$');

	proxy.setRules([{ method: 'GET', path: pattern.source, faults: ['drop', '503', '500'] }]);
	const lines = psqlLines(RETRIES + 'SELECT num_rows FROM lance_parts.file_info(' + literal(part) + ');\n');

	assert.deepEqual(lines, [String(partRows)]);
	assert.deepEqual(proxy.actionsOn(mark, 'GET', pattern).slice(0, 4), ['drop', '503', '500', 'pass'],
		'three faults, then the answer');
	proxy.setRules([]);
});

test('a read fails after the retries: 08006 for dropped connections, 58030 for error answers', async () => {
	const pattern = new RegExp(escapeRegex(keyOf(part)) + '$');

	for (const [fault, state] of [['drop', '08006'], ['503', '58030'], ['500', '58030']])
	{
		const mark = proxy.mark();

		proxy.setRules([{ method: 'GET', path: pattern.source, faults: [], then: fault }]);
		const { err } = await psqlAsync(RETRIES + 'SELECT num_rows FROM lance_parts.file_info(' + literal(part) + ');\n', true);

		assert.match(err.join('\n'), new RegExp('ERROR: {2}' + state + ': .*127\\.0\\.0\\.1:' + proxy.port), fault);
		if (fault !== 'drop')
			assert.match(err.join('\n'), fault === '503' ? /SlowDown/ : /InternalError/, 'the S3 error code is named');
		assert.deepEqual(proxy.actionsOn(mark, 'GET', pattern), [fault, fault, fault, fault], 'the first attempt and 3 retries');
	}
	proxy.setRules([]);
});

test('an assembly succeeds through faults at every step of its multipart upload', async () => {
	const { dataset, target } = await freshDataset('assembled');
	const mark = proxy.mark();

	proxy.setRules([
		{ method: 'POST', path: '\\?uploads$', faults: ['503', 'drop'] },
		{ method: 'PUT', path: 'partNumber=1&', faults: ['500', 'drop'] },
		{ method: 'PUT', path: 'partNumber=2&', faults: ['503'] },
		{ method: 'POST', path: '\\?uploadId=', faults: ['drop', '500'] },
	]);
	const lines = psqlLines(RETRIES + assembleSql(target, localParts) +
		'SELECT dataset_version FROM lance_parts.commit(' + h.sqlJsonb(target) + ');\n');

	proxy.setRules([]);
	assert.deepEqual(lines, ['written', '2']);
	assert.deepEqual(proxy.actionsOn(mark, 'POST', /\?uploads$/), ['503', 'drop', 'pass']);
	assert.deepEqual(proxy.actionsOn(mark, 'PUT', /partNumber=1&/), ['500', 'drop', 'pass']);
	assert.deepEqual(proxy.actionsOn(mark, 'POST', /\?uploadId=/), ['drop', '500', 'pass']);
	const table = await (await lancedb.connect(ROOT, { storageOptions })).openTable('assembled');

	assert.equal(await table.countRows(), 10 + 2 * ROWS_PER_PART, 'the reference reads every row');
	assert.deepEqual((await leftUnder(dataset)).uploads, [], 'no upload left');
});

test('an assembly that fails after the retries leaves no upload and no object', async () => {
	const { dataset, target } = await freshDataset('failed');
	const before = (await leftUnder(dataset)).objects;

	for (const [rule, state] of [
		[{ method: 'PUT', path: 'partNumber=2&', faults: [], then: '500' }, '58030'],
		[{ method: 'PUT', path: 'partNumber=1&', faults: [], then: 'drop' }, '08006'],
		[{ method: 'POST', path: '\\?uploadId=', faults: [], then: 'drop' }, '08006'],
		[{ method: 'POST', path: '\\?uploadId=', faults: [], then: '503' }, '58030'],
	])
	{
		const mark = proxy.mark();

		proxy.setRules([rule]);
		const { err } = await psqlAsync(RETRIES + assembleSql(target, localParts), true);

		proxy.setRules([]);
		assert.match(err.join('\n'), new RegExp('ERROR: {2}' + state + ': '), JSON.stringify(rule));
		assert.equal(proxy.actionsOn(mark, rule.method, new RegExp(rule.path)).length, 4, 'the first attempt and 3 retries');
		assert.ok(proxy.actionsOn(mark, 'DELETE', /\?uploadId=/).length >= 1, 'the upload was aborted');
		assert.deepEqual(await leftUnder(dataset), { uploads: [], objects: before },
			'no upload and no new object after ' + JSON.stringify(rule));
	}
});

test('a commit on S3: a lost manifest PUT answer still lands once, a lost race (412, 409) rebases or is 40001', async () => {
	const { dataset } = await freshDataset('committed');
	const manifestPut = '/_versions/[0-9]+\\.manifest$';
	const ingest = 'SELECT dataset_version FROM lance_parts.ingest(' + literal(dataset) + ', ' + h.sqlTextArray([part]) + ');\n';
	const versions = async () => (await s3.listKeys(settings, keyOf(dataset) + '/_versions/')).length;
	let mark = proxy.mark();

	// the server stores the manifest, its answer is lost: the retried PUT meets its own object
	proxy.setRules([{ method: 'PUT', path: manifestPut, faults: ['lose'] }]);
	assert.deepEqual(psqlLines(RETRIES + ingest), ['2']);
	assert.deepEqual(proxy.actionsOn(mark, 'PUT', new RegExp(manifestPut)), ['lose', 'pass']);
	assert.equal(await versions(), 2, 'one manifest more');

	// another writer's manifest won the conditional PUT: rebase and retry
	mark = proxy.mark();
	proxy.setRules([{ method: 'PUT', path: manifestPut, faults: ['412'] }]);
	assert.deepEqual(psqlLines(RETRIES + ingest), ['3']);
	assert.deepEqual(proxy.actionsOn(mark, 'PUT', new RegExp(manifestPut)), ['412', 'pass']);

	// a conditional write of the same manifest in progress, every attempt of the PUT: rebase too
	mark = proxy.mark();
	proxy.setRules([{ method: 'PUT', path: manifestPut, faults: ['409', '409', '409', '409'] }]);
	assert.deepEqual(psqlLines(RETRIES + ingest), ['4']);
	assert.deepEqual(proxy.actionsOn(mark, 'PUT', new RegExp(manifestPut)), ['409', '409', '409', '409', 'pass']);

	// without commit retries the lost race is a serialization failure
	proxy.setRules([{ method: 'PUT', path: manifestPut, faults: ['412'] }]);
	const { err } = await psqlAsync(RETRIES + 'SET lance_parts.commit_retries = 0;\n' + ingest, true);

	proxy.setRules([]);
	assert.match(err.join('\n'), /ERROR: {2}40001: could not commit to dataset/);
	assert.equal(await versions(), 4, 'no manifest for the lost race');
	const table = await (await lancedb.connect(ROOT, { storageOptions })).openTable('committed');

	assert.equal(await table.version(), 4);
	assert.equal(await table.countRows(), 10 + 3 * partRows);
});

// The multipart_upload rows of cleanup_orphans of dataset, as [path, action, bytes].
function uploadRows(dataset, olderThan, dryRun)
{
	return h.sqlRows('SELECT path, action, bytes FROM lance_parts.cleanup_orphans(' + literal(dataset) + ', ' +
		literal(olderThan) + ', ' + dryRun + ") WHERE kind = 'multipart_upload'")
		.map((r) => [r.path, r.action, Number(r.bytes)]);
}

test('cleanup_orphans aborts the uploads left behind: a lost CreateMultipartUpload answer, a failed abort', async () => {
	const { dataset, target } = await freshDataset('orphaned');

	// the server starts an upload whose id never reaches the backend, which starts another
	proxy.setRules([{ method: 'POST', path: '\\?uploads$', faults: ['lose'] }]);
	const [lost, version] = psqlLines(RETRIES + 'SELECT path FROM lance_parts.assemble(' + h.sqlJsonb(target) + ', ' +
		h.sqlTextArray(localParts) + ');\n' + 'SELECT dataset_version FROM lance_parts.commit(' + h.sqlJsonb(target) + ');\n');

	assert.equal(version, '2');

	// an assembly whose part fails and whose abort is dropped
	const second = h.createTarget(dataset);

	proxy.setRules([
		{ method: 'PUT', path: 'partNumber=1&', faults: [], then: '500' },
		{ method: 'DELETE', path: '\\?uploadId=', faults: [], then: 'drop' },
	]);
	const { err } = await psqlAsync(RETRIES + 'SELECT path FROM lance_parts.assemble(' + h.sqlJsonb(second) + ', ' +
		h.sqlTextArray(localParts) + ');\n', true);

	proxy.setRules([]);
	assert.match(err.join('\n'), /ERROR: {2}58030: /);
	const abandoned = dataset + '/data/' + second.file_name;
	// the bytes of each upload's parts, as the server lists them
	const stored = await s3.uploadedBytes(settings, keyOf(dataset) + '/');
	const expected = [[lost, 'would_remove', stored[keyOf(lost)]],
		[abandoned, 'would_remove', stored[keyOf(abandoned)]]].sort();

	assert.deepEqual((await s3.listUploads(settings, keyOf(dataset) + '/')).sort(), [keyOf(lost), keyOf(abandoned)].sort(),
		'the lost upload and the one whose abort failed are left');
	assert.deepEqual(uploadRows(dataset, '1 hour', true), [], 'uploads younger than older_than are left alone');
	assert.deepEqual(uploadRows(dataset, '0 s', true), expected, 'the dry run lists both');
	assert.equal((await s3.listUploads(settings, keyOf(dataset) + '/')).length, 2, 'and aborts none');
	// an upload at a key no s3:// URI names exactly (a trailing '/') is reported, not aborted
	const unnamed = keyOf(dataset) + '/data/directory/';

	await s3.startUpload(settings, unnamed);
	assert.deepEqual(uploadRows(dataset, '0 s', false), [...expected.map(([p, , bytes]) => [p, 'removed', bytes]),
		[uriOf(unnamed), 'skipped', 0]].sort());
	assert.deepEqual(await s3.listUploads(settings, keyOf(dataset) + '/'), [unnamed], 'cleanup_orphans aborted both');
	assert.deepEqual(uploadRows(dataset, '0 s', false), [[uriOf(unnamed), 'skipped', 0]], 'nothing else is left to abort');
	const table = await (await lancedb.connect(ROOT, { storageOptions })).openTable('orphaned');

	assert.equal(await table.countRows(), 10 + 2 * ROWS_PER_PART, 'the committed file at the key of the lost upload stays whole');
});

// Start the script in a session of its own; resolve, once the proxy has taken action on a
// request of method matching pattern, with the session's pid and the promise of its end.
async function startUntil(script, method, pattern, action)
{
	const application = 'lp-faults-' + Math.random().toString(36).slice(2);
	const mark = proxy.mark();
	const done = psqlAsync("SET application_name = '" + application + "';\n" + script, true);

	for (let i = 0; i < 3000; i++)
	{
		if (proxy.actionsOn(mark, method, pattern).includes(action))
			return { pid: psqlLines("SELECT pid FROM pg_stat_activity WHERE application_name = '" + application + "';\n")[0], done };
		await new Promise((resolve) => setTimeout(resolve, 10));
	}
	throw new Error('the proxy saw no ' + method + ' ' + pattern + ': ' + JSON.stringify(await done));
}

async function cancelWithinASecond(session)
{
	const start = Date.now();

	psqlLines('SELECT pg_cancel_backend(' + session.pid + ');\n');
	const { err } = await session.done;
	const elapsed = Date.now() - start;

	assert.match(err.join('\n'), /57014: canceling statement due to user request/);
	assert.ok(elapsed < 1000, 'the cancel ended the statement in ' + elapsed + ' ms');
}

test('a cancel during a retried request ends it within a second, and leaves no upload', async () => {
	const pattern = new RegExp(escapeRegex(keyOf(part)) + '$');

	// waiting to retry (a backoff of 5 s)
	proxy.setRules([{ method: 'GET', path: pattern.source, faults: [], then: '503' }]);
	await cancelWithinASecond(await startUntil(
		'SET lance_parts.s3_retry_base_delay = 5000;\n\\set VERBOSITY verbose\n' +
		'SELECT num_rows FROM lance_parts.file_info(' + literal(part) + ');\n', 'GET', pattern, '503'));

	// a retry the server never answers, in the middle of an assembly's upload
	const { dataset, target } = await freshDataset('canceled');
	const before = (await leftUnder(dataset)).objects;

	proxy.setRules([{ method: 'PUT', path: 'partNumber=2&', faults: ['503'], then: 'hang' }]);
	await cancelWithinASecond(await startUntil(RETRIES + assembleSql(target, localParts), 'PUT', /partNumber=2&/, 'hang'));
	proxy.setRules([]);
	assert.deepEqual(await leftUnder(dataset), { uploads: [], objects: before }, 'no upload and no new object');
});

test('a program the backend starts does not inherit its connection to the S3 server', async () => {
	await (await lancedb.connect(root('direct'), { storageOptions })).createTable('small', doubles(100));
	const [file] = await s3.listKeys(settings, 'direct/small.lance/data/');
	const port = new URL(settings.LP_S3_ENDPOINT).port;
	// the connection the read leaves open, and the processes holding it, seen from a program
	// the backend runs (its shell's parent)
	const lines = psqlLines('CREATE TEMP TABLE holders (line text);\n' +
		'SELECT num_rows FROM lance_parts.file_info(' + literal(root('direct') + '/' + file.slice('direct/'.length)) + ');\n' +
		'COPY holders FROM PROGRAM $cmd$ss -tnpH state established "( dport = :' + port + ' )" | sed "s/^/$PPID /"$cmd$;\n' +
		'SELECT line FROM holders;\n');

	assert.equal(lines[0], '100');
	const held = lines.slice(1).filter((line) => line.includes('pid=' + line.split(' ')[0] + ','));

	assert.equal(held.length, 1, 'the backend holds one connection to the server: ' + JSON.stringify(lines));
	assert.doesNotMatch(held[0], /"(sh|ss|sed)"/, 'and no program it started holds it');
});
