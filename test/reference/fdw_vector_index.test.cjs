'use strict';
// Approximate nearest-neighbour search in lance_fdw with the IVF vector indexes lancedb builds
// (createIndex with Index.ivfFlat, ivfPq and hnswSq), against lancedb's own vectorSearch with
// the same nprobes and refine factor, and against the exact search (lance_parts.fdw_vector_index
// off, which fdw_topk.test.cjs checks against PostgreSQL's own evaluation).
//
// The data: 3000 clustered vectors of 16 dimensions (a fixed seed), written in five fragments
// in each of the file versions 2.0 to 2.3; one dataset per index (IVF_FLAT under l2, cosine
// and dot, IVF_PQ of 8-bit codes under l2, cosine and dot and of 4-bit codes under l2 and
// cosine, IVF_HNSW_SQ under l2, cosine and dot, IVF_HNSW_PQ under l2).  The cases, for each
// index:
//  - queries (rows of the data and new points) with k 10, nprobes 1, 3 and lancedb's default:
//    IVF_FLAT returns lancedb's ids (or rows tied at its k-th distance) for at least 99 % of the
//    results and its distances within
//    float tolerance (pgvector's l2 is the square root of lancedb's, its cosine lancedb's, its
//    <#> lancedb's dot distance minus 1); PQ indexes have at least lancedb's recall of the
//    exact top 10, with refine factors 1 and 5; IVF_HNSW_* return lancedb's ids for at least
//    99 % of the results (its graphs walked from their entry point with lancedb's SQ distances),
//    at lancedb's default ef and with lance_parts.fdw_ef at lancedb's ef;
//    the graphs of the 2.3 dataset's index, in Lance's sparse layout, are not walked (every row
//    of the probed partitions scored, which finds lancedb's rows too);
//  - EXPLAIN ANALYZE names the index, its type and metric, the partitions probed and the rows
//    read, and no index with lance_parts.fdw_vector_index off; plain EXPLAIN (generic plans
//    too) the index, its type and metric;
//  - parallel workers (units of a few hundred rows) return the serial results;
//  - a WHERE prefilter (lancedb's prefilter): lancedb's ids, or the exact search's where the
//    probed partitions hold fewer than k rows passing it (lancedb then returns those only);
//  - rows appended after the index (not covered) and rows deleted after it: lancedb's ids, and
//    no deleted row;
//  - bad input: a query of another dimension is pgvector's error, a NULL query and a zero
//    vector under cosine the exact search's rows, NaN vector_in's error; an index of another
//    metric than the operator's is not used;
//  - a dataset with stable row ids: lancedb's rows through a deletion file, lancedb's
//    compaction and rows appended after the index;
//  - a damaged index file is an ERROR naming it (SQLSTATE XX001);
//  - on S3 (a real server): lancedb's ids on the same dataset; a query repeated in a session
//    exchanges fewer bytes with the server than with lance_parts.fdw_vector_index_cache = 0
//    (the index's metadata and partitions come from the backend's cache).
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const arrow = require('apache-arrow');
const h = require('./harness.cjs');
const { prng } = require('./prng.cjs');
const { psqlLines, literal } = require('./pg.cjs');
const { startS3Server } = require('./s3_server.cjs');
const s3 = require('./s3_requests.cjs');

const pgvectorMissing = /^pgvector: (.*)$/m.exec(process.env.LP_PG_ADDONS_MISSING || '');
if (pgvectorMissing) {
	test('vector indexes', { skip: `no pgvector for this PostgreSQL: ${pgvectorMissing[1]}` }, () => {});
	return;
}

const SEED = 20270227;
const DIM = 16;
const CLUSTERS = 24;
const NUM_ROWS = 3000;
const ROWS_PER_FRAGMENT = 600;
const K = 10;
const NUM_QUERIES = 12;

const LANCEDB_NPROBES = 20;	// lancedb's default, lance_parts.fdw_nprobes's
const dir = h.scratchDir('fdw-vector-index');

const random = prng(SEED);
const centers = Array.from({ length: CLUSTERS }, () => Array.from({ length: DIM }, () => random() * 4 - 2));

function point()
{
	const c = centers[Math.floor(random() * CLUSTERS)];

	return c.map((x) => Math.fround(x + (random() - 0.5) * 0.8));
}

