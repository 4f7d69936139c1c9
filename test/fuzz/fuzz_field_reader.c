/*
 * fuzz_field_reader.c - libFuzzer target for the field reader as the
 * foreign-data wrapper's scan drives it (src/pg/fdw/lp_fdw_scan.c): every
 * top-level field of a (damaged) file read from first row to last in
 * consecutive batches, each batch's byte ranges asked for first (the
 * read-ahead, lp_field_reader_ranges) and then taken.  Every range lies
 * inside the file, every batch has the rows asked for, and where the
 * whole field also decodes in one piece (lp_decode_field) each batch's
 * rows equal the same rows of it (lp_round_trip_rows_equal, nulls at every
 * level), so a take that skips pages cannot give other values than a full
 * decode.  The batch size (1 to 300 rows) follows from the input's size,
 * so mutations of the file keep their meaning.  Seeds: the files of
 * fuzz_decode and reference data files (bench/fuzz.sh).
 */
#include <stdint.h>
#include <stdlib.h>

#include "lp_encode_round_trip.h"
#include "lp_fuzz.h"
#include "decode/lp_decode.h"
#include "format/lp_file.h"

#define MAX_BATCH 300

/* Read field f by batches; compare with whole (NULL when it did not decode). */
static void
scan_field(LpInput *input, const LpFile *file, uint32_t f, uint64_t batch, const LpArray *whole)
{
	uint64_t	rows[MAX_BATCH];
	LpFieldReader *reader;
	LpError		err;

	if (!lp_field_reader_open(input, file, f, &reader, &err))
		return;
	for (uint64_t first = 0; first < file->num_rows; first += batch)
	{
		uint64_t	n = file->num_rows - first < batch ? file->num_rows - first : batch;
		LpByteRange *ranges;
		size_t		num_ranges;
		LpArray    *array;

		for (uint64_t r = 0; r < n; r++)
			rows[r] = first + r;
		if (lp_field_reader_ranges(reader, rows, n, &ranges, &num_ranges, &err))
		{
			for (size_t i = 0; i < num_ranges; i++)
				if (ranges[i].offset > input->size || ranges[i].len > input->size - ranges[i].offset)
					abort();
			lp_free(ranges);
		}
		if (!lp_field_reader_take(reader, rows, n, &array, &err))
			break;
		if (array->length != n)
			abort();
		for (uint64_t r = 0; whole != NULL && r < n; r++)
			if (!lp_round_trip_rows_equal(whole->type, whole, first + r, array, r))
				abort();
		lp_array_free(array);
	}
	lp_field_reader_close(reader);
}

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
visit_field(LpInput *input, const LpFile *file, uint32_t field, const LpArray *whole, void *arg)
{
	scan_field(input, file, field, *(const uint64_t *) arg, whole);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t	batch = 1 + size % MAX_BATCH;

	lp_fuzz_visit_fields(data, size, visit_field, &batch);
	return 0;
}
