/*
 * lp_write_values.c - PostgreSQL rows as Lance values (see lp_write_values.h).
 *
 * The mapping of PostgreSQL types to Lance types is lance_schema_type; the
 * way back (which PostgreSQL type a Lance type is read as) is lance_fdw's
 * lp_fdw_mapped_type, which also gives every field its input type here, so
 * a value written and read back comes out as the value that went in.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "common/int.h"
#include "fmgr.h"
#include "miscadmin.h"
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

#include "base/lp_bytes.h"
#include "fdw/lp_fdw.h"
#include "format/lp_columns.h"
#include "base/lp_pg_error.h"
#include "base/lp_pg_types.h"
#include "write/lp_write_blobs.h"
#include "write/lp_write_values.h"

/* A growable byte buffer of a builder. */
typedef struct ByteBuffer
{
	MemoryContext context;		/* the batch's, not the row's */
	uint8	   *data;
	uint64		len;
	uint64		capacity;
} ByteBuffer;

/* How a value becomes a value of the field's input type. */
typedef enum CastKind
{
	CAST_NONE,					/* already the input type (or binary-compatible) */
	CAST_FUNCTION,				/* the cast's function */
	CAST_IO						/* output function, then the input type's input */
} CastKind;

typedef struct CastPlan
{
	CastKind	kind;
	FmgrInfo	function;
	int			nargs;
	FmgrInfo	io_output;
	FmgrInfo	io_input;
	Oid			io_param;
} CastPlan;

/*
 * The values of one field: a leaf, a fixed-size list or list (one child: the
 * items) or a struct (a child per member).
 */
typedef struct FieldBuilder
{
	const LpType *type;
	const char *column;			/* column or member ("c.m"), for messages */
	bool		nullable;		/* the field's */
	Oid			input_typid;	/* leaves: what values are cast to */
	CastPlan	cast;
	LpArray		array;
	ByteBuffer	validity;
	ByteBuffer	values;
	ByteBuffer	offsets;		/* uint64 each: variable width and lists */
	ByteBuffer	data;
	uint32		num_children;
	struct FieldBuilder *children;
	LpArray   **child_pointers;
	/* lists: the element type of the input array */
	Oid			element_typid;
	int16		element_len;
	bool		element_byval;
	char		element_align;
	bool		raw_items;		/* items_are_raw */
	bool		json_input;		/* values are jsonb: structs and lists as lance_fdw reads them */
	bool		vector_items;	/* fixed-size lists of floats read from pgvector's vector */
	/* structs: the composite type's descriptor, the attribute of each member */
	TupleDesc	member_desc;
	int		   *member_attnos;
	/* Blob v2 fields: the descriptor struct, from payloads (bytea) or descriptors (jsonb) */
	const LpField *blob_field;
	bool		blob_jsonb;
	LpBlobWriter *blobs;
} FieldBuilder;

typedef struct ColumnPlan
{
	int			attno;			/* 0-based column of the rows */
	FieldBuilder builder;
} ColumnPlan;

struct LpRowBatch
{
	int			num_columns;
	ColumnPlan *columns;
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
	ereport(ERROR,
			errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			errmsg("column \"%s\" has type %s, which has no Lance type", column, format_type_be(typid)),
			errhint("Cast the column to a type of the mapping (see the README), e.g. text."));
	pg_unreachable();
}

/* Room for one more field in schema (its fields array holds *capacity). */
static LpField *
new_field(LpSchema *schema, uint32 *capacity)
{
	if (schema->num_fields == *capacity)
	{
		*capacity *= 2;
		schema->fields = repalloc(schema->fields, sizeof(LpField) * *capacity);
	}
	memset(&schema->fields[schema->num_fields], 0, sizeof(LpField));
	return &schema->fields[schema->num_fields++];
}

/*
 * Add the field of a value of type typid/typmod named name under parent_id,
 * and its children: a composite type is a struct of its attributes, an
 * array a list of its elements (a list.struct for composite elements).
 */
static void
add_field(LpSchema *schema, uint32 *capacity, const char *name, Oid typid, int32 typmod,
		  int32 parent_id, const char *column, int depth)
{
	Oid			base = getBaseTypeAndTypmod(typid, &typmod);
	Oid			element = get_element_type(base);
	int32		id = (int32) schema->num_fields;
	LpField    *field;

	check_stack_depth();
	if (depth > 32)
		ereport(ERROR,
				errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				errmsg("column \"%s\" nests types too deeply", column));
	field = new_field(schema, capacity);
	field->id = id;
	field->parent_id = parent_id;
	field->name = pstrdup(name);
	field->nullable = true;
	field->extension_name = pstrdup("");
	if (OidIsValid(element) && !is_pgvector(base))
	{
		field->logical_type = pstrdup(type_is_rowtype(getBaseType(element)) ? "list.struct" : "list");
		add_field(schema, capacity, "item", element, typmod, id, column, depth + 1);
	}
	else if (type_is_rowtype(base))
	{
		TupleDesc	desc;

		if (base == RECORDOID && typmod < 0)
			ereport(ERROR,
					errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					errmsg("column \"%s\" is a row of an anonymous record type", column),
					errhint("Cast the row to a composite type, e.g. ROW(1, 2)::my_type, to write it as a struct."));
		desc = lookup_rowtype_tupdesc_copy(base, typmod);

		field->logical_type = pstrdup("struct");
		for (int i = 0; i < desc->natts; i++)
			if (!TupleDescAttr(desc, i)->attisdropped)
				add_field(schema, capacity, NameStr(TupleDescAttr(desc, i)->attname),
						  TupleDescAttr(desc, i)->atttypid, TupleDescAttr(desc, i)->atttypmod, id,
						  psprintf("%s.%s", column, NameStr(TupleDescAttr(desc, i)->attname)),
						  depth + 1);
	}
	else
	{
		field->logical_type = pstrdup(lance_schema_type(typid, typmod, column,
														&field->legacy_encoding));
	}
}

