/*
 * lp_s3_client.c - S3 requests: addressed, signed, sent with retries, and
 * their failures described.
 *
 * A retried request is signed again (a fresh x-amz-date), so a long backoff
 * never runs into the server's clock-skew limit.  The waits use "equal
 * jitter": half the current bound plus a random part of the other half, so
 * clients that failed together do not retry together, yet every wait is at
 * least half its bound.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "base/lp_alloc.h"
#include "base/lp_interrupt.h"
#include "io/lp_s3_client.h"
#include "io/lp_s3_sign.h"
#include "io/lp_s3_xml.h"

#define SERVICE "s3"
#define ENDPOINT_MAX 1024
/* host, the call's own headers and the signer's */
#define CALL_HEADERS_MAX 16

struct LpS3Client
{
	LpS3Config	config;
	LpS3Transport *transport;
	char	   *scheme;			/* "http://" or "https://" */
	char	   *host;			/* "host[:port]" of the endpoint */
	LpS3SigningKeyCache key_cache;
	uint64_t	random_state;
};

/* splitmix64: enough randomness for jitter, no global state */
static uint64_t
next_random(LpS3Client *client)
{
	uint64_t	z = (client->random_state += UINT64_C(0x9E3779B97F4A7C15));

	z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
	return z ^ (z >> 31);
}

static bool
valid_host(const char *host)
{
	if (*host == '\0')
		return false;
	for (const char *c = host; *c; c++)
	{
		/* no path, query, fragment, user info or blanks */
		if (*c == '/' || *c == '?' || *c == '#' || *c == '@' || *c == '\\' ||
			(unsigned char) *c <= ' ' || (unsigned char) *c >= 0x7f)
			return false;
	}
	return true;
}

LpS3Client *
lp_s3_client_create(const LpS3Config *config, LpS3Transport *transport, LpError *err)
{
	LpS3Client *client;
	char		endpoint[ENDPOINT_MAX];
	const char *rest;
	bool		http;
	size_t		len;
	struct timespec now;

	if (config->region == NULL || config->region[0] == '\0' ||
		strlen(config->region) > LP_S3_SCOPE_NAME_MAX)
	{
		lp_fail(err, LP_ERR_INVALID_ARGUMENT, "S3 region must be 1 to %d characters",
				LP_S3_SCOPE_NAME_MAX);
		return NULL;
	}
	if (config->credentials.access_key_id == NULL || config->credentials.access_key_id[0] == '\0' ||
		config->credentials.secret_access_key == NULL ||
		config->credentials.secret_access_key[0] == '\0')
	{
		lp_fail(err, LP_ERR_INVALID_ARGUMENT, "S3 requests need an access key id and a secret access key");
		return NULL;
	}
	if (config->endpoint != NULL)
		len = (size_t) snprintf(endpoint, sizeof(endpoint), "%s", config->endpoint);
	else
		len = (size_t) snprintf(endpoint, sizeof(endpoint), "https://s3.%s.amazonaws.com",
								config->region);
	if (len >= sizeof(endpoint))
	{
		lp_fail(err, LP_ERR_INVALID_ARGUMENT, "S3 endpoint is longer than %d bytes", ENDPOINT_MAX - 1);
		return NULL;
	}
	if (len > 0 && endpoint[len - 1] == '/')
		endpoint[--len] = '\0';
	if (strncasecmp(endpoint, "https://", 8) == 0)
	{
		http = false;
		rest = endpoint + 8;
	}
	else if (strncasecmp(endpoint, "http://", 7) == 0)
	{
		http = true;
		rest = endpoint + 7;
	}
	else
	{
		lp_fail(err, LP_ERR_INVALID_ARGUMENT,
				"S3 endpoint \"%s\" does not start with \"https://\" or \"http://\"", endpoint);
		return NULL;
	}
	if (!valid_host(rest))
	{
		lp_fail(err, LP_ERR_INVALID_ARGUMENT,
				"S3 endpoint \"%s\" is not of the form scheme://host[:port]", endpoint);
		return NULL;
	}
	if (http && !config->allow_http)
	{
		lp_fail(err, LP_ERR_INVALID_ARGUMENT,
				"S3 endpoint \"%s\" uses plain HTTP, which is not allowed", endpoint);
		lp_error_detail(err, "Allow plain HTTP in the server's options to use it.");
		return NULL;
	}
	client = lp_alloc0(sizeof(*client));
	if (client == NULL)
	{
		lp_fail(err, LP_ERR_NO_MEMORY, "out of memory for an S3 client");
		return NULL;
	}
	client->config = *config;
	client->transport = transport;
	client->scheme = lp_strdup(http ? "http://" : "https://");
	client->host = lp_strdup(rest);
	if (client->scheme == NULL || client->host == NULL)
	{
		lp_s3_client_free(client);
		lp_fail(err, LP_ERR_NO_MEMORY, "out of memory for an S3 client");
		return NULL;
	}
	clock_gettime(CLOCK_REALTIME, &now);
	client->random_state = (uint64_t) now.tv_nsec ^ ((uint64_t) now.tv_sec << 20) ^
		(uint64_t) (uintptr_t) client;
	return client;
}

