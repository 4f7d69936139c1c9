/*
 * test_encode_compress.c - the encoder's dictionaries and General (lz4,
 * zstd) compression against our own decoder: pages of low-cardinality
 * strings, binaries and numbers, and columns whose field metadata asks for
 * lance-encoding:compression, decode to exactly the values written for
 * 2.0 - 2.3, and the encodings chosen are the ones lancedb 0.39 chooses for
 * the same data (recorded with test/tools/page_encodings on its files;
 * test/reference/encode_compress.test.cjs compares them live).
 */
#include <stdlib.h>
#include <string.h>

#include "lp_test.h"

#include "base/lp_alloc.h"
#include "base/lp_bytes.h"
#include "decode/lp_decode.h"
#include "encode/lp_file_writer.h"
#include "format/lp_encodings.h"
#include "format/lp_file.h"

typedef Lance__Encodings21__CompressiveEncoding CE;

#define ROWS 20000

/* How a test column's row i is made. */
typedef enum Values
{
	WORDS,						/* one of `distinct` (at most 10) short words */
	LONG_WORDS,					/* one of 10 words repeated 60 times: wider than mini-block values */
	CYCLE,						/* "v%07u" of i % distinct */
	TEXT,						/* 0 - 39 random letters of 17 */
	WORD_TEXT,					/* 1 - 20 random words: compressible by lz4 */
	SHORT_TEXT,					/* 0 - 2 random letters */
	LONG_TEXT,					/* 256 - 355 random letters: full-zip pages */
	HUGE_TEXT,					/* 33000 - 33099 random letters */
	RANDOM_BYTES,				/* 0 - 39 random bytes */
	NUMBERS,					/* (random % distinct) * 1000000007, to the type's width */
	RANDOM_NUMBERS,				/* random bits */
	SMALL_NUMBERS,				/* random % distinct */
	CYCLE_NUMBERS,				/* (i % distinct) * 1000000007 */
	FOUR_INTS,					/* one of 4 int32 values, -5 among them (no bit-packing) */
	FLOATS,						/* one of 4 doubles */
	DECIMALS,					/* one of 3 decimal128 values */
	NONE						/* every row null */
} Values;

typedef struct Spec
{
	const char *name;
	const char *logical_type;
	Values		values;
	uint32_t	distinct;
	bool		nulls;			/* every 7th row null */
	const char *compression;	/* lance-encoding:compression, or NULL */
	const char *level;			/* lance-encoding:compression-level, or NULL */
} Spec;

static const char *const words[] = {"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta",
"theta", "iota", "kappa"};

static uint64_t rng_state;

