'use strict';
// Canonical JSON encoding of Arrow values, shared by every reference script.
//
// The encoding is chosen so that PostgreSQL text output can be compared with it:
//   int8..int32, uint8..uint32   JSON number
//   float32, float64             JSON number; NaN, Infinity, -Infinity and -0 as the strings
//                                "NaN", "Infinity", "-Infinity", "-0". float32 is written as the
//                                shortest decimal that reads back as the same float32 (what
//                                PostgreSQL prints for float4), float64 as JavaScript prints it
//                                (shortest round trip, like PostgreSQL float8).
//   int64, uint64                string of decimal digits
//   decimal128(p, s)             string with exactly s fractional digits ("-123.45")
//   bool                         true / false
//   utf8, large_utf8             string
//   binary, large_binary,        "\x" followed by lowercase hex (PostgreSQL bytea text)
//   fixed_size_binary
//   date32                       "YYYY-MM-DD"
//   timestamp (no tz)            "YYYY-MM-DD HH:MM:SS[.ffffff]" (trailing zeros of the fraction
//                                dropped, like PostgreSQL); with a time zone the UTC instant
//                                followed by "+00"
//   fixed_size_list, list        JSON array
//   struct                       JSON object keyed by child name
//   null (at any level)          null
//
// Values are read from the Arrow buffers directly: apache-arrow's Vector.get() turns
// timestamps into milliseconds and decimals into objects, which loses information.

const arrow = require('apache-arrow');

const Type = arrow.Type;

function float32Text(value)
{
	for (let digits = 1; digits <= 9; digits++)
	{
		const text = value.toPrecision(digits);

		if (Math.fround(Number(text)) === value)
			return Number(text);
	}
	return value;
}

function encodeFloat(value, single)
{
	if (Number.isNaN(value))
		return 'NaN';
	if (value === Infinity)
		return 'Infinity';
	if (value === -Infinity)
		return '-Infinity';
	if (Object.is(value, -0))
		return '-0';
	return single ? float32Text(value) : value;
}

function encodeHex(bytes)
{
	return '\\x' + Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex');
}

function pad(number, width)
{
	return String(number).padStart(width, '0');
}

function formatDays(days)
{
	const date = new Date(days * 86400000);

	return pad(date.getUTCFullYear(), 4) + '-' + pad(date.getUTCMonth() + 1, 2) + '-' +
		pad(date.getUTCDate(), 2);
}

// Microseconds since the epoch (bigint) to "YYYY-MM-DD HH:MM:SS[.ffffff]".
function formatMicros(micros)
{
	let days = micros / 86400000000n;
	let rest = micros % 86400000000n;

	if (rest < 0n)
	{
		rest += 86400000000n;
		days -= 1n;
	}
	const seconds = Number(rest / 1000000n);
	const fraction = Number(rest % 1000000n);
	let text = formatDays(Number(days)) + ' ' + pad(Math.floor(seconds / 3600), 2) + ':' +
		pad(Math.floor(seconds / 60) % 60, 2) + ':' + pad(seconds % 60, 2);

	if (fraction !== 0)
		text += '.' + pad(fraction, 6).replace(/0+$/, '');
	return text;
}

const MICROS_PER_UNIT = [1000000n, 1000n, 1n, null];	// indexed by arrow.TimeUnit

function timestampToMicros(raw, unit)
{
	if (unit === arrow.TimeUnit.NANOSECOND)
	{
		if (raw % 1000n !== 0n)
			throw new Error('nanosecond timestamps with sub-microsecond digits are not supported');
		return raw / 1000n;
	}
	return raw * MICROS_PER_UNIT[unit];
}

// Two's-complement little-endian 128-bit integer from four u32 words.
function decimalUnscaled(words, index)
{
	let value = 0n;

	for (let word = 3; word >= 0; word--)
		value = (value << 32n) | BigInt(words[index * 4 + word]);
	if (value >= (1n << 127n))
		value -= (1n << 128n);
	return value;
}

function formatDecimal(unscaled, scale)
{
	const negative = unscaled < 0n;
	let digits = (negative ? -unscaled : unscaled).toString();

	if (scale > 0)
	{
		digits = digits.padStart(scale + 1, '0');
		digits = digits.slice(0, digits.length - scale) + '.' + digits.slice(digits.length - scale);
	}
	else if (scale < 0)
		digits = digits + '0'.repeat(-scale);
	return (negative ? '-' : '') + digits;
}

