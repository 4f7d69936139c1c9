'use strict';
// The core encoder's dictionaries and General (zstd/lz4) compression read by the reference
// implementation: for Lance 2.0, 2.1, 2.2 and 2.3 lancedb creates an empty dataset whose fields
// carry the lance-encoding:compression metadata users set, test/tools/encode_append encodes
// low-cardinality strings and numbers (with nulls, an all-null column, long values) and columns
// asking for zstd, lz4 or no compression into one data file and commits it, and lancedb reads
// back every value exactly.  lancedb then writes the same rows: the encoder's file stays within
// 1.1x of its size, and test/tools/page_encodings shows the encoder chose the same encoding
// tree for every column.
//
// Needs LP_ENCODE_APPEND and LP_PAGE_ENCODINGS (built by `make build/encode_append
// build/page_encodings`); writes under LP_SCRATCH (or the system's temporary directory).
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const arrow = require('apache-arrow');
const lancedb = require('@lancedb/lancedb');

process.env.LANCEDB_LOG = process.env.LANCEDB_LOG || 'error';

const ENCODE_APPEND = process.env.LP_ENCODE_APPEND;
const PAGE_ENCODINGS = process.env.LP_PAGE_ENCODINGS;
const SCRATCH = fs.mkdtempSync(path.join(process.env.LP_SCRATCH || os.tmpdir(), 'encode-compress-'));

test.after(() => fs.rmSync(SCRATCH, { recursive: true, force: true }));

// A 64-bit LCG, so every run writes the same rows.
function random(seed)
{
	let state = BigInt(seed);

	return () => {
		state = (state * 6364136223846793005n + 1442695040888963407n) & 0xffffffffffffffffn;
		return Number(state >> 33n);
	};
}

const WORDS = ['alpha', 'beta', 'gamma', 'delta', 'epsilon', 'zeta', 'eta', 'theta', 'iota', 'kappa'];

function text(next, length)
{
	let out = '';

	for (let i = 0; i < length; i++)
		out += 'abcdefghij klmnop'[next() % 17];
	return out;
}

function metadata(scheme, level)
{
	const map = new Map([['lance-encoding:compression', scheme]]);

	if (level !== undefined)
		map.set('lance-encoding:compression-level', String(level));
	return map;
}

const decimal = new arrow.Decimal(2, 10, 128);

// name, Arrow type, value of row i (null for a null), field metadata.  Every column but the
// high-cardinality ones and the 32-bit integers is one lancedb dictionary-encodes.
function dictionaryColumns(next, version)
{
	const wordList = new arrow.List(new arrow.Field('item', new arrow.Utf8(), true));
	const columns = [
		['low_str', new arrow.Utf8(), (i) => (i % 7 === 3 ? null : WORDS[next() % 10])],
		['low_long_str', new arrow.Utf8(), () => WORDS[next() % 10].repeat(60)],
		['low_large', new arrow.LargeUtf8(), () => 'large-' + (next() % 20)],
		['low_bin', new arrow.Binary(), () => Uint8Array.of(1, 2, next() % 20)],
		['mid_str', new arrow.Utf8(), () => 'm' + (next() % 300)],
		['high_str', new arrow.Utf8(), () => 'h' + (next() % 20000)],
		['null_str', new arrow.Utf8(), () => null],
		['low_i64', new arrow.Int64(), (i) => (i % 7 === 3 ? null : BigInt([5, 6, 7, -1][next() % 4]) * 1000000007n)],
		['mid_i64', new arrow.Int64(), () => BigInt(next() % 1500) * 1000000007n],
		['low_f64', new arrow.Float64(), () => [1.5, 2.25, -3.125, 1e10][next() % 4]],
		['low_dec', decimal, () => Uint32Array.of([100, 2000, 30000][next() % 3], 0, 0, 0)],
		['low_i32', new arrow.Int32(), () => next() % 50],
		['zstd_low_str', new arrow.Utf8(), () => WORDS[next() % 10], metadata('zstd')],
	];

	// Lists (2.1+): a dictionary page with repetition levels and its repetition index after the dictionary.
	if (version !== '2.0')
		columns.push(['low_list', wordList, (i) => (i % 9 === 4 ? null :
			Array.from({ length: next() % 4 }, (_, j) => (j % 3 === 1 ? null : WORDS[next() % 10])))]);
	return columns;
}

