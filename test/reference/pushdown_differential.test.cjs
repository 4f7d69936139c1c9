'use strict';
// A randomized differential of lance_fdw's filter pushdown: thousands of random WHERE
// predicates (fixed seed) over every type the scan evaluates, each run against a heap table
// (the truth) and against a Lance dataset of the same rows with pushdown on and off, serially
// and with parallel workers forced; every run must return the same set of ids.
//
// The rows: int2/4/8 with their bounds, float4/8 with NaN, ±Infinity and -0, bool, date,
// timestamp and timestamptz with extreme values, text (read under C, POSIX, an ICU and a
// nondeterministic ICU collation) and bytea, NULLs in every column, over several fragments
// with deleted rows, with BTREE indexes (int4, int8, float4, float8) and BITMAP indexes (int2,
// text) lancedb built over the first rows and fragments appended after them (the scans use
// the indexes for pushed =, IN and range clauses); on a dataset keyed on row addresses and on
// one lancedb created with stable row ids.  The predicates: comparisons either way round, BETWEEN [SYMMETRIC],
// IN / NOT IN lists (long ones looked up by hash), op ANY / op ALL with same-type and cross-type arrays (NULL elements,
// empty and NULL arrays), IS [NOT] DISTINCT FROM, IS [NOT] NULL, IS [NOT] TRUE / FALSE /
// UNKNOWN, trees of AND / OR / NOT, with cross-type literals (int4 against int8, date against
// timestamptz, ...), under several TimeZone settings; and comparisons and ANY / ALL against
// parameters of prepared statements run through their generic plans.  EXPLAIN shows that
// most of them push clauses into the scan, and many find their rows through an index
// ("Lance Index", BTREE and BITMAP), so the comparison cannot pass because nothing was pushed or indexed.  On a mismatch the test prints each predicate, its time zone and the ids of every run.
// A sample of predicates on the integer and text columns that lancedb reads alike is compared
// with lancedb's query with the same filter, on both datasets.
// Then DELETE through lance_fdw against DELETE from the heap table with the same random
// predicates, round after round (the end of the file).
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const h = require('./harness.cjs');
const { prng } = require('./prng.cjs');
const { psqlLines } = require('./pg.cjs');

const SEED = 20230023;
const NUM_ROWS = 400;
const ROWS_PER_FRAGMENT = 45;
const NUM_PREDICATES = 3000;
const NUM_PARAMETER_PREDICATES = 400;
const CHUNK = 100;				// predicates per query (a UNION ALL of one scan each)
const TIME_ZONES = ['UTC', 'America/Los_Angeles', 'Asia/Kathmandu', 'Pacific/Kiritimati'];

const random = prng(SEED);
const chance = (p) => random() < p;
const intBelow = (n) => Math.floor(random() * n);
const pick = (items) => items[intBelow(items.length)];

function randomBigInt(bits)
{
	let value = 0n;

	for (let i = 0; i < bits; i += 16)
		value = (value << 16n) | BigInt(intBelow(65536));
	value &= (1n << BigInt(bits)) - 1n;
	return value - (1n << BigInt(bits - 1));
}

function pad(n, width)
{
	return String(n).padStart(width, '0');
}

