'use strict';
// lance_parts.compact on datasets lancedb made WITHOUT stable row ids whose fragments an IVF
// vector index covers (IVF_FLAT, IVF_PQ under l2, cosine and dot, of 4-bit codes under l2;
// IVF_HNSW_SQ and IVF_HNSW_PQ):
// the index keys on row addresses, which compaction moves, so it is remapped into a new index
// (new UUID; auxiliary.idx written anew, row ids mapped and the rows deletion files drop left
// out, partitions kept; index.idx copied) that the Rewrite lists as rewritten, as Lance's
// compact_files does.  Then lancedb's vector search (same nprobes and refine factor) and
// lance_fdw's indexed search return the same rows as before, and lancedb appends, optimizes
// and builds a new index on top.  HNSW graphs that would lose rows deleted after the index
// was built are rebuilt over the rows kept (index.idx written anew), as Lance rebuilds them,
// and find the rows they found before at the recall of a fresh lancedb index.  A damaged
// index (truncated, or row ids its fragments do not have) is an ERROR that leaves the dataset
// as it was.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const arrow = require('apache-arrow');
const h = require('./harness.cjs');
const { prng } = require('./prng.cjs');
const { psqlLines, literal } = require('./pg.cjs');

const pgvectorMissing = /^pgvector: (.*)$/m.exec(process.env.LP_PG_ADDONS_MISSING || '');
if (pgvectorMissing) {
	test('vector indexes remapped by compaction', { skip: `no pgvector for this PostgreSQL: ${pgvectorMissing[1]}` }, () => {});
	return;
}

const SEED = 20261207;
const DIM = 16;
const CLUSTERS = 12;
const ROWS_PER_FRAGMENT = 400;
const FRAGMENTS = 5;
const K = 10;
const NPROBES = 3;
const dir = h.scratchDir('compact-vector-indexed');

const random = prng(SEED);
const centers = Array.from({ length: CLUSTERS }, () => Array.from({ length: DIM }, () => random() * 4 - 2));
const point = () => centers[Math.floor(random() * CLUSTERS)].map((x) => Math.fround(x + (random() - 0.5) * 0.8));
const vectors = Array.from({ length: ROWS_PER_FRAGMENT * FRAGMENTS }, point);
const queries = Array.from({ length: 8 }, (_, i) => (i % 2 === 0 ? vectors[i * 131] : point()));
const appended = Array.from({ length: 50 }, point);

const embType = new arrow.FixedSizeList(DIM, new arrow.Field('item', new arrow.Float32(), true));
const rowsTable = (first, list) => new arrow.Table({
	id: arrow.vectorFromArray(list.map((_, i) => BigInt(first + i)), new arrow.Int64()),
	emb: arrow.vectorFromArray(list, embType),
});

// name, file version, index config, metric, pgvector's operator, rows deleted after the index.
// The 4-bit PQ index has partitions under Lance's 200 rows, past which lancedb scores rows with
// a quantized table and so by their position in the partition, which deleted rows shift.
const INDEXES = [
	['flat_l2', '2.1', () => h.lancedb.Index.ivfFlat({ numPartitions: 8, distanceType: 'l2' }), 'l2', '<->', 'id % 9 = 2'],
	['flat_cosine', '2.2', () => h.lancedb.Index.ivfFlat({ numPartitions: 8, distanceType: 'cosine' }), 'cosine', '<=>', null],
	['flat_dot', '2.0', () => h.lancedb.Index.ivfFlat({ numPartitions: 8, distanceType: 'dot' }), 'dot', '<#>', 'id % 5 = 1'],
	['pq_l2', '2.2', () => h.lancedb.Index.ivfPq({ numPartitions: 8, numSubVectors: 4, distanceType: 'l2' }), 'l2', '<->', 'id % 9 = 2'],
	['pq_cosine', '2.3', () => h.lancedb.Index.ivfPq({ numPartitions: 8, numSubVectors: 8, distanceType: 'cosine' }), 'cosine', '<=>', 'id % 4 = 0'],
	['pq_dot', '2.1', () => h.lancedb.Index.ivfPq({ numPartitions: 8, numSubVectors: 8, distanceType: 'dot' }), 'dot', '<#>', null],
	['pq4_l2', '2.2', () => h.lancedb.Index.ivfPq({ numPartitions: 64, numSubVectors: 8, numBits: 4, distanceType: 'l2' }), 'l2', '<->', 'id % 9 = 2'],
	['hnsw_sq_l2', '2.2', () => h.lancedb.Index.hnswSq({ numPartitions: 4, distanceType: 'l2' }), 'l2', '<->', null],
	['hnsw_sq_cosine', '2.1', () => h.lancedb.Index.hnswSq({ numPartitions: 4, distanceType: 'cosine' }), 'cosine', '<=>', null],
	['hnsw_pq_dot', '2.2', () => h.lancedb.Index.hnswPq({ numPartitions: 4, numSubVectors: 4, distanceType: 'dot' }), 'dot', '<#>', null],
];