function compressedColumns(next, version)
{
	const columns = [
		['zstd_text', new arrow.Utf8(), (i) => (i % 11 === 5 ? null : text(next, next() % 40)), metadata('zstd')],
		['lz4_text', new arrow.Utf8(), () => text(next, next() % 40), metadata('lz4')],
		['zstd9_text', new arrow.LargeUtf8(), () => text(next, next() % 40), metadata('zstd', 9)],
		['lz4_bin', new arrow.Binary(), () => Buffer.from(text(next, next() % 30)), metadata('lz4')],
		['none_text', new arrow.Utf8(), () => text(next, 10 + next() % 30), metadata('none')],
		['none_i32', new arrow.Int32(), () => next() % 1000, metadata('none')],
		['zstd_i64', new arrow.Int64(), () => BigInt(next() % 1000000), metadata('zstd', 3)],
		['zstd_f64', new arrow.Float64(), () => next() / 7, metadata('zstd')],
		['lz4_i32', new arrow.Int32(), (i) => (i % 13 === 1 ? null : next() % 100000), metadata('lz4')],
		['lz4_long', new arrow.Utf8(), (i) => (i % 9 === 2 ? null : text(next, 256 + next() % 100)), metadata('lz4')],
	];

	// 2.0's writer turns "fsst" into an encoding the encoder does not write.
	if (version !== '2.0')
		columns.push(['fsst_text', new arrow.Utf8(), () => text(next, next() % 12), metadata('fsst')]);
	return columns;
}

// Values over 32 KiB, which Lance compresses one by one whatever the metadata says.
function hugeColumns(next)
{
	return [
		['huge', new arrow.Utf8(), (i) => (i % 7 === 3 ? null : text(next, 33000 + next() % 100))],
		['zstd_huge', new arrow.LargeUtf8(), () => text(next, 33000 + next() % 100), metadata('zstd', 5)],
	];
}

function hexOf(type, v)
{
	if (v === null)
		return null;
	switch (type.typeId)
	{
		case arrow.Type.List:
			return Array.from(v, (item) => hexOf(type.children[0].type, item));
		case arrow.Type.Utf8:
		case arrow.Type.LargeUtf8:
			return Buffer.from(v, 'utf8').toString('hex');
		case arrow.Type.Binary:
			return Buffer.from(v).toString('hex');
		case arrow.Type.Decimal:
			return Buffer.from(v.buffer, v.byteOffset, 16).toString('hex');
		case arrow.Type.Float:
			{
				const b = Buffer.alloc(8);

				b.writeDoubleLE(v);
				return b.toString('hex');
			}
		default:
			{
				const b = Buffer.alloc(type.bitWidth / 8);

				if (type.bitWidth === 64)
					b.writeBigInt64LE(v);
				else
					b.writeInt32LE(v);
				return b.toString('hex');
			}
	}
}

function arrowData(type, values)
{
	if (type.typeId !== arrow.Type.Decimal)
		return arrow.vectorFromArray(values, type).data[0];

	const words = new Uint32Array(values.length * 4);
	const bitmap = new Uint8Array(Math.ceil(values.length / 8));
	let nullCount = 0;

	values.forEach((v, i) => {
		if (v === null)
			nullCount++;
		else
		{
			words.set(v, i * 4);
			bitmap[i >> 3] |= 1 << (i & 7);
		}
	});
	return arrow.makeData({ type, length: values.length, nullCount, nullBitmap: bitmap, data: words });
}

// Row i of column data read back, in the hex form of hexOf.
function readHex(type, data, i)
{
	if (!data.getValid(i))
		return null;
	if (type.typeId === arrow.Type.Decimal)
		return Buffer.from(data.values.buffer, data.values.byteOffset + i * 16, 16).toString('hex');
	return hexOf(type, arrow.makeVector(data).get(i));
}

