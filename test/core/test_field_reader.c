/*
 * test_field_reader.c - takes of chosen rows (lp_field_reader_take) from
 * every top-level field of every reference data file of versions 2.0 - 2.3
 * (types, encodings, multipage, blob, deleted), each compared value by value
 * (validity, offsets, children) with the same rows of the whole-field
 * decode; pages skipped by small takes; the peak memory of a scan in small
 * batches against the whole decode; bad row arguments; the byte ranges of
 * a take (lp_field_reader_ranges) hold every read of the take; a take of
 * a few rows of a page of megabytes reads their chunks alone.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_reader.h"
#include "lp_encode_round_trip.h"
#include "lp_test.h"

#include "base/lp_alloc.h"
#include "decode/lp_decode.h"
#include "format/lp_columns.h"
#include "format/lp_file.h"
#include "lp_test_files.h"
#include "lp_test_util.h"

#define MAX_DATA_FILES 64

/* Batches of each size taken from the start of a file (all of the file for the large sizes). */
#define BATCHES_PER_SIZE 256

/* ---- comparing rows of two arrays of one type ------------------------------ */

static bool rows_equal(const LpArray *a, uint64_t ai, const LpArray *b, uint64_t bi,
					   char *what, size_t size);

static bool
ranges_equal(const LpArray *a, uint64_t ai, const LpArray *b, uint64_t bi, uint64_t count,
			 char *what, size_t size)
{
	for (uint64_t i = 0; i < count; i++)
		if (!rows_equal(a, ai + i, b, bi + i, what, size))
			return false;
	return true;
}

/* Row ai of a (the take) against row bi of b (the whole decode). */
static bool
rows_equal(const LpArray *a, uint64_t ai, const LpArray *b, uint64_t bi, char *what,
		   size_t size)
{
	const LpType *type = a->type;
	bool		valid = lp_array_is_valid(a, ai);

	if (ai >= a->length || bi >= b->length)
	{
		snprintf(what, size, "\"%s\": row %llu/%llu beyond %llu/%llu", type->name,
				 (unsigned long long) ai, (unsigned long long) bi,
				 (unsigned long long) a->length, (unsigned long long) b->length);
		return false;
	}
	if (valid != lp_array_is_valid(b, bi))
	{
		snprintf(what, size, "\"%s\": validity of row %llu differs", type->name,
				 (unsigned long long) bi);
		return false;
	}
	switch (type->id)
	{
		case LP_TYPE_NULL:
			return true;
		case LP_TYPE_BOOL:
			if (lp_bit_get(a->values, ai) == lp_bit_get(b->values, bi))
				return true;
			break;
		case LP_TYPE_STRING:
		case LP_TYPE_LARGE_STRING:
		case LP_TYPE_BINARY:
		case LP_TYPE_LARGE_BINARY:
			{
				uint64_t	len = a->offsets[ai + 1] - a->offsets[ai];

				if (len == b->offsets[bi + 1] - b->offsets[bi] &&
					(len == 0 || memcmp(a->data + a->offsets[ai], b->data + b->offsets[bi], len) == 0))
					return true;
				break;
			}
		case LP_TYPE_FIXED_SIZE_LIST:
			return ranges_equal(a->children[0], ai * type->fixed_size, b->children[0],
								bi * type->fixed_size, type->fixed_size, what, size);
		case LP_TYPE_LIST:
		case LP_TYPE_LARGE_LIST:
			{
				uint64_t	len = a->offsets[ai + 1] - a->offsets[ai];

				if (len != b->offsets[bi + 1] - b->offsets[bi])
					break;
				return ranges_equal(a->children[0], a->offsets[ai], b->children[0],
									b->offsets[bi], len, what, size);
			}
		case LP_TYPE_STRUCT:
			if (a->num_children != b->num_children)
				break;
			for (uint32_t c = 0; c < a->num_children; c++)
				if (!rows_equal(a->children[c], ai, b->children[c], bi, what, size))
					return false;
			return true;
		default:
			{
				uint32_t	width = lp_type_byte_width(type);

				if (width > 0 && memcmp(a->values + ai * width, b->values + bi * width, width) == 0)
					return true;
				break;
			}
	}
	snprintf(what, size, "\"%s\" (%s): row %llu differs", type->name, lp_type_id_name(type->id),
			 (unsigned long long) bi);
	return false;
}

