// lancedb's side of bench/scalar_index.sh: build a BTREE index on a column, or time one query
// with a filter in a fresh process, as each psql run is a fresh session: the dataset opened
// and every column of the rows that pass decoded into Arrow.
//
//   node scalar_index.cjs index DIR NAME COLUMN
//   node scalar_index.cjs query DIR NAME WHERE    prints "SECONDS ROWS"

'use strict';

const lancedb = require('@lancedb/lancedb');
const { connect } = require('./connect.cjs');

async function main()
{
	const [mode, dir, name, arg] = process.argv.slice(2);
	const started = process.hrtime.bigint();
	const table = await (await connect(dir)).openTable(name);

	if (mode === 'index')
	{
		await table.createIndex(arg, { config: lancedb.Index.btree() });
		return;
	}
	if (mode !== 'query')
		throw new Error('usage: node scalar_index.cjs index DIR NAME COLUMN | query DIR NAME WHERE');
	const data = await table.query().where(arg).toArrow();
	const seconds = Number(process.hrtime.bigint() - started) / 1e9;

	process.stdout.write(seconds.toFixed(4) + ' ' + data.numRows + '\n');
}

main().catch((e) => {
	process.stderr.write(String(e.stack || e) + '\n');
	process.exit(1);
});
