'use strict';
// s3:// datasets: a real S3 server (Ceph RGW, started here with scripts/s3-server.sh and
// stopped by PID at the end) holds the generated types datasets of Lance 2.0-2.3 in both
// manifest naming schemes, written to it again by the reference implementation. They are
// imported with IMPORT FOREIGN SCHEMA from a lance_fdw server whose root is the bucket prefix,
// and every value of every column is compared with what the reference reads back from S3;
// file_info, file_schema and file_pages read their data files there (writing: s3_write.test.cjs). LP_S3_PORT,
// LP_S3_MON_PORT and LP_S3_OSD_PORTS choose the server's ports.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const lancedb = require('@lancedb/lancedb');
const { startS3Server } = require('./s3_server.cjs');
const { encodeRows } = require('./values.cjs');
const { psqlLines, literal } = require('./pg.cjs');
const { readForeignTable, firstDifference, sortById } = require('./fdw_values.cjs');

const TESTDATA = process.env.LP_TESTDATA;
const PREFIX = 'reference';

const manifest = JSON.parse(fs.readFileSync(path.join(TESTDATA, 'manifest.json'), 'utf8'));
const datasets = manifest.datasets.filter((d) => d.name.startsWith('types_') &&
	['2.0', '2.1', '2.2', '2.3'].includes(d.file_version));

const { settings, storageOptions, root, fdwServerSql } = startS3Server('s3-server');
const ROOT = root(PREFIX);

// Each dataset written to S3 by the reference, and its rows as the reference reads them there.
const expectedRows = {};

test.before(async () => {
	const local = await lancedb.connect(TESTDATA);
	const remote = await lancedb.connect(ROOT, { storageOptions });

	for (const dataset of datasets)
	{
		const source = await local.openTable(dataset.name);
		const rows = await source.query().toArrow();
		const written = await remote.createTable(dataset.name, rows, {
			storageOptions: {
				new_table_data_storage_version: dataset.storage_version,
				new_table_enable_v2_manifest_paths: dataset.manifest_scheme === 'v2' ? 'true' : 'false',
			},
		});
		const reread = await (await lancedb.connect(ROOT, { storageOptions })).openTable(dataset.name);

		assert.equal(await reread.countRows(), await written.countRows());
		expectedRows[dataset.name] = sortById(encodeRows(await reread.query().toArrow()));
	}
	psqlLines(`CREATE EXTENSION IF NOT EXISTS lance_parts;
DROP SCHEMA IF EXISTS s3_reference CASCADE;
DROP SERVER IF EXISTS s3_reference_server CASCADE;
${fdwServerSql('s3_reference_server', ROOT)}
CREATE SCHEMA s3_reference;
IMPORT FOREIGN SCHEMA ${PREFIX} FROM SERVER s3_reference_server INTO s3_reference
  OPTIONS (uri ${literal(ROOT)});
`);
});

test('IMPORT FOREIGN SCHEMA over S3 made a table for every dataset written there', () => {
	const tables = psqlLines("SELECT foreign_table_name FROM information_schema.foreign_tables WHERE foreign_table_schema = 's3_reference' ORDER BY 1;\n");

	assert.deepEqual(tables, datasets.map((d) => d.name).sort());
	assert.deepEqual(psqlLines("SELECT option_value FROM information_schema.foreign_table_options WHERE foreign_table_schema = 's3_reference' AND foreign_table_name = 'types_2_2_v2' AND option_name = 'uri';\n"),
		[ROOT + '/types_2_2_v2.lance']);
});

test('IMPORT FOREIGN SCHEMA of a directory URI with trailing slashes imports the same tables', () => {
	for (const [schema, uri] of [['s3_slash', ROOT + '/'], ['s3_slashes', ROOT + '//']])
	{
		psqlLines(`DROP SCHEMA IF EXISTS ${schema} CASCADE;
CREATE SCHEMA ${schema};
IMPORT FOREIGN SCHEMA ${PREFIX} FROM SERVER s3_reference_server INTO ${schema} OPTIONS (uri ${literal(uri)});
`);
		assert.deepEqual(psqlLines(`SELECT foreign_table_name FROM information_schema.foreign_tables WHERE foreign_table_schema = '${schema}' ORDER BY 1;\n`),
			datasets.map((d) => d.name).sort(), uri);
		assert.deepEqual(psqlLines(`SELECT option_value FROM information_schema.foreign_table_options WHERE foreign_table_schema = '${schema}' AND foreign_table_name = 'types_2_2_v2' AND option_name = 'uri';\n`),
			[ROOT + '/types_2_2_v2.lance'], uri);
		assert.equal(psqlLines(`SELECT count(*) FROM ${schema}.types_2_2_v2;\n`)[0], psqlLines('SELECT count(*) FROM s3_reference.types_2_2_v2;\n')[0]);
		psqlLines(`DROP SCHEMA ${schema} CASCADE;\n`);
	}
});