const vectors = Array.from({ length: NUM_ROWS }, point);
const queries = Array.from({ length: NUM_QUERIES }, (_, i) => (i % 2 === 0 ? vectors[i * 97] : point()));
const appended = Array.from({ length: 400 }, point);

const schema = new arrow.Schema([
	new arrow.Field('id', new arrow.Int64(), false),
	new arrow.Field('cat', new arrow.Int32(), false),
	new arrow.Field('emb', new arrow.FixedSizeList(DIM, new arrow.Field('item', new arrow.Float32(), true)), true),
]);

function rowsTable(first, list)
{
	return new arrow.Table({
		id: arrow.vectorFromArray(list.map((_, i) => BigInt(first + i)), new arrow.Int64()),
		cat: arrow.vectorFromArray(list.map((_, i) => (first + i) % 7), new arrow.Int32()),
		emb: arrow.vectorFromArray(list, schema.fields[2].type),
	});
}

// name, file version, index config, metric (lancedb's distanceType), the operator.  Lance
// scores 4-bit PQ codes past a partition's first 200 rows with a distance table quantized to
// bytes, lance_fdw all of them in float: the 4-bit indexes have partitions of fewer rows, so
// that both score every row alike.
const INDEXES = [
	['flat_l2', '2.0', () => h.lancedb.Index.ivfFlat({ numPartitions: 32, distanceType: 'l2' }), 'l2', '<->'],
	['flat_cosine', '2.1', () => h.lancedb.Index.ivfFlat({ numPartitions: 32, distanceType: 'cosine' }), 'cosine', '<=>'],
	['flat_dot', '2.2', () => h.lancedb.Index.ivfFlat({ numPartitions: 32, distanceType: 'dot' }), 'dot', '<#>'],
	['pq_l2', '2.3', () => h.lancedb.Index.ivfPq({ numPartitions: 32, numSubVectors: 4, distanceType: 'l2' }), 'l2', '<->'],
	['pq_cosine', '2.1', () => h.lancedb.Index.ivfPq({ numPartitions: 32, numSubVectors: 8, distanceType: 'cosine' }), 'cosine', '<=>'],
	['pq_dot', '2.2', () => h.lancedb.Index.ivfPq({ numPartitions: 32, numSubVectors: 8, distanceType: 'dot' }), 'dot', '<#>'],
	['hnsw_sq_l2', '2.1', () => h.lancedb.Index.hnswSq({ numPartitions: 8, distanceType: 'l2' }), 'l2', '<->'],
	['hnsw_sq_cosine', '2.3', () => h.lancedb.Index.hnswSq({ numPartitions: 8, distanceType: 'cosine' }), 'cosine', '<=>'],
	['hnsw_sq_dot', '2.2', () => h.lancedb.Index.hnswSq({ numPartitions: 8, distanceType: 'dot' }), 'dot', '<#>'],
	['hnsw_pq_l2', '2.1', () => h.lancedb.Index.hnswPq({ numPartitions: 8, numSubVectors: 4, distanceType: 'l2' }), 'l2', '<->'],
	['pq4_l2', '2.2', () => h.lancedb.Index.ivfPq({ numPartitions: 128, numSubVectors: 8, numBits: 4, distanceType: 'l2' }), 'l2', '<->'],
	['pq4_cosine', '2.3', () => h.lancedb.Index.ivfPq({ numPartitions: 128, numSubVectors: 8, numBits: 4, distanceType: 'cosine' }), 'cosine', '<=>'],
];
const tables = {};

async function writeIndexed(db, name, version, config)
{
	let table = null;

	for (let start = 0; start < NUM_ROWS; start += ROWS_PER_FRAGMENT)
	{
		const part = rowsTable(start, vectors.slice(start, start + ROWS_PER_FRAGMENT));

		if (table === null)
			table = await db.createTable(name, part, {
				mode: 'overwrite',
				storageOptions: { newTableDataStorageVersion: version },
			});
		else
			await table.add(part);
	}
	await table.createIndex('emb', { config: config() });
	return table;
}

function foreignTable(name)
{
	return `DROP FOREIGN TABLE IF EXISTS vidx.${name};
CREATE FOREIGN TABLE vidx.${name} (id bigint, cat int, emb vector(${DIM}))
SERVER vidx_server OPTIONS (uri ${literal(path.join(dir, name + '.lance'))});
`;
}

