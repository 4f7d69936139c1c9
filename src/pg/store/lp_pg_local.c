/*
 * lp_pg_local.c - the local-file storage backend, on fd.c.
 *
 * Files are opened with OpenTransientFile and directories with AllocateDir
 * so that an ERROR anywhere closes them at transaction abort.
 *
 * A store made for a directory tree (lp_local_store_below: a dataset's root
 * or a base, named by a caller allowed to name it) reaches every path below
 * that root from the root without following a symlink at any component, the
 * final name included (lp_posix_open_directory, then the *at calls or an
 * open of /proc/self/fd/<directory>/<name>, which fd.c tracks like any
 * file): a symlink planted anywhere in the tree is an error naming it
 * (LP_ERR_INVALID_ARGUMENT), never followed, for reads as for writes.  The
 * root itself, and every path of the plain store, are taken as given.
 *
 * Outputs are written under a temporary name beside their final path; a
 * memory-context callback removes that temporary file if an ERROR unwinds
 * past the output before it was published or aborted.  An output written
 * by part number (a parallel copy) has each part written in place, at its
 * offset in that temporary file, by whichever process opened the part.
 */
#include "postgres.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "common/file_perm.h"
#include "mb/pg_wchar.h"
#include "nodes/pg_list.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/fd.h"
#include "utils/memutils.h"

#include "base/lp_checked.h"
#include "base/lp_interrupt.h"
#include "store/lp_pg_local.h"
#include "platform/lp_posix_files.h"
#include "platform/lp_posix_walk.h"
#include "platform/lp_tree_removal.h"

typedef struct LpLocalStore
{
	LpStore		base;
	char	   *root;			/* NULL for the plain store */
} LpLocalStore;

#define STORE_ROOT(store) (((LpLocalStore *) (store))->root)

/*
 * Walks open directories with openat, which fd.c does not wrap; they are
 * reported to fd.c instead, and closed on every path, so no ERROR can leak
 * one.
 */
static const LpDescriptorBudget fd_budget = {AcquireExternalFD, ReleaseExternalFD};

/* path relative to root when it lies below root, else NULL. */
static const char *
below_root(const char *root, const char *path)
{
	size_t		len;

	if (root == NULL)
		return NULL;
	len = strlen(root);
	if (strncmp(path, root, len) != 0)
		return NULL;
	if (len > 0 && root[len - 1] != '/')
	{
		if (path[len] != '/')
			return NULL;
		len++;
	}
	return path[len] != '\0' ? path + len : NULL;
}

/*
 * How a path is reached.  Below the store's root (confined): the directory
 * holding it, open at directory after a walk from the root, and its final
 * name, which open_path names for open() through /proc.  Elsewhere:
 * directory is AT_FDCWD and name and open_path are the path itself.
 */
typedef struct LocalAccess
{
	bool		confined;
	int			directory;
	const char *name;
	const char *open_path;
	char		entry[64 + NAME_MAX];
} LocalAccess;

static char *parent_directory(const char *path);
static LpErrorCode write_error_code(int errnum);

/*
 * Reach path (see LocalAccess); with create, the directories on the way are
 * made.  False with err set when the walk fails (LP_ERR_NOT_FOUND for a
 * missing directory, LP_ERR_INVALID_ARGUMENT for a symlink or another
 * entry that is not a directory).  close_access releases a confined one.
 */
static bool
open_access(const char *root, const char *path, bool create, LocalAccess *access,
			LpError *err)
{
	const char *relative = below_root(root, path);
	const char *slash;
	char	   *directory;

	access->confined = relative != NULL;
	access->directory = AT_FDCWD;
	access->name = path;
	access->open_path = path;
	if (!access->confined)
	{
		char	   *dir;

		if (!create)
			return true;
		dir = parent_directory(path);
		if (pg_mkdir_p(dir, pg_dir_create_mode) != 0 && errno != EEXIST)
			return lp_fail(err, write_error_code(errno), "could not create directory \"%s\": %s",
						   dir, strerror(errno));
		pfree(dir);
		return true;
	}
	/* the root is trusted: made as given when a dataset is created there */
	if (create && pg_mkdir_p(pstrdup(root), pg_dir_create_mode) != 0 && errno != EEXIST)
		return lp_fail(err, write_error_code(errno), "could not create directory \"%s\": %s",
					   root, strerror(errno));
	slash = strrchr(relative, '/');
	access->name = slash != NULL ? slash + 1 : relative;
	if (strlen(access->name) > NAME_MAX || strcmp(access->name, ".") == 0 ||
		strcmp(access->name, "..") == 0)
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT, "\"%s\" does not end in a file name", path);
	directory = slash != NULL ? pnstrdup(relative, slash - relative) : pstrdup("");
	access->directory = lp_posix_open_directory(root, directory, create, pg_dir_create_mode,
												&fd_budget, err);
	pfree(directory);
	if (access->directory < 0)
		return false;
	snprintf(access->entry, sizeof(access->entry), "/proc/self/fd/%d/%s",
			 access->directory, access->name);
	access->open_path = access->entry;
	return true;
}

static void
close_access(LocalAccess *access)
{
	if (access->confined && access->directory >= 0)
		lp_posix_close_directory(access->directory, &fd_budget);
	access->directory = -1;
}

/* OpenTransientFile of access->open_path; an ERROR in it still closes the access. */
static int
open_transient(LocalAccess *access, int flags)
{
	int			fd = -1;

	PG_TRY();
	{
		fd = OpenTransientFile(access->open_path,
							   flags | (access->confined ? O_NOFOLLOW : 0));
	}
	PG_CATCH();
	{
		close_access(access);
		PG_RE_THROW();
	}
	PG_END_TRY();
	return fd;
}

typedef struct LpLocalInput
{
	LpInput		base;
	int			fd;				/* -1 while a reopenable input is closed */
	char	   *path;
	char	   *root;			/* of the store that opened it, or NULL */
	bool		reopenable;
	MemoryContextCallback forget;	/* reopenable: see forget_input */
} LpLocalInput;