function dataFile(dataset)
{
	const dir = path.join(dataset, 'data');
	const files = fs.readdirSync(dir).filter((f) => f.endsWith('.lance'));

	assert.equal(files.length, 1, dataset + ' has one data file');
	return path.join(dir, files[0]);
}

// column name -> encoding tree, from page_encodings (one page per column here).
function encodings(file)
{
	const out = {};

	for (const line of execFileSync(PAGE_ENCODINGS, [file], { encoding: 'utf8' }).trim().split('\n'))
	{
		const match = /^.* column \d+ \(([^)]+)\) pages (\d+): (.*)$/.exec(line);

		assert.ok(match, 'page_encodings line ' + line);
		assert.ok(!(match[1] in out), match[1] + ' has one encoding tree');
		out[match[1]] = match[3];
	}
	return out;
}

for (const version of ['2.0', '2.1', '2.2', '2.3'])
{
	for (const [kind, make, ROWS] of [['dictionaries', dictionaryColumns, 20000],
		['compressed', compressedColumns, 20000], ['huge', hugeColumns, 30]])
	{
		test('lancedb reads ' + kind + ' of a ' + version + ' file written by the encoder, as large and encoded as its own',
			async () => {
				assert.ok(ENCODE_APPEND, 'LP_ENCODE_APPEND names the encode_append tool');
				assert.ok(PAGE_ENCODINGS, 'LP_PAGE_ENCODINGS names the page_encodings tool');
				const specs = make(random(version.charCodeAt(2) * 7 + kind.length), version);
				const values = specs.map(([, , value]) => Array.from({ length: ROWS }, (_, i) => value(i)));
				const schema = new arrow.Schema(specs.map(([name, type, , meta]) =>
					new arrow.Field(name, type, true, meta)));
				const options = { storageOptions: { newTableDataStorageVersion: version } };
				const db = await lancedb.connect(SCRATCH);
				const name = kind + '_' + version.replace('.', '_');
				const rowsFile = path.join(SCRATCH, name + '.json');

				await db.createEmptyTable(name, schema, options);
				fs.writeFileSync(rowsFile, JSON.stringify({
					rows: ROWS, columns: specs.map(([, type], c) => values[c].map((v) => hexOf(type, v))),
				}));
				const printed = execFileSync(ENCODE_APPEND, [path.join(SCRATCH, name + '.lance'), rowsFile, '5000'],
					{ encoding: 'utf8' }).trim().split(' ');
				const table = await db.openTable(name);
				const read = await table.query().toArrow();
				let row = 0;

				assert.equal(await table.countRows(), ROWS);
				for (const batch of read.batches)
				{
					for (let i = 0; i < batch.numRows; i++, row++)
					{
						specs.forEach(([column, type], c) => {
							const data = batch.data.children[batch.schema.fields.findIndex((f) => f.name === column)];

							assert.deepEqual(readHex(type, data, i), hexOf(type, values[c][row]), column + ' row ' + row);
						});
					}
				}
				assert.equal(row, ROWS);

				const reference = 'lancedb_' + name;
				const batch = new arrow.RecordBatch(schema, arrow.makeData({
					type: new arrow.Struct(schema.fields), length: ROWS, nullCount: 0,
					children: specs.map(([, type], c) => arrowData(type, values[c])),
				}));

				await db.createTable(reference, new arrow.Table(schema, [batch]), options);
				const ourFile = dataFile(path.join(SCRATCH, name + '.lance'));
				const theirFile = dataFile(path.join(SCRATCH, reference + '.lance'));
				const ours = encodings(ourFile);
				const theirs = encodings(theirFile);

				for (const [column] of specs)
					assert.equal(ours[column], theirs[column], column + ' is encoded as lancedb encodes it');
				const ourSize = Number(printed[1]);
				const theirSize = fs.statSync(theirFile).size;

				console.log('# size ' + kind + ' ' + version + ': encoder ' + ourSize + ', lancedb ' + theirSize +
					' (' + (ourSize / theirSize).toFixed(3) + 'x)');
				assert.ok(ourSize <= 1.1 * theirSize, 'the encoded file (' + ourSize +
					' bytes) is within 1.1x of lancedb\'s (' + theirSize + ' bytes)');
			});
	}
}
