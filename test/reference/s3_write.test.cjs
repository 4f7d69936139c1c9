'use strict';
// Writing on S3: a real S3 server (Ceph RGW, started here with scripts/s3-server.sh and
// stopped by PID at the end) where the reference implementation writes datasets and the
// datasets whose data files are the parts. lance_parts assembles the parts there (both
// forms), commits (append and replace) and compacts, and the reference reads every row
// back, for Lance 2.0-2.3 in both manifest naming schemes (no version hint written, as Lance writes
// none on S3); local parts go into an S3
// dataset and S3 parts into a local one; parts of 6 MiB and more are assembled on the
// server (UploadPartCopy), so that the bytes the backend exchanges with the server are
// a small fraction of the file; two sessions append to one dataset at once; and a cancel
// or an ERROR in the middle of an assembly leaves no multipart upload and no object.
// LP_S3_PORT, LP_S3_MON_PORT and LP_S3_OSD_PORTS choose the server's ports.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const lancedb = require('@lancedb/lancedb');
const { startS3Server } = require('./s3_server.cjs');
const { encodeRows } = require('./values.cjs');
const { vectorSchema, vectorRows, vectorDigests } = require('./vectors.cjs');
const { psqlLines, psqlAsync, literal } = require('./pg.cjs');
const h = require('./harness.cjs');
const s3 = require('./s3_requests.cjs');

const PREFIX = 'writes';
const APPENDS_PER_SESSION = 20;

const { settings, storageOptions, root, fdwServerSql } = startS3Server('s3-write-server');
const ROOT = root(PREFIX);
const PORT = new URL(settings.LP_S3_ENDPOINT).port;
const scratch = h.scratchDir('s3-write');

// The key of a URI of the bucket, and the other way round.
const keyOf = (uri) => uri.slice(('s3://' + settings.LP_S3_BUCKET + '/').length);
const uriOf = (key) => 's3://' + settings.LP_S3_BUCKET + '/' + key;

async function remote()
{
	return lancedb.connect(ROOT, { storageOptions });
}

// Rows as the reference reads them, in a canonical order (duplicates kept).
async function rowsOf(table)
{
	return encodeRows(await table.query().toArrow()).map((r) => JSON.stringify(r)).sort();
}

// The data files of a dataset on S3 written by the reference, oldest fragment first
// (the reference writes one file per fragment here).
async function dataFileUris(datasetName)
{
	const table = await (await remote()).openTable(datasetName);
	const keys = await s3.listKeys(settings, PREFIX + '/' + datasetName + '.lance/data/');

	assert.equal(keys.length, (await table.stats()).fragmentStats.numFragments, 'one data file per fragment');
	return keys.map(uriOf);
}

function sqlRow(query)
{
	return h.sqlRows(query)[0];
}

test.before(() => {
	psqlLines(`CREATE EXTENSION IF NOT EXISTS lance_parts;
DROP SERVER IF EXISTS s3_write_server CASCADE;
${fdwServerSql('s3_write_server', ROOT)}
`);
});

