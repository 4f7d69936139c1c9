'use strict';
// lance_parts.compact on datasets lancedb wrote with a Blob v2 column (lancedb.blob with its
// thresholds set so that Inline, Packed and Dedicated payloads, empty payloads and NULLs all
// occur), plus a fragment of External descriptors, in 2.2 and 2.3 and both manifest namings.
// Every fragment is rewritten (none skipped because of blobs), by page copy with the descriptor
// column written anew (assembly's DEBUG1 message of its plan); lancedb then reads the same rows
// and the same payloads (fetchBlobs, sha256) from one fragment, whose sidecars are hard links
// of the old ones under new blob ids where they collided; the old sidecars stay for the old
// version, which lancedb still reads.  lancedb appends, compacts and reads on top, and compact
// runs again.  A missing sidecar and a descriptor reading past its sidecar's end are ERRORs that
// change nothing.  With rewrite_deletions, fragments lancedb deleted rows from are rewritten
// from their live rows; once lancedb removes the old versions (and with them the old files and
// sidecars), the compacted file's payloads still read.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const lancedb = require('@lancedb/lancedb');
const { payload, sha256, writeBlobDataset } = require('./blob_data.cjs');
const { psqlLines, psqlAsync, literal } = require('./pg.cjs');
const { scratchDir, sqlRows } = require('./harness.cjs');

const dir = scratchDir('compact-blobs');
const APPENDS = [13, 9, 7];

psqlLines('CREATE EXTENSION IF NOT EXISTS lance_parts;\n');

// Every row's payload as lancedb's blob API returns it (sha256 by id), and the version read.
async function fetchAll(dataset, version)
{
	const table = await (await lancedb.connect(path.dirname(dataset))).openTable(path.basename(dataset, '.lance'));

	if (version !== undefined)
		await table.checkout(version);
	const rows = await table.query().select(['id']).withRowId().toArray();
	const fetched = await table.fetchBlobs('payload', rows.map((r) => r._rowid));
	const out = new Map();

	rows.forEach((r, i) => out.set(Number(r.id), sha256(fetched[i] === null ? null : Buffer.from(fetched[i]))));
	return { out, version: await table.version(), fragments: (await table.stats()).fragmentStats.numFragments };
}

// Sidecar files of the dataset: "<file stem>/<name>" -> their stat.
function sidecars(dataset)
{
	const out = new Map();

	for (const entry of fs.readdirSync(path.join(dataset, 'data'), { withFileTypes: true }))
		if (entry.isDirectory() && entry.name !== '_parts')
			for (const file of fs.readdirSync(path.join(dataset, 'data', entry.name)))
				out.set(entry.name + '/' + file, fs.statSync(path.join(dataset, 'data', entry.name, file)));
	return out;
}

const dataFiles = (dataset) => fs.readdirSync(path.join(dataset, 'data')).filter((f) => f.endsWith('.lance')).sort();

// Append rows first..first+2 of External descriptors (ranges of a file outside the dataset), an
// empty Inline one and a NULL, as write_dataset writes them.
function appendExternal(dataset, first, external)
{
	psqlLines(`SELECT lance_parts.write_dataset(${literal(dataset)}, $q$
SELECT * FROM (VALUES
  (${first}::bigint, jsonb_build_object('kind', 3, 'position', 100, 'size', 2000, 'blob_id', 0, 'blob_uri', ${literal('file://' + external)})),
  (${first + 1}::bigint, '{"kind": 0, "position": 0, "size": 0, "blob_id": 0, "blob_uri": ""}'::jsonb),
  (${first + 2}::bigint, NULL::jsonb)) v(id, payload)$q$, 'append') IS NOT NULL;
`);
}

// compact's result rows, and whether the group's pages were copied (assembly's DEBUG1 message
// of its plan) rather than its rows re-encoded.
async function compact(dataset, args = '')
{
	const { out, err } = await psqlAsync(`SET client_min_messages = debug1;
SELECT coalesce(jsonb_agg(to_jsonb(q)), '[]') FROM (SELECT * FROM lance_parts.compact(${literal(dataset)}${args})) q;
`, true);

	assert.ok(!err.some((l) => /ERROR/.test(l)), err.join('\n'));
	return { rows: JSON.parse(out[out.length - 1]), pageCopy: err.some((l) => /validated and planned \d+ parts/.test(l)) };
}

