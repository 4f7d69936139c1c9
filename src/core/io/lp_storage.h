/*
 * lp_storage.h - the small I/O interface the core reads and writes through.
 *
 * Backends (local files through fd.c, S3 through libcurl, memory for tests
 * and fuzzing) embed LpInput/LpOutput as their first member.  An input or
 * output may take memory (lp_alloc) in any call and keep it until it is
 * closed, published or aborted: an embedder whose allocator has scopes (the
 * server's memory contexts) makes every call in the scope it was opened in.
 */
#ifndef LP_STORAGE_H
#define LP_STORAGE_H

#include <stdbool.h>
#include <stdint.h>

#include "base/lp_error.h"

typedef struct LpInput LpInput;

/* A run of bytes of a file. */
typedef struct LpByteRange
{
	uint64_t	offset;
	uint64_t	len;
} LpByteRange;

typedef struct LpInputOps
{
	/* Read exactly len bytes at offset; a short read is an error. */
	bool		(*read_at) (LpInput *input, uint64_t offset, void *buffer,
							size_t len, LpError *err);
	void		(*close) (LpInput *input);

	/*
	 * Optional (read-ahead): start fetching ranges that reads will ask for
	 * soon, without waiting; read_at serves them when they come.  A hint
	 * only: the input may fetch less, and false with err only for a cancel
	 * or a failure to start.
	 */
	bool		(*prefetch) (LpInput *input, const LpByteRange *ranges, size_t num_ranges,
							 LpError *err);

	/*
	 * Optional: read up to len bytes at offset, *got of them, fewer only at
	 * the end of the file (0 from there on), whatever size says.  For files
	 * that may hold more than their size (a /proc file says 0 bytes): a
	 * copy reads them to their end.  NULL where the size is exact (objects).
	 */
	bool		(*read_some) (LpInput *input, uint64_t offset, void *buffer, size_t len,
							  size_t *got, LpError *err);
} LpInputOps;

struct LpInput
{
	const LpInputOps *ops;
	const char *name;			/* for messages: the path or URI */
	uint64_t	size;			/* exact size in bytes */
};

static inline bool
lp_input_read(LpInput *input, uint64_t offset, void *buffer, size_t len,
			  LpError *err)
{
	if (offset > input->size || len > input->size - offset)
		return lp_fail(err, LP_ERR_CORRUPT,
					   "read of %zu bytes at offset %llu is beyond the end of file \"%s\" (%llu bytes)",
					   len, (unsigned long long) offset, input->name,
					   (unsigned long long) input->size);
	return input->ops->read_at(input, offset, buffer, len, err);
}

/* LpInputOps.prefetch where the input has it; nothing to do elsewhere. */
static inline bool
lp_input_prefetch(LpInput *input, const LpByteRange *ranges, size_t num_ranges, LpError *err)
{
	if (input->ops->prefetch == NULL || num_ranges == 0)
		return true;
	return input->ops->prefetch(input, ranges, num_ranges, err);
}

static inline void
lp_input_close(LpInput *input)
{
	if (input)
		input->ops->close(input);
}

/*
 * An output file being written.  It is created under a temporary name next
 * to its final path; publish() makes it durable (fsync) and visible under the
 * final name atomically, abort() removes the temporary file.  Either must be
 * called exactly once, and frees the output.
 */
typedef struct LpOutput LpOutput;