// Values of each literal type, as SQL text (quoted where needed, without a cast).  `edge`
// values are type bounds and special values; `safe` ones may be cast to the other types of
// their family (a mixed IN list casts every element to a common type).
const SMALL_INTS = ['-2', '-1', '0', '1', '2', '3', '100'];
const POOLS = {
	int2: {
		edge: ['-32768', '-32767', '32766', '32767', ...SMALL_INTS],
		random: () => String(intBelow(65536) - 32768),
	},
	int4: {
		edge: ['-2147483648', '-2147483647', '-32769', '-32768', '32767', '32768', '65535', '65536',
			'2147483647', ...SMALL_INTS],
		random: () => String(randomBigInt(32)),
	},
	int8: {
		edge: ['-9223372036854775808', '-9223372036854775807', '-4294967296', '-4294967295',
			'-2147483649', '-2147483648', '2147483647', '2147483648', '4294967295', '4294967296',
			'4294967297', '9223372036854775806', '9223372036854775807', ...SMALL_INTS],
		random: () => String(randomBigInt(pick([16, 32, 40, 64]))),
	},
	float4: {
		edge: ["'NaN'", "'Infinity'", "'-Infinity'", "'-0'", '0', '0.1', '1.5', '-1.5', '1', '-1',
			'16777216', '16777217', '3.4028235e38', '-3.4028235e38', '1e-45', '1.17549435e-38'],
		random: () => (random() * 2000 - 1000).toPrecision(pick([2, 4, 7])),
	},
	float8: {
		edge: ["'NaN'", "'Infinity'", "'-Infinity'", "'-0'", '0', '0.1', '0.10000000149011612', '1.5',
			'-1.5', '1', '-1', '16777217', '2147483647', '9223372036854775807',
			'1.7976931348623157e308', '-1.7976931348623157e308', '5e-324', '3.4028235677973366e38'],
		random: () => (random() * 2000 - 1000).toPrecision(pick([2, 7, 15, 17])),
	},
	bool: {
		edge: ['true', 'false'],
		random: () => pick(['true', 'false']),
	},
	date: {
		edge: ["'4713-01-01 BC'", "'0001-01-01'", "'1999-12-31'", "'2000-01-01'", "'2019-12-31'",
			"'2020-01-01'", "'2020-01-02'", "'2038-01-19'", "'9999-12-31'", "'5874897-12-31'"],
		literalOnly: ["'infinity'", "'-infinity'"],
		random: () => `'${new Date(Date.UTC(2019, 11, 25) + intBelow(15) * 86400000).toISOString().slice(0, 10)}'`,
	},
	timestamp: {
		edge: ["'4713-01-01 00:00 BC'", "'1999-12-31 23:59:59.999999'", "'2019-12-31 10:15'",
			"'2019-12-31 14:00'", "'2019-12-31 16:00'", "'2019-12-31 18:15'", "'2020-01-01 00:00'",
			"'2020-01-01 00:00:00.000001'", "'2020-01-01 05:45'", "'2020-01-01 08:00'",
			"'2020-01-01 14:00'", "'2020-01-02 00:00'", "'294247-01-10 04:00:54.775806'"],
		literalOnly: ["'infinity'", "'-infinity'"],
		random: () => randomInstant(''),
	},
	timestamptz: {
		edge: ["'4713-11-24 00:00:00+00 BC'", "'1999-12-31 23:59:59.999999+00'", "'2020-01-01 00:00+00'",
			"'2020-01-01 00:00-08'", "'2020-01-01 00:00+05:45'", "'2020-01-01 00:00+14'",
			"'2019-12-31 10:00+00'", "'2019-12-31 16:00+00'", "'2019-12-31 18:15+00'",
			"'2020-01-01 08:00+00'", "'2020-01-02 00:00+00'", "'294247-01-10 04:00:54.775806+00'"],
		literalOnly: ["'infinity'", "'-infinity'", "'2020-01-01 00:00'", "'2020-01-01'", "'2019-12-31 16:00'"],
		random: () => randomInstant(pick(['+00', '-08', '+05:45', '+14'])),
	},
	text: {
		edge: ["''", "'a'", "'A'", "'b'", "'B'", "'ab'", "'aB'", "'Ab'", "'AB'", "'e'", "'E'", "'é'",
			"'É'", "'é'", "'z'", "'Z'", "' a'", "'a '", "'ä'", "'ß'", "'ss'", "'0'", "'10'", "'9'"],
		random: () => "'" + Array.from({ length: 1 + intBelow(3) },
			() => pick(['a', 'A', 'b', 'B', 'é', 'E', 'z', ' ', '1'])).join('') + "'",
	},
	bytea: {
		edge: ["'\\x'", "'\\x00'", "'\\x0000'", "'\\x01'", "'\\x61'", "'\\x7f'", "'\\x80'", "'\\xff'",
			"'\\x00ff'", "'\\xff00'", "'\\x6162'"],
		random: () => "'\\x" + Array.from({ length: intBelow(3) },
			() => pad(intBelow(256).toString(16), 2)).join('') + "'",
	},
};
// An instant near 2020-01-01 as a timestamp(tz) literal with the given offset.
function randomInstant(offset)
{
	const minutes = intBelow(4 * 24 * 4) * 15;
	const base = Date.UTC(2019, 11, 30) + minutes * 60000;
	const text = new Date(base).toISOString().slice(0, 16).replace('T', ' ');
	const micros = chance(0.1) ? '.' + pad(intBelow(1000000), 6) : '';

	return `'${text}${micros}${offset}'`;
}

// The Lance dataset's columns and their types; text is read four times, under four collations.
const COLUMNS = {
	i2: 'int2', i4: 'int4', i8: 'int8', f4: 'float4', f8: 'float8', bo: 'bool', d: 'date',
	ts: 'timestamp', tstz: 'timestamptz', t_c: 'text', t_posix: 'text', t_icu: 'text', t_nd: 'text',
	by: 'bytea',
};
const TEXT_COLLATIONS = { t_c: '"C"', t_posix: '"POSIX"', t_icu: '"en-x-icu"', t_nd: 'pd.nd' };
const COLLATIONS = Object.values(TEXT_COLLATIONS);

// The literal types a column is compared with: its own most of the time, else one of its
// family's (cross-type operators) or one PostgreSQL casts to the column's type.
const FAMILY = {
	int2: ['int2', 'int4', 'int8'],
	int4: ['int2', 'int4', 'int8'],
	int8: ['int2', 'int4', 'int8'],
	float4: ['float4', 'float8'],
	float8: ['float4', 'float8'],
	bool: ['bool'],
	date: ['date', 'timestamp', 'timestamptz'],
	timestamp: ['date', 'timestamp', 'timestamptz'],
	timestamptz: ['date', 'timestamp', 'timestamptz'],
	text: ['text'],
	bytea: ['bytea'],
};
const FOREIGN_TYPES = { int2: ['float8', 'numeric'], int4: ['float8', 'numeric'],
	int8: ['numeric'], float4: ['int4', 'int8', 'numeric'], float8: ['int4', 'numeric'] };

