/*
 * lp_curl_http.c - one HTTP request of the S3 client over libcurl, without
 * PostgreSQL: the server's S3 transport (pg/store/lp_pg_s3_curl) and the
 * tests run the same code.
 *
 * libcurl carries requests only: the core's client forms and signs them, so
 * this file sends exactly the headers it is given and lets libcurl add no
 * authentication, no "Expect: 100-continue", no proxy from the environment
 * and no redirect.  One easy handle in one multi handle keeps the connection
 * between requests; started transfers (read-ahead) have handles of their own
 * in the same multi handle, and every loop records the ends of all.  The multi interface lets the transfer loop poll the
 * cancel hook every LP_CURL_POLL_INTERVAL_MS whatever the network does
 * (libcurl's progress callback slows to one call a second while nothing
 * arrives), and removing the handle stops the transfer at once.  Failures
 * are LpError values: nothing here raises or exits.  Sockets are opened
 * close-on-exec, so a program the backend starts (COPY FROM PROGRAM, an
 * archive command) does not inherit the connection to the S3 server.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include <curl/curl.h>

#include "base/lp_alloc.h"
#include "base/lp_interrupt.h"
#include "platform/lp_curl_http.h"

struct LpCurl
{
	CURL	   *easy;			/* of lp_curl_perform's requests */
	CURLM	   *multi;			/* every transfer, started ones among them */
	bool		easy_done;		/* the done message of easy's transfer came */
	CURLcode	easy_result;
};

/* What the callbacks of one request share. */
typedef struct Exchange
{
	const LpS3HttpRequest *request;
	LpS3HttpResponse *response;
	long		status;			/* of the response whose headers came last */
	size_t		upload_offset;
	size_t		collected_capacity;
	LpErrorCode failure;		/* set by a callback that stopped the transfer */
	const char *failure_what;
} Exchange;

LpCurl *
lp_curl_create(void)
{
	LpCurl	   *curl = calloc(1, sizeof(LpCurl));

	if (curl == NULL)
		return NULL;
	curl->easy = curl_easy_init();
	curl->multi = curl_multi_init();
	if (curl->easy == NULL || curl->multi == NULL)
	{
		lp_curl_destroy(curl);
		return NULL;
	}
	/* one connection, the descriptor the caller accounts for, until it allows more */
	lp_curl_set_max_connections(curl, 1);
	return curl;
}

void
lp_curl_set_max_connections(LpCurl *curl, unsigned connections)
{
	/* kept idle and open at once: transfers beyond wait for a connection */
	curl_multi_setopt(curl->multi, CURLMOPT_MAXCONNECTS, (long) connections);
	curl_multi_setopt(curl->multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, (long) connections);
}

void
lp_curl_destroy(LpCurl *curl)
{
	if (curl->multi)
		curl_multi_cleanup(curl->multi);
	if (curl->easy)
		curl_easy_cleanup(curl->easy);
	free(curl);
}


static size_t
stop_transfer(Exchange *exchange, LpErrorCode code, const char *what)
{
	exchange->failure = code;
	exchange->failure_what = what;
	return 0;					/* any count but the one given makes libcurl stop */
}

/* Does the header line start with name and a colon?  Then where its value is. */
static bool
header_value(const char *line, size_t len, const char *name, const char **value,
			 size_t *value_len)
{
	size_t		name_len = strlen(name);
	const char *end = line + len;
	const char *start;

	if (len <= name_len || line[name_len] != ':' || strncasecmp(line, name, name_len) != 0)
		return false;
	start = line + name_len + 1;
	while (start < end && (*start == ' ' || *start == '\t'))
		start++;
	while (end > start && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' ' || end[-1] == '\t'))
		end--;
	*value = start;
	*value_len = end - start;
	return true;
}

static bool
parse_decimal(const char *text, size_t len, uint64_t *result)
{
	uint64_t	value = 0;

	if (len == 0)
		return false;
	for (size_t i = 0; i < len; i++)
	{
		if (text[i] < '0' || text[i] > '9' || value > (UINT64_MAX - 9) / 10)
			return false;
		value = value * 10 + (uint64_t) (text[i] - '0');
	}
	*result = value;
	return true;
}

