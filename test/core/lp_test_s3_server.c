/*
 * lp_test_s3_server.c - an in-process S3 server behind the LpS3Transport
 * interface (see the header).  Keys are "bucket/key"; everything is kept in
 * small arrays searched linearly, which is plenty for unit tests.
 */
#include "lp_test_s3_server.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/evp.h>

#include "base/lp_alloc.h"
#include "io/lp_s3_sign.h"
#include "io/lp_s3_xml.h"

#define MAX_OBJECTS 256
#define MAX_UPLOADS 16
#define MAX_PARTS 64
#define MAX_FAULTS 16
#define MAX_QUERY 8
#define MAX_HEADERS 16
#define MIN_PART ((size_t) 5 << 20)

typedef struct Object
{
	char	   *key;			/* "bucket/key" */
	uint8_t    *data;
	size_t		len;
	char		etag[48];		/* as S3 gives it: quoted MD5, or "<md5 of md5s>-N" */
} Object;

typedef struct Part
{
	uint8_t    *data;
	size_t		len;
	char		etag[40];
} Part;

typedef struct Upload
{
	bool		open;
	char		id[32];
	char	   *key;
	Part		parts[MAX_PARTS + 1];	/* by part number */
} Upload;

typedef struct Fault
{
	const char *method;
	LpTestS3Fault fault;
	int			count;
} Fault;

struct LpTestS3Server
{
	LpS3Transport base;
	Object		objects[MAX_OBJECTS];
	int			num_objects;
	Upload		uploads[MAX_UPLOADS];
	int			num_uploads;
	Fault		faults[MAX_FAULTS];
	int			num_faults;
	LpTestS3Counts counts;
	LpS3Transfer *transfers;	/* started and neither finished nor aborted */
};

/*
 * A started request: served by the next progress() or at its finish,
 * whichever comes first, so that tests see both orders.
 */
struct LpS3Transfer
{
	LpS3Transfer *next;
	const LpS3HttpRequest *request;
	LpS3HttpResponse *response;
	bool		served;
	bool		answered;
	LpError		err;
};

/* A request as received, decoded. */
typedef struct Received
{
	const LpS3HttpRequest *http;
	char		host[256];
	char		path[2048];		/* decoded, with the bucket for path style */
	char		bucket[128];
	char		key[1100];		/* decoded */
	LpS3Pair	query[MAX_QUERY];
	char		query_text[MAX_QUERY][2][512];
	size_t		query_count;
} Received;

bool		lp_test_s3_cancel_pending;

bool
lp_test_s3_cancel_check(void)
{
	return lp_test_s3_cancel_pending;
}

static const char *
header(const Received *request, const char *name)
{
	for (size_t i = 0; i < request->http->header_count; i++)
		if (strcasecmp(request->http->headers[i].name, name) == 0)
			return request->http->headers[i].value;
	return NULL;
}

static const char *
query_value(const Received *request, const char *name, bool *present)
{
	for (size_t i = 0; i < request->query_count; i++)
		if (strcmp(request->query[i].name, name) == 0)
		{
			if (present)
				*present = true;
			return request->query[i].value;
		}
	if (present)
		*present = false;
	return NULL;
}

static void
percent_decode(const char *text, size_t len, char *out, size_t capacity)
{
	size_t		o = 0;

	for (size_t i = 0; i < len && o + 1 < capacity; i++)
	{
		if (text[i] == '%' && i + 2 < len)
		{
			char		hex[3] = {text[i + 1], text[i + 2], 0};

			out[o++] = (char) strtol(hex, NULL, 16);
			i += 2;
		}
		else
			out[o++] = text[i];
	}
	out[o] = '\0';
}

static bool
parse_request(const LpS3HttpRequest *http, Received *request)
{
	const char *url = http->url;
	const char *path;
	const char *query;
	const char *host;
	size_t		path_len;

	memset(request, 0, sizeof(*request));
	request->http = http;
	if (strncmp(url, "http://", 7) != 0)
		return false;
	path = strchr(url + 7, '/');
	if (path == NULL)
		return false;
	query = strchr(path, '?');
	path_len = query ? (size_t) (query - path) : strlen(path);
	percent_decode(path, path_len, request->path, sizeof(request->path));
	host = header(request, "host");
	if (host == NULL || (size_t) (path - url - 7) != strlen(host) ||
		strncmp(url + 7, host, strlen(host)) != 0)
		return false;
	snprintf(request->host, sizeof(request->host), "%s", host);
	if (strcmp(host, LP_TEST_S3_HOST) == 0)
	{
		const char *slash = strchr(request->path + 1, '/');
		size_t		bucket_len = slash ? (size_t) (slash - request->path - 1) : strlen(request->path + 1);

		snprintf(request->bucket, sizeof(request->bucket), "%.*s", (int) bucket_len, request->path + 1);
		snprintf(request->key, sizeof(request->key), "%s", slash ? slash + 1 : "");
	}
	else
	{
		size_t		suffix = strlen("." LP_TEST_S3_HOST);
		size_t		len = strlen(host);

		if (len <= suffix || strcmp(host + len - suffix, "." LP_TEST_S3_HOST) != 0)
			return false;
		snprintf(request->bucket, sizeof(request->bucket), "%.*s", (int) (len - suffix), host);
		snprintf(request->key, sizeof(request->key), "%s", request->path + 1);
	}
	while (query && *query && request->query_count < MAX_QUERY)
	{
		const char *start = query + 1;
		const char *end = strchr(start, '&');
		const char *eq;
		size_t		len = end ? (size_t) (end - start) : strlen(start);
		size_t		n = request->query_count;

		eq = memchr(start, '=', len);
		percent_decode(start, eq ? (size_t) (eq - start) : len, request->query_text[n][0], 512);
		request->query[n].name = request->query_text[n][0];
		if (eq)
		{
			percent_decode(eq + 1, len - (size_t) (eq + 1 - start), request->query_text[n][1], 512);
			request->query[n].value = request->query_text[n][1];
		}
		request->query_count++;
		query = end;
	}
	return true;
}

