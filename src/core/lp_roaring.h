/*
 * lp_roaring.h - membership tests on serialized 32-bit Roaring bitmaps (the
 * portable format), as Lance stores the fragments an index covers.
 */
#ifndef LP_ROARING_H
#define LP_ROARING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lp_error.h"

/* Set *contains to whether value is in the bitmap; false on malformed input. */
bool		lp_roaring32_contains(const uint8_t *data, size_t len, uint32_t value,
								  bool *contains, LpError *err);

#endif							/* LP_ROARING_H */
