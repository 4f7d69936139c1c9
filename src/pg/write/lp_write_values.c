/*
 * lp_write_values.c - PostgreSQL rows as Lance values (see lp_write_values.h).
 *
 * The mapping of PostgreSQL types to Lance types is lance_schema_type; the
 * way back (which PostgreSQL type a Lance type is read as) is lance_fdw's
 * lp_fdw_mapped_type, which also gives every field its input type here, so
 * a value written and read back comes out as the value that went in.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "common/int.h"
#include "fmgr.h"
#include "parser/parse_coerce.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/typcache.h"
#include "utils/uuid.h"

#include "fdw/lp_fdw.h"
#include "lp_pg_error.h"
#include "lp_pg_types.h"
#include "write/lp_write_values.h"

/* A growable byte buffer of a builder. */
typedef struct ByteBuffer
{
	MemoryContext context;		/* the batch's, not the row's */
	uint8	   *data;
	uint64		len;
	uint64		capacity;
} ByteBuffer;

/* How a query column becomes a field's input type. */
typedef enum CastKind
{
	CAST_NONE,					/* already the input type (or binary-compatible) */
	CAST_FUNCTION,				/* the cast's function */
	CAST_IO						/* output function, then the input type's input */
} CastKind;

/* The values of one field (and of the items of a fixed-size list). */
typedef struct FieldBuilder
{
	const LpType *type;
	const char *column;			/* for messages */
	Oid			input_typid;	/* uuid or bytea for fixed-size binary */
	LpArray		array;
	ByteBuffer	validity;
	ByteBuffer	values;
	ByteBuffer	offsets;		/* uint64 each, variable width */
	ByteBuffer	data;
	struct FieldBuilder *items; /* fixed-size list */
	LpArray    *item_pointer;
	Oid			item_typid;		/* element type of the input array */
	int16		item_len;
	bool		item_byval;
	char		item_align;
} FieldBuilder;

typedef struct ColumnPlan
{
	int			attno;			/* 0-based column of the rows */
	bool		nullable;		/* the field's */
	Oid			input_typid;
	CastKind	cast;
	FmgrInfo	cast_function;
	int			cast_nargs;
	FmgrInfo	io_output;
	FmgrInfo	io_input;
	Oid			io_param;
	FieldBuilder builder;
} ColumnPlan;

struct LpRowBatch
{
	int			num_columns;
	ColumnPlan *columns;
	LpType	  **types;
	const LpArray **arrays;
	uint64		rows;
};

/* ---- the mapping ------------------------------------------------------------ */

/* pgvector's type, found by its name (its oid differs between databases) */
static bool
is_pgvector(Oid typid)
{
	HeapTuple	tuple = SearchSysCache1(TYPEOID, ObjectIdGetDatum(typid));
	bool		result;

	if (!HeapTupleIsValid(tuple))
		return false;
	result = strcmp(NameStr(((Form_pg_type) GETSTRUCT(tuple))->typname), "vector") == 0 &&
		((Form_pg_type) GETSTRUCT(tuple))->typtype == TYPTYPE_BASE;
	ReleaseSysCache(tuple);
	return result;
}

/*
 * The Lance logical type of a column of type typid/typmod, or ERROR naming
 * the column.  Also the legacy Field.encoding Lance records for it.
 */
