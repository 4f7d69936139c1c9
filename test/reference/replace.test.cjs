'use strict';
// Column replacement (commit mode 'replace', Lance's DataReplacement), the flow of Lance's
// write_columns_from_parts: a target made for the column `id` only (field id 0), parts written
// by lancedb as separate one-column tables (whose only field therefore also has id 0),
// assembled and committed over one fragment.  lancedb must read the new ids in that fragment
// and every other column and fragment unchanged.
//
// DataReplacement swaps a data file whose field set equals the new file's.  So the dataset
// keeps `id` in a data file of its own: it is created with `id` only and its other columns are
// added afterwards (addColumns writes them into new data files).  A fragment whose single data
// file holds `id` together with other columns (the generated types datasets) is refused.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const arrow = require('apache-arrow');
const h = require('./harness.cjs');

const dir = h.scratchDir('replace');
const ID_SCHEMA = new arrow.Schema([new arrow.Field('id', new arrow.Int64(), false)]);

// A table of one non-null int64 column `id` with the values first .. first+count-1.
function idTable(first, count)
{
	const values = BigInt64Array.from({ length: count }, (_, i) => BigInt(first + i));
	const batch = arrow.tableFromArrays({ id: values }).batches[0];

	return new arrow.Table(ID_SCHEMA, [new arrow.RecordBatch(ID_SCHEMA, batch.data)]);
}

function storageOptions(fileVersion, scheme)
{
	return {
		newTableDataStorageVersion: fileVersion,
		newTableEnableV2ManifestPaths: scheme === 'v2' ? 'true' : 'false',
	};
}

// A dataset whose fragments hold `id` in one data file and the other columns in another.
async function createBase(db, name, fileVersion, scheme, appends)
{
	let first = 0;
	let table = null;

	for (const rows of appends)
	{
		if (table === null)
			table = await db.createTable(name, idTable(first, rows), { storageOptions: storageOptions(fileVersion, scheme) });
		else
			await table.add(idTable(first, rows));
		first += rows;
	}
	await table.addColumns([
		{ name: 'x', valueSql: 'id * 3' },
		{ name: 's', valueSql: "concat('row ', cast(id AS string))" },
		{ name: 'f', valueSql: 'cast(id AS double) / 4' },
	]);
	return table;
}

// A one-column `id` table written by lancedb with one append: its single data file.
async function writeIdPart(db, name, fileVersion, first, rows)
{
	await db.createTable(name, idTable(first, rows), { storageOptions: storageOptions(fileVersion, 'v2') });
	const dataDir = path.join(dir, name + '.lance', 'data');
	const files = fs.readdirSync(dataDir).filter((n) => n.endsWith('.lance'));

	assert.equal(files.length, 1, 'one data file in ' + dataDir);
	return { path: path.join(dataDir, files[0]), rows };
}

// The part's footer schema is the single field id 0, as the target's.
function assertIdOnlyFile(file, fileVersion)
{
	const schema = h.sqlRows('SELECT field_id, parent_id, name, logical_type, nullable FROM lance_parts.file_schema(' +
		h.literal(file) + ')');

	assert.deepEqual(schema, [{ field_id: 0, parent_id: -1, name: 'id', logical_type: 'int64', nullable: false }]);
	assert.equal(h.sqlRows('SELECT version FROM lance_parts.file_info(' + h.literal(file) + ')')[0].version, fileVersion);
}

function commitSql(target, fragmentId)
{
	return 'SELECT * FROM lance_parts.commit(' + h.sqlJsonb(target) + ", 'replace', " + fragmentId + ')';
}

const CASES = [['2.0', 'v1'], ['2.1', 'v2'], ['2.2', 'v1'], ['2.3', 'v2']];