/* Recompute the signature from what was received and compare. */
static bool
signature_checks(const Received *request)
{
	LpS3Pair	headers[MAX_HEADERS];
	size_t		n = 0;
	const char *authorization = header(request, "authorization");
	const char *date = header(request, "x-amz-date");
	const char *payload = header(request, "x-amz-content-sha256");
	char		body_hash[LP_S3_SHA256_HEX_LEN + 1];
	LpS3Credentials credentials = {LP_TEST_S3_ACCESS_KEY, LP_TEST_S3_SECRET, NULL};
	LpS3Request signing;
	LpS3Signed	result;
	LpError		err;
	bool		ok;

	if (authorization == NULL || date == NULL || payload == NULL ||
		!lp_s3_sha256_hex(request->http->body ? request->http->body : "", request->http->body_len,
						  body_hash, &err) ||
		strcmp(payload, body_hash) != 0)
		return false;
	for (size_t i = 0; i < request->http->header_count && n < MAX_HEADERS; i++)
	{
		const char *name = request->http->headers[i].name;

		if (strcasecmp(name, "authorization") != 0 && strcasecmp(name, "x-amz-date") != 0 &&
			strcasecmp(name, "x-amz-content-sha256") != 0 &&
			strcasecmp(name, "x-amz-security-token") != 0)
			headers[n++] = request->http->headers[i];
	}
	signing = (LpS3Request) {
		.method = request->http->method,
		.path = request->path,
		.query = request->query,
		.query_count = request->query_count,
		.headers = headers,
		.header_count = n,
		.payload_hash = payload,
		.region = "us-east-1",
		.service = "s3",
		.request_time = date,
	};
	if (!lp_s3_sign(&signing, &credentials, NULL, &result, &err))
		return false;
	ok = strcmp(result.authorization, authorization) == 0;
	lp_s3_signed_free(&result);
	return ok;
}

static void
set_body(LpS3HttpResponse *response, const char *text)
{
	response->body_len = strlen(text);
	response->body = lp_memdup(text, response->body_len);
}

static bool
answer_error(LpS3HttpResponse *response, long status, const char *code)
{
	char		body[512];

	response->status = status;
	snprintf(response->request_id, sizeof(response->request_id), "req-%ld-%s", status, code);
	snprintf(body, sizeof(body),
			 "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>%s</Code><Message>injected %s</Message><RequestId>%s</RequestId></Error>",
			 code, code, response->request_id);
	set_body(response, body);
	return true;
}

/* The quoted hex MD5 of len bytes, as S3 names a part or a single-PUT object. */
static void
md5_etag(const void *data, size_t len, const char *suffix, char *etag, size_t size)
{
	unsigned char digest[16];
	unsigned int digest_len;
	size_t		used;

	EVP_Digest(data, len, digest, &digest_len, EVP_md5(), NULL);
	used = (size_t) snprintf(etag, size, "\"");
	for (int i = 0; i < 16; i++)
		used += (size_t) snprintf(etag + used, size - used, "%02x", digest[i]);
	snprintf(etag + used, size - used, "%s\"", suffix);
}

static Object *
find_object(LpTestS3Server *server, const char *bucket, const char *key)
{
	char		full[1300];

	snprintf(full, sizeof(full), "%s/%s", bucket, key);
	for (int i = 0; i < server->num_objects; i++)
		if (strcmp(server->objects[i].key, full) == 0)
			return &server->objects[i];
	return NULL;
}

static Object *
store_object(LpTestS3Server *server, const char *bucket, const char *key, uint8_t *data, size_t len)
{
	Object	   *object = find_object(server, bucket, key);
	char		full[1300];

	if (object == NULL)
	{
		if (server->num_objects == MAX_OBJECTS)
		{
			free(data);
			return NULL;
		}
		object = &server->objects[server->num_objects++];
		snprintf(full, sizeof(full), "%s/%s", bucket, key);
		object->key = strdup(full);
	}
	else
		free(object->data);
	object->data = data;
	object->len = len;
	md5_etag(data, len, "", object->etag, sizeof(object->etag));
	return object;
}

