/*
 * lp_s3_multipart.c - the state machine of one S3 multipart upload.
 *
 * OPEN (parts may be added) ends in COMPLETED or ABORTED.  A failed request
 * of an open upload aborts it before the error is returned; the part list is
 * kept here (part number and ETag) for CompleteMultipartUpload.
 *
 * A completion that is retried after its answer was lost finds the upload
 * gone (NoSuchUpload).  The object's ETag then tells whether it was this
 * upload that completed: S3 names a multipart object by the MD5 of its
 * parts' MD5s and their count ("<hex>-N").
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "base/lp_alloc.h"
#include "base/lp_checked.h"
#include "io/lp_s3_multipart.h"
#include "io/lp_s3_xml.h"

typedef enum UploadState
{
	UPLOAD_OPEN,
	UPLOAD_COMPLETED,
	UPLOAD_ABORTED
} UploadState;

struct LpS3Multipart
{
	LpS3Client *client;
	char	   *bucket;
	char	   *key;
	char	   *upload_id;
	UploadState state;
	LpS3Part   *parts;			/* etags lp_alloc'd */
	uint32_t	num_parts;
	uint32_t	capacity;
};

static void
free_upload(LpS3Multipart *upload)
{
	for (uint32_t i = 0; i < upload->num_parts; i++)
		lp_free((char *) upload->parts[i].etag);
	lp_free(upload->parts);
	lp_free(upload->bucket);
	lp_free(upload->key);
	lp_free(upload->upload_id);
	lp_free(upload);
}

/* AbortMultipartUpload, best effort: a failure leaves what the server's lifecycle rules reclaim. */
static void
abort_upload(LpS3Multipart *upload)
{
	LpS3Pair	query[] = {{"uploadId", upload->upload_id}};
	LpS3Call	call = {
		.method = "DELETE",
		.bucket = upload->bucket,
		.key = upload->key,
		.query = query,
		.query_count = 1,
		.ignore_cancel = true,
	};
	LpS3HttpResponse response;
	LpError		ignored;

	if (upload->state != UPLOAD_OPEN)
		return;
	upload->state = UPLOAD_ABORTED;
	if (lp_s3_call(upload->client, &call, &response, &ignored))
		lp_s3_http_response_clear(&response);
}

/* Abort the open upload after err was filled, and return false. */
static bool
fail_and_abort(LpS3Multipart *upload)
{
	abort_upload(upload);
	return false;
}

LpS3Multipart *
lp_s3_multipart_start(LpS3Client *client, const char *bucket, const char *key, LpError *err)
{
	LpS3Pair	query[] = {{"uploads", NULL}};

	/*
	 * The upload exists once the request reaches the server: its answer,
	 * the id that aborts it, is awaited even after a cancel (the request
	 * timeout and the retries bound that wait), and the caller holds the
	 * upload, to be aborted, before anything can be cancelled again.
	 */
	LpS3Call	call = {
		.method = "POST",
		.bucket = bucket,
		.key = key,
		.query = query,
		.query_count = 1,
		.body = "",
		.body_len = 0,
		.ignore_cancel = true,
	};
	LpS3HttpResponse response;
	LpS3Document *document = NULL;
	LpS3Multipart *upload;

	upload = lp_alloc0(sizeof(*upload));
	if (upload == NULL || (upload->bucket = lp_strdup(bucket)) == NULL ||
		(upload->key = lp_strdup(key)) == NULL)
	{
		if (upload)
			free_upload(upload);
		lp_fail(err, LP_ERR_NO_MEMORY, "out of memory for a multipart upload");
		return NULL;
	}
	upload->client = client;
	upload->state = UPLOAD_ABORTED;	/* nothing to abort until the server gave an id */
	if (!lp_s3_call_checked(client, &call, "start a multipart upload of", &response, err))
	{
		free_upload(upload);
		return NULL;
	}
	if (!lp_s3_xml_parse(response.body ? response.body : "", response.body_len,
						 LP_S3_INITIATE_MULTIPART, &document, err) ||
		document->kind != LP_S3_INITIATE_MULTIPART)
	{
		if (document)
			lp_fail(err, LP_ERR_IO, "could not start a multipart upload of \"s3://%s/%s\": the server answered an Error with status %ld",
					bucket, key, response.status);
		lp_s3_xml_free(document);
		lp_s3_http_response_clear(&response);
		free_upload(upload);
		return NULL;
	}
	upload->upload_id = lp_strdup(document->initiate.upload_id);
	lp_s3_xml_free(document);
	lp_s3_http_response_clear(&response);
	if (upload->upload_id == NULL)
	{
		/* the server holds an upload we cannot name: nothing can abort it */
		free_upload(upload);
		lp_fail(err, LP_ERR_NO_MEMORY, "out of memory for a multipart upload");
		return NULL;
	}
	upload->state = UPLOAD_OPEN;
	return upload;
}

