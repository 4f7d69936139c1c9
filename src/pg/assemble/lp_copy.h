/*
 * lp_copy.h - writing the output of an assembly as numbered parts, in
 * parallel when workers are available.
 */
#ifndef LP_COPY_H
#define LP_COPY_H

#include "concat/lp_concat.h"
#include "concat/lp_concat_parts.h"

/* GUCs lance_parts.read_batch_bytes and lance_parts.max_copy_workers */
extern int	lp_read_batch_bytes;
extern int	lp_max_copy_workers;

/* Define the GUCs above (from _PG_init). */
extern void LpCopyInit(void);

/*
 * Write every part of parts (lp_concat_output_parts of plan for output)
 * into output by part number (LpOutputOps.start_parts): each part is
 * written through a writer of it in the output's store
 * (LpStoreOps.open_part, lp_concat_write_part) by whichever of up to
 * lance_parts.max_copy_workers parallel workers and the leader (unless
 * parallel_leader_participation is off) claims it, and its receipt added
 * to output.  paths[i] is the key of part i (a URI: lp_store_for_uri_below
 * root, which may be NULL) and inputs[i] the leader's lazily opened input of
 * it.  Without a worker the leader writes them all.  Reports the copying
 * phase to lp_progress.  False, with nothing written, when the parts cannot
 * go that way (lp_concat_parts_by_number): the caller then writes them
 * front to back (lp_concat_write_upload_parts).  ERROR on failure, with a
 * worker's message when a worker failed; no worker outlives the call, and
 * the output's abort then drops the parts.  Does not publish.
 */
extern bool lp_copy_output_parts(const LpConcatPlan *plan, const LpUploadParts *parts,
								 const char *root, const char *const *paths,
								 LpInput *const *inputs, LpOutput *output);

#endif							/* LP_COPY_H */
