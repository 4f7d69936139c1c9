'use strict';
// The core's encoder read by the reference implementation: for Lance 2.0, 2.1, 2.2 and 2.3,
// lancedb creates an empty dataset, test/tools/encode_append encodes rows of every flat
// leaf type (nulls, empty strings, all-null and constant columns, runs, vectors and strings
// wide enough for full-zip pages, enough rows for two pages of vectors), of structs (in
// structs, nulls at the struct and the member level, all null, with full-zip members) and
// of lists (of leaves, lists and structs, in structs; null, empty and all-null lists, null
// items; items wide enough for full-zip pages; null structs from 2.1 on) into one data file and
// commits it, and lancedb reads back every value byte for byte.  The same rows written by
// lancedb give the size the encoder's file must stay within 1.1x of (and is logged).
//
// Needs LP_ENCODE_APPEND (the tool, built by `make build/encode_append`); writes under
// LP_SCRATCH (or the system's temporary directory).  No database is involved.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const arrow = require('apache-arrow');
const lancedb = require('@lancedb/lancedb');

process.env.LANCEDB_LOG = process.env.LANCEDB_LOG || 'error';

const TOOL = process.env.LP_ENCODE_APPEND;
const SCRATCH = fs.mkdtempSync(path.join(process.env.LP_SCRATCH || os.tmpdir(), 'encode-'));

// About 300 MB of datasets: gone when the file's tests are.
test.after(() => fs.rmSync(SCRATCH, { recursive: true, force: true }));

// xorshift32, so every run writes the same rows.
function random(seed)
{
	let state = seed >>> 0 || 1;

	return () => {
		state ^= state << 13;
		state >>>= 0;
		state ^= state >>> 17;
		state ^= state << 5;
		state >>>= 0;
		return state;
	};
}

function randomHex(next, bytes)
{
	let out = '';

	for (let i = 0; i < bytes; i++)
		out += (next() & 0xff).toString(16).padStart(2, '0');
	return out;
}

const ALPHABET = 'abcdefghijklmnopqrstuvwxyz ÄÖÜ✓';

function textHex(next, length)
{
	let text = '';

	for (let i = 0; i < length; i++)
		text += ALPHABET[next() % ALPHABET.length];
	return Buffer.from(text, 'utf8').toString('hex');
}

const f32 = () => new arrow.Field('item', new arrow.Float32(), true);

