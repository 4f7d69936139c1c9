/*
 * lp_s3_uri.c - the parser of s3:// URIs (see lp_s3_uri.h for the rules).
 */
#include <string.h>

#include "base/lp_alloc.h"
#include "io/lp_s3_client.h"
#include "io/lp_s3_uri.h"

#define BUCKET_MIN 3
#define BUCKET_MAX 63

static bool
is_lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* Four dot-separated decimal numbers: S3 refuses such bucket names. */
static bool
looks_like_ipv4(const char *name, size_t len)
{
	int			dots = 0;

	for (size_t i = 0; i < len; i++)
	{
		if (name[i] == '.')
			dots++;
		else if (name[i] < '0' || name[i] > '9')
			return false;
	}
	return dots == 3;
}

/* The rule a bucket name breaks, or NULL. */
static const char *
bucket_name_problem(const char *name, size_t len)
{
	if (len < BUCKET_MIN || len > BUCKET_MAX)
		return "A bucket name has 3 to 63 characters.";
	for (size_t i = 0; i < len; i++)
		if (!is_lower_alnum(name[i]) && name[i] != '.' && name[i] != '-')
			return "A bucket name consists of lowercase letters, digits, dots and hyphens.";
	if (!is_lower_alnum(name[0]) || !is_lower_alnum(name[len - 1]))
		return "A bucket name begins and ends with a letter or digit.";
	for (size_t i = 0; i + 1 < len; i++)
		if (name[i] == '.' && name[i + 1] == '.')
			return "A bucket name has no two adjacent dots.";
	if (looks_like_ipv4(name, len))
		return "A bucket name is not an IP address.";
	return NULL;
}

/* The rule a key breaks, or NULL. */
static const char *
key_problem(const char *key, size_t key_len, LpS3UriForm form)
{
	if (key_len > LP_S3_MAX_KEY_LEN)
		return "An S3 key has at most 1024 bytes.";
	for (const char *segment = key; key_len > 0;)
	{
		const char *end = memchr(segment, '/', (size_t) (key + key_len - segment));
		size_t		len = (size_t) ((end ? end : key + key_len) - segment);

		if ((len == 1 && segment[0] == '.') || (len == 2 && segment[0] == '.' && segment[1] == '.'))
			return "A key has no \".\" or \"..\" segments.";
		if (form == LP_S3_URI_ROOT && len == 0)
			return "The prefix of a root has no empty segments.";
		if (end == NULL)
			break;
		segment = end + 1;
	}
	return NULL;
}

LpS3UriProblem
lp_s3_uri_check(const char *uri, LpS3UriForm form, LpS3UriParts *parts)
{
	const char *authority = uri + LP_S3_URI_SCHEME_LEN;
	const char *at;
	const char *slash;

	memset(parts, 0, sizeof(*parts));
	if (strncmp(uri, LP_S3_URI_SCHEME, LP_S3_URI_SCHEME_LEN) != 0)
		return LP_S3_URI_NOT_S3;
	/* '@' before the path would be user information: credentials */
	at = strchr(authority, '@');
	if (at != NULL && at < authority + strcspn(authority, "/?#"))
		return LP_S3_URI_CREDENTIALS;
	slash = strchr(authority, '/');
	parts->bucket = authority;
	parts->bucket_len = slash ? (size_t) (slash - authority) : strlen(authority);
	parts->key = slash ? slash + 1 : "";
	parts->key_len = strlen(parts->key);
	if (form == LP_S3_URI_ROOT && parts->key_len > 1 && parts->key[parts->key_len - 1] == '/')
		parts->key_len--;
	else if (form == LP_S3_URI_OBJECT)
		while (parts->key_len > 0 && parts->key[parts->key_len - 1] == '/')
			parts->key_len--;
	parts->detail = bucket_name_problem(parts->bucket, parts->bucket_len);
	if (parts->detail == NULL)
		parts->detail = key_problem(parts->key, parts->key_len, form);
	return parts->detail ? LP_S3_URI_INVALID : LP_S3_URI_VALID;
}

bool
lp_s3_split_uri(const char *uri, char **bucket, char **key, LpError *err)
{
	LpS3UriParts parts;

	*bucket = NULL;
	*key = NULL;
	switch (lp_s3_uri_check(uri, LP_S3_URI_OBJECT, &parts))
	{
		case LP_S3_URI_VALID:
			break;
		case LP_S3_URI_NOT_S3:
			return lp_fail(err, LP_ERR_INVALID_ARGUMENT, "\"%s\" is not an s3:// URI", uri);
		case LP_S3_URI_CREDENTIALS:
			return lp_fail(err, LP_ERR_INVALID_ARGUMENT, "an s3:// URI must not contain credentials");
		case LP_S3_URI_INVALID:
			return lp_fail(err, LP_ERR_INVALID_ARGUMENT, "invalid s3:// URI \"%s\": %s", uri, parts.detail);
	}
	*bucket = lp_memdup(parts.bucket, parts.bucket_len + 1);
	*key = lp_memdup(parts.key, parts.key_len + 1);
	if (*bucket == NULL || *key == NULL)
	{
		lp_free(*bucket);
		lp_free(*key);
		*bucket = *key = NULL;
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory for an S3 URI");
	}
	(*bucket)[parts.bucket_len] = '\0';
	(*key)[parts.key_len] = '\0';
	return true;
}
