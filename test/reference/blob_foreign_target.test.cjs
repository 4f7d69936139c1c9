'use strict';
// The review's reproducer with blobs (Lance PR #8923: a target not bound to the dataset that
// owns its sidecars): datasets A and B with the same Blob v2 schema, written by the reference;
// blob ids leased and sidecars written for a target of A; then B is put where A was. Every
// entry point refuses the target (leases, the three sidecar writers, register_part with and
// without blob_ids, both assemble forms, commit, cleanup_target), nothing is written to B,
// and the reference still reads every payload of B. With A back in place, the target works
// again.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const lancedb = require('@lancedb/lancedb');
const { writeBlobDataset } = require('./blob_data.cjs');
const { psqlLines, psqlAsync, literal } = require('./pg.cjs');
const { scratchDir } = require('./harness.cjs');

const dir = scratchDir('blob_foreign_target');

// Every file under root with its size, sorted.
function snapshot(root)
{
	const entries = [];
	const walk = (d) => {
		for (const e of fs.readdirSync(d, { withFileTypes: true }))
		{
			const p = path.join(d, e.name);

			if (e.isDirectory())
				walk(p);
			else
				entries.push(path.relative(root, p) + ':' + fs.statSync(p).size);
		}
	};
	walk(root);
	return entries.sort();
}

test('a target of dataset A is refused everywhere once dataset B is where A was', async () => {
	const db = await lancedb.connect(dir);
	await writeBlobDataset(db, 'a', '2.3');
	const expectedB = await writeBlobDataset(db, 'b', '2.3');
	const a = path.join(dir, 'a.lance');
	const b = path.join(dir, 'b.lance');
	const part = path.join(a, 'data', fs.readdirSync(path.join(a, 'data')).find((f) => f.endsWith('.lance')));
	const partCopy = path.join(dir, 'part.lance');

	fs.copyFileSync(part, partCopy);
	psqlLines('CREATE EXTENSION IF NOT EXISTS lance_parts;\n');
	const target = psqlLines(`SELECT lance_parts.create_target(${literal(a)});\n`)[0];
	const t = literal(target);
	psqlLines(`SELECT lance_parts.lease_blob_ids(${t}, 10);
SELECT lance_parts.write_packed_blobs(${t}, 1, ARRAY['\\x0102'::bytea]);
SELECT lance_parts.write_dedicated_blob(${t}, 2, '\\x03');
`);

	// B where A was
	fs.renameSync(a, path.join(dir, 'a.away'));
	fs.renameSync(b, a);
	const before = snapshot(a);
	const calls = {
		lease_blob_ids: `SELECT lance_parts.lease_blob_ids(${t}, 1)`,
		write_packed_blobs: `SELECT lance_parts.write_packed_blobs(${t}, 3, ARRAY['\\x04'::bytea])`,
		write_dedicated_blob: `SELECT lance_parts.write_dedicated_blob(${t}, 4, '\\x05')`,
		write_dedicated_blob_from: `SELECT lance_parts.write_dedicated_blob_from(${t}, 5, ${literal(partCopy)})`,
		register_part: `SELECT lance_parts.register_part(${t}, ${literal(partCopy)})`,
		register_part_with_blob_ids: `SELECT lance_parts.register_part(${t}, ${literal(partCopy)}, NULL, '[1,3)')`,
		assemble_parts: `SELECT * FROM lance_parts.assemble(${t}, ARRAY[${literal(partCopy)}])`,
		assemble_registered: `SELECT * FROM lance_parts.assemble(${t})`,
		commit: `SELECT * FROM lance_parts.commit(${t})`,
		cleanup_target: `SELECT lance_parts.cleanup_target(${t})`,
	};
	for (const [name, query] of Object.entries(calls))
	{
		const { out, err } = await psqlAsync(query + ';\n', true);

		assert.deepEqual(out, [], name + ' returned nothing');
		assert.match(err.join('\n'), /does not belong to the dataset now at/, name + ' refused the target');
	}
	assert.deepEqual(snapshot(a), before, 'nothing was written to or removed from B');
	const table = await (await lancedb.connect(dir)).openTable('a');
	const rows = await table.query().select(['id']).withRowId().toArray();
	assert.equal((await table.fetchBlobs('payload', rows.map((r) => r._rowid))).length, expectedB.size,
		'the reference reads every payload of B');

	// A back: the same target leases again, after the ids it had
	fs.renameSync(a, b);
	fs.renameSync(path.join(dir, 'a.away'), a);
	assert.deepEqual(psqlLines(`SELECT lance_parts.lease_blob_ids(${t}, 1);\n`), ['[11,12)']);
});
