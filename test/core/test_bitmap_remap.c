/*
 * test_bitmap_remap.c - a BITMAP index file (as Lance writes one: keys and
 * serialized RowIdTreeMaps) remapped for a compaction: rows of moved
 * fragments get their new addresses, deleted ones drop, whole-fragment
 * entries of moved fragments are expanded, entries of other fragments stay
 * byte for byte; damaged bitmaps fail with LP_ERR_CORRUPT.
 */
#include <stdlib.h>
#include <string.h>

#include "lp_test.h"

#include "base/lp_alloc.h"
#include "base/lp_bytes.h"
#include "decode/lp_decode.h"
#include "encode/lp_file_writer.h"
#include "format/lp_roaring.h"
#include "index/lp_bitmap_remap.h"

/* A serialized RowIdTreeMap being built. */
typedef struct TreeMap
{
	uint8_t		bytes[512];
	size_t		len;
} TreeMap;

static void
tree_begin(TreeMap *map, uint32_t entries)
{
	lp_put_le32(map->bytes, entries);
	map->len = 4;
}

/* An entry of fragment: its offsets, or every row when n is 0. */
static void
tree_entry(TreeMap *map, uint32_t fragment, const uint32_t *offsets, size_t n)
{
	uint8_t    *bitmap = NULL;
	size_t		len = 0;
	LpError		err;

	if (n > 0)
		LP_CHECK(lp_roaring32_serialize(offsets, n, &bitmap, &len, &err));
	lp_put_le32(map->bytes + map->len, fragment);
	lp_put_le32(map->bytes + map->len + 4, (uint32_t) len);
	if (len > 0)
		memcpy(map->bytes + map->len + 8, bitmap, len);
	map->len += 8 + len;
	lp_free(bitmap);
}

/* The index file of keys[0..n) (a null key where key_valid is false) and their bitmaps. */
static const uint8_t *
write_index(LpOutput *output, const int32_t *keys, const bool *key_valid, const TreeMap *maps,
			size_t n, uint64_t *len)
{
	LpField		fields[2] = {
		{0, -1, "keys", "int32", true, 1, NULL, false, 0, NULL},
		{1, -1, "bitmaps", "binary", true, 2, NULL, false, 0, NULL},
	};
	LpSchema	schema = {2, fields, 0, NULL};
	LpType	   *key_type = NULL;
	LpType	   *bitmap_type = NULL;
	LpArray    *key_array;
	LpArray    *bitmap_array;
	const LpArray *batch[2];
	LpFileWriter *writer;
	uint64_t	size;
	size_t		total = 0;
	LpError		err = {0};

	LP_CHECK(lp_type_parse("int32", "bitmap.lance", "keys", &key_type, &err));
	LP_CHECK(lp_type_parse("binary", "bitmap.lance", "bitmaps", &bitmap_type, &err));
	key_array = lp_array_new(key_type);
	bitmap_array = lp_array_new(bitmap_type);
	key_array->length = bitmap_array->length = n;
	key_array->values = lp_alloc(n * sizeof(int32_t));
	memcpy(key_array->values, keys, n * sizeof(int32_t));
	key_array->validity = lp_alloc0(1);
	for (size_t i = 0; i < n; i++)
	{
		lp_bit_set(key_array->validity, i, key_valid[i]);
		key_array->null_count += !key_valid[i];
		total += maps[i].len;
	}
	bitmap_array->offsets = lp_alloc((n + 1) * sizeof(uint64_t));
	bitmap_array->data = lp_alloc(total);
	bitmap_array->data_len = total;
	bitmap_array->offsets[0] = 0;
	for (size_t i = 0; i < n; i++)
	{
		memcpy(bitmap_array->data + bitmap_array->offsets[i], maps[i].bytes, maps[i].len);
		bitmap_array->offsets[i + 1] = bitmap_array->offsets[i] + maps[i].len;
	}
	batch[0] = key_array;
	batch[1] = bitmap_array;
	writer = lp_file_writer_open(output, &schema, LP_FILE_VERSION_2_1, &err);
	LP_CHECK_MSG(writer != NULL && lp_file_writer_write(writer, batch, 2, &err) &&
				 lp_file_writer_finish(writer, &size, &err), "%.300s", err.message);
	lp_file_writer_free(writer);
	lp_array_free(key_array);
	lp_array_free(bitmap_array);
	lp_type_free(key_type);
	lp_type_free(bitmap_type);
	return lp_memory_output_data(output, len);
}

/* The bitmaps column of the index file data[0..len). */
static LpArray *
read_bitmaps(const uint8_t *data, uint64_t len, LpType **type)
{
	LpInput    *input = lp_memory_input_open("remapped.lance", data, len);
	LpError		err = {0};
	LpFile	   *file = lp_file_open(input, &err);
	LpArray    *bitmaps = NULL;

	LP_CHECK_MSG(file != NULL, "%.300s", err.message);
	if (file != NULL)
		LP_CHECK_MSG(lp_decode_field(input, file, 1, type, &bitmaps, &err), "%.300s", err.message);
	lp_file_free(file);
	lp_input_close(input);
	return bitmaps;
}

