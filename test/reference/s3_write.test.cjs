'use strict';
// Writing on S3: a real S3 server (Ceph RGW, started here with scripts/s3-server.sh and
// stopped by PID at the end) where the reference implementation writes datasets and the
// datasets whose data files are the parts. lance_parts assembles the parts there (both
// forms), commits (append and replace) and compacts, and the reference reads every row
// back, for Lance 2.1 and 2.3 in both manifest naming schemes; local parts go into an S3
// dataset and S3 parts into a local one; parts of 6 MiB and more are assembled on the
// server (UploadPartCopy), so that the bytes the backend exchanges with the server are
// a small fraction of the file; two sessions append to one dataset at once; and a cancel
// or an ERROR in the middle of an assembly leaves no multipart upload and no object.
// LP_S3_PORT, LP_S3_MON_PORT and LP_S3_OSD_PORTS choose the server's ports.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { execFileSync, spawn } = require('node:child_process');
const arrow = require('apache-arrow');
const lancedb = require('@lancedb/lancedb');
const { encodeRows } = require('./values.cjs');
const { psqlLines, psqlAsync, literal } = require('./pg.cjs');
const h = require('./harness.cjs');
const s3 = require('./s3_requests.cjs');

const SRCDIR = process.env.LP_SRCDIR;
const S3_DIR = path.join(process.env.LP_SCRATCH, 's3-write-server');
const SCRIPT = path.join(SRCDIR, 'scripts', 's3-server.sh');
const PREFIX = 'writes';
const APPENDS_PER_SESSION = 20;

function s3Server(command)
{
	return execFileSync('bash', [SCRIPT, command], {
		env: { ...process.env, LP_S3_DIR: S3_DIR },
		encoding: 'utf8',
	});
}

const settings = Object.fromEntries(s3Server('start').trim().split('\n').map((line) => line.split('=')));
test.after(() => s3Server('stop'));

const storageOptions = {
	aws_endpoint: settings.LP_S3_ENDPOINT,
	aws_access_key_id: settings.LP_S3_ACCESS_KEY_ID,
	aws_secret_access_key: settings.LP_S3_SECRET_ACCESS_KEY,
	aws_region: settings.LP_S3_REGION,
	allow_http: 'true',
	aws_virtual_hosted_style_request: 'false',
};
const ROOT = 's3://' + settings.LP_S3_BUCKET + '/' + PREFIX;
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

// Random float vectors: pages no encoding shrinks, so a fragment of n rows has n KiB of data.
const vectorSchema = new arrow.Schema([
	new arrow.Field('id', new arrow.Int64(), false),
	new arrow.Field('vec', new arrow.FixedSizeList(256, new arrow.Field('item', new arrow.Float32(), true)), true),
]);

function vectorRows(start, count)
{
	const values = new Float32Array(count * 256).map(() => Math.random());
	const ids = BigInt64Array.from({ length: count }, (_, i) => BigInt(start + i));
	const [idField, vecField] = vectorSchema.fields;
	const children = [
		arrow.makeData({ type: idField.type, length: count, nullCount: 0, data: ids }),
		arrow.makeData({
			type: vecField.type, length: count, nullCount: 0,
			child: arrow.makeData({ type: new arrow.Float32(), length: count * 256, nullCount: 0, data: values }),
		}),
	];

	return new arrow.Table([new arrow.RecordBatch(vectorSchema,
		arrow.makeData({ type: new arrow.Struct(vectorSchema.fields), length: count, nullCount: 0, children }))]);
}