for (const [version, scheme] of ['2.0', '2.1', '2.2', '2.3'].flatMap((v) => [[v, 'v1'], [v, 'v2']]))
{
	const name = 'types_' + version.replace('.', '_') + '_' + scheme;

	test(name + ' on S3: assemble (both forms), append, replace, compact; the reference reads every row', async () => {
		const info = h.datasetInfo(name);
		const source = await (await lancedb.connect(process.env.LP_TESTDATA)).openTable(name);
		const sourceRows = await source.query().toArrow();
		const db = await remote();
		const options = {
			mode: 'overwrite',
			storageOptions: {
				new_table_data_storage_version: version,
				new_table_enable_v2_manifest_paths: scheme === 'v2' ? 'true' : 'false',
			},
		};

		await db.createTable(name, sourceRows, options);
		await db.createTable(name + '_parts', sourceRows, options);
		const [part] = await dataFileUris(name + '_parts');
		const dataset = ROOT + '/' + name + '.lance';
		const expected = await rowsOf(source);
		const rows = info.num_rows;

		// append: the one-call form, the part twice
		const appended = h.createTarget(dataset);

		assert.equal(appended.dataset, dataset);
		assert.equal(h.sqlRows('SELECT lance_parts.staging_dir(' + h.sqlJsonb(appended) + ') AS d')[0].d,
			dataset + '/data/_parts/' + appended.file_name + '/');
		const a = sqlRow('SELECT * FROM lance_parts.assemble(' + h.sqlJsonb(appended) + ', ' +
			h.sqlTextArray([part, part]) + ', ' + h.sqlBigintArray([rows, rows]) + ')');

		assert.equal(a.status, 'written', JSON.stringify(a));
		assert.equal(a.path, dataset + '/data/' + appended.file_name);
		assert.equal(Number(a.num_rows), 2 * rows);
		assert.deepEqual(await s3.listKeys(settings, keyOf(a.path)), [keyOf(a.path)]);
		const c1 = sqlRow('SELECT * FROM lance_parts.commit(' + h.sqlJsonb(appended) + ')');

		assert.deepEqual([Number(c1.dataset_version), Number(c1.fragment_id)], [2, 1]);

		// replace fragment 0: the registered form
		const replacing = h.createTarget(dataset);

		// the registry is the session's: register and assemble in one
		const b = JSON.parse(psqlLines('SELECT lance_parts.register_part(' + h.sqlJsonb(replacing) + ', ' + literal(part) + ', ' + rows + ');\n' +
			'SELECT to_jsonb(a) FROM lance_parts.assemble(' + h.sqlJsonb(replacing) + ') a;\n')[1]);

		assert.equal(b.status, 'written', JSON.stringify(b));
		const c2 = sqlRow('SELECT * FROM lance_parts.commit(' + h.sqlJsonb(replacing) + ", 'replace', 0)");

		assert.deepEqual([Number(c2.dataset_version), Number(c2.fragment_id)], [3, 0]);

		let table = await (await remote()).openTable(name);

		assert.equal(await table.version(), 3);
		assert.deepEqual(await rowsOf(table), [...expected, ...expected, ...expected].sort(),
			'the reference reads the original rows and the appended ones, fragment 0 replaced by the same rows');

		const compacted = h.sqlRows('SELECT * FROM lance_parts.compact(' + literal(dataset) + ')');

		assert.deepEqual(compacted.map((r) => r.action), ['rewritten', 'rewritten'], JSON.stringify(compacted));
		table = await (await remote()).openTable(name);
		assert.equal(await table.version(), 4);
		assert.equal((await table.stats()).fragmentStats.numFragments, 1);
		assert.deepEqual(await rowsOf(table), [...expected, ...expected, ...expected].sort(),
			'the compacted dataset holds the same rows');

		// the dataset's own naming scheme, found by listing _versions/; no version hint, as
		// Lance writes none on object stores (its readers list _versions/ there)
		const versions = (await s3.listKeys(settings, PREFIX + '/' + name + '.lance/_versions/')).map((k) => path.basename(k));

		assert.deepEqual(versions.sort(), [1, 2, 3, 4].map((v) => h.manifestName(v, scheme)).sort());
	});
}

