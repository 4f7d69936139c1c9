/*
 * lp_s3_output.c - outputs of the S3 store: one PUT, a multipart upload, or
 * parts written by number from several processes.
 *
 * An output holds at most one of two pending things: bytes in its part
 * buffer, or a run of server-side copies (one source object, contiguous in
 * source and output).  A write after a copy run flushes the run (copied
 * parts when it is long enough, else its bytes read into the buffer); a copy
 * after buffered bytes flushes the buffer as a part when it is long enough,
 * else reads the copied bytes into the buffer, so that every non-last part
 * reaches S3's minimum size.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "base/lp_alloc.h"
#include "base/lp_interrupt.h"
#include "io/lp_s3_sign.h"
#include "io/lp_s3_store.h"
#include "io/lp_s3_store_internal.h"
#include "io/lp_s3_uri.h"
#include "io/lp_s3_xml.h"

static const LpOutputOps s3_output_ops;

/* ---- outputs --------------------------------------------------------------- */

static bool
start_upload(S3Output *output, LpError *err)
{
	if (output->upload)
		return true;
	output->upload = lp_s3_multipart_start(output->store->client, output->bucket,
										   output->key, err);
	return output->upload != NULL;
}

static bool
flush_buffer(S3Output *output, LpError *err)
{
	if (!start_upload(output, err) ||
		!lp_s3_multipart_upload_part(output->upload, output->buffer, output->buffer_len, err))
		return false;
	output->buffer_len = 0;
	return true;
}

/*
 * A full buffer uploads its first LP_S3_UPLOAD_PART_SIZE bytes as a part and
 * keeps the last LP_S3_MIN_PART_SIZE: whatever was written since the last
 * copy, the buffer then holds either all of it or at least a part's minimum,
 * so a copy that follows a long enough write never has to read its bytes
 * into the buffer (the layout of lp_concat_upload_parts relies on it).
 */
#define BUFFER_CAPACITY (LP_S3_UPLOAD_PART_SIZE + LP_S3_MIN_PART_SIZE)

static bool
flush_full_buffer(S3Output *output, LpError *err)
{
	if (!start_upload(output, err) ||
		!lp_s3_multipart_upload_part(output->upload, output->buffer, LP_S3_UPLOAD_PART_SIZE, err))
		return false;
	memmove(output->buffer, output->buffer + LP_S3_UPLOAD_PART_SIZE,
			output->buffer_len - LP_S3_UPLOAD_PART_SIZE);
	output->buffer_len -= LP_S3_UPLOAD_PART_SIZE;
	return true;
}

static bool
ensure_buffer(S3Output *output, LpError *err)
{
	if (output->buffer == NULL)
	{
		output->buffer = lp_alloc(BUFFER_CAPACITY);
		if (output->buffer == NULL)
			return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory for the part buffer of \"%s\"",
						   output->name);
	}
	return true;
}

/* Append len bytes of data to the buffer, uploading each full one as a part. */
static bool
buffer_append(S3Output *output, const uint8_t *data, size_t len, LpError *err)
{
	if (len > 0 && !ensure_buffer(output, err))
		return false;
	while (len > 0)
	{
		size_t		n = BUFFER_CAPACITY - output->buffer_len;

		if (n > len)
			n = len;
		memcpy(output->buffer + output->buffer_len, data, n);
		output->buffer_len += n;
		data += n;
		len -= n;
		if (output->buffer_len == BUFFER_CAPACITY && !flush_full_buffer(output, err))
			return false;
	}
	return true;
}

/* Read len bytes of a source object into the buffer (a copy too short for a part of its own). */
static bool
buffer_append_source(S3Output *output, const char *bucket, const char *key,
					 uint64_t source_size, uint64_t offset, uint64_t len, LpError *err)
{
	if (len > 0 && !ensure_buffer(output, err))
		return false;
	while (len > 0)
	{
		uint64_t	n = BUFFER_CAPACITY - output->buffer_len;

		if (n > len)
			n = len;
		if (!lp_s3_get_range(output->store, bucket, key, source_size, offset,
					   output->buffer + output->buffer_len, (size_t) n, err))
			return false;
		output->buffer_len += (size_t) n;
		offset += n;
		len -= n;
		if (output->buffer_len == BUFFER_CAPACITY && !flush_full_buffer(output, err))
			return false;
	}
	return true;
}