static size_t
on_header(char *line, size_t size, size_t count, void *arg)
{
	Exchange   *exchange = arg;
	LpS3HttpResponse *response = exchange->response;
	size_t		len = size * count;
	static const struct
	{
		const char *name;
		const char *label;		/* for the message */
		size_t		offset;
	}			kept[] = {
		{"etag", "header ETag", offsetof(LpS3HttpResponse, etag)},
		{"x-amz-request-id", "header x-amz-request-id", offsetof(LpS3HttpResponse, request_id)},
		{"content-range", "header Content-Range", offsetof(LpS3HttpResponse, content_range)},
		{"last-modified", "header Last-Modified", offsetof(LpS3HttpResponse, last_modified)},
	};
	const char *value;
	size_t		value_len;

	/* a status line starts a response: forget an interim one's headers */
	if (len >= 5 && memcmp(line, "HTTP/", 5) == 0)
	{
		const char *code = memchr(line, ' ', len);
		uint64_t	status = 0;

		for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++)
			((char *) response + kept[i].offset)[0] = '\0';
		response->has_content_length = false;
		response->content_length = 0;
		if (code == NULL || line + len - code < 4 || !parse_decimal(code + 1, 3, &status))
			return stop_transfer(exchange, LP_ERR_CORRUPT, "status line");
		exchange->status = (long) status;
		return len;
	}
	for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++)
		if (header_value(line, len, kept[i].name, &value, &value_len))
		{
			if (value_len >= LP_S3_HEADER_VALUE_MAX)
				return stop_transfer(exchange, LP_ERR_CORRUPT, kept[i].label);
			memcpy((char *) response + kept[i].offset, value, value_len);
			((char *) response + kept[i].offset)[value_len] = '\0';
			return len;
		}
	if (header_value(line, len, "content-length", &value, &value_len))
	{
		if (!parse_decimal(value, value_len, &response->content_length))
			return stop_transfer(exchange, LP_ERR_CORRUPT, "header Content-Length");
		response->has_content_length = true;
	}
	return len;
}

static size_t
on_body(char *data, size_t size, size_t count, void *arg)
{
	Exchange   *exchange = arg;
	const LpS3HttpRequest *request = exchange->request;
	LpS3HttpResponse *response = exchange->response;
	size_t		len = size * count;
	bool		to_buffer = request->response_buffer != NULL &&
		exchange->status >= 200 && exchange->status < 300;
	size_t		limit = to_buffer ? request->response_capacity : request->response_body_max;

	if (len > limit - response->body_len)
		return stop_transfer(exchange, LP_ERR_CORRUPT, "body");
	if (to_buffer)
	{
		memcpy((char *) request->response_buffer + response->body_len, data, len);
		response->body_in_buffer = true;
	}
	else
	{
		if (response->body_len + len > exchange->collected_capacity)
		{
			size_t		capacity = exchange->collected_capacity > 8192 ? exchange->collected_capacity * 2 : 16384;
			char	   *body;

			if (capacity < response->body_len + len)
				capacity = response->body_len + len;
			if (capacity > limit)
				capacity = limit;
			body = lp_alloc(capacity);
			if (body == NULL)
				return stop_transfer(exchange, LP_ERR_NO_MEMORY, "body");
			if (response->body_len > 0)
				memcpy(body, response->body, response->body_len);
			if (response->body)
				lp_free(response->body);
			response->body = body;
			exchange->collected_capacity = capacity;
		}
		memcpy(response->body + response->body_len, data, len);
	}
	response->body_len += len;
	return len;
}

static size_t
on_upload(char *buffer, size_t size, size_t count, void *arg)
{
	Exchange   *exchange = arg;
	size_t		left = exchange->request->body_len - exchange->upload_offset;
	size_t		len = size * count < left ? size * count : left;

	memcpy(buffer, (const char *) exchange->request->body + exchange->upload_offset, len);
	exchange->upload_offset += len;
	return len;
}

/* libcurl rewinds the body to send it again on a fresh connection */
static int
on_upload_seek(void *arg, curl_off_t offset, int origin)
{
	Exchange   *exchange = arg;

	if (origin != SEEK_SET || offset < 0 || (uint64_t) offset > exchange->request->body_len)
		return CURL_SEEKFUNC_FAIL;
	exchange->upload_offset = (size_t) offset;
	return CURL_SEEKFUNC_OK;
}

/* ---- a request ---------------------------------------------------------------- */

/* Failures that sending the request again may cure. */
static bool
is_network_failure(CURLcode code)
{
	switch (code)
	{
		case CURLE_COULDNT_RESOLVE_HOST:
		case CURLE_COULDNT_CONNECT:
		case CURLE_OPERATION_TIMEDOUT:
		case CURLE_SEND_ERROR:
		case CURLE_RECV_ERROR:
		case CURLE_GOT_NOTHING:
		case CURLE_PARTIAL_FILE:
		case CURLE_SSL_CONNECT_ERROR:
		case CURLE_HTTP2:
		case CURLE_HTTP2_STREAM:
			return true;
		default:
			return false;
	}
}

