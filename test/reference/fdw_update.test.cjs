'use strict';
// UPDATE on lance_fdw tables: the old rows deleted (new Lance deletion files) and the new rows
// appended, published with the PostgreSQL transaction as one Lance Update (this file clears the
// PGOPTIONS test/run.sh sets for the tests written against 0.2.0).
//
//  - The generated datasets of file versions 2.0 to 2.3 under both manifest naming schemes and
//    one with lancedb's deletion files: lancedb reads every row, the updated ones with their new
//    values, in one new version; lance_fdw reads what lancedb writes on top.
//  - RETURNING; ROLLBACK; an UPDATE racing a DELETE of the same fragment: the later COMMIT
//    fails with 40001; a dataset with stable row ids keeps the row ids of the rows updated; on S3.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const lancedb = require('@lancedb/lancedb');
const h = require('./harness.cjs');
const { fdwWriteFixture, lancedbRows } = require('./fdw_writes.cjs');
const { startS3Server } = require('./s3_server.cjs');
const { encodeRows } = require('./values.cjs');
const { psqlLines, psqlAsync, literal } = require('./pg.cjs');

delete process.env.PGOPTIONS;

const { importCopy, threeFragments } = fdwWriteFixture('fdw_update');

const datasets = JSON.parse(fs.readFileSync(path.join(h.TESTDATA, 'manifest.json'), 'utf8')).datasets
	.filter((d) => /^types_2_[0-3]_v[12]$/.test(d.name) || d.name === 'deleted_2_2')
	.map((d) => d.name);

for (const name of datasets)
{
	test(`UPDATE of ${name}: lancedb reads every row, the updated ones changed, in one version`, async () => {
		const { datasetPath, table } = importCopy(name);
		const before = await lancedbRows(datasetPath);
		const version = await (await h.openTable(datasetPath)).version();

		psqlLines(`UPDATE ${table} SET id = id + 1000000 WHERE id % 5 = 0;\n`);
		const expected = before.map((r) => (r.id !== null && Number(r.id) % 5 === 0
			? JSON.stringify({ ...r, id: typeof r.id === 'string' ? String(Number(r.id) + 1000000) : Number(r.id) + 1000000 })
			: JSON.stringify(r))).sort();
		const reopened = await h.openTable(datasetPath);

		assert.equal(await reopened.version(), version + 1, 'one version');
		assert.deepEqual((await lancedbRows(datasetPath)).map((r) => JSON.stringify(r)).sort(), expected);
		await h.lancedbModifies(reopened);
		assert.equal(Number(h.sqlRows(`SELECT count(*) AS n FROM ${table}`)[0].n), await reopened.countRows(),
			'lance_fdw reads the rows of lancedb\'s versions');
	});
}

const pairs = async (datasetPath) => (await lancedbRows(datasetPath))
	.map((r) => `${r.id}|${r.s}`).sort();

test('RETURNING, ROLLBACK, a race with a DELETE', async () => {
	const datasetPath = await threeFragments('changes');
	const table = 'fdw_update_changes';

	assert.deepEqual(psqlLines(`UPDATE ${table} SET s = 'new ' || id WHERE id IN (1, 12) RETURNING id, s;\n`).sort(),
		['12|new 12', '1|new 1']);
	const after = await pairs(datasetPath);

	assert.ok(after.includes('1|new 1') && after.includes('12|new 12') && !after.includes('1|value 1'));
	assert.equal(after.length, 30);

	psqlLines(`BEGIN;\nUPDATE ${table} SET s = 'rolled back';\nROLLBACK;\n`);
	assert.deepEqual(await pairs(datasetPath), after, 'ROLLBACK changes nothing');

	const first = psqlAsync(`\\set VERBOSITY verbose\nBEGIN;\nUPDATE ${table} SET s = 'lost' WHERE id = 2;\nSELECT pg_sleep(3);\nCOMMIT;\n`, true);

	await new Promise((resolve) => setTimeout(resolve, 1000));
	psqlLines(`DELETE FROM ${table} WHERE id = 3;\n`);
	const outcome = await first;

	assert.match(outcome.err.join('\n'), /ERROR:  40001/, 'the later COMMIT is a serialization failure');
	const last = await pairs(datasetPath);

	assert.ok(last.includes('2|value 2') && !last.some((p) => p.startsWith('3|')), 'only the DELETE is published');
});

