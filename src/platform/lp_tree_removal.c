/*
 * lp_tree_removal.c - removing a directory tree without following symlinks.
 *
 * Every directory is opened relative to its parent's descriptor with
 * O_NOFOLLOW | O_DIRECTORY, and every entry's type is taken from
 * fstatat(AT_SYMLINK_NOFOLLOW), so a symlink anywhere (the top directory, a
 * component on the way to it, an entry inside) is never entered: on the
 * way it stops the removal, inside the tree it is unlinked as an entry.  An
 * entry swapped for a symlink between the type check and the open fails the
 * open (ELOOP/ENOTDIR) rather than being followed.  Directories on another
 * file system (mount points) are not entered.
 *
 * The walk neither raises nor allocates: every descriptor is closed before
 * it returns, whatever happened.  Path names are built only for messages,
 * in a fixed buffer; the I/O itself uses descriptors and entry names.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "platform/lp_tree_removal.h"

#define MESSAGE_PATH_SIZE 2048

typedef struct Walk
{
	const LpDescriptorBudget *budget;
	LpTreeRemoval *result;
	LpError    *err;
	bool		failed;			/* err and failure_errno hold the first failure */
	dev_t		device;			/* of the removed directory */
	char		path[MESSAGE_PATH_SIZE];	/* the current entry, for messages */
	size_t		path_len;
} Walk;

/* Append "/name" to the message path; returns the length to restore. */
static size_t
push_name(Walk *walk, const char *name)
{
	size_t		old_len = walk->path_len;
	int			n = snprintf(walk->path + old_len, sizeof(walk->path) - old_len,
							 "/%s", name);

	if (n < 0 || (size_t) n >= sizeof(walk->path) - old_len)
		walk->path_len = sizeof(walk->path) - 1;	/* truncated: messages only */
	else
		walk->path_len = old_len + (size_t) n;
	return old_len;
}

static void
pop_name(Walk *walk, size_t old_len)
{
	walk->path_len = old_len;
	walk->path[old_len] = '\0';
}

/* Remember the first failure; the walk goes on with the other entries. */
static void
record_failure(Walk *walk, int error_number, const char *action)
{
	if (walk->failed)
		return;
	walk->failed = true;
	walk->result->failure_errno = error_number;
	lp_fail(walk->err, LP_ERR_IO, "could not %s \"%s\": %s",
			action, walk->path, strerror(error_number));
}

/* A directory the walk does not enter, for why. */
static void
record_refusal(Walk *walk, int error_number, const char *why)
{
	if (walk->failed)
		return;
	walk->failed = true;
	walk->result->failure_errno = error_number;
	lp_fail(walk->err, LP_ERR_IO, "did not enter directory \"%s\": %s", walk->path, why);
}

static int
open_directory_at(Walk *walk, int parent, const char *name)
{
	int			fd;
	int			save_errno;

	if (walk->budget != NULL && !walk->budget->acquire())
	{
		errno = EMFILE;
		return -1;
	}
	fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && walk->budget != NULL)
	{
		save_errno = errno;
		walk->budget->release();
		errno = save_errno;
	}
	return fd;
}

static void
close_directory(Walk *walk, int fd)
{
	close(fd);
	if (walk->budget != NULL)
		walk->budget->release();
}

static void remove_directory_entries(Walk *walk, int fd, int depth);

/* Remove one entry of the directory open at parent. */
static void
remove_entry(Walk *walk, int parent, const char *name, int depth)
{
	struct stat st;
	int			fd;

	if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
	{
		if (errno != ENOENT)
			record_failure(walk, errno, "stat");
		return;
	}
	if (!S_ISDIR(st.st_mode))
	{
		if (unlinkat(parent, name, 0) == 0)
		{
			walk->result->removed_entries++;
			if (S_ISREG(st.st_mode))
				walk->result->removed_bytes += (uint64_t) st.st_size;
		}
		else if (errno != ENOENT)
			record_failure(walk, errno, "remove");
		return;
	}
	if (st.st_dev != walk->device)
	{
		record_refusal(walk, EXDEV, "it is on another file system");
		return;
	}
	if (depth >= LP_TREE_REMOVAL_MAX_DEPTH)
	{
		record_refusal(walk, ELOOP, "it is nested too deep");
		return;
	}
	fd = open_directory_at(walk, parent, name);
	if (fd < 0)
	{
		if (errno == ELOOP || errno == ENOTDIR)
		{
			/* replaced by a non-directory since the fstatat: unlink that entry */
			if (unlinkat(parent, name, 0) == 0)
				walk->result->removed_entries++;
			else if (errno != ENOENT)
				record_failure(walk, errno, "remove");
		}
		else if (errno != ENOENT)
			record_failure(walk, errno, "open directory");
		return;
	}
	remove_directory_entries(walk, fd, depth + 1);
	if (unlinkat(parent, name, AT_REMOVEDIR) == 0)
		walk->result->removed_entries++;
	else if (errno != ENOENT && !(errno == ENOTEMPTY && walk->failed))
		record_failure(walk, errno, "remove directory");
}

