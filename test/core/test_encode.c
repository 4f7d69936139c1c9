/*
 * test_encode.c - the encoder (encode/lp_file_writer.h) against our own
 * decoder: files of every flat leaf type written in batches for 2.1, 2.2
 * and 2.3 decode to exactly the values written, for row counts around chunk
 * and page boundaries, all-null and constant columns, empty strings and
 * values wide enough for full-zip pages; the layouts chosen are the ones
 * Lance chooses for such data; FastLanes packing inverts unpacking; and
 * what the writer refuses it refuses before writing.
 */
#include <stdlib.h>
#include <string.h>

#include "lp_test.h"

#include "base/lp_alloc.h"
#include "codec/lp_bitpack.h"
#include "decode/lp_decode.h"
#include "encode/lp_file_writer.h"
#include "format/lp_encodings.h"
#include "format/lp_file.h"

/* What values a test column holds. */
typedef enum Pattern
{
	RANDOM,						/* random bits, every 7th row null when nullable */
	SMALL,						/* small non-negative numbers (bit-packed narrow) */
	ALL_NULL,
	CONSTANT,
	EMPTY_STRINGS,				/* strings: every value "" (nulls too when nullable) */
	LONG_STRINGS,				/* strings of 250 - 400 bytes: full-zip pages */
	RUNS,						/* row / 300: runs longer than RLE's 255 */
	ITEM_NULLS,					/* fixed-size lists: every 5th item null too */
	RARE_NULLS					/* random, every 5000th row null */
} Pattern;

typedef struct ColumnSpec
{
	const char *name;
	const char *logical_type;
	bool		nullable;
	Pattern		pattern;
	const char *layout;			/* expected layout of the first page, NULL: any */
} ColumnSpec;

static uint64_t rng_state;

