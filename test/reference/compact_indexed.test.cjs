'use strict';
// lance_parts.compact on datasets lancedb made WITHOUT stable row ids whose fragments a BTREE
// index (on id) and a BITMAP index (on k) cover, in every file version and both manifest naming schemes: the index keys on row
// addresses, which compaction moves, so each is remapped into a new index (new UUID, rows the
// deletion files drop left out; BTREE pages cut anew) and the Rewrite lists it as rewritten, as
// Lance's compact_files does.  lancedb then reads the same rows, its indexed queries (which
// explainPlan shows using the index) and lance_fdw's own BTREE lookups return the same rows as
// before, and lancedb appends, compacts and builds an index on top.  A damaged index is an
// ERROR that leaves the dataset and its directories as they were.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const { execFileSync } = require('node:child_process');
const path = require('node:path');
const arrow = require('apache-arrow');
const lancedb = require('@lancedb/lancedb');
const h = require('./harness.cjs');
const { encodeRows } = require('./values.cjs');

const dir = h.scratchDir('compact-indexed');
// More rows than one BTREE page (4096), so that pages are cut anew where rows drop.
const ROWS_PER_FRAGMENT = 1000;
const INDEXED_FRAGMENTS = 6;

const rowsOf = (first, n) => new arrow.Table({
	id: arrow.vectorFromArray(BigInt64Array.from({ length: n }, (_, i) => BigInt(first + i))),
	s: arrow.vectorFromArray(Array.from({ length: n }, (_, i) => 'value ' + (first + i)), new arrow.Utf8()),
	k: arrow.vectorFromArray(Int32Array.from({ length: n }, (_, i) => (first + i) % 10)),
});

async function rowsById(table)
{
	return encodeRows(await table.query().toArrow())
		.map((r) => [Number(r.id), r.s])
		.sort((a, b) => a[0] - b[0])
		.map((r) => r.join(' '));
}

const FILTERS = ['id = 33', 'id = 4', 'id IN (2, 15, 47, 58, 4100, 5999)', 'id >= 4090 AND id < 4110',
	'k = 3 AND id < 300', 'k IN (1, 4) AND id > 5900', 'id > 5990', 'id < 0'];
// the filters whose answers rows appended after the compaction do not change
const OLD_ROWS_FILTERS = 5;

async function indexedAnswers(table)
{
	const answers = [];

	for (const filter of FILTERS)
		answers.push(encodeRows(await table.query().where(filter).toArrow()).map((r) => Number(r.id)).sort((a, b) => a - b));
	return answers;
}

// lance_fdw's answers with its BTREE lookups on and off, and whether EXPLAIN names the index.
function fdwAnswers(dataset, name)
{
	const table = `cidx.${name}`;
	const lines = h.psqlLines(`CREATE SCHEMA IF NOT EXISTS cidx;
DROP FOREIGN TABLE IF EXISTS ${table};
CREATE FOREIGN TABLE ${table} (id bigint, s text, k int) SERVER cidx_server OPTIONS (uri ${h.literal(dataset)});
${['on', 'off'].map((index) => `SET lance_parts.fdw_scalar_index = ${index};
${FILTERS.map((f) => `SELECT '=' || coalesce(string_agg(id::text, ',' ORDER BY id), '') FROM ${table} WHERE ${f};`).join('\n')}
`).join('')}SET lance_parts.fdw_scalar_index = on;
EXPLAIN SELECT * FROM ${table} WHERE id IN (2, 15, 4100);
`);
	const answers = lines.filter((l) => l.startsWith('='));

	return { on: answers.slice(0, FILTERS.length), off: answers.slice(FILTERS.length),
		explained: lines.some((l) => /Lance Index: id_idx/.test(l)) };
}

test.before(() => {
	h.psqlLines(`DROP SERVER IF EXISTS cidx_server CASCADE;
CREATE SERVER cidx_server FOREIGN DATA WRAPPER lance_fdw;
`);
});

async function indexedDataset(name, version, naming)
{
	const db = await lancedb.connect(dir);
	const table = await db.createTable(name, rowsOf(0, ROWS_PER_FRAGMENT), {
		storageOptions: {
			newTableDataStorageVersion: version,
			newTableEnableV2ManifestPaths: naming === 'v2' ? 'true' : 'false',
		},
	});

	for (let f = 1; f < INDEXED_FRAGMENTS; f++)
		await table.add(rowsOf(f * ROWS_PER_FRAGMENT, ROWS_PER_FRAGMENT));
	await table.delete('id % 7 = 3');		// before the index: not in it
	await table.createIndex('id', { config: lancedb.Index.btree() });
	await table.createIndex('k', { config: lancedb.Index.bitmap() });
	await table.delete('id % 11 = 4');		// after: in the indexes, dropped by the remap
	return { table, dataset: path.join(dir, name + '.lance') };
}

