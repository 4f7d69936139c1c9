/*
 * test_decode.c - every column of every data file of the reference data
 * sets (types, multipage, encodings and the blob v2 descriptors), decoded
 * and compared value by value with the rows the reference implementation
 * read (<name>.rows.json).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_reader.h"
#include "lp_test.h"
#include "value_compare.h"

#include "base/lp_alloc.h"
#include "base/lp_interrupt.h"
#include "decode/lp_decode.h"
#include "format/lp_columns.h"
#include "decode/lp_decode_internal.h"
#include "format/lp_file.h"
#include "lp_test_files.h"
#include "lp_test_util.h"

/* more than any generated dataset has */
#define MAX_DATA_FILES 64

/* Mismatches reported per column before the rest are only counted. */
#define MAX_REPORTED 3

/*
 * Decode every top-level field of one data file (only the one named
 * only_field, unless NULL) and compare its rows.
 */
static void
check_data_file(const char *dataset, const char *path, const JsonValue *rows,
				uint64_t first_row, uint64_t fragment_id, const char *only_field,
				uint64_t *columns_checked)
{
	size_t		size;
	uint8_t    *bytes;
	LpInput    *input;
	LpFile	   *file;
	LpError		err;

	lp_test_file_read_all(path, &bytes, &size);
	LP_CHECK_MSG(bytes != NULL, "cannot read %.100s", path);
	if (bytes == NULL)
		return;
	input = lp_memory_input_open(path, bytes, size);
	file = lp_file_open(input, &err);
	LP_CHECK_MSG(file != NULL, "%.100s: %.100s", path, file ? "" : err.message);
	if (file == NULL)
	{
		lp_input_close(input);
		free(bytes);
		return;
	}
	LP_CHECK_MSG(first_row + file->num_rows <= rows->count, "%.100s: more rows than the reference",
				 dataset);
	for (uint32_t f = 0; f < file->schema.num_fields && first_row + file->num_rows <= rows->count; f++)
	{
		const LpField *field = &file->schema.fields[f];
		LpType	   *type;
		LpArray    *array;
		int			mismatches = 0;

		if (field->parent_id != -1 || field->id < 0 ||
			(only_field != NULL && strcmp(field->name, only_field) != 0))
			continue;
		if (!lp_decode_field(input, file, f, &type, &array, &err))
		{
			LP_CHECK_MSG(false, "%.100s: field \"%.100s\": %.100s (%.100s)", dataset, field->name, err.message,
						 err.detail);
			continue;
		}
		LP_CHECK_EQ_U64(array->length, file->num_rows);
		for (uint64_t r = 0; r < array->length && r < file->num_rows; r++)
		{
			const JsonValue *row = &rows->items[first_row + r];
			const JsonValue *expected = json_get(row, field->name);
			const JsonValue *rowid = json_get(row, "_rowid");
			char		what[512];

			if (r == 0 && rowid != NULL)
				LP_CHECK_MSG(strtoull(rowid->text, NULL, 10) >> 32 == fragment_id,
							 "%.100s: rows of fragment %llu are not where expected", dataset,
							 (unsigned long long) fragment_id);
			if (expected == NULL)
			{
				LP_CHECK_MSG(false, "%.100s: reference rows lack \"%.100s\"", dataset, field->name);
				break;
			}
			if (!value_matches(array, r, expected, what, sizeof(what)))
			{
				if (mismatches < MAX_REPORTED)
					LP_CHECK_MSG(false, "%.100s: %.100s row %llu column \"%.100s\": %.100s", dataset, path,
								 (unsigned long long) (first_row + r), field->name, what);
				mismatches++;
			}
		}
		if (mismatches > MAX_REPORTED)
			LP_CHECK_MSG(false, "%.100s: column \"%.100s\": %d mismatches in all", dataset, field->name,
						 mismatches);
		(*columns_checked)++;
		lp_array_free(array);
		lp_type_free(type);
	}
	lp_file_free(file);
	lp_input_close(input);
	free(bytes);
}