/*
 * The header list to send: every header as given, and "Expect:", which
 * stops libcurl from adding "Expect: 100-continue" to uploads.  A header
 * with an empty value is written "name;", libcurl's form for it.
 */
static bool
build_headers(const LpS3HttpRequest *request, struct curl_slist **list, LpError *err)
{
	*list = curl_slist_append(NULL, "Expect:");
	if (*list == NULL)
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory for the headers of an S3 request");
	for (size_t i = 0; i < request->header_count; i++)
	{
		const LpS3Pair *header = &request->headers[i];
		size_t		len = strlen(header->name) + strlen(header->value) + 3;
		char	   *line;
		struct curl_slist *longer;

		/* a line break would end the header and start another */
		if (strpbrk(header->name, "\r\n:") != NULL || strpbrk(header->value, "\r\n") != NULL)
			return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
						   "header \"%s\" of an S3 request has a line break", header->name);
		line = lp_alloc(len);
		if (line == NULL)
			return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory for the headers of an S3 request");
		if (header->value[0] == '\0')
			snprintf(line, len, "%s;", header->name);
		else
			snprintf(line, len, "%s: %s", header->name, header->value);
		longer = curl_slist_append(*list, line);
		lp_free(line);
		if (longer == NULL)
			return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory for the headers of an S3 request");
		*list = longer;
	}
	return true;
}

/* CURLOPT_OPENSOCKETFUNCTION: libcurl's socket, close-on-exec from its creation */
static curl_socket_t
open_socket(void *unused, curlsocktype purpose, struct curl_sockaddr *address)
{
	(void) unused;
	(void) purpose;
	return socket(address->family, address->socktype | SOCK_CLOEXEC, address->protocol);
}

static void
set_options(CURL *easy, bool allow_http, const LpS3HttpRequest *request, Exchange *exchange,
			struct curl_slist *headers, char *error_buffer)
{
	bool		has_body = request->body_len > 0 ||
		strcmp(request->method, "PUT") == 0 || strcmp(request->method, "POST") == 0;

	curl_easy_setopt(easy, CURLOPT_URL, request->url);
	curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, allow_http ? "http,https" : "https");
	/* the path was signed as it is: no removal of "." and ".." segments */
	curl_easy_setopt(easy, CURLOPT_PATH_AS_IS, 1L);
	/* the endpoint is the host connected to: no proxy from the environment */
	curl_easy_setopt(easy, CURLOPT_PROXY, "");
	curl_easy_setopt(easy, CURLOPT_HTTP_VERSION, (long) CURL_HTTP_VERSION_1_1);
	/* PostgreSQL owns SIGALRM and the other signals */
	curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(easy, CURLOPT_OPENSOCKETFUNCTION, open_socket);
	curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, error_buffer);
	curl_easy_setopt(easy, CURLOPT_USERAGENT, "lance_parts");
	curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, (long) request->connect_timeout_ms);
	curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, (long) request->timeout_ms);
	curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(easy, CURLOPT_HEADERDATA, exchange);
	curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(easy, CURLOPT_WRITEDATA, exchange);
	if (strcmp(request->method, "HEAD") == 0)
		curl_easy_setopt(easy, CURLOPT_NOBODY, 1L);
	else if (has_body)
	{
		/* an upload of a known size: Content-Length, no chunked encoding */
		curl_easy_setopt(easy, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(easy, CURLOPT_INFILESIZE_LARGE, (curl_off_t) request->body_len);
		curl_easy_setopt(easy, CURLOPT_READFUNCTION, on_upload);
		curl_easy_setopt(easy, CURLOPT_READDATA, exchange);
		curl_easy_setopt(easy, CURLOPT_SEEKFUNCTION, on_upload_seek);
		curl_easy_setopt(easy, CURLOPT_SEEKDATA, exchange);
		curl_easy_setopt(easy, CURLOPT_CUSTOMREQUEST, request->method);
	}
	else if (strcmp(request->method, "GET") != 0)
		curl_easy_setopt(easy, CURLOPT_CUSTOMREQUEST, request->method);
}

