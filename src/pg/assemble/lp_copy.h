/*
 * lp_copy.h - writing the data region of an assembly (or its numbered
 * parts), in parallel when workers are available.
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
 * Write output bytes [0, plan->tail.start) of plan into output (workers
 * open it from its share token in the store its name picks; without a token
 * the leader copies alone).  paths[i] is the key of part i (a URI:
 * lp_store_for_uri_below root, which may be NULL) and inputs[i] the
 * leader's lazily opened input of it.  Spans
 * of lp_concat_span_bytes are claimed by up to lance_parts.max_copy_workers
 * parallel workers and the leader (unless parallel_leader_participation is
 * off); without workers the leader copies them all.  Reports the copying
 * phase to lp_progress.  ERROR on failure, with a worker's message when a
 * worker failed; no worker outlives the call.
 */
extern void lp_copy_data_region(const LpConcatPlan *plan, const char *root,
								const char *const *paths, LpInput *const *inputs,
								LpOutput *output);

/*
 * Write every part of parts (lp_concat_upload_parts of plan, laid out by
 * output's limits) into output by part number (LpOutputOps.start_parts):
 * the copy parts are LpStoreOps.copy_part calls claimed by up to
 * lance_parts.max_copy_workers parallel workers and the leader, the send
 * parts are sent by the leader; paths and inputs as for
 * lp_copy_data_region.  Without a worker the leader does it all.  False,
 * with nothing written, when the parts cannot go that way (an output
 * without parts, lance_parts.max_copy_workers 0, a copy part of an input
 * the store cannot copy, a send part over lance_parts.read_batch_bytes and
 * twice the minimum part size): the caller then writes them front to back
 * (lp_concat_write_upload_parts).  ERROR on failure; the output's abort
 * then drops the parts.  Does not publish.
 */
extern bool lp_copy_numbered_parts(const LpConcatPlan *plan, const LpUploadParts *parts,
								   const char *const *paths, LpInput *const *inputs,
								   LpOutput *output);

#endif							/* LP_COPY_H */