test('local parts into an S3 dataset, and S3 parts into a local dataset', async () => {
	const name = 'types_2_2_v2';
	const info = h.datasetInfo(name);
	const source = await (await lancedb.connect(process.env.LP_TESTDATA)).openTable(name);
	const expected = await rowsOf(source);
	const localParts = h.dataFiles(name).map((f) => path.join(process.env.LP_TESTDATA, name + '.lance', 'data', f.file));
	const db = await remote();
	// a dataset of its own on S3 (the assembly tests above wrote one named as the source)
	const mixed = name + '_mixed';

	await db.createTable(mixed, await source.query().toArrow(), {
		mode: 'overwrite',
		storageOptions: { new_table_data_storage_version: '2.2', new_table_enable_v2_manifest_paths: 'true' },
	});
	const onS3 = ROOT + '/' + mixed + '.lance';
	const intoS3 = sqlRow('SELECT * FROM lance_parts.ingest(' + literal(onS3) + ', ' + h.sqlTextArray(localParts) + ')');

	assert.equal(Number(intoS3.num_rows), info.num_rows);
	assert.deepEqual(await rowsOf(await (await remote()).openTable(mixed)), [...expected, ...expected].sort());

	const local = h.copyDataset(name, scratch);
	const s3Parts = await dataFileUris(mixed);
	const intoLocal = sqlRow('SELECT * FROM lance_parts.ingest(' + literal(local) + ', ' + h.sqlTextArray(s3Parts) + ')');

	assert.equal(Number(intoLocal.num_rows), 2 * info.num_rows);
	assert.deepEqual(await rowsOf(await h.openTable(local)), [...expected, ...expected, ...expected].sort());
});

test('parts on the same S3 server are assembled there: their bytes do not pass through PostgreSQL', async () => {
	const db = await remote();
	const parts = await db.createTable('vectors_parts', vectorRows(0, 10500), { schema: vectorSchema, mode: 'overwrite' });

	await parts.add(vectorRows(10500, 11000));
	await db.createTable('vectors', vectorRows(100000, 10), { schema: vectorSchema, mode: 'overwrite' });
	const partUris = await dataFileUris('vectors_parts');
	const target = h.createTarget(ROOT + '/vectors.lance');
	const lines = psqlLines('CREATE TEMP TABLE io (label text, sent bigint, received bigint);\n' +
		// open the connection and read what planning reads before measuring
		'SELECT count(*) FROM lance_parts.file_info(' + literal(partUris[0]) + ');\n' +
		s3.backendTrafficSql('before', PORT) +
		'SELECT size_bytes FROM lance_parts.assemble(' + h.sqlJsonb(target) + ', ' + h.sqlTextArray(partUris) + ');\n' +
		s3.backendTrafficSql('after', PORT) +
		"SELECT a.sent - b.sent, a.received - b.received FROM io a, io b WHERE a.label = 'after' AND b.label = 'before';\n");
	const size = Number(lines[1]);
	const [sent, received] = lines[2].split('|').map(Number);

	assert.ok(size > 21e6, 'the assembled file holds both parts (' + size + ' bytes)');
	assert.ok(sent + received > 0, 'the measurement sees the requests');
	assert.ok(sent + received < size / 100,
		'the backend sent ' + sent + ' and received ' + received + ' bytes for a file of ' + size);
	psqlLines('SELECT * FROM lance_parts.commit(' + h.sqlJsonb(target) + ');\n');

	// the same parts assembled locally hold the same rows, read back by the reference
	const local = path.join(scratch, 'vectors.lance');
	const localDb = await lancedb.connect(scratch);

	await localDb.createTable('vectors', vectorRows(0, 0), { schema: vectorSchema });
	psqlLines('SELECT * FROM lance_parts.ingest(' + literal(local) + ', ' + h.sqlTextArray(partUris) + ');\n');
	const serverSide = await (await remote()).openTable('vectors');
	const assembledLocally = await localDb.openTable('vectors');
	const expected = await vectorDigests(parts);

	assert.equal(expected.length, 21500);
	assert.deepEqual(await vectorDigests(assembledLocally), expected);
	assert.deepEqual((await vectorDigests(serverSide)).filter((r) => BigInt(r.split(':')[0]) < 100000n), expected);
	assert.equal(await serverSide.countRows(), expected.length + 10);
});

