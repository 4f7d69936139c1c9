/*
 * lp_bitmap_remap.c - rewriting a BITMAP index for moved rows
 * (lp_bitmap_remap.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/lp_alloc.h"
#include "base/lp_bytes.h"
#include "base/lp_checked.h"
#include "base/lp_interrupt.h"
#include "decode/lp_decode.h"
#include "encode/lp_file_writer.h"
#include "format/lp_file.h"
#include "format/lp_roaring.h"
#include "index/lp_bitmap_index.h"
#include "index/lp_bitmap_remap.h"

/* The bytes of the new bitmaps column, growing. */
typedef struct Bitmaps
{
	uint8_t    *data;
	size_t		len;
	size_t		capacity;
} Bitmaps;

static bool
append(Bitmaps *out, const void *bytes, size_t len, LpError *err)
{
	if (out->len + len > out->capacity)
	{
		size_t		capacity = out->capacity ? out->capacity : 4096;
		uint8_t    *data;

		while (capacity < out->len + len)
			capacity *= 2;
		data = lp_alloc(capacity);
		if (data == NULL)
			return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory remapping a BITMAP index");
		if (out->len > 0)
			memcpy(data, out->data, out->len);
		lp_free(out->data);
		out->data = data;
		out->capacity = capacity;
	}
	if (len > 0)
		memcpy(out->data + out->len, bytes, len);
	out->len += len;
	return true;
}

static bool
append_u32(Bitmaps *out, uint32_t value, LpError *err)
{
	uint8_t		bytes[4];

	lp_put_le32(bytes, value);
	return append(out, bytes, 4, err);
}

static int
compare_u64(const void *a, const void *b)
{
	uint64_t	x = *(const uint64_t *) a;
	uint64_t	y = *(const uint64_t *) b;

	return x < y ? -1 : x > y;
}

static bool
ascending(const uint64_t *values, size_t n)
{
	for (size_t i = 1; i < n; i++)
		if (values[i - 1] > values[i])
			return false;
	return true;
}

/*
 * The new addresses of a moved entry's rows, appended to *moved: its
 * members listed and mapped, not set in a bitmap of the fragment's rows and
 * searched for again (a BITMAP index of many values has few members per
 * entry).
 */
static bool
map_entry(const LpRowIdTreeEntry *entry, uint64_t rows, const LpRowAddressMap *map, const char *file,
		  uint64_t *moved, size_t *n_moved, LpError *err)
{
	uint32_t   *members = NULL;
	size_t		count = 0;
	bool		ok = true;

	if (entry->bitmap == NULL)
	{
		/* the whole fragment */
		members = lp_alloc_array_unzeroed((size_t) (rows > 0 ? rows : 1), sizeof(uint32_t));
		if (members == NULL)
			return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory remapping a BITMAP index");
		for (uint64_t r = 0; r < rows; r++)
			members[r] = (uint32_t) r;
		count = (size_t) rows;
	}
	else
	{
		char		what[512];

		snprintf(what, sizeof(what), "the bitmap of fragment %u in BITMAP index file \"%s\"",
				 entry->high, file);
		ok = lp_roaring32_values(entry->bitmap, entry->size, what, &members, &count, err);
		/* ascending: the last member is the largest */
		if (ok && count > 0 && members[count - 1] >= rows)
			ok = lp_fail(err, LP_ERR_CORRUPT, "%s holds %u, beyond its %llu rows", what,
						 members[count - 1], (unsigned long long) rows);
	}
	ok = ok && lp_row_address_map_apply_rows(map, entry->high, members, count, moved, n_moved, err);
	lp_free(members);
	return ok;
}

/* Write the entries of moved[0..n) (sorted), one per new fragment. */
static bool
append_moved(Bitmaps *out, const uint64_t *moved, size_t n, LpError *err)
{
	for (size_t start = 0; start < n;)
	{
		uint32_t	fragment = (uint32_t) (moved[start] >> 32);
		size_t		end = start;
		uint32_t   *offsets;
		uint8_t    *bytes = NULL;
		size_t		len = 0;
		bool		ok;

		while (end < n && (moved[end] >> 32) == fragment)
			end++;
		offsets = lp_alloc_array(end - start, sizeof(uint32_t));
		if (offsets == NULL)
			return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory remapping a BITMAP index");
		for (size_t i = start; i < end; i++)
			offsets[i - start] = (uint32_t) moved[i];
		ok = lp_roaring32_serialize(offsets, end - start, &bytes, &len, err) &&
			len <= UINT32_MAX && append_u32(out, fragment, err) &&
			append_u32(out, (uint32_t) len, err) && append(out, bytes, len, err);
		lp_free(offsets);
		lp_free(bytes);
		if (!ok)
			return false;
		start = end;
	}
	return true;
}

/*
 * Append the remapped form of one serialized RowIdTreeMap to out: the
 * entries of fragments that stay, then one per new fragment (whose ids
 * follow every old one), every size and count checked against its bytes.
 */
