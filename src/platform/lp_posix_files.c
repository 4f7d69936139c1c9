/*
 * lp_posix_files.c - stat, canonical names and file identity on local paths.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/lp_alloc.h"
#include "platform/lp_posix_files.h"

static LpObjectKind
kind_of(mode_t mode)
{
	if (S_ISREG(mode))
		return LP_OBJECT_FILE;
	if (S_ISDIR(mode))
		return LP_OBJECT_DIRECTORY;
	if (S_ISLNK(mode))
		return LP_OBJECT_SYMLINK;
	return LP_OBJECT_OTHER;
}

bool
lp_posix_stat(const char *path, bool follow_symlinks, LpStat *result, LpError *err)
{
	return lp_posix_stat_at(AT_FDCWD, path, path, follow_symlinks, result, err);
}

bool
lp_posix_stat_at(int directory, const char *name, const char *path, bool follow_symlinks,
				 LpStat *result, LpError *err)
{
	struct stat st;

	memset(result, 0, sizeof(*result));
	if (fstatat(directory, name, &st, follow_symlinks ? 0 : AT_SYMLINK_NOFOLLOW) != 0)
	{
		if (errno == ENOENT)
		{
			result->kind = LP_OBJECT_ABSENT;
			return true;
		}
		return lp_fail(err, LP_ERR_IO, "could not stat file \"%s\": %s", path, strerror(errno));
	}
	result->kind = kind_of(st.st_mode);
	result->size = result->kind == LP_OBJECT_FILE ? (uint64_t) st.st_size : 0;
	result->mtime = (int64_t) st.st_mtime;
	return true;
}

char *
lp_posix_canonical(const char *path, const char *what, LpError *err)
{
	char	   *resolved = realpath(path, NULL);
	char	   *result;

	if (resolved == NULL)
	{
		lp_fail(err, errno == ENOENT ? LP_ERR_NOT_FOUND : LP_ERR_IO,
				"could not resolve %s \"%s\": %s", what, path, strerror(errno));
		return NULL;
	}
	result = lp_strdup(resolved);
	free(resolved);
	if (result == NULL)
		lp_fail(err, LP_ERR_NO_MEMORY, "out of memory for the canonical name of %s \"%s\"",
				what, path);
	return result;
}

bool
lp_posix_same_file(const char *path_a, const char *path_b)
{
	struct stat a;
	struct stat b;

	return stat(path_a, &a) == 0 && stat(path_b, &b) == 0 &&
		a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}
