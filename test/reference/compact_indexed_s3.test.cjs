'use strict';
// lance_parts.compact on S3 (Ceph RGW, s3_server.cjs) of datasets lancedb wrote there without
// stable row ids, with deletion files and a BTREE and a BITMAP index over the fragments: both
// indexes remapped into new objects under _indices/<new uuid>/, lancedb reads the same rows and
// its indexed queries answer as before; likewise an IVF_PQ vector index (auxiliary.idx written
// anew, index.idx copied), lancedb's vector search finding the same rows, and an IVF_HNSW_SQ one
// whose graphs lose deleted rows (rebuilt: index.idx written anew).  A page lookup that names
// pages its page file lacks is an ERROR that leaves no object and no upload behind.
// LP_S3_PORT, LP_S3_MON_PORT and LP_S3_OSD_PORTS choose the server's ports.
const test = require('node:test');
const assert = require('node:assert/strict');
const arrow = require('apache-arrow');
const lancedb = require('@lancedb/lancedb');
const { startS3Server } = require('./s3_server.cjs');
const { prng } = require('./prng.cjs');
const { encodeRows } = require('./values.cjs');
const { psqlLines, psqlAsync, literal } = require('./pg.cjs');
const s3 = require('./s3_requests.cjs');

const PREFIX = 'compact-indexed';
const { settings, storageOptions, root, fdwServerSql } = startS3Server('s3-compact-indexed');
const ROOT = root(PREFIX);

test.before(() => {
	psqlLines(`CREATE EXTENSION IF NOT EXISTS lance_parts;
DROP SERVER IF EXISTS compact_indexed_server CASCADE;
${fdwServerSql('compact_indexed_server', ROOT)}
`);
});
const FILTERS = ['id = 33', 'id IN (2, 47, 4100, 5999)', 'id >= 4090 AND id < 4110', 'k = 3 AND id < 300'];

const rowsOf = (first, n) => new arrow.Table({
	id: arrow.vectorFromArray(BigInt64Array.from({ length: n }, (_, i) => BigInt(first + i))),
	k: arrow.vectorFromArray(Int32Array.from({ length: n }, (_, i) => (first + i) % 10)),
});

async function indexedTable(name, rows)
{
	const db = await lancedb.connect(ROOT, { storageOptions });
	const table = await db.createTable(name, rowsOf(0, 1000), { storageOptions: { newTableDataStorageVersion: '2.2' } });

	for (let first = 1000; first < rows; first += 1000)
		await table.add(rowsOf(first, 1000));
	await table.delete('id % 7 = 3');
	await table.createIndex('id', { config: lancedb.Index.btree() });
	await table.createIndex('k', { config: lancedb.Index.bitmap() });
	await table.delete('id % 11 = 4');
	return table;
}

async function answers(table)
{
	const out = [];

	for (const filter of FILTERS)
		out.push(encodeRows(await table.query().where(filter).toArrow()).map((r) => Number(r.id)).sort((a, b) => a - b));
	return out;
}

const indexKeys = async (name) => (await s3.listKeys(settings, `${PREFIX}/${name}.lance/_indices/`)).sort();

test('on S3: compact remaps the BTREE and BITMAP indexes over the fragments it rewrites', async () => {
	const table = await indexedTable('indexed', 6000);
	const rowsBefore = await table.countRows();
	const answersBefore = await answers(table);
	const keysBefore = await indexKeys('indexed');
	const out = await psqlAsync(`SELECT coalesce(jsonb_agg(to_jsonb(q)), '[]') FROM
(SELECT * FROM lance_parts.compact(${literal(`${ROOT}/indexed.lance`)}, rewrite_deletions => true)) q;
`);
	const result = JSON.parse(out[out.length - 1]);

	assert.deepEqual(result.filter((r) => r.action !== 'rewritten'), [], 'no fragment skipped');
	await table.checkoutLatest();
	assert.equal((await table.stats()).fragmentStats.numFragments, 1);
	assert.equal(await table.countRows(), rowsBefore);
	assert.deepEqual(await answers(table), answersBefore, 'the indexes answer as before');
	const added = (await indexKeys('indexed')).filter((k) => !keysBefore.includes(k));

	assert.deepEqual(added.map((k) => k.split('/').pop()).sort(),
		['bitmap_page_lookup.lance', 'page_data.lance', 'page_lookup.lance']);
	assert.deepEqual((await table.listIndices()).map((i) => i.name).sort(), ['id_idx', 'k_idx']);
});