async function writeIndexed(name, version, config, deleted)
{
	const db = await h.lancedb.connect(dir);
	let table = null;

	for (let f = 0; f < FRAGMENTS; f++)
	{
		const part = rowsTable(f * ROWS_PER_FRAGMENT, vectors.slice(f * ROWS_PER_FRAGMENT, (f + 1) * ROWS_PER_FRAGMENT));

		if (table === null)
			table = await db.createTable(name, part, { mode: 'overwrite', storageOptions: { newTableDataStorageVersion: version } });
		else
			await table.add(part);
	}
	await table.delete('id % 13 = 6');	// before the index: not in it
	await table.createIndex('emb', { config: config() });
	if (deleted !== null)
		await table.delete(deleted);	// after: in the index, dropped by the remap
	return { table, dataset: path.join(dir, name + '.lance') };
}

// lancedb's results: each row's id and vector (row addresses change), in order.
async function lancedbResults(table, metric)
{
	const results = [];

	for (const refine of [undefined, 4])
		for (const query of queries)
		{
			let search = table.vectorSearch(query).distanceType(metric).limit(K).nprobes(NPROBES).select(['id', 'emb']);

			if (refine !== undefined)
				search = search.refineFactor(refine);
			results.push((await search.toArray()).map((r) => `${r.id}:${Array.from(r.emb).join(',')}`));
		}
	return results;
}

// lance_fdw's ids with its index (and whether EXPLAIN names the index).  Where the dataset has
// deletion files lance_fdw ranks every row of the probed partitions exactly, elsewhere the best
// k * fdw_refine_factor by the index's scores: a refine factor past the rows makes both the same.
function fdwResults(name, dataset, op)
{
	const vectorLiteral = (v) => literal('[' + v.join(',') + ']') + '::vector';
	const lines = psqlLines(`DROP FOREIGN TABLE IF EXISTS cvidx.${name};
CREATE FOREIGN TABLE cvidx.${name} (id bigint, emb vector(${DIM})) SERVER cvidx_server OPTIONS (uri ${literal(dataset)});
SET lance_parts.fdw_vector_index = on;
SET lance_parts.fdw_nprobes = ${NPROBES};
SET lance_parts.fdw_refine_factor = ${vectors.length};
${queries.map((q) => `SELECT '=' || string_agg(id::text, ',' ORDER BY n) FROM (SELECT id, row_number() OVER () n FROM (SELECT id FROM cvidx.${name} ORDER BY emb ${op} ${vectorLiteral(q)} LIMIT ${K}) s) r;`).join('\n')}
EXPLAIN (ANALYZE, COSTS OFF) SELECT id FROM cvidx.${name} ORDER BY emb ${op} ${vectorLiteral(queries[0])} LIMIT ${K};
`);

	return { ids: lines.filter((l) => l.startsWith('=')), explained: lines.some((l) => /Lance Vector Index: emb_idx/.test(l)) };
}

// The ids of the 3 rows nearest an appended vector, by the index (refined) or without it.
async function appendedTop(table, metric, bypass)
{
	let search = table.vectorSearch(appended[7]).distanceType(metric).limit(3).nprobes(8).refineFactor(50);

	if (bypass)
		search = search.bypassVectorIndex();
	return (await search.toArray()).map((r) => Number(r.id));
}

test.before(() => {
	psqlLines(`CREATE EXTENSION IF NOT EXISTS vector;
DROP SCHEMA IF EXISTS cvidx CASCADE;
DROP SERVER IF EXISTS cvidx_server CASCADE;
CREATE SERVER cvidx_server FOREIGN DATA WRAPPER lance_fdw;
CREATE SCHEMA cvidx;
`);
});

const compact = (dataset) => h.sqlRows(`SELECT * FROM lance_parts.compact(${literal(dataset)}, rewrite_deletions => true)`);