/* The structure of an array of n rows: lengths of children, offsets present. */
static bool
shape_ok(const LpArray *array, uint64_t n)
{
	if (array->length != n)
		return false;
	if (array->type->id == LP_TYPE_STRUCT && !array->type->packed)
	{
		if (array->num_children != array->type->num_children)
			return false;
		for (uint32_t c = 0; c < array->num_children; c++)
			if (!shape_ok(array->children[c], n))
				return false;
	}
	return true;
}

/* ---- takes of one file ---------------------------------------------------------- */

typedef struct FileUnderTest
{
	const char *path;
	uint8_t    *bytes;
	LpInput    *input;
	LpFile	   *file;
} FileUnderTest;

static bool
open_file(const char *path, FileUnderTest *f)
{
	size_t		size;
	LpError		err;

	memset(f, 0, sizeof(*f));
	f->path = path;
	lp_test_file_read_all(path, &f->bytes, &size);
	LP_CHECK_MSG(f->bytes != NULL, "cannot read %.200s", path);
	if (f->bytes == NULL)
		return false;
	f->input = lp_memory_input_open(path, f->bytes, size);
	f->file = lp_file_open(f->input, &err);
	LP_CHECK_MSG(f->file != NULL, "%.200s: %.200s", path, f->file ? "" : err.message);
	return f->file != NULL;
}

static void
close_file(FileUnderTest *f)
{
	lp_file_free(f->file);
	lp_input_close(f->input);
	free(f->bytes);
}

static bool
is_top_level(const LpFile *file, uint32_t f)
{
	return file->schema.fields[f].parent_id == -1 && file->schema.fields[f].id >= 0;
}

/* Take rows[0..n) and compare them with the whole decode; false after a failed check. */
static bool
check_take(LpFieldReader *reader, const LpArray *whole, const uint64_t *rows, uint64_t n,
		   const char *path, const char *field)
{
	LpArray    *taken;
	LpError		err;
	char		what[512];
	bool		ok = true;

	if (!lp_field_reader_take(reader, rows, n, &taken, &err))
	{
		LP_CHECK_MSG(false, "%.150s: field \"%.60s\": take of %llu rows from %llu: %.200s",
					 path, field, (unsigned long long) n,
					 (unsigned long long) (n ? rows[0] : 0), err.message);
		return false;
	}
	if (taken->type != lp_field_reader_type(reader) || !shape_ok(taken, n))
	{
		LP_CHECK_MSG(false, "%.150s: field \"%.60s\": take of %llu rows has the wrong shape",
					 path, field, (unsigned long long) n);
		ok = false;
	}
	for (uint64_t i = 0; ok && i < n; i++)
		if (!rows_equal(taken, i, whole, rows[i], what, sizeof(what)))
		{
			LP_CHECK_MSG(false, "%.150s: field \"%.60s\": take of %llu rows from %llu: %.200s",
						 path, field, (unsigned long long) n, (unsigned long long) rows[0], what);
			ok = false;
		}
	lp_array_free(taken);
	return ok;
}

static uint64_t
next_random(uint64_t *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return *state;
}

