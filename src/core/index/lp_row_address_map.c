/*
 * lp_row_address_map.c - old row addresses to new ones after a compaction
 * (lp_row_address_map.h).
 */
#include <stdlib.h>
#include <string.h>

#include "base/lp_alloc.h"
#include "index/lp_row_address_map.h"

#define DROPPED UINT32_MAX

typedef struct MovedRows
{
	LpMovedFragment fragment;
	/* row -> offset in the new fragment, or DROPPED; NULL when no row is deleted */
	uint32_t   *new_offsets;
} MovedRows;

struct LpRowAddressMap
{
	MovedRows  *moved;			/* sorted by old id */
	size_t		n_moved;
};

static int
compare_old_ids(const void *a, const void *b)
{
	uint64_t	x = ((const MovedRows *) a)->fragment.old_id;
	uint64_t	y = ((const MovedRows *) b)->fragment.old_id;

	return x < y ? -1 : x > y;
}

/* The offsets the live rows of a fragment with deletions take, in order. */
static bool
number_live_rows(MovedRows *rows, LpError *err)
{
	const LpMovedFragment *f = &rows->fragment;
	uint64_t	next = f->new_first_row;

	rows->new_offsets = lp_alloc_array((size_t) (f->physical_rows > 0 ? f->physical_rows : 1),
									   sizeof(uint32_t));
	if (rows->new_offsets == NULL)
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory mapping row addresses");
	for (uint64_t r = 0; r < f->physical_rows; r++)
		rows->new_offsets[r] = lp_deletions_contains(f->deleted, r) ? DROPPED : (uint32_t) next++;
	return true;
}

bool
lp_row_address_map_new(const LpMovedFragment *fragments, size_t n, LpRowAddressMap **out,
					   LpError *err)
{
	LpRowAddressMap *map = lp_alloc0(sizeof(LpRowAddressMap));

	*out = NULL;
	if (map == NULL || (map->moved = lp_alloc_array(n > 0 ? n : 1, sizeof(MovedRows))) == NULL)
	{
		lp_free(map);
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory mapping row addresses");
	}
	for (size_t i = 0; i < n; i++)
	{
		const LpMovedFragment *f = &fragments[i];
		MovedRows  *rows = &map->moved[map->n_moved];

		rows->fragment = *f;
		rows->new_offsets = NULL;
		map->n_moved++;
		if (f->old_id > UINT32_MAX || f->new_id > UINT32_MAX || f->physical_rows > UINT32_MAX ||
			f->new_first_row + f->physical_rows > (uint64_t) UINT32_MAX ||
			(f->deleted != NULL && f->deleted->num_rows != f->physical_rows))
		{
			lp_row_address_map_free(map);
			return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
						   "fragment %llu cannot be mapped to rows of fragment %llu from row %llu",
						   (unsigned long long) f->old_id, (unsigned long long) f->new_id,
						   (unsigned long long) f->new_first_row);
		}
		if (f->deleted != NULL && f->deleted->num_deleted > 0 && !number_live_rows(rows, err))
		{
			lp_row_address_map_free(map);
			return false;
		}
	}
	qsort(map->moved, map->n_moved, sizeof(MovedRows), compare_old_ids);
	for (size_t i = 1; i < map->n_moved; i++)
		if (map->moved[i].fragment.old_id == map->moved[i - 1].fragment.old_id)
		{
			uint64_t	id = map->moved[i].fragment.old_id;

			lp_row_address_map_free(map);
			return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
						   "fragment %llu is mapped twice", (unsigned long long) id);
		}
	*out = map;
	return true;
}

/*
 * The rows of fragment_id, or NULL.  Compaction rewrites runs of fragments
 * with consecutive ids, so the entry at the id's distance from the first one
 * is tried before the search: a search per row was a tenth of an index remap.
 */
static const MovedRows *
find_moved(const LpRowAddressMap *map, uint64_t fragment_id)
{
	size_t		low = 0;
	size_t		high = map->n_moved;

	if (high > 0 && fragment_id >= map->moved[0].fragment.old_id &&
		fragment_id - map->moved[0].fragment.old_id < high &&
		map->moved[fragment_id - map->moved[0].fragment.old_id].fragment.old_id == fragment_id)
		return &map->moved[fragment_id - map->moved[0].fragment.old_id];

	while (low < high)
	{
		size_t		mid = low + (high - low) / 2;
		uint64_t	id = map->moved[mid].fragment.old_id;

		if (id == fragment_id)
			return &map->moved[mid];
		if (id < fragment_id)
			low = mid + 1;
		else
			high = mid;
	}
	return NULL;
}

bool
lp_row_address_map_moves(const LpRowAddressMap *map, uint64_t fragment_id, uint64_t *physical_rows)
{
	const MovedRows *rows = find_moved(map, fragment_id);

	if (rows != NULL && physical_rows != NULL)
		*physical_rows = rows->fragment.physical_rows;
	return rows != NULL;
}

/* The new address of row of rows (NULL: a fragment not rewritten), or false when it was deleted. */
static bool
map_row(const MovedRows *rows, uint64_t fragment_id, uint64_t row, uint64_t *moved, bool *kept,
		LpError *err)
{
	uint64_t	offset;

	*kept = true;
	*moved = fragment_id << 32 | row;
	if (rows == NULL)
		return true;
	if (row >= rows->fragment.physical_rows)
		return lp_fail(err, LP_ERR_CORRUPT,
					   "row address %llu names row %llu of fragment %llu, which has %llu rows",
					   (unsigned long long) *moved, (unsigned long long) row,
					   (unsigned long long) rows->fragment.old_id,
					   (unsigned long long) rows->fragment.physical_rows);
	if (rows->new_offsets != NULL)
	{
		if (rows->new_offsets[row] == DROPPED)
		{
			*kept = false;
			return true;
		}
		offset = rows->new_offsets[row];
	}
	else
		offset = rows->fragment.new_first_row + row;
	*moved = rows->fragment.new_id << 32 | offset;
	return true;
}

bool
lp_row_address_map_apply(const LpRowAddressMap *map, uint64_t old, uint64_t *moved, bool *kept,
						 LpError *err)
{
	return map_row(find_moved(map, old >> 32), old >> 32, old & UINT32_MAX, moved, kept, err);
}

bool
lp_row_address_map_apply_rows(const LpRowAddressMap *map, uint64_t fragment_id,
							  const uint32_t *rows, size_t n, uint64_t *moved, size_t *n_moved,
							  LpError *err)
{
	const MovedRows *found = find_moved(map, fragment_id);

	for (size_t i = 0; i < n; i++)
	{
		bool		kept;

		if (!map_row(found, fragment_id, rows[i], &moved[*n_moved], &kept, err))
			return false;
		*n_moved += kept;
	}
	return true;
}

void
lp_row_address_map_free(LpRowAddressMap *map)
{
	if (map == NULL)
		return;
	for (size_t i = 0; i < map->n_moved; i++)
		lp_free(map->moved[i].new_offsets);
	lp_free(map->moved);
	lp_free(map);
}
