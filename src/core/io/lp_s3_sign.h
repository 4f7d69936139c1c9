/*
 * lp_s3_sign.h - AWS Signature Version 4 for S3 requests.
 *
 * Requests are signed here, not by libcurl: Debian 12's libcurl (7.88) signs
 * query strings, paths and ranged UploadPartCopy requests wrongly.  The caller
 * describes the request it will send, less the headers the signer adds; the
 * result holds those headers and the encoded path and query to send, which
 * are the ones that were signed.  HMAC-SHA256 and SHA-256 come from OpenSSL's
 * libcrypto.  The secret and the session token never appear in an LpError.
 */
#ifndef LP_S3_SIGN_H
#define LP_S3_SIGN_H

#include <stdbool.h>
#include <stddef.h>

#include "base/lp_error.h"

#define LP_S3_SHA256_HEX_LEN 64
/* the payload hash of a body that is not hashed (S3 allows it over TLS) */
#define LP_S3_UNSIGNED_PAYLOAD "UNSIGNED-PAYLOAD"
/* longest region or service name accepted in a credential scope */
#define LP_S3_SCOPE_NAME_MAX 63
/* x-amz-date, x-amz-content-sha256, x-amz-security-token, Authorization */
#define LP_S3_SIGNER_HEADERS_MAX 4

typedef struct LpS3Pair
{
	const char *name;
	const char *value;
} LpS3Pair;

typedef struct LpS3Credentials
{
	const char *access_key_id;
	const char *secret_access_key;
	const char *session_token;	/* NULL or "" without one; else sent and signed
								 * as x-amz-security-token */
} LpS3Credentials;

typedef struct LpS3Request
{
	const char *method;			/* "GET", "PUT", "POST", "DELETE", "HEAD" */
	/*
	 * The path as the store forms it ("/bucket/key" path-style, "/key"
	 * virtual-host-style), not encoded: each '/'-separated segment is
	 * URI-encoded once; "." and ".." segments and empty ones stay, as S3
	 * names keys byte for byte.
	 */
	const char *path;
	/* names and values not encoded; a NULL value for "?uploads" and the like */
	const LpS3Pair *query;
	size_t		query_count;
	/*
	 * Every header here is signed and must be sent as given; "host" is
	 * required.  The signer's own headers (x-amz-date, x-amz-content-sha256,
	 * x-amz-security-token, authorization) must not be among them.
	 */
	const LpS3Pair *headers;
	size_t		header_count;
	/* lp_s3_sha256_hex of the body, or LP_S3_UNSIGNED_PAYLOAD */
	const char *payload_hash;
	const char *region;
	const char *service;		/* "s3" */
	const char *request_time;	/* UTC, "YYYYMMDD'T'HHMMSS'Z'" */
	/*
	 * Only for services other than S3 (the AWS signing test suite's generic
	 * vectors): the payload hash is signed but no x-amz-content-sha256 header
	 * is sent or signed.  S3 requires that header, so S3 requests leave this
	 * false.
	 */
	bool		omit_content_sha256;
} LpS3Request;

/*
 * The signing key of one (secret, date, region, service), kept by the caller
 * between requests: deriving it takes four HMACs.  Zero-initialize it; clear
 * it with lp_s3_signing_key_cache_clear when done, since it holds a key.
 */
typedef struct LpS3SigningKeyCache
{
	bool		valid;
	char		date[9];
	char		region[LP_S3_SCOPE_NAME_MAX + 1];
	char		service[LP_S3_SCOPE_NAME_MAX + 1];
	unsigned char secret_digest[32];	/* SHA-256 of the secret: a rotated
										 * secret derives a new key */
	unsigned char key[32];
} LpS3SigningKeyCache;

typedef struct LpS3Signed
{
	/*
	 * Headers to add to the request: names are literals, values point into
	 * this struct.
	 */
	LpS3Pair	headers[LP_S3_SIGNER_HEADERS_MAX];
	size_t		header_count;
	char	   *url_path;		/* the path to send (the canonical URI) */
	/*
	 * The query to send without its '?', "" for none: the canonical query
	 * string, except that valueless parameters are sent without '=' as the
	 * AWS SDKs send them ("uploads", signed as "uploads=").
	 */
	char	   *url_query;
	/*
	 * For tests and diagnostics.  Both hold the session token, if any, and
	 * must not be logged.
	 */
	char	   *canonical_request;
	char	   *string_to_sign;
	char	   *authorization;
	char	   *security_token;
	char		signature[LP_S3_SHA256_HEX_LEN + 1];
	char		amz_date[17];
	char		content_sha256[LP_S3_SHA256_HEX_LEN + 1];
} LpS3Signed;

/*
 * Sign a request.  cache may be NULL (the key is then derived every time).
 * On success *result owns lp_alloc'd strings: free them with
 * lp_s3_signed_free.  On failure *result holds nothing to free.
 */
bool		lp_s3_sign(const LpS3Request *request, const LpS3Credentials *credentials,
					   LpS3SigningKeyCache *cache, LpS3Signed *result, LpError *err);

void		lp_s3_signed_free(LpS3Signed *result);

void		lp_s3_signing_key_cache_clear(LpS3SigningKeyCache *cache);

/* The lowercase hex SHA-256 of len bytes (a payload hash). */
bool		lp_s3_sha256_hex(const void *data, size_t len,
							 char hex[LP_S3_SHA256_HEX_LEN + 1], LpError *err);

/*
 * A path URI-encoded as the signer encodes it (RFC 3986 unreserved bytes and
 * '/' kept, every other byte %XX): the form of x-amz-copy-source.  NULL when
 * out of memory (lp_alloc'd).
 */
char	   *lp_s3_encode_path(const char *path);

#endif							/* LP_S3_SIGN_H */
