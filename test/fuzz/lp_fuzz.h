/*
 * lp_fuzz.h - what every libFuzzer target of the core shares: the core's
 * allocation hook bounded at 64 MiB a request, so that huge counts in
 * damaged input come back as LP_ERR_NO_MEMORY instead of exhausting the
 * fuzzer's memory limit, as the server's allocator (MCXT_ALLOC_NO_OOM)
 * turns them into errors too.  And the walk over a file's top-level fields
 * that the decoder and field reader targets share.
 */
#ifndef LP_FUZZ_H
#define LP_FUZZ_H

#include <stdint.h>
#include <stdlib.h>

#include "base/lp_alloc.h"
#include "decode/lp_decode.h"
#include "format/lp_file.h"
#include "io/lp_storage.h"

#define LP_FUZZ_MAX_ALLOCATION ((size_t) 64 << 20)

static void *
lp_fuzz_bounded_alloc(size_t size, void *context)
{
	(void) context;
	return size > LP_FUZZ_MAX_ALLOCATION ? NULL : malloc(size);
}

static void
lp_fuzz_bounded_free(void *pointer, void *context)
{
	(void) context;
	free(pointer);
}

/* Route the core's allocations through the bounded allocator. */
static inline void
lp_fuzz_use_bounded_allocator(void)
{
	static const LpAllocator allocator = {lp_fuzz_bounded_alloc, lp_fuzz_bounded_free, NULL, NULL};

	lp_set_allocator(&allocator);
}

/* Little-endian reads of the input's header fields. */
static inline uint32_t
lp_fuzz_u32(const uint8_t *p)
{
	return (uint32_t) p[0] | ((uint32_t) p[1] << 8) | ((uint32_t) p[2] << 16) | ((uint32_t) p[3] << 24);
}

static inline uint64_t
lp_fuzz_u64(const uint8_t *p)
{
	return (uint64_t) lp_fuzz_u32(p) | ((uint64_t) lp_fuzz_u32(p + 4) << 32);
}

/* A top-level field of the file, with its whole decode, or NULL where that failed. */
typedef void (*LpFuzzFieldVisitor) (LpInput *input, const LpFile *file, uint32_t field,
									const LpArray *whole, void *arg);

/*
 * Open the input as a Lance file under the bounded allocator and, if its
 * metadata parses, decode each top-level field whole and visit it.
 */
static inline void
lp_fuzz_visit_fields(const uint8_t *data, size_t size, LpFuzzFieldVisitor visit, void *arg)
{
	LpInput    *input;
	LpFile	   *file;
	LpError		err;

	lp_fuzz_use_bounded_allocator();
	input = lp_memory_input_open("fuzz.lance", data, size);
	if (input == NULL)
		return;
	file = lp_file_open(input, &err);
	for (uint32_t f = 0; file != NULL && f < file->schema.num_fields; f++)
	{
		LpType	   *type;
		LpArray    *whole;

		if (file->schema.fields[f].parent_id != -1 || file->schema.fields[f].id < 0)
			continue;
		if (lp_decode_field(input, file, f, &type, &whole, &err))
		{
			visit(input, file, f, whole, arg);
			lp_array_free(whole);
			lp_type_free(type);
		}
		else
			visit(input, file, f, NULL, arg);
	}
	lp_file_free(file);
	lp_input_close(input);
}

#endif							/* LP_FUZZ_H */
