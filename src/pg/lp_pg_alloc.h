/*
 * lp_pg_alloc.h - the core's allocator in a backend (base/lp_alloc.h).
 */
#ifndef LP_PG_ALLOC_H
#define LP_PG_ALLOC_H

#include "base/lp_alloc.h"

/*
 * Core allocations in the current memory context; those of
 * LP_PG_MAPPED_ALLOC_BYTES and more (page buffers, read batches) are
 * mappings of their own, given back to the system when freed or when that
 * context is reset or deleted.
 */
extern const LpAllocator lp_pg_allocator;

#define LP_PG_MAPPED_ALLOC_BYTES (1024 * 1024)

#endif							/* LP_PG_ALLOC_H */