for (const [name, version, config, metric, op, deleted] of INDEXES)
{
	test(`${name} (${version}${deleted ? ', rows deleted' : ''}): the vector index is remapped by compaction`, async () => {
		const { table, dataset } = await writeIndexed(name, version, config, deleted);
		const indexBefore = (await table.listIndices())[0];
		const statsBefore = await table.indexStats('emb_idx');
		const before = await lancedbResults(table, metric);
		const fdwBefore = fdwResults(name, dataset, op);
		const rowsBefore = await table.countRows();
		const indexDirs = fs.readdirSync(path.join(dataset, '_indices'));

		assert.ok(fdwBefore.explained, 'lance_fdw uses the index');
		const result = compact(dataset);

		assert.deepEqual(result.filter((r) => r.action !== 'rewritten'), [], 'every fragment rewritten');
		await table.checkoutLatest();
		assert.equal((await table.stats()).fragmentStats.numFragments, 1);
		assert.equal(await table.countRows(), rowsBefore);
		const indexAfter = (await table.listIndices())[0];

		assert.notEqual(indexAfter.indexUuid, indexBefore.indexUuid, 'a new index');
		assert.deepEqual([indexAfter.name, indexAfter.indexType, indexAfter.columns],
			[indexBefore.name, indexBefore.indexType, indexBefore.columns]);
		const statsAfter = await table.indexStats('emb_idx');

		assert.equal(statsAfter.numIndexedRows, statsBefore.numIndexedRows);
		assert.equal(statsAfter.numUnindexedRows, 0);
		assert.deepEqual(fs.readdirSync(path.join(dataset, '_indices')).filter((d) => !indexDirs.includes(d)),
			[indexAfter.indexUuid]);
		assert.deepEqual(await lancedbResults(table, metric), before, 'lancedb finds the same rows');
		const fdwAfter = fdwResults(name, dataset, op);

		assert.ok(fdwAfter.explained, 'lance_fdw uses the remapped index');
		assert.deepEqual(fdwAfter.ids, fdwBefore.ids, 'lance_fdw finds the same rows');

		// lancedb goes on from there: appends, optimizes, indexes
		await table.add(rowsTable(100000, appended));
		await table.optimize();
		await table.createIndex('emb', { config: config(), replace: true });
		assert.equal(await table.countRows(), rowsBefore + appended.length);
		assert.deepEqual(await appendedTop(table, metric, false), await appendedTop(table, metric, true),
			'the new index finds the appended rows');
	});
}

// The share of the results' rows (a lancedbResults list) among the exact top K of their query
// over the rows lancedb has (its search without the index).
async function recall(table, metric, results)
{
	let found = 0;

	for (let i = 0; i < results.length; i++)
	{
		const exact = await table.vectorSearch(queries[i % queries.length]).distanceType(metric).limit(K)
			.bypassVectorIndex().select(['id', 'emb']).toArray();
		const ids = new Set(exact.map((r) => `${r.id}:${Array.from(r.emb).join(',')}`));

		found += results[i].filter((r) => ids.has(r)).length;
	}
	return found / (results.length * K);
}

// How many rows of each list of results are in the other's list for the same search.
const shared = (results, others) => results.reduce((n, rows, i) => n + rows.filter((r) => others[i].includes(r)).length, 0);

// HNSW graphs over rows deleted after they were built, on each file version.  A graph numbers
// its partition's rows, so the remap rebuilds them all over the rows kept (as Lance's does):
// the search is approximate and lancedb's k-means random, so where exact answers are not
// promised the rows found may differ by a near tie, but hardly, and not in recall.
const HNSW_DELETED = [
	...INDEXES.filter((i) => i[0].startsWith('hnsw')),
	['hnsw_sq_l2_2_3', '2.3', () => h.lancedb.Index.hnswSq({ numPartitions: 4, distanceType: 'l2' }), 'l2', '<->'],
];

