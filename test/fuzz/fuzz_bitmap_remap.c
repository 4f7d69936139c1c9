/*
 * fuzz_bitmap_remap.c - libFuzzer target for BITMAP index files
 * (lp_bitmap_remap.h) as compaction remaps them.  Input: the bytes of a
 * bitmap_page_lookup.lance.  It is remapped with fragment 0 (300 rows,
 * every third deleted) moved to fragment 2; when that succeeds, the new
 * file opens and both its columns decode, with as many rows as the input.
 * Seed: an index lancedb wrote over two fragments of 300 rows with deleted
 * rows and null keys (test/fuzz/corpus/fuzz_bitmap_remap).
 */
#include <stdint.h>
#include <stdlib.h>

#include "lp_fuzz.h"
#include "decode/lp_decode.h"
#include "format/lp_file.h"
#include "index/lp_bitmap_remap.h"
#include "io/lp_storage.h"

#define MOVED_ROWS 300

/* The remapped file opens and its two columns decode whole. */
static void
check_output(LpOutput *out, uint64_t rows)
{
	uint64_t	len;
	const uint8_t *data = lp_memory_output_data(out, &len);
	LpInput    *input = lp_memory_input_open("remapped.lance", data, len);
	LpFile	   *file;
	LpError		err;

	if (input == NULL)
		return;
	file = lp_file_open(input, &err);
	if (file == NULL && err.code != LP_ERR_NO_MEMORY)
		abort();
	if (file != NULL && file->num_rows != rows)
		abort();
	for (uint32_t f = 0; file != NULL && f < file->schema.num_fields; f++)
	{
		LpType	   *type = NULL;
		LpArray    *array = NULL;

		if (lp_decode_field(input, file, f, &type, &array, &err))
		{
			lp_array_free(array);
			lp_type_free(type);
		}
		else if (err.code != LP_ERR_NO_MEMORY)
			abort();
	}
	lp_file_free(file);
	lp_input_close(input);
}

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t		deleted_bits[MOVED_ROWS / 8 + 1] = {0};
	LpDeletions deleted = {MOVED_ROWS, 0, deleted_bits};
	LpMovedFragment moved = {0, MOVED_ROWS, &deleted, 2, 0};
	LpRowAddressMap *map = NULL;
	LpInput    *lookup;
	LpOutput   *out;
	LpFile	   *file;
	LpError		err;

	for (uint32_t r = 0; r < MOVED_ROWS; r += 3)
	{
		deleted_bits[r / 8] |= (uint8_t) (1u << (r % 8));
		deleted.num_deleted++;
	}
	lp_fuzz_use_bounded_allocator();
	lookup = lp_memory_input_open("bitmap_page_lookup.lance", data, size);
	out = lp_memory_output_open("remapped.lance");
	if (lookup != NULL && out != NULL && lp_row_address_map_new(&moved, 1, &map, &err) &&
		lp_bitmap_index_remap(lookup, map, out, &err))
	{
		/* the input opened in the remap: its row count is what the output must have */
		file = lp_file_open(lookup, &err);
		if (file != NULL)
		{
			check_output(out, file->num_rows);
			lp_file_free(file);
		}
	}
	lp_row_address_map_free(map);
	if (out != NULL)
		out->ops->abort(out);
	if (lookup != NULL)
		lp_input_close(lookup);
	return 0;
}