static uint64_t
next_random(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static void
fill_random(uint8_t *out, uint64_t len)
{
	for (uint64_t i = 0; i < len; i++)
		out[i] = (uint8_t) next_random();
}

static LpSchema
make_schema(const ColumnSpec *specs, uint32_t n)
{
	LpSchema	schema;

	memset(&schema, 0, sizeof(schema));
	schema.num_fields = n;
	schema.fields = calloc(n, sizeof(LpField));
	for (uint32_t i = 0; i < n; i++)
	{
		schema.fields[i].id = (int32_t) i;
		schema.fields[i].parent_id = -1;
		schema.fields[i].name = (char *) specs[i].name;
		schema.fields[i].logical_type = (char *) specs[i].logical_type;
		schema.fields[i].nullable = specs[i].nullable;
		schema.fields[i].legacy_encoding = strstr(specs[i].logical_type, "string") ||
			strstr(specs[i].logical_type, "binary") ? 2 : 1;
	}
	return schema;
}

/* An array of rows of the column (allocated with lp_alloc, as decoded arrays are). */
static LpArray *
make_array(const LpType *type, const ColumnSpec *spec, uint64_t rows)
{
	LpArray    *array = lp_array_new(type);
	uint32_t	width = lp_type_byte_width(type);
	bool		nullable = spec->nullable || spec->pattern == ALL_NULL;
	uint64_t	constant = 0x1234567;

	array->length = rows;
	if (nullable)
	{
		array->validity = lp_alloc0(rows / 8 + 1);
		for (uint64_t i = 0; i < rows; i++)
		{
			bool		valid = spec->pattern == RARE_NULLS ? i % 5000 != 7 :
				spec->pattern != ALL_NULL && (spec->pattern == CONSTANT || i % 7 != 3);

			lp_bit_set(array->validity, i, valid);
			array->null_count += !valid;
		}
	}
	if (type->id == LP_TYPE_FIXED_SIZE_LIST)
	{
		LpArray    *items = lp_array_new(type->children[0]);
		uint64_t	item_bytes = rows * type->fixed_size * lp_type_byte_width(type->children[0]);

		items->length = rows * type->fixed_size;
		items->values = lp_alloc0(item_bytes + 1);
		fill_random(items->values, item_bytes);
		if (spec->pattern == ITEM_NULLS)
		{
			items->validity = lp_alloc0(items->length / 8 + 1);
			for (uint64_t i = 0; i < items->length; i++)
			{
				lp_bit_set(items->validity, i, i % 5 != 1);
				items->null_count += i % 5 == 1;
			}
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
			uint64_t	len = 0;

			if (lp_array_is_valid(array, i))
				len = spec->pattern == EMPTY_STRINGS ? 0 :
					spec->pattern == LONG_STRINGS ? 250 + next_random() % 151 :
					spec->pattern == CONSTANT ? 5 : next_random() % 40;
			array->offsets[i + 1] = array->offsets[i] + len;
		}
		array->data_len = array->offsets[rows];
		array->data = lp_alloc(array->data_len + 1);
		for (uint64_t i = 0; i < array->data_len; i++)
			array->data[i] = spec->pattern == CONSTANT ? 'c' : (uint8_t) ('a' + next_random() % 26);
	}
	else if (type->id == LP_TYPE_BOOL)
	{
		array->values = lp_alloc0(rows / 8 + 1);
		for (uint64_t i = 0; i < rows; i++)
			lp_bit_set(array->values, i, spec->pattern == CONSTANT || (next_random() & 1));
	}
	else
	{
		array->values = lp_alloc0(rows * width + 1);
		for (uint64_t i = 0; i < rows; i++)
		{
			uint8_t    *value = array->values + i * width;

			if (!lp_array_is_valid(array, i))
				continue;
			if (spec->pattern == CONSTANT)
				memcpy(value, &constant, width < 8 ? width : 8);
			else if (spec->pattern == SMALL)
				value[0] = (uint8_t) (next_random() % 100);
			else if (spec->pattern == RUNS)
			{
				uint64_t	run = i / 300;

				memcpy(value, &run, width < 8 ? width : 8);
			}
			else
				fill_random(value, width);
		}
	}
	return array;
}

/* Row i of both arrays is the same value (or both null). */
static bool
rows_equal(const LpType *type, const LpArray *a, const LpArray *b, uint64_t i)
{
	uint32_t	width = lp_type_byte_width(type);

	if (lp_array_is_valid(a, i) != lp_array_is_valid(b, i))
		return false;
	if (!lp_array_is_valid(a, i))
		return true;
	if (type->id == LP_TYPE_FIXED_SIZE_LIST)
	{
		uint64_t	dim = (uint64_t) type->fixed_size;
		uint32_t	item = lp_type_byte_width(type->children[0]);
		const LpArray *x = a->children[0];
		const LpArray *y = b->num_children == 1 ? b->children[0] : NULL;

		if (y == NULL)
			return false;
		for (uint64_t j = i * dim; j < (i + 1) * dim; j++)
		{
			if (lp_array_is_valid(x, j) != lp_array_is_valid(y, j))
				return false;
			if (lp_array_is_valid(x, j) && memcmp(x->values + j * item, y->values + j * item, item) != 0)
				return false;
		}
		return true;
	}
	if (lp_type_is_variable_width(type))
	{
		uint64_t	len = a->offsets[i + 1] - a->offsets[i];

		return b->offsets[i + 1] - b->offsets[i] == len &&
			(len == 0 || memcmp(a->data + a->offsets[i], b->data + b->offsets[i], len) == 0);
	}
	if (type->id == LP_TYPE_BOOL)
		return lp_bit_get(a->values, i) == lp_bit_get(b->values, i);
	return memcmp(a->values + i * width, b->values + i * width, width) == 0;
}

/*
 * Whether every valid row equals the first valid one and one is valid: from
 * 2.2 on such pages are constant pages, as Lance 12 writes them.
 */
static bool
valid_rows_equal(const LpType *type, const LpArray *array)
{
	uint64_t	first = 0;

	while (first < array->length && !lp_array_is_valid(array, first))
		first++;
	if (first == array->length)
		return false;
	for (uint64_t i = first + 1; i < array->length; i++)
	{
		if (!lp_array_is_valid(array, i))
			continue;
		if (type->id == LP_TYPE_BOOL)
		{
			if (lp_bit_get(array->values, i) != lp_bit_get(array->values, first))
				return false;
			continue;
		}
		if (lp_type_is_variable_width(type))
		{
			uint64_t	len = array->offsets[i + 1] - array->offsets[i];

			if (len != array->offsets[first + 1] - array->offsets[first] ||
				(len > 0 && memcmp(array->data + array->offsets[i], array->data + array->offsets[first], len) != 0))
				return false;
			continue;
		}
		if (memcmp(array->values + i * lp_type_byte_width(type),
				   array->values + first * lp_type_byte_width(type), lp_type_byte_width(type)) != 0)
			return false;
	}
	return true;
}

/*
 * Write rows rows of the columns in batches of batch_rows, decode every
 * field and compare; returns the file (caller frees) for further checks.
 */
static LpFile *
round_trip(LpFileVersion version, const ColumnSpec *specs, uint32_t n, uint64_t rows,
		   uint64_t batch_rows, uint8_t **bytes_out)
{
	LpSchema	schema = make_schema(specs, n);
	LpType	  **types = calloc(n, sizeof(LpType *));
	LpArray   **arrays = calloc(n, sizeof(LpArray *));
	LpArray   **slices = calloc(n, sizeof(LpArray *));
	LpOutput   *output = lp_memory_output_open("memory.lance");
	LpFileWriter *writer;
	LpError		err;
	uint64_t	size = 0;
	uint64_t	len;
	uint8_t    *bytes = NULL;
	LpInput    *input;
	LpFile	   *file = NULL;

	for (uint32_t c = 0; c < n; c++)
	{
		LP_CHECK(lp_type_parse(specs[c].logical_type, "memory.lance", specs[c].name, &types[c], &err));
		arrays[c] = make_array(types[c], &specs[c], rows);
	}
	writer = lp_file_writer_open(output, &schema, version, &err);
	LP_CHECK_MSG(writer != NULL, "open: %.300s", err.message);
	for (uint64_t start = 0; writer != NULL && start < rows; start += batch_rows)
	{
		uint64_t	count = rows - start < batch_rows ? rows - start : batch_rows;
		bool		ok;

		/* Batches are slices: the same buffers, shifted (validity and bools re-based). */
		for (uint32_t c = 0; c < n; c++)
		{
			LpArray    *slice = lp_array_new(types[c]);
			const LpArray *whole = arrays[c];
			uint32_t	width = lp_type_byte_width(types[c]);

			slice->length = count;
			if (whole->validity)
			{
				slice->validity = lp_alloc0(count / 8 + 1);
				for (uint64_t i = 0; i < count; i++)
					lp_bit_set(slice->validity, i, lp_bit_get(whole->validity, start + i));
			}
			if (types[c]->id == LP_TYPE_BOOL)
			{
				slice->values = lp_alloc0(count / 8 + 1);
				for (uint64_t i = 0; i < count; i++)
					lp_bit_set(slice->values, i, lp_bit_get(whole->values, start + i));
			}
			else if (lp_type_is_variable_width(types[c]))
			{
				slice->offsets = lp_alloc((count + 1) * sizeof(uint64_t));
				memcpy(slice->offsets, whole->offsets + start, (count + 1) * sizeof(uint64_t));
				slice->data = lp_memdup(whole->data, whole->data_len);
				slice->data_len = whole->data_len;
			}
			else if (types[c]->id == LP_TYPE_FIXED_SIZE_LIST)
			{
				uint64_t	row = (uint64_t) types[c]->fixed_size * lp_type_byte_width(types[c]->children[0]);
				LpArray    *items = lp_array_new(types[c]->children[0]);

				items->length = count * types[c]->fixed_size;
				items->values = lp_memdup(whole->children[0]->values + start * row, count * row);
				if (whole->children[0]->validity)
				{
					items->validity = lp_alloc0(items->length / 8 + 1);
					for (uint64_t i = 0; i < items->length; i++)
						lp_bit_set(items->validity, i,
								   lp_bit_get(whole->children[0]->validity,
											  start * types[c]->fixed_size + i));
				}
				slice->num_children = 1;
				slice->children = lp_alloc(sizeof(LpArray *));
				slice->children[0] = items;
			}
			else
				slice->values = lp_memdup(whole->values + start * width, count * width);
			slices[c] = slice;
		}
		ok = lp_file_writer_write(writer, (const LpArray *const *) slices, n, &err);
		LP_CHECK_MSG(ok, "write: %.300s", err.message);
		for (uint32_t c = 0; c < n; c++)
			lp_array_free(slices[c]);
		if (!ok)
			break;
	}
	if (writer != NULL)
	{
		LP_CHECK_MSG(lp_file_writer_finish(writer, &size, &err), "finish: %.300s", err.message);
		lp_file_writer_free(writer);
	}
	bytes = malloc(size + 1);
	memcpy(bytes, lp_memory_output_data(output, &len), size);
	LP_CHECK_EQ_U64(len, size);
	output->ops->abort(output);

	input = lp_memory_input_open("memory.lance", bytes, size);
	file = lp_file_open(input, &err);
	LP_CHECK_MSG(file != NULL, "reopen: %.300s", err.message);
	if (file != NULL)
	{
		LP_CHECK_EQ_U64(file->num_rows, rows);
		LP_CHECK(file->version == version);
		LP_CHECK_EQ_U64(file->num_columns, n);
		for (uint32_t c = 0; c < n && c < file->num_columns; c++)
		{
			LpType	   *decoded_type;
			LpArray    *decoded;
			uint64_t	bad = UINT64_MAX;

			if (!lp_decode_field(input, file, c, &decoded_type, &decoded, &err))
			{
				LP_CHECK_MSG(false, "decode %.100s (%llu rows): %.300s", specs[c].name,
							 (unsigned long long) rows, err.message);
				continue;
			}
			LP_CHECK_EQ_U64(decoded->length, rows);
			for (uint64_t i = 0; i < rows && i < decoded->length && bad == UINT64_MAX; i++)
				if (!rows_equal(types[c], arrays[c], decoded, i))
					bad = i;
			LP_CHECK_MSG(bad == UINT64_MAX, "%s %s, %llu rows: row %llu differs",
						 lp_file_version_name(version), specs[c].name,
						 (unsigned long long) rows, (unsigned long long) bad);
			if (specs[c].layout != NULL && rows > 0)
			{
				const char *expected = specs[c].layout;

				/*
				 * 2.0 pages are ArrayEncodings: Binary for strings, Dictionary
				 * for Utf8 of at least 100 rows and one distinct value (or
				 * none), Nullable for the rest.
				 */
				if (version == LP_FILE_VERSION_2_0)
					expected = !lp_type_is_variable_width(types[c]) ? "nullable" :
						types[c]->id == LP_TYPE_STRING && rows >= 100 &&
						(specs[c].pattern == EMPTY_STRINGS || specs[c].pattern == ALL_NULL ||
						 specs[c].pattern == CONSTANT) ? "dictionary" : "binary";
				else if (version >= LP_FILE_VERSION_2_2 && types[c]->id != LP_TYPE_FIXED_SIZE_LIST &&
					file->columns[c].num_pages == 1 && valid_rows_equal(types[c], arrays[c]))
					expected = "constant";
				LP_CHECK_MSG(file->columns[c].num_pages > 0 &&
							 strcmp(file->columns[c].pages[0].layout, expected) == 0,
							 "%s %s, %llu rows: layout %s, expected %s",
							 lp_file_version_name(version), specs[c].name, (unsigned long long) rows,
							 file->columns[c].num_pages ? file->columns[c].pages[0].layout : "none",
							 expected);
			}
			lp_array_free(decoded);
			lp_type_free(decoded_type);
		}
	}
	lp_input_close(input);
	for (uint32_t c = 0; c < n; c++)
	{
		lp_array_free(arrays[c]);
		lp_type_free(types[c]);
	}
	free(types);
	free(arrays);
	free(slices);
	free(schema.fields);
	if (bytes_out)
		*bytes_out = bytes;
	else
		free(bytes);
	return file;
}

static const ColumnSpec every_type[] = {
	{"i8", "int8", true, RANDOM, "mini_block"},
	{"i16", "int16", false, RANDOM, "mini_block"},
	{"i32", "int32", true, RANDOM, "mini_block"},
	{"i64", "int64", true, SMALL, "mini_block"},
	{"u8", "uint8", false, SMALL, "mini_block"},
	{"u16", "uint16", true, SMALL, "mini_block"},
	{"u32", "uint32", false, RANDOM, "mini_block"},
	{"u64", "uint64", false, RANDOM, "mini_block"},
	{"f16", "halffloat", true, RANDOM, "mini_block"},
	{"f32", "float", true, RANDOM, "mini_block"},
	{"f64", "double", false, RANDOM, "mini_block"},
	{"b", "bool", true, RANDOM, "mini_block"},
	{"s", "string", true, RANDOM, "mini_block"},
	{"ls", "large_string", false, RANDOM, "mini_block"},
	{"bin", "binary", true, RANDOM, "mini_block"},
	{"lbin", "large_binary", true, RANDOM, "mini_block"},
	{"d", "date32:day", true, SMALL, "mini_block"},
	{"d64", "date64:ms", false, RANDOM, "mini_block"},
	{"t", "time64:us", true, RANDOM, "mini_block"},
	{"t32", "time32:ms", false, SMALL, "mini_block"},
	{"ts", "timestamp:us:UTC", true, RANDOM, "mini_block"},
	{"tsn", "timestamp:ns:-", false, RANDOM, "mini_block"},
	{"dur", "duration:us", false, SMALL, "mini_block"},
	{"dec", "decimal:128:10:2", true, RANDOM, "mini_block"},
	{"fsb", "fixed_size_binary:16", false, RANDOM, "mini_block"},
	{"vec8", "fixed_size_list:float:8", true, RANDOM, "mini_block"},
	{"vec64", "fixed_size_list:float:64", true, RANDOM, "full_zip"},
	{"vec128", "fixed_size_list:float:128", false, RANDOM, "full_zip"},
	{"long", "string", true, LONG_STRINGS, "full_zip"},
	{"longbin", "large_binary", false, LONG_STRINGS, "full_zip"},
	{"empty", "string", false, EMPTY_STRINGS, "mini_block"},
	{"empty_or_null", "string", true, EMPTY_STRINGS, "mini_block"},
	{"nulls", "int32", true, ALL_NULL, "constant"},
	{"null_strings", "string", true, ALL_NULL, "constant"},
	{"null_vectors", "fixed_size_list:float:128", true, ALL_NULL, "constant"},
	{"const", "int64", false, CONSTANT, "mini_block"},
	{"const_s", "string", true, CONSTANT, "mini_block"},
	{"const_b", "bool", false, CONSTANT, "mini_block"},
};

#define N_EVERY_TYPE ((uint32_t) (sizeof(every_type) / sizeof(every_type[0])))

static const LpFileVersion versions[] = {LP_FILE_VERSION_2_0, LP_FILE_VERSION_2_1, LP_FILE_VERSION_2_2,
LP_FILE_VERSION_2_3};

#define N_VERSIONS 4

LP_TEST(encode_round_trip_row_counts)
{
	/* Around bit-packing blocks (1024), flat chunks (up to 4096) and both. */
	static const uint64_t counts[] = {0, 1, 2, 63, 64, 65, 1023, 1024, 1025, 4095, 4096, 4097, 10000};

	rng_state = 42;
	for (size_t v = 0; v < N_VERSIONS; v++)
		for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++)
			lp_file_free(round_trip(versions[v], every_type, N_EVERY_TYPE, counts[i], 1000, NULL));
}