/* Every way of taking rows of one field, against its whole decode. */
static void
check_field_takes(FileUnderTest *f, uint32_t field_index)
{
	static const uint64_t batch_sizes[] = {1, 7, 1000, 4097};
	const char *name = f->file->schema.fields[field_index].name;
	uint64_t	num_rows = f->file->num_rows;
	LpFieldReader *reader;
	LpType	   *type;
	LpArray    *whole;
	LpError		err;
	uint64_t   *rows = malloc((num_rows + 1) * sizeof(uint64_t));
	uint64_t	state = 0x9e3779b97f4a7c15ull ^ field_index;
	uint64_t	n;
	bool		ok = true;

	if (!lp_decode_field(f->input, f->file, field_index, &type, &whole, &err))
	{
		LP_CHECK_MSG(false, "%.150s: field \"%.60s\": %.200s", f->path, name, err.message);
		free(rows);
		return;
	}
	LP_CHECK(lp_field_reader_open(f->input, f->file, field_index, &reader, &err));
	/* (a) consecutive batches */
	for (size_t s = 0; ok && s < sizeof(batch_sizes) / sizeof(batch_sizes[0]); s++)
		for (uint64_t first = 0;
			 ok && first < num_rows && first < BATCHES_PER_SIZE * batch_sizes[s];
			 first += batch_sizes[s])
		{
			n = 0;
			for (uint64_t r = first; r < num_rows && r < first + batch_sizes[s]; r++)
				rows[n++] = r;
			ok = check_take(reader, whole, rows, n, f->path, name);
		}
	/* (b) random sparse rows, about 1 % */
	n = 0;
	for (uint64_t r = 0; r < num_rows; r++)
		if (next_random(&state) % 100 == 0)
			rows[n++] = r;
	ok = ok && check_take(reader, whole, rows, n, f->path, name);
	/* (c) the last row alone, and no row */
	rows[0] = num_rows - 1;
	ok = ok && check_take(reader, whole, rows, num_rows > 0 ? 1 : 0, f->path, name);
	ok = ok && check_take(reader, whole, rows, 0, f->path, name);
	lp_field_reader_close(reader);
	lp_array_free(whole);
	lp_type_free(type);
	free(rows);
}

/* The data files of every dataset of the kinds the decoder is checked on. */
static int
reference_data_files(char **paths, int max)
{
	static const char *const kinds[] = {"types", "encodings", "multipage", "blob", "deleted"};
	char		manifest_path[1024];
	JsonValue  *manifest;
	const JsonValue *datasets;
	const char *error = NULL;
	int			count = 0;

	LP_CHECK_MSG(lp_test_data_dir != NULL, "no test data directory given");
	if (lp_test_data_dir == NULL)
		return 0;
	snprintf(manifest_path, sizeof(manifest_path), "%.900s/manifest.json", lp_test_data_dir);
	manifest = json_parse_file(manifest_path, &error);
	LP_CHECK_MSG(manifest != NULL, "%.100s: %.100s", manifest_path, error);
	if (manifest == NULL)
		return 0;
	datasets = json_get(manifest, "datasets");
	for (size_t i = 0; datasets && i < datasets->count; i++)
	{
		const JsonValue *ds = &datasets->items[i];
		bool		wanted = false;

		for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
			wanted |= strcmp(json_get(ds, "kind")->text, kinds[k]) == 0;
		if (!wanted || strcmp(json_get(ds, "file_version")->text, "legacy") == 0)
			continue;
		count += lp_test_dataset_data_files(json_get(ds, "name")->text, paths + count,
											max - count);
	}
	json_free(manifest);
	/* The early 2.0 files of old lancedb releases (strings as lists of u8, Bitpacked) */
	count += lp_test_dataset_data_files("legacy/strlist_2_0", paths + count, max - count);
	count += lp_test_dataset_data_files("legacy/bitpacked_2_0", paths + count, max - count);
	return count;
}

LP_TEST(field_reader_takes_equal_whole_decode)
{
	char	   *paths[4 * MAX_DATA_FILES];
	int			num_paths = reference_data_files(paths, 4 * MAX_DATA_FILES);
	int			fields = 0;

	for (int i = 0; i < num_paths; i++)
	{
		FileUnderTest f;

		if (open_file(paths[i], &f))
			for (uint32_t field = 0; field < f.file->schema.num_fields; field++)
				if (is_top_level(f.file, field))
				{
					check_field_takes(&f, field);
					fields++;
				}
		close_file(&f);
		free(paths[i]);
	}
	printf("  %d files, %d fields\n", num_paths, fields);
	LP_CHECK(num_paths >= 44);
}

