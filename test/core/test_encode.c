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

#include "lp_encode_round_trip.h"
#include "lp_test.h"

#include "base/lp_alloc.h"
#include "codec/lp_bitpack.h"
#include "base/lp_protobuf.h"
#include "decode/lp_decode.h"
#include "decode/lp_decode_internal.h"
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
	LpError		err;
	uint64_t	size = 0;
	uint8_t    *bytes = NULL;
	LpInput    *input = NULL;
	LpFile	   *file = NULL;
	bool		encoded;

	for (uint32_t c = 0; c < n; c++)
	{
		LP_CHECK(lp_type_parse(specs[c].logical_type, "memory.lance", specs[c].name, &types[c], &err));
		arrays[c] = make_array(types[c], &specs[c], rows);
	}
	encoded = lp_round_trip_encode(&schema, version, types, arrays, n, rows, batch_rows, 0,
								   &bytes, &size, &err);
	LP_CHECK_MSG(encoded, "encode %s, %llu rows: %.300s", lp_file_version_name(version),
				 (unsigned long long) rows, err.message);
	if (encoded)
	{
		input = lp_memory_input_open("memory.lance", bytes, size);
		file = lp_file_open(input, &err);
		LP_CHECK_MSG(file != NULL, "reopen: %.300s", err.message);
	}
	if (file != NULL)
	{
		LP_CHECK_EQ_U64(file->num_rows, rows);
		LP_CHECK(file->version == version);
		LP_CHECK_EQ_U64(file->num_columns, n);
		for (uint32_t c = 0; c < n && c < file->num_columns; c++)
		{
			uint64_t	bad;

			if (!lp_round_trip_compare(input, file, c, types[c], arrays[c], &bad, &err))
			{
				LP_CHECK_MSG(false, "decode %.100s (%llu rows): %.300s", specs[c].name,
							 (unsigned long long) rows, err.message);
				continue;
			}
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
		}
	}
	if (input != NULL)
		lp_input_close(input);
	for (uint32_t c = 0; c < n; c++)
	{
		lp_array_free(arrays[c]);
		lp_type_free(types[c]);
	}
	free(types);
	free(arrays);
	free(schema.fields);
	if (bytes_out)
		*bytes_out = bytes;
	else
		lp_free(bytes);
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
		 * every 1024 rows of a batch, or earlier when the pages of all
		 * columns pass LP_WRITER_BUFFER_BYTES; 250-400 byte strings: about
		 * 25000 rows.
		 */
		LP_CHECK(file->columns[1].num_pages >= 6);
		for (uint32_t p = 0; p < file->columns[1].num_pages; p++)
			LP_CHECK(file->columns[1].pages[p].num_rows <= 16384 + 1024);
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

