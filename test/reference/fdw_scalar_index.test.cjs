'use strict';
// lance_fdw scans that use the BTREE and BITMAP scalar indexes lancedb builds (createIndex
// with Index.btree() and Index.bitmap()), against the same scan with
// lance_parts.fdw_scalar_index off, a heap copy of the rows and lancedb's own query with the
// same filter.
//
// Two datasets of the same rows: one keyed on row addresses, one written with stable row ids
// (whose indexes hold row ids, which the fragments' row-id sequences turn into rows).  Each:
// three fragments written before the indexes (BTREE on an int64, a nullable int32 with
// repeated values, a string and a nullable float64; BITMAP on a nullable low-cardinality
// int32 and a low-cardinality string), two fragments appended after them (not covered: read
// whole), rows deleted from both kinds of fragment and rows updated (moved to a new fragment,
// keeping their row id in the stable dataset) after the indexes were built.  The cases: =, IN
// lists (short and 1000 ids), <, <=, >, >=, BETWEEN and their combinations on each indexed
// column, the value on either side, with <> beside them, with literals and with parameters of
// a generic plan, serially and with parallel workers forced (units of a few hundred rows,
// small batches).  Each case returns the heap's ids with the index on and off, and EXPLAIN
// names the index ("Lance Index: id_idx (BTREE), N rows", "c_idx (BITMAP)") only when it is
// on, so a pass cannot come from an index left unused.  lancedb's query with the same filter
// returns the same ids.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const arrow = require('apache-arrow');
const h = require('./harness.cjs');
const { prng } = require('./prng.cjs');
const { psqlLines, literal } = require('./pg.cjs');

const SEED = 20270627;
const ROWS_PER_FRAGMENT = 5000;
const INDEXED_FRAGMENTS = 3;
const APPENDED_FRAGMENTS = 2;
const NUM_ROWS = ROWS_PER_FRAGMENT * (INDEXED_FRAGMENTS + APPENDED_FRAGMENTS);
const ID_SPACE = 3 * NUM_ROWS;
const DELETE_PREDICATE = 'k % 7 = 3 OR id % 97 = 5';
const UPDATE_PREDICATE = 'id % 89 = 4';
const BTREE_COLUMNS = ['id', 'k', 's', 'f'];
const BITMAP_COLUMNS = ['c', 'tag'];
const dir = h.scratchDir('fdw-scalar-index');


const random = prng(SEED);
const intBelow = (n) => Math.floor(random() * n);

// Distinct ids in random order; k repeats (and is NULL every 29th row), f has NULLs and -0;
// c has 40 values and NULLs, tag 25 values.
const ids = Array.from({ length: ID_SPACE }, (_, i) => i - NUM_ROWS);
for (let i = ids.length - 1; i > 0; i--)
{
	const j = intBelow(i + 1);

	[ids[i], ids[j]] = [ids[j], ids[i]];
}
const rows = Array.from({ length: NUM_ROWS }, (_, i) => ({
	id: ids[i],
	k: i % 29 === 0 ? null : intBelow(2000) - 1000,
	s: 'key' + String(intBelow(4000)).padStart(5, '0'),
	f: i % 31 === 0 ? null : (i % 500 === 0 ? -0 : Math.round((random() * 2000 - 1000) * 4) / 4),
	c: i % 37 === 0 ? null : intBelow(40) - 20,
	tag: 'tag' + String(intBelow(25)).padStart(2, '0'),
}));

function rowsTable(part)
{
	return new arrow.Table({
		id: arrow.vectorFromArray(part.map((r) => BigInt(r.id)), new arrow.Int64()),
		k: arrow.vectorFromArray(part.map((r) => r.k), new arrow.Int32()),
		s: arrow.vectorFromArray(part.map((r) => r.s), new arrow.Utf8()),
		f: arrow.vectorFromArray(part.map((r) => r.f), new arrow.Float64()),
		c: arrow.vectorFromArray(part.map((r) => r.c), new arrow.Int32()),
		tag: arrow.vectorFromArray(part.map((r) => r.tag), new arrow.Utf8()),
	});
}

