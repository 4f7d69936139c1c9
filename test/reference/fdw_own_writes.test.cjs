'use strict';
// A transaction reads its own writes to lance_fdw tables before they are published
// (lance_parts.publish_at = 'commit'): scans see the dataset as the pending publications
// leave it, and several DELETEs and UPDATEs of one transaction become one Lance version.
//
//  - INSERT, then SELECT in the same transaction: the new rows; ROLLBACK: gone; others do
//    not see them before COMMIT.
//  - DELETE, then SELECT: the rows are gone; two DELETEs and an UPDATE in one transaction
//    publish one Update that lancedb reads, with no deletion file left behind but the
//    published ones; with stable row ids the rows keep their ids.
//  - Rows this transaction inserted cannot be deleted or updated before COMMIT (0A000); a
//    DELETE inside a savepoint after one outside it is refused (0A000).
//  - write_dataset appends are read by the foreign table in the same transaction.
//  - Parallel plans: a fresh plan has no Gather while writes are pending, a generic plan made
//    before them reads them in the leader alone, and both give the right rows.
//  - On S3 the same.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const lancedb = require('@lancedb/lancedb');
const h = require('./harness.cjs');
const { fdwWriteFixture, range } = require('./fdw_writes.cjs');
const { startS3Server } = require('./s3_server.cjs');
const { encodeRows } = require('./values.cjs');
const { psqlAsync, psqlLines, literal } = require('./pg.cjs');

delete process.env.PGOPTIONS;

const { threeFragments } = fdwWriteFixture('fdw_own_writes');

const ids = async (datasetPath) => encodeRows(await (await h.openTable(datasetPath)).query().toArrow())
	.map((r) => Number(r.id)).sort((a, b) => a - b);

const deletionFiles = (datasetPath) => {
	const dir = path.join(datasetPath, '_deletions');

	return fs.existsSync(dir) ? fs.readdirSync(dir).sort() : [];
};

// Run script, whose failing statement is followed by ROLLBACK in the same session (so that the
// abort has removed what the transaction wrote when it returns), and expect the error.
async function sqlError(script, pattern)
{
	const { err } = await psqlAsync(`\\set VERBOSITY verbose\n${script}ROLLBACK;\n`, true);

	assert.match(err.join('\n'), pattern);
}

test('INSERT then SELECT in one transaction reads the new rows; ROLLBACK drops them', async () => {
	const datasetPath = await threeFragments('insert');
	const table = 'fdw_own_writes_insert';

	assert.deepEqual(psqlLines(`BEGIN;
INSERT INTO ${table} SELECT g, 'new ' || g FROM generate_series(100, 104) g;
SELECT count(*), sum(id) FROM ${table};
SELECT s FROM ${table} WHERE id = 102;
INSERT INTO ${table} VALUES (105, 'new 105');
SELECT count(*) FROM ${table} WHERE id >= 100;
ROLLBACK;
SELECT count(*) FROM ${table};
`), [`35|${range(0, 30).reduce((a, b) => a + b) + range(100, 105).reduce((a, b) => a + b)}`, 'new 102', '6', '30']);
	assert.deepEqual(await ids(datasetPath), range(0, 30), 'nothing published');

	psqlLines(`BEGIN;\nINSERT INTO ${table} VALUES (200, 'x');\nSELECT 1 FROM ${table} WHERE id = 200;\nCOMMIT;\n`);
	assert.deepEqual(await ids(datasetPath), [...range(0, 30), 200], 'published at COMMIT');
});

