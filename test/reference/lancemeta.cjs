'use strict';
// Lance metadata helpers for the reference scripts:
//  - lanceFieldsFromArrow(): the Lance schema fields (ids, parents, logical types) that Lance
//    derives from an Arrow schema, in pre-order, as lance_parts.file_schema() must report them;
//  - a minimal protobuf walker and decoders for the parts of manifests and data-file footers
//    the generator cross-checks (field numbers from docs/lance-format.md §1.2, §2.3, §5.3, §5.5);
//  - editors that give a dataset's latest version feature flags and a transaction operation
//    of newer Lance versions (feature_flags.test.cjs).
// Only what the tests need; not a general Lance reader.

const fs = require('fs');
const path = require('path');
const arrow = require('apache-arrow');

const Type = arrow.Type;

function logicalType(type)
{
	switch (type.typeId)
	{
		case Type.Null:
			return 'null';
		case Type.Bool:
			return 'bool';
		case Type.Int:
			return (type.isSigned ? 'int' : 'uint') + type.bitWidth;
		case Type.Float:
			return ['halffloat', 'float', 'double'][type.precision];
		case Type.Decimal:
			return 'decimal:' + type.bitWidth + ':' + type.precision + ':' + type.scale;
		case Type.Utf8:
			return 'string';
		case Type.LargeUtf8:
			return 'large_string';
		case Type.Binary:
			return 'binary';
		case Type.LargeBinary:
			return 'large_binary';
		case Type.FixedSizeBinary:
			return 'fixed_size_binary:' + type.byteWidth;
		case Type.Date:
			return type.unit === arrow.DateUnit.DAY ? 'date32:day' : 'date64:ms';
		case Type.Timestamp:
			return 'timestamp:' + ['s', 'ms', 'us', 'ns'][type.unit] + ':' + (type.timezone ? type.timezone : '-');
		case Type.Struct:
			return 'struct';
		case Type.List:
			return type.children[0].type.typeId === Type.Struct ? 'list.struct' : 'list';
		case Type.LargeList:
			return type.children[0].type.typeId === Type.Struct ? 'large_list.struct' : 'large_list';
		case Type.FixedSizeList:
			return 'fixed_size_list:' + logicalType(type.children[0].type) + ':' + type.listSize;
		default:
			throw new Error('no Lance logical type known for arrow type ' + String(type));
	}
}

// Lance keeps no child field for fixed_size_list (the element type is in the logical type);
// list and struct children become fields of their own.
function hasChildFields(type)
{
	return type.typeId === Type.Struct || type.typeId === Type.List || type.typeId === Type.LargeList;
}

function lanceFieldsFromArrow(schema)
{
	const out = [];

	function visit(field, parentId)
	{
		const id = out.length;
		const entry = {
			id,
			parent_id: parentId,
			name: field.name,
			logical_type: logicalType(field.type),
			nullable: field.nullable,
		};

		if (field.metadata && field.metadata.size > 0)
			entry.metadata = Object.fromEntries([...field.metadata.entries()].sort());
		out.push(entry);
		if (hasChildFields(field.type))
			for (const child of field.type.children)
				visit(child, id);
	}
	for (const field of schema.fields)
		visit(field, -1);
	return out;
}

// A field stored as one column whose children get none: blob v1/v2 and packed structs.
function isSingleColumnField(field)
{
	const m = field.metadata || {};

	return m['ARROW:extension:name'] === 'lance.blob.v2' || m['lance-encoding:blob'] === 'true' ||
		m['lance-encoding:packed'] === 'true' || m.packed === 'true';
}

// Physical columns a data file has for these fields: 2.0 gives every field a column,
// 2.1+ only leaves (fields without children; fixed_size_list is a leaf). A blob or packed
// struct field is one column in both, its children have none.
function expectedNumColumns(fields, fileVersion)
{
	if (fileVersion === 'legacy')
		return null;
	const byId = new Map(fields.map((f) => [f.id, f]));
	const parents = new Set(fields.map((f) => f.parent_id));
	const underSingleColumn = (f) => {
		for (let p = byId.get(f.parent_id); p; p = byId.get(p.parent_id))
			if (isSingleColumnField(p))
				return true;
		return false;
	};

	return fields.filter((f) => !underSingleColumn(f) &&
		(fileVersion === '2.0' || isSingleColumnField(f) || !parents.has(f.id))).length;
}

// ---- protobuf walking ----

