/*
 * test_curl_http.c - the libcurl transport of S3 requests (platform/lp_curl_http)
 * against a real HTTP server on loopback that this file starts
 * (http_test_server.py): headers and bodies as sent, connection reuse,
 * statuses, bounded bodies and headers, timeouts, cancels and dropped
 * connections.  test/s3/test_curl_rgw.c sends signed requests through it to
 * Ceph's RADOS Gateway.
 */
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "base/lp_interrupt.h"
#include "lp_curl_http.h"
#include "lp_test.h"

#define SERVER_SCRIPT "test/core/http_test_server.py"
/* Debian's (setup.sh installs it), not a version manager's shim on PATH */
#define PYTHON "/usr/bin/python3"

static pid_t server_pid;
static int	server_port;
static LpCurl *curl;
static double cancel_at;		/* the cancel hook says stop from then on; 0: never */

static double
now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static bool
cancel_after_deadline(void)
{
	return cancel_at > 0 && now_seconds() >= cancel_at;
}

static void
stop_server(void)
{
	if (server_pid > 0)
	{
		kill(server_pid, SIGTERM);
		waitpid(server_pid, NULL, 0);
		server_pid = 0;
	}
	if (curl)
		lp_curl_destroy(curl);
	curl = NULL;
}

/* Start the loopback server once; false when it could not start. */
static bool
start_server(void)
{
	int			fds[2];
	char		line[32] = "";
	ssize_t		got;

	if (server_pid > 0)
		return true;
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK || pipe(fds) != 0)
		return false;
	server_pid = fork();
	if (server_pid == 0)
	{
		dup2(fds[1], STDOUT_FILENO);
		close(fds[0]);
		close(fds[1]);
		execl(PYTHON, "python3", SERVER_SCRIPT, (char *) NULL);
		_exit(127);
	}
	close(fds[1]);
	/* the whole line: the server dies of EPIPE if the pipe closes mid-line */
	for (size_t len = 0; server_pid > 0 && len < sizeof(line) - 1 && strchr(line, '\n') == NULL; len += got)
	{
		got = read(fds[0], line + len, sizeof(line) - 1 - len);
		if (got <= 0)
			break;
	}
	close(fds[0]);
	if (strchr(line, '\n') == NULL)
		return false;
	server_port = atoi(line);
	atexit(stop_server);
	lp_set_cancel_check(cancel_after_deadline);
	curl = lp_curl_create();
	return server_port > 0 && curl != NULL;
}

typedef struct Call
{
	LpS3HttpRequest request;
	LpS3HttpResponse response;
	LpError		err;
	bool		ok;
	double		seconds;
	char		url[256];
	char		host[64];
	LpS3Pair	headers[8];
} Call;

/* Prepare a request to the loopback server: host header first. */
static void
prepare(Call *call, const char *method, const char *path)
{
	memset(call, 0, sizeof(*call));
	snprintf(call->url, sizeof(call->url), "http://127.0.0.1:%d%s", server_port, path);
	snprintf(call->host, sizeof(call->host), "127.0.0.1:%d", server_port);
	call->headers[0] = (LpS3Pair) {"host", call->host};
	call->request.method = method;
	call->request.url = call->url;
	call->request.headers = call->headers;
	call->request.header_count = 1;
	call->request.response_body_max = 1 << 20;
	call->request.connect_timeout_ms = 2000;
	call->request.timeout_ms = 10000;
}

static void
perform(Call *call, bool allow_http)
{
	double		start = now_seconds();

	call->ok = lp_curl_perform(curl, allow_http, &call->request, &call->response, &call->err);
	call->seconds = now_seconds() - start;
}

/* The response body as a string (the echo's are text). */
static char *
body_text(Call *call)
{
	static char text[1 << 16];
	size_t		len = call->response.body_len < sizeof(text) - 1 ? call->response.body_len : sizeof(text) - 1;

	memcpy(text, call->response.body ? call->response.body : "", call->response.body ? len : 0);
	text[call->response.body ? len : 0] = '\0';
	return text;
}

