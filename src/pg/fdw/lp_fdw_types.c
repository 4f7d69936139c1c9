/*
 * lp_fdw_types.c - Lance values as PostgreSQL values (lance_fdw).
 *
 * Every Lance type maps to one PostgreSQL type (lp_fdw_mapped_type; the
 * README's table).  A column declared with that type gets values built
 * directly; a column declared with another type gets the mapped value's
 * text (JSON text for lists and structs) through the declared type's input
 * function, so varchar(n), a domain or pgvector's vector work and anything
 * that does not fit is an error of that type.  Values that cannot be
 * represented exactly are errors, never changed silently.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "common/int.h"
#include "common/shortest_dec.h"
#include "datatype/timestamp.h"
#include "mb/pg_wchar.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/datetime.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/numeric.h"
#include "utils/timestamp.h"

#include "base/lp_bytes.h"
#include "fdw/lp_fdw.h"
#include "base/lp_pg_types.h"

/* ---- the mapping ------------------------------------------------------------ */

static bool
is_list(const LpType *type)
{
	return type->id == LP_TYPE_LIST || type->id == LP_TYPE_LARGE_LIST ||
		type->id == LP_TYPE_FIXED_SIZE_LIST;
}

static void
scalar_mapped_type(const LpType *type, Oid *typid, int32 *typmod)
{
	*typmod = -1;
	switch (type->id)
	{
		case LP_TYPE_BOOL:
			*typid = BOOLOID;
			break;
		case LP_TYPE_INT8:
		case LP_TYPE_INT16:
		case LP_TYPE_UINT8:
		case LP_TYPE_INT32:
		case LP_TYPE_UINT16:
		case LP_TYPE_INT64:
		case LP_TYPE_UINT32:
			*typid = lp_pg_integer(type->id)->pg_type;
			break;
		case LP_TYPE_UINT64:
			*typid = NUMERICOID;
			break;
		case LP_TYPE_HALF_FLOAT:
		case LP_TYPE_FLOAT:
			*typid = FLOAT4OID;
			break;
		case LP_TYPE_DOUBLE:
			*typid = FLOAT8OID;
			break;
		case LP_TYPE_DECIMAL128:
		case LP_TYPE_DECIMAL256:
			*typid = NUMERICOID;
			if (type->precision >= 1 && type->precision <= NUMERIC_MAX_PRECISION &&
				type->scale >= NUMERIC_MIN_SCALE && type->scale <= NUMERIC_MAX_SCALE)
				*typmod = ((type->precision << 16) | (type->scale & 0x7ff)) + VARHDRSZ;
			break;
		case LP_TYPE_DATE32:
		case LP_TYPE_DATE64:
			*typid = DATEOID;
			break;
		case LP_TYPE_TIME32:
		case LP_TYPE_TIME64:
			*typid = TIMEOID;
			break;
		case LP_TYPE_TIMESTAMP:
			*typid = type->timezone != NULL ? TIMESTAMPTZOID : TIMESTAMPOID;
			break;
		case LP_TYPE_DURATION:
			*typid = INTERVALOID;
			break;
		case LP_TYPE_NULL:
		case LP_TYPE_STRING:
		case LP_TYPE_LARGE_STRING:
			*typid = TEXTOID;
			break;
		case LP_TYPE_BINARY:
		case LP_TYPE_LARGE_BINARY:
		case LP_TYPE_FIXED_SIZE_BINARY:
			*typid = BYTEAOID;
			break;
		case LP_TYPE_FIXED_SIZE_LIST:
		case LP_TYPE_LIST:
		case LP_TYPE_LARGE_LIST:
		case LP_TYPE_STRUCT:
			*typid = JSONBOID;
			break;
	}
}

