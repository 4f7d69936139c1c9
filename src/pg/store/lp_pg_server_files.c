/*
 * lp_pg_server_files.c - the server's own small files, on fd.c.
 *
 * The target keys ($PGDATA/lance_parts.key) and the progress records
 * (pg_stat_tmp) belong to the cluster, not to any dataset, so they do not go
 * through the stores: they are plain files of the data directory, opened as
 * transient files that fd.c closes when an ERROR unwinds.  Kept here so that
 * every file-system call of the PostgreSQL layer is in this folder.
 */
#include "postgres.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "storage/fd.h"

#include "store/lp_pg_server_files.h"

/* Close fd on the way to an error about it, which reports errno. */
static void
close_keeping_errno(int fd)
{
	int			save_errno = errno;

	CloseTransientFile(fd);
	errno = save_errno;
}

/* Remove a temporary file on the way to an error about it, which reports errno. */
static void
unlink_keeping_errno(const char *temp)
{
	int			save_errno = errno;

	unlink(temp);
	errno = save_errno;
}

bool
lp_server_file_read(const char *path, void *buffer, size_t capacity, size_t *size,
					size_t *got)
{
	struct stat st;
	int			fd;
	ssize_t		n;

	fd = OpenTransientFile(path, O_RDONLY | PG_BINARY);
	if (fd < 0)
	{
		if (errno == ENOENT)
			return false;
		ereport(ERROR,
				errcode_for_file_access(),
				errmsg("could not open file \"%s\": %m", path));
	}
	if (fstat(fd, &st) != 0)
	{
		close_keeping_errno(fd);
		ereport(ERROR,
				errcode_for_file_access(),
				errmsg("could not stat file \"%s\": %m", path));
	}
	*size = (size_t) st.st_size;
	*got = 0;
	if (*size == 0 || *size > capacity)
	{
		CloseTransientFile(fd);
		return true;
	}
	n = read(fd, buffer, *size);
	if (n < 0)
	{
		close_keeping_errno(fd);
		ereport(ERROR,
				errcode_for_file_access(),
				errmsg("could not read file \"%s\": %m", path));
	}
	CloseTransientFile(fd);
	*got = (size_t) n;
	return true;
}

bool
lp_server_file_read_exactly(const char *path, void *buffer, size_t len)
{
	int			fd = OpenTransientFile(path, O_RDONLY | PG_BINARY);
	bool		ok;

	if (fd < 0)
		return false;
	ok = read(fd, buffer, len) == (ssize_t) len;
	CloseTransientFile(fd);
	return ok;
}

void
lp_server_file_write_synced(const char *temp, const void *data, size_t len)
{
	int			fd;

	unlink(temp);
	fd = OpenTransientFilePerm(temp, O_WRONLY | O_CREAT | O_EXCL | PG_BINARY, S_IRUSR | S_IWUSR);
	if (fd < 0)
		ereport(ERROR,
				errcode_for_file_access(),
				errmsg("could not create file \"%s\": %m", temp));
	errno = 0;
	if (write(fd, data, len) != (ssize_t) len || pg_fsync(fd) != 0)
	{
		/* a short write without an error is a full disk */
		int			save_errno = errno ? errno : ENOSPC;

		CloseTransientFile(fd);
		unlink(temp);
		errno = save_errno;
		ereport(ERROR,
				errcode_for_file_access(),
				errmsg("could not write file \"%s\": %m", temp));
	}
	CloseTransientFile(fd);
}

void
lp_server_file_link_unless_present(const char *temp, const char *path, const char *directory)
{
	if (link(temp, path) != 0 && errno != EEXIST)
	{
		unlink_keeping_errno(temp);
		ereport(ERROR,
				errcode_for_file_access(),
				errmsg("could not link file \"%s\" to \"%s\": %m", temp, path));
	}
	unlink(temp);
	fsync_fname(directory, true);
}

void
lp_server_file_rename(const char *temp, const char *path, const char *directory)
{
	/* the temporary file is synced already; only the rename is left to make durable */
	if (rename(temp, path) != 0)
	{
		unlink_keeping_errno(temp);
		ereport(ERROR,
				errcode_for_file_access(),
				errmsg("could not rename file \"%s\" to \"%s\": %m", temp, path));
	}
	fsync_fname(directory, true);
}

void
lp_server_file_replace_quietly(const char *temp, const char *path, const void *data,
							   size_t len)
{
	int			fd = OpenTransientFile(temp, O_WRONLY | O_CREAT | O_TRUNC | PG_BINARY);
	bool		written;

	if (fd < 0)
		return;
	written = write(fd, data, len) == (ssize_t) len;
	CloseTransientFile(fd);
	if (!written || rename(temp, path) != 0)
		unlink(temp);
}

void
lp_server_file_remove(const char *path)
{
	unlink(path);
}

void
lp_server_files_each(const char *directory, LpServerFileCallback callback, void *arg)
{
	DIR		   *dir = AllocateDir(directory);
	struct dirent *entry;

	while ((entry = ReadDir(dir, directory)) != NULL)
		callback(entry->d_name, arg);
	FreeDir(dir);
}