test('on S3: a page lookup naming pages its page file lacks: ERROR, no object and no upload left', async () => {
	await indexedTable('damaged', 3000);
	await indexedTable('longer', 20000);
	const lookupOf = async (name) => (await indexKeys(name)).find((k) => k.endsWith('/page_lookup.lance'));

	await s3.copyKey(settings, await lookupOf('longer'), await lookupOf('damaged'));
	const keys = await s3.listKeys(settings, `${PREFIX}/damaged.lance/`);
	const { err } = await psqlAsync(`\\set VERBOSITY verbose
SELECT * FROM lance_parts.compact(${literal(`${ROOT}/damaged.lance`)}, rewrite_deletions => true);
`, true);

	assert.match(err.join('\n'), /ERROR: {2}XX001: BTREE index lookup file ".*" names page \d+ of \d+/);
	assert.match(err.join('\n'), /could not be remapped, so its fragments were not compacted/);
	// on S3 the staging of re-encoded rows leaves no prefix behind either
	assert.deepEqual(await s3.listKeys(settings, `${PREFIX}/damaged.lance/`), keys, 'nothing written');
	assert.deepEqual(await s3.listUploads(settings, `${PREFIX}/damaged.lance/`), [], 'no upload left');
});

// IVF_PQ: index.idx copied, the same rows found.  IVF_HNSW_SQ: its graphs lose the deleted rows,
// so they are rebuilt and index.idx written anew; the search is approximate, so the rows found
// may differ by a near tie, but hardly.
for (const [name, config] of [
	['IVF_PQ', () => lancedb.Index.ivfPq({ numPartitions: 8, numSubVectors: 4 })],
	['IVF_HNSW_SQ', () => lancedb.Index.hnswSq({ numPartitions: 4 })],
])
{
	const graphs = name.startsWith('IVF_HNSW');

	test(`on S3: compact remaps an ${name} vector index over the fragments it rewrites`, async () => {
		const DIM = 16;
		const random = prng(20261208);
		const vectors = Array.from({ length: 2000 }, () => Array.from({ length: DIM }, () => Math.fround(random() * 2 - 1)));
		const embType = new arrow.FixedSizeList(DIM, new arrow.Field('item', new arrow.Float32(), true));
		const part = (first) => new arrow.Table({
			id: arrow.vectorFromArray(BigInt64Array.from({ length: 500 }, (_, i) => BigInt(first + i))),
			emb: arrow.vectorFromArray(vectors.slice(first, first + 500), embType),
		});
		const tableName = 'vector_' + name.toLowerCase();
		const db = await lancedb.connect(ROOT, { storageOptions });
		const table = await db.createTable(tableName, part(0), { storageOptions: { newTableDataStorageVersion: '2.2' } });

		for (let first = 500; first < vectors.length; first += 500)
			await table.add(part(first));
		await table.createIndex('emb', { config: config() });
		await table.delete('id % 7 = 3');
		const search = async () => {
			const results = [];

			for (const query of vectors.slice(0, 6))
				results.push((await table.vectorSearch(query).limit(10).nprobes(3).select(['id', 'emb']).toArray())
					.map((r) => `${r.id}:${Array.from(r.emb).join(',')}`));
			return results;
		};
		const before = await search();
		const keysBefore = await indexKeys(tableName);
		const out = await psqlAsync(`SELECT coalesce(jsonb_agg(to_jsonb(q)), '[]') FROM
(SELECT * FROM lance_parts.compact(${literal(`${ROOT}/${tableName}.lance`)}, rewrite_deletions => true)) q;
`);
		const result = JSON.parse(out[out.length - 1]);

		assert.deepEqual(result.filter((r) => r.action !== 'rewritten'), [], 'no fragment skipped');
		await table.checkoutLatest();
		assert.equal((await table.stats()).fragmentStats.numFragments, 1);
		const after = await search();

		if (graphs)
		{
			const same = after.reduce((n, rows, i) => n + rows.filter((r) => before[i].includes(r)).length, 0);

			assert.ok(same >= 0.95 * after.length * 10, `${same} of ${after.length * 10} rows found again`);
		}
		else
			assert.deepEqual(after, before, 'lancedb\'s vector search finds the same rows');
		const added = (await indexKeys(tableName)).filter((k) => !keysBefore.includes(k));

		assert.deepEqual(added.map((k) => k.split('/').pop()).sort(), ['auxiliary.idx', 'index.idx']);
		const sha = (keys) => s3.objectSha256(settings, keys.find((k) => k.endsWith('/index.idx')));

		if (graphs)
			assert.notEqual(await sha(added), await sha(keysBefore), 'index.idx written anew');
		else
			assert.equal(await sha(added), await sha(keysBefore), 'index.idx copied');
	});
}
