/*
 * lp_s3_store.c - an LpStore over S3.
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
#include <stdlib.h>
#include <string.h>

#include "base/lp_alloc.h"
#include "base/lp_interrupt.h"
#include "io/lp_s3_client.h"
#include "io/lp_s3_multipart.h"
#include "io/lp_s3_sign.h"
#include "io/lp_s3_store.h"
#include "io/lp_s3_uri.h"
#include "io/lp_s3_xml.h"

/* objects listed per ListObjectsV2 page */
#define LIST_PAGE_KEYS "1000"

typedef struct S3Input S3Input;

/*
 * Bytes an input fetched ahead (LpInputOps.prefetch): one ranged GET,
 * pending until its answer came.  The range header it was started with
 * stays here until then.
 */
typedef struct S3Piece
{
	uint64_t	offset;
	size_t		len;
	uint8_t    *data;
	LpS3Pending *pending;		/* NULL once answered */
	unsigned	generation;		/* of the prefetch that started it */
	char		range[64];
	LpS3Pair	header;
} S3Piece;

typedef struct S3Store
{
	LpStore		base;
	LpS3Client *client;
	S3Input    *cached_input;	/* the one input holding a read block */
} S3Store;

struct S3Input
{
	LpInput		base;
	S3Store    *store;
	char	   *bucket;
	char	   *key;
	char	   *name;
	uint8_t    *block;			/* LP_S3_READ_BLOCK * 2 bytes once read */
	uint64_t	block_offset;
	size_t		block_len;
	S3Piece   **pieces;			/* fetched ahead, LP_S3_READAHEAD_BYTES at most */
	size_t		num_pieces;
	size_t		pieces_capacity;
	size_t		piece_bytes;	/* their lengths summed */
	unsigned	generation;		/* prefetch calls so far */
};

typedef struct S3Output
{
	LpOutput	base;
	S3Store    *store;
	char	   *bucket;
	char	   *key;
	char	   *name;
	uint64_t	written;		/* the next output offset */
	uint8_t    *buffer;			/* BUFFER_CAPACITY bytes once written */
	size_t		buffer_len;
	LpS3Multipart *upload;
	/* the pending copy run: its source and range, len 0 for none */
	char	   *copy_bucket;
	char	   *copy_key;
	uint64_t	copy_source_size;
	uint64_t	copy_offset;
	uint64_t	copy_len;
	bool		numbered;		/* parts go by number (lp_s3_output_start_parts) */
} S3Output;

static const LpInputOps s3_input_ops;
static const LpOutputOps s3_output_ops;
static const LpStoreOps s3_store_ops;

static bool get_range(S3Store *store, const char *bucket, const char *key, uint64_t size,
					  uint64_t offset, void *buffer, size_t len, LpError *err);

/* key + "/": the prefix of what lies under key (lp_alloc'd) */
static char *
prefix_of(const char *key)
{
	size_t		len = strlen(key) + 2;
	char	   *prefix = lp_alloc(len);

	if (prefix)
		snprintf(prefix, len, "%s/", key);
	return prefix;
}

static char *
join_key(const char *a, const char *b)
{
	size_t		len = strlen(a) + strlen(b) + 2;
	char	   *joined = lp_alloc(len);

	if (joined)
		snprintf(joined, len, "%s%s%s", a, a[0] && b[0] ? "/" : "", b);
	return joined;
}

/* ---- objects and prefixes ------------------------------------------------ */

/*
 * A HEAD answers without a body, so its failure lacks the S3 error code:
 * ask again with a one-byte GET, whose Error body names it (a rejected
 * signature and a denied access are both 403).
 */
static bool
explain_head_failure(S3Store *store, const char *bucket, const char *key, const char *what,
					 const LpS3HttpResponse *head, LpError *err)
{
	LpS3Pair	headers[] = {{"range", "bytes=0-0"}};
	LpS3Call	get = {.method = "GET", .bucket = bucket, .key = key,
	.headers = headers, .header_count = 1};
	LpS3Call	call = {.method = "HEAD", .bucket = bucket, .key = key};
	LpS3HttpResponse response;

	if (lp_s3_call(store->client, &get, &response, err))
	{
		if (!lp_s3_succeeded(&get, &response) && response.status == head->status)
			lp_s3_fail(store->client, &get, &response, what, err);
		else
			lp_s3_fail(store->client, &call, head, what, err);
		lp_s3_http_response_clear(&response);
	}
	return false;
}

/* HEAD bucket/key: *found and its size and mtime. */
static bool
head_object(S3Store *store, const char *bucket, const char *key, bool *found,
			LpStat *stat, LpError *err)
{
	LpS3Call	call = {.method = "HEAD", .bucket = bucket, .key = key};
	LpS3HttpResponse response;

	*found = false;
	if (!lp_s3_call(store->client, &call, &response, err))
		return false;
	if (response.status == 404)
	{
		lp_s3_http_response_clear(&response);
		return true;
	}
	if (!lp_s3_succeeded(&call, &response))
	{
		explain_head_failure(store, bucket, key, "examine", &response, err);
		lp_s3_http_response_clear(&response);
		return false;
	}
	if (!response.has_content_length)
	{
		lp_fail(err, LP_ERR_IO, "could not examine \"s3://%s/%s\": HEAD answered without Content-Length",
				bucket, key);
		lp_s3_http_response_clear(&response);
		return false;
	}
	*found = true;
	stat->kind = LP_OBJECT_FILE;
	stat->size = response.content_length;
	stat->mtime = 0;
	if (response.last_modified[0] != '\0')
		lp_s3_parse_http_date(response.last_modified, &stat->mtime);
	lp_s3_http_response_clear(&response);
	return true;
}

