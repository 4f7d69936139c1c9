'use strict';
// Verify, with the reference implementation (npm lancedb), a dataset that lance_parts
// committed to.  Used by the core commit tests (test/core/test_commit.c).
//
// Usage: LANCEDB_LOG=error node check_commit.cjs DATASET.lance ROWS [NEW=SOURCE ...] [--modify]
//
//  ROWS        expected countRows() of the latest version
//  NEW=SOURCE  the rows of fragment NEW must equal those of fragment SOURCE, in order
//              (SOURCE may be "DATASET_PATH:ID" to compare with a fragment of another
//              dataset, e.g. the original of a rewritten fragment)
//  --modify    then append 3 rows through lancedb, build a btree index on "id" and run
//              optimize(): all must succeed and the count must grow by 3
//
// Prints one JSON line; exits 1 when a check fails.
const path = require('path');
const lancedb = require('@lancedb/lancedb');

function replacer(key, value)
{
	return typeof value === 'bigint' ? value.toString() : value;
}

async function open(datasetPath)
{
	const resolved = path.resolve(datasetPath);
	const db = await lancedb.connect(path.dirname(resolved));

	return db.openTable(path.basename(resolved, '.lance'));
}

// Rows per fragment id (_rowid >> 32), each row as a JSON string without _rowid.
async function rowsByFragment(table)
{
	const data = await table.query().withRowId().toArrow();
	const names = data.schema.fields.map((f) => f.name).filter((n) => n !== '_rowid');
	const rowids = data.getChild('_rowid');
	const result = new Map();

	for (let i = 0; i < data.numRows; i++)
	{
		const fragment = Number(BigInt(rowids.get(i)) >> 32n);
		const row = {};

		for (const name of names)
		{
			const value = data.getChild(name).get(i);

			row[name] = value !== null && typeof value === 'object' && value.toJSON ?
				value.toJSON() : value;
		}
		if (!result.has(fragment))
			result.set(fragment, []);
		result.get(fragment).push(JSON.stringify(row, replacer));
	}
	return result;
}

async function main()
{
	const args = process.argv.slice(2);
	const dataset = args[0];
	const expectedRows = Number(args[1]);
	const modify = args.includes('--modify');
	const pairs = args.slice(2).filter((a) => a.includes('='));
	const failures = [];
	const table = await open(dataset);
	const count = await table.countRows();
	const report = { dataset, version: await table.version(), count };

	if (count !== expectedRows)
		failures.push('countRows() is ' + count + ', expected ' + expectedRows);
	const fragments = await rowsByFragment(table);
	report.fragments = Object.fromEntries([...fragments].map(([id, rows]) => [id, rows.length]));
	for (const pair of pairs)
	{
		const [newId, source] = pair.split('=');
		let sourceRows;

		if (source.includes(':'))
		{
			const at = source.lastIndexOf(':');
			const other = await rowsByFragment(await open(source.slice(0, at)));

			sourceRows = other.get(Number(source.slice(at + 1)));
		}
		else
			sourceRows = fragments.get(Number(source));
		const newRows = fragments.get(Number(newId));

		if (!newRows || !sourceRows)
			failures.push('fragment ' + (newRows ? source : newId) + ' has no rows');
		else if (newRows.length !== sourceRows.length)
			failures.push('fragment ' + newId + ' has ' + newRows.length + ' rows, ' + source + ' has ' + sourceRows.length);
		else
		{
			const diff = newRows.findIndex((row, i) => row !== sourceRows[i]);

			if (diff >= 0)
				failures.push('row ' + diff + ' of fragment ' + newId + ' differs: ' + newRows[diff] + ' vs ' + sourceRows[diff]);
		}
	}
	if (modify && failures.length === 0)
	{
		const extra = await table.query().limit(3).toArrow();

		await table.add(extra);
		await table.createIndex('id', { config: lancedb.Index.btree() });
		await table.optimize();
		const after = await table.countRows();
		const filtered = await table.countRows('id >= 0');

		report.after_modify = { version: await table.version(), count: after, filtered };
		if (after !== expectedRows + 3 || filtered !== after)
			failures.push('after add/index/optimize countRows() is ' + after + ' (filtered ' + filtered + '), expected ' + (expectedRows + 3));
	}
	report.failures = failures;
	process.stdout.write(JSON.stringify(report) + '\n');
	process.exit(failures.length === 0 ? 0 : 1);
}

main().catch((e) => {
	process.stdout.write(JSON.stringify({ error: String(e && e.stack || e) }) + '\n');
	process.exit(1);
});