static void
check_dataset(const JsonValue *dataset, const char *only_field, uint64_t *files_checked,
			  uint64_t *columns_checked)
{
	const char *name = json_get(dataset, "name")->text;
	const char *path = json_get(dataset, "path")->text;
	const JsonValue *data_files = json_get(dataset, "data_files");
	char		rows_path[1024];
	JsonValue  *rows;
	const char *error = NULL;
	uint64_t	first_row = 0;

	snprintf(rows_path, sizeof(rows_path), "%.1000s", json_get(dataset, "rows_file")->text);
	rows = json_parse_file(rows_path, &error);
	LP_CHECK_MSG(rows != NULL && rows->kind == JSON_ARRAY, "%.100s: %.100s", rows_path,
				 error ? error : "not an array");
	if (rows == NULL || rows->kind != JSON_ARRAY)
	{
		json_free(rows);
		return;
	}
	/* Rows come in fragment-id order; take the files in that order. */
	for (uint64_t fragment = 0; fragment < data_files->count; fragment++)
		for (size_t i = 0; i < data_files->count; i++)
		{
			const JsonValue *df = &data_files->items[i];
			char		file_path[1024];

			if (strtoull(json_get(df, "fragment_id")->text, NULL, 10) != fragment)
				continue;
			snprintf(file_path, sizeof(file_path), "%.700s/data/%.200s", path, json_get(df, "file")->text);
			check_data_file(name, file_path, rows, first_row, fragment, only_field,
							columns_checked);
			first_row += strtoull(json_get(df, "num_rows")->text, NULL, 10);
			(*files_checked)++;
		}
	LP_CHECK_MSG(first_row == rows->count, "%.100s: files hold %llu rows, the reference %zu", name,
				 (unsigned long long) first_row, rows->count);
	json_free(rows);
}

/*
 * Check the datasets that manifest_name (under the test data directory)
 * lists, those of file_version and the kinds of the version checks only
 * (all of them when file_version is NULL); false without the manifest.
 */
static bool
check_manifest_datasets(const char *manifest_name, const char *file_version,
						uint64_t *files_checked, uint64_t *columns_checked, int *datasets_checked)
{
	char		manifest_path[1024];
	JsonValue  *manifest;
	const JsonValue *datasets;
	const char *error = NULL;

	LP_CHECK_MSG(lp_test_data_dir != NULL, "no test data directory given");
	if (lp_test_data_dir == NULL)
		return false;
	snprintf(manifest_path, sizeof(manifest_path), "%.900s/%.100s", lp_test_data_dir, manifest_name);
	manifest = json_parse_file(manifest_path, &error);
	LP_CHECK_MSG(manifest != NULL, "%.100s: %.100s", manifest_path, error);
	if (manifest == NULL)
		return false;
	datasets = json_get(manifest, "datasets");
	for (size_t i = 0; datasets && i < datasets->count; i++)
	{
		const JsonValue *ds = &datasets->items[i];

		/* the legacy manifest's datasets have no kind: all of them are checked */
		if (file_version != NULL)
		{
			const char *kind = json_get(ds, "kind")->text;

			if (strcmp(json_get(ds, "file_version")->text, file_version) != 0 ||
				(strcmp(kind, "types") != 0 && strcmp(kind, "multipage") != 0 &&
				 strcmp(kind, "encodings") != 0 && strcmp(kind, "blob") != 0))
				continue;
		}
		check_dataset(ds, NULL, files_checked, columns_checked);
		(*datasets_checked)++;
	}
	json_free(manifest);
	return true;
}

static void
check_datasets_of_version(const char *file_version)
{
	uint64_t	files_checked = 0;
	uint64_t	columns_checked = 0;
	int			datasets_checked = 0;

	if (!check_manifest_datasets("manifest.json", file_version, &files_checked, &columns_checked,
								 &datasets_checked))
		return;
	printf("  %s: %d data sets, %llu files, %llu columns\n", file_version, datasets_checked, (unsigned long long) files_checked, (unsigned long long) columns_checked);
	/* types_<ver>_v1, types_<ver>_v2, multipage_<ver> and encodings_<ver> */
	LP_CHECK_MSG(datasets_checked >= 4, "only %d data sets of version %.100s", datasets_checked,
				 file_version);
	LP_CHECK_MSG(columns_checked > 0, "no columns of version %.100s checked", file_version);
}

LP_TEST(decode_reference_2_0)
{
	check_datasets_of_version("2.0");
}

