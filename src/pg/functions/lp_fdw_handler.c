/*
 * lp_fdw_handler.c - the handler of lance_fdw, the SQL function that gives
 * the routines of its scans (fdw/lp_fdw.c) and of its writes
 * (write/lp_fdw_modify.c).
 */
#include "postgres.h"

#include "fmgr.h"
#include "foreign/fdwapi.h"

#include "fdw/lp_fdw.h"
#include "write/lp_fdw_modify.h"

PG_FUNCTION_INFO_V1(lance_fdw_handler);

Datum
lance_fdw_handler(PG_FUNCTION_ARGS)
{
	FdwRoutine *routine = makeNode(FdwRoutine);

	lp_fdw_scan_routines(routine);
	lp_fdw_modify_routines(routine);
	PG_RETURN_POINTER(routine);
}