/*
 * Reopenable inputs hold a descriptor only while they are being read, one at
 * a time, so that assembling thousands of parts does not exhaust the
 * backend's file descriptors.
 */
static LpLocalInput *open_reopenable_input;

/*
 * When an ERROR frees a reopenable input, fd.c has closed its descriptor at
 * abort; it must not be remembered as open, or the next input would close
 * it again.
 */
static void
forget_input(void *arg)
{
	if (open_reopenable_input == arg)
		open_reopenable_input = NULL;
}

static void
close_descriptor(LpLocalInput *local)
{
	if (local->fd >= 0)
		CloseTransientFile(local->fd);
	local->fd = -1;
	if (open_reopenable_input == local)
		open_reopenable_input = NULL;
}

/*
 * Open a regular file for reading; -1 with err set otherwise.  O_NONBLOCK
 * keeps a FIFO from blocking the open (uncancelably, until a writer comes)
 * and the type is checked on the descriptor itself, so nothing can be
 * swapped in between; for a regular file the flag is cleared again.
 */
static int
open_regular_file(const char *root, const char *path, struct stat *st, LpError *err)
{
	LocalAccess access;
	int			fd;
	int			flags;

	if (!open_access(root, path, false, &access, err))
		return -1;
	fd = open_transient(&access, O_RDONLY | O_NONBLOCK | PG_BINARY);
	if (fd < 0)
	{
		int			save_errno = errno;

		close_access(&access);
		if (save_errno == ELOOP && access.confined)
			lp_fail(err, LP_ERR_INVALID_ARGUMENT, "\"%s\" is a symbolic link, not a regular file", path);
		else
			lp_fail(err, save_errno == ENOENT ? LP_ERR_NOT_FOUND : LP_ERR_IO,
					"could not open file \"%s\": %s", path, strerror(save_errno));
		return -1;
	}
	close_access(&access);
	if (fstat(fd, st) != 0)
	{
		lp_fail(err, LP_ERR_IO, "could not stat file \"%s\": %s", path, strerror(errno));
		CloseTransientFile(fd);
		return -1;
	}
	if (!S_ISREG(st->st_mode))
	{
		lp_fail(err, LP_ERR_INVALID_ARGUMENT, "\"%s\" is not a regular file", path);
		if (S_ISDIR(st->st_mode))
			lp_error_detail(err, "It is a directory; give the path of a .lance data file.");
		else
			lp_error_detail(err, "It is a FIFO, socket or device; Lance files are regular files.");
		CloseTransientFile(fd);
		return -1;
	}
	flags = fcntl(fd, F_GETFL);
	if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0)
	{
		lp_fail(err, LP_ERR_IO, "could not set flags of file \"%s\": %s", path, strerror(errno));
		CloseTransientFile(fd);
		return -1;
	}
	return fd;
}

/* Make sure local->fd is open, checking that the file kept its size. */
static bool
ensure_open(LpLocalInput *local, LpError *err)
{
	struct stat st;

	if (local->fd >= 0)
		return true;
	if (open_reopenable_input != NULL)
		close_descriptor(open_reopenable_input);
	local->fd = open_regular_file(local->root, local->path, &st, err);
	if (local->fd < 0)
		return false;
	open_reopenable_input = local;
	if ((uint64_t) st.st_size != local->base.size)
		return lp_fail(err, LP_ERR_CORRUPT,
					   "file \"%s\" changed size after it was validated (%llu bytes, now %llu)",
					   local->path, (unsigned long long) local->base.size,
					   (unsigned long long) st.st_size);
	return true;
}

/* Read up to len bytes at offset into buffer, *done of them: fewer only at the end of the file. */
static bool
local_input_read_some(LpInput *input, uint64_t offset, void *buffer, size_t len,
					  size_t *done, LpError *err)
{
	LpLocalInput *local = (LpLocalInput *) input;

	*done = 0;
	if (!ensure_open(local, err))
		return false;
	while (*done < len)
	{
		ssize_t		n;

		pgstat_report_wait_start(PG_WAIT_EXTENSION);
		n = pread(local->fd, (char *) buffer + *done, len - *done,
				  (off_t) (offset + *done));
		pgstat_report_wait_end();
		if (n < 0)
		{
			if (errno == EINTR)
				continue;
			return lp_fail(err, LP_ERR_IO, "could not read file \"%s\": %s",
						   local->path, strerror(errno));
		}
		if (n == 0)
			break;
		*done += (size_t) n;
	}
	return true;
}

static bool
local_input_read_at(LpInput *input, uint64_t offset, void *buffer, size_t len,
					LpError *err)
{
	size_t		done;

	if (!local_input_read_some(input, offset, buffer, len, &done, err))
		return false;
	if (done < len)
		return lp_fail(err, LP_ERR_CORRUPT,
					   "could not read file \"%s\": read %zu of %zu bytes at offset %llu",
					   input->name, done, len, (unsigned long long) offset);
	return true;
}

static void
local_input_close(LpInput *input)
{
	LpLocalInput *local = (LpLocalInput *) input;

	close_descriptor(local);
	/* a reopenable input's memory carries its reset callback: the context frees it */
	if (local->reopenable)
		return;
	pfree(local->path);
	pfree(local);
}

static const LpInputOps local_input_ops = {
	.read_at = local_input_read_at,
	.close = local_input_close,
	.read_some = local_input_read_some,
};

static LpInput *
local_store_open_input(LpStore *store, const char *path, LpError *err)
{
	LpLocalInput *local;
	struct stat st;
	int			fd;

	fd = open_regular_file(STORE_ROOT(store), path, &st, err);
	if (fd < 0)
		return NULL;

	local = palloc0(sizeof(LpLocalInput));
	local->base.ops = &local_input_ops;
	local->path = pstrdup(path);
	local->base.name = local->path;
	local->base.size = (uint64_t) st.st_size;
	local->fd = fd;
	return &local->base;
}