/*
 * A Blob v2 field named name, as lancedb declares one (lancedb.blob): a
 * struct of data (large_binary) and uri (string) with the extension
 * lance.blob.v2, Lance's default thresholds.
 */
static void
add_blob_field(LpSchema *schema, uint32 *capacity, const char *name)
{
	int32		id = (int32) schema->num_fields;
	LpField    *field = new_field(schema, capacity);

	field->id = id;
	field->parent_id = -1;
	field->name = pstrdup(name);
	field->logical_type = pstrdup("struct");
	field->nullable = true;
	field->extension_name = pstrdup(LP_BLOB_V2_EXTENSION);
	field->num_metadata = 1;
	field->metadata = palloc0(sizeof(LpKeyValue));
	field->metadata[0].key = pstrdup("ARROW:extension:name");
	field->metadata[0].value.data = (uint8 *) pstrdup(LP_BLOB_V2_EXTENSION);
	field->metadata[0].value.len = strlen(LP_BLOB_V2_EXTENSION);
	for (int c = 0; c < 2; c++)
	{
		/* field may move as the array grows */
		LpField    *child = new_field(schema, capacity);

		child->id = id + 1 + c;
		child->parent_id = id;
		child->name = pstrdup(c == 0 ? "data" : "uri");
		child->logical_type = pstrdup(c == 0 ? "large_binary" : "string");
		child->nullable = true;
		child->extension_name = pstrdup("");
		child->legacy_encoding = 2; /* VarBinary */
	}
}

void
lp_write_schema_for_columns(TupleDesc desc, const List *blob_columns, LpSchema *schema)
{
	uint32		capacity = Max(desc->natts, 1) * 2 + 2 * list_length(blob_columns);
	uint32		top_level = 0;
	ListCell   *cell;

	memset(schema, 0, sizeof(*schema));
	schema->fields = palloc0(sizeof(LpField) * capacity);
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute attr = TupleDescAttr(desc, i);
		const char *name = NameStr(attr->attname);

		if (attr->attisdropped)
			continue;
		for (uint32 j = 0; j < schema->num_fields; j++)
			if (schema->fields[j].parent_id == -1 && strcmp(schema->fields[j].name, name) == 0)
				ereport(ERROR,
						errcode(ERRCODE_DUPLICATE_COLUMN),
						errmsg("the query has two columns named \"%s\"", name),
						errhint("Give every column of the query its own name."));
		if (list_member(blob_columns, makeString((char *) name)))
			add_blob_field(schema, &capacity, name);
		else
			add_field(schema, &capacity, name, attr->atttypid, attr->atttypmod, -1, name, 0);
		top_level++;
	}
	foreach(cell, blob_columns)
	{
		bool		found = false;

		for (uint32 j = 0; j < schema->num_fields && !found; j++)
			found = schema->fields[j].parent_id == -1 &&
				strcmp(schema->fields[j].name, strVal(lfirst(cell))) == 0;
		if (!found)
			ereport(ERROR,
					errcode(ERRCODE_UNDEFINED_COLUMN),
					errmsg("blob column \"%s\" is not a column of the query", strVal(lfirst(cell))),
					errhint("Name in blob_columns the query's bytea or jsonb columns to write as Blob v2 columns."));
	}
	if (top_level == 0)
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

/* How a value of source_typid becomes one of the builder's input type; ERROR if it cannot. */
static void
plan_cast(FieldBuilder *builder, Oid source_typid, const char *what)
{
	CastPlan   *plan = &builder->cast;
	Oid			funcid = InvalidOid;
	CoercionPathType path;

	if (getBaseType(source_typid) == builder->input_typid)
	{
		plan->kind = CAST_NONE;
		return;
	}
	path = find_coercion_pathway(builder->input_typid, source_typid, COERCION_EXPLICIT, &funcid);
	switch (path)
	{
		case COERCION_PATH_RELABELTYPE:
			plan->kind = CAST_NONE;
			return;
		case COERCION_PATH_FUNC:
			plan->kind = CAST_FUNCTION;
			fmgr_info(funcid, &plan->function);
			plan->nargs = get_func_nargs(funcid);
			return;
		case COERCION_PATH_COERCEVIAIO:
			{
				Oid			output;
				Oid			input;
				bool		varlena;

				plan->kind = CAST_IO;
				getTypeOutputInfo(source_typid, &output, &varlena);
				fmgr_info(output, &plan->io_output);
				getTypeInputInfo(builder->input_typid, &input, &plan->io_param);
				fmgr_info(input, &plan->io_input);
				return;
			}
		default:
			ereport(ERROR,
					errcode(ERRCODE_DATATYPE_MISMATCH),
					errmsg("column \"%s\" has type %s, which cannot be cast to %s for field \"%s\" (Lance type %s) of %s",
						   builder->column, format_type_be(source_typid),
						   format_type_be(builder->input_typid), builder->type->name,
						   lp_type_id_name(builder->type->id), what),
					errhint("Cast the column in the query."));
	}
}