function readVarint(buf, pos)
{
	let value = 0n;
	let shift = 0n;

	for (;;)
	{
		if (pos >= buf.length)
			throw new Error('truncated varint');
		const byte = buf[pos++];

		value |= BigInt(byte & 0x7f) << shift;
		if ((byte & 0x80) === 0)
			return [value, pos];
		shift += 7n;
		if (shift > 63n)
			throw new Error('varint too long');
	}
}

// Message bytes -> Map(field number -> array of raw values). Varints are BigInt,
// length-delimited values Buffers, fixed32/fixed64 Buffers.
function parseMessage(buf)
{
	const fields = new Map();
	let pos = 0;

	while (pos < buf.length)
	{
		let key;
		let value;

		[key, pos] = readVarint(buf, pos);
		const number = Number(key >> 3n);
		const wire = Number(key & 7n);

		if (wire === 0)
			[value, pos] = readVarint(buf, pos);
		else if (wire === 2)
		{
			let length;

			[length, pos] = readVarint(buf, pos);
			value = buf.subarray(pos, pos + Number(length));
			pos += Number(length);
		}
		else if (wire === 1)
		{
			value = buf.subarray(pos, pos + 8);
			pos += 8;
		}
		else if (wire === 5)
		{
			value = buf.subarray(pos, pos + 4);
			pos += 4;
		}
		else
			throw new Error('unsupported wire type ' + wire);
		if (!fields.has(number))
			fields.set(number, []);
		fields.get(number).push(value);
	}
	return fields;
}

function one(fields, number, fallback)
{
	const values = fields.get(number);

	return values ? values[values.length - 1] : fallback;
}

function signed32(value)
{
	return Number(BigInt.asIntN(32, value));
}

function text(fields, number)
{
	const value = one(fields, number, null);

	return value === null ? '' : value.toString('utf8');
}

// Repeated integer field, packed or not.
function repeatedInts(fields, number)
{
	const out = [];

	for (const value of fields.get(number) || [])
	{
		if (Buffer.isBuffer(value))
		{
			let pos = 0;

			while (pos < value.length)
			{
				let v;

				[v, pos] = readVarint(value, pos);
				out.push(signed32(v));
			}
		}
		else
			out.push(signed32(value));
	}
	return out;
}

function decodeLanceField(buf)
{
	const f = parseMessage(buf);
	const metadata = {};

	for (const entry of f.get(10) || [])
	{
		const kv = parseMessage(entry);

		metadata[text(kv, 1)] = text(kv, 2);
	}
	const field = {
		id: signed32(one(f, 3, 0n)),
		parent_id: signed32(one(f, 4, 0n)),
		name: text(f, 2),
		logical_type: text(f, 5),
		nullable: one(f, 6, 0n) !== 0n,
	};

	if (Object.keys(metadata).length > 0)
		field.metadata = Object.fromEntries(Object.entries(metadata).sort());
	return field;
}

// ---- data files ----

const FOOTER_V2_LEN = 40;

// Footer numbers and, for v2 files, the schema and row count from global buffer 0.
function readDataFileMeta(file)
{
	const buf = fs.readFileSync(file);
	const tail = buf.subarray(buf.length - 8);

	if (tail.toString('latin1', 4, 8) !== 'LANC')
		throw new Error(file + ': no LANC magic');
	const major = tail.readUInt16LE(0);
	const minor = tail.readUInt16LE(2);
	const out = { footer_version: major + '.' + minor, size_bytes: buf.length };

	if (major === 0 && minor <= 2)
	{
		out.file_version = 'legacy';
		return out;
	}
	const footer = buf.subarray(buf.length - FOOTER_V2_LEN);
	const gboStart = Number(footer.readBigUInt64LE(16));

	out.num_global_buffers = footer.readUInt32LE(24);
	out.num_columns = footer.readUInt32LE(28);
	out.file_version = (major === 0 && minor === 3) ? '2.0' : major + '.' + minor;

	const gb0Pos = Number(buf.readBigUInt64LE(gboStart));
	const gb0Size = Number(buf.readBigUInt64LE(gboStart + 8));
	const descriptor = parseMessage(buf.subarray(gb0Pos, gb0Pos + gb0Size));
	const schema = parseMessage(one(descriptor, 1, Buffer.alloc(0)));

	out.num_rows = Number(one(descriptor, 2, 0n));
	out.fields = (schema.get(1) || []).map(decodeLanceField);

	// Page row counts per column (ColumnMetadata.pages[].length), from the CMO table.
	const cmoStart = Number(footer.readBigUInt64LE(8));

	out.page_rows = [];
	for (let c = 0; c < out.num_columns; c++)
	{
		const pos = Number(buf.readBigUInt64LE(cmoStart + 16 * c));
		const size = Number(buf.readBigUInt64LE(cmoStart + 16 * c + 8));
		const column = parseMessage(buf.subarray(pos, pos + size));

		out.page_rows.push((column.get(2) || []).map((page) => Number(one(parseMessage(page), 3, 0n))));
	}
	return out;
}

