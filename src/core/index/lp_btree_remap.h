/*
 * lp_btree_remap.h - a BTREE index (lp_btree_index.h) rewritten for rows a
 * compaction moved, as Lance's compaction remaps an index into a new one:
 * every row id mapped (lp_row_address_map.h), rows that were deleted left
 * out.  Unlike Lance's own remap, which shortens pages in place and keeps
 * the old page lookup, the values stay in their sorted order but are cut
 * into pages of the index's batch_size again and the lookup (min, max,
 * null_count, page_idx) is recomputed from them, so that page p still holds
 * rows [p * batch_size, (p + 1) * batch_size) as every reader assumes.
 * Both files keep the schemas (with their metadata) and the file version
 * of the originals.
 */
#ifndef LP_BTREE_REMAP_H
#define LP_BTREE_REMAP_H

#include <stdbool.h>
#include <stdint.h>

#include "base/lp_error.h"
#include "index/lp_row_address_map.h"
#include "io/lp_storage.h"

/*
 * Write the remapped index of the files behind lookup and pages into
 * lookup_out and pages_out (from offset 0; published or aborted by the
 * caller).  *rows_kept receives the rows of the new index.  Damaged or
 * inconsistent files (a lookup that does not name each page once, a row id
 * past its fragment's rows) are LP_ERR_CORRUPT, before anything is
 * published.
 */
bool		lp_btree_index_remap(LpInput *lookup, LpInput *pages, const LpRowAddressMap *map,
								 LpOutput *lookup_out, LpOutput *pages_out,
								 uint64_t *rows_kept, LpError *err);

#endif							/* LP_BTREE_REMAP_H */
