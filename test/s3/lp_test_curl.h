/*
 * lp_test_curl.h - the S3 transport of the integration tests, which run the
 * core's S3 client against a real server outside PostgreSQL: the server's
 * libcurl requests (platform/lp_curl_http) without its latch and fd.c.
 */
#ifndef LP_TEST_CURL_H
#define LP_TEST_CURL_H

#include "io/lp_s3_transport.h"

/* NULL when libcurl cannot start; free with lp_test_curl_free. */
LpS3Transport *lp_test_curl_create(void);
void		lp_test_curl_free(LpS3Transport *transport);

/* Requests performed so far, answered or not. */
unsigned	lp_test_curl_requests(LpS3Transport *transport);

#endif							/* LP_TEST_CURL_H */