static bool
has_line(const char *text, const char *line)
{
	size_t		len = strlen(line);

	for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (strncmp(p, line, len) == 0 && (p[len] == '\n' || p[len] == '\0'))
			return true;
	return false;
}

static bool
has_header(const char *text, const char *name)
{
	char		prefix[64];

	snprintf(prefix, sizeof(prefix), "\n%s:", name);
	return strstr(text, prefix) != NULL;
}

/* The headers sent are the request's, nothing signed added, and the body. */
LP_TEST(test_curl_http_sends_headers_and_body_as_given)
{
	static char big[2 << 20];
	Call		call;
	char	   *text;
	char		expected[128];

	LP_CHECK(start_server());
	prepare(&call, "PUT", "/echo/object");
	call.headers[1] = (LpS3Pair) {"x-amz-date", "20261201T100000Z"};
	call.headers[2] = (LpS3Pair) {"x-amz-content-sha256", "UNSIGNED-PAYLOAD"};
	call.request.header_count = 3;
	memset(big, 'x', sizeof(big));
	call.request.body = big;
	call.request.body_len = sizeof(big);
	call.request.response_body_max = sizeof(big) + 4096;
	perform(&call, true);
	LP_CHECK_MSG(call.ok, "%s", call.err.message);
	text = body_text(&call);
	LP_CHECK_EQ_U64(call.response.status, 200);
	LP_CHECK(has_line(text, "PUT /echo/object HTTP/1.1"));
	snprintf(expected, sizeof(expected), "host: %s", call.host);
	LP_CHECK(has_line(text, expected));
	LP_CHECK(has_line(text, "x-amz-date: 20261201T100000Z"));
	LP_CHECK(has_line(text, "x-amz-content-sha256: UNSIGNED-PAYLOAD"));
	snprintf(expected, sizeof(expected), "content-length: %zu", sizeof(big));
	LP_CHECK(has_line(text, expected));
	snprintf(expected, sizeof(expected), "body-length: %zu", sizeof(big));
	LP_CHECK(has_line(text, expected));
	/* libcurl adds no Expect, no authentication, no chunked encoding */
	LP_CHECK(!has_header(text, "expect"));
	LP_CHECK(!has_header(text, "authorization"));
	LP_CHECK(!has_header(text, "transfer-encoding"));
	LP_CHECK(call.response.body_len > sizeof(big) &&
			 memcmp(call.response.body + call.response.body_len - sizeof(big), big, sizeof(big)) == 0);
	LP_CHECK_STR(call.response.etag, "\"etag-1\"");
	LP_CHECK_STR(call.response.request_id, "request-1");
	LP_CHECK_STR(call.response.last_modified, "Tue, 01 Dec 2026 10:00:00 GMT");
	LP_CHECK(call.response.has_content_length);
	lp_s3_http_response_clear(&call.response);

	/* an empty POST (CreateMultipartUpload) says Content-Length: 0 */
	prepare(&call, "POST", "/echo?uploads");
	perform(&call, true);
	LP_CHECK_MSG(call.ok, "%s", call.err.message);
	text = body_text(&call);
	LP_CHECK(has_line(text, "POST /echo?uploads HTTP/1.1"));
	LP_CHECK(has_line(text, "content-length: 0"));
	lp_s3_http_response_clear(&call.response);

	/* the path is sent as signed: "." and ".." segments stay */
	prepare(&call, "GET", "/echo/a/../b/./c");
	perform(&call, true);
	LP_CHECK_MSG(call.ok, "%s", call.err.message);
	LP_CHECK(has_line(body_text(&call), "GET /echo/a/../b/./c HTTP/1.1"));
	lp_s3_http_response_clear(&call.response);

	/* a header value with a line break would add a header: refused */
	prepare(&call, "GET", "/echo");
	call.headers[1] = (LpS3Pair) {"x-amz-meta-a", "b\r\nx-injected: 1"};
	call.request.header_count = 2;
	perform(&call, true);
	LP_CHECK(!call.ok && call.err.code == LP_ERR_INVALID_ARGUMENT);
	LP_CHECK(strstr(call.err.message, "x-injected") == NULL);
}

