/*
 * test_file.c - tests of the Lance file metadata reader (lp_file.c).
 *
 * Fixtures are real files written by npm @lancedb/lancedb 0.39.0 (the seed
 * corpus of the fuzz target, test/fuzz/corpus/fuzz_file_metadata): a table
 * of 7 rows with the fields below, stored as legacy, 2.0, 2.1, 2.2 and 2.3;
 * a blob v2 table (2.2) and legacy blob columns in 2.0 and 2.1.  Damaged
 * inputs are built in memory from them.  The tests that walk the generated
 * reference data need the data directory and fail without it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/lp_alloc.h"
#include "base/lp_bytes.h"
#include "format/lp_encodings.h"
#include "format/lp_file.h"
#include "lp_test.h"
#include "json_reader.h"
#include "lp_test_files.h"
#include "lp_test_util.h"

#include "any.pb-c.h"
#include "encodings_v2_1.pb-c.h"
#include "file.pb-c.h"
#include "file2.pb-c.h"

#define FIXTURE_DIR "test/fuzz/corpus/fuzz_file_metadata/"
#define DAMAGED_NAME "damaged.lance"

typedef struct ExpectedField
{
	int32_t		id;
	int32_t		parent_id;
	const char *name;
	const char *logical_type;
	bool		nullable;
} ExpectedField;

/* The schema the generator gave the 7-row tables (ids assigned by Lance). */
static const ExpectedField small_table_fields[] = {
	{0, -1, "i32", "int32", false},
	{1, -1, "i64n", "int64", true},
	{2, -1, "f", "double", true},
	{3, -1, "b", "bool", true},
	{4, -1, "s", "string", true},
	{5, -1, "cat", "string", true},
	{6, -1, "vec", "fixed_size_list:float:4", true},
	{7, -1, "li", "list", true},
	{8, 7, "item", "int32", true},
	{9, -1, "st", "struct", false},
	{10, 9, "a", "int32", true},
	{11, 9, "t", "string", true},
	{12, -1, "nul", "int32", true},
	{13, -1, "k", "int64", true},
};

#define NUM_SMALL_FIELDS (sizeof(small_table_fields) / sizeof(small_table_fields[0]))

typedef struct Fixture
{
	const char *name;
	LpFileVersion version;
	uint16_t	major;
	uint16_t	minor;
	uint64_t	num_rows;
	uint32_t	num_columns;
} Fixture;

static const Fixture small_fixtures[] = {
	{"v2_0_small.lance", LP_FILE_VERSION_2_0, 0, 3, 7, 14},
	{"v2_1_small.lance", LP_FILE_VERSION_2_1, 2, 1, 7, 12},
	{"v2_2_small.lance", LP_FILE_VERSION_2_2, 2, 2, 7, 12},
	{"v2_3_small.lance", LP_FILE_VERSION_2_3, 2, 3, 7, 12},
};

#define NUM_SMALL_FIXTURES (sizeof(small_fixtures) / sizeof(small_fixtures[0]))

static const char *const all_v2_fixtures[] = {
	"v2_0_small.lance", "v2_1_small.lance", "v2_2_small.lance",
	"v2_3_small.lance", "v2_2_blob_v2.lance", "v2_0_legacy_blob.lance",
	"v2_1_legacy_blob.lance",
};

#define NUM_V2_FIXTURES (sizeof(all_v2_fixtures) / sizeof(all_v2_fixtures[0]))

/* ---- helpers -------------------------------------------------------------- */

static uint8_t *
load_fixture(const char *name, size_t *len)
{
	char		path[512];
	uint8_t    *data;

	snprintf(path, sizeof(path), "%s%.200s", FIXTURE_DIR, name);
	lp_test_file_read_all(path, &data, len);
	LP_CHECK_MSG(data != NULL, "fixture %.200s is missing (run from the repository root)", path);
	return data;
}

static LpFile *
open_memory(const char *name, const uint8_t *data, size_t len, LpError *err)
{
	LpInput    *input = lp_memory_input_open(name, data, len);
	LpFile	   *file;

	lp_error_clear(err);
	file = lp_file_open(input, err);
	lp_input_close(input);
	return file;
}

/*
 * Open damaged bytes; true if that failed with the expected code, a message
 * naming the file and containing want (if not NULL).
 */
static bool
fails_with(const uint8_t *data, size_t len, LpErrorCode code, const char *want,
		   LpError *err)
{
	LpFile	   *file = open_memory(DAMAGED_NAME, data, len, err);

	if (file != NULL)
	{
		lp_file_free(file);
		return false;
	}
	return err->code == code &&
		strstr(err->message, "\"" DAMAGED_NAME "\"") != NULL &&
		(want == NULL || strstr(err->message, want) != NULL);
}

#define CHECK_FAILS(bytes_, len_, code_, want_) \
	do { LpError e_; const char *w_ = (want_); \
		LP_CHECK_MSG(fails_with((bytes_), (len_), (code_), w_, &e_), \
					 "expected %s%s%.100s, got %s: %.200s", lp_error_code_name(code_), \
					 w_ ? " with " : "", w_ ? w_ : "", \
					 lp_error_code_name(e_.code), e_.message); } while (0)

/* What to change when rebuilding a file's metadata tail. */
typedef struct Rebuild
{
	const uint8_t *gb0;			/* new global buffer 0, or NULL to keep it */
	size_t		gb0_len;
	int			column;			/* column whose metadata is replaced, or -1 */
	const uint8_t *column_metadata;
	size_t		column_metadata_len;
	size_t		padding;		/* zero bytes inserted after the data region */
} Rebuild;

/*
 * Write a new file: the original bytes up to the column metadata, padding,
 * the new GB0 (if any), every column's metadata (one replaced), then fresh
 * CMO and GBO tables and footer.  Page buffer offsets stay valid.
 */
static uint8_t *
rebuild_file(const uint8_t *orig, size_t len, const Rebuild *change, size_t *out_len)
{
	LpError		err;
	LpFile	   *file = open_memory("original", orig, len, &err);
	uint8_t    *out;
	size_t		pos;
	size_t		total;
	uint64_t	gb0_pos = 0;

	if (file == NULL)
	{
		LP_CHECK_MSG(false, "rebuild: original does not open: %.150s", err.message);
		return NULL;
	}
	total = file->column_meta_start + change->padding + change->gb0_len +
		change->column_metadata_len + 16 * (file->num_columns + file->num_global_buffers) +
		LP_FOOTER_LEN;
	for (uint32_t i = 0; i < file->num_columns; i++)
		total += file->columns[i].metadata.size;
	out = calloc(1, total);
	memcpy(out, orig, file->column_meta_start);
	pos = file->column_meta_start + change->padding;
	if (change->gb0 != NULL)
	{
		gb0_pos = pos;
		memcpy(out + pos, change->gb0, change->gb0_len);
		pos += change->gb0_len;
	}
	{
		size_t		meta_start = pos;
		size_t		cmo_start;
		size_t		gbo_start;
		uint64_t	column_pos = meta_start;
		uint8_t    *footer;

		for (uint32_t i = 0; i < file->num_columns; i++)
		{
			const LpBufferRef *m = &file->columns[i].metadata;

			if ((int) i == change->column)
			{
				memcpy(out + pos, change->column_metadata, change->column_metadata_len);
				pos += change->column_metadata_len;
			}
			else
			{
				memcpy(out + pos, orig + m->offset, m->size);
				pos += m->size;
			}
		}
		cmo_start = pos;
		for (uint32_t i = 0; i < file->num_columns; i++)
		{
			uint64_t	size = (int) i == change->column
				? change->column_metadata_len : file->columns[i].metadata.size;

			lp_put_le64(out + pos, column_pos);
			lp_put_le64(out + pos + 8, size);
			column_pos += size;
			pos += 16;
		}
		gbo_start = pos;
		for (uint32_t i = 0; i < file->num_global_buffers; i++)
		{
			bool		replaced = i == 0 && change->gb0 != NULL;

			lp_put_le64(out + pos, replaced ? gb0_pos : file->global_buffers[i].offset);
			lp_put_le64(out + pos + 8, replaced ? change->gb0_len : file->global_buffers[i].size);
			pos += 16;
		}
		footer = out + pos;
		lp_put_le64(footer, meta_start);
		lp_put_le64(footer + 8, cmo_start);
		lp_put_le64(footer + 16, gbo_start);
		lp_put_le32(footer + 24, file->num_global_buffers);
		lp_put_le32(footer + 28, file->num_columns);
		footer[32] = (uint8_t) file->footer_major;
		footer[33] = (uint8_t) (file->footer_major >> 8);
		footer[34] = (uint8_t) file->footer_minor;
		footer[35] = (uint8_t) (file->footer_minor >> 8);
		memcpy(footer + 36, LP_MAGIC, 4);
		pos += LP_FOOTER_LEN;
	}
	lp_file_free(file);
	*out_len = pos;
	return out;
}