/* ---- pages skipped and memory ---------------------------------------------- */

/* The data files of the multipage datasets. */
static int
multipage_files(char **paths, int max)
{
	static const char *const datasets[] = {"multipage_2_0", "multipage_2_1", "multipage_2_2",
	"multipage_2_3"};
	int			count = 0;

	LP_CHECK_MSG(lp_test_data_dir != NULL, "no test data directory given");
	if (lp_test_data_dir == NULL)
		return 0;
	for (size_t d = 0; d < sizeof(datasets) / sizeof(datasets[0]); d++)
		count += lp_test_dataset_data_files(datasets[d], paths + count, max - count);
	return count;
}

/* (d) A one-row take of a field whose column has several pages leaves the others unread. */
LP_TEST(field_reader_skips_pages_without_requested_rows)
{
	char	   *paths[MAX_DATA_FILES];
	int			num_paths = multipage_files(paths, MAX_DATA_FILES);
	int			checked = 0;

	for (int i = 0; i < num_paths; i++)
	{
		FileUnderTest f;

		if (open_file(paths[i], &f))
			for (uint32_t field = 0; field < f.file->schema.num_fields; field++)
			{
				LpFieldReader *reader;
				LpArray    *array;
				LpDecodeStats stats;
				LpError		err;
				uint32_t	first;
				uint64_t	row = f.file->num_rows / 2;

				if (!is_top_level(f.file, field) ||
					!lp_field_first_column(f.file, field, &first, &err) ||
					f.file->columns[first].num_pages < 2)
					continue;
				LP_CHECK(lp_field_reader_open(f.input, f.file, field, &reader, &err));
				LP_CHECK(lp_field_reader_take(reader, &row, 1, &array, &err));
				lp_field_reader_stats(reader, &stats);
				LP_CHECK_MSG(stats.pages_skipped > 0 && stats.pages_decoded > 0 &&
							 stats.rows_decoded >= 1,
							 "%.150s field %u: %llu pages decoded, %llu skipped, %llu rows",
							 paths[i], field, (unsigned long long) stats.pages_decoded,
							 (unsigned long long) stats.pages_skipped,
							 (unsigned long long) stats.rows_decoded);
				lp_array_free(array);
				lp_field_reader_close(reader);
				checked++;
			}
		close_file(&f);
		free(paths[i]);
	}
	LP_CHECK(checked > 0);
}

/*
 * A one-row take from a 2.1+ list column decodes only the mini-block chunks
 * the row spans (found through the repetition index), fewer rows than the
 * page holding it.
 */
LP_TEST(field_reader_takes_list_rows_by_chunk)
{
	char	   *paths[MAX_DATA_FILES];
	int			num_paths = multipage_files(paths, MAX_DATA_FILES);
	int			checked = 0;

	for (int i = 0; i < num_paths; i++)
	{
		FileUnderTest f;

		if (open_file(paths[i], &f) && f.file->version >= LP_FILE_VERSION_2_1)
			for (uint32_t field = 0; field < f.file->schema.num_fields; field++)
			{
				LpFieldReader *reader;
				LpArray    *array;
				LpDecodeStats stats;
				LpError		err;
				uint32_t	column;
				uint64_t	row = f.file->num_rows / 2;
				uint64_t	page_rows = 0;
				uint64_t	first_row = 0;

				if (!is_top_level(f.file, field) ||
					strcmp(f.file->schema.fields[field].name, "li") != 0 ||
					!lp_field_first_column(f.file, field, &column, &err))
					continue;
				for (uint32_t p = 0; p < f.file->columns[column].num_pages && page_rows == 0; p++)
				{
					uint64_t	rows = f.file->columns[column].pages[p].num_rows;

					if (row < first_row + rows)
						page_rows = rows;
					first_row += rows;
				}
				LP_CHECK(lp_field_reader_open(f.input, f.file, field, &reader, &err));
				LP_CHECK(lp_field_reader_take(reader, &row, 1, &array, &err));
				lp_field_reader_stats(reader, &stats);
				LP_CHECK_MSG(stats.rows_decoded >= 1 && stats.rows_decoded < page_rows,
							 "%.150s: a take of row %llu decoded %llu rows of its page of %llu",
							 paths[i], (unsigned long long) row,
							 (unsigned long long) stats.rows_decoded,
							 (unsigned long long) page_rows);
				lp_array_free(array);
				lp_field_reader_close(reader);
				checked++;
			}
		close_file(&f);
		free(paths[i]);
	}
	LP_CHECK(checked > 0);
}

