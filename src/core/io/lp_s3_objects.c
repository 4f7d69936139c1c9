/*
 * lp_s3_objects.c - the requests on objects and prefixes that the S3
 * store, its inputs and its outputs share: HEAD and what is at a key,
 * listings page by page, PUTs (conditional ones recognizing their own
 * retried object) and ranged GETs checked against the size an object had.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "base/lp_alloc.h"
#include "base/lp_interrupt.h"
#include "io/lp_s3_store_internal.h"
#include "io/lp_s3_xml.h"

/* objects listed per ListObjectsV2 page */
#define LIST_PAGE_KEYS "1000"

/* ---- objects and prefixes ------------------------------------------------ */

/* key + "/": the prefix of what lies under key (lp_alloc'd) */
char *
lp_s3_prefix_of(const char *key)
{
	size_t		len = strlen(key) + 2;
	char	   *prefix = lp_alloc(len);

	if (prefix)
		snprintf(prefix, len, "%s/", key);
	return prefix;
}

/*
 * A HEAD answers without a body, so its failure lacks the S3 error code:
 * ask again with a one-byte GET, whose Error body names it (a rejected
 * signature and a denied access are both 403).
 */
static bool
explain_head_failure(S3Store *store, const char *bucket, const char *key, const char *what,
					 const LpS3HttpResponse *head, LpError *err)
{
	LpS3Pair	headers[] = {{"range", "bytes=0-0"}};
	LpS3Call	get = {.method = "GET", .bucket = bucket, .key = key,
	.headers = headers, .header_count = 1};
	LpS3Call	call = {.method = "HEAD", .bucket = bucket, .key = key};
	LpS3HttpResponse response;

	if (lp_s3_call(store->client, &get, &response, err))
	{
		if (!lp_s3_succeeded(&get, &response) && response.status == head->status)
			lp_s3_fail(store->client, &get, &response, what, err);
		else
			lp_s3_fail(store->client, &call, head, what, err);
		lp_s3_http_response_clear(&response);
	}
	return false;
}

/* HEAD bucket/key: *found and its size and mtime. */
bool
lp_s3_head_object(S3Store *store, const char *bucket, const char *key, bool *found,
				  LpStat *stat, LpError *err)
{
	LpS3Call	call = {.method = "HEAD", .bucket = bucket, .key = key};
	LpS3HttpResponse response;

	*found = false;
	if (!lp_s3_call(store->client, &call, &response, err))
		return false;
	if (response.status == 404)
	{
		lp_s3_http_response_clear(&response);
		return true;
	}
	if (!lp_s3_succeeded(&call, &response))
	{
		explain_head_failure(store, bucket, key, "examine", &response, err);
		lp_s3_http_response_clear(&response);
		return false;
	}
	if (!response.has_content_length)
	{
		lp_fail(err, LP_ERR_IO, "could not examine \"s3://%s/%s\": HEAD answered without Content-Length",
				bucket, key);
		lp_s3_http_response_clear(&response);
		return false;
	}
	*found = true;
	stat->kind = LP_OBJECT_FILE;
	stat->size = response.content_length;
	stat->mtime = 0;
	if (response.last_modified[0] != '\0')
		lp_s3_parse_http_date(response.last_modified, &stat->mtime);
	lp_s3_http_response_clear(&response);
	return true;
}

/*
 * ListObjectsV2 of prefix, page by page (with delimiter "/" when given);
 * max_keys NULL for the server's default.  A missing bucket is
 * LP_ERR_NOT_FOUND.
 */
