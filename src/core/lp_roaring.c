/*
 * lp_roaring.c - membership tests on serialized 32-bit Roaring bitmaps.
 *
 * Portable format: a cookie (12346 without run containers, then a u32
 * container count; or 12347 | (count - 1) << 16, then a bitmap of which
 * containers are runs), per container a u16 key (high 16 bits) and u16
 * cardinality - 1, then u32 offsets of the containers (always without runs,
 * with runs only from 4 containers on), then the containers: runs (u16 count,
 * then (start, length - 1) pairs), bitmaps (8 KiB) when the cardinality is
 * above 4096, sorted u16 arrays otherwise.
 */
#include <string.h>

#include "lp_roaring.h"

#define COOKIE_NO_RUNS 12346
#define COOKIE_RUNS 12347
#define NO_OFFSET_THRESHOLD 4
#define ARRAY_LIMIT 4096
#define BITMAP_BYTES 8192

static uint16_t
u16_at(const uint8_t *p)
{
	return (uint16_t) (p[0] | p[1] << 8);
}

static uint32_t
u32_at(const uint8_t *p)
{
	return (uint32_t) p[0] | (uint32_t) p[1] << 8 | (uint32_t) p[2] << 16 |
		(uint32_t) p[3] << 24;
}

static bool
malformed(LpError *err, const char *what)
{
	return lp_fail(err, LP_ERR_CORRUPT, "fragment bitmap of an index is malformed: %s", what);
}

bool
lp_roaring32_contains(const uint8_t *data, size_t len, uint32_t value,
					  bool *contains, LpError *err)
{
	uint32_t	cookie;
	uint32_t	count;
	size_t		pos;
	const uint8_t *run_flags = NULL;
	size_t		headers;
	size_t		container_start;
	uint16_t	key = (uint16_t) (value >> 16);
	uint16_t	low = (uint16_t) value;

	*contains = false;
	if (len < 4)
		return malformed(err, "too short");
	cookie = u32_at(data);
	if ((cookie & 0xFFFF) == COOKIE_RUNS)
	{
		count = (cookie >> 16) + 1;
		pos = 4;
		run_flags = data + pos;
		pos += (count + 7) / 8;
	}
	else if (cookie == COOKIE_NO_RUNS)
	{
		if (len < 8)
			return malformed(err, "too short");
		count = u32_at(data + 4);
		pos = 8;
	}
	else
		return malformed(err, "unknown cookie");

	if (count > 65536 || pos > len || (len - pos) / 4 < count)
		return malformed(err, "container count beyond the data");
	headers = pos;
	pos += (size_t) count * 4;

	/* Containers are found by walking them in order; offsets are optional. */
	if (run_flags == NULL || count >= NO_OFFSET_THRESHOLD)
	{
		if ((len - pos) / 4 < count)
			return malformed(err, "offsets beyond the data");
		pos += (size_t) count * 4;
	}
	container_start = pos;

	for (uint32_t i = 0; i < count; i++)
	{
		uint16_t	container_key = u16_at(data + headers + 4 * (size_t) i);
		uint32_t	cardinality = (uint32_t) u16_at(data + headers + 4 * (size_t) i + 2) + 1;
		bool		is_run = run_flags != NULL && (run_flags[i / 8] >> (i % 8)) & 1;
		size_t		size;

		if (is_run)
		{
			uint16_t	runs;

			if (len - container_start < 2)
				return malformed(err, "run container beyond the data");
			runs = u16_at(data + container_start);
			size = 2 + (size_t) runs * 4;
			if (len - container_start < size)
				return malformed(err, "run container beyond the data");
			if (container_key == key)
			{
				for (uint16_t r = 0; r < runs; r++)
				{
					uint32_t	start = u16_at(data + container_start + 2 + 4 * (size_t) r);
					uint32_t	length = u16_at(data + container_start + 4 + 4 * (size_t) r);

					if (low >= start && low <= start + length)
						*contains = true;
				}
				return true;
			}
		}
		else if (cardinality > ARRAY_LIMIT)
		{
			size = BITMAP_BYTES;
			if (len - container_start < size)
				return malformed(err, "bitmap container beyond the data");
			if (container_key == key)
			{
				*contains = (data[container_start + low / 8] >> (low % 8)) & 1;
				return true;
			}
		}
		else
		{
			size = (size_t) cardinality * 2;
			if (len - container_start < size)
				return malformed(err, "array container beyond the data");
			if (container_key == key)
			{
				for (uint32_t k = 0; k < cardinality; k++)
					if (u16_at(data + container_start + 2 * (size_t) k) == low)
						*contains = true;
				return true;
			}
		}
		container_start += size;
	}
	return true;
}
