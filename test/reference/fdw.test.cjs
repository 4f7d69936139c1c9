'use strict';
// lance_fdw: every dataset the generator wrote with Lance 2.0-2.3 is imported with IMPORT
// FOREIGN SCHEMA and read through the foreign tables; every value of every column is compared
// with what the reference implementation read (<name>.rows.json, values.cjs encoding).
// Deleted rows must be missing, legacy datasets refused.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { psqlLines, literal } = require('./pg.cjs');

const TESTDATA = process.env.LP_TESTDATA;
const manifest = JSON.parse(fs.readFileSync(path.join(TESTDATA, 'manifest.json'), 'utf8'));

psqlLines(`CREATE EXTENSION IF NOT EXISTS lance_parts;
DROP SCHEMA IF EXISTS fdw_reference CASCADE;
DROP SERVER IF EXISTS fdw_reference_server CASCADE;
CREATE SERVER fdw_reference_server FOREIGN DATA WRAPPER lance_fdw;
CREATE SCHEMA fdw_reference;
IMPORT FOREIGN SCHEMA generated FROM SERVER fdw_reference_server INTO fdw_reference
  OPTIONS (uri ${literal(TESTDATA)});
`);

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

// settings: SET commands for the session; where: a clause on t (or '').
function readTable(table, fields, settings = '', where = '')
{
	const query = 'SELECT row_to_json(q) FROM (SELECT ' + fields.map(selectExpression).join(', ') +
		' FROM fdw_reference.' + table + ' t ' + where + ' ORDER BY t.id) q;\n';

	return psqlLines(SESSION + settings + query).map((line) => canonical(JSON.parse(line)));
}

function expectError(query, pattern)
{
	assert.throws(() => psqlLines(SESSION + query), (error) => pattern.test(String(error.stderr)),
		'expected an error matching ' + pattern);
}

const readable = manifest.datasets.filter((d) => ['2.0', '2.1', '2.2', '2.3'].includes(d.file_version));

test('IMPORT FOREIGN SCHEMA made a table for every generated dataset', () => {
	const tables = psqlLines("SELECT foreign_table_name FROM information_schema.foreign_tables WHERE foreign_table_schema = 'fdw_reference' ORDER BY 1;\n");

	assert.deepEqual(tables, manifest.datasets.map((d) => d.name).sort());
});

function compareRows(dataset, fields, actual, expected)
{
	let compared = 0;

	for (let i = 0; i < expected.length; i++)
	{
		for (const field of fields)
		{
			const want = expected[i][field.name];
			const got = actual[i][field.name];

			if (!valueEqual(field.logical_type, got, want))
				assert.fail(dataset.name + ' row ' + i + ' (id ' + expected[i].id + ') column "' +
					field.name + '": got ' + JSON.stringify(got) + ', expected ' + JSON.stringify(want));
			compared++;
		}
	}
	assert.equal(compared, expected.length * fields.length);
}

function expectedRows(dataset)
{
	const expected = JSON.parse(fs.readFileSync(dataset.rows_file, 'utf8'));

	return expected.sort((a, b) => (BigInt(a.id) < BigInt(b.id) ? -1 : BigInt(a.id) > BigInt(b.id) ? 1 : 0));
}

for (const dataset of readable)
{
	const fields = dataset.expected_fields.filter((f) => f.parent_id === -1);

	test(dataset.name + ' (' + dataset.file_version + '): every value as the reference reads it', () => {
		const expected = expectedRows(dataset);
		const actual = readTable(dataset.name, fields);

		assert.equal(actual.length, expected.length, 'row count');
		assert.equal(actual.length, dataset.num_rows, 'row count of manifest.json');
		compareRows(dataset, fields, actual, expected);
	});

	// Batches of 7 rows put batch boundaries everywhere; the pushed clause on id makes the
	// filter convert id batch by batch and the other columns come only for the rows it keeps.
	test(dataset.name + ' (' + dataset.file_version + '): the same values in batches of 7 rows, filtered while decoding', () => {
		const all = expectedRows(dataset);
		const threshold = all.length > 0 ? BigInt(all[Math.floor(all.length / 3)].id) : 0n;
		const expected = all.filter((row) => BigInt(row.id) >= threshold);
		const actual = readTable(dataset.name, fields, 'SET lance_parts.fdw_batch_rows = 7;\n',
			'WHERE t.id >= ' + threshold);

		assert.equal(actual.length, expected.length, 'row count');
		compareRows(dataset, fields, actual, expected);
	});
}

test('deleted_2_2: deleted rows are absent and the count matches', () => {
	const info = manifest.datasets.find((d) => d.name === 'deleted_2_2');
	const expected = JSON.parse(fs.readFileSync(info.rows_file, 'utf8')).map((r) => r.id).sort((a, b) => Number(a) - Number(b));
	const ids = psqlLines('SELECT id FROM fdw_reference.deleted_2_2 ORDER BY id;\n');

	assert.ok(info.data_files.some((f) => f.has_deletion_file));
	assert.deepEqual(ids, expected);
	assert.deepEqual(psqlLines('SELECT count(*) FROM fdw_reference.deleted_2_2;\n'), [String(info.num_rows)]);
});

for (const dataset of manifest.datasets.filter((d) => d.file_version === 'legacy'))
{
	test(dataset.name + ': legacy datasets are refused with a clear error', () => {
		expectError('SELECT count(*) FROM fdw_reference.' + dataset.name + ';\n',
			/uses the legacy Lance file format, which lance_fdw cannot read/);
	});
}
