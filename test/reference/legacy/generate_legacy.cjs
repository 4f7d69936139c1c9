'use strict';
// generate_legacy.cjs OUTDIR - early Lance 2.0 files that the pinned reference (lancedb
// 0.39.0 = Lance 12) cannot write, written by the old lancedb releases pinned in
// package.json, into OUTDIR/<name>.lance plus <name>.rows.json (the rows as the old
// release reads them back, in values.cjs's encoding) and legacy.json (what was written).
//
//   strlist_2_0    lancedb 0.5.2: strings and binaries as a list of u8 (an offsets column
//                  and a u8 column per field)
//   bitpacked_2_0  lancedb 0.8.0 with LANCE_USE_BITPACKING set: Bitpacked pages
//
// Both are written with useLegacyFormat: false (the 2.0 format) in two appends, so each
// has two data files.  The run fails if the old release reads back anything other than
// what was written.

const fs = require('fs');
const path = require('path');
const arrow = require('apache-arrow');
const { encodeRows } = require('../values.cjs');
const meta = require('../lancemeta.cjs');

const APPENDS = [700, 300];

const DATASETS = [
	{ name: 'strlist_2_0', lancedb: 'lancedb-0.5.2' },
	{ name: 'bitpacked_2_0', lancedb: 'lancedb-0.8.0' },
];

function fail(message)
{
	console.error('generate_legacy.cjs: ' + message);
	process.exit(1);
}

const SCHEMA = new arrow.Schema([
	new arrow.Field('id', new arrow.Int64(), false),
	new arrow.Field('s', new arrow.Utf8(), true),
	new arrow.Field('ls', new arrow.LargeUtf8(), true),
	new arrow.Field('bin', new arrow.Binary(), true),
	new arrow.Field('lbin', new arrow.LargeBinary(), true),
	new arrow.Field('small_u32', new arrow.Uint32(), false),
	new arrow.Field('small_i64', new arrow.Int64(), false),
	new arrow.Field('u8', new arrow.Uint8(), false),
	new arrow.Field('n_i32', new arrow.Int32(), true),
]);

const WORDS = ['', 'a', 'lance', 'ünïcødé ✓', 'x'.repeat(300), 'tab\tnew\nline', '"quoted"'];

// The values of row r (only depend on r); null, empty and long values in every
// variable-width column, small non-negative integers that bit-pack.
function row(r)
{
	const bytes = Buffer.alloc(r % 9, 0);

	for (let i = 0; i < bytes.length; i++)
		bytes[i] = (r * 31 + i * 7) & 255;
	return {
		id: BigInt(r),
		s: r % 7 === 3 ? null : WORDS[r % WORDS.length] + (r % 4 === 0 ? '' : String(r)),
		ls: r % 5 === 1 ? null : r % 6 === 0 ? '' : 'large-' + r,
		bin: r % 11 === 2 ? null : bytes,
		lbin: r % 13 === 4 ? null : r % 3 === 0 ? Buffer.alloc(0) : Buffer.from([r & 255, 0, 255]),
		small_u32: r % 1000,
		small_i64: BigInt(r % 37),
		u8: r % 16,
		n_i32: r % 10 === 0 ? null : r % 100,
	};
}

// The encoded form of a written row, as values.cjs gives it.
function encoded(r)
{
	const v = row(r);
	const hex = (b) => (b === null ? null : '\\x' + b.toString('hex'));

	return {
		id: String(v.id), s: v.s, ls: v.ls, bin: hex(v.bin), lbin: hex(v.lbin),
		small_u32: v.small_u32, small_i64: String(v.small_i64), u8: v.u8, n_i32: v.n_i32,
	};
}

// The data files in fragment order, as generate.cjs lists them.
function dataFiles(datasetPath)
{
	const files = [];

	for (const fragment of meta.readManifest(datasetPath).fragments)
		for (const file of fragment.files)
			files.push({ file: file.path, fragment_id: fragment.id, num_rows: fragment.physical_rows });
	return files;
}

async function write(outdir, spec)
{
	const lancedb = require(spec.lancedb);
	const version = JSON.parse(fs.readFileSync(path.join(__dirname, 'node_modules', spec.lancedb,
		'package.json'), 'utf8')).version;
	const db = await lancedb.connect(outdir);
	let table = null;
	let next = 0;

	for (const count of APPENDS)
	{
		const rows = [];

		for (let i = 0; i < count; i++)
			rows.push(row(next++));
		if (table === null)
			table = await db.createTable(spec.name, rows, { schema: SCHEMA, useLegacyFormat: false });
		else
			await table.add(rows);
	}

	const read = encodeRows(await table.query().toArrow());
	const expected = [];

	for (let r = 0; r < next; r++)
		expected.push(encoded(r));
	read.sort((a, b) => Number(BigInt(a.id) - BigInt(b.id)));
	if (JSON.stringify(read) !== JSON.stringify(expected))
		fail(spec.name + ': lancedb ' + version + ' reads back other rows than were written');
	fs.writeFileSync(path.join(outdir, spec.name + '.rows.json'), JSON.stringify(read) + '\n');
	return {
		name: spec.name,
		path: path.join(outdir, spec.name + '.lance'),
		lancedb: version,
		appends: APPENDS,
		num_rows: next,
		data_files: dataFiles(path.join(outdir, spec.name + '.lance')),
		expected_fields: meta.readManifest(path.join(outdir, spec.name + '.lance')).fields,
		rows_file: path.join(outdir, spec.name + '.rows.json'),
	};
}

async function main()
{
	if (process.argv.length !== 3)
		fail('usage: node generate_legacy.cjs OUTDIR');
	if (!process.env.LANCE_USE_BITPACKING)
		fail('LANCE_USE_BITPACKING must be set (lancedb 0.8.0 bit-packs 2.0 pages only then)');
	const outdir = path.resolve(process.argv[2]);
	const datasets = [];

	fs.mkdirSync(outdir, { recursive: true });
	for (const spec of DATASETS)
	{
		fs.rmSync(path.join(outdir, spec.name + '.lance'), { recursive: true, force: true });
		fs.rmSync(path.join(outdir, spec.name + '.rows.json'), { force: true });
	}
	fs.rmSync(path.join(outdir, 'legacy.json'), { force: true });
	for (const spec of DATASETS)
		datasets.push(await write(outdir, spec));
	fs.writeFileSync(path.join(outdir, 'legacy.json'), JSON.stringify({ datasets }, null, 1) + '\n');
}

main().catch((e) => fail(e.stack || String(e)));
