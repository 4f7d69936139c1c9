/*
 * lp_pg_types.h - what both directions of the value mapping (Lance to
 * PostgreSQL in fdw/lp_fdw_types.c, PostgreSQL to Lance in
 * write/lp_write_values.c) agree on: the offsets between the Unix epoch of
 * Lance's dates and times and PostgreSQL's (2000-01-01).
 */
#ifndef LP_PG_TYPES_H
#define LP_PG_TYPES_H

#include "datatype/timestamp.h"

/* Days and microseconds between the Unix epoch and PostgreSQL's. */
#define EPOCH_DIFF_DAYS (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE)
#define EPOCH_DIFF_USECS ((int64) EPOCH_DIFF_DAYS * USECS_PER_DAY)
#define MSECS_PER_DAY INT64CONST(86400000)

#endif							/* LP_PG_TYPES_H */
