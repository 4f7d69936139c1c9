/*
 * fuzz_encode.c - libFuzzer target: encode → decode round trips.  The
 * input chooses the file version, up to four leaf columns (type, null
 * pattern, null items in fixed-size lists of 2.1+), whether they lie in a
 * struct, in a struct in a struct or in lists (those structs' and lists'
 * nulls and the lists' lengths from the input, struct nulls 2.1+; wide items make
 * full-zip pages with lists), the
 * row count, the batch size and, cycling through its remaining bytes,
 * every value, string length and null; the file the encoder writes must decode to exactly those
 * values, compared as the unit tests compare them
 * (test/core/lp_encode_round_trip.h).  Any refusal or difference is a crash.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lp_encode_round_trip.h"

#include "base/lp_alloc.h"
#include "format/lp_file.h"

#define MAX_COLUMNS 4
#define MAX_ROWS 6000
/* version, columns, rows (2), batch, nesting, struct nulls, a type and a null mode per column */
#define HEADER_BYTES (7 + 2 * MAX_COLUMNS)

static const char *const types[] = {
	"int8", "int16", "int32", "int64", "uint64", "float", "double", "bool",
	"string", "large_binary", "date32:day", "timestamp:us:-",
	"fixed_size_list:float:4", "fixed_size_list:float:80", "decimal:128:20:3"
};

#define N_TYPES (sizeof(types) / sizeof(types[0]))

/* The input's bytes after the header, cycled through. */
typedef struct Source
{
	const uint8_t *data;
	size_t		size;
	size_t		pos;
} Source;

static uint8_t
next_byte(Source *source)
{
	uint8_t		byte;

	if (source->size == 0)
		return 0;
	byte = source->data[source->pos % source->size];
	source->pos++;
	return byte;
}

/* The validity of rows rows by null_mode % 4: 0 none, 1 some nulls from the input, 2 all null, 3 all valid. */
static void
make_validity(LpArray *array, uint8_t null_mode, uint64_t rows, Source *source)
{
	if (null_mode % 4 == 0)
		return;
	array->validity = lp_alloc0(rows / 8 + 1);
	for (uint64_t i = 0; i < rows; i++)
	{
		bool		valid = null_mode % 4 == 3 || (null_mode % 4 == 1 && (next_byte(source) & 3) != 0);

		lp_bit_set(array->validity, i, valid);
		array->null_count += !valid;
	}
}

static LpArray *
make_array(const LpType *type, uint8_t null_mode, bool item_nulls, uint64_t rows, Source *source)
{
	LpArray    *array = lp_array_new(type);
	uint32_t	width = lp_type_byte_width(type);

	array->length = rows;
	make_validity(array, null_mode, rows, source);
	if (type->id == LP_TYPE_FIXED_SIZE_LIST)
	{
		LpArray    *items = lp_array_new(type->children[0]);
		uint64_t	bytes = rows * type->fixed_size * lp_type_byte_width(type->children[0]);

		items->length = rows * type->fixed_size;
		items->values = lp_alloc0(bytes + 1);
		for (uint64_t i = 0; i < bytes; i++)
			items->values[i] = next_byte(source);
		if (item_nulls)
		{
			items->validity = lp_alloc0(items->length / 8 + 1);
			for (uint64_t i = 0; i < items->length; i++)
				lp_bit_set(items->validity, i, (next_byte(source) & 7) != 0);
		}
		array->num_children = 1;
		array->children = lp_alloc(sizeof(LpArray *));
		array->children[0] = items;
	}
	else if (lp_type_is_variable_width(type))
	{
		array->offsets = lp_alloc((rows + 1) * sizeof(uint64_t));
		array->offsets[0] = 0;
		for (uint64_t i = 0; i < rows; i++)
		{
			uint8_t		len_byte = next_byte(source);
			uint64_t	len = len_byte < 200 ? len_byte % 32 : (uint64_t) len_byte * 3;

			array->offsets[i + 1] = array->offsets[i] + (lp_array_is_valid(array, i) ? len : 0);
		}
		array->data_len = array->offsets[rows];
		array->data = lp_alloc(array->data_len + 1);
		for (uint64_t i = 0; i < array->data_len; i++)
			array->data[i] = next_byte(source);
	}
	else
	{
		uint64_t	bytes = type->id == LP_TYPE_BOOL ? rows / 8 + 1 : rows * width;

		array->values = lp_alloc0(bytes + 1);
		for (uint64_t i = 0; i < bytes; i++)
			array->values[i] = next_byte(source);
		/* Null slots hold zeroed values, as decoded arrays do. */
		for (uint64_t i = 0; type->id != LP_TYPE_BOOL && i < rows; i++)
			if (!lp_array_is_valid(array, i))
				memset(array->values + i * width, 0, width);
	}
	return array;
}

