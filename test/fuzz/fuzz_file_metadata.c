/*
 * fuzz_file_metadata.c - libFuzzer target for the Lance file metadata
 * reader: the input bytes are a whole file, read through the core's
 * allocation hook (lp_fuzz.h).  Its footer can only point inside the
 * input; fuzz_footer fuzzes footers of files of any size.
 *
 * Run with "make fuzz FUZZ_SECONDS=N"; the seed corpus is
 * test/fuzz/corpus/fuzz_file_metadata (real files of every version and a
 * few hand-made edge cases).
 */
#include <stddef.h>
#include <stdint.h>

#include "lp_fuzz.h"
#include "format/lp_file.h"

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	LpInput    *input;
	LpError		err;
	LpFile	   *file;

	lp_fuzz_use_bounded_allocator();
	input = lp_memory_input_open("fuzz input", data, size);
	if (input == NULL)
		return 0;
	file = lp_file_open(input, &err);
	lp_file_free(file);
	lp_input_close(input);
	return 0;
}
