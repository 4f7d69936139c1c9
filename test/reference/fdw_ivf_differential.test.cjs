'use strict';
// IVF vector search in lance_fdw against PostgreSQL's own evaluation on a heap copy: a randomized
// differential (fixed seed) over indexes lancedb builds.
//
// The data: clustered vectors of 8 dimensions with NULL vectors, duplicated vectors (ties) and
// zero vectors, and scalar columns to filter on; lancedb writes four fragments, builds the index,
// appends two fragments (not covered by it) and deletes rows of both; then PostgreSQL deletes,
// updates (vectors too) and inserts rows through lance_fdw (WRITES).  Foreign tables read the
// version the index was built at, the version after the appends, the one after lancedb's
// deletions and the one after PostgreSQL's writes; a heap table per version holds the same rows
// (inserted from the values written, and given the same writes).
//
//  - IVF_FLAT (l2, cosine, dot; l2 on a dataset with stable row ids too, and on one with BTREE and
//    BITMAP indexes that the exact top k searches for pushed clauses), lance_parts.fdw_nprobes at least the number of partitions, so
//    the index search is exact, or lance_parts.fdw_vector_index off (the exact top k): thousands
//    of cases of random query vectors, k, OFFSET, refine factors, random pushed WHERE clauses,
//    literals and parameters of generic plans, serially and with parallel workers forced; each
//    is PostgreSQL's top k on the heap copy (the same query through rank(), pgvector
//    evaluating): the distances in order (exactly with the index off, within float tolerance
//    with it), every row one of the heap's rows passing the filter at exactly the distance
//    returned, and every row the heap ranks inside the page and not tied with the rows at its
//    ends returned.  EXPLAIN ANALYZE of a query on each table, mode and setting shows the top k
//    ranked by the scan and the index searched with every partition probed (or not searched),
//    so that the comparison cannot pass because no index was used.  Bad input among the cases:
//    a NULL query vector, NaN, a zero vector under cosine and a vector of another dimension
//    behave as on the heap (the same error, or rows at the same distances).  Among the cases are
//    queries that leave fewer than k rows with a distance: PostgreSQL then returns rows of NULL
//    vectors, which no index holds (the scan once returned fewer rows).  Some cases are also
//    compared with lancedb's own prefiltered search at the same nprobes, on the latest version
//    and on the one after PostgreSQL's writes: the same rows but for ties, lancedb's distances.
//    Hundreds more run in a transaction that has written more rows (PENDING_WRITES, published
//    at COMMIT) and reads them, against heap copies given the same writes, then rolls back.
//  - IVF_PQ, IVF_HNSW_SQ and IVF_FLAT probing few partitions: batches of random queries at random
//    nprobes, refine factors and ef (with and without a prefilter): k rows whenever k rows pass
//    the filter, each a live row passing it, in order, at its exact distance; the recall of the
//    heap's exact top k over a batch never below that of lancedb's prefiltered search at the
//    same parameters.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const arrow = require('apache-arrow');
const h = require('./harness.cjs');
const { prng } = require('./prng.cjs');
const { psqlLines, literal } = require('./pg.cjs');
const { withPsqlSession } = require('./psql_session.cjs');

const pgvectorMissing = /^pgvector: (.*)$/m.exec(process.env.LP_PG_ADDONS_MISSING || '');
if (pgvectorMissing) {
	test('IVF differential', { skip: `no pgvector for this PostgreSQL: ${pgvectorMissing[1]}` }, () => {});
	return;
}

const SEED = 20270327;
const DIM = 8;
const CLUSTERS = 10;
const PARTITIONS = 12;
const FRAGMENT_ROWS = 400;
const INDEXED_FRAGMENTS = 4;
const APPENDED_FRAGMENTS = 2;
const NUM_ROWS = FRAGMENT_ROWS * (INDEXED_FRAGMENTS + APPENDED_FRAGMENTS);
const DELETED = 'id % 13 = 5 OR id BETWEEN 1150 AND 1190 OR id BETWEEN 2100 AND 2120';
const isDeleted = (id) => id % 13 === 5 || (id >= 1150 && id <= 1190) || (id >= 2100 && id <= 2120);
const FLAT_CASES = 4000;
const PENDING_CASES = 800;
const CHUNK = 100;
const TOLERANCE = 1e-5;
const dir = h.scratchDir('fdw-ivf-differential');

const random = prng(SEED);
const intBelow = (n) => Math.floor(random() * n);
const pick = (items) => items[intBelow(items.length)];
const centers = Array.from({ length: CLUSTERS }, () => Array.from({ length: DIM }, () => random() * 4 - 2));
const point = () => pick(centers).map((x) => Math.fround(x + (random() - 0.5)));

