'use strict';
// Writing Lance from SQL, read back by the reference implementation (npm lancedb 0.39).
//
//  - write_dataset of a PostgreSQL table holding every type of the mapping (README "Writing
//    Lance from SQL"), for file versions 2.0 to 2.3: nulls, empty strings and binaries,
//    an all-null and a constant column, values of 1 KiB (full-zip pages on 2.1+) in pages of
//    several MiB, fragments of max_rows_per_file rows.  lancedb must read every value exactly
//    as the table holds it (compared with the table's own rows, value by value), and then
//    append, build a btree index and compact on top; write_dataset append and overwrite must
//    make the versions Lance makes.
//  - parts written by write_part from two sessions at once into a dataset lancedb created,
//    registered in caller order, assembled and committed: lancedb reads the rows in that order.
//  - composite types as structs (structs in structs, nulls at every level from 2.1 on), read back
//    by lancedb exactly as PostgreSQL's to_jsonb() shows the rows; arrays as lists (null and
//    empty lists, null items; 2.0 with items of many pages, without null structs).
//  - manifest naming: lance_parts.manifest_naming chooses the scheme of created datasets.
//  - write_dataset with 2 encoding workers: lancedb reads every value, fragments in order.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const arrow = require('apache-arrow');
const lancedb = require('@lancedb/lancedb');
const h = require('./harness.cjs');
const { psqlLines, psqlAsync, literal } = require('./pg.cjs');

const dir = h.scratchDir('write-sql');
const ROWS = 30000;
const ROWS_PER_FILE = 20000;

psqlLines(`
DROP TABLE IF EXISTS write_types;
DROP TYPE IF EXISTS write_mood;
DROP DOMAIN IF EXISTS write_code;
CREATE TYPE write_mood AS ENUM ('calm', 'busy', 'gone');
CREATE DOMAIN write_code AS varchar(12);
CREATE TABLE write_types AS
SELECT g AS id,
       CASE WHEN g % 7 = 0 THEN NULL ELSE (g % 30000 - 15000)::smallint END AS small,
       CASE WHEN g % 11 = 0 THEN NULL ELSE g * 7919 - 100000000 END::integer AS int4,
       CASE WHEN g % 13 = 0 THEN NULL ELSE g::bigint * 1000000007 * (CASE WHEN g % 2 = 0 THEN -1 ELSE 1 END) END AS int8,
       CASE WHEN g % 5 = 0 THEN NULL ELSE (g / 7.0)::real END AS float4,
       CASE WHEN g % 6 = 0 THEN NULL WHEN g = 3 THEN 'Infinity'::float8 ELSE g / 3.0::float8 END AS float8,
       CASE WHEN g % 4 = 0 THEN NULL ELSE g % 3 = 0 END AS flag,
       CASE WHEN g % 9 = 0 THEN NULL WHEN g % 9 = 1 THEN '' ELSE 'text ' || g || ' ünïcødé' END AS txt,
       ('v' || (g % 100))::varchar(10) AS vc,
       CASE WHEN g % 3 = 0 THEN NULL ELSE ('c' || (g % 10))::char(4) END AS ch,
       CASE WHEN g % 8 = 0 THEN NULL WHEN g % 8 = 1 THEN ''::bytea ELSE decode(md5(g::text), 'hex') END AS bin,
       CASE WHEN g % 10 = 0 THEN NULL ELSE date '1970-01-01' + (g * 3 - 40000) END AS day,
       CASE WHEN g % 12 = 0 THEN NULL ELSE time '00:00:00' + g * interval '2.5 seconds' END AS tod,
       CASE WHEN g % 14 = 0 THEN NULL ELSE timestamp '1969-12-31 23:00:00.000001' + g * interval '1 hour 1.000003 seconds' END AS ts,
       CASE WHEN g % 15 = 0 THEN NULL ELSE timestamptz '2024-06-01 12:00:00+02' - g * interval '1 day 0.5 seconds' END AS tstz,
       CASE WHEN g % 16 = 0 THEN NULL ELSE g * interval '1 day 3 hours 0.000007 seconds' * (CASE WHEN g % 2 = 0 THEN -1 ELSE 1 END) END AS span,
       (CASE WHEN g % 17 = 0 THEN NULL ELSE g * 12.345 - 99999 END)::numeric(12,3) AS dec,
       (CASE WHEN g % 18 = 0 THEN NULL ELSE (g::numeric * 1e30 + 0.25) * (CASE WHEN g % 2 = 0 THEN -1 ELSE 1 END) END)::numeric(60,2) AS wide,
       CASE WHEN g % 19 = 0 THEN NULL ELSE md5(g::text)::uuid END AS id_uuid,
       CASE WHEN g % 20 = 0 THEN NULL ELSE jsonb_build_object('g', g, 'tags', jsonb_build_array('a', g % 3)) END AS doc,
       CASE WHEN g % 21 = 0 THEN NULL ELSE (ARRAY['calm', 'busy', 'gone'])[g % 3 + 1]::write_mood END AS mood,
       ('code-' || g % 1000)::write_code AS code,
       NULL::text AS nothing,
       42::integer AS constant,
       CASE WHEN g % 25 = 0 THEN NULL ELSE repeat(md5(g::text), 32) END AS large
FROM generate_series(1, ${ROWS}) g;
`);