const vectorLiteral = (v) => literal('[' + v.join(',') + ']') + '::vector';

test.before(async () => {
	const db = await h.lancedb.connect(dir);

	psqlLines(`CREATE EXTENSION IF NOT EXISTS vector;
DROP SCHEMA IF EXISTS vidx CASCADE;
DROP SERVER IF EXISTS vidx_server CASCADE;
CREATE SERVER vidx_server FOREIGN DATA WRAPPER lance_fdw;
CREATE SCHEMA vidx;
`);
	for (const [name, version, config] of INDEXES)
	{
		tables[name] = await writeIndexed(db, name, version, config);
		psqlLines(foreignTable(name));
	}
});

// lancedb's ids and distances for a query.
async function lancedbSearch(table, query, metric, { nprobes, refine, where, k = K } = {})
{
	let search = table.vectorSearch(query).distanceType(metric).limit(k).select(['id']);

	if (nprobes !== undefined)
		search = search.nprobes(nprobes);
	if (refine !== undefined)
		search = search.refineFactor(refine);
	if (where !== undefined)
		search = search.where(where);
	return (await search.toArray()).map((r) => ({ id: String(r.id), distance: r._distance }));
}

// lance_fdw's ids and distances: one psql session per list of queries.
function fdwSearch(name, op, list, { settings = '', where = '', k = K } = {})
{
	const separator = '--- end of query ---';
	const lines = psqlLines('SET extra_float_digits = 3;\n' + settings +
		list.map((q) => `SELECT id, emb ${op} ${vectorLiteral(q)} FROM vidx.${name} ${where} ORDER BY emb ${op} ${vectorLiteral(q)} LIMIT ${k};
\\echo '${separator}'
`).join(''));
	const results = [[]];

	for (const line of lines)
	{
		if (line === separator)
			results.push([]);
		else
			results[results.length - 1].push(line);
	}
	results.pop();
	return results.map((rows) => rows.map((l) => {
		const [id, distance] = l.split('|');

		return { id, distance: distance === '' ? null : Number(distance) };
	}));
}

const nprobesSetting = (n) => `SET lance_parts.fdw_nprobes = ${n};\n`;
const refineSetting = (r) => `SET lance_parts.fdw_refine_factor = ${r};\n`;
const EXACT = 'SET lance_parts.fdw_vector_index = off;\n';
const PARALLEL = `SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0; SET max_parallel_workers_per_gather = 2;
SET lance_parts.fdw_unit_rows = 250; SET lance_parts.fdw_batch_rows = 64;
`;

// lancedb's distance from pgvector's.
function lancedbDistance(metric, d)
{
	if (metric === 'l2')
		return d * d;
	if (metric === 'dot')
		return d + 1;
	return d;
}

const overlap = (a, b) => a.filter((r) => b.some((s) => s.id === r.id)).length;

// lance_fdw's rows that are lancedb's, and those that are not but lie at lancedb's k-th distance
// (within float tolerance): pgvector and lancedb compute distances apart, so of two rows tied
// at the k-th place either may be kept.
function sameOrTied(metric, ours, theirs)
{
	const last = theirs.length > 0 ? theirs[theirs.length - 1].distance : null;

	return ours.filter((r) => theirs.some((s) => s.id === r.id) ||
		(last !== null && r.distance !== null &&
		 Math.abs(lancedbDistance(metric, r.distance) - last) <= 1e-4 * (1 + Math.abs(last)))).length;
}