// Every 53rd vector NULL, every 41st a copy of the one 5 rows before, every 307th zero.
const rows = [];
for (let i = 0; i < NUM_ROWS; i++)
{
	let emb = point();

	if (i % 53 === 0)
		emb = null;
	else if (i % 41 === 0 && rows[i - 5].emb !== null)
		emb = rows[i - 5].emb;
	else if (i % 307 === 0)
		emb = new Array(DIM).fill(0);
	rows.push({
		id: i,
		cat: i % 9 === 4 ? null : i % 6,
		flag: i % 4 === 1,
		label: 'row ' + i,
		score: (i * 7919 % 1000) / 1000,
		emb,
	});
}

const embType = new arrow.FixedSizeList(DIM, new arrow.Field('item', new arrow.Float32(), true));

function rowsTable(list)
{
	return new arrow.Table({
		id: arrow.vectorFromArray(list.map((r) => BigInt(r.id)), new arrow.Int64()),
		cat: arrow.vectorFromArray(list.map((r) => r.cat), new arrow.Int32()),
		flag: arrow.vectorFromArray(list.map((r) => r.flag), new arrow.Bool()),
		label: arrow.vectorFromArray(list.map((r) => r.label), new arrow.Utf8()),
		score: arrow.vectorFromArray(list.map((r) => r.score), new arrow.Float64()),
		emb: arrow.vectorFromArray(list.map((r) => r.emb), embType),
	});
}

// name, file version, index, lancedb's metric, the operator, and options: storage options of
// lancedb, scalar indexes beside the vector index (a BTREE on id, a BITMAP on cat, which the
// scans search for pushed clauses when the vector index does not restrict them)
const STABLE_ROW_IDS = { storage: { newTableEnableStableRowIds: 'true' } };
const SCALAR_INDEXES = { scalarIndexes: true };
const FLAT = [
	['flat_l2', '2.1', () => h.lancedb.Index.ivfFlat({ numPartitions: PARTITIONS, distanceType: 'l2' }), 'l2', '<->', SCALAR_INDEXES],
	['flat_cosine', '2.2', () => h.lancedb.Index.ivfFlat({ numPartitions: PARTITIONS, distanceType: 'cosine' }), 'cosine', '<=>'],
	['flat_dot', '2.3', () => h.lancedb.Index.ivfFlat({ numPartitions: PARTITIONS, distanceType: 'dot' }), 'dot', '<#>'],
	['flat_l2_stable', '2.1', () => h.lancedb.Index.ivfFlat({ numPartitions: PARTITIONS, distanceType: 'l2' }), 'l2', '<->', STABLE_ROW_IDS],
];
const APPROXIMATE = [
	['pq_l2', '2.0', () => h.lancedb.Index.ivfPq({ numPartitions: 8, numSubVectors: 4, distanceType: 'l2' }), 'l2', '<->', SCALAR_INDEXES],
	['hnsw_sq_cosine', '2.1', () => h.lancedb.Index.hnswSq({ numPartitions: 4, distanceType: 'cosine' }), 'cosine', '<=>'],
];
// the versions each dataset is read at: the index's, after the appends, after lancedb's
// deletions, after PostgreSQL's writes through lance_fdw (WRITES)
const VERSIONS = ['indexed', 'appended', 'latest', 'written'];
const versionRows = {
	indexed: rows.slice(0, INDEXED_FRAGMENTS * FRAGMENT_ROWS),
	appended: rows,
	latest: rows.filter((r) => !isDeleted(r.id)),
};
// What PostgreSQL writes to the latest version, through lance_fdw and to its heap copy alike:
// deletions in indexed and appended fragments, updated vectors and new rows (both in fragments
// no index covers), rows of NULL vectors among them.
const WRITES = [
	'DELETE FROM T WHERE id % 17 = 3 OR id BETWEEN 300 AND 340 OR id BETWEEN 1800 AND 1830',
	`UPDATE T SET emb = emb + '[${new Array(DIM).fill(0.25).join(',')}]', cat = (cat + 1) % 6 WHERE id % 23 = 9 OR id % 53 = 0`,
	"INSERT INTO T SELECT id + 10000, cat, NOT flag, label || ' copy', score, emb FROM T WHERE id % 19 = 2",
];
// What a transaction writes before it reads its pending writes (and rolls back).
const PENDING_WRITES = [
	'DELETE FROM T WHERE id % 11 = 4 OR id BETWEEN 700 AND 760 OR id BETWEEN 10100 AND 10400',
	`UPDATE T SET emb = emb - '[${new Array(DIM).fill(0.5).join(',')}]', flag = NOT flag WHERE id % 31 = 2 OR id % 53 = 0`,
	"INSERT INTO T SELECT id + 20000, cat, flag, label || ' new', score, emb FROM T WHERE id % 29 = 1 OR emb IS NULL",
];
// the rows of a version before PostgreSQL's writes (those written start from the latest)
const rowsBefore = (v) => versionRows[v === 'written' ? 'latest' : v];
// lancedb's tables at the latest version and after PostgreSQL's writes
const tables = { latest: {}, written: {} };

