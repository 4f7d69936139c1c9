'use strict';
// Reference test-data generator: writes real Lance datasets with npm lancedb 0.39.0
// (Lance 12) into OUTDIR, the rows as lancedb reads them back (<name>.rows.json) and an
// index OUTDIR/manifest.json. See README.md for what is generated and the value encoding.
//
// Usage: LANCEDB_LOG=error node generate.cjs OUTDIR
//
// Every dataset is cross-checked while it is described, and the script fails loudly if a
// check does not hold:
//  - the rows lancedb reads back equal the rows that were written (value by value);
//  - the Lance fields derived from the Arrow schema (lancemeta.cjs) equal the schema in
//    the latest manifest and in the FileDescriptor (global buffer 0) of every v2 data file;
//  - every data file's footer row count and column count match the manifest and the
//    derivation; the .lance files in data/ are exactly those the manifest lists.
// The fragment -> data file mapping comes from parsing the latest manifest
// (lancemeta.readManifest), not from the append sizes.

const fs = require('fs');
const path = require('path');
const crypto = require('crypto');
const arrow = require('apache-arrow');
const lancedb = require('@lancedb/lancedb');
const { encodeRows, describeArrowField } = require('./values.cjs');
const meta = require('./lancemeta.cjs');
const C = require('./columns.cjs');
const { prng } = require('./prng.cjs');

const FILE_VERSIONS = ['legacy', '2.0', '2.1', '2.2', '2.3'];
const V2_FILE_VERSIONS = ['2.0', '2.1', '2.2', '2.3'];
const TYPES_APPENDS = [300, 170, 45];
const DELETED_APPENDS = [120, 150, 90];
const DELETED_PREDICATE = '(id < 120 AND id % 10 = 3) OR (id >= 270 AND id < 300)';

function fail(message)
{
	throw new Error(message);
}

function storageOptions(version, scheme)
{
	return {
		newTableDataStorageVersion: version,
		newTableEnableV2ManifestPaths: scheme === 'v2' ? 'true' : 'false',
	};
}

function sameJson(a, b)
{
	return JSON.stringify(a) === JSON.stringify(b);
}

// Write a dataset: create with the first table, then add the others.
async function writeDataset(db, name, tables, options)
{
	const table = await db.createTable(name, tables[0], { storageOptions: options });

	for (const more of tables.slice(1))
		await table.add(more);
	return table;
}

// Equal, or different only where one side is null (at any nesting level).
function equalUpToNulls(a, b)
{
	if (a === null || b === null || sameJson(a, b))
		return true;
	if (typeof a !== 'object' || typeof b !== 'object' || Array.isArray(a) !== Array.isArray(b))
		return false;
	const keys = Object.keys(a);

	return sameJson(keys, Object.keys(b)) && keys.every((k) => equalUpToNulls(a[k], b[k]));
}

// Compare what was written with what was read back; returns the columns whose read-back
// differs. Differences fail unless they are allowed and involve only nulls: the legacy v1
// format has no validity for fixed-width values and lists (a null reads back as 0, the
// epoch or []) and reads empty strings and binaries back as null.
function compareRows(name, written, read, allowNullLoss)
{
	const lossy = new Set();

	if (written.length !== read.length)
		fail(name + ': wrote ' + written.length + ' rows, read back ' + read.length);
	for (let i = 0; i < written.length; i++)
	{
		for (const [column, value] of Object.entries(written[i]))
		{
			if (sameJson(value, read[i][column]))
				continue;
			if (!allowNullLoss || !equalUpToNulls(value, read[i][column]))
				fail(name + ': row ' + i + ' column ' + column + ': wrote ' + JSON.stringify(value) +
					', read back ' + JSON.stringify(read[i][column]));
			lossy.add(column);
		}
	}
	return [...lossy];
}