/*
 * The early 2.0 files of old lancedb releases (test/reference/legacy):
 * strings and binaries as lists of u8 (two columns a field) and Bitpacked
 * pages, compared with the rows those releases read back.
 */
LP_TEST(decode_legacy_writers)
{
	uint64_t	files_checked = 0;
	uint64_t	columns_checked = 0;
	int			datasets_checked = 0;

	if (!check_manifest_datasets("legacy/legacy.json", NULL, &files_checked, &columns_checked,
								 &datasets_checked))
		return;
	/* strlist_2_0 and bitpacked_2_0, two files of nine fields each */
	LP_CHECK_EQ_U64(files_checked, 4);
	LP_CHECK_EQ_U64(columns_checked, 36);
}

LP_TEST(decode_reference_2_1)
{
	check_datasets_of_version("2.1");
}

LP_TEST(decode_reference_2_2)
{
	check_datasets_of_version("2.2");
}

LP_TEST(decode_reference_2_3)
{
	check_datasets_of_version("2.3");
}

/* The manifest.json entry of a reference dataset (in *manifest, to be freed). */
static const JsonValue *
reference_dataset(const char *name, JsonValue **manifest)
{
	char		manifest_path[1024];
	const JsonValue *datasets;
	const char *error = NULL;

	*manifest = NULL;
	LP_CHECK_MSG(lp_test_data_dir != NULL, "no test data directory given");
	if (lp_test_data_dir == NULL)
		return NULL;
	snprintf(manifest_path, sizeof(manifest_path), "%.900s/manifest.json", lp_test_data_dir);
	*manifest = json_parse_file(manifest_path, &error);
	LP_CHECK_MSG(*manifest != NULL, "%.100s: %.100s", manifest_path, error);
	datasets = *manifest ? json_get(*manifest, "datasets") : NULL;
	for (size_t i = 0; datasets && i < datasets->count; i++)
		if (strcmp(json_get(&datasets->items[i], "name")->text, name) == 0)
			return &datasets->items[i];
	LP_CHECK_MSG(false, "the reference data has no dataset %.100s", name);
	return NULL;
}

/* Mini-block value encodings of every page of a field's column, one call each. */
typedef void (*ValueEncodingVisitor) (const LpCompressive *value_compression, void *arg);

static void
visit_value_encodings(const char *dataset, const char *field_name, ValueEncodingVisitor visit,
					  void *arg)
{
	char	   *paths[MAX_DATA_FILES];
	int			num_paths = lp_test_dataset_data_files(dataset, paths, MAX_DATA_FILES);

	for (int i = 0; i < num_paths; i++)
	{
		size_t		size;
		uint8_t    *bytes;
		LpInput    *input;
		LpFile	   *file = NULL;
		LpError		err;
		uint32_t	column = UINT32_MAX;

		lp_test_file_read_all(paths[i], &bytes, &size);
		input = bytes ? lp_memory_input_open(paths[i], bytes, size) : NULL;
		file = input ? lp_file_open(input, &err) : NULL;
		LP_CHECK_MSG(file != NULL, "cannot open %.200s", paths[i]);
		for (uint32_t f = 0; file && f < file->schema.num_fields; f++)
			if (strcmp(file->schema.fields[f].name, field_name) == 0)
				LP_CHECK(lp_field_first_column(file, f, &column, &err));
		LP_CHECK_MSG(file == NULL || column != UINT32_MAX, "%.200s has no field %.100s", paths[i],
					 field_name);
		for (uint32_t p = 0; file && column != UINT32_MAX && p < file->columns[column].num_pages; p++)
		{
			LpPageContext ctx = {file, column, p, &err};
			ProtobufCMessage *message;

			LP_CHECK(lp_unpack_page_encoding(&ctx, &file->columns[column].pages[p], &message));
			if (message != NULL && file->version != LP_FILE_VERSION_2_0)
			{
				const Lance__Encodings21__PageLayout *layout =
					(const Lance__Encodings21__PageLayout *) message;

				if (layout->layout_case == LANCE__ENCODINGS21__PAGE_LAYOUT__LAYOUT_MINI_BLOCK_LAYOUT)
					visit(layout->mini_block_layout->value_compression, arg);
			}
			lp_protobuf_free(message);
		}
		lp_file_free(file);
		if (input)
			lp_input_close(input);
		free(bytes);
		free(paths[i]);
	}
}