static uint8_t *
copy_bytes(const void *data, size_t len)
{
	uint8_t    *copy = malloc(len ? len : 1);

	if (len)
		memcpy(copy, data, len);
	return copy;
}


static bool
deliver(const LpS3HttpRequest *http, LpS3HttpResponse *response, const uint8_t *data, size_t len,
		LpError *err)
{
	if (http->response_buffer)
	{
		if (len > http->response_capacity)
			return lp_fail(err, LP_ERR_CORRUPT, "the answer to %s %s exceeds its bound",
						   http->method, http->url);
		memcpy(http->response_buffer, data, len);
		response->body_len = len;
		response->body_in_buffer = true;
		return true;
	}
	response->body = lp_memdup(data, len);
	response->body_len = len;
	return true;
}

static bool
serve_get(LpTestS3Server *server, const Received *request, LpS3HttpResponse *response, LpError *err)
{
	Object	   *object = find_object(server, request->bucket, request->key);
	const char *range = header(request, "range");
	uint64_t	first;
	uint64_t	last;

	if (object == NULL)
		return answer_error(response, 404, "NoSuchKey");
	server->counts.gets++;
	snprintf(server->counts.last_range, sizeof(server->counts.last_range), "%s", range ? range : "");
	response->has_content_length = true;
	if (range == NULL)
	{
		response->status = 200;
		response->content_length = object->len;
		return deliver(request->http, response, object->data, object->len, err);
	}
	if (sscanf(range, "bytes=%" SCNu64 "-%" SCNu64, &first, &last) != 2 || last < first)
		return answer_error(response, 400, "InvalidRange");
	if (first >= object->len)
		return answer_error(response, 416, "InvalidRange");
	if (last >= object->len)
		last = object->len - 1;
	response->status = 206;
	response->content_length = last - first + 1;
	snprintf(response->content_range, sizeof(response->content_range),
			 "bytes %" PRIu64 "-%" PRIu64 "/%zu", first, last, object->len);
	return deliver(request->http, response, object->data + first, (size_t) (last - first + 1), err);
}

static int
compare_keys(const void *a, const void *b)
{
	return strcmp(*(const char *const *) a, *(const char *const *) b);
}

static bool
serve_list(LpTestS3Server *server, const Received *request, LpS3HttpResponse *response)
{
	const char *prefix = query_value(request, "prefix", NULL);
	const char *delimiter = query_value(request, "delimiter", NULL);
	const char *max_text = query_value(request, "max-keys", NULL);
	const char *token = query_value(request, "continuation-token", NULL);
	/* pages of at most 2 entries, so that every listing needs continuations */
	int			max_keys = max_text && atoi(max_text) < 2 ? atoi(max_text) : 2;
	const char *keys[MAX_OBJECTS];
	int			num_keys = 0;
	size_t		bucket_len = strlen(request->bucket);
	size_t		prefix_len = prefix ? strlen(prefix) : 0;
	char	   *body = malloc(1 << 20);
	size_t		used;
	int			emitted = 0;
	char		last_prefix[1100] = "";
	const char *last_emitted = NULL;
	bool		truncated = false;

	server->counts.lists++;
	for (int i = 0; i < server->num_objects; i++)
	{
		const char *full = server->objects[i].key;

		if (strncmp(full, request->bucket, bucket_len) == 0 && full[bucket_len] == '/' &&
			strncmp(full + bucket_len + 1, prefix ? prefix : "", prefix_len) == 0)
			keys[num_keys++] = full + bucket_len + 1;
	}
	qsort(keys, (size_t) num_keys, sizeof(keys[0]), compare_keys);
	used = (size_t) snprintf(body, 1 << 20, "<?xml version=\"1.0\"?><ListBucketResult><Name>%s</Name>",
							 request->bucket);
	for (int i = 0; i < num_keys; i++)
	{
		const char *rest = keys[i] + prefix_len;
		const char *cut = delimiter ? strstr(rest, delimiter) : NULL;

		if (token && strcmp(keys[i], token) <= 0)
			continue;
		if (cut)
		{
			size_t		len = (size_t) (cut - keys[i]) + strlen(delimiter);

			if (strlen(last_prefix) == len && strncmp(last_prefix, keys[i], len) == 0)
			{
				last_emitted = keys[i];
				continue;
			}
		}
		if (emitted == max_keys)
		{
			truncated = true;
			break;
		}
		emitted++;
		last_emitted = keys[i];
		if (cut)
		{
			size_t		len = (size_t) (cut - keys[i]) + strlen(delimiter);

			snprintf(last_prefix, sizeof(last_prefix), "%.*s", (int) len, keys[i]);
			used += (size_t) snprintf(body + used, (1 << 20) - used,
									  "<CommonPrefixes><Prefix>%s</Prefix></CommonPrefixes>", last_prefix);
		}
		else
		{
			Object	   *object = find_object(server, request->bucket, keys[i]);

			used += (size_t) snprintf(body + used, (1 << 20) - used,
									  "<Contents><Key>%s</Key><LastModified>2026-01-02T03:04:05.000Z</LastModified><Size>%zu</Size></Contents>",
									  keys[i], object->len);
		}
	}
	if (truncated && last_emitted)
		used += (size_t) snprintf(body + used, (1 << 20) - used,
								  "<NextContinuationToken>%s</NextContinuationToken>", last_emitted);
	snprintf(body + used, (1 << 20) - used, "<IsTruncated>%s</IsTruncated></ListBucketResult>",
			 truncated ? "true" : "false");
	response->status = 200;
	set_body(response, body);
	free(body);
	return true;
}