// Describe a written dataset for manifest.json and write <name>.rows.json.
// `written` = the encoded rows that should read back (null to skip that check),
// `checkFooterSchema` = false where the footer schema legitimately differs (blob v2).
async function describeDataset(outdir, table, spec, written, checkFooterSchema = true)
{
	const datasetPath = path.join(outdir, spec.name + '.lance');
	const arrowSchema = await table.schema();
	const expectedFields = meta.lanceFieldsFromArrow(arrowSchema);
	const readBack = await table.query().withRowId().toArrow();
	const rows = encodeRows(readBack);
	const manifest = meta.readManifest(datasetPath);
	const fileVersion = manifest.data_format === '0.1' ? 'legacy' : manifest.data_format;
	const expectedNumColumns = meta.expectedNumColumns(expectedFields, fileVersion);
	const fragments = {};
	const dataFiles = [];
	const nullsLost = written === null ? null : compareRows(spec.name, written, rows, fileVersion === 'legacy');
	let footerFields = null;

	for (const row of rows)
	{
		const fragmentId = String(BigInt(row._rowid) >> 32n);

		fragments[fragmentId] = (fragments[fragmentId] || 0) + 1;
	}
	if (!sameJson(manifest.fields, expectedFields))
		fail(spec.name + ': manifest schema ' + JSON.stringify(manifest.fields) +
			' differs from derived fields ' + JSON.stringify(expectedFields));

	for (const fragment of manifest.fragments)
	{
		if (!fragment.has_deletion_file && fragments[fragment.id] !== fragment.physical_rows)
			fail(spec.name + ': fragment ' + fragment.id + ' has ' + fragment.physical_rows +
				' rows but ' + fragments[fragment.id] + ' were read');
		for (const file of fragment.files)
		{
			const info = meta.readDataFileMeta(path.join(datasetPath, 'data', file.path));

			if (info.file_version !== fileVersion)
				fail(spec.name + ': ' + file.path + ' is ' + info.file_version + ', manifest says ' + fileVersion);
			if (info.size_bytes !== file.file_size_bytes)
				fail(spec.name + ': ' + file.path + ' size ' + info.size_bytes + ' != manifest ' + file.file_size_bytes);
			if (fileVersion !== 'legacy')
			{
				if (info.num_rows !== fragment.physical_rows)
					fail(spec.name + ': ' + file.path + ' has ' + info.num_rows + ' rows, fragment says ' + fragment.physical_rows);
				if (info.num_columns !== expectedNumColumns || file.column_indices.length !== expectedNumColumns)
					fail(spec.name + ': ' + file.path + ' has ' + info.num_columns + ' columns, expected ' + expectedNumColumns);
				if (checkFooterSchema && !sameJson(info.fields, expectedFields))
					fail(spec.name + ': footer schema of ' + file.path + ' ' + JSON.stringify(info.fields) +
						' differs from derived fields');
				footerFields = footerFields || info.fields;
			}
			dataFiles.push({
				file: file.path,
				num_rows: fragment.physical_rows,
				fragment_id: fragment.id,
				has_deletion_file: fragment.has_deletion_file,
				file_size_bytes: file.file_size_bytes,
				footer_version: info.footer_version,
				fields: file.fields,
				column_indices: file.column_indices,
				page_rows: info.page_rows === undefined ? null : info.page_rows,
			});
		}
	}

	const onDisk = fs.readdirSync(path.join(datasetPath, 'data')).filter((n) => n.endsWith('.lance')).sort();

	if (!sameJson(onDisk, dataFiles.map((d) => d.file).sort()))
		fail(spec.name + ': data/ holds ' + JSON.stringify(onDisk) + ', manifest lists ' +
			JSON.stringify(dataFiles.map((d) => d.file)));

	const rowsFile = path.join(outdir, spec.name + '.rows.json');

	fs.writeFileSync(rowsFile, JSON.stringify(rows) + '\n');

	const entry = {
		name: spec.name,
		kind: spec.kind,
		path: datasetPath,
		storage_version: spec.storage_version,
		data_format: manifest.data_format,
		file_version: fileVersion,
		manifest_scheme: manifest.manifest_scheme,
		version: manifest.version,
		writer: manifest.writer,
		appends: spec.appends,
		num_rows: rows.length,
		nulls_lost_columns: nullsLost,
		rows_in_id_order: rows.every((r, i) => i === 0 || BigInt(r.id) > BigInt(rows[i - 1].id)),
		fragments,
		data_files: dataFiles,
		arrow_schema: arrowSchema.fields.map(describeArrowField),
		expected_fields: expectedFields,
		expected_num_columns: expectedNumColumns,
		rows_file: rowsFile,
	};

	if (!checkFooterSchema)
		entry.footer_fields = footerFields;
	return Object.assign(entry, spec.extra || {});
}