void
lp_s3_client_free(LpS3Client *client)
{
	if (client == NULL)
		return;
	lp_s3_signing_key_cache_clear(&client->key_cache);
	lp_free(client->scheme);
	lp_free(client->host);
	lp_free(client);
}

/* Equal strings, "" and NULL alike (an absent session token). */
static bool
same_text(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "") == 0;
}

bool
lp_s3_client_same_account(const LpS3Client *a, const LpS3Client *b)
{
	const LpS3Credentials *ca = &a->config.credentials;
	const LpS3Credentials *cb = &b->config.credentials;

	return strcmp(a->scheme, b->scheme) == 0 && strcmp(a->host, b->host) == 0 &&
		same_text(a->config.region, b->config.region) &&
		a->config.url_style == b->config.url_style &&
		same_text(ca->access_key_id, cb->access_key_id) &&
		same_text(ca->secret_access_key, cb->secret_access_key) &&
		same_text(ca->session_token, cb->session_token);
}

/* The host a request of call goes to (lp_alloc'd): the bucket's own under virtual-host style. */
static char *
call_host(LpS3Client *client, const LpS3Call *call)
{
	size_t		len;
	char	   *host;

	if (client->config.url_style != LP_S3_URL_VIRTUAL)
		return lp_strdup(client->host);
	len = strlen(call->bucket) + 1 + strlen(client->host) + 1;
	host = lp_alloc(len);
	if (host)
		snprintf(host, len, "%s.%s", call->bucket, client->host);
	return host;
}

/* The path of call, not encoded (lp_alloc'd): "/bucket/key" or, virtual-host style, "/key". */
static char *
call_path(LpS3Client *client, const LpS3Call *call)
{
	bool		virtual = client->config.url_style == LP_S3_URL_VIRTUAL;
	size_t		len = strlen(call->bucket) + strlen(call->key) + 3;
	char	   *path = lp_alloc(len);

	if (path == NULL)
		return NULL;
	if (virtual)
		snprintf(path, len, "/%s", call->key);
	else if (call->key[0] == '\0')
		snprintf(path, len, "/%s", call->bucket);
	else
		snprintf(path, len, "/%s/%s", call->bucket, call->key);
	return path;
}

static bool
check_call(const LpS3Call *call, LpError *err)
{
	if (call->bucket == NULL || call->bucket[0] == '\0' || strchr(call->bucket, '/') != NULL)
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT, "S3 bucket name \"%s\" is not valid",
					   call->bucket ? call->bucket : "");
	if (strlen(call->key) > LP_S3_MAX_KEY_LEN)
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
					   "S3 key \"%.100s...\" is longer than %d bytes", call->key, LP_S3_MAX_KEY_LEN);
	if (call->header_count > CALL_HEADERS_MAX - 1 - LP_S3_SIGNER_HEADERS_MAX)
		return lp_fail(err, LP_ERR_INTERNAL, "too many headers in an S3 request");
	return true;
}

static bool
format_request_time(char buffer[17], LpError *err)
{
	struct timespec now;
	struct tm	tm;

	if (clock_gettime(CLOCK_REALTIME, &now) != 0 || gmtime_r(&now.tv_sec, &tm) == NULL ||
		strftime(buffer, 17, "%Y%m%dT%H%M%SZ", &tm) != 16)
		return lp_fail(err, LP_ERR_INTERNAL, "could not read the clock for an S3 request");
	return true;
}