/* Pages whose RLE run values / run lengths are General-compressed. */
typedef struct RleGeneralCounts
{
	int			values;
	int			run_lengths;
} RleGeneralCounts;

static void
count_rle_general(const LpCompressive *value_compression, void *arg)
{
	RleGeneralCounts *counts = arg;
	const Lance__Encodings21__Rle *rle;

	if (value_compression == NULL ||
		value_compression->compression_case != LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_RLE)
		return;
	rle = value_compression->rle;
	counts->values += rle->values != NULL &&
		rle->values->compression_case == LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_GENERAL;
	counts->run_lengths += rle->run_lengths != NULL &&
		rle->run_lengths->compression_case == LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_GENERAL;
}

/*
 * 2.3 RLE whose run values and run lengths are each wrapped in General
 * (zstd and lz4): the reference columns really carry it, and every value
 * decodes as the reference reads it.
 */
LP_TEST(decode_reference_rle_general_children)
{
	static const char *const fields[] = {"rle_zstd_f32", "rle_lz4_f64"};
	RleGeneralCounts counts = {0, 0};
	JsonValue  *manifest;
	const JsonValue *dataset = reference_dataset("encodings_2_3", &manifest);

	for (size_t i = 0; dataset != NULL && i < sizeof(fields) / sizeof(fields[0]); i++)
	{
		uint64_t	files_checked = 0;
		uint64_t	columns_checked = 0;

		visit_value_encodings("encodings_2_3", fields[i], count_rle_general, &counts);
		check_dataset(dataset, fields[i], &files_checked, &columns_checked);
		LP_CHECK_MSG(columns_checked == files_checked && files_checked > 0,
					 "%s: %llu of %llu files decoded", fields[i],
					 (unsigned long long) columns_checked, (unsigned long long) files_checked);
	}
	LP_CHECK_MSG(counts.values > 0 && counts.run_lengths > 0,
				 "pages with General run values: %d, run lengths: %d", counts.values,
				 counts.run_lengths);
	json_free(manifest);
}

/*
 * Fail each allocation of the decode of every top-level field of one data
 * file in turn: each failure must come back as LP_ERR_NO_MEMORY (not as a
 * damaged file) naming the field, the file and the size of the request, and
 * nothing may leak (ASan).  Returns the allocation points
 * tried.
 */
static long
check_decode_allocation_failures(const char *path)
{
	size_t		size;
	uint8_t    *bytes;
	LpInput    *input;
	LpFile	   *file;
	LpError		err;
	long		points = 0;

	lp_test_file_read_all(path, &bytes, &size);
	LP_CHECK_MSG(bytes != NULL, "cannot read %.100s", path);
	if (bytes == NULL)
		return 0;
	input = lp_memory_input_open(path, bytes, size);
	file = lp_file_open(input, &err);
	LP_CHECK_MSG(file != NULL, "%.100s: %.100s", path, file ? "" : err.message);
	for (uint32_t f = 0; file != NULL && f < file->schema.num_fields; f++)
	{
		const LpField *field = &file->schema.fields[f];
		bool		decoded = false;

		if (field->parent_id != -1 || field->id < 0)
			continue;
		for (long budget = 0; !decoded; budget++)
		{
			LpType	   *type;
			LpArray    *array;

			lp_test_fail_allocations_after(budget);
			decoded = lp_decode_field(input, file, f, &type, &array, &err);
			lp_test_restore_allocations();
			if (decoded)
			{
				lp_array_free(array);
				lp_type_free(type);
				break;
			}
			points++;
			if (err.code != LP_ERR_NO_MEMORY || strstr(err.message, field->name) == NULL ||
				strstr(err.message, path) == NULL || strstr(err.detail, " bytes failed") == NULL)
			{
				LP_CHECK_MSG(false, "%.100s: field \"%.40s\" with %ld allocations: %.150s (%.80s)",
							 path, field->name, budget, err.message, err.detail);
				break;
			}
		}
	}
	lp_file_free(file);
	lp_input_close(input);
	free(bytes);
	return points;
}