// name, Arrow type, nullable, value of row i (hex of its bytes, or null).  Every 7th row
// of a nullable column is null unless the column says otherwise (rare nulls: every 5000th,
// whose definition levels 2.2+ run-length encodes).
function columns(next, version)
{
	const fixed = (bytes) => (i) => randomHex(next, bytes);
	const small = (bytes) => (i) => (next() % 100).toString(16).padStart(2, '0') + '00'.repeat(bytes - 1);
	// 2.0 has no place for a null struct (Lance refuses them too).
	const structNulls = version !== '2.0';
	// A struct of members [name, type, nullable, value]: its value is one value per member,
	// a nullable member null every 5th row (a different row for each member).
	const struct = (members) => [new arrow.Struct(members.map(([name, type, nullable]) =>
		new arrow.Field(name, type, nullable))), (i) => members.map(([, , nullable, value], k) =>
		(nullable && (i + k) % 5 === 1 ? null : value(i)))];
	const [innerType, inner] = struct([
		['c', new arrow.Float64(), true, fixed(8)],
		['v', new arrow.FixedSizeList(4, f32()), false, fixed(16)],
	]);
	const [stType, st] = struct([
		['a', new arrow.Int32(), true, fixed(4)],
		['s', new arrow.Utf8(), true, () => textHex(next, next() % 20)],
		['inner', innerType, structNulls, inner],
		['b', new arrow.Bool(), false, () => (next() & 1 ? '01' : '00')],
	]);
	const [stValidType, stValid] = struct([
		['id', new arrow.Int64(), false, small(8)],
		['long', new arrow.Utf8(), true, () => textHex(next, 260 + next() % 200)],
	]);
	const [stNullType, stNull] = struct([['x', new arrow.Int32(), true, fixed(4)]]);
	// A list of 0 to 4 items (empty ones too), every 4th item null when items may be (Arrow JS
	// has no large lists; the core tests write those).
	const list = (itemType, itemNullable, item) => [
		new arrow.List(new arrow.Field('item', itemType, itemNullable)),
		(i) => Array.from({ length: next() % 5 }, (_, j) => (itemNullable && j % 4 === 1 ? null : item(i)))];
	const [li32Type, li32] = list(new arrow.Int32(), true, fixed(4));
	const [lstrType, lstr] = list(new arrow.Utf8(), true, () => textHex(next, next() % 16));
	const [lvecType, lvec] = list(new arrow.FixedSizeList(4, f32()), false, fixed(16));
	const [innerListType, innerList] = list(new arrow.Int64(), false, small(8));
	const [llType, ll] = list(innerListType, true, innerList);
	const [tagsType, tags] = list(new arrow.Binary(), false, () => randomHex(next, next() % 8));
	const [elemType, elem] = struct([
		['a', new arrow.Int16(), true, fixed(2)],
		['tags', tagsType, true, tags],
	]);
	const [lstType, lst] = list(elemType, true, elem);
	const [numsType, nums] = list(new arrow.Uint8(), false, small(1));
	const [stListType, stList] = struct([
		['nums', numsType, true, nums],
		['x', new arrow.Int32(), true, fixed(4)],
	]);
	const emptyList = new arrow.List(new arrow.Field('item', new arrow.Int32(), true));
	// Items of 256 bytes and more: full-zip pages with repetition levels.
	const [lLongType, lLong] = list(new arrow.Utf8(), true, () => textHex(next, 260 + next() % 200));
	const [lWideType, lWide] = list(new arrow.FixedSizeList(128, f32()), false, fixed(512));

	const all = [
		['i8', new arrow.Int8(), true, fixed(1)],
		['i16', new arrow.Int16(), false, fixed(2)],
		['i32', new arrow.Int32(), true, fixed(4)],
		['i64', new arrow.Int64(), true, small(8)],
		['u8', new arrow.Uint8(), false, small(1)],
		['u16', new arrow.Uint16(), true, fixed(2)],
		['u32', new arrow.Uint32(), false, small(4)],
		['u64', new arrow.Uint64(), true, fixed(8)],
		['f32', new arrow.Float32(), true, fixed(4)],
		['f64', new arrow.Float64(), false, fixed(8)],
		['b', new arrow.Bool(), true, () => (next() & 1 ? '01' : '00')],
		['s', new arrow.Utf8(), true, () => textHex(next, next() % 30)],
		['ls', new arrow.LargeUtf8(), false, () => textHex(next, next() % 12)],
		['bin', new arrow.Binary(), true, () => randomHex(next, next() % 20)],
		['d', new arrow.DateDay(), true, small(4)],
		['ts', new arrow.TimestampMicrosecond('UTC'), true, fixed(8)],
		['dec', new arrow.Decimal(2, 10, 128), true, (i) => randomHex(next, 3) + '00'.repeat(13)],
		['vec', new arrow.FixedSizeList(8, f32()), true, fixed(32)],
		['wide_vec', new arrow.FixedSizeList(128, f32()), false, fixed(512)],
		['long_text', new arrow.Utf8(), true, () => textHex(next, 260 + next() % 200)],
		['empty', new arrow.Utf8(), false, () => ''],
		['all_null', new arrow.Int32(), true, () => null, { allNull: true }],
		['const_i', new arrow.Int64(), false, () => '2a00000000000000'],
		['const_s', new arrow.Utf8(), true, () => Buffer.from('same').toString('hex'), { noNulls: true }],
		['const_b', new arrow.Bool(), false, () => '01'],
		['const_with_nulls', new arrow.Int32(), true, () => '07000000'],
		['rare_nulls', new arrow.Int32(), true, fixed(4), { rareNulls: true }],
		['vec_item_nulls', new arrow.FixedSizeList(4, f32()), true, (i) => [0, 1, 2, 3].map((j) =>
			((i * 4 + j) % 5 === 1 ? null : randomHex(next, 4))), { itemNulls: true }],
		['runs', new arrow.Int32(), false, (i) => {
			const b = Buffer.alloc(4);

			b.writeInt32LE(Math.floor(i / 300));
			return b.toString('hex');
		}],
		['st', stType, true, st, { noNulls: !structNulls }],
		['st_valid', stValidType, false, stValid],
		['st_null', stNullType, true, stNull, { allNull: true, structNulls: true }],
		['l_i32', li32Type, true, li32, { lists: true }],
		['l_str', lstrType, false, lstr, { lists: true }],
		['l_vec', lvecType, true, lvec, { lists: true }],
		['l_l', llType, true, ll, { lists: true }],
		// every 4th struct of a list is null
		['l_st', lstType, true, lst, { lists: true, structNulls: true }],
		['st_list', stListType, structNulls, stList, { lists: true }],
		['l_empty', emptyList, false, () => [], { lists: true }],
		['l_null', emptyList, true, () => null, { allNull: true, lists: true }],
		['l_long', lLongType, true, lLong, { lists: true }],
		['l_wide_vec', lWideType, true, lWide, { lists: true }],
	];

	// 2.0 files cannot hold null items inside fixed-size lists, nor null structs (in lists or not).
	return all.filter(([, , , , options = {}]) => !((options.itemNulls || options.structNulls) &&
		version === '2.0'));
}

