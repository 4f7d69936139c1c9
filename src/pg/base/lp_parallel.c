/*
 * lp_parallel.c - starting the library's parallel workers.
 *
 * The parallel copy of assemble, its copy of upload parts and the write
 * workers all start their workers the same way: a ParallelContext gives the
 * workers the leader's GUCs and re-raises their errors in the leader; the
 * leader's query text goes with them so that pg_stat_activity shows what a
 * worker works for.  When no DSM segment or no worker can be had (too few
 * background worker slots), the caller does the work itself.
 */
#include "postgres.h"

#include "access/xact.h"
#include "pgstat.h"
#include "tcop/tcopprot.h"

#include "base/lp_parallel.h"

/* A key no caller's chunk uses: theirs count up from 0x4C50000000000001. */
#define PARALLEL_KEY_QUERY	UINT64CONST(0x4C500000000000FF)

ParallelContext *
lp_parallel_start(const char *worker_main, int nworkers,
				  const Size *chunk_sizes, int num_chunks, LpParallelFill fill, void *arg)
{
	ParallelContext *pcxt;
	Size		query_size = debug_query_string ? strlen(debug_query_string) + 1 : 0;

	EnterParallelMode();
	pcxt = CreateParallelContext("lance_parts", worker_main, nworkers);
	for (int i = 0; i < num_chunks; i++)
		shm_toc_estimate_chunk(&pcxt->estimator, chunk_sizes[i]);
	shm_toc_estimate_keys(&pcxt->estimator, num_chunks);
	if (query_size > 0)
	{
		shm_toc_estimate_chunk(&pcxt->estimator, query_size);
		shm_toc_estimate_keys(&pcxt->estimator, 1);
	}
	InitializeParallelDSM(pcxt);
	if (pcxt->seg != NULL)
	{
		fill(pcxt, arg);
		if (query_size > 0)
			lp_parallel_insert_copy(pcxt, PARALLEL_KEY_QUERY, debug_query_string, query_size);
		LaunchParallelWorkers(pcxt);
	}
	if (pcxt->seg == NULL || pcxt->nworkers_launched == 0)
	{
		lp_parallel_end(pcxt);
		return NULL;
	}
	return pcxt;
}

void
lp_parallel_insert_copy(ParallelContext *pcxt, uint64 key, const void *data, Size size)
{
	void	   *chunk = shm_toc_allocate(pcxt->toc, size);

	memcpy(chunk, data, size);
	shm_toc_insert(pcxt->toc, key, chunk);
}

void
lp_parallel_worker_show_query(shm_toc *toc)
{
	char	   *query = shm_toc_lookup(toc, PARALLEL_KEY_QUERY, true);

	if (query != NULL)
	{
		debug_query_string = query;
		pgstat_report_activity(STATE_RUNNING, debug_query_string);
	}
}

void
lp_parallel_end(ParallelContext *pcxt)
{
	DestroyParallelContext(pcxt);
	ExitParallelMode();
}