/* Serialize a protobuf-c message into a malloc'd buffer. */
static uint8_t *
pack_message(const ProtobufCMessage *message, size_t *len)
{
	uint8_t    *out;

	*len = protobuf_c_message_get_packed_size(message);
	out = malloc(*len > 0 ? *len : 1);
	protobuf_c_message_pack(message, out);
	return out;
}

/*
 * The metadata of column 0 of a fixture, with its first page's encoding
 * replaced by encoding (a serialized Encoding), or its column encoding if
 * column_level.  Returns the rebuilt file.
 */
static uint8_t *
with_encoding(const uint8_t *orig, size_t len, const uint8_t *encoding,
			  size_t encoding_len, bool column_level, size_t *out_len)
{
	LpError		err;
	LpFile	   *file = open_memory("original", orig, len, &err);
	Lance__File__V2__ColumnMetadata *column;
	Rebuild		change = {0};
	uint8_t    *metadata;
	uint8_t    *out;
	ProtobufCBinaryData replaced = {encoding_len, (uint8_t *) encoding};
	ProtobufCBinaryData saved;

	column = lance__file__v2__column_metadata__unpack(NULL, file->columns[0].metadata.size,
													  orig + file->columns[0].metadata.offset);
	if (column_level)
	{
		saved = column->encoding;
		column->encoding = replaced;
	}
	else
	{
		saved = column->pages[0]->encoding;
		column->pages[0]->encoding = replaced;
	}
	metadata = pack_message(&column->base, &change.column_metadata_len);
	if (column_level)
		column->encoding = saved;
	else
		column->pages[0]->encoding = saved;
	lance__file__v2__column_metadata__free_unpacked(column, NULL);
	change.column = 0;
	change.column_metadata = metadata;
	out = rebuild_file(orig, len, &change, out_len);
	free(metadata);
	lp_file_free(file);
	return out;
}

/* A serialized Encoding{direct{Any{type_url, value}}} (free with lp_free). */
static uint8_t *
direct_encoding(const char *type_url, const uint8_t *value, size_t value_len,
				size_t *len)
{
	LpBytes		encoding;

	if (!lp_encoding_wrap(type_url, value, value_len, &encoding))
		abort();
	*len = encoding.len;
	return encoding.data;
}

/* The GB0 FileDescriptor of a fixture, unpacked (free with ..._free_unpacked). */
static Lance__File__FileDescriptor *
unpack_descriptor(const uint8_t *orig, size_t len)
{
	LpError		err;
	LpFile	   *file = open_memory("original", orig, len, &err);
	Lance__File__FileDescriptor *descriptor;

	descriptor = lance__file__file_descriptor__unpack(NULL, file->schema_bytes.len,
													  file->schema_bytes.data);
	lp_file_free(file);
	return descriptor;
}

static uint8_t *
with_descriptor(const uint8_t *orig, size_t len,
				const Lance__File__FileDescriptor *descriptor, size_t *out_len)
{
	Rebuild		change = {0};
	uint8_t    *gb0;
	uint8_t    *out;

	gb0 = pack_message(&descriptor->base, &change.gb0_len);
	change.gb0 = gb0;
	change.column = -1;
	out = rebuild_file(orig, len, &change, out_len);
	free(gb0);
	return out;
}

/* ---- well-formed files ---------------------------------------------------- */

static void
check_small_schema(const LpFile *file, const char *name)
{
	LP_CHECK_MSG(file->schema.num_fields == NUM_SMALL_FIELDS, "%s: %u fields",
				 name, file->schema.num_fields);
	for (uint32_t i = 0; i < file->schema.num_fields && i < NUM_SMALL_FIELDS; i++)
	{
		const LpField *field = &file->schema.fields[i];
		const ExpectedField *want = &small_table_fields[i];

		LP_CHECK_EQ_U64(field->id, want->id);
		LP_CHECK_EQ_U64(field->parent_id, want->parent_id);
		LP_CHECK_STR(field->name, want->name);
		LP_CHECK_STR(field->logical_type, want->logical_type);
		LP_CHECK(field->nullable == want->nullable);
	}
	LP_CHECK_EQ_U64(file->schema.num_metadata, 1);
	if (file->schema.num_metadata == 1)
	{
		LP_CHECK_STR(file->schema.metadata[0].key, "owner");
		LP_CHECK(file->schema.metadata[0].value.len == 4 &&
				 memcmp(file->schema.metadata[0].value.data, "test", 4) == 0);
	}
}

LP_TEST(file_small_fixtures_open)
{
	for (size_t f = 0; f < NUM_SMALL_FIXTURES; f++)
	{
		const Fixture *want = &small_fixtures[f];
		size_t		len;
		uint8_t    *data = load_fixture(want->name, &len);
		LpError		err;
		LpFile	   *file;

		if (data == NULL)
			continue;
		file = open_memory(want->name, data, len, &err);
		LP_CHECK_MSG(file != NULL, "%.150s: %.150s", want->name, err.message);
		if (file != NULL)
		{
			LP_CHECK(file->version == want->version);
			LP_CHECK_EQ_U64(file->footer_major, want->major);
			LP_CHECK_EQ_U64(file->footer_minor, want->minor);
			LP_CHECK_EQ_U64(file->num_rows, want->num_rows);
			LP_CHECK_EQ_U64(file->num_columns, want->num_columns);
			LP_CHECK_EQ_U64(file->num_global_buffers, 1);
			LP_CHECK_EQ_U64(file->file_size, len);
			LP_CHECK_EQ_U64(file->schema_bytes.len, file->global_buffers[0].size);
			LP_CHECK_STR(file->name, want->name);
			check_small_schema(file, want->name);
			for (uint32_t c = 0; c < file->num_columns; c++)
			{
				LP_CHECK_STR(file->columns[c].kind, "values");
				LP_CHECK_EQ_U64(file->columns[c].num_pages, 1);
				LP_CHECK_EQ_U64(file->columns[c].num_column_buffers, 0);
			}
		}
		lp_file_free(file);
		free(data);
	}
}