static void plan_field(FieldBuilder *builder, const LpType *type, Oid source_typid,
					   int32 source_typmod, const char *column, const char *what, int depth);

static void
alloc_children(FieldBuilder *builder, uint32 n)
{
	builder->num_children = n;
	builder->children = palloc0(sizeof(FieldBuilder) * Max(n, 1));
	builder->child_pointers = palloc0(sizeof(LpArray *) * Max(n, 1));
	builder->array.num_children = n;
	builder->array.children = builder->child_pointers;
	for (uint32 i = 0; i < n; i++)
		builder->child_pointers[i] = &builder->children[i].array;
}

/*
 * Whether the items' builder stores an element of the array as its bytes
 * are (floats and integers of the same width, not cast), so that an array
 * without nulls is copied whole.
 */
static bool
items_are_raw(const FieldBuilder *builder)
{
#ifdef WORDS_BIGENDIAN
	return false;
#else
	const FieldBuilder *items = &builder->children[0];

	if (items->cast.kind != CAST_NONE || items->num_children > 0 || builder->element_len <= 0 ||
		(uint32) builder->element_len != lp_type_byte_width(items->type))
		return false;
	switch (items->type->id)
	{
		case LP_TYPE_FLOAT:
		case LP_TYPE_DOUBLE:
		case LP_TYPE_INT16:
		case LP_TYPE_INT32:
		case LP_TYPE_INT64:
			return true;
		default:
			return false;
	}
#endif
}

/*
 * Lists and fixed-size lists: the items from the elements of an array of
 * array_typid, whose typmod is its elements' (vector(n)[] has n).
 */
static void
plan_items(FieldBuilder *builder, const LpType *type, Oid array_typid, int32 array_typmod,
		   const char *what, int depth)
{
	Oid			element = get_element_type(getBaseTypeAndTypmod(array_typid, &array_typmod));

	if (!OidIsValid(element))
		ereport(ERROR,
				errcode(ERRCODE_DATATYPE_MISMATCH),
				errmsg("column \"%s\" has type %s, which is not an array for the list field of %s",
					   builder->column, format_type_be(array_typid), what),
				errhint("Give an array of the items' type."));
	builder->element_typid = element;
	get_typlenbyvalalign(element, &builder->element_len, &builder->element_byval,
						 &builder->element_align);
	alloc_children(builder, 1);
	plan_field(&builder->children[0], type->children[0], element, array_typmod, builder->column, what,
			   depth + 1);
	builder->raw_items = items_are_raw(builder);
}

/* Structs: each member from the attribute of its name of a composite source_typid. */
static void
plan_members(FieldBuilder *builder, const LpType *type, Oid source_typid, int32 source_typmod,
			 const char *what, int depth)
{
	Oid			base = getBaseTypeAndTypmod(source_typid, &source_typmod);
	TupleDesc	desc;

	if (!type_is_rowtype(base))
		ereport(ERROR,
				errcode(ERRCODE_DATATYPE_MISMATCH),
				errmsg("column \"%s\" has type %s, which is not a composite type for the struct field of %s",
					   builder->column, format_type_be(source_typid), what),
				errhint("Give a composite type (a row) with the struct's members."));
	desc = lookup_rowtype_tupdesc_copy(base, source_typmod);
	builder->member_desc = desc;
	builder->member_attnos = palloc(sizeof(int) * Max(type->num_children, 1));
	alloc_children(builder, type->num_children);
	for (uint32 i = 0; i < type->num_children; i++)
	{
		const char *name = type->children[i]->name;
		int			attno = -1;

		for (int a = 0; a < desc->natts && attno < 0; a++)
			if (!TupleDescAttr(desc, a)->attisdropped &&
				strcmp(NameStr(TupleDescAttr(desc, a)->attname), name) == 0)
				attno = a;
		if (attno < 0)
			ereport(ERROR,
					errcode(ERRCODE_UNDEFINED_COLUMN),
					errmsg("column \"%s\" has no member \"%s\" for the struct field of %s",
						   builder->column, name, what));
		builder->member_attnos[i] = attno;
		plan_field(&builder->children[i], type->children[i], TupleDescAttr(desc, attno)->atttypid,
				   TupleDescAttr(desc, attno)->atttypmod,
				   psprintf("%s.%s", builder->column, name), what, depth + 1);
	}
	for (int a = 0; a < desc->natts; a++)
	{
		bool		used = TupleDescAttr(desc, a)->attisdropped;

		for (uint32 i = 0; i < type->num_children && !used; i++)
			used = builder->member_attnos[i] == a;
		if (!used)
			ereport(ERROR,
					errcode(ERRCODE_UNDEFINED_COLUMN),
					errmsg("member \"%s\" of column \"%s\" is not a member of its struct field of %s",
						   NameStr(TupleDescAttr(desc, a)->attname), builder->column, what));
	}
}

