/*
 * lp_roaring.h - serialized 32-bit Roaring bitmaps (the portable format), as
 * Lance stores the fragments an index covers and dense deletion files: read,
 * and written (deletion files).
 */
#ifndef LP_ROARING_H
#define LP_ROARING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/lp_error.h"

/* Set *contains to whether value is in the bitmap; false on malformed input. */
bool		lp_roaring32_contains(const uint8_t *data, size_t len, uint32_t value,
								  bool *contains, LpError *err);

/*
 * Set the bit of every member in bitmap (num_bits bits, LSB first, zeroed by
 * the caller) and count the members.  A member >= num_bits is an error
 * (LP_ERR_CORRUPT); what names the bitmap in messages.
 */
bool		lp_roaring32_expand(const uint8_t *data, size_t len, const char *what,
								uint8_t *bitmap, uint64_t num_bits, uint64_t *count,
								LpError *err);

/*
 * The members of the bitmap, ascending, into *values (lp_alloc'd, NULL when
 * none; freed by the caller) and *count; what names it in messages.
 */
bool		lp_roaring32_values(const uint8_t *data, size_t len, const char *what,
								uint32_t **values, size_t *count, LpError *err);

/*
 * Serialize values (strictly ascending) as a portable Roaring bitmap
 * without run containers, as roaring_bitmap_portable_serialize and Rust's
 * RoaringBitmap::serialize_into write one: *out (lp_alloc) holds *out_len
 * bytes.  Unsorted or repeated values are LP_ERR_INVALID_ARGUMENT.
 */
bool		lp_roaring32_serialize(const uint32_t *values, size_t n,
								   uint8_t **out, size_t *out_len, LpError *err);

#endif							/* LP_ROARING_H */
