/*
 * test_roaring.c - membership in hand-built serialized Roaring bitmaps of
 * every container kind, and malformed inputs; serialized bitmaps read back.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/lp_alloc.h"
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

/* ---- serialization ------------------------------------------------------------ */

/*
 * Serialize values and read them back: each is a member and its successor
 * only when it is one of them; expansion into num_bits bits (0: the values
 * are too large to expand) finds exactly them.  *out receives the bytes.
 */
static void
check_round_trip(const uint32_t *values, size_t n, uint64_t num_bits,
				 uint8_t **out, size_t *out_len)
{
	LpError		err;

	*out = NULL;
	*out_len = 0;
	LP_CHECK_MSG(lp_roaring32_serialize(values, n, out, out_len, &err), "%s", err.message);
	if (*out == NULL)
		return;
	for (size_t i = 0; i < n; i++)
	{
		bool		next_is_member = i + 1 < n && values[i + 1] == values[i] + 1;

		LP_CHECK_MSG(member(*out, *out_len, values[i]), "%u is not a member", values[i]);
		if (values[i] != UINT32_MAX)
			LP_CHECK_MSG(member(*out, *out_len, values[i] + 1) == next_is_member,
						 "membership of %u", values[i] + 1);
	}
	if (num_bits > 0)
	{
		uint8_t    *bits = calloc((size_t) (num_bits + 7) / 8, 1);
		uint64_t	count = 0;
		size_t		next = 0;

		LP_CHECK_MSG(lp_roaring32_expand(*out, *out_len, "serialized bitmap", bits, num_bits,
										 &count, &err), "%s", err.message);
		LP_CHECK_EQ_U64(count, n);
		for (uint64_t v = 0; v < num_bits; v++)
		{
			bool		expected = next < n && values[next] == v;

			if (((bits[v / 8] >> (v % 8)) & 1) != expected)
			{
				LP_CHECK_MSG(false, "bit %llu of the expansion", (unsigned long long) v);
				break;
			}
			if (expected)
				next++;
		}
		free(bits);
	}
}

LP_TEST(roaring_serialize_empty)
{
	static const uint8_t expected[8] = {0x3A, 0x30, 0, 0, 0, 0, 0, 0};
	uint8_t    *data;
	size_t		len;

	check_round_trip(NULL, 0, 64, &data, &len);
	LP_CHECK(len == sizeof(expected) && data != NULL && memcmp(data, expected, len) == 0);
	LP_CHECK(data != NULL && !member(data, len, 0));
	lp_free(data);
}

/* {5}: the bytes roaring_bitmap_portable_serialize writes */
LP_TEST(roaring_serialize_one_value)
{
	uint32_t	value = 5;
	uint8_t		expected[32];
	size_t		n = 0;
	uint8_t    *data;
	size_t		len;

	n = put32(expected, n, 12346);
	n = put32(expected, n, 1);
	n = put16(expected, n, 0);
	n = put16(expected, n, 0);
	n = put32(expected, n, 16);
	n = put16(expected, n, 5);
	check_round_trip(&value, 1, 64, &data, &len);
	LP_CHECK(len == n && data != NULL && memcmp(data, expected, n) == 0);
	lp_free(data);
}

/* 4096 values in one container are an array, 4097 a bitmap */
LP_TEST(roaring_serialize_array_limit)
{
	uint32_t   *values = malloc(4097 * sizeof(uint32_t));
	uint8_t    *data;
	size_t		len;

	for (uint32_t i = 0; i < 4097; i++)
		values[i] = 2 * i;
	check_round_trip(values, 4096, 10000, &data, &len);
	LP_CHECK_EQ_U64(len, 16 + 4096 * 2);
	/* cardinality - 1, then the array: 0, 2, ... */
	LP_CHECK(data != NULL && data[10] == 0xFF && data[11] == 0x0F);
	LP_CHECK(data != NULL && data[16] == 0 && data[17] == 0 && data[18] == 2);
	lp_free(data);

	check_round_trip(values, 4097, 10000, &data, &len);
	LP_CHECK_EQ_U64(len, 16 + 8192);
	/* bits 0, 2, 4, 6 of the bitmap's first byte */
	LP_CHECK(data != NULL && data[10] == 0x00 && data[11] == 0x10 && data[16] == 0x55);
	lp_free(data);
	free(values);
}

/* arrays and bitmaps under keys 0, 1, 7 and 65535, up to UINT32_MAX */
LP_TEST(roaring_serialize_several_containers)
{
	uint32_t   *values = malloc(6000 * sizeof(uint32_t));
	size_t		n = 0;
	uint8_t    *data;
	size_t		len;

	values[n++] = 1;
	values[n++] = 3;
	for (uint32_t i = 0; i < 5000; i++)
		values[n++] = 65536 + i;
	values[n++] = (7u << 16) | 65535;
	check_round_trip(values, n, 8 * 65536, &data, &len);
	LP_CHECK_EQ_U64(len, 8 + 3 * 8 + 2 * 2 + 8192 + 2);
	lp_free(data);

	values[n++] = UINT32_MAX - 1;
	values[n++] = UINT32_MAX;
	check_round_trip(values, n, 0, &data, &len);
	LP_CHECK_EQ_U64(len, 8 + 4 * 8 + 2 * 2 + 8192 + 2 + 2 * 2);
	/* four containers with keys 0, 1, 7, 65535 */
	LP_CHECK(data != NULL && data[4] == 4 && data[8] == 0 && data[12] == 1 &&
			 data[16] == 7 && data[20] == 0xFF && data[21] == 0xFF);
	LP_CHECK(data != NULL && !member(data, len, UINT32_MAX - 2) && !member(data, len, 0));
	lp_free(data);
	free(values);
}

LP_TEST(roaring_serialize_refuses_unsorted)
{
	static const uint32_t descending[] = {3, 2};
	static const uint32_t repeated[] = {2, 2};
	uint8_t    *data;
	size_t		len;
	LpError		err;

	LP_CHECK(!lp_roaring32_serialize(descending, 2, &data, &len, &err));
	LP_CHECK(err.code == LP_ERR_INVALID_ARGUMENT && data == NULL);
	LP_CHECK(!lp_roaring32_serialize(repeated, 2, &data, &len, &err));
	LP_CHECK(err.code == LP_ERR_INVALID_ARGUMENT && data == NULL);
}
