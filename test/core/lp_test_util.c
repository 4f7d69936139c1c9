/*
 * lp_test_util.c - helpers of the core unit tests.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/lp_alloc.h"
#include "lp_test.h"
#include "lp_test_util.h"

void
lp_test_dataset_path(const char *name, char *out, size_t size)
{
	snprintf(out, size, "%s/%s.lance", lp_test_data_dir ? lp_test_data_dir : ".", name);
}

void
lp_test_copy_dataset(const char *name, const char *destination)
{
	char		source[1024];
	char		command[4096];

	lp_test_dataset_path(name, source, sizeof(source));
	snprintf(command, sizeof(command), "cp -r '%s' '%s'", source, destination);
	LP_CHECK_MSG(system(command) == 0, "%.400s", command);
}

void
lp_test_remove_tree(const char *path)
{
	char		command[4096];

	snprintf(command, sizeof(command), "rm -rf '%s'", path);
	LP_CHECK_MSG(system(command) == 0, "%.400s", command);
}

static void *
failing_alloc(size_t size, void *context)
{
	long	   *remaining = context;

	if ((*remaining)-- <= 0)
		return NULL;
	return malloc(size);
}

static void
failing_free(void *pointer, void *context)
{
	(void) context;
	free(pointer);
}

void
lp_test_fail_allocations_after(long succeeding)
{
	static long remaining;
	static const LpAllocator allocator = {failing_alloc, failing_free, &remaining};

	remaining = succeeding;
	lp_set_allocator(&allocator);
}

void
lp_test_restore_allocations(void)
{
	lp_set_allocator(NULL);
}

bool
lp_test_random(void *arg, uint8_t *buffer, size_t len, LpError *err)
{
	uint64_t   *state = arg;

	(void) err;
	for (size_t i = 0; i < len; i++)
	{
		/* xorshift64 */
		*state ^= *state << 13;
		*state ^= *state >> 7;
		*state ^= *state << 17;
		buffer[i] = (uint8_t) (*state >> 24);
	}
	return true;
}
