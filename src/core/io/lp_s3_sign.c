/*
 * lp_s3_sign.c - AWS Signature Version 4 for S3 requests.
 *
 * The canonical request follows the SigV4 rules as S3 applies them: the path
 * encoded once per segment and never normalized, the query sorted by encoded
 * name then value with '=' always present, header names lowercased and
 * sorted by name alone (so x-amz-copy-source comes before
 * x-amz-copy-source-range), values trimmed with inner runs of blanks
 * collapsed, repeated names joined with commas in the order given.
 *
 * OpenSSL allocates its own small working memory inside HMAC() and
 * EVP_Digest(); everything this file keeps goes through lp_alloc.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "base/lp_alloc.h"
#include "io/lp_s3_sign.h"

#define SIGV4_ALGORITHM "AWS4-HMAC-SHA256"
#define SHA256_LEN 32
#define METHOD_MAX 32
#define HEADER_NAME_MAX 256
#define ACCESS_KEY_ID_MAX 128
/* keeps the "AWS4" + secret key within HMAC()'s int key length */
#define SECRET_MAX 1024
#define SESSION_TOKEN_MAX 16384

/* a growing NUL-terminated string; after a failed allocation it stays failed */
typedef struct SignText
{
	char	   *data;
	size_t		len;
	size_t		cap;
	bool		failed;
} SignText;

typedef struct QueryParam
{
	char	   *name;			/* encoded */
	char	   *value;			/* encoded, "" when valueless */
	bool		valueless;
	size_t		position;		/* in the request, for a deterministic sort */
} QueryParam;

typedef struct CanonicalHeader
{
	char	   *name;			/* lowercased */
	const char *value;			/* as given; trimmed when written */
	size_t		position;		/* repeated names keep the order given */
} CanonicalHeader;

static const char *const signer_header_names[] = {
	"x-amz-date", "x-amz-content-sha256", "x-amz-security-token", "authorization"
};

static void
text_reserve(SignText *text, size_t extra)
{
	size_t		need;
	size_t		cap;
	char	   *grown;

	if (text->failed)
		return;
	if (__builtin_add_overflow(text->len, extra, &need) ||
		__builtin_add_overflow(need, 1, &need))
	{
		text->failed = true;
		return;
	}
	if (need <= text->cap)
		return;
	cap = text->cap < 128 ? 128 : text->cap;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	grown = lp_alloc(cap);
	if (grown == NULL)
	{
		text->failed = true;
		return;
	}
	if (text->len > 0)
		memcpy(grown, text->data, text->len);
	grown[text->len] = '\0';
	lp_free(text->data);
	text->data = grown;
	text->cap = cap;
}

static void
text_append(SignText *text, const char *bytes, size_t len)
{
	text_reserve(text, len);
	if (text->failed)
		return;
	memcpy(text->data + text->len, bytes, len);
	text->len += len;
	text->data[text->len] = '\0';
}

static void
text_append_str(SignText *text, const char *s)
{
	text_append(text, s, strlen(s));
}

static void
text_append_char(SignText *text, char c)
{
	text_append(text, &c, 1);
}

/* The string built, or NULL (and nothing left to free) if an allocation failed. */
static char *
text_take(SignText *text)
{
	text_reserve(text, 0);
	if (text->failed)
	{
		lp_free(text->data);
		text->data = NULL;
		return NULL;
	}
	return text->data;
}

static bool
is_unreserved(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		c == '-' || c == '.' || c == '_' || c == '~';
}

/* RFC 3986 percent-encoding with uppercase hex, as SigV4 prescribes */
static void
text_append_encoded(SignText *text, const char *s, bool keep_slash)
{
	static const char hex[] = "0123456789ABCDEF";

	for (const unsigned char *p = (const unsigned char *) s; *p != '\0'; p++)
	{
		if (is_unreserved(*p) || (keep_slash && *p == '/'))
			text_append_char(text, (char) *p);
		else
		{
			char		escape[3] = {'%', hex[*p >> 4], hex[*p & 0x0f]};

			text_append(text, escape, sizeof(escape));
		}
	}
}

static char *
encode(const char *s, bool keep_slash)
{
	SignText	text = {0};

	text_append_encoded(&text, s, keep_slash);
	return text_take(&text);
}

char *
lp_s3_encode_path(const char *path)
{
	return encode(path, true);
}

