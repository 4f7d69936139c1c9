'use strict';
// lance_parts.compact on S3 (Ceph RGW, s3_server.cjs, reached through the logging proxy of
// s3_proxy.cjs) of a dataset lancedb wrote there with a Blob v2 column (Inline, Packed and
// Dedicated payloads in three fragments): every fragment rewritten by page copy (the descriptor
// file removed after), lancedb's blob API returns
// the same payloads after, the new sidecars are copied by the server (no GET of an old sidecar
// passes the proxy) and hold the old bytes, and the old ones stay.  A missing sidecar is an
// ERROR that leaves no object behind.
// LP_S3_PORT, LP_S3_MON_PORT and LP_S3_OSD_PORTS choose the server's ports.
const test = require('node:test');
const assert = require('node:assert/strict');
const lancedb = require('@lancedb/lancedb');
const { startS3Server } = require('./s3_server.cjs');
const { sha256, writeBlobDataset } = require('./blob_data.cjs');
const { psqlLines, psqlAsync, literal } = require('./pg.cjs');
const s3 = require('./s3_requests.cjs');
const { startFaultProxy } = require('./s3_proxy.cjs');
const h = require('./harness.cjs');

const PREFIX = 'compact-blobs';
const APPENDS = [13, 9, 7];
const { settings, storageOptions, root, fdwServerSql } = startS3Server('s3-compact-blobs');
const ROOT = root(PREFIX);
let proxy = null;

test.after(() => {
	if (proxy !== null)
		proxy.stop();
});

test.before(async () => {
	proxy = await startFaultProxy(settings.LP_S3_ENDPOINT, h.scratchDir('compact-blobs-proxy'));
	psqlLines(`CREATE EXTENSION IF NOT EXISTS lance_parts;
DROP SERVER IF EXISTS compact_blobs_server CASCADE;
${fdwServerSql('compact_blobs_server', ROOT, proxy.endpoint)}
`);
});

async function fetchAll(name)
{
	const table = await (await lancedb.connect(ROOT, { storageOptions })).openTable(name);
	const rows = await table.query().select(['id']).withRowId().toArray();
	const fetched = await table.fetchBlobs('payload', rows.map((r) => r._rowid));
	const out = new Map();

	rows.forEach((r, i) => out.set(Number(r.id), sha256(fetched[i] === null ? null : Buffer.from(fetched[i]))));
	return { out, version: await table.version(), fragments: (await table.stats()).fragmentStats.numFragments };
}

const sidecarKeys = async (name) => (await s3.listKeys(settings, `${PREFIX}/${name}.lance/data/`)).filter((k) => k.endsWith('.blob')).sort();

for (const version of ['2.2', '2.3'])
{
	test(`${version} on S3: compact rewrites Blob v2 fragments, sidecars copied by the server`, async () => {
		const name = 'media_' + version.replace('.', '_');
		const dataset = `${ROOT}/${name}.lance`;

		await writeBlobDataset(await lancedb.connect(ROOT, { storageOptions }), name, version, { appends: APPENDS });
		const before = await fetchAll(name);
		const sidecarsBefore = await sidecarKeys(name);
		const mark = proxy.mark();
		const { out, err } = await psqlAsync(`SET client_min_messages = debug1;
SELECT coalesce(jsonb_agg(to_jsonb(q)), '[]') FROM (SELECT * FROM lance_parts.compact(${literal(dataset)})) q;
`, true);
		const result = JSON.parse(out[out.length - 1]);

		assert.deepEqual(result.filter((r) => r.action !== 'rewritten'), [], 'no fragment skipped');
		assert.ok(err.some((l) => /validated and planned \d+ parts/.test(l)), 'pages copied: ' + err.join('\n'));
		assert.deepEqual((await s3.listKeys(settings, `${PREFIX}/${name}.lance/data/`)).filter((k) => k.includes('/_parts/')), [],
			'the descriptor file removed');
		const requests = proxy.log(mark);

		for (const key of sidecarsBefore)
			assert.deepEqual(requests.filter((r) => r.method === 'GET' && r.target.startsWith('/' + settings.LP_S3_BUCKET + '/' + key)), [],
				'no GET of ' + key);
		const after = await fetchAll(name);

		assert.equal(after.fragments, 1);
		assert.deepEqual([...after.out.entries()].sort(), [...before.out.entries()].sort(), 'the same rows and payloads');
		const sidecarsAfter = await sidecarKeys(name);
		const added = sidecarsAfter.filter((k) => !sidecarsBefore.includes(k));

		assert.equal(added.length, sidecarsBefore.length, 'every sidecar placed once');
		assert.ok(sidecarsBefore.every((k) => sidecarsAfter.includes(k)), 'the old sidecars stay');
		const hashes = async (keys) => (await Promise.all(keys.map((k) => s3.objectSha256(settings, k)))).sort();

		assert.deepEqual(await hashes(added), await hashes(sidecarsBefore), 'the same bytes');
	});
}

test('a missing sidecar on S3: ERROR, no version and no object left', async () => {
	const name = 'media_missing';
	const dataset = `${ROOT}/${name}.lance`;

	await writeBlobDataset(await lancedb.connect(ROOT, { storageOptions }), name, '2.3', { appends: APPENDS });
	const table = await (await lancedb.connect(ROOT, { storageOptions })).openTable(name);
	const version = await table.version();
	const sidecars = await sidecarKeys(name);

	await s3.deleteKey(settings, sidecars[sidecars.length - 1]);
	const keys = await s3.listKeys(settings, `${PREFIX}/${name}.lance/`);
	const { err } = await psqlAsync(`\\set VERBOSITY verbose
SELECT * FROM lance_parts.compact(${literal(dataset)});
`, true);

	assert.match(err.join('\n'), /ERROR: {2}58P01: sidecar ".*" of blob id \d+, named by row \d+ of column "payload" of data file ".*", is not a file in the data file's sidecar directory/);
	await table.checkoutLatest();
	assert.equal(await table.version(), version);
	assert.deepEqual(await s3.listKeys(settings, `${PREFIX}/${name}.lance/`), keys, 'nothing written');
	assert.deepEqual(await s3.listUploads(settings, `${PREFIX}/${name}.lance/`), [], 'no upload left');
});