function literalType(columnType)
{
	if (chance(0.5))
		return columnType;
	if (FOREIGN_TYPES[columnType] && chance(0.1))
		return pick(FOREIGN_TYPES[columnType]);
	return pick(FAMILY[columnType]);
}

// A value of type that every other type of its family holds (for mixed lists).
function safeValue(type)
{
	switch (type)
	{
		case 'int2': case 'int4': case 'int8': return pick(SMALL_INTS.concat(['32767', '-32768']));
		case 'date': return POOLS.date.random();
		case 'timestamp': return randomInstant('');
		case 'timestamptz': return randomInstant(pick(['+00', '-08', '+05:45']));
		default: return value(type);
	}
}

// A value of a literal type.
function value(type)
{
	const pool = POOLS[type];

	if (type === 'numeric')
		return pick(['0', '-1', '1.5', '-0.5', '32767.5', '2147483647.5', '9223372036854775807.5', '1e30']);
	if (pool.literalOnly && chance(0.1))
		return pick(pool.literalOnly);
	return chance(0.6) ? pick(pool.edge) : pool.random();
}

function literal(type, text)
{
	return `(${text})::${type}`;
}

function textCollate()
{
	return chance(0.25) ? ' COLLATE ' + pick(COLLATIONS) : '';
}

// One comparable literal for a column, of the same type or a cross type.
function comparand(columnType)
{
	const type = literalType(columnType);
	const text = chance(0.04) ? 'NULL' : value(type);

	return columnType === 'text' ? `(${literal(type, text)}${textCollate()})` : literal(type, text);
}

const OPERATORS = ['=', '<>', '<', '<=', '>', '>='];

// An array of one literal type: empty, NULL, or elements among which NULLs.
function arrayOf(type)
{
	const r = random();

	if (r < 0.06)
		return `'{}'::${type}[]`;
	if (r < 0.09)
		return `NULL::${type}[]`;
	const elements = Array.from({ length: 1 + intBelow(r < 0.5 ? 3 : 12) },
		() => (chance(0.08) ? 'NULL' : value(type)));
	return `ARRAY[${elements.join(', ')}]::${type}[]`;
}

// An IN list: one type, or mixed types of the family.  PostgreSQL casts the elements to the
// common type of the list and the column, so dates and times of another type than the
// column's are taken among those every type of the family holds.
function inList(columnType)
{
	const mixed = FAMILY[columnType].length > 1 && chance(0.3);
	const single = literalType(columnType);
	const datetime = FAMILY[columnType].includes('date');
	// long lists too: from 9 elements on the scan looks them up by hash, as PostgreSQL does
	const elements = Array.from({ length: chance(0.35) ? 9 + intBelow(24) : 1 + intBelow(6) }, () => {
		const type = mixed ? pick(FAMILY[columnType]) : single;

		if (chance(0.07))
			return 'NULL';
		return literal(type, mixed || (datetime && type !== columnType) ? safeValue(type) : value(type));
	});

	// one explicit collation at most: two different ones in a list are an error
	if (columnType === 'text')
		elements[0] += textCollate();
	return elements.join(', ');
}

// One test of one column; kind names the category counted for EXPLAIN.
function atom()
{
	const column = pick(Object.keys(COLUMNS));
	const type = COLUMNS[column];
	const r = random();

	if (type === 'bool' && r < 0.3)
		return { kind: 'booltest', sql: pick([column, `NOT ${column}`, `${column} IS TRUE`,
			`${column} IS NOT TRUE`, `${column} IS FALSE`, `${column} IS NOT FALSE`,
			`${column} IS UNKNOWN`, `${column} IS NOT UNKNOWN`]) };
	if (r < 0.22)
	{
		const op = pick(OPERATORS);
		return { kind: 'compare', sql: chance(0.7) ? `${column} ${op} ${comparand(type)}`
			: `${comparand(type)} ${op} ${column}` };
	}
	if (r < 0.30)
		return { kind: 'between', sql: `${column} ${chance(0.2) ? 'NOT ' : ''}BETWEEN ${chance(0.3) ?
			'SYMMETRIC ' : ''}${comparand(type)} AND ${comparand(type)}` };
	if (r < 0.48)
		return { kind: 'in', sql: `${column} ${chance(0.35) ? 'NOT ' : ''}IN (${inList(type)})` };
	if (r < 0.82)
		return { kind: 'anyall', sql: `${column} ${pick(OPERATORS)} ${chance(0.5) ? 'ANY' : 'ALL'} ` +
			`(${arrayOf(literalType(type))}${type === 'text' ? textCollate() : ''})` };
	if (r < 0.92)
		return { kind: 'distinct', sql: `${column} IS ${chance(0.5) ? 'NOT ' : ''}DISTINCT FROM ` +
			comparand(type) };
	return { kind: 'null', sql: `${column} IS ${chance(0.5) ? 'NOT ' : ''}NULL` };
}

// A predicate: an atom, or AND / OR / NOT of smaller predicates (top-level ANDs become
// separate clauses, some pushed and some not).
function predicate(depth)
{
	if (depth >= 2 || chance(0.55))
		return atom();
	const r = random();
	if (r < 0.15)
	{
		const inner = predicate(depth + 1);
		return { kind: 'tree', sql: `NOT (${inner.sql})` };
	}
	const parts = Array.from({ length: 2 + intBelow(2) }, () => predicate(depth + 1));
	return { kind: 'tree', sql: parts.map((p) => `(${p.sql})`).join(r < 0.6 ? ' AND ' : ' OR ') };
}

