/*
 * lp_checked.h - overflow-safe arithmetic for sizes and offsets read from
 * files.  Each returns false on overflow and leaves *result unspecified.
 */
#ifndef LP_CHECKED_H
#define LP_CHECKED_H

#include <stdbool.h>
#include <stdint.h>

static inline bool
lp_add_u64(uint64_t a, uint64_t b, uint64_t *result)
{
	return !__builtin_add_overflow(a, b, result);
}

static inline bool
lp_mul_u64(uint64_t a, uint64_t b, uint64_t *result)
{
	return !__builtin_mul_overflow(a, b, result);
}

/* True if [offset, offset + size) lies within [0, limit). */
static inline bool
lp_range_within(uint64_t offset, uint64_t size, uint64_t limit)
{
	return offset <= limit && size <= limit - offset;
}

/* Round value up to a multiple of alignment (a power of two). */
static inline bool
lp_align_up_u64(uint64_t value, uint64_t alignment, uint64_t *result)
{
	uint64_t	sum;

	if (!lp_add_u64(value, alignment - 1, &sum))
		return false;
	*result = sum & ~(alignment - 1);
	return true;
}

#endif							/* LP_CHECKED_H */
