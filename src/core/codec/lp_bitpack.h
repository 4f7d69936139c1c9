/*
 * lp_bitpack.h - FastLanes bit unpacking, as Lance's InlineBitpacking and
 * OutOfLineBitpacking store integers (crate lance-bitpacking, a fork of
 * spiraldb/fastlanes).
 *
 * A block holds 1024 values of a T-bit unsigned type (T = 8, 16, 32, 64)
 * packed to W bits each (0 <= W <= T).  The packed block is 1024 * W / T
 * words of T bits.  The values are spread over LANES = 1024 / T lanes: word
 * k of lane l is packed word k * LANES + l, and a lane's T rows are packed
 * one after the other, lowest bits first, W bits each.  Row r of lane l is
 * value number FL_ORDER[r / 8] * 16 + (r % 8) * 128 + l, with FL_ORDER =
 * {0, 4, 2, 6, 1, 5, 3, 7} (the transposed order).
 */
#ifndef LP_BITPACK_H
#define LP_BITPACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LP_FASTLANES_BLOCK 1024

/* Bytes of one packed block of width bits per value. */
static inline size_t
lp_fastlanes_packed_bytes(uint32_t width)
{
	return (size_t) LP_FASTLANES_BLOCK * width / 8;
}

/*
 * Unpack one block: packed holds lp_fastlanes_packed_bytes(width) bytes
 * (little-endian T-bit words), out receives 1024 little-endian T-bit values.
 * False if type_bits or width is not valid.
 */
bool		lp_fastlanes_unpack(uint32_t type_bits, uint32_t width,
								const uint8_t *packed, uint8_t *out);

#endif							/* LP_BITPACK_H */