test('IVF_FLAT: lancedb\'s rows and distances at the same nprobes', async (t) => {
	for (const [name, , , metric, op] of INDEXES.filter((i) => i[0].startsWith('flat_')))
	{
		for (const nprobes of [1, 3, LANCEDB_NPROBES])
		{
			const got = fdwSearch(name, op, queries, { settings: nprobesSetting(nprobes) });
			let same = 0;
			let total = 0;

			for (let q = 0; q < queries.length; q++)
			{
				const expected = await lancedbSearch(tables[name], queries[q], metric, { nprobes });

				same += sameOrTied(metric, got[q], expected);
				total += expected.length;
				for (const row of got[q])
				{
					const theirs = expected.find((r) => r.id === row.id);

					if (theirs !== undefined)
						assert.ok(Math.abs(lancedbDistance(metric, row.distance) - theirs.distance) <= 1e-4 * (1 + Math.abs(theirs.distance)),
							`${name} nprobes ${nprobes} query ${q} row ${row.id}: ${row.distance} against lancedb's ${theirs.distance}`);
				}
			}
			t.diagnostic(`${name} nprobes ${nprobes}: ${same} of ${total} rows are lancedb's`);
			assert.ok(total === queries.length * K, `${name}: lancedb returned ${total} rows`);
			assert.ok(same >= 0.99 * total, `${name} nprobes ${nprobes}: ${same} of ${total} rows are lancedb's`);
		}
	}
});

test('IVF_PQ and IVF_HNSW_*: at least lancedb\'s recall of the exact top k', async (t) => {
	for (const [name, , , metric, op] of INDEXES.filter((i) => !i[0].startsWith('flat_')))
	{
		const exact = fdwSearch(name, op, queries, { settings: EXACT });

		for (const [nprobes, refine] of [[3, 1], [3, 5], [LANCEDB_NPROBES, 1]])
		{
			const got = fdwSearch(name, op, queries, { settings: nprobesSetting(nprobes) + refineSetting(refine) });
			let ours = 0;
			let theirs = 0;

			for (let q = 0; q < queries.length; q++)
			{
				const expected = await lancedbSearch(tables[name], queries[q], metric,
					{ nprobes, refine: refine > 1 ? refine : undefined });

				assert.equal(got[q].length, K, `${name} query ${q}`);
				ours += overlap(got[q], exact[q]);
				theirs += overlap(expected, exact[q]);
			}
			t.diagnostic(`${name} nprobes ${nprobes} refine ${refine}: recall@${K} ${ours / (queries.length * K)}, lancedb's ${theirs / (queries.length * K)}`);
			// PQ codes give many rows the same approximate distance, and which of those tied at the
			// k-th place is kept is each search's own order; lancedb trains a new index every run,
			// and on one CI run that put its recall one row above ours (69 against 70 of 120).  The slack is
			// the 1 % the test of lancedb's rows below allows.
			assert.ok(ours >= theirs - Math.floor(0.01 * queries.length * K),
				`${name} nprobes ${nprobes} refine ${refine}: recall ${ours} against lancedb's ${theirs} of ${queries.length * K}`);
		}
	}
});

test('IVF_HNSW_SQ and IVF_HNSW_PQ: lancedb\'s rows at the same nprobes', async (t) => {
	for (const [name, , , metric, op] of INDEXES.filter((i) => i[0].startsWith('hnsw_')))
	{
		for (const nprobes of [1, 3, LANCEDB_NPROBES])
		{
			const got = fdwSearch(name, op, queries, { settings: nprobesSetting(nprobes) });
			let same = 0;

			for (let q = 0; q < queries.length; q++)
				same += overlap(got[q], await lancedbSearch(tables[name], queries[q], metric, { nprobes }));
			t.diagnostic(`${name} nprobes ${nprobes}: ${same} of ${queries.length * K} rows are lancedb's`);
			assert.ok(same >= 0.99 * queries.length * K, `${name} nprobes ${nprobes}: ${same} of ${queries.length * K} rows are lancedb's`);
		}
	}
});

// lance_parts.fdw_ef is the beam of lancedb's ef: the graphs walked as Lance 12 walks them
// (greedy down to level 1, then the beam on level 0) return lancedb's rows at the same ef.  In
// graphs of a few hundred nodes a beam of k finds what a wide one does, for lancedb as well.
test('IVF_HNSW_SQ with lance_parts.fdw_ef: lancedb\'s rows at the same ef', async (t) => {
	const [name, , , metric, op] = INDEXES[6];
	const exact = fdwSearch(name, op, queries, { settings: EXACT });

	for (const ef of [10, 200])
	{
		const got = fdwSearch(name, op, queries, { settings: nprobesSetting(2) + `SET lance_parts.fdw_ef = ${ef};\n` });
		let ours = 0;
		let theirs = 0;
		let same = 0;

		for (let q = 0; q < queries.length; q++)
		{
			const expected = (await tables[name].vectorSearch(queries[q]).distanceType(metric).nprobes(2).ef(ef)
				.limit(K).select(['id']).toArray()).map((r) => ({ id: String(r.id) }));

			ours += overlap(got[q], exact[q]);
			theirs += overlap(expected, exact[q]);
			same += overlap(got[q], expected);
		}
		t.diagnostic(`ef ${ef}: recall@${K} ${ours / (queries.length * K)}, lancedb's ${theirs / (queries.length * K)}, ${same} rows lancedb's`);
		assert.ok(ours >= theirs, `ef ${ef}: recall ${ours} against lancedb's ${theirs}`);
		assert.ok(same >= 0.99 * queries.length * K, `ef ${ef}: ${same} rows lancedb's`);
	}
});

