/*
 * lp_bitmap_remap.h - a BITMAP scalar index (lancedb's Index.bitmap())
 * rewritten for rows a compaction moved, as Lance's compaction remaps it.
 * The file is read as lp_bitmap_index.h describes it.  Each bitmap's
 * row addresses are mapped (lp_row_address_map.h), deleted rows dropped;
 * entries of fragments not moved are copied as they are.  The keys, the
 * schema with its metadata and the file version stay.
 */
#ifndef LP_BITMAP_REMAP_H
#define LP_BITMAP_REMAP_H

#include <stdbool.h>

#include "base/lp_error.h"
#include "index/lp_bitmap_index.h"
#include "index/lp_row_address_map.h"
#include "io/lp_storage.h"

/*
 * Write the remapped index of the file behind lookup into out (from offset
 * 0; published or aborted by the caller).  A damaged file or bitmap (a
 * count or size past its bytes, a row past its fragment's rows) is
 * LP_ERR_CORRUPT.
 */
bool		lp_bitmap_index_remap(LpInput *lookup, const LpRowAddressMap *map, LpOutput *out,
								  LpError *err);

#endif							/* LP_BITMAP_REMAP_H */
