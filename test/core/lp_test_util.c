/*
 * lp_test_util.c - helpers of the core unit tests.
 */
#include <dirent.h>
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

static int
compare_paths(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

int
lp_test_dataset_data_files(const char *name, char **paths, int max)
{
	char		dir_path[1024];
	DIR		   *dir;
	struct dirent *entry;
	int			count = 0;

	LP_CHECK_MSG(lp_test_data_dir != NULL, "no test data directory given");
	if (lp_test_data_dir == NULL)
		return -1;
	lp_test_dataset_path(name, dir_path, sizeof(dir_path));
	strncat(dir_path, "/data", sizeof(dir_path) - strlen(dir_path) - 1);
	dir = opendir(dir_path);
	LP_CHECK_MSG(dir != NULL, "cannot list \"%.400s\"", dir_path);
	if (dir == NULL)
		return -1;
	while ((entry = readdir(dir)) != NULL && count < max)
	{
		size_t		len = strlen(entry->d_name);
		char		path[2048];

		/* the sidecar directories of blob files are not data files */
		if (len <= 6 || strcmp(entry->d_name + len - 6, ".lance") != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir_path, entry->d_name);
		paths[count++] = strdup(path);
	}
	closedir(dir);
	qsort(paths, count, sizeof(char *), compare_paths);
	return count;
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
	static const LpAllocator allocator = {failing_alloc, failing_free, &remaining, NULL};

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
