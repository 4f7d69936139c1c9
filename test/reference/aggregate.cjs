'use strict';
// Aggregates of a benchmark-shaped dataset (bench/generate.cjs: id int64, value float64,
// label utf8, emb fixed_size_list<float32>) computed by the reference implementation
// (npm lancedb), streaming its record batches, for tests that cannot compare millions of
// rows one by one. Prints {"rows", "sum_id", "label_bytes", "min_value", "max_value",
// "max_emb_last"} with the sums and the floats as strings (floats in their shortest exact
// form, which callers' JSON parsers might round).
//
// Usage: LANCEDB_LOG=error node aggregate.cjs DIR NAME

const lancedb = require('@lancedb/lancedb');

async function main()
{
	const [dir, name] = process.argv.slice(2);
	const table = await (await lancedb.connect(dir)).openTable(name);
	const encoder = new TextEncoder();
	let rows = 0;
	let sumId = 0n;
	let labelBytes = 0;
	let minValue = Infinity;
	let maxValue = -Infinity;
	let maxEmbLast = -Infinity;

	for await (const batch of table.query())
	{
		const ids = batch.getChild('id');
		const values = batch.getChild('value');
		const labels = batch.getChild('label');
		const emb = batch.getChild('emb');

		for (let i = 0; i < batch.numRows; i++)
		{
			const value = values.get(i);
			const vector = emb.get(i);

			sumId += ids.get(i);
			labelBytes += encoder.encode(labels.get(i)).length;
			minValue = Math.min(minValue, value);
			maxValue = Math.max(maxValue, value);
			maxEmbLast = Math.max(maxEmbLast, vector.get(vector.length - 1));
		}
		rows += batch.numRows;
	}
	process.stdout.write(JSON.stringify({ rows, sum_id: sumId.toString(), label_bytes: labelBytes,
		min_value: String(minValue), max_value: String(maxValue), max_emb_last: String(maxEmbLast) }) + '\n');
}

main().catch((e) => {
	process.stderr.write(String(e.stack || e) + '\n');
	process.exit(1);
});
