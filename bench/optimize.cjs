'use strict';
// The reference implementation's compaction of a dataset: lancedb optimize()
// (rewrites the fragments' rows into new data files, re-encoding them).
// Prints {"seconds": S, "fragments_removed": R, "fragments_added": A}.
//
//   node optimize.cjs DIR NAME

const { connect } = require('./connect.cjs');

async function main()
{
	const [dir, name] = process.argv.slice(2);
	const db = await connect(dir);
	const table = await db.openTable(name);
	const started = process.hrtime.bigint();
	const stats = await table.optimize();
	const seconds = Number(process.hrtime.bigint() - started) / 1e9;

	process.stdout.write(JSON.stringify({
		seconds,
		fragments_removed: stats.compaction.fragmentsRemoved,
		fragments_added: stats.compaction.fragmentsAdded,
		rows: await table.countRows(),
	}) + '\n');
}

main().catch((e) => {
	process.stderr.write(String(e.stack || e) + '\n');
	process.exit(1);
});