/*
 * Set up the builder of a field of type (its buffers in the current memory
 * context) for values of source_typid.
 */
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
	builder->nullable = type->nullable;
	builder->array.type = type;
}

/*
 * A vector(n) column for a fixed-size list of another size: refused while
 * planning, before any row is read, as every value would be.
 */
static void
check_vector_dimension(const FieldBuilder *builder, const LpType *type, Oid source_typid,
					   int32 source_typmod, const char *what)
{
	Oid			base = getBaseTypeAndTypmod(source_typid, &source_typmod);

	if (is_pgvector(base) && source_typmod > 0 && source_typmod != type->fixed_size)
		ereport(ERROR,
				errcode(ERRCODE_DATATYPE_MISMATCH),
				errmsg("column \"%s\" has type %s, but field \"%s\" of %s is a fixed-size list of %d items",
					   builder->column, format_type_with_typemod(base, source_typmod), type->name, what,
					   type->fixed_size),
				errhint("Give a vector(%d) column.", type->fixed_size));
}

static bool
is_json_container(const LpType *type)
{
	return (type->id == LP_TYPE_STRUCT && !type->packed) ||
		((type->id == LP_TYPE_LIST || type->id == LP_TYPE_LARGE_LIST ||
		  type->id == LP_TYPE_FIXED_SIZE_LIST) && type->num_children == 1);
}

/* A Lance type no writer here produces. */
static void
refuse_unwritable_type(const LpType *type, const char *column, const char *what)
{
	ereport(ERROR,
			errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			errmsg("column \"%s\" is written to a field of %s of Lance type %s, which cannot be written yet",
				   column, what, lp_type_id_name(type->id)),
			errdetail("Half floats, dictionaries and packed structs are not supported yet."));
}

/*
 * A field whose values come as JSON, as lance_fdw reads structs and nested
 * lists: objects for structs (a key per member), arrays for lists, and for
 * every scalar the text of its mapped type (lp_fdw_types.c), which is cast
 * to the field's input type as text would be.
 */
static void
plan_json_field(FieldBuilder *builder, const LpType *type, const char *column, const char *what,
				int depth)
{
	check_stack_depth();
	builder_init(builder, type, column);
	builder->json_input = true;
	if (depth > 32)
		ereport(ERROR,
				errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				errmsg("column \"%s\" nests types too deeply", column));
	if (is_json_container(type))
	{
		alloc_children(builder, type->num_children);
		for (uint32 i = 0; i < type->num_children; i++)
			plan_json_field(&builder->children[i], type->children[i],
							type->id == LP_TYPE_STRUCT ?
							psprintf("%s.%s", column, type->children[i]->name) :
							psprintf("%s[]", column),
							what, depth + 1);
		return;
	}
	builder->input_typid = input_type_for(type, TEXTOID);
	if (!OidIsValid(builder->input_typid))
		refuse_unwritable_type(type, column, what);
	plan_cast(builder, TEXTOID, what);
}

static void
plan_field(FieldBuilder *builder, const LpType *type, Oid source_typid, int32 source_typmod,
		   const char *column, const char *what, int depth)
{
	check_stack_depth();
	if (getBaseType(source_typid) == JSONBOID && is_json_container(type))
	{
		plan_json_field(builder, type, column, what, depth);
		return;
	}
	builder_init(builder, type, column);
	if (depth > 32)
		ereport(ERROR,
				errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				errmsg("column \"%s\" nests types too deeply", column));
	switch (type->id)
	{
		case LP_TYPE_STRUCT:
			if (type->packed)
				break;
			plan_members(builder, type, source_typid, source_typmod, what, depth);
			return;
		case LP_TYPE_LIST:
		case LP_TYPE_LARGE_LIST:
			if (type->num_children != 1)
				break;
			plan_items(builder, type, source_typid, source_typmod, what, depth);
			return;
		default:
			break;
	}
	builder->input_typid = input_type_for(type, source_typid);
	if (!OidIsValid(builder->input_typid))
		refuse_unwritable_type(type, column, what);
	if (type->id == LP_TYPE_FIXED_SIZE_LIST)
		check_vector_dimension(builder, type, source_typid, source_typmod, what);
	plan_cast(builder, source_typid, what);
	if (type->id == LP_TYPE_FIXED_SIZE_LIST)
	{
		plan_items(builder, type, builder->input_typid, -1, what, depth);
		/* its floats are copied as they are, not cast to real[] first */
		builder->vector_items = builder->raw_items && type->children[0]->id == LP_TYPE_FLOAT &&
			is_pgvector(getBaseType(source_typid));
		if (builder->vector_items)
			builder->cast.kind = CAST_NONE;
	}
}

