'use strict';
// A dataset with a Blob v2 column written by the reference (npm lancedb), for bench/compact_blobs.sh:
// FRAGMENTS appends of ROWS rows (id, payload), each payload SIZE random bytes, so that with
// lancedb's default thresholds payloads of more than 64 KiB go Packed and of more than 4 MiB
// Dedicated; every fragment's sidecars start at blob id 1, so compaction must renumber them.
// Prints {"bytes": total payload bytes}.
//
//   node blob_dataset.cjs DIR NAME FRAGMENTS ROWS SIZE VERSION

const crypto = require('node:crypto');
const arrow = require('apache-arrow');
const lancedb = require('@lancedb/lancedb');
const { connect } = require('./connect.cjs');

async function main()
{
	const [dir, name, fragments, rows, size, version] = process.argv.slice(2);
	const db = await connect(dir);
	const blobField = lancedb.blob('payload');
	const schema = new arrow.Schema([new arrow.Field('id', new arrow.Int64(), false), blobField]);
	let table = null;
	let bytes = 0;

	for (let f = 0; f < Number(fragments); f++)
	{
		const ids = BigInt64Array.from({ length: Number(rows) }, (_, i) => BigInt(f * Number(rows) + i));
		const payloads = Array.from({ length: Number(rows) }, () => crypto.randomBytes(Number(size)));
		const data = arrow.tableFromArrays({ id: ids });
		const offsets = new BigInt64Array(payloads.length + 1);

		payloads.forEach((p, i) => { offsets[i + 1] = offsets[i] + BigInt(p.length); });
		const values = Buffer.concat(payloads);
		const dataVector = arrow.makeData({ type: new arrow.LargeBinary(), length: payloads.length, nullCount: 0, valueOffsets: offsets, data: values });
		const uriVector = arrow.makeData({ type: new arrow.Utf8(), length: payloads.length, nullCount: payloads.length,
			nullBitmap: new Uint8Array(Math.ceil(payloads.length / 8)), valueOffsets: new Int32Array(payloads.length + 1), data: new Uint8Array(0) });
		const structData = arrow.makeData({ type: blobField.type, length: payloads.length, nullCount: 0, children: [dataVector, uriVector] });
		const batch = new arrow.RecordBatch(schema, arrow.makeData({ type: new arrow.Struct(schema.fields), length: payloads.length,
			nullCount: 0, children: [data.getChild('id').data[0], structData] }));
		const input = new arrow.Table([batch]);

		bytes += values.length;
		if (table === null)
			table = await db.createTable(name, input, { storageOptions: { newTableDataStorageVersion: version } });
		else
			await table.add(input);
	}
	process.stdout.write(JSON.stringify({ bytes }) + '\n');
}

main().catch((e) => {
	process.stderr.write(String(e.stack || e) + '\n');
	process.exit(1);
});
