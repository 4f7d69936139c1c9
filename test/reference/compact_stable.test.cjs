'use strict';
// lance_parts.compact on datasets lancedb made with stable row ids, in every file version and
// both manifest naming schemes: small fragments, some with lancedb's deletion files, most of
// them covered by a BTREE index.  Every such fragment is rewritten (none skipped as indexed or
// for its deletion file); lancedb then reads the same rows with the same _rowid, the index
// still covers what it covered (indexStats) and answers as before, and lancedb appends,
// compacts and builds a new index on top.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const arrow = require('apache-arrow');
const lancedb = require('@lancedb/lancedb');
const h = require('./harness.cjs');
const { encodeRows } = require('./values.cjs');
const { latestManifestFile } = require('./lancemeta.cjs');

const dir = h.scratchDir('compact-stable');

const rowsOf = (first, n) => new arrow.Table({
	id: arrow.vectorFromArray(BigInt64Array.from({ length: n }, (_, i) => BigInt(first + i))),
	s: arrow.vectorFromArray(Array.from({ length: n }, (_, i) => 'value ' + (first + i)), new arrow.Utf8()),
});

// Rows as "id _rowid s" strings, in id order.
async function rowsWithIds(table)
{
	return encodeRows(await table.query().withRowId().toArrow())
		.map((r) => [Number(r.id), Number(r._rowid), r.s])
		.sort((a, b) => a[0] - b[0])
		.map((r) => r.join(' '));
}

// What the index answers: ids of a point, an IN list and a range query, with their row ids.
async function indexedAnswers(table)
{
	const answers = [];

	for (const filter of ['id = 33', 'id IN (2, 15, 47, 58)', 'id >= 40 AND id < 52'])
		answers.push(encodeRows(await table.query().where(filter).withRowId().toArrow())
			.map((r) => Number(r.id) + ':' + Number(r._rowid)).sort());
	return answers;
}

for (const version of ['2.0', '2.1', '2.2', '2.3'])
{
	for (const naming of ['v1', 'v2'])
	{
		test(`${version} ${naming}: stable row ids, deletion files and an index survive compaction`, async () => {
			const name = `stable_${version.replace('.', '_')}_${naming}`;
			const db = await lancedb.connect(dir);
			const table = await db.createTable(name, rowsOf(0, 10), {
				storageOptions: {
					newTableEnableStableRowIds: 'true',
					newTableDataStorageVersion: version,
					newTableEnableV2ManifestPaths: naming === 'v2' ? 'true' : 'false',
				},
			});
			const dataset = path.join(dir, name + '.lance');

			for (let first = 10; first < 60; first += 10)
				await table.add(rowsOf(first, 10));
			await table.delete('id % 7 = 3');	// deletion files in every fragment
			await table.createIndex('id', { config: lancedb.Index.btree() });
			await table.add(rowsOf(60, 5));		// a fragment the index does not cover
			await table.add(rowsOf(65, 5));
			const before = await rowsWithIds(table);
			const answersBefore = await indexedAnswers(table);
			const statsBefore = await table.indexStats('id_idx');

			const result = h.sqlRows(`SELECT * FROM lance_parts.compact(${h.literal(dataset)}, rewrite_deletions => true)`);

			assert.deepEqual(result.filter((r) => r.action !== 'rewritten'), [], 'every fragment rewritten');
			// the index's fragments and the others are not merged together
			assert.equal(new Set(result.map((r) => r.new_fragment_id)).size, 2);

			await table.checkoutLatest();
			assert.deepEqual(await rowsWithIds(table), before, 'the same rows with the same row ids');
			assert.deepEqual(await indexedAnswers(table), answersBefore, 'the index answers as before');
			const statsAfter = await table.indexStats('id_idx');

			assert.equal(statsAfter.numIndexedRows, statsBefore.numIndexedRows);
			assert.equal(statsAfter.numUnindexedRows, statsBefore.numUnindexedRows);
			assert.equal((await table.stats()).fragmentStats.numFragments, 2);

			// lancedb goes on from there: appends, compacts, indexes
			await table.add(rowsOf(70, 5));
			await table.optimize();
			await table.createIndex('s', { config: lancedb.Index.btree() });
			const last = await rowsWithIds(table);

			assert.deepEqual(last.slice(0, before.length), before, 'row ids kept by lancedb too');
			assert.equal(last.length, before.length + 5);
			assert.equal(await table.countRows("s = 'value 71'"), 1);
		});
	}
}

test('a fragment whose row ids do not count its rows: ERROR naming it, nothing published', async () => {
	const db = await lancedb.connect(dir);
	const name = 'stable_corrupt';
	const table = await db.createTable(name, rowsOf(0, 10), { storageOptions: { newTableEnableStableRowIds: 'true' } });
	const dataset = path.join(dir, name + '.lance');

	await table.add(rowsOf(10, 10));
	const version = await table.version();
	// fragment 1's row ids are the range 10..20 (Range {start 10, end 20}: 08 0a 10 14); make
	// it 10..19, one id short of its rows, in place
	const { file } = latestManifestFile(dataset);
	const bytes = fs.readFileSync(file);
	const range = Buffer.from([0x08, 0x0a, 0x10, 0x14]);
	const at = bytes.indexOf(range);

	assert.ok(at >= 0 && bytes.indexOf(range, at + 1) < 0, 'one range 10..20 in the manifest');
	bytes[at + 3] = 0x13;
	fs.writeFileSync(file, bytes);
	assert.throws(() => h.psqlLines(`\\set VERBOSITY verbose
SELECT * FROM lance_parts.compact(${h.literal(dataset)});
`), (error) => /XX001/.test(String(error.stderr)) && /row ids of fragment 1 /.test(String(error.stderr)) &&
		/do not count the rows/.test(String(error.stderr)));
	await table.checkoutLatest();
	assert.equal(await table.version(), version, 'nothing published');
});

// Lance's Append and Overwrite give each new fragment the next row ids and keep the dataset's
// stable row ids; so do write_dataset's appends of several fragments and its overwrite.
test('write_dataset appends several fragments and overwrites: row ids go on from next_row_id', async () => {
	const db = await lancedb.connect(dir);
	const name = 'stable_write';
	const table = await db.createTable(name, rowsOf(0, 10), { storageOptions: { newTableEnableStableRowIds: 'true' } });
	const dataset = path.join(dir, name + '.lance');
	const write = (mode, from, to) => h.sqlRows(`SELECT * FROM lance_parts.write_dataset(${h.literal(dataset)},
		'SELECT g::bigint AS id, ''value '' || g AS s FROM generate_series(${from}, ${to}) g',
		mode => '${mode}', max_rows_per_file => 4)`)[0];

	assert.equal(write('append', 10, 19).fragments, 3);
	await table.checkoutLatest();
	assert.deepEqual((await rowsWithIds(table)).map((r) => r.split(' ').slice(0, 2).join(' ')),
		Array.from({ length: 20 }, (_, i) => i + ' ' + i));

	assert.equal(write('overwrite', 100, 104).fragments, 2);
	await table.checkoutLatest();
	assert.deepEqual((await rowsWithIds(table)).map((r) => r.split(' ').slice(0, 2).join(' ')),
		Array.from({ length: 5 }, (_, i) => (100 + i) + ' ' + (20 + i)));
	await table.add(rowsOf(200, 2));
	assert.deepEqual((await rowsWithIds(table)).slice(-2).map((r) => r.split(' ')[1]), ['25', '26']);
});