typedef bool (*ListPageCallback) (void *arg, const LpS3ListObjects *page, LpError *err);

/*
 * ListObjectsV2 of prefix, page by page (with delimiter "/" when given);
 * max_keys NULL for the server's default.  A missing bucket is
 * LP_ERR_NOT_FOUND.
 */
static bool
list_pages(S3Store *store, const char *bucket, const char *prefix, const char *delimiter,
		   const char *max_keys, ListPageCallback callback, void *arg, LpError *err)
{
	char	   *token = NULL;
	bool		ok = true;

	do
	{
		LpS3Pair	query[5];
		size_t		n = 0;
		LpS3Call	call;
		LpS3HttpResponse response;
		LpS3Document *document = NULL;

		query[n++] = (LpS3Pair) {"list-type", "2"};
		query[n++] = (LpS3Pair) {"prefix", prefix};
		if (delimiter)
			query[n++] = (LpS3Pair) {"delimiter", delimiter};
		query[n++] = (LpS3Pair) {"max-keys", max_keys ? max_keys : LIST_PAGE_KEYS};
		if (token)
			query[n++] = (LpS3Pair) {"continuation-token", token};
		call = (LpS3Call) {.method = "GET", .bucket = bucket, .key = "",
		.query = query, .query_count = n};
		if (!lp_s3_call_checked(store->client, &call, "list", &response, err))
		{
			ok = false;
			break;
		}
		ok = lp_s3_xml_parse(response.body ? response.body : "", response.body_len,
							 LP_S3_LIST_OBJECTS, &document, err);
		lp_s3_http_response_clear(&response);
		if (!ok)
			break;
		if (document->kind != LP_S3_LIST_OBJECTS)
		{
			lp_s3_xml_free(document);
			ok = lp_fail(err, LP_ERR_IO, "could not list \"s3://%s/%s\": the server answered an Error",
						 bucket, prefix);
			break;
		}
		lp_free(token);
		token = NULL;
		ok = callback(arg, &document->list_objects, err);
		if (ok && max_keys == NULL && document->list_objects.is_truncated)
		{
			token = lp_strdup(document->list_objects.next_continuation_token);
			if (token == NULL)
				ok = lp_fail(err, LP_ERR_NO_MEMORY, "out of memory for a listing");
		}
		lp_s3_xml_free(document);
	} while (ok && token != NULL);
	lp_free(token);
	return ok;
}

static bool
note_any_entry(void *arg, const LpS3ListObjects *page, LpError *err)
{
	(void) err;
	if (page->num_objects > 0 || page->num_common_prefixes > 0)
		*(bool *) arg = true;
	return true;
}

/* Whether any object lies under key + "/" (the whole bucket for key ""). */
static bool
prefix_exists(S3Store *store, const char *bucket, const char *key, bool *exists, LpError *err)
{
	char	   *prefix = key[0] ? prefix_of(key) : lp_strdup("");
	bool		ok;

	*exists = false;
	if (prefix == NULL)
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory for a listing");
	ok = list_pages(store, bucket, prefix, NULL, "1", note_any_entry, exists, err);
	lp_free(prefix);
	return ok;
}

static bool
s3_stat_parsed(S3Store *store, const char *bucket, const char *key, LpStat *result,
			   LpError *err)
{
	bool		found;

	memset(result, 0, sizeof(*result));
	result->kind = LP_OBJECT_ABSENT;
	if (key[0] != '\0')
	{
		if (!head_object(store, bucket, key, &found, result, err))
			return false;
		if (found)
			return true;
	}
	else
	{
		/* the bucket itself: a directory when it exists, even empty */
		if (!prefix_exists(store, bucket, key, &found, err))
		{
			if (err->code != LP_ERR_NOT_FOUND)
				return false;
			lp_error_clear(err);
			return true;
		}
		result->kind = LP_OBJECT_DIRECTORY;
		return true;
	}
	if (!prefix_exists(store, bucket, key, &found, err))
	{
		if (err->code != LP_ERR_NOT_FOUND)
			return false;
		lp_error_clear(err);
		return true;
	}
	if (found)
		result->kind = LP_OBJECT_DIRECTORY;
	return true;
}

static bool
s3_stat(LpStore *store, const char *path, bool follow_symlinks, LpStat *result, LpError *err)
{
	char	   *bucket;
	char	   *key;
	bool		ok;

	(void) follow_symlinks;
	if (!lp_s3_split_uri(path, &bucket, &key, err))
		return false;
	ok = s3_stat_parsed((S3Store *) store, bucket, key, result, err);
	lp_free(bucket);
	lp_free(key);
	return ok;
}

static char *
canonical_uri(const char *bucket, const char *key)
{
	size_t		len = LP_S3_URI_SCHEME_LEN + strlen(bucket) + strlen(key) + 2;
	char	   *uri = lp_alloc(len);

	if (uri)
		snprintf(uri, len, LP_S3_URI_SCHEME "%s%s%s", bucket, key[0] ? "/" : "", key);
	return uri;
}

static char *
s3_canonical(LpStore *store, const char *path, const char *what, LpError *err)
{
	char	   *bucket;
	char	   *key;
	char	   *uri = NULL;
	LpStat		stat;

	if (!lp_s3_split_uri(path, &bucket, &key, err))
		return NULL;
	if (s3_stat_parsed((S3Store *) store, bucket, key, &stat, err))
	{
		if (stat.kind == LP_OBJECT_ABSENT)
			lp_fail(err, LP_ERR_NOT_FOUND, "%s \"%s\" does not exist", what, path);
		else if ((uri = canonical_uri(bucket, key)) == NULL)
			lp_fail(err, LP_ERR_NO_MEMORY, "out of memory for an S3 URI");
	}
	lp_free(bucket);
	lp_free(key);
	return uri;
}

