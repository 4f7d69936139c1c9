/*
 * lp_values.c - data types from Lance logical type strings, and the
 * lifetime of decoded arrays.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/lp_alloc.h"
#include "format/lp_values.h"

/* Deepest nesting of fixed_size_list / dict type strings accepted. */
#define MAX_TYPE_STRING_DEPTH 16

typedef struct SimpleTypeName
{
	const char *text;
	LpTypeId	id;
} SimpleTypeName;

static const SimpleTypeName simple_types[] = {
	{"null", LP_TYPE_NULL},
	{"bool", LP_TYPE_BOOL},
	{"int8", LP_TYPE_INT8},
	{"int16", LP_TYPE_INT16},
	{"int32", LP_TYPE_INT32},
	{"int64", LP_TYPE_INT64},
	{"uint8", LP_TYPE_UINT8},
	{"uint16", LP_TYPE_UINT16},
	{"uint32", LP_TYPE_UINT32},
	{"uint64", LP_TYPE_UINT64},
	{"halffloat", LP_TYPE_HALF_FLOAT},
	{"float", LP_TYPE_FLOAT},
	{"double", LP_TYPE_DOUBLE},
	{"date32:day", LP_TYPE_DATE32},
	{"date64:ms", LP_TYPE_DATE64},
	{"string", LP_TYPE_STRING},
	{"large_string", LP_TYPE_LARGE_STRING},
	{"binary", LP_TYPE_BINARY},
	{"large_binary", LP_TYPE_LARGE_BINARY},
	{"json", LP_TYPE_LARGE_BINARY},
	{"struct", LP_TYPE_STRUCT},
	{"list", LP_TYPE_LIST},
	{"large_list", LP_TYPE_LARGE_LIST},
	{"list.struct", LP_TYPE_LIST},
	{"large_list.struct", LP_TYPE_LARGE_LIST},
};

const char *
lp_type_id_name(LpTypeId id)
{
	static const char *const names[] = {
		"null", "bool", "int8", "int16", "int32", "int64", "uint8", "uint16",
		"uint32", "uint64", "halffloat", "float", "double", "decimal128",
		"decimal256", "date32", "date64", "time32", "time64", "timestamp",
		"duration", "string", "large_string", "binary", "large_binary",
		"fixed_size_binary", "fixed_size_list", "list", "large_list", "struct"
	};

	if ((size_t) id < sizeof(names) / sizeof(names[0]))
		return names[id];
	return "unknown";
}

uint32_t
lp_type_byte_width(const LpType *type)
{
	switch (type->id)
	{
		case LP_TYPE_INT8:
		case LP_TYPE_UINT8:
			return 1;
		case LP_TYPE_INT16:
		case LP_TYPE_UINT16:
		case LP_TYPE_HALF_FLOAT:
			return 2;
		case LP_TYPE_INT32:
		case LP_TYPE_UINT32:
		case LP_TYPE_FLOAT:
		case LP_TYPE_DATE32:
		case LP_TYPE_TIME32:
			return 4;
		case LP_TYPE_INT64:
		case LP_TYPE_UINT64:
		case LP_TYPE_DOUBLE:
		case LP_TYPE_DATE64:
		case LP_TYPE_TIME64:
		case LP_TYPE_TIMESTAMP:
		case LP_TYPE_DURATION:
			return 8;
		case LP_TYPE_DECIMAL128:
			return 16;
		case LP_TYPE_DECIMAL256:
			return 32;
		case LP_TYPE_FIXED_SIZE_BINARY:
			return (uint32_t) type->fixed_size;
		default:
			return 0;
	}
}

bool
lp_type_is_variable_width(const LpType *type)
{
	return type->id == LP_TYPE_STRING || type->id == LP_TYPE_LARGE_STRING ||
		type->id == LP_TYPE_BINARY || type->id == LP_TYPE_LARGE_BINARY;
}

void
lp_type_free(LpType *type)
{
	if (type == NULL)
		return;
	for (uint32_t i = 0; i < type->num_children; i++)
		lp_type_free(type->children[i]);
	lp_free(type->children);
	lp_free(type->name);
	lp_free(type->timezone);
	lp_free(type);
}

