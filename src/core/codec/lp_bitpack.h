/*
 * lp_bitpack.h - bit packing and unpacking: FastLanes, as Lance's InlineBitpacking,
 * OutOfLineBitpacking and 2.0 BitpackedForNonNeg store integers (crate
 * lance-bitpacking, a fork of spiraldb/fastlanes), and the plain bit stream
 * of 2.0 Bitpacked.
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

/*
 * Pack one block, the inverse of lp_fastlanes_unpack: values holds 1024
 * little-endian T-bit values, each below 2^width; packed receives
 * lp_fastlanes_packed_bytes(width) bytes.  False if type_bits or width is
 * not valid.
 */
bool		lp_fastlanes_pack(uint32_t type_bits, uint32_t width,
							  const uint8_t *values, uint8_t *packed);

/* Bits needed by the largest of count T-bit values (0 when all are zero). */
uint32_t	lp_bit_width(uint32_t type_bits, const uint8_t *values, uint64_t count);

/*
 * Unpack count values of a plain bit stream (2.0 Bitpacked): value i is bits
 * i * width .. i * width + width - 1, least significant bit first within
 * each byte and within the value.  packed holds at least
 * ceil(count * width / 8) bytes; out receives count little-endian values of
 * out_bits bits, sign-extended from bit width - 1 when sign_extend.  False
 * if out_bits is not 8, 16, 32 or 64 or width is not 1..out_bits.
 */
bool		lp_bitstream_unpack(const uint8_t *packed, uint64_t count, uint32_t width,
								uint32_t out_bits, bool sign_extend, uint8_t *out);

#endif							/* LP_BITPACK_H */
