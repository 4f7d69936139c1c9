/*
 * fuzz_deletion.c - libFuzzer target for deletion files (_deletions/<name>.arrow,
 * an Arrow IPC file of deleted row offsets, and <name>.bin, a Roaring bitmap of
 * them), read as a scan reads a fragment's (lp_deletions_read).  The first
 * input byte picks the form (bit 0), the next three the fragment's physical
 * row count (below 2^17: two Roaring keys, and each run stays quick); the
 * rest is the file.  A file read has every deleted offset below the row
 * count and num_deleted equal to the bits set; for a bitmap, membership (lp_roaring32_contains, as the index
 * coverage check asks it) agrees with the expansion at the first rows, the
 * last one and the first deleted rows.  Seeds: the deletion files of the
 * reference datasets (bench/fuzz.sh) and a few in
 * test/fuzz/corpus/fuzz_deletion.
 */
#include <stdint.h>
#include <stdlib.h>

#include "lp_fuzz.h"
#include "format/lp_deletion.h"
#include "format/lp_roaring.h"
#include "io/lp_storage.h"

#define HEADER_BYTES 4

/* Whether the bitmap's membership of row agrees with the expansion. */
static void
check_member(const uint8_t *file, size_t len, const LpDeletions *deletions, uint64_t row)
{
	bool		contains;
	LpError		err;

	if (!lp_roaring32_contains(file, len, (uint32_t) row, &contains, &err))
		abort();
	if (contains != lp_deletions_contains(deletions, row))
		abort();
}

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	LpDeletionForm form;
	uint64_t	num_rows;
	uint64_t	counted = 0;
	LpDeletions deletions;
	LpInput    *input;
	LpError		err;
	bool		ok;

	if (size < HEADER_BYTES)
		return 0;
	lp_fuzz_use_bounded_allocator();
	form = data[0] & 1 ? LP_DELETION_BITMAP : LP_DELETION_ARROW;
	num_rows = data[1] | ((uint64_t) data[2] << 8) | ((uint64_t) (data[3] & 0x01) << 16);
	input = lp_memory_input_open("_deletions/0-1-2.bin", data + HEADER_BYTES, size - HEADER_BYTES);
	if (input == NULL)
		return 0;
	ok = lp_deletions_read(input, form, num_rows, &deletions, &err);
	lp_input_close(input);
	if (!ok)
	{
		if (err.code != LP_ERR_CORRUPT && err.code != LP_ERR_NO_MEMORY && err.code != LP_ERR_UNSUPPORTED)
			abort();
		return 0;
	}
	if (deletions.num_rows != num_rows)
		abort();
	/* no bit beyond the rows: the last byte's spare bits and the extra byte are clear */
	for (uint64_t byte = num_rows / 8; byte <= (num_rows + 7) / 8; byte++)
		if (deletions.deleted[byte] >> (byte == num_rows / 8 ? num_rows % 8 : 0) != 0)
			abort();
	for (uint64_t byte = 0; byte < (num_rows + 7) / 8; byte++)
		counted += (uint64_t) __builtin_popcount(deletions.deleted[byte]);
	if (counted != deletions.num_deleted)
		abort();
	if (form == LP_DELETION_BITMAP)
	{
		for (uint64_t row = 0; row < num_rows && row < 64; row++)
			check_member(data + HEADER_BYTES, size - HEADER_BYTES, &deletions, row);
		if (num_rows > 0)
			check_member(data + HEADER_BYTES, size - HEADER_BYTES, &deletions, num_rows - 1);
		for (uint64_t row = 0, checked = 0; row < num_rows && checked < 256; row++)
			if (deletions.deleted[row >> 3] == 0)
				row |= 7;		/* the next byte */
			else if (lp_deletions_contains(&deletions, row))
			{
				check_member(data + HEADER_BYTES, size - HEADER_BYTES, &deletions, row);
				checked++;
			}
	}
	lp_deletions_free(&deletions);
	return 0;
}
