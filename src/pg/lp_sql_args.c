/*
 * lp_sql_args.c - checks of SQL arguments shared by the SQL functions.
 */
#include "postgres.h"

#include "lp_sql_args.h"

void
lp_check_one_dimensional(ArrayType *array, const char *what)
{
	if (ARR_NDIM(array) > 1)
		ereport(ERROR,
				errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				errmsg("%s must be a one-dimensional array", what));
}