LP_TEST(encode_pages_share_a_budget)
{
	/*
	 * Ten int64 columns of 300,000 rows, 2.4 MB each: alone each would be
	 * one page (under 8 MiB), but together they pass LP_WRITER_BUFFER_BYTES
	 * at about 210,000 rows; then the largest page is written whenever they
	 * pass it again, which the 90,000 rows left do several times.
	 */
	static const ColumnSpec narrow[] = {
		{"a", "int64", false, RANDOM, "mini_block"}, {"b", "int64", false, RANDOM, "mini_block"},
		{"c", "int64", false, RANDOM, "mini_block"}, {"d", "int64", false, RANDOM, "mini_block"},
		{"e", "int64", false, RANDOM, "mini_block"}, {"f", "int64", false, RANDOM, "mini_block"},
		{"g", "int64", false, RANDOM, "mini_block"}, {"h", "int64", false, RANDOM, "mini_block"},
		{"i", "int64", false, RANDOM, "mini_block"}, {"j", "int64", false, RANDOM, "mini_block"},
	};

	rng_state = 11;
	for (size_t v = 0; v < N_VERSIONS; v++)
	{
		LpFile	   *file = round_trip(versions[v], narrow, 10, 300000, 5000, NULL);
		uint32_t	split = 0;

		if (file == NULL)
			continue;
		for (uint32_t c = 0; c < file->num_columns; c++)
		{
			LP_CHECK(file->columns[c].num_pages <= 2);
			split += file->columns[c].num_pages == 2;
		}
		/* one column a slice of 1024 rows once the budget is reached, largest first, from row ~210,000 */
		LP_CHECK(split >= 3);
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
		lp_free(bytes);
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
		lp_free(bytes);
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

/* ---- structs ----------------------------------------------------------------- */

/*
 * A field of a nested schema, in pre-order; structs are "struct" with their
 * members after them, lists "list" or "large_list" with their item.
 */
typedef struct NestedSpec
{
	int			parent;			/* index of the parent struct or list, -1 at the top */
	ColumnSpec	column;			/* leaves: as above; others: name, type, nullable */
	uint32_t	null_period;	/* structs and lists: every null_period-th row (from 2) null, 0: none */
} NestedSpec;

/* Items of list row r: 0 to 4, 0 (empty) every 5th row unless lists_never_empty. */
static bool lists_never_empty;

#define LIST_LENGTH(r) ((uint64_t) ((r) * 7 + 3) % 5 + (lists_never_empty && ((r) * 7 + 3) % 5 == 0))

typedef struct NestedColumns
{
	LpSchema	schema;
	LpType	  **types;			/* one per field, struct members attached to their struct */
	LpArray   **arrays;			/* one per field, the same */
	uint32_t	num_top;
	LpType	  **top_types;
	LpArray   **top_arrays;
	uint32_t   *top_fields;		/* schema index of each top-level field */
} NestedColumns;

static void
nested_build(const NestedSpec *specs, uint32_t n, uint64_t top_rows, NestedColumns *out)
{
	LpError		err;
	uint64_t   *rows_of = calloc(n, sizeof(uint64_t));	/* rows of each field's array */

	memset(out, 0, sizeof(*out));
	out->schema.num_fields = n;
	out->schema.fields = calloc(n, sizeof(LpField));
	out->types = calloc(n, sizeof(LpType *));
	out->arrays = calloc(n, sizeof(LpArray *));
	out->top_types = calloc(n, sizeof(LpType *));
	out->top_arrays = calloc(n, sizeof(LpArray *));
	out->top_fields = calloc(n, sizeof(uint32_t));
	for (uint32_t i = 0; i < n; i++)
	{
		const ColumnSpec *column = &specs[i].column;
		LpField    *field = &out->schema.fields[i];
		bool		is_struct = strcmp(column->logical_type, "struct") == 0;
		bool		is_list = strstr(column->logical_type, "list") != NULL &&
			strstr(column->logical_type, "fixed") == NULL;
		int			parent = specs[i].parent;

		/* a list's item has a row per item of the list, a member one per struct row */
		uint64_t	rows = parent < 0 ? top_rows :
			strcmp(specs[parent].column.logical_type, "struct") == 0 ? rows_of[parent] :
			out->arrays[parent]->offsets[rows_of[parent]];

		rows_of[i] = rows;
		field->id = (int32_t) i;
		field->parent_id = specs[i].parent;
		field->name = (char *) column->name;
		field->logical_type = (char *) column->logical_type;
		field->nullable = column->nullable;
		field->legacy_encoding = strstr(column->logical_type, "string") ||
			strstr(column->logical_type, "binary") ? 2 : 1;
		LP_CHECK(lp_type_parse(column->logical_type, "memory.lance", column->name, &out->types[i], &err));
		if (is_struct || is_list)
		{
			LpArray    *array = lp_array_new(out->types[i]);

			array->length = rows;
			if (specs[i].null_period > 0)
			{
				array->validity = lp_alloc0(rows / 8 + 1);
				for (uint64_t r = 0; r < rows; r++)
				{
					bool		valid = r % specs[i].null_period != 2 % specs[i].null_period;

					lp_bit_set(array->validity, r, valid);
					array->null_count += !valid;
				}
			}
			if (is_list)
			{
				array->offsets = lp_alloc((rows + 1) * sizeof(uint64_t));
				array->offsets[0] = 0;
				for (uint64_t r = 0; r < rows; r++)
					array->offsets[r + 1] = array->offsets[r] +
						(lp_array_is_valid(array, r) ? LIST_LENGTH(r) : 0);
			}
			out->types[i]->children = lp_alloc0(n * sizeof(LpType *));
			array->children = lp_alloc0(n * sizeof(LpArray *));
			out->arrays[i] = array;
		}
		else
			out->arrays[i] = make_array(out->types[i], column, rows);
		if (specs[i].parent < 0)
		{
			out->top_types[out->num_top] = out->types[i];
			out->top_arrays[out->num_top] = out->arrays[i];
			out->top_fields[out->num_top++] = i;
		}
		else
		{
			LpType	   *parent_type = out->types[specs[i].parent];
			LpArray    *parent_array = out->arrays[specs[i].parent];

			parent_type->children[parent_type->num_children++] = out->types[i];
			parent_array->children[parent_array->num_children++] = out->arrays[i];
		}
	}
	free(rows_of);
}

static void
nested_free(NestedColumns *columns)
{
	for (uint32_t t = 0; t < columns->num_top; t++)
	{
		lp_array_free(columns->top_arrays[t]);
		lp_type_free(columns->top_types[t]);
	}
	free(columns->schema.fields);
	free(columns->types);
	free(columns->arrays);
	free(columns->top_types);
	free(columns->top_arrays);
	free(columns->top_fields);
}

/*
 * Write rows of the nested columns in batches, pages at about flush_bytes
 * (0: the writer's default), decode every top-level field and compare at
 * every level; returns the file (caller frees).
 */
static LpFile *
nested_round_trip_paged(LpFileVersion version, const NestedSpec *specs, uint32_t n,
						uint64_t rows, uint64_t batch_rows, uint64_t flush_bytes)
{
	NestedColumns columns;
	LpError		err;
	uint8_t    *bytes = NULL;
	uint64_t	size = 0;
	LpInput    *input;
	LpFile	   *file = NULL;
	bool		encoded;

	nested_build(specs, n, rows, &columns);
	encoded = lp_round_trip_encode(&columns.schema, version, columns.top_types, columns.top_arrays,
								   columns.num_top, rows, batch_rows, flush_bytes, &bytes, &size,
								   &err);
	LP_CHECK_MSG(encoded, "encode %s, %llu rows: %.300s", lp_file_version_name(version),
				 (unsigned long long) rows, err.message);
	if (!encoded)
	{
		nested_free(&columns);
		return NULL;
	}
	input = lp_memory_input_open("memory.lance", bytes, size);
	file = lp_file_open(input, &err);
	LP_CHECK_MSG(file != NULL, "reopen: %.300s", err.message);
	for (uint32_t t = 0; file != NULL && t < columns.num_top; t++)
	{
		uint64_t	bad;
		bool		decoded = lp_round_trip_compare(input, file, columns.top_fields[t],
													columns.top_types[t], columns.top_arrays[t],
													&bad, &err);

		LP_CHECK_MSG(decoded, "decode %s %s: %.300s", lp_file_version_name(version),
					 specs[columns.top_fields[t]].column.name, err.message);
		LP_CHECK_MSG(!decoded || bad == UINT64_MAX, "%s %s, %llu rows: row %llu differs",
					 lp_file_version_name(version), specs[columns.top_fields[t]].column.name,
					 (unsigned long long) rows, (unsigned long long) bad);
	}
	lp_input_close(input);
	lp_free(bytes);
	nested_free(&columns);
	return file;
}

static LpFile *
nested_round_trip(LpFileVersion version, const NestedSpec *specs, uint32_t n, uint64_t rows,
				  uint64_t batch_rows)
{
	return nested_round_trip_paged(version, specs, n, rows, batch_rows, 0);
}

/*
 * Structs of every kind of leaf, structs in structs, with nulls at the
 * struct, the member and both levels (and none), an all-null struct,
 * members wide enough for full-zip pages, constant members: 2.1+ carry
 * one repdef layer per struct in every page layout.
 */
static const NestedSpec struct_schema[] = {
	{-1, {"id", "int64", false, RANDOM, NULL}, 0},
	{-1, {"s", "struct", true, RANDOM, NULL}, 5},
	{1, {"a", "int32", true, RANDOM, NULL}, 0},
	{1, {"b", "string", true, RANDOM, NULL}, 0},
	{1, {"inner", "struct", true, RANDOM, NULL}, 11},
	{4, {"c", "double", true, SMALL, NULL}, 0},
	{4, {"v", "fixed_size_list:float:4", false, RANDOM, NULL}, 0},
	{4, {"deep", "struct", true, RANDOM, NULL}, 3},
	{7, {"d", "int16", false, RANDOM, NULL}, 0},
	{1, {"flag", "bool", true, RANDOM, NULL}, 0},
	{1, {"const", "int64", false, CONSTANT, NULL}, 0},
	{1, {"nulls", "int32", true, ALL_NULL, NULL}, 0},
	{-1, {"valid", "struct", false, RANDOM, NULL}, 0},
	{12, {"long", "large_binary", true, LONG_STRINGS, NULL}, 0},
	{12, {"vec", "fixed_size_list:float:80", true, RANDOM, NULL}, 0},
	{12, {"rare", "int32", true, RARE_NULLS, NULL}, 0},
	{-1, {"gone", "struct", true, RANDOM, NULL}, 1},
	{16, {"x", "string", true, RANDOM, NULL}, 0},
	{16, {"y", "int32", false, RANDOM, NULL}, 0},
};

#define N_STRUCT_SCHEMA ((uint32_t) (sizeof(struct_schema) / sizeof(struct_schema[0])))

LP_TEST(encode_structs_round_trip)
{
	static const uint64_t counts[] = {0, 1, 3, 1024, 1025, 5000};

	rng_state = 11;
	for (size_t v = 1; v < N_VERSIONS; v++)
		for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++)
		{
			LpFile	   *file = nested_round_trip(versions[v], struct_schema, N_STRUCT_SCHEMA,
												 counts[i], 700);

			/* 2.1+ give columns to the leaves only. */
			if (file != NULL)
				LP_CHECK_EQ_U64(file->num_columns, 14);
			lp_file_free(file);
		}
}

LP_TEST(encode_structs_fill_pages)
{
	/* 250-400 byte members under a struct with nulls: several 8 MiB pages, split anywhere. */
	static const NestedSpec specs[] = {
		{-1, {"s", "struct", true, RANDOM, NULL}, 6},
		{0, {"long", "string", true, LONG_STRINGS, NULL}, 0},
		{0, {"i", "int32", true, RANDOM, NULL}, 0},
	};

	rng_state = 12;
	for (size_t v = 0; v < N_VERSIONS; v++)
	{
		/* 2.0 cannot store a null struct: its struct here has none. */
		NestedSpec	version_specs[3];
		LpFile	   *file;

		memcpy(version_specs, specs, sizeof(specs));
		if (versions[v] == LP_FILE_VERSION_2_0)
			version_specs[0].null_period = 0;
		file = nested_round_trip(versions[v], version_specs, 3, 60000, 6999);
		if (file != NULL)
			LP_CHECK(file->columns[versions[v] == LP_FILE_VERSION_2_0 ? 1 : 0].num_pages >= 2);
		lp_file_free(file);
	}
}

LP_TEST(encode_structs_2_0)
{
	/* 2.0: a header column per struct (one SimpleStruct page of every row), members' nulls only. */
	static const NestedSpec specs[] = {
		{-1, {"s", "struct", false, RANDOM, NULL}, 0},
		{0, {"a", "int32", true, RANDOM, NULL}, 0},
		{0, {"inner", "struct", false, RANDOM, NULL}, 0},
		{2, {"b", "string", true, RANDOM, NULL}, 0},
		{2, {"v", "fixed_size_list:float:4", true, RANDOM, NULL}, 0},
		{-1, {"id", "int64", false, RANDOM, NULL}, 0},
	};
	static const NestedSpec null_struct[] = {
		{-1, {"s", "struct", true, RANDOM, NULL}, 4},
		{0, {"a", "int32", true, RANDOM, NULL}, 0},
	};
	NestedColumns columns;
	LpFile	   *file;
	LpError		err;
	uint8_t    *bytes = NULL;
	uint64_t	size;

	rng_state = 13;
	file = nested_round_trip(LP_FILE_VERSION_2_0, specs, 6, 3000, 1000);
	if (file != NULL)
	{
		LP_CHECK_EQ_U64(file->num_columns, 6);
		LP_CHECK_EQ_U64(file->columns[0].num_pages, 1);
		LP_CHECK_EQ_U64(file->columns[0].pages[0].num_rows, 3000);
		LP_CHECK_EQ_U64(file->columns[0].pages[0].num_buffers, 0);
		LP_CHECK_STR(file->columns[0].pages[0].layout, "struct");
		LP_CHECK_STR(file->columns[2].pages[0].layout, "struct");
	}
	lp_file_free(file);

	/* A null struct is refused in 2.0, before anything of the batch is taken. */
	nested_build(null_struct, 2, 100, &columns);
	LP_CHECK(!lp_round_trip_encode(&columns.schema, LP_FILE_VERSION_2_0, columns.top_types,
								   columns.top_arrays, columns.num_top, 100, 100, 0, &bytes, &size, &err));
	LP_CHECK(err.code == LP_ERR_UNSUPPORTED);
	LP_CHECK(strstr(err.message, "2.0") != NULL);
	nested_free(&columns);
}

/* ---- lists ------------------------------------------------------------------- */

/*
 * Lists (and large lists) of every kind of leaf, lists of lists, lists of
 * structs with lists in them, lists in structs: null lists, empty lists,
 * null items, null structs inside and outside lists, all-null and all-empty
 * lists; 2.1+ write repetition levels in mini-block chunks with a
 * repetition index.
 */
static const NestedSpec list_schema[] = {
	{-1, {"id", "int64", false, RANDOM, NULL}, 0},
	{-1, {"li", "list", true, RANDOM, NULL}, 6},
	{1, {"item", "int32", true, RANDOM, NULL}, 0},
	{-1, {"ls", "large_list", false, RANDOM, NULL}, 0},
	{3, {"item", "string", true, RANDOM, NULL}, 0},
	{-1, {"lb", "list", true, RANDOM, NULL}, 4},
	{5, {"item", "bool", false, RANDOM, NULL}, 0},
	{-1, {"lv", "list", true, RANDOM, NULL}, 9},
	{7, {"item", "fixed_size_list:float:4", true, ITEM_NULLS, NULL}, 0},
	{-1, {"ll", "list", true, RANDOM, NULL}, 7},
	{9, {"inner", "list", true, RANDOM, NULL}, 3},
	{10, {"item", "double", true, SMALL, NULL}, 0},
	{-1, {"lst", "list", true, RANDOM, NULL}, 5},
	{12, {"item", "struct", true, RANDOM, NULL}, 4},
	{13, {"a", "int16", true, RANDOM, NULL}, 0},
	{13, {"tags", "list", true, RANDOM, NULL}, 6},
	{15, {"item", "binary", true, RANDOM, NULL}, 0},
	{-1, {"st", "struct", true, RANDOM, NULL}, 8},
	{17, {"nums", "list", true, RANDOM, NULL}, 3},
	{18, {"item", "uint8", false, SMALL, NULL}, 0},
	{17, {"x", "int32", true, RANDOM, NULL}, 0},
	{-1, {"gone", "list", true, RANDOM, NULL}, 1},
	{21, {"item", "int32", true, RANDOM, NULL}, 0},
	{-1, {"runs", "list", false, RANDOM, NULL}, 0},
	{23, {"item", "int64", false, RUNS, NULL}, 0},
};

#define N_LIST_SCHEMA ((uint32_t) (sizeof(list_schema) / sizeof(list_schema[0])))

LP_TEST(encode_lists_round_trip)
{
	static const uint64_t counts[] = {0, 1, 2, 5, 1023, 3000, 12000};

	rng_state = 21;
	for (size_t v = 1; v < N_VERSIONS; v++)
		for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++)
		{
			LpFile	   *file = nested_round_trip(versions[v], list_schema, N_LIST_SCHEMA,
												 counts[i], 997);

			if (file != NULL && counts[i] >= 1023)
			{
				/* lists of narrow items: mini-block pages with a repetition index */
				LP_CHECK_STR(file->columns[1].pages[0].layout, "mini_block");
				LP_CHECK_EQ_U64(file->columns[1].pages[0].num_buffers, 3);
			}
			lp_file_free(file);
		}
}

