/*
 * lp_blob_external.c - where the payload of a Blob v2 External descriptor
 * lies: blob_uri checked and classified, and the payload's byte range.
 */
#include <inttypes.h>
#include <string.h>

#include "base/lp_alloc.h"
#include "base/lp_path.h"
#include "dataset/lp_blob_external.h"

#define FILE_SCHEME "file://"
#define S3_SCHEME "s3://"

static bool
has_prefix(const char *text, size_t len, const char *prefix)
{
	size_t		n = strlen(prefix);

	return len >= n && memcmp(text, prefix, n) == 0;
}

/* Whether text[0..len) starts with "<letters, digits, + - .>:" (a URI scheme) */
static bool
has_scheme(const char *text, size_t len)
{
	for (size_t i = 0; i < len; i++)
	{
		char		c = text[i];

		if (c == ':')
			return i > 0;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			  (i > 0 && ((c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.'))))
			return false;
	}
	return false;
}

/* Every '/'-separated segment of path is a name: not empty, ".", or ".." */
static bool
plain_segments(const char *path)
{
	const char *segment = path;

	for (;;)
	{
		const char *end = strchr(segment, '/');
		size_t		n = end ? (size_t) (end - segment) : strlen(segment);

		if (n == 0 || (n == 1 && segment[0] == '.') ||
			(n == 2 && segment[0] == '.' && segment[1] == '.'))
			return false;
		if (end == NULL)
			return true;
		segment = end + 1;
	}
}

bool
lp_blob_external_location(const char *blob_uri, size_t len, uint32_t blob_id,
						  LpBlobExternalForm *form, char **location, LpError *err)
{
	char	   *path;
	const char *checked;
	bool		bad = false;

	*location = NULL;
	if (len == 0)
		return lp_fail(err, LP_ERR_CORRUPT, "external blob URI is empty");
	if (memchr(blob_uri, '\0', len) != NULL)
		return lp_fail(err, LP_ERR_CORRUPT, "external blob URI holds a NUL byte");
	if (blob_id > 0)
	{
		if (blob_uri[0] == '/' || has_scheme(blob_uri, len))
			return lp_fail(err, LP_ERR_CORRUPT,
						   "external blob URI \"%.*s\" of base %" PRIu32 " is not a relative path",
						   (int) len, blob_uri, blob_id);
		*form = LP_BLOB_EXTERNAL_RELATIVE;
		path = lp_alloc(len + 1);
		if (path != NULL)
		{
			memcpy(path, blob_uri, len);
			path[len] = '\0';
		}
		checked = path;
	}
	else if (has_prefix(blob_uri, len, FILE_SCHEME))
	{
		const char *rest = blob_uri + strlen(FILE_SCHEME);
		size_t		rest_len = len - strlen(FILE_SCHEME);

		/* file:///path: an empty host; a host names another machine */
		if (rest_len == 0 || rest[0] != '/')
			return lp_fail(err, LP_ERR_CORRUPT,
						   "external blob URI \"%.*s\" is not a file URI of this machine (file:///path)",
						   (int) len, blob_uri);
		*form = LP_BLOB_EXTERNAL_LOCAL;
		path = lp_percent_decoded(rest, rest_len, &bad);
		checked = path == NULL ? NULL : path + 1;
	}
	else if (has_prefix(blob_uri, len, S3_SCHEME))
	{
		*form = LP_BLOB_EXTERNAL_S3;
		path = lp_alloc(len + 1);
		if (path != NULL)
		{
			memcpy(path, blob_uri, len);
			path[len] = '\0';
		}
		checked = path == NULL ? NULL : path + strlen(S3_SCHEME);
	}
	else if (blob_uri[0] == '/')
	{
		*form = LP_BLOB_EXTERNAL_LOCAL;
		path = lp_alloc(len + 1);
		if (path != NULL)
		{
			memcpy(path, blob_uri, len);
			path[len] = '\0';
		}
		checked = path == NULL ? NULL : path + 1;
	}
	else if (has_scheme(blob_uri, len))
		return lp_fail(err, LP_ERR_UNSUPPORTED,
					   "external blob URI \"%.*s\" has a scheme other than file:// and s3://",
					   (int) len, blob_uri);
	else
		return lp_fail(err, LP_ERR_CORRUPT,
					   "external blob URI \"%.*s\" is relative, but names no base path (blob_id 0)",
					   (int) len, blob_uri);
	if (bad)
		return lp_fail(err, LP_ERR_CORRUPT,
					   "external blob URI \"%.*s\" has a bad percent escape", (int) len, blob_uri);
	if (path == NULL)
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory for an external blob URI");
	if (!plain_segments(checked))
	{
		lp_free(path);
		return lp_fail(err, LP_ERR_CORRUPT,
					   "external blob URI \"%.*s\" has an empty, \".\" or \"..\" segment",
					   (int) len, blob_uri);
	}
	*location = path;
	return true;
}

bool
lp_blob_external_range(uint64_t position, uint64_t size, uint64_t object_size,
					   const char *name, uint64_t *offset, uint64_t *length, LpError *err)
{
	if (size == 0)
	{
		if (position != 0)
			return lp_fail(err, LP_ERR_CORRUPT,
						   "external blob of \"%s\" has size 0 (the whole object) but position %" PRIu64,
						   name, position);
		*offset = 0;
		*length = object_size;
		return true;
	}
	if (position > object_size || size > object_size - position)
		return lp_fail(err, LP_ERR_CORRUPT,
					   "external blob range of %" PRIu64 " bytes at %" PRIu64 " is beyond the end of \"%s\" (%" PRIu64 " bytes)",
					   size, position, name, object_size);
	*offset = position;
	*length = size;
	return true;
}