static void
append_hex(SignText *text, const unsigned char *bytes, size_t len)
{
	static const char hex[] = "0123456789abcdef";

	for (size_t i = 0; i < len; i++)
	{
		char		pair[2] = {hex[bytes[i] >> 4], hex[bytes[i] & 0x0f]};

		text_append(text, pair, sizeof(pair));
	}
}

static void
hex_into(const unsigned char *bytes, size_t len, char *out)
{
	static const char hex[] = "0123456789abcdef";

	for (size_t i = 0; i < len; i++)
	{
		out[2 * i] = hex[bytes[i] >> 4];
		out[2 * i + 1] = hex[bytes[i] & 0x0f];
	}
	out[2 * len] = '\0';
}

static bool
sha256(const void *data, size_t len, unsigned char digest[SHA256_LEN], LpError *err)
{
	unsigned int digest_len = 0;

	if (EVP_Digest(data, len, digest, &digest_len, EVP_sha256(), NULL) != 1 ||
		digest_len != SHA256_LEN)
		return lp_fail(err, LP_ERR_INTERNAL, "OpenSSL could not compute a SHA-256 digest");
	return true;
}

static bool
hmac_sha256(const void *key, size_t key_len, const char *data,
			unsigned char mac[SHA256_LEN], LpError *err)
{
	unsigned int mac_len = 0;

	if (HMAC(EVP_sha256(), key, (int) key_len, (const unsigned char *) data, strlen(data),
			 mac, &mac_len) == NULL || mac_len != SHA256_LEN)
		return lp_fail(err, LP_ERR_INTERNAL, "OpenSSL could not compute an HMAC-SHA256");
	return true;
}

bool
lp_s3_sha256_hex(const void *data, size_t len, char hex[LP_S3_SHA256_HEX_LEN + 1],
				 LpError *err)
{
	unsigned char digest[SHA256_LEN];

	if (!sha256(data, len, digest, err))
		return false;
	hex_into(digest, SHA256_LEN, hex);
	return true;
}

/* ---- checks of the request ------------------------------------------------ */

