// lancedb's side of bench/scalar_index.sh: build a BTREE or BITMAP index on a column, add the
// low-cardinality column category (int32, id % 1000: every thousandth row holds a value), or
// time one query with a filter in a fresh process, as each psql run is a fresh session: the
// dataset opened and every column of the rows that pass decoded into Arrow.
//
//   node scalar_index.cjs index DIR NAME COLUMN [btree|bitmap]
//   node scalar_index.cjs category DIR NAME
//   node scalar_index.cjs query DIR NAME WHERE    prints "SECONDS ROWS"

'use strict';

const lancedb = require('@lancedb/lancedb');
const { connect } = require('./connect.cjs');

async function main()
{
	const [mode, dir, name, arg, type] = process.argv.slice(2);
	const started = process.hrtime.bigint();
	const table = await (await connect(dir)).openTable(name);

	if (mode === 'index')
	{
		await table.createIndex(arg, { config: type === 'bitmap' ? lancedb.Index.bitmap() : lancedb.Index.btree() });
		return;
	}
	if (mode === 'category')
	{
		await table.addColumns([{ name: 'category', valueSql: 'CAST(id % 1000 AS INT)' }]);
		return;
	}
	if (mode !== 'query')
		throw new Error('usage: node scalar_index.cjs index DIR NAME COLUMN [btree|bitmap] | category DIR NAME | query DIR NAME WHERE');
	const data = await table.query().where(arg).toArrow();
	const seconds = Number(process.hrtime.bigint() - started) / 1e9;

	process.stdout.write(seconds.toFixed(4) + ' ' + data.numRows + '\n');
}

main().catch((e) => {
	process.stderr.write(String(e.stack || e) + '\n');
	process.exit(1);
});