static bool
s3_same_object(LpStore *store, const char *path_a, const char *path_b)
{
	LpError		err;
	char	   *a = s3_canonical(store, path_a, "file", &err);
	char	   *b = a ? s3_canonical(store, path_b, "file", &err) : NULL;
	LpStat		stat;
	bool		same = a && b && strcmp(a, b) == 0 &&
		s3_stat(store, a, true, &stat, &err) && stat.kind == LP_OBJECT_FILE;

	lp_free(a);
	lp_free(b);
	return same;
}

/* ---- listing ------------------------------------------------------------- */

typedef struct ListEntries
{
	const char *prefix;
	size_t		prefix_len;
	LpListCallback callback;
	void	   *arg;
	bool		any;
} ListEntries;

static bool
list_entry_page(void *arg, const LpS3ListObjects *page, LpError *err)
{
	ListEntries *entries = arg;

	for (size_t i = 0; i < page->num_objects; i++)
	{
		const char *key = page->objects[i].key;

		if (strncmp(key, entries->prefix, entries->prefix_len) != 0)
			return lp_fail(err, LP_ERR_IO, "S3 listing of \"%s\" returned key \"%s\" outside it",
						   entries->prefix, key);
		entries->any = true;
		/* a "directory marker" object named like the prefix is no entry */
		if (key[entries->prefix_len] != '\0' &&
			!entries->callback(entries->arg, key + entries->prefix_len, err))
			return false;
	}
	for (size_t i = 0; i < page->num_common_prefixes; i++)
	{
		const char *common = page->common_prefixes[i];
		size_t		len = strlen(common);
		char	   *name;
		bool		ok;

		if (strncmp(common, entries->prefix, entries->prefix_len) != 0 ||
			len < entries->prefix_len + 2 || common[len - 1] != '/')
			return lp_fail(err, LP_ERR_IO, "S3 listing of \"%s\" returned prefix \"%s\" outside it",
						   entries->prefix, common);
		entries->any = true;
		name = lp_memdup(common + entries->prefix_len, len - entries->prefix_len);
		if (name == NULL)
			return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory for a listing");
		name[len - entries->prefix_len - 1] = '\0';
		ok = entries->callback(entries->arg, name, err);
		lp_free(name);
		if (!ok)
			return false;
	}
	return true;
}

static bool
s3_list(LpStore *store, const char *directory, LpListCallback callback, void *arg,
		LpError *err)
{
	char	   *bucket;
	char	   *key;
	char	   *prefix;
	ListEntries entries = {.callback = callback, .arg = arg};
	bool		ok;

	if (!lp_s3_split_uri(directory, &bucket, &key, err))
		return false;
	prefix = key[0] ? prefix_of(key) : lp_strdup("");
	if (prefix == NULL)
	{
		lp_free(bucket);
		lp_free(key);
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory for a listing");
	}
	entries.prefix = prefix;
	entries.prefix_len = strlen(prefix);
	ok = list_pages((S3Store *) store, bucket, prefix, "/", NULL, list_entry_page, &entries, err);
	/* S3 has no empty directories: nothing under a prefix is no directory */
	if (ok && !entries.any && key[0] != '\0')
		ok = lp_fail(err, LP_ERR_NOT_FOUND, "directory \"%s\" does not exist", directory);
	lp_free(prefix);
	lp_free(bucket);
	lp_free(key);
	return ok;
}

/* ---- whole objects --------------------------------------------------------- */

/* Whether bucket/key holds exactly the len bytes of data. */
static bool
object_holds(S3Store *store, const char *bucket, const char *key, const void *data, size_t len,
			 bool *same, LpError *err)
{
	LpStat		stat;
	bool		found;
	uint8_t    *stored;
	bool		ok;

	*same = false;
	if (!head_object(store, bucket, key, &found, &stat, err))
		return false;
	if (!found || stat.size != len)
		return true;
	if (len == 0)
		return *same = true;
	stored = lp_alloc(len);
	if (stored == NULL)
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory for a read of \"s3://%s/%s\"", bucket, key);
	ok = get_range(store, bucket, key, len, 0, stored, len, err);
	*same = ok && memcmp(stored, data, len) == 0;
	lp_free(stored);
	return ok;
}

static bool
put_object(S3Store *store, const char *bucket, const char *key, const char *name,
		   const void *data, size_t len, bool if_absent, LpError *err)
{
	LpS3Pair	headers[] = {{"if-none-match", "*"}};
	LpS3Call	call = {
		.method = "PUT",
		.bucket = bucket,
		.key = key,
		.headers = headers,
		.header_count = if_absent ? 1 : 0,
		.body = len ? data : "",
		.body_len = len,
	};
	LpS3HttpResponse response;

	if (key[0] == '\0')
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT, "\"%s\" names a bucket, not an object", name);
	if (!lp_s3_call(store->client, &call, &response, err))
		return false;
	if (lp_s3_succeeded(&call, &response))
	{
		lp_s3_http_response_clear(&response);
		return true;
	}
	lp_s3_fail(store->client, &call, &response, "write", err);
	if (if_absent && response.status == 412)
	{
		bool		ours = false;
		LpError		check_err;

		/*
		 * A retried PUT whose earlier attempt was stored, its answer lost,
		 * meets its own object: exactly these bytes there mean written.
		 */
		if (object_holds(store, bucket, key, data, len, &ours, &check_err) && ours)
		{
			lp_s3_http_response_clear(&response);
			return true;
		}
		err->code = LP_ERR_ALREADY_EXISTS;
	}
	lp_s3_http_response_clear(&response);
	return false;
}

