/*
 * test_btree_index.c - the BTREE indexes lancedb built on the reference data
 * set btree_index (test/reference/generate.cjs): every range of
 * btree_index.json finds exactly the row ids lancedb's query with the same
 * filter returned; a point lookup reads one or two pages; several ranges at
 * once find the union; damaged and swapped files fail cleanly; the
 * manifest's index section lists the indexes lancedb reports; a remapped
 * index answers every range with the mapped ids of the original's answer.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_reader.h"
#include "lp_test.h"

#include "base/lp_alloc.h"
#include "dataset/lp_dataset.h"
#include "dataset/lp_manifest.h"
#include "index/lp_btree_index.h"
#include "index/lp_btree_remap.h"
#include "index/lp_row_address_map.h"
#include "lp_test_files.h"
#include "lp_test_store.h"

typedef struct IndexFiles
{
	uint8_t    *lookup_bytes;
	size_t		lookup_len;
	uint8_t    *pages_bytes;
	size_t		pages_len;
	LpInput    *lookup;
	LpInput    *pages;
	LpBTreeIndex *index;
} IndexFiles;

static JsonValue *
read_reference(void)
{
	char		path[4096];
	const char *error = NULL;
	JsonValue  *reference;

	if (lp_test_data_dir == NULL)
		return NULL;
	snprintf(path, sizeof(path), "%s/index/btree_index.json", lp_test_data_dir);
	reference = json_parse_file(path, &error);
	LP_CHECK_MSG(reference != NULL, "%.300s: %.100s", path, error ? error : "unreadable");
	return reference;
}

static const char *
index_uuid(const JsonValue *reference, const char *column)
{
	const JsonValue *indexes = json_get(reference, "indexes");

	for (size_t i = 0; i < indexes->count; i++)
		if (strcmp(json_get(&indexes->items[i], "column")->text, column) == 0)
			return json_get(&indexes->items[i], "uuid")->text;
	return NULL;
}

static bool
read_index_file(const JsonValue *reference, const char *column, const char *file,
				uint8_t **bytes, size_t *len)
{
	char		path[4096];

	snprintf(path, sizeof(path), "%s/index/%s/_indices/%s/%s", lp_test_data_dir,
			 json_get(reference, "dataset")->text, index_uuid(reference, column), file);
	return lp_test_file_read_all(path, bytes, len);
}

/* Open the index of column over memory copies of its files. */
static bool
open_index(const JsonValue *reference, const char *column, IndexFiles *files, LpError *err)
{
	memset(files, 0, sizeof(*files));
	if (!read_index_file(reference, column, LP_BTREE_LOOKUP_FILE, &files->lookup_bytes, &files->lookup_len) ||
		!read_index_file(reference, column, LP_BTREE_PAGES_FILE, &files->pages_bytes, &files->pages_len))
		return lp_fail(err, LP_ERR_NOT_FOUND, "index files of \"%s\" not found", column);
	files->lookup = lp_memory_input_open(LP_BTREE_LOOKUP_FILE, files->lookup_bytes, files->lookup_len);
	files->pages = lp_memory_input_open(LP_BTREE_PAGES_FILE, files->pages_bytes, files->pages_len);
	return lp_btree_index_open(files->lookup, files->pages, &files->index, err);
}

static void
close_index(IndexFiles *files)
{
	lp_btree_index_close(files->index);
	if (files->lookup)
		lp_input_close(files->lookup);
	if (files->pages)
		lp_input_close(files->pages);
	free(files->lookup_bytes);
	free(files->pages_bytes);
}

static LpIndexBound
bound_of(const JsonValue *bound, LpIndexKeyKind kind)
{
	LpIndexBound result = {0};

	if (bound == NULL || bound->kind == JSON_NULL)
		return result;
	result.present = true;
	result.inclusive = json_get(bound, "inclusive")->boolean;
	result.key.kind = kind;
	if (kind == LP_INDEX_KEY_INTEGER)
		result.key.integer = strtoll(json_get(bound, "value")->text, NULL, 10);
	else if (kind == LP_INDEX_KEY_FLOAT)
		result.key.real = strtod(json_get(bound, "value")->text, NULL);
	else
	{
		result.key.bytes = (const uint8_t *) json_get(bound, "value")->text;
		result.key.len = json_get(bound, "value")->len;
	}
	return result;
}