typedef struct LpOutputOps
{
	bool		(*write_at) (LpOutput *output, uint64_t offset, const void *data,
							 size_t len, LpError *err);

	/*
	 * Copy len bytes of input at input_offset to output_offset without
	 * passing them through memory (copy_file_range, server-side copy).  NULL
	 * when the backend cannot; callers then read and write_at.  An input
	 * the backend cannot copy from (one of another store) is refused with
	 * LP_ERR_UNSUPPORTED before anything is written; callers then read and
	 * write_at that range.
	 */
	bool		(*copy_from) (LpOutput *output, uint64_t output_offset,
							  LpInput *input, uint64_t input_offset,
							  uint64_t len, LpError *err);

	/*
	 * Make len bytes at output_offset share storage with input's bytes at
	 * input_offset (an extent clone, FICLONERANGE); both offsets and len
	 * are multiples of LpStoreOps.clone_alignment.  False, with nothing
	 * changed, when the backend refuses (another store's input, a
	 * filesystem that cannot): callers then copy.  NULL when the backend
	 * never clones.
	 */
	bool		(*clone_range) (LpOutput *output, uint64_t output_offset,
								LpInput *input, uint64_t input_offset, uint64_t len);
	bool		(*publish) (LpOutput *output, LpError *err);
	void		(*abort) (LpOutput *output);

	/*
	 * A token by which other processes of the same program open this very
	 * output to write ranges of it (LpStoreOps.open_shared_output, e.g.
	 * parallel workers): written into buffer when it fits in capacity; the
	 * token's length is returned either way.  NULL when the output cannot be
	 * shared.
	 */
	size_t		(*share_token) (LpOutput *output, void *buffer, size_t capacity);

	/*
	 * Numbered parts: an output written by several processes at once, each
	 * writing whole parts, then completed by publish (a parallel copy).  A
	 * part is output bytes [offset, offset + length) that its number names
	 * (1..): parts written by number are the output's bytes in the order of
	 * their numbers, and together they cover it.  start_parts turns an
	 * output nothing was written to into one written only by parts and
	 * returns the token (owned by the output) by which any process of the
	 * program opens a part of it (LpStoreOps.open_part); add_part records
	 * the receipt a part's end_part gave.  publish joins the parts added,
	 * abort (or any failure of these calls) drops them.  copies_part_from
	 * says whether a part writer of this output copies input (copy_from of
	 * the whole part) without passing the bytes through the writer.  The
	 * parts of an output with multipart limits obey them, and its part
	 * writers hold a part's bytes in memory until end_part unless the part
	 * was copied; other outputs take parts of any size (a local file: each
	 * part written in place in the temporary file).  All NULL when the
	 * output cannot be written by part number.
	 */
	const char *(*start_parts) (LpOutput *output, LpError *err);
	bool		(*add_part) (LpOutput *output, uint32_t number, const char *receipt,
							 LpError *err);
	bool		(*copies_part_from) (LpOutput *output, LpInput *input);

	/*
	 * Of a part writer (LpStoreOps.open_part) only: the part is written
	 * (write_at and copy_from at output offsets within it, front to back);
	 * make it part of its output and put the receipt for the output's
	 * add_part into receipt (LP_PART_RECEIPT_MAX bytes suffice).  Frees the
	 * writer whatever it returns; abort frees it with nothing written.
	 */
	bool		(*end_part) (LpOutput *part, char *receipt, size_t receipt_capacity,
							 LpError *err);
} LpOutputOps;

/* Room for the receipt of a part (LpOutputOps.end_part), its NUL included. */
#define LP_PART_RECEIPT_MAX 256

/* A store's multipart rules; max_part_bytes must be at least twice min_part_bytes. */
typedef struct LpMultipartLimits
{
	uint64_t	min_part_bytes; /* every part but the last: >= 1 */
	uint64_t	max_part_bytes; /* every part */
	uint32_t	max_parts;		/* >= 1 */
} LpMultipartLimits;

struct LpOutput
{
	const LpOutputOps *ops;
	const char *name;			/* final path or URI, for messages */

	/*
	 * NULL, or the output is a multipart upload whose parts obey these
	 * limits: a copy_from run of at least min_part_bytes that follows
	 * nothing or at least min_part_bytes written becomes copied parts on the
	 * server (shorter runs are read and written), and every write keeps
	 * bytes in memory until a part's worth is there.  A writer that lays
	 * the output out by these limits (lp_concat_upload_parts) sends the
	 * server only what it cannot copy.
	 */
	const LpMultipartLimits *multipart;
};

/*
 * A store: the files under some root (a local directory tree, an S3 bucket).
 * Paths are full paths or URIs as the user gave them (joined with '/').
 */
typedef struct LpStore LpStore;

/*
 * What is at a path.  A store without real directories (S3) reports a
 * prefix that has objects under it as a directory, and never a symlink.
 */
typedef enum LpObjectKind
{
	LP_OBJECT_ABSENT,			/* nothing at the path */
	LP_OBJECT_FILE,				/* a regular file (an object) */
	LP_OBJECT_DIRECTORY,		/* a directory (a prefix) */
	LP_OBJECT_SYMLINK,			/* a symbolic link, not followed */
	LP_OBJECT_OTHER				/* a FIFO, socket or device */
} LpObjectKind;

typedef struct LpStat
{
	LpObjectKind kind;
	uint64_t	size;			/* bytes of a file; 0 for the other kinds */
	int64_t		mtime;			/* last modification (S3: LastModified), seconds since 1970 */
} LpStat;

/* Called once per entry name (not a path) of a listed directory. */
typedef bool (*LpListCallback) (void *arg, const char *entry_name, LpError *err);