// The table's rows as the values lancedb must return, column by column, in id order:
// integers of 64 bits, times and decimals as exact text, floats as float8 numbers.
const EXPECTED = h.sqlRows(`
SELECT id, small, int4, int8::text AS int8, float4::float8 AS float4,
       float8::text AS float8, flag, txt, vc::text AS vc,
       ch::text AS ch, encode(bin, 'hex') AS bin, day - date '1970-01-01' AS day,
       (extract(epoch FROM tod) * 1000000)::bigint::text AS tod,
       (extract(epoch FROM ts) * 1000000)::bigint::text AS ts,
       (extract(epoch FROM tstz) * 1000000)::bigint::text AS tstz,
       (extract(epoch FROM span) * 1000000)::bigint::text AS span,
       dec::text AS dec, wide::text AS wide, id_uuid::text AS id_uuid, doc::text AS doc,
       mood::text AS mood, code::text AS code, nothing, constant, large
FROM write_types ORDER BY id`);

const LANCE_TYPES = {
	id: 'Int32', small: 'Int16', int4: 'Int32', int8: 'Int64', float4: 'Float32', float8: 'Float64',
	flag: 'Bool', txt: 'Utf8', vc: 'Utf8', ch: 'Utf8', bin: 'Binary', day: 'Date32<DAY>',
	tod: 'Time64<MICROSECOND>', ts: 'Timestamp<MICROSECOND>', tstz: 'Timestamp<MICROSECOND, UTC>',
	span: 'Duration<MICROSECOND>', dec: 'Decimal[12e+3]', wide: 'Decimal[60e+2]',
	id_uuid: 'FixedSizeBinary[16]', doc: 'Utf8', mood: 'Utf8', code: 'Utf8', nothing: 'Utf8',
	constant: 'Int32', large: 'Utf8',
};

function decimalText(words, scale)
{
	let value = 0n;

	for (let i = words.length - 1; i >= 0; i--)
		value = (value << 32n) | BigInt(words[i]);
	if (words[words.length - 1] & 0x80000000)
		value -= 1n << BigInt(32 * words.length);
	const negative = value < 0n;
	let digits = (negative ? -value : value).toString().padStart(scale + 1, '0');

	if (scale > 0)
		digits = digits.slice(0, digits.length - scale) + '.' + digits.slice(digits.length - scale);
	return (negative ? '-' : '') + digits;
}

function uuidText(bytes)
{
	const hex = Buffer.from(bytes).toString('hex');

	return [hex.slice(0, 8), hex.slice(8, 12), hex.slice(12, 16), hex.slice(16, 20), hex.slice(20)].join('-');
}

