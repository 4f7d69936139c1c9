'use strict';
// Benchmark data, written by the reference implementation (npm lancedb).
//
//   node generate.cjs dataset DIR NAME FRAGMENTS BYTES_PER_FRAGMENT [DIM [VERSION]]
//       a dataset DIR/NAME.lance of FRAGMENTS fragments (one data file each), of
//       file version VERSION (default 2.1).
//       Rows: id int64, value float64, label utf8 (16 characters) and emb
//       fixed_size_list<float32>[DIM] (default 128) of random numbers, about
//       560 bytes a row by default, so pages are large and barely
//       compressible, like embeddings.
//   node generate.cjs text DIR NAME FRAGMENTS ROWS_PER_FRAGMENT
//       the same shape of dataset with text rows: id int64, title (8 words),
//       body (20 words), user (an id-like string) and category (5 values),
//       which Lance compresses (FSST, dictionaries) and so must re-encode.
//
// Prints a JSON summary; the data files are DIR/NAME.lance/data/*.lance.

const arrow = require('apache-arrow');
const { connect } = require('./connect.cjs');

let DIM = 128;

function rowBytes()
{
	return 8 + 8 + 16 + 4 * DIM + 8;
}

function batch(start, rows)
{
	const ids = new BigInt64Array(rows);
	const values = new Float64Array(rows);
	const labels = new Array(rows);
	const emb = new Float32Array(rows * DIM);

	for (let i = 0; i < rows; i++)
	{
		ids[i] = BigInt(start + i);
		values[i] = Math.random();
		labels[i] = (start + i).toString(36).padStart(16, 'x');
	}
	for (let i = 0; i < emb.length; i++)
		emb[i] = Math.random();
	const embType = new arrow.FixedSizeList(DIM, new arrow.Field('item', new arrow.Float32(), true));
	const embData = arrow.makeData({
		type: embType,
		length: rows,
		nullCount: 0,
		child: arrow.makeData({ type: new arrow.Float32(), length: rows * DIM, data: emb }),
	});

	return new arrow.Table({
		id: arrow.makeVector(ids),
		value: arrow.makeVector(values),
		label: arrow.vectorFromArray(labels, new arrow.Utf8()),
		emb: arrow.makeVector(embData),
	});
}

const WORDS = ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot', 'golf', 'hotel', 'india',
	'juliet', 'kilo', 'lima', 'mike', 'november', 'oscar', 'papa', 'quebec', 'romeo', 'sierra', 'tango'];

function words(count)
{
	const chosen = [];

	for (let i = 0; i < count; i++)
		chosen.push(WORDS[Math.floor(Math.random() * WORDS.length)]);
	return chosen.join(' ');
}

function textBatch(start, rows)
{
	const ids = new BigInt64Array(rows);
	const titles = [];
	const bodies = [];
	const users = [];
	const categories = [];

	for (let i = 0; i < rows; i++)
	{
		ids[i] = BigInt(start + i);
		titles.push(words(8));
		bodies.push(words(20));
		users.push('user-' + Math.floor(Math.random() * 1000000));
		categories.push(WORDS[Math.floor(Math.random() * 5)]);
	}
	return new arrow.Table({
		id: arrow.makeVector(ids),
		title: arrow.vectorFromArray(titles, new arrow.Utf8()),
		body: arrow.vectorFromArray(bodies, new arrow.Utf8()),
		user: arrow.vectorFromArray(users, new arrow.Utf8()),
		category: arrow.vectorFromArray(categories, new arrow.Utf8()),
	});
}

async function main()
{
	const [mode, dir, name, fragmentsArg, bytesArg, dimArg, versionArg] = process.argv.slice(2);

	if (!['dataset', 'text'].includes(mode) || !dir || !name)
		throw new Error('usage: node generate.cjs dataset DIR NAME FRAGMENTS BYTES_PER_FRAGMENT [DIM [VERSION]]\n' +
			'       node generate.cjs text DIR NAME FRAGMENTS ROWS_PER_FRAGMENT');
	if (dimArg)
		DIM = Number(dimArg);
	const fragments = Number(fragmentsArg);
	const rows = mode === 'text' ? Number(bytesArg) : Math.max(1, Math.round(Number(bytesArg) / rowBytes()));
	const makeBatch = mode === 'text' ? textBatch : batch;
	const db = await connect(dir);
	let table = null;

	for (let f = 0; f < fragments; f++)
	{
		const data = makeBatch(f * rows, rows);

		if (table === null)
			table = await db.createTable(name, data, {
				storageOptions: { newTableDataStorageVersion: versionArg || '2.1' },
			});
		else
			await table.add(data);
	}
	process.stdout.write(JSON.stringify({ fragments, rows_per_fragment: rows,
		rows: await table.countRows() }) + '\n');
}

main().catch((e) => {
	process.stderr.write(String(e.stack || e) + '\n');
	process.exit(1);
});
