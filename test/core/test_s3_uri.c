/*
 * test_s3_uri.c - the one parser of s3:// URIs: the object and root forms,
 * S3's bucket name rules, "." and ".." segments, credentials.
 */
#include <stdio.h>
#include <string.h>

#include "base/lp_alloc.h"
#include "io/lp_s3_uri.h"
#include "lp_test.h"

/* uri as form gives problem and, when valid, bucket and key */
static void
check_uri(const char *uri, LpS3UriForm form, LpS3UriProblem problem, const char *bucket,
		  const char *key)
{
	LpS3UriParts parts;
	LpS3UriProblem found = lp_s3_uri_check(uri, form, &parts);

	LP_CHECK_MSG(found == problem, "%s: problem %d, not %d (%s)", uri, (int) found, (int) problem,
				 parts.detail ? parts.detail : "");
	if (found == LP_S3_URI_VALID && problem == LP_S3_URI_VALID)
	{
		LP_CHECK_MSG(parts.bucket_len == strlen(bucket) && memcmp(parts.bucket, bucket, parts.bucket_len) == 0,
					 "%s: bucket \"%.*s\"", uri, (int) parts.bucket_len, parts.bucket);
		LP_CHECK_MSG(parts.key_len == strlen(key) && memcmp(parts.key, key, parts.key_len) == 0,
					 "%s: key \"%.*s\"", uri, (int) parts.key_len, parts.key);
	}
	if (found == LP_S3_URI_INVALID)
		LP_CHECK(parts.detail != NULL && parts.detail[0] != '\0');
}

LP_TEST(s3_uri_forms)
{
	check_uri("s3://lance-bucket/dir/file.lance", LP_S3_URI_OBJECT, LP_S3_URI_VALID, "lance-bucket", "dir/file.lance");
	check_uri("s3://lance-bucket", LP_S3_URI_OBJECT, LP_S3_URI_VALID, "lance-bucket", "");
	check_uri("s3://lance-bucket/", LP_S3_URI_OBJECT, LP_S3_URI_VALID, "lance-bucket", "");
	/* a directory: every trailing '/' dropped; empty segments inside, as S3 keys have them */
	check_uri("s3://lance-bucket/dir//", LP_S3_URI_OBJECT, LP_S3_URI_VALID, "lance-bucket", "dir");
	check_uri("s3://lance-bucket/a//b", LP_S3_URI_OBJECT, LP_S3_URI_VALID, "lance-bucket", "a//b");
	/* a root: one trailing '/', no empty segments */
	check_uri("s3://lance-bucket/prefix/", LP_S3_URI_ROOT, LP_S3_URI_VALID, "lance-bucket", "prefix");
	check_uri("s3://lance-bucket/prefix//", LP_S3_URI_ROOT, LP_S3_URI_INVALID, NULL, NULL);
	check_uri("s3://lance-bucket/a//b", LP_S3_URI_ROOT, LP_S3_URI_INVALID, NULL, NULL);
	check_uri("s3://lance-bucket/", LP_S3_URI_ROOT, LP_S3_URI_VALID, "lance-bucket", "");
}

LP_TEST(s3_uri_refusals)
{
	static const char *const invalid[] = {
		"s3:///key", "s3://b/key", "s3://Lance/key", "s3://-lance/key", "s3://lance-/key",
		"s3://la..nce/key", "s3://192.168.1.2/key", "s3://lance_bucket/key",
		"s3://lance-bucket/./key", "s3://lance-bucket/a/../b", "s3://lance-bucket/a/..",
		"s3://lance-bucket/..", "s3://lance-bucket/a/./",
	};
	char		long_uri[1200];

	for (size_t i = 0; i < sizeof(invalid) / sizeof(invalid[0]); i++)
	{
		check_uri(invalid[i], LP_S3_URI_OBJECT, LP_S3_URI_INVALID, NULL, NULL);
		check_uri(invalid[i], LP_S3_URI_ROOT, LP_S3_URI_INVALID, NULL, NULL);
	}
	check_uri("/local/path", LP_S3_URI_OBJECT, LP_S3_URI_NOT_S3, NULL, NULL);
	check_uri("S3://lance-bucket/key", LP_S3_URI_OBJECT, LP_S3_URI_NOT_S3, NULL, NULL);
	check_uri("s3://AKID:secret@lance-bucket/key", LP_S3_URI_OBJECT, LP_S3_URI_CREDENTIALS, NULL, NULL);
	check_uri("s3://secret@lance-bucket", LP_S3_URI_ROOT, LP_S3_URI_CREDENTIALS, NULL, NULL);
	/* an '@' in the key is a character of the key */
	check_uri("s3://lance-bucket/a@b", LP_S3_URI_OBJECT, LP_S3_URI_VALID, "lance-bucket", "a@b");

	snprintf(long_uri, sizeof(long_uri), "s3://lance-bucket/%01024d", 7);
	check_uri(long_uri, LP_S3_URI_OBJECT, LP_S3_URI_VALID, "lance-bucket", long_uri + 18);
	snprintf(long_uri, sizeof(long_uri), "s3://lance-bucket/%01025d", 7);
	check_uri(long_uri, LP_S3_URI_OBJECT, LP_S3_URI_INVALID, NULL, NULL);
}

LP_TEST(s3_uri_split)
{
	char	   *bucket;
	char	   *key;
	LpError		err;

	LP_CHECK(lp_s3_split_uri("s3://lance-bucket/dir/file.lance/", &bucket, &key, &err));
	LP_CHECK_STR(bucket, "lance-bucket");
	LP_CHECK_STR(key, "dir/file.lance");
	lp_free(bucket);
	lp_free(key);
	LP_CHECK(!lp_s3_split_uri("s3://lance-bucket/a/../b", &bucket, &key, &err) &&
			 err.code == LP_ERR_INVALID_ARGUMENT && bucket == NULL && key == NULL);
	LP_CHECK_MSG(strcmp(err.message, "invalid s3:// URI \"s3://lance-bucket/a/../b\": A key has no \".\" or \"..\" segments.") == 0,
				 "%.300s", err.message);
	LP_CHECK(!lp_s3_split_uri("s3://AKID:secret@lance-bucket/k", &bucket, &key, &err));
	LP_CHECK_MSG(strstr(err.message, "secret") == NULL, "%s", err.message);
	LP_CHECK(!lp_s3_split_uri("/local/path", &bucket, &key, &err) && err.code == LP_ERR_INVALID_ARGUMENT);
}