// Value i of a chunk of arrow data in the encoding of EXPECTED, read from the raw buffers
// where arrow's getters would round (64-bit integers and times, decimals).
function dataValue(data, type, i)
{
	const at = data.offset + i;

	if (!data.getValid(i))
		return null;
	if (arrow.DataType.isTimestamp(type) || arrow.DataType.isTime(type) ||
		arrow.DataType.isDuration(type) || (arrow.DataType.isInt(type) && type.bitWidth === 64))
		return data.values[at].toString();
	if (arrow.DataType.isDecimal(type))
	{
		const words = type.bitWidth / 32;

		return decimalText(data.values.subarray(at * words, (at + 1) * words), type.scale);
	}
	if (arrow.DataType.isDate(type) || arrow.DataType.isFloat(type) || arrow.DataType.isInt(type))
		return data.values[at];
	if (arrow.DataType.isBool(type))
		return ((data.values[at >> 3] >> (at & 7)) & 1) === 1;
	if (arrow.DataType.isFixedSizeBinary(type))
		return uuidText(data.values.subarray(at * 16, at * 16 + 16));
	const bytes = Buffer.from(data.values.subarray(data.valueOffsets[at], data.valueOffsets[at + 1]));

	if (arrow.DataType.isBinary(type))
		return bytes.toString('hex');
	if (arrow.DataType.isUtf8(type))
		return bytes.toString('utf8');
	throw new Error('no value encoding for arrow type ' + type);
}

function columnValues(vector)
{
	const out = [];

	for (const data of vector.data)
		for (let i = 0; i < data.length; i++)
			out.push(dataValue(data, vector.type, i));
	return out;
}

// Every list of a list column, its items in the encoding of dataValue.
function listValues(vector)
{
	const out = [];
	const itemType = vector.type.children[0].type;

	for (const data of vector.data)
	{
		const items = data.children[0];

		for (let i = 0; i < data.length; i++)
		{
			const at = data.offset + i;
			const list = [];

			if (!data.getValid(i))
			{
				out.push(null);
				continue;
			}
			for (let j = data.valueOffsets[at]; j < data.valueOffsets[at + 1]; j++)
				list.push(dataValue(items, itemType, j - items.offset));
			out.push(list);
		}
	}
	return out;
}

async function assertTableMatches(table, what)
{
	const result = await table.query().toArrow();
	const fields = result.schema.fields;

	assert.deepEqual(fields.map((f) => f.name), Object.keys(LANCE_TYPES), what + ': columns');
	for (const field of fields)
		assert.equal(String(field.type), LANCE_TYPES[field.name], what + ': type of ' + field.name);
	assert.equal(result.numRows, EXPECTED.length, what + ': rows');
	const ids = columnValues(result.getChild('id'));
	const order = ids.map((id, i) => [id, i]).sort((a, b) => a[0] - b[0]).map(([, i]) => i);

	for (const field of fields)
	{
		const values = columnValues(result.getChild(field.name));

		for (let k = 0; k < order.length; k++)
		{
			const row = EXPECTED[k];
			const actual = values[order[k]];
			let expected = row[field.name];

			// float8 as PostgreSQL's shortest exact text
			if (field.name === 'float8' && expected !== null)
				expected = Number(expected);
			if (actual !== expected)
				assert.fail(`${what}: row id ${row.id}, column ${field.name}: lancedb read ` +
							`${JSON.stringify(actual)}, the table holds ${JSON.stringify(expected)}`);
		}
	}
}

function writeDataset(datasetPath, query, mode, version, maxRows)
{
	const args = [literal(datasetPath), literal(query), literal(mode), literal(version)];

	if (maxRows !== undefined)
		args.push(String(maxRows));
	return h.sqlRows('SELECT * FROM lance_parts.write_dataset(' + args.join(', ') + ')')[0];
}

for (const version of ['2.0', '2.1', '2.2', '2.3'])
{
	test(`write_dataset of every mapped type, file version ${version}: lancedb reads every value`, async () => {
		const datasetPath = path.join(dir, 'types_' + version.replace('.', '_') + '.lance');
		const result = writeDataset(datasetPath, 'SELECT * FROM write_types ORDER BY id', 'create',
									version, ROWS_PER_FILE);

		assert.deepEqual(result, { dataset_version: 1, fragments: 2, num_rows: ROWS });
		assert.deepEqual(h.manifestNames(datasetPath).v1, [], 'v2 manifest naming by default');
		const table = await h.openTable(datasetPath);

		assert.equal(await table.version(), 1);
		await assertTableMatches(table, 'version ' + version);

		// the 1 KiB strings fill several pages of about 8 MiB in each file (full-zip from 2.1)
		for (const file of fs.readdirSync(path.join(datasetPath, 'data')))
		{
			const pages = h.sqlRows(`SELECT column_index, count(*)::int AS pages, min(layout) AS layout
				FROM lance_parts.file_pages(${literal(path.join(datasetPath, 'data', file))})
				GROUP BY column_index ORDER BY count(*) DESC LIMIT 1`)[0];

			assert.ok(pages.pages >= 2, file + ': the large strings take several pages, not ' + pages.pages);
			if (version !== '2.0')
				assert.match(pages.layout, /full/i, file + ': large strings in full-zip pages');
		}

		// lancedb works on top: append, btree index, compaction
		await h.lancedbModifies(table);
	});
}

