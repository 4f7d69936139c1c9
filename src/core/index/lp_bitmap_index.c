/*
 * lp_bitmap_index.c - reading Lance's BITMAP scalar index files and
 * searching them for ranges of values (lp_bitmap_index.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/lp_alloc.h"
#include "base/lp_bytes.h"
#include "base/lp_checked.h"
#include "base/lp_interrupt.h"
#include "format/lp_roaring.h"
#include "format/lp_values.h"
#include "index/lp_bitmap_index.h"

struct LpBitmapIndex
{
	LpInput    *input;
	LpFile	   *file;
	uint32_t	keys_field;
	uint32_t	bitmaps_field;
	LpType	   *keys_type;
	LpArray    *keys;
	bool		comparable;		/* whether value_type is set */
	LpIndexValueType value_type;
	LpFieldReader *bitmaps_reader;	/* opened by the first search */
	uint64_t	bitmaps_read;
};

bool
lp_row_id_tree_entries(const uint8_t *data, size_t len, const char *file,
					   LpRowIdTreeEntry **entries, uint32_t *num_entries, LpError *err)
{
	uint32_t	n;
	size_t		at = 4;

	*entries = NULL;
	*num_entries = 0;
	if (len < 4)
		return lp_fail(err, LP_ERR_CORRUPT, "BITMAP index file \"%s\" has a bitmap of %zu bytes", file, len);
	n = lp_le32(data);
	if (n > (len - 4) / 8)
		return lp_fail(err, LP_ERR_CORRUPT, "BITMAP index file \"%s\" has a bitmap of %u entries in %zu bytes",
					   file, n, len);
	if (n == 0)
		return true;
	*entries = lp_alloc_array(n, sizeof(LpRowIdTreeEntry));
	if (*entries == NULL)
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory reading BITMAP index file \"%s\"", file);
	for (uint32_t e = 0; e < n; e++)
	{
		LpRowIdTreeEntry *entry = &(*entries)[e];

		if (len - at < 8)
		{
			lp_fail(err, LP_ERR_CORRUPT, "BITMAP index file \"%s\" has a bitmap cut short", file);
			goto fail;
		}
		entry->high = lp_le32(data + at);
		entry->size = lp_le32(data + at + 4);
		at += 8;
		if (entry->size > len - at)
		{
			lp_fail(err, LP_ERR_CORRUPT, "BITMAP index file \"%s\" has a bitmap entry of %u bytes past its end",
					file, entry->size);
			goto fail;
		}
		entry->bitmap = entry->size > 0 ? data + at : NULL;
		at += entry->size;
	}
	*num_entries = n;
	return true;

fail:
	lp_free(*entries);
	*entries = NULL;
	return false;
}

bool
lp_bitmap_index_open(LpInput *lookup, LpBitmapIndex **out, LpError *err)
{
	LpBitmapIndex *index = lp_alloc0(sizeof(LpBitmapIndex));
	int64_t		keys_field;
	int64_t		bitmaps_field;
	LpType	   *bitmaps_type = NULL;
	bool		binary;

	*out = NULL;
	if (index == NULL)
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
	index->input = lookup;
	index->file = lp_file_open(lookup, err);
	if (index->file == NULL)
		goto fail;
	keys_field = lp_index_file_field(index->file, "keys");
	bitmaps_field = lp_index_file_field(index->file, "bitmaps");
	if (keys_field < 0 || bitmaps_field < 0 || index->file->schema.num_fields != 2)
	{
		lp_fail(err, LP_ERR_CORRUPT, "BITMAP index file \"%s\" does not have the fields keys and bitmaps",
				index->file->name);
		goto fail;
	}
	index->keys_field = (uint32_t) keys_field;
	index->bitmaps_field = (uint32_t) bitmaps_field;
	if (!lp_type_from_field(index->file, index->bitmaps_field, &bitmaps_type, err))
		goto fail;
	binary = bitmaps_type->id == LP_TYPE_BINARY || bitmaps_type->id == LP_TYPE_LARGE_BINARY;
	lp_type_free(bitmaps_type);
	if (!binary)
	{
		lp_fail(err, LP_ERR_CORRUPT, "BITMAP index file \"%s\" has bitmaps that are not binary",
				index->file->name);
		goto fail;
	}
	if (!lp_decode_field(lookup, index->file, index->keys_field, &index->keys_type, &index->keys, err))
		goto fail;
	if (index->keys->length != index->file->num_rows)
	{
		lp_fail(err, LP_ERR_CORRUPT, "BITMAP index file \"%s\" decoded %llu keys, expected %llu",
				index->file->name, (unsigned long long) index->keys->length,
				(unsigned long long) index->file->num_rows);
		goto fail;
	}
	index->comparable = lp_index_value_type(index->keys_type, &index->value_type);
	*out = index;
	return true;

fail:
	lp_bitmap_index_close(index);
	return false;
}

const LpFile *
lp_bitmap_index_file(const LpBitmapIndex *index)
{
	return index->file;
}