static LpInput *
local_store_open_input_lazily(LpStore *store, const char *path, uint64_t size,
							  LpError *err)
{
	LpLocalInput *local = palloc0(sizeof(LpLocalInput));

	local->base.ops = &local_input_ops;
	local->path = pstrdup(path);
	local->root = STORE_ROOT(store) != NULL ? pstrdup(STORE_ROOT(store)) : NULL;
	local->base.name = local->path;
	local->base.size = size;
	local->fd = -1;
	local->reopenable = true;
	local->forget.func = forget_input;
	local->forget.arg = local;
	MemoryContextRegisterResetCallback(CurrentMemoryContext, &local->forget);
	return &local->base;
}

/* ---- outputs -------------------------------------------------------------- */

typedef struct LpLocalOutput
{
	LpOutput	base;
	int			fd;
	char	   *path;			/* final name */
	char	   *temp_path;
	char	   *root;			/* of the store that created it, or NULL */
	dev_t		temp_device;	/* identity of the temporary file, for sharing */
	ino_t		temp_inode;
	dev_t		directory_device;	/* identity of its directory, when confined */
	ino_t		directory_inode;
	bool		finished;		/* published or aborted */
	bool		copy_range_refused; /* copy_file_range is not possible here */
	char	   *parts_token;	/* once written by part number (start_parts) */
	uint64		part_start;		/* a part writer's bytes: [part_start, part_end) */
	uint64		part_end;
	MemoryContextCallback cleanup;
} LpLocalOutput;

/*
 * The code of a failed write, create, copy or fsync: no space and no quota
 * left are disk_full (53100), as PostgreSQL reports them for its own files.
 */
static LpErrorCode
write_error_code(int errnum)
{
	return errnum == ENOSPC || errnum == EDQUOT ? LP_ERR_DISK_FULL : LP_ERR_IO;
}

/* fsync a directory so a new or renamed entry in it is durable. */
static bool
fsync_directory(const char *path, LpError *err)
{
	int			fd = OpenTransientFile(path, O_RDONLY | PG_BINARY);

	if (fd < 0)
		return lp_fail(err, LP_ERR_IO, "could not open directory \"%s\": %s",
					   path, strerror(errno));
	if (pg_fsync(fd) != 0)
	{
		int			save_errno = errno;

		CloseTransientFile(fd);
		return lp_fail(err, write_error_code(save_errno), "could not fsync directory \"%s\": %s",
					   path, strerror(save_errno));
	}
	CloseTransientFile(fd);
	return true;
}

static char *
parent_directory(const char *path)
{
	char	   *dir = pstrdup(path);
	char	   *slash = strrchr(dir, '/');

	if (slash == NULL)
		return pstrdup(".");
	if (slash == dir)
		slash[1] = '\0';
	else
		*slash = '\0';
	return dir;
}

static const char *
file_name_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash != NULL ? slash + 1 : path;
}

/*
 * A name in the same directory that no Lance reader looks at: it starts with
 * a dot and ends in ".tmp", never in ".lance" or "manifest".  The final name
 * is shortened (at a character boundary) where the whole would not fit in
 * NAME_MAX; the random part keeps it unique.
 */
static char *
temporary_name_for(const char *path)
{
	char	   *dir = parent_directory(path);
	const char *base = file_name_of(path);
	int			base_bytes = (int) strlen(base);
	char		pid[16];
	int			added_bytes;
	uint64		nonce;

	if (!pg_strong_random(&nonce, sizeof(nonce)))
		ereport(ERROR,
				errcode(ERRCODE_INTERNAL_ERROR),
				errmsg("could not generate random name for a temporary file"));
	snprintf(pid, sizeof(pid), "%d", MyProcPid);
	/* ".", ".<pid>", ".<16 hex digits>", ".tmp" */
	added_bytes = 1 + 1 + (int) strlen(pid) + 1 + 16 + 4;
	if (base_bytes + added_bytes > NAME_MAX)
		base_bytes = pg_mbcliplen(base, base_bytes, NAME_MAX - added_bytes);
	return psprintf("%s/.%.*s.%s.%016llx.tmp", dir, base_bytes, base, pid,
					(unsigned long long) nonce);
}

static bool
write_all(int fd, const char *path, uint64_t offset, const void *data,
		  size_t len, LpError *err)
{
	size_t		done = 0;

	while (done < len)
	{
		ssize_t		n;

		pgstat_report_wait_start(PG_WAIT_EXTENSION);
		n = pwrite(fd, (const char *) data + done, len - done,
				   (off_t) (offset + done));
		pgstat_report_wait_end();
		if (n < 0)
		{
			if (errno == EINTR)
				continue;
			return lp_fail(err, write_error_code(errno), "could not write file \"%s\": %s",
						   path, strerror(errno));
		}
		done += (size_t) n;
	}
	return true;
}

static bool
local_output_write_at(LpOutput *output, uint64_t offset, const void *data,
					  size_t len, LpError *err)
{
	LpLocalOutput *local = (LpLocalOutput *) output;

	return write_all(local->fd, local->temp_path, offset, data, len, err);
}

#define COPY_BOUNCE_BYTES (1024 * 1024)

/* Copy through memory, for when the kernel cannot copy between the files. */
static bool
copy_through_buffer(LpLocalOutput *local, uint64_t output_offset, LpInput *input,
					uint64_t input_offset, uint64_t len, LpError *err)
{
	char	   *buffer = palloc(Min(len, COPY_BOUNCE_BYTES));
	bool		ok = true;

	while (ok && len > 0)
	{
		size_t		piece = (size_t) Min(len, COPY_BOUNCE_BYTES);

		ok = !lp_check_cancel(err) &&
			local_input_read_at(input, input_offset, buffer, piece, err) &&
			write_all(local->fd, local->temp_path, output_offset, buffer, piece, err);
		input_offset += piece;
		output_offset += piece;
		len -= piece;
	}
	pfree(buffer);
	return ok;
}

