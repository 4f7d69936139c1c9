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
const { SESSION, readForeignTable, firstDifference, sortById } = require('./fdw_values.cjs');

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

function readTable(table, fields, settings = '', where = '')
{
	return readForeignTable('fdw_reference.' + table, fields, settings, where);
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

// Fails at the first value that differs from the reference's; every value must be compared.
function compareRows(dataset, fields, actual, expected)
{
	const counter = { compared: 0 };
	const difference = firstDifference(dataset.name, fields, actual, expected, counter);

	if (difference !== null)
		assert.fail(difference);
	assert.equal(counter.compared, expected.length * fields.length);
}

function expectedRows(dataset)
{
	return sortById(JSON.parse(fs.readFileSync(dataset.rows_file, 'utf8')));
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
