'use strict';
// Deterministic test columns for the reference datasets, built straight into Arrow Data
// (apache-arrow's builders drop child slots of trailing null fixed_size_list rows, and
// building by hand keeps every buffer under our control).
//
// Every value is a function of the global row number g only (seeded per row), so a row has
// the same values in every dataset, whatever the append sizes.

const arrow = require('apache-arrow');
const { prng } = require('./prng.cjs');

const I64_MIN = -(1n << 63n);
const I64_MAX = (1n << 63n) - 1n;
const U64_MAX = (1n << 64n) - 1n;
const DEC_LIMIT = 10n ** 38n - 1n;	// decimal128(38, 9) extremes

// A PRNG seeded from the row number and a column salt.
function rowRandom(g, salt)
{
	return prng((Math.imul(g + 1, 0x9E3779B1) ^ Math.imul(salt + 7, 0x85EBCA77)) >>> 0);
}

function randomInt(rnd, lo, hi)
{
	return lo + Math.floor(rnd() * (hi - lo + 1));
}

function randomBigInt(rnd, bits, signed)
{
	let value = 0n;

	for (let i = 0; i < bits; i += 16)
		value = (value << 16n) | BigInt(Math.floor(rnd() * 65536));
	value &= (1n << BigInt(bits)) - 1n;
	return signed ? BigInt.asIntN(bits, value) : value;
}

const ALPHABET = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 ';

function randomText(rnd, maxLength)
{
	const length = randomInt(rnd, 0, maxLength);
	let out = '';

	for (let i = 0; i < length; i++)
		out += ALPHABET[Math.floor(rnd() * ALPHABET.length)];
	return out;
}

function randomBytes(rnd, maxLength)
{
	const out = Buffer.alloc(randomInt(rnd, 0, maxLength));

	for (let i = 0; i < out.length; i++)
		out[i] = Math.floor(rnd() * 256);
	return out;
}

const SPECIAL_TEXT = [
	'',
	'héllo wörld',
	'日本語のテキスト',
	'emoji 🎉🚀',
	'quote " backslash \\ tab \t newline \n end',
	'x'.repeat(300),
];

const WORDS = ['alpha', 'beta', 'gamma', 'delta', 'epsilon', 'zeta', 'eta', 'theta', '', 'ünïcødé'];
const COLORS = ['red', 'green', 'blue', 'yellow', 'black'];

// Edge value for row g if it is one of this column's special rows, else undefined.
function special(g, list)
{
	const slot = g % 41;

	return slot >= 1 && slot <= list.length ? { value: list[slot - 1] } : undefined;
}

// Null pattern: roughly one row in `period`, shifted per column.
function isNullRow(g, salt, period)
{
	return (g + salt * 3) % period === 0;
}

function pick(g, salt, specials, random, period = 9)
{
	if (isNullRow(g, salt, period))
		return null;
	const s = special(g, specials);

	return s ? s.value : random(rowRandom(g, salt));
}

// ---- Arrow Data builders ----

function validity(values)
{
	const bitmap = new Uint8Array(((values.length + 63) & ~63) >> 3);
	let nullCount = 0;

	values.forEach((v, i) => {
		if (v === null)
			nullCount++;
		else
			bitmap[i >> 3] |= 1 << (i & 7);
	});
	return { nullBitmap: nullCount > 0 ? bitmap : undefined, nullCount };
}

function fixedData(type, ArrayType, values, zero)
{
	return arrow.makeData({
		type,
		length: values.length,
		...validity(values),
		data: ArrayType.from(values.map((v) => (v === null ? zero : v))),
	});
}

function boolData(values)
{
	const bits = new Uint8Array(((values.length + 63) & ~63) >> 3);

	values.forEach((v, i) => {
		if (v)
			bits[i >> 3] |= 1 << (i & 7);
	});
	return arrow.makeData({ type: new arrow.Bool(), length: values.length, ...validity(values), data: bits });
}

function varData(type, values, large)
{
	const buffers = values.map((v) => (v === null ? Buffer.alloc(0) : (typeof v === 'string' ? Buffer.from(v, 'utf8') : v)));
	const offsets = large ? new BigInt64Array(values.length + 1) : new Int32Array(values.length + 1);
	let total = 0;

	buffers.forEach((b, i) => {
		total += b.length;
		offsets[i + 1] = large ? BigInt(total) : total;
	});
	return arrow.makeData({
		type,
		length: values.length,
		...validity(values),
		valueOffsets: offsets,
		data: new Uint8Array(Buffer.concat(buffers)),
	});
}

