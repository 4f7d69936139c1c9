'use strict';
// Exact top-k in the lance_fdw scan: ORDER BY emb <op> q LIMIT k over a vector(n) column.
//
//  - a randomized differential (fixed seed): thousands of query cases over many queries,
//    random k (and OFFSET), random query vectors (literals and parameters of generic plans),
//    each of <->, <=> and <#>, with and without pushed WHERE clauses, serially and with
//    parallel workers forced, small and default batches; each against the same query on a
//    heap copy of the rows (CREATE TABLE AS from the foreign table), pgvector evaluating; a
//    fifth of them over a table reading the vectors as real[] (ORDER BY emb::vector <op> q).  The
//    rows: several fragments with deleted rows, NULL vectors, duplicated vectors (ties) and
//    zero vectors (NaN cosine distances).  A case passes when the distances, in order, are
//    PostgreSQL's own top-k distances and every row returned is a row of the heap copy
//    matching the WHERE with that distance (which of equally distant rows fill the last
//    places is unspecified, as in PostgreSQL's top-N sort).  EXPLAIN shows "Lance Top-K" in
//    every mode (Gather Merge over a parallel-aware scan in the parallel one), and off with
//    lance_parts.fdw_topk = off, so the comparison cannot pass because nothing was pushed.
//  - lancedb's own exact search (no index) of a clean dataset: the same ids, and distances
//    within float tolerance: lancedb's l2 is the squared distance, its cosine pgvector's,
//    and its dot 1 - a.b where pgvector's <#> is -a.b.
//  - shapes the scan does not answer (an expression in ORDER BY, DESC, two keys, two tables,
//    a local qual, DISTINCT, WITH TIES, LIMIT ALL, a correlated query vector): no "Lance
//    Top-K" and the heap's results; OFFSET is answered (k = count + offset).
//  - a top-k scan rescanned under a nested loop ranks again: the same rows for every outer row.
//  - bad input: a query vector of another dimension is pgvector's error, a NULL query vector
//    returns k rows of NULL distances, NaN in a query vector is vector_in's error, and a
//    stored NaN item or a list of another length gives the error a plain scan gives.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const arrow = require('apache-arrow');
const h = require('./harness.cjs');
const { prng } = require('./prng.cjs');
const { psqlLines, psqlAsync, literal } = require('./pg.cjs');

const pgvectorMissing = /^pgvector: (.*)$/m.exec(process.env.LP_PG_ADDONS_MISSING || '');
if (pgvectorMissing) {
	test('exact top-k', { skip: `no pgvector for this PostgreSQL: ${pgvectorMissing[1]}` }, () => {});
	return;
}

const SEED = 20270027;
const DIM = 12;
const NUM_ROWS = 3000;
const ROWS_PER_FRAGMENT = 400;
const NUM_QUERIES = 60;			// query vectors
const CASES_PER_QUERY = 50;		// k, operator, WHERE, mode
const OPERATORS = ['<->', '<=>', '<#>'];
const dir = h.scratchDir('fdw-topk');

const random = prng(SEED);
const intBelow = (n) => Math.floor(random() * n);
const pick = (items) => items[intBelow(items.length)];

function randomVector()
{
	return Array.from({ length: DIM }, () => Math.fround(random() * 2 - 1));
}

const vectorLiteral = (v) => literal('[' + v.join(',') + ']') + '::vector';

const schema = new arrow.Schema([
	new arrow.Field('id', new arrow.Int64(), false),
	new arrow.Field('cat', new arrow.Int32(), true),
	new arrow.Field('flag', new arrow.Bool(), true),
	new arrow.Field('label', new arrow.Utf8(), true),
	new arrow.Field('emb', new arrow.FixedSizeList(DIM, new arrow.Field('item', new arrow.Float32(), true)), true),
]);