// The foreign tables over the two datasets, with the lancedb table of each.
const TABLES = [
	{ name: 'sidx.lance', dataset: 'indexed', storageOptions: {} },
	{ name: 'sidx.stable', dataset: 'stable', storageOptions: { newTableEnableStableRowIds: 'true' } },
];

async function writeDataset(db, { dataset, storageOptions })
{
	const fragment = (n) => rows.slice(n * ROWS_PER_FRAGMENT, (n + 1) * ROWS_PER_FRAGMENT);
	const table = await db.createTable(dataset, rowsTable(fragment(0)), { storageOptions });

	for (let n = 1; n < INDEXED_FRAGMENTS; n++)
		await table.add(rowsTable(fragment(n)));
	for (const column of BTREE_COLUMNS)
		await table.createIndex(column, { config: h.lancedb.Index.btree() });
	for (const column of BITMAP_COLUMNS)
		await table.createIndex(column, { config: h.lancedb.Index.bitmap() });
	for (let n = INDEXED_FRAGMENTS; n < INDEXED_FRAGMENTS + APPENDED_FRAGMENTS; n++)
		await table.add(rowsTable(fragment(n)));
	await table.delete(DELETE_PREDICATE);
	// updated rows leave their indexed fragment for a new one (with their row id, when stable)
	await table.update({ where: UPDATE_PREDICATE, valuesSql: { k: 'k + 1', c: 'c + 1', tag: "'tag99'" } });
	const indices = await table.listIndices();
	assert.equal(indices.length, BTREE_COLUMNS.length + BITMAP_COLUMNS.length);
	assert.ok(indices.every((i) => (BITMAP_COLUMNS.includes(i.columns[0]) ? 'Bitmap' : 'BTree') === i.indexType),
		JSON.stringify(indices));
	for (const index of indices)
		assert.ok((await table.indexStats(index.name)).numUnindexedRows > 0,
			'every index leaves the appended fragments unindexed');
	return table;
}

test.before(async () => {
	const db = await h.lancedb.connect(dir);

	for (const t of TABLES)
		t.table = await writeDataset(db, t);
	psqlLines(`DROP SCHEMA IF EXISTS sidx CASCADE;
DROP SERVER IF EXISTS sidx_server CASCADE;
CREATE SERVER sidx_server FOREIGN DATA WRAPPER lance_fdw;
CREATE SCHEMA sidx;
${TABLES.map((t) => `CREATE FOREIGN TABLE ${t.name} (id bigint, k int, s text, f double precision, c int, tag text)
SERVER sidx_server OPTIONS (uri ${literal(path.join(dir, t.dataset + '.lance'))});`).join('\n')}
SET lance_parts.fdw_scalar_index = off;
CREATE TABLE sidx.heap AS SELECT * FROM sidx.lance;
`);
	assert.equal(psqlLines('SELECT count(*) FROM sidx.heap;\n')[0], String(await TABLES[0].table.countRows()));
	assert.equal(psqlLines(`SELECT count(*) FROM (SELECT * FROM sidx.heap EXCEPT SELECT * FROM sidx.stable) d;
SELECT count(*) FROM sidx.stable;
`).join(' '), '0 ' + (await TABLES[1].table.countRows()), 'the stable dataset holds the same rows');
});

const pickRows = (n) => Array.from({ length: n }, () => rows[intBelow(NUM_ROWS)]);
const sqlFloat = (v) => (Object.is(v, -0) ? '-0.0' : String(v)) + '::float8';

