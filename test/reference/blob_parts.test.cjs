'use strict';
// Parts with Blob v2 columns registered with their blob id leases, assembled and committed
// into 2.2 and 2.3 datasets the reference wrote with inline, packed and dedicated payloads.
// A part is a one-fragment dataset the reference wrote with the same blob schema and an
// inline threshold so small that every non-empty payload is Packed or Dedicated (ids from
// 1): its data file goes into the target's staging directory and its sidecars into the
// target's sidecar directory, under a lease [1, n) of the target (its first lease). A second
// part holds only an empty payload under a lease of its own (another session's). The
// reference then reads every payload of every row, old and new, exactly (sha256). A third
// part with ids from 1 overlaps the first lease and is refused, and so are the parts passed
// as an array (no leases).
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const lancedb = require('@lancedb/lancedb');
const { APPENDS, writeBlobDataset } = require('./blob_data.cjs');
const { psqlLines, psqlAsync, literal } = require('./pg.cjs');
const { scratchDir } = require('./harness.cjs');

const dir = scratchDir('blob_parts');
const OLD_ROWS = APPENDS.reduce((a, b) => a + b, 0);

// The blob id of a sidecar file name: 32 binary digits of the id with its bits reversed.
function sidecarId(name)
{
	return parseInt(name.slice(0, 32).split('').reverse().join(''), 2);
}

// A part written by the reference: its data file and its sidecars (id -> path).
async function referencePart(db, name, version, first, count)
{
	const expected = await writeBlobDataset(db, name, version,
		{ inlineSizeThreshold: 1, first, appends: [count] });
	const data = path.join(dir, name + '.lance', 'data');
	const file = fs.readdirSync(data).find((f) => f.endsWith('.lance'));
	const sidecarDir = path.join(data, path.basename(file, '.lance'));
	const sidecars = new Map();

	if (fs.existsSync(sidecarDir))
		for (const s of fs.readdirSync(sidecarDir))
			sidecars.set(sidecarId(s), path.join(sidecarDir, s));
	return { file: path.join(data, file), sidecars, expected };
}

// The part's data file copied into the staging directory, its sidecars into the target's.
function placePart(part, stagingDir, sidecarDir, name)
{
	const copy = path.join(stagingDir, name + '.lance');

	fs.mkdirSync(stagingDir, { recursive: true });
	fs.mkdirSync(sidecarDir, { recursive: true });
	fs.copyFileSync(part.file, copy);
	for (const s of part.sidecars.values())
		fs.copyFileSync(s, path.join(sidecarDir, path.basename(s)));
	return copy;
}

