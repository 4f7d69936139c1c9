'use strict';
// pgvector's vector(n) written from SQL and read back by the reference implementation
// (npm lancedb 0.39), and read by lance_fdw into a vector(n) column.
//
//  - write_dataset of a table with a vector(8) column (nulls included) for file versions
//    2.0 to 2.3: lancedb reads a FixedSizeList<Float32>[8] column holding every value exactly.
//  - vector(3)[] and a composite type with a vector(3) member, with null lists, items and
//    members and empty lists, for 2.0 to 2.3: lancedb reads lists of fixed-size lists and structs.
//  - write_part of vector rows from two sessions into a dataset lancedb wrote with a
//    FixedSizeList<float32, 8> column (file versions 2.0 to 2.3), registered, assembled and
//    committed in caller order.
//  - a foreign table declaring the column vector(8) over the datasets above returns the
//    table's vectors; one declaring vector(4) is pgvector's own dimension error.
//  - a vector of another dimension for the fixed-size list of a target or an append is an
//    ERROR naming the column: 42804 while planning for vector(4), 2202E at the first value
//    for a vector without a dimension; nothing is left behind.
//
// pgvector is not packaged for every distribution (Debian 12 has no postgresql-15-pgvector),
// so scripts/setup.sh builds it from Debian's source package there: without the extension
// these tests fail rather than skip, unless the stamp of scripts/pg-majors.sh says why this
// major has none (test/run.sh passes that in LP_PG_ADDONS_MISSING).
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const arrow = require('apache-arrow');
const lancedb = require('@lancedb/lancedb');
const h = require('./harness.cjs');
const { psqlLines, psqlAsync, literal } = require('./pg.cjs');

const pgvectorMissing = /^pgvector: (.*)$/m.exec(process.env.LP_PG_ADDONS_MISSING || '');
if (pgvectorMissing) {
	test('pgvector vector(n) written and read', { skip: `no pgvector for this PostgreSQL: ${pgvectorMissing[1]}` }, () => {});
	return;
}

const dir = h.scratchDir('write-vector');
const ROWS = 20000;
const DIM = 8;

// Values exact in float32 (multiples of 1/4 below 2^22), negative ones, zeros, and nulls
// (every 7th row); enough rows for several pages.
test.before(() => {
	assert.equal(psqlLines("SELECT count(*) FROM pg_available_extensions WHERE name = 'vector';\n")[0], '1',
		'pgvector (extension "vector") is installed: scripts/setup.sh installs it into LP_PG_BINDIR\'s PostgreSQL');
	psqlLines(`
CREATE EXTENSION IF NOT EXISTS vector;
DROP TABLE IF EXISTS write_vectors;
CREATE TABLE write_vectors (id bigint, emb vector(${DIM}));
INSERT INTO write_vectors
SELECT g, CASE WHEN g % 7 = 0 THEN NULL
               ELSE (SELECT array_agg(((g * ${DIM} + i) % 100003 - 50000) / 4.0 ORDER BY i)
                     FROM generate_series(0, ${DIM - 1}) i)::vector(${DIM}) END
FROM generate_series(1, ${ROWS}) g;
`);
});

// The ERROR lines (with their SQLSTATE) of a script that must fail.
async function sqlErrors(script)
{
	const { err } = await psqlAsync('\\set VERBOSITY verbose\n' + script, true);

	return err.filter((line) => line.includes('ERROR:')).join('\n');
}

// The rows of `query` (id, emb) as [id, array of float8 or null], in id order.
function pgVectors(query)
{
	return h.sqlRows(`SELECT id, emb::real[]::float8[] AS emb FROM (${query}) q ORDER BY id`)
		.map((r) => [Number(r.id), r.emb]);
}

