'use strict';
// DELETE on lance_fdw tables, published with the PostgreSQL transaction as Lance Deletes
// (lance_parts.publish_at = 'commit', the default: this file clears the PGOPTIONS test/run.sh
// sets for the tests written against 0.2.0).
//
//  - The generated datasets of file versions 2.0 to 2.3 under both manifest naming schemes and
//    one with lancedb's deletion files: two DELETEs in two transactions (the second adding to
//    the deletion files of the first), a pushed WHERE; lancedb reads exactly the rows left, and
//    lance_fdw reads what lancedb writes on top.
//  - A fragment whose every row is deleted goes; RETURNING gives the deleted rows; ROLLBACK
//    publishes nothing and removes the deletion files written; a second DELETE of the dataset in
//    one transaction joins the first (fdw_own_writes tests more); two transactions deleting from one fragment: the second COMMIT
//    fails with 40001; a dataset with stable row ids keeps its row ids; on S3.
//  - Row identities (48 bits) give the row offset the bits the largest fragment needs: fragment
//    ids past 2^24 are reached in a dataset of small fragments, and a fragment id past what a
//    large fragment leaves is 0A000 naming the limit.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const arrow = require('apache-arrow');
const lancedb = require('@lancedb/lancedb');
const h = require('./harness.cjs');
const { fdwWriteFixture, lancedbRowStrings, range } = require('./fdw_writes.cjs');
const { setFragmentId } = require('./lancemeta.cjs');
const { startS3Server } = require('./s3_server.cjs');
const { encodeRows } = require('./values.cjs');
const { psqlLines, psqlAsync, literal } = require('./pg.cjs');

delete process.env.PGOPTIONS;

const { importCopy, threeFragments } = fdwWriteFixture('fdw_delete');

function deletionFiles(datasetPath)
{
	const deletions = path.join(datasetPath, '_deletions');

	return fs.existsSync(deletions) ? fs.readdirSync(deletions).sort() : [];
}

const idOf = (row) => JSON.parse(row).id === null ? null : Number(JSON.parse(row).id);

const datasets = JSON.parse(fs.readFileSync(path.join(h.TESTDATA, 'manifest.json'), 'utf8')).datasets
	.filter((d) => /^types_2_[0-3]_v[12]$/.test(d.name) || d.name === 'deleted_2_2')
	.map((d) => d.name);

for (const name of datasets)
{
	test(`DELETE from ${name}: lancedb reads exactly the rows left`, async () => {
		const { datasetPath, table } = importCopy(name);
		const before = await lancedbRowStrings(datasetPath);
		const version = await (await h.openTable(datasetPath)).version();

		assert.deepEqual(psqlLines(`DELETE FROM ${table} WHERE id % 3 = 0;\n`), []);
		let expected = before.filter((r) => idOf(r) === null || idOf(r) % 3 !== 0);

		assert.deepEqual(await lancedbRowStrings(datasetPath), expected, 'the first DELETE');
		psqlLines(`BEGIN;\nDELETE FROM ${table} WHERE id < 50;\nCOMMIT;\n`);
		expected = expected.filter((r) => idOf(r) === null || idOf(r) >= 50);
		assert.deepEqual(await lancedbRowStrings(datasetPath), expected, 'the second DELETE adds to the first');
		const reopened = await h.openTable(datasetPath);

		assert.equal(await reopened.version(), version + 2, 'one version each');
		assert.equal(Number(h.sqlRows(`SELECT count(*) AS n FROM ${table}`)[0].n), expected.length);
		await h.lancedbModifies(reopened);
		assert.equal(Number(h.sqlRows(`SELECT count(*) AS n FROM ${table}`)[0].n), await reopened.countRows(),
			'lance_fdw reads the rows of lancedb\'s versions');
	});
}

const ids = async (datasetPath) => encodeRows(await (await h.openTable(datasetPath)).query().toArrow())
	.map((r) => Number(r.id)).sort((a, b) => a - b);

test('a fragment whose every row is deleted goes; RETURNING; ROLLBACK; two DELETEs in one transaction', async () => {
	const datasetPath = await threeFragments('fragments');
	const table = 'fdw_delete_fragments';
	const versionBefore = await (await h.openTable(datasetPath)).version();

	// a WHERE the planner proves false leaves no scan and deletes nothing
	assert.deepEqual(psqlLines(`DELETE FROM ${table} WHERE false RETURNING id;
UPDATE ${table} SET s = 'x' WHERE 1 = 2 RETURNING id;
DELETE FROM ${table} WHERE id > 5 AND id < 3;\n`), []);
	assert.equal(await (await h.openTable(datasetPath)).version(), versionBefore, 'no new version');
	assert.deepEqual(psqlLines(`DELETE FROM ${table} WHERE id >= 10 AND id < 20 RETURNING id, s;\n`),
		range(10, 20).map((i) => `${i}|value ${i}`), 'RETURNING gives the deleted rows');
	const after = await h.openTable(datasetPath);

	assert.deepEqual(await ids(datasetPath), [...range(0, 10), ...range(20, 30)]);
	assert.equal((await after.stats()).fragmentStats.numFragments, 2, 'the emptied fragment goes');
	assert.deepEqual(deletionFiles(datasetPath), [], 'and needs no deletion file');

	psqlLines(`BEGIN;\nDELETE FROM ${table} WHERE id = 3;\nROLLBACK;\n`);
	assert.deepEqual(await ids(datasetPath), [...range(0, 10), ...range(20, 30)], 'ROLLBACK deletes nothing');
	assert.deepEqual(deletionFiles(datasetPath), [], 'and removes the deletion file written');

	psqlLines(`BEGIN;\nDELETE FROM ${table} WHERE id = 3;\nDELETE FROM ${table} WHERE id = 4;\nCOMMIT;\n`);
	assert.deepEqual(await ids(datasetPath), [...range(0, 3), ...range(5, 10), ...range(20, 30)],
		'a second DELETE in one transaction adds to the first');
	assert.equal(deletionFiles(datasetPath).length, 1, 'one deletion file: the merged one');
});