// [column, WHERE] cases; the WHERE is SQL that PostgreSQL and lancedb read alike.
function makeCases()
{
	const cases = [];
	const someId = () => pickRows(1)[0].id + intBelow(3) - 1;	// sometimes absent
	const someK = () => intBelow(2100) - 1050;
	const someF = () => { const r = pickRows(1)[0]; return r.f === null ? 0.25 : r.f; };

	for (let i = 0; i < 12; i++)
	{
		const a = someId();
		const b = a + intBelow(300);

		cases.push(['id', `id = ${a}`], ['id', `id BETWEEN ${a} AND ${b}`],
			['id', `id > ${a} AND id <= ${b}`], ['id', `id >= ${b} AND id < ${b + 40}`]);
	}
	cases.push(['id', `id < ${-NUM_ROWS + 200}`], ['id', `id >= ${2 * NUM_ROWS - 200}`]);
	// the value first (commuted), and <> (no btree strategy: not an index bound)
	cases.push(['id', `${-NUM_ROWS + 300} > id`], ['id', `${2 * NUM_ROWS - 300} <= id AND id <> ${2 * NUM_ROWS - 1}`],
		['id', `${someId()} <> id AND id < ${-NUM_ROWS + 100}`], ['k', `k <> 3 AND k >= 990`]);
	for (const n of [1, 8, 40, 1000])
		cases.push(['id', `id IN (${pickRows(n).map((r) => r.id + (intBelow(5) === 0 ? 1 : 0)).join(', ')})`]);
	for (let i = 0; i < 8; i++)
	{
		const a = someK();

		cases.push(['k', `k = ${a}`], ['k', `k > ${a} AND k < ${a + 5}`],
			['k', `k IN (${[a, a + 1, someK(), someK()].join(', ')})`]);
	}
	cases.push(['k', 'k <= -995'], ['k', 'k > 995'], ['k', 'k > 5000']);
	for (let i = 0; i < 8; i++)
	{
		const r = pickRows(3);

		cases.push(['s', `s = '${r[0].s}'`], ['s', `s IN ('${r[1].s}', '${r[2].s}', 'nokey')`]);
	}
	for (let i = 0; i < 6; i++)
	{
		const a = someF();

		cases.push(['f', `f = ${sqlFloat(a)}`], ['f', `f BETWEEN ${sqlFloat(a)} AND ${sqlFloat(a + 3)}`],
			['f', `f < ${sqlFloat(a)} AND f > ${sqlFloat(a - 2)}`]);
	}
	cases.push(['f', 'f = 0.0::float8'], ['f', 'f < -999.0::float8']);
	for (let i = 0; i < 8; i++)
	{
		const a = intBelow(44) - 22;
		const t = () => `'tag${String(intBelow(27)).padStart(2, '0')}'`;

		cases.push(['c', `c = ${a}`], ['c', `c IN (${a}, ${a + 3}, ${intBelow(44) - 22})`],
			['c', `c > ${a} AND c <= ${a + 2}`], ['c', `c = ${a} AND k > 0`],
			['tag', `tag = ${t()}`], ['tag', `tag IN (${t()}, ${t()})`],
			['tag', `tag >= ${t()} AND tag < ${t()}`], ['tag', `tag = ${t()} AND id < 0`]);
	}
	cases.push(['c', 'c = -20'], ['c', 'c >= 19'], ['c', 'c < -100'], ['c', 'c <> 3 AND c BETWEEN 3 AND 4'],
		['tag', "tag = 'tag99'"], ['tag', "tag = 'nokey'"], ['tag', "tag > 'tag23'"]);
	// a mix: the index of one column, the other clause evaluated on its rows
	cases.push(['id', `id BETWEEN -5000 AND 5000 AND k > 100`]);
	return cases;
}

const cases = makeCases();
const SERIAL = 'SET max_parallel_workers_per_gather = 0;\n';
const PARALLEL = `SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0; SET max_parallel_workers_per_gather = 2;
SET lance_parts.fdw_unit_rows = 700; SET lance_parts.fdw_batch_rows = 64;
`;