for (const version of ['2.2', '2.3'])
{
	test(version + ': blob parts under disjoint leases are assembled and committed, and the reference reads every payload', async () => {
		const tag = version.replace('.', '_');
		const db = await lancedb.connect(dir);
		const expected = await writeBlobDataset(db, 'ds_' + tag, version);
		const dataset = path.join(dir, 'ds_' + tag + '.lance');
		const target = psqlLines(`SELECT lance_parts.create_target(${literal(dataset)});\n`)[0];
		const t = literal(target);
		const staging = psqlLines(`SELECT lance_parts.staging_dir(${t});\n`)[0];
		const fileName = JSON.parse(target).file_name;
		const sidecarDir = path.join(dataset, 'data', path.basename(fileName, '.lance'));

		const first = await referencePart(db, 'p1_' + tag, version, 100, 10);
		const ids = [...first.sidecars.keys()].sort((a, b) => a - b);
		assert.ok(ids.length >= 2, 'the reference wrote packed and dedicated sidecars');
		assert.deepEqual(ids, ids.map((_, i) => i + 1), 'the reference numbered them from 1');
		// two sessions lease: the first lease of a target starts at 1
		const [lease1] = await psqlAsync(`SELECT lance_parts.lease_blob_ids(${t}, ${ids.length});\n`);
		const [lease2] = await psqlAsync(`SELECT lance_parts.lease_blob_ids(${t}, 1);\n`);
		assert.equal(lease1, `[1,${ids.length + 1})`);
		assert.equal(lease2, `[${ids.length + 1},${ids.length + 2})`);
		// row 40's payload is empty: no sidecar
		const second = await referencePart(db, 'p2_' + tag, version, 40, 1);
		assert.equal(second.sidecars.size, 0);
		const overlapping = await referencePart(db, 'p3_' + tag, version, 200, 10);

		const part1 = placePart(first, staging, sidecarDir, 'part1');
		const part2 = placePart(second, staging, sidecarDir, 'part2');
		const part3 = path.join(staging, 'part3.lance');
		fs.copyFileSync(overlapping.file, part3);

		assert.deepEqual(psqlLines(`SELECT status, reason FROM lance_parts.assemble(${t}, ARRAY[${literal(part1)}]);\n`),
			['unsupported|blob_columns'], 'parts passed as an array carry no leases');
		assert.ok(!fs.existsSync(path.join(dataset, 'data', fileName)), 'the array form wrote nothing');

		// refusals leave no registration and no output behind
		const output = path.join(dataset, 'data', fileName);
		const refusedRegistration = async (lease, pattern, what) => {
			const r = await psqlAsync(`SELECT lance_parts.register_part(${t}, ${literal(part1)}, 10, '${lease}');\n`, true);

			assert.match(r.err.join('\n'), pattern, what);
			assert.deepEqual(psqlLines(`SELECT count(*) FROM lance_parts.registered_parts(${t});\n`), ['0'], what);
			assert.ok(!fs.existsSync(output), what + ': no output');
		};
		await refusedRegistration(lease2, /names blob id 1, outside the part's lease/, 'ids outside the lease');
		const sidecar1 = path.join(sidecarDir, path.basename(first.sidecars.get(1)));
		const bytes1 = fs.readFileSync(sidecar1);
		fs.renameSync(sidecar1, sidecar1 + '.away');
		await refusedRegistration(lease1, /is not a file in the target's sidecar directory/, 'a missing sidecar');
		fs.renameSync(sidecar1 + '.away', sidecar1);
		fs.writeFileSync(sidecar1, bytes1.subarray(0, bytes1.length - 1));
		await refusedRegistration(lease1, /reads up to byte/, 'a short sidecar');
		fs.writeFileSync(sidecar1, bytes1);

		const out = psqlLines(`SELECT lance_parts.register_part(${t}, ${literal(part1)}, 10, '${lease1}');
SELECT lance_parts.register_part(${t}, ${literal(part2)}, 1, '${lease2}');
DO $$
BEGIN
  PERFORM lance_parts.register_part(${t}, ${literal(part3)}, 10, '${lease1}');
  RAISE EXCEPTION 'the overlapping part was registered';
EXCEPTION WHEN invalid_parameter_value THEN
  RAISE NOTICE 'refused: %', SQLERRM;
END
$$;
SELECT status FROM lance_parts.assemble(${t});
`);
		assert.deepEqual(out, ['1', '2', 'written']);
		// commit checks the sidecars again before it publishes
		fs.renameSync(sidecar1, sidecar1 + '.away');
		const early = await psqlAsync(`SELECT * FROM lance_parts.commit(${t});\n`, true);
		assert.match(early.err.join('\n'), /is not a file in the target's sidecar directory/);
		fs.renameSync(sidecar1 + '.away', sidecar1);
		assert.deepEqual(psqlLines(`SELECT dataset_version FROM lance_parts.commit(${t});\n`), ['3']);

		const table = await (await lancedb.connect(dir)).openTable('ds_' + tag);
		const rows = await table.query().select(['id']).withRowId().toArray();
		assert.equal(rows.length, OLD_ROWS + 11);
		const fetched = await table.fetchBlobs('payload', rows.map((r) => r._rowid));
		const { sha256 } = require('./blob_data.cjs');
		const want = new Map([...expected, ...first.expected, ...second.expected]);
		rows.forEach((r, i) => {
			const id = Number(r.id);

			assert.equal(sha256(fetched[i] === null ? null : Buffer.from(fetched[i])), want.get(id),
				'payload of row ' + id);
		});
		assert.equal(new Set(rows.map((r) => Number(r.id))).size, want.size, 'every row read');
	});
}

test('cleanup_target and cleanup_orphans remove an assembled blob file, its sidecars and its staging area', async () => {
	const db = await lancedb.connect(dir);
	const expected = await writeBlobDataset(db, 'clean', '2.2');
	const dataset = path.join(dir, 'clean.lance');
	const part = await referencePart(db, 'clean_part', '2.2', 100, 10);

	for (const cleanup of ['cleanup_target', 'cleanup_orphans'])
	{
		const target = psqlLines(`SELECT lance_parts.create_target(${literal(dataset)});\n`)[0];
		const t = literal(target);
		const staging = psqlLines(`SELECT lance_parts.staging_dir(${t});\n`)[0];
		const fileName = JSON.parse(target).file_name;
		const sidecarDir = path.join(dataset, 'data', path.basename(fileName, '.lance'));
		const [lease] = psqlLines(`SELECT lance_parts.lease_blob_ids(${t}, ${part.sidecars.size});\n`);
		const copy = placePart(part, staging, sidecarDir, 'part');
		const call = cleanup === 'cleanup_target'
			? `SELECT lance_parts.cleanup_target(${t}) IS NOT NULL;`
			: `SELECT count(*) > 0 FROM lance_parts.cleanup_orphans(${literal(dataset)}, '0 s', false);`;

		assert.deepEqual(psqlLines(`SELECT lance_parts.register_part(${t}, ${literal(copy)}, 10, '${lease}');
SELECT status FROM lance_parts.assemble(${t});
${call}
`), ['1', 'written', 't'], cleanup);
		assert.ok(!fs.existsSync(path.join(dataset, 'data', fileName)), cleanup + ': the assembled file is gone');
		assert.ok(!fs.existsSync(sidecarDir), cleanup + ': its sidecars are gone');
		assert.ok(!fs.existsSync(staging), cleanup + ': its staging area is gone');
	}
	const table = await (await lancedb.connect(dir)).openTable('clean');
	const rows = await table.query().select(['id']).withRowId().toArray();
	assert.equal((await table.fetchBlobs('payload', rows.map((r) => r._rowid))).length, expected.size,
		'the committed rows and their payloads are untouched');
});