LP_TEST(encode_round_trip_pages)
{
	/* Wide columns fill several 8 MiB pages in 100k rows; batches do not line up with pages. */
	static const ColumnSpec wide[] = {
		{"id", "int64", false, RANDOM, "mini_block"},
		{"vec128", "fixed_size_list:float:128", true, RANDOM, "full_zip"},
		{"long", "string", true, LONG_STRINGS, "full_zip"},
		{"s", "string", true, RANDOM, "mini_block"},
		{"nulls", "double", true, ALL_NULL, "constant"},
	};

	rng_state = 7;
	for (size_t v = 0; v < N_VERSIONS; v++)
	{
		LpFile	   *file = round_trip(versions[v], wide, 5, 100000, 4999, NULL);

		if (file == NULL)
			continue;
		/*
		 * 512-byte vectors: a page once 16384 rows (8 MiB) are in, checked
		 * every 1024 rows of a batch; 250-400 byte strings: about 25000 rows.
		 */
		LP_CHECK_EQ_U64(file->columns[1].num_pages, 6);
		LP_CHECK(file->columns[2].num_pages >= 3);
		LP_CHECK_EQ_U64(file->columns[0].num_pages, 1);
		for (uint32_t c = 0; c < file->num_columns; c++)
		{
			uint64_t	rows = 0;

			for (uint32_t p = 0; p < file->columns[c].num_pages; p++)
			{
				LP_CHECK_EQ_U64(file->columns[c].pages[p].priority,
								versions[v] == LP_FILE_VERSION_2_0 ? 0 : rows);
				for (uint32_t b = 0; b < file->columns[c].pages[p].num_buffers; b++)
					LP_CHECK_EQ_U64(file->columns[c].pages[p].buffers[b].offset % 64, 0);
				rows += file->columns[c].pages[p].num_rows;
			}
			LP_CHECK_EQ_U64(rows, 100000);
		}
		lp_file_free(file);
	}
}