static bool
s3_put_object(LpStore *store, const char *path, const void *data, size_t len,
			  bool if_absent, LpError *err)
{
	char	   *bucket;
	char	   *key;
	bool		ok;

	if (!lp_s3_split_uri(path, &bucket, &key, err))
		return false;
	ok = put_object((S3Store *) store, bucket, key, path, data, len, if_absent, err);
	lp_free(bucket);
	lp_free(key);
	return ok;
}

static bool
s3_put_if_absent(LpStore *store, const char *path, const void *data, size_t len,
				 LpError *err)
{
	return s3_put_object(store, path, data, len, true, err);
}

static bool
s3_put(LpStore *store, const char *path, const void *data, size_t len, LpError *err)
{
	return s3_put_object(store, path, data, len, false, err);
}

static bool
delete_object(S3Store *store, const char *bucket, const char *key, LpError *err)
{
	LpS3Call	call = {.method = "DELETE", .bucket = bucket, .key = key};
	LpS3HttpResponse response;

	if (!lp_s3_call(store->client, &call, &response, err))
		return false;
	/* S3 answers 204 for a missing key too; 404 only from other servers */
	if (lp_s3_succeeded(&call, &response) || response.status == 404)
	{
		lp_s3_http_response_clear(&response);
		return true;
	}
	lp_s3_fail(store->client, &call, &response, "remove", err);
	lp_s3_http_response_clear(&response);
	return false;
}

static bool
s3_remove(LpStore *store, const char *path, LpError *err)
{
	char	   *bucket;
	char	   *key;
	bool		ok = true;

	if (!lp_s3_split_uri(path, &bucket, &key, err))
		return false;
	/* a prefix (an "empty directory") has nothing to remove */
	if (key[0] != '\0')
		ok = delete_object((S3Store *) store, bucket, key, err);
	lp_free(bucket);
	lp_free(key);
	return ok;
}

static bool
valid_relative(const char *relative)
{
	const char *segment = relative;

	if (relative[0] == '\0' || relative[0] == '/')
		return false;
	for (;;)
	{
		const char *end = strchr(segment, '/');
		size_t		len = end ? (size_t) (end - segment) : strlen(segment);

		if (len == 0 || (len == 1 && segment[0] == '.') ||
			(len == 2 && segment[0] == '.' && segment[1] == '.'))
			return false;
		if (end == NULL)
			return true;
		segment = end + 1;
	}
}

/* root/relative as bucket and key (lp_alloc'd) */
static bool
resolve_relative(const char *root, const char *relative, char **bucket, char **key,
				 LpError *err)
{
	char	   *root_key;

	if (!valid_relative(relative))
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT, "relative path \"%s\" under \"%s\" is not valid",
					   relative, root);
	if (!lp_s3_split_uri(root, bucket, &root_key, err))
		return false;
	*key = join_key(root_key, relative);
	lp_free(root_key);
	if (*key == NULL)
	{
		lp_free(*bucket);
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory for an S3 key");
	}
	return true;
}

typedef struct TreeRemoval
{
	S3Store    *store;
	const char *bucket;
	LpTreeRemoval *result;
	LpError		first_error;
	bool		failed;
} TreeRemoval;

static bool
remove_tree_page(void *arg, const LpS3ListObjects *page, LpError *err)
{
	TreeRemoval *removal = arg;

	for (size_t i = 0; i < page->num_objects; i++)
	{
		LpError		delete_err;

		if (lp_check_cancel(err))
			return false;
		if (delete_object(removal->store, removal->bucket, page->objects[i].key, &delete_err))
		{
			removal->result->removed_entries++;
			removal->result->removed_bytes += page->objects[i].size;
		}
		else if (delete_err.code == LP_ERR_CANCELED)
		{
			*err = delete_err;
			return false;
		}
		else if (!removal->failed)
		{
			removal->failed = true;
			removal->first_error = delete_err;
		}
	}
	return true;
}

static bool
s3_remove_tree(LpStore *store, const char *root, const char *relative, LpTreeRemoval *result,
			   LpError *err)
{
	S3Store    *s3 = (S3Store *) store;
	TreeRemoval removal = {.store = s3, .result = result};
	char	   *bucket;
	char	   *key;
	char	   *prefix;
	LpStat		stat;
	bool		found;
	bool		ok;

	memset(result, 0, sizeof(*result));
	result->outcome = LP_TREE_INCOMPLETE;
	if (!resolve_relative(root, relative, &bucket, &key, err))
		return false;
	removal.bucket = bucket;
	prefix = prefix_of(key);
	if (prefix == NULL)
		ok = lp_fail(err, LP_ERR_NO_MEMORY, "out of memory for an S3 key");
	else if (!(ok = head_object(s3, bucket, key, &found, &stat, err)))
		;
	else if (found)
	{
		result->outcome = LP_TREE_NOT_DIRECTORY;
		ok = lp_fail(err, LP_ERR_INVALID_ARGUMENT,
					 "\"s3://%s/%s\" is a file, not a directory: left alone", bucket, key);
	}
	else
	{
		ok = list_pages(s3, bucket, prefix, NULL, NULL, remove_tree_page, &removal, err);
		if (ok && removal.failed)
		{
			*err = removal.first_error;
			ok = false;
		}
		else if (ok)
			result->outcome = result->removed_entries > 0 ? LP_TREE_REMOVED : LP_TREE_ABSENT;
	}
	lp_free(prefix);
	lp_free(bucket);
	lp_free(key);
	return ok;
}

