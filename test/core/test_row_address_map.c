/*
 * test_row_address_map.c - old row addresses to new ones after a
 * compaction: rows keep their order, deleted rows drop, other fragments
 * stay, rows past a fragment and fragments mapped twice are refused.
 */
#include "lp_test.h"

#include "index/lp_row_address_map.h"

#define ADDRESS(fragment, row) ((uint64_t) (fragment) << 32 | (row))

LP_TEST(row_address_map_moves_and_drops)
{
	uint8_t		deleted_bits[1] = {0x06};	/* rows 1 and 2 */
	LpDeletions deleted = {4, 2, deleted_bits};
	LpMovedFragment moved[2] = {
		{4, 4, &deleted, 10, 5},
		{3, 5, NULL, 10, 0},
	};
	LpRowAddressMap *map = NULL;
	LpError		err = {0};
	uint64_t	to;
	bool		kept;

	LP_CHECK(lp_row_address_map_new(moved, 2, &map, &err));
	if (map == NULL)
		return;
	LP_CHECK(lp_row_address_map_apply(map, ADDRESS(3, 2), &to, &kept, &err) && kept);
	LP_CHECK_EQ_U64(to, ADDRESS(10, 2));
	LP_CHECK(lp_row_address_map_apply(map, ADDRESS(4, 0), &to, &kept, &err) && kept);
	LP_CHECK_EQ_U64(to, ADDRESS(10, 5));
	LP_CHECK(lp_row_address_map_apply(map, ADDRESS(4, 1), &to, &kept, &err) && !kept);
	LP_CHECK(lp_row_address_map_apply(map, ADDRESS(4, 2), &to, &kept, &err) && !kept);
	LP_CHECK(lp_row_address_map_apply(map, ADDRESS(4, 3), &to, &kept, &err) && kept);
	LP_CHECK_EQ_U64(to, ADDRESS(10, 6));
	/* a fragment the compaction did not touch */
	LP_CHECK(lp_row_address_map_apply(map, ADDRESS(7, 1), &to, &kept, &err) && kept);
	LP_CHECK_EQ_U64(to, ADDRESS(7, 1));
	LP_CHECK(lp_row_address_map_moves(map, 3, NULL) && lp_row_address_map_moves(map, 4, &to) &&
			 !lp_row_address_map_moves(map, 7, NULL));
	LP_CHECK_EQ_U64(to, 4);
	/* a row fragment 3 never had */
	LP_CHECK(!lp_row_address_map_apply(map, ADDRESS(3, 5), &to, &kept, &err));
	LP_CHECK(err.code == LP_ERR_CORRUPT);
	lp_row_address_map_free(map);
}

LP_TEST(row_address_map_refuses_bad_fragments)
{
	uint8_t		deleted_bits[1] = {0x01};
	LpDeletions deleted = {3, 1, deleted_bits};
	LpMovedFragment twice[2] = {{3, 5, NULL, 10, 0}, {3, 5, NULL, 11, 0}};
	LpMovedFragment wrong_rows[1] = {{3, 5, &deleted, 10, 0}};
	LpMovedFragment too_far[1] = {{3, 5, NULL, 10, UINT32_MAX - 2}};
	LpRowAddressMap *map = NULL;
	LpError		err = {0};

	LP_CHECK(!lp_row_address_map_new(twice, 2, &map, &err) && map == NULL);
	LP_CHECK(err.code == LP_ERR_INVALID_ARGUMENT);
	LP_CHECK(!lp_row_address_map_new(wrong_rows, 1, &map, &err) && map == NULL);
	LP_CHECK(!lp_row_address_map_new(too_far, 1, &map, &err) && map == NULL);
}
