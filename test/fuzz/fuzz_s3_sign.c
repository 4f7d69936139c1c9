/*
 * fuzz_s3_sign.c - libFuzzer target for the SigV4 signer's canonical
 * forms (lp_s3_sign): the URI path, the query string and the headers of a
 * request come from the input, as object keys, continuation tokens, upload
 * ids and copy sources from a bucket listing or a user reach the S3 store.
 * The first input byte picks the method and whether there is a session
 * token and a hashed payload; the rest is NUL-separated fields: the path
 * (a '/' is put in front), then fields starting with 'q' (a query
 * parameter "name=value", valueless without '='), 'h' (a header
 * "name:value") or anything else (ignored).  A request the signer refuses
 * is an LP_ERR_INVALID_ARGUMENT; one it signs is sent as it was signed:
 * the path sent decodes to the path given and holds only unreserved bytes,
 * '/' and %XX escapes; the query sent decodes to the parameters given; the
 * canonical request has one line per signed header name, in the order of
 * the signed header list; signing again, with or without the cached key,
 * gives the same signature.  Seeds: requests the S3 store makes
 * (test/fuzz/corpus/fuzz_s3_sign).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lp_fuzz.h"
#include "base/lp_alloc.h"
#include "io/lp_s3_sign.h"

#define MAX_PAIRS 32
#define MAX_TEXT 4096

static int
hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static bool
is_unreserved(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		c == '-' || c == '_' || c == '.' || c == '~';
}

/*
 * Decode encoded[0..len) (unreserved bytes, slashes when slash_allowed,
 * uppercase %XX) into out; abort on anything else.
 */
static void
decode(const char *encoded, size_t len, bool slash_allowed, char *out)
{
	size_t		o = 0;

	for (size_t i = 0; i < len; i++)
	{
		unsigned char c = (unsigned char) encoded[i];

		if (c == '%')
		{
			int			high;
			int			low;

			if (i + 2 >= len)
				abort();
			high = hex_value(encoded[i + 1]);
			low = hex_value(encoded[i + 2]);
			if (high < 0 || low < 0)
				abort();
			out[o++] = (char) (high * 16 + low);
			i += 2;
		}
		else if (is_unreserved(c) || (slash_allowed && c == '/'))
			out[o++] = (char) c;
		else
			abort();
	}
	out[o] = '\0';
}

/* The query sent holds exactly the parameters given, in some order. */
static void
check_query(const char *sent, const LpS3Pair *query, size_t count)
{
	bool		used[MAX_PAIRS] = {false};
	size_t		found = 0;
	const char *part = sent;
	char	   *name = malloc(strlen(sent) + 1);
	char	   *value = malloc(strlen(sent) + 1);

	while (*part != '\0')
	{
		const char *end = strchr(part, '&');
		const char *equals;
		bool		matched = false;

		if (end == NULL)
			end = part + strlen(part);
		equals = memchr(part, '=', (size_t) (end - part));
		decode(part, (size_t) ((equals ? equals : end) - part), false, name);
		if (equals)
			decode(equals + 1, (size_t) (end - equals - 1), false, value);
		for (size_t i = 0; i < count && !matched; i++)
			if (!used[i] && strcmp(query[i].name, name) == 0 &&
				(query[i].value == NULL ? equals == NULL : equals != NULL && strcmp(query[i].value, value) == 0))
				used[i] = matched = true;
		if (!matched)
			abort();
		found++;
		part = *end == '&' ? end + 1 : end;
	}
	if (found != count)
		abort();
	free(name);
	free(value);
}

/*
 * The canonical request: method, path, query, one "name:value" line per
 * signed header name (in the list's order), a blank line, the list, the hash.
 */
