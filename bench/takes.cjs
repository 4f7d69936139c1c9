'use strict';
// Random takes by the reference implementation: lancedb's takeOffsets of random row offsets,
// as a search engine fetches the rows of its hits.  Prints {"median_ms": M, "p90_ms": P,
// "takes": N, "rows_per_take": K} over N takes of K random offsets each (a fixed seed, so that
// two datasets of the same rows are taken at the same offsets).
//
//   node takes.cjs DIR NAME TAKES ROWS_PER_TAKE

const { connect } = require('./connect.cjs');
const { prng } = require('../test/reference/prng.cjs');

async function main()
{
	const [dir, name, takesArg, perTakeArg] = process.argv.slice(2);
	const takes = Number(takesArg);
	const perTake = Number(perTakeArg);
	const db = await connect(dir);
	const table = await db.openTable(name);
	const rows = await table.countRows();
	const random = prng(26);
	const times = [];

	// the first take opens the files: left out
	await table.takeOffsets([0]).toArray();
	for (let i = 0; i < takes; i++)
	{
		const offsets = Array.from({ length: perTake }, () => Math.floor(random() * rows));
		const started = process.hrtime.bigint();
		const got = await table.takeOffsets(offsets).toArray();

		times.push(Number(process.hrtime.bigint() - started) / 1e6);
		if (got.length !== perTake)
			throw new Error(`a take of ${perTake} offsets returned ${got.length} rows`);
	}
	times.sort((a, b) => a - b);
	process.stdout.write(JSON.stringify({
		median_ms: Number(times[Math.floor(times.length / 2)].toFixed(3)),
		p90_ms: Number(times[Math.floor(times.length * 0.9)].toFixed(3)),
		takes,
		rows_per_take: perTake,
	}) + '\n');
}

main().catch((e) => {
	process.stderr.write(String(e.stack || e) + '\n');
	process.exit(1);
});