const LpArray *
lp_bitmap_index_keys(const LpBitmapIndex *index)
{
	return index->keys;
}

uint32_t
lp_bitmap_index_keys_field(const LpBitmapIndex *index)
{
	return index->keys_field;
}

uint32_t
lp_bitmap_index_bitmaps_field(const LpBitmapIndex *index)
{
	return index->bitmaps_field;
}

bool
lp_bitmap_index_value_type(const LpBitmapIndex *index, LpIndexValueType *type)
{
	if (index->comparable)
		*type = index->value_type;
	return index->comparable;
}

uint64_t
lp_bitmap_index_bitmaps_read(const LpBitmapIndex *index)
{
	return index->bitmaps_read;
}

bool
lp_bitmap_index_bitmaps(LpBitmapIndex *index, LpType **type, LpArray **bitmaps, LpError *err)
{
	if (!lp_decode_field(index->input, index->file, index->bitmaps_field, type, bitmaps, err))
		return false;
	if ((*bitmaps)->length != index->file->num_rows)
	{
		lp_array_free(*bitmaps);
		lp_type_free(*type);
		*bitmaps = NULL;
		*type = NULL;
		return lp_fail(err, LP_ERR_CORRUPT, "BITMAP index file \"%s\" has unexpected bitmaps",
					   index->file->name);
	}
	index->bitmaps_read += index->file->num_rows;
	return true;
}

static int
compare_u64(const void *a, const void *b)
{
	uint64_t	x = *(const uint64_t *) a;
	uint64_t	y = *(const uint64_t *) b;

	return x < y ? -1 : x > y;
}

static int
compare_u32(const void *a, const void *b)
{
	uint32_t	x = *(const uint32_t *) a;
	uint32_t	y = *(const uint32_t *) b;

	return x < y ? -1 : x > y;
}

/* What a search gathers: ids and whole fragments, in arrays that grow. */
typedef struct Found
{
	uint64_t   *ids;
	uint64_t	num_ids;
	uint64_t	ids_room;
	uint32_t   *whole;
	size_t		num_whole;
	size_t		whole_room;
	uint64_t	max_ids;
	bool		too_many;
} Found;

/* Room for more items in *items (of size bytes each), doubling; false when out of memory. */
static bool
reserve(void **items, uint64_t used, uint64_t more, uint64_t *room, size_t size)
{
	uint64_t	wanted = *room > 0 ? *room : 64;
	void	   *grown;

	if (used + more <= *room)
		return true;
	while (wanted < used + more)
		wanted *= 2;
	grown = lp_alloc_array((size_t) wanted, size);
	if (grown == NULL)
		return false;
	if (used > 0)
		memcpy(grown, *items, (size_t) used * size);
	lp_free(*items);
	*items = grown;
	*room = wanted;
	return true;
}

/* The rows of one serialized RowIdTreeMap added to found. */
static bool
add_bitmap(const LpBitmapIndex *index, const uint8_t *data, size_t len, Found *found,
		   LpError *err)
{
	LpRowIdTreeEntry *entries;
	uint32_t	n;
	bool		ok = true;

	if (!lp_row_id_tree_entries(data, len, index->file->name, &entries, &n, err))
		return false;
	for (uint32_t e = 0; ok && e < n && !found->too_many; e++)
	{
		uint32_t   *low;
		size_t		count;
		char		what[512];

		if (entries[e].bitmap == NULL)
		{
			uint64_t	room = found->whole_room;

			ok = reserve((void **) &found->whole, found->num_whole, 1, &room, sizeof(uint32_t)) ||
				lp_fail(err, LP_ERR_NO_MEMORY, "out of memory searching a BITMAP index");
			found->whole_room = (size_t) room;
			if (ok)
				found->whole[found->num_whole++] = entries[e].high;
			continue;
		}
		snprintf(what, sizeof(what), "the bitmap of fragment %u in BITMAP index file \"%s\"",
				 entries[e].high, index->file->name);
		if (!lp_roaring32_values(entries[e].bitmap, entries[e].size, what, &low, &count, err))
		{
			ok = false;
			break;
		}
		if (found->max_ids > 0 && found->num_ids + count > found->max_ids)
			found->too_many = true;
		else if (!reserve((void **) &found->ids, found->num_ids, count, &found->ids_room, sizeof(uint64_t)))
			ok = lp_fail(err, LP_ERR_NO_MEMORY, "out of memory searching a BITMAP index");
		else
			for (size_t i = 0; i < count; i++)
				found->ids[found->num_ids++] = (uint64_t) entries[e].high << 32 | low[i];
		lp_free(low);
	}
	lp_free(entries);
	return ok;
}

