'use strict';
// The whole ingest (create_target, assemble, commit) as one SQL statement sent with psql -c,
// as a pg_cron job or a single-statement ETL client would, in its two forms: the function
// lance_parts.ingest(dataset, parts) and plain SQL chaining the three calls (harness.cjs
// ingestSql).  lancedb sees the new version with the parts' rows.  When the parts cannot be
// concatenated, ingest() raises an error and the plain form returns no row; neither commits
// anything or leaves a file.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const h = require('./harness.cjs');

const dir = h.scratchDir('one-statement');

function psqlCommand(sql)
{
	return execFileSync('psql', ['-X', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-c', sql],
		{ encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
		.split('\n').filter((l) => l.length > 0);
}

function ingestFunctionSql(dataset, parts)
{
	return 'SELECT * FROM lance_parts.ingest(' + h.literal(dataset) + ', ' + h.sqlTextArray(parts) + ')';
}

test('SELECT * FROM lance_parts.ingest(...) ingests parts and lancedb reads the new version', async () => {
	const name = 'types_2_0_v2';
	const info = h.datasetInfo(name);
	const dataset = h.copyDataset(name, dir);
	const files = h.dataFiles(name);
	const parts = [files[2], files[0], files[2]];
	const rows = parts.reduce((n, f) => n + f.num_rows, 0);
	const lines = psqlCommand(ingestFunctionSql(dataset, parts.map((f) => path.join(dataset, 'data', f.file))));

	assert.equal(lines.length, 1);
	const [version, fragment, numRows, file] = lines[0].split('|');

	assert.deepEqual([Number(version), Number(fragment), Number(numRows)], [info.version + 1, 3, rows]);
	assert.equal(path.dirname(file), path.join(dataset, 'data'));
	assert.equal(fs.statSync(file).size, Number(h.sqlRows('SELECT size_bytes FROM lance_parts.file_info(' +
		h.literal(file) + ')')[0].size_bytes));

	const table = await h.openTable(dataset);

	assert.equal(await table.version(), info.version + 1);
	assert.equal(await table.countRows(), info.num_rows + rows);
	const { schema, fragments } = await h.readFragments(table);
	const expected = h.expectedFragments(name);

	h.assertRowsEqual(schema, fragments.get(3), parts.flatMap((f) => expected.get(f.fragment_id)), 'fragment 3');
});

test('lance_parts.ingest(...) with parts that cannot be concatenated raises and commits nothing', async () => {
	const name = 'types_2_3_v1';
	const info = h.datasetInfo(name);
	const dataset = h.copyDataset(name, dir);
	const parts = [path.join(dataset, 'data', h.dataFiles(name)[0].file),
		path.join(h.TESTDATA, 'types_2_2_v1.lance', 'data', h.dataFiles('types_2_2_v1')[1].file)];
	const dataBefore = fs.readdirSync(path.join(dataset, 'data')).sort();

	assert.throws(() => psqlCommand(ingestFunctionSql(dataset, parts)), /parts cannot be assembled into dataset/);
	assert.deepEqual(fs.readdirSync(path.join(dataset, 'data')).sort(), dataBefore, 'no file written');
	assert.equal(h.manifestNames(dataset).all.length, info.version, 'no new version');
});

test('plain SQL: one statement ingests parts and lancedb reads the new version', async () => {
	const name = 'types_2_2_v1';
	const info = h.datasetInfo(name);
	const dataset = h.copyDataset(name, dir);
	const files = h.dataFiles(name);
	const parts = [files[1], files[2]];
	const sql = h.ingestSql(dataset, parts.map((f) => path.join(dataset, 'data', f.file)));

	// The plan calls commit with the target from assemble's row.
	const plan = psqlCommand('EXPLAIN (VERBOSE, COSTS OFF) ' + sql).join('\n');

	assert.match(plan, /Function Call: lance_parts\.commit\(a\.target/);

	const lines = psqlCommand(sql);

	assert.deepEqual(lines, [(info.version + 1) + '|3'], 'dataset_version|fragment_id');

	const table = await h.openTable(dataset);

	assert.equal(await table.version(), info.version + 1);
	assert.equal(await table.countRows(), info.num_rows + parts.reduce((n, f) => n + f.num_rows, 0));
	const { schema, fragments } = await h.readFragments(table);
	const expected = h.expectedFragments(name);

	h.assertRowsEqual(schema, fragments.get(3), parts.flatMap((f) => expected.get(f.fragment_id)), 'fragment 3');
	assert.deepEqual(fs.readdirSync(path.join(dataset, 'data')).filter((n) => n.endsWith('.lance')).length,
		files.length + 1, 'one new data file');
});

test('plain SQL: one statement with parts that cannot be concatenated commits nothing', async () => {
	const name = 'types_2_2_v2';
	const info = h.datasetInfo(name);
	const dataset = h.copyDataset(name, dir);
	const foreign = h.dataFiles('types_2_1_v2')[0];
	const parts = [path.join(dataset, 'data', h.dataFiles(name)[0].file),
		path.join(h.TESTDATA, 'types_2_1_v2.lance', 'data', foreign.file)];
	const dataBefore = fs.readdirSync(path.join(dataset, 'data')).sort();

	assert.deepEqual(psqlCommand(h.ingestSql(dataset, parts)), []);
	assert.deepEqual(fs.readdirSync(path.join(dataset, 'data')).sort(), dataBefore, 'no file written');
	assert.equal(h.manifestNames(dataset).all.length, info.version, 'no new version');
	const table = await h.openTable(dataset);

	assert.equal(await table.countRows(), info.num_rows);
});