static char *
lance_schema_type(Oid typid, int32 typmod, const char *column, int32 *legacy_encoding)
{
	Oid			base = getBaseTypeAndTypmod(typid, &typmod);

	*legacy_encoding = 1;		/* Plain: fixed-stride values */
	switch (base)
	{
		case BOOLOID:
			return "bool";
		case INT2OID:
			return "int16";
		case INT4OID:
			return "int32";
		case INT8OID:
			return "int64";
		case FLOAT4OID:
			return "float";
		case FLOAT8OID:
			return "double";
		case DATEOID:
			return "date32:day";
		case TIMEOID:
			return "time64:us";
		case TIMESTAMPOID:
			return "timestamp:us:-";
		case TIMESTAMPTZOID:
			return "timestamp:us:UTC";
		case INTERVALOID:
			return "duration:us";
		case UUIDOID:
			return "fixed_size_binary:16";
		case NUMERICOID:
			if (typmod < (int32) VARHDRSZ)
				ereport(ERROR,
						errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						errmsg("column \"%s\" is numeric without precision and scale, which has no Lance type",
							   column),
						errhint("Cast the column to numeric(p,s), e.g. \"%s\"::numeric(38,10).", column));
			{
				int32		precision = ((typmod - VARHDRSZ) >> 16) & 0xffff;
				int32		scale = (((typmod - VARHDRSZ) & 0x7ff) ^ 1024) - 1024;

				if (scale < 0)
					ereport(ERROR,
							errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
							errmsg("column \"%s\" is numeric(%d,%d): decimals with a negative scale cannot be written",
								   column, precision, scale),
							errhint("Cast the column to numeric(p,0)."));
				if (precision > 76)
					ereport(ERROR,
							errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
							errmsg("column \"%s\" is numeric(%d,%d), wider than Lance's widest decimal (76 digits)",
								   column, precision, scale),
							errhint("Cast the column to numeric(76,s) or less."));
				return psprintf("decimal:%d:%d:%d", precision > 38 ? 256 : 128, precision, scale);
			}
		case TEXTOID:
		case VARCHAROID:
		case BPCHAROID:
		case JSONBOID:
		case JSONOID:
			*legacy_encoding = 2;	/* VarBinary */
			return "string";
		case BYTEAOID:
			*legacy_encoding = 2;
			return "binary";
		default:
			break;
	}
	if (type_is_enum(base))
	{
		*legacy_encoding = 2;
		return "string";
	}
	if (is_pgvector(base))
	{
		if (typmod <= 0)
			ereport(ERROR,
					errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					errmsg("column \"%s\" is a vector without a dimension", column),
					errhint("Cast the column to vector(n) to write it as a fixed-size list of n floats."));
		return psprintf("fixed_size_list:float:%d", typmod);
	}
	if (OidIsValid(get_element_type(base)) || type_is_rowtype(base))
		ereport(ERROR,
				errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				errmsg("column \"%s\" has type %s: arrays and composite types cannot be written yet",
					   column, format_type_be(typid)),
				errdetail("The encoder writes flat columns; lists and structs are not supported yet."),
				errhint("Cast the column to text or jsonb to write it as a string."));
	ereport(ERROR,
			errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			errmsg("column \"%s\" has type %s, which has no Lance type", column, format_type_be(typid)),
			errhint("Cast the column to a type of the mapping (see the README), e.g. text."));
	pg_unreachable();
}

void
lp_write_schema_for_columns(TupleDesc desc, LpSchema *schema)
{
	memset(schema, 0, sizeof(*schema));
	schema->fields = palloc0(sizeof(LpField) * Max(desc->natts, 1));
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute attr = TupleDescAttr(desc, i);
		LpField    *field = &schema->fields[schema->num_fields];
		const char *name = NameStr(attr->attname);

		if (attr->attisdropped)
			continue;
		for (uint32 j = 0; j < schema->num_fields; j++)
			if (strcmp(schema->fields[j].name, name) == 0)
				ereport(ERROR,
						errcode(ERRCODE_DUPLICATE_COLUMN),
						errmsg("the query has two columns named \"%s\"", name),
						errhint("Give every column of the query its own name."));
		field->id = (int32) schema->num_fields;
		field->parent_id = -1;
		field->name = pstrdup(name);
		field->logical_type = pstrdup(lance_schema_type(attr->atttypid, attr->atttypmod, name,
														&field->legacy_encoding));
		field->nullable = true;
		field->extension_name = pstrdup("");
		schema->num_fields++;
	}
	if (schema->num_fields == 0)
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("the query has no columns"),
				errdetail("A Lance file holds at least one column."));
}

/* ---- column plans -------------------------------------------------------------- */