/* The children of a Blob v2 descriptor, as the file writer takes them. */
static const char *const descriptor_types[5] = {"uint8", "uint64", "uint64", "uint32", "string"};
static const char *const descriptor_names[5] = {"kind", "position", "size", "blob_id", "blob_uri"};

/*
 * The builder of Blob v2 field field (nullable as the field is) from a
 * bytea column (payloads, stored by blobs) or a jsonb one (descriptors).
 */
static void
plan_blob(FieldBuilder *builder, const LpField *field, Oid source_typid, LpBlobWriter *blobs,
		  const char *what)
{
	LpType	   *type;
	LpError		err;

	if (blobs == NULL)
		ereport(ERROR,
				errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				errmsg("blob column \"%s\" of %s cannot be written", field->name, what),
				errdetail("write_dataset and write_part write Blob v2 columns."));
	if (source_typid != BYTEAOID && source_typid != JSONBOID)
		ereport(ERROR,
				errcode(ERRCODE_DATATYPE_MISMATCH),
				errmsg("column \"%s\" of type %s cannot be written to blob field \"%s\" of %s",
					   field->name, format_type_be(source_typid), field->name, what),
				errhint("Give the payloads as bytea, or descriptors as jsonb."));
	if (!lp_type_parse("struct", what, field->name, &type, &err))
		lp_raise(&err);
	type->nullable = field->nullable;
	type->num_children = 5;
	type->children = palloc0(5 * sizeof(LpType *));
	for (int c = 0; c < 5; c++)
		if (!lp_type_parse(descriptor_types[c], what, descriptor_names[c], &type->children[c], &err))
			lp_raise(&err);
	builder_init(builder, type, field->name);
	builder->blob_field = field;
	builder->blob_jsonb = source_typid == JSONBOID;
	builder->blobs = blobs;
	alloc_children(builder, 5);
	for (int c = 0; c < 5; c++)
		builder_init(&builder->children[c], type->children[c], field->name);
}

