/*
 * test_curl_rgw.c - the server's libcurl transport (platform/lp_curl_http) against
 * Ceph's RADOS Gateway (scripts/s3-server.sh; test/run.sh --only s3): requests
 * signed by the core's signer reach the gateway unchanged, since it verifies
 * every signature and payload hash; keys with spaces and '+' as signed, a
 * ranged GET into the caller's buffer, HEAD, the 403 of a wrong secret with its
 * Error document, DELETE.
 */
#include <stdlib.h>
#include <time.h>

#include <curl/curl.h>

#include "io/lp_s3_sign.h"
#include "lp_curl_http.h"
#include "lp_test.h"

typedef struct S3Call
{
	LpS3HttpRequest request;
	LpS3HttpResponse response;
	LpError		err;
	bool		ok;
	char		url[512];
	char		path[256];
	LpS3Pair	headers[8];
	LpS3Signed	sig;
} S3Call;

static LpCurl *curl;

/* The response body as a string. */
static char *
body_text(const S3Call *call)
{
	static char text[1 << 16];
	size_t		len = call->response.body_len < sizeof(text) - 1 ? call->response.body_len : sizeof(text) - 1;

	memcpy(text, call->response.body ? call->response.body : "", call->response.body ? len : 0);
	text[call->response.body ? len : 0] = '\0';
	return text;
}

/*
 * A path-style request to the gateway, signed by the core's signer, ready to
 * perform; body may be NULL.  The signer's headers follow the request's.
 */
static bool
s3_prepare(S3Call *s3, const char *method, const char *key, const char *range,
		   const char *body, const char *secret)
{
	const char *endpoint = getenv("LP_S3_ENDPOINT");
	const char *host = strstr(endpoint, "://") + 3;
	LpS3Credentials credentials = {getenv("LP_S3_ACCESS_KEY_ID"), secret, NULL};
	LpS3Request request = {0};
	char		payload_hash[LP_S3_SHA256_HEX_LEN + 1];
	char		amz_time[17];
	time_t		now = time(NULL);
	size_t		count = 1;
	LpError		err;

	memset(s3, 0, sizeof(*s3));
	strftime(amz_time, sizeof(amz_time), "%Y%m%dT%H%M%SZ", gmtime(&now));
	snprintf(s3->path, sizeof(s3->path), "/%s/%s", getenv("LP_S3_BUCKET"), key);
	if (!lp_s3_sha256_hex(body ? body : "", body ? strlen(body) : 0, payload_hash, &err))
		return false;
	s3->headers[0] = (LpS3Pair) {"host", host};
	if (range)
		s3->headers[count++] = (LpS3Pair) {"range", range};
	request.method = method;
	request.path = s3->path;
	request.headers = s3->headers;
	request.header_count = count;
	request.payload_hash = payload_hash;
	request.region = getenv("LP_S3_REGION") ? getenv("LP_S3_REGION") : "us-east-1";
	request.service = "s3";
	request.request_time = amz_time;
	if (!lp_s3_sign(&request, &credentials, NULL, &s3->sig, &err))
		return false;
	for (size_t i = 0; i < s3->sig.header_count; i++)
		s3->headers[count++] = s3->sig.headers[i];
	snprintf(s3->url, sizeof(s3->url), "%s%s%s%s", endpoint, s3->sig.url_path,
			 s3->sig.url_query[0] ? "?" : "", s3->sig.url_query);
	s3->request.method = method;
	s3->request.url = s3->url;
	s3->request.headers = s3->headers;
	s3->request.header_count = count;
	s3->request.body = body;
	s3->request.body_len = body ? strlen(body) : 0;
	s3->request.response_body_max = 1 << 20;
	s3->request.connect_timeout_ms = 2000;
	s3->request.timeout_ms = 10000;
	return true;
}

static void
s3_perform(S3Call *s3)
{
	s3->ok = lp_curl_perform(curl, true, &s3->request, &s3->response, &s3->err);
	lp_s3_signed_free(&s3->sig);
}

