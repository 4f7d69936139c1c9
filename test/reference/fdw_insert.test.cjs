'use strict';
// INSERT, INSERT ... SELECT and COPY FROM into lance_fdw tables, published with the
// PostgreSQL transaction (lance_parts.publish_at = 'commit', the default: this file clears the
// PGOPTIONS test/run.sh sets for the tests written against 0.2.0).
//
//  - Every type lancedb wrote in the generated datasets of file versions 2.0 to 2.3, under both
//    manifest naming schemes, and a dataset with deletion files: the rows lance_fdw reads are
//    inserted back (two INSERT ... SELECT in one transaction, then a COPY FROM of a file), and
//    lancedb must read each new row exactly as it reads the row it was copied from, in one
//    version per transaction; lancedb then appends, indexes and compacts on top, and lance_fdw
//    reads what it wrote.
//  - A dataset lancedb made with stable row ids: the inserted rows continue the row id sequence.
//  - ROLLBACK, an ERROR, a NOT NULL violation of a non-nullable Lance field, RETURNING, and
//    tables that cannot take rows (pinned to a version, one data file).
//  - batch_size (ExecForeignBatchInsert) of the table or its server: EXPLAIN VERBOSE shows it,
//    INSERT ... SELECT and COPY FROM in batches give lancedb the same rows.
//  - Many single-row INSERTs in one transaction: one version of few fragments (their small files
//    concatenated by page copy), none of a rolled-back savepoint.
//  - On S3 (Ceph RGW): INSERT and COPY FROM, ROLLBACK leaves no object.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const arrow = require('apache-arrow');
const lancedb = require('@lancedb/lancedb');
const h = require('./harness.cjs');
const { fdwWriteFixture, lancedbRowStrings, range } = require('./fdw_writes.cjs');
const s3 = require('./s3_requests.cjs');
const { startS3Server } = require('./s3_server.cjs');
const { encodeRows } = require('./values.cjs');
const { psqlLines, literal } = require('./pg.cjs');

delete process.env.PGOPTIONS;

const { dir, importCopy } = fdwWriteFixture('fdw_insert');

function dataFileCount(datasetPath)
{
	return fs.readdirSync(path.join(datasetPath, 'data')).filter((f) => f.endsWith('.lance')).length;
}

const datasets = JSON.parse(fs.readFileSync(path.join(h.TESTDATA, 'manifest.json'), 'utf8')).datasets
	.filter((d) => /^types_2_[0-3]_v[12]$/.test(d.name) || d.name === 'deleted_2_2')
	.map((d) => d.name);

for (const name of datasets)
{
	test(`INSERT ... SELECT and COPY FROM into ${name}: lancedb reads every new row as the row it copies`, async () => {
		const { datasetPath, table } = importCopy(name);
		const before = await lancedbRowStrings(datasetPath);
		const versionBefore = await (await h.openTable(datasetPath)).version();
		const copyFile = path.join(dir, name + '.copy');
		const idRows = Number(h.sqlRows(`SELECT count(*) AS n FROM ${table} WHERE id < 10`)[0].n);

		// one transaction, two statements: each reads the version before it (its own rows are
		// not visible until COMMIT), together one version
		psqlLines(`BEGIN;
INSERT INTO ${table} SELECT * FROM ${table} WHERE id % 2 = 0;
INSERT INTO ${table} SELECT * FROM ${table} WHERE id % 2 <> 0 OR id IS NULL;
COMMIT;
COPY (SELECT * FROM ${table} WHERE id < 10) TO ${literal(copyFile)};
COPY ${table} FROM ${literal(copyFile)};
`);
		const reopened = await h.openTable(datasetPath);

		assert.equal(await reopened.version(), versionBefore + 2, 'one version for the transaction, one for the COPY');
		const after = await lancedbRowStrings(datasetPath);
		// every row twice (the INSERTs), those of id < 10 four times (the COPY of both copies)
		const copiedByCopy = before.filter((r) => JSON.parse(r).id !== null && Number(JSON.parse(r).id) < 10);
		const expected = [...before, ...before, ...copiedByCopy, ...copiedByCopy].sort();

		assert.equal(copiedByCopy.length, idRows, 'lance_fdw and lancedb agree on the rows of id < 10');
		assert.equal(after.length, expected.length, 'row count');
		assert.deepEqual(after, expected, 'lancedb reads every inserted row as the row it was copied from');

		// lancedb works on top, and lance_fdw reads what it wrote
		await h.lancedbModifies(reopened);
		assert.equal(Number(h.sqlRows(`SELECT count(*) AS n FROM ${table}`)[0].n), await reopened.countRows(),
			'lance_fdw reads the rows of lancedb\'s versions');
	});
}