static bool
bad_type(const char *logical_type, const char *file_name,
		 const char *field_name, LpError *err)
{
	lp_fail(err, LP_ERR_UNSUPPORTED,
			"field \"%s\" of file \"%s\" has a logical type this reader does not know",
			field_name, file_name);
	lp_error_detail(err, "The logical type is \"%.200s\".", logical_type);
	return false;
}

static bool
no_memory(LpError *err)
{
	return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory while decoding a Lance file");
}

/* Parse a decimal count 1..2^31-1 spanning all of text[0, len). */
static bool
parse_count(const char *text, size_t len, int32_t *out)
{
	int64_t		value = 0;

	if (len == 0 || len > 10)
		return false;
	for (size_t i = 0; i < len; i++)
	{
		if (text[i] < '0' || text[i] > '9')
			return false;
		value = value * 10 + (text[i] - '0');
	}
	if (value > INT32_MAX)
		return false;
	*out = (int32_t) value;
	return true;
}

static bool
parse_unit(const char *text, size_t len, LpTimeUnit *unit)
{
	if (len == 1 && text[0] == 's')
		*unit = LP_UNIT_SECOND;
	else if (len == 2 && memcmp(text, "ms", 2) == 0)
		*unit = LP_UNIT_MILLI;
	else if (len == 2 && memcmp(text, "us", 2) == 0)
		*unit = LP_UNIT_MICRO;
	else if (len == 2 && memcmp(text, "ns", 2) == 0)
		*unit = LP_UNIT_NANO;
	else
		return false;
	return true;
}

static bool parse_type_text(const char *text, size_t len, int depth,
							LpType *type, LpError *err, bool *known);

/* fixed_size_list:INNER:N, where INNER may itself contain colons */
static bool
parse_fixed_size_list(const char *body, size_t len, int depth, LpType *type,
					  LpError *err, bool *known)
{
	const char *colon = NULL;
	LpType	   *item;

	for (size_t i = len; i > 0; i--)
		if (body[i - 1] == ':')
		{
			colon = body + i - 1;
			break;
		}
	if (colon == NULL || !parse_count(colon + 1, len - (size_t) (colon + 1 - body),
									  &type->fixed_size) || type->fixed_size == 0)
		return true;
	item = lp_alloc0(sizeof(LpType));
	type->children = lp_alloc0(sizeof(LpType *));
	if (item == NULL || type->children == NULL)
	{
		lp_free(item);
		return no_memory(err);
	}
	type->children[0] = item;
	type->num_children = 1;
	item->field_id = -1;
	item->nullable = true;
	item->name = lp_strdup("item");
	if (item->name == NULL)
		return no_memory(err);
	type->id = LP_TYPE_FIXED_SIZE_LIST;
	return parse_type_text(body, (size_t) (colon - body), depth + 1, item, err, known);
}

/*
 * Fill type from text[0, len).  *known becomes false (and true is
 * returned) when the text is well-formed memory-wise but not a type this
 * reader knows; false is returned only for out-of-memory.
 */