/* The PostgreSQL type the values of a Lance type are built from; InvalidOid if none. */
static Oid
input_type_for(const LpType *type, Oid source_typid)
{
	Oid			typid;
	int32		typmod;

	if (type->id == LP_TYPE_FIXED_SIZE_BINARY && type->fixed_size == 16 &&
		getBaseType(source_typid) == UUIDOID)
		return UUIDOID;
	switch (type->id)
	{
		case LP_TYPE_NULL:
		case LP_TYPE_HALF_FLOAT:
		case LP_TYPE_LIST:
		case LP_TYPE_LARGE_LIST:
		case LP_TYPE_STRUCT:
			return InvalidOid;
		case LP_TYPE_FIXED_SIZE_LIST:
			if (type->num_children != 1 || lp_type_byte_width(type->children[0]) == 0 ||
				type->children[0]->id == LP_TYPE_HALF_FLOAT ||
				type->children[0]->id == LP_TYPE_DECIMAL128 ||
				type->children[0]->id == LP_TYPE_DECIMAL256 ||
				type->children[0]->id == LP_TYPE_FIXED_SIZE_BINARY)
				return InvalidOid;
			break;
		default:
			if (type->dictionary || type->packed)
				return InvalidOid;
			break;
	}
	lp_fdw_mapped_type(type, &typid, &typmod);
	return typid;
}

static void
plan_cast(ColumnPlan *plan, Oid source_typid, const char *column, const LpField *field)
{
	Oid			funcid = InvalidOid;
	CoercionPathType path;

	if (getBaseType(source_typid) == plan->input_typid)
	{
		plan->cast = CAST_NONE;
		return;
	}
	path = find_coercion_pathway(plan->input_typid, source_typid, COERCION_EXPLICIT, &funcid);
	switch (path)
	{
		case COERCION_PATH_RELABELTYPE:
			plan->cast = CAST_NONE;
			return;
		case COERCION_PATH_FUNC:
			plan->cast = CAST_FUNCTION;
			fmgr_info(funcid, &plan->cast_function);
			plan->cast_nargs = get_func_nargs(funcid);
			return;
		case COERCION_PATH_COERCEVIAIO:
			{
				Oid			output;
				Oid			input;
				bool		varlena;

				plan->cast = CAST_IO;
				getTypeOutputInfo(source_typid, &output, &varlena);
				fmgr_info(output, &plan->io_output);
				getTypeInputInfo(plan->input_typid, &input, &plan->io_param);
				fmgr_info(input, &plan->io_input);
				return;
			}
		default:
			ereport(ERROR,
					errcode(ERRCODE_DATATYPE_MISMATCH),
					errmsg("column \"%s\" has type %s, which cannot be cast to %s for field \"%s\" of Lance type \"%s\"",
						   column, format_type_be(source_typid), format_type_be(plan->input_typid),
						   field->name, field->logical_type),
					errhint("Cast the column in the query."));
	}
}

static void
builder_init(FieldBuilder *builder, const LpType *type, const char *column)
{
	memset(builder, 0, sizeof(*builder));
	builder->validity.context = CurrentMemoryContext;
	builder->values.context = CurrentMemoryContext;
	builder->offsets.context = CurrentMemoryContext;
	builder->data.context = CurrentMemoryContext;
	builder->type = type;
	builder->column = column;
	builder->array.type = type;
	if (type->id == LP_TYPE_FIXED_SIZE_LIST)
	{
		Oid			element;
		int32		typmod;

		builder->items = palloc(sizeof(FieldBuilder));
		builder_init(builder->items, type->children[0], column);
		builder->item_pointer = &builder->items->array;
		builder->array.num_children = 1;
		builder->array.children = &builder->item_pointer;
		lp_fdw_mapped_type(type->children[0], &element, &typmod);
		builder->item_typid = element;
		get_typlenbyvalalign(element, &builder->item_len, &builder->item_byval,
							 &builder->item_align);
	}
}