function tablesFor(columns, appends, batchRows)
{
	const tables = [];
	let first = 0;

	for (const count of appends)
	{
		tables.push(C.makeTable(columns, first, count, batchRows));
		first += count;
	}
	return tables;
}

function writtenRows(tables)
{
	return tables.flatMap((t) => encodeRows(t));
}

// types_<ver>_<scheme>: every common type, 3 appends of distinct sizes.
async function generateTypes(db, outdir, version, scheme)
{
	const name = 'types_' + version.replace('.', '_') + '_' + scheme;
	// 2.0 cannot store struct-level nulls (Lance 12 refuses them).
	const structNulls = version !== '2.0';
	const tables = tablesFor(C.typesColumns(structNulls), TYPES_APPENDS);
	const table = await writeDataset(db, name, tables, storageOptions(version, scheme));

	return describeDataset(outdir, table, {
		name,
		kind: 'types',
		storage_version: version,
		appends: TYPES_APPENDS,
		extra: { struct_nulls: structNulls },
	}, writtenRows(tables));
}

// deleted_2_2: three fragments, rows deleted from the first and the last one.
async function generateDeleted(db, outdir)
{
	const name = 'deleted_2_2';
	const tables = tablesFor(C.typesColumns(true), DELETED_APPENDS);
	const table = await writeDataset(db, name, tables, storageOptions('2.2', 'v2'));
	const deleted = (id) => (id < 120 && id % 10 === 3) || (id >= 270 && id < 300);

	await table.delete(DELETED_PREDICATE);
	return describeDataset(outdir, table, {
		name,
		kind: 'deleted',
		storage_version: '2.2',
		appends: DELETED_APPENDS,
		extra: { delete_predicate: DELETED_PREDICATE },
	}, writtenRows(tables).filter((r) => !deleted(Number(r.id))));
}

// blob_2_2: a blob v2 column with inline, packed and dedicated payloads.
const BLOB_INLINE_MAX = 64;
const BLOB_DEDICATED_MIN = 1024;
const BLOB_APPENDS = [12, 8];

function blobPayload(g)
{
	const sizes = [0, 10, BLOB_INLINE_MAX, 200, 900, 3000, null, 40];
	const size = sizes[g % sizes.length];

	return size === null ? null : Buffer.from(Array.from({ length: size }, (_, i) => (g * 31 + i * 7) & 0xff));
}

async function generateBlob(db, outdir)
{
	const name = 'blob_2_2';
	const blobField = lancedb.blob('payload', {
		inlineSizeThreshold: BLOB_INLINE_MAX,
		dedicatedSizeThreshold: BLOB_DEDICATED_MIN,
	});
	const payloadType = blobField.type;
	const columns = [
		{
			field: new arrow.Field('id', new arrow.Int64(), false),
			value: (g) => BigInt(g),
			build: (values) => C.fixedData(new arrow.Int64(), BigInt64Array, values, 0n),
		},
		{
			field: blobField,
			value: blobPayload,
			build: (values) => C.structData(payloadType, values, (rows) => [
				C.varData(new arrow.LargeBinary(), rows, true),
				C.varData(new arrow.Utf8(), rows.map(() => null), false),
			]),
		},
	];
	const tables = tablesFor(columns, BLOB_APPENDS);
	const table = await writeDataset(db, name, tables, storageOptions('2.2', 'v2'));
	const rowIds = (await table.query().select(['id']).withRowId().toArray()).map((r) => r._rowid);
	const fetched = await table.fetchBlobs('payload', rowIds);
	const payloads = fetched.map((bytes, i) => ({
		row: i,
		size: bytes === null ? null : bytes.length,
		sha256: bytes === null ? null : crypto.createHash('sha256').update(bytes).digest('hex'),
	}));
	const expectedPayloads = tables.flatMap((t) => {
		const data = t.getChild('payload').data;

		return data.flatMap((d) => Array.from({ length: d.length }, (_, i) => {
			if (!d.getValid(i))
				return null;
			const bytes = d.children[0].values.subarray(Number(d.children[0].valueOffsets[i]),
				Number(d.children[0].valueOffsets[i + 1]));

			return crypto.createHash('sha256').update(bytes).digest('hex');
		}));
	});

	if (!sameJson(payloads.map((p) => p.sha256), expectedPayloads))
		fail(name + ': blob payloads read back differ from those written');

	const datasetPath = path.join(outdir, name + '.lance');
	const sidecars = [];

	for (const entry of fs.readdirSync(path.join(datasetPath, 'data'), { withFileTypes: true }))
		if (entry.isDirectory())
			for (const file of fs.readdirSync(path.join(datasetPath, 'data', entry.name)).sort())
				sidecars.push(entry.name + '/' + file);

	// Query results are blob descriptors, not payloads; the footer schema of blob v2 data
	// files differs from the manifest schema (lance-format.md §6.5), so it is reported as
	// footer_fields instead of being compared.
	return describeDataset(outdir, table, {
		name,
		kind: 'blob',
		storage_version: '2.2',
		appends: BLOB_APPENDS,
		extra: {
			blob_column: 'payload',
			blob_inline_size_threshold: BLOB_INLINE_MAX,
			blob_dedicated_size_threshold: BLOB_DEDICATED_MIN,
			blob_payloads: payloads,
			sidecars,
		},
	}, null, false);
}