function decimalData(type, values)
{
	const words = new Uint32Array(values.length * 4);

	values.forEach((v, i) => {
		let u = BigInt.asUintN(128, v === null ? 0n : v);

		for (let w = 0; w < 4; w++)
		{
			words[i * 4 + w] = Number(u & 0xffffffffn);
			u >>= 32n;
		}
	});
	return arrow.makeData({ type, length: values.length, ...validity(values), data: words });
}

function fslData(type, values)
{
	const size = type.listSize;
	const items = [];

	for (const v of values)
		for (let i = 0; i < size; i++)
			items.push(v === null ? 0 : v[i]);
	return arrow.makeData({
		type,
		length: values.length,
		...validity(values),
		child: fixedData(type.children[0].type, Float32Array, items, 0),
	});
}

function listData(type, values, buildChild)
{
	const offsets = new Int32Array(values.length + 1);
	const items = [];

	values.forEach((v, i) => {
		if (v !== null)
			items.push(...v);
		offsets[i + 1] = items.length;
	});
	return arrow.makeData({
		type,
		length: values.length,
		...validity(values),
		valueOffsets: offsets,
		child: buildChild(items),
	});
}

function structData(type, values, buildChildren)
{
	return arrow.makeData({
		type,
		length: values.length,
		...validity(values),
		children: buildChildren(values),
	});
}

// ---- the types schema ----

const f = (name, type, nullable = true) => new arrow.Field(name, type, nullable);

const VEC_TYPE = new arrow.FixedSizeList(8, f('item', new arrow.Float32()));
const LIST_I32_TYPE = new arrow.List(f('item', new arrow.Int32()));
const LIST_STR_TYPE = new arrow.List(f('item', new arrow.Utf8()));
const STRUCT_TYPE = new arrow.Struct([f('a', new arrow.Int32()), f('b', new arrow.Utf8())]);
const DEC_TYPE = new arrow.Decimal(9, 38, 128);

function intColumn(name, bits, signed, salt)
{
	const type = new arrow.Int(signed, bits);
	const big = bits === 64;
	const min = signed ? (big ? I64_MIN : -(2 ** (bits - 1))) : (big ? 0n : 0);
	const max = signed ? (big ? I64_MAX : 2 ** (bits - 1) - 1) : (big ? U64_MAX : 2 ** bits - 1);
	const specials = big ? [min, max, 0n, signed ? -1n : 1n] : [min, max, 0, signed ? -1 : 1];

	return {
		field: f(name, type),
		value: (g) => pick(g, salt, specials, (rnd) => (big ? randomBigInt(rnd, 64, signed)
			: (signed ? randomInt(rnd, min, max) : randomInt(rnd, 0, max)))),
		build: (values) => fixedData(type, type.ArrayType, values, big ? 0n : 0),
	};
}