/* Two requests in a row share one connection (the client port is the same). */
LP_TEST(test_curl_http_reuses_the_connection)
{
	Call		call;
	char		first[64] = "";
	char	   *port;

	LP_CHECK(start_server());
	for (int i = 0; i < 2; i++)
	{
		prepare(&call, "GET", "/echo");
		perform(&call, true);
		LP_CHECK_MSG(call.ok, "%s", call.err.message);
		port = strstr(body_text(&call), "client-port: ");
		LP_CHECK(port != NULL);
		if (port && i == 0)
			snprintf(first, sizeof(first), "%.*s", (int) strcspn(port, "\n"), port);
		else if (port)
			LP_CHECK_MSG(strncmp(port, first, strlen(first)) == 0, "%s then %.*s", first,
						 (int) strcspn(port, "\n"), port);
		lp_s3_http_response_clear(&call.response);
	}
}

/* Bodies: into the caller's buffer for a 2xx, collected otherwise, bounded. */
LP_TEST(test_curl_http_bodies)
{
	char		buffer[10];
	Call		call;

	LP_CHECK(start_server());
	prepare(&call, "GET", "/range");
	call.request.response_buffer = buffer;
	call.request.response_capacity = sizeof(buffer);
	perform(&call, true);
	LP_CHECK_MSG(call.ok, "%s", call.err.message);
	LP_CHECK_EQ_U64(call.response.status, 206);
	LP_CHECK(call.response.body_in_buffer && call.response.body == NULL);
	LP_CHECK_EQ_U64(call.response.body_len, 10);
	LP_CHECK(memcmp(buffer, "0123456789", 10) == 0);
	LP_CHECK_STR(call.response.content_range, "bytes 0-9/100");
	lp_s3_http_response_clear(&call.response);

	/* longer than the buffer */
	prepare(&call, "GET", "/range");
	call.request.response_buffer = buffer;
	call.request.response_capacity = 5;
	perform(&call, true);
	LP_CHECK(!call.ok && call.err.code == LP_ERR_CORRUPT);
	LP_CHECK(call.response.body == NULL && call.response.status == 0);

	/* an error answer is collected whatever the buffer */
	prepare(&call, "GET", "/status/503");
	call.request.response_buffer = buffer;
	call.request.response_capacity = sizeof(buffer);
	perform(&call, true);
	LP_CHECK_MSG(call.ok, "%s", call.err.message);
	LP_CHECK_EQ_U64(call.response.status, 503);
	LP_CHECK(!call.response.body_in_buffer);
	LP_CHECK(strstr(body_text(&call), "<Code>Test</Code>") != NULL);
	lp_s3_http_response_clear(&call.response);

	/* collected bodies grow, up to response_body_max */
	prepare(&call, "GET", "/bytes/100000");
	perform(&call, true);
	LP_CHECK_MSG(call.ok, "%s", call.err.message);
	LP_CHECK_EQ_U64(call.response.body_len, 100000);
	LP_CHECK(call.response.body && call.response.body[0] == 'b' && call.response.body[99999] == 'b');
	lp_s3_http_response_clear(&call.response);
	prepare(&call, "GET", "/bytes/100");
	call.request.response_body_max = 50;
	perform(&call, true);
	LP_CHECK(!call.ok && call.err.code == LP_ERR_CORRUPT);

	/* HEAD: the object's length, no body */
	prepare(&call, "HEAD", "/bytes/12345");
	perform(&call, true);
	LP_CHECK_MSG(call.ok, "%s", call.err.message);
	LP_CHECK(call.response.has_content_length);
	LP_CHECK_EQ_U64(call.response.content_length, 12345);
	LP_CHECK_EQ_U64(call.response.body_len, 0);
	lp_s3_http_response_clear(&call.response);

	/* a header the client reads that does not fit */
	prepare(&call, "GET", "/long-etag");
	perform(&call, true);
	LP_CHECK(!call.ok && call.err.code == LP_ERR_CORRUPT);
	LP_CHECK(strstr(call.err.message, "ETag") != NULL);
}