test('EXPLAIN ANALYZE names the index and what the search read', () => {
	const q = vectorLiteral(queries[1]);
	const plan = (settings, name, op) => psqlLines(`${settings}EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT id FROM vidx.${name} ORDER BY emb ${op} ${q} LIMIT ${K};
`).join('\n');

	assert.match(plan(nprobesSetting(3), 'pq_l2', '<->'),
		/Lance Vector Index: emb_idx \(IVF_PQ, l2\), 3 of 32 partitions, \d+ rows read, 10 candidates/);
	assert.match(plan(nprobesSetting(2) + refineSetting(4), 'flat_cosine', '<=>'),
		/Lance Vector Index: emb_idx \(IVF_FLAT, cosine\), 2 of 32 partitions, \d+ rows read, 40 candidates/);
	assert.match(plan('', 'hnsw_sq_l2', '<->'),
		/Lance Vector Index: emb_idx \(IVF_HNSW_SQ, l2\), 8 of 8 partitions \(graphs searched\), 3000 rows read, 10 candidates/);
	// lancedb 0.39 writes the graphs of a 2.3 dataset's index in Lance's sparse layout, which
	// lance_parts does not read: every row of the probed partitions is scored instead
	const sparse = plan('', 'hnsw_sq_cosine', '<=>');

	assert.match(sparse, /Lance Vector Index: emb_idx \(IVF_HNSW_SQ, cosine\), 8 of 8 partitions, 3000 rows read, 10 candidates/);
	assert.doesNotMatch(sparse, /graphs searched/);
	// with a filter every row of the probed partitions is scored: no graph
	assert.match(psqlLines(`EXPLAIN (ANALYZE, COSTS OFF) SELECT id FROM vidx.hnsw_sq_l2 WHERE cat < 5 ORDER BY emb <-> ${q} LIMIT ${K};
`).join('\n'), /Lance Vector Index: emb_idx \(IVF_HNSW_SQ, l2\), 8 of 8 partitions, 3000 rows read, \d+ candidates/);
	const off = plan(EXACT, 'pq_l2', '<->');

	assert.match(off, /Lance Top-K/);
	assert.doesNotMatch(off, /Lance Vector Index/);
	// an index of another metric than the operator's is not used
	assert.doesNotMatch(plan('', 'pq_l2', '<=>'), /Lance Vector Index/);
});

test('EXPLAIN names the index the ranking would search', () => {
	const q = vectorLiteral(queries[1]);
	const planned = (settings, name, op) => psqlLines(`${settings}EXPLAIN (COSTS OFF)
SELECT id FROM vidx.${name} ORDER BY emb ${op} ${q} LIMIT ${K};
`).join('\n');

	assert.match(planned('', 'pq_cosine', '<=>'), /^\s*Lance Vector Index: emb_idx \(IVF_PQ, cosine\)$/m);
	assert.match(planned('', 'pq4_l2', '<->'), /^\s*Lance Vector Index: emb_idx \(IVF_PQ, l2\)$/m);
	assert.doesNotMatch(planned(EXACT, 'pq_cosine', '<=>'), /Lance Vector Index/);
	assert.doesNotMatch(planned('', 'pq_cosine', '<->'), /Lance Vector Index/);
	// a generic plan: the query vector is a parameter
	assert.match(psqlLines(`SET plan_cache_mode = force_generic_plan;
PREPARE near(vector) AS SELECT id FROM vidx.hnsw_pq_l2 ORDER BY emb <-> $1 LIMIT 5;
EXPLAIN (COSTS OFF) EXECUTE near(${q});
`).join('\n'), /^\s*Lance Vector Index: emb_idx \(IVF_HNSW_PQ, l2\)$/m);
});