static LpIndexRange
range_of(const JsonValue *query, LpIndexKeyKind kind)
{
	LpIndexRange range = {bound_of(json_get(query, "lower"), kind),
	bound_of(json_get(query, "upper"), kind)};

	return range;
}

static bool
same_ids(const uint64_t *found, uint64_t n, const JsonValue *expected)
{
	if (n != expected->count)
		return false;
	for (uint64_t i = 0; i < n; i++)
		if (found[i] != strtoull(expected->items[i].text, NULL, 10))
			return false;
	return true;
}

LP_TEST(btree_index_ranges_match_lancedb)
{
	JsonValue  *reference = read_reference();
	const JsonValue *queries;
	int			checked = 0;

	LP_CHECK(reference != NULL);
	if (reference == NULL)
		return;
	queries = json_get(reference, "queries");
	for (size_t q = 0; q < queries->count; q++)
	{
		const JsonValue *query = &queries->items[q];
		const char *where = json_get(query, "where")->text;
		IndexFiles	files;
		LpError		err = {0};
		uint64_t   *ids = NULL;
		uint64_t	n = 0;

		if (!open_index(reference, json_get(query, "column")->text, &files, &err))
			LP_CHECK_MSG(false, "%.100s: %.300s", where, err.message);
		else
		{
			LpIndexRange range = range_of(query, lp_btree_index_key_kind(files.index));
			bool		point = range.lower.present && range.upper.present &&
				strcmp(json_get(json_get(query, "lower"), "value")->text,
					   json_get(json_get(query, "upper"), "value")->text) == 0;

			LP_CHECK_MSG(lp_btree_index_search(files.index, &range, 1, 0, NULL, &ids, &n, &err),
						 "%.100s: %.300s", where, err.message);
			LP_CHECK_MSG(same_ids(ids, n, json_get(query, "row_ids")),
						 "%.100s: %llu row ids, lancedb found %zu", where,
						 (unsigned long long) n, json_get(query, "row_ids")->count);
			if (point)
				LP_CHECK_MSG(lp_btree_index_pages_read(files.index) <= 2,
							 "%.100s read %llu pages", where,
							 (unsigned long long) lp_btree_index_pages_read(files.index));
			checked++;
		}
		lp_free(ids);
		close_index(&files);
	}
	LP_CHECK(checked >= 20);
	json_free(reference);
}

/* Two ranges of one column at once (an IN list): the union of their answers. */
LP_TEST(btree_index_several_ranges)
{
	JsonValue  *reference = read_reference();
	const JsonValue *queries;
	const JsonValue *pair[2] = {NULL, NULL};
	IndexFiles	files;
	LpError		err = {0};
	uint64_t   *ids = NULL;
	uint64_t	n = 0;

	if (reference == NULL)
		return;
	queries = json_get(reference, "queries");
	for (size_t q = 0; q < queries->count && pair[1] == NULL; q++)
		if (strcmp(json_get(&queries->items[q], "column")->text, "small") == 0 &&
			json_get(&queries->items[q], "row_ids")->count > 0)
			pair[pair[0] == NULL ? 0 : 1] = &queries->items[q];
	LP_CHECK(pair[1] != NULL);
	if (pair[1] != NULL && open_index(reference, "small", &files, &err))
	{
		LpIndexRange ranges[3] = {range_of(pair[0], LP_INDEX_KEY_INTEGER),
		range_of(pair[1], LP_INDEX_KEY_INTEGER), range_of(pair[0], LP_INDEX_KEY_INTEGER)};
		size_t		expected = json_get(pair[0], "row_ids")->count +
			json_get(pair[1], "row_ids")->count;

		/* The two queries' ranges are disjoint; the repeated one adds nothing. */
		LP_CHECK(lp_btree_index_search(files.index, ranges, 3, 0, NULL, &ids, &n, &err));
		LP_CHECK_EQ_U64(n, expected);
		for (uint64_t i = 1; i < n; i++)
			LP_CHECK(ids[i - 1] < ids[i]);
		lp_free(ids);

		/* An unbounded range meets every page: over a limit of one page, none is read. */
		{
			LpIndexRange every = {{0}, {0}};
			bool		too_many = false;
			uint64_t	before = lp_btree_index_pages_read(files.index);

			LP_CHECK(lp_btree_index_num_pages(files.index) > 1);
			LP_CHECK(lp_btree_index_search(files.index, &every, 1, 1, &too_many, &ids, &n, &err));
			LP_CHECK(too_many && ids == NULL && n == 0);
			LP_CHECK_EQ_U64(lp_btree_index_pages_read(files.index), before);
			LP_CHECK(lp_btree_index_search(files.index, &every, 1,
										   lp_btree_index_num_pages(files.index), &too_many,
										   &ids, &n, &err));
			LP_CHECK(!too_many && n > 0);
			lp_free(ids);
		}

		/* A key of another kind is the caller's mistake. */
		ranges[0].lower.key.kind = LP_INDEX_KEY_BYTES;
		LP_CHECK(!lp_btree_index_search(files.index, ranges, 1, 0, NULL, &ids, &n, &err));
		LP_CHECK(err.code == LP_ERR_INVALID_ARGUMENT);
	}
	else
		LP_CHECK_MSG(false, "%.400s", err.message);
	close_index(&files);
	json_free(reference);
}

