/*
 * lp_target_keys_sql.c - the SQL functions over the cluster's target keys:
 * target_keys lists them, rotate_target_key and retire_target_keys change
 * them (superusers only, checked here as well as by the scripts' REVOKE,
 * since a GRANT must not hand out the power to forge targets or to make
 * every target of the cluster invalid).
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

#include "base/lp_sql_args.h"
#include "targets/lp_target_key.h"

PG_FUNCTION_INFO_V1(lp_target_keys_sql);
PG_FUNCTION_INFO_V1(lp_rotate_target_key);
PG_FUNCTION_INFO_V1(lp_retire_target_keys);

static void
require_superuser(const char *action)
{
	if (!superuser())
		ereport(ERROR,
				errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				errmsg("must be superuser to %s", action));
}

Datum
lp_target_keys_sql(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	const LpTargetKey *keys;
	int			count;

	InitMaterializedSRF(fcinfo, 0);
	keys = lp_target_keys(&count);
	for (int i = 0; i < count; i++)
	{
		Datum		values[2];
		bool		nulls[2] = {false};

		values[0] = CStringGetTextDatum(keys[i].id);
		values[1] = BoolGetDatum(i == 0);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

Datum
lp_rotate_target_key(PG_FUNCTION_ARGS)
{
	require_superuser("rotate the target signing key");
	PG_RETURN_TEXT_P(cstring_to_text(lp_target_rotate_key()));
}

Datum
lp_retire_target_keys(PG_FUNCTION_ARGS)
{
	List	   *key_ids = NIL;
	List	   *retired;
	Datum	   *ids;
	ListCell   *cell;
	int			n = 0;

	require_superuser("retire target keys");
	if (!PG_ARGISNULL(0))
		key_ids = lp_text_array_to_list(PG_GETARG_ARRAYTYPE_P(0), "list of key ids");
	retired = lp_target_retire_keys(key_ids);
	ids = palloc(sizeof(Datum) * Max(list_length(retired), 1));
	foreach(cell, retired)
		ids[n++] = CStringGetTextDatum(lfirst(cell));
	PG_RETURN_ARRAYTYPE_P(construct_array(ids, n, TEXTOID, -1, false, TYPALIGN_INT));
}
