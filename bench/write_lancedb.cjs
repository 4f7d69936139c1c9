'use strict';
// bench/write.sh's reference writer: npm lancedb writing the rows bench/write.sh's query
// makes, from Arrow data already in memory.
//
//   node write_lancedb.cjs DIR ROWS DIM FILE_VERSION
//
// Builds ROWS rows (id int64, k int32, x float64, y float32, label utf8 and emb
// fixed_size_list<float32>[DIM]) with the same formulas as bench/write.sh's table, then times
// only createTable (one dataset DIR/lancedb.lance; lancedb's default of 1,048,576 rows a file
// is write_dataset's).  Prints JSON: rows, seconds, bytes (of the data files).
const fs = require('node:fs');
const path = require('node:path');
const arrow = require('apache-arrow');
const { connect } = require('./connect.cjs');

// The value formulas, the same as write.sh's SQL: integers, then divisions of them.
function columns(rows, dim)
{
	const id = new BigInt64Array(rows);
	const k = new Int32Array(rows);
	const x = new Float64Array(rows);
	const y = new Float32Array(rows);
	const label = new Array(rows);
	const emb = new Float32Array(rows * dim);

	for (let i = 0; i < rows; i++)
	{
		const g = i + 1;

		id[i] = BigInt(g);
		k[i] = g % 1000;
		x[i] = (g * 7919 % 100003) / 100003;
		y[i] = (g * 104729 % 65521) / 256;
		label[i] = 'label ' + g + ' ' + (g % 97);
		for (let j = 0; j < dim; j++)
			emb[i * dim + j] = ((g * 131 + j * 17) % 10007) / 10007;
	}
	const embData = arrow.makeData({
		type: new arrow.FixedSizeList(dim, new arrow.Field('item', new arrow.Float32(), true)),
		length: rows,
		nullCount: 0,
		child: arrow.makeData({ type: new arrow.Float32(), length: rows * dim, data: emb }),
	});

	return new arrow.Table({
		id: arrow.makeVector(id),
		k: arrow.makeVector(k),
		x: arrow.makeVector(x),
		y: arrow.makeVector(y),
		label: arrow.vectorFromArray(label, new arrow.Utf8()),
		emb: arrow.makeVector(embData),
	});
}

function dataBytes(dataset)
{
	const data = path.join(dataset, 'data');

	return fs.readdirSync(data).reduce((sum, f) => sum + fs.statSync(path.join(data, f)).size, 0);
}

async function main()
{
	const [dir, rowsText, dimText, version] = process.argv.slice(2);
	const rows = Number(rowsText);
	const table = columns(rows, Number(dimText));
	const db = await connect(dir);
	const start = process.hrtime.bigint();

	await db.createTable('lancedb', table, { storageOptions: { newTableDataStorageVersion: version } });
	const seconds = Number(process.hrtime.bigint() - start) / 1e9;

	console.log(JSON.stringify({ rows, seconds, bytes: dataBytes(path.join(dir, 'lancedb.lance')) }));
}

main().catch((e) => { console.error(e); process.exit(1); });