const char *
lp_s3_multipart_upload_id(const LpS3Multipart *upload)
{
	return upload->upload_id;
}

uint32_t
lp_s3_multipart_num_parts(const LpS3Multipart *upload)
{
	return upload->num_parts;
}

/* Check that one more part may be added; false with err (the upload aborted) if not. */
static bool
next_part_allowed(LpS3Multipart *upload, LpError *err)
{
	if (upload->state != UPLOAD_OPEN)
		return lp_fail(err, LP_ERR_INTERNAL, "multipart upload of \"s3://%s/%s\" is no longer open",
					   upload->bucket, upload->key);
	if (upload->num_parts == LP_S3_MAX_PARTS)
	{
		lp_fail(err, LP_ERR_INVALID_ARGUMENT,
				"multipart upload of \"s3://%s/%s\" would need more than %d parts",
				upload->bucket, upload->key, LP_S3_MAX_PARTS);
		return fail_and_abort(upload);
	}
	if (upload->num_parts == upload->capacity)
	{
		uint32_t	capacity = upload->capacity ? upload->capacity * 2 : 16;
		LpS3Part   *grown;

		if (capacity > LP_S3_MAX_PARTS)
			capacity = LP_S3_MAX_PARTS;
		grown = lp_alloc_array(capacity, sizeof(LpS3Part));
		if (grown == NULL)
		{
			lp_fail(err, LP_ERR_NO_MEMORY, "out of memory for the part list of a multipart upload");
			return fail_and_abort(upload);
		}
		if (upload->num_parts)
			memcpy(grown, upload->parts, upload->num_parts * sizeof(LpS3Part));
		lp_free(upload->parts);
		upload->parts = grown;
		upload->capacity = capacity;
	}
	return true;
}

static bool
add_part(LpS3Multipart *upload, uint32_t part_number, const char *etag, LpError *err)
{
	char	   *copy = lp_strdup(etag);

	if (copy == NULL)
	{
		lp_fail(err, LP_ERR_NO_MEMORY, "out of memory for the part list of a multipart upload");
		return fail_and_abort(upload);
	}
	upload->parts[upload->num_parts].part_number = part_number;
	upload->parts[upload->num_parts].etag = copy;
	upload->num_parts++;
	return true;
}

/* Check that part_number may be added next; false with err (the upload aborted) if not. */
static bool
numbered_part_allowed(LpS3Multipart *upload, uint32_t part_number, LpError *err)
{
	if (part_number == 0 || part_number > LP_S3_MAX_PARTS)
	{
		lp_fail(err, LP_ERR_INVALID_ARGUMENT, "part number %" PRIu32 " is not one S3 allows",
				part_number);
		return fail_and_abort(upload);
	}
	return next_part_allowed(upload, err);
}

bool
lp_s3_multipart_add_part(LpS3Multipart *upload, uint32_t part_number, const char *etag,
						 LpError *err)
{
	return numbered_part_allowed(upload, part_number, err) &&
		add_part(upload, part_number, etag, err);
}