test('a dataset with stable row ids: inserted rows continue the row id sequence', async () => {
	const db = await lancedb.connect(dir);
	const rowsOf = (first, count) => new arrow.Table({
		id: arrow.vectorFromArray(BigInt64Array.from({ length: count }, (_, i) => BigInt(first + i))),
		s: arrow.vectorFromArray(Array.from({ length: count }, (_, i) => 'value ' + (first + i)), new arrow.Utf8()),
	});
	const table = await db.createTable('stable', rowsOf(0, 10), { storageOptions: { newTableEnableStableRowIds: 'true' } });

	await table.delete('id = 3');
	const datasetPath = path.join(dir, 'stable.lance');

	psqlLines(`CREATE FOREIGN TABLE fdw_insert_stable (id bigint, s text) SERVER fdw_insert_server
  OPTIONS (uri ${literal(datasetPath)});
INSERT INTO fdw_insert_stable SELECT g, 'value ' || g FROM generate_series(10, 14) g;
`);
	const reopened = await h.openTable(datasetPath);
	const rows = encodeRows(await reopened.query().withRowId().toArrow())
		.sort((a, b) => Number(a._rowid) - Number(b._rowid));

	assert.deepEqual(rows.map((r) => Number(r.id)), [0, 1, 2, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]);
	assert.deepEqual(rows.map((r) => Number(r._rowid)), [0, 1, 2, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14],
		'row ids: the deleted one stays unused, the new rows get 10 to 14');
	await h.lancedbModifies(reopened);
	assert.equal(Number(h.sqlRows('SELECT count(*) AS n FROM fdw_insert_stable')[0].n), 15);
});

test('ROLLBACK, ERROR, NOT NULL of a Lance field, RETURNING, and tables that take no rows', async () => {
	const db = await lancedb.connect(dir);
	const schema = new arrow.Schema([
		new arrow.Field('id', new arrow.Int64(), false),
		new arrow.Field('s', new arrow.Utf8(), true),
	]);
	const table = await db.createTable('strict', [{ id: 1n, s: 'one' }], { schema });
	const datasetPath = path.join(dir, 'strict.lance');
	const files = dataFileCount(datasetPath);

	psqlLines(`CREATE FOREIGN TABLE fdw_insert_strict (id bigint, s text) SERVER fdw_insert_server
  OPTIONS (uri ${literal(datasetPath)});
BEGIN;
INSERT INTO fdw_insert_strict VALUES (2, 'two');
ROLLBACK;
`);
	assert.equal(await table.countRows(), 1, 'ROLLBACK publishes nothing');
	assert.equal(dataFileCount(datasetPath), files, 'ROLLBACK removes the data file written');

	assert.throws(() => psqlLines(`BEGIN;
INSERT INTO fdw_insert_strict VALUES (2, 'two');
SELECT 1 / 0;
COMMIT;
`), /division by zero/);
	assert.throws(() => psqlLines("\\set VERBOSITY verbose\nINSERT INTO fdw_insert_strict VALUES (2, 'two'), (NULL, 'none');\n"),
		(error) => /23502/.test(String(error.stderr)) && /"id"/.test(String(error.stderr)));
	const reopened = await h.openTable(datasetPath);

	assert.equal(await reopened.version(), 1, 'no version after the ERRORs');
	assert.equal(dataFileCount(datasetPath), files, 'no data file left by the ERRORs');

	assert.deepEqual(psqlLines("INSERT INTO fdw_insert_strict VALUES (2, 'two'), (3, NULL) RETURNING id, s IS NULL;\n"),
		['2|f', '3|t'], 'RETURNING gives the rows inserted');
	assert.deepEqual(encodeRows(await (await h.openTable(datasetPath)).query().toArrow())
		.map((r) => [r.id, r.s]).sort(), [['1', 'one'], ['2', 'two'], ['3', null]]);

	const file = path.join(datasetPath, 'data', fs.readdirSync(path.join(datasetPath, 'data'))[0]);

	psqlLines(`CREATE FOREIGN TABLE fdw_insert_pinned (id bigint, s text) SERVER fdw_insert_server
  OPTIONS (uri ${literal(datasetPath)}, version '1');
CREATE FOREIGN TABLE fdw_insert_file (id bigint, s text) SERVER fdw_insert_server
  OPTIONS (uri ${literal(file)});
`);
	assert.throws(() => psqlLines("\\set VERBOSITY verbose\nINSERT INTO fdw_insert_pinned VALUES (4, 'four');\n"),
		(error) => /0A000: cannot insert into foreign table "fdw_insert_pinned"/.test(String(error.stderr)));
	assert.throws(() => psqlLines("\\set VERBOSITY verbose\nINSERT INTO fdw_insert_file VALUES (4, 'four');\n"),
		(error) => /0A000: cannot insert into foreign table "fdw_insert_file"/.test(String(error.stderr)));
});

