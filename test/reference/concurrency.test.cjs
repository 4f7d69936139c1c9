'use strict';
// Concurrent commits: two sessions append 20 fragments each to one dataset at the same time,
// one through one-statement ingests (lance_parts.ingest() and the plain SQL form in turn), the
// other through the session registry (create_target, register_part, assemble, commit).  Every
// append must land: 40 new fragments, one version each with no gap, and lancedb reads every row.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const h = require('./harness.cjs');
const { psqlAsync } = require('./pg.cjs');

const APPENDS_PER_SESSION = 20;
const dir = h.scratchDir('concurrency');

// A statement that waits until the given instant, so sessions start together.
function startAt(when)
{
	return 'SELECT pg_sleep(greatest(0, extract(epoch FROM ' + h.literal(when.toISOString()) +
		'::timestamptz - clock_timestamp()))) \\g /dev/null\n';
}

test('2 sessions x 20 appends to one dataset at the same time all land', async () => {
	const name = 'types_2_3_v1';
	const info = h.datasetInfo(name);
	const dataset = h.copyDataset(name, dir);
	const source = h.dataFiles(name)[2];
	const part = path.join(dataset, 'data', source.file);
	// Both sessions start their appends at the same instant, once connected.
	const start = startAt(new Date(Date.now() + 500));
	const oneStatement = [start];
	const registry = [start];

	for (let i = 0; i < APPENDS_PER_SESSION; i++)
	{
		oneStatement.push((i % 2 === 0 ?
			'SELECT * FROM lance_parts.ingest(' + h.literal(dataset) + ', ' + h.sqlTextArray([part]) + ')' :
			h.ingestSql(dataset, [part])) + ';\n');
		registry.push('SELECT lance_parts.create_target(' + h.literal(dataset) + ') AS t \\gset\n' +
			'SELECT lance_parts.register_part(:\'t\', ' + h.literal(part) + ') \\g /dev/null\n' +
			'SELECT status FROM lance_parts.assemble(:\'t\') \\g /dev/null\n' +
			'SELECT * FROM lance_parts.commit(:\'t\');\n');
	}
	const results = await Promise.all([psqlAsync(oneStatement.join('')), psqlAsync(registry.join(''))]);
	const commits = results.flat().map((line) => line.split('|').map(Number));
	const total = 2 * APPENDS_PER_SESSION;

	assert.equal(results[0].length, APPENDS_PER_SESSION, 'one-statement session: a row per ingest');
	assert.equal(results[1].length, APPENDS_PER_SESSION, 'registry session: a row per commit');
	assert.deepEqual(commits.map(([v]) => v).sort((a, b) => a - b),
		Array.from({ length: total }, (_, i) => info.version + 1 + i), 'versions without gaps or repeats');
	assert.deepEqual(commits.map(([, f]) => f).sort((a, b) => a - b),
		Array.from({ length: total }, (_, i) => 3 + i), 'fragment ids without gaps or repeats');
	// The sessions' commits interleave (else this test proves nothing about concurrency).
	const versions = results.map((lines) => lines.map((l) => Number(l.split('|')[0])));

	assert.ok(Math.min(...versions[0]) < Math.max(...versions[1]) &&
		Math.min(...versions[1]) < Math.max(...versions[0]), 'commits interleave: ' + JSON.stringify(versions));
	assert.equal(h.manifestNames(dataset).v1.length, info.version + total, 'a v1 manifest per version');

	const table = await h.openTable(dataset);

	assert.equal(await table.version(), info.version + total);
	assert.equal(await table.countRows(), info.num_rows + total * source.num_rows);
	const { schema, fragments } = await h.readFragments(table);
	const expected = h.expectedFragments(name);

	assert.equal(fragments.size, 3 + total);
	for (let id = 0; id < 3 + total; id++)
		h.assertRowsEqual(schema, fragments.get(id), expected.get(id < 3 ? id : source.fragment_id), 'fragment ' + id);
	// Each version adds exactly one fragment to the previous one.
	for (let v = info.version + 1; v <= info.version + total; v += 13)
	{
		await table.checkout(v);
		assert.equal(await table.countRows(), info.num_rows + (v - info.version) * source.num_rows, 'rows at version ' + v);
	}
});

// Without retries, a session that loses the race for a version gets 40001 (serialization_failure, so
// a client knows to retry) and nothing of its append is published; the dataset stays readable.
// Rounds of simultaneous appends run until at least one was lost.
test('an append that lost the race with commit_retries = 0 fails with 40001', async () => {
	const name = 'types_2_3_v1';
	const info = h.datasetInfo(name);
	const dataset = h.copyDataset(name, path.join(dir, 'retries0'));
	const source = h.dataFiles(name)[2];
	const part = path.join(dataset, 'data', source.file);
	const ingest = 'SELECT dataset_version FROM lance_parts.ingest(' + h.literal(dataset) + ', ' +
		h.sqlTextArray([part]) + ');\n';
	const prologue = 'SET lance_parts.commit_retries = 0;\n\\set VERBOSITY sqlstate\n';
	const versions = [];
	const errors = [];

	for (let round = 0; round < 10 && errors.length === 0; round++)
	{
		const script = prologue + startAt(new Date(Date.now() + 500)) + ingest.repeat(5);
		const results = await Promise.all([psqlAsync(script, true), psqlAsync(script, true)]);

		for (const { out, err } of results)
		{
			versions.push(...out.map(Number));
			errors.push(...err);
		}
	}
	assert.ok(errors.length > 0, 'no append lost a race in 10 rounds');
	for (const line of errors)
		assert.match(line, /^psql:.*ERROR: {2}40001$/);
	assert.deepEqual(versions.sort((a, b) => a - b),
		Array.from({ length: versions.length }, (_, i) => info.version + 1 + i),
		'the published versions have no gaps or repeats');

	const table = await h.openTable(dataset);

	assert.equal(await table.version(), info.version + versions.length);
	assert.equal(await table.countRows(), info.num_rows + versions.length * source.num_rows);
});