LP_TEST(encode_lists_fill_pages)
{
	/* Enough rows for several 8 MiB pages, which split on row boundaries. */
	static const NestedSpec specs[] = {
		{-1, {"l", "list", true, RANDOM, NULL}, 7},
		{0, {"item", "fixed_size_list:float:16", true, RANDOM, NULL}, 0},
		{-1, {"s", "list", true, RANDOM, NULL}, 5},
		{2, {"item", "string", true, RANDOM, NULL}, 0},
	};

	rng_state = 22;
	for (size_t v = 1; v < N_VERSIONS; v++)
	{
		LpFile	   *file = nested_round_trip(versions[v], specs, 4, 150000, 9999);

		if (file != NULL)
		{
			uint64_t	rows = 0;

			LP_CHECK(file->columns[0].num_pages >= 3);
			for (uint32_t p = 0; p < file->columns[0].num_pages; p++)
				rows += file->columns[0].pages[p].num_rows;
			LP_CHECK_EQ_U64(rows, 150000);
		}
		lp_file_free(file);
	}
}

LP_TEST(encode_wide_list_items_full_zip)
{
	/*
	 * List items of 256 bytes and more: full-zip pages whose control words
	 * carry repetition and definition levels, null and empty lists a
	 * control word alone, with a repetition index of the rows.
	 */
	static const NestedSpec specs[] = {
		{-1, {"ls", "list", true, RANDOM, NULL}, 4},
		{0, {"item", "string", true, LONG_STRINGS, NULL}, 0},
		{-1, {"lv", "large_list", true, RANDOM, NULL}, 6},
		{2, {"item", "fixed_size_list:float:80", true, ITEM_NULLS, NULL}, 0},
		{-1, {"ll", "list", true, RANDOM, NULL}, 5},
		{4, {"item", "struct", true, RANDOM, NULL}, 3},
		{5, {"bin", "large_binary", false, LONG_STRINGS, NULL}, 0},
	};
	static const uint64_t counts[] = {1, 7, 3000, 40000};

	rng_state = 23;
	for (size_t v = 1; v < N_VERSIONS; v++)
		for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++)
		{
			LpFile	   *file = nested_round_trip(versions[v], specs, 7, counts[i], 2999);

			if (file != NULL && counts[i] >= 3000)
				for (uint32_t c = 0; c < 3; c++)
				{
					LP_CHECK_STR(file->columns[c].pages[0].layout, "full_zip");
					LP_CHECK_EQ_U64(file->columns[c].pages[0].num_buffers, 2);
					if (counts[i] == 40000)
						LP_CHECK(file->columns[c].num_pages >= 2);
				}
			lp_file_free(file);
		}
}