test('batch_size: rows handed over in batches of the table\'s or the server\'s option give the same rows', async () => {
	const datasetPath = path.join(dir, 'batched.lance');
	const table = 'fdw_insert_batched';
	const plan = (sql) => psqlLines(`EXPLAIN (VERBOSE, COSTS OFF) ${sql}`).join('\n');
	const insert = (from, to) => `INSERT INTO ${table} SELECT i, 'row ' || i FROM generate_series(${from}, ${to - 1}) i`;

	psqlLines(`SELECT * FROM lance_parts.write_dataset(${literal(datasetPath)}, 'SELECT 0::bigint AS id, ''row 0'' AS s');
CREATE FOREIGN TABLE ${table} (id bigint, s text) SERVER fdw_insert_server OPTIONS (uri ${literal(datasetPath)});
`);
	assert.match(plan(insert(1, 2)), /Batch Size: 1\b/, 'one row at a time by default');
	psqlLines(`${insert(1, 100)};\n`);
	psqlLines(`ALTER SERVER fdw_insert_server OPTIONS (ADD batch_size '7');\n`);
	assert.match(plan(insert(1, 2)), /Batch Size: 7\b/, 'the server\'s batch size');
	psqlLines(`${insert(100, 200)};\n`);
	psqlLines(`ALTER FOREIGN TABLE ${table} OPTIONS (ADD batch_size '64');\n`);
	assert.match(plan(insert(1, 2)), /Batch Size: 64\b/, 'the table\'s batch size before its server\'s');
	psqlLines(`${insert(200, 300)};
COPY (SELECT i, 'row ' || i FROM generate_series(300, 399) i) TO ${literal(path.join(dir, 'batched.copy'))};
COPY ${table} FROM ${literal(path.join(dir, 'batched.copy'))};
ALTER SERVER fdw_insert_server OPTIONS (DROP batch_size);
`);
	assert.deepEqual(psqlLines(`INSERT INTO ${table} VALUES (400, 'row 400') RETURNING id;\n`), ['400'],
		'RETURNING, one row at a time');
	assert.throws(() => psqlLines(`\\set VERBOSITY verbose\nALTER FOREIGN TABLE ${table} OPTIONS (SET batch_size '0');\n`),
		(error) => /22023: invalid value for option "batch_size": "0"/.test(String(error.stderr)));
	const rows = encodeRows(await (await h.openTable(datasetPath)).query().toArrow())
		.map((r) => [Number(r.id), r.s]).sort((a, b) => a[0] - b[0]);

	assert.deepEqual(rows, range(0, 401).map((i) => [i, 'row ' + i]), 'lancedb reads every row once');
});

