'use strict';
// lance_parts.compact: compaction by page copy, committed as a Lance Rewrite.  lancedb reads
// the same rows, in the same order, from fewer fragments, and keeps working on the result;
// fragments the rewrite must not touch (deletion files, indexes it cannot remap) are skipped with
// their reason.
const test = require('node:test');
const assert = require('node:assert/strict');
const h = require('./harness.cjs');

const dir = h.scratchDir('compact');

// Every row of the table in row-id order, without row ids.
async function rowsInOrder(table)
{
	const { schema, fragments } = await h.readFragments(table);
	const ids = [...fragments.keys()].sort((a, b) => a - b);

	return { schema, fragmentIds: ids, rows: ids.flatMap((id) => fragments.get(id)) };
}

function compact(dataset, args)
{
	return h.sqlRows('SELECT * FROM lance_parts.compact(' + h.literal(dataset) + (args ? ', ' + args : '') + ')');
}

// Many small fragments: the three generated ones plus `extra` appends of `rows` rows by lancedb.
async function manySmallFragments(name, extra, rows)
{
	const dataset = h.copyDataset(name, dir + '/' + name + '-' + extra);
	const table = await h.openTable(dataset);
	const first = await table.query().limit(rows).toArrow();

	for (let i = 0; i < extra; i++)
		await table.add(first);
	return { dataset, table };
}

for (const version of ['2_0', '2_1', '2_2', '2_3'])
{
	for (const scheme of ['v1', 'v2'])
	{
		const name = 'types_' + version + '_' + scheme;

		test(name + ': small fragments become one, with the same rows', async () => {
			const { dataset, table } = await manySmallFragments(name, 8, 20);
			const before = await rowsInOrder(table);
			const versionBefore = await table.version();

			assert.equal(before.fragmentIds.length, 11);
			const result = compact(dataset);

			assert.equal(result.length, 11);
			for (const row of result)
			{
				assert.equal(row.action, 'rewritten', JSON.stringify(row));
				assert.equal(Number(row.dataset_version), versionBefore + 1);
			}
			assert.equal(new Set(result.map((r) => r.new_fragment_id)).size, 1);

			await table.checkoutLatest();
			const after = await rowsInOrder(table);

			assert.equal(after.fragmentIds.length, 1);
			h.assertRowsEqual(after.schema, after.rows, before.rows, 'rows after compact');
			assert.deepEqual(h.manifestNames(dataset)[scheme === 'v2' ? 'v1' : 'v2'], [],
				'manifests keep the dataset naming scheme');
			await h.lancedbModifies(table);
		});
	}
}

test('target_rows_per_fragment and fragment_ids choose the groups', async () => {
	const dataset = h.copyDataset('types_2_1_v1', dir + '/limits');
	const table = await h.openTable(dataset);
	const before = await rowsInOrder(table);

	// 300 + 170 would exceed 400 rows: fragment 0 stays, 1 and 2 (170 + 45) merge
	const result = compact(dataset, 'target_rows_per_fragment => 400');
	const byId = new Map(result.map((r) => [Number(r.fragment_id), r]));

	assert.equal(byId.get(0).action, 'skipped');
	assert.equal(byId.get(0).reason, 'no_adjacent_fragment');
	assert.equal(byId.get(1).action, 'rewritten');
	assert.equal(byId.get(2).action, 'rewritten');
	await table.checkoutLatest();
	const after = await rowsInOrder(table);

	assert.equal(after.fragmentIds.length, 2);
	h.assertRowsEqual(after.schema, after.rows, before.rows, 'rows after compact');

	// only the fragments named take part
	const copy = h.copyDataset('types_2_1_v1', dir + '/selected');
	const selected = compact(copy, 'fragment_ids => ARRAY[0, 1]::bigint[]');

	assert.deepEqual(selected.map((r) => [Number(r.fragment_id), r.action, r.reason]),
		[[0, 'rewritten', null], [1, 'rewritten', null], [2, 'skipped', 'not_selected']]);
	assert.throws(() => compact(copy, 'fragment_ids => ARRAY[42]::bigint[]'), /has no fragment 42/);
});

test('fragments with deletion files are skipped, and keep their deletions', async () => {
	const info = h.datasetInfo('deleted_2_2');
	const dataset = h.copyDataset('deleted_2_2', dir + '/deleted');
	const result = compact(dataset);
	const reasons = Object.fromEntries(result.map((r) => [Number(r.fragment_id), r.reason]));

	assert.equal(reasons[0], 'deletion_file');
	assert.equal(reasons[2], 'deletion_file');
	assert.equal(reasons[1], 'no_adjacent_fragment');
	assert.equal(await (await h.openTable(dataset)).countRows(), info.num_rows);
});

test('fragments an index compaction cannot remap covers (full text) are skipped; the others are compacted', async () => {
	const { dataset, table } = await manySmallFragments('types_2_2_v2', 0, 0);

	await table.createIndex('s', { config: h.lancedb.Index.fts() });
	const first = await table.query().limit(10).toArrow();

	await table.add(first);
	await table.add(first);
	const before = await rowsInOrder(table);
	const result = compact(dataset);
	const actions = result.map((r) => [Number(r.fragment_id), r.action, r.reason]);

	assert.deepEqual(actions, [[0, 'skipped', 'indexed'], [1, 'skipped', 'indexed'], [2, 'skipped', 'indexed'],
		[3, 'rewritten', null], [4, 'rewritten', null]]);
	await table.checkoutLatest();
	const after = await rowsInOrder(table);

	assert.equal(after.fragmentIds.length, 4);
	h.assertRowsEqual(after.schema, after.rows, before.rows, 'rows after compact');
	assert.equal(await table.countRows('id = 5'), 3, 'the query sees old and new rows');
	assert.ok((await table.listIndices()).some((i) => i.columns.includes('s')));
	await table.optimize();
	assert.equal(await table.countRows(), before.rows.length);
});

test('nothing to compact: no new version', async () => {
	const dataset = h.copyDataset('types_2_3_v1', dir + '/nothing');
	const table = await h.openTable(dataset);
	const version = await table.version();
	const result = compact(dataset, 'target_rows_per_fragment => 100');

	assert.ok(result.every((r) => r.action === 'skipped'));
	assert.deepEqual(result.map((r) => r.reason), ['large_enough', 'large_enough', 'no_adjacent_fragment']);
	await table.checkoutLatest();
	assert.equal(await table.version(), version);
});