void
lp_fdw_mapped_type(const LpType *type, Oid *typid, int32 *typmod)
{
	/* Lists of scalars are arrays; nested lists and structs are jsonb. */
	if (is_list(type) && type->num_children == 1 &&
		!is_list(type->children[0]) && type->children[0]->id != LP_TYPE_STRUCT)
	{
		Oid			element;

		scalar_mapped_type(type->children[0], &element, typmod);
		*typid = get_array_type(element);
		if (OidIsValid(*typid))
			return;
	}
	scalar_mapped_type(type, typid, typmod);
}

/* ---- scalar values ------------------------------------------------------------ */

static void
fixed_value(const LpArray *array, uint64 row, void *out, size_t width)
{
	memcpy(out, array->values + row * width, width);
}

static float
half_to_float(uint16 half)
{
	int			sign = (half >> 15) & 1;
	int			exponent = (half >> 10) & 0x1f;
	int			mantissa = half & 0x3ff;
	float		value;

	if (exponent == 0)
		value = ldexpf((float) mantissa, -24);
	else if (exponent == 31)
		value = mantissa == 0 ? INFINITY : NAN;
	else
		value = ldexpf((float) (mantissa | 0x400), exponent - 25);
	return sign ? -value : value;
}

/* A little-endian two's-complement integer of nbytes bytes as decimal text with scale. */
static char *
decimal_text(const uint8 *bytes, int nbytes, int32 scale)
{
	uint32		words[8];
	int			nwords = nbytes / 4;
	bool		negative = (bytes[nbytes - 1] & 0x80) != 0;
	char		digits[100];
	int			ndigits = 0;
	StringInfoData out;

	for (int w = 0; w < nwords; w++)
		words[w] = lp_le32(bytes + 4 * w);
	if (negative)
	{
		uint64		carry = 1;

		for (int w = 0; w < nwords; w++)
		{
			uint64		sum = (uint64) (uint32) ~words[w] + carry;

			words[w] = (uint32) sum;
			carry = sum >> 32;
		}
	}
	/* Repeated division by 10 of the magnitude, most significant word first. */
	for (;;)
	{
		bool		zero = true;
		uint64		remainder = 0;

		for (int w = nwords - 1; w >= 0; w--)
		{
			uint64		current = (remainder << 32) | words[w];

			words[w] = (uint32) (current / 10);
			remainder = current % 10;
			if (words[w] != 0)
				zero = false;
		}
		digits[ndigits++] = (char) ('0' + remainder);
		if (zero)
			break;
	}

	initStringInfo(&out);
	if (negative)
		appendStringInfoChar(&out, '-');
	if (scale > 0)
	{
		/* at least one digit before the point */
		while (ndigits <= scale)
			digits[ndigits++] = '0';
		for (int i = ndigits - 1; i >= 0; i--)
		{
			appendStringInfoChar(&out, digits[i]);
			if (i == scale)
				appendStringInfoChar(&out, '.');
		}
	}
	else
	{
		for (int i = ndigits - 1; i >= 0; i--)
			appendStringInfoChar(&out, digits[i]);
		for (int i = 0; i < -scale; i++)
			appendStringInfoChar(&out, '0');
	}
	return out.data;
}

static int64
to_micros(int64 raw, LpTimeUnit unit, const char *what)
{
	int64		result;

	switch (unit)
	{
		case LP_UNIT_SECOND:
			if (pg_mul_s64_overflow(raw, USECS_PER_SEC, &result))
				break;
			return result;
		case LP_UNIT_MILLI:
			if (pg_mul_s64_overflow(raw, INT64CONST(1000), &result))
				break;
			return result;
		case LP_UNIT_MICRO:
			return raw;
		case LP_UNIT_NANO:
			if (raw % 1000 != 0)
				ereport(ERROR,
						errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
						errmsg("%s value " INT64_FORMAT " ns has sub-microsecond digits, which PostgreSQL cannot store",
							   what, raw));
			return raw / 1000;
	}
	ereport(ERROR,
			errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
			errmsg("%s value " INT64_FORMAT " is out of range", what, raw));
	pg_unreachable();
}

