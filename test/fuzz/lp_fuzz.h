/*
 * lp_fuzz.h - what every libFuzzer target of the core shares: the core's
 * allocation hook bounded at 64 MiB a request, so that huge counts in
 * damaged input come back as LP_ERR_NO_MEMORY instead of exhausting the
 * fuzzer's memory limit, as the server's allocator (MCXT_ALLOC_NO_OOM)
 * turns them into errors too.
 */
#ifndef LP_FUZZ_H
#define LP_FUZZ_H

#include <stdint.h>
#include <stdlib.h>

#include "base/lp_alloc.h"

#define LP_FUZZ_MAX_ALLOCATION ((size_t) 64 << 20)

static void *
lp_fuzz_bounded_alloc(size_t size, void *context)
{
	(void) context;
	return size > LP_FUZZ_MAX_ALLOCATION ? NULL : malloc(size);
}

static void
lp_fuzz_bounded_free(void *pointer, void *context)
{
	(void) context;
	free(pointer);
}

/* Route the core's allocations through the bounded allocator. */
static inline void
lp_fuzz_use_bounded_allocator(void)
{
	static const LpAllocator allocator = {lp_fuzz_bounded_alloc, lp_fuzz_bounded_free, NULL};

	lp_set_allocator(&allocator);
}

/* Little-endian reads of the input's header fields. */
static inline uint32_t
lp_fuzz_u32(const uint8_t *p)
{
	return (uint32_t) p[0] | ((uint32_t) p[1] << 8) | ((uint32_t) p[2] << 16) | ((uint32_t) p[3] << 24);
}

static inline uint64_t
lp_fuzz_u64(const uint8_t *p)
{
	return (uint64_t) lp_fuzz_u32(p) | ((uint64_t) lp_fuzz_u32(p + 4) << 32);
}

#endif							/* LP_FUZZ_H */
