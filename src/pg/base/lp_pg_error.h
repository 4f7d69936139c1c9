/*
 * lp_pg_error.h - core error values raised as PostgreSQL errors.
 */
#ifndef LP_PG_ERROR_H
#define LP_PG_ERROR_H

#include "base/lp_error.h"
#include "base/lp_pg_compat.h"

/* Raise err as an ERROR with the SQLSTATE its code maps to.  Never returns. */
pg_noreturn extern void lp_raise(const LpError *err);

/* pointer, or ERROR (53200) when a core allocation returned NULL. */
extern void *lp_require_memory(void *pointer);

#endif							/* LP_PG_ERROR_H */