bool
lp_s3_list_pages(S3Store *store, const char *bucket, const char *prefix, const char *delimiter,
				 const char *max_keys, LpS3ListPageCallback callback, void *arg, LpError *err)
{
	char	   *token = NULL;
	bool		ok = true;

	do
	{
		LpS3Pair	query[5];
		size_t		n = 0;
		LpS3Document *document;

		query[n++] = (LpS3Pair) {"list-type", "2"};
		query[n++] = (LpS3Pair) {"prefix", prefix};
		if (delimiter)
			query[n++] = (LpS3Pair) {"delimiter", delimiter};
		query[n++] = (LpS3Pair) {"max-keys", max_keys ? max_keys : LIST_PAGE_KEYS};
		if (token)
			query[n++] = (LpS3Pair) {"continuation-token", token};
		ok = lp_s3_list_page(store->client, bucket, prefix, query, n, "list",
							 LP_S3_LIST_OBJECTS, &document, err);
		if (!ok)
			break;
		lp_free(token);
		token = NULL;
		ok = callback(arg, &document->list_objects, err);
		if (ok && max_keys == NULL && document->list_objects.is_truncated)
		{
			token = lp_strdup(document->list_objects.next_continuation_token);
			if (token == NULL)
				ok = lp_fail(err, LP_ERR_NO_MEMORY, "out of memory for a listing");
		}
		lp_s3_xml_free(document);
	} while (ok && token != NULL);
	lp_free(token);
	return ok;
}

static bool
note_any_entry(void *arg, const LpS3ListObjects *page, LpError *err)
{
	(void) err;
	if (page->num_objects > 0 || page->num_common_prefixes > 0)
		*(bool *) arg = true;
	return true;
}

/* Whether any object lies under key + "/" (the whole bucket for key ""). */
bool
lp_s3_prefix_exists(S3Store *store, const char *bucket, const char *key, bool *exists,
					LpError *err)
{
	char	   *prefix = key[0] ? lp_s3_prefix_of(key) : lp_strdup("");
	bool		ok;

	*exists = false;
	if (prefix == NULL)
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory for a listing");
	ok = lp_s3_list_pages(store, bucket, prefix, NULL, "1", note_any_entry, exists, err);
	lp_free(prefix);
	return ok;
}

bool
lp_s3_stat_parsed(S3Store *store, const char *bucket, const char *key, LpStat *result,
				  LpError *err)
{
	bool		found;

	memset(result, 0, sizeof(*result));
	result->kind = LP_OBJECT_ABSENT;
	if (key[0] != '\0')
	{
		if (!lp_s3_head_object(store, bucket, key, &found, result, err))
			return false;
		if (found)
			return true;
	}
	else
	{
		/* the bucket itself: a directory when it exists, even empty */
		if (!lp_s3_prefix_exists(store, bucket, key, &found, err))
		{
			if (err->code != LP_ERR_NOT_FOUND)
				return false;
			lp_error_clear(err);
			return true;
		}
		result->kind = LP_OBJECT_DIRECTORY;
		return true;
	}
	if (!lp_s3_prefix_exists(store, bucket, key, &found, err))
	{
		if (err->code != LP_ERR_NOT_FOUND)
			return false;
		lp_error_clear(err);
		return true;
	}
	if (found)
		result->kind = LP_OBJECT_DIRECTORY;
	return true;
}

/* Whether bucket/key holds exactly the len bytes of data. */
static bool
object_holds(S3Store *store, const char *bucket, const char *key, const void *data, size_t len,
			 bool *same, LpError *err)
{
	LpStat		stat;
	bool		found;
	uint8_t    *stored;
	bool		ok;

	*same = false;
	if (!lp_s3_head_object(store, bucket, key, &found, &stat, err))
		return false;
	if (!found || stat.size != len)
		return true;
	if (len == 0)
		return *same = true;
	stored = lp_alloc(len);
	if (stored == NULL)
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory for a read of \"s3://%s/%s\"", bucket, key);
	ok = lp_s3_get_range(store, bucket, key, len, 0, stored, len, err);
	*same = ok && memcmp(stored, data, len) == 0;
	lp_free(stored);
	return ok;
}

