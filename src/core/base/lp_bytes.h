/*
 * lp_bytes.h - byte strings, and little-endian integers in unaligned memory,
 * the byte order of every integer Lance stores (file tails, offset tables,
 * page buffers, manifests, deletion files, roaring bitmaps).  The one place
 * these live, so readers and writers of the format agree byte for byte.
 */
#ifndef LP_BYTES_H
#define LP_BYTES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct LpBytes
{
	uint8_t    *data;
	size_t		len;
} LpBytes;

static inline bool
lp_bytes_equal(const LpBytes *a, const LpBytes *b)
{
	return a->len == b->len && (a->len == 0 || memcmp(a->data, b->data, a->len) == 0);
}

static inline uint16_t
lp_le16(const uint8_t *p)
{
	return (uint16_t) (p[0] | (p[1] << 8));
}

static inline uint32_t
lp_le32(const uint8_t *p)
{
	return (uint32_t) p[0] | ((uint32_t) p[1] << 8) | ((uint32_t) p[2] << 16) |
		((uint32_t) p[3] << 24);
}

static inline uint64_t
lp_le64(const uint8_t *p)
{
	return (uint64_t) lp_le32(p) | ((uint64_t) lp_le32(p + 4) << 32);
}

/* Unsigned integer of 1, 2, 4 or 8 bytes; any other width reads 8. */
static inline uint64_t
lp_le_uint(const uint8_t *p, uint32_t bytes)
{
	switch (bytes)
	{
		case 1:
			return p[0];
		case 2:
			return lp_le16(p);
		case 4:
			return lp_le32(p);
		default:
			return lp_le64(p);
	}
}

static inline void
lp_put_le16(uint8_t *p, uint16_t value)
{
	p[0] = (uint8_t) value;
	p[1] = (uint8_t) (value >> 8);
}

static inline void
lp_put_le32(uint8_t *p, uint32_t value)
{
	p[0] = (uint8_t) value;
	p[1] = (uint8_t) (value >> 8);
	p[2] = (uint8_t) (value >> 16);
	p[3] = (uint8_t) (value >> 24);
}

static inline void
lp_put_le64(uint8_t *p, uint64_t value)
{
	lp_put_le32(p, (uint32_t) value);
	lp_put_le32(p + 4, (uint32_t) (value >> 32));
}

/* Write the low 1, 2, 4 or 8 bytes of value (the widths lp_le_uint reads). */
static inline void
lp_put_le_uint(uint8_t *p, uint32_t bytes, uint64_t value)
{
	switch (bytes)
	{
		case 1:
			p[0] = (uint8_t) value;
			break;
		case 2:
			lp_put_le16(p, (uint16_t) value);
			break;
		case 4:
			lp_put_le32(p, (uint32_t) value);
			break;
		default:
			lp_put_le64(p, value);
			break;
	}
}

/*
 * Unsigned integer of the first `bytes` (0 to 8) bytes at p, and its
 * writer: for widths that need not be a power of two (FSST symbols, the
 * fields of a row).
 */
static inline uint64_t
lp_le_bytes(const uint8_t *p, uint32_t bytes)
{
	uint64_t	value = 0;

	for (uint32_t b = 0; b < bytes; b++)
		value |= (uint64_t) p[b] << (8 * b);
	return value;
}

static inline void
lp_put_le_bytes(uint8_t *p, uint32_t bytes, uint64_t value)
{
	for (uint32_t b = 0; b < bytes; b++)
		p[b] = (uint8_t) (value >> (8 * b));
}

#endif							/* LP_BYTES_H */
