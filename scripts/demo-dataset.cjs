'use strict';
// demo-dataset.cjs DIR - write, with the reference implementation (npm lancedb),
// a small Lance dataset DIR/products.lance (file version 2.1, 100 rows) and the
// parts an ingestion job would produce for it: DIR/incoming.lance, written by
// three "workers" (a create and two appends of the same schema), whose three
// data files are complete Lance files with the dataset's field ids.
//
// Run with NODE_PATH=test/reference/node_modules (scripts/demo.sh does).  Arrow is
// loaded through require: lancedb rejects types made by a second (ESM) copy.

const arrow = require('apache-arrow');
const lancedb = require('@lancedb/lancedb');

const VECTOR_SIZE = 4;
const WORDS = ['anchor', 'bolt', 'cable', 'drill', 'epoxy', 'file', 'gasket', 'hinge'];

const schema = new arrow.Schema([
	new arrow.Field('id', new arrow.Int64(), false),
	new arrow.Field('name', new arrow.Utf8(), true),
	new arrow.Field('price', new arrow.Float64(), true),
	new arrow.Field('in_stock', new arrow.Bool(), true),
	new arrow.Field('embedding',
		new arrow.FixedSizeList(VECTOR_SIZE, new arrow.Field('item', new arrow.Float32(), true)), true),
]);

// Rows first .. first+count-1; every seventh price is null.
function batch(first, count)
{
	const ids = [];
	const names = [];
	const prices = [];
	const inStock = [];
	const embeddings = [];

	for (let row = first; row < first + count; row++)
	{
		ids.push(BigInt(row));
		names.push(`${WORDS[row % WORDS.length]} ${row}`);
		prices.push(row % 7 === 0 ? null : Math.round(row * 137.5) / 100);
		inStock.push(row % 3 !== 0);
		embeddings.push(Array.from({ length: VECTOR_SIZE }, (_, i) => Math.fround((row + i) / 10)));
	}
	return new arrow.Table(schema, {
		id: arrow.vectorFromArray(ids, schema.fields[0].type),
		name: arrow.vectorFromArray(names, schema.fields[1].type),
		price: arrow.vectorFromArray(prices, schema.fields[2].type),
		in_stock: arrow.vectorFromArray(inStock, schema.fields[3].type),
		embedding: arrow.vectorFromArray(embeddings, schema.fields[4].type),
	});
}

async function main()
{
	const dir = process.argv[2];

	if (!dir)
		throw new Error('usage: node demo-dataset.cjs DIR');

	const db = await lancedb.connect(dir);
	const options = { mode: 'overwrite', storageOptions: { newTableDataStorageVersion: '2.1' } };
	const products = await db.createTable('products', batch(0, 100), options);
	const partRows = [50, 25, 40];
	const incoming = await db.createTable('incoming', batch(100, partRows[0]), options);

	await incoming.add(batch(100 + partRows[0], partRows[1]));
	await incoming.add(batch(100 + partRows[0] + partRows[1], partRows[2]));
	console.log(`wrote ${dir}/products.lance: ${await products.countRows()} rows, version ${await products.version()}`);
	console.log(`wrote ${dir}/incoming.lance: ${partRows.length} parts of ${partRows.join(', ')} rows`);
}

main().catch((error) => {
	console.error(error);
	process.exit(1);
});
