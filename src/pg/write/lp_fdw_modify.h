/*
 * lp_fdw_modify.h - writes through lance_fdw tables: the routines of INSERT,
 * COPY FROM, UPDATE and DELETE (lp_fdw_modify.c), which the handler
 * (sql/lp_fdw_handler.c) sets beside the scan's.
 */
#ifndef LP_FDW_MODIFY_H
#define LP_FDW_MODIFY_H

#include "foreign/fdwapi.h"

/* Set the routines of INSERT, COPY FROM, UPDATE and DELETE. */
extern void lp_fdw_modify_routines(FdwRoutine *routine);

#endif							/* LP_FDW_MODIFY_H */
