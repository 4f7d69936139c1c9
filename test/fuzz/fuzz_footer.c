/*
 * fuzz_footer.c - libFuzzer target for the footer and the offset tables of
 * a Lance file, apart from the rest of its metadata (fuzz_file_metadata
 * mutates whole small files, whose footers can only point inside them).
 * The first 8 input bytes are the size of a virtual file, at least the
 * rest of the input and at most 2^48 bytes; the rest of the input is that
 * file's last bytes (the tail: column metadata, the offset tables, the
 * footer) and everything before it reads as zeros.  So the footer's
 * offsets and counts may point anywhere below 2^48, as a damaged file of
 * that size could, without the fuzzer holding such a file.  Whenever the
 * file opens, every region it records lies inside it in the order the
 * footer promises; reading any of them is the decoders' business.  Seeds
 * are the tails of real files of every version.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lp_fuzz.h"
#include "format/lp_file.h"
#include "io/lp_storage.h"

#define VIRTUAL_SIZE_MAX ((uint64_t) 1 << 48)

typedef struct VirtualInput
{
	LpInput		base;
	const uint8_t *tail;
	uint64_t	tail_len;
} VirtualInput;

static bool
virtual_read_at(LpInput *input, uint64_t offset, void *buffer, size_t len, LpError *err)
{
	VirtualInput *virtual = (VirtualInput *) input;
	uint64_t	tail_start = input->size - virtual->tail_len;
	uint64_t	zeros;

	(void) err;
	/* lp_input_read checked the range against the size */
	zeros = offset >= tail_start ? 0 : tail_start - offset;
	if (zeros > len)
		zeros = len;
	memset(buffer, 0, (size_t) zeros);
	if (len > zeros)
		memcpy((uint8_t *) buffer + zeros, virtual->tail + (offset + zeros - tail_start),
			   (size_t) (len - zeros));
	return true;
}

static void
virtual_close(LpInput *input)
{
	(void) input;
}

static const LpInputOps virtual_ops = {.read_at = virtual_read_at, .close = virtual_close};

static void
check_inside(const LpBufferRef *ref, uint64_t limit)
{
	if (ref->offset > limit || ref->size > limit - ref->offset)
		abort();
}

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	VirtualInput input;
	LpFile	   *file;
	LpError		err;

	if (size < 8)
		return 0;
	lp_fuzz_use_bounded_allocator();
	memset(&input, 0, sizeof(input));
	input.base.ops = &virtual_ops;
	input.base.name = "fuzz footer";
	input.tail = data + 8;
	input.tail_len = size - 8;
	input.base.size = lp_fuzz_u64(data) % VIRTUAL_SIZE_MAX;
	if (input.base.size < input.tail_len)
		input.base.size = input.tail_len;
	file = lp_file_open(&input.base, &err);
	if (file == NULL)
	{
		if (err.code == LP_OK)
			abort();
		return 0;
	}
	if (file->file_size != input.base.size)
		abort();
	if (file->version != LP_FILE_VERSION_LEGACY)
	{
		uint64_t	footer_start = file->file_size - LP_FOOTER_LEN;

		if (file->column_meta_start > file->column_meta_offsets_start ||
			file->column_meta_offsets_start + 16 * (uint64_t) file->num_columns >
			file->global_buffer_offsets_start ||
			file->global_buffer_offsets_start + 16 * (uint64_t) file->num_global_buffers > footer_start ||
			file->num_global_buffers == 0)
			abort();
		for (uint32_t g = 0; g < file->num_global_buffers; g++)
			check_inside(&file->global_buffers[g], footer_start);
		for (uint32_t c = 0; c < file->num_columns; c++)
		{
			const LpColumn *column = &file->columns[c];

			check_inside(&column->metadata, file->file_size);
			for (uint32_t b = 0; b < column->num_column_buffers; b++)
				check_inside(&column->column_buffers[b], file->file_size);
			for (uint32_t p = 0; p < column->num_pages; p++)
				for (uint32_t b = 0; b < column->pages[p].num_buffers; b++)
					check_inside(&column->pages[p].buffers[b], file->file_size);
		}
	}
	lp_file_free(file);
	return 0;
}