/* A transfer lp_curl_start started. */
struct LpCurlTransfer
{
	CURL	   *easy;
	Exchange	exchange;
	struct curl_slist *headers;
	bool		allow_http;
	bool		done;			/* its done message came */
	CURLcode	result;
	char		error_buffer[CURL_ERROR_SIZE];
};

/*
 * Record the done messages of every transfer that ended: the plain
 * request's and the started ones', whichever loop reads them.
 */
static void
collect_done(LpCurl *curl)
{
	CURLMsg    *message;
	int			queued;

	while ((message = curl_multi_info_read(curl->multi, &queued)) != NULL)
	{
		LpCurlTransfer *transfer = NULL;

		if (message->msg != CURLMSG_DONE)
			continue;
		if (message->easy_handle == curl->easy)
		{
			curl->easy_done = true;
			curl->easy_result = message->data.result;
			continue;
		}
		curl_easy_getinfo(message->easy_handle, CURLINFO_PRIVATE, (char **) &transfer);
		if (transfer != NULL)
		{
			transfer->done = true;
			transfer->result = message->data.result;
		}
	}
}

/*
 * Move the transfers on until *done, polling the cancel hook between waits
 * of at most LP_CURL_POLL_INTERVAL_MS (unless ignore_cancel): CURLE_OK when
 * done, CURLE_ABORTED_BY_CALLBACK with *canceled, CURLE_OUT_OF_MEMORY when
 * libcurl's multi interface failed.
 */
static CURLcode
wait_until_done(LpCurl *curl, const bool *done, bool ignore_cancel, bool *canceled)
{
	int			running;

	*canceled = false;
	for (;;)
	{
		if (!ignore_cancel && lp_cancel_requested())
		{
			*canceled = true;
			return CURLE_ABORTED_BY_CALLBACK;
		}
		if (curl_multi_perform(curl->multi, &running) != CURLM_OK)
			return CURLE_OUT_OF_MEMORY;
		collect_done(curl);
		if (*done)
			return CURLE_OK;
		if (curl_multi_poll(curl->multi, NULL, 0, LP_CURL_POLL_INTERVAL_MS, NULL) != CURLM_OK)
			return CURLE_OUT_OF_MEMORY;
	}
}

/* Run the plain request's transfer: its result, as wait_until_done's. */
static CURLcode
run_transfer(LpCurl *curl, const LpS3HttpRequest *request, bool *canceled)
{
	CURLcode	result;

	curl->easy_done = false;
	if (curl_multi_add_handle(curl->multi, curl->easy) != CURLM_OK)
	{
		*canceled = false;
		return CURLE_OUT_OF_MEMORY;
	}
	result = wait_until_done(curl, &curl->easy_done, request->ignore_cancel, canceled);
	if (result == CURLE_OK)
		result = curl->easy_result;
	/* removing an unfinished transfer closes its connection */
	curl_multi_remove_handle(curl->multi, curl->easy);
	return result;
}

/* The LpError of a transfer that ended with result (not CURLE_OK). */
static bool
transfer_failure(const Exchange *exchange, CURLcode result, bool canceled, bool allow_http,
				 const char *error_buffer, LpError *err)
{
	const LpS3HttpRequest *request = exchange->request;

	lp_s3_http_response_clear(exchange->response);
	if (canceled)
		return lp_fail(err, LP_ERR_CANCELED, "S3 request %s %s canceled", request->method, request->url);
	if (exchange->failure == LP_ERR_NO_MEMORY)
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory for the response of S3 request %s %s",
					   request->method, request->url);
	if (exchange->failure == LP_ERR_CORRUPT && strcmp(exchange->failure_what, "body") == 0)
		return lp_fail(err, LP_ERR_CORRUPT, "response body of S3 request %s %s is longer than expected",
					   request->method, request->url);
	if (exchange->failure == LP_ERR_CORRUPT)
		return lp_fail(err, LP_ERR_CORRUPT, "%s of the response to S3 request %s %s is not valid or too long",
					   exchange->failure_what, request->method, request->url);
	if (result == CURLE_UNSUPPORTED_PROTOCOL && !allow_http &&
		strncasecmp(request->url, "http:", 5) == 0)
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT, "S3 request %s %s uses plain HTTP, which is not allowed",
					   request->method, request->url);
	lp_fail(err, result == CURLE_OUT_OF_MEMORY ? LP_ERR_NO_MEMORY
			: is_network_failure(result) ? LP_ERR_NETWORK : LP_ERR_IO,
			"S3 request %s %s failed: %s", request->method, request->url,
			error_buffer[0] ? error_buffer : curl_easy_strerror(result));
	return false;
}

