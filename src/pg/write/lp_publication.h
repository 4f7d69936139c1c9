/*
 * lp_publication.h - dataset versions published with the PostgreSQL
 * transaction that made them.
 *
 * Every function that publishes a Lance version (commit, compact,
 * write_dataset, COPY ... TO a dataset, inserts into lance_fdw tables) hands
 * its commit request here.  With lance_parts.publish_at = 'commit' (the
 * default) the request is queued and published in the transaction's
 * pre-commit phase, in statement order, appends to one dataset merged into
 * one version; at ROLLBACK (or the rollback of the savepoint that queued
 * it) it is dropped and the files written for it are removed.  With
 * 'call' it is published at once, as 0.2.0 did.
 */
#ifndef LP_PUBLICATION_H
#define LP_PUBLICATION_H

#include "nodes/pg_list.h"

#include "dataset/lp_commit.h"
#include "base/lp_pg_compat.h"

/*
 * A path below a base directory (never reached through a symlink), and the
 * store of the base once made (made when needed; when queued, at once).
 */
typedef struct LpPublicationPath
{
	char	   *base;
	char	   *relative;
	bool		directory;
	char	   *what;			/* for messages: "The staging directory \"...\" of ..." */
	LpStore    *store;
} LpPublicationPath;

typedef struct LpPublicationRequest
{
	const char *root;			/* the dataset */
	Oid			server;			/* the lance_fdw server whose store reaches it, or InvalidOid */
	/* published with lp_commit, or with lp_commit_create under create_naming */
	const LpCommitRequest *commit;
	bool		create;
	LpManifestNaming create_naming;

	/*
	 * The data file a target's commit publishes (its path), or NULL: a
	 * second commit of it in the same transaction is refused at once.
	 */
	const char *claimed_file;
	/* LpPublicationPath *: what nothing references unless the request is published */
	List	   *written;
	/* LpPublicationPath *: directories removed once it is published (WARNING on failure) */
	List	   *after_publication;
} LpPublicationRequest;

/*
 * Define lance_parts.publish_at and lance_parts.commit_retries, and register
 * the transaction callbacks (from _PG_init).
 */
extern void LpPublicationInit(void);

/* An LpPublicationPath in the current memory context. */
extern LpPublicationPath *lp_publication_path(const char *base, const char *relative,
											  bool directory, const char *what);

/*
 * Publish the request now (true, *result filled; free result->new_fragment_ids
 * with lp_free) or queue it for the pre-commit of the transaction (false,
 * *result zeroed).  When publishing fails, now or at COMMIT, the written
 * paths are removed and the failure is an ERROR (40001 for a conflict).
 */
extern bool lp_publish(const LpPublicationRequest *request, LpCommitResult *result);

/*
 * ERROR (0A000) unless a DELETE or UPDATE of the dataset at root may join
 * the pending deletions of the transaction (lp_publish merges them): they
 * must be of the current subtransaction.  Called before writing anything.
 */
extern void lp_publication_check_deletion(const char *root);

/*
 * Remove the paths (LpPublicationPath *) written for a request that will
 * not be handed to lp_publish (an ERROR came first), as an unpublished
 * request's are removed: a failure is a WARNING.  For PG_CATCH blocks.
 */
extern void lp_publication_discard(const char *root, Oid server, List *written);

/* Does a publication of this transaction create or overwrite the dataset at root? */
extern bool lp_publication_replaces(const char *root);

/*
 * ERROR (0A000) for a write to root after lp_publication_replaces: it would
 * be built on the version the pending one replaces.
 */
pg_noreturn extern void lp_publication_refuse_after_replacement(const char *root);

#endif							/* LP_PUBLICATION_H */