LpRowBatch *
lp_row_batch_create(TupleDesc desc, const LpSchema *schema, const char *what,
					LpBlobWriter *blobs)
{
	LpRowBatch *batch = palloc0(sizeof(LpRowBatch));
	LpFile		view;
	int			n = 0;

	for (uint32 i = 0; i < schema->num_fields; i++)
		if (schema->fields[i].parent_id == -1)
			n++;
	batch->columns = palloc0(sizeof(ColumnPlan) * Max(n, 1));
	batch->arrays = palloc0(sizeof(LpArray *) * Max(n, 1));
	/* the types of the fields with their children, read as those of a file's schema */
	memset(&view, 0, sizeof(view));
	view.name = (char *) what;
	view.schema = *schema;
	for (uint32 i = 0; i < schema->num_fields; i++)
	{
		const LpField *field = &schema->fields[i];
		ColumnPlan *plan = &batch->columns[batch->num_columns];
		int			attno = -1;
		LpType	   *type;
		LpError		err;

		if (field->parent_id != -1)
			continue;
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
		plan->attno = attno;
		batch->num_columns++;
		if (lp_field_is_blob(field) && strcmp(field->logical_type, "struct") == 0)
		{
			plan_blob(&plan->builder, field, TupleDescAttr(desc, attno)->atttypid, blobs, what);
			continue;
		}
		if (!lp_type_from_field(&view, i, &type, &err))
			lp_raise(&err);
		type->nullable = field->nullable;
		plan_field(&plan->builder, type, TupleDescAttr(desc, attno)->atttypid,
				   TupleDescAttr(desc, attno)->atttypmod, field->name, what, 0);
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

/* Set bits [index, index + count) of a bitmap buffer that holds index bits. */
static void
bitmap_append_valid(ByteBuffer *bitmap, uint64 index, uint64 count)
{
	uint64		end = index + count;
	uint64		bytes = (end + 7) / 8;

	if (bytes > bitmap->len)
		buffer_zero(bitmap, bytes - bitmap->len);
	for (; index < end && (index & 7) != 0; index++)
		lp_bit_set(bitmap->data, index, true);
	if (end - index >= 8)
	{
		memset(bitmap->data + index / 8, 0xff, (end - index) / 8);
		index += (end - index) / 8 * 8;
	}
	for (; index < end; index++)
		lp_bit_set(bitmap->data, index, true);
}

pg_noreturn static void value_out_of_range(const FieldBuilder *builder, const char *value);

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
	lp_put_le_bytes(bytes, width, (uint64) value);
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
	/* decimal widths (16, 32) are whole limbs */
	for (uint32 i = 0; i < width; i += 4)
		lp_put_le32(out + i, limbs[i / 4]);
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

/* The end offset of the list just added: its items so far (after the leading 0 of the first). */
static void
append_list_end(FieldBuilder *builder)
{
	static const uint64 zero_offset = 0;
	uint64		end = builder->children[0].array.length;

	if (builder->offsets.len == 0)
		buffer_append(&builder->offsets, &zero_offset, sizeof(uint64));
	buffer_append(&builder->offsets, &end, sizeof(uint64));
}

/* A null slot (also under a null parent, whatever the field's nullability). */
static void
append_null(FieldBuilder *builder)
{
	const LpType *type = builder->type;
	uint64		row = builder->array.length;

	bitmap_append(&builder->validity, row, false);
	builder->array.null_count++;
	builder->array.length++;
	switch (type->id)
	{
		case LP_TYPE_BOOL:
			bitmap_append(&builder->values, row, false);
			break;
		case LP_TYPE_STRUCT:
			for (uint32 i = 0; i < builder->num_children; i++)
				append_null(&builder->children[i]);
			break;
		case LP_TYPE_LIST:
		case LP_TYPE_LARGE_LIST:
			append_list_end(builder);
			break;
		case LP_TYPE_FIXED_SIZE_LIST:
			for (int32 i = 0; i < type->fixed_size; i++)
				append_zero(&builder->children[0]);
			break;
		default:
			if (lp_type_is_variable_width(type))
				append_end_offset(builder);
			else
				buffer_zero(&builder->values, lp_type_byte_width(type));
			break;
	}
}

static void append_datum(FieldBuilder *builder, Datum value, bool isnull);

/* count valid items of width bytes each, stored as their bytes are */
static void
append_raw_items(FieldBuilder *items, const void *data, int count, int width)
{
	bitmap_append_valid(&items->validity, items->array.length, count);
	buffer_append(&items->values, data, (uint64) count * width);
	items->array.length += count;
}

/*
 * The elements of a one-dimensional array as the items of a list or
 * fixed-size list; its number of items.  Arrays of raw items without nulls
 * are copied at once: deconstructing them and appending item by item was
 * most of the conversion of a row of a vector column.
 */
static int
append_array_items(FieldBuilder *builder, ArrayType *array)
{
	FieldBuilder *items = &builder->children[0];
	Datum	   *elements;
	bool	   *nulls;
	int			count;

	if (ARR_NDIM(array) > 1)
		ereport(ERROR,
				errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				errmsg("value of column \"%s\" is an array of %d dimensions, not a list",
					   builder->column, ARR_NDIM(array)));
	if (builder->raw_items && !ARR_HASNULL(array))
	{
		count = ArrayGetNItems(ARR_NDIM(array), ARR_DIMS(array));
		append_raw_items(items, ARR_DATA_PTR(array), count, builder->element_len);
		return count;
	}
	deconstruct_array(array, builder->element_typid, builder->element_len,
					  builder->element_byval, builder->element_align, &elements, &nulls, &count);
	for (int i = 0; i < count; i++)
		append_datum(items, elements[i], nulls[i]);
	pfree(elements);
	pfree(nulls);
	return count;
}

/*
 * The floats of a pgvector vector as the items of a fixed-size list; its
 * dimension, and nothing appended for another dimension than the list's.
 * pgvector's layout (src/vector.h; pg_upgrade keeps it): the varlena header,
 * int16 dim, int16 unused, float4 x[dim].
 */
static int
append_vector_items(FieldBuilder *builder, Datum value)
{
	FieldBuilder *items = &builder->children[0];
	struct varlena *vector = PG_DETOAST_DATUM_PACKED(value);
	const char *data = VARDATA_ANY(vector);
	int16		dim;

	if (VARSIZE_ANY_EXHDR(vector) < 2 * sizeof(int16))
		ereport(ERROR,
				errcode(ERRCODE_DATA_CORRUPTED),
				errmsg("value of column \"%s\" is a vector of %zu bytes, too short for its header",
					   builder->column, VARSIZE_ANY_EXHDR(vector)));
	/* the header may be a short one, so the fields are not aligned */
	memcpy(&dim, data, sizeof(dim));
	if (dim != builder->type->fixed_size)
		return dim;
	if (VARSIZE_ANY_EXHDR(vector) != 2 * sizeof(int16) + (size_t) dim * sizeof(float4))
		ereport(ERROR,
				errcode(ERRCODE_DATA_CORRUPTED),
				errmsg("value of column \"%s\" is a vector of %zu bytes, not of %d dimensions",
					   builder->column, VARSIZE_ANY_EXHDR(vector), dim));
	append_raw_items(items, data + 2 * sizeof(int16), dim, sizeof(float4));
	return dim;
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
		case LP_TYPE_UINT8:
		case LP_TYPE_INT16:
		case LP_TYPE_INT32:
		case LP_TYPE_UINT16:
		case LP_TYPE_INT64:
		case LP_TYPE_UINT32:
			{
				const LpPgInteger *mapping = lp_pg_integer(type->id);

				append_integer(builder, lp_pg_integer_of_datum(mapping, value),
							   mapping->min, mapping->max, mapping->width);
			}
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
				int			count = builder->vector_items ? append_vector_items(builder, value) :
					append_array_items(builder, DatumGetArrayTypeP(value));

				if (count != type->fixed_size)
					ereport(ERROR,
							errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
							errmsg("value of column \"%s\" has %d items, but its Lance type holds %d",
								   builder->column, count, type->fixed_size));
				break;
			}
		default:
			elog(ERROR, "unexpected Lance type %s", lp_type_id_name(type->id));
	}
}