// A test of a column against a parameter of a prepared statement (its generic plan), as
// { kind, sql with $? for the parameter, its type, the argument }.
function parameterAtom()
{
	const column = pick(Object.keys(COLUMNS).filter((c) => COLUMNS[c] !== 'bool' || chance(0.5)));
	const type = COLUMNS[column];
	const parameterType = literalType(type);
	const op = pick(OPERATORS);

	if (chance(0.4))
		return { kind: 'parameter', sql: chance(0.7) ? `${column} ${op} $?` : `$? ${op} ${column}`,
			type: parameterType, argument: literal(parameterType, chance(0.04) ? 'NULL' : value(parameterType)) };
	return { kind: 'parameter', sql: `${column} ${op} ${chance(0.5) ? 'ANY' : 'ALL'} ($?)`,
		type: parameterType + '[]', argument: arrayOf(parameterType) };
}

// The reproducers of issue 23 (cross-type arrays, ALL), checked in every time zone.
const ISSUE_PREDICATES = [
	'i8 = ANY (ARRAY[-1])', 'i8 = ANY (ARRAY[0])', 'i2 < ANY (ARRAY[32767])', 'bo >= ALL (ARRAY[true])',
	'i8 >= ALL (ARRAY[1, 1])', "d = ANY (ARRAY['2020-01-01'::timestamptz])",
	"d IN (date '2020-01-01', timestamp '2020-01-01 00:00')", "tstz NOT IN (date '2020-01-01', date '2020-01-02')",
	'i4 <> ALL (ARRAY[NULL, 1])', "i8 > ALL ('{}'::int4[])", 'f4 = ANY (ARRAY[0.1::float8])',
];

// ---- the rows ---------------------------------------------------------------------------

function rowValue(type)
{
	if (chance(0.12))
		return 'NULL';
	if (type === 'bool')
		return pick(['true', 'false']);
	const pool = POOLS[type];
	return literal(type, chance(0.5) ? pick(pool.edge) : pool.random());
}

function rowsSql()
{
	const rows = [];

	for (let id = 1; id <= NUM_ROWS; id++)
	{
		const text = rowValue('text');
		const values = [String(id)];

		for (const [column, type] of Object.entries(COLUMNS))
		{
			if (type !== 'text')
				values.push(rowValue(type));
			else if (column === 't_c')
				values.push(text);
		}
		rows.push('(' + values.join(', ') + ')');
	}
	return rows.join(',\n');
}

const SERIAL = 'SET max_parallel_workers_per_gather = 0;\n';
const PARALLEL = `SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0; SET max_parallel_workers_per_gather = 2;
SET parallel_leader_participation = off;
`;

// The modes each predicate runs in: the heap table (the truth), then the Lance table.
const MODES = [
	{ name: 'heap', table: 'pd.heap', settings: SERIAL },
	{ name: 'pushdown on, serial', table: 'pd.lance', settings: SERIAL + 'SET lance_parts.fdw_pushdown = on;\n' },
	{ name: 'pushdown off, serial', table: 'pd.lance', settings: SERIAL + 'SET lance_parts.fdw_pushdown = off;\n' },
	{ name: 'pushdown on, parallel', table: 'pd.lance', settings: PARALLEL + 'SET lance_parts.fdw_pushdown = on;\n' },
	{ name: 'pushdown off, parallel', table: 'pd.lance', settings: PARALLEL + 'SET lance_parts.fdw_pushdown = off;\n' },
	{ name: 'stable row ids, serial', table: 'pd.stable', settings: SERIAL + 'SET lance_parts.fdw_pushdown = on;\n' },
	{ name: 'stable row ids, parallel', table: 'pd.stable', settings: PARALLEL + 'SET lance_parts.fdw_pushdown = on;\n' },
];

// One query for a chunk of predicates: a UNION ALL of one scan per predicate, grouped by
// predicate, so that a parallel plan starts its workers once for the chunk (a Gather over a
// Parallel Append of the scans).  A predicate no row satisfies has no group.
function chunkQuery(table, chunk)
{
	return 'SELECT k, array_agg(id ORDER BY id)::text FROM (' +
		chunk.map((p) => `SELECT ${p.index} AS k, id FROM ${table} WHERE ${p.sql}`).join('\nUNION ALL\n') +
		') u GROUP BY k';
}

// A chunk of predicates with parameters as a prepared statement (its parameters numbered
// across the chunk), run with their arguments through its generic plan, then deallocated.
function preparedChunk(table, chunk, command = 'EXECUTE')
{
	const query = chunkQuery(table, chunk.map((p, i) => ({ ...p, sql: p.sql.replace('$?', '$' + (i + 1)) })));

	return `PREPARE chunk (${chunk.map((p) => p.type).join(', ')}) AS ${query};
${command} chunk (${chunk.map((p) => p.argument).join(', ')});
DEALLOCATE chunk;
`;
}