/* A request signed for sending, and the memory its pointers point into. */
typedef struct SignedCall
{
	LpS3Pair	headers[CALL_HEADERS_MAX];
	char		request_time[17];
	LpS3Signed	signed_request;
	char	   *url;
	LpS3HttpRequest http;
} SignedCall;

/* Sign call now into *out (which must not move until signed_call_free). */
static bool
sign_call(LpS3Client *client, const LpS3Call *call, const char *host, const char *path,
		  const char *payload_hash, SignedCall *out, LpError *err)
{
	size_t		num_headers = 0;
	LpS3Request request;
	size_t		url_len;

	if (!format_request_time(out->request_time, err))
		return false;
	out->headers[num_headers++] = (LpS3Pair) {"host", host};
	for (size_t i = 0; i < call->header_count; i++)
		out->headers[num_headers++] = call->headers[i];
	request = (LpS3Request) {
		.method = call->method,
		.path = path,
		.query = call->query,
		.query_count = call->query_count,
		.headers = out->headers,
		.header_count = num_headers,
		.payload_hash = payload_hash,
		.region = client->config.region,
		.service = SERVICE,
		.request_time = out->request_time,
	};
	if (!lp_s3_sign(&request, &client->config.credentials, &client->key_cache,
					&out->signed_request, err))
		return false;
	for (size_t i = 0; i < out->signed_request.header_count; i++)
		out->headers[num_headers++] = out->signed_request.headers[i];
	url_len = strlen(client->scheme) + strlen(host) + strlen(out->signed_request.url_path) +
		strlen(out->signed_request.url_query) + 2;
	out->url = lp_alloc(url_len);
	if (out->url == NULL)
	{
		lp_s3_signed_free(&out->signed_request);
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory for an S3 request");
	}
	snprintf(out->url, url_len, "%s%s%s%s%s", client->scheme, host, out->signed_request.url_path,
			 out->signed_request.url_query[0] ? "?" : "", out->signed_request.url_query);
	out->http = (LpS3HttpRequest) {
		.method = call->method,
		.url = out->url,
		.headers = out->headers,
		.header_count = num_headers,
		.body = call->body,
		.body_len = call->body_len,
		.response_buffer = call->response_buffer,
		.response_capacity = call->response_capacity,
		.response_body_max = call->response_body_max ? call->response_body_max : LP_S3_XML_MAX_BODY,
		.connect_timeout_ms = client->config.connect_timeout_ms,
		.timeout_ms = client->config.request_timeout_ms,
		.ignore_cancel = call->ignore_cancel,
	};
	return true;
}

static void
signed_call_free(SignedCall *signed_call)
{
	lp_free(signed_call->url);
	lp_s3_signed_free(&signed_call->signed_request);
}

/* One attempt: sign call now, send it, fill *response. */
static bool
send_once(LpS3Client *client, const LpS3Call *call, const char *host, const char *path,
		  const char *payload_hash, LpS3HttpResponse *response, LpError *err)
{
	SignedCall	signed_call;
	bool		ok;

	memset(response, 0, sizeof(*response));
	if (!sign_call(client, call, host, path, payload_hash, &signed_call, err))
		return false;
	ok = client->transport->ops->perform(client->transport, &signed_call.http, response, err);
	signed_call_free(&signed_call);
	return ok;
}

/* The S3 error code of a response's Error body, into code ("" if none). */
static void
error_code_of(const LpS3HttpResponse *response, char *code, size_t capacity)
{
	LpS3Document *document = NULL;
	LpError		ignored;

	code[0] = '\0';
	if (response->body == NULL || response->body_len == 0)
		return;
	if (lp_s3_xml_parse(response->body, response->body_len, LP_S3_ERROR, &document, &ignored))
	{
		if (document->kind == LP_S3_ERROR)
			snprintf(code, capacity, "%s", document->error.code);
		lp_s3_xml_free(document);
	}
}

/* Whether a 2xx response carries an Error body (error_body_on_success calls only). */
static bool
has_error_body(const LpS3Call *call, const LpS3HttpResponse *response)
{
	char		code[LP_S3_HEADER_VALUE_MAX];

	if (!call->error_body_on_success)
		return false;
	error_code_of(response, code, sizeof(code));
	return code[0] != '\0';
}

bool
lp_s3_succeeded(const LpS3Call *call, const LpS3HttpResponse *response)
{
	return response->status >= 200 && response->status < 300 && !has_error_body(call, response);
}

