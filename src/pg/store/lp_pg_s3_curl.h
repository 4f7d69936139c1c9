/*
 * lp_pg_s3_curl.h - the S3 transport of the server: libcurl.
 *
 * One libcurl handle per backend (or parallel worker) carries every request,
 * so the connection to an endpoint is kept and reused between requests.
 */
#ifndef LP_PG_S3_CURL_H
#define LP_PG_S3_CURL_H

#include "io/lp_s3_transport.h"

/*
 * The transport for a configuration: plain http:// URLs only when
 * allow_http, https:// always.  It lives as long as the backend; nothing is
 * freed.  ERROR (53000) when libcurl cannot be set up or no file descriptor
 * is left for the connection.
 */
extern LpS3Transport *lp_pg_s3_curl_transport(bool allow_http);

#endif							/* LP_PG_S3_CURL_H */