bool
lp_s3_upload_part(LpS3Client *client, const char *bucket, const char *key, const char *upload_id,
				  uint32_t number, const void *data, size_t len, char *etag, size_t etag_capacity,
				  LpError *err)
{
	char		part_number[16];
	LpS3Pair	query[2];
	LpS3Call	call;
	LpS3HttpResponse response;
	bool		ok = true;

	if (number == 0 || number > LP_S3_MAX_PARTS)
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT, "part number %" PRIu32 " is not one S3 allows",
					   number);
	if ((uint64_t) len > LP_S3_MAX_PART_SIZE)
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT, "part of %zu bytes is larger than S3 allows", len);
	snprintf(part_number, sizeof(part_number), "%" PRIu32, number);
	query[0] = (LpS3Pair) {"partNumber", part_number};
	query[1] = (LpS3Pair) {"uploadId", upload_id};
	call = (LpS3Call) {
		.method = "PUT",
		.bucket = bucket,
		.key = key,
		.query = query,
		.query_count = 2,
		.body = len ? data : "",
		.body_len = len,
	};
	if (!lp_s3_call_checked(client, &call, "upload a part of", &response, err))
		return false;
	if (response.etag[0] == '\0')
		ok = lp_fail(err, LP_ERR_IO, "could not upload part %s of \"s3://%s/%s\": the server's answer has no ETag",
					 part_number, bucket, key);
	else if (strlen(response.etag) >= etag_capacity)
		ok = lp_fail(err, LP_ERR_IO, "could not upload part %s of \"s3://%s/%s\": the server's ETag is longer than %zu bytes",
					 part_number, bucket, key, etag_capacity - 1);
	else
		strcpy(etag, response.etag);
	lp_s3_http_response_clear(&response);
	return ok;
}

bool
lp_s3_multipart_upload_part_number(LpS3Multipart *upload, uint32_t number, const void *data,
								   size_t len, LpError *err)
{
	char		etag[LP_S3_PART_ETAG_MAX];

	if (!numbered_part_allowed(upload, number, err))
		return false;
	if (!lp_s3_upload_part(upload->client, upload->bucket, upload->key, upload->upload_id,
						   number, data, len, etag, sizeof(etag), err))
		return fail_and_abort(upload);
	return add_part(upload, number, etag, err);
}

bool
lp_s3_multipart_upload_part(LpS3Multipart *upload, const void *data, size_t len, LpError *err)
{
	return lp_s3_multipart_upload_part_number(upload, upload->num_parts + 1, data, len, err);
}

bool
lp_s3_copy_part(LpS3Client *client, const char *bucket, const char *key, const char *upload_id,
				uint32_t number, const char *source_bucket, const char *source_key,
				uint64_t offset, uint64_t len, char *etag, size_t etag_capacity, LpError *err)
{
	char		part_number[16];
	char		range[64];
	char	   *source_path;
	char	   *source;
	size_t		source_len;
	LpS3Pair	query[2];
	LpS3Pair	headers[2];
	LpS3Call	call;
	LpS3HttpResponse response;
	LpS3Document *document = NULL;
	bool		ok;

	if (number == 0 || number > LP_S3_MAX_PARTS)
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT, "part number %" PRIu32 " is not one S3 allows",
					   number);
	if (len == 0 || len > LP_S3_MAX_PART_SIZE || offset > UINT64_MAX - len)
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT, "copied part of %" PRIu64 " bytes at offset %" PRIu64 " is not one S3 allows",
					   len, offset);
	source_len = strlen(source_bucket) + strlen(source_key) + 3;
	source_path = lp_alloc(source_len);
	if (source_path == NULL)
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory for a copied part");
	snprintf(source_path, source_len, "/%s/%s", source_bucket, source_key);
	source = lp_s3_encode_path(source_path);
	lp_free(source_path);
	if (source == NULL)
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory for a copied part");
	snprintf(part_number, sizeof(part_number), "%" PRIu32, number);
	snprintf(range, sizeof(range), "bytes=%" PRIu64 "-%" PRIu64, offset, offset + len - 1);
	query[0] = (LpS3Pair) {"partNumber", part_number};
	query[1] = (LpS3Pair) {"uploadId", upload_id};
	headers[0] = (LpS3Pair) {"x-amz-copy-source", source};
	headers[1] = (LpS3Pair) {"x-amz-copy-source-range", range};
	call = (LpS3Call) {
		.method = "PUT",
		.bucket = bucket,
		.key = key,
		.query = query,
		.query_count = 2,
		.headers = headers,
		.header_count = 2,
		.body = "",
		.body_len = 0,
		.error_body_on_success = true,
	};
	ok = lp_s3_call_checked(client, &call, "copy a part into", &response, err);
	lp_free(source);
	if (!ok)
	{
		if (err->detail[0] == '\0')
			lp_error_detail(err, "Part %s is bytes %" PRIu64 " to %" PRIu64 " of \"s3://%s/%s\".",
							part_number, offset, offset + len - 1, source_bucket, source_key);
		return false;
	}
	ok = lp_s3_xml_parse(response.body ? response.body : "", response.body_len,
						 LP_S3_COPY_PART, &document, err);
	lp_s3_http_response_clear(&response);
	if (!ok)
		return false;
	if (strlen(document->copy.etag) >= etag_capacity)
		ok = lp_fail(err, LP_ERR_IO, "could not copy part %s into \"s3://%s/%s\": the server's ETag is longer than %zu bytes",
					 part_number, bucket, key, etag_capacity - 1);
	else
		strcpy(etag, document->copy.etag);
	lp_s3_xml_free(document);
	return ok;
}

