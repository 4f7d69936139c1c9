'use strict';
// harness.cjs - shared pieces of the node tests (test/reference/*.test.cjs) that run
// lance_parts against the test cluster and read the result back with the reference
// implementation (npm lancedb).  The environment comes from test/run.sh:
//   LP_TESTDATA  generated datasets (read-only) with manifest.json
//   LP_SCRATCH   a directory both the tests and the server may write to
//   PGHOST, PGPORT, PGUSER, PGDATABASE  the cluster (used by psql through pg.cjs)
const fs = require('node:fs');
const path = require('node:path');
const assert = require('node:assert/strict');
const arrow = require('apache-arrow');
const lancedb = require('@lancedb/lancedb');
const { encodeRows } = require('./values.cjs');
const { psqlLines, literal } = require('./pg.cjs');

process.env.LANCEDB_LOG = process.env.LANCEDB_LOG || 'error';

function requireEnv(name)
{
	const value = process.env[name];

	if (!value)
		throw new Error('environment variable ' + name + ' is not set (run through test/run.sh)');
	return value;
}

const TESTDATA = requireEnv('LP_TESTDATA');
const SCRATCH = requireEnv('LP_SCRATCH');

// The node layer gets a fresh cluster: the extension may not exist in its database yet.
psqlLines('CREATE EXTENSION IF NOT EXISTS lance_parts;\n');

let manifestCache = null;

// The generator's description of dataset `name` (manifest.json).
function datasetInfo(name)
{
	if (manifestCache === null)
		manifestCache = JSON.parse(fs.readFileSync(path.join(TESTDATA, 'manifest.json'), 'utf8'));
	const info = manifestCache.datasets.find((d) => d.name === name);

	if (!info)
		throw new Error('dataset "' + name + '" is not in ' + TESTDATA + '/manifest.json');
	return info;
}

// Data file names of a dataset, in fragment order.
function dataFiles(name)
{
	return datasetInfo(name).data_files.slice()
		.sort((a, b) => a.fragment_id - b.fragment_id);
}

// A fresh directory under LP_SCRATCH for one test file.
function scratchDir(label)
{
	return fs.mkdtempSync(path.join(SCRATCH, label + '-'));
}

// Copy generated dataset `name` to `dir`/`name`.lance, where the server may write.
function copyDataset(name, dir)
{
	const target = path.join(dir, name + '.lance');

	fs.cpSync(path.join(TESTDATA, name + '.lance'), target, { recursive: true });
	return target;
}

async function openTable(datasetPath)
{
	const db = await lancedb.connect(path.dirname(datasetPath));

	return db.openTable(path.basename(datasetPath, '.lance'));
}

function fragmentOf(rowid)
{
	return Number(BigInt(rowid) >> 32n);
}

// Group encoded rows (with "_rowid") by fragment id, in row-id order, dropping _rowid.
function groupByFragment(rows)
{
	const sorted = rows.slice().sort((a, b) => {
		const x = BigInt(a._rowid);
		const y = BigInt(b._rowid);

		return x < y ? -1 : (x > y ? 1 : 0);
	});
	const result = new Map();

	for (const row of sorted)
	{
		const fragment = fragmentOf(row._rowid);
		const copy = { ...row };

		delete copy._rowid;
		if (!result.has(fragment))
			result.set(fragment, []);
		result.get(fragment).push(copy);
	}
	return result;
}

// Every row of the table's current version, by fragment, with its Arrow schema.
async function readFragments(table, filter)
{
	let query = table.query();

	if (filter)
		query = query.where(filter);
	const data = await query.withRowId().toArrow();

	return { schema: data.schema, fragments: groupByFragment(encodeRows(data)) };
}

// The rows the generator wrote for dataset `name`, by fragment.
function expectedFragments(name)
{
	const rows = JSON.parse(fs.readFileSync(path.join(TESTDATA, name + '.rows.json'), 'utf8'));

	return groupByFragment(rows);
}

// Canonically encoded values are equal; float32 values are compared as float32.
function valuesEqual(type, a, b)
{
	if (a === null || b === null)
		return a === b;
	switch (type.typeId)
	{
		case arrow.Type.Float:
			if (type.precision === arrow.Precision.SINGLE &&
				typeof a === 'number' && typeof b === 'number')
				return Math.fround(a) === Math.fround(b);
			return a === b;
		case arrow.Type.FixedSizeList:
		case arrow.Type.List:
		case arrow.Type.LargeList:
			return Array.isArray(a) && Array.isArray(b) && a.length === b.length &&
				a.every((v, i) => valuesEqual(type.children[0].type, v, b[i]));
		case arrow.Type.Struct:
			return type.children.every((f) => valuesEqual(f.type, a[f.name], b[f.name]));
		default:
			return a === b;
	}
}