/*
 * Kernel-side copy between local files; on filesystems with reflinks
 * (XFS, btrfs) aligned ranges are cloned rather than copied.  Between
 * filesystems the kernel may refuse (EXDEV and others); the copy then goes
 * through memory, for this and every later range of the output.
 */
static bool
local_output_copy_from(LpOutput *output, uint64_t output_offset,
					   LpInput *input, uint64_t input_offset, uint64_t len,
					   LpError *err)
{
	LpLocalOutput *local = (LpLocalOutput *) output;
	LpLocalInput *source = (LpLocalInput *) input;
	loff_t		in_off = (loff_t) input_offset;
	loff_t		out_off = (loff_t) output_offset;

	if (input->ops != &local_input_ops)
		return lp_fail(err, LP_ERR_UNSUPPORTED,
					   "cannot copy \"%s\" into local file \"%s\" without reading it",
					   input->name, local->path);
	if (!ensure_open(source, err))
		return false;
	if (!lp_range_within(input_offset, len, input->size))
		return lp_fail(err, LP_ERR_CORRUPT,
					   "copy of %llu bytes at offset %llu is beyond the end of file \"%s\" (%llu bytes)",
					   (unsigned long long) len, (unsigned long long) input_offset,
					   input->name, (unsigned long long) input->size);

	while (len > 0 && !local->copy_range_refused)
	{
		ssize_t		n;

		if (lp_check_cancel(err))
			return false;
		pgstat_report_wait_start(PG_WAIT_EXTENSION);
		n = copy_file_range(source->fd, &in_off, local->fd, &out_off,
							(size_t) Min(len, (uint64_t) 1 << 30), 0);
		pgstat_report_wait_end();
		if (n < 0)
		{
			if (errno == EINTR)
				continue;
			if (errno == EXDEV || errno == EOPNOTSUPP || errno == ENOSYS || errno == EINVAL)
			{
				local->copy_range_refused = true;
				break;
			}
			return lp_fail(err, write_error_code(errno), "could not copy from \"%s\" to \"%s\": %s",
						   input->name, local->temp_path, strerror(errno));
		}
		if (n == 0)
			return lp_fail(err, LP_ERR_CORRUPT,
						   "could not read file \"%s\": unexpected end of file at offset %llu",
						   input->name, (unsigned long long) in_off);
		len -= (uint64_t) n;
	}
	return len == 0 ||
		copy_through_buffer(local, (uint64_t) out_off, input, (uint64_t) in_off, len, err);
}

/*
 * Remove the temporary file, below the store's root without following a
 * symlink on the way; never raises (it runs in a reset callback too).
 */
static void
remove_temporary(LpLocalOutput *local)
{
	const char *relative = below_root(local->root, local->temp_path);
	bool		removed;
	LpError		err;

	if (relative == NULL)
		unlink(local->temp_path);
	else
		(void) lp_posix_remove_file(local->root, relative, &fd_budget, &removed, &err);
}

static void
local_output_finish(LpLocalOutput *local, bool remove_temp)
{
	if (local->fd >= 0)
		CloseTransientFile(local->fd);
	local->fd = -1;
	if (remove_temp)
		remove_temporary(local);
	local->finished = true;
}

/*
 * Reach the directory of the output's final name again; when confined it
 * must be the directory its temporary file was created in.
 */
static bool
open_output_directory(LpLocalOutput *local, LocalAccess *access, LpError *err)
{
	struct stat st;

	if (!open_access(local->root, local->path, false, access, err))
		return false;
	if (access->confined &&
		(fstat(access->directory, &st) != 0 || st.st_dev != local->directory_device ||
		 st.st_ino != local->directory_inode))
	{
		close_access(access);
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
					   "the directory of \"%s\" was replaced while the file was written", local->path);
	}
	return true;
}

/* The temporary file's name relative to access->directory. */
static const char *
temporary_name_at(const LpLocalOutput *local, const LocalAccess *access)
{
	return access->confined ? file_name_of(local->temp_path) : local->temp_path;
}

/* fsync the directory of access (holding path) so a new or renamed entry in it is durable. */
static bool
fsync_access_directory(const LocalAccess *access, const char *path, LpError *err)
{
	char	   *dir;
	bool		ok;

	if (access->confined)
	{
		int			save_errno;

		if (pg_fsync(access->directory) == 0)
			return true;
		save_errno = errno;
		dir = parent_directory(path);
		return lp_fail(err, write_error_code(save_errno), "could not fsync directory \"%s\": %s",
					   dir, strerror(save_errno));
	}
	dir = parent_directory(path);
	ok = fsync_directory(dir, err);
	pfree(dir);
	return ok;
}

static bool
local_output_publish(LpOutput *output, LpError *err)
{
	LpLocalOutput *local = (LpLocalOutput *) output;
	LocalAccess access;
	bool		synced;

	if (pg_fsync(local->fd) != 0)
	{
		lp_fail(err, write_error_code(errno), "could not fsync file \"%s\": %s",
				local->temp_path, strerror(errno));
		local_output_finish(local, true);
		return false;
	}
	CloseTransientFile(local->fd);
	local->fd = -1;

	/* a cancel that arrived during the fsync still prevents publication */
	if (lp_check_cancel(err) || !open_output_directory(local, &access, err))
	{
		local_output_finish(local, true);
		return false;
	}

	/* link() never replaces an existing file: a final name is written once */
	if (linkat(access.directory, temporary_name_at(local, &access),
			   access.directory, access.name, 0) != 0)
	{
		if (errno == EEXIST)
			lp_fail(err, LP_ERR_ALREADY_EXISTS, "file \"%s\" already exists", local->path);
		else
			lp_fail(err, write_error_code(errno), "could not link file \"%s\" to \"%s\": %s",
					local->temp_path, local->path, strerror(errno));
		close_access(&access);
		local_output_finish(local, true);
		return false;
	}
	local_output_finish(local, true);

	/*
	 * The file is visible under its final name: a failure reported now would
	 * have the caller believe it was not created (a published manifest whose
	 * commit then fails is retried, and its rows added twice).
	 */
	synced = fsync_access_directory(&access, local->path, err);
	close_access(&access);
	if (!synced)
	{
		ereport(WARNING,
				errcode(ERRCODE_IO_ERROR),
				errmsg_internal("%s", err->message),
				errdetail("File \"%s\" is in place, but may not survive a crash of the operating system.",
						  local->path));
		lp_error_clear(err);
	}
	return true;
}

