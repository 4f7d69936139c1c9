/*
 * lp_row_address_map.h - where a compaction moves the rows of the
 * fragments it rewrites, on datasets without stable row ids: the mapping
 * from old row addresses (fragment id << 32 | offset) to new ones that
 * Lance's compact_files computes to remap indexes.  Rows of the rewritten
 * fragments keep their order; rows deleted in them are dropped; addresses
 * in other fragments stay as they are.
 */
#ifndef LP_ROW_ADDRESS_MAP_H
#define LP_ROW_ADDRESS_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/lp_error.h"
#include "format/lp_deletion.h"

/* One rewritten fragment: its (live) rows become rows of new_id from new_first_row on. */
typedef struct LpMovedFragment
{
	uint64_t	old_id;
	uint64_t	physical_rows;
	const LpDeletions *deleted;	/* NULL: every row kept; else over physical_rows */
	uint64_t	new_id;
	uint64_t	new_first_row;
} LpMovedFragment;

typedef struct LpRowAddressMap LpRowAddressMap;

/*
 * The map of fragments[0..n) (copied; the deletions are borrowed until
 * lp_row_address_map_free).  An old id given twice, a new row past 2^32 or
 * deletions over another row count are LP_ERR_INVALID_ARGUMENT.
 */
bool		lp_row_address_map_new(const LpMovedFragment *fragments, size_t n,
								   LpRowAddressMap **out, LpError *err);

/*
 * The new address of old in *moved, or *kept false when its row was
 * deleted.  An address past the rows of a rewritten fragment is
 * LP_ERR_CORRUPT (an index naming rows its fragment never had).
 */
bool		lp_row_address_map_apply(const LpRowAddressMap *map, uint64_t old,
									 uint64_t *moved, bool *kept, LpError *err);

/*
 * lp_row_address_map_apply of rows[0..n), row offsets in fragment_id: the
 * new addresses of the rows kept appended to moved[*n_moved ..), in order.
 * The fragment is looked up once, not per row.
 */
bool		lp_row_address_map_apply_rows(const LpRowAddressMap *map, uint64_t fragment_id,
										  const uint32_t *rows, size_t n, uint64_t *moved,
										  size_t *n_moved, LpError *err);
/* Whether the map rewrites fragment_id, and then its physical rows (physical_rows may be NULL). */
bool		lp_row_address_map_moves(const LpRowAddressMap *map, uint64_t fragment_id,
									 uint64_t *physical_rows);

void		lp_row_address_map_free(LpRowAddressMap *map);

#endif							/* LP_ROW_ADDRESS_MAP_H */