LpRowBatch *
lp_row_batch_create(TupleDesc desc, const LpSchema *schema, const char *what)
{
	LpRowBatch *batch = palloc0(sizeof(LpRowBatch));
	int			n = 0;

	for (uint32 i = 0; i < schema->num_fields; i++)
		if (schema->fields[i].parent_id == -1)
			n++;
	batch->columns = palloc0(sizeof(ColumnPlan) * Max(n, 1));
	batch->types = palloc0(sizeof(LpType *) * Max(n, 1));
	batch->arrays = palloc0(sizeof(LpArray *) * Max(n, 1));
	for (uint32 i = 0; i < schema->num_fields; i++)
	{
		const LpField *field = &schema->fields[i];
		ColumnPlan *plan = &batch->columns[batch->num_columns];
		int			attno = -1;
		Form_pg_attribute attr;
		LpError		err;

		if (field->parent_id != -1)
			continue;
		{
			for (int a = 0; a < desc->natts; a++)
				if (!TupleDescAttr(desc, a)->attisdropped &&
					strcmp(NameStr(TupleDescAttr(desc, a)->attname), field->name) == 0)
				{
					if (attno >= 0)
						ereport(ERROR,
								errcode(ERRCODE_DUPLICATE_COLUMN),
								errmsg("the query has two columns named \"%s\"", field->name),
								errhint("Give every column of the query its own name."));
					attno = a;
				}
			if (attno < 0)
				ereport(ERROR,
						errcode(ERRCODE_UNDEFINED_COLUMN),
						errmsg("the query has no column \"%s\" for field \"%s\" of %s",
							   field->name, field->name, what),
						errhint("Name the query's columns as the fields of the schema."));
		}
		attr = TupleDescAttr(desc, attno);
		if (!lp_type_parse(field->logical_type, what, field->name,
						   &batch->types[batch->num_columns], &err))
			lp_raise(&err);
		plan->attno = attno;
		plan->nullable = field->nullable;
		plan->input_typid = input_type_for(batch->types[batch->num_columns], attr->atttypid);
		if (!OidIsValid(plan->input_typid))
			ereport(ERROR,
					errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					errmsg("field \"%s\" of %s has Lance type \"%s\", which cannot be written yet",
						   field->name, what, field->logical_type),
					errdetail("The encoder writes flat columns; lists, structs, dictionaries and half floats are not supported yet."));
		plan_cast(plan, attr->atttypid, NameStr(attr->attname), field);
		builder_init(&plan->builder, batch->types[batch->num_columns], field->name);
		plan->builder.input_typid = plan->input_typid;
		batch->num_columns++;
	}
	for (int a = 0; a < desc->natts; a++)
		{
			bool		used = TupleDescAttr(desc, a)->attisdropped;

			for (int c = 0; c < batch->num_columns && !used; c++)
				used = batch->columns[c].attno == a;
			if (!used)
				ereport(ERROR,
						errcode(ERRCODE_UNDEFINED_COLUMN),
						errmsg("column \"%s\" of the query is not a field of %s",
							   NameStr(TupleDescAttr(desc, a)->attname), what),
						errhint("Select exactly the fields of the schema."));
		}
	return batch;
}

/* ---- building arrays ------------------------------------------------------------ */

static void *
buffer_reserve(ByteBuffer *buffer, uint64 bytes)
{
	if (buffer->len + bytes > buffer->capacity)
	{
		uint64		capacity = Max(buffer->capacity * 2, buffer->len + bytes);

		capacity = Max(capacity, 256);
		buffer->data = buffer->data == NULL ?
			MemoryContextAllocHuge(buffer->context, capacity) :
			repalloc_huge(buffer->data, capacity);
		buffer->capacity = capacity;
	}
	buffer->len += bytes;
	return buffer->data + buffer->len - bytes;
}

static void
buffer_append(ByteBuffer *buffer, const void *data, uint64 bytes)
{
	void	   *target = buffer_reserve(buffer, bytes);

	if (bytes > 0)
		memcpy(target, data, bytes);
}

static void
buffer_zero(ByteBuffer *buffer, uint64 bytes)
{
	void	   *target = buffer_reserve(buffer, bytes);

	if (bytes > 0)
		memset(target, 0, bytes);
}

/* Set bit index of a bitmap buffer that grows a byte at a time. */
static void
bitmap_append(ByteBuffer *bitmap, uint64 index, bool value)
{
	if ((index & 7) == 0)
		buffer_zero(bitmap, 1);
	if (value)
		lp_bit_set(bitmap->data, index, true);
}

static void value_out_of_range(const FieldBuilder *builder, const char *value) pg_attribute_noreturn();

static void
value_out_of_range(const FieldBuilder *builder, const char *value)
{
	ereport(ERROR,
			errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
			errmsg("value %s of column \"%s\" is out of range for Lance type %s",
				   value, builder->column, lp_type_id_name(builder->type->id)));
}

static void
append_integer(FieldBuilder *builder, int64 value, int64 min, int64 max, uint32 width)
{
	uint8		bytes[8];

	if (value < min || value > max)
		value_out_of_range(builder, psprintf(INT64_FORMAT, value));
	for (uint32 i = 0; i < width; i++)
		bytes[i] = (uint8) (((uint64) value) >> (8 * i));
	buffer_append(&builder->values, bytes, width);
}