static Datum
timestamp_datum(int64 raw, LpTimeUnit unit)
{
	int64		micros = to_micros(raw, unit, "timestamp");
	Timestamp	result;

	if (pg_sub_s64_overflow(micros, EPOCH_DIFF_USECS, &result) ||
		!IS_VALID_TIMESTAMP(result))
		ereport(ERROR,
				errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				errmsg("timestamp value " INT64_FORMAT " is out of range for type timestamp", raw));
	return TimestampGetDatum(result);
}

static Datum
date_datum(int64 days, int64 raw)
{
	int64		result = days - EPOCH_DIFF_DAYS;

	if (result < PG_INT32_MIN || result > PG_INT32_MAX || !IS_VALID_DATE((DateADT) result))
		ereport(ERROR,
				errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				errmsg("date value " INT64_FORMAT " is out of range for type date", raw));
	return DateADTGetDatum((DateADT) result);
}

static Datum
time_datum(int64 raw, LpTimeUnit unit)
{
	int64		micros = to_micros(raw, unit, "time");

	if (micros < 0 || micros > USECS_PER_DAY)
		ereport(ERROR,
				errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				errmsg("time value " INT64_FORMAT " is out of range for type time", raw));
	return TimeADTGetDatum(micros);
}

static Datum
interval_datum(int64 raw, LpTimeUnit unit)
{
	Interval   *result = palloc0(sizeof(Interval));

	result->time = to_micros(raw, unit, "duration");
	return IntervalPGetDatum(result);
}

/* Bytes of a string or binary value. */
static const uint8 *
variable_value(const LpArray *array, uint64 row, uint64 *len)
{
	uint64		start = array->offsets[row];

	*len = array->offsets[row + 1] - start;
	return array->data + start;
}

static Datum
text_datum(const LpArray *array, uint64 row)
{
	uint64		len;
	const char *bytes = (const char *) variable_value(array, row, &len);
	char	   *converted;
	text	   *result;

	if (len > MaxAllocSize - VARHDRSZ)
		ereport(ERROR,
				errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				errmsg("string value of " UINT64_FORMAT " bytes is too long for type text", len));
	/* Verifies UTF-8 (no NUL either) and converts to the database encoding. */
	converted = pg_any_to_server(bytes, (int) len, PG_UTF8);
	result = cstring_to_text_with_len(converted, converted == bytes ? (int) len : (int) strlen(converted));
	return PointerGetDatum(result);
}

static Datum
bytea_datum(const uint8 *bytes, uint64 len)
{
	bytea	   *result;

	if (len > MaxAllocSize - VARHDRSZ)
		ereport(ERROR,
				errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				errmsg("binary value of " UINT64_FORMAT " bytes is too long for type bytea", len));
	result = palloc(len + VARHDRSZ);
	SET_VARSIZE(result, len + VARHDRSZ);
	memcpy(VARDATA(result), bytes, len);
	return PointerGetDatum(result);
}

static Datum
numeric_from_text(const char *text, int32 typmod)
{
	return DirectFunctionCall3(numeric_in, CStringGetDatum(text),
							   ObjectIdGetDatum(InvalidOid), Int32GetDatum(typmod));
}