/* Every data file of the given reference datasets. */
LP_TEST(decode_allocation_failures)
{
	static const char *const datasets[] = {
		"types_2_0_v1", "types_2_1_v1", "types_2_2_v1", "types_2_3_v1",
		"types_2_0_v2", "types_2_1_v2", "types_2_2_v2", "types_2_3_v2",
		"multipage_2_0", "multipage_2_1", "multipage_2_2", "multipage_2_3",
		"encodings_2_0", "encodings_2_1", "encodings_2_2", "encodings_2_3", "blob_2_2",
	};
	long		points = 0;

	LP_CHECK_MSG(lp_test_data_dir != NULL, "no test data directory given");
	if (lp_test_data_dir == NULL)
		return;
	for (size_t d = 0; d < sizeof(datasets) / sizeof(datasets[0]); d++)
	{
		char	   *paths[MAX_DATA_FILES];
		int			num_paths = lp_test_dataset_data_files(datasets[d], paths, MAX_DATA_FILES);

		for (int i = 0; i < num_paths; i++)
		{
			points += check_decode_allocation_failures(paths[i]);
			free(paths[i]);
		}
	}
	printf("  %ld allocation points failed\n", points);
	LP_CHECK(points > 0);
}

/* Cancel checks counted, and a cancel on the check numbered cancel_at. */
static long cancel_polls;
static long cancel_at;

static bool
cancel_on_poll(void)
{
	return cancel_polls++ == cancel_at;
}

/*
 * Decoders poll for a cancel on every page: a decode of a field stored in
 * many pages polls at least once per page, and a cancel at any of those
 * polls stops it with LP_ERR_CANCELED (and nothing leaks, under ASan).
 * multipage_2_0 goes through the 2.0 decoder, multipage_2_2 through the
 * 2.1+ one.
 */
LP_TEST(decode_cancel_per_page)
{
	static const char *const datasets[] = {"multipage_2_0", "multipage_2_2"};

	LP_CHECK_MSG(lp_test_data_dir != NULL, "no test data directory given");
	if (lp_test_data_dir == NULL)
		return;
	lp_set_cancel_check(cancel_on_poll);
	for (size_t d = 0; d < sizeof(datasets) / sizeof(datasets[0]); d++)
	{
		char	   *paths[MAX_DATA_FILES];
		int			num_paths = lp_test_dataset_data_files(datasets[d], paths, MAX_DATA_FILES);
		bool		checked = false;

		for (int i = 0; i < num_paths; i++)
		{
			const char *path = paths[i];
			size_t		size;
			uint8_t    *bytes;
			LpInput    *input;
			LpFile	   *file;
			LpError		err;

			lp_test_file_read_all(path, &bytes, &size);
			input = bytes ? lp_memory_input_open(path, bytes, size) : NULL;
			file = input ? lp_file_open(input, &err) : NULL;
			LP_CHECK_MSG(file != NULL, "cannot open %.200s", path);
			for (uint32_t f = 0; file != NULL && f < file->schema.num_fields; f++)
			{
				LpType	   *type;
				LpArray    *array;
				long		polls;
				uint32_t	first;
				uint32_t	pages;

				if (file->schema.fields[f].parent_id != -1 || file->schema.fields[f].id < 0)
					continue;
				cancel_polls = 0;
				cancel_at = -1;
				LP_CHECK(lp_decode_field(input, file, f, &type, &array, &err));
				lp_array_free(array);
				lp_type_free(type);
				polls = cancel_polls;
				LP_CHECK(lp_field_first_column(file, f, &first, &err));
				pages = file->columns[first].num_pages;
				LP_CHECK_MSG(polls >= pages,
							 "field %u of %.200s: %u pages, %ld polls", f, path, pages, polls);
				for (cancel_at = 0; cancel_at < polls; cancel_at++)
				{
					cancel_polls = 0;
					LP_CHECK_MSG(!lp_decode_field(input, file, f, &type, &array, &err) &&
								 err.code == LP_ERR_CANCELED,
								 "field %u of %.200s went on after a cancel at poll %ld",
								 f, path, cancel_at);
				}
				checked |= pages > 1;
			}
			lp_file_free(file);
			lp_input_close(input);
			free(bytes);
			free(paths[i]);
		}
		LP_CHECK_MSG(checked, "no field of %s has several pages", datasets[d]);
	}
	lp_set_cancel_check(NULL);
}