static bool
s3_remove_file(LpStore *store, const char *root, const char *relative, bool *removed,
			   LpError *err)
{
	S3Store    *s3 = (S3Store *) store;
	char	   *bucket;
	char	   *key;
	LpStat		stat;
	bool		found;
	bool		ok;

	*removed = false;
	if (!resolve_relative(root, relative, &bucket, &key, err))
		return false;
	ok = head_object(s3, bucket, key, &found, &stat, err);
	if (ok && found)
		ok = *removed = delete_object(s3, bucket, key, err);
	else if (ok)
	{
		ok = prefix_exists(s3, bucket, key, &found, err);
		if (ok && found)
			ok = lp_fail(err, LP_ERR_INVALID_ARGUMENT,
						 "\"s3://%s/%s\" is a directory, not a file: left alone", bucket, key);
	}
	lp_free(bucket);
	lp_free(key);
	return ok;
}

/* ---- inputs ---------------------------------------------------------------- */

/* The Range header of a GET of len bytes at offset. */
static void
format_range(char *range, size_t size, uint64_t offset, size_t len)
{
	snprintf(range, size, "bytes=%" PRIu64 "-%" PRIu64, offset, offset + len - 1);
}

/*
 * Whether response (of a successful ranged GET) is exactly len bytes at
 * offset of an object of size bytes; else err, and the response cleared.
 */
static bool
check_range_answer(const char *bucket, const char *key, uint64_t size, uint64_t offset,
				   size_t len, LpS3HttpResponse *response, LpError *err)
{
	char		expected[96];

	snprintf(expected, sizeof(expected), "bytes %" PRIu64 "-%" PRIu64 "/%" PRIu64,
			 offset, offset + len - 1, size);
	if (response->status != 206 || response->body_len != len ||
		strcmp(response->content_range, expected) != 0)
	{
		lp_fail(err, LP_ERR_IO,
				"could not read %zu bytes at offset %" PRIu64 " of \"s3://%s/%s\": the server answered HTTP %ld with %zu bytes and Content-Range \"%s\"",
				len, offset, bucket, key, response->status, response->body_len,
				response->content_range);
		lp_error_detail(err, "A ranged read of an object of %" PRIu64 " bytes expects Content-Range \"%s\"; the object may have changed.",
						size, expected);
		lp_s3_http_response_clear(response);
		return false;
	}
	lp_s3_http_response_clear(response);
	return true;
}

/* A failed ranged GET's message says when the object became shorter. */
static void
explain_short_object(uint64_t size, LpError *err)
{
	if (err->code == LP_ERR_IO && strstr(err->message, "HTTP 416") != NULL)
		lp_error_detail(err, "The object is shorter than the %" PRIu64 " bytes it had when opened.", size);
}

/*
 * GET len bytes of bucket/key at offset into buffer, checking that the object
 * still has size bytes.
 */
static bool
get_range(S3Store *store, const char *bucket, const char *key, uint64_t size,
		  uint64_t offset, void *buffer, size_t len, LpError *err)
{
	char		range[64];
	LpS3Pair	headers[1];
	LpS3Call	call;
	LpS3HttpResponse response;

	if (lp_check_cancel(err))
		return false;
	format_range(range, sizeof(range), offset, len);
	headers[0] = (LpS3Pair) {"range", range};
	call = (LpS3Call) {.method = "GET", .bucket = bucket, .key = key,
		.headers = headers, .header_count = 1,
	.response_buffer = buffer, .response_capacity = len};
	if (!lp_s3_call_checked(store->client, &call, "read", &response, err))
	{
		explain_short_object(size, err);
		return false;
	}
	return check_range_answer(bucket, key, size, offset, len, &response, err);
}

static void
drop_block(S3Input *input)
{
	lp_free(input->block);
	input->block = NULL;
	input->block_len = 0;
	if (input->store->cached_input == input)
		input->store->cached_input = NULL;
}

/* ---- read-ahead ------------------------------------------------------------ */

static void
drop_piece(S3Input *input, size_t index)
{
	S3Piece    *piece = input->pieces[index];

	if (piece->pending)
		lp_s3_call_abort(input->store->client, piece->pending);
	input->piece_bytes -= piece->len;
	lp_free(piece->data);
	lp_free(piece);
	input->pieces[index] = input->pieces[--input->num_pieces];
}

/* Wait for a pending piece's answer: false with err, the piece dropped. */
static bool
finish_piece(S3Input *input, size_t index, LpError *err)
{
	S3Piece    *piece = input->pieces[index];
	LpS3Pending *pending = piece->pending;
	LpS3HttpResponse response;
	LpS3Call	call = {.method = "GET", .bucket = input->bucket, .key = input->key};

	piece->pending = NULL;
	if (!lp_s3_call_finish(input->store->client, pending, &response, err))
	{
		drop_piece(input, index);
		return false;
	}
	if (!lp_s3_succeeded(&call, &response))
	{
		lp_s3_fail(input->store->client, &call, &response, "read", err);
		lp_s3_http_response_clear(&response);
		explain_short_object(input->base.size, err);
		drop_piece(input, index);
		return false;
	}
	if (!check_range_answer(input->bucket, input->key, input->base.size, piece->offset,
							piece->len, &response, err))
	{
		drop_piece(input, index);
		return false;
	}
	return true;
}

/*
 * Serve a read from a piece that holds all of it: true with *served when
 * one did (false with err when its answer failed).
 */