/* Layout names seen in the reference files (column numbers per §3.1). */
LP_TEST(file_page_layout_names)
{
	static const struct
	{
		const char *fixture;
		uint32_t	column;
		const char *layout;
		const char *kind;
	}			cases[] = {
		{"v2_0_small.lance", 0, "nullable", "values"},
		{"v2_0_small.lance", 4, "binary", "values"},
		{"v2_0_small.lance", 7, "list", "values"},	/* li offsets */
		{"v2_0_small.lance", 9, "struct", "values"},	/* st header */
		{"v2_1_small.lance", 0, "mini_block", "values"},
		{"v2_1_small.lance", 10, "constant", "values"},	/* nul */
		{"v2_2_small.lance", 10, "constant", "values"},
		{"v2_2_small.lance", 11, "constant", "values"},	/* k = 7 */
		{"v2_3_small.lance", 11, "constant", "values"},
		{"v2_2_blob_v2.lance", 1, "full_zip", "values"},
		{"v2_0_legacy_blob.lance", 1, "packed_struct", "blob"},
		{"v2_1_legacy_blob.lance", 1, "blob", "values"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		size_t		len;
		uint8_t    *data = load_fixture(cases[i].fixture, &len);
		LpError		err;
		LpFile	   *file;

		if (data == NULL)
			continue;
		file = open_memory(cases[i].fixture, data, len, &err);
		LP_CHECK_MSG(file != NULL, "%.150s: %.150s", cases[i].fixture, err.message);
		if (file != NULL && cases[i].column < file->num_columns &&
			file->columns[cases[i].column].num_pages > 0)
		{
			LP_CHECK_STR(file->columns[cases[i].column].pages[0].layout, cases[i].layout);
			LP_CHECK_STR(file->columns[cases[i].column].kind, cases[i].kind);
		}
		else
			LP_CHECK_MSG(false, "%s: no column %u", cases[i].fixture, cases[i].column);
		lp_file_free(file);
		free(data);
	}
}

/* §6.5: the blob v2 pseudo-fields (id -1, parent -1) are kept as stored. */
LP_TEST(file_blob_v2_pseudo_fields)
{
	static const char *const names[] = {"kind", "position", "size", "blob_id", "blob_uri"};
	size_t		len;
	uint8_t    *data = load_fixture("v2_2_blob_v2.lance", &len);
	LpError		err;
	LpFile	   *file;

	if (data == NULL)
		return;
	file = open_memory("blob", data, len, &err);
	LP_CHECK_MSG(file != NULL, "%.150s", err.message);
	if (file != NULL)
	{
		LP_CHECK_EQ_U64(file->schema.num_fields, 7);
		LP_CHECK_EQ_U64(file->num_rows, 5);
		if (file->schema.num_fields == 7)
		{
			const LpField *payload = &file->schema.fields[1];

			LP_CHECK_STR(payload->name, "payload");
			LP_CHECK_STR(payload->logical_type, "struct");
			/* field metadata comes out sorted by key */
			LP_CHECK_EQ_U64(payload->num_metadata, 2);
			if (payload->num_metadata == 2)
			{
				LP_CHECK_STR(payload->metadata[0].key, "lance-encoding:blob");
				LP_CHECK_STR(payload->metadata[1].key, "lance-encoding:packed");
			}
			for (int i = 0; i < 5; i++)
			{
				LP_CHECK_EQ_U64(file->schema.fields[2 + i].id, -1);
				LP_CHECK_EQ_U64(file->schema.fields[2 + i].parent_id, -1);
				LP_CHECK_STR(file->schema.fields[2 + i].name, names[i]);
			}
		}
	}
	lp_file_free(file);
	free(data);
}

LP_TEST(file_legacy_detected)
{
	size_t		len;
	uint8_t    *data = load_fixture("legacy_small.lance", &len);
	LpError		err;
	LpFile	   *file;

	if (data == NULL)
		return;
	file = open_memory("legacy", data, len, &err);
	LP_CHECK_MSG(file != NULL, "%.150s", err.message);
	if (file != NULL)
	{
		LP_CHECK(file->version == LP_FILE_VERSION_LEGACY);
		LP_CHECK_EQ_U64(file->footer_major, 0);
		LP_CHECK_EQ_U64(file->footer_minor, 2);
		LP_CHECK_EQ_U64(file->num_columns, 0);
		LP_CHECK(file->columns == NULL);
	}
	lp_file_free(file);

	/* metadata position beyond the tail */
	lp_put_le64(data + len - LP_LEGACY_TAIL_LEN, len - LP_LEGACY_TAIL_LEN + 1);
	CHECK_FAILS(data, len, LP_ERR_CORRUPT, "metadata block");
	lp_put_le64(data + len - LP_LEGACY_TAIL_LEN, UINT64_MAX);
	CHECK_FAILS(data, len, LP_ERR_CORRUPT, "metadata block");
	/* a 12-byte file can have the version but not the 16-byte tail */
	CHECK_FAILS(data + len - 12, 12, LP_ERR_CORRUPT, "too short");
	free(data);
}

/* Invariants every v2 fixture satisfies (see lance-format.md §3.2, §3.3). */
static void
check_invariants(const LpFile *file, const char *name)
{
	for (uint32_t c = 0; c < file->num_columns; c++)
	{
		const LpColumn *column = &file->columns[c];
		uint64_t	rows = 0;

		LP_CHECK_MSG(column->encoding.len > 0, "%.150s: column %u has no encoding bytes", name, c);
		LP_CHECK_MSG(column->metadata.offset >= file->column_meta_start &&
					 column->metadata.offset + column->metadata.size <= file->column_meta_offsets_start,
					 "%.150s: column %u metadata outside its region", name, c);
		for (uint32_t p = 0; p < column->num_pages; p++)
		{
			const LpPage *page = &column->pages[p];

			LP_CHECK_MSG(page->layout != NULL && page->encoding.len > 0,
						 "%.150s: page %u of column %u has no encoding", name, p, c);
			for (uint32_t b = 0; b < page->num_buffers; b++)
				LP_CHECK_MSG(page->buffers[b].offset + page->buffers[b].size <= file->column_meta_start,
							 "%.150s: buffer %u of page %u of column %u is not in the data region",
							 name, b, p, c);
			if (file->version != LP_FILE_VERSION_2_0)
				LP_CHECK_MSG(page->priority == rows,
							 "%.150s: page %u of column %u has priority %llu, expected %llu",
							 name, p, c, (unsigned long long) page->priority,
							 (unsigned long long) rows);
			rows += page->num_rows;
		}
		if (file->version != LP_FILE_VERSION_2_0)
			LP_CHECK_MSG(rows == file->num_rows, "%.150s: column %u has %llu rows, file %llu",
						 name, c, (unsigned long long) rows,
						 (unsigned long long) file->num_rows);
	}
	for (uint32_t i = 0; i < file->schema.num_fields; i++)
		for (uint32_t k = 1; k < file->schema.fields[i].num_metadata; k++)
			LP_CHECK(strcmp(file->schema.fields[i].metadata[k - 1].key,
							file->schema.fields[i].metadata[k].key) < 0);
}

LP_TEST(file_fixture_invariants)
{
	for (size_t f = 0; f < NUM_V2_FIXTURES; f++)
	{
		size_t		len;
		uint8_t    *data = load_fixture(all_v2_fixtures[f], &len);
		LpError		err;
		LpFile	   *file;

		if (data == NULL)
			continue;
		file = open_memory(all_v2_fixtures[f], data, len, &err);
		LP_CHECK_MSG(file != NULL, "%.150s: %.150s", all_v2_fixtures[f], err.message);
		if (file != NULL)
			check_invariants(file, all_v2_fixtures[f]);
		lp_file_free(file);
		free(data);
	}
}

LP_TEST(file_version_names)
{
	LpFileVersion version;
	uint16_t	major;
	uint16_t	minor;

	LP_CHECK(lp_file_version_parse("2.1", &version) && version == LP_FILE_VERSION_2_1);
	LP_CHECK(lp_file_version_parse("legacy", &version) && version == LP_FILE_VERSION_LEGACY);
	LP_CHECK(!lp_file_version_parse("2.4", &version));
	LP_CHECK_STR(lp_file_version_name(LP_FILE_VERSION_2_3), "2.3");
	lp_file_version_footer_numbers(LP_FILE_VERSION_2_0, &major, &minor);
	LP_CHECK(major == 0 && minor == 3);
	lp_file_version_data_file_numbers(LP_FILE_VERSION_2_0, &major, &minor);
	LP_CHECK(major == 2 && minor == 0);
	lp_file_version_data_file_numbers(LP_FILE_VERSION_2_2, &major, &minor);
	LP_CHECK(major == 2 && minor == 2);
}

/* ---- version detection ---------------------------------------------------- */

LP_TEST(file_footer_versions)
{
	static const struct
	{
		uint16_t	major;
		uint16_t	minor;
		LpErrorCode code;		/* LP_OK: opens */
		LpFileVersion version;
	}			cases[] = {
		{0, 3, LP_OK, LP_FILE_VERSION_2_0},
		{2, 0, LP_OK, LP_FILE_VERSION_2_0},
		{0, 4, LP_ERR_UNSUPPORTED, 0},
		{1, 0, LP_ERR_UNSUPPORTED, 0},
		{2, 4, LP_ERR_UNSUPPORTED, 0},
		{3, 0, LP_ERR_UNSUPPORTED, 0},
		{65535, 65535, LP_ERR_UNSUPPORTED, 0},
	};
	size_t		len;
	uint8_t    *data = load_fixture("v2_0_small.lance", &len);

	if (data == NULL)
		return;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		LpError		err;
		LpFile	   *file;
		char		numbers[32];

		data[len - 8] = (uint8_t) cases[i].major;
		data[len - 7] = (uint8_t) (cases[i].major >> 8);
		data[len - 6] = (uint8_t) cases[i].minor;
		data[len - 5] = (uint8_t) (cases[i].minor >> 8);
		snprintf(numbers, sizeof(numbers), "%u.%u", cases[i].major, cases[i].minor);
		if (cases[i].code == LP_OK)
		{
			file = open_memory("v", data, len, &err);
			LP_CHECK_MSG(file != NULL && file->version == cases[i].version,
						 "%.150s: %.150s", numbers, err.message);
			lp_file_free(file);
		}
		else
			CHECK_FAILS(data, len, cases[i].code, numbers);
	}
	free(data);
}