// Columns of the types datasets. `structNulls` = false leaves the struct column without
// null structs (file version 2.0 cannot store struct validity).
function typesColumns(structNulls)
{
	return [
		{
			field: f('id', new arrow.Int64(), false),
			value: (g) => BigInt(g),
			build: (values) => fixedData(new arrow.Int64(), BigInt64Array, values, 0n),
		},
		intColumn('i8', 8, true, 1),
		intColumn('i16', 16, true, 2),
		intColumn('i32', 32, true, 3),
		intColumn('i64', 64, true, 4),
		intColumn('u8', 8, false, 5),
		intColumn('u16', 16, false, 6),
		intColumn('u32', 32, false, 7),
		intColumn('u64', 64, false, 8),
		{
			field: f('f32', new arrow.Float32()),
			value: (g) => pick(g, 9, [NaN, Infinity, -Infinity, 0, 3.4028234663852886e38, 1.401298464324817e-45,
				-1.1754943508222875e-38, 0.1],
			(rnd) => Math.fround((rnd() - 0.5) * 2000)),
			build: (values) => fixedData(new arrow.Float32(), Float32Array, values, 0),
		},
		{
			field: f('f64', new arrow.Float64()),
			value: (g) => pick(g, 10, [NaN, Infinity, -Infinity, 0, Number.MAX_VALUE, Number.MIN_VALUE, -1.5e300, 0.1],
				(rnd) => (rnd() - 0.5) * 1e6),
			build: (values) => fixedData(new arrow.Float64(), Float64Array, values, 0),
		},
		{
			field: f('b', new arrow.Bool()),
			value: (g) => pick(g, 11, [], (rnd) => rnd() < 0.5),
			build: boolData,
		},
		{
			field: f('s', new arrow.Utf8()),
			value: (g) => pick(g, 12, SPECIAL_TEXT, (rnd) => randomText(rnd, 24)),
			build: (values) => varData(new arrow.Utf8(), values, false),
		},
		{
			field: f('ls', new arrow.LargeUtf8()),
			value: (g) => pick(g, 13, SPECIAL_TEXT, (rnd) => 'w' + randomInt(rnd, 0, 30)),
			build: (values) => varData(new arrow.LargeUtf8(), values, true),
		},
		{
			field: f('bin', new arrow.Binary()),
			value: (g) => pick(g, 14, [Buffer.alloc(0), Buffer.from([0]), Buffer.from([0xff, 0xfe, 0x00, 0x5c])],
				(rnd) => randomBytes(rnd, 16)),
			build: (values) => varData(new arrow.Binary(), values, false),
		},
		{
			field: f('lbin', new arrow.LargeBinary()),
			value: (g) => pick(g, 15, [Buffer.alloc(0), Buffer.alloc(100, 0xab)], (rnd) => randomBytes(rnd, 32)),
			build: (values) => varData(new arrow.LargeBinary(), values, true),
		},
		{
			field: f('d', new arrow.DateDay()),
			// 1970-01-01, 1969-12-31, 0001-01-01, 9999-12-31, 2000-02-29
			value: (g) => pick(g, 16, [0, -1, -719162, 2932896, 11016], (rnd) => randomInt(rnd, -25567, 47482)),
			build: (values) => fixedData(new arrow.DateDay(), Int32Array, values, 0),
		},
		{
			field: f('ts', new arrow.TimestampMicrosecond()),
			value: (g) => pick(g, 17, [0n, -1n, 253402300799999999n, -62135596800000000n, 951782400123456n],
				(rnd) => BigInt(randomInt(rnd, -631152000, 2524608000)) * 1000000n + BigInt(randomInt(rnd, 0, 999999))),
			build: (values) => fixedData(new arrow.TimestampMicrosecond(), BigInt64Array, values, 0n),
		},
		{
			field: f('tstz', new arrow.TimestampMicrosecond('UTC')),
			value: (g) => pick(g, 18, [0n, 1000000n, 946684799999999n],
				(rnd) => BigInt(randomInt(rnd, 0, 2000000000)) * 1000000n + BigInt(randomInt(rnd, 0, 9) * 100000)),
			build: (values) => fixedData(new arrow.TimestampMicrosecond('UTC'), BigInt64Array, values, 0n),
		},
		{
			field: f('dec', DEC_TYPE),
			value: (g) => pick(g, 19, [DEC_LIMIT, -DEC_LIMIT, 0n, 1n, -1n, 12345000000000n],
				(rnd) => randomBigInt(rnd, 48, true) * 1000n),
			build: (values) => decimalData(DEC_TYPE, values),
		},
		{
			field: f('vec', VEC_TYPE),
			value: (g) => pick(g, 20, [[0, -0.5, 1, 2, 3, 4, 5, 6.25]],
				(rnd) => Array.from({ length: 8 }, () => Math.fround(rnd() * 2 - 1)), 11),
			build: (values) => fslData(VEC_TYPE, values),
		},
		{
			field: f('li', LIST_I32_TYPE),
			value: (g) => pick(g, 21, [[], [-2147483648, 2147483647], [null], [1, null, 3]],
				(rnd) => Array.from({ length: randomInt(rnd, 0, 5) }, () => randomInt(rnd, -1000, 1000))),
			build: (values) => listData(LIST_I32_TYPE, values, (items) => fixedData(new arrow.Int32(), Int32Array, items, 0)),
		},
		{
			field: f('lstr', LIST_STR_TYPE),
			value: (g) => pick(g, 22, [[], [''], [null, 'x'], ['日本', '🎉']],
				(rnd) => Array.from({ length: randomInt(rnd, 0, 4) }, () => WORDS[randomInt(rnd, 0, WORDS.length - 1)])),
			build: (values) => listData(LIST_STR_TYPE, values, (items) => varData(new arrow.Utf8(), items, false)),
		},
		{
			field: f('st', STRUCT_TYPE),
			value: (g) => {
				if (structNulls && isNullRow(g, 23, 13))
					return null;
				const rnd = rowRandom(g, 23);

				return {
					a: isNullRow(g, 24, 7) ? null : randomInt(rnd, -100000, 100000),
					b: isNullRow(g, 25, 5) ? null : (g % 41 === 1 ? '' : randomText(rnd, 10)),
				};
			},
			build: (values) => structData(STRUCT_TYPE, values, (rows) => [
				fixedData(new arrow.Int32(), Int32Array, rows.map((r) => (r === null ? 0 : r.a)), 0),
				varData(new arrow.Utf8(), rows.map((r) => (r === null ? null : r.b)), false),
			]),
		},
		{
			field: f('all_null', new arrow.Int32()),
			value: () => null,
			build: (values) => fixedData(new arrow.Int32(), Int32Array, values, 0),
		},
		{
			field: f('const_i', new arrow.Int32()),
			value: () => 42,
			build: (values) => fixedData(new arrow.Int32(), Int32Array, values, 0),
		},
		{
			field: f('const_s', new arrow.Utf8()),
			value: () => 'constant',
			build: (values) => varData(new arrow.Utf8(), values, false),
		},
		{
			field: f('cat', new arrow.Utf8()),
			value: (g) => (isNullRow(g, 26, 17) ? null : COLORS[rowRandom(g, 26)() * COLORS.length | 0]),
			build: (values) => varData(new arrow.Utf8(), values, false),
		},
	];
}