for (const [fileVersion, scheme] of CASES)
{
	test('replace the id column of one fragment, file version ' + fileVersion + ', manifest ' + scheme, async () => {
		const tag = fileVersion.replace('.', '_');
		const db = await h.lancedb.connect(dir);
		const base = await createBase(db, 'base_' + tag, fileVersion, scheme, [10, 7, 5]);
		const datasetPath = path.join(dir, 'base_' + tag + '.lance');
		const before = await h.readFragments(base);
		const version = await base.version();
		const parts = [
			await writeIdPart(db, 'part_a_' + tag, fileVersion, 1000, 4),
			await writeIdPart(db, 'part_b_' + tag, fileVersion, 1004, 3),
		];

		for (const p of parts)
			assertIdOnlyFile(p.path, fileVersion);

		const target = h.createTarget(datasetPath, { columns: ['id'] });

		assert.deepEqual(target.columns, ['id']);
		assert.deepEqual(target.fields.map((f) => [f.id, f.name]), [[0, 'id']]);
		assert.equal(target.file_version, fileVersion);

		const assembled = h.sqlRows('SELECT * FROM lance_parts.assemble(' + h.sqlJsonb(target) + ', ' +
			h.sqlTextArray(parts.map((p) => p.path)) + ')')[0];

		assert.equal(assembled.status, 'written', JSON.stringify(assembled));
		assert.equal(Number(assembled.num_rows), 7);

		// Fragment 0 has 10 rows, not 7: refused, nothing committed.
		assert.throws(() => h.sqlRows(commitSql(target, 0)), /has 7 rows but fragment 0 has 10/);
		assert.equal(h.manifestNames(datasetPath).all.length, version, 'no version after the refused commit');

		const committed = h.sqlRows(commitSql(target, 1))[0];

		assert.deepEqual([Number(committed.dataset_version), Number(committed.fragment_id)], [version + 1, 1]);
		assert.deepEqual(h.manifestNames(datasetPath)[scheme === 'v1' ? 'v2' : 'v1'], []);

		const table = await h.openTable(datasetPath);

		assert.equal(await table.version(), version + 1);
		assert.equal(await table.countRows(), 22);
		const after = await h.readFragments(table);
		const expected = before.fragments.get(1).map((row, i) => ({ ...row, id: String(1000 + i) }));

		assert.deepEqual([...after.fragments.keys()], [0, 1, 2]);
		h.assertRowsEqual(after.schema, after.fragments.get(0), before.fragments.get(0), 'fragment 0');
		h.assertRowsEqual(after.schema, after.fragments.get(1), expected, 'fragment 1 (new ids, other columns kept)');
		h.assertRowsEqual(after.schema, after.fragments.get(2), before.fragments.get(2), 'fragment 2');
		assert.equal(await table.countRows('id >= 1000'), 7);

		await h.lancedbModifies(table);
	});
}

test('replace is refused where id shares its data file with other columns', async () => {
	const name = 'types_2_2_v2';
	const info = h.datasetInfo(name);
	const datasetPath = h.copyDataset(name, dir);
	const db = await h.lancedb.connect(dir);
	const part = await writeIdPart(db, 'part_types', '2.2', 5000, info.fragments['0']);
	const target = h.createTarget(datasetPath, { columns: ['id'] });

	assertIdOnlyFile(part.path, '2.2');
	assert.equal(h.sqlRows('SELECT status FROM lance_parts.assemble(' + h.sqlJsonb(target) + ', ' +
		h.sqlTextArray([part.path]) + ')')[0].status, 'written');
	assert.throws(() => h.sqlRows(commitSql(target, 0)), /holds only some of the fields being replaced/);

	const table = await h.openTable(datasetPath);

	assert.equal(await table.version(), info.version);
	assert.equal(await table.countRows('id >= 5000'), 0);
	assert.equal(h.sqlRows('SELECT lance_parts.cleanup_target(' + h.sqlJsonb(target) + ') AS removed')[0].removed, true);
	assert.ok(!fs.existsSync(path.join(datasetPath, 'data', target.file_name)), 'cleanup_target removed the file');
});