for (const [name, version, config, metric, op] of HNSW_DELETED)
{
	test(`${name} (${version}) over rows deleted after it was built: the rebuilt graphs find the same rows`, async () => {
		const tableName = name + '_deleted';
		const { table, dataset } = await writeIndexed(tableName, version, config, 'id % 9 = 2');
		const indexBefore = (await table.listIndices())[0];
		const before = await lancedbResults(table, metric);
		const fdwBefore = fdwResults(tableName, dataset, op);
		const result = compact(dataset);

		assert.deepEqual(result.filter((r) => r.action !== 'rewritten'), [], 'every fragment rewritten');
		await table.checkoutLatest();
		const indexAfter = (await table.listIndices())[0];

		assert.notEqual(indexAfter.indexUuid, indexBefore.indexUuid, 'a new index');
		assert.equal((await table.indexStats('emb_idx')).numUnindexedRows, 0);
		const after = await lancedbResults(table, metric);

		assert.ok(shared(after, before) >= 0.97 * after.length * K, 'lancedb finds the rows it found');
		const recallBefore = await recall(table, metric, before);
		const recallAfter = await recall(table, metric, after);

		assert.ok(recallAfter >= recallBefore - 0.02, `recall ${recallAfter}, before ${recallBefore}`);
		const fdwAfter = fdwResults(tableName, dataset, op);

		assert.ok(fdwAfter.explained, 'lance_fdw uses the remapped index');
		// before, with deletion files, it ranked every row of the probed partitions; now it walks
		// the graphs with a beam past their rows, which finds every row a graph reaches
		const fdwRows = (fdw) => fdw.ids.map((line) => line.slice(1).split(','));

		assert.ok(shared(fdwRows(fdwAfter), fdwRows(fdwBefore)) >= 0.97 * queries.length * K,
			`lance_fdw finds the rows it found: ${fdwAfter.ids} for ${fdwBefore.ids}`);

		// lancedb goes on from the rebuilt graphs: appends, and optimizes (indexing the new rows)
		await table.add(rowsTable(100000, appended));
		await table.optimize();
		const stats = await table.indexStats('emb_idx');

		assert.deepEqual([stats.numIndexedRows, stats.numUnindexedRows], [await table.countRows(), 0]);
		// (under dot, lancedb's own optimized IVF_HNSW_PQ often ranks another row third)
		if (metric !== 'dot')
			assert.deepEqual(await appendedTop(table, metric, false), await appendedTop(table, metric, true),
				'lancedb\'s optimized index finds the appended rows');

		// a fresh lancedb index over the same rows: as good as the rebuilt graphs (a fresh PQ
		// codebook alone moves the recall by several points from one k-means to the next)
		await table.createIndex('emb', { config: config(), replace: true });
		const recallFresh = await recall(table, metric, await lancedbResults(table, metric));
		const slack = name.includes('_pq_') ? 0.1 : 0.05;

		assert.ok(recallAfter >= recallFresh - slack, `recall ${recallAfter}, a fresh index's ${recallFresh}`);
	});
}

// What a failed compaction must leave: the version, and the directories' entries (but for
// data/_parts, the staging of re-encoded rows that compaction with rewrite_deletions leaves).
function snapshot(dataset)
{
	const entries = (sub) => fs.readdirSync(path.join(dataset, sub)).filter((e) => e !== '_parts').sort();

	return { data: entries('data'), indices: entries('_indices'), versions: entries('_versions') };
}

function auxiliaryOf(dataset)
{
	const dirs = fs.readdirSync(path.join(dataset, '_indices'));

	assert.equal(dirs.length, 1);
	return path.join(dataset, '_indices', dirs[0], 'auxiliary.idx');
}

function assertCompactFails(dataset, pattern)
{
	const before = snapshot(dataset);

	assert.throws(() => psqlLines(`\\set VERBOSITY verbose
SELECT * FROM lance_parts.compact(${literal(dataset)}, rewrite_deletions => true);
`), (error) => (/XX001/.test(String(error.stderr)) && pattern.test(String(error.stderr)) &&
		/could not be remapped, so its fragments were not compacted/.test(String(error.stderr))) ||
		assert.fail(String(error.stderr)));
	assert.deepEqual(snapshot(dataset), before, 'nothing written, nothing published');
}

test('a truncated auxiliary.idx: ERROR, nothing changed', async () => {
	const [, version, config] = INDEXES.find((i) => i[0] === 'pq_l2');
	const { dataset } = await writeIndexed('damaged_truncated', version, config, 'id % 9 = 2');
	const auxiliary = auxiliaryOf(dataset);

	fs.truncateSync(auxiliary, fs.statSync(auxiliary).size - 100);
	assertCompactFails(dataset, /auxiliary\.idx/);
});

test('row ids the fragments do not have: ERROR, nothing changed', async () => {
	const [, version, config] = INDEXES.find((i) => i[0] === 'flat_l2');
	const { dataset } = await writeIndexed('damaged_rows', version, config, null);
	// the same index over one fragment of all the rows: row addresses past this fragment 0's
	const db = await h.lancedb.connect(dir);
	const longer = await db.createTable('longer_rows', rowsTable(0, vectors), { mode: 'overwrite',
		storageOptions: { newTableDataStorageVersion: version } });

	await longer.createIndex('emb', { config: config() });
	fs.copyFileSync(auxiliaryOf(path.join(dir, 'longer_rows.lance')), auxiliaryOf(dataset));
	assertCompactFails(dataset, /auxiliary\.idx" does not match the dataset: row address \d+ names row \d+ of fragment 0, which has 400 rows/);
});