test('parallel workers return the serial rows', () => {
	for (const [name, , , , op] of [INDEXES[0], INDEXES[3]])
	{
		const serial = fdwSearch(name, op, queries, { settings: nprobesSetting(3) });
		const parallel = fdwSearch(name, op, queries, { settings: PARALLEL + nprobesSetting(3) });

		assert.deepEqual(parallel.map((r) => r.map((x) => x.id).sort()), serial.map((r) => r.map((x) => x.id).sort()), name);
		const plan = psqlLines(`${PARALLEL}EXPLAIN (COSTS OFF) SELECT id FROM vidx.${name} ORDER BY emb ${op} ${vectorLiteral(queries[0])} LIMIT ${K};
`).join('\n');

		assert.match(plan, /Gather Merge/);
	}
});

// lancedb's nprobes is both its least and its most partitions (Lance's minimum_nprobes and
// maximum_nprobes): where the probed partitions hold fewer than k rows passing the filter, it
// searches no further and returns those.  lance_fdw returns PostgreSQL's k rows: it ranks every
// row read again, the exact search's rows.  lancedb's index is trained anew on every run, so
// that cat = 3 leaves fewer than k rows in the partitions of a query now and then; cat = 3 AND
// id < 300 (about 4 rows in 3 partitions of 32) does for almost every query.
test('a WHERE prefilter: lancedb\'s rows, the exact search\'s where its partitions hold fewer than k', async (t) => {
	const [name, , , metric, op] = INDEXES[0];
	let short = 0;

	for (const filter of ['cat = 3', 'cat = 3 AND id < 300'])
	{
		const got = fdwSearch(name, op, queries, { settings: nprobesSetting(3), where: `WHERE ${filter}` });
		const exact = fdwSearch(name, op, queries, { settings: EXACT, where: `WHERE ${filter}` });
		const differing = [];
		let same = 0;
		let total = 0;

		for (let q = 0; q < queries.length; q++)
		{
			const expected = await lancedbSearch(tables[name], queries[q], metric, { nprobes: 3, where: filter });
			const what = `${filter} query ${q}: ours ${JSON.stringify(got[q])}, lancedb's ${JSON.stringify(expected)}, the exact search's ${JSON.stringify(exact[q])}`;

			assert.equal(got[q].length, K, what);
			if (expected.length < K)
			{
				short++;
				assert.equal(sameOrTied(metric, got[q], exact[q].map((r) => ({ id: r.id, distance: lancedbDistance(metric, r.distance) }))), K, what);
				continue;
			}
			same += sameOrTied(metric, got[q], expected);
			total += expected.length;
			if (sameOrTied(metric, got[q], expected) < expected.length)
				differing.push(what);
		}
		t.diagnostic(`${filter}: ${same} of ${total} rows of queries with ${K} rows in lancedb's partitions are lancedb's`);
		assert.ok(same >= 0.99 * total, `${filter}: ${same} of ${total} rows are lancedb's:\n${differing.join('\n')}`);
	}
	assert.ok(short > 0, 'no query\'s partitions held fewer than k rows passing the filter');
});

test('rows appended and deleted after the index: lancedb\'s rows, no deleted row', async () => {
	for (const [name, , , metric, op] of [INDEXES[0], INDEXES[3]])
	{
		const table = tables[name];

		await table.add(rowsTable(NUM_ROWS, appended));
		await table.delete('id % 5 = 2');
		const got = fdwSearch(name, op, queries.concat(appended.slice(0, 4)), { settings: nprobesSetting(3) });
		const exact = fdwSearch(name, op, queries.concat(appended.slice(0, 4)), { settings: EXACT });
		let same = 0;
		let ours = 0;
		let theirs = 0;

		for (let q = 0; q < got.length; q++)
		{
			const query = q < queries.length ? queries[q] : appended[q - queries.length];
			const expected = await lancedbSearch(table, query, metric, { nprobes: 3 });

			assert.equal(got[q].length, K);
			for (const row of got[q])
				assert.notEqual(Number(row.id) % 5, 2, `${name}: deleted row ${row.id}`);
			same += overlap(got[q], expected);
			ours += overlap(got[q], exact[q]);
			theirs += overlap(expected, exact[q]);
		}
		if (name.startsWith('flat_'))
			assert.ok(same >= 0.99 * got.length * K, `${name}: ${same} of ${got.length * K}`);
		assert.ok(ours >= theirs, `${name}: recall ${ours} against lancedb's ${theirs}`);
		// a query equal to an appended row finds it: appended fragments are searched exactly
		for (let i = 0; i < 4; i++)
			if ((NUM_ROWS + i) % 5 !== 2)
				assert.equal(got[queries.length + i][0].id, String(NUM_ROWS + i));
	}
});