// Encode element `index` of an Arrow Data object (offsets already applied the way
// apache-arrow does: value buffers are sliced, validity and bool bits are not).
function encodeValue(data, index)
{
	const type = data.type;

	if (type.typeId === Type.Null || !data.getValid(index))
		return null;

	switch (type.typeId)
	{
		case Type.Int:
			if (type.bitWidth === 64)
				return data.values[index].toString();
			return data.values[index];
		case Type.Float:
			if (type.precision === arrow.Precision.HALF)
				throw new Error('float16 is not supported');
			return encodeFloat(data.values[index], type.precision === arrow.Precision.SINGLE);
		case Type.Bool:
			{
				const bit = data.offset + index;

				return (data.values[bit >> 3] & (1 << (bit & 7))) !== 0;
			}
		case Type.Utf8:
		case Type.LargeUtf8:
		case Type.Binary:
		case Type.LargeBinary:
			{
				const start = Number(data.valueOffsets[index]);
				const end = Number(data.valueOffsets[index + 1]);
				const bytes = data.values.subarray(start, end);

				if (type.typeId === Type.Utf8 || type.typeId === Type.LargeUtf8)
					return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
				return encodeHex(bytes);
			}
		case Type.FixedSizeBinary:
			{
				const width = type.byteWidth;

				return encodeHex(data.values.subarray(index * width, (index + 1) * width));
			}
		case Type.Date:
			if (type.unit === arrow.DateUnit.DAY)
				return formatDays(data.values[index]);
			return formatMicros(BigInt(data.values[index]) * 1000n).slice(0, 10);
		case Type.Timestamp:
			{
				const text = formatMicros(timestampToMicros(BigInt(data.values[index]), type.unit));

				if (type.timezone === null || type.timezone === undefined || type.timezone === '')
					return text;
				if (type.timezone !== 'UTC' && type.timezone !== '+00:00')
					throw new Error('timestamp time zone "' + type.timezone + '" is not supported');
				return text + '+00';
			}
		case Type.Decimal:
			if (type.bitWidth !== 128)
				throw new Error('decimal' + type.bitWidth + ' is not supported');
			return formatDecimal(decimalUnscaled(data.values, index), type.scale);
		case Type.FixedSizeList:
			{
				const child = data.children[0];
				const size = type.listSize;
				const out = [];

				for (let i = 0; i < size; i++)
					out.push(encodeValue(child, index * size + i));
				return out;
			}
		case Type.List:
		case Type.LargeList:
			{
				const child = data.children[0];
				const start = Number(data.valueOffsets[index]);
				const end = Number(data.valueOffsets[index + 1]);
				const out = [];

				for (let i = start; i < end; i++)
					out.push(encodeValue(child, i));
				return out;
			}
		case Type.Struct:
			{
				const out = {};

				type.children.forEach((field, i) => {
					out[field.name] = encodeValue(data.children[i], index);
				});
				return out;
			}
		default:
			throw new Error('arrow type ' + String(type) + ' is not supported');
	}
}

// Rows of an Arrow table (or record batch) as an array of objects keyed by column name.
function encodeRows(table)
{
	const rows = [];
	const batches = table.batches ? table.batches : [table];

	for (const batch of batches)
	{
		const columns = batch.schema.fields.map((field, i) => [field.name, batch.data.children[i]]);

		for (let row = 0; row < batch.numRows; row++)
		{
			const out = {};

			for (const [name, data] of columns)
				out[name] = encodeValue(data, row);
			rows.push(out);
		}
	}
	return rows;
}

// An Arrow field as JSON: name, Arrow type text, nullability, metadata, children.
function describeArrowField(field)
{
	const out = { name: field.name, type: String(field.type), nullable: field.nullable };

	if (field.metadata && field.metadata.size > 0)
		out.metadata = Object.fromEntries([...field.metadata.entries()].sort());
	if (field.type.children && field.type.children.length > 0)
		out.children = field.type.children.map(describeArrowField);
	return out;
}

module.exports = {
	encodeValue,
	encodeRows,
	describeArrowField,
};