LP_TEST(file_wrong_magic_and_short_files)
{
	static const uint8_t short_magic[] = {'L', 'A', 'N', 'C'};
	/* version 2.1 and the magic, but no room for the footer */
	static const uint8_t tail_only[] = {0, 0, 0, 0, 2, 0, 1, 0, 'L', 'A', 'N', 'C'};
	size_t		len;
	uint8_t    *data = load_fixture("v2_1_small.lance", &len);

	CHECK_FAILS((const uint8_t *) "", 0, LP_ERR_CORRUPT, "too short");
	CHECK_FAILS(short_magic, sizeof(short_magic), LP_ERR_CORRUPT, "too short");
	CHECK_FAILS(tail_only, sizeof(tail_only), LP_ERR_CORRUPT, "too short");
	if (data == NULL)
		return;
	for (int i = 1; i <= 4; i++)
	{
		data[len - i] ^= 0x20;
		CHECK_FAILS(data, len, LP_ERR_CORRUPT, "not a Lance file");
		data[len - i] ^= 0x20;
	}
	free(data);
}

/* Every proper prefix of every fixture is refused as corrupt. */
LP_TEST(file_truncated_at_every_length)
{
	static const char *const names[] = {
		"v2_0_small.lance", "v2_1_small.lance", "v2_2_small.lance",
		"v2_3_small.lance", "legacy_small.lance", "v2_2_blob_v2.lance",
	};

	for (size_t f = 0; f < sizeof(names) / sizeof(names[0]); f++)
	{
		size_t		len;
		uint8_t    *data = load_fixture(names[f], &len);
		int			wrong = 0;

		if (data == NULL)
			continue;
		for (size_t cut = 0; cut < len; cut++)
		{
			LpError		err;

			/* a copy, so ASan sees reads past the cut */
			uint8_t    *prefix = malloc(cut > 0 ? cut : 1);

			memcpy(prefix, data, cut);
			if (!fails_with(prefix, cut, LP_ERR_CORRUPT, NULL, &err) && wrong++ < 3)
				LP_CHECK_MSG(false, "%.150s cut at %zu: %.150s %.150s", names[f], cut,
							 lp_error_code_name(err.code), err.message);
			free(prefix);
		}
		free(data);
	}
}

/* ---- footer, offset tables ------------------------------------------------ */

LP_TEST(file_inflated_footer_fields)
{
	size_t		len;
	uint8_t    *data = load_fixture("v2_1_small.lance", &len);
	uint8_t    *footer;
	uint8_t		saved[LP_FOOTER_LEN];
	uint64_t	bad_offsets[5];
	uint32_t	columns;

	if (data == NULL)
		return;
	footer = data + len - LP_FOOTER_LEN;
	memcpy(saved, footer, LP_FOOTER_LEN);
	bad_offsets[0] = UINT64_MAX;
	bad_offsets[1] = UINT64_MAX - 15;
	bad_offsets[2] = len;
	bad_offsets[3] = len - LP_FOOTER_LEN - 8;
	bad_offsets[4] = (uint64_t) 1 << 63;

	/* column metadata start, CMO offset, GBO offset */
	for (int field = 0; field < 3; field++)
	{
		for (int i = 0; i < 5; i++)
		{
			lp_put_le64(footer + 8 * field, bad_offsets[i]);
			CHECK_FAILS(data, len, LP_ERR_CORRUPT, NULL);
			memcpy(footer, saved, LP_FOOTER_LEN);
		}
	}

	/* global buffer count */
	lp_put_le32(footer + 24, 0);
	CHECK_FAILS(data, len, LP_ERR_CORRUPT, "no global buffers");
	lp_put_le32(footer + 24, UINT32_MAX);
	CHECK_FAILS(data, len, LP_ERR_CORRUPT, "global buffer offset table");
	lp_put_le32(footer + 24, 2);
	CHECK_FAILS(data, len, LP_ERR_CORRUPT, "global buffer offset table");
	memcpy(footer, saved, LP_FOOTER_LEN);

	/* column count: one more than the table holds, and absurd */
	columns = saved[28] | (saved[29] << 8);
	lp_put_le32(footer + 28, columns + 1);
	CHECK_FAILS(data, len, LP_ERR_CORRUPT, "column metadata offset table");
	lp_put_le32(footer + 28, UINT32_MAX);
	CHECK_FAILS(data, len, LP_ERR_CORRUPT, "column metadata offset table");
	lp_put_le32(footer + 28, 0x10000000);
	CHECK_FAILS(data, len, LP_ERR_CORRUPT, "column metadata offset table");
	memcpy(footer, saved, LP_FOOTER_LEN);

	/* column metadata starting after the CMO table */
	lp_put_le64(footer, lp_le64(footer + 8) + 1);
	CHECK_FAILS(data, len, LP_ERR_CORRUPT, "starts after");
	free(data);
}

LP_TEST(file_inflated_table_entries)
{
	size_t		len;
	uint8_t    *data = load_fixture("v2_2_small.lance", &len);
	uint8_t    *footer;
	uint64_t	cmo;
	uint64_t	gbo;
	uint64_t	cms;
	uint8_t		saved[16];

	if (data == NULL)
		return;
	footer = data + len - LP_FOOTER_LEN;
	cms = lp_le64(footer);
	cmo = lp_le64(footer + 8);
	gbo = lp_le64(footer + 16);

	/* global buffer 0 */
	memcpy(saved, data + gbo, 16);
	lp_put_le64(data + gbo, UINT64_MAX);
	CHECK_FAILS(data, len, LP_ERR_CORRUPT, "global buffer 0");
	memcpy(data + gbo, saved, 16);
	lp_put_le64(data + gbo + 8, UINT64_MAX);
	CHECK_FAILS(data, len, LP_ERR_CORRUPT, "global buffer 0");
	memcpy(data + gbo, saved, 16);
	lp_put_le64(data + gbo, len - LP_FOOTER_LEN - 4);
	lp_put_le64(data + gbo + 8, 8);
	CHECK_FAILS(data, len, LP_ERR_CORRUPT, "global buffer 0");
	memcpy(data + gbo, saved, 16);

	/* every column metadata entry: overflow, beyond the file, outside its region */
	for (uint32_t c = 0; c < 12; c++)
	{
		uint8_t    *entry = data + cmo + 16 * c;
		char		want[64];

		snprintf(want, sizeof(want), "column metadata entry %u ", c);
		memcpy(saved, entry, 16);
		lp_put_le64(entry, UINT64_MAX);
		CHECK_FAILS(data, len, LP_ERR_CORRUPT, want);
		memcpy(entry, saved, 16);
		lp_put_le64(entry + 8, UINT64_MAX - 3);
		CHECK_FAILS(data, len, LP_ERR_CORRUPT, want);
		memcpy(entry, saved, 16);
		lp_put_le64(entry, cmo - 2);	/* runs into the CMO table */
		CHECK_FAILS(data, len, LP_ERR_CORRUPT, want);
		memcpy(entry, saved, 16);
		lp_put_le64(entry, cms - 1);	/* starts before the column metadata */
		CHECK_FAILS(data, len, LP_ERR_CORRUPT, want);
		memcpy(entry, saved, 16);
	}
	free(data);
}