static Upload *
find_upload(LpTestS3Server *server, const Received *request)
{
	const char *id = query_value(request, "uploadId", NULL);

	for (int i = 0; id && i < server->num_uploads; i++)
		if (server->uploads[i].open && strcmp(server->uploads[i].id, id) == 0)
			return &server->uploads[i];
	return NULL;
}

static void
free_upload_parts(Upload *upload)
{
	for (int p = 0; p <= MAX_PARTS; p++)
	{
		free(upload->parts[p].data);
		upload->parts[p].data = NULL;
		upload->parts[p].len = 0;
		upload->parts[p].etag[0] = '\0';
	}
}

/* The object x-amz-copy-source names ("/bucket/key", percent-encoded); NULL after an error answer. */
static Object *
copy_source_object(LpTestS3Server *server, const char *source, LpS3HttpResponse *response)
{
	char		decoded[1200];
	const char *slash;
	char		bucket[128];
	Object	   *object;

	percent_decode(source, strlen(source), decoded, sizeof(decoded));
	slash = strchr(decoded + 1, '/');
	if (decoded[0] != '/' || slash == NULL)
	{
		answer_error(response, 400, "InvalidArgument");
		return NULL;
	}
	snprintf(bucket, sizeof(bucket), "%.*s", (int) (slash - decoded - 1), decoded + 1);
	object = find_object(server, bucket, slash + 1);
	if (object == NULL)
		answer_error(response, 404, "NoSuchKey");
	return object;
}

static bool
serve_part(LpTestS3Server *server, const Received *request, LpS3HttpResponse *response)
{
	Upload	   *upload = find_upload(server, request);
	const char *number_text = query_value(request, "partNumber", NULL);
	int			number = number_text ? atoi(number_text) : 0;
	const char *source = header(request, "x-amz-copy-source");
	Part	   *part;

	if (upload == NULL)
		return answer_error(response, 404, "NoSuchUpload");
	if (number < 1 || number > MAX_PARTS)
		return answer_error(response, 400, "InvalidArgument");
	part = &upload->parts[number];
	free(part->data);
	if (source)
	{
		const char *range = header(request, "x-amz-copy-source-range");
		Object	   *object = copy_source_object(server, source, response);
		uint64_t	first;
		uint64_t	last;
		char		body[256];

		if (object == NULL)
			return true;
		if (range == NULL || sscanf(range, "bytes=%" SCNu64 "-%" SCNu64, &first, &last) != 2 ||
			last < first)
			return answer_error(response, 400, "InvalidArgument");
		if (last >= object->len)
			return answer_error(response, 416, "InvalidRange");
		part->data = copy_bytes(object->data + first, (size_t) (last - first + 1));
		part->len = (size_t) (last - first + 1);
		md5_etag(part->data, part->len, "", part->etag, sizeof(part->etag));
		server->counts.part_copies++;
		snprintf(body, sizeof(body), "<CopyPartResult><LastModified>2026-01-02T03:04:05.000Z</LastModified><ETag>%s</ETag></CopyPartResult>",
				 part->etag);
		response->status = 200;
		set_body(response, body);
		return true;
	}
	part->data = copy_bytes(request->http->body, request->http->body_len);
	part->len = request->http->body_len;
	md5_etag(part->data, part->len, "", part->etag, sizeof(part->etag));
	server->counts.part_uploads++;
	response->status = 200;
	snprintf(response->etag, sizeof(response->etag), "%s", part->etag);
	return true;
}