function makeRows(specs, rows)
{
	return specs.map(([, , nullable, value, options = {}]) => {
		const out = [];

		for (let i = 0; i < rows; i++)
		{
			const isNull = options.allNull || (options.rareNulls ? i % 5000 === 7 :
				nullable && !options.noNulls && i % 7 === 3);
			const v = value(i);

			out.push(isNull ? null : v);
		}
		return out;
	});
}

const TYPED = {
	[arrow.Type.Int]: (t) => ({ '8true': Int8Array, '16true': Int16Array, '32true': Int32Array,
		'64true': BigInt64Array, '8false': Uint8Array, '16false': Uint16Array, '32false': Uint32Array,
		'64false': BigUint64Array })[t.bitWidth + String(t.isSigned)],
	[arrow.Type.Float]: (t) => (t.precision === arrow.Precision.SINGLE ? Float32Array : Float64Array),
	[arrow.Type.Date]: () => Int32Array,
	[arrow.Type.Timestamp]: () => BigInt64Array,
	[arrow.Type.Decimal]: () => Uint32Array,
};

function byteWidth(type)
{
	switch (type.typeId)
	{
		case arrow.Type.Int: return type.bitWidth / 8;
		case arrow.Type.Float: return type.precision === arrow.Precision.SINGLE ? 4 : 8;
		case arrow.Type.Date: return 4;
		case arrow.Type.Timestamp: return 8;
		case arrow.Type.Decimal: return 16;
		default: return 0;
	}
}

function typed(Ctor, bytes)
{
	const copy = new Uint8Array(bytes.length + 8);

	copy.set(bytes);
	return new Ctor(copy.buffer, 0, bytes.length / Ctor.BYTES_PER_ELEMENT);
}

