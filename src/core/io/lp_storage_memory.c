/*
 * lp_storage_memory.c - an LpInput over a caller-owned memory buffer and an
 * LpOutput into a growing one, for tests and fuzzing.
 */
#include <stdint.h>
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

static const LpInputOps memory_input_ops = {.read_at = memory_read_at, .close = memory_close};

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

typedef struct LpMemoryOutput
{
	LpOutput	base;
	uint8_t    *data;
	uint64_t	len;
	uint64_t	capacity;
	char	   *name_copy;
} LpMemoryOutput;

static bool
memory_write_at(LpOutput *output, uint64_t offset, const void *data, size_t len,
				LpError *err)
{
	LpMemoryOutput *memory = (LpMemoryOutput *) output;
	uint64_t	end;

	if (__builtin_add_overflow(offset, (uint64_t) len, &end) || end > SIZE_MAX / 2)
		return lp_fail(err, LP_ERR_IO, "write beyond the addressable range of \"%s\"",
					   output->name);
	if (end > memory->capacity)
	{
		uint64_t	capacity = memory->capacity ? memory->capacity : 4096;
		uint8_t    *grown;

		while (capacity < end)
			capacity *= 2;
		grown = lp_alloc0((size_t) capacity);
		if (grown == NULL)
			return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
		if (memory->len > 0)
			memcpy(grown, memory->data, (size_t) memory->len);
		lp_free(memory->data);
		memory->data = grown;
		memory->capacity = capacity;
	}
	if (len > 0)
		memcpy(memory->data + offset, data, len);
	if (end > memory->len)
		memory->len = end;
	return true;
}

static void
memory_output_free(LpOutput *output)
{
	LpMemoryOutput *memory = (LpMemoryOutput *) output;

	lp_free(memory->data);
	lp_free(memory->name_copy);
	lp_free(memory);
}

static bool
memory_publish(LpOutput *output, LpError *err)
{
	(void) err;
	memory_output_free(output);
	return true;
}

static const LpOutputOps memory_output_ops = {
	.write_at = memory_write_at,
	.publish = memory_publish,
	.abort = memory_output_free
};

LpOutput *
lp_memory_output_open(const char *name)
{
	LpMemoryOutput *memory = lp_alloc0(sizeof(LpMemoryOutput));

	if (memory == NULL)
		return NULL;
	memory->name_copy = lp_strdup(name);
	if (memory->name_copy == NULL)
	{
		lp_free(memory);
		return NULL;
	}
	memory->base.ops = &memory_output_ops;
	memory->base.name = memory->name_copy;
	return &memory->base;
}

const uint8_t *
lp_memory_output_data(const LpOutput *output, uint64_t *len)
{
	const LpMemoryOutput *memory = (const LpMemoryOutput *) output;

	*len = memory->len;
	return memory->data;
}