const vectorText = (v) => '[' + v.join(',') + ']';
const vectorLiteral = (v) => literal(vectorText(v)) + '::vector';

// A heap table of list, inserted with COPY from the values written.
function heapSql(name, list)
{
	const text = (v) => (v === null ? '\\N' : String(v));

	return `CREATE TABLE ivfd.${name} (id bigint, cat int, flag boolean, label text, score double precision, emb vector(${DIM}));
COPY ivfd.${name} FROM STDIN;
${list.map((r) => [r.id, text(r.cat), r.flag ? 't' : 'f', r.label, r.score, r.emb === null ? '\\N' : vectorText(r.emb)].join('\t')).join('\n')}
\\.
`;
}

async function writeDataset(db, [name, version, config, , , options = {}])
{
	let table = null;
	const versions = {};

	for (let f = 0; f < INDEXED_FRAGMENTS + APPENDED_FRAGMENTS; f++)
	{
		const part = rowsTable(rows.slice(f * FRAGMENT_ROWS, (f + 1) * FRAGMENT_ROWS));

		if (f === INDEXED_FRAGMENTS)
		{
			await table.createIndex('emb', { config: config() });
			if (options.scalarIndexes)
			{
				await table.createIndex('id', { config: h.lancedb.Index.btree() });
				await table.createIndex('cat', { config: h.lancedb.Index.bitmap() });
			}
			versions.indexed = await table.version();
		}
		if (table === null)
			table = await db.createTable(name, part, { mode: 'overwrite', storageOptions: { newTableDataStorageVersion: version, ...options.storage } });
		else
			await table.add(part);
	}
	versions.appended = await table.version();
	await table.delete(DELETED);
	versions.latest = await table.version();
	let sql = '';

	for (const v of VERSIONS)
	{
		const option = v === 'written' ? '' : `, version '${versions[v]}'`;

		sql += `CREATE FOREIGN TABLE ivfd.${name}_${v} (id bigint, cat int, flag boolean, label text, score double precision, emb vector(${DIM}))
SERVER ivfd_server OPTIONS (uri ${literal(path.join(dir, name + '.lance'))}${option});
${heapSql(`heap_${name}_${v}`, rowsBefore(v))}`;
	}
	for (const statement of WRITES)
		sql += `${statement.replace(/\bT\b/g, `ivfd.${name}_written`)};
${statement.replace(/\bT\b/g, `ivfd.heap_${name}_written`)};
`;
	psqlLines(sql);
	tables.latest[name] = table;
	tables.written[name] = await db.openTable(name);
}

test.before(async () => {
	const db = await h.lancedb.connect(dir);

	psqlLines(`CREATE EXTENSION IF NOT EXISTS vector;
DROP SCHEMA IF EXISTS ivfd CASCADE;
DROP SERVER IF EXISTS ivfd_server CASCADE;
CREATE SERVER ivfd_server FOREIGN DATA WRAPPER lance_fdw;
CREATE SCHEMA ivfd;
`);
	for (const index of FLAT.concat(APPROXIMATE))
		await writeDataset(db, index);
	// the heap copies hold what lance_fdw reads without the index
	for (const [name] of FLAT.concat(APPROXIMATE))
		for (const v of VERSIONS)
		{
			const summary = `SELECT count(*), sum(id), count(emb), sum(cat), string_agg(emb::text, ',' ORDER BY id) FROM ivfd.`;

			assert.deepEqual(psqlLines(`${summary}${name}_${v};\n`), psqlLines(`${summary}heap_${name}_${v};\n`), `${name}_${v}`);
		}
});

// ---- random cases ---------------------------------------------------------------------------

