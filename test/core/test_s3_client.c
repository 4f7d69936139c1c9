/*
 * test_s3_client.c - the S3 client and multipart uploads against the
 * in-process server (lp_test_s3_server): every request signed as received,
 * addressing in both URL styles, retries and their backoff for each kind of
 * transient failure, no retry for the others, cancels, the error mapping,
 * and an upload aborted by any failure (a cancel included).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/lp_alloc.h"
#include "base/lp_interrupt.h"
#include "io/lp_s3_client.h"
#include "io/lp_s3_multipart.h"
#include "lp_test.h"
#include "lp_test_s3_server.h"

/* a text of the server's counts equals expected */
#define CHECK_TEXT(text, expected) \
	LP_CHECK_MSG(strcmp((text), (expected)) == 0, "%s: \"%.200s\", not \"%.200s\"", #text, (text), (expected))

typedef struct Fixture
{
	LpTestS3Server *server;
	LpS3Config	config;
	LpS3Client *client;
} Fixture;

static void
fixture_open(Fixture *f, LpS3UrlStyle style)
{
	LpError		err;

	f->server = lp_test_s3_server_create();
	f->config = lp_test_s3_config();
	f->config.url_style = style;
	f->client = lp_s3_client_create(&f->config, lp_test_s3_transport(f->server), &err);
	LP_CHECK_MSG(f->client != NULL, "client: %.300s", err.message);
}

static void
fixture_close(Fixture *f)
{
	lp_s3_client_free(f->client);
	lp_test_s3_server_free(f->server);
	lp_set_cancel_check(NULL);
}

/* PUT key with body through the client; true when it succeeded. */
static bool
put(Fixture *f, const char *key, const char *body, LpError *err)
{
	LpS3Call	call = {.method = "PUT", .bucket = LP_TEST_S3_BUCKET, .key = key,
	.body = body, .body_len = strlen(body)};
	LpS3HttpResponse response;

	if (!lp_s3_call_checked(f->client, &call, "write", &response, err))
		return false;
	lp_s3_http_response_clear(&response);
	return true;
}

LP_TEST(s3_client_signs_every_request_in_both_url_styles)
{
	static const char *const keys[] = {"plain", "dir/with space/ü+=&?.lance", "a/./b/../c"};
	LpS3UrlStyle styles[] = {LP_S3_URL_PATH, LP_S3_URL_VIRTUAL};
	LpError		err;

	for (int s = 0; s < 2; s++)
	{
		Fixture		f;
		size_t		len;

		fixture_open(&f, styles[s]);
		for (int k = 0; k < 3; k++)
		{
			LP_CHECK_MSG(put(&f, keys[k], "body", &err), "%s: %.300s", keys[k], err.message);
			LP_CHECK(lp_test_s3_get(f.server, keys[k], &len) != NULL && len == 4);
		}
		/* the server recomputed every signature from what it received */
		LP_CHECK_EQ_U64(lp_test_s3_counts(f.server)->unsigned_requests, 0);
		LP_CHECK_EQ_U64(lp_test_s3_counts(f.server)->puts, 3);
		if (styles[s] == LP_S3_URL_VIRTUAL)
		{
			CHECK_TEXT(lp_test_s3_counts(f.server)->last_host, LP_TEST_S3_BUCKET "." LP_TEST_S3_HOST);
			CHECK_TEXT(lp_test_s3_counts(f.server)->last_url, "http://" LP_TEST_S3_BUCKET "." LP_TEST_S3_HOST "/a/./b/../c");
		}
		else
			CHECK_TEXT(lp_test_s3_counts(f.server)->last_url, LP_TEST_S3_ENDPOINT "/" LP_TEST_S3_BUCKET "/a/./b/../c");
		fixture_close(&f);
	}
}

LP_TEST(s3_client_wrong_secret_is_refused_without_naming_it)
{
	Fixture		f;
	LpS3Client *client;
	LpError		err;

	fixture_open(&f, LP_S3_URL_PATH);
	f.config.credentials.secret_access_key = "not-the-secret";
	client = lp_s3_client_create(&f.config, lp_test_s3_transport(f.server), &err);
	lp_s3_client_free(f.client);
	f.client = client;
	LP_CHECK(!put(&f, "k", "x", &err));
	LP_CHECK_MSG(err.code == LP_ERR_CREDENTIALS, "%s", lp_error_code_name(err.code));
	LP_CHECK_MSG(strstr(err.message, "HTTP 403 SignatureDoesNotMatch, request id req-403") != NULL &&
				 strstr(err.message, "PUT " LP_TEST_S3_ENDPOINT "/bucket/k") != NULL &&
				 strstr(err.message, "not-the-secret") == NULL, "%.300s", err.message);
	/* rejected credentials are not retried */
	LP_CHECK_EQ_U64(lp_test_s3_counts(f.server)->requests, 1);
	fixture_close(&f);
}

LP_TEST(s3_client_configuration_refused)
{
	LpTestS3Server *server = lp_test_s3_server_create();
	LpS3Config	config = lp_test_s3_config();
	LpError		err;

	config.allow_http = false;
	LP_CHECK(lp_s3_client_create(&config, lp_test_s3_transport(server), &err) == NULL &&
			 err.code == LP_ERR_INVALID_ARGUMENT && strstr(err.message, "plain HTTP") != NULL);
	config = lp_test_s3_config();
	config.endpoint = "http://user:pw@host/path";
	LP_CHECK(lp_s3_client_create(&config, lp_test_s3_transport(server), &err) == NULL &&
			 err.code == LP_ERR_INVALID_ARGUMENT);
	config = lp_test_s3_config();
	config.endpoint = "ftp://host";
	LP_CHECK(lp_s3_client_create(&config, lp_test_s3_transport(server), &err) == NULL);
	config = lp_test_s3_config();
	config.credentials.secret_access_key = "";
	LP_CHECK(lp_s3_client_create(&config, lp_test_s3_transport(server), &err) == NULL);
	lp_test_s3_server_free(server);
}

/* Two faults of a kind, then success: three attempts, two waits with equal jitter. */
LP_TEST(s3_client_retries_transient_failures_with_backoff)
{
	LpTestS3Fault faults[] = {LP_TEST_S3_DROP, LP_TEST_S3_SLOW_DOWN, LP_TEST_S3_INTERNAL_ERROR,
	LP_TEST_S3_TOO_MANY, LP_TEST_S3_CONDITIONAL_CONFLICT};

	for (size_t i = 0; i < sizeof(faults) / sizeof(faults[0]); i++)
	{
		Fixture		f;
		LpError		err;
		const LpTestS3Counts *counts;

		fixture_open(&f, LP_S3_URL_PATH);
		lp_test_s3_server_fault(f.server, "PUT", faults[i], 2);
		LP_CHECK_MSG(put(&f, "k", "x", &err), "fault %zu: %.300s", i, err.message);
		counts = lp_test_s3_counts(f.server);
		LP_CHECK_EQ_U64(counts->requests, 3);
		LP_CHECK_EQ_U64(counts->puts, 1);
		LP_CHECK_EQ_U64(counts->waits, 2);
		/* bounds 100 and 200 ms: each wait is between half and all of its bound */
		LP_CHECK_MSG(counts->wait_ms[0] >= 50 && counts->wait_ms[0] <= 100, "%u", counts->wait_ms[0]);
		LP_CHECK_MSG(counts->wait_ms[1] >= 100 && counts->wait_ms[1] <= 200, "%u", counts->wait_ms[1]);
		fixture_close(&f);
	}
}

LP_TEST(s3_client_retries_are_bounded)
{
	Fixture		f;
	LpError		err;
	const LpTestS3Counts *counts;

	/* a network that keeps failing: LP_ERR_NETWORK after 1 + max_retries attempts */
	fixture_open(&f, LP_S3_URL_PATH);
	f.config.retry_max_delay_ms = 250;
	lp_s3_client_free(f.client);
	f.client = lp_s3_client_create(&f.config, lp_test_s3_transport(f.server), &err);
	lp_test_s3_server_fault(f.server, NULL, LP_TEST_S3_DROP, 10);
	LP_CHECK(!put(&f, "k", "x", &err));
	LP_CHECK_MSG(err.code == LP_ERR_NETWORK && strstr(err.message, "after 4 attempts") != NULL &&
				 strstr(err.message, "connection reset") != NULL, "%.300s", err.message);
	counts = lp_test_s3_counts(f.server);
	LP_CHECK_EQ_U64(counts->requests, 4);
	LP_CHECK_EQ_U64(counts->waits, 3);
	/* the third bound (400 ms) is capped at retry_max_delay_ms */
	LP_CHECK_MSG(counts->wait_ms[2] >= 125 && counts->wait_ms[2] <= 250, "%u", counts->wait_ms[2]);
	fixture_close(&f);

	/* a server that keeps answering 503: the last answer is the error */
	fixture_open(&f, LP_S3_URL_PATH);
	lp_test_s3_server_fault(f.server, NULL, LP_TEST_S3_SLOW_DOWN, 10);
	LP_CHECK(!put(&f, "k", "x", &err));
	LP_CHECK_MSG(err.code == LP_ERR_IO && strstr(err.message, "HTTP 503 SlowDown") != NULL,
				 "%.300s", err.message);
	LP_CHECK_MSG(strstr(err.detail, "injected SlowDown") != NULL, "%.300s", err.detail);
	LP_CHECK_EQ_U64(lp_test_s3_counts(f.server)->requests, 4);
	fixture_close(&f);

	/* a request the server refuses is not retried */
	fixture_open(&f, LP_S3_URL_PATH);
	lp_test_s3_server_fault(f.server, NULL, LP_TEST_S3_BAD_REQUEST, 10);
	LP_CHECK(!put(&f, "k", "x", &err));
	LP_CHECK(err.code == LP_ERR_IO && strstr(err.message, "HTTP 400 InvalidRequest") != NULL);
	LP_CHECK_EQ_U64(lp_test_s3_counts(f.server)->requests, 1);
	LP_CHECK_EQ_U64(lp_test_s3_counts(f.server)->waits, 0);
	fixture_close(&f);
}

LP_TEST(s3_client_cancel_stops_requests_and_waits)
{
	Fixture		f;
	LpError		err;

	fixture_open(&f, LP_S3_URL_PATH);
	lp_set_cancel_check(lp_test_s3_cancel_check);
	lp_test_s3_server_fault(f.server, NULL, LP_TEST_S3_CANCEL, 1);
	LP_CHECK(!put(&f, "k", "x", &err) && err.code == LP_ERR_CANCELED);
	LP_CHECK_EQ_U64(lp_test_s3_counts(f.server)->requests, 1);
	/* a cancel while a request is retried */
	lp_test_s3_cancel_pending = false;
	lp_test_s3_reset_counts(f.server);
	lp_test_s3_server_fault(f.server, NULL, LP_TEST_S3_SLOW_DOWN, 1);
	lp_test_s3_server_fault(f.server, NULL, LP_TEST_S3_CANCEL, 1);
	LP_CHECK(!put(&f, "k", "x", &err) && err.code == LP_ERR_CANCELED);
	LP_CHECK_EQ_U64(lp_test_s3_counts(f.server)->requests, 2);
	fixture_close(&f);
}

static uint8_t *
pattern(size_t len, unsigned seed)
{
	uint8_t    *data = malloc(len);

	for (size_t i = 0; i < len; i++)
		data[i] = (uint8_t) (i * 7 + seed + (i >> 11));
	return data;
}

LP_TEST(s3_multipart_uploads_copies_and_completes)
{
	Fixture		f;
	LpError		err;
	LpS3Multipart *upload;
	size_t		part = 5 << 20;
	uint8_t    *data = pattern(part + 2000, 1);
	const uint8_t *stored;
	size_t		len;

	fixture_open(&f, LP_S3_URL_PATH);
	lp_test_s3_put(f.server, "src/part.lance", data, part + 2000);
	upload = lp_s3_multipart_start(f.client, LP_TEST_S3_BUCKET, "out/file.lance", &err);
	LP_CHECK_MSG(upload != NULL, "%.300s", err.message);
	LP_CHECK(lp_s3_multipart_upload_part(upload, data, part, &err));
	LP_CHECK(lp_s3_multipart_copy_part(upload, LP_TEST_S3_BUCKET, "src/part.lance", 1000, part, &err));
	LP_CHECK(lp_s3_multipart_copy_part(upload, LP_TEST_S3_BUCKET, "src/part.lance", 0, 10, &err));
	LP_CHECK_EQ_U64(lp_s3_multipart_num_parts(upload), 3);
	LP_CHECK_MSG(lp_s3_multipart_complete(upload, true, &err), "%.300s", err.message);
	lp_s3_multipart_end(upload);
	stored = lp_test_s3_get(f.server, "out/file.lance", &len);
	LP_CHECK_EQ_U64(len, 2 * part + 10);
	LP_CHECK(stored && memcmp(stored, data, part) == 0 && memcmp(stored + part, data + 1000, part) == 0 &&
			 memcmp(stored + 2 * part, data, 10) == 0);
	LP_CHECK_EQ_U64(lp_test_s3_counts(f.server)->aborts, 0);
	LP_CHECK_EQ_U64(lp_test_s3_counts(f.server)->unsigned_requests, 0);
	LP_CHECK_EQ_U64(lp_test_s3_open_uploads(f.server), 0);
	free(data);
	fixture_close(&f);
}

/* A completion whose answer is lost is retried, finds the upload gone and recognizes its object. */
LP_TEST(s3_multipart_completion_answer_lost)
{
	Fixture		f;
	LpError		err;
	LpS3Multipart *upload;
	size_t		part = 5 << 20;
	uint8_t    *data = pattern(part, 5);
	size_t		len;

	fixture_open(&f, LP_S3_URL_PATH);
	upload = lp_s3_multipart_start(f.client, LP_TEST_S3_BUCKET, "out/lost", &err);
	LP_CHECK(lp_s3_multipart_upload_part(upload, data, part, &err));
	LP_CHECK(lp_s3_multipart_upload_part(upload, data, 100, &err));
	lp_test_s3_server_fault(f.server, "POST", LP_TEST_S3_DROP_ANSWER, 1);
	LP_CHECK_MSG(lp_s3_multipart_complete(upload, false, &err), "%s: %.300s",
				 lp_error_code_name(err.code), err.message);
	lp_s3_multipart_end(upload);
	LP_CHECK_EQ_U64(lp_test_s3_counts(f.server)->completes, 1);
	LP_CHECK_EQ_U64(lp_test_s3_counts(f.server)->aborts, 0);
	LP_CHECK(lp_test_s3_get(f.server, "out/lost", &len) != NULL && len == part + 100);

	/* an upload aborted meanwhile does not take another object at its key for its own */
	upload = lp_s3_multipart_start(f.client, LP_TEST_S3_BUCKET, "out/other", &err);
	LP_CHECK(lp_s3_multipart_upload_part(upload, data, 100, &err));
	lp_test_s3_put(f.server, "out/other", "someone else", 12);
	{
		LpS3Pair	query[] = {{"uploadId", lp_s3_multipart_upload_id(upload)}};
		LpS3Call	abort_call = {.method = "DELETE", .bucket = LP_TEST_S3_BUCKET, .key = "out/other",
		.query = query, .query_count = 1};
		LpS3HttpResponse response;

		LP_CHECK(lp_s3_call(f.client, &abort_call, &response, &err));
		lp_s3_http_response_clear(&response);
	}
	LP_CHECK(!lp_s3_multipart_complete(upload, false, &err) && err.code == LP_ERR_NOT_FOUND);
	LP_CHECK_MSG(strstr(err.message, "NoSuchUpload") != NULL, "%.300s", err.message);
	lp_s3_multipart_end(upload);
	LP_CHECK(lp_test_s3_get(f.server, "out/other", &len) != NULL && len == 12);
	free(data);
	fixture_close(&f);
}

LP_TEST(s3_multipart_failures_abort_the_upload)
{
	Fixture		f;
	LpError		err;
	LpS3Multipart *upload;
	uint8_t    *data = pattern(1 << 20, 2);

	/* EntityTooSmall when completing */
	fixture_open(&f, LP_S3_URL_PATH);
	upload = lp_s3_multipart_start(f.client, LP_TEST_S3_BUCKET, "out/a", &err);
	LP_CHECK(lp_s3_multipart_upload_part(upload, data, 1 << 20, &err));
	LP_CHECK(lp_s3_multipart_upload_part(upload, data, 1 << 20, &err));
	LP_CHECK(!lp_s3_multipart_complete(upload, false, &err));
	LP_CHECK_MSG(strstr(err.message, "HTTP 400 EntityTooSmall") != NULL, "%.300s", err.message);
	LP_CHECK_EQ_U64(lp_test_s3_open_uploads(f.server), 0);
	LP_CHECK_EQ_U64(lp_test_s3_counts(f.server)->aborts, 1);
	/* later calls fail; ending the upload sends nothing more */
	LP_CHECK(!lp_s3_multipart_upload_part(upload, data, 10, &err) && err.code == LP_ERR_INTERNAL);
	lp_s3_multipart_end(upload);
	LP_CHECK_EQ_U64(lp_test_s3_counts(f.server)->aborts, 1);
	fixture_close(&f);

	/* a part that fails after the retries */
	fixture_open(&f, LP_S3_URL_PATH);
	upload = lp_s3_multipart_start(f.client, LP_TEST_S3_BUCKET, "out/b", &err);
	lp_test_s3_server_fault(f.server, "PUT", LP_TEST_S3_INTERNAL_ERROR, 4);
	LP_CHECK(!lp_s3_multipart_upload_part(upload, data, 1 << 20, &err));
	LP_CHECK(strstr(err.message, "HTTP 500 InternalError") != NULL);
	LP_CHECK_EQ_U64(lp_test_s3_open_uploads(f.server), 0);
	lp_s3_multipart_end(upload);
	fixture_close(&f);

	/* a copy of a missing source */
	fixture_open(&f, LP_S3_URL_PATH);
	upload = lp_s3_multipart_start(f.client, LP_TEST_S3_BUCKET, "out/c", &err);
	LP_CHECK(!lp_s3_multipart_copy_part(upload, LP_TEST_S3_BUCKET, "missing", 0, 10, &err) &&
			 err.code == LP_ERR_NOT_FOUND);
	LP_CHECK_EQ_U64(lp_test_s3_open_uploads(f.server), 0);
	lp_s3_multipart_end(upload);
	fixture_close(&f);

	/* a cancel: the abort still reaches the server */
	fixture_open(&f, LP_S3_URL_PATH);
	lp_set_cancel_check(lp_test_s3_cancel_check);
	upload = lp_s3_multipart_start(f.client, LP_TEST_S3_BUCKET, "out/d", &err);
	lp_test_s3_server_fault(f.server, "PUT", LP_TEST_S3_CANCEL, 1);
	LP_CHECK(!lp_s3_multipart_upload_part(upload, data, 1 << 20, &err) && err.code == LP_ERR_CANCELED);
	LP_CHECK_EQ_U64(lp_test_s3_counts(f.server)->aborts_while_canceled, 1);
	LP_CHECK_EQ_U64(lp_test_s3_open_uploads(f.server), 0);
	lp_s3_multipart_end(upload);
	fixture_close(&f);

	/* an upload ended before completion is aborted */
	fixture_open(&f, LP_S3_URL_PATH);
	upload = lp_s3_multipart_start(f.client, LP_TEST_S3_BUCKET, "out/e", &err);
	LP_CHECK(lp_s3_multipart_upload_part(upload, data, 1 << 20, &err));
	LP_CHECK_EQ_U64(lp_test_s3_open_uploads(f.server), 1);
	lp_s3_multipart_end(upload);
	LP_CHECK_EQ_U64(lp_test_s3_open_uploads(f.server), 0);
	fixture_close(&f);
	free(data);
}

LP_TEST(s3_client_http_dates)
{
	int64_t		seconds;

	LP_CHECK(lp_s3_parse_http_date("Fri, 02 Jan 2026 03:04:05 GMT", &seconds));
	LP_CHECK_EQ_U64(seconds, 1767323045);
	LP_CHECK(!lp_s3_parse_http_date("Fri, 02 Jan 2026 03:04:05 UTC", &seconds));
	LP_CHECK(!lp_s3_parse_http_date("Fri, 02 Foo 2026 03:04:05 GMT", &seconds));
	LP_CHECK(!lp_s3_parse_http_date("Fri, 02 Jan 2026 03:04:05 GMT x", &seconds));
	LP_CHECK(!lp_s3_parse_http_date("", &seconds));
}

/* A ranged GET of key's bytes [offset, offset + len) into buffer. */
static LpS3Call
ranged_get(const char *key, LpS3Pair *range_header, char *range, uint64_t offset,
		   size_t len, void *buffer)
{
	snprintf(range, 64, "bytes=%llu-%llu", (unsigned long long) offset,
			 (unsigned long long) (offset + len - 1));
	*range_header = (LpS3Pair) {"range", range};
	return (LpS3Call) {.method = "GET", .bucket = LP_TEST_S3_BUCKET, .key = key,
		.headers = range_header, .header_count = 1,
	.response_buffer = buffer, .response_capacity = len};
}

/*
 * Started calls are in flight together: nothing is served before the
 * transport progresses, both are signed, and each answer lands in its own
 * buffer whatever order they finish in.
 */
LP_TEST(s3_client_started_calls_run_together)
{
	Fixture		f;
	LpS3Pair	headers[2];
	char		ranges[2][64];
	char		buffers[2][8];
	LpS3Call	calls[2];
	LpS3Pending *pending[2];
	LpS3HttpResponse response;
	LpError		err;

	fixture_open(&f, LP_S3_URL_PATH);
	lp_test_s3_put(f.server, "a", "0123456789", 10);
	lp_test_s3_put(f.server, "b", "abcdefghij", 10);
	calls[0] = ranged_get("a", &headers[0], ranges[0], 2, 5, buffers[0]);
	calls[1] = ranged_get("b", &headers[1], ranges[1], 4, 6, buffers[1]);
	for (int i = 0; i < 2; i++)
		LP_CHECK_MSG(lp_s3_call_start(f.client, &calls[i], &pending[i], &err), "%.300s", err.message);
	LP_CHECK_EQ_U64(lp_test_s3_counts(f.server)->transfers_started, 2);
	LP_CHECK_EQ_U64(lp_test_s3_open_transfers(f.server), 2);
	LP_CHECK_EQ_U64(lp_test_s3_counts(f.server)->gets, 0);
	lp_s3_client_progress(f.client);
	LP_CHECK_EQ_U64(lp_test_s3_counts(f.server)->gets, 2);
	/* finished in the other order than started */
	LP_CHECK(lp_s3_call_finish(f.client, pending[1], &response, &err));
	LP_CHECK_EQ_U64(response.status, 206);
	LP_CHECK(response.body_in_buffer && response.body_len == 6 && memcmp(buffers[1], "efghij", 6) == 0);
	lp_s3_http_response_clear(&response);
	LP_CHECK(lp_s3_call_finish(f.client, pending[0], &response, &err));
	LP_CHECK(response.body_len == 5 && memcmp(buffers[0], "23456", 5) == 0);
	lp_s3_http_response_clear(&response);
	LP_CHECK_EQ_U64(lp_test_s3_open_transfers(f.server), 0);
	LP_CHECK_EQ_U64(lp_test_s3_counts(f.server)->unsigned_requests, 0);

	/* one finished before the transport progressed is served at its finish */
	LP_CHECK(lp_s3_call_start(f.client, &calls[0], &pending[0], &err));
	memset(buffers[0], 0, sizeof(buffers[0]));
	LP_CHECK(lp_s3_call_finish(f.client, pending[0], &response, &err));
	LP_CHECK(response.status == 206 && memcmp(buffers[0], "23456", 5) == 0);
	lp_s3_http_response_clear(&response);
	LP_CHECK_EQ_U64(lp_test_s3_counts(f.server)->gets, 3);
	fixture_close(&f);
}

/* A started call that fails is retried, signed anew, when it is finished. */
LP_TEST(s3_client_started_call_retried_at_finish)
{
	LpTestS3Fault faults[] = {LP_TEST_S3_DROP, LP_TEST_S3_SLOW_DOWN, LP_TEST_S3_INTERNAL_ERROR};

	for (size_t i = 0; i < sizeof(faults) / sizeof(faults[0]); i++)
	{
		Fixture		f;
		LpS3Pair	header;
		char		range[64];
		char		buffer[4];
		LpS3Call	call;
		LpS3Pending *pending;
		LpS3HttpResponse response;
		LpError		err;

		fixture_open(&f, LP_S3_URL_PATH);
		lp_test_s3_put(f.server, "a", "0123456789", 10);
		call = ranged_get("a", &header, range, 6, 4, buffer);
		lp_test_s3_server_fault(f.server, "GET", faults[i], 2);
		LP_CHECK(lp_s3_call_start(f.client, &call, &pending, &err));
		lp_s3_client_progress(f.client);
		LP_CHECK_MSG(lp_s3_call_finish(f.client, pending, &response, &err), "%.300s", err.message);
		LP_CHECK(response.status == 206 && memcmp(buffer, "6789", 4) == 0);
		lp_s3_http_response_clear(&response);
		LP_CHECK_EQ_U64(lp_test_s3_counts(f.server)->requests, 3);
		LP_CHECK_EQ_U64(lp_test_s3_counts(f.server)->waits, 2);
		LP_CHECK_EQ_U64(lp_test_s3_counts(f.server)->unsigned_requests, 0);
		fixture_close(&f);
	}
}

/* Aborted calls leave no transfer behind, served or not; a cancel refuses a start. */
LP_TEST(s3_client_started_calls_aborted_and_canceled)
{
	Fixture		f;
	LpS3Pair	headers[2];
	char		ranges[2][64];
	char		buffers[2][4];
	LpS3Call	calls[2];
	LpS3Pending *pending[2];
	LpError		err;

	fixture_open(&f, LP_S3_URL_PATH);
	lp_test_s3_put(f.server, "a", "0123456789", 10);
	calls[0] = ranged_get("a", &headers[0], ranges[0], 0, 4, buffers[0]);
	calls[1] = ranged_get("a", &headers[1], ranges[1], 4, 4, buffers[1]);
	LP_CHECK(lp_s3_call_start(f.client, &calls[0], &pending[0], &err));
	lp_s3_client_progress(f.client);
	LP_CHECK(lp_s3_call_start(f.client, &calls[1], &pending[1], &err));
	lp_s3_call_abort(f.client, pending[0]);
	lp_s3_call_abort(f.client, pending[1]);
	LP_CHECK_EQ_U64(lp_test_s3_counts(f.server)->transfers_aborted, 2);
	LP_CHECK_EQ_U64(lp_test_s3_open_transfers(f.server), 0);
	LP_CHECK_EQ_U64(lp_test_s3_counts(f.server)->gets, 1);

	lp_set_cancel_check(lp_test_s3_cancel_check);
	lp_test_s3_cancel_pending = true;
	LP_CHECK(!lp_s3_call_start(f.client, &calls[0], &pending[0], &err) &&
			 err.code == LP_ERR_CANCELED && pending[0] == NULL);
	LP_CHECK_EQ_U64(lp_test_s3_counts(f.server)->transfers_started, 2);
	lp_test_s3_cancel_pending = false;
	fixture_close(&f);
}

/* Over a transport without the start/finish pair, a started call is sent at its finish. */
LP_TEST(s3_client_started_call_over_a_serial_transport)
{
	Fixture		f;
	LpS3Pair	header;
	char		range[64];
	char		buffer[3];
	LpS3Call	call;
	LpS3Pending *pending;
	LpS3HttpResponse response;
	LpError		err;

	fixture_open(&f, LP_S3_URL_PATH);
	lp_test_s3_server_serial(f.server, true);
	lp_test_s3_put(f.server, "a", "0123456789", 10);
	call = ranged_get("a", &header, range, 1, 3, buffer);
	LP_CHECK(lp_s3_call_start(f.client, &call, &pending, &err));
	lp_s3_client_progress(f.client);
	LP_CHECK_EQ_U64(lp_test_s3_counts(f.server)->requests, 0);
	LP_CHECK(lp_s3_call_finish(f.client, pending, &response, &err));
	LP_CHECK(response.status == 206 && memcmp(buffer, "123", 3) == 0);
	lp_s3_http_response_clear(&response);
	LP_CHECK_EQ_U64(lp_test_s3_counts(f.server)->requests, 1);
	LP_CHECK_EQ_U64(lp_test_s3_counts(f.server)->transfers_started, 0);

	/* and an aborted one never is */
	LP_CHECK(lp_s3_call_start(f.client, &call, &pending, &err));
	lp_s3_call_abort(f.client, pending);
	LP_CHECK_EQ_U64(lp_test_s3_counts(f.server)->requests, 1);
	fixture_close(&f);
}
