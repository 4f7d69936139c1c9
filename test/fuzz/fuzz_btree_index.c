/*
 * fuzz_btree_index.c - libFuzzer target for BTREE scalar index files
 * (lp_btree_index.h) as lance_fdw opens and searches them.  Input: a u32
 * (little-endian) length L, then L bytes of page_lookup.lance, then
 * page_data.lance.  An index that opens is searched for every value
 * (unbounded), for a point and for two ranges at once, with keys of its
 * kind taken from the header's length bytes; every answer is strictly
 * ascending and each bounded answer is part of the unbounded one; a search
 * over a limit of one page returns no id.  It is also remapped
 * (lp_btree_remap.h) with fragment 0 moved to fragment 1, rows whose offset
 * is a multiple of 3 deleted: when that succeeds the new files open and
 * every id the new index finds is the mapped id of a row of the page file
 * that was kept (not exactly the mapped answer of the old index: a damaged
 * page file whose values are out of order makes the old lookup and the
 * recomputed one disagree; test_btree_index checks equality on lancedb's
 * indexes).  Seeds:
 * an index lancedb wrote (test/fuzz/corpus/fuzz_btree_index, and the
 * indexes of the reference dataset btree_index by bench/fuzz.sh).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lp_fuzz.h"
#include "base/lp_alloc.h"
#include "decode/lp_decode.h"
#include "index/lp_btree_index.h"
#include "index/lp_btree_remap.h"
#include "index/lp_row_address_map.h"
#include "io/lp_storage.h"

#define HEADER_BYTES 4
/* Rows of the moved fragment 0. */
#define MOVED_ROWS 8192

static int
compare_ids(const void *a, const void *b)
{
	uint64_t	x = *(const uint64_t *) a;
	uint64_t	y = *(const uint64_t *) b;

	return x < y ? -1 : x > y;
}

static LpIndexKey
key_of(LpIndexKeyKind kind, const uint8_t *data)
{
	LpIndexKey	key = {kind, (int8_t) data[0], (double) (int8_t) data[1], data, data[2] % 4};

	return key;
}

/* Each id of found[0..n) is in all[0..n_all), and found ascends strictly. */
static void
check_subset(const uint64_t *found, uint64_t n, const uint64_t *all, uint64_t n_all)
{
	uint64_t	j = 0;

	for (uint64_t i = 0; i < n; i++)
	{
		if (i > 0 && found[i - 1] >= found[i])
			abort();
		while (j < n_all && all[j] < found[i])
			j++;
		if (j == n_all || all[j] != found[i])
			abort();
	}
}

/*
 * The mapped ids of the rows of the index's page file that map kept
 * rows, ascending, into *kept_ids (NULL when they cannot be read).
 */
static uint64_t
mapped_page_ids(LpBTreeIndex *index, const LpRowAddressMap *map, uint64_t **kept_ids)
{
	uint64_t	rows = lp_btree_index_pages_file(index)->num_rows;
	uint64_t   *numbers = lp_alloc_array((size_t) (rows > 0 ? rows : 1), sizeof(uint64_t));
	LpArray    *ids = NULL;
	uint64_t	kept = 0;
	LpError		err;

	*kept_ids = NULL;
	if (numbers == NULL)
		return 0;
	for (uint64_t r = 0; r < rows; r++)
		numbers[r] = r;
	if (lp_field_reader_take(lp_btree_index_ids_reader(index), numbers, rows, &ids, &err) &&
		ids->null_count == 0)
	{
		for (uint64_t i = 0; i < ids->length; i++)
		{
			bool		row_kept;

			if (!lp_row_address_map_apply(map, ((const uint64_t *) ids->values)[i], &numbers[kept],
										  &row_kept, &err))
				abort();		/* the remap read these ids and succeeded */
			kept += row_kept;
		}
		if (kept > 1)
			qsort(numbers, kept, sizeof(uint64_t), compare_ids);
		*kept_ids = numbers;
		numbers = NULL;
	}
	lp_array_free(ids);
	lp_free(numbers);
	return kept;
}