/* A non-null scalar in its mapped type. */
static Datum
scalar_datum(const LpArray *array, uint64 row, int32 typmod)
{
	const LpType *type = array->type;

	switch (type->id)
	{
		case LP_TYPE_BOOL:
			return BoolGetDatum(lp_bit_get(array->values, row));
		case LP_TYPE_INT8:
		case LP_TYPE_UINT8:
		case LP_TYPE_INT16:
		case LP_TYPE_UINT16:
		case LP_TYPE_INT32:
		case LP_TYPE_UINT32:
		case LP_TYPE_INT64:
			{
				const LpPgInteger *mapping = lp_pg_integer(type->id);

				return lp_pg_integer_datum(mapping,
										   lp_pg_integer_read(mapping, array->values + row * mapping->width));
			}
		case LP_TYPE_UINT64:
			{
				uint64		v;
				char		text[32];

				fixed_value(array, row, &v, 8);
				snprintf(text, sizeof(text), UINT64_FORMAT, v);
				return numeric_from_text(text, -1);
			}
		case LP_TYPE_HALF_FLOAT:
			{
				uint16		v;

				fixed_value(array, row, &v, 2);
				return Float4GetDatum(half_to_float(v));
			}
		case LP_TYPE_FLOAT:
			{
				float		v;

				fixed_value(array, row, &v, 4);
				return Float4GetDatum(v);
			}
		case LP_TYPE_DOUBLE:
			{
				double		v;

				fixed_value(array, row, &v, 8);
				return Float8GetDatum(v);
			}
		case LP_TYPE_DECIMAL128:
		case LP_TYPE_DECIMAL256:
			{
				int			width = type->id == LP_TYPE_DECIMAL128 ? 16 : 32;

				return numeric_from_text(decimal_text(array->values + row * width, width,
													  type->scale), typmod);
			}
		case LP_TYPE_DATE32:
			{
				int32		v;

				fixed_value(array, row, &v, 4);
				return date_datum(v, v);
			}
		case LP_TYPE_DATE64:
			{
				int64		v;

				fixed_value(array, row, &v, 8);
				if (v % MSECS_PER_DAY != 0)
					ereport(ERROR,
							errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
							errmsg("date64 value " INT64_FORMAT " ms is not a whole day", v));
				return date_datum(v / MSECS_PER_DAY, v);
			}
		case LP_TYPE_TIME32:
			{
				int32		v;

				fixed_value(array, row, &v, 4);
				return time_datum(v, type->unit);
			}
		case LP_TYPE_TIME64:
			{
				int64		v;

				fixed_value(array, row, &v, 8);
				return time_datum(v, type->unit);
			}
		case LP_TYPE_TIMESTAMP:
			{
				int64		v;

				fixed_value(array, row, &v, 8);
				return timestamp_datum(v, type->unit);
			}
		case LP_TYPE_DURATION:
			{
				int64		v;

				fixed_value(array, row, &v, 8);
				return interval_datum(v, type->unit);
			}
		case LP_TYPE_STRING:
		case LP_TYPE_LARGE_STRING:
			return text_datum(array, row);
		case LP_TYPE_BINARY:
		case LP_TYPE_LARGE_BINARY:
			{
				uint64		len;
				const uint8 *bytes = variable_value(array, row, &len);

				return bytea_datum(bytes, len);
			}
		case LP_TYPE_FIXED_SIZE_BINARY:
			return bytea_datum(array->values + row * (uint64) type->fixed_size,
							   (uint64) type->fixed_size);
		case LP_TYPE_NULL:
		case LP_TYPE_FIXED_SIZE_LIST:
		case LP_TYPE_LIST:
		case LP_TYPE_LARGE_LIST:
		case LP_TYPE_STRUCT:
			break;
	}
	elog(ERROR, "Lance type \"%s\" is not a scalar", lp_type_id_name(type->id));
	pg_unreachable();
}

/* ---- JSON text of any value ---------------------------------------------------- */

static void
append_float_json(StringInfo out, double value, bool single)
{
	char		buffer[64];

	if (isnan(value))
		appendStringInfoString(out, "\"NaN\"");
	else if (isinf(value))
		appendStringInfoString(out, value > 0 ? "\"Infinity\"" : "\"-Infinity\"");
	else
	{
		if (single)
			float_to_shortest_decimal_buf((float) value, buffer);
		else
			double_to_shortest_decimal_buf(value, buffer);
		appendStringInfoString(out, buffer);
	}
}