// multipage_<ver>: two data files whose columns have several pages each.
// Lance cuts a page when a column has buffered about 8 MiB, counted as the memory of the
// Arrow buffers it holds. Batches arrive from JavaScript as Arrow IPC and every column of a
// batch is a slice of the same message buffer, so each column is charged the whole batch.
// An all-null fixed_size_list<float32, 2048> column makes every 1000-row batch weigh 8 MiB
// in memory while it costs almost nothing on disk and reads back as null: every column
// then gets several pages (with different boundaries per column) and the files stay small.
const MULTIPAGE_APPENDS = [5000, 3000];
const MULTIPAGE_BATCH_ROWS = 1000;
const MULTIPAGE_PAD_DIM = 2048;

function multipageColumns()
{
	const structType = new arrow.Struct([
		new arrow.Field('a', new arrow.Int32(), true),
		new arrow.Field('b', new arrow.Utf8(), true),
	]);
	const listType = new arrow.List(new arrow.Field('item', new arrow.Int32(), true));
	const padType = new arrow.FixedSizeList(MULTIPAGE_PAD_DIM, new arrow.Field('item', new arrow.Float32(), true));

	return [
		{
			field: new arrow.Field('id', new arrow.Int64(), false),
			value: (g) => BigInt(g),
			build: (values) => C.fixedData(new arrow.Int64(), BigInt64Array, values, 0n),
		},
		{
			field: new arrow.Field('s', new arrow.Utf8(), true),
			value: (g) => (g % 97 === 5 ? null : C.randomText(C.rowRandom(g, 2), 30)),
			build: (values) => C.varData(new arrow.Utf8(), values, false),
		},
		{
			field: new arrow.Field('x', new arrow.Float64(), true),
			value: (g) => (g % 13 === 0 ? null : C.rowRandom(g, 1)() * 1000),
			build: (values) => C.fixedData(new arrow.Float64(), Float64Array, values, 0),
		},
		{
			field: new arrow.Field('li', listType, true),
			value: (g) => (g % 11 === 0 ? null : Array.from({ length: g % 4 }, (_, i) => g * 10 + i)),
			build: (values) => C.listData(listType, values,
				(items) => C.fixedData(new arrow.Int32(), Int32Array, items, 0)),
		},
		{
			field: new arrow.Field('st', structType, true),
			value: (g) => ({ a: g % 5 === 0 ? null : g, b: 'b' + (g % 3) }),
			build: (values) => C.structData(structType, values, (rows) => [
				C.fixedData(new arrow.Int32(), Int32Array, rows.map((v) => v.a), 0),
				C.varData(new arrow.Utf8(), rows.map((v) => v.b), false),
			]),
		},
		{
			field: new arrow.Field('null_vec', padType, true),
			value: () => null,
			build: (values) => arrow.makeData({
				type: padType,
				length: values.length,
				nullCount: values.length,
				nullBitmap: new Uint8Array((values.length + 7) >> 3),
				child: arrow.makeData({
					type: padType.children[0].type,
					length: values.length * MULTIPAGE_PAD_DIM,
					nullCount: 0,
					data: new Float32Array(values.length * MULTIPAGE_PAD_DIM),
				}),
			}),
		},
	];
}

