/*
 * lp_curl_http.h - one HTTP request of the S3 client (LpS3HttpRequest) over
 * libcurl, without PostgreSQL: the server's S3 transport
 * (pg/storage/lp_pg_s3_curl) and the core tests share it.
 */
#ifndef LP_CURL_HTTP_H
#define LP_CURL_HTTP_H

#include "io/lp_s3_transport.h"

/* how often the cancel hook is polled while a request runs */
#define LP_CURL_POLL_INTERVAL_MS 100

/*
 * libcurl handles kept between requests, with the connection they keep open
 * (at most one: one file descriptor to account for).  curl_global_init must
 * have been called.  NULL when out of memory.
 */
typedef struct LpCurl LpCurl;

LpCurl	   *lp_curl_create(void);
void		lp_curl_destroy(LpCurl *curl);

/*
 * LpS3TransportOps.perform over curl: plain http:// URLs only when
 * allow_http.  Polls lp_cancel_requested() every LP_CURL_POLL_INTERVAL_MS
 * unless the request has ignore_cancel.
 */
bool		lp_curl_perform(LpCurl *curl, bool allow_http, const LpS3HttpRequest *request,
							LpS3HttpResponse *response, LpError *err);

#endif							/* LP_CURL_HTTP_H */
