/*
 * lance_parts.h - shared declarations of the PostgreSQL layer.
 */
#ifndef LANCE_PARTS_H
#define LANCE_PARTS_H

#include "lp_error.h"
#include "utils/array.h"

/* GUC lance_parts.commit_retries, defined by LpCommitInit (lp_commit_sql.c) */
extern int	lp_commit_retries;
extern void LpCommitInit(void);

/* Strong random bytes for the core (an LpRandomFunction). */
extern bool lp_random_bytes(void *arg, uint8_t *buffer, size_t len, LpError *err);

/* ERROR (2202E) if an array argument has more than one dimension; what names it. */
extern void lp_check_one_dimensional(ArrayType *array, const char *what);

/* Raise err as an ERROR with the SQLSTATE its code maps to.  Never returns. */
extern void lp_raise(const LpError *err) pg_attribute_noreturn();

/* pointer, or ERROR (53200) when a core allocation returned NULL. */
extern void *lp_require_memory(void *pointer);

#endif							/* LANCE_PARTS_H */
