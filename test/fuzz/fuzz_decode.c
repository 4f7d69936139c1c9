/*
 * fuzz_decode.c - libFuzzer target: a (damaged) Lance data file whose
 * metadata still parses has every top-level field decoded, whole and through
 * takes of a few row selections (first, last, a run across the middle,
 * sparse rows) that must each give as many rows as asked.  Seeds are small
 * real files of each version, so mutations land mostly in page buffers and
 * page encodings.  Allocations above 64 MiB are refused through the core's
 * allocation hook, so huge counts in damaged pages come back as errors.
 */
#include <stdint.h>
#include <stdlib.h>

#include "lp_fuzz.h"
#include "base/lp_alloc.h"
#include "decode/lp_decode.h"
#include "format/lp_file.h"

/* Takes of one field: each either fails cleanly or gives exactly the rows asked. */
static void
take_rows(LpInput *input, const LpFile *file, uint32_t field)
{
	uint64_t	rows[64];
	uint64_t	n = file->num_rows;
	LpFieldReader *reader;
	LpArray    *array;
	LpError		err;

	if (n == 0 || !lp_field_reader_open(input, file, field, &reader, &err))
		return;
	for (int selection = 0; selection < 4; selection++)
	{
		uint64_t	count = 0;

		if (selection == 0)
			rows[count++] = 0;
		else if (selection == 1)
			rows[count++] = n - 1;
		else if (selection == 2)
			for (uint64_t r = n / 2; r < n && count < 64; r++)
				rows[count++] = r;
		else
			for (uint64_t r = 1; r < n && count < 64; r += 1 + n / 64)
				rows[count++] = r;
		if (lp_field_reader_take(reader, rows, count, &array, &err))
		{
			if (array->length != count)
				abort();
			lp_array_free(array);
		}
	}
	lp_field_reader_close(reader);
}

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Takes of each top-level field; its whole decode has run already. */
static void
visit_field(LpInput *input, const LpFile *file, uint32_t field, const LpArray *whole, void *arg)
{
	(void) whole;
	(void) arg;
	take_rows(input, file, field);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	lp_fuzz_visit_fields(data, size, visit_field, NULL);
	return 0;
}
