/*
 * fuzz_s3_xml.c - libFuzzer target for the S3 XML reader: the first input
 * byte picks the document kind expected, the rest is the body.  Every string
 * of a parsed document is read (so a dangling or unterminated one shows up
 * under ASan) and their lengths together stay within the body; a parsed
 * CompleteMultipartUpload request is written again and must read back to the
 * same parts.  Seeds (test/fuzz/corpus/fuzz_s3_xml) are small bodies of every
 * kind, as AWS and Ceph RGW send them; the first byte is the kind's place
 * in LpS3DocumentKind.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lp_fuzz.h"
#include "base/lp_alloc.h"
#include "io/lp_s3_xml.h"

#define FUZZ_KINDS (LP_S3_COMPLETE_MULTIPART_REQUEST + 1)

/* Reads every byte of s (NULL allowed). */
static size_t
touch(const char *s)
{
	return s == NULL ? 0 : strlen(s);
}

static size_t
touch_document(const LpS3Document *doc)
{
	size_t		sum = 0;

	switch (doc->kind)
	{
		case LP_S3_ERROR:
			if (doc->error.code[0] == '\0')
				abort();
			sum += touch(doc->error.message) + touch(doc->error.request_id) + touch(doc->error.host_id) +
				touch(doc->error.resource) + touch(doc->error.key) + touch(doc->error.bucket_name);
			break;
		case LP_S3_LIST_OBJECTS:
			if (doc->list_objects.is_truncated && touch(doc->list_objects.next_continuation_token) == 0)
				abort();
			for (size_t i = 0; i < doc->list_objects.num_objects; i++)
			{
				const LpS3Object *object = &doc->list_objects.objects[i];

				if (object->last_modified.microseconds < 0 || object->last_modified.microseconds > 999999)
					abort();
				sum += touch(object->key) + touch(object->etag);
			}
			for (size_t i = 0; i < doc->list_objects.num_common_prefixes; i++)
				sum += touch(doc->list_objects.common_prefixes[i]);
			break;
		case LP_S3_INITIATE_MULTIPART:
			sum += touch(doc->initiate.bucket) + touch(doc->initiate.key) + touch(doc->initiate.upload_id);
			break;
		case LP_S3_COMPLETE_MULTIPART:
			sum += touch(doc->complete.location) + touch(doc->complete.bucket) + touch(doc->complete.key) +
				touch(doc->complete.etag);
			break;
		case LP_S3_COPY_PART:
		case LP_S3_COPY_OBJECT:
			sum += touch(doc->copy.etag);
			break;
		case LP_S3_LIST_MULTIPART_UPLOADS:
			sum += touch(doc->list_uploads.next_key_marker) + touch(doc->list_uploads.next_upload_id_marker);
			for (size_t i = 0; i < doc->list_uploads.num_uploads; i++)
				sum += touch(doc->list_uploads.uploads[i].key) + touch(doc->list_uploads.uploads[i].upload_id);
			break;
		case LP_S3_LIST_PARTS:
			/* the reader's promises: numbers in range and rising, a marker when truncated */
			for (size_t i = 0; i < doc->list_parts.num_parts; i++)
			{
				uint32_t	number = doc->list_parts.parts[i].part_number;

				if (number < 1 || number > LP_S3_MAX_PARTS ||
					(i > 0 && number <= doc->list_parts.parts[i - 1].part_number))
					abort();
			}
			if (doc->list_parts.is_truncated &&
				(doc->list_parts.next_part_number_marker < 1 ||
				 doc->list_parts.next_part_number_marker > LP_S3_MAX_PARTS))
				abort();
			break;
		case LP_S3_COMPLETE_MULTIPART_REQUEST:
			for (size_t i = 0; i < doc->complete_request.num_parts; i++)
				sum += touch(doc->complete_request.parts[i].etag);
			break;
	}
	return sum;
}

/* A request read from the input, written and read again, is the same request. */
static void
check_round_trip(const LpS3CompleteRequest *request)
{
	char	   *body;
	size_t		len;
	LpS3Document *again = NULL;
	LpError		err;

	if (!lp_s3_xml_complete_request(request->parts, request->num_parts, &body, &len, &err))
	{
		if (err.code != LP_ERR_NO_MEMORY)
			abort();
		return;
	}
	if (!lp_s3_xml_parse(body, len, LP_S3_COMPLETE_MULTIPART_REQUEST, &again, &err))
	{
		if (err.code != LP_ERR_NO_MEMORY)
			abort();
		lp_free(body);
		return;
	}
	if (again->kind != LP_S3_COMPLETE_MULTIPART_REQUEST ||
		again->complete_request.num_parts != request->num_parts)
		abort();
	for (size_t i = 0; i < request->num_parts; i++)
		if (again->complete_request.parts[i].part_number != request->parts[i].part_number ||
			strcmp(again->complete_request.parts[i].etag, request->parts[i].etag) != 0)
			abort();
	lp_s3_xml_free(again);
	lp_free(body);
}

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	LpS3Document *doc = NULL;
	LpS3DocumentKind expected;
	LpError		err;

	if (size == 0)
		return 0;
	lp_fuzz_use_bounded_allocator();
	expected = (LpS3DocumentKind) (data[0] % FUZZ_KINDS);
	if (lp_s3_xml_parse((const char *) data + 1, size - 1, expected, &doc, &err))
	{
		if (doc->kind != expected && doc->kind != LP_S3_ERROR)
			abort();
		/* every string is decoded from its own text in the body, never longer */
		if (touch_document(doc) > size)
			abort();
		if (doc->kind == LP_S3_COMPLETE_MULTIPART_REQUEST)
			check_round_trip(&doc->complete_request);
		lp_s3_xml_free(doc);
	}
	else if (doc != NULL || (err.code != LP_ERR_CORRUPT && err.code != LP_ERR_NO_MEMORY &&
							 err.code != LP_ERR_UNSUPPORTED))
		abort();
	return 0;
}
