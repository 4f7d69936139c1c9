/*
 * lp_pg_s3.h - the store of an s3:// URI in the server: the core's S3 store
 * (io/lp_s3_store) with the settings and credentials of the lance_fdw server
 * covering the URI (lp_pg_s3_config) over the libcurl transport
 * (lp_pg_s3_curl).
 */
#ifndef LP_PG_S3_H
#define LP_PG_S3_H

#include "io/lp_storage.h"

/*
 * The store for uri, allocated in the current memory context, with the
 * settings of the server that serves it (lp_s3_settings_for_uri; server: the
 * chosen one or InvalidOid): ERROR when no server covers it, the user may
 * not use that server (42501), or its settings are refused.  An output it creates is aborted when the memory
 * context current at its creation is reset or deleted unpublished, so that
 * context must be the store's own or one of its children (the abort sends
 * a request through the store).
 */
extern LpStore *lp_pg_s3_store_for_uri(const char *uri, Oid server);

/*
 * Whether uri is an object's name as the S3 store's canonical op gives it:
 * "s3://bucket/key", the key without a trailing '/', empty, "." or ".."
 * segments (which S3 would take literally).
 */
extern bool lp_pg_s3_name_is_canonical(const char *uri);

#endif							/* LP_PG_S3_H */