LP_TEST(encode_lists_never_empty_with_null_items)
{
	/*
	 * Lists never null nor empty (all-valid list layers) of items with
	 * nulls, some lists beginning with a null item: the item's definition
	 * level is visible at the list's layer, also under a null struct and
	 * in full-zip pages.
	 */
	static const NestedSpec specs[] = {
		{-1, {"li", "list", false, RANDOM, NULL}, 0},
		{0, {"item", "int8", true, RANDOM, NULL}, 0},
		{-1, {"ll", "large_list", true, RANDOM, NULL}, 0},
		{2, {"item", "string", true, LONG_STRINGS, NULL}, 0},
		{-1, {"st", "struct", true, RANDOM, NULL}, 4},
		{4, {"l", "list", false, RANDOM, NULL}, 0},
		{5, {"item", "int16", true, RANDOM, NULL}, 0},
	};
	static const uint64_t counts[] = {1, 5, 3000};

	rng_state = 24;
	lists_never_empty = true;
	for (size_t v = 1; v < N_VERSIONS; v++)
		for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++)
			lp_file_free(nested_round_trip(versions[v], specs, 7, counts[i], 997));
	lists_never_empty = false;
}

/*
 * list_schema for 2.0, which has no place for a null struct nor for null
 * items inside a fixed-size list: their nulls left out.
 */