test('write_dataset with 2 encoding workers (lance_parts.write_workers): lancedb reads every value, fragments in the query\'s order', async () => {
	const datasetPath = path.join(dir, 'types_parallel.lance');
	const lines = psqlLines('SET lance_parts.write_workers = 2;\n' +
		'SELECT fragments || \' \' || num_rows FROM lance_parts.write_dataset(' +
		[literal(datasetPath), literal('SELECT * FROM write_types ORDER BY id'), "'create'", "'2.2'", '7000'].join(', ') +
		');\n');

	assert.deepEqual(lines, ['5 ' + ROWS]);
	const table = await h.openTable(datasetPath);
	const result = await table.query().toArrow();
	const ids = columnValues(result.getChild('id'));

	// a scan reads the fragments in order: the rows come in the query's order
	assert.equal(ids.length, ROWS);
	for (let i = 0; i < ids.length; i++)
		if (ids[i] !== i + 1)
			assert.fail(`row ${i} of the scan has id ${ids[i]}, not ${i + 1}`);
	await assertTableMatches(table, '2 workers');
});

psqlLines(`
DROP TABLE IF EXISTS write_structs, write_lists;
DROP TYPE IF EXISTS write_outer;
DROP TYPE IF EXISTS write_pair;
CREATE TYPE write_pair AS (a integer, b text);
CREATE TYPE write_outer AS (p write_pair, d double precision, v varchar(8), big text);
CREATE TABLE write_structs AS
SELECT g AS id,
       CASE WHEN g % 5 = 0 THEN NULL ELSE ROW(CASE WHEN g % 4 = 0 THEN NULL ELSE g END,
                                              CASE WHEN g % 3 = 0 THEN NULL ELSE 'b' || g END)::write_pair END AS p,
       CASE WHEN g % 7 = 0 THEN NULL
            ELSE ROW(CASE WHEN g % 2 = 0 THEN NULL ELSE ROW(g * 2, '')::write_pair END, g / 2.0,
                     'v' || g % 10, CASE WHEN g % 11 = 0 THEN NULL ELSE repeat(md5(g::text), 10) END)::write_outer END AS o,
       ROW(g, 'always')::write_pair AS never_null
FROM generate_series(1, ${ROWS}) g;
`);

// The structs as JSON, nulls at every level: PostgreSQL's rows, lancedb's read.
const STRUCT_ROWS = h.sqlRows('SELECT id, to_jsonb(p) AS p, to_jsonb(o) AS o, to_jsonb(never_null) AS never_null FROM write_structs ORDER BY id');

for (const version of ['2.0', '2.1', '2.2', '2.3'])
{
	test(`write_dataset of composite types as structs, file version ${version}: lancedb reads every value`, async () => {
		const datasetPath = path.join(dir, 'structs_' + version.replace('.', '_') + '.lance');
		// 2.0 has no place for a null struct: its rows have none
		const query = version === '2.0' ? 'SELECT id, never_null FROM write_structs ORDER BY id' :
			'SELECT * FROM write_structs ORDER BY id';
		const result = writeDataset(datasetPath, query, 'create', version, ROWS_PER_FILE);

		assert.deepEqual(result, { dataset_version: 1, fragments: 2, num_rows: ROWS });
		const table = await h.openTable(datasetPath);
		const arrowTable = await table.query().toArrow();

		assert.deepEqual(arrowTable.schema.fields.map((f) => f.name + ':' + f.type),
			version === '2.0' ? ['id:Int32', 'never_null:Struct<{a:Int32, b:Utf8}>'] :
				['id:Int32', 'p:Struct<{a:Int32, b:Utf8}>',
					'o:Struct<{p:Struct<{a:Int32, b:Utf8}>, d:Float64, v:Utf8, big:Utf8}>',
					'never_null:Struct<{a:Int32, b:Utf8}>']);
		const rows = JSON.parse(JSON.stringify(await table.query().toArray()))
			.sort((a, b) => a.id - b.id);

		assert.equal(rows.length, STRUCT_ROWS.length);
		for (let i = 0; i < rows.length; i++)
		{
			const expected = version === '2.0' ?
				{ id: STRUCT_ROWS[i].id, never_null: STRUCT_ROWS[i].never_null } : STRUCT_ROWS[i];

			assert.deepStrictEqual(rows[i], expected, 'row ' + (i + 1));
		}
		await h.lancedbModifies(table);
	});
}

