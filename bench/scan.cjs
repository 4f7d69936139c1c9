// The reference implementation's full scan of a dataset: every column of every
// row decoded into Arrow by lancedb.  Prints {"seconds": S, "rows": N}.
//
//   node scan.cjs DIR NAME

'use strict';

const { connect } = require('./connect.cjs');

async function main()
{
	const [dir, name] = process.argv.slice(2);
	const db = await connect(dir);
	const table = await db.openTable(name);
	const started = process.hrtime.bigint();
	const data = await table.query().toArrow();
	const seconds = Number(process.hrtime.bigint() - started) / 1e9;

	process.stdout.write(JSON.stringify({ seconds, rows: data.numRows }) + '\n');
}

main().catch((e) => {
	process.stderr.write(String(e.stack || e) + '\n');
	process.exit(1);
});
