'use strict';
// Read a Lance dataset back with the reference implementation (npm lancedb) and print it
// as JSON on stdout, with the value encoding of values.cjs:
//   {"version":V,"num_rows":N,"fragments":{"<id>":count},"schema":[arrow fields],
//    "lance_fields":[...],"rows":[{...,"_rowid":"..."}]}
// fragments counts rows per fragment id (_rowid >> 32; datasets without stable row ids).
//
// Usage: LANCEDB_LOG=error node read.cjs DATASET_PATH [--version N] [--columns a,b] [--check]
//
// --check additionally proves the dataset is healthy by changing it: it appends one row
// (a copy of the first row), builds a btree index on `id` (or the first integer column)
// and runs optimize(); what it did is printed under "check". Run it on a copy.

const fs = require('fs');
const os = require('os');
const path = require('path');
const arrow = require('apache-arrow');
const lancedb = require('@lancedb/lancedb');
const { encodeRows, describeArrowField } = require('./values.cjs');
const { lanceFieldsFromArrow } = require('./lancemeta.cjs');

function usage(message)
{
	process.stderr.write((message ? message + '\n' : '') +
		'usage: node read.cjs DATASET_PATH [--version N] [--columns a,b] [--check]\n');
	process.exit(2);
}

function parseArgs(argv)
{
	const args = { dataset: null, version: null, columns: null, check: false };

	for (let i = 0; i < argv.length; i++)
	{
		const arg = argv[i];

		if (arg === '--version')
		{
			args.version = Number(argv[++i]);
			if (!Number.isInteger(args.version) || args.version < 1)
				usage('--version needs a positive integer');
		}
		else if (arg === '--columns')
		{
			if (argv[i + 1] === undefined)
				usage('--columns needs a list');
			args.columns = argv[++i].split(',').filter((c) => c !== '');
		}
		else if (arg === '--check')
			args.check = true;
		else if (arg.startsWith('--') || args.dataset !== null)
			usage('unexpected argument "' + arg + '"');
		else
			args.dataset = arg;
	}
	if (args.dataset === null)
		usage();
	return args;
}

// lancedb opens tables as <db>/<name>.lance. A dataset directory with another name is
// reached through a symlink <tmp>/dataset.lance in a private temporary directory.
async function openDataset(datasetPath)
{
	const resolved = path.resolve(datasetPath);

	if (!fs.existsSync(path.join(resolved, '_versions')))
		throw new Error('"' + datasetPath + '" is not a Lance dataset (no _versions directory)');
	if (resolved.endsWith('.lance'))
	{
		const db = await lancedb.connect(path.dirname(resolved));

		return { table: await db.openTable(path.basename(resolved, '.lance')), cleanup: () => {} };
	}
	const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'lp-read-'));

	fs.symlinkSync(resolved, path.join(tmp, 'dataset.lance'));
	const db = await lancedb.connect(tmp);

	return {
		table: await db.openTable('dataset'),
		cleanup: () => fs.rmSync(tmp, { recursive: true, force: true }),
	};
}

function fragmentCounts(rows)
{
	const counts = {};

	for (const row of rows)
	{
		const id = String(BigInt(row._rowid) >> 32n);

		counts[id] = (counts[id] || 0) + 1;
	}
	return counts;
}

async function check(table, schema)
{
	const done = {};
	const first = await table.query().limit(1).toArrow();
	const indexColumn = schema.fields.find((f) => f.name === 'id') ||
		schema.fields.find((f) => f.type.typeId === arrow.Type.Int);

	done.rows_before = await table.countRows();
	await table.add(first);
	done.added_rows = first.numRows;
	if (indexColumn)
	{
		await table.createIndex(indexColumn.name, { config: lancedb.Index.btree() });
		done.index = { column: indexColumn.name, type: 'btree', indices: (await table.listIndices()).map((i) => i.name) };
	}
	const stats = await table.optimize();

	done.optimize = {
		fragments_removed: stats.compaction.fragmentsRemoved,
		fragments_added: stats.compaction.fragmentsAdded,
		files_removed: stats.compaction.filesRemoved,
		files_added: stats.compaction.filesAdded,
	};
	done.rows_after = await table.countRows();
	done.version_after = await table.version();
	if (done.rows_after !== done.rows_before + done.added_rows)
		throw new Error('check: ' + done.rows_after + ' rows after adding ' + done.added_rows + ' to ' + done.rows_before);
	return done;
}

async function main()
{
	const args = parseArgs(process.argv.slice(2));
	const { table, cleanup } = await openDataset(args.dataset);

	try
	{
		if (args.version !== null)
			await table.checkout(args.version);

		const schema = await table.schema();
		let query = table.query();

		if (args.columns !== null)
			query = query.select(args.columns);
		const result = await query.withRowId().toArrow();
		const rows = encodeRows(result);
		const out = {
			version: await table.version(),
			num_rows: rows.length,
			fragments: fragmentCounts(rows),
			schema: schema.fields.map(describeArrowField),
			lance_fields: lanceFieldsFromArrow(schema),
			rows,
		};

		if (args.check)
		{
			if (args.version !== null)
				await table.checkoutLatest();
			out.check = await check(table, schema);
		}
		process.stdout.write(JSON.stringify(out) + '\n');
	}
	finally
	{
		cleanup();
	}
}

main().catch((err) => {
	process.stderr.write('read.cjs: ' + (err && err.message ? err.message : String(err)) + '\n');
	process.exit(1);
});
