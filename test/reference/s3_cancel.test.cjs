'use strict';
// A cancel at any moment of an assembly into S3 leaves no multipart upload behind: the
// statement is cancelled as soon as its upload exists on the server (seen with
// ListMultipartUploads) and a little later, five times, serially (max_copy_workers = 0)
// with parts sent from local files and parts copied on the server; and a cancel that
// arrives while the answer of CreateMultipartUpload is on its way (held back by
// test/tools/s3_fault_proxy.py) still aborts the upload the server made.
// LP_S3_PORT, LP_S3_MON_PORT and LP_S3_OSD_PORTS choose the server's ports.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const lancedb = require('@lancedb/lancedb');
const { startS3Server } = require('./s3_server.cjs');
const { vectorSchema, vectorRows } = require('./vectors.cjs');
const { psqlLines, psqlAsync, literal } = require('./pg.cjs');
const h = require('./harness.cjs');
const s3 = require('./s3_requests.cjs');
const { startFaultProxy } = require('./s3_proxy.cjs');

const PREFIX = 'cancel';
const { settings, storageOptions, root, fdwServerSql } = startS3Server('s3-cancel-server');
const ROOT = root(PREFIX);
const scratch = h.scratchDir('s3-cancel');
const keyOf = (uri) => uri.slice(('s3://' + settings.LP_S3_BUCKET + '/').length);

let proxy = null;
let localPart = null;		// a data file of a few MB, local
let remotePart = null;		// the same rows on S3, copied on the server

test.before(async () => {
	const localDb = await lancedb.connect(scratch);

	await localDb.createTable('big', vectorRows(0, 7000), { schema: vectorSchema, mode: 'overwrite' });
	localPart = path.join(scratch, 'big.lance', 'data', fs.readdirSync(path.join(scratch, 'big.lance', 'data'))[0]);
	await (await lancedb.connect(ROOT, { storageOptions }))
		.createTable('big', vectorRows(0, 7000), { schema: vectorSchema, mode: 'overwrite' });
	remotePart = ROOT + '/big.lance/data/' +
		path.basename((await s3.listKeys(settings, PREFIX + '/big.lance/data/'))[0]);
	proxy = await startFaultProxy(settings.LP_S3_ENDPOINT, path.join(scratch, 'proxy'));
	psqlLines(`CREATE EXTENSION IF NOT EXISTS lance_parts;
DROP SERVER IF EXISTS s3_cancel_server CASCADE;
${fdwServerSql('s3_cancel_server', ROOT)}
DROP SERVER IF EXISTS s3_cancel_proxy CASCADE;
${fdwServerSql('s3_cancel_proxy', root('proxied'), proxy.endpoint)}
`);
});

test.after(() => {
	if (proxy !== null)
		proxy.stop();
});

function concatSql(output, parts)
{
	return 'SET lance_parts.max_copy_workers = 0;\n\\set VERBOSITY verbose\n' +
		'SELECT status FROM lance_parts.concat_files(' + literal(output) + ', ' + h.sqlTextArray(parts) + ');\n';
}

// Run concat_files in a session of its own and cancel it delayMs after its upload appears.
async function cancelAfterUpload(output, parts, delayMs)
{
	const application = 'lp-cancel-' + Math.random().toString(36).slice(2);
	const done = psqlAsync("SET application_name = '" + application + "';\n" + concatSql(output, parts), true);
	let seen = false;

	for (let i = 0; i < 3000 && !seen; i++)
	{
		seen = (await s3.listUploads(settings, keyOf(output))).length > 0;
		if (!seen)
			await new Promise((resolve) => setTimeout(resolve, 5));
	}
	assert.ok(seen, 'the upload of ' + output + ' appeared: ' + (seen ? '' : JSON.stringify(await done)));
	await new Promise((resolve) => setTimeout(resolve, delayMs));
	psqlLines("SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = '" + application + "';\n");
	return done;
}

for (const [kind, parts] of [['sent', () => Array(12).fill(localPart)], ['copied', () => Array(12).fill(remotePart)]])
{
	test('a serial assembly of ' + kind + ' parts cancelled as soon as its upload exists leaves no upload', async () => {
		for (const [i, delayMs] of [0, 0, 10, 50, 200].entries())
		{
			const output = ROOT + '/' + kind + '/' + i + '.lance';
			const { err } = await cancelAfterUpload(output, parts(), delayMs);

			assert.match(err.join('\n'), /57014: canceling statement due to user request/, 'cancel ' + i);
			assert.deepEqual(await s3.listUploads(settings, PREFIX + '/' + kind + '/'), [],
				'no upload left after cancel ' + i + ' (' + delayMs + ' ms after the upload appeared)');
			assert.deepEqual(await s3.listKeys(settings, keyOf(output)), [], 'no object after cancel ' + i);
		}
	});
}

test('a cancel while the answer of CreateMultipartUpload is on its way aborts the upload', async () => {
	const output = root('proxied') + '/held.lance';
	const application = 'lp-cancel-held';
	const mark = proxy.mark();

	proxy.setRules([{ method: 'POST', path: '\\?uploads', faults: [], then: 'late-1000' }]);
	const done = psqlAsync("SET application_name = '" + application + "';\n" + concatSql(output, Array(2).fill(localPart)), true);

	for (let i = 0; i < 3000 && proxy.actionsOn(mark, 'POST', /\?uploads/).length === 0; i++)
		await new Promise((resolve) => setTimeout(resolve, 10));
	assert.equal(proxy.actionsOn(mark, 'POST', /\?uploads/).length, 1, 'CreateMultipartUpload sent');
	// the server made the upload; its answer waits in the proxy
	for (let i = 0; i < 300 && (await s3.listUploads(settings, keyOf(output))).length === 0; i++)
		await new Promise((resolve) => setTimeout(resolve, 10));
	assert.equal((await s3.listUploads(settings, keyOf(output))).length, 1, 'the server made the upload');
	psqlLines("SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = '" + application + "';\n");
	const { err } = await done;

	proxy.setRules([]);
	assert.match(err.join('\n'), /57014: canceling statement due to user request/);
	assert.deepEqual(await s3.listUploads(settings, keyOf(output)), [], 'no upload left');
});
