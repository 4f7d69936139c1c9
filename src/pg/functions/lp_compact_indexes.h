/*
 * lp_compact_indexes.h - the indexes a compaction remaps, on datasets
 * without stable row ids: each BTREE, BITMAP or IVF vector index covering
 * a rewritten fragment is written anew for the rows' new addresses under a new UUID,
 * as Lance's compaction remaps it, for the Rewrite to list
 * (rewritten_indices).
 */
#ifndef LP_COMPACT_INDEXES_H
#define LP_COMPACT_INDEXES_H

#include "nodes/pg_list.h"

#include "dataset/lp_commit_request.h"
#include "dataset/lp_compact_plan.h"

/*
 * Remap the indexes covering the fragments of the plan's written groups,
 * whose new fragments take the ids from first_new_id on, in order; the
 * live rows of each old fragment follow those before it, its deleted rows
 * (deletions[g][k].deleted where read) dropped.  Returns the remapped
 * indexes (*n_rewritten of them, none on datasets with stable row ids) and
 * appends their directories to *written (LpPublicationPath *).  A damaged
 * index is an ERROR, with nothing of it left behind.
 */
extern LpRewrittenIndex *lp_compact_remap_indexes(const LpCompactPlan *plan,
												  const LpManifest *manifest, const char *root,
												  LpRewriteDeletions *const *deletions,
												  uint64_t first_new_id, size_t *n_rewritten,
												  List **written);

/*
 * Take out of the plan the groups covered by an IVF vector index that
 * cannot be remapped (a form lp_ivf_model_read does not read),
 * as skipped "indexed"; before any file is written.
 */
extern void lp_compact_skip_unremappable_vector_groups(LpCompactPlan *plan,
													   const LpManifest *manifest,
													   const char *root);

#endif							/* LP_COMPACT_INDEXES_H */
