/*
 * lance_parts.c - module entry point: the hooks that connect the
 * PostgreSQL-independent core to the backend, and the modules' settings.
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/array.h"
#include "miscadmin.h"
#include "utils/guc.h"
#include "utils/memutils.h"

#include "base/lp_alloc.h"
#include "base/lp_pg_alloc.h"
#include "write/lp_publication.h"
#include "assemble/lp_copy.h"
#include "fdw/lp_fdw.h"
#include "base/lp_interrupt.h"
#include "fdw/lp_fdw.h"
#include "store/lp_pg_s3_config.h"
#include "write/lp_copy_to.h"
#include "write/lp_write_sql.h"
#include "write/lp_write_workers.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

static bool
lp_query_cancel_pending(void)
{
	return QueryCancelPending || ProcDiePending;
}

void
_PG_init(void)
{
	lp_set_allocator(&lp_pg_allocator);
	lp_pg_alloc_init();
	lp_set_cancel_check(lp_query_cancel_pending);

	/* each module defines the settings it owns */
	LpCopyInit();
	LpPublicationInit();
	LpFdwScanInit();
	LpFdwPushdownInit();
	LpFdwParallelInit();
	LpFdwTopKInit();
	LpFdwIndexInit();
	LpFdwVectorInit();
	LpS3ConfigInit();
	LpWriteInit();
	LpWriteWorkersInit();
	LpCopyToInit();

	MarkGUCPrefixReserved("lance_parts");
}