// ---- manifests ----

// Latest manifest in <dataset>/_versions: [version, file name, scheme].
function latestManifestFile(datasetPath)
{
	const dir = path.join(datasetPath, '_versions');
	const max = (1n << 64n) - 1n;
	let best = null;

	for (const name of fs.readdirSync(dir))
	{
		const m = /^(\d+)\.manifest$/.exec(name);

		if (!m)
			continue;
		const scheme = name.length === 29 ? 'v2' : 'v1';
		const version = scheme === 'v2' ? max - BigInt(m[1]) : BigInt(m[1]);

		if (best === null || version > best[0])
			best = [version, name, scheme];
	}
	if (best === null)
		throw new Error(datasetPath + ': no manifest');
	return { version: Number(best[0]), file: path.join(dir, best[1]), scheme: best[2] };
}

function readManifest(datasetPath)
{
	const latest = latestManifestFile(datasetPath);
	const buf = fs.readFileSync(latest.file);
	const pos = Number(buf.readBigInt64LE(buf.length - 16));
	const length = buf.readUInt32LE(pos);
	const m = parseMessage(buf.subarray(pos + 4, pos + 4 + length));
	const dataFormat = parseMessage(one(m, 15, Buffer.alloc(0)));
	const writer = parseMessage(one(m, 13, Buffer.alloc(0)));

	return {
		version: Number(one(m, 3, 0n)),
		manifest_scheme: latest.scheme,
		data_format: text(dataFormat, 2),
		file_format: text(dataFormat, 1),
		writer: text(writer, 1) + ' ' + text(writer, 2),
		fields: (m.get(1) || []).map(decodeLanceField),
		fragments: (m.get(2) || []).map((raw) => {
			const fr = parseMessage(raw);

			return {
				id: Number(one(fr, 1, 0n)),
				physical_rows: Number(one(fr, 4, 0n)),
				has_deletion_file: fr.has(3),
				files: (fr.get(2) || []).map((rawFile) => {
					const df = parseMessage(rawFile);

					return {
						path: text(df, 1),
						fields: repeatedInts(df, 2),
						column_indices: repeatedInts(df, 3),
						file_major_version: Number(one(df, 4, 0n)),
						file_minor_version: Number(one(df, 5, 0n)),
						file_size_bytes: Number(one(df, 6, 0n)),
					};
				}),
			};
		}),
	};
}

// ---- editing manifests and transactions as newer Lance versions write them ----

function encodeVarint(value)
{
	const bytes = [];
	let rest = BigInt(value);

	while (rest >= 0x80n)
	{
		bytes.push(Number(rest & 0x7fn) | 0x80);
		rest >>= 7n;
	}
	bytes.push(Number(rest));
	return Buffer.from(bytes);
}

// The top-level fields of a message as [number, wire type, start, end] byte spans.
function fieldSpans(buf)
{
	const spans = [];
	let pos = 0;

	while (pos < buf.length)
	{
		const start = pos;
		let key;
		let length;

		[key, pos] = readVarint(buf, pos);
		const wire = Number(key & 7n);

		if (wire === 0)
			[, pos] = readVarint(buf, pos);
		else if (wire === 2)
		{
			[length, pos] = readVarint(buf, pos);
			pos += Number(length);
		}
		else if (wire === 1 || wire === 5)
			pos += wire === 1 ? 8 : 4;
		else
			throw new Error('unsupported wire type ' + wire);
		spans.push([Number(key >> 3n), wire, start, pos]);
	}
	return spans;
}

// The latest manifest file of a dataset: its bytes, and where its Manifest message lies.
function latestManifestBytes(datasetPath)
{
	const latest = latestManifestFile(datasetPath);
	const buf = fs.readFileSync(latest.file);
	const pos = Number(buf.readBigInt64LE(buf.length - 16));
	const length = buf.readUInt32LE(pos);

	return { file: latest.file, version: latest.version, buf, pos, message: buf.subarray(pos + 4, pos + 4 + length) };
}

