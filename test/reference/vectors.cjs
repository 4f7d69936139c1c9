'use strict';
// vectors.cjs - a table of random float vectors for tests that need parts of a given size:
// pages no encoding shrinks, so a fragment of n rows has about n KiB of data.
const arrow = require('apache-arrow');

const vectorSchema = new arrow.Schema([
	new arrow.Field('id', new arrow.Int64(), false),
	new arrow.Field('vec', new arrow.FixedSizeList(256, new arrow.Field('item', new arrow.Float32(), true)), true),
]);

function vectorRows(start, count)
{
	const values = new Float32Array(count * 256).map(() => Math.random());
	const ids = BigInt64Array.from({ length: count }, (_, i) => BigInt(start + i));
	const [idField, vecField] = vectorSchema.fields;
	const children = [
		arrow.makeData({ type: idField.type, length: count, nullCount: 0, data: ids }),
		arrow.makeData({
			type: vecField.type, length: count, nullCount: 0,
			child: arrow.makeData({ type: new arrow.Float32(), length: count * 256, nullCount: 0, data: values }),
		}),
	];

	return new arrow.Table([new arrow.RecordBatch(vectorSchema,
		arrow.makeData({ type: new arrow.Struct(vectorSchema.fields), length: count, nullCount: 0, children }))]);
}

// Each row of a table of vectorSchema as "id:<the vector's bytes in base64>", sorted.
async function vectorDigests(table)
{
	const digests = [];

	for (const batch of (await table.query().toArrow()).batches)
	{
		const ids = batch.getChild('id');
		const vectors = batch.getChild('vec');

		for (let i = 0; i < batch.numRows; i++)
		{
			const v = vectors.get(i).toArray();

			digests.push(ids.get(i) + ':' + Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64'));
		}
	}
	return digests.sort();
}

module.exports = { vectorSchema, vectorRows, vectorDigests };
