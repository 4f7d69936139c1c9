'use strict';
// Benchmark data, written by the reference implementation (npm lancedb).
//
//   node generate.cjs dataset DIR NAME FRAGMENTS BYTES_PER_FRAGMENT [DIM]
//       a dataset DIR/NAME.lance of FRAGMENTS fragments (one data file each)
//
// Rows: id int64, value float64, label utf8 (16 characters) and emb
// fixed_size_list<float32>[DIM] (default 128) of random numbers, about 560
// bytes a row by default, so pages are large and barely compressible, like
// embeddings.  Prints a JSON summary; the data files are
// DIR/NAME.lance/data/*.lance.

const arrow = require('apache-arrow');
const lancedb = require('@lancedb/lancedb');

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

async function main()
{
	const [mode, dir, name, fragmentsArg, bytesArg, dimArg] = process.argv.slice(2);

	if (mode !== 'dataset' || !dir || !name)
		throw new Error('usage: node generate.cjs dataset DIR NAME FRAGMENTS BYTES_PER_FRAGMENT [DIM]');
	if (dimArg)
		DIM = Number(dimArg);
	const fragments = Number(fragmentsArg);
	const rows = Math.max(1, Math.round(Number(bytesArg) / rowBytes()));
	const db = await lancedb.connect(dir);
	let table = null;

	for (let f = 0; f < fragments; f++)
	{
		const data = batch(f * rows, rows);

		if (table === null)
			table = await db.createTable(name, data, {
				storageOptions: { newTableDataStorageVersion: '2.1' },
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