static void
list_schema_2_0(NestedSpec *specs)
{
	memcpy(specs, list_schema, sizeof(list_schema));
	for (uint32_t i = 0; i < N_LIST_SCHEMA; i++)
	{
		if (strcmp(specs[i].column.logical_type, "struct") == 0)
			specs[i].null_period = 0;
		if (specs[i].column.pattern == ITEM_NULLS)
			specs[i].column.pattern = RANDOM;
	}
}

LP_TEST(encode_small_pages)
{
	/*
	 * Pages written at about 4 KiB (lp_file_writer_set_page_bytes): every
	 * column of list_schema splits into pages (of whole rows), as with 8 MiB
	 * pages only many more rows would.
	 */
	NestedSpec	specs_2_0[N_LIST_SCHEMA];

	list_schema_2_0(specs_2_0);
	rng_state = 25;
	for (size_t v = 0; v < N_VERSIONS; v++)
	{
		LpFile	   *file = nested_round_trip_paged(versions[v], v == 0 ? specs_2_0 : list_schema,
												   N_LIST_SCHEMA, 3000, 997, 4096);

		for (uint32_t c = 0; file != NULL && c < file->num_columns; c++)
		{
			/* 2.0: a column per field, structs' one page of every row, an always null list's no items */
			const NestedSpec *spec = &specs_2_0[c];
			bool		one_page = v == 0 && (strcmp(spec->column.logical_type, "struct") == 0 ||
											  (spec->parent >= 0 && specs_2_0[spec->parent].null_period == 1));

			LP_CHECK_MSG(one_page || file->columns[c].num_pages >= 2, "%s column %u: %u pages",
						 lp_file_version_name(versions[v]), c, file->columns[c].num_pages);
		}
		lp_file_free(file);
	}
}