/* ---- malformed protobuf --------------------------------------------------- */

LP_TEST(file_malformed_global_buffer_0)
{
	size_t		len;
	uint8_t    *data = load_fixture("v2_1_small.lance", &len);
	uint8_t    *footer;
	uint64_t	gbo;
	uint64_t	gb0_pos;
	uint64_t	gb0_size;

	if (data == NULL)
		return;
	footer = data + len - LP_FOOTER_LEN;
	gbo = lp_le64(footer + 16);
	gb0_pos = lp_le64(data + gbo);
	gb0_size = lp_le64(data + gbo + 8);

	/* cut short by one byte: the last field is incomplete */
	lp_put_le64(data + gbo + 8, gb0_size - 1);
	CHECK_FAILS(data, len, LP_ERR_CORRUPT, "global buffer 0");
	lp_put_le64(data + gbo + 8, gb0_size);

	/* garbage: an invalid wire type */
	memset(data + gb0_pos, 0xff, 16);
	CHECK_FAILS(data, len, LP_ERR_CORRUPT, "is malformed");
	free(data);
}

LP_TEST(file_malformed_column_metadata)
{
	size_t		len;
	uint8_t    *data = load_fixture("v2_0_small.lance", &len);
	uint64_t	cmo;
	uint64_t	pos;
	uint64_t	size;

	if (data == NULL)
		return;
	cmo = lp_le64(data + len - LP_FOOTER_LEN + 8);
	pos = lp_le64(data + cmo + 16 * 3);
	size = lp_le64(data + cmo + 16 * 3 + 8);

	lp_put_le64(data + cmo + 16 * 3 + 8, size - 1);
	CHECK_FAILS(data, len, LP_ERR_CORRUPT, "column 3");
	lp_put_le64(data + cmo + 16 * 3 + 8, size);
	memset(data + pos, 0xff, 8);
	CHECK_FAILS(data, len, LP_ERR_CORRUPT, "metadata of column 3");
	free(data);
}

static uint8_t *
build_encoding_case(const uint8_t *orig, size_t len, const Lance__File__V2__Encoding *encoding,
					bool column_level, size_t *out_len)
{
	size_t		encoding_len;
	uint8_t    *bytes = pack_message(&encoding->base, &encoding_len);
	uint8_t    *out = with_encoding(orig, len, bytes, encoding_len, column_level, out_len);

	free(bytes);
	return out;
}

LP_TEST(file_deferred_and_missing_encodings)
{
	size_t		len;
	uint8_t    *data = load_fixture("v2_1_small.lance", &len);
	Lance__File__V2__Encoding encoding = LANCE__FILE__V2__ENCODING__INIT;
	Lance__File__V2__DeferredEncoding deferred = LANCE__FILE__V2__DEFERRED_ENCODING__INIT;
	Lance__File__V2__NoEncoding none = LANCE__FILE__V2__NO_ENCODING__INIT;
	size_t		out_len;
	uint8_t    *out;

	if (data == NULL)
		return;
	deferred.buffer_location = 64;
	deferred.buffer_length = 10;
	encoding.location_case = LANCE__FILE__V2__ENCODING__LOCATION_INDIRECT;
	encoding.indirect = &deferred;
	for (int column_level = 0; column_level <= 1; column_level++)
	{
		out = build_encoding_case(data, len, &encoding, column_level, &out_len);
		CHECK_FAILS(out, out_len, LP_ERR_UNSUPPORTED, "deferred encoding");
		CHECK_FAILS(out, out_len, LP_ERR_UNSUPPORTED,
					column_level ? "column 0 of file" : "page 0 of column 0");
		free(out);
	}

	encoding.location_case = LANCE__FILE__V2__ENCODING__LOCATION_NONE;
	encoding.none = &none;
	out = build_encoding_case(data, len, &encoding, false, &out_len);
	CHECK_FAILS(out, out_len, LP_ERR_UNSUPPORTED, "declares no encoding");
	free(out);

	/* the field left out altogether */
	out = with_encoding(data, len, NULL, 0, false, &out_len);
	CHECK_FAILS(out, out_len, LP_ERR_CORRUPT, "has no encoding");
	free(out);
	free(data);
}

LP_TEST(file_wrong_type_urls)
{
	static const uint8_t empty_layout[] = {0};
	size_t		len;
	uint8_t    *v21 = load_fixture("v2_1_small.lance", &len);
	size_t		len20;
	uint8_t    *v20 = load_fixture("v2_0_small.lance", &len20);
	size_t		encoding_len;
	uint8_t    *encoding;
	size_t		out_len;
	uint8_t    *out;

	if (v21 == NULL || v20 == NULL)
		return;

	/* a 2.0 URL on a 2.1 page, and the reverse */
	encoding = direct_encoding("/lance.encodings.ArrayEncoding", empty_layout, 0, &encoding_len);
	out = with_encoding(v21, len, encoding, encoding_len, false, &out_len);
	CHECK_FAILS(out, out_len, LP_ERR_CORRUPT, "page 0 of column 0");
	CHECK_FAILS(out, out_len, LP_ERR_CORRUPT, "unexpected type");
	free(out);
	lp_free(encoding);

	encoding = direct_encoding("/lance.encodings21.PageLayout", empty_layout, 0, &encoding_len);
	out = with_encoding(v20, len20, encoding, encoding_len, false, &out_len);
	CHECK_FAILS(out, out_len, LP_ERR_CORRUPT, "unexpected type");
	free(out);
	/* and as a column encoding */
	out = with_encoding(v21, len, encoding, encoding_len, true, &out_len);
	CHECK_FAILS(out, out_len, LP_ERR_CORRUPT, "column 0 of file");
	free(out);
	lp_free(encoding);

	/* the right URL with an empty message: no known layout */
	encoding = direct_encoding("/lance.encodings21.PageLayout", empty_layout, 0, &encoding_len);
	out = with_encoding(v21, len, encoding, encoding_len, false, &out_len);
	CHECK_FAILS(out, out_len, LP_ERR_UNSUPPORTED, "does not know");
	free(out);
	lp_free(encoding);

	/* the right URL with a malformed value */
	encoding = direct_encoding("/lance.encodings21.PageLayout", (const uint8_t *) "\x0a\x05\x01", 3,
							   &encoding_len);
	out = with_encoding(v21, len, encoding, encoding_len, false, &out_len);
	CHECK_FAILS(out, out_len, LP_ERR_CORRUPT, "is malformed");
	free(out);
	lp_free(encoding);

	/* unreadable URL bytes are described, not quoted */
	encoding = direct_encoding("\x01\x02", empty_layout, 0, &encoding_len);
	out = with_encoding(v21, len, encoding, encoding_len, false, &out_len);
	{
		LpError		err;

		LP_CHECK(fails_with(out, out_len, LP_ERR_CORRUPT, "unexpected type", &err));
		LP_CHECK(strstr(err.detail, "not readable") != NULL);
	}
	free(out);
	lp_free(encoding);
	free(v21);
	free(v20);
}

/* Write the header of a length-delimited field; returns its length. */
static size_t
put_field_header(uint8_t *buf, uint32_t number, size_t len)
{
	size_t		n = 0;

	buf[n++] = (uint8_t) ((number << 3) | 2);
	do
	{
		buf[n++] = (uint8_t) ((len & 0x7f) | (len > 0x7f ? 0x80 : 0));
		len >>= 7;
	} while (len > 0);
	return n;
}

/*
 * PageLayout{blob{inner_layout: PageLayout{blob{...}}}} nested depth times
 * around an empty mini-block layout.
 */
