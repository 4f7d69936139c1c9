/*
 * lp_sql_args.h - checks of SQL arguments shared by the SQL functions.
 */
#ifndef LP_SQL_ARGS_H
#define LP_SQL_ARGS_H

#include "utils/array.h"

/* ERROR (2202E) if an array argument has more than one dimension; what names it. */
extern void lp_check_one_dimensional(ArrayType *array, const char *what);

#endif							/* LP_SQL_ARGS_H */