bool
lp_s3_multipart_copy_part(LpS3Multipart *upload, const char *source_bucket,
						  const char *source_key, uint64_t offset, uint64_t len, LpError *err)
{
	char		etag[LP_S3_PART_ETAG_MAX];

	if (!next_part_allowed(upload, err))
		return false;
	if (!lp_s3_copy_part(upload->client, upload->bucket, upload->key, upload->upload_id,
						 upload->num_parts + 1, source_bucket, source_key, offset, len,
						 etag, sizeof(etag), err))
		return fail_and_abort(upload);
	return add_part(upload, upload->num_parts + 1, etag, err);
}

/*
 * The ETag S3 gives the object this upload completes into, "\"<hex>-N\"",
 * into etag; false when a part's ETag is no MD5 (then it cannot be known).
 */
static bool
multipart_etag(const LpS3Multipart *upload, char *etag, size_t capacity)
{
	unsigned char *digests = lp_alloc_array(upload->num_parts, 16);
	unsigned char digest[16];
	unsigned int digest_len = 0;
	bool		ok = digests != NULL;
	size_t		used;

	for (uint32_t i = 0; ok && i < upload->num_parts; i++)
	{
		const char *part = upload->parts[i].etag;
		size_t		len = strlen(part);

		if (len >= 2 && part[0] == '"' && part[len - 1] == '"')
		{
			part++;
			len -= 2;
		}
		ok = len == 32;
		for (int b = 0; ok && b < 16; b++)
		{
			unsigned int byte;

			ok = sscanf(part + 2 * b, "%2x", &byte) == 1;
			digests[i * 16 + b] = (unsigned char) byte;
		}
	}
	ok = ok && EVP_Digest(digests, (size_t) upload->num_parts * 16, digest, &digest_len,
						  EVP_md5(), NULL) == 1 && digest_len == 16;
	lp_free(digests);
	if (!ok)
		return false;
	used = (size_t) snprintf(etag, capacity, "\"");
	for (int b = 0; b < 16; b++)
		used += (size_t) snprintf(etag + used, capacity - used, "%02x", digest[b]);
	snprintf(etag + used, capacity - used, "-%" PRIu32 "\"", upload->num_parts);
	return true;
}

/* Whether the object at the upload's key is the one this upload completes into. */
static bool
completed_as_this_upload(LpS3Multipart *upload)
{
	char		expected[64];
	LpS3Call	call = {.method = "HEAD", .bucket = upload->bucket, .key = upload->key};
	LpS3HttpResponse response;
	LpError		ignored;
	bool		same;

	if (!multipart_etag(upload, expected, sizeof(expected)) ||
		!lp_s3_call(upload->client, &call, &response, &ignored))
		return false;
	same = lp_s3_succeeded(&call, &response) && strcmp(response.etag, expected) == 0;
	lp_s3_http_response_clear(&response);
	return same;
}

static int
compare_part_numbers(const void *a, const void *b)
{
	uint32_t	x = ((const LpS3Part *) a)->part_number;
	uint32_t	y = ((const LpS3Part *) b)->part_number;

	return (x > y) - (x < y);
}

