/*
 * lp_storage_memory.c - an LpInput over a caller-owned memory buffer, for
 * tests and fuzzing.
 */
#include <string.h>

#include "base/lp_alloc.h"
#include "io/lp_storage.h"

typedef struct LpMemoryInput
{
	LpInput		base;
	const uint8_t *data;
	char	   *name_copy;
} LpMemoryInput;

static bool
memory_read_at(LpInput *input, uint64_t offset, void *buffer, size_t len,
			   LpError *err)
{
	LpMemoryInput *memory = (LpMemoryInput *) input;

	if (offset > input->size || len > input->size - offset)
		return lp_fail(err, LP_ERR_IO,
					   "read of %zu bytes at offset %llu is beyond the end of \"%s\"",
					   len, (unsigned long long) offset, input->name);
	if (len > 0)
		memcpy(buffer, memory->data + offset, len);
	return true;
}

static void
memory_close(LpInput *input)
{
	LpMemoryInput *memory = (LpMemoryInput *) input;

	lp_free(memory->name_copy);
	lp_free(memory);
}

static const LpInputOps memory_input_ops = {memory_read_at, memory_close};

LpInput *
lp_memory_input_open(const char *name, const void *data, uint64_t size)
{
	LpMemoryInput *memory = lp_alloc0(sizeof(LpMemoryInput));

	if (memory == NULL)
		return NULL;
	memory->name_copy = lp_strdup(name);
	if (memory->name_copy == NULL)
	{
		lp_free(memory);
		return NULL;
	}
	memory->base.ops = &memory_input_ops;
	memory->base.name = memory->name_copy;
	memory->base.size = size;
	memory->data = data;
	return &memory->base;
}