// One line per case: '=' and the ids (sorted) the query returns, comma-separated.
function runAll(settings, tableName)
{
	const out = psqlLines(settings + cases.map(([, w]) =>
		`SELECT '=' || coalesce(string_agg(id::text, ',' ORDER BY id), '') FROM ${tableName} WHERE ${w};\n`).join(''));

	assert.equal(out.length, cases.length, 'one line per case');
	return out;
}

test('indexed scans return the heap rows and the unindexed scan rows, serial and parallel', () => {
	const heap = runAll('', 'sidx.heap');
	let nonEmpty = 0;

	for (const { name } of TABLES)
		for (const [mode, settings] of [['serial', SERIAL], ['parallel', PARALLEL]])
			for (const index of ['on', 'off'])
			{
				const got = runAll(settings + `SET lance_parts.fdw_scalar_index = ${index};\n`, name);

				for (let i = 0; i < cases.length; i++)
					assert.equal(got[i], heap[i], `${name}, ${mode}, index ${index}: WHERE ${cases[i][1]}`);
			}
	for (const line of heap)
		nonEmpty += line !== '=';
	assert.ok(nonEmpty > cases.length / 2, `most cases find rows (${nonEmpty} of ${cases.length})`);
});

test('parameters of a generic plan find the same rows', () => {
	const script = `SET plan_cache_mode = force_generic_plan;
PREPARE byid(bigint, bigint) AS SELECT '=' || coalesce(string_agg(id::text, ',' ORDER BY id), '') FROM sidx.lance WHERE id BETWEEN $1 AND $2;
PREPARE heapbyid(bigint, bigint) AS SELECT '=' || coalesce(string_agg(id::text, ',' ORDER BY id), '') FROM sidx.heap WHERE id BETWEEN $1 AND $2;
PREPARE byk(int[]) AS SELECT '=' || coalesce(string_agg(id::text, ',' ORDER BY id), '') FROM sidx.lance WHERE k = ANY($1);
PREPARE heapbyk(int[]) AS SELECT '=' || coalesce(string_agg(id::text, ',' ORDER BY id), '') FROM sidx.heap WHERE k = ANY($1);
`;
	const calls = [];

	for (let i = 0; i < 10; i++)
	{
		const a = pickRows(1)[0].id;

		calls.push([`EXECUTE byid(${a}, ${a + 100});\n`, `EXECUTE heapbyid(${a}, ${a + 100});\n`]);
		const ks = `'{${intBelow(2000) - 1000}, ${intBelow(2000) - 1000}, NULL}'`;
		calls.push([`EXECUTE byk(${ks});\n`, `EXECUTE heapbyk(${ks});\n`]);
	}
	const out = psqlLines(script + calls.map(([a, b]) => a + b).join(''));

	assert.equal(out.length, 2 * calls.length);
	for (let i = 0; i < calls.length; i++)
		assert.equal(out[2 * i], out[2 * i + 1], calls[i][0]);
});

