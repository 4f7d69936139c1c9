/*
 * lp_pg_types.h - what both directions of the value mapping (Lance to
 * PostgreSQL in fdw/lp_fdw_types.c, PostgreSQL to Lance in
 * write/lp_write_values.c) agree on: the offsets between the Unix epoch of
 * Lance's dates and times and PostgreSQL's (2000-01-01), and which
 * PostgreSQL integer type each Lance integer type maps to.
 */
#ifndef LP_PG_TYPES_H
#define LP_PG_TYPES_H

#include "datatype/timestamp.h"

#include "format/lp_values.h"

/* Days and microseconds between the Unix epoch and PostgreSQL's. */
#define EPOCH_DIFF_DAYS (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE)
#define EPOCH_DIFF_USECS ((int64) EPOCH_DIFF_DAYS * USECS_PER_DAY)
#define MSECS_PER_DAY INT64CONST(86400000)

/*
 * A Lance integer type (all but uint64, which maps to numeric) and the
 * PostgreSQL integer type it maps to: smallint for 8-bit values, the next
 * wider type for unsigned ones.  min and max are the range the Lance type
 * holds, width its bytes.
 */
typedef struct LpPgInteger
{
	LpTypeId	id;
	Oid			pg_type;		/* INT2OID, INT4OID or INT8OID */
	int64		min;
	int64		max;
	uint32		width;
} LpPgInteger;

/* The mapping of a Lance integer type; NULL for any other type. */
extern const LpPgInteger *lp_pg_integer(LpTypeId id);

/* The value of a Lance integer of that type (little-endian) at bytes. */
extern int64 lp_pg_integer_read(const LpPgInteger *mapping, const void *bytes);

/* A Datum of the mapped PostgreSQL type for value, which is in range. */
extern Datum lp_pg_integer_datum(const LpPgInteger *mapping, int64 value);

/* The value of a Datum of the mapped PostgreSQL type. */
extern int64 lp_pg_integer_of_datum(const LpPgInteger *mapping, Datum value);

#endif							/* LP_PG_TYPES_H */