test('two transactions deleting from one fragment: the second COMMIT fails with 40001', async () => {
	const datasetPath = await threeFragments('race');
	const table = 'fdw_delete_race';
	const first = psqlAsync(`\\set VERBOSITY verbose\nBEGIN;\nDELETE FROM ${table} WHERE id = 1;\nSELECT pg_sleep(3);\nCOMMIT;\n`, true);

	await new Promise((resolve) => setTimeout(resolve, 1000));
	psqlLines(`DELETE FROM ${table} WHERE id = 2;\n`);
	const outcome = await first;

	assert.match(outcome.err.join('\n'), /ERROR:  40001/, 'the later COMMIT is a serialization failure');
	assert.deepEqual(await ids(datasetPath), range(0, 30).filter((i) => i !== 2), 'only the first committed delete');
	assert.equal(deletionFiles(datasetPath).length, 1, 'the losing deletion file is removed');
});

test('stable row ids: DELETE keeps the row ids of the rows left', async () => {
	const datasetPath = await threeFragments('stable_delete', { storageOptions: { newTableEnableStableRowIds: 'true' } });
	const read = async () => encodeRows(await (await h.openTable(datasetPath)).query().withRowId().toArrow())
		.map((r) => [Number(r.id), Number(r._rowid)]).sort((a, b) => a[0] - b[0]);
	const before = await read();

	psqlLines('DELETE FROM fdw_delete_stable_delete WHERE id % 4 = 1;\n');
	assert.deepEqual(await read(), before.filter(([id]) => id % 4 !== 1));
});

test('on S3: DELETE publishes a Lance Delete that lancedb reads', async (t) => {
	const { storageOptions, root, fdwServerSql } = startS3Server('fdw-delete-s3', t);
	const ROOT = root('deletes');

	psqlLines(`DROP SERVER IF EXISTS fdw_delete_s3 CASCADE;
${fdwServerSql('fdw_delete_s3', ROOT)}
SELECT * FROM lance_parts.write_dataset(${literal(ROOT + '/rows.lance')}, 'SELECT g::bigint AS id FROM generate_series(1, 20) g');
CREATE FOREIGN TABLE fdw_delete_s3_rows (id bigint) SERVER fdw_delete_s3 OPTIONS (uri 'rows.lance');
BEGIN;
DELETE FROM fdw_delete_s3_rows WHERE id > 15;
ROLLBACK;
DELETE FROM fdw_delete_s3_rows WHERE id % 2 = 0;
`);
	const table = await (await lancedb.connect(ROOT, { storageOptions })).openTable('rows');

	assert.equal(await table.version(), 2);
	assert.deepEqual(encodeRows(await table.query().toArrow()).map((r) => Number(r.id)).sort((a, b) => a - b),
		range(1, 21).filter((i) => i % 2 === 1));
});

test('row identities: fragment ids past 2^24 in a dataset of small fragments; past what a large fragment leaves, 0A000', async () => {
	const datasetPath = await threeFragments('far_ids');
	const table = 'fdw_delete_far_ids';

	// 10-row fragments leave 44 bits of the 48 to fragment ids
	setFragmentId(datasetPath, 2, 3000000000);
	psqlLines(`DELETE FROM ${table} WHERE id IN (5, 25, 26);\n`);
	assert.deepEqual(await ids(datasetPath), range(0, 30).filter((i) => ![5, 25, 26].includes(i)),
		'lancedb reads the rows left');

	// a fragment of 600,000 rows takes 20 bits, which leaves fragment ids below 2^28 - 1
	const db = await lancedb.connect(path.dirname(datasetPath));
	const big = await db.createTable('far_ids_big', new arrow.Table({
		id: arrow.vectorFromArray(BigInt64Array.from({ length: 600000 }, (_, i) => BigInt(i))),
	}));

	await big.add(new arrow.Table({ id: arrow.vectorFromArray(BigInt64Array.from([600000n])) }));
	const bigPath = path.join(path.dirname(datasetPath), 'far_ids_big.lance');

	setFragmentId(bigPath, 1, 2 ** 28 + 7);
	psqlLines(`CREATE FOREIGN TABLE fdw_delete_far_ids_big (id bigint) SERVER fdw_delete_server OPTIONS (uri ${literal(bigPath)});
DELETE FROM fdw_delete_far_ids_big WHERE id = 599999;
`);
	assert.throws(() => psqlLines(`\\set VERBOSITY verbose\nDELETE FROM fdw_delete_far_ids_big WHERE id = 600000;\n`),
		(error) => /0A000: cannot delete a row of foreign table "fdw_delete_far_ids_big": its address does not fit a row identity[\s\S]*with fragments of up to 1048576 rows, it reaches fragments with ids below 268435455/
			.test(String(error.stderr)));
	assert.equal(await (await h.openTable(bigPath)).countRows(), 600000, 'only the first DELETE');
});
