/*
 * lp_pg_s3.c - the store of an s3:// URI in the server.
 *
 * A store is made per lookup, in the current memory context, with the
 * settings of the lance_fdw server covering the URI at that moment: its
 * strings live in the same context, so the store never outlives them, and a
 * changed user mapping or server option applies to the next statement.
 */
#include "postgres.h"

#include "io/lp_s3_store.h"
#include "lp_pg_error.h"
#include "storage/lp_pg_s3.h"
#include "storage/lp_pg_s3_config.h"
#include "storage/lp_pg_s3_curl.h"

LpStore *
lp_pg_s3_store_for_uri(const char *uri)
{
	LpS3Settings *settings = palloc0(sizeof(LpS3Settings));
	LpS3Transport *transport;
	LpStore    *store;
	LpError		err;

	lp_s3_settings_for_uri(uri, settings);
	transport = lp_pg_s3_curl_transport(settings->config.allow_http);
	store = lp_s3_store_create(&settings->config, transport, &err);
	if (store == NULL)
		lp_raise(&err);
	return store;
}