/* Live and peak bytes of the core's allocations (a size header before each). */
static size_t live_bytes;
static size_t peak_bytes;

static void *
counting_alloc(size_t size, void *context)
{
	size_t	   *block = malloc(size + 16);

	(void) context;
	if (block == NULL)
		return NULL;
	block[0] = size;
	live_bytes += size;
	if (live_bytes > peak_bytes)
		peak_bytes = live_bytes;
	return (char *) block + 16;
}

static void
counting_free(void *pointer, void *context)
{
	size_t	   *block = (size_t *) ((char *) pointer - 16);

	(void) context;
	live_bytes -= block[0];
	free(block);
}

/*
 * (e) A scan of a multipage field in batches of 100 rows peaks well below
 * the whole decode (under a third): its working memory is the units holding
 * the batch, in 2.1+ files mini-block chunks rather than whole pages (under
 * a tenth of the whole decode of a field stored in five pages).
 */
LP_TEST(field_reader_batches_peak_below_whole_decode)
{
	static const LpAllocator counting = {counting_alloc, counting_free, NULL, NULL};
	char	   *paths[MAX_DATA_FILES];
	int			num_paths = multipage_files(paths, MAX_DATA_FILES);
	int			checked = 0;

	for (int i = 0; i < num_paths; i++)
	{
		FileUnderTest f;

		if (open_file(paths[i], &f))
			for (uint32_t field = 0; field < f.file->schema.num_fields; field++)
			{
				LpFieldReader *reader = NULL;
				LpType	   *type;
				LpArray    *array;
				LpError		err;
				uint32_t	first;
				size_t		whole_peak;
				size_t		batch_peak;
				uint64_t	rows[100];
				bool		ok = true;

				if (!is_top_level(f.file, field) ||
					!lp_field_first_column(f.file, field, &first, &err) ||
					f.file->columns[first].num_pages < 4)
					continue;
				lp_set_allocator(&counting);
				live_bytes = peak_bytes = 0;
				ok = lp_decode_field(f.input, f.file, field, &type, &array, &err);
				whole_peak = peak_bytes;
				if (ok)
				{
					lp_array_free(array);
					lp_type_free(type);
				}
				live_bytes = peak_bytes = 0;
				ok = ok && lp_field_reader_open(f.input, f.file, field, &reader, &err);
				for (uint64_t start = 0; ok && start < f.file->num_rows; start += 100)
				{
					uint64_t	n = 0;

					for (uint64_t r = start; r < f.file->num_rows && n < 100; r++)
						rows[n++] = r;
					ok = lp_field_reader_take(reader, rows, n, &array, &err);
					if (ok)
						lp_array_free(array);
				}
				lp_field_reader_close(reader);
				batch_peak = peak_bytes;
				lp_set_allocator(NULL);
				LP_CHECK_MSG(ok, "%.150s field %u: %.200s", paths[i], field, err.message);
				LP_CHECK_MSG(batch_peak * 3 < whole_peak,
							 "%.150s field \"%.60s\": batches peak at %zu bytes, the whole decode at %zu",
							 paths[i], f.file->schema.fields[field].name, batch_peak, whole_peak);
				/* 2.1+: mini-block chunks, not pages, bound it */
				LP_CHECK_MSG(f.file->version == LP_FILE_VERSION_2_0 || batch_peak * 10 < whole_peak,
							 "%.150s field \"%.60s\": batches peak at %zu bytes, the whole decode at %zu",
							 paths[i], f.file->schema.fields[field].name, batch_peak, whole_peak);
				checked++;
			}
		close_file(&f);
		free(paths[i]);
	}
	LP_CHECK(checked > 0);
}

