/*
 * lp_bitmap_index.h - the BITMAP scalar indexes Lance writes (lancedb's
 * createIndex with Index.bitmap()): reading and searching them.  The index
 * is one Lance file, _indices/<uuid>/bitmap_page_lookup.lance, with a row
 * per distinct value: keys (the indexed column's type; the row with a null
 * key holds the null rows) and bitmaps (binary: Lance's serialized
 * RowIdTreeMap of the rows holding the value).  A RowIdTreeMap is a u32
 * count of entries, then per entry a u32 high half (the fragment id of row
 * addresses, or the high 32 bits of stable row ids), a u32 size and a
 * portable 32-bit Roaring bitmap of low halves, size 0 meaning every row of
 * the fragment.  The keys are read whole when the index is opened; a
 * search reads the bitmaps of the keys in its ranges only.  Every count and
 * size read is checked; errors are values.
 */
#ifndef LP_BITMAP_INDEX_H
#define LP_BITMAP_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/lp_error.h"
#include "decode/lp_decode.h"
#include "format/lp_file.h"
#include "index/lp_index_key.h"
#include "io/lp_storage.h"

#define LP_BITMAP_LOOKUP_FILE "bitmap_page_lookup.lance"

/* An entry of a serialized RowIdTreeMap. */
typedef struct LpRowIdTreeEntry
{
	uint32_t	high;			/* fragment id, or high half of row ids */
	const uint8_t *bitmap;		/* Roaring bitmap of low halves; NULL: every row */
	uint32_t	size;
} LpRowIdTreeEntry;

/*
 * The entries of the serialized RowIdTreeMap data[0..len) into *entries
 * (lp_alloc'd, pointing into data; NULL when none) and *num_entries; file
 * names the index file in messages.  A count or size past the bytes is
 * LP_ERR_CORRUPT.
 */
bool		lp_row_id_tree_entries(const uint8_t *data, size_t len, const char *file,
								   LpRowIdTreeEntry **entries, uint32_t *num_entries,
								   LpError *err);

typedef struct LpBitmapIndex LpBitmapIndex;

/*
 * Open the index file behind lookup (borrowed until lp_bitmap_index_close)
 * and decode its keys.  Keys of a type searches cannot compare still open
 * (lp_bitmap_index_value_type says so).  A file without the fields keys and
 * bitmaps (binary) is LP_ERR_CORRUPT.
 */
bool		lp_bitmap_index_open(LpInput *lookup, LpBitmapIndex **out, LpError *err);

const LpFile *lp_bitmap_index_file(const LpBitmapIndex *index);

/* The keys, one per row of the file; positions of the fields keys and bitmaps in its schema. */
const LpArray *lp_bitmap_index_keys(const LpBitmapIndex *index);
uint32_t	lp_bitmap_index_keys_field(const LpBitmapIndex *index);
uint32_t	lp_bitmap_index_bitmaps_field(const LpBitmapIndex *index);

/* Every bitmap, one per row of the file, into *bitmaps (freed with lp_array_free and lp_type_free). */
bool		lp_bitmap_index_bitmaps(LpBitmapIndex *index, LpType **type, LpArray **bitmaps,
									LpError *err);

/* How keys compare with the index's values; false when searches cannot compare them. */
bool		lp_bitmap_index_value_type(const LpBitmapIndex *index, LpIndexValueType *type);

/*
 * The ids (high half << 32 | low half) of the rows whose value lies in one
 * of ranges[0..num_ranges), sorted ascending without duplicates, into
 * *row_ids (lp_alloc'd, NULL when none), and the high halves of entries
 * that hold every row of their fragment, ascending, into *whole (likewise).
 * When max_ids is not 0 and more ids than that are found, *too_many is set
 * and nothing comes back.  Keys of another kind than the index's values are
 * LP_ERR_INVALID_ARGUMENT; keys it cannot compare LP_ERR_UNSUPPORTED.
 */
bool		lp_bitmap_index_search(LpBitmapIndex *index, const LpIndexRange *ranges,
								   size_t num_ranges, uint64_t max_ids, bool *too_many,
								   uint64_t **row_ids, uint64_t *num_row_ids,
								   uint32_t **whole, size_t *num_whole, LpError *err);

/* Bitmaps the searches read since the index was opened. */
uint64_t	lp_bitmap_index_bitmaps_read(const LpBitmapIndex *index);

void		lp_bitmap_index_close(LpBitmapIndex *index);

#endif							/* LP_BITMAP_INDEX_H */