static uint64_t
next_random(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* Append row i's bytes of a variable-width column to data. */
static void
append_string(const Spec *spec, uint64_t i, uint8_t **data, uint64_t *len, uint64_t *cap)
{
	static char text[34000];
	uint64_t	n = 0;

	switch (spec->values)
	{
		case WORDS:
			n = (uint64_t) snprintf(text, sizeof(text), "%s", words[next_random() % spec->distinct]);
			break;
		case LONG_WORDS:
			{
				const char *word = words[next_random() % 10];

				for (int k = 0; k < 60; k++)
					n += (uint64_t) snprintf(text + n, sizeof(text) - n, "%s", word);
				break;
			}
		case CYCLE:
			n = (uint64_t) snprintf(text, sizeof(text), "v%07u", (unsigned) (i % spec->distinct));
			break;
		case TEXT:
		case SHORT_TEXT:
		case LONG_TEXT:
		case HUGE_TEXT:
			n = spec->values == TEXT ? next_random() % 40 : spec->values == SHORT_TEXT ? next_random() % 3 :
				(spec->values == LONG_TEXT ? 256 : 33000) + next_random() % 100;
			for (uint64_t k = 0; k < n; k++)
				text[k] = "abcdefghij klmnop"[next_random() % 17];
			break;
		case WORD_TEXT:
			for (uint64_t k = 0, count = 1 + next_random() % 20; k < count; k++)
				n += (uint64_t) snprintf(text + n, sizeof(text) - n, "%s ", words[next_random() % 10]);
			break;
		case RANDOM_BYTES:
			n = next_random() % 40;
			for (uint64_t k = 0; k < n; k++)
				text[k] = (char) next_random();
			break;
		default:
			break;
	}
	if (*len + n > *cap)
	{
		*cap = (*cap + n) * 2;
		*data = realloc(*data, *cap);
	}
	memcpy(*data + *len, text, n);
	*len += n;
}

/* Row i of a fixed-width column into value (width bytes, zeroed). */
static void
fill_fixed(const Spec *spec, uint64_t i, uint8_t *value, uint32_t width)
{
	static const int32_t four[] = {1000000, -5, 77777777, 3};
	static const double floats[] = {1.5, 2.25, -3.125, 1e10};
	static const uint32_t decimals[] = {100, 2000, 30000};
	uint64_t	number;

	switch (spec->values)
	{
		case NUMBERS:
		case CYCLE_NUMBERS:
			number = (spec->values == NUMBERS ? next_random() % spec->distinct : i % spec->distinct) *
				1000000007ULL;
			memcpy(value, &number, width < 8 ? width : 8);
			break;
		case RANDOM_NUMBERS:
		case SMALL_NUMBERS:
			number = spec->values == RANDOM_NUMBERS ? next_random() : next_random() % spec->distinct;
			memcpy(value, &number, width < 8 ? width : 8);
			break;
		case FOUR_INTS:
			memcpy(value, &four[next_random() % 4], 4);
			break;
		case FLOATS:
			memcpy(value, &floats[next_random() % 4], 8);
			break;
		case DECIMALS:
			memcpy(value, &decimals[next_random() % 3], 4);
			break;
		default:
			break;
	}
}

static LpArray *
make_array(const LpType *type, const Spec *spec, uint64_t rows)
{
	LpArray    *array = lp_array_new(type);
	uint32_t	width = lp_type_byte_width(type);

	array->length = rows;
	if (spec->nulls || spec->values == NONE)
	{
		array->validity = lp_alloc0(rows / 8 + 1);
		for (uint64_t i = 0; i < rows; i++)
		{
			bool		valid = spec->values != NONE && i % 7 != 3;

			lp_bit_set(array->validity, i, valid);
			array->null_count += !valid;
		}
	}
	if (lp_type_is_variable_width(type))
	{
		uint64_t	cap = 1024;
		uint8_t    *data = malloc(cap);
		uint64_t	len = 0;

		array->offsets = lp_alloc((rows + 1) * sizeof(uint64_t));
		array->offsets[0] = 0;
		for (uint64_t i = 0; i < rows; i++)
		{
			if (lp_array_is_valid(array, i))
				append_string(spec, i, &data, &len, &cap);
			array->offsets[i + 1] = len;
		}
		array->data = lp_memdup(data, len + 1);
		array->data_len = len;
		free(data);
	}
	else
	{
		array->values = lp_alloc0(rows * width + 1);
		for (uint64_t i = 0; i < rows; i++)
			if (lp_array_is_valid(array, i))
				fill_fixed(spec, i, array->values + i * width, width);
	}
	return array;
}

static bool
rows_equal(const LpType *type, const LpArray *a, const LpArray *b, uint64_t i)
{
	uint32_t	width = lp_type_byte_width(type);

	if (lp_array_is_valid(a, i) != lp_array_is_valid(b, i))
		return false;
	if (!lp_array_is_valid(a, i))
		return true;
	if (lp_type_is_variable_width(type))
	{
		uint64_t	len = a->offsets[i + 1] - a->offsets[i];

		return b->offsets[i + 1] - b->offsets[i] == len &&
			(len == 0 || memcmp(a->data + a->offsets[i], b->data + b->offsets[i], len) == 0);
	}
	return memcmp(a->values + i * width, b->values + i * width, width) == 0;
}

/* The written and reopened file, its bytes kept for the page inspections. */
typedef struct Written
{
	uint8_t    *bytes;
	LpInput    *input;
	LpFile	   *file;
} Written;

static void
written_free(Written *w)
{
	if (w->file)
		lp_file_free(w->file);
	if (w->input)
		lp_input_close(w->input);
	free(w->bytes);
	memset(w, 0, sizeof(*w));
}

/*
 * Write rows rows of the columns (batches of 5000), reopen the file and
 * check every field decodes to the values written.
 */
static Written
round_trip(LpFileVersion version, const Spec *specs, uint32_t n, uint64_t rows)
{
	LpSchema	schema;
	LpKeyValue *metadata = calloc(2 * n, sizeof(LpKeyValue));
	LpType	  **types = calloc(n, sizeof(LpType *));
	LpArray   **arrays = calloc(n, sizeof(LpArray *));
	LpOutput   *output = lp_memory_output_open("memory.lance");
	LpFileWriter *writer;
	LpError		err;
	uint64_t	size = 0;
	uint64_t	len;
	Written		w = {0};

	memset(&schema, 0, sizeof(schema));
	schema.num_fields = n;
	schema.fields = calloc(n, sizeof(LpField));
	for (uint32_t c = 0; c < n; c++)
	{
		LpField    *field = &schema.fields[c];

		field->id = (int32_t) c;
		field->parent_id = -1;
		field->name = (char *) specs[c].name;
		field->logical_type = (char *) specs[c].logical_type;
		field->nullable = true;
		field->legacy_encoding = strstr(specs[c].logical_type, "string") ||
			strstr(specs[c].logical_type, "binary") ? 2 : 1;
		field->metadata = metadata + 2 * c;
		if (specs[c].compression)
			metadata[2 * c + field->num_metadata++] = (LpKeyValue) {
				"lance-encoding:compression",
				{(uint8_t *) specs[c].compression, strlen(specs[c].compression)}
			};
		if (specs[c].level)
			metadata[2 * c + field->num_metadata++] = (LpKeyValue) {
				"lance-encoding:compression-level",
				{(uint8_t *) specs[c].level, strlen(specs[c].level)}
			};
		LP_CHECK(lp_type_parse(specs[c].logical_type, "memory.lance", specs[c].name, &types[c], &err));
		arrays[c] = make_array(types[c], &specs[c], rows);
	}
	writer = lp_file_writer_open(output, &schema, version, &err);
	LP_CHECK_MSG(writer != NULL, "open: %.300s", err.message);
	for (uint64_t start = 0; writer != NULL && start < rows; start += 5000)
	{
		uint64_t	count = rows - start < 5000 ? rows - start : 5000;
		LpArray   **slices = calloc(n, sizeof(LpArray *));
		bool		ok;

		for (uint32_t c = 0; c < n; c++)
		{
			const LpArray *whole = arrays[c];
			LpArray    *slice = lp_array_new(types[c]);
			uint32_t	width = lp_type_byte_width(types[c]);

			slice->length = count;
			if (whole->validity)
			{
				slice->validity = lp_alloc0(count / 8 + 1);
				for (uint64_t i = 0; i < count; i++)
					lp_bit_set(slice->validity, i, lp_bit_get(whole->validity, start + i));
			}
			if (lp_type_is_variable_width(types[c]))
			{
				slice->offsets = lp_memdup(whole->offsets + start, (count + 1) * sizeof(uint64_t));
				slice->data = lp_memdup(whole->data, whole->data_len + 1);
				slice->data_len = whole->data_len;
			}
			else
				slice->values = lp_memdup(whole->values + start * width, count * width);
			slices[c] = slice;
		}
		ok = lp_file_writer_write(writer, (const LpArray *const *) slices, n, &err);
		LP_CHECK_MSG(ok, "write: %.300s", err.message);
		for (uint32_t c = 0; c < n; c++)
			lp_array_free(slices[c]);
		free(slices);
		if (!ok)
			break;
	}
	if (writer != NULL)
	{
		LP_CHECK_MSG(lp_file_writer_finish(writer, &size, &err), "finish: %.300s", err.message);
		lp_file_writer_free(writer);
	}
	w.bytes = malloc(size + 1);
	memcpy(w.bytes, lp_memory_output_data(output, &len), size);
	output->ops->abort(output);
	w.input = lp_memory_input_open("memory.lance", w.bytes, size);
	w.file = lp_file_open(w.input, &err);
	LP_CHECK_MSG(w.file != NULL, "reopen: %.300s", err.message);
	for (uint32_t c = 0; w.file != NULL && c < n; c++)
	{
		LpType	   *decoded_type;
		LpArray    *decoded;
		uint64_t	bad = UINT64_MAX;

		if (!lp_decode_field(w.input, w.file, c, &decoded_type, &decoded, &err))
		{
			LP_CHECK_MSG(false, "%s decode %s: %.300s", lp_file_version_name(version), specs[c].name,
						 err.message);
			continue;
		}
		LP_CHECK_EQ_U64(decoded->length, rows);
		for (uint64_t i = 0; i < rows && i < decoded->length && bad == UINT64_MAX; i++)
			if (!rows_equal(types[c], arrays[c], decoded, i))
				bad = i;
		LP_CHECK_MSG(bad == UINT64_MAX, "%s %s: row %llu differs", lp_file_version_name(version),
					 specs[c].name, (unsigned long long) bad);
		lp_array_free(decoded);
		lp_type_free(decoded_type);
	}
	for (uint32_t c = 0; c < n; c++)
	{
		lp_array_free(arrays[c]);
		lp_type_free(types[c]);
	}
	free(types);
	free(arrays);
	free(metadata);
	free(schema.fields);
	return w;
}

/* Column c's index among specs, by name. */
static uint32_t
column(const Spec *specs, uint32_t n, const char *name)
{
	for (uint32_t c = 0; c < n; c++)
		if (strcmp(specs[c].name, name) == 0)
			return c;
	LP_CHECK_MSG(false, "no column %s", name);
	return 0;
}

/* Page 0 of column c of a 2.1+ file as a PageLayout (lp_protobuf_free it), or NULL. */
static Lance__Encodings21__PageLayout *
layout_of(const Written *w, uint32_t c)
{
	ProtobufCMessage *inner;
	LpUnwrapResult result;

	if (w->file == NULL || c >= w->file->num_columns || w->file->columns[c].num_pages != 1 ||
		!lp_encoding_unwrap(w->file->columns[c].pages[0].encoding.data,
							w->file->columns[c].pages[0].encoding.len, LP_ENCODING_PAGE_V2_1,
							&inner, &result))
		return NULL;
	return (Lance__Encodings21__PageLayout *) inner;
}

/*
 * What a mini-block page of column c holds: value compression, the case
 * under General (0 without), the dictionary's case (0 without) and the case
 * under its General, and the number of dictionary items.
 */
typedef struct MiniBlockSummary
{
	int			values;
	int			values_in_general;
	int			general_scheme;
	int			general_level;	/* -1 without */
	int			dictionary;
	int			dictionary_in_general;
	uint64_t	num_dictionary_items;
	uint32_t	num_buffers;
} MiniBlockSummary;

static MiniBlockSummary
summarize(const Written *w, const Spec *specs, uint32_t n, const char *name)
{
	uint32_t	c = column(specs, n, name);
	Lance__Encodings21__PageLayout *layout = layout_of(w, c);
	MiniBlockSummary s = {-1, 0, 0, -1, 0, 0, 0, 0};

	LP_CHECK_MSG(layout != NULL && layout->layout_case == LANCE__ENCODINGS21__PAGE_LAYOUT__LAYOUT_MINI_BLOCK_LAYOUT,
				 "%s is one mini-block page", name);
	if (layout != NULL && layout->layout_case == LANCE__ENCODINGS21__PAGE_LAYOUT__LAYOUT_MINI_BLOCK_LAYOUT)
	{
		const Lance__Encodings21__MiniBlockLayout *mb = layout->mini_block_layout;
		const CE   *values = mb->value_compression;

		s.values = (int) values->compression_case;
		if (values->compression_case == LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_GENERAL)
		{
			s.values_in_general = (int) values->general->values->compression_case;
			s.general_scheme = (int) values->general->compression->scheme;
			if (values->general->compression->level_presence_case ==
				LANCE__ENCODINGS21__BUFFER_COMPRESSION__LEVEL_PRESENCE_LEVEL)
				s.general_level = values->general->compression->level;
		}
		if (mb->dictionary != NULL)
		{
			s.dictionary = (int) mb->dictionary->compression_case;
			if (mb->dictionary->compression_case == LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_GENERAL)
			{
				s.dictionary_in_general = (int) mb->dictionary->general->values->compression_case;
				LP_CHECK_EQ_U64(mb->dictionary->general->compression->scheme,
								LANCE__ENCODINGS21__COMPRESSION_SCHEME__COMPRESSION_ALGORITHM_LZ4);
			}
		}
		s.num_dictionary_items = mb->num_dictionary_items;
		s.num_buffers = w->file->columns[c].pages[0].num_buffers;
	}
	if (layout != NULL)
		lp_protobuf_free((ProtobufCMessage *) layout);
	return s;
}

/*
 * The value compression of the full-zip page of a column, the case under
 * General (0 without), its scheme and level (-1 without).
 */
static void
summarize_fullzip(const Written *w, const Spec *specs, uint32_t n, const char *name,
				  int *values, int *inner, int *scheme, int *level)
{
	Lance__Encodings21__PageLayout *layout = layout_of(w, column(specs, n, name));

	*values = -1;
	*inner = *scheme = 0;
	*level = -1;
	LP_CHECK_MSG(layout != NULL && layout->layout_case == LANCE__ENCODINGS21__PAGE_LAYOUT__LAYOUT_FULL_ZIP_LAYOUT,
				 "%s is one full-zip page", name);
	if (layout != NULL && layout->layout_case == LANCE__ENCODINGS21__PAGE_LAYOUT__LAYOUT_FULL_ZIP_LAYOUT)
	{
		const CE   *ce = layout->full_zip_layout->value_compression;

		*values = (int) ce->compression_case;
		if (ce->compression_case == LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_GENERAL)
		{
			*inner = (int) ce->general->values->compression_case;
			*scheme = (int) ce->general->compression->scheme;
			if (ce->general->compression->level_presence_case ==
				LANCE__ENCODINGS21__BUFFER_COMPRESSION__LEVEL_PRESENCE_LEVEL)
				*level = ce->general->compression->level;
		}
	}
	if (layout != NULL)
		lp_protobuf_free((ProtobufCMessage *) layout);
}

#define FLAT LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_FLAT
#define VARIABLE LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_VARIABLE
#define GENERAL LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_GENERAL
#define INLINE LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_INLINE_BITPACKING
#define OUT_OF_LINE LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_OUT_OF_LINE_BITPACKING
#define RLE LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_RLE
#define FSST LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_FSST
#define BSS LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_BYTE_STREAM_SPLIT
#define LZ4 LANCE__ENCODINGS21__COMPRESSION_SCHEME__COMPRESSION_ALGORITHM_LZ4
#define ZSTD LANCE__ENCODINGS21__COMPRESSION_SCHEME__COMPRESSION_ALGORITHM_ZSTD

static const Spec dictionary_specs[] = {
	{"low_str", "string", WORDS, 10, true, NULL, NULL},
	{"low_long_str", "string", LONG_WORDS, 10, false, NULL, NULL},
	{"low_large", "large_string", WORDS, 10, false, NULL, NULL},
	{"low_bin", "binary", WORDS, 7, true, NULL, NULL},
	{"s99", "string", CYCLE, 99, false, NULL, NULL},
	{"s100", "string", CYCLE, 100, false, NULL, NULL},
	{"s2560", "string", CYCLE, 2560, false, NULL, NULL},
	{"s2561", "string", CYCLE, 2561, false, NULL, NULL},
	{"short_text", "string", SHORT_TEXT, 0, false, NULL, NULL},
	{"null_str", "string", NONE, 0, true, NULL, NULL},
	{"low_i64", "int64", NUMBERS, 4, true, NULL, NULL},
	{"i64_1000", "int64", CYCLE_NUMBERS, 1000, false, NULL, NULL},
	{"i64_1500", "int64", CYCLE_NUMBERS, 1500, false, NULL, NULL},
	{"low_f64", "double", FLOATS, 0, false, NULL, NULL},
	{"low_dec", "decimal:128:10:2", DECIMALS, 0, true, NULL, NULL},
	{"low_i32", "int32", NUMBERS, 50, false, NULL, NULL},
	{"zstd_low_str", "string", WORDS, 10, false, "zstd", NULL},
};

#define N_DICTIONARY_SPECS ((uint32_t) (sizeof(dictionary_specs) / sizeof(dictionary_specs[0])))

LP_TEST(encode_dictionaries_follow_lance)
{
	const Spec *specs = dictionary_specs;
	uint32_t	n = N_DICTIONARY_SPECS;

	for (int v = LP_FILE_VERSION_2_1; v <= LP_FILE_VERSION_2_3; v++)
	{
		bool		v22 = v >= LP_FILE_VERSION_2_2;
		Written		w;
		MiniBlockSummary s;

		rng_state = 11;
		w = round_trip((LpFileVersion) v, specs, n, ROWS);
		if (w.file == NULL)
			continue;

		/* Strings: u32 indices bit-packed, the dictionary in buffer 2, lz4-compressed from 2.2 on. */
		s = summarize(&w, specs, n, "low_str");
		LP_CHECK_EQ_U64(s.values, INLINE);
		LP_CHECK_EQ_U64(s.dictionary, v22 ? GENERAL : VARIABLE);
		LP_CHECK_EQ_U64(s.dictionary_in_general, v22 ? VARIABLE : 0);
		LP_CHECK_EQ_U64(s.num_dictionary_items, 11);	/* null rows add the empty string */
		LP_CHECK_EQ_U64(s.num_buffers, 3);
		/* Values of 256 bytes and more are still a dictionary, not full-zip. */
		s = summarize(&w, specs, n, "low_long_str");
		LP_CHECK_EQ_U64(s.num_dictionary_items, 10);
		LP_CHECK_EQ_U64(summarize(&w, specs, n, "low_large").num_dictionary_items, 10);
		LP_CHECK_EQ_U64(summarize(&w, specs, n, "low_bin").num_dictionary_items, 8);
		LP_CHECK_EQ_U64(summarize(&w, specs, n, "s2560").num_dictionary_items, 2560);
		LP_CHECK_EQ_U64(summarize(&w, specs, n, "s2561").dictionary, 0);
		/* Some 300 values of up to 2 bytes: two index bytes each outweigh them. */
		LP_CHECK_EQ_U64(summarize(&w, specs, n, "short_text").dictionary, 0);
		LP_CHECK_EQ_U64(summarize(&w, specs, n, "low_i32").dictionary, 0);

		/* 128-bit values from 2.1 on, not bit-packed; 64-bit values from 2.2 on. */
		s = summarize(&w, specs, n, "low_dec");
		LP_CHECK_EQ_U64(s.dictionary, v22 ? GENERAL : FLAT);
		LP_CHECK_EQ_U64(s.num_dictionary_items, 4);		/* three values and the null slots' zero */
		s = summarize(&w, specs, n, "low_i64");
		LP_CHECK_EQ_U64(s.dictionary, v22 ? GENERAL : 0);
		LP_CHECK_EQ_U64(s.dictionary_in_general, v22 ? FLAT : 0);
		LP_CHECK_EQ_U64(summarize(&w, specs, n, "i64_1000").dictionary, v22 ? INLINE : 0);
		LP_CHECK_EQ_U64(summarize(&w, specs, n, "i64_1500").dictionary, v22 ? OUT_OF_LINE : 0);
		LP_CHECK_EQ_U64(summarize(&w, specs, n, "low_f64").num_dictionary_items, v22 ? 4 : 0);

		/*
		 * The field's compression applies to the indices (byte-stream split:
		 * their high bytes are all zero), not to the dictionary.
		 */
		s = summarize(&w, specs, n, "zstd_low_str");
		LP_CHECK_EQ_U64(s.values, GENERAL);
		LP_CHECK_EQ_U64(s.general_scheme, ZSTD);
		LP_CHECK_EQ_U64(s.values_in_general, BSS);
		LP_CHECK_EQ_U64(s.dictionary, v22 ? GENERAL : VARIABLE);
		written_free(&w);
	}
}

LP_TEST(encode_v20_dictionaries_follow_lance)
{
	const Spec *specs = dictionary_specs;
	uint32_t	n = N_DICTIONARY_SPECS;
	Written		w;

	rng_state = 12;
	w = round_trip(LP_FILE_VERSION_2_0, specs, n, ROWS);
	if (w.file != NULL)
	{
		/* Utf8 with fewer than 100 distinct valid values; large strings and binaries never. */
		static const char *const dictionaries[] = {"low_str", "low_long_str", "s99", "null_str",
		"zstd_low_str"};
		static const char *const binaries[] = {"low_large", "low_bin", "s100", "s2560", "short_text"};

		for (size_t k = 0; k < sizeof(dictionaries) / sizeof(dictionaries[0]); k++)
			LP_CHECK_STR(w.file->columns[column(specs, n, dictionaries[k])].pages[0].layout, "dictionary");
		for (size_t k = 0; k < sizeof(binaries) / sizeof(binaries[0]); k++)
			LP_CHECK_STR(w.file->columns[column(specs, n, binaries[k])].pages[0].layout, "binary");
		LP_CHECK_STR(w.file->columns[column(specs, n, "low_i64")].pages[0].layout, "nullable");
		/* buffers: u8 indices, the items' end offsets, their bytes */
		LP_CHECK_EQ_U64(w.file->columns[0].pages[0].num_buffers, 3);
		LP_CHECK_EQ_U64(w.file->columns[0].pages[0].buffers[0].size, ROWS);
		LP_CHECK_EQ_U64(w.file->columns[0].pages[0].buffers[1].size, 10 * 8);
		written_free(&w);
	}
	/* Fewer than 100 rows: no dictionary (the same in 2.1+). */
	rng_state = 13;
	w = round_trip(LP_FILE_VERSION_2_0, specs, 1, 99);
	if (w.file != NULL)
		LP_CHECK_STR(w.file->columns[0].pages[0].layout, "binary");
	written_free(&w);
	w = round_trip(LP_FILE_VERSION_2_2, specs, 1, 99);
	if (w.file != NULL)
		LP_CHECK_EQ_U64(summarize(&w, specs, 1, "low_str").dictionary, 0);
	written_free(&w);
}

static const Spec compression_specs[] = {
	{"zstd_text", "string", TEXT, 0, true, "zstd", NULL},
	{"zstd9_text", "large_string", TEXT, 0, false, "zstd", "9"},
	{"lz4_text", "string", WORD_TEXT, 0, false, "lz4", NULL},
	{"lz4_random", "binary", RANDOM_BYTES, 0, false, "lz4", NULL},
	{"none_text", "string", TEXT, 0, false, "none", NULL},
	{"fsst_short", "string", SHORT_TEXT, 0, false, "fsst", NULL},
	{"none_i64", "int64", NUMBERS, 1000000, false, "none", NULL},
	{"zstd_i64", "int64", SMALL_NUMBERS, 1000000, false, "zstd", "3"},
	{"lz4_i32", "int32", SMALL_NUMBERS, 100000, true, "lz4", NULL},
	{"four_ints", "int32", FOUR_INTS, 0, false, NULL, NULL},
	{"zstd_random", "uint64", RANDOM_NUMBERS, 0, false, "zstd", NULL},
	{"lz4_long", "string", LONG_TEXT, 0, true, "lz4", NULL},
	{"none_long", "string", LONG_TEXT, 0, false, "none", NULL},
};

#define N_COMPRESSION_SPECS ((uint32_t) (sizeof(compression_specs) / sizeof(compression_specs[0])))

LP_TEST(encode_general_compression_follows_lance)
{
	const Spec *specs = compression_specs;
	uint32_t	n = N_COMPRESSION_SPECS;

	for (int v = LP_FILE_VERSION_2_1; v <= LP_FILE_VERSION_2_3; v++)
	{
		Written		w;
		MiniBlockSummary s;

		rng_state = 21;
		w = round_trip((LpFileVersion) v, specs, n, ROWS);
		if (w.file == NULL)
			continue;
		/* Strings asking for zstd or lz4: plain offsets and bytes, each chunk compressed. */
		s = summarize(&w, specs, n, "zstd_text");
		LP_CHECK_EQ_U64(s.values, GENERAL);
		LP_CHECK_EQ_U64(s.general_scheme, ZSTD);
		LP_CHECK_EQ_U64(s.general_level, -1);
		LP_CHECK_EQ_U64(s.values_in_general, VARIABLE);
		s = summarize(&w, specs, n, "zstd9_text");
		LP_CHECK_EQ_U64(s.general_level, 9);
		s = summarize(&w, specs, n, "lz4_text");
		LP_CHECK_EQ_U64(s.general_scheme, LZ4);
		LP_CHECK_EQ_U64(s.values_in_general, VARIABLE);
		/* What does not shrink stays uncompressed. */
		LP_CHECK_EQ_U64(summarize(&w, specs, n, "lz4_random").values, VARIABLE);
		/* "none": no FSST, no bit-packing; "fsst": FSST even for a small page. */
		LP_CHECK_EQ_U64(summarize(&w, specs, n, "none_text").values, VARIABLE);
		LP_CHECK_EQ_U64(summarize(&w, specs, n, "fsst_short").values, FSST);
		LP_CHECK_EQ_U64(summarize(&w, specs, n, "none_i64").values, FLAT);
		/*
		 * 32- and 64-bit values whose bytes repeat (entropy under 4 bits a
		 * byte position) are byte-stream split under General; random
		 * doubles are not, and keep their usual encoding.
		 */
		s = summarize(&w, specs, n, "zstd_i64");
		LP_CHECK_EQ_U64(s.values, GENERAL);
		LP_CHECK_EQ_U64(s.general_level, 3);
		LP_CHECK_EQ_U64(s.values_in_general, BSS);
		s = summarize(&w, specs, n, "lz4_i32");
		LP_CHECK_EQ_U64(s.general_scheme, LZ4);
		LP_CHECK_EQ_U64(s.values_in_general, BSS);
		s = summarize(&w, specs, n, "zstd_random");
		LP_CHECK(s.values != BSS && s.values_in_general != BSS);
		/* Four 32-bit values in random order: runs are cheaper than flat values. */
		LP_CHECK_EQ_U64(summarize(&w, specs, n, "four_ints").values, RLE);
		/* Full-zip strings of a field asking for lz4: each value zstd-compressed (level 0). */
		{
			int			values, inner, scheme, level;

			summarize_fullzip(&w, specs, n, "lz4_long", &values, &inner, &scheme, &level);
			LP_CHECK_EQ_U64(values, GENERAL);
			LP_CHECK_EQ_U64(inner, VARIABLE);
			LP_CHECK_EQ_U64(scheme, ZSTD);
			LP_CHECK_EQ_U64(level, 0);
			summarize_fullzip(&w, specs, n, "none_long", &values, &inner, &scheme, &level);
			LP_CHECK_EQ_U64(values, VARIABLE);
		}
		written_free(&w);
	}
}

LP_TEST(encode_huge_values_compressed_one_by_one)
{
	/* Values over 32 KiB: zstd value by value even without field metadata (FSST below that). */
	static const Spec specs[] = {
		{"huge", "string", HUGE_TEXT, 0, true, NULL, NULL},
		{"long", "string", LONG_TEXT, 0, false, NULL, NULL},
	};

	for (int v = LP_FILE_VERSION_2_1; v <= LP_FILE_VERSION_2_3; v++)
	{
		Written		w;
		int			values, inner, scheme, level;

		rng_state = 41;
		w = round_trip((LpFileVersion) v, specs, 2, 30);
		if (w.file == NULL)
			continue;
		summarize_fullzip(&w, specs, 2, "huge", &values, &inner, &scheme, &level);
		LP_CHECK_EQ_U64(values, GENERAL);
		LP_CHECK_EQ_U64(scheme, ZSTD);
		/* 17 letters take about half their bytes */
		LP_CHECK(w.file->columns[0].pages[0].buffers[0].size < 26 * 33100 * 3 / 4);
		summarize_fullzip(&w, specs, 2, "long", &values, &inner, &scheme, &level);
		LP_CHECK_EQ_U64(values, VARIABLE);	/* under 32 KiB of text: not even FSST */
		written_free(&w);
	}
}

LP_TEST(encode_v20_compression_follows_lance)
{
	/* The strings of compression_specs but "fsst", which 2.0 writes as an encoding of its own. */
	static const uint32_t n = 5;
	static const char *const schemes[] = {"zstd", "zstd", "lz4", "lz4", "none"};
	Written		w;

	rng_state = 22;
	w = round_trip(LP_FILE_VERSION_2_0, compression_specs, n, ROWS);
	for (uint32_t c = 0; w.file != NULL && c < n; c++)
	{
		ProtobufCMessage *inner;
		LpUnwrapResult result;
		const LpPage *page = &w.file->columns[c].pages[0];
		const Lance__Encodings__Flat *bytes;

		LP_CHECK_STR(page->layout, "binary");
		if (!lp_encoding_unwrap(page->encoding.data, page->encoding.len, LP_ENCODING_PAGE_V2_0,
								&inner, &result))
		{
			LP_CHECK_MSG(false, "%s: encoding does not unwrap", compression_specs[c].name);
			continue;
		}
		bytes = ((Lance__Encodings__ArrayEncoding *) inner)->binary->bytes->flat;
		LP_CHECK_MSG(bytes->compression != NULL && strcmp(bytes->compression->scheme, schemes[c]) == 0,
					 "%s: bytes compressed with %s", compression_specs[c].name, schemes[c]);
		LP_CHECK(bytes->compression == NULL ||
				 (bytes->compression->level_presence_case ==
				  LANCE__ENCODINGS__COMPRESSION__LEVEL_PRESENCE_LEVEL) == (c == 1));
		if (c == 1)
			LP_CHECK(bytes->compression != NULL && bytes->compression->level == 9);
		lp_protobuf_free(inner);
	}
	/* The zstd-compressed text takes far less than its 20000 * 19.5 bytes. */
	if (w.file != NULL)
		LP_CHECK(w.file->columns[0].pages[0].buffers[1].size < ROWS * 15);
	written_free(&w);
}

LP_TEST(encode_string_chunks_stay_under_4k)
{
	/*
	 * lancedb 0.39 doubles a string chunk's values while offsets and bytes
	 * fit in 4 KiB and ends it at the last doubling that fits.
	 */
	static const Spec spec[] = {{"text", "string", TEXT, 0, false, "none", NULL}};
	Written		w;

	rng_state = 31;
	w = round_trip(LP_FILE_VERSION_2_2, spec, 1, ROWS);
	if (w.file != NULL)
	{
		const LpPage *page = &w.file->columns[0].pages[0];
		uint64_t	chunks = page->buffers[0].size / 4;

		for (uint64_t k = 0; k + 1 < chunks; k++)
		{
			uint32_t	word = lp_le32(w.bytes + page->buffers[0].offset + 4 * k);
			uint64_t	bytes = ((word >> 4) + 1) * 8;

			/* the 8-byte chunk header and padding to 8 come on top of the 4 KiB */
			LP_CHECK_MSG(bytes <= 4096 + 16, "chunk %llu has %llu bytes", (unsigned long long) k,
						 (unsigned long long) bytes);
		}
		LP_CHECK(chunks > ROWS * 20 / 4096);
	}
	written_free(&w);
}

LP_TEST(encode_refuses_unknown_compression)
{
	static const char *const bad[][2] = {{"brotli", NULL}, {"zstd", "high"}, {"zstd", "99999999999"},
	{"lz4", ""}};

	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++)
	{
		LpKeyValue	metadata[2] = {
			{"lance-encoding:compression", {(uint8_t *) bad[k][0], strlen(bad[k][0])}},
			{"lance-encoding:compression-level", {(uint8_t *) (bad[k][1] ? bad[k][1] : ""),
			bad[k][1] ? strlen(bad[k][1]) : 0}},
		};
		LpField		field = {0, -1, "s", "string", true, 2, NULL, false, bad[k][1] ? 2 : 1, metadata};
		LpSchema	schema = {1, &field, 0, NULL};
		LpOutput   *output = lp_memory_output_open("memory.lance");
		LpError		err;
		LpFileWriter *writer = lp_file_writer_open(output, &schema, LP_FILE_VERSION_2_2, &err);

		LP_CHECK_MSG(writer == NULL && err.code == LP_ERR_INVALID_ARGUMENT &&
					 strstr(err.message, "field \"s\"") != NULL,
					 "compression %s level %s is refused", bad[k][0], bad[k][1] ? bad[k][1] : "-");
		if (writer != NULL)
			lp_file_writer_free(writer);
		output->ops->abort(output);
	}
}