// Every predicate's ids in one mode: index -> '{1,2,...}'.
function runMode(mode, predicates)
{
	let script = mode.settings + `SET lance_parts.fdw_batch_rows = 16; SET lance_parts.fdw_unit_rows = 20;
SET plan_cache_mode = force_generic_plan;
`;

	for (const zone of TIME_ZONES)
	{
		const mine = predicates.filter((p) => p.zone === zone && p.argument === undefined);
		const prepared = predicates.filter((p) => p.zone === zone && p.argument !== undefined);

		script += `SET TimeZone = '${zone}';\n`;
		for (let i = 0; i < mine.length; i += CHUNK)
			script += chunkQuery(mode.table, mine.slice(i, i + CHUNK)) + ';\n';
		for (let i = 0; i < prepared.length; i += CHUNK)
			script += preparedChunk(mode.table, prepared.slice(i, i + CHUNK));
	}
	const result = new Map(predicates.map((p) => [p.index, '{}']));
	for (const line of psqlLines(script))
	{
		const bar = line.indexOf('|');
		result.set(Number(line.slice(0, bar)), line.slice(bar + 1));
	}
	assert.equal(result.size, predicates.length, `${mode.name}: one result per predicate`);
	return result;
}

const PLAN_END = '-- end of plan --';

function planNodes(plan)
{
	return [plan, ...(plan.Plans || []).flatMap(planNodes)];
}

// The indexes lancedb builds, which scans with pushed clauses use (fdw_scalar_index.test.cjs):
// BTREE on some columns, BITMAP on others (lancedb builds BITMAP indexes on integers and
// strings, not floats).
const BTREE_COLUMNS = ['i4', 'i8', 'f4', 'f8'];
const BITMAP_COLUMNS = ['i2', 't'];
// Rows written before the indexes; the others are appended after them (fragments no index covers).
const INDEXED_ROWS = 300;

function writeRows(dataset, where, mode)
{
	psqlLines(`SET TimeZone = 'UTC';
SELECT * FROM lance_parts.write_dataset('${dataset}', 'SELECT * FROM pd.source WHERE ${where} ORDER BY id',
    mode => '${mode}', max_rows_per_file => ${ROWS_PER_FRAGMENT});
`);
}

async function createIndexes(dataset)
{
	const table = await h.openTable(dataset);

	for (const column of BTREE_COLUMNS)
		await table.createIndex(column, { config: h.lancedb.Index.btree() });
	for (const column of BITMAP_COLUMNS)
		await table.createIndex(column, { config: h.lancedb.Index.bitmap() });
	assert.equal((await table.listIndices()).length, BTREE_COLUMNS.length + BITMAP_COLUMNS.length);
	return table;
}

function foreignTableSql(name, dataset)
{
	const textColumns = Object.entries(TEXT_COLLATIONS);
	const otherColumns = Object.entries(COLUMNS).filter(([, type]) => type !== 'text');

	return `CREATE FOREIGN TABLE ${name} (id int, ${otherColumns.map(([c, t]) => `${c} ${t}`).join(', ')},
    ${textColumns.map(([c, coll]) => `${c} text OPTIONS (column_name 't') COLLATE ${coll}`).join(', ')})
    SERVER pd_server OPTIONS (uri '${dataset}');
`;
}

// pd.source and pd.heap with the rows, the Lance dataset of them (fragments of
// ROWS_PER_FRAGMENT rows; the first INDEXED_ROWS rows written, indexed by lancedb, the others
// appended; lancedb's deletion files in every fragment) and pd.lance over it.  With stable,
// also a dataset of the same rows that lancedb created with stable row ids (its indexes hold
// row ids), written and indexed the same way, and pd.stable over it.
async function createTables(dataset, rows, stable)
{
	const textColumns = Object.entries(TEXT_COLLATIONS);
	const otherColumns = Object.entries(COLUMNS).filter(([, type]) => type !== 'text');
	const datasets = stable ? [dataset, stable] : [dataset];
	const tables = [];

	psqlLines(`DROP SCHEMA IF EXISTS pd CASCADE;
DROP SERVER IF EXISTS pd_server CASCADE;
CREATE SCHEMA pd;
CREATE COLLATION pd.nd (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
CREATE TABLE pd.source (id int, ${otherColumns.map(([c, t]) => `${c} ${t}`).join(', ')}, t text);
SET TimeZone = 'UTC';
INSERT INTO pd.source (id, ${Object.entries(COLUMNS).filter(([c, t]) => t !== 'text' || c === 't_c')
		.map(([c, t]) => (t === 'text' ? 't' : c)).join(', ')}) VALUES
${rows};
CREATE TABLE pd.heap (id int, ${otherColumns.map(([c, t]) => `${c} ${t}`).join(', ')},
    ${textColumns.map(([c, coll]) => `${c} text COLLATE ${coll}`).join(', ')});
INSERT INTO pd.heap SELECT id, ${otherColumns.map(([c]) => c).join(', ')},
    ${textColumns.map(() => 't').join(', ')} FROM pd.source;
CREATE SERVER pd_server FOREIGN DATA WRAPPER lance_fdw;
`);
	writeRows(dataset, `id <= ${INDEXED_ROWS}`, 'create');
	if (stable)
	{
		// lancedb creates it empty with the schema lance_parts wrote, lance_parts appends the rows
		const db = await h.lancedb.connect(path.dirname(stable));
		const schema = await (await h.openTable(dataset)).schema();

		await db.createEmptyTable(path.basename(stable, '.lance'), schema,
			{ storageOptions: { newTableEnableStableRowIds: 'true' } });
		writeRows(stable, `id <= ${INDEXED_ROWS}`, 'append');
	}
	for (const d of datasets)
		tables.push(await createIndexes(d));
	for (const d of datasets)
		writeRows(d, `id > ${INDEXED_ROWS}`, 'append');
	// deleted rows in every fragment, through lancedb's deletion files (on the version with the appends)
	for (const table of tables)
	{
		await table.checkoutLatest();
		await table.delete('id % 13 = 5');
	}
	psqlLines(foreignTableSql('pd.lance', dataset) + (stable ? foreignTableSql('pd.stable', stable) : '') +
		'DELETE FROM pd.heap WHERE id % 13 = 5;\n');
	return tables;
}