psqlLines(`
DROP TABLE IF EXISTS write_lists;
CREATE TABLE write_lists AS
SELECT g AS id,
       CASE WHEN g % 6 = 0 THEN NULL WHEN g % 6 = 1 THEN '{}'::integer[]
            ELSE ARRAY(SELECT CASE WHEN (g + k) % 5 = 0 THEN NULL ELSE g * k END FROM generate_series(1, g % 9) k) END AS ints,
       CASE WHEN g % 7 = 0 THEN NULL
            ELSE ARRAY['t' || g, '', NULL, repeat('x', g % 40)]::varchar(64)[] END AS texts,
       ARRAY[g::bigint * 1000000007, -g]::bigint[] AS pair,
       (CASE WHEN g % 4 = 0 THEN NULL ELSE ARRAY[g / 8.0, NULL] END)::numeric(9,3)[] AS decs,
       CASE WHEN g % 8 = 0 THEN NULL WHEN g % 8 = 1 THEN '{}'::write_pair[]
            ELSE ARRAY[ROW(g, 'p' || g)::write_pair, NULL, ROW(NULL, NULL)::write_pair] END AS pairs
FROM generate_series(1, ${ROWS}) g;
`);
const LIST_ROWS = h.sqlRows(`SELECT id, ints, texts::text[] AS texts, array_to_json(pair::text[]) AS pair,
	array_to_json(decs::text[]) AS decs, to_jsonb(pairs) AS pairs FROM write_lists ORDER BY id`);
// 2.0 has no place for a null struct, in a list or not: the pairs without their null ones
const LISTS_2_0_QUERY = 'SELECT id, ints, texts, pair, decs, array_remove(pairs, NULL) AS pairs FROM write_lists ORDER BY id';
const LIST_ROWS_2_0 = h.sqlRows(`SELECT id, ints, texts::text[] AS texts, array_to_json(pair::text[]) AS pair,
	array_to_json(decs::text[]) AS decs, to_jsonb(array_remove(pairs, NULL)) AS pairs FROM write_lists ORDER BY id`);

for (const version of ['2.0', '2.1', '2.2', '2.3'])
{
	test(`write_dataset of arrays as lists, file version ${version}: lancedb reads every value`, async () => {
		const datasetPath = path.join(dir, 'lists_' + version.replace('.', '_') + '.lance');
		const query = version === '2.0' ? LISTS_2_0_QUERY : 'SELECT * FROM write_lists ORDER BY id';
		const expected = version === '2.0' ? LIST_ROWS_2_0 : LIST_ROWS;
		const result = writeDataset(datasetPath, query, 'create', version, ROWS_PER_FILE);

		assert.deepEqual(result, { dataset_version: 1, fragments: 2, num_rows: ROWS });
		const table = await h.openTable(datasetPath);
		const data = await table.query().toArrow();

		assert.deepEqual(data.schema.fields.map((f) => f.name + ':' + f.type),
			['id:Int32', 'ints:List<Int32>', 'texts:List<Utf8>', 'pair:List<Int64>', 'decs:List<Decimal[9e+3]>',
				'pairs:List<Struct<{a:Int32, b:Utf8}>>']);
		const order = columnValues(data.getChild('id')).map((id, i) => [id, i]).sort((a, b) => a[0] - b[0]).map(([, i]) => i);
		const lists = {};

		for (const name of ['ints', 'texts', 'pair', 'decs'])
			lists[name] = listValues(data.getChild(name));
		for (let k = 0; k < order.length; k++)
			for (const name of ['ints', 'texts', 'pair', 'decs'])
				assert.deepStrictEqual(lists[name][order[k]], expected[k][name], `row ${k + 1}, column ${name}`);
		// lists of structs, as to_jsonb() shows them
		const pairs = JSON.parse(JSON.stringify(await table.query().select(['id', 'pairs']).toArray()))
			.sort((a, b) => a.id - b.id);

		for (let k = 0; k < pairs.length; k++)
			assert.deepStrictEqual(pairs[k].pairs, expected[k].pairs, `row ${k + 1}, column pairs`);
		await h.lancedbModifies(table);
	});
}

