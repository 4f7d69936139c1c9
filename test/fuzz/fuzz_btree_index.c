/*
 * fuzz_btree_index.c - libFuzzer target for BTREE scalar index files
 * (lp_btree_index.h) as lance_fdw opens and searches them.  Input: a u32
 * (little-endian) length L, then L bytes of page_lookup.lance, then
 * page_data.lance.  An index that opens is searched for every value
 * (unbounded), for a point and for two ranges at once, with keys of its
 * kind taken from the header's length bytes; every answer is strictly
 * ascending and each bounded answer is part of the unbounded one; a search
 * over a limit of one page returns no id.  Seeds:
 * an index lancedb wrote (test/fuzz/corpus/fuzz_btree_index, and the
 * indexes of the reference dataset btree_index by bench/fuzz.sh).
 */
#include <stdint.h>
#include <stdlib.h>

#include "lp_fuzz.h"
#include "index/lp_btree_index.h"
#include "io/lp_storage.h"

#define HEADER_BYTES 4

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