/* A struct's members from a composite value. */
static void
append_members(FieldBuilder *builder, Datum value)
{
	HeapTupleHeader header = DatumGetHeapTupleHeader(value);
	HeapTupleData tuple;
	int			natts = builder->member_desc->natts;
	Datum	   *values = palloc(sizeof(Datum) * Max(natts, 1));
	bool	   *nulls = palloc(sizeof(bool) * Max(natts, 1));

	tuple.t_len = HeapTupleHeaderGetDatumLength(header);
	ItemPointerSetInvalid(&tuple.t_self);
	tuple.t_tableOid = InvalidOid;
	tuple.t_data = header;
	heap_deform_tuple(&tuple, builder->member_desc, values, nulls);
	for (uint32 i = 0; i < builder->num_children; i++)
		append_datum(&builder->children[i], values[builder->member_attnos[i]],
					 nulls[builder->member_attnos[i]]);
	pfree(values);
	pfree(nulls);
}

static Datum
cast_value(const CastPlan *plan, Datum value)
{
	switch (plan->kind)
	{
		case CAST_NONE:
			return value;
		case CAST_FUNCTION:
			if (plan->nargs >= 3)
				return FunctionCall3(unconstify(FmgrInfo *, &plan->function), value,
									 Int32GetDatum(-1), BoolGetDatum(true));
			if (plan->nargs == 2)
				return FunctionCall2(unconstify(FmgrInfo *, &plan->function), value,
									 Int32GetDatum(-1));
			return FunctionCall1(unconstify(FmgrInfo *, &plan->function), value);
		case CAST_IO:
			return InputFunctionCall(unconstify(FmgrInfo *, &plan->io_input),
									 OutputFunctionCall(unconstify(FmgrInfo *, &plan->io_output), value),
									 plan->io_param, -1);
	}
	pg_unreachable();
}

/* Append a value of the source type of the builder, or a null. */
/* One valid value of a child of a descriptor: raw bytes, or the blob_uri's text. */
static void
append_descriptor_child(FieldBuilder *child, const void *value, uint32 width)
{
	bitmap_append(&child->validity, child->array.length, true);
	child->array.length++;
	if (width > 0)
		buffer_append(&child->values, value, width);
	else
	{
		buffer_append(&child->data, value, strlen(value));
		append_end_offset(child);
	}
}

/*
 * A Blob v2 value: a payload handed to the blob writer (which stores it and
 * says where), or a descriptor it checks.
 */
static void
append_blob(FieldBuilder *builder, Datum value)
{
	LpBlobDescriptor descriptor;

	if (builder->blob_jsonb)
	{
		lp_blob_descriptor_from_jsonb(DatumGetJsonbP(value), builder->column, &descriptor);
		lp_blob_writer_check(builder->blobs, builder->blob_field, &descriptor);
	}
	else
	{
		bytea	   *payload = DatumGetByteaPP(value);

		lp_blob_writer_store(builder->blobs, builder->blob_field, (const uint8 *) VARDATA_ANY(payload),
							 VARSIZE_ANY_EXHDR(payload), &descriptor);
	}
	bitmap_append(&builder->validity, builder->array.length, true);
	builder->array.length++;
	append_descriptor_child(&builder->children[0], &descriptor.kind, 1);
	append_descriptor_child(&builder->children[1], &descriptor.position, 8);
	append_descriptor_child(&builder->children[2], &descriptor.size, 8);
	append_descriptor_child(&builder->children[3], &descriptor.blob_id, 4);
	append_descriptor_child(&builder->children[4], descriptor.uri, 0);
}

static void append_null_checked(FieldBuilder *builder);

/* The JSON container of v, which must be an object or an array (what names it). */
static JsonbContainer *
json_container(const FieldBuilder *builder, const JsonbValue *v, bool object)
{
	if (v->type != jbvBinary ||
		(object ? !JsonContainerIsObject(v->val.binary.data) : !JsonContainerIsArray(v->val.binary.data)))
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("value of column \"%s\" is not a JSON %s", builder->column,
					   object ? "object" : "array"),
				errdetail("Its Lance field is a %s.", object ? "struct" : "list"));
	return v->val.binary.data;
}

