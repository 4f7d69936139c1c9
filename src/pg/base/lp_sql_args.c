/*
 * lp_sql_args.c - checks of SQL arguments shared by the SQL functions.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "utils/builtins.h"

#include "base/lp_sql_args.h"

void
lp_check_one_dimensional(ArrayType *array, const char *what)
{
	if (ARR_NDIM(array) > 1)
		ereport(ERROR,
				errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				errmsg("%s must be a one-dimensional array", what));
}

List *
lp_text_array_to_list(ArrayType *array, const char *what)
{
	Datum	   *values;
	bool	   *nulls;
	int			count;
	List	   *result = NIL;

	lp_check_one_dimensional(array, what);
	deconstruct_array(array, TEXTOID, -1, false, TYPALIGN_INT, &values, &nulls, &count);
	if (count == 0)
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("%s must not be empty", what));
	for (int i = 0; i < count; i++)
	{
		if (nulls[i])
			ereport(ERROR,
					errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					errmsg("%s must not contain NULL", what));
		result = lappend(result, TextDatumGetCString(values[i]));
	}
	return result;
}