static bool
serve_complete(LpTestS3Server *server, const Received *request, LpS3HttpResponse *response)
{
	Upload	   *upload = find_upload(server, request);
	LpS3Document *doc = NULL;
	LpError		err;
	size_t		total = 0;
	uint8_t    *data;
	uint8_t    *digests;
	char		suffix[16];
	Object	   *object;

	if (upload == NULL)
		return answer_error(response, 404, "NoSuchUpload");
	if (!lp_s3_xml_parse(request->http->body, request->http->body_len,
						 LP_S3_COMPLETE_MULTIPART_REQUEST, &doc, &err))
		return answer_error(response, 400, "MalformedXML");
	for (size_t i = 0; i < doc->complete_request.num_parts; i++)
	{
		LpS3Part   *listed = &doc->complete_request.parts[i];
		Part	   *part = listed->part_number <= MAX_PARTS ? &upload->parts[listed->part_number] : NULL;

		if (part == NULL || part->data == NULL || strcmp(part->etag, listed->etag) != 0)
		{
			lp_s3_xml_free(doc);
			return answer_error(response, 400, "InvalidPart");
		}
		if (i + 1 < doc->complete_request.num_parts && part->len < MIN_PART)
		{
			lp_s3_xml_free(doc);
			/* as AWS does: the status is 200 only for errors found later */
			return answer_error(response, 400, "EntityTooSmall");
		}
		total += part->len;
	}
	data = malloc(total ? total : 1);
	digests = malloc(16 * doc->complete_request.num_parts);
	total = 0;
	for (size_t i = 0; i < doc->complete_request.num_parts; i++)
	{
		Part	   *part = &upload->parts[doc->complete_request.parts[i].part_number];

		memcpy(data + total, part->data, part->len);
		total += part->len;
		for (int b = 0; b < 16; b++)
		{
			unsigned int byte;

			sscanf(part->etag + 1 + 2 * b, "%2x", &byte);
			digests[16 * i + b] = (uint8_t) byte;
		}
	}
	snprintf(suffix, sizeof(suffix), "-%zu", doc->complete_request.num_parts);
	object = store_object(server, request->bucket, request->key, data, total);
	if (object)
		md5_etag(digests, 16 * doc->complete_request.num_parts, suffix, object->etag, sizeof(object->etag));
	free(digests);
	lp_s3_xml_free(doc);
	upload->open = false;
	free_upload_parts(upload);
	server->counts.completes++;
	response->status = 200;
	set_body(response, "<CompleteMultipartUploadResult><Bucket>bucket</Bucket><Key>k</Key><ETag>\"e-1\"</ETag></CompleteMultipartUploadResult>");
	return true;
}

static int
compare_uploads(const void *a, const void *b)
{
	const Upload *x = *(const Upload *const *) a;
	const Upload *y = *(const Upload *const *) b;
	int			by_key = strcmp(x->key, y->key);

	return by_key != 0 ? by_key : strcmp(x->id, y->id);
}

/*
 * ListMultipartUploads of the open uploads under prefix, ordered by key and
 * id, in pages of at most 2 (so that every listing needs markers).
 */
static bool
serve_list_uploads(LpTestS3Server *server, const Received *request, LpS3HttpResponse *response)
{
	const char *prefix = query_value(request, "prefix", NULL);
	const char *key_marker = query_value(request, "key-marker", NULL);
	const char *id_marker = query_value(request, "upload-id-marker", NULL);
	const Upload *listed[MAX_UPLOADS];
	int			num_listed = 0;
	int			emitted = 0;
	char	   *body = malloc(1 << 16);
	size_t		used;
	const Upload *last = NULL;

	server->counts.lists++;
	for (int i = 0; i < server->num_uploads; i++)
		if (server->uploads[i].open && strncmp(server->uploads[i].key, prefix ? prefix : "",
											   prefix ? strlen(prefix) : 0) == 0)
			listed[num_listed++] = &server->uploads[i];
	qsort(listed, (size_t) num_listed, sizeof(listed[0]), compare_uploads);
	used = (size_t) snprintf(body, 1 << 16, "<?xml version=\"1.0\"?><ListMultipartUploadsResult><Bucket>%s</Bucket>",
							 request->bucket);
	for (int i = 0; i < num_listed; i++)
	{
		int			by_key = key_marker ? strcmp(listed[i]->key, key_marker) : 1;

		/* after the markers: a later key, or the marker's key with a later id */
		if (by_key < 0 || (by_key == 0 && (id_marker == NULL || strcmp(listed[i]->id, id_marker) <= 0)))
			continue;
		if (emitted == 2)
			break;
		emitted++;
		last = listed[i];
		used += (size_t) snprintf(body + used, (1 << 16) - used,
								  "<Upload><Key>%s</Key><UploadId>%s</UploadId><Initiated>2026-01-02T03:04:05.000Z</Initiated></Upload>",
								  listed[i]->key, listed[i]->id);
	}
	if (last != NULL && last != listed[num_listed - 1])
		snprintf(body + used, (1 << 16) - used,
				 "<IsTruncated>true</IsTruncated><NextKeyMarker>%s</NextKeyMarker><NextUploadIdMarker>%s</NextUploadIdMarker></ListMultipartUploadsResult>",
				 last->key, last->id);
	else
		snprintf(body + used, (1 << 16) - used, "<IsTruncated>false</IsTruncated></ListMultipartUploadsResult>");
	response->status = 200;
	set_body(response, body);
	free(body);
	return true;
}

/*
 * ListParts of an open upload, one part a page (so that every listing of
 * more than one part needs markers).
 */