test('two sessions appending to one S3 dataset: every append lands', async () => {
	const db = await remote();

	await db.createTable('appends', vectorRows(0, 3), { schema: vectorSchema, mode: 'overwrite' });
	const [part] = await dataFileUris('appends');
	const dataset = ROOT + '/appends.lance';
	const session = () => psqlAsync(Array.from({ length: APPENDS_PER_SESSION }, () =>
		'SELECT dataset_version FROM lance_parts.ingest(' + literal(dataset) + ', ARRAY[' + literal(part) + ']);\n').join(''));
	const versions = (await Promise.all([session(), session()])).flat().map(Number);

	assert.deepEqual(versions.sort((x, y) => x - y), Array.from({ length: 2 * APPENDS_PER_SESSION }, (_, i) => i + 2));
	const table = await (await remote()).openTable('appends');

	assert.equal(await table.version(), 2 * APPENDS_PER_SESSION + 1);
	assert.equal(await table.countRows(), 3 * (2 * APPENDS_PER_SESSION + 1));
});

// Start concat_files of many local parts into output on S3 in a session of its own; resolve
// once its multipart upload is open on the server, with the session's pid and the promise of
// its end ({ out, err }).
async function startLongUpload(output, parts)
{
	const application = 'lp-upload-' + path.basename(output);
	const child = psqlAsync("SET application_name = '" + application + "';\n\\set VERBOSITY verbose\n" +
		'SELECT status FROM lance_parts.concat_files(' + literal(output) + ', ' + h.sqlTextArray(parts) + ');\n', true);

	for (let i = 0; i < 2000; i++)
	{
		if ((await s3.listUploads(settings, keyOf(output))).length > 0)
		{
			const pid = psqlLines("SELECT pid FROM pg_stat_activity WHERE application_name = '" + application + "';\n")[0];

			return { pid, done: child };
		}
		await new Promise((resolve) => setTimeout(resolve, 10));
	}
	throw new Error('no upload of ' + output + ' appeared: ' + JSON.stringify(await child));
}

test('a cancel or an ERROR in the middle of an assembly leaves no upload and no object', async () => {
	const localDb = await lancedb.connect(scratch);
	const big = await localDb.createTable('big_local', vectorRows(0, 7000), { schema: vectorSchema, mode: 'overwrite' });
	const [file] = fs.readdirSync(path.join(scratch, 'big_local.lance', 'data'));
	const localPart = path.join(scratch, 'big_local.lance', 'data', file);

	assert.equal(await big.countRows(), 7000);

	// pg_cancel_backend while parts are uploaded
	const canceled = ROOT + '/aborted/canceled.lance';
	const first = await startLongUpload(canceled, Array(24).fill(localPart));

	psqlLines('SELECT pg_cancel_backend(' + first.pid + ');\n');
	const firstEnd = await first.done;

	assert.match(firstEnd.err.join('\n'), /57014: canceling statement due to user request/);
	assert.deepEqual(await s3.listUploads(settings, PREFIX + '/aborted/'), [], 'no upload left after the cancel');
	assert.deepEqual(await s3.listKeys(settings, keyOf(canceled)), [], 'no object after the cancel');

	// an ERROR: the last part, on S3, is removed after planning, while the others are uploaded
	await (await remote()).createTable('doomed', vectorRows(0, 10), { schema: vectorSchema, mode: 'overwrite' });
	const [doomed] = await dataFileUris('doomed');
	const failed = ROOT + '/aborted/failed.lance';
	const second = await startLongUpload(failed, [...Array(24).fill(localPart), doomed]);

	await s3.deleteKey(settings, keyOf(doomed));
	const secondEnd = await second.done;

	assert.match(secondEnd.err.join('\n'), /ERROR: {2}58P01: .*doomed\.lance/);
	assert.deepEqual(await s3.listUploads(settings, PREFIX + '/aborted/'), [], 'no upload left after the ERROR');
	assert.deepEqual(await s3.listKeys(settings, keyOf(failed)), [], 'no object after the ERROR');
});