// A random pushed predicate: lance_fdw's filter (SQL) and lancedb's (its SQL dialect).
function randomAtom()
{
	const c = intBelow(6);
	const a = intBelow(NUM_ROWS);
	const b = a + intBelow(900);
	const x = (intBelow(1000) / 1000).toFixed(3);
	const atoms = [
		[`cat = ${c}`, `cat = ${c}`],
		[`cat <> ${c}`, `cat <> ${c}`],
		[`cat IN (${c}, ${(c + 2) % 6})`, `cat IN (${c}, ${(c + 2) % 6})`],
		['cat IS NULL', 'cat IS NULL'],
		['cat IS NOT NULL', 'cat IS NOT NULL'],
		[`id BETWEEN ${a} AND ${b}`, `id BETWEEN ${a} AND ${b}`],
		[`id < ${a}`, `id < ${a}`],
		[`id >= ${a}`, `id >= ${a}`],
		['flag', 'flag = true'],
		['NOT flag', 'flag = false'],
		[`label = 'row ${a}'`, `label = 'row ${a}'`],
		[`score < ${x}`, `score < ${x}`],
		['emb IS NOT NULL', 'emb IS NOT NULL'],
		['emb IS NULL', 'emb IS NULL'],
	];

	return pick(atoms);
}

function randomWhere()
{
	const r = random();

	if (r < 0.35)
		return { sql: '', lance: undefined };
	if (r < 0.75)
	{
		const [sql, lance] = randomAtom();

		return { sql: `WHERE ${sql}`, lance };
	}
	const [s1, l1] = randomAtom();
	const [s2, l2] = randomAtom();
	const op = random() < 0.7 ? 'AND' : 'OR';

	return { sql: `WHERE (${s1}) ${op} (${s2})`, lance: `(${l1}) ${op} (${l2})` };
}

// Query vectors: new points, stored vectors (distance 0, ties with their copies), points far
// from every cluster.
function randomVector(list)
{
	const r = random();

	if (r < 0.25)
	{
		const stored = pick(list).emb;

		if (stored !== null)
			return stored;
	}
	if (r < 0.35)
		return Array.from({ length: DIM }, () => Math.fround(random() * 20 - 10));
	return point();
}

const MODES = {
	serial: 'SET max_parallel_workers_per_gather = 0;\n',
	parallel: `SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0; SET max_parallel_workers_per_gather = 2;
SET lance_parts.fdw_unit_rows = 150; SET lance_parts.fdw_batch_rows = 64;
`,
};

// Bad input: the query vector as text, the operator it is bad for (any when null).
function badVector(op)
{
	const kind = pick(['null', 'nan', 'zero', 'dimension']);

	if (kind === 'null')
		return { kind, text: null };
	if (kind === 'nan')
		return { kind, text: vectorText([...point().slice(1), 'NaN']) };
	if (kind === 'dimension')
		return { kind, text: vectorText(point().slice(0, 1 + intBelow(DIM - 1))) };
	return { kind: op === '<=>' ? 'zero' : 'zero (not cosine)', text: vectorText(new Array(DIM).fill(0)) };
}

function makeCase()
{
	const [name, , , metric, op] = pick(FLAT);
	const version = pick(VERSIONS);
	const bad = random() < 0.06 ? badVector(op) : null;
	const vector = randomVector(rowsBefore(version));

	return {
		name, metric, op, version,
		table: `${name}_${version}`,
		text: bad === null ? vectorText(vector) : bad.text,
		bad: bad === null ? null : bad.kind,
		k: pick([1, 1, 2, 3, 5, 8, 10, 10, 10, 17, 30, 50, 100, 250]),
		offset: random() < 0.15 ? 1 + intBelow(20) : 0,
		where: randomWhere(),
		parameters: random() < 0.3,
		mode: pick(['serial', 'serial', 'parallel']),
		index: random() < 0.2 ? 'off' : 'on',
		refine: pick([1, 1, 2, 5]),
		nprobes: pick([PARTITIONS, PARTITIONS, PARTITIONS + 3, 1000]),
	};
}

const flatCases = Array.from({ length: FLAT_CASES }, makeCase);
// cases on the version after WRITES, read in a transaction that writes more (PENDING_WRITES)
// and publishes at COMMIT: no bad input, whose error would end the transaction
const pendingCases = Array.from({ length: PENDING_CASES }, makeCase).filter((c) => c.bad === null)
	.map((c) => ({ ...c, version: 'written', table: `${c.name}_written` }));

// The query of a case over table (lance_fdw's or the heap's): the query vector and k as literals,
// or parameters of a generic plan.
function caseScript(c, table)
{
	const q = c.parameters ? '$1' : (c.text === null ? 'NULL::vector' : literal(c.text) + '::vector');
	const limit = c.parameters ? '$2' : String(c.k);
	const offset = c.offset > 0 ? ` OFFSET ${c.offset}` : '';
	const query = `SELECT id, emb ${c.op} ${q} AS d FROM ivfd.${table} ${c.where.sql} ORDER BY emb ${c.op} ${q} LIMIT ${limit}${offset}`;

	if (!c.parameters)
		return query;
	return `DEALLOCATE ALL;
PREPARE ivf_case(vector, bigint) AS ${query};
EXECUTE ivf_case(${c.text === null ? 'NULL' : literal(c.text)}, ${c.k})`;
}