test('EXPLAIN and EXPLAIN ANALYZE name the index only when it is used', () => {
	const explain = (settings, where) => psqlLines(settings +
		`EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT id FROM sidx.lance WHERE ${where};\n`);
	const target = pickRows(8).map((r) => r.id);
	const on = explain(SERIAL, `id IN (${target.join(', ')})`);
	const line = on.find((l) => l.includes('Lance Index:'));

	assert.ok(line, on.join('\n'));
	assert.match(line, /Lance Index: id_idx \(BTREE\), \d+ rows/);
	// the index found at most the 8 rows (fewer where deleted or appended after it)
	assert.ok(Number(/(\d+) rows/.exec(line)[1]) <= 8, line);
	// plain EXPLAIN looks the rows up too
	const plain = psqlLines(SERIAL + `EXPLAIN (COSTS OFF) SELECT id FROM sidx.lance WHERE id IN (${target.join(', ')});\n`);
	assert.equal(plain.find((l) => l.includes('Lance Index:')), line, plain.join('\n'));
	assert.ok(!explain(SERIAL + 'SET lance_parts.fdw_scalar_index = off;\n', `id IN (${target.join(', ')})`)
		.some((l) => l.includes('Lance Index')));
	// EXPLAIN EXECUTE of a generic plan looks its parameters' rows up; EXPLAIN (GENERIC_PLAN)
	// (PostgreSQL 16 on) has no values to look up
	const executed = psqlLines(`SET plan_cache_mode = force_generic_plan;
PREPARE q(bigint) AS SELECT id FROM sidx.lance WHERE id = $1;
EXPLAIN (COSTS OFF) EXECUTE q(${target[0]});
`);
	assert.match(executed.join('\n'), /Lance Index: id_idx \(BTREE\), [01] rows/);
	if (Number(psqlLines('SHOW server_version_num;\n')[0]) >= 160000)
		assert.ok(!psqlLines('EXPLAIN (GENERIC_PLAN, COSTS OFF) SELECT id FROM sidx.lance WHERE id = $1;\n')
			.some((l) => l.includes('Lance Index')));
	// a clause an index does not answer (no index on k + id) leaves the scan as it was
	assert.ok(!explain(SERIAL, 'k + 0 = 5').some((l) => l.includes('Lance Index')));
	// fewer pages decoded with the index than without (ids of the first fragment: the other
	// indexed fragments are not read at all)
	const pages = (lines) => Number(/Lance Pages Decoded: (\d+)/.exec(lines.join('\n'))[1]);
	const first = `id IN (${rows.slice(0, 8).map((r) => r.id).join(', ')})`;
	assert.ok(pages(explain(SERIAL, first)) < pages(explain(SERIAL + 'SET lance_parts.fdw_scalar_index = off;\n',
		first)), 'the index reads fewer pages');
});

test('EXPLAIN names BITMAP indexes, and the indexes of the dataset with stable row ids', () => {
	const indexLine = (table, where) => psqlLines(SERIAL + `EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT id FROM ${table} WHERE ${where};\n`)
		.find((l) => l.includes('Lance Index:'));
	const found = (line) => Number(/(\d+) rows\s*$/.exec(line)[1]);
	const covered = (table, where) => Number(psqlLines(`SELECT count(*) FROM ${table} WHERE ${where};\n`)[0]);

	for (const { name } of TABLES)
	{
		const c = indexLine(name, 'c = 7');
		const tag = indexLine(name, "tag IN ('tag03', 'tag11')");
		const id = indexLine(name, `id IN (${rows.slice(0, 8).map((r) => r.id).join(', ')})`);

		assert.match(c || '', /Lance Index: c_idx \(BITMAP\), \d+ rows/, name);
		assert.match(tag || '', /Lance Index: tag_idx \(BITMAP\), \d+ rows/, name);
		assert.match(id || '', /Lance Index: id_idx \(BTREE\), \d+ rows/, name);
		// the index finds the live rows of the fragments it covers: not more than the scan returns
		assert.ok(found(c) > 0 && found(c) <= covered(name, 'c = 7'), `${name}: ${c}`);
		assert.ok(found(id) > 0 && found(id) <= 8, `${name}: ${id}`);
	}
	// a BITMAP index whose keys meet more than an eighth of the rows is left unused
	assert.equal(indexLine('sidx.lance', 'c > -20'), undefined);
});

test('lancedb reads the same rows with the same filter', async () => {
	for (const { name, table } of TABLES)
	{
		const fdw = runAll(SERIAL, name);

		for (let i = 0; i < cases.length; i++)
		{
			const where = cases[i][1].replace(/::float8/g, '');
			const read = await table.query().where(where).select(['id']).toArray();
			const got = '=' + read.map((r) => BigInt(r.id)).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)).join(',');

			assert.equal(fdw[i], got, `lancedb, ${name}: WHERE ${where}`);
		}
	}
});