static bool
read_from_pieces(S3Input *input, uint64_t offset, void *buffer, size_t len, bool *served,
				 LpError *err)
{
	*served = false;
	if (input->num_pieces == 0)
		return true;
	/* the started transfers move on between the decoder's reads */
	lp_s3_client_progress(input->store->client);
	for (size_t i = 0; i < input->num_pieces; i++)
	{
		S3Piece    *piece = input->pieces[i];

		if (offset < piece->offset || offset - piece->offset + len > piece->len)
			continue;
		if (piece->pending && !finish_piece(input, i, err))
			return false;
		memcpy(buffer, piece->data + (offset - piece->offset), len);
		*served = true;
		return true;
	}
	return true;
}

static int
compare_ranges(const void *a, const void *b)
{
	const LpByteRange *x = a;
	const LpByteRange *y = b;

	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/*
 * Is [offset, offset + len) inside a piece already?  Then that piece counts
 * as this prefetch's, so a page that several batches read is kept, not
 * fetched again.
 */
static bool
held_already(S3Input *input, uint64_t offset, uint64_t len)
{
	for (size_t i = 0; i < input->num_pieces; i++)
		if (offset >= input->pieces[i]->offset &&
			offset - input->pieces[i]->offset + len <= input->pieces[i]->len)
		{
			input->pieces[i]->generation = input->generation;
			return true;
		}
	return false;
}

/* Start a GET of len bytes at offset as a piece of this generation. */
static bool
start_piece(S3Input *input, uint64_t offset, size_t len, LpError *err)
{
	S3Piece    *piece;
	LpS3Call	call;

	if (input->num_pieces == input->pieces_capacity)
	{
		size_t		capacity = input->pieces_capacity ? input->pieces_capacity * 2 : 16;
		S3Piece   **longer = lp_alloc(capacity * sizeof(S3Piece *));

		if (longer == NULL)
			return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory for the read-ahead of \"%s\"",
						   input->base.name);
		if (input->num_pieces > 0)
			memcpy(longer, input->pieces, input->num_pieces * sizeof(S3Piece *));
		lp_free(input->pieces);
		input->pieces = longer;
		input->pieces_capacity = capacity;
	}
	piece = lp_alloc0(sizeof(S3Piece));
	if (piece == NULL || (piece->data = lp_alloc(len)) == NULL)
	{
		lp_free(piece);
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory for the read-ahead of \"%s\"",
					   input->base.name);
	}
	piece->offset = offset;
	piece->len = len;
	piece->generation = input->generation;
	format_range(piece->range, sizeof(piece->range), offset, len);
	piece->header = (LpS3Pair) {"range", piece->range};
	call = (LpS3Call) {.method = "GET", .bucket = input->bucket, .key = input->key,
		.headers = &piece->header, .header_count = 1,
	.response_buffer = piece->data, .response_capacity = len};
	if (!lp_s3_call_start(input->store->client, &call, &piece->pending, err))
	{
		lp_free(piece->data);
		lp_free(piece);
		return false;
	}
	input->pieces[input->num_pieces++] = piece;
	input->piece_bytes += len;
	return true;
}

/*
 * LpInputOps.prefetch: the ranges widened to LP_S3_READ_BLOCK boundaries,
 * sorted and merged where they touch, each not held already started as one
 * GET while the pieces stay within LP_S3_READAHEAD_BYTES (one that does
 * not fit is left to the reads).  Pieces of the prefetches before the
 * previous one that this one does not ask for again are dropped first: a
 * scan prefetches the next batch before it decodes the current one, so those
 * served a batch that is done.
 */
static bool
s3_prefetch(LpInput *base, const LpByteRange *ranges, size_t num_ranges, LpError *err)
{
	S3Input    *input = (S3Input *) base;
	LpByteRange *blocks;
	size_t		num_blocks = 0;
	size_t		num_merged;
	bool		ok = true;

	input->generation++;
	blocks = lp_alloc(num_ranges * sizeof(LpByteRange));
	if (blocks == NULL)
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory for the read-ahead of \"%s\"",
					   base->name);
	for (size_t i = 0; i < num_ranges; i++)
	{
		uint64_t	start = ranges[i].offset;
		uint64_t	end;

		if (ranges[i].len == 0 || start >= base->size)
			continue;
		end = ranges[i].len > base->size - start ? base->size : start + ranges[i].len;
		start -= start % LP_S3_READ_BLOCK;
		end += (LP_S3_READ_BLOCK - end % LP_S3_READ_BLOCK) % LP_S3_READ_BLOCK;
		if (end > base->size)
			end = base->size;
		blocks[num_blocks++] = (LpByteRange) {start, end - start};
	}
	qsort(blocks, num_blocks, sizeof(LpByteRange), compare_ranges);
	/* merged, then the pieces held already marked; then the old ones dropped */
	num_merged = 0;
	for (size_t i = 0; i < num_blocks;)
	{
		uint64_t	start = blocks[i].offset;
		uint64_t	end = start + blocks[i].len;

		for (i++; i < num_blocks && blocks[i].offset <= end; i++)
			if (blocks[i].offset + blocks[i].len > end)
				end = blocks[i].offset + blocks[i].len;
		if (!held_already(input, start, end - start))
			blocks[num_merged++] = (LpByteRange) {start, end - start};
	}
	for (size_t i = input->num_pieces; i-- > 0;)
		if (input->pieces[i]->generation + 1 < input->generation)
			drop_piece(input, i);
	for (size_t i = 0; i < num_merged && ok; i++)
		if (blocks[i].len <= LP_S3_READAHEAD_BYTES - input->piece_bytes)
			ok = start_piece(input, blocks[i].offset, (size_t) blocks[i].len, err);
	lp_free(blocks);
	return ok;
}

