/*
 * lp_write_deletions.h - deleting rows of a dataset from the executor
 * (DELETE and UPDATE on lance_fdw tables): new Lance deletion files of the
 * fragments touched, published as one Lance Delete, or with an UPDATE's new
 * rows as one Lance Update (lp_publish: at the commit of the transaction,
 * or now).
 */
#ifndef LP_WRITE_DELETIONS_H
#define LP_WRITE_DELETIONS_H

#include "fdw/lp_fdw.h"
#include "write/lp_write_sql.h"

typedef struct LpDatasetDeletion LpDatasetDeletion;

/*
 * Begin deleting rows of the dataset version source reads (which must
 * stay); for an UPDATE (moves) of a dataset with stable row ids, the rows
 * deleted are also remembered in order, each to keep its row id in the new
 * row appended in its place.
 */
extern LpDatasetDeletion *lp_dataset_deletion_begin(const LpFdwSource *source, bool moves);

/* Mark the row at offset row of fragment fragment_id deleted (again: no change). */
extern void lp_dataset_deletion_add(LpDatasetDeletion *deletion, uint64 fragment_id, uint64 row);

/*
 * Write the touched fragments' deletion files (their old deletions and the
 * new ones) and publish them as one Lance Delete; the rows newly deleted.
 */
extern uint64 lp_dataset_deletion_finish(LpDatasetDeletion *deletion);

/*
 * The same for the old rows of an UPDATE, whose new rows append wrote (in
 * order where row ids are stable): both published as one Lance Update; the
 * rows updated.
 */
extern uint64 lp_dataset_update_finish(LpDatasetDeletion *deletion, LpDatasetAppend *append);

#endif							/* LP_WRITE_DELETIONS_H */