// Rows first to last: every 37th vector NULL, every 50th a copy of the one 7 rows before
// (equal distances), every 401st the zero vector (a NaN cosine distance).
function makeRows(count, vectorOf)
{
	const rows = [];

	for (let i = 0; i < count; i++)
	{
		let emb = vectorOf(i, rows);

		rows.push({ id: i, cat: i % 13 === 5 ? null : i % 7, flag: i % 3 === 0, label: 'row ' + i, emb });
	}
	return rows;
}

function rowsTable(rows)
{
	const n = rows.length;
	const valid = rows.map((r) => r.emb !== null);
	const values = new Float32Array(n * DIM);

	rows.forEach((r, i) => { if (r.emb !== null) values.set(r.emb, i * DIM); });
	const validity = (flags) => {
		const bytes = new Uint8Array(Math.ceil(n / 8));

		flags.forEach((f, i) => { if (f) bytes[i >> 3] |= 1 << (i & 7); });
		return bytes;
	};
	const fields = schema.fields;
	const children = [
		arrow.makeData({ type: fields[0].type, length: n, nullCount: 0, data: BigInt64Array.from(rows, (r) => BigInt(r.id)) }),
		arrow.makeData({ type: fields[1].type, length: n, nullCount: rows.filter((r) => r.cat === null).length,
			nullBitmap: validity(rows.map((r) => r.cat !== null)), data: Int32Array.from(rows, (r) => r.cat ?? 0) }),
		arrow.vectorFromArray(rows.map((r) => r.flag), fields[2].type).data[0],
		arrow.vectorFromArray(rows.map((r) => r.label), fields[3].type).data[0],
		arrow.makeData({
			type: fields[4].type, length: n, nullCount: valid.filter((v) => !v).length, nullBitmap: validity(valid),
			child: arrow.makeData({ type: new arrow.Float32(), length: n * DIM, nullCount: 0, data: values }),
		}),
	];

	return new arrow.Table([new arrow.RecordBatch(schema,
		arrow.makeData({ type: new arrow.Struct(schema.fields), length: n, nullCount: 0, children }))]);
}

// A lancedb dataset of rows, ROWS_PER_FRAGMENT rows per fragment.
async function writeDataset(name, rows)
{
	const db = await h.lancedb.connect(dir);
	let table = null;

	for (let start = 0; start < rows.length; start += ROWS_PER_FRAGMENT)
	{
		const part = rowsTable(rows.slice(start, start + ROWS_PER_FRAGMENT));

		if (table === null)
			table = await db.createTable(name, part);
		else
			await table.add(part);
	}
	return table;
}

function foreignTable(name, datasetPath, embType)
{
	psqlLines(`DROP FOREIGN TABLE IF EXISTS topk.${name};
CREATE FOREIGN TABLE topk.${name} (id bigint, cat int, flag boolean, label text, emb ${embType})
SERVER topk_server OPTIONS (uri ${literal(datasetPath)});
`);
}

const rows = makeRows(NUM_ROWS, (i, previous) => {
	if (i % 37 === 0)
		return null;
	if (i % 50 === 0 && previous[i - 7].emb !== null)
		return previous[i - 7].emb;
	if (i % 401 === 0)
		return new Array(DIM).fill(0);
	return randomVector();
});

test.before(async () => {
	psqlLines(`CREATE EXTENSION IF NOT EXISTS vector;
DROP SCHEMA IF EXISTS topk CASCADE;
DROP SERVER IF EXISTS topk_server CASCADE;
CREATE SERVER topk_server FOREIGN DATA WRAPPER lance_fdw;
CREATE SCHEMA topk;
`);
	const table = await writeDataset('vectors', rows);

	await table.delete('id % 11 = 3');
	foreignTable('vectors', path.join(dir, 'vectors.lance'), `vector(${DIM})`);
	foreignTable('vectors_real', path.join(dir, 'vectors.lance'), 'real[]');
	psqlLines('CREATE TABLE topk.heap AS SELECT * FROM topk.vectors;\n');
	assert.equal(psqlLines('SELECT count(*) FROM topk.heap;\n')[0],
		String(rows.filter((r) => r.id % 11 !== 3).length));
});