/* Remap the index behind lookup and pages (index, open on them) and check the new one. */
static void
check_remap(LpBTreeIndex *index, LpInput *lookup, LpInput *pages)
{
	uint8_t		deleted_bits[MOVED_ROWS / 8] = {0};
	LpDeletions deleted = {MOVED_ROWS, 0, deleted_bits};
	LpMovedFragment moved = {0, MOVED_ROWS, &deleted, 1, 0};
	LpRowAddressMap *map = NULL;
	LpOutput   *lookup_out = lp_memory_output_open("new page_lookup");
	LpOutput   *pages_out = lp_memory_output_open("new page_data");
	uint64_t	rows_kept;
	LpError		err;

	for (uint32_t r = 0; r < MOVED_ROWS; r += 3)
	{
		deleted_bits[r / 8] |= (uint8_t) (1u << (r % 8));
		deleted.num_deleted++;
	}
	if (lookup_out != NULL && pages_out != NULL && lp_row_address_map_new(&moved, 1, &map, &err) &&
		lp_btree_index_remap(lookup, pages, map, lookup_out, pages_out, &rows_kept, &err))
	{
		uint64_t	lookup_len;
		uint64_t	pages_len;
		const uint8_t *lookup_data = lp_memory_output_data(lookup_out, &lookup_len);
		const uint8_t *pages_data = lp_memory_output_data(pages_out, &pages_len);
		LpInput    *new_lookup = lp_memory_input_open("new page_lookup", lookup_data, lookup_len);
		LpInput    *new_pages = lp_memory_input_open("new page_data", pages_data, pages_len);
		LpBTreeIndex *remapped = NULL;
		LpIndexRange every = {{0}, {0}};
		uint64_t   *found = NULL;
		uint64_t	n_found = 0;
		uint64_t   *kept_ids = NULL;
		uint64_t	n_kept = mapped_page_ids(index, map, &kept_ids);

		/* the remapped files are our own: out of memory is their only excuse */
		if (new_lookup != NULL && new_pages != NULL)
		{
			if (lp_btree_index_open(new_lookup, new_pages, &remapped, &err))
			{
				if (kept_ids != NULL && rows_kept != n_kept)
					abort();
				if (kept_ids != NULL &&
					lp_btree_index_search(remapped, &every, 1, 0, NULL, &found, &n_found, &err))
					check_subset(found, n_found, kept_ids, n_kept);
				lp_free(found);
				lp_btree_index_close(remapped);
			}
			else if (err.code != LP_ERR_NO_MEMORY)
				abort();
		}
		lp_free(kept_ids);
		if (new_lookup != NULL)
			lp_input_close(new_lookup);
		if (new_pages != NULL)
			lp_input_close(new_pages);
	}
	lp_row_address_map_free(map);
	if (lookup_out != NULL)
		lookup_out->ops->abort(lookup_out);
	if (pages_out != NULL)
		pages_out->ops->abort(pages_out);
}

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint32_t	lookup_len;
	LpInput    *lookup;
	LpInput    *pages;
	LpBTreeIndex *index;
	LpError		err;

	if (size < HEADER_BYTES)
		return 0;
	lookup_len = lp_fuzz_u32(data);
	if (lookup_len > size - HEADER_BYTES)
		return 0;
	lp_fuzz_use_bounded_allocator();
	lookup = lp_memory_input_open("page_lookup.lance", data + HEADER_BYTES, lookup_len);
	pages = lp_memory_input_open("page_data.lance", data + HEADER_BYTES + lookup_len,
								 size - HEADER_BYTES - lookup_len);
	if (lookup != NULL && pages != NULL && lp_btree_index_open(lookup, pages, &index, &err))
	{
		LpIndexKeyKind kind = lp_btree_index_key_kind(index);
		LpIndexKey	low = key_of(kind, data);
		LpIndexKey	high = key_of(kind, data + 1);
		LpIndexRange every = {{0}, {0}};
		LpIndexRange ranges[2] = {
			{{true, true, low}, {true, true, low}},
			{{true, data[3] & 1, low}, {true, data[3] & 2, high}},
		};
		uint64_t   *all = NULL;
		uint64_t	n_all = 0;

		if (lp_btree_index_search(index, &every, 1, 0, NULL, &all, &n_all, &err))
		{
			for (size_t n = 1; n <= 2; n++)
			{
				uint64_t   *found = NULL;
				uint64_t	count = 0;

				if (lp_btree_index_search(index, ranges + 2 - n, n, 0, NULL, &found, &count, &err))
				{
					check_subset(found, count, all, n_all);
					lp_free(found);
				}
			}
			check_subset(all, n_all, all, n_all);
			check_remap(index, lookup, pages);
			lp_free(all);
			/* over a limit of one page nothing is read and no id comes back */
			{
				bool		too_many;
				uint64_t   *none = NULL;
				uint64_t	n_none = 0;

				if (lp_btree_index_search(index, &every, 1, 1, &too_many, &none, &n_none, &err) &&
					too_many && (none != NULL || n_none != 0))
					abort();
				lp_free(none);
			}
		}
		lp_btree_index_close(index);
	}
	if (lookup != NULL)
		lp_input_close(lookup);
	if (pages != NULL)
		lp_input_close(pages);
	return 0;
}