/* RFC 9110 token characters: header names and methods */
static bool
is_token(const char *s, size_t max_len)
{
	static const char extra[] = "!#$%&'*+-.^_`|~";
	size_t		len = 0;

	for (const unsigned char *p = (const unsigned char *) s; *p != '\0'; p++, len++)
	{
		bool		alnum = (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
			(*p >= '0' && *p <= '9');

		if (!alnum && strchr(extra, *p) == NULL)
			return false;
	}
	return len > 0 && len <= max_len;
}

/* no CR, LF or other control byte but tab: nothing that could end a header line */
static bool
is_header_value(const char *s)
{
	for (const unsigned char *p = (const unsigned char *) s; *p != '\0'; p++)
	{
		if ((*p < 0x20 && *p != '\t') || *p == 0x7f)
			return false;
	}
	return true;
}

/*
 * A part of "Credential=<access key id>/<date>/<region>/<service>/aws4_request":
 * visible ASCII without the separators of that header.
 */
static bool
is_scope_name(const char *s, size_t max_len)
{
	size_t		len = 0;

	for (const unsigned char *p = (const unsigned char *) s; *p != '\0'; p++, len++)
	{
		if (*p <= 0x20 || *p >= 0x7f || strchr("/,;=\"\\", *p) != NULL)
			return false;
	}
	return len > 0 && len <= max_len;
}

static bool
is_request_time(const char *s)
{
	if (strlen(s) != 16 || s[8] != 'T' || s[15] != 'Z')
		return false;
	for (int i = 0; i < 15; i++)
	{
		if (i != 8 && (s[i] < '0' || s[i] > '9'))
			return false;
	}
	return true;
}

static bool
is_payload_hash(const char *s)
{
	if (strcmp(s, LP_S3_UNSIGNED_PAYLOAD) == 0)
		return true;
	if (strlen(s) != LP_S3_SHA256_HEX_LEN)
		return false;
	for (const char *p = s; *p != '\0'; p++)
	{
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return false;
	}
	return true;
}

static bool
has_session_token(const LpS3Credentials *credentials)
{
	return credentials->session_token != NULL && credentials->session_token[0] != '\0';
}

/* Messages name what is wrong, never the secret or the token themselves. */
static bool
check_credentials(const LpS3Credentials *credentials, LpError *err)
{
	size_t		secret_len;

	if (credentials->access_key_id == NULL ||
		!is_scope_name(credentials->access_key_id, ACCESS_KEY_ID_MAX))
	{
		lp_fail(err, LP_ERR_INVALID_ARGUMENT, "invalid S3 access key id");
		lp_error_detail(err, "An access key id is 1 to %d visible ASCII characters other than / , ; = \" and \\.",
						ACCESS_KEY_ID_MAX);
		return false;
	}
	secret_len = credentials->secret_access_key == NULL ? 0 :
		strlen(credentials->secret_access_key);
	if (secret_len == 0 || secret_len > SECRET_MAX)
	{
		lp_fail(err, LP_ERR_INVALID_ARGUMENT, "invalid S3 secret access key");
		lp_error_detail(err, "A secret access key is 1 to %d bytes long.", SECRET_MAX);
		return false;
	}
	if (has_session_token(credentials) &&
		(!is_header_value(credentials->session_token) ||
		 strlen(credentials->session_token) > SESSION_TOKEN_MAX))
	{
		lp_fail(err, LP_ERR_INVALID_ARGUMENT, "invalid S3 session token");
		lp_error_detail(err, "A session token is at most %d bytes without control characters.",
						SESSION_TOKEN_MAX);
		return false;
	}
	return true;
}

static bool
check_request(const LpS3Request *request, LpError *err)
{
	bool		has_host = false;

	if (request->method == NULL || !is_token(request->method, METHOD_MAX))
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT, "invalid S3 request method");
	if (request->path == NULL || request->path[0] != '/')
	{
		lp_fail(err, LP_ERR_INVALID_ARGUMENT, "invalid S3 request path");
		lp_error_detail(err, "The path of a request starts with \"/\".");
		return false;
	}
	for (size_t i = 0; i < request->query_count; i++)
	{
		if (request->query[i].name == NULL || request->query[i].name[0] == '\0')
			return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
						   "S3 query parameter %zu has no name", i + 1);
	}
	for (size_t i = 0; i < request->header_count; i++)
	{
		const char *name = request->headers[i].name;

		if (name == NULL || !is_token(name, HEADER_NAME_MAX))
			return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
						   "S3 request header %zu has an invalid name", i + 1);
		for (size_t s = 0; s < sizeof(signer_header_names) / sizeof(signer_header_names[0]); s++)
		{
			if (strcasecmp(name, signer_header_names[s]) == 0)
			{
				lp_fail(err, LP_ERR_INVALID_ARGUMENT,
						"S3 request header \"%s\" is one the signer adds", name);
				lp_error_detail(err, "x-amz-date, x-amz-content-sha256, x-amz-security-token and authorization come from the signer.");
				return false;
			}
		}
		/* the value is not named: it may be a key (SSE-C) */
		if (request->headers[i].value == NULL || !is_header_value(request->headers[i].value))
			return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
						   "S3 request header \"%s\" has a control character in its value", name);
		if (strcasecmp(name, "host") == 0 && request->headers[i].value[0] != '\0')
			has_host = true;
	}
	if (!has_host)
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT, "S3 request has no \"host\" header");
	if (request->payload_hash == NULL || !is_payload_hash(request->payload_hash))
	{
		lp_fail(err, LP_ERR_INVALID_ARGUMENT, "invalid S3 payload hash");
		lp_error_detail(err, "A payload hash is 64 lowercase hexadecimal digits or %s.",
						LP_S3_UNSIGNED_PAYLOAD);
		return false;
	}
	if (request->region == NULL || !is_scope_name(request->region, LP_S3_SCOPE_NAME_MAX) ||
		request->service == NULL || !is_scope_name(request->service, LP_S3_SCOPE_NAME_MAX))
	{
		lp_fail(err, LP_ERR_INVALID_ARGUMENT, "invalid S3 region or service name");
		lp_error_detail(err, "A region or service name is 1 to %d visible ASCII characters other than / , ; = \" and \\.",
						LP_S3_SCOPE_NAME_MAX);
		return false;
	}
	if (request->request_time == NULL || !is_request_time(request->request_time))
	{
		lp_fail(err, LP_ERR_INVALID_ARGUMENT, "invalid S3 request time");
		lp_error_detail(err, "The time of a request is UTC in the form YYYYMMDD'T'HHMMSS'Z', such as 20130524T000000Z.");
		return false;
	}
	return true;
}

/* ---- canonical query and headers ---------------------------------------- */