test('write_dataset of arrays into a 2.0 file: items of many pages under null and empty lists, lists without items', async () => {
	// 300-byte strings: the items' column of the 2.0 list has several 8 MiB pages
	const datasetPath = path.join(dir, 'lists_pages_2_0.lance');
	const query = `SELECT g AS id,
	       CASE WHEN g % 5 = 0 THEN NULL WHEN g % 5 = 1 THEN '{}'::text[]
	            ELSE ARRAY(SELECT CASE WHEN k = 2 THEN NULL ELSE repeat(chr(97 + (g + k) % 26), 300) || g END
	                       FROM generate_series(1, g % 4 + 1) k) END AS texts,
	       ARRAY(SELECT CASE WHEN k % 3 = 0 THEN NULL ELSE g * k END FROM generate_series(1, g % 5) k) AS ints,
	       CASE WHEN g % 2 = 0 THEN NULL ELSE '{}'::write_pair[] END AS no_pairs
	       FROM generate_series(1, 60000) g`;
	const rows = h.sqlRows(`SELECT id, texts, ints, to_jsonb(no_pairs) AS no_pairs FROM (${query}) q ORDER BY id`);

	assert.deepEqual(writeDataset(datasetPath, query, 'create', '2.0'), { dataset_version: 1, fragments: 1, num_rows: 60000 });
	const pages = h.sqlRows(`SELECT column_index, count(*)::int AS pages FROM lance_parts.file_pages(${literal(
		path.join(datasetPath, 'data', fs.readdirSync(path.join(datasetPath, 'data'))[0]))}) GROUP BY column_index ORDER BY column_index`);
	assert.ok(pages[2].pages >= 3, 'the items of texts fill pages: ' + JSON.stringify(pages));
	const table = await h.openTable(datasetPath);
	const data = await table.query().toArrow();
	const order = columnValues(data.getChild('id')).map((id, i) => [id, i]).sort((a, b) => a[0] - b[0]).map(([, i]) => i);
	const texts = listValues(data.getChild('texts'));
	const ints = listValues(data.getChild('ints'));

	for (let k = 0; k < order.length; k++)
	{
		assert.deepStrictEqual(texts[order[k]], rows[k].texts, `row ${k + 1}, column texts`);
		assert.deepStrictEqual(ints[order[k]], rows[k].ints, `row ${k + 1}, column ints`);
	}
	// lists of structs without a single item: the struct's header column has its one page of no item
	const noPairs = JSON.parse(JSON.stringify(await table.query().select(['id', 'no_pairs']).toArray()))
		.sort((a, b) => a.id - b.id);

	assert.deepStrictEqual(noPairs.map((r) => r.no_pairs), rows.map((r) => r.no_pairs));
	await h.lancedbModifies(table);
});

test('write_dataset append and overwrite make the versions Lance makes', async () => {
	const datasetPath = path.join(dir, 'modes.lance');

	assert.deepEqual(writeDataset(datasetPath, 'SELECT id, txt FROM write_types WHERE id <= 100', 'create', '2.1'),
					 { dataset_version: 1, fragments: 1, num_rows: 100 });
	// append matches columns by name, in any order
	assert.deepEqual(writeDataset(datasetPath, 'SELECT txt, id FROM write_types WHERE id > 100 AND id <= 250', 'append', '2.1', 100),
					 { dataset_version: 2, fragments: 2, num_rows: 150 });
	let table = await h.openTable(datasetPath);

	assert.equal(await table.countRows(), 250);
	const rows = (await table.query().select(['id', 'txt']).toArray()).map((r) => [r.id, r.txt]);

	assert.deepEqual(rows.sort((a, b) => a[0] - b[0]),
					 EXPECTED.slice(0, 250).map((r) => [r.id, r.txt]));
	// lancedb appends on top of our append
	await table.add([{ id: 251, txt: 'from lancedb' }]);
	assert.equal(await table.countRows(), 251);

	// overwrite: a new schema and new rows, version 4
	assert.deepEqual(writeDataset(datasetPath, "SELECT id::bigint AS key, 'o' || id AS label FROM write_types WHERE id <= 10", 'overwrite', '2.1'),
					 { dataset_version: 4, fragments: 1, num_rows: 10 });
	table = await h.openTable(datasetPath);
	assert.equal(await table.version(), 4);
	const overwritten = await table.query().toArrow();

	assert.deepEqual(overwritten.schema.fields.map((f) => f.name + ':' + f.type), ['key:Int64', 'label:Utf8']);
	assert.deepEqual((await table.query().toArray()).map((r) => r.label).sort(),
					 Array.from({ length: 10 }, (_, i) => 'o' + (i + 1)).sort());
	// the old version is still readable, as Lance keeps it
	await table.checkout(3);
	assert.equal(await table.countRows(), 251);
});