/* Lists or large lists, by a bit of the list's null mode. */
static const char *
data_list_type(uint8_t null_mode)
{
	return null_mode & 8 ? "large_list" : "list";
}

/* A struct of the members (taking their types and arrays), its nulls by null_mode. */
static LpArray *
make_struct(LpType **type, LpType **member_types, LpArray **members, uint32_t n, uint8_t null_mode,
			uint64_t rows, Source *source)
{
	LpArray    *array;
	LpError		err;

	if (!lp_type_parse("struct", "fuzz", "s", type, &err))
		abort();
	(*type)->children = lp_alloc(n * sizeof(LpType *));
	(*type)->num_children = n;
	memcpy((*type)->children, member_types, n * sizeof(LpType *));
	array = lp_array_new(*type);
	array->length = rows;
	array->children = lp_alloc(n * sizeof(LpArray *));
	array->num_children = n;
	memcpy(array->children, members, n * sizeof(LpArray *));
	make_validity(array, null_mode, rows, source);
	return array;
}

/*
 * A list over rows rows whose lengths (0 to 7) and nulls (by null_mode)
 * come from the input; *items receives the number of items its leaf needs.
 */
static LpArray *
make_list(LpType **type, uint8_t null_mode, uint64_t rows, Source *source, uint64_t *items)
{
	LpArray    *array;
	LpError		err;

	if (!lp_type_parse(data_list_type(null_mode), "fuzz", "l", type, &err))
		abort();
	array = lp_array_new(*type);
	array->length = rows;
	make_validity(array, null_mode, rows, source);
	array->offsets = lp_alloc((rows + 1) * sizeof(uint64_t));
	array->offsets[0] = 0;
	for (uint64_t i = 0; i < rows; i++)
		array->offsets[i + 1] = array->offsets[i] +
			(lp_array_is_valid(array, i) ? next_byte(source) % 8 : 0);
	*items = array->offsets[rows];
	return array;
}

