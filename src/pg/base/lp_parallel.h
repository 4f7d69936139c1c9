/*
 * lp_parallel.h - starting the library's parallel workers, or finding that
 * none can be had so that the caller works serially.
 */
#ifndef LP_PARALLEL_H
#define LP_PARALLEL_H

#include "access/parallel.h"

/* Allocates the caller's chunks in pcxt->toc and inserts them, one key each. */
typedef void (*LpParallelFill) (ParallelContext *pcxt, void *arg);

/*
 * Enters parallel mode and launches up to nworkers workers running
 * worker_main (a function of this library) with a DSM segment of the
 * caller's num_chunks chunks of chunk_sizes, which fill fills, plus the
 * leader's query text.  Returns the context
 * with at least one worker launched, or NULL, out of parallel mode again,
 * when no segment or no worker could be had: the caller then works serially
 * (and says so).
 */
extern ParallelContext *lp_parallel_start(const char *worker_main, int nworkers,
										  const Size *chunk_sizes, int num_chunks,
										  LpParallelFill fill, void *arg);

/* In fill: a chunk under key with a copy of size bytes of data. */
extern void lp_parallel_insert_copy(ParallelContext *pcxt, uint64 key, const void *data,
									Size size);

/* In a worker: shows the leader's query in pg_stat_activity and in logs. */
extern void lp_parallel_worker_show_query(shm_toc *toc);

/* Destroys a context of lp_parallel_start and leaves parallel mode. */
extern void lp_parallel_end(ParallelContext *pcxt);

#endif							/* LP_PARALLEL_H */
