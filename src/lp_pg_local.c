/*
 * lp_pg_local.c - the local-file storage backend, on fd.c.
 *
 * Files are opened with OpenTransientFile so that an ERROR anywhere closes
 * them at transaction abort.
 */
#include "postgres.h"

#include <sys/stat.h>
#include <unistd.h>

#include "pgstat.h"
#include "storage/fd.h"

#include "lp_pg_storage.h"

typedef struct LpLocalInput
{
	LpInput		base;
	int			fd;
	char	   *path;
} LpLocalInput;

static bool
local_input_read_at(LpInput *input, uint64_t offset, void *buffer, size_t len,
					LpError *err)
{
	LpLocalInput *local = (LpLocalInput *) input;
	size_t		done = 0;

	while (done < len)
	{
		ssize_t		n;

		pgstat_report_wait_start(PG_WAIT_EXTENSION);
		n = pread(local->fd, (char *) buffer + done, len - done,
				  (off_t) (offset + done));
		pgstat_report_wait_end();
		if (n < 0)
		{
			if (errno == EINTR)
				continue;
			return lp_fail(err, LP_ERR_IO, "could not read file \"%s\": %s",
						   local->path, strerror(errno));
		}
		if (n == 0)
			return lp_fail(err, LP_ERR_CORRUPT,
						   "could not read file \"%s\": read %zu of %zu bytes at offset %llu",
						   local->path, done, len, (unsigned long long) offset);
		done += (size_t) n;
	}
	return true;
}

static void
local_input_close(LpInput *input)
{
	LpLocalInput *local = (LpLocalInput *) input;

	CloseTransientFile(local->fd);
	pfree(local->path);
	pfree(local);
}

static const LpInputOps local_input_ops = {local_input_read_at, local_input_close};

LpInput *
lp_local_input_open(const char *path, LpError *err)
{
	LpLocalInput *local;
	struct stat st;
	int			fd;

	fd = OpenTransientFile(path, O_RDONLY | PG_BINARY);
	if (fd < 0)
	{
		if (errno == ENOENT)
			lp_fail(err, LP_ERR_NOT_FOUND, "could not open file \"%s\": %s",
					path, strerror(errno));
		else
			lp_fail(err, LP_ERR_IO, "could not open file \"%s\": %s",
					path, strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) != 0)
	{
		lp_fail(err, LP_ERR_IO, "could not stat file \"%s\": %s",
				path, strerror(errno));
		CloseTransientFile(fd);
		return NULL;
	}
	if (!S_ISREG(st.st_mode))
	{
		lp_fail(err, LP_ERR_INVALID_ARGUMENT, "\"%s\" is not a regular file", path);
		if (S_ISDIR(st.st_mode))
			lp_error_detail(err, "It is a directory; give the path of a .lance data file.");
		CloseTransientFile(fd);
		return NULL;
	}

	local = palloc0(sizeof(LpLocalInput));
	local->base.ops = &local_input_ops;
	local->path = pstrdup(path);
	local->base.name = local->path;
	local->base.size = (uint64_t) st.st_size;
	local->fd = fd;
	return &local->base;
}