// lancedb's rows of a table as [id, array of numbers or null], in id order; the column must be
// a nullable FixedSizeList<Float32>[DIM].
async function lancedbVectors(table)
{
	const batch = await table.query().toArrow();
	const field = batch.schema.fields.find((f) => f.name === 'emb');

	assert.ok(arrow.DataType.isFixedSizeList(field.type), 'emb is a fixed-size list: ' + field.type);
	assert.equal(field.type.listSize, DIM);
	assert.ok(arrow.DataType.isFloat(field.type.children[0].type) &&
		field.type.children[0].type.precision === arrow.Precision.SINGLE, 'of float32: ' + field.type);
	const ids = batch.getChild('id');
	const embs = batch.getChild('emb');
	const rows = [];

	for (let i = 0; i < batch.numRows; i++)
	{
		const v = embs.get(i);

		rows.push([Number(ids.get(i)), v === null ? null : Array.from(v.toArray())]);
	}
	rows.sort((a, b) => a[0] - b[0]);
	return rows;
}

for (const version of ['2.0', '2.1', '2.2', '2.3'])
{
	test(`write_dataset of vector(${DIM}) with nulls, file version ${version}: lancedb reads every vector`, async () => {
		const datasetPath = path.join(dir, `vectors_${version.replace('.', '_')}.lance`);
		const written = h.sqlRows(`SELECT * FROM lance_parts.write_dataset(${literal(datasetPath)},
			'SELECT id, emb, NULL::vector(${DIM}) AS none FROM write_vectors ORDER BY id',
			file_version => ${literal(version)})`)[0];

		assert.equal(Number(written.num_rows), ROWS);
		const table = await h.openTable(datasetPath);
		const none = (await table.schema()).fields.find((f) => f.name === 'none');

		assert.ok(arrow.DataType.isFixedSizeList(none.type) && none.type.listSize === DIM, 'none: ' + none.type);
		assert.equal(await table.countRows(), ROWS);
		assert.equal(await table.countRows('emb IS NULL'), Math.floor(ROWS / 7));
		assert.equal(await table.countRows('none IS NULL'), ROWS, 'an all-null vector column');
		assert.deepEqual(await lancedbVectors(table), pgVectors('SELECT id, emb FROM write_vectors'));
	});
}

// Arrow values as plain JSON ones: lists and fixed-size lists as arrays, structs as objects.
function plain(value)
{
	if (value === null || value === undefined)
		return null;
	if (typeof value === 'bigint')
		return Number(value);
	if (ArrayBuffer.isView(value))
		return Array.from(value);
	if (value instanceof arrow.Vector)
		return Array.from(value, plain);
	if (typeof value === 'object')
		return Object.fromEntries(Object.entries(value.toJSON()).map(([k, v]) => [k, plain(v)]));
	return value;
}

test('vectors in lists and structs, nulls at every level, file versions 2.0-2.3: lancedb reads them; vector(2)[] for them is 42804', async () => {
	psqlLines(`DROP TABLE IF EXISTS write_nested_vectors;
DROP TYPE IF EXISTS write_vector_pair;
CREATE TYPE write_vector_pair AS (name text, v vector(3));
CREATE TABLE write_nested_vectors AS
SELECT g::bigint AS id,
       (CASE g % 5 WHEN 0 THEN NULL WHEN 1 THEN ARRAY[]::vector(3)[]
        ELSE ARRAY[('[' || g / 4.0 || ',0,-1.5]')::vector(3), NULL, '[0.25,-2,3]'::vector(3)] END)::vector(3)[] AS vs,
       ROW('p' || g, CASE WHEN g % 2 = 0 THEN NULL ELSE ('[1,' || -g || ',0.5]')::vector(3) END)::write_vector_pair AS p
FROM generate_series(1, 3000) g;
`);
	const expected = h.sqlRows(`SELECT id,
		CASE WHEN vs IS NULL THEN NULL
		     ELSE coalesce((SELECT jsonb_agg(x::real[] ORDER BY o) FROM unnest(vs) WITH ORDINALITY u(x, o)), '[]') END AS vs,
		jsonb_build_object('name', (p).name, 'v', (p).v::real[]) AS p
		FROM write_nested_vectors ORDER BY id`);

	for (const version of ['2.0', '2.1', '2.2', '2.3'])
	{
		const datasetPath = path.join(dir, `nested_vectors_${version.replace('.', '_')}.lance`);

		h.sqlRows(`SELECT * FROM lance_parts.write_dataset(${literal(datasetPath)},
			'SELECT * FROM write_nested_vectors ORDER BY id', file_version => ${literal(version)})`);
		const table = await h.openTable(datasetPath);
		const fields = Object.fromEntries((await table.schema()).fields.map((f) => [f.name, f.type]));

		assert.ok(arrow.DataType.isList(fields.vs) && arrow.DataType.isFixedSizeList(fields.vs.children[0].type) &&
			fields.vs.children[0].type.listSize === 3, `${version}: vs is ${fields.vs}`);
		const rows = (await table.query().toArray()).map((r) => ({ id: Number(r.id), vs: plain(r.vs), p: plain(r.p) }));

		rows.sort((a, b) => a.id - b.id);
		assert.deepEqual(rows, expected, `file version ${version}`);
	}
	// the items' dimension is checked while planning too
	assert.match(await sqlErrors(`SELECT * FROM lance_parts.write_dataset(${literal(path.join(dir, 'nested_vectors_2_1.lance'))},
		$q$SELECT id, ARRAY['[1,2]'::vector(2)]::vector(2)[] AS vs, p FROM write_nested_vectors$q$, mode => 'append');\n`),
	/ERROR: {2}42804: column "vs" has type vector\(2\), but field "item" of .* is a fixed-size list of 3 items/);
});

