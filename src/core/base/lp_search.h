/*
 * lp_search.h - binary search over sorted arrays of the row ids and
 * addresses that indexes find, shared by the core and the server.
 */
#ifndef LP_SEARCH_H
#define LP_SEARCH_H

#include <stdint.h>

/* The first of values[0..n) (ascending) at or above value; n when none. */
static inline uint64_t
lp_lower_bound_u64(const uint64_t *values, uint64_t n, uint64_t value)
{
	uint64_t	low = 0;
	uint64_t	high = n;

	while (low < high)
	{
		uint64_t	middle = low + (high - low) / 2;

		if (values[middle] < value)
			low = middle + 1;
		else
			high = middle;
	}
	return low;
}

#endif							/* LP_SEARCH_H */
