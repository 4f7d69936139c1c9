/*
 * lance_parts.c - module entry point: GUCs, the hooks that connect the
 * PostgreSQL-independent core to the backend, and argument checks shared by
 * the SQL functions.
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/array.h"
#include "miscadmin.h"
#include "utils/guc.h"
#include "utils/memutils.h"

#include "lance_parts.h"
#include "lp_alloc.h"
#include "lp_copy.h"
#include "lp_interrupt.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

int			lp_read_batch_bytes = 16 * 1024 * 1024;

/*
 * Core allocations go to the current memory context.  MCXT_ALLOC_NO_OOM makes
 * palloc return NULL instead of throwing, so an allocation failure unwinds
 * through the core as an error value rather than a longjmp.
 */
static void *
lp_palloc(size_t size, void *context)
{
	return palloc_extended(size, MCXT_ALLOC_HUGE | MCXT_ALLOC_NO_OOM);
}

static void
lp_pfree(void *pointer, void *context)
{
	pfree(pointer);
}

static const LpAllocator lp_palloc_allocator = {lp_palloc, lp_pfree, NULL};

bool
lp_random_bytes(void *arg, uint8_t *buffer, size_t len, LpError *err)
{
	if (!pg_strong_random(buffer, len))
		return lp_fail(err, LP_ERR_INTERNAL, "could not generate random bytes");
	return true;
}

void
lp_check_one_dimensional(ArrayType *array, const char *what)
{
	if (ARR_NDIM(array) > 1)
		ereport(ERROR,
				errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				errmsg("%s must be a one-dimensional array", what));
}

static bool
lp_query_cancel_pending(void)
{
	return QueryCancelPending || ProcDiePending;
}

void
_PG_init(void)
{
	lp_set_allocator(&lp_palloc_allocator);
	lp_set_cancel_check(lp_query_cancel_pending);

	DefineCustomIntVariable("lance_parts.read_batch_bytes",
							gettext_noop("Largest amount of page data read or copied in one request."),
							gettext_noop("Assembly reads input pages in batches of at most this size, so its memory use does not grow with the inputs."),
							&lp_read_batch_bytes,
							16 * 1024 * 1024,
							64 * 1024,
							1024 * 1024 * 1024,
							PGC_USERSET,
							GUC_UNIT_BYTE,
							NULL, NULL, NULL);

	DefineCustomIntVariable("lance_parts.max_copy_workers",
							gettext_noop("Largest number of parallel workers that copy part data during one assembly."),
							gettext_noop("The leader copies too. 0 copies in the calling backend only. Workers also count against max_worker_processes and max_parallel_workers; when none can be started, the copy runs serially."),
							&lp_max_copy_workers,
							2, 0, LP_MAX_COPY_WORKERS_LIMIT,
							PGC_USERSET, 0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("lance_parts.commit_retries",
							gettext_noop("How often a commit that lost the race for a dataset version is rebuilt on the newer version."),
							NULL,
							&lp_commit_retries,
							20, 0, 1000,
							PGC_USERSET, 0,
							NULL, NULL, NULL);

	MarkGUCPrefixReserved("lance_parts");
}