static uint8_t *
nested_layout(int depth, size_t *len)
{
	size_t		cap = 16 + (size_t) depth * 12;
	uint8_t    *buf = malloc(cap);
	uint8_t    *tmp = malloc(cap);
	size_t		n;

	/* innermost: PageLayout{mini_block_layout = {}} */
	buf[0] = (1 << 3) | 2;
	buf[1] = 0;
	n = 2;
	for (int i = 0; i < depth; i++)
	{
		size_t		h;
		size_t		h2;

		/* BlobLayout{inner_layout(1) = buf} */
		h = put_field_header(tmp, 1, n);
		memcpy(tmp + h, buf, n);
		n += h;
		/* PageLayout{blob_layout(4) = BlobLayout} */
		h2 = put_field_header(buf, 4, n);
		memcpy(buf + h2, tmp, n);
		n += h2;
	}
	free(tmp);
	*len = n;
	return buf;
}

LP_TEST(file_deeply_nested_encoding)
{
	size_t		len;
	uint8_t    *data = load_fixture("v2_1_small.lance", &len);
	size_t		layout_len;
	uint8_t    *layout;
	size_t		encoding_len;
	uint8_t    *encoding;
	size_t		out_len;
	uint8_t    *out;
	LpError		err;
	LpFile	   *file;

	if (data == NULL)
		return;
	/* 20 levels of messages open fine; the outer layout names the page */
	layout = nested_layout(10, &layout_len);
	encoding = direct_encoding("/lance.encodings21.PageLayout", layout, layout_len, &encoding_len);
	out = with_encoding(data, len, encoding, encoding_len, false, &out_len);
	file = open_memory("nested", out, out_len, &err);
	LP_CHECK_MSG(file != NULL, "%.150s", err.message);
	if (file != NULL)
		LP_CHECK_STR(file->columns[0].pages[0].layout, "blob");
	lp_file_free(file);
	free(out);
	lp_free(encoding);
	free(layout);

	/* 20000 levels would overflow protobuf-c's recursion */
	layout = nested_layout(10000, &layout_len);
	encoding = direct_encoding("/lance.encodings21.PageLayout", layout, layout_len, &encoding_len);
	out = with_encoding(data, len, encoding, encoding_len, false, &out_len);
	CHECK_FAILS(out, out_len, LP_ERR_CORRUPT, "nested too deeply");
	free(out);
	lp_free(encoding);
	free(layout);
	free(data);
}

LP_TEST(file_page_buffer_lists)
{
	size_t		len;
	uint8_t    *data = load_fixture("v2_1_small.lance", &len);
	LpError		err;
	LpFile	   *file;
	Lance__File__V2__ColumnMetadata *column;
	Rebuild		change = {0};
	uint64_t	saved_offset;
	uint64_t	saved_size;
	size_t		out_len;
	uint8_t    *out;
	uint8_t    *metadata;

	if (data == NULL)
		return;
	file = open_memory("original", data, len, &err);
	column = lance__file__v2__column_metadata__unpack(NULL, file->columns[2].metadata.size,
													  data + file->columns[2].metadata.offset);
	lp_file_free(file);
	change.column = 2;

	/* one size fewer than offsets */
	column->pages[0]->n_buffer_sizes--;
	metadata = pack_message(&column->base, &change.column_metadata_len);
	change.column_metadata = metadata;
	out = rebuild_file(data, len, &change, &out_len);
	CHECK_FAILS(out, out_len, LP_ERR_CORRUPT, "page 0 of column 2");
	CHECK_FAILS(out, out_len, LP_ERR_CORRUPT, "buffer offsets but");
	column->pages[0]->n_buffer_sizes++;
	free(out);
	free(metadata);

	/* a buffer beyond the file, by size and by overflow */
	saved_offset = column->pages[0]->buffer_offsets[1];
	saved_size = column->pages[0]->buffer_sizes[1];
	for (int i = 0; i < 3; i++)
	{
		column->pages[0]->buffer_offsets[1] = i == 0 ? UINT64_MAX : i == 1 ? 8 : len;
		column->pages[0]->buffer_sizes[1] = i == 0 ? 1 : i == 1 ? UINT64_MAX - 4 : 1;
		metadata = pack_message(&column->base, &change.column_metadata_len);
		change.column_metadata = metadata;
		out = rebuild_file(data, len, &change, &out_len);
		CHECK_FAILS(out, out_len, LP_ERR_CORRUPT, "buffer 1 of page 0 of column 2");
		free(out);
		free(metadata);
	}
	column->pages[0]->buffer_offsets[1] = saved_offset;
	column->pages[0]->buffer_sizes[1] = saved_size;

	/* column-level buffers are listed and checked too */
	{
		uint64_t	offsets[1] = {0};
		uint64_t	sizes[1] = {(uint64_t) len * 4};

		column->n_buffer_offsets = 1;
		column->buffer_offsets = offsets;
		column->n_buffer_sizes = 1;
		column->buffer_sizes = sizes;
		metadata = pack_message(&column->base, &change.column_metadata_len);
		change.column_metadata = metadata;
		out = rebuild_file(data, len, &change, &out_len);
		CHECK_FAILS(out, out_len, LP_ERR_CORRUPT, "buffer 0 of column 2");
		free(out);
		free(metadata);
		sizes[0] = 16;
		metadata = pack_message(&column->base, &change.column_metadata_len);
		change.column_metadata = metadata;
		out = rebuild_file(data, len, &change, &out_len);
		file = open_memory("column buffers", out, out_len, &err);
		LP_CHECK_MSG(file != NULL, "%.150s", err.message);
		if (file != NULL)
		{
			LP_CHECK_EQ_U64(file->columns[2].num_column_buffers, 1);
			LP_CHECK_EQ_U64(file->columns[2].column_buffers[0].size, 16);
		}
		lp_file_free(file);
		free(out);
		free(metadata);
		column->n_buffer_offsets = 0;
		column->buffer_offsets = NULL;
		column->n_buffer_sizes = 0;
		column->buffer_sizes = NULL;
	}
	lance__file__v2__column_metadata__free_unpacked(column, NULL);
	free(data);
}

/* ---- schema ---------------------------------------------------------------- */

LP_TEST(file_schema_parent_order)
{
	size_t		len;
	uint8_t    *data = load_fixture("v2_1_small.lance", &len);
	Lance__File__FileDescriptor *descriptor;
	Lance__File__Field *swap;
	size_t		out_len;
	uint8_t    *out;

	if (data == NULL)
		return;
	descriptor = unpack_descriptor(data, len);

	/* child "item" (id 8, parent 7) before its parent "li" */
	swap = descriptor->schema->fields[7];
	descriptor->schema->fields[7] = descriptor->schema->fields[8];
	descriptor->schema->fields[8] = swap;
	out = with_descriptor(data, len, descriptor, &out_len);
	CHECK_FAILS(out, out_len, LP_ERR_CORRUPT, "parent that is not an earlier field");
	free(out);
	descriptor->schema->fields[8] = descriptor->schema->fields[7];
	descriptor->schema->fields[7] = swap;

	/* a parent id that no field has, and a field that is its own parent */
	descriptor->schema->fields[10]->parent_id = 99;
	out = with_descriptor(data, len, descriptor, &out_len);
	CHECK_FAILS(out, out_len, LP_ERR_CORRUPT, "field 10 of the schema");
	free(out);
	descriptor->schema->fields[10]->parent_id = 10;
	out = with_descriptor(data, len, descriptor, &out_len);
	CHECK_FAILS(out, out_len, LP_ERR_CORRUPT, "field 10 of the schema");
	free(out);
	descriptor->schema->fields[10]->parent_id = 9;

	/* the unchanged descriptor, re-serialized, still opens (GB0 moved) */
	out = with_descriptor(data, len, descriptor, &out_len);
	{
		LpError		err;
		LpFile	   *file = open_memory("moved", out, out_len, &err);

		LP_CHECK_MSG(file != NULL, "%.150s", err.message);
		if (file != NULL)
			check_small_schema(file, "moved");
		lp_file_free(file);
	}
	free(out);

	/* no schema at all */
	{
		Lance__File__Schema *schema = descriptor->schema;

		descriptor->schema = NULL;
		out = with_descriptor(data, len, descriptor, &out_len);
		CHECK_FAILS(out, out_len, LP_ERR_CORRUPT, "has no schema");
		free(out);
		descriptor->schema = schema;
	}
	lance__file__file_descriptor__free_unpacked(descriptor, NULL);
	free(data);
}