/*
 * Network failures are LP_ERR_NETWORK (retryable): a timeout, a dropped
 * connection, a refused one; their messages name the URL, never a header.
 */
LP_TEST(test_curl_http_network_failures)
{
	Call		call;
	struct sockaddr_in address = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t	len = sizeof(address);
	int			sock;

	LP_CHECK(start_server());
	prepare(&call, "GET", "/slow/3000");
	call.headers[1] = (LpS3Pair) {"authorization", "AWS4-HMAC-SHA256 Signature=secret-signature"};
	call.request.header_count = 2;
	call.request.timeout_ms = 300;
	perform(&call, true);
	LP_CHECK(!call.ok && call.err.code == LP_ERR_NETWORK);
	LP_CHECK_MSG(call.seconds < 1.5, "the timeout took %.2f s", call.seconds);
	LP_CHECK(strstr(call.err.message, call.url) != NULL);
	LP_CHECK(strstr(call.err.message, "secret-signature") == NULL &&
			 strstr(call.err.detail, "secret-signature") == NULL);

	prepare(&call, "GET", "/drop");
	perform(&call, true);
	LP_CHECK_MSG(!call.ok && call.err.code == LP_ERR_NETWORK, "%s", call.err.message);
	LP_CHECK(call.response.body == NULL);

	/* a port nobody listens on: bound, then closed */
	sock = socket(AF_INET, SOCK_STREAM, 0);
	LP_CHECK(sock >= 0 && bind(sock, (struct sockaddr *) &address, sizeof(address)) == 0 &&
			 getsockname(sock, (struct sockaddr *) &address, &len) == 0);
	close(sock);
	prepare(&call, "GET", "/");
	snprintf(call.url, sizeof(call.url), "http://127.0.0.1:%d/", ntohs(address.sin_port));
	perform(&call, true);
	LP_CHECK_MSG(!call.ok && call.err.code == LP_ERR_NETWORK, "%s", call.err.message);
}

/* Plain HTTP only when allowed. */
LP_TEST(test_curl_http_allow_http)
{
	Call		call;

	LP_CHECK(start_server());
	prepare(&call, "GET", "/echo");
	perform(&call, false);
	LP_CHECK(!call.ok && call.err.code == LP_ERR_INVALID_ARGUMENT);
	LP_CHECK(strstr(call.err.message, "plain HTTP") != NULL);
}

/*
 * A cancel stops a request within the polling interval, however long the
 * server takes; a clean-up request (ignore_cancel) runs despite a pending
 * cancel.
 */
LP_TEST(test_curl_http_cancel)
{
	Call		call;

	LP_CHECK(start_server());
	prepare(&call, "GET", "/slow/5000");
	cancel_at = now_seconds() + 0.2;
	perform(&call, true);
	LP_CHECK(!call.ok && call.err.code == LP_ERR_CANCELED);
	LP_CHECK_MSG(call.seconds >= 0.15 && call.seconds < 0.2 + 2 * LP_CURL_POLL_INTERVAL_MS / 1000.0,
				 "the cancel took %.3f s", call.seconds);

	/* pending before the request starts */
	prepare(&call, "GET", "/echo");
	perform(&call, true);
	LP_CHECK(!call.ok && call.err.code == LP_ERR_CANCELED);

	prepare(&call, "DELETE", "/echo");
	call.request.ignore_cancel = true;
	perform(&call, true);
	LP_CHECK_MSG(call.ok, "%s", call.err.message);
	LP_CHECK(has_line(body_text(&call), "DELETE /echo HTTP/1.1"));
	lp_s3_http_response_clear(&call.response);
	cancel_at = 0;

	/* the connection dropped by the cancel is replaced */
	prepare(&call, "GET", "/echo");
	perform(&call, true);
	LP_CHECK_MSG(call.ok, "%s", call.err.message);
	lp_s3_http_response_clear(&call.response);
}