// ---- a sample against lancedb -------------------------------------------------------------

// Predicates both PostgreSQL and lancedb (DataFusion) read alike, on the integer columns and
// the text column (bytewise: t_c in PostgreSQL): { pg, lance } SQL.  Floats are left out
// (DataFusion orders -0 before 0), and so are int8 values beyond +-2^62 (DataFusion reads
// -9223372036854775808 as an overflowing negation), and NOT over AND / OR (lancedb 0.39
// returns the rows whose column is NULL for NOT (i2 IN (...) AND i2 IN (...)) on the BITMAP
// indexed column, which SQL leaves out).
const LANCEDB_COLUMNS = { i2: 'int2', i4: 'int4', i8: 'int8', t: 'text' };

function lancedbValue(type)
{
	if (type === 'int8')
		return chance(0.5) ? pick(SMALL_INTS.concat(['2147483647', '2147483648', '-4294967296', '4294967297']))
			: String(randomBigInt(pick([16, 32, 40])));
	return type === 'text' ? value('text') : value(type);
}

function lancedbAtom()
{
	const column = pick(Object.keys(LANCEDB_COLUMNS));
	const type = LANCEDB_COLUMNS[column];
	const pgColumn = column === 't' ? 't_c' : column;
	const v = () => lancedbValue(type);
	const r = random();
	let sql;

	if (r < 0.35)
	{
		const [op, a] = [pick(OPERATORS), v()];
		sql = (c) => `${c} ${op} ${a}`;
	}
	else if (r < 0.5)
	{
		const [a, b] = [v(), v()];
		sql = (c) => `${c} BETWEEN ${a} AND ${b}`;
	}
	else if (r < 0.85)
	{
		const list = Array.from({ length: 1 + intBelow(chance(0.3) ? 20 : 5) }, () => (chance(0.05) ? 'NULL' : v()));
		const not = chance(0.2) ? 'NOT ' : '';
		sql = (c) => `${c} ${not}IN (${list.join(', ')})`;
	}
	else
	{
		const not = chance(0.5) ? 'NOT ' : '';
		sql = (c) => `${c} IS ${not}NULL`;
	}
	return { pg: sql(pgColumn), lance: sql(column) };
}

function lancedbPredicate(depth)
{
	if (depth >= 2 || chance(0.5))
		return lancedbAtom();
	const parts = Array.from({ length: 2 + intBelow(2) }, () => lancedbPredicate(depth + 1));
	const op = chance(0.6) ? ' AND ' : ' OR ';
	return { pg: parts.map((p) => `(${p.pg})`).join(op), lance: parts.map((p) => `(${p.lance})`).join(op) };
}

const NUM_LANCEDB_PREDICATES = 150;