LP_TEST(encode_miniblock_chunks_follow_lance)
{
	/*
	 * 5000 small int64s: five bit-packed blocks of 1024 values (the last
	 * holding 904); with every 7th row null the definition levels are
	 * bit-packed too (every block of 1024 holds a null).
	 */
	static const ColumnSpec spec[] = {{"i64", "int64", true, SMALL, "mini_block"}};
	uint8_t    *bytes;
	LpFile	   *file;

	rng_state = 3;
	file = round_trip(LP_FILE_VERSION_2_1, spec, 1, 5000, 5000, &bytes);
	if (file != NULL)
	{
		const LpPage *page = &file->columns[0].pages[0];
		const uint8_t *meta = bytes + page->buffers[0].offset;
		const uint8_t *chunk = bytes + page->buffers[1].offset;

		LP_CHECK_EQ_U64(page->num_buffers, 2);
		LP_CHECK_EQ_U64(page->buffers[0].size, 5 * 2);	/* u16 words in 2.1 */
		for (int c = 0; c < 4; c++)
			LP_CHECK_EQ_U64(lp_le16(meta + 2 * c) & 0xf, 10);
		LP_CHECK_EQ_U64(lp_le16(meta + 8) & 0xf, 0);
		/* chunk 0: 1024 levels, out-of-line packed at 1 bit (128 bytes), values of 7 bits */
		LP_CHECK_EQ_U64(lp_le16(chunk), 1024);
		LP_CHECK_EQ_U64(lp_le16(chunk + 2), 128);
		LP_CHECK_EQ_U64(lp_le16(chunk + 4), 8 + 1024 * 7 / 8);
		lp_file_free(file);
		free(bytes);
	}
	/*
	 * In 2.2 the words and value sizes are u32 (has_large_chunk); the 100
	 * distinct int64s are a dictionary there, its u32 indices packed at 7 bits.
	 */
	file = round_trip(LP_FILE_VERSION_2_2, spec, 1, 5000, 5000, &bytes);
	if (file != NULL)
	{
		const LpPage *page = &file->columns[0].pages[0];
		const uint8_t *chunk = bytes + page->buffers[1].offset;

		LP_CHECK_EQ_U64(page->buffers[0].size, 5 * 4);
		LP_CHECK_EQ_U64(page->num_buffers, 3);
		LP_CHECK_EQ_U64(lp_le32(chunk + 4), 4 + 1024 * 7 / 8);
		lp_file_free(file);
		free(bytes);
	}
}