// PostgreSQL's top k of a case on the heap with every row tied with the last one and `more`
// ranks after it: rank() <= k + offset + more, in order of distance.
function referenceScript(c, more = 5)
{
	const q = `${literal(c.text)}::vector`;

	return `SELECT id, d FROM (SELECT id, emb ${c.op} ${q} AS d, rank() OVER (ORDER BY emb ${c.op} ${q}) AS r
FROM ivfd.heap_${c.table} ${c.where.sql}) s WHERE r <= ${c.k + c.offset + more} ORDER BY d, id`;
}

const parseRow = (line) => {
	const [id, d] = line.split('|');

	return { id, d };
};

// Whether distance a (as psql prints it) sorts after b in float8's order, NULL last.
function distanceAfter(a, b)
{
	const key = (d) => (d === '' ? 2 : d === 'NaN' ? 1 : 0);

	return key(a) !== key(b) ? key(a) > key(b) : key(a) === 0 && Number(a) > Number(b);
}

// Distances printed by psql ('' for NULL): equal, or both numbers within float tolerance.
function near(a, b)
{
	if (a === b)
		return true;
	const x = Number(a);
	const y = Number(b);

	return a !== '' && b !== '' && Number.isFinite(x) && Number.isFinite(y) &&
		Math.abs(x - y) <= TOLERANCE * Math.max(1, Math.abs(y));
}

// The exact top k (index off) is pgvector's distances in PostgreSQL's order exactly; the index
// ranks by its own float32 arithmetic, which may order rows within float tolerance otherwise.
const sameDistance = (c) => (c.index === 'off' ? (a, b) => a === b : near);

function checkCase(c, got, reference, what)
{
	const same = sameDistance(c);
	const describe = () => `${what}: ${caseScript(c, c.table)}\n got ${JSON.stringify(got)}\n heap ${JSON.stringify(reference.slice(0, c.offset + c.k + 5))}`;
	const expected = reference.slice(c.offset, c.offset + c.k);
	const byId = new Map(reference.map((r) => [r.id, r.d]));
	const seen = new Set();

	assert.equal(got.length, expected.length, 'row count of ' + describe());
	got.forEach((row, i) => {
		assert.ok(same(row.d, expected[i].d), `distance ${i} of ${describe()}`);
		assert.ok(!seen.has(row.id), `row ${row.id} twice in ${describe()}`);
		seen.add(row.id);
		// a row of the heap matching the WHERE, at exactly this distance (pgvector computes both)
		assert.ok(byId.has(row.id) && byId.get(row.id) === row.d, `row ${row.id} of ${describe()}`);
	});
	// every row ranked inside the page and not tied (within tolerance) with the rows at its ends
	if (expected.length > 0)
	{
		const first = expected[0].d;
		const last = expected[expected.length - 1].d;

		for (const row of expected)
			if (!same(row.d, last) && !(c.offset > 0 && same(row.d, first)))
				assert.ok(seen.has(row.id), `row ${row.id} (distance ${row.d}) missing from ${describe()}`);
	}
}

// The behaviour of a bad-input case on both sides: the same error, or rows at the same distances.
function checkBadCase(c, got, heap, what)
{
	const describe = `${what} (${c.bad}): ${caseScript(c, c.table)}\n got ${JSON.stringify(got)}\n heap ${JSON.stringify(heap)}`;

	assert.deepEqual(got.error, heap.error, 'error of ' + describe);
	assert.equal(got.rows.length, heap.rows.length, 'rows of ' + describe);
	got.rows.forEach((l, i) => assert.ok(sameDistance(c)(parseRow(l).d, parseRow(heap.rows[i]).d), `distance ${i} of ${describe}`));
}

const settingsOf = (c) => `${MODES[c.mode]}SET plan_cache_mode = force_generic_plan;
SET lance_parts.fdw_vector_index = ${c.index};
SET lance_parts.fdw_nprobes = ${c.nprobes}; SET lance_parts.fdw_refine_factor = ${c.refine};
`;

// lancedb's distance from pgvector's: l2 is squared, cosine the same, dot is 1 - a.b
const lancedbDistance = { l2: (d) => d * d, cosine: (d) => d, dot: (d) => d + 1 };