LP_TEST(file_schema_metadata_and_text)
{
	size_t		len;
	uint8_t    *data = load_fixture("v2_2_small.lance", &len);
	Lance__File__FileDescriptor *descriptor;
	Lance__File__Field__MetadataEntry entries[3] = {
		LANCE__FILE__FIELD__METADATA_ENTRY__INIT,
		LANCE__FILE__FIELD__METADATA_ENTRY__INIT,
		LANCE__FILE__FIELD__METADATA_ENTRY__INIT,
	};
	Lance__File__Field__MetadataEntry *pointers[3] = {&entries[0], &entries[1], &entries[2]};
	Lance__File__Field *field;
	char	   *saved_name;
	size_t		out_len;
	uint8_t    *out;
	LpError		err;
	LpFile	   *file;

	if (data == NULL)
		return;
	descriptor = unpack_descriptor(data, len);
	field = descriptor->schema->fields[4];

	/* keys out of order and "zeta" twice: sorted, last value wins */
	entries[0].key = "zeta";
	entries[0].value.data = (uint8_t *) "1";
	entries[0].value.len = 1;
	entries[1].key = "alpha";
	entries[1].value.data = (uint8_t *) "2";
	entries[1].value.len = 1;
	entries[2].key = "zeta";
	entries[2].value.data = (uint8_t *) "3";
	entries[2].value.len = 1;
	field->n_metadata = 3;
	field->metadata = pointers;
	out = with_descriptor(data, len, descriptor, &out_len);
	file = open_memory("metadata", out, out_len, &err);
	LP_CHECK_MSG(file != NULL, "%.150s", err.message);
	if (file != NULL)
	{
		const LpField *f = &file->schema.fields[4];

		LP_CHECK_EQ_U64(f->num_metadata, 2);
		if (f->num_metadata == 2)
		{
			LP_CHECK_STR(f->metadata[0].key, "alpha");
			LP_CHECK_STR(f->metadata[1].key, "zeta");
			LP_CHECK(f->metadata[1].value.len == 1 && f->metadata[1].value.data[0] == '3');
		}
	}
	lp_file_free(file);
	free(out);

	/* a metadata key that is not UTF-8 */
	entries[1].key = "bad\xff";
	out = with_descriptor(data, len, descriptor, &out_len);
	CHECK_FAILS(out, out_len, LP_ERR_CORRUPT, "not valid UTF-8");
	free(out);
	field->n_metadata = 0;
	field->metadata = NULL;

	/* a name that is not UTF-8 (an overlong slash) */
	saved_name = field->name;
	field->name = "s\xc0\xaf";
	out = with_descriptor(data, len, descriptor, &out_len);
	CHECK_FAILS(out, out_len, LP_ERR_CORRUPT, "field 4 of the schema");
	free(out);
	/* valid multibyte text is fine */
	field->name = "s\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80";
	out = with_descriptor(data, len, descriptor, &out_len);
	file = open_memory("utf8", out, out_len, &err);
	LP_CHECK_MSG(file != NULL, "%.150s", err.message);
	lp_file_free(file);
	free(out);
	field->name = saved_name;
	lance__file__file_descriptor__free_unpacked(descriptor, NULL);
	free(data);
}

/* ---- read pattern ---------------------------------------------------------- */

typedef struct CountingInput
{
	LpInput		base;
	LpInput    *inner;
	int			reads;
	uint64_t	bytes;
} CountingInput;

static bool
counting_read_at(LpInput *input, uint64_t offset, void *buffer, size_t len,
				 LpError *err)
{
	CountingInput *counting = (CountingInput *) input;

	counting->reads++;
	counting->bytes += len;
	return lp_input_read(counting->inner, offset, buffer, len, err);
}

static void
counting_close(LpInput *input)
{
	(void) input;
}

static const LpInputOps counting_ops = {.read_at = counting_read_at, .close = counting_close};

static LpFile *
open_counting(const uint8_t *data, size_t len, CountingInput *counting, LpError *err)
{
	LpFile	   *file;

	memset(counting, 0, sizeof(*counting));
	counting->inner = lp_memory_input_open("counted", data, len);
	counting->base.ops = &counting_ops;
	counting->base.name = "counted";
	counting->base.size = len;
	file = lp_file_open(&counting->base, err);
	lp_input_close(counting->inner);
	return file;
}

LP_TEST(file_reads_metadata_in_few_reads)
{
	size_t		len;
	uint8_t    *data = load_fixture("v2_1_small.lance", &len);
	CountingInput counting;
	LpError		err;
	LpFile	   *file;
	Rebuild		change = {0};
	size_t		out_len;
	uint8_t    *out;
	Lance__File__FileDescriptor *descriptor;
	Lance__File__Schema__MetadataEntry big = LANCE__FILE__SCHEMA__METADATA_ENTRY__INIT;
	Lance__File__Schema__MetadataEntry *saved_entries;
	uint8_t    *big_value;

	if (data == NULL)
		return;

	/* a small file: one read of the whole file */
	file = open_counting(data, len, &counting, &err);
	LP_CHECK(file != NULL);
	LP_CHECK_EQ_U64(counting.reads, 1);
	LP_CHECK_EQ_U64(counting.bytes, len);
	lp_file_free(file);

	/* 200 KB more data between GB0 and the column metadata */
	change.column = -1;
	change.padding = 200000;
	out = rebuild_file(data, len, &change, &out_len);
	file = open_counting(out, out_len, &counting, &err);
	LP_CHECK_MSG(file != NULL, "%.150s", err.message);
	/* GB0 stayed in front of the padding: fetched by itself */
	LP_CHECK_EQ_U64(counting.reads, 2);
	LP_CHECK(counting.bytes < 64 * 1024 + 1024);
	if (file != NULL)
		check_small_schema(file, "padded");
	lp_file_free(file);
	free(out);

	/* a 100 KB schema right before the column metadata: [GB0, EOF) in one read */
	descriptor = unpack_descriptor(data, len);
	big_value = calloc(1, 100000);
	big.key = "big";
	big.value.data = big_value;
	big.value.len = 100000;
	saved_entries = descriptor->schema->metadata[0];
	descriptor->schema->metadata[0] = &big;
	change.padding = 300000;
	{
		size_t		gb0_len;
		uint8_t    *gb0 = pack_message(&descriptor->base, &gb0_len);

		change.gb0 = gb0;
		change.gb0_len = gb0_len;
		out = rebuild_file(data, len, &change, &out_len);
		file = open_counting(out, out_len, &counting, &err);
		LP_CHECK_MSG(file != NULL, "%.150s", err.message);
		LP_CHECK_EQ_U64(counting.reads, 2);
		LP_CHECK(counting.bytes < 64 * 1024 + gb0_len + 2048);
		if (file != NULL)
			LP_CHECK_EQ_U64(file->schema.metadata[0].value.len, 100000);
		lp_file_free(file);
		free(out);
		free(gb0);
	}
	descriptor->schema->metadata[0] = saved_entries;
	lance__file__file_descriptor__free_unpacked(descriptor, NULL);
	free(big_value);
	free(data);
}

/* ---- allocation failures --------------------------------------------------- */

/* Every allocation failure gives LP_ERR_NO_MEMORY and leaks nothing (ASan). */
LP_TEST(file_allocation_failures)
{
	static const char *const names[] = {"v2_0_small.lance", "v2_2_blob_v2.lance"};

	for (size_t f = 0; f < 2; f++)
	{
		size_t		len;
		uint8_t    *data = load_fixture(names[f], &len);
		LpInput    *input;
		bool		opened = false;

		if (data == NULL)
			continue;
		input = lp_memory_input_open(names[f], data, len);
		for (int budget = 0; budget < 100000 && !opened; budget++)
		{
			LpError		err;
			LpFile	   *file;

			lp_test_fail_allocations_after(budget);
			file = lp_file_open(input, &err);
			lp_test_restore_allocations();
			if (file != NULL)
				opened = true;
			else
				LP_CHECK_MSG(err.code == LP_ERR_NO_MEMORY,
							 "%.150s with %d allocations: %.150s", names[f], budget, err.message);
			lp_file_free(file);
			if (file == NULL && err.code != LP_ERR_NO_MEMORY)
				break;
		}
		LP_CHECK_MSG(opened, "%s never opened", names[f]);
		lp_input_close(input);
		free(data);
	}
}