/*
 * Start three /slow/MS requests, then make a plain request and finish the
 * three (the last aborted when abort_last): the seconds from the first
 * start to the last finish.
 */
static double
slow_requests_started(int ms, bool abort_last)
{
	Call		calls[3];
	LpCurlTransfer *transfers[3];
	Call		plain;
	char		path[32];
	double		start = now_seconds();

	snprintf(path, sizeof(path), "/slow/%d", ms);
	for (int i = 0; i < 3; i++)
	{
		prepare(&calls[i], "GET", path);
		calls[i].ok = lp_curl_start(curl, true, &calls[i].request, &calls[i].response,
									&transfers[i], &calls[i].err);
		LP_CHECK_MSG(calls[i].ok, "%s", calls[i].err.message);
		if (!calls[i].ok)
			return 0;
	}
	lp_curl_progress(curl);
	/* a plain request meanwhile: its loop keeps the others' ends */
	prepare(&plain, "GET", "/echo");
	perform(&plain, true);
	LP_CHECK_MSG(plain.ok, "%s", plain.err.message);
	LP_CHECK(has_line(body_text(&plain), "GET /echo HTTP/1.1"));
	lp_s3_http_response_clear(&plain.response);
	for (int i = 0; i < 3; i++)
	{
		if (abort_last && i == 2)
		{
			lp_curl_abort(curl, transfers[i]);
			LP_CHECK(calls[i].response.body == NULL && calls[i].response.body_len == 0);
			continue;
		}
		calls[i].ok = lp_curl_finish(curl, transfers[i], &calls[i].err);
		LP_CHECK_MSG(calls[i].ok, "%s", calls[i].err.message);
		LP_CHECK_EQ_U64(calls[i].response.status, 200);
		LP_CHECK(calls[i].response.body_len == 4 && memcmp(calls[i].response.body, "done", 4) == 0);
		lp_s3_http_response_clear(&calls[i].response);
	}
	return now_seconds() - start;
}

/*
 * Started requests run at once on connections of their own, as many as
 * allowed; with one connection they run one after another and still all
 * answer; an abort leaves nothing behind and the handle goes on serving.
 */
LP_TEST(test_curl_http_started_requests)
{
	double		seconds;

	LP_CHECK(start_server());
	/* a fresh handle: no connection of earlier tests kept open */
	lp_curl_destroy(curl);
	curl = lp_curl_create();
	LP_CHECK(curl != NULL);
	seconds = slow_requests_started(200, false);
	LP_CHECK_MSG(seconds >= 0.6, "three requests of 0.2 s over one connection took %.3f s", seconds);

	lp_curl_set_max_connections(curl, 4);
	seconds = slow_requests_started(400, false);
	LP_CHECK_MSG(seconds > 0.35 && seconds < 0.8, "three started requests of 0.4 s took %.3f s", seconds);

	seconds = slow_requests_started(200, true);
	LP_CHECK_MSG(seconds < 0.6, "two finished, one aborted took %.3f s", seconds);
}

/* A cancel stops the wait for a started request's answer. */
LP_TEST(test_curl_http_started_request_cancel)
{
	Call		call;
	LpCurlTransfer *transfer;
	double		start;

	LP_CHECK(start_server());
	prepare(&call, "GET", "/slow/5000");
	LP_CHECK(lp_curl_start(curl, true, &call.request, &call.response, &transfer, &call.err));
	start = now_seconds();
	cancel_at = start + 0.2;
	call.ok = lp_curl_finish(curl, transfer, &call.err);
	cancel_at = 0;
	LP_CHECK(!call.ok && call.err.code == LP_ERR_CANCELED);
	LP_CHECK_MSG(now_seconds() - start < 0.2 + 2 * LP_CURL_POLL_INTERVAL_MS / 1000.0,
				 "the cancel took %.3f s", now_seconds() - start);
}
