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

#include "base/lp_error.h"
#include "base/lp_random.h"
#include "dataset/lp_commit_manifest.h"
#include "dataset/lp_commit_request.h"
#include "dataset/lp_dataset.h"
#include "dataset/lp_manifest.h"
#include "dataset/lp_transaction.h"
#include "io/lp_storage.h"

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
