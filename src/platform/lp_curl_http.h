/*
 * lp_curl_http.h - one HTTP request of the S3 client (LpS3HttpRequest) over
 * libcurl, without PostgreSQL: the server's S3 transport
 * (pg/store/lp_pg_s3_curl) and the core tests share it.
 */
#ifndef LP_CURL_HTTP_H
#define LP_CURL_HTTP_H

#include "io/lp_s3_transport.h"

/* how often the cancel hook is polled while a request runs */
#define LP_CURL_POLL_INTERVAL_MS 100

/*
 * libcurl handles kept between requests, with the connections they keep open
 * (at most one, one file descriptor to account for, until
 * lp_curl_set_max_connections allows more).  curl_global_init must have been
 * called.  NULL when out of memory.  Every started transfer is finished or
 * aborted before lp_curl_destroy.
 */
typedef struct LpCurl LpCurl;

LpCurl	   *lp_curl_create(void);
void		lp_curl_destroy(LpCurl *curl);

/*
 * Connections open at once, idle ones kept included (at least 1): a transfer
 * beyond them waits until one is free, so the caller accounts for exactly
 * this many descriptors.
 */
void		lp_curl_set_max_connections(LpCurl *curl, unsigned connections);

/*
 * LpS3TransportOps.perform over curl: plain http:// URLs only when
 * allow_http.  Polls lp_cancel_requested() every LP_CURL_POLL_INTERVAL_MS
 * unless the request has ignore_cancel.
 */
bool		lp_curl_perform(LpCurl *curl, bool allow_http, const LpS3HttpRequest *request,
							LpS3HttpResponse *response, LpError *err);

/*
 * LpS3TransportOps.start/progress/finish/abort over curl: each started
 * transfer has a handle of its own in the multi handle of lp_curl_perform,
 * whose loop moves them on too.  They run at once as far as the connections
 * allow, else one after another.
 */
typedef struct LpCurlTransfer LpCurlTransfer;

bool		lp_curl_start(LpCurl *curl, bool allow_http, const LpS3HttpRequest *request,
						  LpS3HttpResponse *response, LpCurlTransfer **transfer, LpError *err);
void		lp_curl_progress(LpCurl *curl);
bool		lp_curl_finish(LpCurl *curl, LpCurlTransfer *transfer, LpError *err);
void		lp_curl_abort(LpCurl *curl, LpCurlTransfer *transfer);

#endif							/* LP_CURL_HTTP_H */
