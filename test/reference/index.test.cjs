'use strict';
// Append commits on a dataset with a scalar index: lancedb builds a btree index on `id`, we
// append an assembled fragment, and the index must still be listed, count the new fragment as
// unindexed, and filtered queries on `id` must return the right rows from old and new
// fragments, before and after lancedb's optimize() brings the index up to date.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const h = require('./harness.cjs');

const dir = h.scratchDir('index');

// Rows matching `keep` in each fragment, from the expected rows by fragment.
function filterFragments(fragments, keep)
{
	const result = new Map();

	for (const [id, rows] of fragments)
	{
		const kept = rows.filter(keep);

		if (kept.length > 0)
			result.set(id, kept);
	}
	return result;
}

async function assertQuery(table, filter, keep, expected, what)
{
	const got = await h.readFragments(table, filter);
	const want = filterFragments(expected, keep);

	assert.deepEqual([...got.fragments.keys()].sort((a, b) => a - b), [...want.keys()].sort((a, b) => a - b),
		what + ' "' + filter + '": fragments');
	for (const [id, rows] of want)
		h.assertRowsEqual(got.schema, got.fragments.get(id), rows, what + ' "' + filter + '" fragment ' + id);
}

const QUERIES = [
	['id = 5', (r) => r.id === '5'],
	['id = 470', (r) => r.id === '470'],
	['id >= 505', (r) => Number(r.id) >= 505],
	['id IN (0, 299, 300, 514)', (r) => ['0', '299', '300', '514'].includes(r.id)],
	['id < 3 OR id > 512', (r) => Number(r.id) < 3 || Number(r.id) > 512],
];

for (const name of ['2_0', '2_1', '2_2', '2_3'].flatMap((v) => ['types_' + v + '_v1', 'types_' + v + '_v2']))
{
	test(name + ': append after a btree index on id; the index stays and answers', async () => {
		const info = h.datasetInfo(name);
		const dataset = h.copyDataset(name, dir);
		const files = h.dataFiles(name);
		const table = await h.openTable(dataset);

		await table.createIndex('id', { config: h.lancedb.Index.btree() });
		const indexedVersion = await table.version();

		// New fragment: fragments 2 and 0, in that order.
		const parts = [files[2], files[0]];
		const target = h.createTarget(dataset);

		assert.equal(target.dataset_version, indexedVersion);
		const assembled = h.sqlRows('SELECT * FROM lance_parts.assemble(' + h.sqlJsonb(target) + ', ' +
			h.sqlTextArray(parts.map((f) => path.join(dataset, 'data', f.file))) + ')')[0];

		assert.equal(assembled.status, 'written', JSON.stringify(assembled));
		const committed = h.sqlRows('SELECT * FROM lance_parts.commit(' + h.sqlJsonb(target) + ')')[0];
		const newFragment = Number(committed.fragment_id);

		assert.equal(Number(committed.dataset_version), indexedVersion + 1);

		await table.checkoutLatest();
		assert.equal(await table.version(), indexedVersion + 1);
		const indices = await table.listIndices();

		assert.deepEqual(indices.map((i) => [i.name, i.columns]), [['id_idx', ['id']]]);
		const stats = await table.indexStats('id_idx');
		const newRows = parts.reduce((n, f) => n + f.num_rows, 0);

		assert.equal(stats.numIndexedRows, info.num_rows);
		assert.equal(stats.numUnindexedRows, newRows);

		const expected = h.expectedFragments(name);

		expected.set(newFragment, parts.flatMap((f) => expected.get(f.fragment_id)));
		for (const [filter, keep] of QUERIES)
			await assertQuery(table, filter, keep, expected, 'after our append');
		assert.match(await table.query().where('id = 5').explainPlan(), /ScalarIndexQuery/, 'the index is used');

		// lancedb builds on our version: optimize() compacts and brings the index up to date.
		await table.optimize();
		const after = await table.indexStats('id_idx');

		assert.equal(after.numUnindexedRows, 0);
		assert.equal(after.numIndexedRows, info.num_rows + newRows);
		assert.equal(await table.countRows(), info.num_rows + newRows);
		for (const [filter, keep] of QUERIES)
			assert.equal(await table.countRows(filter), [...filterFragments(expected, keep).values()].flat().length,
				'after optimize "' + filter + '"');
	});
}