/* A JSON value (NULL: a missing key) of a field planned by plan_json_field. */
static void
append_json(FieldBuilder *builder, const JsonbValue *v)
{
	const LpType *type = builder->type;
	JsonbContainer *container;
	char	   *text;

	check_stack_depth();
	if (v == NULL || v->type == jbvNull)
	{
		append_null_checked(builder);
		return;
	}
	switch (type->id)
	{
		case LP_TYPE_STRUCT:
			if (is_json_container(type))
			{
				uint32		found = 0;

				container = json_container(builder, v, true);
				bitmap_append(&builder->validity, builder->array.length, true);
				builder->array.length++;
				for (uint32 i = 0; i < builder->num_children; i++)
				{
					const char *name = type->children[i]->name;
					JsonbValue	member;
					bool		present = getKeyJsonValueFromContainer(container, name, strlen(name),
																	   &member) != NULL;

					found += present;
					append_json(&builder->children[i], present ? &member : NULL);
				}
				if (found != JsonContainerSize(container))
					ereport(ERROR,
							errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							errmsg("value of column \"%s\" has a key that is not a member of its struct field",
								   builder->column));
				return;
			}
			break;
		case LP_TYPE_LIST:
		case LP_TYPE_LARGE_LIST:
		case LP_TYPE_FIXED_SIZE_LIST:
			if (is_json_container(type))
			{
				uint32		count;

				container = json_container(builder, v, false);
				count = JsonContainerSize(container);
				if (type->id == LP_TYPE_FIXED_SIZE_LIST && count != (uint32) type->fixed_size)
					ereport(ERROR,
							errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
							errmsg("value of column \"%s\" has %u items, but its Lance type holds %d",
								   builder->column, count, type->fixed_size));
				bitmap_append(&builder->validity, builder->array.length, true);
				builder->array.length++;
				for (uint32 i = 0; i < count; i++)
				{
					JsonbValue *item = getIthJsonbValueFromContainer(container, i);

					append_json(&builder->children[0], item);
					pfree(item);
				}
				if (type->id != LP_TYPE_FIXED_SIZE_LIST)
					append_list_end(builder);
				return;
			}
			break;
		default:
			break;
	}
	switch (v->type)
	{
		case jbvString:
			text = pnstrdup(v->val.string.val, v->val.string.len);
			break;
		case jbvNumeric:
			text = DatumGetCString(DirectFunctionCall1(numeric_out, NumericGetDatum(v->val.numeric)));
			break;
		case jbvBool:
			text = v->val.boolean ? "true" : "false";
			break;
		default:
			ereport(ERROR,
					errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					errmsg("value of column \"%s\" is not a JSON scalar", builder->column),
					errdetail("Its Lance field is of type %s.", lp_type_id_name(type->id)));
	}
	append_value(builder, cast_value(&builder->cast, CStringGetTextDatum(text)));
}

/* A jsonb value of a field planned by plan_json_field. */
static void
append_jsonb(FieldBuilder *builder, Jsonb *jsonb)
{
	JsonbValue	v;

	if (JB_ROOT_IS_SCALAR(jsonb))
		(void) JsonbExtractScalar(&jsonb->root, &v);
	else
	{
		v.type = jbvBinary;
		v.val.binary.data = &jsonb->root;
		v.val.binary.len = VARSIZE(jsonb) - VARHDRSZ;
	}
	append_json(builder, &v);
}

/* A null, unless the field is not nullable. */
static void
append_null_checked(FieldBuilder *builder)
{
	if (!builder->nullable)
		ereport(ERROR,
				errcode(ERRCODE_NOT_NULL_VIOLATION),
				errmsg("null value in column \"%s\", whose Lance field is not nullable",
					   builder->column));
	append_null(builder);
}

static void
append_datum(FieldBuilder *builder, Datum value, bool isnull)
{
	if (isnull)
	{
		append_null_checked(builder);
		return;
	}
	if (builder->json_input)
	{
		append_jsonb(builder, DatumGetJsonbP(value));
		return;
	}
	if (builder->blob_field != NULL)
	{
		append_blob(builder, value);
		return;
	}
	switch (builder->type->id)
	{
		case LP_TYPE_STRUCT:
			bitmap_append(&builder->validity, builder->array.length, true);
			builder->array.length++;
			append_members(builder, value);
			break;
		case LP_TYPE_LIST:
		case LP_TYPE_LARGE_LIST:
			bitmap_append(&builder->validity, builder->array.length, true);
			builder->array.length++;
			append_array_items(builder, DatumGetArrayTypeP(value));
			append_list_end(builder);
			break;
		default:
			append_value(builder, cast_value(&builder->cast, value));
			break;
	}
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
		append_datum(&plan->builder, values[plan->attno], isnull[plan->attno]);
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
	uint64		bytes = builder->values.len + builder->data.len + builder->offsets.len;

	for (uint32 i = 0; i < builder->num_children; i++)
		bytes += builder_bytes(&builder->children[i]);
	return bytes;
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
	if (lp_type_is_variable_width(builder->type) || builder->type->id == LP_TYPE_LIST ||
		builder->type->id == LP_TYPE_LARGE_LIST)
	{
		if (builder->offsets.len == 0)
			buffer_append(&builder->offsets, &zero_offset, sizeof(uint64));
		array->offsets = (uint64_t *) builder->offsets.data;
		array->data = builder->data.data;
		array->data_len = builder->data.len;
	}
	else
		array->values = builder->values.data;
	for (uint32 i = 0; i < builder->num_children; i++)
		builder_finish(&builder->children[i]);
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
	for (uint32 i = 0; i < builder->num_children; i++)
		builder_reset(&builder->children[i]);
}

void
lp_row_batch_reset(LpRowBatch *batch)
{
	for (int c = 0; c < batch->num_columns; c++)
		builder_reset(&batch->columns[c].builder);
	batch->rows = 0;
}