bool
lp_s3_put_object(S3Store *store, const char *bucket, const char *key, const char *name,
				 const void *data, size_t len, bool if_absent, LpError *err)
{
	LpS3Pair	headers[] = {{"if-none-match", "*"}};
	LpS3Call	call = {
		.method = "PUT",
		.bucket = bucket,
		.key = key,
		.headers = headers,
		.header_count = if_absent ? 1 : 0,
		.body = len ? data : "",
		.body_len = len,
	};
	LpS3HttpResponse response;

	if (key[0] == '\0')
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT, "\"%s\" names a bucket, not an object", name);
	if (!lp_s3_call(store->client, &call, &response, err))
		return false;
	if (lp_s3_succeeded(&call, &response))
	{
		lp_s3_http_response_clear(&response);
		return true;
	}
	lp_s3_fail(store->client, &call, &response, "write", err);
	if (if_absent && response.status == 412)
	{
		bool		ours = false;
		LpError		check_err;

		/*
		 * A retried PUT whose earlier attempt was stored, its answer lost,
		 * meets its own object: exactly these bytes there mean written.
		 */
		if (object_holds(store, bucket, key, data, len, &ours, &check_err) && ours)
		{
			lp_s3_http_response_clear(&response);
			return true;
		}
		err->code = LP_ERR_ALREADY_EXISTS;
	}
	lp_s3_http_response_clear(&response);
	return false;
}

/* ---- ranged GETs ----------------------------------------------------------- */

/* The Range header of a GET of len bytes at offset. */
void
lp_s3_format_range(char *range, size_t size, uint64_t offset, size_t len)
{
	snprintf(range, size, "bytes=%" PRIu64 "-%" PRIu64, offset, offset + len - 1);
}

/*
 * Whether response (of a successful ranged GET) is exactly len bytes at
 * offset of an object of size bytes; else err, and the response cleared.
 */
bool
lp_s3_check_range_answer(const char *bucket, const char *key, uint64_t size, uint64_t offset,
						 size_t len, LpS3HttpResponse *response, LpError *err)
{
	char		expected[96];

	snprintf(expected, sizeof(expected), "bytes %" PRIu64 "-%" PRIu64 "/%" PRIu64,
			 offset, offset + len - 1, size);
	if (response->status != 206 || response->body_len != len ||
		strcmp(response->content_range, expected) != 0)
	{
		lp_fail(err, LP_ERR_IO,
				"could not read %zu bytes at offset %" PRIu64 " of \"s3://%s/%s\": the server answered HTTP %ld with %zu bytes and Content-Range \"%s\"",
				len, offset, bucket, key, response->status, response->body_len,
				response->content_range);
		lp_error_detail(err, "A ranged read of an object of %" PRIu64 " bytes expects Content-Range \"%s\"; the object may have changed.",
						size, expected);
		lp_s3_http_response_clear(response);
		return false;
	}
	lp_s3_http_response_clear(response);
	return true;
}

/* A failed ranged GET's message says when the object became shorter. */
void
lp_s3_explain_short_object(uint64_t size, LpError *err)
{
	if (err->code == LP_ERR_IO && strstr(err->message, "HTTP 416") != NULL)
		lp_error_detail(err, "The object is shorter than the %" PRIu64 " bytes it had when opened.", size);
}

/*
 * GET len bytes of bucket/key at offset into buffer, checking that the object
 * still has size bytes.
 */
bool
lp_s3_get_range(S3Store *store, const char *bucket, const char *key, uint64_t size,
				uint64_t offset, void *buffer, size_t len, LpError *err)
{
	char		range[64];
	LpS3Pair	headers[1];
	LpS3Call	call;
	LpS3HttpResponse response;

	if (lp_check_cancel(err))
		return false;
	lp_s3_format_range(range, sizeof(range), offset, len);
	headers[0] = (LpS3Pair) {"range", range};
	call = (LpS3Call) {.method = "GET", .bucket = bucket, .key = key,
		.headers = headers, .header_count = 1,
	.response_buffer = buffer, .response_capacity = len};
	if (!lp_s3_call_checked(store->client, &call, "read", &response, err))
	{
		lp_s3_explain_short_object(size, err);
		return false;
	}
	return lp_s3_check_range_answer(bucket, key, size, offset, len, &response, err);
}