static void
append_json(StringInfo out, const LpArray *array, uint64 row)
{
	const LpType *type = array->type;

	if (type->id == LP_TYPE_NULL || !lp_array_is_valid(array, row))
	{
		appendStringInfoString(out, "null");
		return;
	}
	switch (type->id)
	{
		case LP_TYPE_BOOL:
			appendStringInfoString(out, lp_bit_get(array->values, row) ? "true" : "false");
			return;
		case LP_TYPE_INT8:
		case LP_TYPE_INT16:
		case LP_TYPE_INT32:
		case LP_TYPE_UINT8:
		case LP_TYPE_UINT16:
		case LP_TYPE_UINT32:
		case LP_TYPE_INT64:
		case LP_TYPE_UINT64:
		case LP_TYPE_DECIMAL128:
		case LP_TYPE_DECIMAL256:
			{
				Oid			typid;
				int32		typmod;
				Oid			output;
				bool		varlena;

				scalar_mapped_type(type, &typid, &typmod);
				getTypeOutputInfo(typid, &output, &varlena);
				appendStringInfoString(out, OidOutputFunctionCall(output,
																  scalar_datum(array, row, typmod)));
				return;
			}
		case LP_TYPE_HALF_FLOAT:
		case LP_TYPE_FLOAT:
			append_float_json(out, DatumGetFloat4(scalar_datum(array, row, -1)), true);
			return;
		case LP_TYPE_DOUBLE:
			append_float_json(out, DatumGetFloat8(scalar_datum(array, row, -1)), false);
			return;
		case LP_TYPE_DATE32:
		case LP_TYPE_DATE64:
		case LP_TYPE_TIME32:
		case LP_TYPE_TIME64:
		case LP_TYPE_TIMESTAMP:
			{
				Oid			typid;
				int32		typmod;
				char		buffer[MAXDATELEN + 1];

				scalar_mapped_type(type, &typid, &typmod);
				JsonEncodeDateTime(buffer, scalar_datum(array, row, -1), typid, NULL);
				escape_json(out, buffer);
				return;
			}
		case LP_TYPE_DURATION:
			escape_json(out, DatumGetCString(DirectFunctionCall1(interval_out,
																 scalar_datum(array, row, -1))));
			return;
		case LP_TYPE_STRING:
		case LP_TYPE_LARGE_STRING:
			escape_json(out, text_to_cstring(DatumGetTextPP(text_datum(array, row))));
			return;
		case LP_TYPE_BINARY:
		case LP_TYPE_LARGE_BINARY:
		case LP_TYPE_FIXED_SIZE_BINARY:
			escape_json(out, DatumGetCString(DirectFunctionCall1(byteaout,
																 scalar_datum(array, row, -1))));
			return;
		case LP_TYPE_FIXED_SIZE_LIST:
		case LP_TYPE_LIST:
		case LP_TYPE_LARGE_LIST:
			{
				uint64		start;
				uint64		end;

				lp_fdw_list_range(array, row, &start, &end);
				appendStringInfoChar(out, '[');
				for (uint64 i = start; i < end; i++)
				{
					if (i > start)
						appendStringInfoChar(out, ',');
					append_json(out, array->children[0], i);
				}
				appendStringInfoChar(out, ']');
				return;
			}
		case LP_TYPE_STRUCT:
			appendStringInfoChar(out, '{');
			for (uint32 c = 0; c < array->num_children; c++)
			{
				if (c > 0)
					appendStringInfoChar(out, ',');
				escape_json(out, type->children[c]->name);
				appendStringInfoChar(out, ':');
				append_json(out, array->children[c], row);
			}
			appendStringInfoChar(out, '}');
			return;
		case LP_TYPE_NULL:
			break;
	}
}

/* ---- lists ---------------------------------------------------------------------- */

void
lp_fdw_list_range(const LpArray *array, uint64 row, uint64 *start, uint64 *end)
{
	if (array->type->id == LP_TYPE_FIXED_SIZE_LIST)
	{
		*start = row * (uint64) array->type->fixed_size;
		*end = *start + (uint64) array->type->fixed_size;
	}
	else
	{
		*start = array->offsets[row];
		*end = array->offsets[row + 1];
	}
}