static bool
s3_call(S3Call *s3, const char *method, const char *key, const char *body, const char *secret)
{
	if (!s3_prepare(s3, method, key, NULL, body, secret))
		return false;
	s3_perform(s3);
	return true;
}

/*
 * Signed requests reach the gateway unchanged: it verifies every signature,
 * so a header added or altered on the way would fail them with 403.
 */
LP_TEST(curl_transport_against_rgw)
{
	const char *secret = getenv("LP_S3_SECRET_ACCESS_KEY");
	S3Call		s3;
	char		buffer[4];

	if (getenv("LP_S3_ENDPOINT") == NULL || getenv("LP_S3_BUCKET") == NULL ||
		getenv("LP_S3_ACCESS_KEY_ID") == NULL || secret == NULL)
	{
		LP_CHECK_MSG(false, "LP_S3_ENDPOINT and the other LP_S3_* are not set: run these tests with test/run.sh --only s3");
		return;
	}
	LP_CHECK(curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK);
	curl = lp_curl_create();
	LP_CHECK(curl != NULL);
	if (curl == NULL)
		return;
	LP_CHECK(s3_call(&s3, "PUT", "curl-test/a b+c", "hello, gateway", secret));
	LP_CHECK_MSG(s3.ok && s3.response.status == 200, "PUT: %ld %.200s %.200s",
				 s3.response.status, s3.err.message, body_text(&s3));
	LP_CHECK(s3.response.etag[0] == '"');
	lp_s3_http_response_clear(&s3.response);

	LP_CHECK(s3_call(&s3, "GET", "curl-test/a b+c", NULL, secret));
	LP_CHECK_MSG(s3.ok && s3.response.status == 200, "GET: %ld %.200s", s3.response.status,
				 s3.err.message);
	LP_CHECK_STR(body_text(&s3), "hello, gateway");
	LP_CHECK(s3.response.request_id[0] != '\0');
	lp_s3_http_response_clear(&s3.response);

	/* a ranged GET into a buffer */
	LP_CHECK(s3_prepare(&s3, "GET", "curl-test/a b+c", "bytes=7-10", NULL, secret));
	s3.request.response_buffer = buffer;
	s3.request.response_capacity = sizeof(buffer);
	s3_perform(&s3);
	LP_CHECK_MSG(s3.ok && s3.response.status == 206, "ranged GET: %ld %.200s", s3.response.status,
				 s3.err.message);
	LP_CHECK(s3.response.body_in_buffer && s3.response.body_len == 4 &&
			 memcmp(buffer, "gate", 4) == 0);
	LP_CHECK_STR(s3.response.content_range, "bytes 7-10/14");
	lp_s3_http_response_clear(&s3.response);

	LP_CHECK(s3_call(&s3, "HEAD", "curl-test/a b+c", NULL, secret));
	LP_CHECK(s3.ok && s3.response.status == 200);
	LP_CHECK(s3.response.has_content_length && s3.response.content_length == 14);
	LP_CHECK(s3.response.last_modified[0] != '\0');
	lp_s3_http_response_clear(&s3.response);

	/* a wrong secret: the gateway refuses the signature */
	LP_CHECK(s3_call(&s3, "GET", "curl-test/a b+c", NULL, "not-the-secret"));
	LP_CHECK_MSG(s3.ok && s3.response.status == 403, "wrong secret: %ld", s3.response.status);
	LP_CHECK(strstr(body_text(&s3), "SignatureDoesNotMatch") != NULL);
	lp_s3_http_response_clear(&s3.response);

	LP_CHECK(s3_call(&s3, "DELETE", "curl-test/a b+c", NULL, secret));
	LP_CHECK_MSG(s3.ok && s3.response.status == 204, "DELETE: %ld", s3.response.status);
	lp_s3_http_response_clear(&s3.response);
	lp_curl_destroy(curl);
	curl = NULL;
}
