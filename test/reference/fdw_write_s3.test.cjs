'use strict';
// INSERT, DELETE and UPDATE through lance_fdw tables over datasets lancedb wrote on S3 (Ceph RGW),
// for every file version 2.0 to 2.3 and both manifest naming schemes, published with the
// PostgreSQL transaction (this file clears the PGOPTIONS test/run.sh sets for the tests written
// against 0.2.0).  The rows are those of the generated types datasets (every type lancedb writes
// there); after each statement lancedb must read exactly the rows the statement leaves.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const lancedb = require('@lancedb/lancedb');
const h = require('./harness.cjs');
const s3 = require('./s3_requests.cjs');
const { startS3Server } = require('./s3_server.cjs');
const { encodeRows } = require('./values.cjs');
const { psqlLines, literal } = require('./pg.cjs');

delete process.env.PGOPTIONS;

const { settings, storageOptions, root, fdwServerSql } = startS3Server('fdw-write-s3-server');
const ROOT = root('fdw-writes');

psqlLines(`DROP SERVER IF EXISTS fdw_write_s3 CASCADE;
${fdwServerSql('fdw_write_s3', ROOT)}
`);

const idOf = (row) => (row.id === null ? null : Number(row.id));
const sorted = (rows) => rows.map((r) => JSON.stringify(r)).sort();

for (const version of ['2.0', '2.1', '2.2', '2.3'])
{
	for (const naming of ['v1', 'v2'])
	{
		test(`on S3, file version ${version}, ${naming} manifest names: INSERT, DELETE and UPDATE; lancedb reads every row`, async () => {
			const name = `types_${version.replace('.', '_')}_${naming}`;
			const source = await h.openTable(path.join(h.TESTDATA, name + '.lance'));
			const db = await lancedb.connect(ROOT + '/' + name, { storageOptions });
			const table = await db.createTable('types', await source.query().toArrow(), {
				storageOptions: {
					...storageOptions,
					newTableDataStorageVersion: version,
					newTableEnableV2ManifestPaths: naming === 'v2' ? 'true' : 'false',
				},
			});
			const created = await table.version();
			const read = async () => encodeRows(await (await db.openTable('types')).query().toArrow());
			const before = await read();
			const schema = 'fdw_write_s3_' + name;
			const t = schema + '.types';

			psqlLines(`DROP SCHEMA IF EXISTS ${schema} CASCADE;
CREATE SCHEMA ${schema};
IMPORT FOREIGN SCHEMA s3 FROM SERVER fdw_write_s3 INTO ${schema} OPTIONS (uri ${literal(name)});
`);
			psqlLines(`INSERT INTO ${t} SELECT * FROM ${t} WHERE id % 2 = 0;\n`);
			let expected = [...before, ...before.filter((r) => idOf(r) !== null && idOf(r) % 2 === 0)];

			assert.deepEqual(sorted(await read()), sorted(expected), 'after the INSERT');
			psqlLines(`BEGIN;\nDELETE FROM ${t} WHERE id % 3 = 0;\nCOMMIT;\n`);
			expected = expected.filter((r) => idOf(r) === null || idOf(r) % 3 !== 0);
			assert.deepEqual(sorted(await read()), sorted(expected), 'after the DELETE');
			psqlLines(`UPDATE ${t} SET id = id + 1000000 WHERE id % 5 = 1;\n`);
			expected = expected.map((r) => (idOf(r) !== null && idOf(r) % 5 === 1
				? { ...r, id: typeof r.id === 'string' ? String(idOf(r) + 1000000) : idOf(r) + 1000000 }
				: r));
			assert.deepEqual(sorted(await read()), sorted(expected), 'after the UPDATE');
			assert.equal(await (await db.openTable('types')).version(), created + 3,
				'one version per statement');
			assert.equal(Number(h.sqlRows(`SELECT count(*) AS n FROM ${t}`)[0].n), expected.length,
				'lance_fdw reads what it wrote');
			// every manifest, lancedb's and ours, under the dataset's naming scheme
			const manifests = (await s3.listKeys(settings, `fdw-writes/${name}/types.lance/_versions/`))
				.map((key) => path.basename(key)).filter((key) => key.endsWith('.manifest'));

			assert.equal(manifests.length, 4);
			for (const manifest of manifests)
				assert.match(manifest, naming === 'v2' ? /^\d{20}\.manifest$/ : /^[1-4]\.manifest$/, manifest);
		});
	}
}
