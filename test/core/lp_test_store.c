/*
 * lp_test_store.c - a POSIX LpStore for the core unit tests.
 *
 * put_if_absent writes a temporary file, fsyncs it and link()s it to the
 * final name, so that exactly one of several concurrent writers creates the
 * file (EEXIST => LP_ERR_ALREADY_EXISTS); put renames the temporary file over
 * the final name.  Temporary names end in digits, never in "manifest".
 * Inputs and outputs are those of lp_test_files.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lp_posix_files.h"
#include "lp_test_files.h"
#include "lp_test_store.h"
#include "lp_tree_removal.h"

int			lp_test_store_conflicts;
int			lp_test_store_lists;
int			lp_test_store_opens;

static LpInput *
store_open_input(LpStore *store, const char *path, LpError *err)
{
	struct stat st;

	(void) store;
	lp_test_store_opens++;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
	{
		lp_fail(err, LP_ERR_INVALID_ARGUMENT, "\"%s\" is a directory", path);
		return NULL;
	}
	return lp_test_file_input_open(path, err);
}

/* Opened at once (the tests open few files), but checked against size. */
static LpInput *
store_open_input_lazily(LpStore *store, const char *path, uint64_t size, LpError *err)
{
	LpInput    *input = store_open_input(store, path, err);

	if (input != NULL && input->size != size)
	{
		lp_fail(err, LP_ERR_CORRUPT, "file \"%s\" changed size after it was validated", path);
		lp_input_close(input);
		return NULL;
	}
	return input;
}

static bool
store_stat(LpStore *store, const char *path, bool follow_symlinks, LpStat *result,
		   LpError *err)
{
	(void) store;
	return lp_posix_stat(path, follow_symlinks, result, err);
}

static char *
store_canonical(LpStore *store, const char *path, const char *what, LpError *err)
{
	(void) store;
	return lp_posix_canonical(path, what, err);
}

static bool
store_same_object(LpStore *store, const char *path_a, const char *path_b)
{
	(void) store;
	return lp_posix_same_file(path_a, path_b);
}

static bool
store_list(LpStore *store, const char *directory, LpListCallback callback,
		   void *arg, LpError *err)
{
	DIR		   *dir = opendir(directory);
	struct dirent *entry;
	bool		ok = true;

	(void) store;
	lp_test_store_lists++;
	if (dir == NULL)
		return lp_fail(err, errno == ENOENT ? LP_ERR_NOT_FOUND : LP_ERR_IO,
					   "could not open directory \"%s\": %s", directory, strerror(errno));
	while (ok && (entry = readdir(dir)) != NULL)
	{
		if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0)
			continue;
		ok = callback(arg, entry->d_name, err);
	}
	closedir(dir);
	return ok;
}

/* mkdir -p of the directory part of path */
static bool
make_parent_directories(const char *path, LpError *err)
{
	char		buffer[4096];
	size_t		len = strlen(path);

	if (len >= sizeof(buffer))
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT, "path \"%s\" is too long", path);
	memcpy(buffer, path, len + 1);
	for (char *p = buffer + 1; *p; p++)
	{
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buffer, 0777) != 0 && errno != EEXIST)
			return lp_fail(err, LP_ERR_IO, "could not create directory \"%s\": %s",
						   buffer, strerror(errno));
		*p = '/';
	}
	return true;
}

/* Write data durably to a fresh temporary file next to path. */
static bool
write_temporary(const char *path, const void *data, size_t len,
				char *temporary, size_t temporary_size, LpError *err)
{
	static unsigned counter;
	int			fd;
	size_t		done = 0;

	if (!make_parent_directories(path, err))
		return false;
	snprintf(temporary, temporary_size, "%s.tmp-%d-%u", path, (int) getpid(), counter++);
	fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL, 0666);
	if (fd < 0)
		return lp_fail(err, LP_ERR_IO, "could not create file \"%s\": %s",
					   temporary, strerror(errno));
	while (done < len)
	{
		ssize_t		n = write(fd, (const char *) data + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
		{
			lp_fail(err, LP_ERR_IO, "could not write file \"%s\": %s",
					temporary, strerror(errno));
			close(fd);
			unlink(temporary);
			return false;
		}
		done += (size_t) n;
	}
	if (fsync(fd) != 0 || close(fd) != 0)
	{
		lp_fail(err, LP_ERR_IO, "could not sync file \"%s\": %s", temporary, strerror(errno));
		unlink(temporary);
		return false;
	}
	return true;
}

static bool
store_put_if_absent(LpStore *store, const char *path, const void *data,
					size_t len, LpError *err)
{
	char		temporary[4200];
	int			link_errno;

	(void) store;

	if (!write_temporary(path, data, len, temporary, sizeof(temporary), err))
		return false;
	link_errno = link(temporary, path) == 0 ? 0 : errno;
	unlink(temporary);
	if (link_errno == EEXIST)
	{
		lp_test_store_conflicts++;
		return lp_fail(err, LP_ERR_ALREADY_EXISTS, "file \"%s\" already exists", path);
	}
	if (link_errno != 0)
		return lp_fail(err, LP_ERR_IO, "could not create file \"%s\": %s",
					   path, strerror(link_errno));
	return true;
}

static bool
store_put(LpStore *store, const char *path, const void *data, size_t len,
		  LpError *err)
{
	char		temporary[4200];

	(void) store;

	if (!write_temporary(path, data, len, temporary, sizeof(temporary), err))
		return false;
	if (rename(temporary, path) != 0)
	{
		lp_fail(err, LP_ERR_IO, "could not rename file \"%s\": %s", temporary, strerror(errno));
		unlink(temporary);
		return false;
	}
	return true;
}

static bool
store_remove(LpStore *store, const char *path, LpError *err)
{
	(void) store;
	if (remove(path) != 0 && errno != ENOENT)
		return lp_fail(err, LP_ERR_IO, "could not remove \"%s\": %s", path, strerror(errno));
	return true;
}

static bool
store_remove_tree(LpStore *store, const char *root, const char *relative,
				  LpTreeRemoval *result, LpError *err)
{
	(void) store;
	return lp_posix_remove_tree(root, relative, NULL, result, err);
}

static bool
store_remove_file(LpStore *store, const char *root, const char *relative,
				  bool *removed, LpError *err)
{
	(void) store;
	return lp_posix_remove_file(root, relative, NULL, removed, err);
}

static LpOutput *
store_create_output(LpStore *store, const char *path, LpError *err)
{
	(void) store;
	if (!make_parent_directories(path, err))
		return NULL;
	return lp_test_file_output_create(path, true, err);
}

static const LpStoreOps posix_store_ops = {
	.open_input = store_open_input,
	.open_input_lazily = store_open_input_lazily,
	.stat = store_stat,
	.canonical = store_canonical,
	.same_object = store_same_object,
	.list = store_list,
	.put_if_absent = store_put_if_absent,
	.put = store_put,
	.remove = store_remove,
	.remove_tree = store_remove_tree,
	.remove_file = store_remove_file,
	.create_output = store_create_output
};

static LpStore posix_store = {&posix_store_ops};

LpStore *
lp_test_store(void)
{
	return &posix_store;
}