LP_TEST(encode_fastlanes_pack_inverts_unpack)
{
	static const uint32_t type_bits[] = {8, 16, 32, 64};

	rng_state = 11;
	for (int t = 0; t < 4; t++)
		for (uint32_t width = 0; width <= type_bits[t]; width++)
		{
			uint32_t	bytes = type_bits[t] / 8;
			uint8_t    *values = calloc(1024, bytes);
			uint8_t    *packed = calloc(1024, bytes);
			uint8_t    *unpacked = calloc(1024, bytes);
			uint64_t	mask = width == 64 ? UINT64_MAX : ((uint64_t) 1 << width) - 1;

			for (int i = 0; i < 1024; i++)
				lp_put_le_uint(values + (size_t) i * bytes, bytes, next_random() & mask);
			LP_CHECK(lp_fastlanes_pack(type_bits[t], width, values, packed));
			LP_CHECK(lp_bit_width(type_bits[t], values, 1024) <= width);
			LP_CHECK(lp_fastlanes_unpack(type_bits[t], width, packed, unpacked));
			LP_CHECK_MSG(memcmp(values, unpacked, (size_t) 1024 * bytes) == 0,
						 "%u-bit values packed to %u bits", type_bits[t], width);
			free(values);
			free(packed);
			free(unpacked);
		}
}