/* ---- generated reference data ---------------------------------------------- */

static const char *
json_text(const JsonValue *object, const char *key)
{
	const JsonValue *value = json_get(object, key);

	return value != NULL && value->kind == JSON_STRING ? value->text : NULL;
}

static double
json_number(const JsonValue *object, const char *key)
{
	const JsonValue *value = json_get(object, key);

	return value != NULL && value->kind == JSON_NUMBER ? strtod(value->text, NULL) : -1e300;
}

/* The schema the reference reports, field by field, against the file's. */
static void
check_expected_fields(const LpFile *file, const JsonValue *fields, bool blob,
					  const char *path)
{
	uint32_t	compared = blob ? 2 : (uint32_t) fields->count;

	if (!blob)
		LP_CHECK_MSG(file->schema.num_fields == fields->count,
					 "%.150s: %u fields, reference %zu", path,
					 file->schema.num_fields, fields->count);
	else
	{
		/* §6.5: the blob v2 field is stored without children, plus pseudo-fields */
		LP_CHECK_MSG(file->schema.num_fields == 7, "%.150s: %u fields", path,
					 file->schema.num_fields);
		for (uint32_t i = 2; i < file->schema.num_fields; i++)
			LP_CHECK(file->schema.fields[i].id == -1 &&
					 file->schema.fields[i].parent_id == -1);
	}
	for (uint32_t i = 0; i < compared && i < file->schema.num_fields && i < fields->count; i++)
	{
		const LpField *field = &file->schema.fields[i];
		const JsonValue *want = &fields->items[i];
		const JsonValue *nullable = json_get(want, "nullable");

		LP_CHECK_MSG(field->id == (int32_t) json_number(want, "id") &&
					 field->parent_id == (int32_t) json_number(want, "parent_id"),
					 "%.150s: field %u ids %d/%d", path, i, field->id, field->parent_id);
		LP_CHECK_MSG(json_text(want, "name") && strcmp(field->name, json_text(want, "name")) == 0,
					 "%.150s: field %u is named %.100s", path, i, field->name);
		LP_CHECK_MSG(json_text(want, "logical_type") &&
					 strcmp(field->logical_type, json_text(want, "logical_type")) == 0,
					 "%.150s: field %u has type %.100s, reference %.100s", path, i,
					 field->logical_type, json_text(want, "logical_type"));
		LP_CHECK_MSG(nullable && nullable->kind == JSON_BOOL &&
					 nullable->boolean == field->nullable,
					 "%.150s: field %u nullability", path, i);
	}
}

/* Page lengths per column as the reference reports them. */
static void
check_page_rows(const LpFile *file, const JsonValue *page_rows, const char *path)
{
	LP_CHECK_MSG(page_rows != NULL && page_rows->kind == JSON_ARRAY &&
				 page_rows->count == file->num_columns,
				 "%.150s: page_rows does not list %u columns", path, file->num_columns);
	if (page_rows == NULL || page_rows->kind != JSON_ARRAY)
		return;
	for (uint32_t c = 0; c < file->num_columns && c < page_rows->count; c++)
	{
		const JsonValue *pages = &page_rows->items[c];

		LP_CHECK_MSG(pages->count == file->columns[c].num_pages,
					 "%.150s: column %u has %u pages, reference %zu", path, c,
					 file->columns[c].num_pages, pages->count);
		for (uint32_t p = 0; p < file->columns[c].num_pages && p < pages->count; p++)
			LP_CHECK_MSG(strtod(pages->items[p].text, NULL) == (double) file->columns[c].pages[p].num_rows,
						 "%.150s: page %u of column %u has %llu rows, reference %.0f",
						 path, p, c,
						 (unsigned long long) file->columns[c].pages[p].num_rows,
						 strtod(pages->items[p].text, NULL));
	}
}

static void
check_reference_file(const JsonValue *dataset, const JsonValue *data_file,
					 int *per_version)
{
	char		path[1024];
	char		footer[16];
	size_t		len;
	uint8_t    *data;
	LpError		err;
	LpFile	   *file;
	const JsonValue *fields = json_get(dataset, "expected_fields");
	const char *kind = json_text(dataset, "kind");

	snprintf(path, sizeof(path), "%.500s/data/%.400s", json_text(dataset, "path"),
			 json_text(data_file, "file"));
	lp_test_file_read_all(path, &data, &len);
	LP_CHECK_MSG(data != NULL, "cannot read %.150s", path);
	if (data == NULL)
		return;
	file = open_memory(path, data, len, &err);
	LP_CHECK_MSG(file != NULL, "%.150s: %.150s (%.150s)", path, err.message, err.detail);
	if (file != NULL)
	{
		per_version[file->version]++;
		snprintf(footer, sizeof(footer), "%u.%u", file->footer_major, file->footer_minor);
		LP_CHECK_MSG(json_text(data_file, "footer_version") &&
					 strcmp(footer, json_text(data_file, "footer_version")) == 0,
					 "%.150s: footer version %s", path, footer);
		LP_CHECK_MSG(strcmp(lp_file_version_name(file->version),
							json_text(dataset, "file_version")) == 0,
					 "%.150s: version %s", path, lp_file_version_name(file->version));
		LP_CHECK(file->file_size == (uint64_t) json_number(data_file, "file_size_bytes"));
		if (file->version != LP_FILE_VERSION_LEGACY)
		{
			LP_CHECK_MSG(file->num_rows == (uint64_t) json_number(data_file, "num_rows"),
						 "%.150s: %llu rows", path, (unsigned long long) file->num_rows);
			LP_CHECK_MSG(file->num_columns == (uint32_t) json_number(dataset, "expected_num_columns"),
						 "%.150s: %u columns", path, file->num_columns);
			LP_CHECK_EQ_U64(file->num_global_buffers, 1);
			check_expected_fields(file, fields, kind && strcmp(kind, "blob") == 0, path);
			check_page_rows(file, json_get(data_file, "page_rows"), path);
			check_invariants(file, path);
		}
	}
	lp_file_free(file);
	free(data);
}

/*
 * Every data file of the reference datasets (index: manifest.json) opens and
 * reports what the reference implementation reported for it.
 */
LP_TEST(file_generated_reference_data)
{
	char		path[1024];
	const char *error = NULL;
	JsonValue  *index;
	const JsonValue *datasets;
	int			per_version[5] = {0};
	int			files = 0;

	LP_CHECK_MSG(lp_test_data_dir != NULL,
				 "no reference data directory given (make check-core TESTDATA=...)");
	if (lp_test_data_dir == NULL)
		return;
	snprintf(path, sizeof(path), "%.900s/manifest.json", lp_test_data_dir);
	index = json_parse_file(path, &error);
	LP_CHECK_MSG(index != NULL, "cannot read %.150s: %s", path, error ? error : "");
	if (index == NULL)
		return;
	datasets = json_get(index, "datasets");
	LP_CHECK_MSG(datasets != NULL && datasets->kind == JSON_ARRAY,
				 "%.150s has no datasets", path);
	for (size_t d = 0; datasets != NULL && d < datasets->count; d++)
	{
		const JsonValue *data_files = json_get(&datasets->items[d], "data_files");

		for (size_t f = 0; data_files != NULL && f < data_files->count; f++, files++)
			check_reference_file(&datasets->items[d], &data_files->items[f], per_version);
	}
	json_free(index);
	for (int v = LP_FILE_VERSION_LEGACY; v <= LP_FILE_VERSION_2_3; v++)
		LP_CHECK_MSG(per_version[v] > 0, "no %s data file in the reference data",
					 lp_file_version_name((LpFileVersion) v));
	printf("  %d reference data files (legacy %d, 2.0 %d, 2.1 %d, 2.2 %d, 2.3 %d)\n",
		   files, per_version[0], per_version[1], per_version[2], per_version[3],
		   per_version[4]);
}