async function generateMultipage(db, outdir, version)
{
	const name = 'multipage_' + version.replace('.', '_');
	const tables = tablesFor(multipageColumns(), MULTIPAGE_APPENDS, MULTIPAGE_BATCH_ROWS);
	const table = await writeDataset(db, name, tables, storageOptions(version, 'v2'));
	const entry = await describeDataset(outdir, table, {
		name,
		kind: 'multipage',
		storage_version: version,
		appends: MULTIPAGE_APPENDS,
		extra: { batch_rows: MULTIPAGE_BATCH_ROWS },
	}, writtenRows(tables));

	// Every column must have several pages, except 2.0 struct header columns, which
	// always have one page covering the whole file (lance-format.md §3.4).
	const isStructHeader = (column) => version === '2.0' && entry.expected_fields[column].logical_type === 'struct';

	for (const file of entry.data_files)
		if (!file.page_rows.every((pages, column) => pages.length > 1 || isStructHeader(column)))
			fail(name + ': ' + file.file + ' has a column with a single page: ' + JSON.stringify(file.page_rows));
	entry.pages_per_column = entry.data_files.map((file) => file.page_rows.map((pages) => pages.length));
	return entry;
}

// encodings_<ver>: columns that force the rarer encodings (columns.cjs encodingsColumns),
// two data files; what each version writes for them is listed in README.md.
const ENCODINGS_APPENDS = [2000, 600];

async function generateEncodings(db, outdir, version)
{
	const name = 'encodings_' + version.replace('.', '_');
	const tables = tablesFor(C.encodingsColumns(version), ENCODINGS_APPENDS);
	const table = await writeDataset(db, name, tables, storageOptions(version, 'v2'));

	return describeDataset(outdir, table, {
		name,
		kind: 'encodings',
		storage_version: version,
		appends: ENCODINGS_APPENDS,
	}, writtenRows(tables));
}

function packageVersion(name)
{
	const file = path.join(__dirname, 'node_modules', name, 'package.json');

	return JSON.parse(fs.readFileSync(file, 'utf8')).version;
}

// Remove what an earlier run wrote (datasets listed in the old manifest and the ones
// about to be written), nothing else.
function wipe(outdir, names)
{
	const manifestFile = path.join(outdir, 'manifest.json');
	const owned = new Set(names);

	if (fs.existsSync(manifestFile))
		for (const d of JSON.parse(fs.readFileSync(manifestFile, 'utf8')).datasets || [])
			owned.add(d.name);
	for (const name of owned)
	{
		fs.rmSync(path.join(outdir, name + '.lance'), { recursive: true, force: true });
		fs.rmSync(path.join(outdir, name + '.rows.json'), { force: true });
	}
	fs.rmSync(manifestFile, { force: true });
}

// btree_index: BTREE indexes lancedb builds on an int64, a nullable int32 with repeated
// values, a string and a nullable float64 column (two fragments, 5 pages of 4096 rows per
// index), and lancedb's answers to ranges over them, in OUTDIR/index/ (btree_index.lance and
// btree_index.json; not in manifest.json, so that IMPORT FOREIGN SCHEMA of OUTDIR leaves it
// alone): the core tests read it with the index files, test_btree_index.c.
const BTREE_ROWS = [12000, 8500];

function btreeTable(first, count)
{
	const id = [], small = [], s = [], f = [];

	for (let i = first; i < first + count; i++)
	{
		id.push(BigInt((i * 7919) % 40009) - 20000n);
		small.push(i % 17 === 0 ? null : (i * 31) % 997 - 500);
		s.push('key' + String((i * 13) % 3001).padStart(4, '0'));
		f.push(i % 11 === 0 ? null : ((i * 17) % 5003) / 8 - 300);
	}
	return new arrow.Table({
		id: arrow.vectorFromArray(id, new arrow.Int64()),
		small: arrow.vectorFromArray(small, new arrow.Int32()),
		s: arrow.vectorFromArray(s, new arrow.Utf8()),
		f: arrow.vectorFromArray(f, new arrow.Float64()),
	});
}

