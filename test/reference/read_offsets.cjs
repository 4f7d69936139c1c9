'use strict';
// Print what the reference implementation (npm lancedb) reads from the latest version of
// a dataset, as one JSON line: countRows(), countRows() through a filter, and per fragment
// id (_rowid >> 32) the row offsets (_rowid & 0xFFFFFFFF) it reads, ascending.  Used by
// the core delete tests (test/core/test_commit.c) to see exactly which rows are gone.
//
// Usage: LANCEDB_LOG=error node read_offsets.cjs DATASET.lance
const path = require('path');
const lancedb = require('@lancedb/lancedb');

async function main()
{
	const resolved = path.resolve(process.argv[2]);
	const db = await lancedb.connect(path.dirname(resolved));
	const table = await db.openTable(path.basename(resolved, '.lance'));
	const data = await table.query().select(['id']).withRowId().toArrow();
	const rowids = data.getChild('_rowid');
	const fragments = {};

	for (let i = 0; i < data.numRows; i++)
	{
		const rowid = BigInt(rowids.get(i));
		const fragment = String(rowid >> 32n);

		(fragments[fragment] = fragments[fragment] || []).push(Number(rowid & 0xFFFFFFFFn));
	}
	for (const offsets of Object.values(fragments))
		offsets.sort((a, b) => a - b);
	process.stdout.write(JSON.stringify({
		count: await table.countRows(),
		filtered: await table.countRows('id >= 0'),
		fragments,
	}) + '\n');
}

main().catch((e) => {
	process.stdout.write(JSON.stringify({ error: String(e && e.stack || e) }) + '\n');
	process.exit(1);
});