static bool
parse_type_text(const char *text, size_t len, int depth, LpType *type,
				LpError *err, bool *known)
{
	*known = false;
	if (depth > MAX_TYPE_STRING_DEPTH)
		return true;
	for (size_t i = 0; i < sizeof(simple_types) / sizeof(simple_types[0]); i++)
		if (strlen(simple_types[i].text) == len &&
			memcmp(simple_types[i].text, text, len) == 0)
		{
			type->id = simple_types[i].id;
			*known = true;
			return true;
		}
	if (len > 8 && memcmp(text, "decimal:", 8) == 0)
	{
		const char *p = text + 8;
		const char *end = text + len;
		const char *c1 = memchr(p, ':', (size_t) (end - p));
		const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t) (end - c1 - 1)) : NULL;
		int32_t		bits;
		const char *scale_text;
		bool		negative;

		if (c2 == NULL || !parse_count(p, (size_t) (c1 - p), &bits) ||
			!parse_count(c1 + 1, (size_t) (c2 - c1 - 1), &type->precision))
			return true;
		scale_text = c2 + 1;
		negative = scale_text < end && *scale_text == '-';
		if (negative)
			scale_text++;
		if (!parse_count(scale_text, (size_t) (end - scale_text), &type->scale))
		{
			if (!(end - scale_text == 1 && *scale_text == '0'))
				return true;
			type->scale = 0;
		}
		if (negative)
			type->scale = -type->scale;
		if (bits == 128)
			type->id = LP_TYPE_DECIMAL128;
		else if (bits == 256)
			type->id = LP_TYPE_DECIMAL256;
		else
			return true;
		*known = true;
		return true;
	}
	if (len > 7 && (memcmp(text, "time32:", 7) == 0 || memcmp(text, "time64:", 7) == 0))
	{
		if (!parse_unit(text + 7, len - 7, &type->unit))
			return true;
		type->id = text[5] == '3' ? LP_TYPE_TIME32 : LP_TYPE_TIME64;
		*known = true;
		return true;
	}
	if (len > 9 && memcmp(text, "duration:", 9) == 0)
	{
		if (!parse_unit(text + 9, len - 9, &type->unit))
			return true;
		type->id = LP_TYPE_DURATION;
		*known = true;
		return true;
	}
	if (len > 10 && memcmp(text, "timestamp:", 10) == 0)
	{
		const char *p = text + 10;
		const char *colon = memchr(p, ':', len - 10);
		size_t		tz_len;

		if (colon == NULL || !parse_unit(p, (size_t) (colon - p), &type->unit))
			return true;
		tz_len = len - (size_t) (colon + 1 - text);
		if (tz_len == 0)
			return true;
		if (!(tz_len == 1 && colon[1] == '-'))
		{
			type->timezone = lp_alloc(tz_len + 1);
			if (type->timezone == NULL)
				return no_memory(err);
			memcpy(type->timezone, colon + 1, tz_len);
			type->timezone[tz_len] = '\0';
		}
		type->id = LP_TYPE_TIMESTAMP;
		*known = true;
		return true;
	}
	if (len > 18 && memcmp(text, "fixed_size_binary:", 18) == 0)
	{
		if (!parse_count(text + 18, len - 18, &type->fixed_size) || type->fixed_size == 0)
			return true;
		type->id = LP_TYPE_FIXED_SIZE_BINARY;
		*known = true;
		return true;
	}
	if (len > 16 && memcmp(text, "fixed_size_list:", 16) == 0)
		return parse_fixed_size_list(text + 16, len - 16, depth, type, err, known);
	if (len > 5 && memcmp(text, "dict:", 5) == 0)
	{
		/* dict:VALUE:KEY:ORDERED; VALUE may contain colons */
		size_t		end = len;
		int			colons = 0;

		while (end > 5 && colons < 2)
		{
			end--;
			if (text[end] == ':')
				colons++;
		}
		if (colons < 2 || end <= 5)
			return true;
		if (!parse_type_text(text + 5, end - 5, depth + 1, type, err, known))
			return false;
		type->dictionary = true;
		return true;
	}
	return true;
}

bool
lp_type_parse(const char *logical_type, const char *file_name,
			  const char *field_name, LpType **out, LpError *err)
{
	LpType	   *type = lp_alloc0(sizeof(LpType));
	bool		known;

	*out = NULL;
	if (type == NULL)
		return no_memory(err);
	type->field_id = -1;
	type->nullable = true;
	if (!parse_type_text(logical_type, strlen(logical_type), 0, type, err, &known))
	{
		lp_type_free(type);
		return false;
	}
	if (!known)
	{
		lp_type_free(type);
		return bad_type(logical_type, file_name, field_name, err);
	}
	*out = type;
	return true;
}

static bool
field_flag(const LpField *field, const char *key)
{
	for (uint32_t i = 0; i < field->num_metadata; i++)
		if (strcmp(field->metadata[i].key, key) == 0)
			return field->metadata[i].value.len == 4 &&
				memcmp(field->metadata[i].value.data, "true", 4) == 0;
	return false;
}

/* Pseudo-fields (id -1) that follow index: a blob v2 footer's descriptor fields. */
static uint32_t
count_pseudo_fields(const LpFile *file, uint32_t index)
{
	uint32_t	count = 0;

	for (uint32_t i = index + 1; i < file->schema.num_fields && file->schema.fields[i].id == -1; i++)
		count++;
	return count;
}