static bool
same_bitmap(const LpArray *bitmaps, uint64_t row, const TreeMap *expected)
{
	uint64_t	start = bitmaps->offsets[row];

	return bitmaps->offsets[row + 1] - start == expected->len &&
		memcmp(bitmaps->data + start, expected->bytes, expected->len) == 0;
}

LP_TEST(bitmap_index_remap_moves_rows)
{
	static const uint32_t evens[3] = {0, 2, 4};
	static const uint32_t odd_rows[2] = {1, 3};
	static const uint32_t row_one[1] = {1};
	static const uint32_t moved_evens[3] = {0, 2, 4};
	static const uint32_t moved_row_three[1] = {7};
	int32_t		keys[3] = {1, 2, 0};
	bool		key_valid[3] = {true, true, false};
	TreeMap		maps[3];
	TreeMap		expected[3];
	uint8_t		deleted_bits[1] = {0x02};	/* row 1 of fragment 4 */
	LpDeletions deleted = {4, 1, deleted_bits};
	LpMovedFragment moved[2] = {{3, 5, NULL, 10, 0}, {4, 4, &deleted, 10, 5}};
	LpRowAddressMap *map = NULL;
	LpOutput   *in = lp_memory_output_open("bitmap.lance");
	LpOutput   *out = lp_memory_output_open("remapped.lance");
	const uint8_t *data;
	uint64_t	len;
	LpInput    *input;
	LpError		err = {0};

	/* key 1: rows 0, 2, 4 of fragment 3 and all of fragment 7; key 2: rows 1, 3 of fragment 4; NULL: row 1 of 3 */
	tree_begin(&maps[0], 2);
	tree_entry(&maps[0], 3, evens, 3);
	tree_entry(&maps[0], 7, NULL, 0);
	tree_begin(&maps[1], 1);
	tree_entry(&maps[1], 4, odd_rows, 2);
	tree_begin(&maps[2], 1);
	tree_entry(&maps[2], 3, row_one, 1);
	/* fragment 7 stays first; 3 and 4 become fragment 10, row 1 of 4 deleted, its row 3 at 5 + 2 */
	tree_begin(&expected[0], 2);
	tree_entry(&expected[0], 7, NULL, 0);
	tree_entry(&expected[0], 10, moved_evens, 3);
	tree_begin(&expected[1], 1);
	tree_entry(&expected[1], 10, moved_row_three, 1);
	tree_begin(&expected[2], 1);
	tree_entry(&expected[2], 10, row_one, 1);

	LP_CHECK(lp_row_address_map_new(moved, 2, &map, &err));
	data = write_index(in, keys, key_valid, maps, 3, &len);
	input = lp_memory_input_open("bitmap.lance", data, len);
	LP_CHECK_MSG(lp_bitmap_index_remap(input, map, out, &err), "%.300s", err.message);
	lp_input_close(input);
	{
		LpType	   *type = NULL;
		const uint8_t *remapped_data = lp_memory_output_data(out, &len);
		LpArray    *bitmaps = read_bitmaps(remapped_data, len, &type);

		LP_CHECK(bitmaps != NULL && bitmaps->length == 3);
		for (uint64_t row = 0; bitmaps != NULL && row < 3; row++)
			LP_CHECK_MSG(same_bitmap(bitmaps, row, &expected[row]), "bitmap of row %llu",
						 (unsigned long long) row);
		lp_array_free(bitmaps);
		if (type != NULL)
			lp_type_free(type);
	}
	lp_row_address_map_free(map);
	in->ops->abort(in);
	out->ops->abort(out);
}

LP_TEST(bitmap_index_remap_refuses_damaged_bitmaps)
{
	static const uint32_t past_rows[1] = {5};
	int32_t		keys[1] = {1};
	bool		key_valid[1] = {true};
	LpMovedFragment moved[1] = {{3, 5, NULL, 10, 0}};
	LpRowAddressMap *map = NULL;
	LpError		err = {0};
	TreeMap		damaged[3];

	LP_CHECK(lp_row_address_map_new(moved, 1, &map, &err));
	/* more entries than bytes; an entry past the end; a row fragment 3 does not have */
	tree_begin(&damaged[0], 1000);
	tree_begin(&damaged[1], 1);
	tree_entry(&damaged[1], 3, past_rows, 1);
	damaged[1].len -= 2;
	tree_begin(&damaged[2], 1);
	tree_entry(&damaged[2], 3, past_rows, 1);
	for (int d = 0; d < 3; d++)
	{
		LpOutput   *in = lp_memory_output_open("bitmap.lance");
		LpOutput   *out = lp_memory_output_open("remapped.lance");
		uint64_t	len;
		const uint8_t *data = write_index(in, keys, key_valid, &damaged[d], 1, &len);
		LpInput    *input = lp_memory_input_open("bitmap.lance", data, len);

		LP_CHECK_MSG(!lp_bitmap_index_remap(input, map, out, &err) && err.code == LP_ERR_CORRUPT,
					 "damaged bitmap %d", d);
		LP_CHECK_MSG(d != 2 || strstr(err.message, "holds 5, beyond its 5 rows") != NULL,
					 "the row past the fragment: %.300s", err.message);
		lp_input_close(input);
		in->ops->abort(in);
		out->ops->abort(out);
	}
	lp_row_address_map_free(map);
}
