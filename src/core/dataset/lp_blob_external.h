/*
 * lp_blob_external.h - where the payload of a Blob v2 External descriptor
 * (kind 3) lies: its blob_uri checked and classified, and its byte range.
 *
 * blob_id 0: blob_uri is absolute ("/path", "file:///path" or
 * "s3://bucket/key"); blob_id > 0: the id of a base path of the manifest,
 * blob_uri a path relative to it.  The range is [position, position + size),
 * size 0 meaning the whole object.  Every name comes from a file, so it is
 * checked before anyone opens it: no NUL byte, no empty, "." or ".."
 * segment, nothing but those three forms.
 */
#ifndef LP_BLOB_EXTERNAL_H
#define LP_BLOB_EXTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/lp_error.h"

typedef enum LpBlobExternalForm
{
	LP_BLOB_EXTERNAL_LOCAL,		/* an absolute path of the server's file system */
	LP_BLOB_EXTERNAL_S3,		/* an s3://bucket/key URI */
	LP_BLOB_EXTERNAL_RELATIVE	/* a path below the base path blob_id names */
} LpBlobExternalForm;

/*
 * Check the blob_uri (len bytes, not NUL-terminated) of an External
 * descriptor with blob_id, and give its form and *location (lp_alloc'd): the
 * absolute path of a local file ("file:///a%20b" percent-decoded to
 * "/a b"), the s3:// URI as given, or the relative path that the caller
 * joins to the base path of id blob_id.  LP_ERR_CORRUPT for a NUL byte, an
 * empty URI, an empty, "." or ".." segment, a relative path with blob_id 0,
 * an absolute one with blob_id > 0, a file URI with a host or a bad
 * percent escape; LP_ERR_UNSUPPORTED for another scheme (http://, gs://).
 */
bool		lp_blob_external_location(const char *blob_uri, size_t len, uint32_t blob_id,
									  LpBlobExternalForm *form, char **location,
									  LpError *err);

/*
 * The bytes of an External payload in its object of object_size bytes:
 * *offset = position and *length = size, or the whole object when size is 0
 * (position must then be 0).  LP_ERR_CORRUPT for a range beyond the
 * object's end or a position with size 0; name names the object.
 */
bool		lp_blob_external_range(uint64_t position, uint64_t size, uint64_t object_size,
								   const char *name, uint64_t *offset, uint64_t *length,
								   LpError *err);

#endif							/* LP_BLOB_EXTERNAL_H */
