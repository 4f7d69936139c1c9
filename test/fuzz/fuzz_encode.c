/*
 * fuzz_encode.c - libFuzzer target: encode → decode round trips.  The
 * input chooses the file version, the page size (small pages make files of
 * many pages from few rows), up to four leaf columns (type, null pattern,
 * null items in fixed-size lists of 2.1+), whether they lie in a struct, in
 * a struct in a struct or in lists (those structs' and lists' nulls and the
 * lists' lengths from the input, struct nulls 2.1+; wide items make
 * full-zip pages with lists), the row count, the batch size and, cycling
 * through its remaining bytes, every value, string length and null; the
 * file the encoder writes must decode to exactly those values, compared as
 * the unit tests compare them (test/core/lp_encode_round_trip.h).  Any
 * refusal or difference is a crash.
 *
 * Each execution is kept cheap so that long runs reach millions of them:
 * at most 255 rows unless the header asks for more (a rare bit pattern,
 * then up to MAX_ROWS), the rows cut so that the values stay within
 * MAX_VALUE_BYTES, and values, nulls and lengths copied from the input in
 * blocks.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lp_encode_round_trip.h"

#include "base/lp_alloc.h"
#include "format/lp_file.h"

#define MAX_COLUMNS 4
#define SMALL_ROWS 255
#define MAX_ROWS 6000
#define MAX_VALUE_BYTES (256 * 1024)
/* version and page size, columns and "many rows", rows (2), batch, nesting, struct nulls, a type and a null mode per column */
#define HEADER_BYTES (7 + 2 * MAX_COLUMNS)

static const char *const types[] = {
	"int8", "int16", "int32", "int64", "uint64", "float", "double", "bool",
	"string", "large_binary", "date32:day", "timestamp:us:-",
	"fixed_size_list:float:4", "fixed_size_list:float:80", "decimal:128:20:3"
};

#define N_TYPES (sizeof(types) / sizeof(types[0]))

/* A round trip that failed: what and why on stderr, then the crash. */
static void
fail(const char *what, const LpError *err)
{
	fprintf(stderr, "fuzz_encode: %s: %s\n", what, err != NULL ? err->message : "");
	abort();
}

/* The input's bytes after the header, cycled through. */
typedef struct Source
{
	const uint8_t *data;
	size_t		size;
	size_t		pos;
} Source;

/* The next n bytes of the input into out (zeros if it has none). */
static void
take_bytes(Source *source, uint8_t *out, uint64_t n)
{
	if (source->size == 0)
	{
		memset(out, 0, n);
		return;
	}
	while (n > 0)
	{
		size_t		at = source->pos % source->size;
		size_t		run = source->size - at < n ? source->size - at : n;

		memcpy(out, source->data + at, run);
		source->pos += run;
		out += run;
		n -= run;
	}
}

/*
 * A bitmap of n bits from the input, a bit set where any of the ors
 * bitmaps taken has it (1 - 2^-ors of the bits set), bits past n clear.
 */
static uint8_t *
take_bitmap(Source *source, uint64_t n, int ors)
{
	uint64_t	len = n / 8 + 1;
	uint8_t    *bits = lp_alloc0(len);
	uint8_t    *more = lp_alloc(len);

	take_bytes(source, bits, (n + 7) / 8);
	for (int k = 1; k < ors; k++)
	{
		take_bytes(source, more, (n + 7) / 8);
		for (uint64_t i = 0; i < len; i++)
			bits[i] |= more[i];
	}
	bits[n / 8] &= (uint8_t) ((1u << (n % 8)) - 1);
	lp_free(more);
	return bits;
}

/* The validity of rows rows by null_mode % 4: 0 none, 1 a quarter null from the input, 2 all null, 3 all valid. */
static void
make_validity(LpArray *array, uint8_t null_mode, uint64_t rows, Source *source)
{
	if (null_mode % 4 == 0)
		return;
	if (null_mode % 4 == 1)
		array->validity = take_bitmap(source, rows, 2);
	else
	{
		array->validity = lp_alloc0(rows / 8 + 1);
		if (null_mode % 4 == 3)
			for (uint64_t i = 0; i < rows; i++)
				lp_bit_set(array->validity, i, true);
	}
	for (uint64_t i = 0; i < rows; i++)
		array->null_count += !lp_bit_get(array->validity, i);
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
		items->values = lp_alloc(bytes + 1);
		take_bytes(source, items->values, bytes);
		/* an eighth of the items null */
		if (item_nulls)
			items->validity = take_bitmap(source, items->length, 3);
		array->num_children = 1;
		array->children = lp_alloc(sizeof(LpArray *));
		array->children[0] = items;
	}
	else if (lp_type_is_variable_width(type))
	{
		uint8_t    *lengths = lp_alloc(rows + 1);

		take_bytes(source, lengths, rows);
		array->offsets = lp_alloc((rows + 1) * sizeof(uint64_t));
		array->offsets[0] = 0;
		for (uint64_t i = 0; i < rows; i++)
		{
			uint64_t	len = lengths[i] < 200 ? lengths[i] % 32 : (uint64_t) lengths[i] * 3;

			array->offsets[i + 1] = array->offsets[i] + (lp_array_is_valid(array, i) ? len : 0);
		}
		lp_free(lengths);
		array->data_len = array->offsets[rows];
		array->data = lp_alloc(array->data_len + 1);
		take_bytes(source, array->data, array->data_len);
	}
	else
	{
		uint64_t	bytes = type->id == LP_TYPE_BOOL ? rows / 8 + 1 : rows * width;

		array->values = lp_alloc(bytes + 1);
		take_bytes(source, array->values, bytes);
		/* Null slots hold zeroed values, as decoded arrays do. */
		for (uint64_t i = 0; type->id != LP_TYPE_BOOL && array->validity != NULL && i < rows; i++)
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
		fail("type", &err);
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
	uint8_t    *lengths;

	if (!lp_type_parse(data_list_type(null_mode), "fuzz", "l", type, &err))
		fail("type", &err);
	array = lp_array_new(*type);
	array->length = rows;
	make_validity(array, null_mode, rows, source);
	lengths = lp_alloc(rows + 1);
	take_bytes(source, lengths, rows);
	array->offsets = lp_alloc((rows + 1) * sizeof(uint64_t));
	array->offsets[0] = 0;
	for (uint64_t i = 0; i < rows; i++)
		array->offsets[i + 1] = array->offsets[i] +
			(lp_array_is_valid(array, i) ? lengths[i] % 8 : 0);
	lp_free(lengths);
	*items = array->offsets[rows];
	return array;
}

