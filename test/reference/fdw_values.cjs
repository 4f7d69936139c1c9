'use strict';
// fdw_values.cjs - reading lance_fdw tables back as the reference encodes values (values.cjs),
// and comparing them with what the reference read; shared by fdw.test.cjs and s3.test.cjs.
const { psqlLines } = require('./pg.cjs');

const SESSION = "SET TimeZone = 'UTC'; SET DateStyle = 'ISO, YMD'; SET extra_float_digits = 1;\n";

// 64-bit integers and decimals travel as text: JSON numbers would lose digits in JavaScript.
// Dates and timestamps as text give the canonical form directly.
function selectExpression(field)
{
	const name = '"' + field.name.replace(/"/g, '""') + '"';
	const type = field.logical_type;

	if (type === 'int64' || type === 'uint64' || type.startsWith('decimal') ||
		type.startsWith('timestamp') || type.startsWith('date'))
		return name + '::text AS ' + name;
	return name;
}

// JSON.parse turns the -0 PostgreSQL prints into a number; values.cjs writes "-0".
function canonical(value)
{
	if (typeof value === 'number' && Object.is(value, -0))
		return '-0';
	if (Array.isArray(value))
		return value.map(canonical);
	if (value !== null && typeof value === 'object')
		return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, canonical(v)]));
	return value;
}

function float32Equal(a, b)
{
	if (typeof a === 'number' && typeof b === 'number')
		return Math.fround(a) === Math.fround(b);
	return a === b;
}

// Structs arrive as jsonb, whose 64-bit integers are JSON numbers; values.cjs writes them as
// strings.  The values compared here stay far below 2^53, so numbers compare as their text.
function jsonEqual(actual, expected)
{
	if (typeof actual === 'number' && typeof expected === 'string')
		return String(actual) === expected;
	if (Array.isArray(actual) && Array.isArray(expected))
		return actual.length === expected.length && actual.every((v, i) => jsonEqual(v, expected[i]));
	if (actual !== null && expected !== null && typeof actual === 'object' && typeof expected === 'object')
	{
		const keys = Object.keys(expected);

		return keys.length === Object.keys(actual).length && keys.every((k) => jsonEqual(actual[k], expected[k]));
	}
	return JSON.stringify(actual) === JSON.stringify(expected);
}

function valueEqual(logicalType, actual, expected)
{
	if (actual === null || expected === null)
		return actual === expected;
	if (logicalType === 'float')
		return float32Equal(actual, expected);
	if (logicalType.startsWith('fixed_size_list:float:'))
		return Array.isArray(actual) && actual.length === expected.length &&
			actual.every((v, i) => (v === null || expected[i] === null
				? v === expected[i] : float32Equal(v, expected[i])));
	if (logicalType === 'struct')
		return jsonEqual(actual, expected);
	return JSON.stringify(actual) === JSON.stringify(expected);
}

// Every row of a foreign table (schema.table) as JSON, ordered by id; settings: SET commands
// for the session, where: a clause on t (or '').
function readForeignTable(qualifiedTable, fields, settings = '', where = '')
{
	const query = 'SELECT row_to_json(q) FROM (SELECT ' + fields.map(selectExpression).join(', ') +
		' FROM ' + qualifiedTable + ' t ' + where + ' ORDER BY t.id) q;\n';

	return psqlLines(SESSION + settings + query).map((line) => canonical(JSON.parse(line)));
}

// The first difference between actual and expected rows (sorted by id) over fields, or null;
// counter.compared counts the values compared.
function firstDifference(name, fields, actual, expected, counter)
{
	if (actual.length !== expected.length)
		return name + ': ' + actual.length + ' rows, expected ' + expected.length;
	for (let i = 0; i < expected.length; i++)
	{
		for (const field of fields)
		{
			const want = expected[i][field.name];
			const got = actual[i][field.name];

			if (!valueEqual(field.logical_type, got, want))
				return name + ' row ' + i + ' (id ' + expected[i].id + ') column "' +
					field.name + '": got ' + JSON.stringify(got) + ', expected ' + JSON.stringify(want);
			counter.compared++;
		}
	}
	return null;
}

function sortById(rows)
{
	return rows.sort((a, b) => (BigInt(a.id) < BigInt(b.id) ? -1 : BigInt(a.id) > BigInt(b.id) ? 1 : 0));
}

module.exports = { SESSION, readForeignTable, firstDifference, sortById };