LP_TEST(encode_lists_2_0)
{
	/*
	 * 2.0: a column of offsets per list (List pages: page-relative ends,
	 * null lists shifted by num_items + 1), then its items' columns, whose
	 * pages count items; lists of lists, of structs, in structs.
	 */
	static const uint64_t counts[] = {0, 1, 2, 5, 1023, 3000, 12000};
	NestedSpec	specs[N_LIST_SCHEMA];

	list_schema_2_0(specs);
	rng_state = 23;
	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++)
	{
		LpFile	   *file = nested_round_trip(LP_FILE_VERSION_2_0, specs, N_LIST_SCHEMA, counts[i], 997);

		/* every field owns a column in 2.0 */
		if (file != NULL)
			LP_CHECK_EQ_U64(file->num_columns, N_LIST_SCHEMA);
		if (file != NULL && counts[i] > 0)
		{
			uint64_t	items = 0;

			LP_CHECK_STR(file->columns[1].pages[0].layout, "list");
			LP_CHECK_EQ_U64(file->columns[1].pages[0].num_buffers, 1);
			LP_CHECK_EQ_U64(file->columns[1].pages[0].num_rows, counts[i]);
			for (uint32_t p = 0; p < file->columns[2].num_pages; p++)
				items += file->columns[2].pages[p].num_rows;
			for (uint64_t r = 0; r < counts[i]; r++)
				items -= r % 6 == 2 ? 0 : LIST_LENGTH(r);
			LP_CHECK_EQ_U64(items, 0);
			/* a struct in a list: its header's one page counts the items */
			LP_CHECK_STR(file->columns[13].pages[0].layout, "struct");
			LP_CHECK_EQ_U64(file->columns[13].num_pages, 1);
		}
		lp_file_free(file);
	}
}