static void
local_output_abort(LpOutput *output)
{
	local_output_finish((LpLocalOutput *) output, true);
}

/*
 * Runs when the memory context holding the output goes away.  After an
 * ERROR, fd.c has already closed the descriptor; only the temporary file is
 * left to remove.
 */
static void
local_output_cleanup(void *arg)
{
	LpLocalOutput *local = (LpLocalOutput *) arg;

	if (!local->finished)
		remove_temporary(local);
}

/*
 * The token of a local output: the device and inode of its temporary file,
 * then the file's full path (of any length, without a terminating NUL).
 * Whoever opens it checks that the path still names that file.
 */
#define SHARE_TOKEN_HEADER_BYTES (2 * sizeof(uint64))

static size_t
local_output_share_token(LpOutput *output, void *buffer, size_t capacity)
{
	LpLocalOutput *local = (LpLocalOutput *) output;
	size_t		path_bytes = strlen(local->temp_path);
	uint64		device = (uint64) local->temp_device;
	uint64		inode = (uint64) local->temp_inode;

	if (capacity >= SHARE_TOKEN_HEADER_BYTES + path_bytes)
	{
		memcpy(buffer, &device, sizeof(device));
		memcpy((char *) buffer + sizeof(device), &inode, sizeof(inode));
		memcpy((char *) buffer + SHARE_TOKEN_HEADER_BYTES, local->temp_path, path_bytes);
	}
	return SHARE_TOKEN_HEADER_BYTES + path_bytes;
}

/*
 * Numbered parts of a local output are written in place, each at its offset
 * in the temporary file, so publish has nothing to join and a receipt says
 * nothing.  The parts token is the share token as text: "<device>:<inode>:"
 * and the temporary file's path.
 */
static const char *
local_output_start_parts(LpOutput *output, LpError *err)
{
	LpLocalOutput *local = (LpLocalOutput *) output;

	if (local->parts_token == NULL)
		local->parts_token = psprintf(UINT64_FORMAT ":" UINT64_FORMAT ":%s",
									  (uint64) local->temp_device, (uint64) local->temp_inode,
									  local->temp_path);
	return local->parts_token;
}

static bool
local_output_add_part(LpOutput *output, uint32_t number, const char *receipt, LpError *err)
{
	if (receipt[0] != '\0')
		return lp_fail(err, LP_ERR_INTERNAL, "part %u of \"%s\" has a receipt of another store",
					   number, output->name);
	return true;
}

static bool local_output_clone_range(LpOutput *output, uint64_t output_offset,
									 LpInput *input, uint64_t input_offset, uint64_t len);

static const LpOutputOps local_output_ops = {
	.write_at = local_output_write_at,
	.copy_from = local_output_copy_from,
	.clone_range = local_output_clone_range,
	.publish = local_output_publish,
	.abort = local_output_abort,
	.share_token = local_output_share_token,
	.start_parts = local_output_start_parts,
	.add_part = local_output_add_part
};

static LpOutput *
local_store_create_output(LpStore *store, const char *path, LpError *err)
{
	LpLocalOutput *local;
	LocalAccess access;
	struct stat st;

	if (strlen(file_name_of(path)) > NAME_MAX)
	{
		lp_fail(err, LP_ERR_INVALID_ARGUMENT,
				"could not create file \"%s\": its name is longer than %d bytes",
				path, NAME_MAX);
		return NULL;
	}

	local = palloc0(sizeof(LpLocalOutput));
	local->base.ops = &local_output_ops;
	local->path = pstrdup(path);
	local->base.name = local->path;
	local->temp_path = temporary_name_for(path);
	local->root = STORE_ROOT(store) != NULL ? pstrdup(STORE_ROOT(store)) : NULL;
	local->finished = true;		/* nothing to clean up before the file exists */
	local->cleanup.func = local_output_cleanup;
	local->cleanup.arg = local;
	MemoryContextRegisterResetCallback(CurrentMemoryContext, &local->cleanup);
	if (!open_access(local->root, local->temp_path, true, &access, err))
		return NULL;
	if (access.confined)
	{
		if (fstat(access.directory, &st) != 0)
		{
			lp_fail(err, LP_ERR_IO, "could not stat the directory of \"%s\": %s",
					local->path, strerror(errno));
			close_access(&access);
			return NULL;
		}
		local->directory_device = st.st_dev;
		local->directory_inode = st.st_ino;
	}
	/* O_EXCL already refuses a symlink at the name; O_NOFOLLOW says so too */
	local->fd = open_transient(&access, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | PG_BINARY);
	if (local->fd < 0)
		lp_fail(err, write_error_code(errno), "could not create file \"%s\": %s",
				local->temp_path, strerror(errno));
	close_access(&access);
	if (local->fd < 0)
		return NULL;
	local->finished = false;
	if (fstat(local->fd, &st) != 0)
	{
		lp_fail(err, LP_ERR_IO, "could not stat file \"%s\": %s",
				local->temp_path, strerror(errno));
		local_output_abort(&local->base);
		return NULL;
	}
	local->temp_device = st.st_dev;
	local->temp_inode = st.st_ino;
	ereport(DEBUG2,
			errmsg_internal("writing \"%s\" as temporary file \"%s\"",
							local->path, local->temp_path));
	return &local->base;
}

/*
 * Another process's output, opened for writing spans of it (or one part of
 * it).  It is never published or removed from here: publish() is refused
 * and abort() only closes the descriptor.
 */
