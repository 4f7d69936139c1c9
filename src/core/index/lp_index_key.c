/*
 * lp_index_key.c - keys and ranges of scalar index searches, compared with
 * an index's stored values (lp_index_key.h).
 */
#include <string.h>

#include "index/lp_index_key.h"

static bool
is_unsigned(LpTypeId type)
{
	return type == LP_TYPE_UINT8 || type == LP_TYPE_UINT16 ||
		type == LP_TYPE_UINT32 || type == LP_TYPE_UINT64;
}

bool
lp_index_value_type(const LpType *type, LpIndexValueType *out)
{
	out->id = type->id;
	out->width = lp_type_byte_width(type);
	switch (type->id)
	{
		case LP_TYPE_INT8:
		case LP_TYPE_INT16:
		case LP_TYPE_INT32:
		case LP_TYPE_INT64:
		case LP_TYPE_UINT8:
		case LP_TYPE_UINT16:
		case LP_TYPE_UINT32:
		case LP_TYPE_UINT64:
		case LP_TYPE_DATE32:
		case LP_TYPE_DATE64:
		case LP_TYPE_TIME32:
		case LP_TYPE_TIME64:
		case LP_TYPE_TIMESTAMP:
		case LP_TYPE_DURATION:
			out->kind = LP_INDEX_KEY_INTEGER;
			return true;
		case LP_TYPE_FLOAT:
		case LP_TYPE_DOUBLE:
			out->kind = LP_INDEX_KEY_FLOAT;
			return true;
		case LP_TYPE_STRING:
		case LP_TYPE_LARGE_STRING:
		case LP_TYPE_BINARY:
		case LP_TYPE_LARGE_BINARY:
			out->kind = LP_INDEX_KEY_BYTES;
			return true;
		default:
			return false;
	}
}

static int
compare_integer(const LpIndexValueType *type, const LpArray *array, uint64_t row, int64_t key)
{
	const uint8_t *p = array->values;

	if (is_unsigned(type->id))
	{
		uint64_t	value;

		switch (type->id)
		{
			case LP_TYPE_UINT8:
				value = p[row];
				break;
			case LP_TYPE_UINT16:
				value = ((const uint16_t *) p)[row];
				break;
			case LP_TYPE_UINT32:
				value = ((const uint32_t *) p)[row];
				break;
			default:
				value = ((const uint64_t *) p)[row];
				break;
		}
		if (key < 0)
			return 1;
		return value < (uint64_t) key ? -1 : value > (uint64_t) key;
	}
	else
	{
		int64_t		value;

		switch (type->width)
		{
			case 1:
				value = ((const int8_t *) p)[row];
				break;
			case 2:
				value = ((const int16_t *) p)[row];
				break;
			case 4:
				value = ((const int32_t *) p)[row];
				break;
			default:
				value = ((const int64_t *) p)[row];
				break;
		}
		return value < key ? -1 : value > key;
	}
}

/* PostgreSQL's order of floats: NaN above every number and equal to itself, -0 == 0. */
static int
compare_doubles(double a, double b)
{
	bool		a_nan = a != a;
	bool		b_nan = b != b;

	if (a_nan || b_nan)
		return a_nan - b_nan;
	return a < b ? -1 : a > b;
}

static double
float_value(const LpIndexValueType *type, const LpArray *array, uint64_t row)
{
	return type->id == LP_TYPE_FLOAT ? (double) ((const float *) array->values)[row]
		: ((const double *) array->values)[row];
}

/* Bytewise, a prefix before the longer string. */
static int
compare_byte_strings(const uint8_t *a, size_t a_len, const uint8_t *b, size_t b_len)
{
	size_t		common = a_len < b_len ? a_len : b_len;
	int			c = common == 0 ? 0 : memcmp(a, b, common);

	if (c != 0)
		return c < 0 ? -1 : 1;
	return a_len < b_len ? -1 : a_len > b_len;
}

static int
compare_bytes(const LpArray *array, uint64_t row, const uint8_t *key, size_t key_len)
{
	uint64_t	start = array->offsets[row];

	/* a page of empty strings may have no data buffer at all */
	return compare_byte_strings(array->data != NULL ? array->data + start : NULL,
								(size_t) (array->offsets[row + 1] - start), key, key_len);
}

int
lp_index_key_compare(const LpIndexKey *a, const LpIndexKey *b)
{
	switch (a->kind)
	{
		case LP_INDEX_KEY_INTEGER:
			return a->integer < b->integer ? -1 : a->integer > b->integer;
		case LP_INDEX_KEY_FLOAT:
			return compare_doubles(a->real, b->real);
		default:
			return compare_byte_strings(a->bytes, a->len, b->bytes, b->len);
	}
}

int
lp_index_value_compare(const LpIndexValueType *type, const LpArray *array, uint64_t row,
					   const LpIndexKey *key)
{
	switch (type->kind)
	{
		case LP_INDEX_KEY_INTEGER:
			return compare_integer(type, array, row, key->integer);
		case LP_INDEX_KEY_FLOAT:
			return compare_doubles(float_value(type, array, row), key->real);
		default:
			return compare_bytes(array, row, key->bytes, key->len);
	}
}

bool
lp_index_value_above(const LpIndexValueType *type, const LpArray *array, uint64_t row,
					 const LpIndexBound *lower)
{
	int			c;

	if (!lower->present)
		return true;
	c = lp_index_value_compare(type, array, row, &lower->key);
	return c > 0 || (c == 0 && lower->inclusive);
}

bool
lp_index_value_below(const LpIndexValueType *type, const LpArray *array, uint64_t row,
					 const LpIndexBound *upper)
{
	int			c;

	if (!upper->present)
		return true;
	c = lp_index_value_compare(type, array, row, &upper->key);
	return c < 0 || (c == 0 && upper->inclusive);
}

bool
lp_index_value_in_range(const LpIndexValueType *type, const LpArray *array, uint64_t row,
						const LpIndexRange *range)
{
	return lp_index_value_above(type, array, row, &range->lower) &&
		lp_index_value_below(type, array, row, &range->upper);
}

bool
lp_index_value_is_nan(const LpIndexValueType *type, const LpArray *array, uint64_t row)
{
	double		value = float_value(type, array, row);

	return value != value;
}

bool
lp_index_ranges_of_kind(const LpIndexRange *ranges, size_t n, LpIndexKeyKind kind)
{
	for (size_t r = 0; r < n; r++)
		if ((ranges[r].lower.present && ranges[r].lower.key.kind != kind) ||
			(ranges[r].upper.present && ranges[r].upper.key.kind != kind))
			return false;
	return true;
}

int64_t
lp_index_file_field(const LpFile *file, const char *name)
{
	for (uint32_t i = 0; i < file->schema.num_fields; i++)
		if (file->schema.fields[i].parent_id == -1 &&
			strcmp(file->schema.fields[i].name, name) == 0)
			return i;
	return -1;
}