// Run each script in one psql session; return each script's output lines ("id|distance").
function runCases(prelude, scripts)
{
	const separator = '--- end of case ---';
	const lines = psqlLines(prelude + 'SET extra_float_digits = 3;\n' +
		scripts.map((s) => s + `\\echo '${separator}'\n`).join(''));
	const results = [[]];

	for (const line of lines)
	{
		if (line === separator)
			results.push([]);
		else
			results[results.length - 1].push(line);
	}
	results.pop();
	assert.equal(results.length, scripts.length, 'one result per case');
	return results.map((lines) => lines.map((l) => {
		const [id, distance] = l.split('|');

		return { id, distance };
	}));
}

const WHERES = [
	'', '', '',
	'WHERE cat = 3',
	'WHERE cat IN (1, 2, 5)',
	'WHERE id BETWEEN 500 AND 1700',
	'WHERE flag',
	'WHERE NOT flag AND cat <> 4',
	'WHERE cat IS NULL',
	'WHERE emb IS NOT NULL',
	'WHERE emb IS NULL',
	"WHERE label = 'row 77'",
	'WHERE id < 0',
];

const MODES = {
	serial: 'SET max_parallel_workers_per_gather = 0;\n',
	small_batches: 'SET max_parallel_workers_per_gather = 0; SET lance_parts.fdw_batch_rows = 97;\n',
	parallel: `SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0; SET max_parallel_workers_per_gather = 2;
SET lance_parts.fdw_unit_rows = 150; SET lance_parts.fdw_batch_rows = 64;
`,
};

// The query of a case over table; the query vector and k as literals or as parameters; the
// real[] table's vectors through pgvector's cast.
function caseQuery(table, c)
{
	const q = c.parameters ? '$1' : vectorLiteral(c.vector);
	const limit = c.parameters ? '$2' : String(c.k);
	const offset = c.offset > 0 ? ` OFFSET ${c.offset}` : '';
	const emb = c.real ? c.real : 'emb';
	const from = c.real ? 'vectors_real' : table;

	return `SELECT id, ${emb} ${c.op} ${q} AS d FROM topk.${from} ${c.where} ORDER BY ${emb} ${c.op} ${q} LIMIT ${limit}${offset}`;
}

function caseScript(table, c)
{
	if (!c.parameters)
		return caseQuery(table, c) + ';\n';
	return `PREPARE topk_case(vector, bigint) AS ${caseQuery(table, c)};
EXECUTE topk_case(${vectorLiteral(c.vector)}, ${c.k});
DEALLOCATE topk_case;
`;
}

// PostgreSQL's top-k on the heap with every row tied with the last one: rank() <= k + offset.
function referenceScript(c)
{
	const q = vectorLiteral(c.vector);

	return `SELECT id, d FROM (SELECT id, emb ${c.op} ${q} AS d, rank() OVER (ORDER BY emb ${c.op} ${q}) AS r
FROM topk.heap ${c.where}) s WHERE r <= ${c.k + c.offset} ORDER BY d, id;
`;
}

function checkCase(c, got, reference, what)
{
	const matching = reference.length;	// at least min(k + offset, rows matching)
	const expectedDistances = reference.map((r) => r.distance).slice(c.offset, c.offset + c.k);
	const byId = new Map(reference.map((r) => [r.id, r.distance]));
	const ids = new Set();

	assert.deepEqual(got.map((r) => r.distance), expectedDistances,
		`${what}: distances of ${caseQuery('vectors', c)} (reference has ${matching} rows)`);
	for (const row of got)
	{
		assert.ok(!ids.has(row.id), `${what}: row ${row.id} returned twice`);
		ids.add(row.id);
		assert.equal(byId.get(row.id), row.distance,
			`${what}: row ${row.id} is a top-k row of the heap with distance ${row.distance}`);
	}
}