// A dataset of APPENDS fragments lancedb wrote and one of External descriptors.
async function blobDataset(name, version, naming)
{
	const dataset = path.join(dir, name + '.lance');
	const external = path.join(dir, name + '-external.bin');
	const rows = APPENDS.reduce((a, b) => a + b, 0);

	fs.writeFileSync(external, Buffer.from(Array.from({ length: 5000 }, (_, i) => (i * 7) & 0xff)));
	await writeBlobDataset(await lancedb.connect(dir), name, version, { appends: APPENDS, naming });
	appendExternal(dataset, rows, external);
	return { dataset, external, rows: rows + 3 };
}

for (const version of ['2.2', '2.3'])
{
	for (const naming of ['v1', 'v2'])
	{
		test(`${version} ${naming}: compact rewrites Blob v2 fragments; lancedb reads every payload and goes on`, async () => {
			const name = `blobs_${version.replace('.', '_')}_${naming}`;
			const { dataset, external, rows } = await blobDataset(name, version, naming);
			const before = await fetchAll(dataset);
			const sidecarsBefore = sidecars(dataset);

			assert.equal(before.fragments, APPENDS.length + 1);
			assert.equal(before.out.get(rows - 3), sha256(fs.readFileSync(external).subarray(100, 2100)));
			assert.equal(before.out.get(0), sha256(payload(0)));

			const { rows: result, pageCopy } = await compact(dataset);

			assert.deepEqual(result.filter((r) => r.action !== 'rewritten'), [], 'no fragment skipped');
			assert.ok(pageCopy, 'pages copied, descriptors rewritten');
			const staging = path.join(dataset, 'data', '_parts');

			assert.deepEqual(fs.existsSync(staging) ? fs.readdirSync(staging) : [], [], 'the descriptor file removed');
			const after = await fetchAll(dataset);

			assert.equal(after.fragments, 1);
			assert.equal(after.version, before.version + 1);
			assert.deepEqual([...after.out.entries()].sort(), [...before.out.entries()].sort(),
				'the same rows and payloads');

			// the old sidecars are untouched; each new one is a hard link of an old one
			const sidecarsAfter = sidecars(dataset);
			const added = [...sidecarsAfter.keys()].filter((k) => !sidecarsBefore.has(k));
			const inodes = new Set([...sidecarsBefore.values()].map((st) => st.ino));

			for (const [key, st] of sidecarsBefore)
				assert.equal(sidecarsAfter.get(key)?.ino, st.ino, key + ' kept');
			assert.ok(added.length > 0);
			assert.equal(added.length, sidecarsBefore.size, 'every sidecar placed once');
			assert.equal(new Set(added.map((k) => k.split('/')[0])).size, 1, 'in one sidecar directory');
			for (const key of added)
				assert.ok(inodes.has(sidecarsAfter.get(key).ino), key + ' is a link, not a copy');
			// the old version still reads its payloads, and cleanup_orphans takes nothing either reads
			assert.deepEqual(sqlRows(`SELECT path FROM lance_parts.cleanup_orphans(${literal(dataset)}, '0 s', false)`), []);
			assert.deepEqual([...(await fetchAll(dataset, before.version)).out.entries()].sort(),
				[...before.out.entries()].sort());

			// lancedb appends, compacts and reads on top; compact runs again
			const more = await writeBlobDataset(await lancedb.connect(dir), name, version,
				{ appends: [11], first: 1000, append: true });
			const table = await (await lancedb.connect(dir)).openTable(name);

			await table.optimize();
			const merged = await fetchAll(dataset);

			assert.equal(merged.out.size, rows + 11);
			for (const [id, hash] of before.out)
				assert.equal(merged.out.get(id), hash, 'row ' + id + ' after lancedb compacted');
			for (const [id, hash] of more)
				assert.equal(merged.out.get(id), hash, 'new row ' + id);
			await writeBlobDataset(await lancedb.connect(dir), name, version, { appends: [5], first: 2000, append: true });
			const again = sqlRows(`SELECT * FROM lance_parts.compact(${literal(dataset)})`);

			assert.deepEqual(again.filter((r) => r.action !== 'rewritten'), []);
			const last = await fetchAll(dataset);

			assert.equal(last.fragments, 1);
			assert.equal(last.out.size, rows + 16);
			for (const [id, hash] of merged.out)
				assert.equal(last.out.get(id), hash, 'row ' + id + ' after the second compact');
		});
	}
}