LP_TEST(encode_refuses_what_it_cannot_write)
{
	static const ColumnSpec list[] = {{"l", "list", true, RANDOM, NULL}};
	static const ColumnSpec ok[] = {{"i", "int32", false, RANDOM, NULL}};
	LpSchema	schema = make_schema(list, 1);
	LpOutput   *output = lp_memory_output_open("refused.lance");
	LpFileWriter *writer;
	LpError		err;
	LpType	   *type;
	LpArray    *arrays[1];

	LP_CHECK(lp_file_writer_open(output, &schema, LP_FILE_VERSION_2_1, &err) == NULL);
	LP_CHECK(err.code == LP_ERR_UNSUPPORTED);
	free(schema.fields);

	schema = make_schema(ok, 1);
	LP_CHECK(lp_file_writer_open(output, &schema, LP_FILE_VERSION_LEGACY, &err) == NULL);
	LP_CHECK(err.code == LP_ERR_UNSUPPORTED);

	/* A batch of the wrong type or with offsets out of range is refused. */
	writer = lp_file_writer_open(output, &schema, LP_FILE_VERSION_2_2, &err);
	LP_CHECK(writer != NULL);
	LP_CHECK(lp_type_parse("string", "x", "i", &type, &err));
	arrays[0] = lp_array_new(type);
	arrays[0]->length = 1;
	LP_CHECK(!lp_file_writer_write(writer, (const LpArray *const *) arrays, 1, &err));
	LP_CHECK(err.code == LP_ERR_INVALID_ARGUMENT);
	LP_CHECK(!lp_file_writer_write(writer, (const LpArray *const *) arrays, 2, &err));
	lp_array_free(arrays[0]);
	lp_type_free(type);
	lp_file_writer_free(writer);
	output->ops->abort(output);
	free(schema.fields);
}

