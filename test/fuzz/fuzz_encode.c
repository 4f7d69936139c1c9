/*
 * fuzz_encode.c - libFuzzer target: encode → decode round trips.  The
 * input chooses the file version, up to four flat leaf columns (type, null
 * pattern, null items in fixed-size lists of 2.1+), the row count, the
 * batch size and, cycling through its remaining bytes, every value, string
 * length and null; the file the encoder writes must decode to exactly those
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
/* version, columns, rows (2), batch, a type and a null mode per column */
#define HEADER_BYTES (5 + 2 * MAX_COLUMNS)

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

static LpArray *
make_array(const LpType *type, uint8_t null_mode, bool item_nulls, uint64_t rows, Source *source)
{
	LpArray    *array = lp_array_new(type);
	uint32_t	width = lp_type_byte_width(type);

	array->length = rows;
	if (null_mode % 4 != 0)
	{
		array->validity = lp_alloc0(rows / 8 + 1);
		for (uint64_t i = 0; i < rows; i++)
		{
			/* 1: some nulls from the input, 2: all null, 3: none (but nullable) */
			bool		valid = null_mode % 4 == 3 || (null_mode % 4 == 1 && (next_byte(source) & 3) != 0);

			lp_bit_set(array->validity, i, valid);
			array->null_count += !valid;
		}
	}
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

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const LpFileVersion versions[] = {LP_FILE_VERSION_2_0, LP_FILE_VERSION_2_1,
	LP_FILE_VERSION_2_2, LP_FILE_VERSION_2_3};
	LpField		fields[MAX_COLUMNS];
	LpSchema	schema;
	LpType	   *column_types[MAX_COLUMNS];
	LpArray    *arrays[MAX_COLUMNS];
	uint8_t		null_modes[MAX_COLUMNS];
	Source		source;
	LpFileVersion version;
	uint32_t	n;
	uint64_t	rows;
	uint64_t	batch;
	LpError		err;
	uint64_t	file_size;
	uint8_t    *bytes;
	LpInput    *input;
	LpFile	   *file;

	if (size < HEADER_BYTES)
		return 0;
	version = versions[data[0] % 4];
	n = 1 + data[1] % MAX_COLUMNS;
	rows = (data[2] | ((uint64_t) data[3] << 8)) % (MAX_ROWS + 1);
	batch = 1 + data[4] * 37;
	memset(fields, 0, sizeof(fields));
	for (uint32_t c = 0; c < n; c++)
	{
		fields[c].id = (int32_t) c;
		fields[c].parent_id = -1;
		fields[c].name = (char *) "c";
		fields[c].logical_type = (char *) types[data[5 + c] % N_TYPES];
		fields[c].nullable = true;
		null_modes[c] = data[5 + MAX_COLUMNS + c];
	}
	memset(&schema, 0, sizeof(schema));
	schema.num_fields = n;
	schema.fields = fields;
	source.data = data + HEADER_BYTES;
	source.size = size - HEADER_BYTES;
	source.pos = 0;
	for (uint32_t c = 0; c < n; c++)
	{
		if (!lp_type_parse(fields[c].logical_type, "fuzz", "c", &column_types[c], &err))
			abort();
		/* null items inside fixed-size lists where the version holds them (2.1+) */
		arrays[c] = make_array(column_types[c], null_modes[c],
							   (null_modes[c] & 4) != 0 && version != LP_FILE_VERSION_2_0, rows, &source);
	}

	if (!lp_round_trip_encode(&schema, version, column_types, arrays, n, rows, batch,
							  &bytes, &file_size, &err))
		abort();
	input = lp_memory_input_open("fuzz.lance", bytes, file_size);
	file = lp_file_open(input, &err);
	if (file == NULL || file->num_rows != rows)
		abort();
	for (uint32_t c = 0; c < n; c++)
	{
		uint64_t	bad;

		if (!lp_round_trip_compare(input, file, c, column_types[c], arrays[c], &bad, &err) ||
			bad != UINT64_MAX)
			abort();
		lp_array_free(arrays[c]);
		lp_type_free(column_types[c]);
	}
	lp_file_free(file);
	lp_input_close(input);
	lp_free(bytes);
	return 0;
}