test('pushed filters return the rows PostgreSQL returns, for random predicates', async (t) => {
	const dir = h.scratchDir('pushdown-differential');
	const dataset = path.join(dir, 'rows.lance');
	const stable = path.join(dir, 'stable.lance');
	const rows = rowsSql();
	const predicates = TIME_ZONES.flatMap((zone) => ISSUE_PREDICATES.map((sql) => ({ zone, kind: 'issue', sql })))
		.concat(Array.from({ length: NUM_PREDICATES }, () => ({ zone: pick(TIME_ZONES), ...predicate(0) })))
		.concat(Array.from({ length: NUM_PARAMETER_PREDICATES }, () => ({ zone: pick(TIME_ZONES), ...parameterAtom() })))
		.map((p, index) => ({ index, ...p }));
	const plain = predicates.filter((p) => p.argument === undefined);

	await createTables(dataset, rows, stable);
	// the Lance table holds exactly the heap's rows
	const [same] = psqlLines(`SET lance_parts.fdw_pushdown = off;
SELECT (SELECT array_agg(h::text ORDER BY id) FROM pd.heap h) = (SELECT array_agg(l::text ORDER BY id) FROM pd.lance l),
       (SELECT count(*) FROM pd.lance), (SELECT count(*) FROM pg_ls_dir('${dataset}/data') f WHERE f LIKE '%.lance')
`);
	assert.match(same, /^t\|\d+\|\d+$/, 'the Lance table reads the heap table\'s rows: ' + same);
	const [, live, fragments] = same.split('|').map(Number);
	assert.equal(live, NUM_ROWS - Math.floor((NUM_ROWS + 7) / 13), 'live rows');
	assert.ok(fragments >= 8, 'the dataset has several fragments: ' + fragments);

	// the scan evaluates clauses of most predicates: count the predicates whose plan pushes one
	const plans = psqlLines('SET lance_parts.fdw_pushdown = on;\n' + plain.map((p) => `SET TimeZone = '${p.zone}';
EXPLAIN (VERBOSE, COSTS OFF, FORMAT JSON) SELECT id FROM pd.lance WHERE ${p.sql};
\\echo ${PLAN_END}
`).join('')).join('\n').split(PLAN_END).slice(0, -1).map((text) => JSON.parse(text));
	assert.equal(plans.length, plain.length, 'one plan per predicate');
	const pushedByKind = {};
	plans.forEach((plan, i) => {
		const scan = planNodes(plan[0].Plan).find((n) => n['Node Type'] === 'Foreign Scan');
		const kind = plain[i].kind;
		plain[i].pushed = scan !== undefined && scan['Lance Filter'] !== undefined;
		pushedByKind[kind] = pushedByKind[kind] || { pushed: 0, all: 0 };
		pushedByKind[kind].all++;
		pushedByKind[kind].pushed += plain[i].pushed ? 1 : 0;
	});
	const pushed = plain.filter((p) => p.pushed).length;
	// and many of them find their rows through a BTREE or a BITMAP index
	const indexLines = (someplans) => someplans.map((plan) => planNodes(plan[0].Plan)
		.filter((n) => n['Node Type'] === 'Foreign Scan' && n['Lance Index'] !== undefined)
		.map((n) => n['Lance Index']).join(' ')).filter((line) => line !== '');
	const indexed = indexLines(plans);
	const bitmaps = indexed.filter((line) => line.includes('(BITMAP)')).length;
	t.diagnostic(`pushed: ${JSON.stringify(pushedByKind)}, through an index: ${indexed.length} (BITMAP: ${bitmaps})`);
	assert.ok(indexed.length > plain.length / 10, `${indexed.length} of ${plain.length} predicates use an index`);
	assert.ok(bitmaps > plain.length / 40, `${bitmaps} of ${plain.length} predicates use a BITMAP index`);
	// so do those of the dataset with stable row ids
	const sample = plain.slice(0, 300);
	const stablePlans = psqlLines('SET lance_parts.fdw_pushdown = on;\n' + sample.map((p) => `SET TimeZone = '${p.zone}';
EXPLAIN (VERBOSE, COSTS OFF, FORMAT JSON) SELECT id FROM pd.stable WHERE ${p.sql};
\\echo ${PLAN_END}
`).join('')).join('\n').split(PLAN_END).slice(0, -1).map((text) => JSON.parse(text));
	const stableIndexed = indexLines(stablePlans);
	assert.ok(stableIndexed.length > sample.length / 10 && stableIndexed.some((l) => l.includes('(BITMAP)')),
		`${stableIndexed.length} of ${sample.length} predicates use an index of the dataset with stable row ids`);
	assert.ok(pushed > plain.length / 2, `${pushed} of ${plain.length} predicates push a clause`);
	assert.equal(pushedByKind.issue.pushed, pushedByKind.issue.all, 'the reproducers of issue 23 push their clause');
	// IS [NOT] DISTINCT FROM is not pushed (nor OR, NOT BETWEEN, BETWEEN SYMMETRIC)
	for (const kind of ['compare', 'between', 'in', 'anyall', 'null', 'booltest'])
		assert.ok(pushedByKind[kind].pushed > pushedByKind[kind].all / 5,
			`${kind}: ${pushedByKind[kind].pushed} of ${pushedByKind[kind].all} push a clause`);

	// parallel runs really run in workers: a chunk's plan launches workers for parallel scans;
	// generic plans of prepared chunks push clauses of parameters
	const withParameters = predicates.filter((p) => p.argument !== undefined).slice(0, CHUNK);
	for (const script of ['EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, FORMAT JSON) ' +
		chunkQuery('pd.lance', plain.slice(0, CHUNK)) + ';\n',
	'SET plan_cache_mode = force_generic_plan;\n' + preparedChunk('pd.lance', withParameters,
		'EXPLAIN (ANALYZE, VERBOSE, COSTS OFF, TIMING OFF, FORMAT JSON) EXECUTE')])
	{
		const nodes = planNodes(JSON.parse(psqlLines(PARALLEL + script).join('\n'))[0].Plan);
		const gathers = nodes.filter((n) => n['Node Type'].startsWith('Gather'));
		const scans = nodes.filter((n) => n['Node Type'] === 'Foreign Scan');
		assert.ok(gathers.length > 0 && gathers.every((g) => g['Workers Launched'] > 0), 'workers launched');
		assert.ok(scans.every((n) => n['Parallel Aware']), 'every foreign scan is parallel-aware');
		if (script.includes('PREPARE'))
		{
			const pushedParameters = scans.filter((n) => /\$\d/.test(n['Lance Filter'] || '')).length;
			assert.ok(pushedParameters > scans.length / 2,
				`${pushedParameters} of ${scans.length} scans of prepared predicates push a clause of a parameter`);
		}
	}

	const results = MODES.map((mode) => runMode(mode, predicates));
	const mismatches = [];
	for (const p of predicates)
	{
		const truth = results[0].get(p.index);
		const wrong = MODES.slice(1).map((mode, m) => ({ mode: mode.name, ids: results[m + 1].get(p.index) }))
			.filter((r) => r.ids !== truth);
		if (wrong.length > 0)
			mismatches.push(`[${p.zone}${p.pushed ? ', pushed' : ''}] WHERE ${p.sql}` +
				(p.argument !== undefined ? ` with $? = ${p.argument}` : '') + `\n    heap: ${truth}\n` +
				wrong.map((r) => `    ${r.mode}: ${r.ids}`).join('\n'));
	}
	assert.equal(mismatches.length, 0, `${mismatches.length} of ${predicates.length} predicates return ` +
		`other rows than the heap table:\n${mismatches.join('\n')}`);

	// a sample of predicates lancedb reads alike: its query with the same filter on each dataset
	const sampled = Array.from({ length: NUM_LANCEDB_PREDICATES }, (_, index) => ({ index, zone: 'UTC', ...lancedbPredicate(0) }))
		.map((p) => ({ ...p, sql: p.pg }));
	const lancedbMismatches = [];
	for (const [mode, lancePath] of [[MODES[1], dataset], [MODES[5], stable]])
	{
		const fdw = runMode(mode, sampled);
		const table = await h.openTable(lancePath);

		for (const p of sampled)
		{
			const read = await table.query().where(p.lance).select(['id']).toArray();
			const ids = '{' + read.map((r) => Number(r.id)).sort((a, b) => a - b).join(',') + '}';

			if (ids !== fdw.get(p.index))
				lancedbMismatches.push(`${mode.table}: WHERE ${p.pg}\n    lance_fdw: ${fdw.get(p.index)}\n    lancedb: ${ids}`);
		}
	}
	assert.equal(lancedbMismatches.length, 0, `${lancedbMismatches.length} of ${2 * sampled.length} predicates ` +
		`return other rows than lancedb's query:\n${lancedbMismatches.join('\n')}`);
	psqlLines('DROP SCHEMA pd CASCADE; DROP SERVER pd_server CASCADE;\n');
});