test('lance_parts.manifest_naming = v1 creates datasets with v1 manifest names', async () => {
	const datasetPath = path.join(dir, 'naming_v1.lance');

	psqlLines("SET lance_parts.manifest_naming = 'v1'; SELECT * FROM lance_parts.write_dataset(" +
			  literal(datasetPath) + ", 'SELECT 1 AS id', 'create', '2.2');\n");
	assert.deepEqual(h.manifestNames(datasetPath).all, ['1.manifest']);
	const table = await h.openTable(datasetPath);

	await table.add([{ id: 2 }]);
	assert.equal(await table.countRows(), 2);
	assert.ok(h.manifestNames(datasetPath).all.includes('2.manifest'), 'lancedb continues the v1 scheme');
});

test('write_part from two sessions, registered in caller order, into a dataset lancedb wrote', async () => {
	const db = await lancedb.connect(dir);
	const schema = new arrow.Schema([
		new arrow.Field('id', new arrow.Int64(), true),
		new arrow.Field('label', new arrow.Utf8(), true),
		new arrow.Field('score', new arrow.Float64(), true),
	]);
	await db.createTable('parts_base', [{ id: 1, label: 'lancedb 1', score: 0.5 }, { id: 2, label: 'lancedb 2', score: 1.5 }],
						 { schema, storageOptions: { newTableDataStorageVersion: '2.1' } });
	const datasetPath = path.join(dir, 'parts_base.lance');
	const target = h.createTarget(datasetPath);
	const partQuery = (from, to) => `SELECT g::bigint AS id, 'pg ' || g AS label, CASE WHEN g % 5 = 0 THEN NULL ELSE g / 4.0 END::float8 AS score FROM generate_series(${from}, ${to}) g`;
	const writePart = (from, to) => psqlAsync('SELECT uri, num_rows FROM lance_parts.write_part(' +
		h.sqlJsonb(target) + ', ' + literal(partQuery(from, to)) + ', ' + (to - from + 1) + ');\n');

	// two sessions at once; the second slice is written by the first session
	const [late, early] = await Promise.all([writePart(5001, 9000), writePart(3, 5000)]);
	const parts = [early[0].split('|')[0], late[0].split('|')[0]];

	assert.deepEqual([early[0].split('|')[1], late[0].split('|')[1]], ['4998', '4000']);
	for (const part of parts)
		assert.ok(part.startsWith(datasetPath + '/data/_parts/'), 'part in the staging directory: ' + part);
	const committed = h.sqlRows(`SELECT c.* FROM lance_parts.assemble(${h.sqlJsonb(target)}, ${h.sqlTextArray(parts)}) a,
		LATERAL lance_parts.commit(${h.sqlJsonb(target)}) c WHERE a.status = 'written'`);

	assert.equal(committed.length, 1, 'assembled and committed');
	const table = await h.openTable(datasetPath);

	assert.equal(await table.countRows(), 9000);
	const rows = await table.query().withRowId().toArray();

	rows.sort((a, b) => (a._rowid < b._rowid ? -1 : 1));
	assert.deepEqual(rows.map((r) => Number(r.id)), Array.from({ length: 9000 }, (_, i) => i + 1), 'caller order');
	const pgRows = rows.slice(2);

	for (const r of pgRows)
	{
		const g = Number(r.id);

		assert.equal(r.label, 'pg ' + g);
		assert.equal(r.score, g % 5 === 0 ? null : g / 4);
	}
	await h.lancedbModifies(table);
});