function sqlLiteral(column, value)
{
	return column === 's' ? "'" + value + "'" : String(value);
}

// [column, lower, lower inclusive, upper, upper inclusive] (null: unbounded)
const BTREE_QUERIES = [
	['id', '-19995', true, '-19995', true], ['id', '123', true, '123', true],
	['id', '40000', true, '40000', true], ['id', '-5', false, '300', true],
	['id', null, false, '-19000', false], ['id', '19900', true, null, false],
	['id', '-1', true, '1', true],
	['small', '-3', true, '-3', true], ['small', '100', false, '140', false],
	['small', null, false, '-490', true], ['small', '495', false, null, false],
	['small', '10000', true, null, false],
	['s', 'key0042', true, 'key0042', true], ['s', 'key1000', true, 'key1010', false],
	['s', null, false, 'key0003', true], ['s', 'key2999', false, null, false],
	['s', 'key', true, 'key', true],
	['f', '-300', true, '-300', true], ['f', '0', true, '2.5', true],
	['f', null, false, '-299', false], ['f', '325', false, null, false],
];

async function generateBtree(outdir)
{
	const name = 'btree_index';
	const db = await lancedb.connect(outdir);
	const table = await db.createTable(name, btreeTable(0, BTREE_ROWS[0]), { storageOptions: storageOptions('2.1', 'v2') });
	const indexes = [];
	const queries = [];

	await table.add(btreeTable(BTREE_ROWS[0], BTREE_ROWS[1]));
	for (const column of ['id', 'small', 's', 'f'])
		await table.createIndex(column, { config: lancedb.Index.btree() });
	for (const index of await table.listIndices())
		indexes.push({ column: index.columns[0], uuid: index.indexUuid, type_url: index.typeUrl });
	for (const [column, lower, lowerInclusive, upper, upperInclusive] of BTREE_QUERIES)
	{
		const terms = [];

		if (lower !== null)
			terms.push(column + (lowerInclusive ? ' >= ' : ' > ') + sqlLiteral(column, lower));
		if (upper !== null)
			terms.push(column + (upperInclusive ? ' <= ' : ' < ') + sqlLiteral(column, upper));
		const read = await table.query().where(terms.join(' AND ')).withRowId().select(['_rowid']).toArrow();
		const rowIds = [];

		for (const row of read)
			rowIds.push(String(row._rowid));
		queries.push({
			column, where: terms.join(' AND '),
			lower: lower === null ? null : { value: lower, inclusive: lowerInclusive },
			upper: upper === null ? null : { value: upper, inclusive: upperInclusive },
			row_ids: rowIds.sort((a, b) => (BigInt(a) < BigInt(b) ? -1 : BigInt(a) > BigInt(b) ? 1 : 0)),
		});
	}
	if (indexes.length !== 4 || queries.every((q) => q.row_ids.length === 0))
		fail(name + ': expected 4 indexes and matching rows');
	fs.writeFileSync(path.join(outdir, name + '.json'),
		JSON.stringify({ dataset: name + '.lance', indexes, queries }, null, 1) + '\n');
}

// ivf_*: IVF vector indexes lancedb builds (IVF_FLAT under l2, IVF_PQ under cosine and dot,
// IVF_PQ of 4-bit codes under l2, IVF_HNSW_SQ under l2) on 16-dimension vectors, and lancedb's answers to queries with
// nprobes 2, in OUTDIR/index/ (ivf_index.json, beside btree_index): the core tests score the
// probed partitions with the index files, test_ivf_index.c.
const IVF_ROWS = 2000;
const IVF_DIM = 16;
const IVF_QUERIES = 5;
const IVF_INDEXES = [
	['ivf_flat_l2', () => lancedb.Index.ivfFlat({ numPartitions: 8, distanceType: 'l2' })],
	['ivf_pq_cosine', () => lancedb.Index.ivfPq({ numPartitions: 8, numSubVectors: 4, distanceType: 'cosine' })],
	['ivf_pq_dot', () => lancedb.Index.ivfPq({ numPartitions: 8, numSubVectors: 4, distanceType: 'dot' })],
	// 4-bit codes; partitions of fewer than 200 rows, which Lance scores in float as the core does
	['ivf_pq_4bit_l2', () => lancedb.Index.ivfPq({ numPartitions: 32, numSubVectors: 8, numBits: 4, distanceType: 'l2' })],
	['ivf_hnsw_sq_l2', () => lancedb.Index.hnswSq({ numPartitions: 4, distanceType: 'l2' })],
];