static int
compare_params(const void *a, const void *b)
{
	const QueryParam *x = a;
	const QueryParam *y = b;
	int			order = strcmp(x->name, y->name);

	if (order == 0)
		order = strcmp(x->value, y->value);
	if (order == 0)
		order = x->position < y->position ? -1 : x->position > y->position;
	return order;
}

/*
 * The canonical query string, and the query to send (the same but for
 * valueless parameters, sent without '=').  False only when out of memory.
 */
static bool
build_query(const LpS3Request *request, char **canonical, char **sent)
{
	size_t		count = request->query_count;
	QueryParam *params = lp_alloc_array(count, sizeof(QueryParam));
	SignText	canonical_text = {0};
	SignText	sent_text = {0};
	size_t		made = 0;
	bool		ok = params != NULL;

	for (; ok && made < count; made++)
	{
		const char *value = request->query[made].value;

		params[made].position = made;
		params[made].valueless = value == NULL;
		params[made].name = encode(request->query[made].name, false);
		params[made].value = encode(value == NULL ? "" : value, false);
		if (params[made].name == NULL || params[made].value == NULL)
			ok = false;
	}
	if (ok)
		qsort(params, count, sizeof(QueryParam), compare_params);
	for (size_t i = 0; ok && i < count; i++)
	{
		if (i > 0)
		{
			text_append_char(&canonical_text, '&');
			text_append_char(&sent_text, '&');
		}
		text_append_str(&canonical_text, params[i].name);
		text_append_char(&canonical_text, '=');
		text_append_str(&canonical_text, params[i].value);
		text_append_str(&sent_text, params[i].name);
		if (!params[i].valueless)
		{
			text_append_char(&sent_text, '=');
			text_append_str(&sent_text, params[i].value);
		}
	}
	for (size_t i = 0; params != NULL && i < made; i++)
	{
		lp_free(params[i].name);
		lp_free(params[i].value);
	}
	lp_free(params);
	if (!ok)
	{
		lp_free(canonical_text.data);
		lp_free(sent_text.data);
		return false;
	}
	*canonical = text_take(&canonical_text);
	*sent = text_take(&sent_text);
	if (*canonical == NULL || *sent == NULL)
	{
		lp_free(*canonical);
		lp_free(*sent);
		*canonical = *sent = NULL;
		return false;
	}
	return true;
}

static int
compare_headers(const void *a, const void *b)
{
	const CanonicalHeader *x = a;
	const CanonicalHeader *y = b;
	int			order = strcmp(x->name, y->name);

	if (order == 0)
		order = x->position < y->position ? -1 : x->position > y->position;
	return order;
}

static char *
lowercase_copy(const char *s)
{
	char	   *copy = lp_strdup(s);

	for (char *p = copy; p != NULL && *p != '\0'; p++)
	{
		if (*p >= 'A' && *p <= 'Z')
			*p = (char) (*p - 'A' + 'a');
	}
	return copy;
}

static bool
is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/* a value trimmed, with every inner run of blanks written as one space */
static void
append_trimmed(SignText *text, const char *value)
{
	const char *end = value + strlen(value);

	while (value < end && is_blank(*value))
		value++;
	while (end > value && is_blank(end[-1]))
		end--;
	while (value < end)
	{
		if (is_blank(*value))
		{
			text_append_char(text, ' ');
			while (is_blank(*value))
				value++;
		}
		else
			text_append_char(text, *value++);
	}
}

/*
 * The canonical header block ("name:value\n" per name) and the signed header
 * list of the caller's headers and the signer's own (given as extra).  False
 * only when out of memory.
 */