// ---- the encodings schema ----
//
// Columns that make the writer pick its rarer encodings (lance-format.md §2.5, §4.3):
// field metadata forces general compression, byte-stream-split, the structural layout
// and packed structs; the data itself makes FSST, dictionaries, RLE and per-value
// compression worthwhile. Which encodings really appear is listed in README.md.

const LONG_VALUE_BYTES = 33000;	// > 32 KiB: full-zip values get compressed one by one
const TEXT_WORDS = ['lance', 'columnar', 'format', 'page', 'buffer', 'encoding', 'mini', 'block',
	'full', 'zip', 'repetition', 'definition', 'dictionary', 'symbol', 'table', 'vector'];

function withMetadata(name, type, metadata, nullable = true)
{
	return new arrow.Field(name, type, nullable, new Map(Object.entries(metadata)));
}

// Words from a small vocabulary: compressible text (FSST, zstd, lz4).
function wordText(rnd, minWords, maxWords)
{
	return Array.from({ length: randomInt(rnd, minWords, maxWords) },
		() => TEXT_WORDS[randomInt(rnd, 0, TEXT_WORDS.length - 1)]).join(' ');
}

function fixedBinaryData(type, values)
{
	const width = type.byteWidth;
	const bytes = new Uint8Array(values.length * width);

	values.forEach((v, i) => {
		if (v !== null)
			bytes.set(v, i * width);
	});
	return arrow.makeData({ type, length: values.length, ...validity(values), data: bytes });
}

// fixed_size_list whose items are built by buildItems(flat item values, nulls allowed).
function fixedListData(type, values, buildItems)
{
	const items = [];

	for (const v of values)
		for (let i = 0; i < type.listSize; i++)
			items.push(v === null ? null : v[i]);
	return arrow.makeData({ type, length: values.length, ...validity(values), child: buildItems(items) });
}