/* Truncated, changed and swapped files: an error or an answer, never a crash. */
LP_TEST(btree_index_damaged_files)
{
	JsonValue  *reference = read_reference();
	IndexFiles	files;
	LpError		err = {0};
	LpBTreeIndex *index = NULL;
	int			failures = 0;
	int			tries = 0;

	if (reference == NULL)
		return;
	if (!open_index(reference, "id", &files, &err))
		LP_CHECK_MSG(false, "%.400s", err.message);
	else
	{
		LpIndexRange all = {{0}, {0}};
		uint8_t    *copy = malloc(files.lookup_len);

		LP_CHECK(!lp_btree_index_open(files.pages, files.lookup, &index, &err));
		LP_CHECK(err.code == LP_ERR_CORRUPT);
		for (size_t len = 0; len < files.lookup_len; len += 7)
		{
			LpInput    *lookup = lp_memory_input_open("truncated", files.lookup_bytes, len);

			failures += !lp_btree_index_open(lookup, files.pages, &index, &err);
			tries++;
			lp_input_close(lookup);
		}
		LP_CHECK_MSG(failures == tries && index == NULL, "%d of %d truncations of the lookup file fail",
					 failures, tries);
		for (size_t at = 0; at < files.lookup_len; at++)
		{
			LpInput    *lookup;

			memcpy(copy, files.lookup_bytes, files.lookup_len);
			copy[at] ^= 0x5a;
			lookup = lp_memory_input_open("changed", copy, files.lookup_len);
			if (lp_btree_index_open(lookup, files.pages, &index, &err))
			{
				uint64_t   *ids = NULL;
				uint64_t	n;

				if (lp_btree_index_search(index, &all, 1, 0, NULL, &ids, &n, &err))
					lp_free(ids);
				lp_btree_index_close(index);
			}
			lp_input_close(lookup);
		}
		free(copy);
	}
	close_index(&files);
	json_free(reference);
}