test('EXPLAIN ANALYZE: every partition of the IVF_FLAT index probed, or the exact top k with the index off, serially and in parallel', () => {
	const q = vectorLiteral(point());

	for (const [name, , , metric, op] of FLAT)
		for (const v of VERSIONS)
			for (const [mode, prelude] of Object.entries(MODES))
				for (const index of ['on', 'off'])
				{
					const plan = psqlLines(`${prelude}SET lance_parts.fdw_nprobes = ${PARTITIONS}; SET lance_parts.fdw_vector_index = ${index};
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT id FROM ivfd.${name}_${v} WHERE cat <> 2 ORDER BY emb ${op} ${q} LIMIT 10;
`).join('\n');
					const what = `${name}_${v} ${mode}, index ${index}:\n${plan}`;

					assert.match(plan, /Lance Top-K: .*, k=10/, what);
					if (index === 'on')
						assert.match(plan, new RegExp(`Lance Vector Index: emb_idx \\(IVF_FLAT, ${metric}\\), ${PARTITIONS} of ${PARTITIONS} partitions`), what);
					else
						assert.doesNotMatch(plan, /Lance Vector Index/, what);
					assert.match(plan, /Lance Filter: \(?cat <> 2\)?/, what);
					if (mode === 'parallel')
						assert.match(plan, /Gather Merge[\s\S]*Parallel Foreign Scan/, what);
				}
});

// The scalar indexes serve the exact top k (lance_parts.fdw_vector_index off) and narrow a vector
// index's candidates to the rows they find (lp_fdw_scan_restrict): with the vector index on, the
// scan's filter removes no more rows than with it off (only those of fragments no scalar index
// covers), where the probed partitions' other rows would be read and removed.
test('EXPLAIN ANALYZE: the scalar indexes searched for pushed clauses, with the vector index off and on', () => {
	const q = vectorLiteral(point());

	for (const [name, , , , op, options] of FLAT.concat(APPROXIMATE))
		if (options === SCALAR_INDEXES)
			for (const v of VERSIONS)
				for (const [where, index] of [['id BETWEEN 100 AND 300', 'id_idx \\(BTREE\\)'], ['cat IN (1, 3)', 'cat_idx \\(BITMAP\\)']])
				{
					const removed = {};

					for (const vectorIndex of ['off', 'on'])
					{
						const plan = psqlLines(`SET lance_parts.fdw_vector_index = ${vectorIndex}; SET lance_parts.fdw_nprobes = ${PARTITIONS};
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT id FROM ivfd.${name}_${v} WHERE ${where} ORDER BY emb ${op} ${q} LIMIT 10;
`).join('\n');
						const what = `${name}_${v}, vector index ${vectorIndex}:\n${plan}`;

						assert.match(plan, new RegExp(`Lance Index: ${index}[\\s\\S]*Lance Top-K: `), what);
						if (vectorIndex === 'on')
							assert.match(plan, /Lance Vector Index: emb_idx/, what);
						removed[vectorIndex] = Number(/Rows Removed by Lance Filter: (\d+)/.exec(plan)[1]);
					}
					assert.equal(removed.on, removed.off, `${name}_${v} WHERE ${where}: rows the filter removed with the vector index on and off`);
				}
});

// Run IVF_FLAT cases in chunks of CHUNK, each against its heap copy; count what they covered.
async function checkFlatCases(session, cases, counts)
{
	for (let start = 0; start < cases.length; start += CHUNK)
	{
		const chunk = cases.slice(start, start + CHUNK);
		const got = await session.steps(chunk.map((c) => settingsOf(c) + caseScript(c, c.table)));
		const reference = await session.steps(chunk.map((c) => 'RESET ALL; SET extra_float_digits = 3;\n' +
			(c.bad === null ? referenceScript(c) : caseScript(c, 'heap_' + c.table))));

		chunk.forEach((c, i) => {
			const what = `case ${start + i} (${c.mode}, index ${c.index})`;

			counts.indexOff += c.index === 'off';
			counts.parallel += c.mode === 'parallel';

			if (c.bad !== null)
			{
				checkBadCase(c, got[i], reference[i], what);
				counts.bad++;
				counts.errors += got[i].error !== null;
				return;
			}
			assert.equal(got[i].error, null, `${what}: ${caseScript(c, c.table)}`);
			assert.equal(reference[i].error, null, `${what}: ${referenceScript(c)}`);
			checkCase(c, got[i].rows.map(parseRow), reference[i].rows.map(parseRow), what);
			counts.withRows += got[i].rows.length > 0;
			counts.withNulls += got[i].rows.some((l) => parseRow(l).d === '');
		});
		counts.checked += chunk.length;
	}
}

