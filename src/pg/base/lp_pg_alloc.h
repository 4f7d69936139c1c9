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
 * mappings of their own, given back to the system when they go.
 */
extern const LpAllocator lp_pg_allocator;

#define LP_PG_MAPPED_ALLOC_BYTES (1024 * 1024)

/* Scopes nest; a backend ends its own, on error too (PG_FINALLY). */
extern void lp_pg_map_large_begin(void);
extern void lp_pg_map_large_end(void);

#endif							/* LP_PG_ALLOC_H */