/* The digits of a numeric rounded to scale places, without sign or point. */
static char *
numeric_digits(const FieldBuilder *builder, Numeric value, int32 scale, bool *negative)
{
	char	   *text;
	char	   *point;
	StringInfoData digits;
	int			fraction;

	if (numeric_is_nan(value) || numeric_is_inf(value))
		value_out_of_range(builder, DatumGetCString(DirectFunctionCall1(numeric_out,
																		NumericGetDatum(value))));
	text = DatumGetCString(DirectFunctionCall1(numeric_out,
											   DirectFunctionCall2(numeric_round,
																   NumericGetDatum(value),
																   Int32GetDatum(scale))));
	*negative = text[0] == '-';
	point = strchr(text, '.');
	initStringInfo(&digits);
	appendBinaryStringInfo(&digits, text + (*negative ? 1 : 0),
						   (point ? point - text : (int) strlen(text)) - (*negative ? 1 : 0));
	fraction = point ? (int) strlen(point + 1) : 0;
	if (point)
		appendBinaryStringInfo(&digits, point + 1, Min(fraction, scale));
	for (int i = fraction; i < scale; i++)
		appendStringInfoChar(&digits, '0');
	/* leading zeros are not digits of the precision */
	point = digits.data;
	while (point[0] == '0' && point[1] != '\0')
		point++;
	return point;
}

/*
 * A numeric as the little-endian two's complement integer value * 10^scale
 * of width bytes, with at most precision digits.
 */
static void
append_decimal(FieldBuilder *builder, Numeric value, int32 precision, int32 scale, uint32 width)
{
	uint32		limbs[8] = {0};
	bool		negative;
	char	   *digits;
	uint8	   *out;

	if (scale < 0)
		ereport(ERROR,
				errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				errmsg("column \"%s\" has a Lance decimal type with a negative scale, which cannot be written",
					   builder->column));
	digits = numeric_digits(builder, value, scale, &negative);
	if ((int32) strlen(digits) > precision)
		value_out_of_range(builder, DatumGetCString(DirectFunctionCall1(numeric_out,
																		NumericGetDatum(value))));
	for (const char *p = digits; *p != '\0'; p++)
	{
		uint64		carry = (uint64) (*p - '0');

		for (int i = 0; i < 8; i++)
		{
			uint64		product = (uint64) limbs[i] * 10 + carry;

			limbs[i] = (uint32) product;
			carry = product >> 32;
		}
	}
	if (negative)
	{
		uint64		carry = 1;

		for (int i = 0; i < 8; i++)
		{
			uint64		sum = (uint64) (uint32) ~limbs[i] + carry;

			limbs[i] = (uint32) sum;
			carry = sum >> 32;
		}
	}
	out = buffer_reserve(&builder->values, width);
	for (uint32 i = 0; i < width; i++)
		out[i] = (uint8) (limbs[i / 4] >> (8 * (i % 4)));
}

/* A numeric as an unsigned 64-bit integer. */
static void
append_uint64(FieldBuilder *builder, Numeric value)
{
	bool		negative;
	char	   *digits = numeric_digits(builder, value, 0, &negative);
	uint64		result = 0;

	if (negative && strcmp(digits, "0") != 0)
		value_out_of_range(builder, psprintf("-%s", digits));
	for (const char *p = digits; *p != '\0'; p++)
		if (pg_mul_u64_overflow(result, 10, &result) ||
			pg_add_u64_overflow(result, (uint64) (*p - '0'), &result))
			value_out_of_range(builder, digits);
	buffer_append(&builder->values, &result, 8);
}

/* Microseconds in a time unit, exactly. */
static int64
from_micros(const FieldBuilder *builder, int64 micros, LpTimeUnit unit)
{
	int64		result;

	switch (unit)
	{
		case LP_UNIT_SECOND:
			if (micros % USECS_PER_SEC != 0)
				break;
			return micros / USECS_PER_SEC;
		case LP_UNIT_MILLI:
			if (micros % 1000 != 0)
				break;
			return micros / 1000;
		case LP_UNIT_MICRO:
			return micros;
		case LP_UNIT_NANO:
			if (pg_mul_s64_overflow(micros, INT64CONST(1000), &result))
				value_out_of_range(builder, psprintf(INT64_FORMAT " us", micros));
			return result;
	}
	ereport(ERROR,
			errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
			errmsg("value " INT64_FORMAT " us of column \"%s\" has digits below the unit of its Lance type",
				   micros, builder->column));
	pg_unreachable();
}