bool
lp_s3_multipart_complete(LpS3Multipart *upload, bool if_absent, LpError *err)
{
	LpS3Pair	query[] = {{"uploadId", upload->upload_id}};
	LpS3Pair	headers[] = {{"if-none-match", "*"}};
	LpS3Call	call;
	LpS3HttpResponse response;
	char	   *body;
	size_t		body_len;
	bool		ok;

	if (upload->state != UPLOAD_OPEN)
		return lp_fail(err, LP_ERR_INTERNAL, "multipart upload of \"s3://%s/%s\" is no longer open",
					   upload->bucket, upload->key);
	/* parts added by number (lp_s3_multipart_add_part) may have come in any order */
	qsort(upload->parts, upload->num_parts, sizeof(LpS3Part), compare_part_numbers);
	if (!lp_s3_xml_complete_request(upload->parts, upload->num_parts, &body, &body_len, err))
		return fail_and_abort(upload);
	call = (LpS3Call) {
		.method = "POST",
		.bucket = upload->bucket,
		.key = upload->key,
		.query = query,
		.query_count = 1,
		.headers = headers,
		.header_count = if_absent ? 1 : 0,
		.body = body,
		.body_len = body_len,
		.error_body_on_success = true,
	};
	ok = lp_s3_call_checked(upload->client, &call, "complete the multipart upload of",
							&response, err);
	lp_free(body);
	if (!ok && err->code == LP_ERR_NOT_FOUND && strstr(err->message, "NoSuchUpload") != NULL &&
		completed_as_this_upload(upload))
	{
		upload->state = UPLOAD_COMPLETED;
		return true;
	}
	if (!ok)
		return fail_and_abort(upload);
	lp_s3_http_response_clear(&response);
	upload->state = UPLOAD_COMPLETED;
	return true;
}

void
lp_s3_multipart_end(LpS3Multipart *upload)
{
	if (upload == NULL)
		return;
	abort_upload(upload);
	free_upload(upload);
}

bool
lp_s3_multipart_list(LpS3Client *client, const char *bucket, const char *prefix,
					 LpS3UploadCallback callback, void *arg, LpError *err)
{
	char	   *key_marker = NULL;
	char	   *upload_id_marker = NULL;
	bool		ok = true;
	bool		more;

	do
	{
		LpS3Pair	query[4];
		size_t		n = 0;
		LpS3Document *document;
		const LpS3ListUploads *page;

		query[n++] = (LpS3Pair) {"uploads", NULL};
		query[n++] = (LpS3Pair) {"prefix", prefix};
		if (key_marker)
			query[n++] = (LpS3Pair) {"key-marker", key_marker};
		if (upload_id_marker)
			query[n++] = (LpS3Pair) {"upload-id-marker", upload_id_marker};
		ok = lp_s3_list_page(client, bucket, prefix, query, n, "list the multipart uploads of",
							 LP_S3_LIST_MULTIPART_UPLOADS, &document, err);
		if (!ok)
			break;
		page = &document->list_uploads;
		for (size_t i = 0; ok && i < page->num_uploads; i++)
			ok = callback(arg, &page->uploads[i], err);
		lp_free(key_marker);
		lp_free(upload_id_marker);
		key_marker = upload_id_marker = NULL;
		more = ok && page->is_truncated;
		if (more)
		{
			/* a page that does not advance would be asked for again and again */
			if (page->num_uploads == 0)
				ok = lp_fail(err, LP_ERR_CORRUPT, "listing of the multipart uploads of \"s3://%s/%s\" is truncated after no upload",
							 bucket, prefix);
			else if ((key_marker = lp_strdup(page->next_key_marker)) == NULL ||
					 (page->next_upload_id_marker &&
					  (upload_id_marker = lp_strdup(page->next_upload_id_marker)) == NULL))
				ok = lp_fail(err, LP_ERR_NO_MEMORY, "out of memory for a listing of multipart uploads");
		}
		lp_s3_xml_free(document);
	} while (ok && more);
	lp_free(key_marker);
	lp_free(upload_id_marker);
	return ok;
}

