/*
 * lance_parts.h - shared declarations of the PostgreSQL layer.
 */
#ifndef LANCE_PARTS_H
#define LANCE_PARTS_H

#include "lp_error.h"
#include "utils/array.h"

/* GUCs */
extern int	lp_read_batch_bytes;
extern int	lp_commit_retries;

/* Strong random bytes for the core (an LpRandomFunction). */
extern bool lp_random_bytes(void *arg, uint8_t *buffer, size_t len, LpError *err);

/* ERROR (2202E) if an array argument has more than one dimension; what names it. */
extern void lp_check_one_dimensional(ArrayType *array, const char *what);

/* Raise err as an ERROR with the SQLSTATE its code maps to.  Never returns. */
extern void lp_raise(const LpError *err) pg_attribute_noreturn();

#endif							/* LANCE_PARTS_H */
