/*
 * lp_test_curl.c - a libcurl transport for the S3 integration tests.
 *
 * One easy handle, so connections are kept alive between requests.  libcurl
 * sends exactly the headers it is given: "Expect:" and "Content-Type:" remove
 * the ones it would add to a body.
 */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "base/lp_alloc.h"
#include "base/lp_interrupt.h"
#include "lp_test_curl.h"

typedef struct CurlTransport
{
	LpS3Transport base;
	CURL	   *curl;
	unsigned	requests;
} CurlTransport;

typedef struct Transfer
{
	CURL	   *curl;
	const LpS3HttpRequest *request;
	LpS3HttpResponse *response;
	size_t		capacity;		/* of response->body when collected */
	bool		overflow;
	bool		header_too_long;
	bool		canceled;
} Transfer;

static void
copy_header_value(Transfer *transfer, char *target, const char *value, size_t len)
{
	if (len >= LP_S3_HEADER_VALUE_MAX)
	{
		transfer->header_too_long = true;
		return;
	}
	memcpy(target, value, len);
	target[len] = '\0';
}

static size_t
on_header(char *line, size_t size, size_t count, void *arg)
{
	Transfer   *transfer = arg;
	LpS3HttpResponse *response = transfer->response;
	size_t		len = size * count;
	size_t		end = len;
	const char *colon = memchr(line, ':', len);
	size_t		name_len;
	const char *value;

	if (len >= 5 && strncmp(line, "HTTP/", 5) == 0)
	{
		/* a new response (after a 100 Continue): forget the previous headers */
		memset(response->etag, 0, sizeof(response->etag));
		memset(response->request_id, 0, sizeof(response->request_id));
		memset(response->content_range, 0, sizeof(response->content_range));
		memset(response->last_modified, 0, sizeof(response->last_modified));
		response->has_content_length = false;
		return len;
	}
	if (colon == NULL)
		return len;
	name_len = (size_t) (colon - line);
	value = colon + 1;
	while (value < line + len && (*value == ' ' || *value == '\t'))
		value++;
	while (end > (size_t) (value - line) && (line[end - 1] == '\r' || line[end - 1] == '\n' ||
											  line[end - 1] == ' '))
		end--;
#define IS(name) (name_len == strlen(name) && strncasecmp(line, name, name_len) == 0)
	if (IS("etag"))
		copy_header_value(transfer, response->etag, value, line + end - value);
	else if (IS("x-amz-request-id"))
		copy_header_value(transfer, response->request_id, value, line + end - value);
	else if (IS("content-range"))
		copy_header_value(transfer, response->content_range, value, line + end - value);
	else if (IS("last-modified"))
		copy_header_value(transfer, response->last_modified, value, line + end - value);
	else if (IS("content-length"))
	{
		char		number[32];

		copy_header_value(transfer, number, value, line + end - value < 31 ? line + end - value : 31);
		response->has_content_length = true;
		response->content_length = strtoull(number, NULL, 10);
	}
#undef IS
	return len;
}

static size_t
on_body(char *data, size_t size, size_t count, void *arg)
{
	Transfer   *transfer = arg;
	const LpS3HttpRequest *request = transfer->request;
	LpS3HttpResponse *response = transfer->response;
	size_t		len = size * count;
	long		status = 0;

	curl_easy_getinfo(transfer->curl, CURLINFO_RESPONSE_CODE, &status);
	if (request->response_buffer && status >= 200 && status < 300)
	{
		if (len > request->response_capacity - response->body_len)
		{
			transfer->overflow = true;
			return 0;
		}
		memcpy((char *) request->response_buffer + response->body_len, data, len);
		response->body_len += len;
		response->body_in_buffer = true;
		return len;
	}
	if (len > request->response_body_max - response->body_len)
	{
		transfer->overflow = true;
		return 0;
	}
	if (response->body_len + len > transfer->capacity)
	{
		size_t		capacity = transfer->capacity ? transfer->capacity * 2 : 4096;
		char	   *grown;

		while (capacity < response->body_len + len)
			capacity *= 2;
		grown = lp_alloc(capacity);
		if (grown == NULL)
			return 0;
		if (response->body_len)
			memcpy(grown, response->body, response->body_len);
		lp_free(response->body);
		response->body = grown;
		transfer->capacity = capacity;
	}
	memcpy(response->body + response->body_len, data, len);
	response->body_len += len;
	return len;
}

