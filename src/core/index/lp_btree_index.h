/*
 * lp_btree_index.h - lookups in the BTREE scalar indexes Lance writes
 * (lancedb's createIndex with Index.btree()), under
 * <dataset>/_indices/<uuid>/ as two Lance files:
 *  - page_lookup.lance: one row per page of sorted values, fields min, max
 *    (the indexed column's type), null_count and page_idx (uint32); schema
 *    metadata batch_size is the rows per page (4096 when absent);
 *  - page_data.lance: fields values (the indexed column's type) and ids
 *    (uint64 row ids: row addresses, or stable row ids when the dataset has
 *    them), sorted by value; page p holds rows [p * batch_size,
 *    (p + 1) * batch_size).
 * A search reads only the pages whose [min, max] meets one of the ranges
 * and returns the ids of the rows whose value lies in one, so a page
 * lookup whose bounds are wrong can only cost reads, and values are tested
 * one by one.  Every count and page number read from the files is checked;
 * errors are values.
 */
#ifndef LP_BTREE_INDEX_H
#define LP_BTREE_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/lp_error.h"
#include "decode/lp_decode.h"
#include "format/lp_file.h"
#include "index/lp_index_key.h"
#include "io/lp_storage.h"

#define LP_BTREE_LOOKUP_FILE "page_lookup.lance"
#define LP_BTREE_PAGES_FILE "page_data.lance"

typedef struct LpBTreeIndex LpBTreeIndex;

/*
 * Open the index whose files are behind lookup and pages (borrowed: the
 * caller keeps both open until lp_btree_index_close).  The lookup file is
 * read whole.  A value type it cannot compare, or a layout it does not
 * know, gives LP_ERR_UNSUPPORTED; damaged files LP_ERR_CORRUPT.
 */
bool		lp_btree_index_open(LpInput *lookup, LpInput *pages, LpBTreeIndex **out,
								LpError *err);

/* How keys must be given to lp_btree_index_search for this index. */
LpIndexKeyKind lp_btree_index_key_kind(const LpBTreeIndex *index);

/*
 * The ids of the rows whose value lies in one of ranges[0..num_ranges)
 * (keys of lp_btree_index_key_kind, else LP_ERR_INVALID_ARGUMENT), sorted
 * ascending without duplicates, into *row_ids (lp_alloc'd, NULL when none;
 * freed by the caller).  When max_pages is not 0 and the ranges meet more
 * pages than that, no page is read: *too_many_pages is set and no id comes
 * back (a caller for whom reading everything is cheaper than so many
 * lookups).
 */
bool		lp_btree_index_search(LpBTreeIndex *index, const LpIndexRange *ranges,
								  size_t num_ranges, uint64_t max_pages, bool *too_many_pages,
								  uint64_t **row_ids, uint64_t *num_row_ids, LpError *err);

/* Pages of page_data.lance. */
uint64_t	lp_btree_index_num_pages(const LpBTreeIndex *index);

/* Rows of a page of page_data.lance (the last may hold fewer). */
uint64_t	lp_btree_index_batch_size(const LpBTreeIndex *index);

/* The two files, and readers of page_data.lance's values and ids, owned by the index. */
const LpFile *lp_btree_index_lookup_file(const LpBTreeIndex *index);
const LpFile *lp_btree_index_pages_file(const LpBTreeIndex *index);
LpFieldReader *lp_btree_index_values_reader(LpBTreeIndex *index);
LpFieldReader *lp_btree_index_ids_reader(LpBTreeIndex *index);

/* Pages of page_data.lance the searches read since the index was opened. */
uint64_t	lp_btree_index_pages_read(const LpBTreeIndex *index);

void		lp_btree_index_close(LpBTreeIndex *index);

#endif							/* LP_BTREE_INDEX_H */
