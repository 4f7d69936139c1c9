'use strict';
// A dataset with a BTREE index (on id) and a BITMAP index (on k) written by the reference
// (npm lancedb), for bench/compact_indexed.sh: FRAGMENTS appends of ROWS rows (id, k, s), the
// indexes built over them, then, with DELETE, every 10th row deleted (deletion files in every
// fragment, rows the indexes name).  STABLE ("true"/"false") chooses stable row ids.
// Prints {"rows": live rows}.
//
//   node indexed_dataset.cjs DIR NAME FRAGMENTS ROWS VERSION STABLE DELETE

const arrow = require('apache-arrow');
const lancedb = require('@lancedb/lancedb');
const { connect } = require('./connect.cjs');

async function main()
{
	const [dir, name, fragments, rows, version, stable, remove] = process.argv.slice(2);
	const db = await connect(dir);
	const n = Number(rows);
	const batch = (first) => new arrow.Table({
		id: arrow.vectorFromArray(BigInt64Array.from({ length: n }, (_, i) => BigInt(first + i))),
		k: arrow.vectorFromArray(Int32Array.from({ length: n }, (_, i) => (first + i) % 100)),
		s: arrow.vectorFromArray(Array.from({ length: n }, (_, i) => 'row ' + (first + i)), new arrow.Utf8()),
	});
	const table = await db.createTable(name, batch(0), {
		storageOptions: { newTableDataStorageVersion: version, newTableEnableStableRowIds: stable },
	});

	for (let f = 1; f < Number(fragments); f++)
		await table.add(batch(f * n));
	await table.createIndex('id', { config: lancedb.Index.btree() });
	await table.createIndex('k', { config: lancedb.Index.bitmap() });
	if (remove === 'true')
		await table.delete('id % 10 = 7');
	process.stdout.write(JSON.stringify({ rows: await table.countRows() }) + '\n');
}

main().catch((e) => {
	process.stderr.write(String(e.stack || e) + '\n');
	process.exit(1);
});
