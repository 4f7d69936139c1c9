/*
 * lp_commit_request.h - what a new version of a Lance dataset is made of:
 * the request of a commit (lp_commit.h), which the transaction
 * (lp_transaction.h), the new manifest (lp_commit_manifest.h) and the
 * publication all read.
 */
#ifndef LP_COMMIT_REQUEST_H
#define LP_COMMIT_REQUEST_H

#include <stdbool.h>
#include <stdint.h>

#include "base/lp_error.h"
#include "dataset/lp_dataset.h"
#include "dataset/lp_manifest.h"
#include "format/lp_deletion.h"
#include "format/lp_file.h"
#include "format/lp_schema.h"

#define LP_WRITER_LIBRARY "lance_parts"
#define LP_WRITER_VERSION "0.1.0"

/* A data file to reference from the new version. */
typedef struct LpNewDataFile
{
	const char *path;			/* file name relative to <base>/data/ */
	const int32_t *fields;		/* DataFile.fields */
	const int32_t *column_indices;	/* DataFile.column_indices */
	size_t		n_fields;
	LpFileVersion version;
	uint64_t	size_bytes;		/* exact size of the file */
	bool		has_base_id;	/* false: the dataset root */
	uint32_t	base_id;
} LpNewDataFile;

/*
 * An old fragment of a rewrite group whose deleted rows the new file leaves
 * out (materialized deletions, as Lance's compaction does): the deletion
 * file the live rows were read through and how many there were.
 */
typedef struct LpRewriteDeletions
{
	bool		has_deletion_file;	/* false: the fragment had none; all its rows */
	uint64_t	read_version;	/* DeletionFile.read_version */
	uint64_t	id;				/* DeletionFile.id */
	uint64_t	live_rows;
	/* the deleted rows as read; needed on datasets with stable row ids */
	const LpDeletions *deleted;
} LpRewriteDeletions;

typedef struct LpRewriteGroup
{
	const uint64_t *old_fragment_ids;	/* adjacent fragments, in dataset order */
	size_t		n_old;
	LpNewDataFile file;			/* their (live) rows, in the same order */
	uint64_t	physical_rows;

	/*
	 * n_old entries, or NULL when no old fragment has a deletion file.  A
	 * fragment with a deletion file other than the one given here (deleted
	 * from since it was read) is LP_ERR_CONFLICT; one with a deletion file
	 * not given here is refused (its rows were copied whole).
	 */
	const LpRewriteDeletions *deletions;
} LpRewriteGroup;

/*
 * An index a rewrite remapped, on a dataset without stable row ids (its
 * entries key on row addresses, which the rewrite moves): its files were
 * written anew for the new addresses under _indices/<new_uuid>/, as Lance's
 * compaction remaps an index.  The new version lists it under new_uuid
 * with the fragments it covers updated (Transaction.Rewrite.rewritten_indices).
 */
typedef struct LpRewrittenIndex
{
	uint8_t		old_uuid[16];
	uint8_t		new_uuid[16];
} LpRewrittenIndex;

/* A new fragment of one data file (appends of several files, overwrites, updates). */
typedef struct LpNewFragment
{
	LpNewDataFile file;
	uint64_t	physical_rows;

	/*
	 * Update of a dataset with stable row ids: the row ids and created-at
	 * versions its rows had before they were moved here (physical_rows of
	 * each), which they keep, as Lance's Update keeps them; NULL: new rows,
	 * which take the next row ids.
	 */
	const uint64_t *moved_row_ids;
	const uint64_t *moved_created_at;
} LpNewFragment;

/*
 * A fragment a delete touches: its new deletion file (in the BITMAP form, in
 * the dataset root, holding the rows deleted before too), or, when every row
 * is deleted, none: the fragment goes.  The deletion file it had when it was
 * read is named as well: another one by then (a delete that got there
 * first) is LP_ERR_CONFLICT.
 */
typedef struct LpDeleteFragment
{
	uint64_t	fragment_id;
	bool		had_deletion_file;	/* when read */
	uint64_t	old_read_version;	/* its DeletionFile.read_version */
	uint64_t	old_id;			/* its DeletionFile.id */
	bool		all_deleted;	/* every row: the fragment is removed */
	/* the new DeletionFile, unless all_deleted */
	uint64_t	read_version;
	uint64_t	id;
	uint64_t	num_deleted_rows;	/* old and new deleted rows: > 0, < physical rows */
} LpDeleteFragment;

typedef enum LpCommitKind
{
	LP_COMMIT_APPEND,
	LP_COMMIT_REPLACE,
	LP_COMMIT_REWRITE,
	LP_COMMIT_OVERWRITE,
	LP_COMMIT_DELETE,
	LP_COMMIT_UPDATE
} LpCommitKind;

typedef struct LpCommitRequest
{
	LpCommitKind kind;
	uint64_t	read_version;	/* version the caller read the dataset at */
	LpNewDataFile file;			/* append, replace */
	uint64_t	physical_rows;	/* append, replace: rows of file */
	uint64_t	fragment_id;	/* replace */
	const LpRewriteGroup *groups;	/* rewrite */
	size_t		n_groups;

	/*
	 * rewrite: the indexes remapped for it, and the id its first new
	 * fragment must take (the remapped indexes name it; a concurrent commit
	 * that took it is LP_ERR_CONFLICT, as Lance reserves the ids first).
	 */
	const LpRewrittenIndex *rewritten_indices;
	size_t		n_rewritten_indices;
	uint64_t	first_new_fragment_id;

	/*
	 * append with n_fragments > 0: these fragments instead of file and
	 * physical_rows; update: the fragments of the new rows (at least one);
	 * overwrite: the new fragments (none is allowed), the new schema
	 * (fields with their ids, pre-order) and the data storage format
	 * (every fragment's file version).
	 */
	const LpNewFragment *fragments;
	size_t		n_fragments;
	const LpSchema *schema;
	LpFileVersion data_version;

	/*
	 * delete, update: the fragments the old rows are deleted from (each
	 * once); delete: the predicate recorded in the transaction (NULL: none;
	 * Lance's Update records none).
	 */
	const LpDeleteFragment *deletes;
	size_t		n_deletes;
	const char *predicate;

	/*
	 * Optional: the manifest of read_version as the caller read it (the
	 * latest version then), and the naming scheme of the directory.  The
	 * first attempt builds on it instead of listing _versions/ and reading
	 * it again; retries after a lost race read the newer latest version.  It
	 * stays the caller's.
	 */
	const LpManifest *read_manifest;
	LpManifestNaming read_naming;
} LpCommitRequest;

#define LP_COMMIT_MAX_GROUPS 65536

#endif							/* LP_COMMIT_REQUEST_H */