static void
clear_copy(S3Output *output)
{
	lp_free(output->copy_bucket);
	lp_free(output->copy_key);
	output->copy_bucket = output->copy_key = NULL;
	output->copy_len = 0;
}

/*
 * Flush the pending copy run: as copied parts when it may stand alone
 * (long enough, or the last part), each at most LP_S3_MAX_PART_SIZE and
 * all of one size; else its bytes read into the buffer.
 */
static bool
flush_copy(S3Output *output, bool last, LpError *err)
{
	uint64_t	len = output->copy_len;
	uint64_t	offset = output->copy_offset;
	uint64_t	pieces;
	uint64_t	piece;
	bool		ok = true;

	if (len == 0)
		return true;
	if (len < LP_S3_MIN_PART_SIZE && !last)
		ok = buffer_append_source(output, output->copy_bucket, output->copy_key,
								  output->copy_source_size, offset, len, err);
	else
	{
		pieces = (len + LP_S3_MAX_PART_SIZE - 1) / LP_S3_MAX_PART_SIZE;
		piece = (len + pieces - 1) / pieces;
		ok = start_upload(output, err);
		while (ok && len > 0)
		{
			uint64_t	n = piece < len ? piece : len;

			ok = lp_s3_multipart_copy_part(output->upload, output->copy_bucket,
										   output->copy_key, offset, n, err);
			offset += n;
			len -= n;
		}
	}
	clear_copy(output);
	return ok;
}

static bool
check_front_to_back(S3Output *output, uint64_t offset, LpError *err)
{
	if (output->numbered)
		return lp_fail(err, LP_ERR_INTERNAL,
					   "S3 output \"%s\" is written by part number", output->name);
	if (offset != output->written)
		return lp_fail(err, LP_ERR_UNSUPPORTED,
					   "S3 output \"%s\" is written front to back: a write at offset %" PRIu64 " follows %" PRIu64 " bytes",
					   output->name, offset, output->written);
	return true;
}

static bool
s3_write_at(LpOutput *base, uint64_t offset, const void *data, size_t len, LpError *err)
{
	S3Output   *output = (S3Output *) base;

	if (!check_front_to_back(output, offset, err) || !flush_copy(output, false, err) ||
		!buffer_append(output, data, len, err))
		return false;
	output->written += len;
	return true;
}

static bool
s3_copy_from(LpOutput *base, uint64_t output_offset, LpInput *input_base,
			 uint64_t input_offset, uint64_t len, LpError *err)
{
	S3Output   *output = (S3Output *) base;
	S3Input    *input = lp_s3_input_copyable(output->store, input_base);

	if (input == NULL)
		return lp_fail(err, LP_ERR_UNSUPPORTED,
					   "S3 output \"%s\" cannot copy from \"%s\" on the server",
					   output->name, input_base->name);
	if (!check_front_to_back(output, output_offset, err))
		return false;
	if (input_offset > input_base->size || len > input_base->size - input_offset)
		return lp_fail(err, LP_ERR_CORRUPT,
					   "copy of %" PRIu64 " bytes at offset %" PRIu64 " is beyond the end of \"%s\" (%" PRIu64 " bytes)",
					   len, input_offset, input_base->name, input_base->size);
	if (len == 0)
		return true;
	if (output->copy_len > 0 && strcmp(output->copy_bucket, input->bucket) == 0 &&
		strcmp(output->copy_key, input->key) == 0 &&
		output->copy_offset + output->copy_len == input_offset)
	{
		output->copy_len += len;
		output->written += len;
		return true;
	}
	if (!flush_copy(output, false, err))
		return false;
	if (output->buffer_len > 0 && output->buffer_len < LP_S3_MIN_PART_SIZE)
	{
		/* too little buffered for a part of its own: add these bytes to it */
		if (!buffer_append_source(output, input->bucket, input->key, input_base->size,
								  input_offset, len, err))
			return false;
		output->written += len;
		return true;
	}
	if (output->buffer_len > 0 && !flush_buffer(output, err))
		return false;
	output->copy_bucket = lp_strdup(input->bucket);
	output->copy_key = lp_strdup(input->key);
	if (output->copy_bucket == NULL || output->copy_key == NULL)
	{
		clear_copy(output);
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory for a copy into \"%s\"", output->name);
	}
	output->copy_source_size = input_base->size;
	output->copy_offset = input_offset;
	output->copy_len = len;
	output->written += len;
	return true;
}