for (const version of ['2.0', '2.1', '2.2', '2.3'])
{
	test(`write_part of vector rows from two sessions into a ${version} dataset lancedb wrote with FixedSizeList<float32, ${DIM}>`, async () => {
		const name = `vector_parts_${version.replace('.', '_')}`;
		const db = await lancedb.connect(dir);
		const schema = new arrow.Schema([
			new arrow.Field('id', new arrow.Int64(), true),
			new arrow.Field('emb', new arrow.FixedSizeList(DIM, new arrow.Field('item', new arrow.Float32(), true)), true),
		]);
		const base = [
			{ id: 1, emb: [0.5, -1, 2, 3, 4, 5, 6, 7.25] },
			{ id: 2, emb: null },
		];

		await db.createTable(name, base, { schema, storageOptions: { newTableDataStorageVersion: version } });
		const datasetPath = path.join(dir, name + '.lance');
		const target = h.createTarget(datasetPath);
		const partQuery = (from, to) => `SELECT id, emb FROM write_vectors WHERE id BETWEEN ${from} AND ${to} ORDER BY id`;
		const writePart = (from, to) => psqlAsync('SELECT uri, num_rows FROM lance_parts.write_part(' +
			h.sqlJsonb(target) + ', ' + literal(partQuery(from, to)) + ');\n');
		const [late, early] = await Promise.all([writePart(9001, ROWS), writePart(3, 9000)]);
		const parts = [early[0].split('|')[0], late[0].split('|')[0]];

		assert.deepEqual([early[0].split('|')[1], late[0].split('|')[1]], [String(9000 - 2), String(ROWS - 9000)]);
		const committed = h.sqlRows(`SELECT c.* FROM lance_parts.assemble(${h.sqlJsonb(target)}, ${h.sqlTextArray(parts)}) a,
			LATERAL lance_parts.commit(${h.sqlJsonb(target)}) c WHERE a.status = 'written'`);

		assert.equal(committed.length, 1, 'assembled and committed');
		const table = await h.openTable(datasetPath);
		const rows = await table.query().withRowId().toArray();

		rows.sort((a, b) => (a._rowid < b._rowid ? -1 : 1));
		assert.deepEqual(rows.map((r) => Number(r.id)), Array.from({ length: ROWS }, (_, i) => i + 1), 'caller order');
		const expected = [[1, base[0].emb], [2, null]].concat(pgVectors(partQuery(3, ROWS)));

		assert.deepEqual(await lancedbVectors(table), expected);

		// lance_fdw reads the fixed-size lists (lancedb's and ours) into a vector(8) column
		psqlLines(`DROP SERVER IF EXISTS write_vector_server CASCADE;
			CREATE SERVER write_vector_server FOREIGN DATA WRAPPER lance_fdw;
			CREATE FOREIGN TABLE write_vector_parts (id bigint, emb vector(${DIM}))
				SERVER write_vector_server OPTIONS (uri ${literal(datasetPath)});\n`);
		assert.deepEqual(pgVectors('SELECT id, emb FROM write_vector_parts'), expected);
		psqlLines('DROP SERVER write_vector_server CASCADE;\n');
	});
}