static bool
s3_read_at(LpInput *base, uint64_t offset, void *buffer, size_t len, LpError *err)
{
	S3Input    *input = (S3Input *) base;
	uint64_t	start;
	uint64_t	end;
	bool		served;

	if (len == 0)
		return true;
	if (!read_from_pieces(input, offset, buffer, len, &served, err))
		return false;
	if (served)
		return true;
	if (input->block && offset >= input->block_offset &&
		offset - input->block_offset + len <= input->block_len)
	{
		memcpy(buffer, input->block + (offset - input->block_offset), len);
		return true;
	}
	if (len >= LP_S3_READ_BLOCK)
		return get_range(input->store, input->bucket, input->key, base->size, offset,
						 buffer, len, err);
	/* the aligned blocks around the read: at most two, since len < one */
	start = offset - offset % LP_S3_READ_BLOCK;
	end = offset + len;
	end += (LP_S3_READ_BLOCK - end % LP_S3_READ_BLOCK) % LP_S3_READ_BLOCK;
	if (end > base->size)
		end = base->size;
	if (input->store->cached_input && input->store->cached_input != input)
		drop_block(input->store->cached_input);
	if (input->block == NULL)
	{
		input->block = lp_alloc(2 * LP_S3_READ_BLOCK);
		if (input->block == NULL)
			return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory for a read block of \"%s\"",
						   base->name);
	}
	input->block_len = 0;
	input->store->cached_input = input;
	if (!get_range(input->store, input->bucket, input->key, base->size, start,
				   input->block, (size_t) (end - start), err))
		return false;
	input->block_offset = start;
	input->block_len = (size_t) (end - start);
	memcpy(buffer, input->block + (offset - start), len);
	return true;
}

static void
s3_input_close(LpInput *base)
{
	S3Input    *input = (S3Input *) base;

	drop_block(input);
	while (input->num_pieces > 0)
		drop_piece(input, input->num_pieces - 1);
	lp_free(input->pieces);
	lp_free(input->bucket);
	lp_free(input->key);
	lp_free(input->name);
	lp_free(input);
}

static const LpInputOps s3_input_ops = {
	.read_at = s3_read_at,
	.close = s3_input_close,
	.prefetch = s3_prefetch,
};

static LpInput *
make_input(S3Store *store, const char *path, char *bucket, char *key, uint64_t size,
		   LpError *err)
{
	S3Input    *input = lp_alloc0(sizeof(*input));

	if (input == NULL || (input->name = lp_strdup(path)) == NULL)
	{
		lp_free(input);
		lp_free(bucket);
		lp_free(key);
		lp_fail(err, LP_ERR_NO_MEMORY, "out of memory for an input of \"%s\"", path);
		return NULL;
	}
	input->base.ops = &s3_input_ops;
	input->base.name = input->name;
	input->base.size = size;
	input->store = store;
	input->bucket = bucket;
	input->key = key;
	return &input->base;
}

static LpInput *
s3_open_input(LpStore *store, const char *path, LpError *err)
{
	S3Store    *s3 = (S3Store *) store;
	char	   *bucket;
	char	   *key;
	LpStat		stat;

	if (!lp_s3_split_uri(path, &bucket, &key, err))
		return NULL;
	if (!s3_stat_parsed(s3, bucket, key, &stat, err))
	{
		lp_free(bucket);
		lp_free(key);
		return NULL;
	}
	if (stat.kind != LP_OBJECT_FILE)
	{
		if (stat.kind == LP_OBJECT_DIRECTORY)
			lp_fail(err, LP_ERR_INVALID_ARGUMENT, "\"%s\" is a directory", path);
		else
			lp_fail(err, LP_ERR_NOT_FOUND, "file \"%s\" does not exist", path);
		lp_free(bucket);
		lp_free(key);
		return NULL;
	}
	return make_input(s3, path, bucket, key, stat.size, err);
}

