'use strict';
// Parallel lance_fdw scans read the dataset version their leader read.  The leader's scan
// begins when the query starts; its workers start only when the Gather first runs, here
// after a pg_sleep on the outer side of a nested loop.  While the leader sleeps, lancedb
// deletes rows of every fragment (a new version).  The workers, which read every row
// (parallel_leader_participation off), must still read the version before the delete.
const test = require('node:test');
const assert = require('node:assert/strict');
const h = require('./harness.cjs');
const { psqlLines, psqlAsync, literal } = require('./pg.cjs');

const dir = h.scratchDir('fdw-parallel');

const PARALLEL = `SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0; SET max_parallel_workers_per_gather = 2;
SET parallel_leader_participation = off;
`;

// The nodes of an EXPLAIN (FORMAT JSON) plan, depth first.
function planNodes(plan)
{
	return [plan, ...(plan.Plans || []).flatMap(planNodes)];
}

test('workers read the version their leader read, not one committed since', async () => {
	const dataset = h.copyDataset('types_2_2_v2', dir);
	const live = h.datasetInfo('types_2_2_v2').num_rows;
	const table = await h.openTable(dataset);

	psqlLines(`DROP SCHEMA IF EXISTS fdw_parallel CASCADE;
DROP SERVER IF EXISTS fdw_parallel_server CASCADE;
CREATE SERVER fdw_parallel_server FOREIGN DATA WRAPPER lance_fdw;
CREATE SCHEMA fdw_parallel;
IMPORT FOREIGN SCHEMA x FROM SERVER fdw_parallel_server INTO fdw_parallel OPTIONS (uri ${literal(dataset)});
`);
	const query = `SELECT c.* FROM (SELECT pg_sleep(3)) s
CROSS JOIN LATERAL (SELECT count(*), sum(id) FROM fdw_parallel.types_2_2_v2) c`;
	const explain = psqlAsync(PARALLEL +
		`EXPLAIN (ANALYZE, VERBOSE, COSTS OFF, TIMING OFF, FORMAT JSON) ${query};\n`);

	// delete while the leader sleeps, after its scan began
	let sleeping = false;
	for (let i = 0; i < 100 && !sleeping; i++)
	{
		sleeping = psqlLines(`SELECT count(*) FROM pg_stat_activity
WHERE wait_event = 'PgSleep' AND query LIKE '%fdw_parallel.types_2_2_v2%';\n`)[0] === '1';
		if (!sleeping)
			await new Promise((resolve) => setTimeout(resolve, 50));
	}
	assert.ok(sleeping, 'the query is sleeping');
	await table.delete('id % 2 = 0');
	const deletedBeforeWorkers = psqlLines(`SELECT count(*) FROM pg_stat_activity
WHERE wait_event = 'PgSleep' AND query LIKE '%fdw_parallel.types_2_2_v2%';\n`)[0] === '1';
	assert.ok(deletedBeforeWorkers, 'the delete committed while the leader slept');
	const after = await table.countRows();
	assert.ok(after > 0 && after < live, 'the delete left ' + after + ' of ' + live + ' rows');

	const plan = JSON.parse((await explain).join('\n'))[0].Plan;
	const gather = planNodes(plan).find((n) => n['Node Type'] === 'Gather');
	const scan = planNodes(plan).find((n) => n['Node Type'] === 'Foreign Scan');
	assert.equal(gather['Workers Launched'], 2, 'workers launched');
	assert.equal(scan['Parallel Aware'], true, 'the scan is parallel-aware');
	const workerRows = scan.Workers.reduce((sum, w) => sum + w['Actual Rows'], 0);
	assert.equal(workerRows, live, 'the workers read the rows of the version before the delete');

	// and a query that starts now reads the new version, in parallel too
	const [rows] = psqlLines(PARALLEL + 'SELECT count(*) FROM fdw_parallel.types_2_2_v2;\n');
	assert.equal(Number(rows), after);
	psqlLines('DROP SCHEMA fdw_parallel CASCADE; DROP SERVER fdw_parallel_server;\n');
});