/* The value compression and definition-level compression of page 0 of column c. */
static void
page_compressions(const LpFile *file, uint32_t c, int *values, int *levels)
{
	ProtobufCMessage *inner;
	LpUnwrapResult result;
	const Lance__Encodings21__PageLayout *layout;

	*values = *levels = -1;
	if (!lp_encoding_unwrap(file->columns[c].pages[0].encoding.data,
							file->columns[c].pages[0].encoding.len, LP_ENCODING_PAGE_V2_1,
							&inner, &result))
		return;
	layout = (const Lance__Encodings21__PageLayout *) inner;
	if (layout->layout_case == LANCE__ENCODINGS21__PAGE_LAYOUT__LAYOUT_MINI_BLOCK_LAYOUT)
	{
		*values = (int) layout->mini_block_layout->value_compression->compression_case;
		if (layout->mini_block_layout->def_compression)
			*levels = (int) layout->mini_block_layout->def_compression->compression_case;
	}
	lp_protobuf_free(inner);
}

LP_TEST(encode_compression_follows_lance)
{
	/*
	 * RLE for runs (when they take fewer bytes than the values packed), bit-packing
	 * for other 8-64 bit values that do not need every bit (random doubles
	 * stay flat), flat bools, FSST for strings of at least 5 bytes in pages of
	 * at least 32 KiB (mini-block and full-zip), plain variable otherwise;
	 * definition levels bit-packed out of line when every block of 1024
	 * levels has a null, flat when one has none.
	 */
	static const ColumnSpec specs[] = {
		{"runs", "int32", false, RUNS, "mini_block"},
		{"small", "int64", false, SMALL, "mini_block"},
		{"f64", "double", false, RANDOM, "mini_block"},
		{"b", "bool", false, RANDOM, "mini_block"},
		{"s", "string", true, RANDOM, "mini_block"},
		{"runs_with_nulls", "int32", true, RUNS, "mini_block"},
		{"empty", "string", false, EMPTY_STRINGS, "mini_block"},
		{"long", "string", true, LONG_STRINGS, "full_zip"},
	};
	LpFile	   *file;

	rng_state = 5;
	file = round_trip(LP_FILE_VERSION_2_1, specs, 8, 100000, 10000, NULL);
	if (file != NULL)
	{
		int			values;
		int			levels;

		page_compressions(file, 0, &values, &levels);
		LP_CHECK_EQ_U64(values, LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_RLE);
		page_compressions(file, 1, &values, &levels);
		LP_CHECK_EQ_U64(values, LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_INLINE_BITPACKING);
		page_compressions(file, 2, &values, &levels);
		LP_CHECK_EQ_U64(values, LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_FLAT);
		page_compressions(file, 3, &values, &levels);
		LP_CHECK_EQ_U64(values, LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_FLAT);
		page_compressions(file, 4, &values, &levels);
		LP_CHECK_EQ_U64(values, LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_FSST);
		LP_CHECK_EQ_U64(levels, LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_OUT_OF_LINE_BITPACKING);
		page_compressions(file, 5, &values, &levels);
		LP_CHECK_EQ_U64(values, LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_INLINE_BITPACKING);
		page_compressions(file, 6, &values, &levels);
		LP_CHECK_EQ_U64(values, LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_VARIABLE);
		/* full-zip strings are FSST-compressed value by value, smaller than the text */
		LP_CHECK(file->columns[7].pages[0].buffers[0].size < 100000 * 325 * 6 / 7);
		lp_file_free(file);
	}
}