static bool
retryable_code(const char *code)
{
	return strcmp(code, "SlowDown") == 0 || strcmp(code, "InternalError") == 0 ||
		strcmp(code, "ServiceUnavailable") == 0 || strcmp(code, "RequestTimeout") == 0 ||
		strcmp(code, "ConditionalRequestConflict") == 0;
}

static bool
retryable_response(const LpS3Call *call, const LpS3HttpResponse *response)
{
	char		code[LP_S3_HEADER_VALUE_MAX];

	if (response->status >= 500 || response->status == 429)
		return true;
	if (lp_s3_succeeded(call, response))
		return false;
	error_code_of(response, code, sizeof(code));
	return retryable_code(code);
}

/* The wait before retry number attempt (1 for the first retry). */
static uint32_t
backoff_delay(LpS3Client *client, uint32_t attempt)
{
	uint64_t	bound = client->config.retry_base_delay_ms;
	uint64_t	half;

	for (uint32_t i = 1; i < attempt && bound < client->config.retry_max_delay_ms; i++)
		bound *= 2;
	if (bound > client->config.retry_max_delay_ms)
		bound = client->config.retry_max_delay_ms;
	half = bound / 2;
	return (uint32_t) (bound - half + next_random(client) % (half + 1));
}

/*
 * Go on from the first attempt of call (answered: whether it got an answer,
 * then in *response, else err says why): the retries of lp_s3_call.
 */
static bool
retry_after_first(LpS3Client *client, const LpS3Call *call, const char *host, const char *path,
				  const char *payload_hash, bool answered, LpS3HttpResponse *response,
				  LpError *err)
{
	for (uint32_t attempt = 0;; attempt++)
	{
		if (answered && !retryable_response(call, response))
			return true;
		if (!answered && err->code != LP_ERR_NETWORK)
			return false;
		if (attempt == client->config.max_retries)
		{
			char		message[LP_ERROR_MESSAGE_LEN];

			if (answered)
				return true;
			snprintf(message, sizeof(message), "%s", err->message);
			return lp_fail(err, LP_ERR_NETWORK, "%s (after %" PRIu32 " attempts)",
						   message, attempt + 1);
		}
		if (answered)
			lp_s3_http_response_clear(response);
		if (!client->transport->ops->wait(client->transport,
										  backoff_delay(client, attempt + 1),
										  call->ignore_cancel, err))
			return false;
		if (!call->ignore_cancel && lp_check_cancel(err))
			return false;
		answered = send_once(client, call, host, path, payload_hash, response, err);
	}
}

/* The host, path and payload hash of call, checked; false (nothing to free) on failure. */
static bool
prepare_call(LpS3Client *client, const LpS3Call *call, char **host, char **path,
			 char payload_hash[LP_S3_SHA256_HEX_LEN + 1], LpError *err)
{
	*host = NULL;
	*path = NULL;
	if (!check_call(call, err) ||
		!lp_s3_sha256_hex(call->body ? call->body : "", call->body_len, payload_hash, err))
		return false;
	*host = call_host(client, call);
	*path = call_path(client, call);
	if (*host == NULL || *path == NULL)
	{
		lp_free(*host);
		lp_free(*path);
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory for an S3 request");
	}
	return true;
}

bool
lp_s3_call(LpS3Client *client, const LpS3Call *call, LpS3HttpResponse *response,
		   LpError *err)
{
	char		payload_hash[LP_S3_SHA256_HEX_LEN + 1];
	char	   *host;
	char	   *path;
	bool		ok;

	memset(response, 0, sizeof(*response));
	if (!prepare_call(client, call, &host, &path, payload_hash, err))
		return false;
	if (!call->ignore_cancel && lp_check_cancel(err))
		ok = false;
	else
	{
		bool		answered = send_once(client, call, host, path, payload_hash, response, err);

		ok = retry_after_first(client, call, host, path, payload_hash, answered, response, err);
	}
	lp_free(host);
	lp_free(path);
	return ok;
}

struct LpS3Pending
{
	LpS3Call	call;
	char	   *host;
	char	   *path;
	char		payload_hash[LP_S3_SHA256_HEX_LEN + 1];
	SignedCall	first;			/* the first attempt, signed at the start */
	LpS3HttpResponse response;	/* the first attempt's answer */
	LpS3Transfer *transfer;		/* NULL: the transport sends it at the finish */
};

