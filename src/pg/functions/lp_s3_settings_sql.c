/*
 * lp_s3_settings_sql.c - s3_settings_for: which lance_fdw server and user
 * mapping an s3:// URI would use, for diagnosing S3 configuration.
 *
 * It shows what the caller could use anyway (it needs USAGE on the server and
 * a user mapping, as a request would), and never a credential: only whether
 * the mapping has keys and a session token.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"

#include "store/lp_pg_s3_config.h"

PG_FUNCTION_INFO_V1(lp_s3_settings_for);

Datum
lp_s3_settings_for(PG_FUNCTION_ARGS)
{
	char	   *uri = text_to_cstring(PG_GETARG_TEXT_PP(0));
	LpS3Settings settings;
	TupleDesc	tupdesc;
	Datum		values[9];
	bool		nulls[9] = {false};

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");

	lp_s3_settings_for_uri(uri, InvalidOid, &settings);
	values[0] = CStringGetTextDatum(settings.server_name);
	values[1] = CStringGetTextDatum(settings.root);
	nulls[2] = settings.config.endpoint == NULL;
	if (settings.config.endpoint != NULL)
		values[2] = CStringGetTextDatum(settings.config.endpoint);
	values[3] = CStringGetTextDatum(settings.config.region);
	values[4] = CStringGetTextDatum(settings.config.url_style == LP_S3_URL_PATH ? "path" : "virtual");
	values[5] = BoolGetDatum(settings.config.allow_http);
	values[6] = CStringGetTextDatum(settings.public_mapping ? "PUBLIC"
									: GetUserNameFromId(GetUserId(), false));
	values[7] = BoolGetDatum(settings.config.credentials.access_key_id != NULL);
	values[8] = BoolGetDatum(settings.config.credentials.session_token != NULL);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}