/* The most bytes a row of a leaf of type holds (in a list: 7 items and their offset). */
static uint64_t
row_bytes(const LpType *type, bool in_list)
{
	uint64_t	bytes = type->id == LP_TYPE_FIXED_SIZE_LIST ?
		(uint64_t) type->fixed_size * (lp_type_byte_width(type->children[0]) + 1) :
		lp_type_is_variable_width(type) ? 8 + 255 * 3 : lp_type_byte_width(type) + 1;

	return in_list ? 7 * bytes + 8 : bytes;
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
	uint64_t	flush_bytes;
	uint64_t	max_row_bytes = 0;
	LpError		err;
	uint64_t	file_size;
	uint8_t    *bytes;
	LpInput    *input;
	LpFile	   *file;
	uint32_t	f = 0;

	if (size < HEADER_BYTES)
		return 0;
	version = versions[data[0] % 4];
	/* pages at 512 B to 32 KiB, or (one input in 8) the writer's 8 MiB */
	flush_bytes = (data[0] >> 2) % 8 == 0 ? 0 : (uint64_t) 256 << ((data[0] >> 2) % 8);
	n = 1 + data[1] % MAX_COLUMNS;
	/* many rows (chunks of 4096 values) for one input in 16 */
	rows = data[1] >> 4 == 0xf ? (data[2] | ((uint64_t) data[3] << 8)) % (MAX_ROWS + 1) :
		data[2] % (SMALL_ROWS + 1);
	nesting = data[5] % 4;
	if (nesting == 2 && n == 1)
		nesting = 1;
	/* 2.0 has no place for a null struct (lists, nesting 3, have no structs) */
	struct_nulls = version == LP_FILE_VERSION_2_0 && nesting != 3 ? 0 : data[6];
	for (uint32_t c = 0; c < n; c++)
	{
		if (!lp_type_parse(types[data[7 + c] % N_TYPES], "fuzz", "c", &leaf_types[c], &err))
			fail("type", &err);
		max_row_bytes += row_bytes(leaf_types[c], nesting == 3);
	}
	if (rows > MAX_VALUE_BYTES / max_row_bytes)
		rows = MAX_VALUE_BYTES / max_row_bytes;
	/* from one row a batch to all rows in one */
	batch = 1 + data[4] * rows / 256;
	source.data = data + HEADER_BYTES;
	source.size = size - HEADER_BYTES;
	source.pos = 0;
	for (uint32_t c = 0; c < n; c++)
	{
		uint8_t		null_mode = data[7 + MAX_COLUMNS + c];
		uint64_t	leaf_rows = rows;

		if (nesting == 3)
			tops[c] = make_list(&top_types[c], struct_nulls >> (2 * c), rows, &source, &leaf_rows);
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
							  flush_bytes, &bytes, &file_size, &err))
		fail("encode", &err);
	input = lp_memory_input_open("fuzz.lance", bytes, file_size);
	file = lp_file_open(input, &err);
	if (file == NULL)
		fail("open", &err);
	if (file->num_rows != rows)
		fail("the file's row count differs", NULL);
	for (uint32_t t = 0; t < num_top; t++)
	{
		uint64_t	bad;

		if (!lp_round_trip_compare(input, file, top_fields[t], top_types[t], tops[t], &bad, &err))
			fail("decode", &err);
		if (bad != UINT64_MAX)
		{
			fprintf(stderr, "fuzz_encode: field %u: row %llu differs\n", top_fields[t],
					(unsigned long long) bad);
			abort();
		}
		lp_array_free(tops[t]);
		lp_type_free(top_types[t]);
	}
	lp_file_free(file);
	lp_input_close(input);
	lp_free(bytes);
	return 0;
}
