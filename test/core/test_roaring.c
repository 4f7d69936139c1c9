/*
 * test_roaring.c - membership in hand-built serialized Roaring bitmaps of
 * every container kind, and malformed inputs.
 */
#include <stdint.h>
#include <string.h>

#include "format/lp_roaring.h"
#include "lp_test.h"

static size_t
put16(uint8_t *p, size_t pos, uint16_t v)
{
	p[pos] = (uint8_t) v;
	p[pos + 1] = (uint8_t) (v >> 8);
	return pos + 2;
}

static size_t
put32(uint8_t *p, size_t pos, uint32_t v)
{
	pos = put16(p, pos, (uint16_t) v);
	return put16(p, pos, (uint16_t) (v >> 16));
}

static bool
member(const uint8_t *data, size_t len, uint32_t value)
{
	bool		contains = false;
	LpError		err;

	LP_CHECK(lp_roaring32_contains(data, len, value, &contains, &err));
	return contains;
}

/* {1, 2, 7} as one array container, no runs */
LP_TEST(roaring_array_container)
{
	uint8_t		b[64];
	size_t		n = 0;

	n = put32(b, n, 12346);
	n = put32(b, n, 1);
	n = put16(b, n, 0);
	n = put16(b, n, 2);			/* cardinality - 1 */
	n = put32(b, n, 16);		/* offset */
	n = put16(b, n, 1);
	n = put16(b, n, 2);
	n = put16(b, n, 7);
	LP_CHECK(member(b, n, 1));
	LP_CHECK(member(b, n, 7));
	LP_CHECK(!member(b, n, 3));
	LP_CHECK(!member(b, n, 65537));
}

/* runs [10, 20] in key 0 and {5} in key 1, with a run container first */
LP_TEST(roaring_run_and_array_containers)
{
	uint8_t		b[64];
	size_t		n = 0;

	n = put32(b, n, 12347 | (1u << 16));	/* two containers */
	b[n++] = 0x01;				/* container 0 is a run container */
	n = put16(b, n, 0);
	n = put16(b, n, 10);
	n = put16(b, n, 1);
	n = put16(b, n, 0);
	n = put16(b, n, 1);			/* one run */
	n = put16(b, n, 10);
	n = put16(b, n, 10);		/* length - 1 */
	n = put16(b, n, 5);
	LP_CHECK(member(b, n, 10));
	LP_CHECK(member(b, n, 20));
	LP_CHECK(!member(b, n, 21));
	LP_CHECK(member(b, n, 65536 + 5));
	LP_CHECK(!member(b, n, 5));
}

/* every even value below 10000 as a bitmap container */
LP_TEST(roaring_bitmap_container)
{
	static uint8_t b[16 + 8192];
	size_t		n = 0;

	memset(b, 0, sizeof(b));
	n = put32(b, n, 12346);
	n = put32(b, n, 1);
	n = put16(b, n, 0);
	n = put16(b, n, 4999);
	n = put32(b, n, 16);
	for (uint32_t v = 0; v < 10000; v += 2)
		b[n + v / 8] |= (uint8_t) (1 << (v % 8));
	n += 8192;
	LP_CHECK(member(b, n, 0));
	LP_CHECK(member(b, n, 9998));
	LP_CHECK(!member(b, n, 9999));
	LP_CHECK(!member(b, n, 10000));
}

LP_TEST(roaring_malformed)
{
	uint8_t		b[16] = {0};
	bool		contains;
	LpError		err;

	LP_CHECK(!lp_roaring32_contains(b, 3, 1, &contains, &err));
	LP_CHECK(err.code == LP_ERR_CORRUPT);
	put32(b, 0, 99);
	LP_CHECK(!lp_roaring32_contains(b, 8, 1, &contains, &err));
	put32(b, 0, 12346);
	put32(b, 4, 1000);			/* far more containers than bytes */
	LP_CHECK(!lp_roaring32_contains(b, 16, 1, &contains, &err));
	put32(b, 4, 1);
	put16(b, 8, 0);
	put16(b, 10, 100);			/* an array of 101 values in 0 bytes */
	put32(b, 12, 16);
	LP_CHECK(!lp_roaring32_contains(b, 16, 1, &contains, &err));
}

/* Expansion of runs [10, 20] in key 0 and {5} in key 1 into a plain bitmap. */
LP_TEST(roaring_expand)
{
	uint8_t		b[64];
	uint8_t		bits[(65536 + 16) / 8];
	size_t		n = 0;
	uint64_t	count = 0;
	LpError		err;

	n = put32(b, n, 12347 | (1u << 16));
	b[n++] = 0x01;
	n = put16(b, n, 0);
	n = put16(b, n, 10);
	n = put16(b, n, 1);
	n = put16(b, n, 0);
	n = put16(b, n, 1);
	n = put16(b, n, 10);
	n = put16(b, n, 10);
	n = put16(b, n, 5);

	memset(bits, 0, sizeof(bits));
	LP_CHECK(lp_roaring32_expand(b, n, "test bitmap", bits, 65536 + 16, &count, &err));
	LP_CHECK_EQ_U64(count, 12);
	for (uint32_t v = 0; v < 65536 + 16; v++)
	{
		bool		expected = (v >= 10 && v <= 20) || v == 65536 + 5;

		LP_CHECK_MSG(((bits[v / 8] >> (v % 8)) & 1) == expected, "bit %u", v);
		if ((((bits[v / 8] >> (v % 8)) & 1) != 0) != expected)
			break;
	}

	/* 65541 is beyond a bitmap of 65536 bits */
	memset(bits, 0, sizeof(bits));
	LP_CHECK(!lp_roaring32_expand(b, n, "test bitmap", bits, 65536, &count, &err));
	LP_CHECK(err.code == LP_ERR_CORRUPT);
	LP_CHECK(strstr(err.message, "test bitmap holds 65541") != NULL);
}

/*
 * Two containers of key 0 ({1} then {2}): membership would see only the first
 * and expansion both, so the index coverage check and the deletions of one
 * file could disagree; the format has one container per key, ascending.
 */
LP_TEST(roaring_keys_not_ascending)
{
	uint8_t		b[64];
	uint8_t		bits[8] = {0};
	uint64_t	count = 0;
	bool		contains;
	size_t		n = 0;
	LpError		err;

	n = put32(b, n, 12346);
	n = put32(b, n, 2);
	n = put16(b, n, 0);
	n = put16(b, n, 0);
	n = put16(b, n, 0);
	n = put16(b, n, 0);
	n = put32(b, n, 24);
	n = put32(b, n, 26);
	n = put16(b, n, 1);
	n = put16(b, n, 2);
	LP_CHECK(!lp_roaring32_contains(b, n, 2, &contains, &err));
	LP_CHECK(err.code == LP_ERR_CORRUPT);
	LP_CHECK(strstr(err.message, "not ascending") != NULL);
	LP_CHECK(!lp_roaring32_expand(b, n, "test bitmap", bits, 64, &count, &err));
	LP_CHECK(err.code == LP_ERR_CORRUPT);
}