static bool
remap_bitmap(const uint8_t *data, size_t len, const LpRowAddressMap *map, const char *file,
			 Bitmaps *out, LpError *err)
{
	uint32_t	n_entries;
	size_t		count_at = out->len;
	uint32_t	n_out = 0;
	uint64_t	moved_rows = 0;
	uint64_t   *moved = NULL;
	size_t		n_moved = 0;
	LpRowIdTreeEntry *entries;
	bool		ok = true;

	if (!lp_row_id_tree_entries(data, len, file, &entries, &n_entries, err))
		return false;
	for (uint32_t e = 0; ok && e < n_entries; e++)
	{
		uint64_t	rows;

		if (lp_row_address_map_moves(map, entries[e].high, &rows))
			ok = lp_add_u64(moved_rows, rows, &moved_rows);
	}
	/* room for every row of the moved fragments; only the members are written */
	if (ok && moved_rows > 0 &&
		(moved = lp_alloc_array_unzeroed((size_t) moved_rows, sizeof(uint64_t))) == NULL)
		ok = lp_fail(err, LP_ERR_NO_MEMORY, "out of memory remapping a BITMAP index");
	/* the count first, filled in below; the entries of fragments that stay, as they are */
	ok = ok && append_u32(out, 0, err);
	for (uint32_t e = 0; ok && e < n_entries; e++)
	{
		uint64_t	rows;

		if (lp_row_address_map_moves(map, entries[e].high, &rows))
			ok = map_entry(&entries[e], rows, map, file, moved, &n_moved, err);
		else
		{
			ok = append_u32(out, entries[e].high, err) && append_u32(out, entries[e].size, err) &&
				append(out, entries[e].bitmap, entries[e].size, err);
			n_out++;
		}
	}
	/* already ascending when the fragments' ids follow their order in the dataset */
	if (ok && n_moved > 1 && !ascending(moved, n_moved))
		qsort(moved, n_moved, sizeof(uint64_t), compare_u64);
	ok = ok && append_moved(out, moved, n_moved, err);
	/* one entry per new fragment */
	for (size_t i = 0; ok && i < n_moved; i++)
		n_out += i == 0 || (moved[i] >> 32) != (moved[i - 1] >> 32);
	if (ok)
		lp_put_le32(out->data + count_at, n_out);
	lp_free(moved);
	lp_free(entries);
	return ok;
}

/* The new bitmaps column: the remapped bitmap of every row. */
static bool
remap_bitmaps(const LpArray *bitmaps, const LpRowAddressMap *map, const char *file,
			  LpArray *out, LpError *err)
{
	Bitmaps		bytes = {NULL, 0, 0};

	out->offsets = lp_alloc_array((size_t) bitmaps->length + 1, sizeof(uint64_t));
	if (out->offsets == NULL)
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory remapping a BITMAP index");
	out->offsets[0] = 0;
	for (uint64_t row = 0; row < bitmaps->length; row++)
	{
		uint64_t	start = bitmaps->offsets[row];

		if (lp_check_cancel(err))
			goto fail;
		if (!lp_array_is_valid(bitmaps, row))
		{
			lp_fail(err, LP_ERR_CORRUPT, "BITMAP index file \"%s\" has a null bitmap", file);
			goto fail;
		}
		if (!remap_bitmap(bitmaps->data != NULL ? bitmaps->data + start : NULL,
						  (size_t) (bitmaps->offsets[row + 1] - start), map, file, &bytes, err))
			goto fail;
		out->offsets[row + 1] = bytes.len;
	}
	out->data = bytes.data;
	out->data_len = bytes.len;
	out->length = bitmaps->length;
	return true;

fail:
	lp_free(bytes.data);
	return false;
}

bool
lp_bitmap_index_remap(LpInput *lookup, const LpRowAddressMap *map, LpOutput *out, LpError *err)
{
	LpBitmapIndex *index;
	const LpFile *file;
	LpType	   *bitmaps_type = NULL;
	LpArray    *bitmaps = NULL;
	LpArray    *remapped = NULL;
	LpFileWriter *writer = NULL;
	const LpArray *batch[2];
	uint64_t	size;
	bool		ok = false;

	if (!lp_bitmap_index_open(lookup, &index, err))
		return false;
	file = lp_bitmap_index_file(index);
	if (!lp_bitmap_index_bitmaps(index, &bitmaps_type, &bitmaps, err))
		goto done;
	remapped = lp_array_new(bitmaps_type);
	if (remapped == NULL)
	{
		lp_fail(err, LP_ERR_NO_MEMORY, "out of memory remapping a BITMAP index");
		goto done;
	}
	if (!remap_bitmaps(bitmaps, map, file->name, remapped, err))
		goto done;
	batch[lp_bitmap_index_keys_field(index)] = lp_bitmap_index_keys(index);
	batch[lp_bitmap_index_bitmaps_field(index)] = remapped;
	writer = lp_file_writer_open(out, &file->schema, file->version, err);
	if (writer == NULL ||
		(file->num_rows > 0 && !lp_file_writer_write(writer, batch, 2, err)) ||
		!lp_file_writer_finish(writer, &size, err))
		goto done;
	ok = true;

done:
	lp_file_writer_free(writer);
	lp_array_free(remapped);
	lp_array_free(bitmaps);
	if (bitmaps_type != NULL)
		lp_type_free(bitmaps_type);
	lp_bitmap_index_close(index);
	return ok;
}
