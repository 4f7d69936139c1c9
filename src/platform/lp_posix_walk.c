/*
 * lp_posix_walk.c - reaching a directory below a trusted root without
 * following a symlink.
 *
 * Each component is opened relative to its parent's descriptor with
 * O_NOFOLLOW | O_DIRECTORY and must be the very entry fstatat saw (device
 * and inode), so a symlink put at any component, before or during the walk,
 * is never followed.  Path names are built only for messages, in a fixed
 * buffer; the walk neither allocates nor raises, and holds no descriptor
 * but the one it returns.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "platform/lp_posix_walk.h"

#define MESSAGE_PATH_SIZE 2048

const char *
lp_posix_kind_name(mode_t mode)
{
	if (S_ISLNK(mode))
		return "a symbolic link";
	if (S_ISREG(mode))
		return "a regular file";
	if (S_ISDIR(mode))
		return "a directory";
	if (S_ISFIFO(mode))
		return "a FIFO";
	if (S_ISSOCK(mode))
		return "a socket";
	if (S_ISCHR(mode) || S_ISBLK(mode))
		return "a device";
	return "an entry of unknown type";
}

static LpErrorCode
failure_code(int error_number)
{
	if (error_number == ENOENT)
		return LP_ERR_NOT_FOUND;
	if (error_number == ENOSPC || error_number == EDQUOT)
		return LP_ERR_DISK_FULL;
	return LP_ERR_IO;
}

static int
open_counted(int parent, const char *name, int flags, const LpDescriptorBudget *budget)
{
	int			fd;
	int			save_errno;

	if (budget != NULL && !budget->acquire())
	{
		errno = EMFILE;
		return -1;
	}
	fd = parent < 0 ? open(name, flags) : openat(parent, name, flags);
	if (fd < 0 && budget != NULL)
	{
		save_errno = errno;
		budget->release();
		errno = save_errno;
	}
	return fd;
}

void
lp_posix_close_directory(int fd, const LpDescriptorBudget *budget)
{
	close(fd);
	if (budget != NULL)
		budget->release();
}

/* Fail with code and message, leaving error_number in errno for the caller. */
static int
fail_component(LpError *err, LpErrorCode code, int error_number, const char *format,
			   const char *path, const char *reason)
{
	lp_fail(err, code, format, path, reason);
	errno = error_number;
	return -1;
}

/*
 * Open the entry name of the directory open at parent, a real directory
 * (made first when missing and create is set); -1 with err set and errno
 * the failure's otherwise.  path names the entry in messages.
 */
static int
open_component(int parent, const char *name, bool create, mode_t mode,
			   const LpDescriptorBudget *budget, const char *path, LpError *err)
{
	struct stat seen;
	struct stat opened;
	int			fd;

	if (fstatat(parent, name, &seen, AT_SYMLINK_NOFOLLOW) != 0)
	{
		if (errno != ENOENT || !create)
			return fail_component(err, failure_code(errno), errno,
								  "could not open directory \"%s\": %s", path, strerror(errno));
		if (mkdirat(parent, name, mode) != 0 && errno != EEXIST)
			return fail_component(err, failure_code(errno), errno,
								  "could not create directory \"%s\": %s", path, strerror(errno));
		/* made by us or by a concurrent writer: either way it must be a real directory */
		if (fstatat(parent, name, &seen, AT_SYMLINK_NOFOLLOW) != 0)
			return fail_component(err, failure_code(errno), errno, "could not stat \"%s\": %s",
								  path, strerror(errno));
	}
	if (!S_ISDIR(seen.st_mode))
		return fail_component(err, LP_ERR_INVALID_ARGUMENT, S_ISLNK(seen.st_mode) ? ELOOP : ENOTDIR,
							  "\"%s\" is %s, not a directory", path, lp_posix_kind_name(seen.st_mode));
	fd = open_counted(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, budget);
	if (fd < 0)
	{
		if (errno == ELOOP || errno == ENOTDIR)
			return fail_component(err, LP_ERR_INVALID_ARGUMENT, errno, "\"%s\" %s", path,
								  "is no longer a directory");
		return fail_component(err, failure_code(errno), errno, "could not open directory \"%s\": %s",
							  path, strerror(errno));
	}
	if (fstat(fd, &opened) != 0 || opened.st_dev != seen.st_dev || opened.st_ino != seen.st_ino)
	{
		lp_posix_close_directory(fd, budget);
		return fail_component(err, LP_ERR_INVALID_ARGUMENT, ENOTDIR, "\"%s\" %s", path,
							  "was replaced while it was opened");
	}
	return fd;
}

int
lp_posix_open_directory(const char *root, const char *relative, bool create,
						mode_t mode, const LpDescriptorBudget *budget, LpError *err)
{
	char		path[MESSAGE_PATH_SIZE];
	char		name[NAME_MAX + 1];
	const char *rest = relative;
	int			fd;

	lp_error_clear(err);
	snprintf(path, sizeof(path), "%s", root);
	/* root is trusted: it may be reached through symlinks */
	fd = open_counted(-1, root, O_RDONLY | O_DIRECTORY | O_CLOEXEC, budget);
	if (fd < 0)
		return fail_component(err, failure_code(errno), errno, "could not open directory \"%s\": %s",
							  root, strerror(errno));
	while (*rest != '\0')
	{
		const char *slash = strchr(rest, '/');
		size_t		len = slash != NULL ? (size_t) (slash - rest) : strlen(rest);
		size_t		path_len = strlen(path);
		int			child;

		if (len == 0 || len > NAME_MAX || (slash != NULL && slash[1] == '\0'))
			break;
		memcpy(name, rest, len);
		name[len] = '\0';
		if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
			break;
		snprintf(path + path_len, sizeof(path) - path_len, "/%s", name);
		child = open_component(fd, name, create, mode, budget, path, err);
		if (child < 0)
		{
			int			save_errno = errno;

			lp_posix_close_directory(fd, budget);
			errno = save_errno;
			return -1;
		}
		lp_posix_close_directory(fd, budget);
		fd = child;
		rest += slash != NULL ? len + 1 : len;
	}
	if (*rest != '\0')
	{
		lp_posix_close_directory(fd, budget);
		lp_fail(err, LP_ERR_INTERNAL, "\"%s\" is not a relative path of plain names below \"%s\"",
				relative, root);
		errno = EINVAL;
		return -1;
	}
	return fd;
}