/* The end offset of the row just added (after the leading 0 of the first). */
static void
append_end_offset(FieldBuilder *builder)
{
	static const uint64 zero_offset = 0;

	if (builder->offsets.len == 0)
		buffer_append(&builder->offsets, &zero_offset, sizeof(uint64));
	buffer_append(&builder->offsets, &builder->data.len, sizeof(uint64));
}

/* A valid zero item, under a null fixed-size list. */
static void
append_zero(FieldBuilder *builder)
{
	bitmap_append(&builder->validity, builder->array.length, true);
	if (builder->type->id == LP_TYPE_BOOL)
		bitmap_append(&builder->values, builder->array.length, false);
	else
		buffer_zero(&builder->values, lp_type_byte_width(builder->type));
	builder->array.length++;
}

static void
append_null(FieldBuilder *builder)
{
	const LpType *type = builder->type;
	uint64		row = builder->array.length;

	bitmap_append(&builder->validity, row, false);
	builder->array.null_count++;
	builder->array.length++;
	if (type->id == LP_TYPE_BOOL)
		bitmap_append(&builder->values, row, false);
	else if (lp_type_is_variable_width(type))
		append_end_offset(builder);
	else if (type->id == LP_TYPE_FIXED_SIZE_LIST)
		for (int32 i = 0; i < type->fixed_size; i++)
			append_zero(builder->items);
	else
		buffer_zero(&builder->values, lp_type_byte_width(type));
}