test('bad input: PostgreSQL\'s own behaviour', () => {
	assert.throws(() => psqlLines(`SELECT id FROM vidx.flat_l2 ORDER BY emb <-> '[1,2,3]'::vector LIMIT 5;\n`),
		/different vector dimensions 16 and 3/);
	assert.throws(() => psqlLines(`SELECT id FROM vidx.flat_l2 ORDER BY emb <-> '[1,NaN,3]'::vector LIMIT 5;\n`),
		/NaN not allowed in vector/);
	const zero = vectorLiteral(new Array(DIM).fill(0));

	for (const [query, op, name] of [['NULL::vector', '<->', 'flat_l2'], [zero, '<=>', 'flat_cosine'], [zero, '<=>', 'pq_cosine']])
	{
		const sql = `SELECT id, emb ${op} ${query} FROM vidx.${name} ORDER BY emb ${op} ${query} LIMIT 5;\n`;
		const indexed = psqlLines(sql);

		assert.equal(indexed.length, 5);
		assert.deepEqual(indexed, psqlLines(EXACT + sql), `${name} ${query}`);
	}
});

// Stable row ids are not row addresses: the index's ids are found in the fragments it covers
// (as the scalar indexes' are), through a deletion file, after lancedb's compaction has moved
// the rows into new fragments and dropped the deleted ones (the index keeps their ids), and
// beside fragments appended after it.
test('stable row ids: lancedb\'s rows through deletions, lancedb\'s compaction and appends', async (t) => {
	const db = await h.lancedb.connect(dir);
	const table = await db.createTable('stable', rowsTable(0, vectors.slice(0, 600)), {
		mode: 'overwrite',
		storageOptions: { newTableEnableStableRowIds: 'true' },
	});

	await table.add(rowsTable(600, vectors.slice(600, 1200)));
	await table.createIndex('emb', { config: h.lancedb.Index.ivfFlat({ numPartitions: 8, distanceType: 'l2' }) });
	psqlLines(foreignTable('stable'));
	const list = queries.concat(appended.slice(0, 2));
	const check = async (stage) => {
		const got = fdwSearch('stable', '<->', list, { settings: nprobesSetting(3) });
		let same = 0;

		for (let q = 0; q < list.length; q++)
		{
			const expected = await lancedbSearch(table, list[q], 'l2', { nprobes: 3 });

			assert.equal(got[q].length, K, `${stage} query ${q}`);
			same += sameOrTied('l2', got[q], expected);
		}
		t.diagnostic(`${stage}: ${same} of ${list.length * K} rows are lancedb's`);
		assert.ok(same >= 0.99 * list.length * K, `${stage}: ${same} of ${list.length * K} rows are lancedb's`);
		assert.match(psqlLines(`EXPLAIN (ANALYZE, COSTS OFF) SELECT id FROM vidx.stable ORDER BY emb <-> ${vectorLiteral(list[0])} LIMIT ${K};\n`).join('\n'),
			/Lance Vector Index: emb_idx \(IVF_FLAT, l2\)/, stage);
	};

	await check('as written');
	await table.delete('id % 5 = 2');
	await check('rows deleted');
	await table.optimize({ cleanupOlderThan: new Date(Date.now() + 86400000), deleteUnverified: true });
	assert.ok((await table.stats()).fragmentStats.numFragments < 2, 'lancedb compacted the fragments');
	await check('compacted by lancedb');
	await table.add(rowsTable(1200, appended.slice(0, 2)));
	await check('rows appended');
	for (let i = 0; i < 2; i++)
		assert.equal(fdwSearch('stable', '<->', [appended[i]])[0][0].id, String(1200 + i));
});