test('writing on S3 needs USAGE and a user mapping, no pg_*_server_files role; a local part still does', async () => {
	const db = await remote();

	await db.createTable('granted', vectorRows(0, 5), { schema: vectorSchema, mode: 'overwrite' });
	const [part] = await dataFileUris('granted');
	const dataset = ROOT + '/granted.lance';
	const localDb = await lancedb.connect(scratch);

	await localDb.createTable('granted_local', vectorRows(5, 5), { schema: vectorSchema, mode: 'overwrite' });
	const localPart = path.join(scratch, 'granted_local.lance', 'data',
		fs.readdirSync(path.join(scratch, 'granted_local.lance', 'data'))[0]);

	psqlLines(`DROP ROLE IF EXISTS s3_writer; CREATE ROLE s3_writer;
GRANT USAGE ON SCHEMA lance_parts TO s3_writer;
GRANT USAGE ON FOREIGN SERVER s3_write_server TO s3_writer;
CREATE USER MAPPING FOR s3_writer SERVER s3_write_server
  OPTIONS (access_key_id ${literal(settings.LP_S3_ACCESS_KEY_ID)},
           secret_access_key ${literal(settings.LP_S3_SECRET_ACCESS_KEY)});
`);
	try
	{
		assert.deepEqual(psqlLines('SET ROLE s3_writer; SELECT dataset_version, num_rows FROM lance_parts.ingest(' +
			literal(dataset) + ', ARRAY[' + literal(part) + ']);\n'), ['2|5']);
		assert.throws(() => psqlLines('SET ROLE s3_writer; SELECT * FROM lance_parts.ingest(' +
			literal(dataset) + ', ARRAY[' + literal(localPart) + ']);\n'),
		(error) => /permission denied to read Lance files/.test(String(error.stderr)));
		assert.throws(() => psqlLines('SET ROLE s3_writer; SELECT * FROM lance_parts.concat_files(' +
			literal(path.join(scratch, 'stolen.lance')) + ', ARRAY[' + literal(part) + ']);\n'),
		(error) => /permission denied to write Lance files/.test(String(error.stderr)));
		assert.equal(await (await (await remote()).openTable('granted')).countRows(), 10);
	}
	finally
	{
		psqlLines('DROP USER MAPPING FOR s3_writer SERVER s3_write_server; DROP OWNED BY s3_writer; DROP ROLE s3_writer;\n');
	}
});

test('cleanup_target and cleanup_orphans on S3 remove what no version references', async () => {
	const db = await remote();

	await db.createTable('cleaned', vectorRows(0, 5), { schema: vectorSchema, mode: 'overwrite' });
	const [part] = await dataFileUris('cleaned');
	const dataset = ROOT + '/cleaned.lance';
	const assembled = [h.createTarget(dataset), h.createTarget(dataset)].map((target) => {
		const a = sqlRow('SELECT * FROM lance_parts.assemble(' + h.sqlJsonb(target) + ', ARRAY[' + literal(part) + '])');

		assert.equal(a.status, 'written');
		return { target, path: a.path };
	});

	assert.deepEqual(h.sqlRows('SELECT lance_parts.cleanup_target(' + h.sqlJsonb(assembled[0].target) + ') AS removed')
		.map((r) => r.removed), [true]);
	assert.deepEqual(await s3.listKeys(settings, keyOf(assembled[0].path)), [], 'cleanup_target removed the file');

	const listed = h.sqlRows('SELECT * FROM lance_parts.cleanup_orphans(' + literal(dataset) + ", '0 s', true)");

	assert.deepEqual(listed.map((r) => [r.path, r.action]), [[assembled[1].path, 'would_remove']], JSON.stringify(listed));
	h.sqlRows('SELECT * FROM lance_parts.cleanup_orphans(' + literal(dataset) + ", '0 s', false)");
	assert.deepEqual(await s3.listKeys(settings, keyOf(assembled[1].path)), [], 'cleanup_orphans removed the file');
	assert.equal(await (await (await remote()).openTable('cleaned')).countRows(), 5);
});