const cases = [];
for (let q = 0; q < NUM_QUERIES; q++)
{
	// some query vectors are stored vectors (distance 0, ties with their copies)
	const vector = q % 5 === 0 ? rows[1 + intBelow(NUM_ROWS - 1)].emb ?? randomVector() : randomVector();

	for (let i = 0; i < CASES_PER_QUERY; i++)
	{
		const k = pick([0, 1, 1, 2, 3, 5, 10, 10, 17, 50, 100, 499, 3000]);

		cases.push({
			vector, k,
			op: pick(OPERATORS),
			where: pick(WHERES),
			offset: random() < 0.15 ? intBelow(30) : 0,
			parameters: random() < 0.25,
			mode: pick(Object.keys(MODES)),
			real: random() < 0.2 ? pick(['emb::vector', `emb::vector(${DIM})`]) : null,
		});
	}
}

function explain(prelude, query)
{
	return psqlLines(prelude + 'EXPLAIN (VERBOSE, COSTS OFF) ' + query + ';\n').join('\n');
}

test('EXPLAIN names the top-k scan in every mode, and not when it is off', () => {
	const c = { vector: randomVector(), k: 10, op: '<->', where: 'WHERE cat = 3', offset: 5, parameters: false };

	for (const [mode, prelude] of Object.entries(MODES))
	{
		const plan = explain(prelude, caseQuery('vectors', c));

		assert.match(plan, /Lance Top-K: \(?vectors\.emb <-> '\[.*\]'::vector\)?, k=10 \+ 5/, mode + ':\n' + plan);
		assert.match(plan, /Lance Filter: \(?vectors\.cat = 3\)?/, mode + ':\n' + plan);
		assert.doesNotMatch(plan, /Sort/, mode + ':\n' + plan);
		if (mode === 'parallel')
			assert.match(plan, /Gather Merge[\s\S]*Parallel Foreign Scan/, plan);
	}
	const prepared = psqlLines(`SET plan_cache_mode = force_generic_plan;
PREPARE p(vector, bigint) AS ${caseQuery('vectors', { ...c, parameters: true })};
EXPLAIN (COSTS OFF) EXECUTE p('[${c.vector.join(',')}]', 3);\n`).join('\n');
	assert.match(prepared, /Lance Top-K: \(?emb <-> \$1\)?, k=\$2 \+ 5/, prepared);
	const real = explain('', caseQuery('vectors', { ...c, real: 'emb::vector' }));
	assert.match(real, /Lance Top-K: \(?\(vectors_real\.emb\)::vector <-> '\[.*\]'::vector\)?, k=10 \+ 5/, real);
	const off = explain('SET lance_parts.fdw_topk = off;\n', caseQuery('vectors', c));
	assert.doesNotMatch(off, /Lance Top-K/, off);
	assert.match(off, /Sort/, off);
});

test(`randomized differential: ${cases.length} cases against a heap copy`, () => {
	const CHUNK = 100;
	let checked = 0;

	for (const [mode, prelude] of Object.entries(MODES))
	{
		const modeCases = cases.filter((c) => c.mode === mode);

		for (let start = 0; start < modeCases.length; start += CHUNK)
		{
			const chunk = modeCases.slice(start, start + CHUNK);
			const got = runCases(prelude + 'SET plan_cache_mode = force_generic_plan;\n',
				chunk.map((c) => caseScript('vectors', c)));
			const reference = runCases('', chunk.map(referenceScript));

			chunk.forEach((c, i) => checkCase(c, got[i], reference[i], mode));
			checked += chunk.length;
		}
	}
	assert.equal(checked, cases.length);
});

// The same distances in order, and the same rows but among those tied with the last one.
function assertSameTopK(got, reference, what)
{
	assert.deepEqual(got.map((r) => r.distance), reference.map((r) => r.distance), what + ': distances');
	const last = got.length > 0 ? got[got.length - 1].distance : null;
	const ids = (rows) => rows.filter((r) => r.distance !== last).map((r) => r.id).sort();

	assert.deepEqual(ids(got), ids(reference), what + ': rows before the last distance');
}