/* Whether the pages of 2.0 list column c and its items' column c + 1 end together. */
static void
check_list_pages_2_0(const LpFile *file, uint32_t c)
{
	LpError		err;
	uint64_t	list_items = 0;
	uint64_t	item_rows = 0;
	uint32_t	p = 0;

	for (uint32_t lp = 0; lp < file->columns[c].num_pages; lp++)
	{
		LpPageContext ctx = {file, c, lp, &err};
		Lance__Encodings__ArrayEncoding *enc;

		if (!lp_unpack_page_encoding(&ctx, &file->columns[c].pages[lp], (ProtobufCMessage **) &enc))
		{
			LP_CHECK_MSG(false, "page %u of column %u: %.300s", lp, c, err.message);
			return;
		}
		LP_CHECK(enc->array_encoding_case == LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_LIST);
		LP_CHECK_EQ_U64(enc->list->null_offset_adjustment, enc->list->num_items + 1);
		list_items += enc->list->num_items;
		lp_protobuf_free(&enc->base);
		while (p < file->columns[c + 1].num_pages && item_rows < list_items)
			item_rows += file->columns[c + 1].pages[p++].num_rows;
		LP_CHECK_EQ_U64(item_rows, list_items);
	}
	LP_CHECK_EQ_U64(p, file->columns[c + 1].num_pages);
}

