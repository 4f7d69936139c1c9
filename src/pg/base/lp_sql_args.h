/*
 * lp_sql_args.h - checks of SQL arguments shared by the SQL functions.
 */
#ifndef LP_SQL_ARGS_H
#define LP_SQL_ARGS_H

#include "nodes/pg_list.h"
#include "utils/array.h"

/* ERROR (2202E) if an array argument has more than one dimension; what names it. */
extern void lp_check_one_dimensional(ArrayType *array, const char *what);

/*
 * The elements of a text array argument as a List of char *; ERROR if it is
 * empty (22023), has NULLs (22004) or more than one dimension.
 */
extern List *lp_text_array_to_list(ArrayType *array, const char *what);

#endif							/* LP_SQL_ARGS_H */