for (const version of ['2.0', '2.1', '2.2', '2.3'])
{
	for (const naming of ['v1', 'v2'])
	{
		test(`${version} ${naming}: a BTREE index is remapped by compaction`, async () => {
			const name = `indexed_${version.replace('.', '_')}_${naming}`;
			const { table, dataset } = await indexedDataset(name, version, naming);

			await table.add(rowsOf(6000, 50));	// fragments the index does not cover
			await table.add(rowsOf(6050, 50));
			const before = await rowsById(table);
			const answersBefore = await indexedAnswers(table);
			const statsBefore = [await table.indexStats('id_idx'), await table.indexStats('k_idx')];
			const fdwBefore = fdwAnswers(dataset, name);
			const indexDirs = fs.readdirSync(path.join(dataset, '_indices'));

			assert.deepEqual(fdwBefore.on, fdwBefore.off);
			const result = h.sqlRows(`SELECT * FROM lance_parts.compact(${h.literal(dataset)}, rewrite_deletions => true)`);

			assert.deepEqual(result.filter((r) => r.action !== 'rewritten'), [], 'every fragment rewritten');
			assert.equal(new Set(result.map((r) => r.new_fragment_id)).size, 2, 'indexed and unindexed apart');

			await table.checkoutLatest();
			assert.equal((await table.stats()).fragmentStats.numFragments, 2);
			assert.deepEqual(await rowsById(table), before, 'the same rows');
			assert.deepEqual(await indexedAnswers(table), answersBefore, 'the index answers as before');
			for (const filter of ['id = 33', 'k = 3'])
			{
				const plan = await table.query().where(filter).explainPlan(true);

				assert.match(plan, /ScalarIndexQuery|MaterializeIndex/, 'lancedb uses the index: ' + plan);
			}
			const indices = await table.listIndices();

			assert.deepEqual(indices.map((i) => [i.name, i.indexType, i.columns]).sort(),
				[['id_idx', 'BTree', ['id']], ['k_idx', 'Bitmap', ['k']]]);
			const statsAfter = [await table.indexStats('id_idx'), await table.indexStats('k_idx')];

			for (let i = 0; i < 2; i++)
			{
				assert.equal(statsAfter[i].numIndexedRows, statsBefore[i].numIndexedRows);
				assert.equal(statsAfter[i].numUnindexedRows, statsBefore[i].numUnindexedRows);
			}
			const newDirs = fs.readdirSync(path.join(dataset, '_indices')).filter((d) => !indexDirs.includes(d));

			assert.equal(newDirs.length, 2, 'a new directory per index');
			const fdwAfter = fdwAnswers(dataset, name);

			assert.deepEqual(fdwAfter.on, fdwBefore.on, 'lance_fdw with the index finds the same rows');
			assert.deepEqual(fdwAfter.off, fdwBefore.off);
			assert.ok(fdwAfter.explained, 'lance_fdw uses the remapped index');

			// lancedb goes on from there: appends, compacts, indexes
			await table.add(rowsOf(7000, 5));
			await table.optimize();
			await table.createIndex('s', { config: lancedb.Index.btree() });
			assert.equal(await table.countRows(), before.length + 5);
			assert.equal(await table.countRows("s = 'value 7001'"), 1);
			assert.deepEqual((await indexedAnswers(table)).slice(0, OLD_ROWS_FILTERS), answersBefore.slice(0, OLD_ROWS_FILTERS),
				'and after lancedb optimized');
		});
	}
}

// What a failed compaction must leave: the version, and the directories' entries (but for
// data/_parts, the parent of staging directories, which re-encoding the live rows of fragments
// with deletion files creates and leaves, as every compaction with rewrite_deletions does).
function snapshot(dataset)
{
	const entries = (sub) => fs.readdirSync(path.join(dataset, sub)).filter((e) => e !== '_parts').sort();

	return { data: entries('data'), indices: entries('_indices'), versions: entries('_versions') };
}

// The directory of the dataset's index that has the file `file`.
function indexDir(dataset, file)
{
	const dirs = fs.readdirSync(path.join(dataset, '_indices'))
		.filter((d) => fs.existsSync(path.join(dataset, '_indices', d, file)));

	assert.equal(dirs.length, 1);
	return path.join(dataset, '_indices', dirs[0]);
}

function assertCompactFails(dataset, pattern)
{
	const before = snapshot(dataset);

	assert.throws(() => h.psqlLines(`\\set VERBOSITY verbose
SELECT * FROM lance_parts.compact(${h.literal(dataset)}, rewrite_deletions => true);
`), (error) => /XX001/.test(String(error.stderr)) && pattern.test(String(error.stderr)) &&
		/could not be remapped, so its fragments were not compacted/.test(String(error.stderr)));
	assert.deepEqual(snapshot(dataset), before, 'nothing written, nothing published');
}

