/*
 * lp_target_key.c - the key that signs targets, in $PGDATA/lance_parts.key.
 *
 * 32 random bytes, created on first use.  The file is the server's own, not
 * dataset storage, so it is read and written through fd.c directly (the
 * storage check of test/tools/check_layers.sh allows this file).
 */
#include "postgres.h"

#include <fcntl.h>
#include <unistd.h>

#include "miscadmin.h"
#include "storage/fd.h"

#include "target/lp_target_key.h"

#define TARGET_KEY_FILE "lance_parts.key"

static uint8 target_key[LP_TARGET_KEY_LEN];
static bool target_key_loaded;

static bool
read_key_file(const char *path)
{
	int			fd = OpenTransientFile(path, O_RDONLY | PG_BINARY);
	ssize_t		n;

	if (fd < 0)
	{
		if (errno == ENOENT)
			return false;
		ereport(ERROR,
				errcode_for_file_access(),
				errmsg("could not open file \"%s\": %m", path));
	}
	n = read(fd, target_key, LP_TARGET_KEY_LEN);
	CloseTransientFile(fd);
	if (n != LP_TARGET_KEY_LEN)
		ereport(ERROR,
				errcode(ERRCODE_DATA_CORRUPTED),
				errmsg("target signing key file \"%s\" is damaged", path),
				errhint("Remove it to create a new key; targets signed with the old key will then be refused."));
	return true;
}

/* Load the key, creating it atomically (write a temporary file, link it) if absent. */
const uint8 *
lp_target_signing_key(void)
{
	char		path[MAXPGPATH];
	char		temp[MAXPGPATH];
	uint8		fresh[LP_TARGET_KEY_LEN];
	int			fd;

	if (target_key_loaded)
		return target_key;
	snprintf(path, sizeof(path), "%s/%s", DataDir, TARGET_KEY_FILE);
	if (!read_key_file(path))
	{
		if (!pg_strong_random(fresh, sizeof(fresh)))
			ereport(ERROR,
					errcode(ERRCODE_INTERNAL_ERROR),
					errmsg("could not generate a target signing key"));
		snprintf(temp, sizeof(temp), "%s.%d.tmp", path, MyProcPid);
		fd = OpenTransientFile(temp, O_WRONLY | O_CREAT | O_TRUNC | PG_BINARY);
		if (fd < 0)
			ereport(ERROR,
					errcode_for_file_access(),
					errmsg("could not create file \"%s\": %m", temp));
		if (write(fd, fresh, sizeof(fresh)) != sizeof(fresh) || pg_fsync(fd) != 0)
		{
			int			save_errno = errno;

			CloseTransientFile(fd);
			unlink(temp);
			errno = save_errno;
			ereport(ERROR,
					errcode_for_file_access(),
					errmsg("could not write file \"%s\": %m", temp));
		}
		CloseTransientFile(fd);
		/* the loser of a race keeps the winner's key */
		if (link(temp, path) != 0 && errno != EEXIST)
		{
			int			save_errno = errno;

			unlink(temp);
			errno = save_errno;
			ereport(ERROR,
					errcode_for_file_access(),
					errmsg("could not link file \"%s\" to \"%s\": %m", temp, path));
		}
		unlink(temp);
		if (!read_key_file(path))
			ereport(ERROR,
					errcode_for_file_access(),
					errmsg("could not read file \"%s\": %m", path));
	}
	target_key_loaded = true;
	return target_key;
}