bool
lp_curl_perform(LpCurl *curl, bool allow_http, const LpS3HttpRequest *request,
				LpS3HttpResponse *response, LpError *err)
{
	Exchange	exchange = {.request = request, .response = response};
	struct curl_slist *headers;
	char		error_buffer[CURL_ERROR_SIZE] = "";
	CURLcode	result;
	bool		canceled;

	if (!build_headers(request, &headers, err))
	{
		curl_slist_free_all(headers);
		return false;
	}
	/* every request starts from the defaults; the connection stays */
	curl_easy_reset(curl->easy);
	set_options(curl->easy, allow_http, request, &exchange, headers, error_buffer);
	result = run_transfer(curl, request, &canceled);
	curl_easy_getinfo(curl->easy, CURLINFO_RESPONSE_CODE, &response->status);
	/* the handle must not point at this frame's buffer and list any more */
	curl_easy_setopt(curl->easy, CURLOPT_ERRORBUFFER, NULL);
	curl_easy_setopt(curl->easy, CURLOPT_HTTPHEADER, NULL);
	curl_slist_free_all(headers);

	if (result == CURLE_OK)
		return true;
	return transfer_failure(&exchange, result, canceled, allow_http, error_buffer, err);
}

/* ---- started transfers -------------------------------------------------------- */

static void
free_transfer(LpCurl *curl, LpCurlTransfer *transfer)
{
	if (transfer->easy)
	{
		/* removing an unfinished transfer closes its connection */
		curl_multi_remove_handle(curl->multi, transfer->easy);
		curl_easy_cleanup(transfer->easy);
	}
	curl_slist_free_all(transfer->headers);
	free(transfer);
}

bool
lp_curl_start(LpCurl *curl, bool allow_http, const LpS3HttpRequest *request,
			  LpS3HttpResponse *response, LpCurlTransfer **started, LpError *err)
{
	LpCurlTransfer *transfer = calloc(1, sizeof(LpCurlTransfer));
	int			running;

	if (transfer == NULL)
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory for S3 request %s %s",
					   request->method, request->url);
	transfer->exchange = (Exchange) {.request = request, .response = response};
	transfer->allow_http = allow_http;
	if (!build_headers(request, &transfer->headers, err))
	{
		free_transfer(curl, transfer);
		return false;
	}
	/* a handle of its own, in the multi handle that holds the connections */
	transfer->easy = curl_easy_init();
	if (transfer->easy == NULL)
	{
		free_transfer(curl, transfer);
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory for S3 request %s %s",
					   request->method, request->url);
	}
	set_options(transfer->easy, allow_http, request, &transfer->exchange, transfer->headers,
				transfer->error_buffer);
	curl_easy_setopt(transfer->easy, CURLOPT_PRIVATE, (char *) transfer);
	if (curl_multi_add_handle(curl->multi, transfer->easy) != CURLM_OK)
	{
		curl_easy_cleanup(transfer->easy);
		transfer->easy = NULL;
		free_transfer(curl, transfer);
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory for S3 request %s %s",
					   request->method, request->url);
	}
	/* send it now: its answer comes while the caller works */
	if (curl_multi_perform(curl->multi, &running) == CURLM_OK)
		collect_done(curl);
	*started = transfer;
	return true;
}

void
lp_curl_progress(LpCurl *curl)
{
	int			running;

	if (curl_multi_perform(curl->multi, &running) == CURLM_OK)
		collect_done(curl);
}

bool
lp_curl_finish(LpCurl *curl, LpCurlTransfer *transfer, LpError *err)
{
	const LpS3HttpRequest *request = transfer->exchange.request;
	CURLcode	result;
	bool		canceled;
	bool		done;

	result = wait_until_done(curl, &transfer->done, request->ignore_cancel, &canceled);
	if (result == CURLE_OK)
		result = transfer->result;
	curl_easy_getinfo(transfer->easy, CURLINFO_RESPONSE_CODE, &transfer->exchange.response->status);
	done = result == CURLE_OK ||
		transfer_failure(&transfer->exchange, result, canceled, transfer->allow_http,
						 transfer->error_buffer, err);
	free_transfer(curl, transfer);
	return done;
}

void
lp_curl_abort(LpCurl *curl, LpCurlTransfer *transfer)
{
	lp_s3_http_response_clear(transfer->exchange.response);
	free_transfer(curl, transfer);
}