/* The manifest's index section lists the four indexes lancedb reported, on one field each. */
LP_TEST(btree_index_manifest_entries)
{
	JsonValue  *reference = read_reference();
	char		root[1024];
	LpManifestNaming naming;
	LpManifest *manifest;
	LpIndexEntry *entries = NULL;
	size_t		n = 0;
	LpError		err = {0};

	if (reference == NULL)
		return;
	snprintf(root, sizeof(root), "%s/index/btree_index.lance", lp_test_data_dir);
	manifest = lp_dataset_read_latest(lp_test_store(), root, &naming, &err);
	LP_CHECK_MSG(manifest != NULL, "%.400s", err.message);
	if (manifest != NULL && lp_manifest_index_entries(manifest, &entries, &n, &err))
	{
		const JsonValue *indexes = json_get(reference, "indexes");

		LP_CHECK_EQ_U64(n, indexes->count);
		for (size_t i = 0; i < n; i++)
		{
			char		uuid[37];
			const uint8_t *u = entries[i].uuid;

			snprintf(uuid, sizeof(uuid),
					 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
					 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11],
					 u[12], u[13], u[14], u[15]);
			LP_CHECK_STR(entries[i].type_url, "/lance.table.BTreeIndexDetails");
			LP_CHECK_EQ_U64(entries[i].n_fields, 1);
			LP_CHECK(!entries[i].has_base_id);
			LP_CHECK(entries[i].fragment_bitmap_len > 0);
			for (size_t j = 0; j < indexes->count; j++)
				if (strcmp(json_get(&indexes->items[j], "uuid")->text, uuid) == 0)
				{
					char		name[64];

					snprintf(name, sizeof(name), "%s_idx", json_get(&indexes->items[j], "column")->text);
					LP_CHECK_STR(entries[i].name, name);
					uuid[0] = '\0';
				}
			LP_CHECK_MSG(uuid[0] == '\0', "index %s not listed by lancedb", entries[i].name);
		}
		LP_CHECK(!lp_manifest_fragment_reuse(manifest));
		lp_manifest_index_entries_free(entries, n);
	}
	else
		LP_CHECK_MSG(false, "%.400s", err.message);
	lp_manifest_free(manifest);
	json_free(reference);
}

/* Rows a test fragment is given: beyond every row the reference data sets have (null values too). */
#define TEST_FRAGMENT_ROWS (1 << 20)

/*
 * A map of the fragments ids names: each moved to fragment 100 + its id,
 * every third row (by offset) deleted.  The deletion bitmaps are the
 * caller's to free.
 */
static LpRowAddressMap *
test_map(const uint64_t *ids, uint64_t n, LpDeletions *deletions, size_t capacity)
{
	LpMovedFragment moved[16];
	size_t		n_moved = 0;
	LpRowAddressMap *map = NULL;
	LpError		err = {0};

	for (uint64_t i = 0; i < n; i++)
	{
		uint64_t	fragment = ids[i] >> 32;
		size_t		m = 0;

		while (m < n_moved && moved[m].old_id != fragment)
			m++;
		if (m == n_moved && n_moved < capacity)
		{
			moved[n_moved].old_id = fragment;
			moved[n_moved].physical_rows = TEST_FRAGMENT_ROWS;
			moved[n_moved].new_id = 100 + fragment;
			moved[n_moved].new_first_row = 0;
			n_moved++;
		}
		LP_CHECK((ids[i] & UINT32_MAX) < TEST_FRAGMENT_ROWS);
	}
	for (size_t m = 0; m < n_moved; m++)
	{
		uint64_t	rows = moved[m].physical_rows;

		deletions[m].num_rows = rows;
		deletions[m].num_deleted = 0;
		deletions[m].deleted = calloc(rows / 8 + 1, 1);
		for (uint64_t r = 0; r < rows; r += 3)
		{
			deletions[m].deleted[r / 8] |= (uint8_t) (1u << (r % 8));
			deletions[m].num_deleted++;
		}
		moved[m].deleted = &deletions[m];
	}
	LP_CHECK_MSG(lp_row_address_map_new(moved, n_moved, &map, &err), "%.300s", err.message);
	return map;
}

static int
compare_ids(const void *a, const void *b)
{
	uint64_t	x = *(const uint64_t *) a;
	uint64_t	y = *(const uint64_t *) b;

	return x < y ? -1 : x > y;
}

