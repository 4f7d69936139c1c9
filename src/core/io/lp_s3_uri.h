/*
 * lp_s3_uri.h - s3://bucket[/key] URIs: the one parser of them, used by the
 * S3 store for every path and by the server for URIs and roots.
 *
 * A valid URI is "s3://", a bucket name following S3's rules (3 to 63
 * lowercase letters, digits, dots and hyphens, beginning and ending with a
 * letter or digit, no two adjacent dots, not an IPv4 address; the name can
 * then be a DNS label of virtual-hosted-style requests), and optionally "/"
 * and a key of at most LP_S3_MAX_KEY_LEN (io/lp_s3_client.h) bytes without "." or ".." segments
 * (S3 takes them literally, HTTP clients and proxies may not, so a URI's
 * scope would depend on who reads it).  User information ("id:secret@")
 * before the bucket is refused on its own, so that a message about it need
 * not print the URI.
 */
#ifndef LP_S3_URI_H
#define LP_S3_URI_H

#include <stdbool.h>
#include <stddef.h>

#include "base/lp_error.h"

#define LP_S3_URI_SCHEME "s3://"
#define LP_S3_URI_SCHEME_LEN 5

typedef enum LpS3UriForm
{
	/* an object or a directory of objects: trailing '/' are dropped */
	LP_S3_URI_OBJECT,
	/* the root of a lance_fdw server: one trailing '/' dropped, no empty segments */
	LP_S3_URI_ROOT
} LpS3UriForm;

typedef enum LpS3UriProblem
{
	LP_S3_URI_VALID,
	LP_S3_URI_NOT_S3,			/* does not begin with "s3://" */
	LP_S3_URI_CREDENTIALS,		/* user information before the bucket */
	LP_S3_URI_INVALID			/* the bucket or the key breaks a rule */
} LpS3UriProblem;

/* Where the parts of a URI lie in it. */
typedef struct LpS3UriParts
{
	const char *bucket;
	size_t		bucket_len;
	const char *key;			/* "" for the bucket itself */
	size_t		key_len;		/* after the form's trimming */
	const char *detail;			/* LP_S3_URI_INVALID: the rule broken, a sentence */
} LpS3UriParts;

/* Check uri as form; the parts point into it (nothing allocated). */
LpS3UriProblem lp_s3_uri_check(const char *uri, LpS3UriForm form, LpS3UriParts *parts);

/*
 * Split a URI of the object form into lp_alloc'd bucket and key;
 * LP_ERR_INVALID_ARGUMENT naming the URI and the rule broken (never
 * printing a URI with credentials) when it is not valid.
 */
bool		lp_s3_split_uri(const char *uri, char **bucket, char **key, LpError *err);

#endif							/* LP_S3_URI_H */