/* The rows of the file whose key lies in one of the ranges, ascending, into *rows. */
static bool
matching_keys(const LpBitmapIndex *index, const LpIndexRange *ranges, size_t num_ranges,
			  uint64_t **rows, uint64_t *num_rows, LpError *err)
{
	*num_rows = 0;
	*rows = lp_alloc_array(index->keys->length > 0 ? (size_t) index->keys->length : 1, sizeof(uint64_t));
	if (*rows == NULL)
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory searching a BITMAP index");
	for (uint64_t row = 0; row < index->keys->length; row++)
	{
		if (row % 4096 == 0 && lp_check_cancel(err))
			return false;
		/* the null key's rows satisfy no range */
		if (!lp_array_is_valid(index->keys, row))
			continue;
		for (size_t r = 0; r < num_ranges; r++)
			if (lp_index_value_in_range(&index->value_type, index->keys, row, &ranges[r]))
			{
				(*rows)[(*num_rows)++] = row;
				break;
			}
	}
	return true;
}

/* Sort and drop repeated values of items[0..*n), in place. */
static void
sort_unique_u64(uint64_t *items, uint64_t *n)
{
	uint64_t	kept = 0;

	if (*n > 1)
		qsort(items, (size_t) *n, sizeof(uint64_t), compare_u64);
	for (uint64_t i = 0; i < *n; i++)
		if (kept == 0 || items[kept - 1] != items[i])
			items[kept++] = items[i];
	*n = kept;
}

bool
lp_bitmap_index_search(LpBitmapIndex *index, const LpIndexRange *ranges, size_t num_ranges,
					   uint64_t max_ids, bool *too_many, uint64_t **row_ids,
					   uint64_t *num_row_ids, uint32_t **whole, size_t *num_whole, LpError *err)
{
	Found		found;
	uint64_t   *rows = NULL;
	uint64_t	num_rows;
	LpArray    *bitmaps = NULL;
	bool		ok = false;
	size_t		kept = 0;

	memset(&found, 0, sizeof(found));
	found.max_ids = max_ids;
	*row_ids = NULL;
	*num_row_ids = 0;
	*whole = NULL;
	*num_whole = 0;
	if (too_many != NULL)
		*too_many = false;
	if (!index->comparable)
		return lp_fail(err, LP_ERR_UNSUPPORTED, "BITMAP index \"%s\" on values of type %s is not supported",
					   index->file->name, lp_type_id_name(index->keys_type->id));
	if (!lp_index_ranges_of_kind(ranges, num_ranges, index->value_type.kind))
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT, "key of the wrong kind for BITMAP index \"%s\"",
					   index->file->name);
	if (!matching_keys(index, ranges, num_ranges, &rows, &num_rows, err))
		goto done;
	if (num_rows > 0)
	{
		if (index->bitmaps_reader == NULL &&
			!lp_field_reader_open(index->input, index->file, index->bitmaps_field,
								  &index->bitmaps_reader, err))
			goto done;
		if (!lp_field_reader_take(index->bitmaps_reader, rows, num_rows, &bitmaps, err))
			goto done;
		index->bitmaps_read += num_rows;
		if (bitmaps->length != num_rows)
		{
			lp_fail(err, LP_ERR_CORRUPT, "BITMAP index file \"%s\" decoded its bitmaps short",
					index->file->name);
			goto done;
		}
	}
	for (uint64_t i = 0; i < num_rows && !found.too_many; i++)
	{
		uint64_t	start = bitmaps->offsets[i];

		if (lp_check_cancel(err))
			goto done;
		if (!lp_array_is_valid(bitmaps, i))
		{
			lp_fail(err, LP_ERR_CORRUPT, "BITMAP index file \"%s\" has a null bitmap", index->file->name);
			goto done;
		}
		if (!add_bitmap(index, bitmaps->data != NULL ? bitmaps->data + start : NULL,
						(size_t) (bitmaps->offsets[i + 1] - start), &found, err))
			goto done;
	}
	ok = true;
	if (found.too_many)
	{
		if (too_many != NULL)
			*too_many = true;
		goto done;
	}
	sort_unique_u64(found.ids, &found.num_ids);
	if (found.num_whole > 1)
		qsort(found.whole, found.num_whole, sizeof(uint32_t), compare_u32);
	for (size_t i = 0; i < found.num_whole; i++)
		if (kept == 0 || found.whole[kept - 1] != found.whole[i])
			found.whole[kept++] = found.whole[i];
	*row_ids = found.ids;
	*num_row_ids = found.num_ids;
	*whole = found.whole;
	*num_whole = kept;
	found.ids = NULL;
	found.whole = NULL;

done:
	lp_array_free(bitmaps);
	lp_free(rows);
	lp_free(found.ids);
	lp_free(found.whole);
	return ok;
}

void
lp_bitmap_index_close(LpBitmapIndex *index)
{
	if (index == NULL)
		return;
	if (index->bitmaps_reader != NULL)
		lp_field_reader_close(index->bitmaps_reader);
	lp_array_free(index->keys);
	if (index->keys_type != NULL)
		lp_type_free(index->keys_type);
	lp_file_free(index->file);
	lp_free(index);
}