test('a damaged index file is an ERROR naming it', () => {
	const source = path.join(dir, 'pq_cosine.lance');
	const copy = path.join(dir, 'damaged.lance');

	fs.cpSync(source, copy, { recursive: true });
	const [uuid] = fs.readdirSync(path.join(copy, '_indices'));
	const auxiliary = path.join(copy, '_indices', uuid, 'auxiliary.idx');
	const bytes = fs.readFileSync(auxiliary);

	// the footer's offsets point past the end of the file
	fs.writeFileSync(auxiliary, bytes.subarray(0, bytes.length - 200));
	psqlLines(foreignTable('damaged'));
	assert.throws(() => psqlLines(`\\set VERBOSITY verbose
SELECT id FROM vidx.damaged ORDER BY emb <=> ${vectorLiteral(queries[0])} LIMIT 5;
`), (err) => /XX001/.test(err.message) && err.message.includes(path.join(uuid, 'auxiliary.idx')));
	// without the index the rows are read as before
	assert.equal(psqlLines(`${EXACT}SELECT id FROM vidx.damaged ORDER BY emb <=> ${vectorLiteral(queries[0])} LIMIT 5;\n`).length, 5);
});

test('on S3: lancedb\'s rows of the same dataset', async (t) => {
	const { settings, storageOptions, root, fdwServerSql } = startS3Server('fdw-vector-index-s3', t);
	const ROOT = root('vector-index');
	const db = await h.lancedb.connect(ROOT, { storageOptions });
	const [name, version, config, metric, op] = INDEXES[0];
	const table = await writeIndexed(db, name, version, config);

	psqlLines(`DROP SERVER IF EXISTS vidx_s3 CASCADE;
${fdwServerSql('vidx_s3', ROOT)}
DROP FOREIGN TABLE IF EXISTS vidx.s3_flat;
CREATE FOREIGN TABLE vidx.s3_flat (id bigint, cat int, emb vector(${DIM})) SERVER vidx_s3
  OPTIONS (uri ${literal(ROOT + '/' + name + '.lance')});
`);
	const got = fdwSearch('s3_flat', op, queries, { settings: nprobesSetting(3) });
	let same = 0;

	for (let q = 0; q < queries.length; q++)
		same += overlap(got[q], await lancedbSearch(table, queries[q], metric, { nprobes: 3 }));
	assert.ok(same >= 0.99 * queries.length * K, `${same} of ${queries.length * K}`);
	assert.match(psqlLines(`${nprobesSetting(3)}EXPLAIN (ANALYZE, COSTS OFF) SELECT id FROM vidx.s3_flat ORDER BY emb ${op} ${vectorLiteral(queries[0])} LIMIT ${K};
`).join('\n'), /Lance Vector Index: emb_idx \(IVF_FLAT, l2\), 3 of 32 partitions/);

	// the cache: a query repeated in a session reads neither the index's metadata nor its
	// partitions again; with lance_parts.fdw_vector_index_cache = 0 it reads them every time
	const port = new URL(settings.LP_S3_ENDPOINT).port;
	const query = `SELECT id FROM vidx.s3_flat ORDER BY emb ${op} ${vectorLiteral(queries[2])} LIMIT ${K};\n`;
	const traffic = (label) => s3.backendTrafficSql(label, port);
	const bytes = psqlLines(`${nprobesSetting(3)}CREATE TEMP TABLE io (label text, sent bigint, received bigint);
\\o /dev/null
${query}${traffic('cached_before')}${query}${traffic('cached_after')}SET lance_parts.fdw_vector_index_cache = 0;
${traffic('uncached_before')}${query}${traffic('uncached_after')}\\o
SELECT a.sent - b.sent + a.received - b.received FROM io a, io b WHERE a.label = 'cached_after' AND b.label = 'cached_before';
SELECT a.sent - b.sent + a.received - b.received FROM io a, io b WHERE a.label = 'uncached_after' AND b.label = 'uncached_before';
`).map(Number);

	t.diagnostic(`bytes exchanged with the server: ${bytes[0]} with the cache, ${bytes[1]} without`);
	assert.ok(bytes[0] < bytes[1], `${bytes[0]} bytes with the cache, ${bytes[1]} without`);
});