static bool
build_headers(const LpS3Request *request, const LpS3Pair *extra, size_t extra_count,
			  char **block, char **signed_names)
{
	size_t		count = request->header_count + extra_count;
	CanonicalHeader *headers = lp_alloc_array(count, sizeof(CanonicalHeader));
	SignText	block_text = {0};
	SignText	names_text = {0};
	size_t		made = 0;
	bool		ok = headers != NULL;

	for (; ok && made < count; made++)
	{
		const LpS3Pair *pair = made < request->header_count ? &request->headers[made] :
			&extra[made - request->header_count];

		headers[made].name = lowercase_copy(pair->name);
		headers[made].value = pair->value;
		headers[made].position = made;
		if (headers[made].name == NULL)
			ok = false;
	}
	if (ok)
		qsort(headers, count, sizeof(CanonicalHeader), compare_headers);
	for (size_t i = 0; ok && i < count; i++)
	{
		bool		repeated = i > 0 && strcmp(headers[i].name, headers[i - 1].name) == 0;

		if (repeated)
			text_append_char(&block_text, ',');
		else
		{
			if (i > 0)
			{
				text_append_char(&block_text, '\n');
				text_append_char(&names_text, ';');
			}
			text_append_str(&block_text, headers[i].name);
			text_append_char(&block_text, ':');
			text_append_str(&names_text, headers[i].name);
		}
		append_trimmed(&block_text, headers[i].value);
	}
	if (ok)
		text_append_char(&block_text, '\n');
	for (size_t i = 0; headers != NULL && i < made; i++)
		lp_free(headers[i].name);
	lp_free(headers);
	if (!ok)
	{
		lp_free(block_text.data);
		lp_free(names_text.data);
		return false;
	}
	*block = text_take(&block_text);
	*signed_names = text_take(&names_text);
	if (*block == NULL || *signed_names == NULL)
	{
		lp_free(*block);
		lp_free(*signed_names);
		*block = *signed_names = NULL;
		return false;
	}
	return true;
}

/* ---- the signing key ------------------------------------------------------ */

static bool
derive_signing_key(const char *secret, const char *date, const char *region,
				   const char *service, unsigned char key[SHA256_LEN], LpError *err)
{
	size_t		secret_len = strlen(secret);
	size_t		seed_len = secret_len + 4;
	unsigned char *seed = lp_alloc(seed_len);
	unsigned char step[SHA256_LEN];
	bool		ok;

	if (seed == NULL)
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory while signing an S3 request");
	memcpy(seed, "AWS4", 4);
	memcpy(seed + 4, secret, secret_len);
	ok = hmac_sha256(seed, seed_len, date, step, err) &&
		hmac_sha256(step, SHA256_LEN, region, step, err) &&
		hmac_sha256(step, SHA256_LEN, service, step, err) &&
		hmac_sha256(step, SHA256_LEN, "aws4_request", key, err);
	OPENSSL_cleanse(seed, seed_len);
	OPENSSL_cleanse(step, sizeof(step));
	lp_free(seed);
	return ok;
}

static bool
signing_key(const LpS3Credentials *credentials, const char *date, const char *region,
			const char *service, LpS3SigningKeyCache *cache,
			unsigned char key[SHA256_LEN], LpError *err)
{
	const char *secret = credentials->secret_access_key;
	unsigned char secret_digest[SHA256_LEN];

	if (cache == NULL)
		return derive_signing_key(secret, date, region, service, key, err);
	if (!sha256(secret, strlen(secret), secret_digest, err))
		return false;
	if (cache->valid && strcmp(cache->date, date) == 0 && strcmp(cache->region, region) == 0 &&
		strcmp(cache->service, service) == 0 &&
		CRYPTO_memcmp(cache->secret_digest, secret_digest, SHA256_LEN) == 0)
	{
		memcpy(key, cache->key, SHA256_LEN);
		OPENSSL_cleanse(secret_digest, sizeof(secret_digest));
		return true;
	}
	lp_s3_signing_key_cache_clear(cache);
	if (!derive_signing_key(secret, date, region, service, key, err))
	{
		OPENSSL_cleanse(secret_digest, sizeof(secret_digest));
		return false;
	}
	/* check_request bounded the lengths to the cache's fields */
	memcpy(cache->date, date, 8);
	cache->date[8] = '\0';
	strcpy(cache->region, region);
	strcpy(cache->service, service);
	memcpy(cache->secret_digest, secret_digest, SHA256_LEN);
	memcpy(cache->key, key, SHA256_LEN);
	cache->valid = true;
	OPENSSL_cleanse(secret_digest, sizeof(secret_digest));
	return true;
}

void
lp_s3_signing_key_cache_clear(LpS3SigningKeyCache *cache)
{
	OPENSSL_cleanse(cache, sizeof(*cache));
}

/* ---- signing -------------------------------------------------------------- */

void
lp_s3_signed_free(LpS3Signed *result)
{
	lp_free(result->url_path);
	lp_free(result->url_query);
	lp_free(result->canonical_request);
	lp_free(result->string_to_sign);
	lp_free(result->authorization);
	if (result->security_token != NULL)
		OPENSSL_cleanse(result->security_token, strlen(result->security_token));
	lp_free(result->security_token);
	memset(result, 0, sizeof(*result));
}