/* Remove everything in the directory open at fd, and close fd. */
static void
remove_directory_entries(Walk *walk, int fd, int depth)
{
	DIR		   *dir = fdopendir(fd);
	struct dirent *entry;

	if (dir == NULL)
	{
		record_failure(walk, errno, "read directory");
		close_directory(walk, fd);
		return;
	}
	for (;;)
	{
		size_t		old_len;

		errno = 0;
		entry = readdir(dir);
		if (entry == NULL)
		{
			if (errno != 0)
				record_failure(walk, errno, "read directory");
			break;
		}
		if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0)
			continue;
		old_len = push_name(walk, entry->d_name);
		remove_entry(walk, fd, entry->d_name, depth);
		pop_name(walk, old_len);
	}
	closedir(dir);				/* closes fd */
	if (walk->budget != NULL)
		walk->budget->release();
}

static bool
finish(Walk *walk, LpTreeRemovalOutcome outcome)
{
	walk->result->outcome = outcome;
	return outcome == LP_TREE_ABSENT || outcome == LP_TREE_REMOVED;
}

/*
 * Open the real directory name of the directory open at parent, which stays
 * open.  False when it is missing or not a real directory, or cannot be
 * opened; the outcome is then in walk->result.
 */
static bool
open_child_directory(Walk *walk, int parent, const char *name, int *child,
					 dev_t *device)
{
	struct stat st;
	int			save_errno;

	if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
	{
		save_errno = errno;
		if (save_errno == ENOENT)
		{
			finish(walk, LP_TREE_ABSENT);
			return false;
		}
		record_failure(walk, save_errno, "stat");
		finish(walk, LP_TREE_INCOMPLETE);
		return false;
	}
	if (!S_ISDIR(st.st_mode))
	{
		lp_fail(walk->err, LP_ERR_INVALID_ARGUMENT, "\"%s\" is %s, not a directory",
				walk->path, lp_posix_kind_name(st.st_mode));
		finish(walk, LP_TREE_NOT_DIRECTORY);
		return false;
	}
	*child = open_directory_at(walk, parent, name);
	if (*child >= 0)
	{
		*device = st.st_dev;
		return true;
	}
	save_errno = errno;
	if (save_errno == ENOENT)
	{
		finish(walk, LP_TREE_ABSENT);
		return false;
	}
	if (save_errno == ELOOP || save_errno == ENOTDIR)
	{
		lp_fail(walk->err, LP_ERR_INVALID_ARGUMENT, "\"%s\" is not a directory", walk->path);
		finish(walk, LP_TREE_NOT_DIRECTORY);
		return false;
	}
	record_failure(walk, save_errno, "open directory");
	finish(walk, LP_TREE_INCOMPLETE);
	return false;
}

static void
start_walk(Walk *walk, const char *root, const LpDescriptorBudget *budget,
		   LpTreeRemoval *result, LpError *err)
{
	memset(result, 0, sizeof(*result));
	lp_error_clear(err);
	memset(walk, 0, sizeof(*walk));
	walk->budget = budget;
	walk->result = result;
	walk->err = err;
	snprintf(walk->path, sizeof(walk->path), "%s", root);
	walk->path_len = strlen(walk->path);
}

/*
 * Open the directory holding the last component of relative, walking from
 * root without following a symlink (lp_posix_open_directory); *parent
 * receives its descriptor and last the component.  False when the walk
 * ends before (the outcome is then in walk->result, with err set unless
 * the path is absent).
 */