function encodingsColumns(version)
{
	const packedType = new arrow.Struct([f('a', new arrow.Int32(), false), f('b', new arrow.Float64(), false)]);
	const varPackedType = new arrow.Struct([f('k', new arrow.Int32(), false), f('name', new arrow.Utf8(), false)]);
	const vec4Type = new arrow.FixedSizeList(4, f('item', new arrow.Float32()));
	const fslIntType = new arrow.FixedSizeList(3, f('item', new arrow.Int32()));
	const fslBoolType = new arrow.FixedSizeList(5, f('item', new arrow.Bool()));
	const fsbType = new arrow.FixedSizeBinary(16);
	const columns = [
		{
			field: f('id', new arrow.Int64(), false),
			value: (g) => BigInt(g),
			build: (values) => fixedData(new arrow.Int64(), BigInt64Array, values, 0n),
		},
		{
			field: withMetadata('zstd_s', new arrow.Utf8(), { 'lance-encoding:compression': 'zstd' }),
			value: (g) => (isNullRow(g, 30, 11) ? null : wordText(rowRandom(g, 30), 0, 6)),
			build: (values) => varData(new arrow.Utf8(), values, false),
		},
		{
			field: withMetadata('lz4_s', new arrow.LargeUtf8(), { 'lance-encoding:compression': 'lz4' }),
			value: (g) => (isNullRow(g, 31, 13) ? null : wordText(rowRandom(g, 31), 0, 6)),
			build: (values) => varData(new arrow.LargeUtf8(), values, true),
		},
		{
			field: withMetadata('zstd_i', new arrow.Int32(), { 'lance-encoding:compression': 'zstd' }, false),
			value: (g) => randomInt(rowRandom(g, 32), -5000, 5000),
			build: (values) => fixedData(new arrow.Int32(), Int32Array, values, 0),
		},
		{
			field: withMetadata('lz4_i', new arrow.Int64(), { 'lance-encoding:compression': 'lz4' }),
			value: (g) => (isNullRow(g, 33, 7) ? null : BigInt(randomInt(rowRandom(g, 33), 0, 1 << 20))),
			build: (values) => fixedData(new arrow.Int64(), BigInt64Array, values, 0n),
		},
		{
			field: withMetadata('bss_f32', new arrow.Float32(),
				{ 'lance-encoding:bss': 'on', 'lance-encoding:compression': 'zstd' }),
			value: (g) => (isNullRow(g, 34, 10) ? null : Math.fround(Math.sin(g / 50) * 100)),
			build: (values) => fixedData(new arrow.Float32(), Float32Array, values, 0),
		},
		{
			field: withMetadata('bss_f64', new arrow.Float64(),
				{ 'lance-encoding:bss': 'on', 'lance-encoding:compression': 'lz4' }, false),
			value: (g) => 1000 + g * 0.25,
			build: (values) => fixedData(new arrow.Float64(), Float64Array, values, 0),
		},
		{
			field: withMetadata('fz_i', new arrow.Int32(), { 'lance-encoding:structural-encoding': 'fullzip' }),
			value: (g) => (isNullRow(g, 35, 9) ? null : randomInt(rowRandom(g, 35), -2147483648, 2147483647)),
			build: (values) => fixedData(new arrow.Int32(), Int32Array, values, 0),
		},
		{
			field: withMetadata('fz_vec', vec4Type, { 'lance-encoding:structural-encoding': 'fullzip' }),
			value: (g) => (isNullRow(g, 36, 8) ? null
				: Array.from({ length: 4 }, (_, i) => Math.fround(g + i / 4))),
			build: (values) => fixedListData(vec4Type, values,
				(items) => fixedData(new arrow.Float32(), Float32Array, items, 0)),
		},
		{
			field: withMetadata('mb_s', new arrow.Utf8(), { 'lance-encoding:structural-encoding': 'miniblock' }),
			// A few values of 256+ bytes would make the writer choose full-zip.
			value: (g) => (isNullRow(g, 37, 12) ? null : 'v' + g + ' ' + 'm'.repeat(g % 50 === 1 ? 300 : g % 20)),
			build: (values) => varData(new arrow.Utf8(), values, false),
		},
		{
			field: f('big', new arrow.LargeBinary()),
			value: (g) => {
				if (isNullRow(g, 38, 10))
					return null;
				const rnd = rowRandom(g, 38);

				if (g % 900 === 3)
					return Buffer.from(wordText(rnd, 8000, 8000).slice(0, LONG_VALUE_BYTES).padEnd(LONG_VALUE_BYTES, '.'));
				return randomBytes(rnd, 24);
			},
			build: (values) => varData(new arrow.LargeBinary(), values, true),
		},
		{
			field: f('fsst_s', new arrow.Utf8()),
			value: (g) => (isNullRow(g, 39, 15) ? null : wordText(rowRandom(g, 39), 2, 12)),
			build: (values) => varData(new arrow.Utf8(), values, false),
		},
		{
			// compression=fsst is what makes 2.0 write its Fsst encoding.
			field: withMetadata('fsst_forced', new arrow.Utf8(), { 'lance-encoding:compression': 'fsst' }),
			value: (g) => (isNullRow(g, 46, 19) ? null : 'page ' + (g % 500) + ' ' + wordText(rowRandom(g, 46), 1, 4)),
			build: (values) => varData(new arrow.Utf8(), values, false),
		},
		{
			field: f('fsb', fsbType),
			value: (g) => (isNullRow(g, 40, 9) ? null
				: Buffer.from(Array.from({ length: 16 }, (_, i) => (g * 7 + i * 13) & 0xff))),
			build: (values) => fixedBinaryData(fsbType, values),
		},
		{
			field: f('fsl_ni', fslIntType),
			value: (g) => (isNullRow(g, 41, 11) ? null
				: [g, (g % 4 === 1 ? null : -g), (g % 5 === 2 ? null : g * 3)]),
			build: (values) => fixedListData(fslIntType, values,
				(items) => fixedData(new arrow.Int32(), Int32Array, items, 0)),
		},
		{
			field: f('fsl_b', fslBoolType),
			value: (g) => (isNullRow(g, 42, 13) ? null
				: Array.from({ length: 5 }, (_, i) => ((g >> i) & 1) === 1)),
			build: (values) => fixedListData(fslBoolType, values, boolData),
		},
		{
			field: f('dict_i', new arrow.Int32()),
			value: (g) => (isNullRow(g, 43, 14) ? null : [7, -300000, 123456789, 0, 42][rowRandom(g, 43)() * 5 | 0]),
			build: (values) => fixedData(new arrow.Int32(), Int32Array, values, 0),
		},
		{
			field: f('rle_i', new arrow.Int64(), false),
			value: (g) => BigInt(Math.floor(g / 100)) * 1000003n,
			build: (values) => fixedData(new arrow.Int64(), BigInt64Array, values, 0n),
		},
		{
			// Runs of floats with zstd and byte stream split off: Rle; 2.3 wraps the run
			// values and the run lengths each in General (per chunk).
			field: withMetadata('rle_zstd_f32', new arrow.Float32(),
				{ 'lance-encoding:compression': 'zstd', 'lance-encoding:bss': 'off' }),
			value: (g) => (isNullRow(g, 47, 29) ? null : Math.fround(Math.floor(g / 40) * 0.75 - 200)),
			build: (values) => fixedData(new arrow.Float32(), Float32Array, values, 0),
		},
		{
			field: withMetadata('rle_lz4_f64', new arrow.Float64(),
				{ 'lance-encoding:compression': 'lz4', 'lance-encoding:bss': 'off' }, false),
			value: (g) => Math.floor(g / 64) * 1.0625e10,
			build: (values) => fixedData(new arrow.Float64(), Float64Array, values, 0),
		},
		{
			field: withMetadata('packed', packedType, { 'lance-encoding:packed': 'true' }),
			// Children of packed structs cannot be nullable; 2.0 cannot store null structs.
			value: (g) => (version !== '2.0' && g % 17 === 3 ? null : { a: g * 3, b: g / 8 }),
			build: (values) => structData(packedType, values, (rows) => [
				fixedData(new arrow.Int32(), Int32Array, rows.map((r) => (r === null ? 0 : r.a)), 0),
				fixedData(new arrow.Float64(), Float64Array, rows.map((r) => (r === null ? 0 : r.b)), 0),
			]),
		},
	];

	// Packed structs with variable-width children (VariablePackedStruct): Lance 12 refuses
	// them below 2.2 ("not enabled by the selected file format").
	if (version === '2.2' || version === '2.3')
		columns.push({
			field: withMetadata('vpacked', varPackedType, { 'lance-encoding:packed': 'true' }),
			value: (g) => (g % 17 === 3 ? null : { k: g % 1000, name: g % 23 === 4 ? '' : wordText(rowRandom(g, 45), 3, 8) }),
			build: (values) => structData(varPackedType, values, (rows) => [
				fixedData(new arrow.Int32(), Int32Array, rows.map((r) => (r === null ? 0 : r.k)), 0),
				varData(new arrow.Utf8(), rows.map((r) => (r === null ? '' : r.name)), false),
			]),
		});
	return columns;
}

// An Arrow table of rows [first, first + count) of the given columns, split into batches
// of at most batchRows rows.
function makeTable(columns, first, count, batchRows = count)
{
	const schema = new arrow.Schema(columns.map((c) => c.field));
	const batches = [];

	for (let start = first; start < first + count; start += batchRows)
	{
		const n = Math.min(batchRows, first + count - start);
		const children = columns.map((c) => {
			const values = [];

			for (let g = start; g < start + n; g++)
				values.push(c.value(g));
			return c.build(values);
		});

		batches.push(new arrow.RecordBatch(schema, arrow.makeData({
			type: new arrow.Struct(schema.fields),
			length: n,
			nullCount: 0,
			children,
		})));
	}
	return new arrow.Table(schema, batches);
}

module.exports = {
	rowRandom,
	randomText,
	fixedData,
	varData,
	listData,
	structData,
	typesColumns,
	encodingsColumns,
	makeTable,
};