static bool
shared_output_publish(LpOutput *output, LpError *err)
{
	return lp_fail(err, LP_ERR_INTERNAL, "file \"%s\" is published by the process that created it",
				   ((LpLocalOutput *) output)->temp_path);
}

static void
shared_output_close(LpOutput *output)
{
	LpLocalOutput *local = (LpLocalOutput *) output;

	if (local->fd >= 0)
		CloseTransientFile(local->fd);
	local->fd = -1;
}

/* a worker's copy of its span never clones (the leader plans clones) */
static const LpOutputOps shared_output_ops = {
	.write_at = local_output_write_at,
	.copy_from = local_output_copy_from,
	.publish = shared_output_publish,
	.abort = shared_output_close
};

/*
 * Open the temporary file at path for writing without following a
 * symlink, and only if it is the very file (device, inode) its creator
 * holds: a file or symlink put at that name meanwhile is refused, never
 * written.
 */
static LpLocalOutput *
open_temporary_file(const char *path, uint64 device, uint64 inode, const LpOutputOps *ops,
					LpError *err)
{
	LpLocalOutput *local;
	struct stat st;

	local = palloc0(sizeof(LpLocalOutput));
	local->base.ops = ops;
	local->path = pstrdup(path);
	local->base.name = local->path;
	local->temp_path = local->path;
	local->finished = true;
	local->fd = OpenTransientFile(local->path, O_WRONLY | O_NOFOLLOW | PG_BINARY);
	if (local->fd < 0)
	{
		lp_fail(err, LP_ERR_IO, "could not open file \"%s\": %s",
				local->path, strerror(errno));
		return NULL;
	}
	if (fstat(local->fd, &st) != 0)
	{
		lp_fail(err, LP_ERR_IO, "could not stat file \"%s\": %s",
				local->path, strerror(errno));
		shared_output_close(&local->base);
		return NULL;
	}
	if (!S_ISREG(st.st_mode) || (uint64) st.st_dev != device || (uint64) st.st_ino != inode)
	{
		lp_fail(err, LP_ERR_IO, "file \"%s\" is not the temporary file being written",
				local->path);
		lp_error_detail(err, "Another file was put at its name after it was created; nothing is written to it.");
		shared_output_close(&local->base);
		return NULL;
	}
	return local;
}

static LpOutput *
local_store_open_shared_output(LpStore *store, const void *token, size_t len,
							   LpError *err)
{
	const char *path_chars = (const char *) token + SHARE_TOKEN_HEADER_BYTES;
	uint64		device;
	uint64		inode;
	LpLocalOutput *local;

	if (len <= SHARE_TOKEN_HEADER_BYTES ||
		memchr(path_chars, '\0', len - SHARE_TOKEN_HEADER_BYTES) != NULL)
	{
		lp_fail(err, LP_ERR_INTERNAL, "malformed token of a shared output (%zu bytes)", len);
		return NULL;
	}
	memcpy(&device, token, sizeof(device));
	memcpy(&inode, (const char *) token + sizeof(device), sizeof(inode));
	local = open_temporary_file(pnstrdup(path_chars, len - SHARE_TOKEN_HEADER_BYTES),
								device, inode, &shared_output_ops, err);
	return local != NULL ? &local->base : NULL;
}

/* ---- part writers ---------------------------------------------------------- */

/* A part writer writes only its own part's bytes. */
static bool
check_within_part(LpLocalOutput *local, uint64_t offset, uint64_t len, LpError *err)
{
	if (offset < local->part_start || offset > local->part_end ||
		len > local->part_end - offset)
		return lp_fail(err, LP_ERR_INTERNAL,
					   "write of " UINT64_FORMAT " bytes at offset " UINT64_FORMAT " is outside the part of \"%s\" being written",
					   (uint64) len, (uint64) offset, local->path);
	return true;
}

static bool
part_write_at(LpOutput *output, uint64_t offset, const void *data, size_t len, LpError *err)
{
	return check_within_part((LpLocalOutput *) output, offset, len, err) &&
		local_output_write_at(output, offset, data, len, err);
}

static bool
part_copy_from(LpOutput *output, uint64_t output_offset, LpInput *input,
			   uint64_t input_offset, uint64_t len, LpError *err)
{
	return check_within_part((LpLocalOutput *) output, output_offset, len, err) &&
		local_output_copy_from(output, output_offset, input, input_offset, len, err);
}

/* written in place: nothing left to do but close it */
static bool
part_end(LpOutput *output, char *receipt, size_t receipt_capacity, LpError *err)
{
	shared_output_close(output);
	if (receipt_capacity == 0)
		return lp_fail(err, LP_ERR_INTERNAL, "no room for the receipt of a part of \"%s\"",
					   output->name);
	receipt[0] = '\0';
	return true;
}

static const LpOutputOps part_writer_ops = {
	.write_at = part_write_at,
	.copy_from = part_copy_from,
	.publish = shared_output_publish,
	.abort = shared_output_close,
	.end_part = part_end
};

/*
 * A writer of output bytes [offset, offset + length) of the temporary file
 * a parts token names (local_output_start_parts), opened as
 * open_shared_output opens it.
 */
static LpOutput *
local_store_open_part(LpStore *store, const char *output_path, const char *parts_token,
					  uint32_t number, uint64_t offset, uint64_t length, LpError *err)
{
	unsigned long long device;
	unsigned long long inode;
	int			path_at = -1;
	LpLocalOutput *local;

	if (sscanf(parts_token, "%llu:%llu:%n", &device, &inode, &path_at) != 2 || path_at < 0 ||
		parts_token[path_at] != '/' || offset > PG_UINT64_MAX - length)
	{
		lp_fail(err, LP_ERR_INTERNAL, "malformed part %u of \"%s\"", number, output_path);
		return NULL;
	}
	local = open_temporary_file(parts_token + path_at, device, inode, &part_writer_ops, err);
	if (local == NULL)
		return NULL;
	local->part_start = offset;
	local->part_end = offset + length;
	return &local->base;
}