static void
free_output(S3Output *output)
{
	lp_s3_multipart_end(output->upload);
	clear_copy(output);
	lp_free(output->buffer);
	lp_free(output->bucket);
	lp_free(output->key);
	lp_free(output->name);
	lp_free(output);
}

static bool
publish_upload(S3Output *output, LpError *err)
{
	LpStat		stat;
	bool		found;

	if (!flush_copy(output, output->buffer_len == 0, err))
		return false;
	if ((output->buffer_len > 0 || lp_s3_multipart_num_parts(output->upload) == 0) &&
		!flush_buffer(output, err))
		return false;
	/* servers that ignore If-None-Match on completion are stopped here */
	if (!lp_s3_head_object(output->store, output->bucket, output->key, &found, &stat, err))
		return false;
	if (found)
		return lp_fail(err, LP_ERR_ALREADY_EXISTS, "file \"%s\" already exists", output->name);
	if (!lp_s3_multipart_complete(output->upload, true, err))
	{
		if (err->code == LP_ERR_CONFLICT)
			err->code = LP_ERR_ALREADY_EXISTS;
		return false;
	}
	return true;
}

/*
 * Whether the output is one whole source object too short for a multipart
 * part (5 MiB): then one CopyObject publishes it.  Longer ones stay
 * UploadPartCopy parts, which have no 5 GiB limit.
 */
static bool
whole_small_copy(const S3Output *output)
{
	return output->upload == NULL && output->buffer_len == 0 && output->copy_len > 0 &&
		output->copy_offset == 0 && output->copy_len == output->copy_source_size &&
		output->copy_len < LP_S3_MIN_PART_SIZE;
}

/*
 * Publish the pending copy run as a CopyObject (x-amz-copy-source), no byte
 * through the client, conditional as every publication: If-None-Match: *
 * for servers that honour it on copies, and, as before a multipart
 * completion, a HEAD before it that stops servers that ignore it (Ceph RGW
 * 16 does), with the same window.
 */
static bool
copy_object(S3Output *output, LpError *err)
{
	LpStat		stat;
	bool		found;
	size_t		source_len = strlen(output->copy_bucket) + strlen(output->copy_key) + 3;
	char	   *source_path;
	char	   *source;
	LpS3Pair	headers[2];
	LpS3Call	call;
	LpS3HttpResponse response;
	LpS3Document *document = NULL;
	bool		ok;

	if (!lp_s3_head_object(output->store, output->bucket, output->key, &found, &stat, err))
		return false;
	if (found)
		return lp_fail(err, LP_ERR_ALREADY_EXISTS, "file \"%s\" already exists", output->name);
	source_path = lp_alloc(source_len);
	if (source_path == NULL)
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory for a copy into \"%s\"", output->name);
	snprintf(source_path, source_len, "/%s/%s", output->copy_bucket, output->copy_key);
	source = lp_s3_encode_path(source_path);
	lp_free(source_path);
	if (source == NULL)
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory for a copy into \"%s\"", output->name);
	headers[0] = (LpS3Pair) {"if-none-match", "*"};
	headers[1] = (LpS3Pair) {"x-amz-copy-source", source};
	call = (LpS3Call) {
		.method = "PUT",
		.bucket = output->bucket,
		.key = output->key,
		.headers = headers,
		.header_count = 2,
		.body = "",
		.body_len = 0,
		.error_body_on_success = true,
	};
	ok = lp_s3_call_checked(output->store->client, &call, "copy an object into", &response, err);
	lp_free(source);
	if (!ok)
	{
		if (err->code == LP_ERR_CONFLICT)
			err->code = LP_ERR_ALREADY_EXISTS;
		else if (err->detail[0] == '\0')
			lp_error_detail(err, "The object is a copy of \"s3://%s/%s\".",
							output->copy_bucket, output->copy_key);
		return false;
	}
	ok = lp_s3_xml_parse(response.body ? response.body : "", response.body_len,
						 LP_S3_COPY_OBJECT, &document, err);
	lp_s3_http_response_clear(&response);
	lp_s3_xml_free(document);
	return ok;
}