/*
 * Called for each upload list_uploads finds: the path it would publish, the
 * store's id of the upload and when it began (seconds since 1970).
 */
typedef bool (*LpUploadCallback) (void *arg, const char *path, const char *upload_id,
								  int64_t initiated, LpError *err);

/* What remove_tree did; see there. */
typedef enum LpTreeRemovalOutcome
{
	LP_TREE_ABSENT,				/* nothing at the path: no entry, or a component is missing */
	LP_TREE_REMOVED,			/* the directory and everything below it are gone */
	LP_TREE_NOT_DIRECTORY,		/* left alone: the path or a component of it is not a real directory */
	LP_TREE_INCOMPLETE			/* some entry could not be removed (or the walk could not start) */
} LpTreeRemovalOutcome;

typedef struct LpTreeRemoval
{
	LpTreeRemovalOutcome outcome;
	uint64_t	removed_entries;	/* files, symlinks and directories unlinked */
	uint64_t	removed_bytes;	/* sizes of the regular files among them */
	int			failure_errno;	/* LP_TREE_INCOMPLETE: errno of the first failure */
} LpTreeRemoval;

typedef struct LpStoreOps
{
	/* LP_ERR_NOT_FOUND if path does not exist, LP_ERR_INVALID_ARGUMENT if it is a directory */
	LpInput    *(*open_input) (LpStore *store, const char *path, LpError *err);

	/*
	 * An input of a file already validated at size: it holds no resource
	 * (descriptor, connection) until it is read and gives it up when another
	 * such input of the store is read, so that thousands can be open at
	 * once; a read fails if the file no longer has that size.
	 */
	LpInput    *(*open_input_lazily) (LpStore *store, const char *path, uint64_t size,
									  LpError *err);

	/*
	 * What is at path, following a final symlink only when follow_symlinks
	 * (a store without symlinks ignores it).  Nothing there is not an
	 * error (kind LP_OBJECT_ABSENT); false with err when the path cannot be
	 * examined.
	 */
	bool		(*stat) (LpStore *store, const char *path, bool follow_symlinks,
						 LpStat *result, LpError *err);

	/*
	 * The canonical name of the existing file or directory at path (what
	 * realpath gives locally: absolute, symlinks resolved), allocated with
	 * lp_alloc; two paths name the same directory exactly when their
	 * canonical names are equal.  NULL with err (LP_ERR_NOT_FOUND when
	 * nothing is there) otherwise; what names the path in the message
	 * ("dataset", "base path").
	 */
	char	   *(*canonical) (LpStore *store, const char *path, const char *what,
							  LpError *err);

	/*
	 * Whether both paths name one existing file (locally: the same inode,
	 * so hard links count); false also when either cannot be examined.
	 */
	bool		(*same_object) (LpStore *store, const char *path_a, const char *path_b);

	/*
	 * The block size at which an output created at output_path could share
	 * storage with every input (LpOutputOps.clone_range), or 0 when it
	 * cannot (no clones on this store or filesystem, an input elsewhere).
	 * Whether clones really work is only known by trying one.  NULL when
	 * the store never clones.
	 */
	uint64_t	(*clone_alignment) (LpStore *store, const char *output_path,
									const char *const *input_paths, int num_inputs);

	/* Entries of a directory, in no particular order; LP_ERR_NOT_FOUND if missing */
	bool		(*list) (LpStore *store, const char *directory,
						 LpListCallback callback, void *arg, LpError *err);

	/*
	 * Create path with data, durably; LP_ERR_ALREADY_EXISTS if it exists
	 * (atomic), LP_ERR_CONFLICT while another conditional write of path
	 * holds it up (S3's 409 ConditionalRequestConflict, after the retries)
	 */
	bool		(*put_if_absent) (LpStore *store, const char *path,
								  const void *data, size_t len, LpError *err);

	/* Create or replace path with data, durably and atomically */
	bool		(*put) (LpStore *store, const char *path,
						const void *data, size_t len, LpError *err);

	/* Remove a file, or an empty directory; a missing path is not an error */
	bool		(*remove) (LpStore *store, const char *path, LpError *err);

	/*
	 * Remove the directory root/relative and everything below it, touching
	 * nothing that does not lie physically under root.  root is trusted (a
	 * resolved dataset or base directory) and may be reached through
	 * symlinks; relative ("data/_parts/x.lance") is walked component by
	 * component from root without following any symlink, and below it
	 * symlinks are removed as entries, never entered.  relative must be
	 * non-empty, without "." or ".." components, empty components or a
	 * leading '/'.
	 *
	 * Fills *result and returns true for LP_TREE_ABSENT and LP_TREE_REMOVED.
	 * Returns false with err set for LP_TREE_NOT_DIRECTORY (nothing removed;
	 * err names the entry and what it is) and LP_TREE_INCOMPLETE (err names
	 * the first entry that could not be removed and why; the walk goes on
	 * past it, so everything else that could go is gone).  Never raises,
	 * and holds no descriptor after it returns.
	 */
	bool		(*remove_tree) (LpStore *store, const char *root, const char *relative,
								LpTreeRemoval *result, LpError *err);

	/*
	 * Remove the regular file root/relative, reached as remove_tree reaches
	 * its directory: component by component from root, without following
	 * any symlink.  A missing file (or component) is not an error; an entry
	 * that is not a regular file (a symlink, a directory, ...) is left alone
	 * (LP_ERR_INVALID_ARGUMENT naming it and what it is), and so is a file
	 * behind a component that is not a real directory (err names it).
	 * *removed says whether the file was there and is gone.
	 */
	bool		(*remove_file) (LpStore *store, const char *root, const char *relative,
								bool *removed, LpError *err);

	/*
	 * Give the existing regular file from a second name, to, without
	 * copying its bytes (a hard link), never replacing an entry at to and
	 * never following a symlink at from; directories of to are created as
	 * needed.  False with LP_ERR_UNSUPPORTED, nothing changed, when the
	 * store cannot here (another filesystem): callers then copy.  NULL when
	 * the store never links (object storage copies on the server).
	 */
	bool		(*link_file) (LpStore *store, const char *from, const char *to, LpError *err);

	/* Start writing path (see LpOutput); directories are created as needed */
	LpOutput   *(*create_output) (LpStore *store, const char *path, LpError *err);

	/*
	 * Open the output another process is writing, from its share_token, to
	 * write ranges of it: the very file that process created, or an error.
	 * Its publish() fails and its abort() only closes it.  NULL when the
	 * store cannot share outputs.
	 */
	LpOutput   *(*open_shared_output) (LpStore *store, const void *token, size_t len,
									   LpError *err);

	/*
	 * The uploads begun at paths below directory that were neither
	 * published nor aborted (S3 multipart uploads: their parts stay stored,
	 * and billed, until an abort), in no particular order.  Also those whose
	 * writer never learned the id, its answer lost.  NULL when a store's
	 * outputs leave nothing behind but their files.
	 */
	bool		(*list_uploads) (LpStore *store, const char *directory,
								 LpUploadCallback callback, void *arg, LpError *err);

	/*
	 * Abort one upload list_uploads gave; one already gone is not an error.
	 * NULL exactly when list_uploads is.
	 */
	bool		(*abort_upload) (LpStore *store, const char *path, const char *upload_id,
								 LpError *err);

	/*
	 * The bytes the parts of an upload list_uploads gave hold (S3: the sum
	 * of the sizes ListParts gives), 0 for one already gone.  NULL exactly
	 * when list_uploads is.
	 */
	bool		(*upload_size) (LpStore *store, const char *path, const char *upload_id,
								uint64_t *bytes, LpError *err);

	/*
	 * A writer of part number (output bytes [offset, offset + length)) of
	 * the output at output_path that another process, or this one, started
	 * parts of (LpOutputOps.start_parts gave parts_token), from any process
	 * with a store of the output's account: write the part's bytes into it,
	 * then end_part (or abort).  A failure drops nothing: the output's owner
	 * does.  NULL exactly when the store's outputs have no start_parts.
	 */
	LpOutput   *(*open_part) (LpStore *store, const char *output_path, const char *parts_token,
							  uint32_t number, uint64_t offset, uint64_t length, LpError *err);
} LpStoreOps;

struct LpStore
{
	const LpStoreOps *ops;
};

/* An input over a caller-owned memory buffer (tests, fuzzing). */
LpInput    *lp_memory_input_open(const char *name, const void *data, uint64_t size);

/*
 * An output into a growing memory buffer (tests, fuzzing): publish and
 * abort both free it; lp_memory_output_data gives the bytes written so far
 * (gaps read as zero), valid until the next write.
 */
LpOutput   *lp_memory_output_open(const char *name);
const uint8_t *lp_memory_output_data(const LpOutput *output, uint64_t *len);

#endif							/* LP_STORAGE_H */