test('shapes the scan does not answer fall back to the plain plan, with PostgreSQL\'s results', () => {
	const q = vectorLiteral(randomVector());
	const q2 = vectorLiteral(randomVector());
	const shapes = [
		`SELECT id, emb <-> ${q} AS d FROM topk.vectors ORDER BY (emb <-> ${q}) * 2 LIMIT 7`,
		`SELECT id, emb <-> ${q} AS d FROM topk.vectors ORDER BY (emb <-> ${q}) + 0 LIMIT 7`,
		`SELECT id, emb <-> ${q} AS d FROM topk.vectors ORDER BY emb <-> ${q}, id LIMIT 7`,
		`SELECT id, emb <=> ${q} AS d FROM topk.vectors WHERE emb IS NOT NULL ORDER BY emb <=> ${q} DESC LIMIT 7`,
		`SELECT id, emb <+> ${q} AS d FROM topk.vectors ORDER BY emb <+> ${q} LIMIT 7`,
		`SELECT id, emb <-> ${q} AS d FROM topk.vectors WHERE emb <-> ${q} > 1 ORDER BY emb <-> ${q} LIMIT 7`,
		`SELECT id, emb <-> ${q} AS d FROM topk.vectors WHERE label LIKE 'row 1%' ORDER BY emb <-> ${q} LIMIT 7`,
		`SELECT v.id, v.emb <-> ${q} AS d FROM topk.vectors v JOIN topk.heap h ON h.id = v.id AND h.cat = 2 ORDER BY v.emb <-> ${q} LIMIT 7`,
		`SELECT id, d FROM (SELECT id, emb <-> ${q} AS d FROM topk.vectors WHERE cat = 1 UNION ALL SELECT id, emb <-> ${q} FROM topk.vectors WHERE cat = 2) u ORDER BY d LIMIT 7`,
		`SELECT id, emb <#> ${q} AS d FROM topk.vectors ORDER BY emb <#> ${q} FETCH FIRST 7 ROWS WITH TIES`,
		`SELECT id, emb <-> ${q} AS d FROM topk.vectors WHERE cat = 3 ORDER BY emb <-> ${q} LIMIT ALL`,
		`SELECT cat, count(*) FROM (SELECT cat FROM topk.vectors ORDER BY emb <-> ${q} LIMIT 50) s GROUP BY cat ORDER BY cat`,
		`SELECT v.i, (SELECT id FROM topk.vectors ORDER BY emb <-> v.q LIMIT 1) FROM (VALUES (1, ${q}), (2, ${q2})) v(i, q)`,
	];
	const noTopK = shapes.slice(0, shapes.length - 1).filter((s) => !s.startsWith('SELECT cat'));

	for (const shape of noTopK)
	{
		const plan = explain('', shape);

		assert.doesNotMatch(plan, /Lance Top-K/, shape + '\n' + plan);
	}
	// a top-k inside a subquery is answered; the aggregate above it is not the scan's business
	assert.match(explain('', shapes[shapes.length - 2]), /Lance Top-K/);
	const got = runCases('', shapes.map((s) => s + ';\n'));
	const reference = runCases('', shapes.map((s) => s.replaceAll('topk.vectors', 'topk.heap') + ';\n'));

	shapes.forEach((s, i) => {
		assert.ok(reference[i].length > 0, 'the reference of ' + s + ' has rows');
		assertSameTopK(got[i], reference[i], s);
	});
});