static bool
serve_list_parts(LpTestS3Server *server, const Received *request, LpS3HttpResponse *response)
{
	Upload	   *upload = find_upload(server, request);
	const char *marker_text = query_value(request, "part-number-marker", NULL);
	int			marker = marker_text ? atoi(marker_text) : 0;
	char		body[1024];
	size_t		used;
	int			next = 0;
	bool		truncated = false;

	if (upload == NULL)
		return answer_error(response, 404, "NoSuchUpload");
	server->counts.lists++;
	used = (size_t) snprintf(body, sizeof(body), "<?xml version=\"1.0\"?><ListPartsResult><UploadId>%s</UploadId>",
							 upload->id);
	for (int p = marker + 1; p <= MAX_PARTS; p++)
		if (upload->parts[p].data != NULL)
		{
			if (next != 0)
			{
				used += (size_t) snprintf(body + used, sizeof(body) - used,
										  "<IsTruncated>true</IsTruncated><NextPartNumberMarker>%d</NextPartNumberMarker>",
										  next);
				truncated = true;
				break;
			}
			next = p;
			used += (size_t) snprintf(body + used, sizeof(body) - used,
									  "<Part><PartNumber>%d</PartNumber><Size>%zu</Size><ETag>%s</ETag></Part>",
									  p, upload->parts[p].len, upload->parts[p].etag);
		}
	snprintf(body + used, sizeof(body) - used, "%s</ListPartsResult>",
			 truncated ? "" : "<IsTruncated>false</IsTruncated>");
	response->status = 200;
	set_body(response, body);
	return true;
}

static bool
serve(LpTestS3Server *server, const Received *request, LpS3HttpResponse *response, LpError *err)
{
	const char *method = request->http->method;
	bool		uploads;
	bool		has_upload_id;
	Object	   *object;

	query_value(request, "uploads", &uploads);
	query_value(request, "uploadId", &has_upload_id);
	if (request->key[0] == '\0' && strcmp(method, "GET") == 0 && uploads)
		return serve_list_uploads(server, request, response);
	if (request->key[0] == '\0' && strcmp(method, "GET") == 0)
		return serve_list(server, request, response);
	if (strcmp(method, "GET") == 0 && has_upload_id)
		return serve_list_parts(server, request, response);
	if (strcmp(method, "GET") == 0)
		return serve_get(server, request, response, err);
	if (strcmp(method, "HEAD") == 0)
	{
		server->counts.heads++;
		object = find_object(server, request->bucket, request->key);
		if (object == NULL)
		{
			response->status = 404;
			return true;
		}
		response->status = 200;
		response->has_content_length = true;
		response->content_length = object->len;
		snprintf(response->etag, sizeof(response->etag), "%s", object->etag);
		snprintf(response->last_modified, sizeof(response->last_modified), "Fri, 02 Jan 2026 03:04:05 GMT");
		return true;
	}
	if (strcmp(method, "PUT") == 0 && has_upload_id)
		return serve_part(server, request, response);
	if (strcmp(method, "PUT") == 0)
	{
		const char *condition = header(request, "if-none-match");

		const char *source = header(request, "x-amz-copy-source");

		if (condition && strcmp(condition, "*") == 0 &&
			find_object(server, request->bucket, request->key) != NULL)
			return answer_error(response, 412, "PreconditionFailed");
		if (source)
		{
			/* CopyObject: the whole source object */
			Object	   *copied = copy_source_object(server, source, response);
			char		body[256];

			if (copied == NULL)
				return true;
			object = store_object(server, request->bucket, request->key,
								  copy_bytes(copied->data, copied->len), copied->len);
			server->counts.object_copies++;
			snprintf(body, sizeof(body), "<CopyObjectResult><LastModified>2026-01-02T03:04:05.000Z</LastModified><ETag>%s</ETag></CopyObjectResult>",
					 object ? object->etag : "");
			response->status = 200;
			set_body(response, body);
			return true;
		}
		object = store_object(server, request->bucket, request->key,
							  copy_bytes(request->http->body, request->http->body_len),
							  request->http->body_len);
		server->counts.puts++;
		response->status = 200;
		if (object)
			snprintf(response->etag, sizeof(response->etag), "%s", object->etag);
		return true;
	}
	if (strcmp(method, "POST") == 0 && uploads)
	{
		Upload	   *upload;
		char		body[4096];

		if (server->num_uploads == MAX_UPLOADS)
			return answer_error(response, 503, "SlowDown");
		upload = &server->uploads[server->num_uploads++];
		memset(upload, 0, sizeof(*upload));
		upload->open = true;
		snprintf(upload->id, sizeof(upload->id), "upload-%d", server->num_uploads);
		upload->key = strdup(request->key);
		snprintf(body, sizeof(body), "<InitiateMultipartUploadResult><Bucket>%s</Bucket><Key>%s</Key><UploadId>%s</UploadId></InitiateMultipartUploadResult>",
				 request->bucket, request->key, upload->id);
		response->status = 200;
		set_body(response, body);
		return true;
	}
	if (strcmp(method, "POST") == 0 && has_upload_id)
		return serve_complete(server, request, response);
	if (strcmp(method, "DELETE") == 0 && has_upload_id)
	{
		Upload	   *upload = find_upload(server, request);

		server->counts.aborts++;
		if (lp_test_s3_cancel_pending)
			server->counts.aborts_while_canceled++;
		if (upload == NULL)
			return answer_error(response, 404, "NoSuchUpload");
		upload->open = false;
		free_upload_parts(upload);
		response->status = 204;
		return true;
	}
	if (strcmp(method, "DELETE") == 0)
	{
		object = find_object(server, request->bucket, request->key);
		if (object)
		{
			free(object->key);
			free(object->data);
			*object = server->objects[--server->num_objects];
		}
		response->status = 204;
		return true;
	}
	return answer_error(response, 405, "MethodNotAllowed");
}

