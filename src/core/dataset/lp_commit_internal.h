/*
 * lp_commit_internal.h - what the transaction, the new manifest and the
 * publication of a commit share of a request (lp_commit_request.c), in the
 * protobuf types they build (core-internal).
 */
#ifndef LP_COMMIT_INTERNAL_H
#define LP_COMMIT_INTERNAL_H

#include "dataset/lp_commit_request.h"
#include "dataset/lp_manifest_internal.h"
#include "file2.pb-c.h"
#include "table.pb-c.h"

/* The fragments a delete updates, as the new version will have them. */
typedef struct LpCommitDeleteParts
{
	Lance__Table__DataFragment *fragments;	/* copies with their new deletion file */
	Lance__Table__DeletionFile *files;
	Lance__Table__DataFragment **updated;	/* n_updated pointers to them */
	size_t		n_updated;
	uint64_t   *deleted_ids;	/* the fragments removed whole */
	size_t		n_deleted;
} LpCommitDeleteParts;

/* A DataFile message of a new data file (pointing into file). */
void		lp_commit_init_data_file(Lance__Table__DataFile *data_file, const LpNewDataFile *file);

/*
 * The new fragments of an append, an update or an overwrite; a plain
 * append's one file becomes *single.
 */
const LpNewFragment *lp_commit_request_fragments(const LpCommitRequest *request,
												 LpNewFragment *single, size_t *n);

/* How many new fragments a request makes (one per group for a rewrite). */
bool		lp_commit_count_new_fragments(const LpCommitRequest *request, size_t *n,
										  LpError *err);

/* The protobuf fields of a schema (a FileDescriptor; free with lp_protobuf_free). */
Lance__File__FileDescriptor *lp_commit_schema_message(const LpSchema *schema, LpError *err);

/*
 * The Delete of a request (or the deletions of an Update) applied to base:
 * each touched fragment checked and copied with its new deletion file, or
 * listed as removed (free with lp_commit_free_delete_parts).
 */
bool		lp_commit_build_delete_parts(const LpManifest *base, const LpCommitRequest *request,
										 LpCommitDeleteParts *parts, LpError *err);
void		lp_commit_free_delete_parts(LpCommitDeleteParts *parts);

#endif							/* LP_COMMIT_INTERNAL_H */