// A compact that must fail: ERROR matching message, and nothing changed (version, data files,
// sidecars).
async function refused(dataset, message)
{
	const table = await (await lancedb.connect(path.dirname(dataset))).openTable(path.basename(dataset, '.lance'));
	const before = { version: await table.version(), files: dataFiles(dataset), sidecars: [...sidecars(dataset).keys()] };
	const { err } = await psqlAsync(`\\set VERBOSITY verbose
SELECT * FROM lance_parts.compact(${literal(dataset)});
`, true);

	assert.match(err.join('\n'), message);
	await table.checkoutLatest();
	assert.equal(await table.version(), before.version, 'no version');
	assert.deepEqual(dataFiles(dataset), before.files, 'no data file');
	assert.deepEqual([...sidecars(dataset).keys()], before.sidecars, 'no sidecar');
	assert.deepEqual(fs.readdirSync(path.join(dataset, 'data')).filter((f) => f.startsWith('.')), [], 'no temporary file');
}

test('a sidecar missing, or shorter than a descriptor reads: ERROR, nothing changed', async () => {
	const { dataset } = await blobDataset('blobs_bad', '2.3', 'v1');
	const names = [...sidecars(dataset).keys()].sort();
	const victim = path.join(dataset, 'data', names[names.length - 1]);
	const bytes = fs.readFileSync(victim);

	fs.truncateSync(victim, bytes.length - 1);
	await refused(dataset, /ERROR: {2}XX001: sidecar ".*" of blob id \d+ has \d+ bytes, but row \d+ of column "payload" of data file ".*" reads up to byte \d+/);
	fs.unlinkSync(victim);
	await refused(dataset, /ERROR: {2}58P01: sidecar ".*" of blob id \d+, named by row \d+ of column "payload" of data file ".*", is not a file in the data file's sidecar directory/);
	// a symlink in its place is not a sidecar either
	fs.writeFileSync(victim + '.real', bytes);
	fs.symlinkSync(victim + '.real', victim);
	await refused(dataset, /is not a file in the data file's sidecar directory/);
	fs.unlinkSync(victim);
	fs.renameSync(victim + '.real', victim);
	// nor is a sidecar directory reached through a symlink
	const sidecarDir = path.dirname(victim);

	fs.renameSync(sidecarDir, sidecarDir + '.real');
	fs.symlinkSync(sidecarDir + '.real', sidecarDir);
	await refused(dataset, /ERROR: {2}22023: ".*" is a symbolic link, not a directory/);
	fs.unlinkSync(sidecarDir);
	fs.renameSync(sidecarDir + '.real', sidecarDir);
	assert.deepEqual(sqlRows(`SELECT * FROM lance_parts.compact(${literal(dataset)})`).filter((r) => r.action !== 'rewritten'), []);
});

test('rewrite_deletions: live rows of Blob v2 fragments; the payloads outlive the old versions\' removal', async () => {
	const { dataset, rows } = await blobDataset('blobs_deleted', '2.3', 'v2');
	const table = await (await lancedb.connect(dir)).openTable('blobs_deleted');

	await table.delete('id % 4 = 1');
	const before = await fetchAll(dataset);

	assert.equal(before.out.size, rows - Math.ceil((rows - 1) / 4));
	const { rows: result, pageCopy } = await compact(dataset, ', rewrite_deletions => true');

	assert.deepEqual(result.filter((r) => r.action !== 'rewritten'), []);
	assert.ok(!pageCopy, 'deleted rows left out by re-encoding');
	const after = await fetchAll(dataset);

	assert.equal(after.fragments, 1);
	assert.deepEqual([...after.out.entries()].sort(), [...before.out.entries()].sort());

	// lancedb removes every older version: their data files and sidecars go, the links stay
	const sidecarsBefore = sidecars(dataset);

	await table.checkoutLatest();
	await table.optimize({ cleanupOlderThan: new Date(Date.now() + 1000), deleteUnverified: true });
	const remaining = sidecars(dataset);

	assert.ok(remaining.size > 0 && remaining.size < sidecarsBefore.size, 'old sidecars removed by lancedb');
	for (const st of remaining.values())
		assert.equal(st.nlink, 1, 'the compacted file\'s sidecars are its own now');
	assert.deepEqual([...(await fetchAll(dataset)).out.entries()].sort(), [...before.out.entries()].sort());
});

test('legacy (v1) blob columns are still skipped, with the reason blob_columns', async () => {
	const arrow = require('apache-arrow');
	const field = new arrow.Field('payload', new arrow.LargeBinary(), true, new Map([['lance-encoding:blob', 'true']]));
	const schema = new arrow.Schema([new arrow.Field('id', new arrow.Int64(), false), field]);
	const batch = (first) => arrow.tableFromArrays({ id: BigInt64Array.from([BigInt(first), BigInt(first + 1)]) });
	const db = await lancedb.connect(dir);
	const rows = (first) => {
		const ids = batch(first).getChild('id').data[0];
		const values = Buffer.from('abcdef');
		const payloads = arrow.makeData({ type: new arrow.LargeBinary(), length: 2, nullCount: 0,
			valueOffsets: BigInt64Array.from([0n, 3n, 6n]), data: values });

		return new arrow.Table([new arrow.RecordBatch(schema, arrow.makeData({ type: new arrow.Struct(schema.fields),
			length: 2, nullCount: 0, children: [ids, payloads] }))]);
	};
	const table = await db.createTable('legacy_blobs', rows(0), { storageOptions: { newTableDataStorageVersion: '2.1' } });

	await table.add(rows(2));
	const result = sqlRows(`SELECT action, reason FROM lance_parts.compact(${literal(path.join(dir, 'legacy_blobs.lance'))})`);

	assert.deepEqual(result, [{ action: 'skipped', reason: 'blob_columns' }, { action: 'skipped', reason: 'blob_columns' }]);
});

test('stable row ids: the compacted Blob v2 rows keep their _rowid and payloads', async () => {
	const name = 'blobs_stable';
	const dataset = path.join(dir, name + '.lance');

	await writeBlobDataset(await lancedb.connect(dir), name, '2.3', { appends: APPENDS, naming: 'v2', stableRowIds: true });
	const table = await (await lancedb.connect(dir)).openTable(name);
	const byRowId = async () => {
		const rows = await table.query().select(['id']).withRowId().toArray();
		const fetched = await table.fetchBlobs('payload', rows.map((r) => r._rowid));

		return rows.map((r, i) => `${r.id} ${r._rowid} ${sha256(fetched[i] === null ? null : Buffer.from(fetched[i]))}`).sort();
	};
	const before = await byRowId();
	const { rows: result, pageCopy } = await compact(dataset);

	assert.deepEqual(result.filter((r) => r.action !== 'rewritten'), []);
	assert.ok(pageCopy);
	await table.checkoutLatest();
	assert.equal((await table.stats()).fragmentStats.numFragments, 1);
	assert.deepEqual(await byRowId(), before, 'the same ids, row ids and payloads');
});

test('ROLLBACK of a compaction removes its data file and its sidecar directory', async () => {
	const { dataset } = await blobDataset('blobs_rollback', '2.2', 'v1');
	const table = await (await lancedb.connect(dir)).openTable('blobs_rollback');
	const version = await table.version();
	const files = dataFiles(dataset);
	const before = [...sidecars(dataset).keys()];

	psqlLines(`SET lance_parts.publish_at = 'commit';
BEGIN;
SELECT count(*) FROM lance_parts.compact(${literal(dataset)});
ROLLBACK;
`);
	await table.checkoutLatest();
	assert.equal(await table.version(), version);
	assert.deepEqual(dataFiles(dataset), files);
	assert.deepEqual([...sidecars(dataset).keys()], before);
});