static Datum
array_datum(const LpFdwConverter *converter, const LpArray *array, uint64 row)
{
	const LpArray *items = array->children[0];
	uint64		start;
	uint64		end;
	int			count;
	Datum	   *values;
	bool	   *nulls;
	int			dims[1];
	int			lbs[1] = {1};
	Oid			element_typid;
	int32		element_typmod;

	lp_fdw_list_range(array, row, &start, &end);
	if (end - start > (uint64) MaxArraySize)
		ereport(ERROR,
				errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				errmsg("list of " UINT64_FORMAT " items is too long for an array", end - start));
	count = (int) (end - start);
	values = palloc(sizeof(Datum) * Max(count, 1));
	nulls = palloc(sizeof(bool) * Max(count, 1));
	scalar_mapped_type(items->type, &element_typid, &element_typmod);
	for (int i = 0; i < count; i++)
	{
		nulls[i] = items->type->id == LP_TYPE_NULL || !lp_array_is_valid(items, start + i);
		values[i] = nulls[i] ? (Datum) 0 : scalar_datum(items, start + i, element_typmod);
	}
	dims[0] = count;
	return PointerGetDatum(construct_md_array(values, nulls, count > 0 ? 1 : 0, dims, lbs,
											  converter->element_typid,
											  converter->element_len,
											  converter->element_byval,
											  converter->element_align));
}

/* Lance list items that have the bytes of the PostgreSQL array's elements. */
static bool
items_have_element_bytes(LpTypeId items, Oid element_typid)
{
	switch (items)
	{
		case LP_TYPE_INT16:
			return element_typid == INT2OID;
		case LP_TYPE_INT32:
			return element_typid == INT4OID;
		case LP_TYPE_INT64:
			return element_typid == INT8OID;
		case LP_TYPE_FLOAT:
			return element_typid == FLOAT4OID;
		case LP_TYPE_DOUBLE:
			return element_typid == FLOAT8OID;
		default:
			return false;
	}
}

/*
 * A non-empty list without null items as the array construct_md_array would
 * build (same bytes): the header, then the items' bytes as they are.  Other
 * lists take array_datum.
 */
static Datum
fixed_array_datum(const LpFdwConverter *converter, const LpArray *array, uint64 row)
{
	const LpArray *items = array->children[0];
	uint64		start;
	uint64		end;
	int			count;
	Size		nbytes;
	ArrayType  *result;

	lp_fdw_list_range(array, row, &start, &end);
	if (start == end || end - start > (uint64) MaxArraySize)
		return array_datum(converter, array, row);
	if (items->validity != NULL)
		for (uint64 i = start; i < end; i++)
			if (!lp_array_is_valid(items, i))
				return array_datum(converter, array, row);
	count = (int) (end - start);
	nbytes = ARR_OVERHEAD_NONULLS(1) + (Size) count * converter->element_len;
	result = palloc0(nbytes);
	SET_VARSIZE(result, nbytes);
	result->ndim = 1;
	result->dataoffset = 0;
	result->elemtype = converter->element_typid;
	ARR_DIMS(result)[0] = count;
	ARR_LBOUND(result)[0] = 1;
	memcpy(ARR_DATA_PTR(result), items->values + start * converter->element_len,
		   (Size) count * converter->element_len);
	return PointerGetDatum(result);
}

/* ---- converters ------------------------------------------------------------------ */