// Assert that two lists of encoded rows are equal value for value, for every column of
// `schema` (the Arrow schema the rows were read with).
function assertRowsEqual(schema, actual, expected, what)
{
	assert.equal(actual.length, expected.length, what + ': row count');
	for (let i = 0; i < expected.length; i++)
	{
		for (const field of schema.fields)
		{
			if (field.name === '_rowid')
				continue;
			if (!(field.name in expected[i]))
				throw new Error(what + ': expected rows have no column "' + field.name + '"');
			if (!valuesEqual(field.type, actual[i][field.name], expected[i][field.name]))
				assert.fail(what + ': row ' + i + ', column "' + field.name + '": got ' +
					JSON.stringify(actual[i][field.name]) + ', expected ' +
					JSON.stringify(expected[i][field.name]));
		}
	}
}

// Run one SQL query in its own session; return its rows as objects.
function sqlRows(query)
{
	const lines = psqlLines('SELECT coalesce(jsonb_agg(to_jsonb(q)), \'[]\') FROM (' + query + ') q;\n');

	assert.equal(lines.length, 1, 'one result line from psql');
	return JSON.parse(lines[0]);
}

function sqlTextArray(items)
{
	return 'ARRAY[' + items.map(literal).join(', ') + ']::text[]';
}

function sqlBigintArray(items)
{
	return 'ARRAY[' + items.map((n) => String(n)).join(', ') + ']::bigint[]';
}

function sqlJsonb(value)
{
	return literal(JSON.stringify(value)) + '::jsonb';
}

function createTarget(datasetPath, options)
{
	const args = [literal(datasetPath)];

	if (options && options.columns)
		args.push('columns => ' + sqlTextArray(options.columns));
	return sqlRows('SELECT lance_parts.create_target(' + args.join(', ') + ') AS target')[0].target;
}

// The whole ingest as one SQL statement (for pg_cron jobs and single-statement clients):
// create a target, assemble the parts into it, commit it as an append.  Each step takes its
// input from the previous one (assemble from t, commit from a's row), so assemble runs before
// commit whatever plan is chosen, and commit runs only when assemble wrote the file.  It
// returns (dataset_version, fragment_id), or no row when the parts cannot be concatenated
// (assemble's NOTICE says why).
function ingestSql(datasetPath, partPaths)
{
	return 'WITH t AS MATERIALIZED (\n' +
		'    SELECT lance_parts.create_target(' + literal(datasetPath) + ') AS target),\n' +
		'a AS MATERIALIZED (\n' +
		'    SELECT t.target, a.* FROM t, LATERAL lance_parts.assemble(t.target, ' +
		sqlTextArray(partPaths) + ') AS a)\n' +
		"SELECT c.* FROM a, LATERAL lance_parts.commit(a.target) AS c WHERE a.status = 'written'";
}

// Manifest file names under _versions, split by naming scheme.
function manifestNames(datasetPath)
{
	const names = fs.readdirSync(path.join(datasetPath, '_versions'))
		.filter((n) => n.endsWith('.manifest'));
	const v2 = names.filter((n) => /^[0-9]{20}\.manifest$/.test(n));

	return { all: names, v2, v1: names.filter((n) => !v2.includes(n)) };
}

// Manifest file name of `version` under a naming scheme ("v1" or "v2").
function manifestName(version, scheme)
{
	if (scheme === 'v1')
		return version + '.manifest';
	return String(0xffffffffffffffffn - BigInt(version)).padStart(20, '0') + '.manifest';
}

// Prove the dataset is healthy for lancedb on top of our versions: append a row, build a
// btree index on id, optimize; the count must follow.
async function lancedbModifies(table)
{
	const before = await table.countRows();
	const first = await table.query().limit(1).toArrow();

	await table.add(first);
	await table.createIndex('id', { config: lancedb.Index.btree() });
	await table.optimize();
	assert.equal(await table.countRows(), before + 1, 'count after add/createIndex/optimize');
	assert.equal(await table.countRows('id IS NOT NULL'), before + 1, 'filtered count after optimize');
	assert.ok((await table.listIndices()).some((i) => i.columns.includes('id')), 'index on id listed');
}

module.exports = {
	TESTDATA,
	SCRATCH,
	lancedb,
	datasetInfo,
	dataFiles,
	scratchDir,
	copyDataset,
	openTable,
	fragmentOf,
	readFragments,
	expectedFragments,
	assertRowsEqual,
	sqlRows,
	sqlTextArray,
	sqlBigintArray,
	sqlJsonb,
	createTarget,
	ingestSql,
	manifestNames,
	manifestName,
	lancedbModifies,
	psqlLines,
	literal,
};