// The rows of one column as Arrow data, for lancedb to write the same rows.
function columnData(type, values)
{
	const n = values.length;
	const bitmap = new Uint8Array(Math.ceil(n / 8) + 1);
	let nullCount = 0;

	values.forEach((v, i) => {
		if (v === null)
			nullCount++;
		else
			bitmap[i >> 3] |= 1 << (i & 7);
	});
	const common = { type, length: n, nullCount, nullBitmap: bitmap };

	if (type.typeId === arrow.Type.Struct)
		return arrow.makeData({ ...common, children: type.children.map((field, c) =>
			columnData(field.type, values.map((v) => (v === null ? null : v[c])))) });
	if (type.typeId === arrow.Type.List)
	{
		const offsets = new Int32Array(n + 1);
		const items = [];

		values.forEach((v, i) => {
			if (v !== null)
				items.push(...v);
			offsets[i + 1] = items.length;
		});
		return arrow.makeData({ ...common, valueOffsets: offsets, child: columnData(type.children[0].type, items) });
	}

	if (type.typeId === arrow.Type.Bool)
	{
		const bits = new Uint8Array(Math.ceil(n / 8) + 1);

		values.forEach((v, i) => { if (v === '01') bits[i >> 3] |= 1 << (i & 7); });
		return arrow.makeData({ ...common, data: bits });
	}
	if (type.typeId === arrow.Type.Utf8 || type.typeId === arrow.Type.LargeUtf8 ||
		type.typeId === arrow.Type.Binary)
	{
		const parts = values.map((v) => Buffer.from(v === null ? '' : v, 'hex'));
		const large = type.typeId === arrow.Type.LargeUtf8;
		const offsets = large ? new BigInt64Array(n + 1) : new Int32Array(n + 1);
		let total = 0;

		parts.forEach((p, i) => {
			total += p.length;
			offsets[i + 1] = large ? BigInt(total) : total;
		});
		return arrow.makeData({ ...common, valueOffsets: offsets, data: new Uint8Array(Buffer.concat(parts)) });
	}
	if (type.typeId === arrow.Type.FixedSizeList)
	{
		const row = type.listSize * 4;
		const items = n * type.listSize;
		const itemBitmap = new Uint8Array(Math.ceil(items / 8) + 1);
		let itemNulls = 0;
		const bytes = Buffer.concat(values.map((v, i) => {
			if (!Array.isArray(v))
			{
				for (let j = 0; j < type.listSize; j++)
					itemBitmap[(i * type.listSize + j) >> 3] |= 1 << ((i * type.listSize + j) & 7);
				return v === null ? Buffer.alloc(row) : Buffer.from(v, 'hex');
			}
			return Buffer.concat(v.map((item, j) => {
				const index = i * type.listSize + j;

				if (item === null)
				{
					itemNulls++;
					return Buffer.alloc(4);
				}
				itemBitmap[index >> 3] |= 1 << (index & 7);
				return Buffer.from(item, 'hex');
			}));
		}));
		const child = arrow.makeData({ type: type.children[0].type, length: items, nullCount: itemNulls,
			nullBitmap: itemNulls > 0 ? itemBitmap : null, data: typed(Float32Array, bytes) });

		return arrow.makeData({ ...common, child });
	}
	const width = byteWidth(type);
	const bytes = Buffer.concat(values.map((v) => (v === null ? Buffer.alloc(width) : Buffer.from(v, 'hex'))));

	return arrow.makeData({ ...common, data: typed(TYPED[type.typeId](type), bytes) });
}

// Row i of Arrow data read back, in the hex form above (items one by one when itemized).
function readHex(data, i, itemized)
{
	const type = data.type;

	if (!data.getValid(i))
		return null;
	if (type.typeId === arrow.Type.Struct)
		return type.children.map((field, c) => readHex(data.children[c], i, false));
	if (type.typeId === arrow.Type.List)
	{
		const out = [];

		for (let j = data.valueOffsets[i]; j < data.valueOffsets[i + 1]; j++)
			out.push(readHex(data.children[0], j, false));
		return out;
	}
	if (type.typeId === arrow.Type.Bool)
	{
		const bit = data.offset + i;

		return data.values[bit >> 3] & (1 << (bit & 7)) ? '01' : '00';
	}
	if (type.typeId === arrow.Type.Utf8 || type.typeId === arrow.Type.LargeUtf8 ||
		type.typeId === arrow.Type.Binary)
	{
		const start = Number(data.valueOffsets[i]);
		const end = Number(data.valueOffsets[i + 1]);

		return Buffer.from(data.values.buffer, data.values.byteOffset + start, end - start).toString('hex');
	}
	if (type.typeId === arrow.Type.FixedSizeList)
	{
		const child = data.children[0];
		const row = type.listSize * 4;

		if (itemized)
		{
			const out = [];

			for (let j = 0; j < type.listSize; j++)
				out.push(child.getValid(i * type.listSize + j) ?
					Buffer.from(child.values.buffer, child.values.byteOffset + (i * type.listSize + j) * 4, 4)
						.toString('hex') : null);
			return out;
		}
		return Buffer.from(child.values.buffer, child.values.byteOffset + i * row, row).toString('hex');
	}
	const width = byteWidth(type);

	return Buffer.from(data.values.buffer, data.values.byteOffset + i * width, width).toString('hex');
}