test('a vector of another dimension than the fixed-size list is an ERROR naming the column; nothing is written', async () => {
	const datasetPath = path.join(dir, 'vector_parts_2_1.lance');
	const target = h.createTarget(datasetPath);
	const staging = h.sqlRows(`SELECT lance_parts.staging_dir(${h.sqlJsonb(target)}) AS dir`)[0].dir;
	const stagedFiles = () => (fs.existsSync(staging) ? fs.readdirSync(staging) : []);
	const writePart = (query) => sqlErrors('SELECT * FROM lance_parts.write_part(' + h.sqlJsonb(target) + ', ' +
		literal(query) + ');\n');

	// a declared dimension: refused while planning, before any row is read
	assert.match(await writePart(`SELECT id, '[1,2,3,4]'::vector(4) AS emb FROM write_vectors`),
		/ERROR: {2}42804: column "emb" has type vector\(4\), but field "emb" of .* is a fixed-size list of 8 items/);
	// none (an expression's vector): the first value of another dimension, after rows of the right one
	assert.match(await writePart(`SELECT id, CASE WHEN id < 5000 THEN emb ELSE '[1,2,3,4]'::vector END AS emb
		FROM write_vectors WHERE emb IS NOT NULL ORDER BY id`),
		/ERROR: {2}2202E: value of column "emb" has 4 items, but its Lance type holds 8/);
	assert.deepEqual(stagedFiles(), [], 'no part left in the staging directory');

	// an append to a dataset write_dataset wrote
	const appended = path.join(dir, 'vectors_2_2.lance');
	const versions = () => fs.readdirSync(path.join(appended, '_versions')).length;
	const before = versions();

	assert.match(await sqlErrors(`SELECT * FROM lance_parts.write_dataset(${literal(appended)},
		$q$SELECT id, '[1,2,3,4,5,6,7,8,9]'::vector(9) AS emb, NULL::vector(${DIM}) AS none FROM write_vectors$q$,
		mode => 'append');\n`),
	/ERROR: {2}42804: column "emb" has type vector\(9\), but field "emb" of .* is a fixed-size list of 8 items/);
	assert.equal(versions(), before, 'no new version');
	assert.equal(await (await h.openTable(appended)).countRows(), ROWS);

	// a new dataset needs the dimension
	assert.match(await sqlErrors(`SELECT * FROM lance_parts.write_dataset(${literal(path.join(dir, 'undimensioned.lance'))},
		$q$SELECT id, emb::vector AS emb FROM write_vectors$q$);\n`),
	/ERROR: {2}0A000: column "emb" is a vector without a dimension/);
	assert.ok(!fs.existsSync(path.join(dir, 'undimensioned.lance')), 'no dataset');

	// lance_fdw: a vector(4) column over fixed-size lists of 8 is pgvector's own error
	assert.match(await sqlErrors(`DROP SERVER IF EXISTS write_vector_server CASCADE;
		CREATE SERVER write_vector_server FOREIGN DATA WRAPPER lance_fdw;
		CREATE FOREIGN TABLE write_vector_short (id bigint, emb vector(4))
			SERVER write_vector_server OPTIONS (uri ${literal(datasetPath)});
		SELECT emb FROM write_vector_short WHERE id = 1;
		DROP SERVER write_vector_server CASCADE;\n`), /ERROR: {2}22000: expected 4 dimensions, not 8/);
});
