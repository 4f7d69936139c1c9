/*
 * lp_bitpack.c - FastLanes packing and unpacking, bit-stream unpacking (layouts described in
 * lp_bitpack.h).
 */
#include <string.h>

#include "codec/lp_bitpack.h"
#include "base/lp_bytes.h"

static const uint32_t fastlanes_order[8] = {0, 4, 2, 6, 1, 5, 3, 7};

/*
 * One unpacker per word size T, so the lane loop has a constant trip count
 * and constant word size: row r of every lane is bits r * W .. r * W + W - 1
 * of the lanes' words k = r * W / T (and k + 1 where the value continues),
 * which lie side by side, as do the row's 1024 / T output values.
 */
#define FASTLANES_UNPACKER(T, LOAD, STORE) \
static void \
fastlanes_unpack_##T(uint32_t width, const uint8_t *packed, uint8_t *out) \
{ \
	enum { lanes = LP_FASTLANES_BLOCK / T, bytes = T / 8 }; \
	uint##T##_t mask = (uint##T##_t) (width == T ? ~(uint##T##_t) 0 : \
									  (((uint##T##_t) 1 << width) - 1)); \
\
	for (uint32_t row = 0; row < T; row++) \
	{ \
		uint32_t	bit = row * width; \
		uint32_t	shift = bit % T; \
		const uint8_t *low = packed + (size_t) (bit / T) * lanes * bytes; \
		uint8_t    *dst = out + (size_t) (fastlanes_order[row / 8] * 16 + (row % 8) * 128) * bytes; \
\
		if (shift + width > T) \
		{ \
			const uint8_t *high = low + lanes * bytes; \
\
			for (uint32_t lane = 0; lane < lanes; lane++) \
				STORE(dst + lane * bytes, (uint##T##_t) (((LOAD(low + lane * bytes) >> shift) | \
					(LOAD(high + lane * bytes) << (T - shift))) & mask)); \
		} \
		else \
			for (uint32_t lane = 0; lane < lanes; lane++) \
				STORE(dst + lane * bytes, (uint##T##_t) ((LOAD(low + lane * bytes) >> shift) & mask)); \
	} \
}

static inline uint8_t
load8(const uint8_t *p)
{
	return *p;
}

static inline void
store8(uint8_t *p, uint8_t value)
{
	*p = value;
}

FASTLANES_UNPACKER(8, load8, store8)
FASTLANES_UNPACKER(16, lp_le16, lp_put_le16)
FASTLANES_UNPACKER(32, lp_le32, lp_put_le32)
FASTLANES_UNPACKER(64, lp_le64, lp_put_le64)

bool
lp_fastlanes_unpack(uint32_t type_bits, uint32_t width, const uint8_t *packed,
					uint8_t *out)
{
	if (type_bits != 8 && type_bits != 16 && type_bits != 32 && type_bits != 64)
		return false;
	if (width > type_bits)
		return false;
	if (width == 0)
	{
		memset(out, 0, (size_t) LP_FASTLANES_BLOCK * (type_bits / 8));
		return true;
	}
	switch (type_bits)
	{
		case 8:
			fastlanes_unpack_8(width, packed, out);
			break;
		case 16:
			fastlanes_unpack_16(width, packed, out);
			break;
		case 32:
			fastlanes_unpack_32(width, packed, out);
			break;
		default:
			fastlanes_unpack_64(width, packed, out);
			break;
	}
	return true;
}

/*
 * The packers, one per word size as the unpackers: row r of every lane goes
 * into the lanes' words k = r * W / T (and k + 1 where the value continues),
 * collected in native words and stored little-endian once.
 */
#define FASTLANES_PACKER(T, LOAD, STORE) \
static void \
fastlanes_pack_##T(uint32_t width, const uint8_t *values, uint8_t *packed) \
{ \
	enum { lanes = LP_FASTLANES_BLOCK / T, bytes = T / 8 }; \
	uint##T##_t words[LP_FASTLANES_BLOCK]; \
	uint32_t	num_words = lanes * width; \
\
	memset(words, 0, sizeof(words[0]) * num_words); \
	for (uint32_t row = 0; row < T; row++) \
	{ \
		uint32_t	bit = row * width; \
		uint32_t	shift = bit % T; \
		uint##T##_t *low = words + (bit / T) * lanes; \
		const uint8_t *src = values + (size_t) (fastlanes_order[row / 8] * 16 + (row % 8) * 128) * bytes; \
\
		for (uint32_t lane = 0; lane < lanes; lane++) \
			low[lane] |= (uint##T##_t) (LOAD(src + lane * bytes) << shift); \
		if (shift + width > T) \
		{ \
			uint##T##_t *high = low + lanes; \
\
			for (uint32_t lane = 0; lane < lanes; lane++) \
				high[lane] |= (uint##T##_t) (LOAD(src + lane * bytes) >> (T - shift)); \
		} \
	} \
	for (uint32_t i = 0; i < num_words; i++) \
		STORE(packed + (size_t) i * bytes, words[i]); \
}

FASTLANES_PACKER(8, load8, store8)
FASTLANES_PACKER(16, lp_le16, lp_put_le16)
FASTLANES_PACKER(32, lp_le32, lp_put_le32)
FASTLANES_PACKER(64, lp_le64, lp_put_le64)

bool
lp_fastlanes_pack(uint32_t type_bits, uint32_t width, const uint8_t *values,
				  uint8_t *packed)
{
	if (type_bits != 8 && type_bits != 16 && type_bits != 32 && type_bits != 64)
		return false;
	if (width > type_bits)
		return false;
	if (width == 0)
		return true;
	switch (type_bits)
	{
		case 8:
			fastlanes_pack_8(width, values, packed);
			break;
		case 16:
			fastlanes_pack_16(width, values, packed);
			break;
		case 32:
			fastlanes_pack_32(width, values, packed);
			break;
		default:
			fastlanes_pack_64(width, values, packed);
			break;
	}
	return true;
}

/*
 * The OR of count little-endian values of T bits: the words are ORed as
 * they lie in memory (the bytes of the OR are the ORs of the bytes, in any
 * byte order), which the compiler vectorizes, and read little-endian once.
 */
#define BITS_OR(T, LOAD) \
static uint64_t \
bits_or_##T(const uint8_t *values, uint64_t count) \
{ \
	uint##T##_t all = 0; \
	uint8_t		bytes[T / 8]; \
\
	for (uint64_t i = 0; i < count; i++) \
	{ \
		uint##T##_t word; \
\
		memcpy(&word, values + i * (T / 8), sizeof(word)); \
		all |= word; \
	} \
	memcpy(bytes, &all, sizeof(all)); \
	return LOAD(bytes); \
}

BITS_OR(8, load8)
BITS_OR(16, lp_le16)
BITS_OR(32, lp_le32)
BITS_OR(64, lp_le64)

uint32_t
lp_bit_width(uint32_t type_bits, const uint8_t *values, uint64_t count)
{
	uint64_t	all;

	switch (type_bits)
	{
		case 8:
			all = bits_or_8(values, count);
			break;
		case 16:
			all = bits_or_16(values, count);
			break;
		case 32:
			all = bits_or_32(values, count);
			break;
		default:
			all = bits_or_64(values, count);
			break;
	}
	return all == 0 ? 0 : 64 - (uint32_t) __builtin_clzll(all);
}

bool
lp_bitstream_unpack(const uint8_t *packed, uint64_t count, uint32_t width,
					uint32_t out_bits, bool sign_extend, uint8_t *out)
{
	uint64_t	mask;

	if (out_bits != 8 && out_bits != 16 && out_bits != 32 && out_bits != 64)
		return false;
	if (width == 0 || width > out_bits)
		return false;
	mask = width == 64 ? UINT64_MAX : (((uint64_t) 1 << width) - 1);
	for (uint64_t i = 0; i < count; i++)
	{
		uint64_t	bit = i * width;
		uint64_t	value = 0;
		uint32_t	got = 0;

		/* gather the value byte by byte, starting inside the first byte */
		while (got < width)
		{
			uint32_t	shift = (uint32_t) ((bit + got) % 8);
			uint64_t	byte = packed[(bit + got) / 8] >> shift;

			value |= byte << got;
			got += 8 - shift;
		}
		value &= mask;
		if (sign_extend && width < 64 && (value >> (width - 1)) & 1)
			value |= ~mask;
		lp_put_le_uint(out + i * (out_bits / 8), out_bits / 8, value);
	}
	return true;
}