/* The original's answer to range, mapped, against the remapped index's. */
static void
check_remapped_range(LpBTreeIndex *original, LpBTreeIndex *remapped, const LpRowAddressMap *map,
					 const LpIndexRange *range, const char *what)
{
	uint64_t   *before = NULL;
	uint64_t   *after = NULL;
	uint64_t	n_before = 0;
	uint64_t	n_after = 0;
	uint64_t	kept = 0;
	LpError		err = {0};

	LP_CHECK(lp_btree_index_search(original, range, 1, 0, NULL, &before, &n_before, &err));
	LP_CHECK(lp_btree_index_search(remapped, range, 1, 0, NULL, &after, &n_after, &err));
	for (uint64_t i = 0; i < n_before; i++)
	{
		bool		row_kept;

		LP_CHECK(lp_row_address_map_apply(map, before[i], &before[kept], &row_kept, &err));
		kept += row_kept;
	}
	if (kept > 1)
		qsort(before, kept, sizeof(uint64_t), compare_ids);
	LP_CHECK_MSG(kept == n_after && (kept == 0 || memcmp(before, after, kept * 8) == 0),
				 "%s: %llu mapped ids, the remapped index found %llu", what,
				 (unsigned long long) kept, (unsigned long long) n_after);
	lp_free(before);
	lp_free(after);
}

LP_TEST(btree_index_remap_keeps_answers)
{
	JsonValue  *reference = read_reference();
	const JsonValue *queries;
	int			checked = 0;

	if (reference == NULL)
		return;
	queries = json_get(reference, "queries");
	for (size_t q = 0; q < queries->count; q++)
	{
		const JsonValue *query = &queries->items[q];
		IndexFiles	files;
		LpError		err = {0};
		LpIndexRange all = {{0}, {0}};
		uint64_t   *ids = NULL;
		uint64_t	n = 0;
		LpDeletions deletions[16] = {{0}};
		LpRowAddressMap *map;
		LpOutput   *lookup_out = lp_memory_output_open("page_lookup");
		LpOutput   *pages_out = lp_memory_output_open("page_data");
		uint64_t	rows_kept;

		if (!open_index(reference, json_get(query, "column")->text, &files, &err) ||
			!lp_btree_index_search(files.index, &all, 1, 0, NULL, &ids, &n, &err))
			LP_CHECK_MSG(false, "%.300s", err.message);
		else if ((map = test_map(ids, n, deletions, 16)) != NULL)
		{
			LpInput    *lookup = lp_memory_input_open(LP_BTREE_LOOKUP_FILE, files.lookup_bytes, files.lookup_len);
			LpInput    *pages = lp_memory_input_open(LP_BTREE_PAGES_FILE, files.pages_bytes, files.pages_len);

			if (!lp_btree_index_remap(lookup, pages, map, lookup_out, pages_out, &rows_kept, &err))
				LP_CHECK_MSG(false, "remap: %.300s", err.message);
			else
			{
				uint64_t	lookup_len;
				uint64_t	pages_len;
				const uint8_t *lookup_data = lp_memory_output_data(lookup_out, &lookup_len);
				const uint8_t *pages_data = lp_memory_output_data(pages_out, &pages_len);
				LpInput    *new_lookup = lp_memory_input_open("new lookup", lookup_data, lookup_len);
				LpInput    *new_pages = lp_memory_input_open("new pages", pages_data, pages_len);
				LpBTreeIndex *remapped = NULL;

				LP_CHECK(rows_kept > 0 && rows_kept < n);
				if (!lp_btree_index_open(new_lookup, new_pages, &remapped, &err))
					LP_CHECK_MSG(false, "remapped index: %.300s", err.message);
				else
				{
					LpIndexRange range = range_of(query, lp_btree_index_key_kind(files.index));

					check_remapped_range(files.index, remapped, map, &range,
										 json_get(query, "where")->text);
					check_remapped_range(files.index, remapped, map, &all, "all values");
					lp_btree_index_close(remapped);
					checked++;
				}
				lp_input_close(new_lookup);
				lp_input_close(new_pages);
			}
			lp_input_close(lookup);
			lp_input_close(pages);
			lp_row_address_map_free(map);
		}
		for (size_t m = 0; m < 16; m++)
			free(deletions[m].deleted);
		lookup_out->ops->abort(lookup_out);
		pages_out->ops->abort(pages_out);
		lp_free(ids);
		close_index(&files);
	}
	LP_CHECK(checked >= 20);
	json_free(reference);
}