/* Build the type of field index and its descendants; *next = index after them. */
static bool
type_from_field(const LpFile *file, uint32_t index, int depth, LpType **out,
				uint32_t *next, LpError *err)
{
	const LpField *field = &file->schema.fields[index];
	LpType	   *type;
	uint32_t	child_count = 0;
	uint32_t	position;
	int32_t		pseudo_parent = field->id;

	*out = NULL;
	if (depth > MAX_TYPE_STRING_DEPTH * 4)
		return lp_fail(err, LP_ERR_CORRUPT,
					   "schema of file \"%s\" nests fields too deeply", file->name);
	if (!lp_type_parse(field->logical_type, file->name, field->name, &type, err))
		return false;
	type->field_id = field->id;
	type->nullable = field->nullable;
	type->packed = type->id == LP_TYPE_STRUCT &&
		(field_flag(field, "lance-encoding:packed") || field_flag(field, "packed") ||
		 field_flag(field, "lance-encoding:blob"));
	lp_free(type->name);
	type->name = lp_strdup(field->name);
	if (type->name == NULL)
	{
		lp_type_free(type);
		return no_memory(err);
	}

	/* Children are the following fields whose parent is this one. */
	position = index + 1;
	if (field->id >= 0)
		for (uint32_t i = index + 1; i < file->schema.num_fields; i++)
			if (file->schema.fields[i].parent_id == field->id)
				child_count++;

	if (type->id == LP_TYPE_LIST || type->id == LP_TYPE_LARGE_LIST)
	{
		if (child_count != 1)
		{
			lp_type_free(type);
			return lp_fail(err, LP_ERR_CORRUPT,
						   "list field \"%s\" of file \"%s\" has %u child fields instead of one",
						   field->name, file->name, child_count);
		}
	}
	else if (type->id == LP_TYPE_STRUCT && child_count == 0 && field->id >= 0 &&
			 field_flag(field, "lance-encoding:blob"))
	{
		/* blob v2 in a footer: the descriptor fields follow with id -1 */
		child_count = count_pseudo_fields(file, index);
		pseudo_parent = -1;
	}
	else if (type->id != LP_TYPE_STRUCT && child_count != 0)
	{
		lp_type_free(type);
		return lp_fail(err, LP_ERR_CORRUPT,
					   "field \"%s\" of file \"%s\" has type \"%s\" but child fields",
					   field->name, file->name, field->logical_type);
	}

	if (child_count > 0)
	{
		type->children = lp_alloc_array(child_count, sizeof(LpType *));
		if (type->children == NULL)
		{
			lp_type_free(type);
			return no_memory(err);
		}
		/* Pre-order: each child's subtree follows it directly. */
		while (type->num_children < child_count)
		{
			if (position >= file->schema.num_fields ||
				file->schema.fields[position].parent_id != pseudo_parent)
			{
				lp_type_free(type);
				return lp_fail(err, LP_ERR_CORRUPT,
							   "children of field \"%s\" of file \"%s\" are not in pre-order",
							   field->name, file->name);
			}
			if (!type_from_field(file, position, depth + 1,
								 &type->children[type->num_children], &position, err))
			{
				lp_type_free(type);
				return false;
			}
			type->num_children++;
		}
	}
	*next = position;
	*out = type;
	return true;
}

bool
lp_type_from_field(const LpFile *file, uint32_t field_index, LpType **out,
				   LpError *err)
{
	uint32_t	next;

	*out = NULL;
	if (field_index >= file->schema.num_fields)
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
					   "file \"%s\" has no field number %u", file->name, field_index);
	return type_from_field(file, field_index, 0, out, &next, err);
}

LpArray *
lp_array_new(const LpType *type)
{
	LpArray    *array = lp_alloc0(sizeof(LpArray));

	if (array)
		array->type = type;
	return array;
}

void
lp_array_free(LpArray *array)
{
	if (array == NULL)
		return;
	for (uint32_t i = 0; i < array->num_children; i++)
		lp_array_free(array->children[i]);
	lp_free(array->children);
	lp_free(array->validity);
	lp_free(array->values);
	lp_free(array->offsets);
	lp_free(array->data);
	lp_free(array);
}