// Add reader and writer feature flags (Manifest fields 9 and 10) to the latest manifest of a
// dataset, in place.  The Manifest message is the file's last section, so only its length
// prefix changes, and the tail still points at it.
function addFeatureFlags(datasetPath, reader, writer)
{
	const { file, buf, pos, message } = latestManifestBytes(datasetPath);
	const m = parseMessage(message);
	const kept = fieldSpans(message).filter(([number]) => number !== 9 && number !== 10)
		.map(([, , start, end]) => message.subarray(start, end));
	const flag = (number, value) => Buffer.concat([encodeVarint(number << 3), encodeVarint(value)]);
	const edited = Buffer.concat([...kept,
		flag(9, BigInt(reader) | one(m, 9, 0n)), flag(10, BigInt(writer) | one(m, 10, 0n))]);
	const length = Buffer.alloc(4);

	length.writeUInt32LE(edited.length);
	fs.writeFileSync(file, Buffer.concat([buf.subarray(0, pos), length, edited, buf.subarray(buf.length - 16)]));
}

// Give fragment `index` of the latest manifest of a dataset the id `id` (DataFragment field 1, in
// Manifest field 2), and raise max_fragment_id (field 11) to it, in place as addFeatureFlags.
function setFragmentId(datasetPath, index, id)
{
	const { file, buf, pos, message } = latestManifestBytes(datasetPath);
	const m = parseMessage(message);
	const field = (number, wire, body) => Buffer.concat([encodeVarint((number << 3) | wire),
		wire === 2 ? encodeVarint(body.length) : Buffer.alloc(0), body]);
	let fragment = -1;
	const parts = [];

	for (const [number, wire, start, end] of fieldSpans(message))
	{
		const span = message.subarray(start, end);

		if (number === 11)
			continue;
		if (number !== 2 || ++fragment !== index)
		{
			parts.push(span);
			continue;
		}
		const [, bodyStart] = readVarint(span, readVarint(span, 0)[1]);
		const body = span.subarray(bodyStart);
		const kept = fieldSpans(body).filter(([n]) => n !== 1).map(([, , s, e]) => body.subarray(s, e));

		parts.push(field(2, 2, Buffer.concat([field(1, 0, encodeVarint(id)), ...kept])));
	}
	if (fragment < index)
		throw new Error(file + ': no fragment ' + index);
	parts.push(field(11, 0, encodeVarint(BigInt(Math.max(Number(one(m, 11, 0n)), id)))));
	const edited = Buffer.concat(parts);
	const length = Buffer.alloc(4);

	length.writeUInt32LE(edited.length);
	fs.writeFileSync(file, Buffer.concat([buf.subarray(0, pos), length, edited, buf.subarray(buf.length - 16)]));
}

// Give the transaction of the latest version another operation field number (115: a newer
// Lance's DataOverlay, 116: CompositeOperation), in its inline section (Manifest field 21)
// and its _transactions/ file (field 12), in place: the field keeps its body, and its key
// keeps its length.
function setTransactionOperation(datasetPath, operationField)
{
	const { file, buf, version, message } = latestManifestBytes(datasetPath);
	const m = parseMessage(message);
	const retag = (txn, where) => {
		const operation = fieldSpans(txn).find(([number, wire]) => number >= 100 && wire === 2);

		if (!operation)
			throw new Error(where + ': no operation');
		const key = encodeVarint((operationField << 3) | 2);
		const [oldKey] = readVarint(txn, operation[2]);

		if (encodeVarint(oldKey).length !== key.length)
			throw new Error(where + ': the new key is ' + key.length + ' bytes long');
		key.copy(txn, operation[2]);
	};

	if (!m.has(21) || !m.has(12))
		throw new Error(file + ': version ' + version + ' has no inline transaction or no transaction file');
	const section = Number(one(m, 21));

	retag(buf.subarray(section + 4, section + 4 + buf.readUInt32LE(section)), file);
	fs.writeFileSync(file, buf);
	const txnFile = path.join(datasetPath, '_transactions', text(m, 12));
	const txn = fs.readFileSync(txnFile);

	retag(txn, txnFile);
	fs.writeFileSync(txnFile, txn);
	return version;
}

module.exports = {
	lanceFieldsFromArrow,
	expectedNumColumns,
	readDataFileMeta,
	readManifest,
	latestManifestFile,
	addFeatureFlags,
	setFragmentId,
	setTransactionOperation,
};