test('DELETE then SELECT; two DELETEs and an UPDATE publish one version lancedb reads', async () => {
	const datasetPath = await threeFragments('delete');
	const table = 'fdw_own_writes_delete';
	const version = await (await h.openTable(datasetPath)).version();

	assert.deepEqual(psqlLines(`BEGIN;
DELETE FROM ${table} WHERE id % 5 = 0;
SELECT count(*) FROM ${table};
DELETE FROM ${table} WHERE id IN (1, 2, 21);
SELECT string_agg(id::text, ',' ORDER BY id) FROM ${table} WHERE id < 5 OR id BETWEEN 20 AND 22;
UPDATE ${table} SET s = 'changed' WHERE id IN (3, 13);
SELECT id, s FROM ${table} WHERE s = 'changed' ORDER BY id;
COMMIT;
`), ['24', '3,4,22', '3|changed', '13|changed']);
	const reopened = await h.openTable(datasetPath);
	const left = range(0, 30).filter((i) => i % 5 !== 0 && ![1, 2, 21].includes(i));

	assert.equal(await reopened.version(), version + 1, 'one version');
	assert.deepEqual(await ids(datasetPath), left);
	const rows = encodeRows(await reopened.query().toArrow());

	assert.deepEqual(rows.filter((r) => r.s === 'changed').map((r) => Number(r.id)).sort((a, b) => a - b), [3, 13]);
	const stats = await reopened.stats();

	assert.ok(deletionFiles(datasetPath).length <= stats.fragmentStats.numFragments,
		'only the published deletion files are left');
	await h.lancedbModifies(reopened);
	assert.equal(Number(h.sqlRows(`SELECT count(*) AS n FROM ${table}`)[0].n), await reopened.countRows());
});

test('ROLLBACK of merged DELETEs removes every deletion file written', async () => {
	const datasetPath = await threeFragments('delete_rollback');
	const table = 'fdw_own_writes_delete_rollback';

	psqlLines(`BEGIN;
DELETE FROM ${table} WHERE id = 1;
DELETE FROM ${table} WHERE id IN (2, 12);
DELETE FROM ${table} WHERE id = 25;
ROLLBACK;
`);
	assert.deepEqual(deletionFiles(datasetPath), []);
	assert.deepEqual(await ids(datasetPath), range(0, 30));
});

test('rows this transaction wrote cannot be changed before COMMIT; savepoints', async () => {
	const datasetPath = await threeFragments('refused');
	const table = 'fdw_own_writes_refused';

	await sqlError(`BEGIN;\nINSERT INTO ${table} VALUES (300, 'x');\nDELETE FROM ${table} WHERE id = 300;\n`,
		/0A000: cannot delete or update rows of dataset ".*" that this transaction wrote/);
	await sqlError(`BEGIN;\nUPDATE ${table} SET s = 'a' WHERE id = 4;\nUPDATE ${table} SET s = 'b' WHERE id = 4;\n`,
		/0A000: cannot delete or update rows of dataset ".*" that this transaction wrote/);
	await sqlError(`BEGIN;\nDELETE FROM ${table} WHERE id = 4;\nSAVEPOINT s;\nDELETE FROM ${table} WHERE id = 5;\n`,
		/0A000: dataset ".*" is already deleted from outside the current savepoint/);
	assert.deepEqual(await ids(datasetPath), range(0, 30), 'nothing published');
	assert.deepEqual(deletionFiles(datasetPath), [], 'nothing left');

	// rows of published fragments may be deleted after an INSERT; a savepoint's own DELETEs merge
	assert.deepEqual(psqlLines(`BEGIN;
INSERT INTO ${table} VALUES (300, 'x');
DELETE FROM ${table} WHERE id < 3;
SAVEPOINT s;
INSERT INTO ${table} VALUES (301, 'y');
ROLLBACK TO SAVEPOINT s;
SELECT string_agg(id::text, ',' ORDER BY id) FROM ${table} WHERE id < 5 OR id >= 300;
COMMIT;
`), ['3,4,300']);
	assert.deepEqual(await ids(datasetPath), [...range(3, 30), 300]);
});

test('stable row ids: two DELETEs in one transaction keep the ids of the rows left', async () => {
	const datasetPath = await threeFragments('stable', { storageOptions: { newTableEnableStableRowIds: 'true' } });
	const read = async () => encodeRows(await (await h.openTable(datasetPath)).query().withRowId().toArrow())
		.map((r) => [Number(r.id), Number(r._rowid)]).sort((a, b) => a[0] - b[0]);
	const before = await read();

	psqlLines(`BEGIN;\nDELETE FROM fdw_own_writes_stable WHERE id % 4 = 1;\nDELETE FROM fdw_own_writes_stable WHERE id % 4 = 2;\nCOMMIT;\n`);
	assert.deepEqual(await read(), before.filter(([id]) => id % 4 === 0 || id % 4 === 3));
});