// Each row of a table of vectorSchema as "id:<the vector's bytes in base64>", sorted.
async function vectorDigests(table)
{
	const digests = [];

	for (const batch of (await table.query().toArrow()).batches)
	{
		const ids = batch.getChild('id');
		const vectors = batch.getChild('vec');

		for (let i = 0; i < batch.numRows; i++)
		{
			const v = vectors.get(i).toArray();

			digests.push(ids.get(i) + ':' + Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64'));
		}
	}
	return digests.sort();
}

test.before(() => {
	psqlLines(`CREATE EXTENSION IF NOT EXISTS lance_parts;
DROP SERVER IF EXISTS s3_write_server CASCADE;
CREATE SERVER s3_write_server FOREIGN DATA WRAPPER lance_fdw
  OPTIONS (root ${literal(ROOT)}, endpoint ${literal(settings.LP_S3_ENDPOINT)},
           region ${literal(settings.LP_S3_REGION)}, allow_http 'true');
CREATE USER MAPPING FOR CURRENT_USER SERVER s3_write_server
  OPTIONS (access_key_id ${literal(settings.LP_S3_ACCESS_KEY_ID)},
           secret_access_key ${literal(settings.LP_S3_SECRET_ACCESS_KEY)});
`);
});

for (const [version, scheme] of [['2.1', 'v1'], ['2.1', 'v2'], ['2.3', 'v1'], ['2.3', 'v2']])
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

		// the dataset's own naming scheme, found by listing _versions/
		const manifests = (await s3.listKeys(settings, PREFIX + '/' + name + '.lance/_versions/'))
			.map((k) => path.basename(k)).filter((k) => k.endsWith('.manifest'));

		assert.deepEqual(manifests.sort(), [1, 2, 3, 4].map((v) => h.manifestName(v, scheme)).sort());
	});
}

test('local parts into an S3 dataset, and S3 parts into a local dataset', async () => {
	const name = 'types_2_2_v2';
	const info = h.datasetInfo(name);
	const source = await (await lancedb.connect(process.env.LP_TESTDATA)).openTable(name);
	const expected = await rowsOf(source);
	const localParts = h.dataFiles(name).map((f) => path.join(process.env.LP_TESTDATA, name + '.lance', 'data', f.file));
	const db = await remote();

	await db.createTable(name, await source.query().toArrow(), {
		mode: 'overwrite',
		storageOptions: { new_table_data_storage_version: '2.2', new_table_enable_v2_manifest_paths: 'true' },
	});
	const onS3 = ROOT + '/' + name + '.lance';
	const intoS3 = sqlRow('SELECT * FROM lance_parts.ingest(' + literal(onS3) + ', ' + h.sqlTextArray(localParts) + ')');

	assert.equal(Number(intoS3.num_rows), info.num_rows);
	assert.deepEqual(await rowsOf(await (await remote()).openTable(name)), [...expected, ...expected].sort());

	const local = h.copyDataset(name, scratch);
	const s3Parts = await dataFileUris(name);
	const intoLocal = sqlRow('SELECT * FROM lance_parts.ingest(' + literal(local) + ', ' + h.sqlTextArray(s3Parts) + ')');

	assert.equal(Number(intoLocal.num_rows), 2 * info.num_rows);
	assert.deepEqual(await rowsOf(await h.openTable(local)), [...expected, ...expected, ...expected].sort());
});

// The bytes the backend running script's statements has sent to and received from the S3
// server, over its TCP connections there, measured by the backend itself (ss, run by COPY
// FROM PROGRAM, whose shell's parent is the backend) and left in the temporary table io.
function measured(label)
{
	const awk = 'index($0, pid) { own = 1; next } ' +
		'own { for (i = 1; i <= NF; i++) { split($i, kv, ":"); if (kv[1] == "bytes_sent") s += kv[2]; if (kv[1] == "bytes_received") r += kv[2] } own = 0 } ' +
		'END { print label "\\t" s + 0 "\\t" r + 0 }';

	return 'COPY io FROM PROGRAM $cmd$ss -tinpH state established "( dport = :' + PORT + ' )" | awk -v pid="pid=$PPID," -v label=' +
		label + " '" + awk + "'$cmd$;\n";
}

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
		measured('before') +
		'SELECT size_bytes FROM lance_parts.assemble(' + h.sqlJsonb(target) + ', ' + h.sqlTextArray(partUris) + ');\n' +
		measured('after') +
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