static LpInput *
s3_open_input_lazily(LpStore *store, const char *path, uint64_t size, LpError *err)
{
	char	   *bucket;
	char	   *key;

	if (!lp_s3_split_uri(path, &bucket, &key, err))
		return NULL;
	return make_input((S3Store *) store, path, bucket, key, size, err);
}

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
		if (!get_range(output->store, bucket, key, source_size, offset,
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

/* Stores made per lookup of one endpoint and account may copy from each other. */
static bool
copies_on_server(S3Store *store, LpInput *input)
{
	return input->ops == &s3_input_ops &&
		(((S3Input *) input)->store == store ||
		 lp_s3_client_same_account(((S3Input *) input)->store->client, store->client));
}

static bool
s3_copy_from(LpOutput *base, uint64_t output_offset, LpInput *input_base,
			 uint64_t input_offset, uint64_t len, LpError *err)
{
	S3Output   *output = (S3Output *) base;
	S3Input    *input = (S3Input *) input_base;

	if (!copies_on_server(output->store, input_base))
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
	if (!head_object(output->store, output->bucket, output->key, &found, &stat, err))
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

	if (!head_object(output->store, output->bucket, output->key, &found, &stat, err))
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
		ok = put_object(output->store, output->bucket, output->key, output->name,
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
	.send_part = lp_s3_output_send_part,
	.add_part = lp_s3_output_add_part,
	.copies_part_from = lp_s3_output_copies_on_server,
};

static LpOutput *
s3_create_output(LpStore *store, const char *path, LpError *err)
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
	return output->ops == &s3_output_ops && copies_on_server(((S3Output *) output)->store, input);
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

bool
lp_s3_store_copy_part(LpStore *base, const char *output_uri, const char *upload_id,
					  uint32_t number, LpInput *input, uint64_t offset, uint64_t len,
					  char *etag, size_t etag_capacity, LpError *err)
{
	S3Store    *store = (S3Store *) base;
	char	   *bucket;
	char	   *key;
	bool		ok;

	if (base->ops != &s3_store_ops || !copies_on_server(store, input))
		return lp_fail(err, LP_ERR_UNSUPPORTED,
					   "S3 output \"%s\" cannot copy from \"%s\" on the server",
					   output_uri, input->name);
	if (offset > input->size || len > input->size - offset)
		return lp_fail(err, LP_ERR_CORRUPT,
					   "copy of %" PRIu64 " bytes at offset %" PRIu64 " is beyond the end of \"%s\" (%" PRIu64 " bytes)",
					   len, offset, input->name, input->size);
	if (!lp_s3_split_uri(output_uri, &bucket, &key, err))
		return false;
	ok = lp_s3_copy_part(store->client, bucket, key, upload_id, number,
						 ((S3Input *) input)->bucket, ((S3Input *) input)->key, offset, len,
						 etag, etag_capacity, err);
	lp_free(bucket);
	lp_free(key);
	return ok;
}

/* ---- uploads in progress --------------------------------------------------- */

typedef struct UploadListing
{
	const char *bucket;
	LpUploadCallback callback;
	void	   *arg;
} UploadListing;

static bool
report_upload(void *arg, const LpS3Upload *upload, LpError *err)
{
	UploadListing *listing = arg;
	char	   *uri = canonical_uri(listing->bucket, upload->key);
	bool		ok;

	if (uri == NULL)
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory for a listing of multipart uploads");
	ok = listing->callback(listing->arg, uri, upload->upload_id, upload->initiated.seconds, err);
	lp_free(uri);
	return ok;
}

static bool
s3_list_uploads(LpStore *store, const char *directory, LpUploadCallback callback, void *arg,
				LpError *err)
{
	char	   *bucket;
	char	   *key;
	char	   *prefix;
	bool		ok;

	if (!lp_s3_split_uri(directory, &bucket, &key, err))
		return false;
	prefix = key[0] ? prefix_of(key) : lp_strdup("");
	if (prefix == NULL)
		ok = lp_fail(err, LP_ERR_NO_MEMORY, "out of memory for a listing of multipart uploads");
	else
	{
		UploadListing listing = {bucket, callback, arg};

		ok = lp_s3_multipart_list(((S3Store *) store)->client, bucket, prefix, report_upload,
								  &listing, err);
	}
	lp_free(prefix);
	lp_free(bucket);
	lp_free(key);
	return ok;
}

/*
 * Abort the upload of path with that id, or with bytes not NULL, list the
 * size of its parts instead: both name the upload by its object's key.
 */
static bool
upload_request(LpStore *store, const char *path, const char *upload_id, uint64_t *bytes,
			   LpError *err)
{
	LpS3Client *client = ((S3Store *) store)->client;
	char	   *bucket;
	char	   *key;
	bool		ok;

	if (!lp_s3_split_uri(path, &bucket, &key, err))
		return false;
	if (key[0] == '\0')
		ok = lp_fail(err, LP_ERR_INVALID_ARGUMENT, "\"%s\" names no object", path);
	else if (bytes != NULL)
		ok = lp_s3_multipart_parts_size(client, bucket, key, upload_id, bytes, err);
	else
		ok = lp_s3_multipart_abort(client, bucket, key, upload_id, err);
	lp_free(bucket);
	lp_free(key);
	return ok;
}

static bool
s3_abort_upload(LpStore *store, const char *path, const char *upload_id, LpError *err)
{
	return upload_request(store, path, upload_id, NULL, err);
}

static bool
s3_upload_size(LpStore *store, const char *path, const char *upload_id, uint64_t *bytes,
			   LpError *err)
{
	return upload_request(store, path, upload_id, bytes, err);
}

/* ---- the store ------------------------------------------------------------- */

static const LpStoreOps s3_store_ops = {
	.open_input = s3_open_input,
	.open_input_lazily = s3_open_input_lazily,
	.stat = s3_stat,
	.canonical = s3_canonical,
	.same_object = s3_same_object,
	.list = s3_list,
	.put_if_absent = s3_put_if_absent,
	.put = s3_put,
	.remove = s3_remove,
	.remove_tree = s3_remove_tree,
	.remove_file = s3_remove_file,
	.create_output = s3_create_output,
	.list_uploads = s3_list_uploads,
	.abort_upload = s3_abort_upload,
	.upload_size = s3_upload_size,
	.copy_part = lp_s3_store_copy_part,
};

LpStore *
lp_s3_store_create(const LpS3Config *config, LpS3Transport *transport, LpError *err)
{
	S3Store    *store;
	LpS3Client *client = lp_s3_client_create(config, transport, err);

	if (client == NULL)
		return NULL;
	store = lp_alloc0(sizeof(*store));
	if (store == NULL)
	{
		lp_s3_client_free(client);
		lp_fail(err, LP_ERR_NO_MEMORY, "out of memory for an S3 store");
		return NULL;
	}
	store->base.ops = &s3_store_ops;
	store->client = client;
	return &store->base;
}

void
lp_s3_store_free(LpStore *base)
{
	S3Store    *store = (S3Store *) base;

	if (store == NULL)
		return;
	lp_s3_client_free(store->client);
	lp_free(store);
}