test('a rescanned top-k scan ranks again: the same rows for every outer row', () => {
	const q = vectorLiteral(randomVector());
	const query = (table) => `SET enable_material = off; SET enable_hashjoin = off; SET enable_mergejoin = off;
SELECT s.id, s.d, g.x FROM (VALUES (1), (2), (3)) g(x) LEFT JOIN
	(SELECT id, emb <=> ${q} AS d FROM topk.${table} WHERE cat = 2 ORDER BY emb <=> ${q} LIMIT 4 OFFSET 1) s ON true
ORDER BY g.x;
`;
	const plan = psqlLines(query('vectors').replace('SELECT s.id', 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT s.id')).join('\n');

	assert.match(plan, /Lance Top-K/, plan);
	assert.match(plan, /Foreign Scan on vectors \(actual rows=5 loops=3\)/, plan);
	const [got, reference] = runCases('', [query('vectors'), query('heap')]);
	const outer = (rows, x) => rows.slice(4 * (x - 1), 4 * x);

	assert.equal(got.length, 12);
	for (const x of [2, 3])
		assert.deepEqual(outer(got, x), outer(got, 1), 'outer row ' + x);
	assertSameTopK(outer(got, 1), outer(reference, 1), 'rescan');
});

// The ERROR line psql prints for a script that must fail.
async function errorOf(script)
{
	const { err } = await psqlAsync(script, true);
	const line = err.find((l) => l.includes('ERROR:'));

	assert.ok(line, 'an error for ' + script + ': ' + err.join('\n'));
	return line.replace(/^psql:<stdin>:\d+: /, '');
}

test('bad input: PostgreSQL\'s own errors and results, never a crash', async () => {
	const query = (table, q, op = '<->') => `SELECT id, emb ${op} ${q} AS d FROM topk.${table} ORDER BY emb ${op} ${q} LIMIT 5;\n`;

	// a query vector of another dimension: pgvector's error, on the heap too
	const short = "'[1,2,3]'::vector";
	assert.match(explain('', query('vectors', short).replace(';\n', '')), /Lance Top-K/);
	const dimensions = await errorOf(query('vectors', short));
	assert.match(dimensions, /different vector dimensions 12 and 3/);
	assert.equal(dimensions, await errorOf(query('heap', short)));

	// a real[] cast to a vector of another dimension: the cast's error
	const realQuery = `SELECT id FROM topk.vectors_real ORDER BY emb::vector(3) <-> '[1,2,3]' LIMIT 5;\n`;
	assert.match(explain('', realQuery.replace(';\n', '')), /Lance Top-K/);
	const realDimensions = await errorOf(realQuery);
	assert.match(realDimensions, /expected 3 dimensions, not 12/);
	assert.equal(realDimensions, await errorOf('SET lance_parts.fdw_topk = off;\n' + realQuery));

	// NaN in a query vector: vector_in's error
	const nan = `'[NaN${',0'.repeat(DIM - 1)}]'::vector`;
	assert.equal(await errorOf(query('vectors', nan)), await errorOf(query('heap', nan)));

	// a NULL query vector (a parameter: a NULL constant is folded away): k rows of NULL distance
	const nullQuery = (table) => `SET plan_cache_mode = force_generic_plan;
PREPARE n(vector) AS SELECT id, emb <=> $1 AS d FROM topk.${table} ORDER BY emb <=> $1 LIMIT 5;
EXPLAIN (COSTS OFF) EXECUTE n(NULL);
EXECUTE n(NULL);
DEALLOCATE n;
`;
	const [gotNull, referenceNull] = runCases('', [nullQuery('vectors'), nullQuery('heap')]);
	assert.ok(gotNull.some((l) => /Lance Top-K/.test(l.id)), 'the NULL query vector is ranked by the scan');
	const nullRows = (lines) => lines.filter((l) => /^\d+$/.test(l.id));
	assert.equal(nullRows(gotNull).length, 5);
	assert.ok(nullRows(gotNull).every((r) => r.distance === ''), 'NULL distances');
	assert.equal(nullRows(referenceNull).length, 5);

	// a zero query vector under cosine: every distance NaN, as on the heap
	const zero = vectorLiteral(new Array(DIM).fill(0));
	const [gotZero, referenceZero] = runCases('', [query('vectors', zero, '<=>'), query('heap', zero, '<=>')]);
	assert.deepEqual(gotZero.map((r) => r.distance), new Array(5).fill('NaN'));
	assert.deepEqual(referenceZero.map((r) => r.distance), new Array(5).fill('NaN'));

	// stored vectors a vector(12) cannot hold: the plain scan's error, with the scan's context
	const badRows = (bad) => makeRows(900, (i) => (i === 611 ? bad : randomVector()));
	for (const [name, bad] of [['bad_nan', [...randomVector().slice(1), NaN]], ['bad_length', [1, 2, 3]]])
	{
		const db = await h.lancedb.connect(dir);
		const listSchema = new arrow.Schema([new arrow.Field('id', new arrow.Int64(), false),
			new arrow.Field('emb', new arrow.List(new arrow.Field('item', new arrow.Float32(), true)), true)]);
		const data = badRows(bad);

		await db.createTable(name, arrow.tableFromArrays({ id: BigInt64Array.from(data, (r) => BigInt(r.id)) })
			.assign(new arrow.Table({ emb: arrow.vectorFromArray(data.map((r) => r.emb), listSchema.fields[1].type) })));
		psqlLines(`DROP FOREIGN TABLE IF EXISTS topk.${name};
CREATE FOREIGN TABLE topk.${name} (id bigint, emb vector(${DIM})) SERVER topk_server OPTIONS (uri ${literal(path.join(dir, name + '.lance'))});\n`);
		const q = vectorLiteral(randomVector());
		const on = await errorOf(query(name, q));
		const off = await errorOf('SET lance_parts.fdw_topk = off;\n' + query(name, q));

		assert.equal(on, off, name);
		assert.match(explain('', query(name, q).replace(';\n', '')), /Lance Top-K/, name);
	}
});

test('lancedb\'s exact search finds the same rows at the same distances', async () => {
	const clean = makeRows(2000, () => randomVector());
	const table = await writeDataset('clean', clean);

	foreignTable('clean', path.join(dir, 'clean.lance'), `vector(${DIM})`);
	// lancedb's distances from pgvector's: l2 is squared, cosine the same, dot is 1 - a.b
	const metrics = [
		['<->', 'l2', (d) => d * d],
		['<=>', 'cosine', (d) => d],
		['<#>', 'dot', (d) => 1 + d],
	];

	for (let i = 0; i < 20; i++)
	{
		const vector = randomVector();
		const k = pick([1, 5, 10, 50, 200]);

		for (const [op, distanceType, fromPg] of metrics)
		{
			const [got] = runCases('', [`SELECT id, emb ${op} ${vectorLiteral(vector)} FROM topk.clean ORDER BY emb ${op} ${vectorLiteral(vector)} LIMIT ${k};\n`]);
			const found = await table.search(vector).distanceType(distanceType).bypassVectorIndex().limit(k).toArray();
			const what = `${distanceType}, k=${k}`;

			assert.equal(got.length, k, what);
			assert.equal(found.length, k, what);
			for (let r = 0; r < k; r++)
			{
				const expected = fromPg(Number(got[r].distance));

				assert.ok(Math.abs(found[r]._distance - expected) <= 1e-5 * Math.max(1, Math.abs(expected)),
					`${what}: row ${r} distance ${found[r]._distance}, pgvector's ${expected}`);
			}
			// rows closer than float32 rounding may change places: compare ids away from near ties
			const tolerance = (d) => 1e-5 * Math.max(1, Math.abs(d));
			const distinct = (rows, distanceOf) => rows.filter((row, r) => rows.every((other, o) =>
				o === r || Math.abs(distanceOf(other) - distanceOf(row)) > tolerance(distanceOf(row))));
			const pgIds = distinct(got, (row) => fromPg(Number(row.distance))).map((row) => row.id).sort();
			const lanceIds = new Set(found.map((row) => String(row.id)));

			for (const id of pgIds)
				assert.ok(lanceIds.has(id), `${what}: row ${id} is in lancedb's results too`);
		}
	}
});