bool
lp_s3_multipart_abort(LpS3Client *client, const char *bucket, const char *key,
					  const char *upload_id, LpError *err)
{
	LpS3Pair	query[] = {{"uploadId", upload_id}};
	LpS3Call	call = {
		.method = "DELETE",
		.bucket = bucket,
		.key = key,
		.query = query,
		.query_count = 1,
	};
	LpS3HttpResponse response;
	bool		ok;

	if (!lp_s3_call(client, &call, &response, err))
		return false;
	/* a 404 (NoSuchUpload): completed or aborted meanwhile */
	ok = lp_s3_succeeded(&call, &response) || response.status == 404 ||
		lp_s3_fail(client, &call, &response, "abort the multipart upload of", err);
	lp_s3_http_response_clear(&response);
	return ok;
}

/* Add a page of ListParts to *bytes; false (err set) for a size S3 never stores. */
static bool
add_part_sizes(const LpS3ListParts *page, const char *bucket, const char *key,
			   uint64_t *bytes, LpError *err)
{
	for (size_t i = 0; i < page->num_parts; i++)
	{
		uint64_t	size = page->parts[i].size;

		if (size > LP_S3_MAX_PART_SIZE || !lp_add_u64(*bytes, size, bytes))
			return lp_fail(err, LP_ERR_CORRUPT, "part %u of the multipart upload of \"s3://%s/%s\" is listed with %llu bytes, more than a part holds",
						   (unsigned) page->parts[i].part_number, bucket, key,
						   (unsigned long long) size);
	}
	return true;
}

bool
lp_s3_multipart_parts_size(LpS3Client *client, const char *bucket, const char *key,
						   const char *upload_id, uint64_t *bytes, LpError *err)
{
	uint32_t	marker = 0;
	bool		more;
	bool		ok;

	*bytes = 0;
	do
	{
		char		marker_text[16];
		LpS3Pair	query[2] = {{"uploadId", upload_id}, {"part-number-marker", marker_text}};
		LpS3Call	call = {.method = "GET", .bucket = bucket, .key = key, .query = query,
		.query_count = marker > 0 ? 2 : 1};
		LpS3HttpResponse response;
		LpS3Document *document = NULL;
		const LpS3ListParts *page;

		snprintf(marker_text, sizeof(marker_text), "%u", (unsigned) marker);
		if (!lp_s3_call(client, &call, &response, err))
			return false;
		/* a 404 (NoSuchUpload): completed or aborted meanwhile, nothing stored */
		if (response.status == 404)
		{
			lp_s3_http_response_clear(&response);
			*bytes = 0;
			return true;
		}
		if (!lp_s3_succeeded(&call, &response))
		{
			ok = lp_s3_fail(client, &call, &response, "list the parts of the multipart upload of", err);
			lp_s3_http_response_clear(&response);
			return ok;
		}
		ok = lp_s3_xml_parse(response.body ? response.body : "", response.body_len,
							 LP_S3_LIST_PARTS, &document, err);
		lp_s3_http_response_clear(&response);
		if (!ok)
			return false;
		page = &document->list_parts;
		if (document->kind != LP_S3_LIST_PARTS)
			ok = lp_fail(err, LP_ERR_IO, "could not list the parts of the multipart upload of \"s3://%s/%s\": the server answered an Error",
						 bucket, key);
		else if (page->num_parts > 0 && page->parts[0].part_number <= marker)
			ok = lp_fail(err, LP_ERR_CORRUPT, "listing of the parts of the multipart upload of \"s3://%s/%s\" goes back to part %u",
						 bucket, key, (unsigned) page->parts[0].part_number);
		else
			ok = add_part_sizes(page, bucket, key, bytes, err);
		more = ok && page->is_truncated;
		/* a page that does not advance would be asked for again and again */
		if (more && page->next_part_number_marker <= marker)
			ok = lp_fail(err, LP_ERR_CORRUPT, "listing of the parts of the multipart upload of \"s3://%s/%s\" is truncated without advancing",
						 bucket, key);
		marker = page->next_part_number_marker;
		lp_s3_xml_free(document);
	} while (ok && more);
	return ok;
}