// ---- on S3 (Ceph RGW, s3_server.cjs, started by the test and stopped at its end;
// LP_S3_PORT, LP_S3_MON_PORT and LP_S3_OSD_PORTS choose its ports) ------------------------
test('on S3: write_dataset creates and appends, write_part parts are committed; lancedb reads every row', async (t) => {
	const { startS3Server } = require('./s3_server.cjs');
	const s3 = require('./s3_requests.cjs');
	const { settings, storageOptions, root: rootOf, fdwServerSql } = startS3Server('s3-write-sql-server', t);
	const root = rootOf('write-sql');
	psqlLines(`DROP SERVER IF EXISTS write_sql_s3 CASCADE;
${fdwServerSql('write_sql_s3', root)}
`);
	const dataset = root + '/types.lance';

	// every mapped type, two fragments, then an append of 100 rows in one more
	assert.deepEqual(writeDataset(dataset, 'SELECT * FROM write_types ORDER BY id', 'create', '2.2', ROWS_PER_FILE),
					 { dataset_version: 1, fragments: 2, num_rows: ROWS });
	const db = await lancedb.connect(root, { storageOptions });

	await assertTableMatches(await db.openTable('types'), 'S3');
	assert.deepEqual(writeDataset(dataset, 'SELECT * FROM write_types WHERE id <= 100', 'append', '2.2'),
					 { dataset_version: 2, fragments: 1, num_rows: 100 });
	assert.equal(await (await db.openTable('types')).countRows(), ROWS + 100);
	assert.equal((await s3.listKeys(settings, 'write-sql/types.lance/data/')).length, 3, 'three data files');

	// an ERROR in the middle of an append, after two files were published, leaves no object and no upload
	assert.throws(() => writeDataset(dataset, 'SELECT * FROM write_types WHERE 1 / (id - 25000) IS NOT NULL',
									 'append', '2.2', 10000), /division by zero/);
	assert.equal((await s3.listKeys(settings, 'write-sql/types.lance/data/')).length, 3, 'no data file of the failed append');
	assert.deepEqual(await s3.listUploads(settings, 'write-sql/'), [], 'no multipart upload left');

	// write_part on S3, from two sessions, committed in caller order
	const target = h.createTarget(dataset);
	const partQuery = (from, to) => `SELECT * FROM write_types WHERE id BETWEEN ${from} AND ${to} ORDER BY id`;
	const writePart = (from, to) => psqlAsync('SELECT uri FROM lance_parts.write_part(' +
		h.sqlJsonb(target) + ', ' + literal(partQuery(from, to)) + ');\n');
	const [second, first] = await Promise.all([writePart(20001, ROWS), writePart(1, 20000)]);
	const parts = [first[0], second[0]];

	for (const part of parts)
		assert.ok(part.startsWith(dataset + '/data/_parts/' + target.file_name + '/'), 'part in the staging prefix: ' + part);
	const committed = h.sqlRows(`SELECT c.* FROM lance_parts.assemble(${h.sqlJsonb(target)}, ${h.sqlTextArray(parts)}) a,
		LATERAL lance_parts.commit(${h.sqlJsonb(target)}) c WHERE a.status = 'written'`);

	assert.equal(committed.length, 1, 'assembled and committed');
	assert.equal(Number(committed[0].dataset_version), 3);
	const table = await db.openTable('types');
	const rows = await table.query().select(['id']).withRowId().toArray();

	rows.sort((a, b) => (a._rowid < b._rowid ? -1 : 1));
	assert.deepEqual(rows.slice(ROWS + 100).map((r) => r.id), Array.from({ length: ROWS }, (_, i) => i + 1),
					 'the parts in caller order');
	assert.deepEqual(await s3.listUploads(settings, 'write-sql/'), [], 'no multipart upload left');
	// Lance writes no version hint on object stores: one written at the creation would go stale
	assert.deepEqual((await s3.listKeys(settings, 'write-sql/types.lance/_versions/'))
		.filter((key) => !key.endsWith('.manifest')), [], 'nothing but manifests in _versions/');
});