/* Append a value of the field's input type. */
static void
append_value(FieldBuilder *builder, Datum value)
{
	const LpType *type = builder->type;
	uint64		row = builder->array.length;

	bitmap_append(&builder->validity, row, true);
	builder->array.length++;
	switch (type->id)
	{
		case LP_TYPE_BOOL:
			bitmap_append(&builder->values, row, DatumGetBool(value));
			break;
		case LP_TYPE_INT8:
			append_integer(builder, DatumGetInt16(value), PG_INT8_MIN, PG_INT8_MAX, 1);
			break;
		case LP_TYPE_UINT8:
			append_integer(builder, DatumGetInt16(value), 0, PG_UINT8_MAX, 1);
			break;
		case LP_TYPE_INT16:
			append_integer(builder, DatumGetInt16(value), PG_INT16_MIN, PG_INT16_MAX, 2);
			break;
		case LP_TYPE_INT32:
			append_integer(builder, DatumGetInt32(value), PG_INT32_MIN, PG_INT32_MAX, 4);
			break;
		case LP_TYPE_UINT16:
			append_integer(builder, DatumGetInt32(value), 0, PG_UINT16_MAX, 2);
			break;
		case LP_TYPE_INT64:
			append_integer(builder, DatumGetInt64(value), PG_INT64_MIN, PG_INT64_MAX, 8);
			break;
		case LP_TYPE_UINT32:
			append_integer(builder, DatumGetInt64(value), 0, PG_UINT32_MAX, 4);
			break;
		case LP_TYPE_UINT64:
			append_uint64(builder, DatumGetNumeric(value));
			break;
		case LP_TYPE_FLOAT:
			{
				float4		f = DatumGetFloat4(value);

				buffer_append(&builder->values, &f, 4);
				break;
			}
		case LP_TYPE_DOUBLE:
			{
				float8		d = DatumGetFloat8(value);

				buffer_append(&builder->values, &d, 8);
				break;
			}
		case LP_TYPE_DECIMAL128:
		case LP_TYPE_DECIMAL256:
			append_decimal(builder, DatumGetNumeric(value), type->precision, type->scale,
						   type->id == LP_TYPE_DECIMAL128 ? 16 : 32);
			break;
		case LP_TYPE_DATE32:
		case LP_TYPE_DATE64:
			{
				DateADT		date = DatumGetDateADT(value);
				int64		days;

				if (DATE_NOT_FINITE(date))
					value_out_of_range(builder, "infinity");
				days = (int64) date + EPOCH_DIFF_DAYS;
				if (type->id == LP_TYPE_DATE32)
					append_integer(builder, days, PG_INT32_MIN, PG_INT32_MAX, 4);
				else
					append_integer(builder, days * MSECS_PER_DAY, PG_INT64_MIN, PG_INT64_MAX, 8);
				break;
			}
		case LP_TYPE_TIME32:
		case LP_TYPE_TIME64:
			append_integer(builder, from_micros(builder, DatumGetTimeADT(value), type->unit),
						   type->id == LP_TYPE_TIME32 ? PG_INT32_MIN : PG_INT64_MIN,
						   type->id == LP_TYPE_TIME32 ? PG_INT32_MAX : PG_INT64_MAX,
						   type->id == LP_TYPE_TIME32 ? 4 : 8);
			break;
		case LP_TYPE_TIMESTAMP:
			{
				Timestamp	timestamp = DatumGetTimestamp(value);
				int64		micros;

				if (TIMESTAMP_NOT_FINITE(timestamp) ||
					pg_add_s64_overflow(timestamp, EPOCH_DIFF_USECS, &micros))
					value_out_of_range(builder, "infinity");
				append_integer(builder, from_micros(builder, micros, type->unit),
							   PG_INT64_MIN, PG_INT64_MAX, 8);
				break;
			}
		case LP_TYPE_DURATION:
			{
				Interval   *interval = DatumGetIntervalP(value);
				int64		micros;

				if (interval->month != 0)
					ereport(ERROR,
							errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
							errmsg("interval value of column \"%s\" has months, which a Lance duration cannot hold",
								   builder->column),
							errhint("Use justify_days() in reverse or express the interval in days, e.g. interval '30 days'."));
				if (pg_mul_s64_overflow(interval->day, USECS_PER_DAY, &micros) ||
					pg_add_s64_overflow(micros, interval->time, &micros))
					value_out_of_range(builder, "(interval)");
				append_integer(builder, from_micros(builder, micros, type->unit),
							   PG_INT64_MIN, PG_INT64_MAX, 8);
				break;
			}
		case LP_TYPE_STRING:
		case LP_TYPE_LARGE_STRING:
		case LP_TYPE_BINARY:
		case LP_TYPE_LARGE_BINARY:
			{
				struct varlena *bytes = PG_DETOAST_DATUM_PACKED(value);

				buffer_append(&builder->data, VARDATA_ANY(bytes), VARSIZE_ANY_EXHDR(bytes));
				append_end_offset(builder);
				break;
			}
		case LP_TYPE_FIXED_SIZE_BINARY:
			{
				const void *bytes;
				uint64		len;

				if (builder->input_typid == UUIDOID)
				{
					bytes = DatumGetUUIDP(value)->data;
					len = UUID_LEN;
				}
				else
				{
					struct varlena *varlena = PG_DETOAST_DATUM_PACKED(value);

					bytes = VARDATA_ANY(varlena);
					len = VARSIZE_ANY_EXHDR(varlena);
				}
				if (len != (uint64) type->fixed_size)
					ereport(ERROR,
							errcode(ERRCODE_STRING_DATA_LENGTH_MISMATCH),
							errmsg("value of column \"%s\" has " UINT64_FORMAT " bytes, but its Lance type holds %d",
								   builder->column, len, type->fixed_size));
				buffer_append(&builder->values, bytes, len);
				break;
			}
		case LP_TYPE_FIXED_SIZE_LIST:
			{
				ArrayType  *array = DatumGetArrayTypeP(value);
				Datum	   *items;
				bool	   *nulls;
				int			count;

				if (ARR_ELEMTYPE(array) != builder->item_typid || ARR_NDIM(array) > 1)
					ereport(ERROR,
							errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
							errmsg("value of column \"%s\" is not a one-dimensional %s",
								   builder->column, format_type_be(get_array_type(builder->item_typid))));
				deconstruct_array(array, builder->item_typid, builder->item_len,
								  builder->item_byval, builder->item_align, &items, &nulls, &count);
				if (count != type->fixed_size)
					ereport(ERROR,
							errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
							errmsg("value of column \"%s\" has %d items, but its Lance type holds %d",
								   builder->column, count, type->fixed_size));
				for (int i = 0; i < count; i++)
				{
					if (nulls[i])
						append_null(builder->items);
					else
						append_value(builder->items, items[i]);
				}
				pfree(items);
				pfree(nulls);
				break;
			}
		default:
			elog(ERROR, "unexpected Lance type %s", lp_type_id_name(type->id));
	}
}

