/*
 * lp_commit.h - committing new versions of a Lance dataset.
 *
 * Six operations, each published as Lance publishes its own
 * (lance-format.md sections 5.7 - 5.9): a transaction file
 * _transactions/{read_version}-{uuid}.txn, then the manifest of version N+1,
 * created only if absent under the dataset's own naming scheme and carrying
 * the same transaction inline.  When another writer won version N+1, the
 * transactions committed since the caller's read version are checked for
 * conflicts and the manifest is rebuilt on top of the new latest version.
 *
 *  - append:  one new fragment holding one data file;
 *  - replace: Lance's DataReplacement - the data file holding exactly the
 *             new file's fields in a fragment is swapped for it (or the file
 *             is added when no file holds any of those fields);
 *  - rewrite: compaction - groups of adjacent fragments each replaced by one
 *             new fragment holding the same rows (their stable row ids and
 *             row versions carried, lp_row_ids.h; the fragment bitmaps of
 *             indexes follow where row ids are stable);
 *  - overwrite: Lance's Overwrite - a new schema and new fragments replace
 *             the whole dataset (indexes dropped, fragment ids from 0, stable
 *             row ids going on from the dataset's next one);
 *             lp_commit_create publishes it as version 1 of a new dataset;
 *  - delete:  Lance's Delete - fragments get new deletion files (written
 *             before, lp_deletion_file_write), fragments whose every row is
 *             deleted go; indexes stay (deleted rows are filtered when read);
 *  - update:  Lance's Update as its UPDATE statement makes it (rows
 *             rewritten): the old rows deleted as by a delete and the new
 *             rows appended as new fragments, in one version; with stable
 *             row ids the moved rows keep their row ids and created-at
 *             versions (LpNewFragment.moved_row_ids).
 */
#ifndef LP_COMMIT_H
#define LP_COMMIT_H

#include <stdbool.h>
#include <stdint.h>

#include "dataset/lp_dataset.h"
#include "base/lp_error.h"
#include "format/lp_deletion.h"
#include "format/lp_file.h"
#include "format/lp_schema.h"
#include "dataset/lp_manifest.h"
#include "io/lp_storage.h"

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

typedef struct LpCommitOptions
{
	int			max_retries;	/* rebuilds after losing the race; >= 0 */
	LpRandomFunction random;	/* for the transaction UUID */
	void	   *random_arg;

	/*
	 * No _versions/latest_version_hint.json: Lance writes it on local file
	 * systems only; on object stores its readers list _versions/ and it
	 * writes none, so a hint written there would go stale at its next commit.
	 */
	bool		no_version_hint;
} LpCommitOptions;

#define LP_COMMIT_MAX_GROUPS 65536

typedef struct LpCommitResult
{
	uint64_t	version;		/* the version created */
	LpManifestNaming naming;
	int			attempts;		/* 1 when no other writer interfered */
	/* append: the (first) new fragment; replace: the fragment given */
	uint64_t	fragment_id;
	/*
	 * rewrite, overwrite, update, append of fragments: one per new fragment
	 * (lp_alloc'd)
	 */
	uint64_t   *new_fragment_ids;
} LpCommitResult;

/*
 * The serialized Transaction of a request (read_version and uuid as given).
 * Rewrites record the old fragments as base has them.
 */
bool		lp_transaction_build(const LpCommitRequest *request,
								 const LpManifest *base, const char *uuid,
								 uint8_t **out, size_t *out_len, LpError *err);

/*
 * The manifest file of version base + 1 for the request, with the given
 * transaction inline and recorded as transaction_file.  new_fragment_ids
 * receives the id of every new fragment (1 for append, n_groups for rewrite,
 * n_fragments for update, none for replace and delete; may be NULL).  Fails (LP_ERR_INVALID_ARGUMENT,
 * LP_ERR_UNSUPPORTED) when the request does not fit the base version.  The
 * base's feature flags are the caller's to check (lp_commit checks them).
 */
bool		lp_commit_build_manifest(const LpManifest *base,
									 const LpCommitRequest *request,
									 const uint8_t *transaction,
									 size_t transaction_len,
									 const char *transaction_file,
									 int64_t timestamp_nanos,
									 uint8_t **out, size_t *out_len,
									 uint64_t *new_fragment_ids, LpError *err);

/*
 * Check the transaction that produced version `version` against a request.
 * Returns false with LP_ERR_CONFLICT when they conflict.  An operation
 * lance_parts does not implement always conflicts, named in the message:
 * DataOverlay (field 115) and CompositeOperation (116) of newer Lance
 * versions, else "unknown operation (field N)".
 */
bool		lp_transaction_check_conflict(const LpCommitRequest *request,
										  const uint8_t *transaction,
										  size_t transaction_len,
										  uint64_t version, LpError *err);

/*
 * Publish the request as a new version of the dataset at root.  On success
 * *result is filled (free result->new_fragment_ids with lp_free).  Losing
 * every retry, or a conflicting concurrent commit, fails with
 * LP_ERR_CONFLICT; a file the base version already holds with
 * LP_ERR_ALREADY_COMMITTED; a version to build on whose reader or writer
 * feature flags lance_parts does not implement with LP_ERR_UNSUPPORTED.
 * Every version since read_version goes through
 * lp_transaction_check_conflict, on the first attempt as after a lost race.
 */
bool		lp_commit(LpStore *store, const char *root,
					  const LpCommitRequest *request,
					  const LpCommitOptions *options,
					  LpCommitResult *result, LpError *err);

/*
 * Create a new dataset at root: an overwrite request (read_version 0) is
 * published as version 1 under the given naming scheme.
 * LP_ERR_ALREADY_EXISTS when root already holds version 1.
 */
bool		lp_commit_create(LpStore *store, const char *root,
							 const LpCommitRequest *request,
							 LpManifestNaming naming,
							 const LpCommitOptions *options,
							 LpCommitResult *result, LpError *err);

#endif							/* LP_COMMIT_H */