for (const dataset of datasets)
{
	test(dataset.name + ' on S3 (' + dataset.file_version + ', ' + dataset.manifest_scheme + ' naming): every value as the reference reads it there', () => {
		const fields = dataset.expected_fields.filter((f) => f.parent_id === -1);
		const expected = expectedRows[dataset.name];
		const actual = readForeignTable('s3_reference.' + dataset.name, fields);
		const counter = { compared: 0 };

		assert.equal(expected.length, dataset.num_rows, 'the reference read every row back from S3');
		const difference = firstDifference(dataset.name, fields, actual, expected, counter);

		if (difference !== null)
			assert.fail(difference);
		assert.equal(counter.compared, expected.length * fields.length);
	});
}

// The URIs of the data files EXPLAIN (VERBOSE) names for a foreign table.
function dataFilesOf(table)
{
	const line = psqlLines('EXPLAIN (VERBOSE) SELECT * FROM s3_reference.' + table + ';\n')
		.find((l) => l.trim().startsWith('Lance Data Files: '));

	return line === undefined ? [] : line.trim().slice('Lance Data Files: '.length).split(', ')
		.map((name) => ROOT + '/' + table + '.lance/data/' + name);
}

for (const dataset of datasets.filter((d) => d.manifest_scheme === 'v2'))
{
	test(dataset.name + ' on S3: file_info, file_schema and file_pages read its data files there', () => {
		const files = dataFilesOf(dataset.name);
		const fields = dataset.expected_fields;

		assert.ok(files.length > 0, 'EXPLAIN VERBOSE lists the data files');
		let rows = 0;

		for (const file of files)
		{
			const [info] = psqlLines('SELECT row_to_json(i) FROM lance_parts.file_info(' + literal(file) + ') i;\n').map(JSON.parse);

			assert.equal(info.version, dataset.file_version, file);
			rows += Number(info.num_rows);
			assert.deepEqual(psqlLines("SELECT name || ':' || logical_type FROM lance_parts.file_schema(" + literal(file) + ') ORDER BY field_id;\n'),
				[...fields].sort((a, b) => a.id - b.id).map((f) => f.name + ':' + f.logical_type), file);
			assert.ok(Number(psqlLines('SELECT count(*) FROM lance_parts.file_pages(' + literal(file) + ');\n')[0]) > 0, file);
		}
		assert.equal(rows, dataset.num_rows);
	});
}

test('a missing object and an uncovered URI are refused', () => {
	assert.throws(() => psqlLines('SELECT * FROM lance_parts.file_info(' + literal(ROOT + '/none.lance') + ');\n'),
		(error) => /ERROR: {2}file "s3:\/\/[^"]+\/none\.lance" does not exist/.test(String(error.stderr)));
	assert.throws(() => psqlLines("SELECT * FROM lance_parts.file_info('s3://other-bucket/x.lance');\n"),
		(error) => /no lance_fdw server has a root containing "s3:\/\/other-bucket\/x\.lance"/.test(String(error.stderr)));
});

test('on S3 the server and a user mapping are the grant: no pg_read_server_files, and 42501 without USAGE', () => {
	const file = dataFilesOf('types_2_2_v2')[0];

	psqlLines(`DROP ROLE IF EXISTS s3_reader; DROP ROLE IF EXISTS s3_stranger;
CREATE ROLE s3_reader; CREATE ROLE s3_stranger;
GRANT USAGE ON FOREIGN SERVER s3_reference_server TO s3_reader;
CREATE USER MAPPING FOR s3_reader SERVER s3_reference_server
  OPTIONS (access_key_id ${literal(settings.LP_S3_ACCESS_KEY_ID)},
           secret_access_key ${literal(settings.LP_S3_SECRET_ACCESS_KEY)});
`);
	try
	{
		assert.deepEqual(psqlLines('SET ROLE s3_reader; SELECT num_rows > 0 FROM lance_parts.file_info(' + literal(file) + ');\n'), ['t']);
		assert.throws(() => psqlLines('SET ROLE s3_stranger; SELECT * FROM lance_parts.file_info(' + literal(file) + ');\n'),
			(error) => /permission denied for foreign server "s3_reference_server"/.test(String(error.stderr)));
	}
	finally
	{
		psqlLines('DROP USER MAPPING FOR s3_reader SERVER s3_reference_server; DROP OWNED BY s3_reader; DROP ROLE s3_reader; DROP ROLE s3_stranger;\n');
	}
});


test('the credentials appear nowhere in EXPLAIN (ANALYZE, VERBOSE, SETTINGS) of an S3 scan', () => {
	const table = datasets.find((d) => d.manifest_scheme === 'v2').name;
	const plan = psqlLines('EXPLAIN (ANALYZE, VERBOSE, SETTINGS) SELECT * FROM s3_reference.' + table + ';\n')
		.join('\n');

	assert.match(plan, /Lance Data Files: /, 'the plan is the foreign scan\'s');
	for (const [name, value] of [['access key id', settings.LP_S3_ACCESS_KEY_ID],
		['secret access key', settings.LP_S3_SECRET_ACCESS_KEY]])
		assert.ok(!plan.includes(value), 'the ' + name + ' is in the plan');
});