/* ---- the ranges of a take ------------------------------------------------- */

#define MAX_RECORDED_READS 4096

/* An input recording the reads made through it. */
typedef struct RecordingInput
{
	LpInput		base;
	LpInput    *inner;
	LpByteRange reads[MAX_RECORDED_READS];
	size_t		num_reads;
} RecordingInput;

static bool
recording_read_at(LpInput *input, uint64_t offset, void *buffer, size_t len, LpError *err)
{
	RecordingInput *recording = (RecordingInput *) input;

	if (recording->num_reads < MAX_RECORDED_READS)
		recording->reads[recording->num_reads++] = (LpByteRange) {offset, len};
	return lp_input_read(recording->inner, offset, buffer, len, err);
}

static void
recording_close(LpInput *input)
{
	(void) input;
}

static const LpInputOps recording_ops = {.read_at = recording_read_at, .close = recording_close};

/* Whether a field's columns all count rows (not 2.0 list items or bytes). */
static bool
columns_count_rows(const LpFile *file, uint32_t field)
{
	LpPhysicalColumn *columns;
	uint32_t	num_columns;
	LpError		err;
	bool		rows = true;

	if (!lp_file_physical_columns(file, &columns, &num_columns, &err))
		return false;
	for (uint32_t c = 0; c < num_columns; c++)
	{
		uint32_t	top = columns[c].field_index;

		while (file->schema.fields[top].parent_id != -1)
			top--;
		if (top == field && (columns[c].counts_items || columns[c].bytes_items))
			rows = false;
	}
	lp_free(columns);
	return rows;
}

/*
 * A take of one row and of a run of rows reads only inside the ranges
 * lp_field_reader_ranges gives for them, which hold less than all pages of
 * a field of several pages; bad rows are refused as by a take.
 */