static void
set_field(LpField *field, int32_t parent_id, const char *logical_type)
{
	field->parent_id = parent_id;
	field->name = (char *) "c";
	field->logical_type = (char *) logical_type;
	field->nullable = true;
}

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * Nesting 0: the leaves are the top-level fields; 1: they are the members
 * of one struct; 2: the first leaf and a struct of the others are; 3 (2.1+):
 * each leaf is the item of a top-level list.
 */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const LpFileVersion versions[] = {LP_FILE_VERSION_2_0, LP_FILE_VERSION_2_1,
	LP_FILE_VERSION_2_2, LP_FILE_VERSION_2_3};
	LpField		fields[2 * MAX_COLUMNS];	/* nesting 3: a list and its item per column */
	LpSchema	schema;
	LpType	   *leaf_types[MAX_COLUMNS];
	LpArray    *leaves[MAX_COLUMNS];
	LpType	   *top_types[MAX_COLUMNS];
	LpArray    *tops[MAX_COLUMNS];
	uint32_t	top_fields[MAX_COLUMNS];
	uint32_t	num_top = 0;
	Source		source;
	LpFileVersion version;
	uint32_t	n;
	uint32_t	nesting;
	uint8_t		struct_nulls;
	uint64_t	rows;
	uint64_t	batch;
	LpError		err;
	uint64_t	file_size;
	uint8_t    *bytes;
	LpInput    *input;
	LpFile	   *file;
	uint32_t	f = 0;

	if (size < HEADER_BYTES)
		return 0;
	version = versions[data[0] % 4];
	n = 1 + data[1] % MAX_COLUMNS;
	rows = (data[2] | ((uint64_t) data[3] << 8)) % (MAX_ROWS + 1);
	batch = 1 + data[4] * 37;
	nesting = data[5] % 4;
	if (nesting == 2 && n == 1)
		nesting = 1;
	/* 2.0 has no place for a null struct (lists, nesting 3, have no structs) */
	struct_nulls = version == LP_FILE_VERSION_2_0 && nesting != 3 ? 0 : data[6];
	source.data = data + HEADER_BYTES;
	source.size = size - HEADER_BYTES;
	source.pos = 0;
	for (uint32_t c = 0; c < n; c++)
	{
		uint8_t		null_mode = data[7 + MAX_COLUMNS + c];
		uint64_t	leaf_rows = rows;

		if (nesting == 3)
		{
			tops[c] = make_list(&top_types[c], struct_nulls >> (2 * c), rows, &source, &leaf_rows);
		}
		if (!lp_type_parse(types[data[7 + c] % N_TYPES], "fuzz", "c", &leaf_types[c], &err))
			abort();
		/* null items inside fixed-size lists where the version holds them (2.1+) */
		leaves[c] = make_array(leaf_types[c], null_mode,
							   (null_mode & 4) != 0 && version != LP_FILE_VERSION_2_0, leaf_rows, &source);
	}

	/* The schema in pre-order, ids by position. */
	memset(fields, 0, sizeof(fields));
	if (nesting == 0)
		for (uint32_t c = 0; c < n; c++)
		{
			set_field(&fields[f], -1, types[data[7 + c] % N_TYPES]);
			top_types[num_top] = leaf_types[c];
			tops[num_top] = leaves[c];
			top_fields[num_top++] = f++;
		}
	else if (nesting == 3)
		for (uint32_t c = 0; c < n; c++)
		{
			set_field(&fields[f], -1, data_list_type(struct_nulls >> (2 * c)));
			set_field(&fields[f + 1], (int32_t) f, types[data[7 + c] % N_TYPES]);
			top_types[c]->children = lp_alloc(sizeof(LpType *));
			top_types[c]->children[0] = leaf_types[c];
			top_types[c]->num_children = 1;
			tops[c]->children = lp_alloc(sizeof(LpArray *));
			tops[c]->children[0] = leaves[c];
			tops[c]->num_children = 1;
			top_fields[num_top++] = f;
			f += 2;
		}
	else
	{
		LpType	   *outer_members[2];
		LpArray    *outer_arrays[2];

		set_field(&fields[f++], -1, "struct");
		if (nesting == 2)
		{
			set_field(&fields[f++], 0, types[data[7] % N_TYPES]);
			set_field(&fields[f++], 0, "struct");
		}
		for (uint32_t c = nesting == 2 ? 1 : 0; c < n; c++)
			set_field(&fields[f++], nesting == 2 ? 2 : 0, types[data[7 + c] % N_TYPES]);
		if (nesting == 1)
			tops[0] = make_struct(&top_types[0], leaf_types, leaves, n, struct_nulls, rows, &source);
		else
		{
			outer_members[0] = leaf_types[0];
			outer_arrays[0] = leaves[0];
			outer_arrays[1] = make_struct(&outer_members[1], leaf_types + 1, leaves + 1, n - 1,
										  struct_nulls >> 2, rows, &source);
			tops[0] = make_struct(&top_types[0], outer_members, outer_arrays, 2, struct_nulls,
								  rows, &source);
		}
		top_fields[num_top++] = 0;
	}
	for (uint32_t i = 0; i < f; i++)
		fields[i].id = (int32_t) i;
	memset(&schema, 0, sizeof(schema));
	schema.num_fields = f;
	schema.fields = fields;

	if (!lp_round_trip_encode(&schema, version, top_types, tops, num_top, rows, batch,
							  &bytes, &file_size, &err))
		abort();
	input = lp_memory_input_open("fuzz.lance", bytes, file_size);
	file = lp_file_open(input, &err);
	if (file == NULL || file->num_rows != rows)
		abort();
	for (uint32_t t = 0; t < num_top; t++)
	{
		uint64_t	bad;

		if (!lp_round_trip_compare(input, file, top_fields[t], top_types[t], tops[t], &bad, &err) ||
			bad != UINT64_MAX)
			abort();
		lp_array_free(tops[t]);
		lp_type_free(top_types[t]);
	}
	lp_file_free(file);
	lp_input_close(input);
	lp_free(bytes);
	return 0;
}