test('write_dataset appends are read in the same transaction', async () => {
	const datasetPath = await threeFragments('write_dataset');

	assert.deepEqual(psqlLines(`BEGIN;
SELECT count(*) FROM lance_parts.write_dataset(${literal(datasetPath)}, $$SELECT g::bigint AS id, 'w' || g AS s FROM generate_series(40, 49) g$$, mode => 'append');
SELECT count(*), max(id) FROM fdw_own_writes_write_dataset;
COMMIT;
`), ['1', '40|49']);
	assert.deepEqual(await ids(datasetPath), [...range(0, 30), ...range(40, 50)]);
});

test('parallel plans read pending writes in the leader', async () => {
	const datasetPath = await threeFragments('parallel');
	const table = 'fdw_own_writes_parallel';
	const settings = `SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2; SET lance_parts.fdw_unit_rows = 4;`;
	const out = psqlLines(`${settings}
SET plan_cache_mode = force_generic_plan;
PREPARE counted AS SELECT count(*), sum(id) FROM ${table} WHERE id >= $1;
EXPLAIN (COSTS OFF) EXECUTE counted(0);
BEGIN;
DELETE FROM ${table} WHERE id < 10;
INSERT INTO ${table} SELECT g, 'p' FROM generate_series(100, 109) g;
EXECUTE counted(0);
EXPLAIN (COSTS OFF) SELECT count(*) FROM ${table};
SELECT count(*) FROM ${table};
COMMIT;
`);

	assert.ok(out.some((l) => /Gather/.test(l)), 'the generic plan is parallel: ' + out.join('\n'));
	const afterBegin = out.slice(out.findIndex((l) => /^\d+\|\d+$/.test(l)));
	const expectedSum = range(10, 30).reduce((a, b) => a + b) + range(100, 110).reduce((a, b) => a + b);

	assert.equal(afterBegin[0], `30|${expectedSum}`, 'the generic parallel plan reads the pending writes');
	assert.ok(!afterBegin.some((l) => /Gather/.test(l)), 'a new plan is serial: ' + afterBegin.join('\n'));
	assert.ok(afterBegin.some((l) => /Pending Writes Read: true/.test(l)), 'EXPLAIN says it reads pending writes');
	assert.equal(afterBegin[afterBegin.length - 1], '30');
	assert.deepEqual(await ids(datasetPath), [...range(10, 30), ...range(100, 110)]);
});

test('on S3: a transaction reads its INSERT and DELETE; lancedb reads the one version', async (t) => {
	const { storageOptions, root, fdwServerSql } = startS3Server('fdw-own-writes-s3', t);
	const ROOT = root('own');

	assert.deepEqual(psqlLines(`DROP SERVER IF EXISTS fdw_own_writes_s3 CASCADE;
${fdwServerSql('fdw_own_writes_s3', ROOT)}
SELECT count(*) FROM lance_parts.write_dataset(${literal(ROOT + '/rows.lance')}, 'SELECT g::bigint AS id FROM generate_series(1, 20) g');
CREATE FOREIGN TABLE fdw_own_writes_s3_rows (id bigint) SERVER fdw_own_writes_s3 OPTIONS (uri 'rows.lance');
BEGIN;
DELETE FROM fdw_own_writes_s3_rows WHERE id % 2 = 0;
DELETE FROM fdw_own_writes_s3_rows WHERE id > 15;
INSERT INTO fdw_own_writes_s3_rows VALUES (100), (101);
SELECT string_agg(id::text, ',' ORDER BY id) FROM fdw_own_writes_s3_rows;
COMMIT;
`), ['1', '1,3,5,7,9,11,13,15,100,101']);
	const table = await (await lancedb.connect(ROOT, { storageOptions })).openTable('rows');

	assert.equal(await table.version(), 3, 'the merged Delete and the Append');
	assert.deepEqual(encodeRows(await table.query().toArrow()).map((r) => Number(r.id)).sort((a, b) => a - b),
		[1, 3, 5, 7, 9, 11, 13, 15, 100, 101]);
});
