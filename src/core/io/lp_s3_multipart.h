/*
 * lp_s3_multipart.h - one S3 multipart upload, from CreateMultipartUpload to
 * CompleteMultipartUpload or AbortMultipartUpload.
 *
 * Parts are numbered 1, 2, ... in the order they are added, uploaded
 * (UploadPart) or copied server-side from a range of another object
 * (UploadPartCopy).  S3 refuses a non-last part under LP_S3_MIN_PART_SIZE
 * (EntityTooSmall, when completing) and any part over LP_S3_MAX_PART_SIZE;
 * the caller lays parts out accordingly.  Any failure aborts the upload on
 * the server at once, so no orphan upload is left behind whatever the caller
 * does next; the abort request is sent even while a cancel is pending.
 */
#ifndef LP_S3_MULTIPART_H
#define LP_S3_MULTIPART_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/lp_error.h"
#include "io/lp_s3_client.h"
#include "io/lp_storage.h"
#include "io/lp_s3_xml.h"

#define LP_S3_MIN_PART_SIZE ((uint64_t) 5 << 20)
#define LP_S3_MAX_PART_SIZE ((uint64_t) 5 << 30)

typedef struct LpS3Multipart LpS3Multipart;

/* Start an upload of bucket/key (CreateMultipartUpload); NULL with err on failure. */
LpS3Multipart *lp_s3_multipart_start(LpS3Client *client, const char *bucket, const char *key,
									 LpError *err);

/* The upload id the server gave. */
const char *lp_s3_multipart_upload_id(const LpS3Multipart *upload);

/* Parts added so far. */
uint32_t	lp_s3_multipart_num_parts(const LpS3Multipart *upload);

/* Upload len bytes of data as the next part. */
bool		lp_s3_multipart_upload_part(LpS3Multipart *upload, const void *data, size_t len,
										LpError *err);

/*
 * Copy len (1..LP_S3_MAX_PART_SIZE) bytes of source_bucket/source_key at
 * offset as the next part, on the server.
 */
bool		lp_s3_multipart_copy_part(LpS3Multipart *upload, const char *source_bucket,
									  const char *source_key, uint64_t offset, uint64_t len,
									  LpError *err);

/*
 * Parts numbered by the caller, for an upload whose parts several processes
 * write at once: upload data as part number (1..LP_S3_MAX_PARTS), or record
 * the ETag another process got for it (lp_s3_copy_part).  The numbers may
 * come in any order; the caller gives each once, and completion lists them
 * sorted.  Not to be mixed with the two calls above.
 */
bool		lp_s3_multipart_upload_part_number(LpS3Multipart *upload, uint32_t number,
											   const void *data, size_t len, LpError *err);
bool		lp_s3_multipart_add_part(LpS3Multipart *upload, uint32_t number, const char *etag,
									 LpError *err);

/* Room for a part's ETag, quotes and the terminating NUL included: a part's receipt. */
#define LP_S3_PART_ETAG_MAX LP_PART_RECEIPT_MAX

/*
 * UploadPartCopy of len (1..LP_S3_MAX_PART_SIZE) bytes of
 * source_bucket/source_key at offset as part number of the open upload
 * upload_id of bucket/key, by any process holding a client of the account:
 * the part's ETag into etag (etag_capacity bytes).  Stateless: a failure
 * aborts nothing, the upload's owner does.
 */
bool		lp_s3_copy_part(LpS3Client *client, const char *bucket, const char *key,
							const char *upload_id, uint32_t number,
							const char *source_bucket, const char *source_key,
							uint64_t offset, uint64_t len, char *etag, size_t etag_capacity,
							LpError *err);

/*
 * UploadPart of len (0..LP_S3_MAX_PART_SIZE) bytes of data as part number
 * of the open upload upload_id of bucket/key, by any process holding a
 * client of the account: the part's ETag into etag (etag_capacity bytes).
 * Stateless, as lp_s3_copy_part.
 */
bool		lp_s3_upload_part(LpS3Client *client, const char *bucket, const char *key,
							  const char *upload_id, uint32_t number, const void *data,
							  size_t len, char *etag, size_t etag_capacity, LpError *err);

/*
 * Complete the upload: the object appears with the parts' bytes in order.
 * With if_absent the request carries "If-None-Match: *", so a server that
 * supports conditional completion (AWS) refuses to replace an existing key
 * (LP_ERR_CONFLICT); Ceph RGW 16 ignores the header.  At least one part is
 * needed.
 */
bool		lp_s3_multipart_complete(LpS3Multipart *upload, bool if_absent, LpError *err);

/* Abort the upload unless it completed or was aborted already, and free it. */
void		lp_s3_multipart_end(LpS3Multipart *upload);

/* Called by lp_s3_multipart_list for each upload in progress. */
typedef bool (*LpS3UploadCallback) (void *arg, const LpS3Upload *upload, LpError *err);

/*
 * The multipart uploads in progress at keys starting with prefix
 * (ListMultipartUploads, every page), whoever started them: uploads of
 * other writers, and those whose id their writer never received, too.
 */
bool		lp_s3_multipart_list(LpS3Client *client, const char *bucket, const char *prefix,
								 LpS3UploadCallback callback, void *arg, LpError *err);

/*
 * Abort the upload of key with that id (AbortMultipartUpload); one already
 * gone (NoSuchUpload) is not an error.
 */
bool		lp_s3_multipart_abort(LpS3Client *client, const char *bucket, const char *key,
								  const char *upload_id, LpError *err);

/*
 * The bytes the parts of the upload of key with that id hold (ListParts,
 * every page; each part's size at most LP_S3_MAX_PART_SIZE); 0 for one
 * already gone (NoSuchUpload).
 */
bool		lp_s3_multipart_parts_size(LpS3Client *client, const char *bucket, const char *key,
									   const char *upload_id, uint64_t *bytes, LpError *err);

#endif							/* LP_S3_MULTIPART_H */