test('a truncated page file of the index: ERROR, nothing changed', async () => {
	const { dataset } = await indexedDataset('damaged_pages', '2.1', 'v2');
	const pages = path.join(indexDir(dataset, 'page_data.lance'), 'page_data.lance');

	fs.truncateSync(pages, fs.statSync(pages).size - 100);
	assertCompactFails(dataset, /page_data\.lance/);
});

test('a page lookup naming a page the page file does not hold: ERROR, nothing changed', async () => {
	const { dataset } = await indexedDataset('damaged_lookup', '2.1', 'v2');
	// another index's lookup: pages of a longer column than this index's page file holds
	const db = await lancedb.connect(dir);
	const longer = await db.createTable('longer_lookup', rowsOf(0, 20000),
		{ storageOptions: { newTableDataStorageVersion: '2.1' } });

	await longer.createIndex('id', { config: lancedb.Index.btree() });
	fs.copyFileSync(path.join(indexDir(path.join(dir, 'longer_lookup.lance'), 'page_lookup.lance'), 'page_lookup.lance'),
		path.join(indexDir(dataset, 'page_lookup.lance'), 'page_lookup.lance'));
	assertCompactFails(dataset, /names page \d+ of \d+|describes \d+ pages/);
});

test('a BITMAP index whose bitmap names a row its fragment does not have: ERROR, nothing changed', async () => {
	const { dataset } = await indexedDataset('damaged_bitmap', '2.2', 'v1');
	const db = await lancedb.connect(dir);
	// another dataset's BITMAP index over a longer fragment 0 (ids past this fragment 0's rows)
	const longer = await db.createTable('longer_bitmap', rowsOf(0, 3 * ROWS_PER_FRAGMENT),
		{ storageOptions: { newTableDataStorageVersion: '2.2' } });

	await longer.createIndex('k', { config: lancedb.Index.bitmap() });
	fs.copyFileSync(path.join(indexDir(path.join(dir, 'longer_bitmap.lance'), 'bitmap_page_lookup.lance'),
		'bitmap_page_lookup.lance'),
	path.join(indexDir(dataset, 'bitmap_page_lookup.lance'), 'bitmap_page_lookup.lance'));
	assertCompactFails(dataset, /bitmap_page_lookup\.lance/);
});

// A compaction that remapped indexes names the ids of its new fragments in them; a lancedb
// append committed before it publishes takes those ids, so COMMIT is a conflict (40001) and
// the remapped indexes and the compacted files are removed.  A ROLLBACK removes them too.
test('publish_at commit: ROLLBACK, or an append taking the fragment ids first (40001), leaves no remapped index', async () => {
	const { table, dataset } = await indexedDataset('raced', '2.2', 'v2');
	const before = snapshot(dataset);
	const rowsBefore = await rowsById(table);
	const compactSql = `SET lance_parts.publish_at = 'commit';
BEGIN;
SELECT count(*) FROM lance_parts.compact(${h.literal(dataset)}, rewrite_deletions => true);
`;

	h.psqlLines(compactSql + 'ROLLBACK;\n');
	assert.deepEqual(snapshot(dataset), before, 'ROLLBACK: nothing left');

	// lancedb appends from psql's shell, between the compaction and its COMMIT
	const appendScript = path.join(dir, 'append_raced.cjs');

	fs.writeFileSync(appendScript, `const l = require('@lancedb/lancedb');
const a = require('apache-arrow');
(async () => {
	const t = await (await l.connect(${JSON.stringify(dir)})).openTable('raced');
	await t.add(new a.Table({ id: a.vectorFromArray(BigInt64Array.from([9000n, 9001n])),
		s: a.vectorFromArray(['x', 'y'], new a.Utf8()), k: a.vectorFromArray(Int32Array.from([1, 2])) }));
})();
`);
	assert.throws(() => execFileSync('psql', ['-X', '-q', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-f', '-'],
		{ input: '\\set VERBOSITY verbose\n' + compactSql + `\\! node ${appendScript}\nCOMMIT;\n`, encoding: 'utf8',
			env: { ...process.env, NODE_PATH: path.join(__dirname, 'node_modules') } }),
	(error) => (/40001/.test(String(error.stderr)) && /fragment ids the remapped indexes name/.test(String(error.stderr))) ||
		assert.fail(String(error.stderr)));
	const after = snapshot(dataset);

	assert.deepEqual(after.indices, before.indices, 'no remapped index left');
	assert.equal(after.data.length, before.data.length + 1, 'only the appended file is new');
	await table.checkoutLatest();
	assert.equal((await rowsById(table)).length, rowsBefore.length + 2);
	assert.equal(await table.countRows('id = 9001'), 1);
});