/* The fault for this request, if one is queued for its method. */
static bool
take_fault(LpTestS3Server *server, const char *method, LpTestS3Fault *fault)
{
	for (int i = 0; i < server->num_faults; i++)
	{
		Fault	   *f = &server->faults[i];

		if (f->count > 0 && (f->method == NULL || strcmp(f->method, method) == 0))
		{
			*fault = f->fault;
			f->count--;
			return true;
		}
	}
	return false;
}

static bool
server_perform(LpS3Transport *transport, const LpS3HttpRequest *http, LpS3HttpResponse *response,
			   LpError *err)
{
	LpTestS3Server *server = (LpTestS3Server *) transport;
	Received	request;
	LpTestS3Fault fault;

	server->counts.requests++;
	snprintf(server->counts.last_url, sizeof(server->counts.last_url), "%s", http->url);
	if (!parse_request(http, &request))
		return lp_fail(err, LP_ERR_IO, "malformed URL %s", http->url);
	snprintf(server->counts.last_host, sizeof(server->counts.last_host), "%s", request.host);
	if (!signature_checks(&request))
	{
		server->counts.unsigned_requests++;
		return answer_error(response, 403, "SignatureDoesNotMatch");
	}
	if (take_fault(server, http->method, &fault))
	{
		switch (fault)
		{
			case LP_TEST_S3_DROP:
				return lp_fail(err, LP_ERR_NETWORK, "%s %s failed: connection reset by peer",
							   http->method, http->url);
			case LP_TEST_S3_DROP_ANSWER:
				serve(server, &request, response, err);
				lp_s3_http_response_clear(response);
				return lp_fail(err, LP_ERR_NETWORK, "%s %s failed: connection reset by peer",
							   http->method, http->url);
			case LP_TEST_S3_SLOW_DOWN:
				return answer_error(response, 503, "SlowDown");
			case LP_TEST_S3_INTERNAL_ERROR:
				return answer_error(response, 500, "InternalError");
			case LP_TEST_S3_TOO_MANY:
				response->status = 429;
				return true;
			case LP_TEST_S3_CONDITIONAL_CONFLICT:
				return answer_error(response, 409, "ConditionalRequestConflict");
			case LP_TEST_S3_BAD_REQUEST:
				return answer_error(response, 400, "InvalidRequest");
			case LP_TEST_S3_CANCEL:
				lp_test_s3_cancel_pending = true;
				break;
		}
	}
	if (!http->ignore_cancel && lp_test_s3_cancel_pending)
		return lp_fail(err, LP_ERR_CANCELED, "canceling statement due to user request");
	return serve(server, &request, response, err);
}

static bool
server_wait(LpS3Transport *transport, uint32_t delay_ms, bool ignore_cancel, LpError *err)
{
	LpTestS3Server *server = (LpTestS3Server *) transport;

	if (server->counts.waits < LP_TEST_S3_MAX_WAITS)
		server->counts.wait_ms[server->counts.waits] = delay_ms;
	server->counts.waits++;
	if (!ignore_cancel && lp_test_s3_cancel_pending)
		return lp_fail(err, LP_ERR_CANCELED, "canceling statement due to user request");
	return true;
}

static bool
server_start(LpS3Transport *transport, const LpS3HttpRequest *request,
			 LpS3HttpResponse *response, LpS3Transfer **out, LpError *err)
{
	LpTestS3Server *server = (LpTestS3Server *) transport;
	LpS3Transfer *transfer = calloc(1, sizeof(*transfer));

	(void) err;
	transfer->request = request;
	transfer->response = response;
	transfer->next = server->transfers;
	server->transfers = transfer;
	server->counts.transfers_started++;
	*out = transfer;
	return true;
}

static void
serve_transfer(LpTestS3Server *server, LpS3Transfer *transfer)
{
	if (transfer->served)
		return;
	transfer->answered = server_perform(&server->base, transfer->request, transfer->response,
										&transfer->err);
	transfer->served = true;
}

static void
server_progress(LpS3Transport *transport)
{
	LpTestS3Server *server = (LpTestS3Server *) transport;

	server->counts.progress_calls++;
	for (LpS3Transfer *t = server->transfers; t != NULL; t = t->next)
		serve_transfer(server, t);
}