static void
pending_free(LpS3Pending *pending)
{
	signed_call_free(&pending->first);
	lp_free(pending->host);
	lp_free(pending->path);
	lp_free(pending);
}

bool
lp_s3_call_start(LpS3Client *client, const LpS3Call *call, LpS3Pending **out, LpError *err)
{
	LpS3Pending *pending;
	const LpS3TransportOps *ops = client->transport->ops;

	*out = NULL;
	if (!call->ignore_cancel && lp_check_cancel(err))
		return false;
	pending = lp_alloc0(sizeof(*pending));
	if (pending == NULL)
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory for an S3 request");
	pending->call = *call;
	if (!prepare_call(client, call, &pending->host, &pending->path, pending->payload_hash, err))
	{
		lp_free(pending);
		return false;
	}
	if (!sign_call(client, &pending->call, pending->host, pending->path, pending->payload_hash,
				   &pending->first, err))
	{
		lp_free(pending->host);
		lp_free(pending->path);
		lp_free(pending);
		return false;
	}
	if (ops->start != NULL &&
		!ops->start(client->transport, &pending->first.http, &pending->response,
					&pending->transfer, err))
	{
		pending_free(pending);
		return false;
	}
	*out = pending;
	return true;
}

bool
lp_s3_call_finish(LpS3Client *client, LpS3Pending *pending, LpS3HttpResponse *response,
				  LpError *err)
{
	const LpS3TransportOps *ops = client->transport->ops;
	bool		answered;
	bool		ok;

	if (pending->transfer != NULL)
		answered = ops->finish(client->transport, pending->transfer, err);
	else
		answered = ops->perform(client->transport, &pending->first.http, &pending->response, err);
	*response = pending->response;
	ok = retry_after_first(client, &pending->call, pending->host, pending->path,
						   pending->payload_hash, answered, response, err);
	pending_free(pending);
	return ok;
}

void
lp_s3_call_abort(LpS3Client *client, LpS3Pending *pending)
{
	if (pending->transfer != NULL)
		client->transport->ops->abort(client->transport, pending->transfer);
	pending_free(pending);
}

void
lp_s3_client_progress(LpS3Client *client)
{
	if (client->transport->ops->progress != NULL)
		client->transport->ops->progress(client->transport);
}

char *
lp_s3_call_url(LpS3Client *client, const LpS3Call *call)
{
	char	   *host = call_host(client, call);
	char	   *path = call_path(client, call);
	char	   *encoded = path ? lp_s3_encode_path(path) : NULL;
	char	   *url = NULL;
	size_t		len;
	size_t		used;

	if (host == NULL || encoded == NULL)
		goto done;
	len = strlen(client->scheme) + strlen(host) + strlen(encoded) + 1;
	for (size_t i = 0; i < call->query_count; i++)
		len += strlen(call->query[i].name) + 2 +
			(call->query[i].value ? strlen(call->query[i].value) : 0);
	url = lp_alloc(len);
	if (url == NULL)
		goto done;
	used = (size_t) snprintf(url, len, "%s%s%s", client->scheme, host, encoded);
	/* the query as a reader recognizes it, not encoded */
	for (size_t i = 0; i < call->query_count; i++)
		used += (size_t) snprintf(url + used, len - used, "%c%s%s%s", i == 0 ? '?' : '&',
								  call->query[i].name, call->query[i].value ? "=" : "",
								  call->query[i].value ? call->query[i].value : "");

done:
	lp_free(host);
	lp_free(path);
	lp_free(encoded);
	return url;
}

static LpErrorCode
error_code_for(long status, const char *code)
{
	static const char *const credential_codes[] = {
		"SignatureDoesNotMatch", "InvalidAccessKeyId", "InvalidToken", "ExpiredToken",
		"TokenRefreshRequired", "AuthorizationHeaderMalformed", "InvalidSecurity",
		"RequestTimeTooSkewed", "MissingSecurityHeader", "InvalidClientTokenId"
	};

	for (size_t i = 0; i < sizeof(credential_codes) / sizeof(credential_codes[0]); i++)
		if (strcmp(code, credential_codes[i]) == 0)
			return LP_ERR_CREDENTIALS;
	if (strcmp(code, "NoSuchKey") == 0 || strcmp(code, "NoSuchBucket") == 0 ||
		strcmp(code, "NoSuchUpload") == 0 || (status == 404 && code[0] == '\0'))
		return LP_ERR_NOT_FOUND;
	if (status == 403)
		return LP_ERR_ACCESS_DENIED;
	if (status == 412 || strcmp(code, "PreconditionFailed") == 0 ||
		strcmp(code, "ConditionalRequestConflict") == 0)
		return LP_ERR_CONFLICT;
	return LP_ERR_IO;
}