LP_TEST(field_reader_ranges_hold_the_reads_of_a_take)
{
	char	   *paths[MAX_DATA_FILES];
	int			num_paths = multipage_files(paths, MAX_DATA_FILES);
	static RecordingInput recording;
	int			checked = 0;

	for (int i = 0; i < num_paths; i++)
	{
		FileUnderTest f;

		if (open_file(paths[i], &f))
			for (uint32_t field = 0; field < f.file->schema.num_fields; field++)
			{
				LpFieldReader *reader;
				LpArray    *array;
				LpByteRange *ranges;
				size_t		num_ranges;
				LpError		err;
				uint64_t	rows[50];
				uint64_t	range_bytes = 0;
				uint64_t	page_bytes = 0;
				uint32_t	first;
				const uint64_t descending[] = {5, 3};

				if (!is_top_level(f.file, field) || !columns_count_rows(f.file, field) ||
					!lp_field_first_column(f.file, field, &first, &err))
					continue;
				memset(&recording, 0, sizeof(recording));
				recording.base = (LpInput) {&recording_ops, f.input->name, f.input->size};
				recording.inner = f.input;
				for (uint64_t r = 0; r < 50; r++)
					rows[r] = f.file->num_rows / 2 + r;
				LP_CHECK(lp_field_reader_open(&recording.base, f.file, field, &reader, &err));
				LP_CHECK(!lp_field_reader_ranges(reader, descending, 2, &ranges, &num_ranges, &err) &&
						 err.code == LP_ERR_INVALID_ARGUMENT);
				LP_CHECK_MSG(lp_field_reader_ranges(reader, rows, 50, &ranges, &num_ranges, &err),
							 "%.300s", err.message);
				LP_CHECK_MSG(lp_field_reader_take(reader, rows, 50, &array, &err), "%.300s", err.message);
				lp_array_free(array);
				for (size_t r = 0; r < recording.num_reads; r++)
				{
					bool		inside = false;

					for (size_t k = 0; k < num_ranges && !inside; k++)
						inside = recording.reads[r].offset >= ranges[k].offset &&
							recording.reads[r].offset + recording.reads[r].len <=
							ranges[k].offset + ranges[k].len;
					LP_CHECK_MSG(inside, "%.150s field %u: read of %llu bytes at %llu outside the %zu ranges",
								 paths[i], field, (unsigned long long) recording.reads[r].len,
								 (unsigned long long) recording.reads[r].offset, num_ranges);
				}
				/* of the first column's pages, those of the rows only */
				for (uint32_t p = 0; p < f.file->columns[first].num_pages; p++)
					for (uint32_t b = 0; b < f.file->columns[first].pages[p].num_buffers; b++)
					{
						const LpBufferRef *buffer = &f.file->columns[first].pages[p].buffers[b];

						page_bytes += buffer->size;
						for (size_t k = 0; k < num_ranges; k++)
							if (ranges[k].offset == buffer->offset && ranges[k].len == buffer->size)
								range_bytes += buffer->size;
					}
				if (f.file->columns[first].num_pages > 2 && page_bytes > 0)
					LP_CHECK_MSG(range_bytes > 0 && range_bytes < page_bytes,
								 "%.150s field %u: %llu of %llu bytes",
								 paths[i], field, (unsigned long long) range_bytes,
								 (unsigned long long) page_bytes);
				lp_free(ranges);
				lp_field_reader_close(reader);
				checked++;
			}
		close_file(&f);
		free(paths[i]);
	}
	LP_CHECK(checked > 0);
}

/* (f) Rows that are not strictly ascending or lie beyond the file are refused. */
LP_TEST(field_reader_refuses_bad_rows)
{
	char	   *paths[MAX_DATA_FILES];
	int			num_paths = multipage_files(paths, MAX_DATA_FILES);
	FileUnderTest f = {0};		/* closed below also when there was no file to open */

	LP_CHECK(num_paths > 0);
	if (num_paths > 0 && open_file(paths[0], &f))
	{
		uint64_t	n = f.file->num_rows;
		const uint64_t descending[] = {5, 3};
		const uint64_t repeated[] = {2, 2};
		const uint64_t beyond[] = {0, n};
		const uint64_t far_beyond[] = {UINT64_MAX};
		const uint64_t *const bad[] = {descending, repeated, beyond, far_beyond};
		const uint64_t bad_n[] = {2, 2, 2, 1};
		LpFieldReader *reader;
		LpArray    *array = NULL;
		LpError		err;
		uint32_t	field = 0;

		while (!is_top_level(f.file, field))
			field++;
		LP_CHECK(lp_field_reader_open(f.input, f.file, field, &reader, &err));
		for (size_t b = 0; b < sizeof(bad) / sizeof(bad[0]); b++)
		{
			LP_CHECK_MSG(!lp_field_reader_take(reader, bad[b], bad_n[b], &array, &err) &&
						 err.code == LP_ERR_INVALID_ARGUMENT && array == NULL,
						 "bad rows %zu were not refused", b);
		}
		/* the reader still works after a refused take */
		LP_CHECK(lp_field_reader_take(reader, beyond, 1, &array, &err) && array->length == 1);
		lp_array_free(array);
		lp_field_reader_close(reader);
		/* and a field that is not top-level is no field to read */
		LP_CHECK(!lp_field_reader_open(f.input, f.file, f.file->schema.num_fields, &reader, &err) &&
				 err.code == LP_ERR_INVALID_ARGUMENT);
	}
	close_file(&f);
	for (int i = 0; i < num_paths; i++)
		free(paths[i]);
}