test('many small INSERTs in one transaction: one version of few fragments; a rolled-back savepoint adds none', async () => {
	const datasetPath = path.join(dir, 'small.lance');
	const inserts = (from, to) => range(from, to).map((i) => `INSERT INTO fdw_insert_small VALUES (${i}, 'row ${i}');\n`).join('');

	psqlLines(`SELECT * FROM lance_parts.write_dataset(${literal(datasetPath)}, 'SELECT 1::bigint AS id, ''row 1'' AS s');
CREATE FOREIGN TABLE fdw_insert_small (id bigint, s text) SERVER fdw_insert_server OPTIONS (uri ${literal(datasetPath)});
BEGIN;
${inserts(2, 42)}SAVEPOINT s;
${inserts(100, 130)}ROLLBACK TO SAVEPOINT s;
COMMIT;
`);
	const table = await h.openTable(datasetPath);
	const fragments = (await table.stats()).fragmentStats.numFragments;

	assert.equal(await table.version(), 2, 'one version for the transaction');
	assert.deepEqual(encodeRows(await table.query().toArrow()).map((r) => [Number(r.id), r.s]).sort((a, b) => a[0] - b[0]),
		range(1, 42).map((i) => [i, 'row ' + i]), 'every row of the transaction, none of the savepoint');
	// 40 statements: every 16 pending small files are concatenated (16, then 1 + 15), 9 left
	assert.equal(fragments, 1 + 1 + 9, 'fragments: the first, the concatenated one, the 9 left');
	assert.equal(fs.readdirSync(path.join(datasetPath, 'data')).filter((f) => f.endsWith('.lance')).length, fragments,
		'no data file besides the fragments\' (the concatenated and the rolled-back ones are removed)');
	await h.lancedbModifies(table);
});


test('on S3: INSERT and COPY FROM publish at COMMIT, ROLLBACK leaves no object', async (t) => {
	const { settings, storageOptions, root, fdwServerSql } = startS3Server('fdw-insert-s3', t);
	const ROOT = root('inserts');
	const datasetUri = ROOT + '/rows.lance';
	const copyFile = path.join(dir, 's3.copy');

	psqlLines(`DROP SERVER IF EXISTS fdw_insert_s3 CASCADE;
${fdwServerSql('fdw_insert_s3', ROOT)}
SELECT * FROM lance_parts.write_dataset(${literal(datasetUri)}, 'SELECT g::bigint AS id, ''row '' || g AS s FROM generate_series(1, 5) g');
CREATE FOREIGN TABLE fdw_insert_s3_rows (id bigint, s text) SERVER fdw_insert_s3 OPTIONS (uri 'rows.lance');
BEGIN;
INSERT INTO fdw_insert_s3_rows SELECT g, 'rolled back' FROM generate_series(6, 10) g;
ROLLBACK;
`);
	const keys = await s3.listKeys(settings, 'inserts/rows.lance/data/');

	assert.equal(keys.length, 1, 'the ROLLBACK removed the object written');
	fs.writeFileSync(copyFile, '20\tcopied\n21\t\\N\n');
	psqlLines(`INSERT INTO fdw_insert_s3_rows SELECT g, 'inserted ' || g FROM generate_series(6, 10) g;
COPY fdw_insert_s3_rows FROM ${literal(copyFile)};
`);
	const table = await (await lancedb.connect(ROOT, { storageOptions })).openTable('rows');

	assert.equal(await table.version(), 3);
	assert.deepEqual(encodeRows(await table.query().toArrow()).map((r) => Number(r.id)).sort((a, b) => a - b),
		[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 20, 21]);
	assert.equal(Number(h.sqlRows('SELECT count(*) AS n FROM fdw_insert_s3_rows WHERE s IS NULL')[0].n), 1);
});