function dataBytes(dataset)
{
	const dir = path.join(dataset, 'data');

	return fs.readdirSync(dir).filter((f) => f.endsWith('.lance'))
		.reduce((n, f) => n + fs.statSync(path.join(dir, f)).size, 0);
}

for (const version of ['2.0', '2.1', '2.2', '2.3'])
{
	for (const rows of [1, 20000])
	{
		test('lancedb reads a ' + version + ' file of ' + rows + ' rows written by the encoder', async () => {
			assert.ok(TOOL, 'LP_ENCODE_APPEND names the encode_append tool (make build/encode_append)');
			const specs = columns(random(rows * 31 + version.charCodeAt(2)), version);
			const values = makeRows(specs, rows);
			const schema = new arrow.Schema(specs.map(([name, type, nullable]) => new arrow.Field(name, type, nullable)));
			const options = { storageOptions: { newTableDataStorageVersion: version, newTableEnableV2ManifestPaths: 'true' } };
			const db = await lancedb.connect(SCRATCH);
			const name = 'encoded_' + version.replace('.', '_') + '_' + rows;
			const rowsFile = path.join(SCRATCH, name + '.json');

			await db.createEmptyTable(name, schema, options);
			fs.writeFileSync(rowsFile, JSON.stringify({ rows, columns: values }));
			const printed = execFileSync(TOOL, [path.join(SCRATCH, name + '.lance'), rowsFile, '1500'],
				{ encoding: 'utf8' }).trim().split(' ');

			assert.equal(printed[2], '2', 'the encoded file is version 2 of the dataset');
			const table = await db.openTable(name);

			assert.equal(await table.countRows(), rows);
			const read = await table.query().toArrow();
			let row = 0;

			for (const batch of read.batches)
			{
				for (let i = 0; i < batch.numRows; i++, row++)
				{
					specs.forEach(([column], c) => {
						const data = batch.data.children[batch.schema.fields.findIndex((x) => x.name === column)];

						assert.deepEqual(readHex(data, i, Boolean(specs[c][4]?.itemNulls)), values[c][row],
							column + ' row ' + row);
					});
				}
			}
			assert.equal(row, rows);

			// Row ranges inside pages, which lancedb finds through the pages' repetition indexes.
			for (const start of rows > 1 ? [1, Math.floor(rows / 3), rows - 7] : [])
			{
				const part = await table.query().offset(start).limit(5).toArrow();
				let at = start;

				for (const batch of part.batches)
					for (let i = 0; i < batch.numRows; i++, at++)
						specs.forEach(([column], c) => {
							const data = batch.data.children[batch.schema.fields.findIndex((x) => x.name === column)];

							assert.deepEqual(readHex(data, i, Boolean(specs[c][4]?.itemNulls)), values[c][at],
								column + ' row ' + at + ' read from ' + start);
						});
				assert.equal(at, Math.min(start + 5, rows));
			}

			// The same rows written by lancedb, for the size comparison.
			const reference = 'lancedb_' + name;
			const batch = new arrow.RecordBatch(schema, arrow.makeData({
				type: new arrow.Struct(schema.fields), length: rows, nullCount: 0,
				children: specs.map(([, type], c) => columnData(type, values[c])),
			}));

			await db.createTable(reference, new arrow.Table(schema, [batch]), options);
			const ours = Number(printed[1]);
			const theirs = dataBytes(path.join(SCRATCH, reference + '.lance'));

			console.log('# size ' + version + ' ' + rows + ' rows: encoder ' + ours + ', lancedb ' + theirs +
				' (' + (ours / theirs).toFixed(3) + 'x)');
			assert.ok(ours <= 1.1 * theirs, 'the encoded file (' + ours + ' bytes) is within 1.1x of lancedb\'s (' +
				theirs + ' bytes)');
		});
	}
}