/* ---- extent clones (reflink) ---------------------------------------------- */

/* The deepest existing directory on the way to path. */
static char *
existing_ancestor(const char *path)
{
	char	   *dir = parent_directory(path);
	struct stat st;

	while (stat(dir, &st) != 0 && strcmp(dir, "/") != 0 && strcmp(dir, ".") != 0)
	{
		char	   *up = parent_directory(dir);

		pfree(dir);
		dir = up;
	}
	return dir;
}

/*
 * XFS and btrfs share extents between files of one filesystem, in blocks of
 * the filesystem's size.
 */
static uint64_t
local_store_clone_alignment(LpStore *store, const char *output_path,
							const char *const *input_paths, int num_inputs)
{
	char	   *dir = existing_ancestor(output_path);
	struct statfs fs;
	struct stat dir_st;
	uint64		block;

	if (statfs(dir, &fs) != 0 || stat(dir, &dir_st) != 0)
		return 0;
	pfree(dir);
	if (fs.f_type != XFS_SUPER_MAGIC && fs.f_type != BTRFS_SUPER_MAGIC)
		return 0;
	block = (uint64) fs.f_bsize;
	if (block == 0 || (block & (block - 1)) != 0)
		return 0;
	for (int i = 0; i < num_inputs; i++)
	{
		struct stat st;

		/* extents are shared only within one filesystem */
		if (stat(input_paths[i], &st) != 0 || st.st_dev != dir_st.st_dev)
			return 0;
	}
	return block;
}

static bool
local_output_clone_range(LpOutput *output, uint64_t output_offset, LpInput *input,
						 uint64_t input_offset, uint64_t len)
{
	LpLocalOutput *local = (LpLocalOutput *) output;
	LpLocalInput *source = (LpLocalInput *) input;
	struct file_clone_range range;
	LpError		err;
	int			rc;

	if (input->ops != &local_input_ops || !ensure_open(source, &err))
		return false;
	range.src_fd = source->fd;
	range.src_offset = input_offset;
	range.src_length = len;
	range.dest_offset = output_offset;
	pgstat_report_wait_start(PG_WAIT_EXTENSION);
	rc = ioctl(local->fd, FICLONERANGE, &range);
	pgstat_report_wait_end();
	return rc == 0;
}

/* ---- the store ------------------------------------------------------------ */

/* Below the store's root a final symlink is reported, never followed. */
static bool
local_store_stat(LpStore *store, const char *path, bool follow_symlinks,
				 LpStat *result, LpError *err)
{
	LocalAccess access;
	bool		ok;

	if (!open_access(STORE_ROOT(store), path, false, &access, err))
	{
		if (err->code != LP_ERR_NOT_FOUND)
			return false;
		lp_error_clear(err);
		memset(result, 0, sizeof(*result));
		result->kind = LP_OBJECT_ABSENT;
		return true;
	}
	ok = lp_posix_stat_at(access.directory, access.name, path,
						  follow_symlinks && !access.confined, result, err);
	close_access(&access);
	return ok;
}

static char *
local_store_canonical(LpStore *store, const char *path, const char *what, LpError *err)
{
	return lp_posix_canonical(path, what, err);
}

static bool
local_store_same_object(LpStore *store, const char *path_a, const char *path_b)
{
	return lp_posix_same_file(path_a, path_b);
}

static bool
local_store_list(LpStore *store, const char *directory,
				 LpListCallback callback, void *arg, LpError *err)
{
	const char *relative = below_root(STORE_ROOT(store), directory);
	char		entry[64];
	DIR		   *dir;
	struct dirent *entry_name;

	if (relative != NULL)
	{
		int			fd = lp_posix_open_directory(STORE_ROOT(store), relative, false, 0,
												 &fd_budget, err);

		if (fd < 0)
			return false;
		snprintf(entry, sizeof(entry), "/proc/self/fd/%d", fd);
		PG_TRY();
		{
			dir = AllocateDir(entry);
		}
		PG_CATCH();
		{
			lp_posix_close_directory(fd, &fd_budget);
			PG_RE_THROW();
		}
		PG_END_TRY();
		lp_posix_close_directory(fd, &fd_budget);
	}
	else
		dir = AllocateDir(directory);
	if (dir == NULL)
		return lp_fail(err, errno == ENOENT ? LP_ERR_NOT_FOUND : LP_ERR_IO,
					   "could not open directory \"%s\": %s",
					   directory, strerror(errno));
	errno = 0;
	while ((entry_name = readdir(dir)) != NULL)
	{
		if (strcmp(entry_name->d_name, ".") == 0 || strcmp(entry_name->d_name, "..") == 0)
			continue;
		if (!callback(arg, entry_name->d_name, err))
		{
			FreeDir(dir);
			return false;
		}
		errno = 0;
	}
	if (errno != 0)
	{
		lp_fail(err, LP_ERR_IO, "could not read directory \"%s\": %s",
				directory, strerror(errno));
		FreeDir(dir);
		return false;
	}
	FreeDir(dir);
	return true;
}

static bool
write_whole_output(LpStore *store, const char *path, const void *data,
				   size_t len, LpError *err, LpLocalOutput **result)
{
	LpOutput   *output = local_store_create_output(store, path, err);

	if (output == NULL)
		return false;
	if (!local_output_write_at(output, 0, data, len, err) ||
		pg_fsync(((LpLocalOutput *) output)->fd) != 0)
	{
		if (err->code == LP_OK)
			lp_fail(err, write_error_code(errno), "could not fsync file \"%s\": %s",
					((LpLocalOutput *) output)->temp_path, strerror(errno));
		local_output_abort(output);
		return false;
	}
	*result = (LpLocalOutput *) output;
	return true;
}