/* An input over another that counts the bytes read through it. */
typedef struct CountingInput
{
	LpInput		base;
	LpInput    *inner;
	uint64_t	bytes;
} CountingInput;

static bool
counting_read_at(LpInput *input, uint64_t offset, void *buffer, size_t len, LpError *err)
{
	CountingInput *counting = (CountingInput *) input;

	counting->bytes += len;
	return counting->inner->ops->read_at(counting->inner, offset, buffer, len, err);
}

static void
counting_close(LpInput *input)
{
	(void) input;
}

static const LpInputOps counting_ops = {counting_read_at, counting_close, NULL, NULL};

/*
 * Rows scattered over a mini-block page of 600,000 random int64 values
 * (4.8 MB) are taken with their chunks' bytes alone, not the span from the
 * first to the last (which a handful of rows would otherwise read whole),
 * and are the values written; two neighbouring rows share their chunk.
 */
LP_TEST(field_reader_sparse_take_reads_only_its_chunks)
{
	const uint64_t num_rows = 600000;
	uint64_t	rows[] = {3, 150000, 150001, 420017, 599999};
	uint64_t	n = sizeof(rows) / sizeof(rows[0]);
	LpField		field = {0};
	LpSchema	schema = {0};
	LpType	   *type = NULL;
	LpArray    *written;
	LpArray    *taken = NULL;
	LpFieldReader *reader = NULL;
	LpFile	   *file = NULL;
	LpInput    *memory;
	CountingInput counting;
	uint8_t    *bytes = NULL;
	uint64_t	size = 0;
	uint64_t	state = 0x9e3779b97f4a7c15;
	LpError		err;

	field.parent_id = -1;
	field.name = "v";
	field.logical_type = "int64";
	field.legacy_encoding = 1;
	schema.num_fields = 1;
	schema.fields = &field;
	LP_CHECK(lp_type_parse("int64", "memory.lance", "v", &type, &err));
	written = lp_array_new(type);
	written->length = num_rows;
	written->values = lp_alloc(num_rows * sizeof(int64_t));
	for (uint64_t i = 0; i < num_rows; i++)
	{
		state ^= state << 13;
		state ^= state >> 7;
		state ^= state << 17;
		((int64_t *) written->values)[i] = (int64_t) state;
	}
	LP_CHECK_MSG(lp_round_trip_encode(&schema, LP_FILE_VERSION_2_1, &type, &written, 1, num_rows,
									  num_rows, 0, &bytes, &size, &err),
				 "encode: %.300s", err.message);
	memory = lp_memory_input_open("memory.lance", bytes, size);
	counting = (CountingInput) {{&counting_ops, "memory.lance", size}, memory, 0};
	file = lp_file_open(&counting.base, &err);
	LP_CHECK_MSG(file != NULL, "open: %.300s", err.message);
	if (file != NULL && file->columns[0].num_pages == 1 &&
		strcmp(file->columns[0].pages[0].layout, "mini_block") == 0 &&
		lp_field_reader_open(&counting.base, file, 0, &reader, &err))
	{
		counting.bytes = 0;
		LP_CHECK_MSG(lp_field_reader_take(reader, rows, n, &taken, &err), "take: %.300s", err.message);
		LP_CHECK_MSG(counting.bytes < 64 * 1024, "a take of %llu rows read %llu bytes of a %llu-byte file",
					 (unsigned long long) n, (unsigned long long) counting.bytes,
					 (unsigned long long) size);
		for (uint64_t i = 0; taken != NULL && i < n; i++)
			LP_CHECK(taken->length == n && lp_round_trip_rows_equal(type, taken, i, written, rows[i]));
	}
	else
		LP_CHECK_MSG(false, "the file is not one mini-block page of the column");
	lp_array_free(taken);
	lp_field_reader_close(reader);
	lp_file_free(file);
	lp_input_close(memory);
	lp_free(bytes);
	lp_array_free(written);
	lp_type_free(type);
}