static void
add_header(LpS3Signed *result, const char *name, const char *value)
{
	result->headers[result->header_count].name = name;
	result->headers[result->header_count].value = value;
	result->header_count++;
}

bool
lp_s3_sign(const LpS3Request *request, const LpS3Credentials *credentials,
		   LpS3SigningKeyCache *cache, LpS3Signed *result, LpError *err)
{
	char		date[9];
	char	   *canonical_query = NULL;
	char	   *scope = NULL;
	char	   *header_block = NULL;
	char	   *signed_names = NULL;
	SignText	text = {0};
	unsigned char digest[SHA256_LEN];
	unsigned char key[SHA256_LEN];
	unsigned char mac[SHA256_LEN];
	bool		ok = false;

	memset(result, 0, sizeof(*result));
	if (!check_credentials(credentials, err) || !check_request(request, err))
		return false;
	memcpy(date, request->request_time, 8);
	date[8] = '\0';
	strcpy(result->amz_date, request->request_time);
	strcpy(result->content_sha256, request->payload_hash);

	/* the signer's headers, in the order they are added to the request */
	add_header(result, "x-amz-date", result->amz_date);
	if (!request->omit_content_sha256)
		add_header(result, "x-amz-content-sha256", result->content_sha256);
	if (has_session_token(credentials))
	{
		result->security_token = lp_strdup(credentials->session_token);
		if (result->security_token == NULL)
			goto out_of_memory;
		add_header(result, "x-amz-security-token", result->security_token);
	}

	result->url_path = lp_s3_encode_path(request->path);
	if (result->url_path == NULL ||
		!build_query(request, &canonical_query, &result->url_query) ||
		!build_headers(request, result->headers, result->header_count,
					   &header_block, &signed_names))
		goto out_of_memory;
	text_append_str(&text, request->method);
	text_append_char(&text, '\n');
	text_append_str(&text, result->url_path);
	text_append_char(&text, '\n');
	text_append_str(&text, canonical_query);
	text_append_char(&text, '\n');
	text_append_str(&text, header_block);
	text_append_char(&text, '\n');
	text_append_str(&text, signed_names);
	text_append_char(&text, '\n');
	text_append_str(&text, request->payload_hash);
	result->canonical_request = text_take(&text);
	if (result->canonical_request == NULL)
		goto out_of_memory;
	if (!sha256(result->canonical_request, strlen(result->canonical_request), digest, err))
		goto fail;

	text = (SignText) {0};
	text_append_str(&text, date);
	text_append_char(&text, '/');
	text_append_str(&text, request->region);
	text_append_char(&text, '/');
	text_append_str(&text, request->service);
	text_append_str(&text, "/aws4_request");
	scope = text_take(&text);
	if (scope == NULL)
		goto out_of_memory;

	text = (SignText) {0};
	text_append_str(&text, SIGV4_ALGORITHM "\n");
	text_append_str(&text, request->request_time);
	text_append_char(&text, '\n');
	text_append_str(&text, scope);
	text_append_char(&text, '\n');
	append_hex(&text, digest, SHA256_LEN);
	result->string_to_sign = text_take(&text);
	if (result->string_to_sign == NULL)
		goto out_of_memory;

	if (!signing_key(credentials, date, request->region, request->service, cache, key, err) ||
		!hmac_sha256(key, SHA256_LEN, result->string_to_sign, mac, err))
		goto fail;
	hex_into(mac, SHA256_LEN, result->signature);

	text = (SignText) {0};
	text_append_str(&text, SIGV4_ALGORITHM " Credential=");
	text_append_str(&text, credentials->access_key_id);
	text_append_char(&text, '/');
	text_append_str(&text, scope);
	text_append_str(&text, ", SignedHeaders=");
	text_append_str(&text, signed_names);
	text_append_str(&text, ", Signature=");
	text_append_str(&text, result->signature);
	result->authorization = text_take(&text);
	if (result->authorization == NULL)
		goto out_of_memory;
	add_header(result, "Authorization", result->authorization);
	ok = true;
	goto done;

out_of_memory:
	lp_fail(err, LP_ERR_NO_MEMORY, "out of memory while signing an S3 request");
fail:
	lp_s3_signed_free(result);
done:
	OPENSSL_cleanse(key, sizeof(key));
	lp_free(canonical_query);
	lp_free(scope);
	lp_free(header_block);
	lp_free(signed_names);
	return ok;
}
