/*
 * lp_test_curl.c - the S3 transport of the integration tests: the server's
 * libcurl requests (platform/lp_curl_http) with a plain sleep between retries,
 * counting the requests performed.
 */
#include <curl/curl.h>
#include <time.h>

#include "base/lp_alloc.h"
#include "base/lp_interrupt.h"
#include "lp_curl_http.h"
#include "lp_test_curl.h"

typedef struct CurlTransport
{
	LpS3Transport base;
	LpCurl	   *curl;
	unsigned	requests;
} CurlTransport;

static bool
curl_perform(LpS3Transport *base, const LpS3HttpRequest *request, LpS3HttpResponse *response,
			 LpError *err)
{
	CurlTransport *transport = (CurlTransport *) base;

	transport->requests++;
	return lp_curl_perform(transport->curl, true, request, response, err);
}

static bool
curl_wait(LpS3Transport *base, uint32_t delay_ms, bool ignore_cancel, LpError *err)
{
	(void) base;
	while (delay_ms > 0)
	{
		uint32_t	slice = delay_ms < 50 ? delay_ms : 50;
		struct timespec pause = {.tv_sec = 0, .tv_nsec = (long) slice * 1000000L};

		if (!ignore_cancel && lp_check_cancel(err))
			return false;
		nanosleep(&pause, NULL);
		delay_ms -= slice;
	}
	return true;
}

static const LpS3TransportOps curl_ops = {
	.perform = curl_perform,
	.wait = curl_wait,
};

LpS3Transport *
lp_test_curl_create(void)
{
	CurlTransport *transport;

	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return NULL;
	transport = lp_alloc0(sizeof(*transport));
	if (transport == NULL)
		return NULL;
	transport->curl = lp_curl_create();
	if (transport->curl == NULL)
	{
		lp_free(transport);
		return NULL;
	}
	transport->base.ops = &curl_ops;
	return &transport->base;
}

void
lp_test_curl_free(LpS3Transport *base)
{
	CurlTransport *transport = (CurlTransport *) base;

	if (transport == NULL)
		return;
	lp_curl_destroy(transport->curl);
	lp_free(transport);
}

unsigned
lp_test_curl_requests(LpS3Transport *base)
{
	return ((CurlTransport *) base)->requests;
}