// Lance's Update keeps the row ids of the rows it rewrites: lancedb reads every updated row with
// its old _rowid, its created-at version kept and its last-updated-at version the new one
// (lancedb's _row_created_at_version / _row_last_updated_at_version), and goes on from there.
test('stable row ids: updated rows keep their row ids and created-at versions', async () => {
	const datasetPath = await threeFragments('stable_update', { storageOptions: { newTableEnableStableRowIds: 'true' } });
	const read = async () => encodeRows(await (await h.openTable(datasetPath)).query().withRowId().toArrow())
		.map((r) => [Number(r.id), Number(r._rowid), r.s]).sort((a, b) => a[0] - b[0]);
	const before = await read();
	const versionBefore = await (await h.openTable(datasetPath)).version();

	// rows of all three fragments, several new fragments not needed: one statement
	psqlLines("UPDATE fdw_update_stable_update SET s = 'new ' || id WHERE id % 3 = 1;\n");
	const after = await read();

	assert.deepEqual(after.map(([id, rowid]) => [id, rowid]), before.map(([id, rowid]) => [id, rowid]),
		'every row keeps its row id');
	assert.deepEqual(after.map(([id, , s]) => s), before.map(([id, , s]) => (id % 3 === 1 ? 'new ' + id : s)));

	const table = await h.openTable(datasetPath);
	const versions = encodeRows(await table.query()
		.select(['id', '_row_created_at_version', '_row_last_updated_at_version']).toArrow())
		.map((r) => [Number(r.id), Number(r._row_created_at_version), Number(r._row_last_updated_at_version)])
		.sort((a, b) => a[0] - b[0]);

	for (const [id, created, updated] of versions)
	{
		assert.equal(created, id < 10 ? 1 : id < 20 ? 2 : 3, 'created-at of row ' + id);
		assert.equal(updated, id % 3 === 1 ? versionBefore + 1 : created, 'last-updated-at of row ' + id);
	}

	// a row matched twice by UPDATE ... FROM: refused, nothing published
	assert.throws(() => psqlLines(`\\set VERBOSITY verbose
UPDATE fdw_update_stable_update t SET s = 'twice' FROM (VALUES (5), (5)) v(id) WHERE t.id = v.id;
`), (error) => /21000/.test(String(error.stderr)) && /a second time/.test(String(error.stderr)));
	assert.equal(await (await h.openTable(datasetPath)).version(), versionBefore + 1);

	// lancedb goes on: an update of its own, a compaction, the row ids still the same
	await table.checkoutLatest();
	await table.update({ where: 'id = 2', values: { s: 'by lancedb' } });
	await table.optimize();
	const last = await read();

	assert.deepEqual(last.map(([id, rowid]) => [id, rowid]), before.map(([id, rowid]) => [id, rowid]));
	assert.equal(last.find(([id]) => id === 2)[2], 'by lancedb');
});

test('on S3: UPDATE publishes a Lance Update that lancedb reads', async (t) => {
	const { storageOptions, root, fdwServerSql } = startS3Server('fdw-update-s3', t);
	const ROOT = root('updates');

	psqlLines(`DROP SERVER IF EXISTS fdw_update_s3 CASCADE;
${fdwServerSql('fdw_update_s3', ROOT)}
SELECT * FROM lance_parts.write_dataset(${literal(ROOT + '/rows.lance')}, 'SELECT g::bigint AS id, ''v'' || g AS s FROM generate_series(1, 10) g');
CREATE FOREIGN TABLE fdw_update_s3_rows (id bigint, s text) SERVER fdw_update_s3 OPTIONS (uri 'rows.lance');
UPDATE fdw_update_s3_rows SET s = 'updated' WHERE id > 7;
`);
	const table = await (await lancedb.connect(ROOT, { storageOptions })).openTable('rows');

	assert.equal(await table.version(), 2);
	assert.deepEqual(encodeRows(await table.query().toArrow()).map((r) => `${r.id}|${r.s}`).sort(),
		[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map((i) => `${i}|${i > 7 ? 'updated' : 'v' + i}`).sort());
});