// Lance's DataReplacement removes the replaced fragment from the fragment bitmap of every
// index on a replaced field; lance_parts refuses such a replacement instead (it would leave
// the index answering from the old values).  The hinted way round works: drop the index,
// replace, create the index again.
test('replace of an indexed column is refused; drop index, replace, reindex works', async () => {
	const db = await h.lancedb.connect(dir);
	const base = await createBase(db, 'indexed', '2.2', 'v2', [10, 7, 5]);
	const datasetPath = path.join(dir, 'indexed.lance');

	await base.createIndex('id', { config: h.lancedb.Index.btree() });
	const version = await base.version();
	const before = await h.readFragments(base);
	const part = await writeIdPart(db, 'part_indexed', '2.2', 1000, 7);
	const target = h.createTarget(datasetPath, { columns: ['id'] });

	assert.equal(h.sqlRows('SELECT status FROM lance_parts.assemble(' + h.sqlJsonb(target) + ', ' +
		h.sqlTextArray([part.path]) + ')')[0].status, 'written');
	assert.throws(() => h.sqlRows(commitSql(target, 1)), /fragment 1 of dataset .* is covered by an index on the replaced columns/);
	await base.checkoutLatest();
	assert.equal(await base.version(), version, 'no version after the refusal');
	assert.equal(await base.countRows('id = 12'), 1);

	await base.dropIndex('id_idx');
	const committed = h.sqlRows(commitSql(target, 1))[0];

	assert.equal(Number(committed.dataset_version), version + 2);
	// A handle still at the version before our commit loses to it: Lance reads our
	// transaction and reports the conflict.
	await assert.rejects(base.createIndex('id', { config: h.lancedb.Index.btree() }),
		/CreateIndex transaction was preempted by concurrent transaction DataReplacement/);

	const table = await h.openTable(datasetPath);

	await table.createIndex('id', { config: h.lancedb.Index.btree() });

	assert.equal((await table.indexStats('id_idx')).numUnindexedRows, 0);
	assert.equal(await table.countRows('id = 12'), 0, 'id = 12 (replaced)');
	assert.equal(await table.countRows('id = 1002'), 1, 'id = 1002 (new)');
	assert.equal(await table.countRows('id = 3'), 1, 'id = 3 (fragment 0)');
	assert.equal(await table.countRows('id = 19'), 1, 'id = 19 (fragment 2)');
	const found = await h.readFragments(table, 'id = 1002');

	h.assertRowsEqual(found.schema, found.fragments.get(1), [{ ...before.fragments.get(1)[2], id: '1002' }], 'row of id 1002');
	await h.lancedbModifies(table);
});

// An index on another column than the replaced ones does not stand in the way.
test('replace of a column next to an index on another column', async () => {
	const db = await h.lancedb.connect(dir);
	const base = await createBase(db, 'other_index', '2.1', 'v1', [10, 7, 5]);
	const datasetPath = path.join(dir, 'other_index.lance');

	await base.createIndex('x', { config: h.lancedb.Index.btree() });
	const part = await writeIdPart(db, 'part_other_index', '2.1', 2000, 5);
	const target = h.createTarget(datasetPath, { columns: ['id'] });

	assert.equal(h.sqlRows('SELECT status FROM lance_parts.assemble(' + h.sqlJsonb(target) + ', ' +
		h.sqlTextArray([part.path]) + ')')[0].status, 'written');
	h.sqlRows(commitSql(target, 2));
	const table = await h.openTable(datasetPath);

	assert.deepEqual((await table.listIndices()).map((i) => i.name), ['x_idx']);
	assert.equal(await table.countRows('id >= 2000'), 5);
	// x still answers through its index for the replaced fragment (x = 3 * old id).
	const found = await h.readFragments(table, 'x = 57');

	assert.deepEqual(found.fragments.get(2), [{ id: '2002', x: '57', s: 'row 19', f: 4.75 }]);
});