test(`IVF_FLAT, every partition probed, and the index off: ${FLAT_CASES} random cases against the heap copies`, async (t) => {
	const counts = { checked: 0, indexOff: 0, parallel: 0, bad: 0, errors: 0, withRows: 0, withNulls: 0 };

	await withPsqlSession(async (session) => {
		await session.run('SET extra_float_digits = 3');
		await checkFlatCases(session, flatCases, counts);
	});
	t.diagnostic(JSON.stringify(counts));
	assert.equal(counts.checked, FLAT_CASES);
	// the NULL vectors no index holds: PostgreSQL's rows when fewer than k rows have a distance
	assert.ok(counts.indexOff >= 600 && counts.parallel >= 1000 && counts.bad >= 200 && counts.errors >= 60 &&
		counts.withNulls >= 100, JSON.stringify(counts));
});

test('IVF_FLAT in a transaction that read its own pending writes: random cases against the heap copies', async (t) => {
	const counts = { checked: 0, indexOff: 0, parallel: 0, bad: 0, errors: 0, withRows: 0, withNulls: 0 };
	const writes = FLAT.flatMap(([name]) => PENDING_WRITES.flatMap((w) => [w.replace(/\bT\b/g, `ivfd.${name}_written`),
		w.replace(/\bT\b/g, `ivfd.heap_${name}_written`)]));

	await withPsqlSession(async (session) => {
		await session.run('SET extra_float_digits = 3', "SET lance_parts.publish_at = 'commit'", 'BEGIN', ...writes);
		for (const [name, , , , op] of FLAT)
		{
			const plan = (await session.run(`SET lance_parts.fdw_nprobes = ${PARTITIONS}`, `EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT id FROM ivfd.${name}_written ORDER BY emb ${op} ${vectorLiteral(point())} LIMIT 10`)).join('\n');

			assert.match(plan, /Pending Writes Read: true[\s\S]*Lance Vector Index: emb_idx/, plan);
		}
		await checkFlatCases(session, pendingCases, counts);
		await session.run('ROLLBACK');
	});
	t.diagnostic(JSON.stringify(counts));
	assert.ok(counts.checked >= 700 && counts.indexOff >= 100 && counts.withNulls >= 10, JSON.stringify(counts));
});

test('IVF_FLAT, every partition probed: lancedb\'s rows and distances', async () => {
	// cases lancedb can answer: no OFFSET, a query vector of the dimension, not the zero one
	// under cosine; the heap's rows with a distance (lancedb does not rank NULL vectors)
	const cases = flatCases.filter((c) => c.bad === null && c.offset === 0 && c.version in tables && !/emb IS/.test(c.where.sql)).slice(0, 150);
	let compared = 0;
	const [got, reference] = await withPsqlSession(async (session) => {
		await session.run('SET extra_float_digits = 3');
		return [await session.steps(cases.map((c) => settingsOf({ ...c, mode: 'serial' }) + caseScript(c, c.table))),
			await session.steps(cases.map(referenceScript))];
	});

	for (let i = 0; i < cases.length; i++)
	{
		const c = cases[i];
		const heap = reference[i].rows.map(parseRow).filter((r) => r.d !== '' && r.d !== 'NaN');

		if (heap.length < c.k + 5)
			continue;
		let search = tables[c.version][c.name].vectorSearch(JSON.parse(c.text)).distanceType(c.metric).nprobes(PARTITIONS)
			.limit(c.k).select(['id']);

		if (c.where.lance !== undefined)
			search = search.where(c.where.lance);
		const theirs = (await search.toArray()).map((r) => ({ id: String(r.id), d: r._distance }));
		const ours = got[i].rows.map(parseRow);
		const what = `case ${i}: ${caseScript(c, c.table)}\n ours ${JSON.stringify(ours)}\n lancedb's ${JSON.stringify(theirs)}`;

		assert.equal(theirs.length, ours.length, what);
		ours.forEach((row, r) => {
			const expected = lancedbDistance[c.metric](Number(row.d));

			assert.ok(Math.abs(theirs[r].d - expected) <= 1e-4 * Math.max(1, Math.abs(expected)), `distance ${r} of ${what}`);
			// a row lancedb does not return lies at its last distance
			if (!theirs.some((s) => s.id === row.id))
				assert.ok(Math.abs(expected - theirs[theirs.length - 1].d) <= 1e-4 * Math.max(1, Math.abs(expected)), `row ${row.id} of ${what}`);
		});
		compared++;
	}
	assert.ok(compared >= 30, `${compared} cases compared with lancedb`);
});

// ---- IVF_PQ, IVF_HNSW_SQ, and IVF_FLAT probing few partitions -----------------------------

