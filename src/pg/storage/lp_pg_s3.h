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
 * The store for uri, allocated in the current memory context: ERROR when no
 * server covers it, the user may not use that server (42501), or its
 * settings are refused.
 */
extern LpStore *lp_pg_s3_store_for_uri(const char *uri);

#endif							/* LP_PG_S3_H */
