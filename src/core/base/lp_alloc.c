/*
 * lp_alloc.c - the allocation hook of the core.
 */
#include <stdlib.h>
#include <string.h>

#include "base/lp_alloc.h"

static void *
default_alloc(size_t size, void *context)
{
	(void) context;
	return malloc(size);
}

static void
default_free(void *pointer, void *context)
{
	(void) context;
	free(pointer);
}

static void *
default_resize(void *pointer, size_t old_size, size_t size, void *context)
{
	(void) old_size;
	(void) context;
	return realloc(pointer, size);
}

static const LpAllocator default_allocator = {default_alloc, default_free, NULL, default_resize};

/* The global state of the core: set once by the embedder. */
static LpAllocator current_allocator = {default_alloc, default_free, NULL, default_resize};
/* What the last failed request asked for, for the error message. */
static size_t failed_size;

void
lp_set_allocator(const LpAllocator *allocator)
{
	current_allocator = allocator ? *allocator : default_allocator;
}

void *
lp_alloc(size_t size)
{
	/* A zero-byte request still gets a distinct pointer: NULL means failure. */
	void	   *pointer = current_allocator.alloc(size == 0 ? 1 : size,
												  current_allocator.context);

	if (pointer == NULL)
		failed_size = size;
	return pointer;
}

size_t
lp_alloc_take_failed_size(void)
{
	size_t		size = failed_size;

	failed_size = 0;
	return size;
}

void *
lp_alloc0(size_t size)
{
	void	   *pointer = lp_alloc(size);

	if (pointer)
		memset(pointer, 0, size);
	return pointer;
}

void *
lp_alloc_array(size_t count, size_t size)
{
	void	   *pointer = lp_alloc_array_unzeroed(count, size);

	if (pointer)
		memset(pointer, 0, count * size);
	return pointer;
}

void *
lp_alloc_array_unzeroed(size_t count, size_t size)
{
	size_t		total;

	if (__builtin_mul_overflow(count, size, &total))
		return NULL;
	return lp_alloc(total);
}

void
lp_free(void *pointer)
{
	if (pointer)
		current_allocator.free(pointer, current_allocator.context);
}

void *
lp_realloc(void *pointer, size_t old_size, size_t size)
{
	void	   *resized;

	if (pointer == NULL)
		return lp_alloc(size);
	if (size == 0)
		size = 1;
	if (current_allocator.resize != NULL)
	{
		resized = current_allocator.resize(pointer, old_size, size, current_allocator.context);
		if (resized == NULL)
			failed_size = size;
		return resized;
	}
	resized = lp_alloc(size);
	if (resized == NULL)
		return NULL;
	memcpy(resized, pointer, old_size < size ? old_size : size);
	lp_free(pointer);
	return resized;
}

void *
lp_memdup(const void *data, size_t len)
{
	/* at least one byte, so an empty copy is still a valid pointer */
	void	   *copy = lp_alloc(len > 0 ? len : 1);

	if (copy != NULL && len > 0)
		memcpy(copy, data, len);
	return copy;
}

char *
lp_strdup(const char *s)
{
	size_t		len = strlen(s);
	char	   *copy = lp_alloc(len + 1);

	if (copy)
		memcpy(copy, s, len + 1);
	return copy;
}
