/*
 * lance_parts.c - module entry point: the hooks that connect the
 * PostgreSQL-independent core to the backend, the modules' settings, and
 * argument checks shared by the SQL functions.
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

	/* each module defines the settings it owns */
	LpCopyInit();
	LpCommitInit();

	MarkGUCPrefixReserved("lance_parts");
}