static bool
s3_publish(LpOutput *base, LpError *err)
{
	S3Output   *output = (S3Output *) base;
	bool		ok;

	if (lp_check_cancel(err))
		ok = false;
	else if (output->upload == NULL && output->copy_len == 0)
		ok = lp_s3_put_object(output->store, output->bucket, output->key, output->name,
						output->buffer, output->buffer_len, true, err);
	else if (whole_small_copy(output))
		ok = copy_object(output, err);
	else
		ok = publish_upload(output, err);
	if (!ok && err->code == LP_ERR_ALREADY_EXISTS && strstr(err->message, "already exists") == NULL)
	{
		char		message[LP_ERROR_MESSAGE_LEN];

		snprintf(message, sizeof(message), "%s", err->message);
		lp_fail(err, LP_ERR_ALREADY_EXISTS, "file \"%s\" already exists", output->name);
		lp_error_detail(err, "%s", message);
	}
	free_output(output);
	return ok;
}

static void
s3_abort(LpOutput *base)
{
	free_output((S3Output *) base);
}

static const LpMultipartLimits s3_multipart_limits = {
	LP_S3_MIN_PART_SIZE, LP_S3_MAX_PART_SIZE, LP_S3_MAX_PARTS
};

static const LpOutputOps s3_output_ops = {
	.write_at = s3_write_at,
	.copy_from = s3_copy_from,
	.publish = s3_publish,
	.abort = s3_abort,
	.start_parts = lp_s3_output_start_parts,
	.add_part = lp_s3_output_add_part,
	.copies_part_from = lp_s3_output_copies_on_server,
};

LpOutput *
lp_s3_create_output(LpStore *store, const char *path, LpError *err)
{
	S3Output   *output;
	char	   *bucket;
	char	   *key;

	if (!lp_s3_split_uri(path, &bucket, &key, err))
		return NULL;
	if (key[0] == '\0')
	{
		lp_free(bucket);
		lp_free(key);
		lp_fail(err, LP_ERR_INVALID_ARGUMENT, "\"%s\" names a bucket, not an object", path);
		return NULL;
	}
	output = lp_alloc0(sizeof(*output));
	if (output == NULL || (output->name = lp_strdup(path)) == NULL)
	{
		lp_free(output);
		lp_free(bucket);
		lp_free(key);
		lp_fail(err, LP_ERR_NO_MEMORY, "out of memory for an output of \"%s\"", path);
		return NULL;
	}
	output->base.ops = &s3_output_ops;
	output->base.name = output->name;
	output->base.multipart = &s3_multipart_limits;
	output->store = (S3Store *) store;
	output->bucket = bucket;
	output->key = key;
	return &output->base;
}

/* ---- parts written by several processes --------------------------------- */

bool
lp_s3_output_copies_on_server(LpOutput *output, LpInput *input)
{
	return output->ops == &s3_output_ops &&
		lp_s3_input_copyable(((S3Output *) output)->store, input) != NULL;
}

const char *
lp_s3_output_start_parts(LpOutput *base, LpError *err)
{
	S3Output   *output = (S3Output *) base;

	if (base->ops != &s3_output_ops || output->written > 0 || output->upload != NULL)
	{
		lp_fail(err, LP_ERR_INTERNAL, "\"%s\" is no S3 output still unwritten", base->name);
		return NULL;
	}
	if (!start_upload(output, err))
		return NULL;
	output->numbered = true;
	return lp_s3_multipart_upload_id(output->upload);
}

static bool
check_numbered(LpOutput *base, LpError *err)
{
	if (base->ops != &s3_output_ops || !((S3Output *) base)->numbered)
		return lp_fail(err, LP_ERR_INTERNAL, "\"%s\" is not written by part number", base->name);
	return true;
}

bool
lp_s3_output_send_part(LpOutput *base, uint32_t number, const void *data, size_t len,
					   LpError *err)
{
	return check_numbered(base, err) &&
		lp_s3_multipart_upload_part_number(((S3Output *) base)->upload, number, data, len, err);
}

bool
lp_s3_output_add_part(LpOutput *base, uint32_t number, const char *etag, LpError *err)
{
	return check_numbered(base, err) &&
		lp_s3_multipart_add_part(((S3Output *) base)->upload, number, etag, err);
}