static bool
local_store_put_if_absent(LpStore *store, const char *path, const void *data,
						  size_t len, LpError *err)
{
	LpLocalOutput *local;

	lp_error_clear(err);
	if (!write_whole_output(store, path, data, len, err, &local))
		return false;
	return local_output_publish(&local->base, err);
}

static bool
local_store_put(LpStore *store, const char *path, const void *data,
				size_t len, LpError *err)
{
	LpLocalOutput *local;
	LocalAccess access;
	bool		ok;

	lp_error_clear(err);
	if (!write_whole_output(store, path, data, len, err, &local))
		return false;
	CloseTransientFile(local->fd);
	local->fd = -1;
	if (!open_output_directory(local, &access, err))
	{
		local_output_finish(local, true);
		return false;
	}
	if (renameat(access.directory, temporary_name_at(local, &access),
				 access.directory, access.name) != 0)
	{
		lp_fail(err, write_error_code(errno), "could not rename file \"%s\" to \"%s\": %s",
				local->temp_path, local->path, strerror(errno));
		close_access(&access);
		local_output_finish(local, true);
		return false;
	}
	local->finished = true;
	ok = fsync_access_directory(&access, path, err);
	close_access(&access);
	return ok;
}

static bool
local_store_remove(LpStore *store, const char *path, LpError *err)
{
	LocalAccess access;
	struct stat st;
	bool		ok = true;

	if (!open_access(STORE_ROOT(store), path, false, &access, err))
	{
		if (err->code != LP_ERR_NOT_FOUND)
			return false;
		lp_error_clear(err);
		return true;
	}
	if (fstatat(access.directory, access.name, &st, AT_SYMLINK_NOFOLLOW) != 0)
	{
		if (errno != ENOENT)
			ok = lp_fail(err, LP_ERR_IO, "could not stat file \"%s\": %s",
						 path, strerror(errno));
	}
	else if (unlinkat(access.directory, access.name,
					  S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0) != 0 && errno != ENOENT)
		ok = lp_fail(err, LP_ERR_IO, "could not remove \"%s\": %s",
					 path, strerror(errno));
	close_access(&access);
	return ok;
}

static bool
local_store_link_file(LpStore *store, const char *from, const char *to, LpError *err)
{
	LocalAccess source;
	LocalAccess target;
	struct stat st;
	bool		ok = true;

	if (!open_access(STORE_ROOT(store), from, false, &source, err))
		return false;
	if (fstatat(source.directory, source.name, &st, AT_SYMLINK_NOFOLLOW) != 0)
		ok = lp_fail(err, errno == ENOENT ? LP_ERR_NOT_FOUND : LP_ERR_IO,
					 "could not stat file \"%s\": %s", from, strerror(errno));
	else if (!S_ISREG(st.st_mode))
		ok = lp_fail(err, LP_ERR_INVALID_ARGUMENT, "\"%s\" is not a regular file", from);
	if (!ok)
	{
		close_access(&source);
		return false;
	}
	if (!open_access(STORE_ROOT(store), to, true, &target, err))
	{
		close_access(&source);
		return false;
	}
	/* flags 0: a symlink at from is linked as itself, never followed (checked above) */
	if (linkat(source.directory, source.name, target.directory, target.name, 0) != 0)
	{
		if (errno == EXDEV || errno == EPERM || errno == EMLINK)
			ok = lp_fail(err, LP_ERR_UNSUPPORTED, "could not link file \"%s\" to \"%s\": %s",
						 from, to, strerror(errno));
		else if (errno == EEXIST)
			ok = lp_fail(err, LP_ERR_ALREADY_EXISTS, "file \"%s\" already exists", to);
		else
			ok = lp_fail(err, write_error_code(errno), "could not link file \"%s\" to \"%s\": %s",
						 from, to, strerror(errno));
	}
	else
		ok = fsync_access_directory(&target, to, err);
	close_access(&target);
	close_access(&source);
	return ok;
}

static bool
local_store_remove_tree(LpStore *store, const char *root, const char *relative,
						LpTreeRemoval *result, LpError *err)
{
	return lp_posix_remove_tree(root, relative, &fd_budget, result, err);
}

static bool
local_store_remove_file(LpStore *store, const char *root, const char *relative,
						bool *removed, LpError *err)
{
	return lp_posix_remove_file(root, relative, &fd_budget, removed, err);
}

static const LpStoreOps local_store_ops = {
	.open_input = local_store_open_input,
	.open_input_lazily = local_store_open_input_lazily,
	.stat = local_store_stat,
	.canonical = local_store_canonical,
	.same_object = local_store_same_object,
	.clone_alignment = local_store_clone_alignment,
	.list = local_store_list,
	.put_if_absent = local_store_put_if_absent,
	.put = local_store_put,
	.remove = local_store_remove,
	.remove_tree = local_store_remove_tree,
	.remove_file = local_store_remove_file,
	.link_file = local_store_link_file,
	.create_output = local_store_create_output,
	.open_shared_output = local_store_open_shared_output,
	.open_part = local_store_open_part
};

static LpLocalStore local_store = {{&local_store_ops}, NULL};

LpStore *
lp_local_store(void)
{
	return &local_store.base;
}

/*
 * The stores made for roots, kept for the backend's life so that one root
 * always gives one store (callers compare stores) and none dangles: a
 * backend names few roots.
 */
static List *stores_below_roots = NIL;

LpStore *
lp_local_store_below(const char *root)
{
	LpLocalStore *store;
	MemoryContext old;
	ListCell   *cell;

	foreach(cell, stores_below_roots)
	{
		store = lfirst(cell);
		if (strcmp(store->root, root) == 0)
			return &store->base;
	}
	old = MemoryContextSwitchTo(TopMemoryContext);
	store = palloc(sizeof(LpLocalStore));
	store->base.ops = &local_store_ops;
	store->root = pstrdup(root);
	stores_below_roots = lappend(stores_below_roots, store);
	MemoryContextSwitchTo(old);
	return &store->base;
}

bool
lp_is_local_store(const LpStore *store)
{
	return store->ops == &local_store_ops;
}