static void
unlink_transfer(LpTestS3Server *server, LpS3Transfer *transfer)
{
	for (LpS3Transfer **link = &server->transfers; *link != NULL; link = &(*link)->next)
		if (*link == transfer)
		{
			*link = transfer->next;
			return;
		}
}

static bool
server_finish(LpS3Transport *transport, LpS3Transfer *transfer, LpError *err)
{
	LpTestS3Server *server = (LpTestS3Server *) transport;
	bool		answered;

	serve_transfer(server, transfer);
	answered = transfer->answered;
	if (!answered)
		*err = transfer->err;
	unlink_transfer(server, transfer);
	free(transfer);
	return answered;
}

static void
server_abort(LpS3Transport *transport, LpS3Transfer *transfer)
{
	LpTestS3Server *server = (LpTestS3Server *) transport;

	if (transfer->served && transfer->answered)
		lp_s3_http_response_clear(transfer->response);
	server->counts.transfers_aborted++;
	unlink_transfer(server, transfer);
	free(transfer);
}

static const LpS3TransportOps server_ops = {
	.perform = server_perform,
	.wait = server_wait,
	.start = server_start,
	.progress = server_progress,
	.finish = server_finish,
	.abort = server_abort,
};

/* The same server without the start/finish pair: one request at a time. */
static const LpS3TransportOps serial_ops = {
	.perform = server_perform,
	.wait = server_wait,
};

LpTestS3Server *
lp_test_s3_server_create(void)
{
	LpTestS3Server *server = calloc(1, sizeof(*server));

	server->base.ops = &server_ops;
	lp_test_s3_cancel_pending = false;
	return server;
}

void
lp_test_s3_server_free(LpTestS3Server *server)
{
	for (int i = 0; i < server->num_objects; i++)
	{
		free(server->objects[i].key);
		free(server->objects[i].data);
	}
	for (int i = 0; i < server->num_uploads; i++)
	{
		free_upload_parts(&server->uploads[i]);
		free(server->uploads[i].key);
	}
	while (server->transfers != NULL)
	{
		LpS3Transfer *next = server->transfers->next;

		free(server->transfers);
		server->transfers = next;
	}
	free(server);
	lp_test_s3_cancel_pending = false;
}

void
lp_test_s3_server_serial(LpTestS3Server *server, bool serial)
{
	server->base.ops = serial ? &serial_ops : &server_ops;
}

LpS3Transport *
lp_test_s3_transport(LpTestS3Server *server)
{
	return &server->base;
}

LpS3Config
lp_test_s3_config(void)
{
	return (LpS3Config) {
		.endpoint = LP_TEST_S3_ENDPOINT,
		.region = "us-east-1",
		.url_style = LP_S3_URL_PATH,
		.allow_http = true,
		.credentials = {LP_TEST_S3_ACCESS_KEY, LP_TEST_S3_SECRET, NULL},
		.max_retries = 3,
		.retry_base_delay_ms = 100,
		.retry_max_delay_ms = 1000,
		.connect_timeout_ms = 1000,
		.request_timeout_ms = 10000,
	};
}

void
lp_test_s3_server_fault(LpTestS3Server *server, const char *method, LpTestS3Fault fault, int count)
{
	if (server->num_faults < MAX_FAULTS)
		server->faults[server->num_faults++] = (Fault) {method, fault, count};
}

const LpTestS3Counts *
lp_test_s3_counts(LpTestS3Server *server)
{
	return &server->counts;
}

void
lp_test_s3_reset_counts(LpTestS3Server *server)
{
	memset(&server->counts, 0, sizeof(server->counts));
}

size_t
lp_test_s3_open_transfers(LpTestS3Server *server)
{
	size_t		open = 0;

	for (LpS3Transfer *t = server->transfers; t != NULL; t = t->next)
		open++;
	return open;
}

size_t
lp_test_s3_open_uploads(LpTestS3Server *server)
{
	size_t		open = 0;

	for (int i = 0; i < server->num_uploads; i++)
		open += server->uploads[i].open;
	return open;
}

uint64_t
lp_test_s3_open_upload_bytes(LpTestS3Server *server)
{
	uint64_t	bytes = 0;

	for (int i = 0; i < server->num_uploads; i++)
		for (int p = 0; server->uploads[i].open && p <= MAX_PARTS; p++)
			bytes += server->uploads[i].parts[p].len;
	return bytes;
}

void
lp_test_s3_put(LpTestS3Server *server, const char *key, const void *data, size_t len)
{
	store_object(server, LP_TEST_S3_BUCKET, key, copy_bytes(data, len), len);
}

const uint8_t *
lp_test_s3_get(LpTestS3Server *server, const char *key, size_t *len)
{
	Object	   *object = find_object(server, LP_TEST_S3_BUCKET, key);

	*len = object ? object->len : 0;
	return object ? object->data : NULL;
}