static Datum
cast_value(ColumnPlan *plan, Datum value)
{
	switch (plan->cast)
	{
		case CAST_NONE:
			return value;
		case CAST_FUNCTION:
			if (plan->cast_nargs >= 3)
				return FunctionCall3(&plan->cast_function, value, Int32GetDatum(-1),
									 BoolGetDatum(true));
			if (plan->cast_nargs == 2)
				return FunctionCall2(&plan->cast_function, value, Int32GetDatum(-1));
			return FunctionCall1(&plan->cast_function, value);
		case CAST_IO:
			return InputFunctionCall(&plan->io_input,
									 OutputFunctionCall(&plan->io_output, value),
									 plan->io_param, -1);
	}
	pg_unreachable();
}

/* Errors of casts and values say which column they are about. */
static void
column_error_context(void *arg)
{
	const ColumnPlan *plan = arg;

	errcontext("column \"%s\" of the query", plan->builder.column);
}

void
lp_row_batch_add(LpRowBatch *batch, const Datum *values, const bool *isnull)
{
	ErrorContextCallback context;

	context.callback = column_error_context;
	context.previous = error_context_stack;
	error_context_stack = &context;
	for (int c = 0; c < batch->num_columns; c++)
	{
		ColumnPlan *plan = &batch->columns[c];

		context.arg = plan;

		if (isnull[plan->attno] && !plan->nullable)
			ereport(ERROR,
					errcode(ERRCODE_NOT_NULL_VIOLATION),
					errmsg("null value in column \"%s\", whose Lance field is not nullable",
						   plan->builder.column));
		if (isnull[plan->attno])
			append_null(&plan->builder);
		else
			append_value(&plan->builder, cast_value(plan, values[plan->attno]));
	}
	error_context_stack = context.previous;
	batch->rows++;
}

uint64
lp_row_batch_rows(const LpRowBatch *batch)
{
	return batch->rows;
}

static uint64
builder_bytes(const FieldBuilder *builder)
{
	return builder->values.len + builder->data.len + builder->offsets.len +
		(builder->items != NULL ? builder_bytes(builder->items) : 0);
}

uint64
lp_row_batch_bytes(const LpRowBatch *batch)
{
	uint64		bytes = 0;

	for (int c = 0; c < batch->num_columns; c++)
		bytes += builder_bytes(&batch->columns[c].builder);
	return bytes;
}

static void
builder_finish(FieldBuilder *builder)
{
	static const uint64 zero_offset = 0;
	LpArray    *array = &builder->array;

	array->validity = array->null_count > 0 ? builder->validity.data : NULL;
	if (lp_type_is_variable_width(builder->type))
	{
		if (builder->offsets.len == 0)
			buffer_append(&builder->offsets, &zero_offset, sizeof(uint64));
		array->offsets = (uint64_t *) builder->offsets.data;
		array->data = builder->data.data;
		array->data_len = builder->data.len;
	}
	else
		array->values = builder->values.data;
	if (builder->items != NULL)
		builder_finish(builder->items);
}

const LpArray *const *
lp_row_batch_arrays(LpRowBatch *batch, uint32 *num_arrays)
{
	for (int c = 0; c < batch->num_columns; c++)
	{
		builder_finish(&batch->columns[c].builder);
		batch->arrays[c] = &batch->columns[c].builder.array;
	}
	*num_arrays = (uint32) batch->num_columns;
	return batch->arrays;
}

static void
builder_reset(FieldBuilder *builder)
{
	builder->validity.len = 0;
	builder->values.len = 0;
	builder->offsets.len = 0;
	builder->data.len = 0;
	builder->array.length = 0;
	builder->array.null_count = 0;
	if (builder->items != NULL)
		builder_reset(builder->items);
}

void
lp_row_batch_reset(LpRowBatch *batch)
{
	for (int c = 0; c < batch->num_columns; c++)
		builder_reset(&batch->columns[c].builder);
	batch->rows = 0;
}