async function generateIvf(outdir)
{
	const random = prng(27027);
	const vectors = Array.from({ length: IVF_ROWS + IVF_QUERIES },
		() => Array.from({ length: IVF_DIM }, () => Math.fround(random() * 2 - 1)));
	const table = new arrow.Table({
		id: arrow.vectorFromArray(vectors.slice(0, IVF_ROWS).map((_, i) => i), new arrow.Int32()),
		emb: arrow.vectorFromArray(vectors.slice(0, IVF_ROWS),
			new arrow.FixedSizeList(IVF_DIM, new arrow.Field('item', new arrow.Float32(), true))),
	});
	const db = await lancedb.connect(outdir);
	const queries = vectors.slice(IVF_ROWS);
	const indexes = [];

	for (const [name, config] of IVF_INDEXES)
	{
		const dataset = await db.createTable(name, table, { storageOptions: storageOptions('2.1', 'v2') });
		const answers = [];

		await dataset.createIndex('emb', { config: config() });
		for (const query of queries)
		{
			const found = await dataset.vectorSearch(query).nprobes(2).limit(10).withRowId(true).toArray();

			answers.push(found.map((row) => ({ row_id: String(row._rowid), distance: row._distance })));
		}
		const [index] = await dataset.listIndices();

		indexes.push({ dataset: name + '.lance', uuid: index.indexUuid, type: index.indexType, answers });
	}
	fs.writeFileSync(path.join(outdir, 'ivf_index.json'),
		JSON.stringify({ dimension: IVF_DIM, nprobes: 2, queries, indexes }, null, 1) + '\n');
}

async function main()
{
	if (process.argv.length !== 3)
	{
		process.stderr.write('usage: node generate.cjs OUTDIR\n');
		process.exit(2);
	}
	const outdir = path.resolve(process.argv[2]);
	const names = [];

	for (const version of FILE_VERSIONS)
		for (const scheme of ['v1', 'v2'])
			names.push('types_' + version.replace('.', '_') + '_' + scheme);
	names.push('deleted_2_2', 'blob_2_2');
	for (const version of V2_FILE_VERSIONS)
		names.push('multipage_' + version.replace('.', '_'), 'encodings_' + version.replace('.', '_'));

	fs.mkdirSync(outdir, { recursive: true });
	wipe(outdir, names);

	const started = Date.now();
	const db = await lancedb.connect(outdir);
	const datasets = [];

	for (const version of FILE_VERSIONS)
		for (const scheme of ['v1', 'v2'])
			datasets.push(await generateTypes(db, outdir, version, scheme));
	datasets.push(await generateDeleted(db, outdir));
	datasets.push(await generateBlob(db, outdir));
	for (const version of V2_FILE_VERSIONS)
		datasets.push(await generateMultipage(db, outdir, version));
	for (const version of V2_FILE_VERSIONS)
		datasets.push(await generateEncodings(db, outdir, version));

	const manifest = {
		generator: 'test/reference/generate.cjs',
		lancedb: packageVersion('@lancedb/lancedb'),
		apache_arrow: packageVersion('apache-arrow'),
		datasets,
	};

	// in a directory of its own: IMPORT FOREIGN SCHEMA of OUTDIR imports manifest.json's datasets only
	fs.rmSync(path.join(outdir, 'index'), { recursive: true, force: true });
	await generateBtree(path.join(outdir, 'index'));
	await generateIvf(path.join(outdir, 'index'));

	fs.writeFileSync(path.join(outdir, 'manifest.json'), JSON.stringify(manifest, null, 1) + '\n');
	process.stderr.write('generated ' + datasets.length + ' datasets in ' + outdir + ' (' +
		((Date.now() - started) / 1000).toFixed(1) + ' s)\n');
}

main().catch((err) => {
	process.stderr.write('generate.cjs: ' + (err && err.stack ? err.stack : String(err)) + '\n');
	process.exit(1);
});