LP_TEST(encode_fixed_size_lists_with_null_items)
{
	/*
	 * Null items inside vectors (as real[] can hold): mini-block chunks carry
	 * the items' validity before the items, full-zip values before each
	 * value's items (FixedSizeList has_validity); 2.0 files refuse them.
	 */
	static const ColumnSpec specs[] = {
		{"vec", "fixed_size_list:float:8", true, ITEM_NULLS, "mini_block"},
		{"wide", "fixed_size_list:double:40", true, ITEM_NULLS, "full_zip"},
		{"plain", "fixed_size_list:float:8", false, RANDOM, "mini_block"},
	};
	static const uint64_t counts[] = {1, 100, 5000, 40000};
	LpSchema	schema = make_schema(specs, 1);
	LpOutput   *output = lp_memory_output_open("v20.lance");
	LpFileWriter *writer = lp_file_writer_open(output, &schema, LP_FILE_VERSION_2_0, NULL);
	LpType	   *type;
	LpArray    *array;
	LpError		err;

	rng_state = 9;
	for (size_t v = 1; v < N_VERSIONS; v++)
		for (size_t i = 0; i < 4; i++)
			lp_file_free(round_trip(versions[v], specs, 3, counts[i], 3000, NULL));

	LP_CHECK(writer != NULL);
	LP_CHECK(lp_type_parse(specs[0].logical_type, "v20.lance", "vec", &type, &err));
	array = make_array(type, &specs[0], 10);
	LP_CHECK(!lp_file_writer_write(writer, (const LpArray *const *) &array, 1, &err));
	LP_CHECK(err.code == LP_ERR_UNSUPPORTED);
	lp_array_free(array);
	lp_type_free(type);
	lp_file_writer_free(writer);
	output->ops->abort(output);
	free(schema.fields);
}

LP_TEST(encode_levels_follow_lance)
{
	/*
	 * Definition levels as Lance 12 compresses them: bit-packed out of line
	 * in 2.1 even where blocks of 1024 rows have no null; run-length encoded
	 * from 2.2 on when nulls are rare, bit-packed when they are frequent.
	 */
	static const ColumnSpec specs[] = {
		{"rare", "int32", true, RARE_NULLS, "mini_block"},
		{"frequent", "int32", true, RANDOM, "mini_block"},
		{"rare_strings", "string", true, RARE_NULLS, "mini_block"},
	};
	LpFile	   *file;
	int			values;
	int			levels;

	rng_state = 13;
	file = round_trip(LP_FILE_VERSION_2_1, specs, 3, 100000, 7000, NULL);
	if (file != NULL)
	{
		page_compressions(file, 0, &values, &levels);
		LP_CHECK_EQ_U64(levels, LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_OUT_OF_LINE_BITPACKING);
		lp_file_free(file);
	}
	file = round_trip(LP_FILE_VERSION_2_2, specs, 3, 100000, 7000, NULL);
	if (file != NULL)
	{
		page_compressions(file, 0, &values, &levels);
		LP_CHECK_EQ_U64(levels, LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_RLE);
		page_compressions(file, 1, &values, &levels);
		LP_CHECK_EQ_U64(levels, LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_OUT_OF_LINE_BITPACKING);
		page_compressions(file, 2, &values, &levels);
		LP_CHECK_EQ_U64(levels, LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_RLE);
		lp_file_free(file);
	}
}