// DELETE through lance_fdw: its WHERE is pushed into the scan that gives the rows' addresses,
// the rest evaluated by the executor.  Random predicates deleted from the Lance table and the
// heap table alike, one after the other on fresh tables of each round (each DELETE a new
// version on top of the last one's deletion files), serially and in parallel, with pushdown on
// and off; after each the two tables hold the same ids, and after each round lancedb reads them.
const DELETE_ROUNDS = 24;
const DELETES_PER_ROUND = 12;

test('DELETE through lance_fdw removes the rows PostgreSQL removes, for random predicates', async () => {
	const mismatches = [];
	let deletes = 0;

	for (let round = 0; round < DELETE_ROUNDS; round++)
	{
		const dir = h.scratchDir('delete-differential');
		const dataset = path.join(dir, 'rows.lance');
		const settings = (round % 2 ? PARALLEL : SERIAL) +
			`SET lance_parts.fdw_pushdown = ${round % 4 < 2 ? 'on' : 'off'};\n` +
			'SET lance_parts.fdw_batch_rows = 16; SET lance_parts.fdw_unit_rows = 20;\n';

		await createTables(dataset, rowsSql());
		for (let d = 0; d < DELETES_PER_ROUND; d++)
		{
			const zone = pick(TIME_ZONES);
			const { sql } = predicate(0);
			const [same] = psqlLines(settings + `SET TimeZone = '${zone}';
DELETE FROM pd.lance WHERE ${sql};
DELETE FROM pd.heap WHERE ${sql};
SELECT coalesce((SELECT array_agg(id ORDER BY id) FROM pd.heap)::text, '{}') || '|' ||
       coalesce((SELECT array_agg(id ORDER BY id) FROM pd.lance)::text, '{}');
`);
			const [heap, lance] = same.split('|');

			deletes++;
			if (heap !== lance)
				mismatches.push(`round ${round}, [${zone}] DELETE ... WHERE ${sql}\n    heap: ${heap}\n    lance: ${lance}`);
		}
		const table = await h.openTable(dataset);
		const lancedbIds = (await table.query().select(['id']).toArray()).map((r) => Number(r.id))
			.sort((a, b) => a - b);
		const [heapIds] = psqlLines("SELECT coalesce((SELECT array_agg(id ORDER BY id) FROM pd.heap)::text, '{}');\n");

		assert.equal('{' + lancedbIds.join(',') + '}', heapIds, `round ${round}: lancedb reads the heap's ids`);
	}
	assert.equal(mismatches.length, 0, `${mismatches.length} of ${deletes} DELETEs leave other rows than the ` +
		`heap table's:\n${mismatches.join('\n')}`);
	psqlLines('DROP SCHEMA pd CASCADE; DROP SERVER pd_server CASCADE;\n');
});
