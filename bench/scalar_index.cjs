// lancedb's side of bench/scalar_index.sh: build a BTREE index on a column, or time a query
// with a filter (every column of the rows that pass decoded into Arrow).
//
//   node scalar_index.cjs index DIR NAME COLUMN
//   node scalar_index.cjs query DIR NAME REPS WHERE    prints {"seconds": median, "rows": N}

'use strict';

const lancedb = require('@lancedb/lancedb');
const { connect } = require('./connect.cjs');

async function main()
{
	const [mode, dir, name, arg, where] = process.argv.slice(2);
	const table = await (await connect(dir)).openTable(name);

	if (mode === 'index')
	{
		await table.createIndex(arg, { config: lancedb.Index.btree() });
		return;
	}
	if (mode !== 'query')
		throw new Error('usage: node scalar_index.cjs index DIR NAME COLUMN | query DIR NAME REPS WHERE');
	const times = [];
	let rows = 0;

	for (let rep = 0; rep < Number(arg); rep++)
	{
		const started = process.hrtime.bigint();
		const data = await table.query().where(where).toArrow();

		times.push(Number(process.hrtime.bigint() - started) / 1e9);
		rows = data.numRows;
	}
	times.sort((a, b) => a - b);
	process.stdout.write(JSON.stringify({ seconds: times[Math.floor((times.length - 1) / 2)], rows }) + '\n');
}

main().catch((e) => {
	process.stderr.write(String(e.stack || e) + '\n');
	process.exit(1);
});