static bool
open_parent(Walk *walk, const char *root, const char *relative, int *parent,
			char last[NAME_MAX + 1])
{
	char		directory[MESSAGE_PATH_SIZE];
	const char *slash = strrchr(relative, '/');
	size_t		directory_len = slash != NULL ? (size_t) (slash - relative) : 0;
	const char *name = slash != NULL ? slash + 1 : relative;
	int			fd;

	if (relative[0] == '/' || directory_len >= sizeof(directory) || name[0] == '\0' ||
		strlen(name) > NAME_MAX || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
	{
		lp_fail(walk->err, LP_ERR_INTERNAL, "\"%s\" is not a relative path of plain names below \"%s\"",
				relative, root);
		finish(walk, LP_TREE_INCOMPLETE);
		return false;
	}
	memcpy(directory, relative, directory_len);
	directory[directory_len] = '\0';
	fd = lp_posix_open_directory(root, directory, false, 0, walk->budget, walk->err);
	if (fd < 0)
	{
		int			save_errno = errno;

		if (walk->err->code == LP_ERR_NOT_FOUND)
		{
			lp_error_clear(walk->err);
			finish(walk, LP_TREE_ABSENT);
		}
		else if (walk->err->code == LP_ERR_INVALID_ARGUMENT)
			finish(walk, LP_TREE_NOT_DIRECTORY);
		else
		{
			walk->failed = true;
			walk->result->failure_errno = save_errno;
			finish(walk, LP_TREE_INCOMPLETE);
		}
		return false;
	}
	if (directory_len > 0)
		push_name(walk, directory);
	memcpy(last, name, strlen(name) + 1);
	*parent = fd;
	return true;
}

bool
lp_posix_remove_tree(const char *root, const char *relative,
					 const LpDescriptorBudget *budget,
					 LpTreeRemoval *result, LpError *err)
{
	Walk		walk;
	char		component[NAME_MAX + 1];
	int			parent;
	int			fd;

	start_walk(&walk, root, budget, result, err);
	if (!open_parent(&walk, root, relative, &parent, component))
		return result->outcome == LP_TREE_ABSENT;

	push_name(&walk, component);
	if (!open_child_directory(&walk, parent, component, &fd, &walk.device))
	{
		close_directory(&walk, parent);
		return result->outcome == LP_TREE_ABSENT;
	}

	/* parent holds the removed directory's entry "component", open at fd */
	remove_directory_entries(&walk, fd, 0);
	if (unlinkat(parent, component, AT_REMOVEDIR) == 0)
		result->removed_entries++;
	else if (errno != ENOENT && !(errno == ENOTEMPTY && walk.failed))
		record_failure(&walk, errno, "remove directory");
	close_directory(&walk, parent);
	return finish(&walk, walk.failed ? LP_TREE_INCOMPLETE : LP_TREE_REMOVED);
}

bool
lp_posix_remove_file(const char *root, const char *relative,
					 const LpDescriptorBudget *budget, bool *removed, LpError *err)
{
	Walk		walk;
	LpTreeRemoval result;
	char		component[NAME_MAX + 1];
	struct stat st;
	int			parent;
	bool		ok = true;

	*removed = false;
	start_walk(&walk, root, budget, &result, err);
	if (!open_parent(&walk, root, relative, &parent, component))
		return result.outcome == LP_TREE_ABSENT;
	push_name(&walk, component);
	if (fstatat(parent, component, &st, AT_SYMLINK_NOFOLLOW) != 0)
	{
		if (errno != ENOENT)
			ok = lp_fail(err, LP_ERR_IO, "could not stat \"%s\": %s", walk.path, strerror(errno));
	}
	else if (!S_ISREG(st.st_mode))
		ok = lp_fail(err, LP_ERR_INVALID_ARGUMENT, "\"%s\" is %s, not a regular file",
					 walk.path, lp_posix_kind_name(st.st_mode));
	/* swapped for a symlink since the fstatat: unlinkat removes the link, never its target */
	else if (unlinkat(parent, component, 0) == 0)
		*removed = true;
	else if (errno != ENOENT)
		ok = lp_fail(err, LP_ERR_IO, "could not remove \"%s\": %s", walk.path, strerror(errno));
	close_directory(&walk, parent);
	return ok;
}