static int
on_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow)
{
	Transfer   *transfer = arg;

	(void) dltotal;
	(void) dlnow;
	(void) ultotal;
	(void) ulnow;
	if (!transfer->request->ignore_cancel && lp_cancel_requested())
	{
		transfer->canceled = true;
		return 1;
	}
	return 0;
}

static bool
curl_perform(LpS3Transport *base, const LpS3HttpRequest *request, LpS3HttpResponse *response,
			 LpError *err)
{
	CurlTransport *transport = (CurlTransport *) base;
	CURL	   *curl = transport->curl;
	struct curl_slist *headers = NULL;
	Transfer	transfer = {.curl = curl, .request = request, .response = response};
	CURLcode	code;
	char		line[LP_S3_HEADER_VALUE_MAX * 4];

	transport->requests++;
	curl_easy_reset(curl);
	for (size_t i = 0; i < request->header_count; i++)
	{
		snprintf(line, sizeof(line), "%s: %s", request->headers[i].name, request->headers[i].value);
		headers = curl_slist_append(headers, line);
	}
	headers = curl_slist_append(headers, "Expect:");
	headers = curl_slist_append(headers, "Content-Type:");
	curl_easy_setopt(curl, CURLOPT_URL, request->url);
	curl_easy_setopt(curl, CURLOPT_PATH_AS_IS, 1L);
	curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
	if (strcmp(request->method, "HEAD") == 0)
		curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
	else if (strcmp(request->method, "PUT") == 0 || strcmp(request->method, "POST") == 0)
	{
		curl_easy_setopt(curl, CURLOPT_POSTFIELDS, request->body ? request->body : "");
		curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) request->body_len);
	}
	curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, request->method);
	curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(curl, CURLOPT_HEADERDATA, &transfer);
	curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(curl, CURLOPT_WRITEDATA, &transfer);
	curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &transfer);
	curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, (long) request->connect_timeout_ms);
	curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, (long) request->timeout_ms);
	curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
	code = curl_easy_perform(curl);
	curl_slist_free_all(headers);
	curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &response->status);
	if (code == CURLE_OK && !transfer.header_too_long)
		return true;
	lp_s3_http_response_clear(response);
	if (transfer.canceled)
		return lp_fail(err, LP_ERR_CANCELED, "canceling statement due to user request");
	if (transfer.overflow || transfer.header_too_long)
		return lp_fail(err, LP_ERR_CORRUPT, "the answer to %s %s exceeds its bound",
					   request->method, request->url);
	switch (code)
	{
		case CURLE_COULDNT_RESOLVE_HOST:
		case CURLE_COULDNT_CONNECT:
		case CURLE_SEND_ERROR:
		case CURLE_RECV_ERROR:
		case CURLE_GOT_NOTHING:
		case CURLE_PARTIAL_FILE:
		case CURLE_OPERATION_TIMEDOUT:
			return lp_fail(err, LP_ERR_NETWORK, "%s %s failed: %s", request->method, request->url,
						   curl_easy_strerror(code));
		default:
			return lp_fail(err, LP_ERR_IO, "%s %s failed: %s", request->method, request->url,
						   curl_easy_strerror(code));
	}
}

static bool
curl_wait(LpS3Transport *base, uint32_t delay_ms, LpError *err)
{
	(void) base;
	while (delay_ms > 0)
	{
		uint32_t	slice = delay_ms < 50 ? delay_ms : 50;
		struct timespec pause = {.tv_sec = 0, .tv_nsec = (long) slice * 1000000L};

		if (lp_check_cancel(err))
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
	CurlTransport *transport = lp_alloc0(sizeof(*transport));

	if (transport == NULL)
		return NULL;
	transport->curl = curl_easy_init();
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
	curl_easy_cleanup(transport->curl);
	lp_free(transport);
}

unsigned
lp_test_curl_requests(LpS3Transport *base)
{
	return ((CurlTransport *) base)->requests;
}