LP_TEST(encode_lists_2_0_fill_pages)
{
	/* Items of several 8 MiB pages under one list page; lists whose offsets fill pages. */
	static const NestedSpec wide[] = {
		{-1, {"l", "list", true, RANDOM, NULL}, 7},
		{0, {"item", "fixed_size_list:float:16", true, RANDOM, NULL}, 0},
		{-1, {"s", "list", true, RANDOM, NULL}, 5},
		{2, {"item", "string", true, RANDOM, NULL}, 0},
	};
	static const NestedSpec many[] = {
		{-1, {"l", "large_list", true, RANDOM, NULL}, 9},
		{0, {"item", "uint8", false, SMALL, NULL}, 0},
	};
	LpFile	   *file;

	rng_state = 24;
	file = nested_round_trip(LP_FILE_VERSION_2_0, wide, 4, 150000, 9999);
	if (file != NULL)
	{
		LP_CHECK(file->columns[1].num_pages >= 2);
		check_list_pages_2_0(file, 0);
		check_list_pages_2_0(file, 2);
	}
	lp_file_free(file);

	/*
	 * 8 bytes of offsets a row: the list's page is written after about a
	 * million rows, and its items' page with it (Lance never lets two list
	 * pages share an items page).
	 */
	file = nested_round_trip(LP_FILE_VERSION_2_0, many, 2, 1100000, 99999);
	if (file != NULL)
	{
		LP_CHECK_EQ_U64(file->columns[0].num_pages, 2);
		LP_CHECK_EQ_U64(file->columns[1].num_pages, 2);
		check_list_pages_2_0(file, 0);
	}
	lp_file_free(file);
}

LP_TEST(encode_lists_2_0_without_items)
{
	/* Lists of structs that are all null: the struct's header still has its one page, of no item. */
	static const NestedSpec specs[] = {
		{-1, {"l", "list", true, RANDOM, NULL}, 1},
		{0, {"item", "struct", false, RANDOM, NULL}, 0},
		{1, {"a", "int32", true, RANDOM, NULL}, 0},
	};
	LpFile	   *file;

	rng_state = 25;
	file = nested_round_trip(LP_FILE_VERSION_2_0, specs, 3, 100, 30);
	if (file != NULL)
	{
		LP_CHECK_EQ_U64(file->columns[1].num_pages, 1);
		LP_CHECK_EQ_U64(file->columns[1].pages[0].num_rows, 0);
		LP_CHECK_EQ_U64(file->columns[2].num_pages, 0);
	}
	lp_file_free(file);
}

LP_TEST(encode_refuses_null_structs_in_2_0_lists)
{
	/* A null struct inside a list is refused in 2.0, as one outside. */
	static const NestedSpec specs[] = {
		{-1, {"l", "list", true, RANDOM, NULL}, 3},
		{0, {"item", "struct", true, RANDOM, NULL}, 4},
		{1, {"a", "int32", true, RANDOM, NULL}, 0},
	};
	NestedColumns columns;
	LpError		err;
	uint8_t    *bytes = NULL;
	uint64_t	size;

	nested_build(specs, 3, 100, &columns);
	LP_CHECK(!lp_round_trip_encode(&columns.schema, LP_FILE_VERSION_2_0, columns.top_types,
								   columns.top_arrays, columns.num_top, 100, 100, 0, &bytes, &size, &err));
	LP_CHECK(err.code == LP_ERR_UNSUPPORTED);
	LP_CHECK(strstr(err.message, "null at list item") != NULL);
	nested_free(&columns);
}
