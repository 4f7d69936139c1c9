/*
 * lp_pg_alloc.h - the core's allocator in a backend (base/lp_alloc.h).
 */
#ifndef LP_PG_ALLOC_H
#define LP_PG_ALLOC_H

#include "base/lp_alloc.h"

/*
 * Core allocations in the current memory context, as palloc'd memory: freed
 * by the core, or when that context is reset or deleted, after its reset
 * callbacks.  Between lp_pg_map_large_begin and lp_pg_map_large_end those
 * of LP_PG_MAPPED_ALLOC_BYTES and more (a write's page buffers) are
 * mappings of their own, given back to the system when they go.  Between
 * lp_pg_recycle_large_begin and lp_pg_recycle_large_end those of
 * LP_PG_RECYCLED_ALLOC_BYTES and more (a scan's batches) are mappings kept
 * for reuse when they go, up to LP_PG_IDLE_MAPPING_BYTES in all, until the
 * transaction ends.
 */
extern const LpAllocator lp_pg_allocator;

#define LP_PG_MAPPED_ALLOC_BYTES (1024 * 1024)
#define LP_PG_RECYCLED_ALLOC_BYTES (128 * 1024)

#define LP_PG_IDLE_MAPPING_BYTES (16 * 1024 * 1024)

/* Give idle mappings back at the end of every transaction (from _PG_init). */
extern void lp_pg_alloc_init(void);

/* Scopes nest; a backend ends its own, on error too (PG_FINALLY). */
extern void lp_pg_map_large_begin(void);
extern void lp_pg_map_large_end(void);
extern void lp_pg_recycle_large_begin(void);
extern void lp_pg_recycle_large_end(void);

#endif							/* LP_PG_ALLOC_H */