bool
lp_s3_fail(LpS3Client *client, const LpS3Call *call, const LpS3HttpResponse *response,
		   const char *what, LpError *err)
{
	LpS3Document *document = NULL;
	LpError		parse_err;
	const char *code = "";
	const char *message = NULL;
	const char *request_id = response->request_id;
	char	   *url = lp_s3_call_url(client, call);

	if (response->body != NULL && response->body_len > 0 &&
		lp_s3_xml_parse(response->body, response->body_len, LP_S3_ERROR, &document, &parse_err) &&
		document->kind == LP_S3_ERROR)
	{
		code = document->error.code;
		message = document->error.message;
		if (request_id[0] == '\0' && document->error.request_id)
			request_id = document->error.request_id;
	}
	lp_fail(err, error_code_for(response->status, code),
			"could not %s \"s3://%s/%s\": %s %s answered HTTP %ld%s%s, request id %s",
			what, call->bucket, call->key, call->method, url ? url : "(out of memory)",
			response->status, code[0] ? " " : "", code,
			request_id[0] ? request_id : "(none)");
	if (message && message[0])
		lp_error_detail(err, "The server said: %s", message);
	lp_s3_xml_free(document);
	lp_free(url);
	return false;
}

bool
lp_s3_call_checked(LpS3Client *client, const LpS3Call *call, const char *what,
				   LpS3HttpResponse *response, LpError *err)
{
	if (!lp_s3_call(client, call, response, err))
		return false;
	if (lp_s3_succeeded(call, response))
		return true;
	lp_s3_fail(client, call, response, what, err);
	lp_s3_http_response_clear(response);
	return false;
}

bool
lp_s3_list_page(LpS3Client *client, const char *bucket, const char *prefix,
				const LpS3Pair *query, size_t query_count, const char *what,
				LpS3DocumentKind kind, LpS3Document **document, LpError *err)
{
	LpS3Call	call = {.method = "GET", .bucket = bucket, .key = "",
	.query = query, .query_count = query_count};
	LpS3HttpResponse response;
	bool		ok;

	*document = NULL;
	if (!lp_s3_call_checked(client, &call, what, &response, err))
		return false;
	ok = lp_s3_xml_parse(response.body ? response.body : "", response.body_len, kind,
						 document, err);
	lp_s3_http_response_clear(&response);
	if (!ok)
		return false;
	if ((*document)->kind != kind)
	{
		lp_s3_xml_free(*document);
		*document = NULL;
		return lp_fail(err, LP_ERR_IO, "could not %s \"s3://%s/%s\": the server answered an Error",
					   what, bucket, prefix);
	}
	return true;
}

bool
lp_s3_parse_http_date(const char *text, int64_t *seconds)
{
	static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
	char		weekday[4];
	char		month[4];
	char		zone[4];
	int			day;
	int			year;
	int			hour;
	int			minute;
	int			second;
	int			consumed = 0;
	const char *found;
	struct tm	tm;

	if (sscanf(text, "%3[A-Za-z], %d %3s %d %d:%d:%d %3s%n", weekday, &day, month, &year,
			   &hour, &minute, &second, zone, &consumed) != 8 ||
		text[consumed] != '\0' || strcmp(zone, "GMT") != 0 || strlen(month) != 3 ||
		(found = strstr(months, month)) == NULL || (found - months) % 3 != 0 ||
		day < 1 || day > 31 || year < 1970 || hour > 23 || minute > 59 || second > 60 ||
		hour < 0 || minute < 0 || second < 0)
		return false;
	memset(&tm, 0, sizeof(tm));
	tm.tm_year = year - 1900;
	tm.tm_mon = (int) ((found - months) / 3);
	tm.tm_mday = day;
	tm.tm_hour = hour;
	tm.tm_min = minute;
	tm.tm_sec = second;
	*seconds = (int64_t) timegm(&tm);
	return true;
}