static void
check_canonical(const LpS3Signed *result, const LpS3Request *request)
{
	const char *line = result->canonical_request;
	const char *headers;
	const char *list;
	const char *name;
	size_t		method_len = strlen(request->method);
	size_t		path_len = strlen(result->url_path);

	if (strncmp(line, request->method, method_len) != 0 || line[method_len] != '\n' ||
		strncmp(line + method_len + 1, result->url_path, path_len) != 0 ||
		line[method_len + 1 + path_len] != '\n')
		abort();
	headers = strchr(line + method_len + 1 + path_len + 1, '\n');
	if (headers == NULL)
		abort();
	headers++;
	list = strstr(headers, "\n\n");
	if (list == NULL)
		abort();
	list += 2;
	name = list;
	while (headers < list - 1)
	{
		const char *colon = strchr(headers, ':');
		const char *name_end = strpbrk(name, ";\n");
		const char *next = strchr(headers, '\n');

		if (colon == NULL || name_end == NULL || next == NULL || colon > next ||
			(size_t) (colon - headers) != (size_t) (name_end - name) ||
			strncmp(headers, name, (size_t) (colon - headers)) != 0)
			abort();
		headers = next + 1;
		name = name_end + 1;
		if (*name_end == '\n')
			break;
	}
	if (headers != list - 1 || name[-1] != '\n' || strcmp(name, request->payload_hash) != 0)
		abort();
}

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const methods[] = {"GET", "PUT", "POST", "DELETE", "HEAD"};
	static LpS3SigningKeyCache cache;
	char		text[MAX_TEXT + 2];
	char		path[MAX_TEXT + 2];
	char	   *decoded;
	LpS3Pair	query[MAX_PAIRS];
	LpS3Pair	headers[MAX_PAIRS + 1];
	LpS3Request request;
	LpS3Credentials credentials = {"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", NULL};
	LpS3Signed first;
	LpS3Signed second;
	LpError		err;
	size_t		pos;

	if (size < 1 || size > MAX_TEXT)
		return 0;
	lp_fuzz_use_bounded_allocator();
	memset(&request, 0, sizeof(request));
	request.method = methods[data[0] % 5];
	request.payload_hash = data[0] & 8 ? LP_S3_UNSIGNED_PAYLOAD :
		"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
	if (data[0] & 16)
		credentials.session_token = "FQoGZXIvYXdzEJr//////////wEaDOJ+token";
	request.region = "us-east-1";
	request.service = "s3";
	request.request_time = "20130524T000000Z";
	request.query = query;
	request.headers = headers;
	headers[request.header_count++] = (LpS3Pair) {"Host", "examplebucket.s3.amazonaws.com"};

	/* the fields, NUL-terminated in text */
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	path[0] = '/';
	strcpy(path + 1, text);
	request.path = path;
	pos = strlen(text) + 1;
	while (pos < size - 1)
	{
		char	   *field = text + pos;
		char	   *separator;

		pos += strlen(field) + 1;
		if (field[0] == 'q' && request.query_count < MAX_PAIRS)
		{
			separator = strchr(field + 1, '=');
			if (separator != NULL)
				*separator = '\0';
			query[request.query_count++] = (LpS3Pair) {field + 1, separator ? separator + 1 : NULL};
		}
		else if (field[0] == 'h' && request.header_count <= MAX_PAIRS)
		{
			separator = strchr(field + 1, ':');
			if (separator == NULL)
				continue;
			*separator = '\0';
			headers[request.header_count++] = (LpS3Pair) {field + 1, separator + 1};
		}
	}

	if (!lp_s3_sign(&request, &credentials, &cache, &first, &err))
	{
		if (err.code != LP_ERR_INVALID_ARGUMENT && err.code != LP_ERR_NO_MEMORY)
			abort();
		return 0;
	}
	decoded = malloc(strlen(first.url_path) + 1);
	decode(first.url_path, strlen(first.url_path), true, decoded);
	if (strcmp(decoded, path) != 0)
		abort();
	free(decoded);
	check_query(first.url_query, query, request.query_count);
	check_canonical(&first, &request);
	if (strstr(first.authorization, first.signature) == NULL)
		abort();
	if (lp_s3_sign(&request, &credentials, data[0] & 32 ? &cache : NULL, &second, &err))
	{
		if (strcmp(first.signature, second.signature) != 0 ||
			strcmp(first.canonical_request, second.canonical_request) != 0)
			abort();
		lp_s3_signed_free(&second);
	}
	else if (err.code != LP_ERR_NO_MEMORY)
		abort();
	lp_s3_signed_free(&first);
	return 0;
}