// Every index is held to lancedb's recall.  The versions searched have deleted rows, so that
// lance_fdw ranks every row of the probed partitions (and of the fragments the index does not
// cover) by its exact distance: the k nearest of the rows lancedb's search chooses among.
const BATCHES = 48;
const BATCH_QUERIES = 20;
const APPROXIMATE_SEARCHES = APPROXIMATE.concat([FLAT[2], FLAT[3]]);

test('IVF_PQ, IVF_HNSW_SQ and IVF_FLAT probing few partitions: per batch at least lancedb\'s recall, every row a qualifying one at its exact distance', (t) => withPsqlSession(async (session) => {
	await session.run('SET extra_float_digits = 3');
	for (let b = 0; b < BATCHES; b++)
	{
		const [name, , , metric, op] = APPROXIMATE_SEARCHES[b % APPROXIMATE_SEARCHES.length];
		const version = pick(['latest', 'written']);
		const hnsw = name.startsWith('hnsw_');
		const nprobes = pick([1, 2, 3, 8]);
		const refine = pick([1, 1, 3]);
		const k = pick([5, 10, 20]);
		const ef = hnsw ? pick([0, 0, 2, 6]) * k * refine : 0;	// lancedb wants ef >= k * refine
		const where = random() < 0.6 ? randomWhere() : { sql: '', lance: undefined };
		const mode = pick(Object.keys(MODES));
		const cases = Array.from({ length: BATCH_QUERIES }, () => ({
			op, k, offset: 0, where, parameters: false, table: `${name}_${version}`,
			text: vectorText(randomVector(rowsBefore(version))),
		}));
		const settings = `${MODES[mode]}SET lance_parts.fdw_nprobes = ${nprobes}; SET lance_parts.fdw_refine_factor = ${refine};
SET lance_parts.fdw_ef = ${ef};
`;
		const got = await session.steps(cases.map((c) => settings + caseScript(c, c.table)));
		const exact = await session.steps(cases.map((c) => 'RESET ALL; SET extra_float_digits = 3;\n' + referenceScript(c, 0)));
		// the rows returned among the heap's rows that pass the filter, at their exact distances
		const distances = await session.steps(cases.map((c, i) => `SELECT id, emb ${op} ${literal(c.text)}::vector
FROM (SELECT * FROM ivfd.heap_${c.table} ${where.sql}) s WHERE id = ANY('{${got[i].rows.map((l) => parseRow(l).id).join(',') || '-1'}}'::bigint[])`));
		let ours = 0;
		let theirs = 0;
		let total = 0;

		for (let q = 0; q < cases.length; q++)
		{
			const what = `${name}_${version} batch ${b} (nprobes ${nprobes}, refine ${refine}, ef ${ef}, ${mode}, ${where.sql}) query ${q}`;
			const rows = got[q].rows.map(parseRow);
			const exactRows = exact[q].rows.map(parseRow);
			const exactIds = new Set(exactRows.map((r) => r.id));
			const byId = new Map(distances[q].rows.map((l) => [parseRow(l).id, parseRow(l).d]));
			let search = tables[version][name].vectorSearch(JSON.parse(cases[q].text)).distanceType(metric).nprobes(nprobes)
				.limit(k).select(['id']);

			assert.equal(got[q].error, null, what);
			if (refine > 1)
				search = search.refineFactor(refine);
			if (ef > 0)
				search = search.ef(ef);
			if (where.lance !== undefined)
				search = search.where(where.lance);
			const found = (await search.toArray()).map((r) => String(r.id));

			// k rows whenever k rows qualify, each a live row passing the filter, once, at its distance
			assert.equal(rows.length, Math.min(k, exactRows.length), `${what}: row count`);
			assert.equal(new Set(rows.map((r) => r.id)).size, rows.length, `${what}: rows returned twice`);
			rows.forEach((row, i) => {
				assert.ok(byId.has(row.id) && row.d === byId.get(row.id), `${what}: row ${row.id} (${row.d}) a qualifying row at its exact distance`);
				if (i > 0)
					assert.ok(!distanceAfter(rows[i - 1].d, row.d), `${what}: rows out of order ${JSON.stringify(rows)}`);
			});
			ours += Math.min(rows.filter((r) => exactIds.has(r.id)).length, k);
			theirs += Math.min(found.filter((id) => exactIds.has(id)).length, k);
			total += Math.min(k, exactRows.length);
		}

		t.diagnostic(`${name}_${version} batch ${b} (nprobes ${nprobes}, refine ${refine}, ef ${ef}, k ${k}, ${mode}, ${where.sql || 'no filter'}): recall ${ours}/${total}, lancedb's ${theirs}/${total}`);
		assert.ok(ours >= theirs, `${name}_${version} batch ${b}: recall ${ours} of ${total} against lancedb's ${theirs}`);
	}
}));
