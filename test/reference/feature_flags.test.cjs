'use strict';
// What newer Lance versions write (issue 26), on datasets lancedb wrote and then edited to
// carry it (lancemeta.cjs):
//  - a reader feature flag lance_parts does not implement (fragment reuse index, 1024): lance_fdw
//    SELECT and IMPORT FOREIGN SCHEMA fail with 0A000 naming it;
//  - writer feature flags only (managed blobs, 2048; 4096): SELECT works, and write_dataset's
//    append, compact and INSERT into a lance_fdw table fail with 0A000 naming the flag and
//    publish nothing;
//  - a version committed by another writer while our transaction waited to publish, whose
//    transaction carries DataOverlay (field 115) or CompositeOperation (116): our COMMIT fails
//    with 40001, and lancedb reads the dataset as it was.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const arrow = require('apache-arrow');
const lancedb = require('@lancedb/lancedb');
const h = require('./harness.cjs');
const { addFeatureFlags, setTransactionOperation } = require('./lancemeta.cjs');
const { encodeRows } = require('./values.cjs');
const { psqlLines, psqlAsync, literal } = require('./pg.cjs');

// publication with the transaction, the default
delete process.env.PGOPTIONS;

const dir = h.scratchDir('feature-flags');

psqlLines(`DROP SERVER IF EXISTS feature_flags_server CASCADE;
CREATE SERVER feature_flags_server FOREIGN DATA WRAPPER lance_fdw;
`);

// A dataset of 3 fragments of 10 rows (ids 0..29) written by lancedb, and a foreign table over it.
async function lancedbDataset(name)
{
	const db = await lancedb.connect(dir);
	const rowsOf = (first) => new arrow.Table({
		id: arrow.vectorFromArray(BigInt64Array.from({ length: 10 }, (_, i) => BigInt(first + i))),
		s: arrow.vectorFromArray(Array.from({ length: 10 }, (_, i) => 'value ' + (first + i)), new arrow.Utf8()),
	});
	const table = await db.createTable(name, rowsOf(0));

	await table.add(rowsOf(10));
	await table.add(rowsOf(20));
	psqlLines(`DROP FOREIGN TABLE IF EXISTS feature_flags_${name};
CREATE FOREIGN TABLE feature_flags_${name} (id bigint, s text) SERVER feature_flags_server
  OPTIONS (uri ${literal(path.join(dir, name + '.lance'))});
`);
	return { datasetPath: path.join(dir, name + '.lance'), table: `feature_flags_${name}`, rowsOf };
}

async function lancedbIds(datasetPath)
{
	const table = await h.openTable(datasetPath);

	return encodeRows(await table.query().toArrow()).map((r) => Number(r.id)).sort((a, b) => a - b);
}

// What a failed write must leave as it was.
function listing(datasetPath)
{
	return ['_versions', '_transactions', 'data'].map((d) => fs.readdirSync(path.join(datasetPath, d)).sort());
}

// The SQLSTATE and message of the statement's ERROR (psql with VERBOSITY verbose).
function sqlError(script)
{
	try
	{
		psqlLines('\\set VERBOSITY verbose\n' + script);
	}
	catch (error)
	{
		const line = /ERROR: .*/.exec(String(error.stderr));

		assert.ok(line, 'an ERROR line in ' + error.stderr);
		return line[0];
	}
	assert.fail('no error from ' + script);
}

const range = (from, to) => Array.from({ length: to - from }, (_, i) => from + i);

test('a reader flag lance_parts does not implement: SELECT and IMPORT FOREIGN SCHEMA fail with 0A000', async () => {
	const { datasetPath, table } = await lancedbDataset('reader_flag');

	assert.equal(h.sqlRows(`SELECT count(*) AS n FROM ${table}`)[0].n, 30, 'readable before the edit');
	addFeatureFlags(datasetPath, 1024, 1024);
	const expected = `ERROR:  0A000: dataset "${datasetPath}" needs reader feature "fragment reuse index" (flag 1024), which lance_parts does not implement`;

	assert.equal(sqlError(`SELECT count(*) FROM ${table};\n`), expected);
	assert.equal(sqlError(`CREATE SCHEMA feature_flags_import;
IMPORT FOREIGN SCHEMA feature_flags LIMIT TO (reader_flag) FROM SERVER feature_flags_server
  INTO feature_flags_import
  OPTIONS (uri ${literal(dir)});
`), expected);
});

for (const [flag, named] of [[2048, 'writer feature "managed blobs" (flag 2048)'], [4096, 'writer feature flag 4096']])
{
	test(`writer flag ${flag} only: SELECT works, writes fail with 0A000 and publish nothing`, async () => {
		const { datasetPath, table } = await lancedbDataset('writer_flag_' + flag);

		addFeatureFlags(datasetPath, 0, flag);
		assert.equal(h.sqlRows(`SELECT count(*) AS n FROM ${table}`)[0].n, 30, 'SELECT reads every row');
		const before = listing(datasetPath);
		const expected = `ERROR:  0A000: dataset "${datasetPath}" needs ${named}, which lance_parts does not implement`;

		assert.equal(sqlError(`SELECT * FROM lance_parts.write_dataset(${literal(datasetPath)},
  'SELECT 100::bigint AS id, ''new'' AS s', mode => 'append');\n`), expected, 'write_dataset append');
		assert.equal(sqlError(`SELECT * FROM lance_parts.compact(${literal(datasetPath)});\n`), expected, 'compact');
		assert.equal(sqlError(`INSERT INTO ${table} VALUES (100, 'new');\n`), expected, 'INSERT');
		assert.equal(sqlError(`DELETE FROM ${table} WHERE id = 1;\n`), expected, 'DELETE');
		assert.deepEqual(listing(datasetPath), before, 'nothing written, nothing published');
		assert.deepEqual(await lancedbIds(datasetPath), range(0, 30), 'lancedb reads the same rows');
	});
}

for (const [field, name] of [[115, 'DataOverlay'], [116, 'CompositeOperation']])
{
	test(`a concurrent version whose transaction is a ${name}: COMMIT fails with 40001`, async () => {
		const { datasetPath, rowsOf } = await lancedbDataset('concurrent_' + field);
		const session = psqlAsync(`\\set VERBOSITY verbose
BEGIN;
SELECT num_rows FROM lance_parts.write_dataset(${literal(datasetPath)},
  'SELECT 100::bigint AS id, ''ours'' AS s', mode => 'append');
SELECT pg_sleep(4);
COMMIT;
`, true);

		await new Promise((resolve) => setTimeout(resolve, 1500));
		await (await h.openTable(datasetPath)).add(rowsOf(30));
		const version = setTransactionOperation(datasetPath, field);
		const outcome = await session;

		assert.ok(outcome.err.some((l) =>
			l.endsWith(`ERROR:  40001: commit conflicts with the concurrent ${name} of version ${version}`)),
		outcome.err.join('\n'));
		const after = await h.openTable(datasetPath);

		assert.equal(await after.version(), version, 'no version of ours');
		assert.deepEqual(await lancedbIds(datasetPath), range(0, 40), 'lancedb reads the rows it wrote');
	});
}