static LpFdwConversion
direct_conversion(const LpFdwConverter *converter, const LpType *type)
{
	if (converter->through_text)
		return LP_FDW_CONVERT_GENERAL;
	switch (type->id)
	{
		case LP_TYPE_INT64:
			return LP_FDW_CONVERT_INT64;
		case LP_TYPE_DOUBLE:
			return LP_FDW_CONVERT_DOUBLE;
		case LP_TYPE_STRING:
		case LP_TYPE_LARGE_STRING:
			return LP_FDW_CONVERT_TEXT;
		case LP_TYPE_FIXED_SIZE_LIST:
		case LP_TYPE_LIST:
		case LP_TYPE_LARGE_LIST:
			if (OidIsValid(converter->element_typid) &&
				items_have_element_bytes(type->children[0]->id, converter->element_typid))
				return LP_FDW_CONVERT_FIXED_ARRAY;
			return LP_FDW_CONVERT_GENERAL;
		default:
			return LP_FDW_CONVERT_GENERAL;
	}
}

void
lp_fdw_converter_init(LpFdwConverter *converter, const LpType *type,
					  Oid target_typid, int32 target_typmod)
{
	memset(converter, 0, sizeof(*converter));
	lp_fdw_mapped_type(type, &converter->mapped_typid, &converter->mapped_typmod);
	converter->target_typid = target_typid;
	converter->target_typmod = target_typmod;
	converter->element_typid = get_element_type(converter->mapped_typid);
	if (OidIsValid(converter->element_typid))
		get_typlenbyvalalign(converter->element_typid, &converter->element_len,
							 &converter->element_byval, &converter->element_align);

	/* The mapped type itself; a typmod only matters for numeric(p,s). */
	converter->through_text = target_typid != converter->mapped_typid ||
		(target_typmod != -1 && target_typmod != converter->mapped_typmod);
	if (converter->through_text)
	{
		Oid			input;
		Oid			output;
		bool		varlena;

		getTypeInputInfo(target_typid, &input, &converter->target_ioparam);
		fmgr_info(input, &converter->target_input);
		converter->mapped_is_jsonb_text = converter->mapped_typid == JSONBOID ||
			OidIsValid(converter->element_typid);
		if (!converter->mapped_is_jsonb_text)
		{
			getTypeOutputInfo(converter->mapped_typid, &output, &varlena);
			fmgr_info(output, &converter->mapped_output);
		}
	}
	converter->conversion = direct_conversion(converter, type);
}

static Datum
mapped_datum(const LpFdwConverter *converter, const LpArray *array, uint64 row)
{
	if (OidIsValid(converter->element_typid))
		return array_datum(converter, array, row);
	if (converter->mapped_typid == JSONBOID)
	{
		StringInfoData json;

		initStringInfo(&json);
		append_json(&json, array, row);
		return DirectFunctionCall1(jsonb_in, CStringGetDatum(json.data));
	}
	return scalar_datum(array, row, converter->mapped_typmod);
}

Datum
lp_fdw_convert(const LpFdwConverter *converter, const LpArray *array, uint64 row)
{
	char	   *text;

	switch (converter->conversion)
	{
		case LP_FDW_CONVERT_INT64:
			{
				int64		v;

				fixed_value(array, row, &v, 8);
				return Int64GetDatum(v);
			}
		case LP_FDW_CONVERT_DOUBLE:
			{
				double		v;

				fixed_value(array, row, &v, 8);
				return Float8GetDatum(v);
			}
		case LP_FDW_CONVERT_TEXT:
			return text_datum(array, row);
		case LP_FDW_CONVERT_FIXED_ARRAY:
			return fixed_array_datum(converter, array, row);
		case LP_FDW_CONVERT_GENERAL:
			break;
	}
	if (!converter->through_text)
		return mapped_datum(converter, array, row);
	if (converter->mapped_is_jsonb_text)
	{
		StringInfoData json;

		initStringInfo(&json);
		append_json(&json, array, row);
		text = json.data;
	}
	else
		text = OutputFunctionCall((FmgrInfo *) &converter->mapped_output,
								  scalar_datum(array, row, converter->mapped_typmod));
	return InputFunctionCall((FmgrInfo *) &converter->target_input, text,
							 converter->target_ioparam, converter->target_typmod);
}
