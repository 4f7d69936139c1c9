/*
 * lp_s3_store.c - an LpStore over S3: objects and prefixes (HEAD, listings,
 * conditional PUTs, DELETEs, removal of a tree), the uploads its outputs
 * left unfinished, and the store itself.  Its inputs are in lp_s3_input.c,
 * its outputs in lp_s3_output.c.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "base/lp_alloc.h"
#include "base/lp_interrupt.h"
#include "io/lp_s3_store.h"
#include "io/lp_s3_store_internal.h"
#include "io/lp_s3_uri.h"
#include "io/lp_s3_xml.h"

static const LpStoreOps s3_store_ops;

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


static bool
s3_stat(LpStore *store, const char *path, bool follow_symlinks, LpStat *result, LpError *err)
{
	char	   *bucket;
	char	   *key;
	bool		ok;

	(void) follow_symlinks;
	if (!lp_s3_split_uri(path, &bucket, &key, err))
		return false;
	ok = lp_s3_stat_parsed((S3Store *) store, bucket, key, result, err);
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
	if (lp_s3_stat_parsed((S3Store *) store, bucket, key, &stat, err))
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
	prefix = key[0] ? lp_s3_prefix_of(key) : lp_strdup("");
	if (prefix == NULL)
	{
		lp_free(bucket);
		lp_free(key);
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory for a listing");
	}
	entries.prefix = prefix;
	entries.prefix_len = strlen(prefix);
	ok = lp_s3_list_pages((S3Store *) store, bucket, prefix, "/", NULL, list_entry_page, &entries, err);
	/* S3 has no empty directories: nothing under a prefix is no directory */
	if (ok && !entries.any && key[0] != '\0')
		ok = lp_fail(err, LP_ERR_NOT_FOUND, "directory \"%s\" does not exist", directory);
	lp_free(prefix);
	lp_free(bucket);
	lp_free(key);
	return ok;
}

/* ---- whole objects --------------------------------------------------------- */

static bool
s3_put_object(LpStore *store, const char *path, const void *data, size_t len,
			  bool if_absent, LpError *err)
{
	char	   *bucket;
	char	   *key;
	bool		ok;

	if (!lp_s3_split_uri(path, &bucket, &key, err))
		return false;
	ok = lp_s3_put_object((S3Store *) store, bucket, key, path, data, len, if_absent, err);
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
	prefix = lp_s3_prefix_of(key);
	if (prefix == NULL)
		ok = lp_fail(err, LP_ERR_NO_MEMORY, "out of memory for an S3 key");
	else if (!(ok = lp_s3_head_object(s3, bucket, key, &found, &stat, err)))
		;
	else if (found)
	{
		result->outcome = LP_TREE_NOT_DIRECTORY;
		ok = lp_fail(err, LP_ERR_INVALID_ARGUMENT,
					 "\"s3://%s/%s\" is a file, not a directory: left alone", bucket, key);
	}
	else
	{
		ok = lp_s3_list_pages(s3, bucket, prefix, NULL, NULL, remove_tree_page, &removal, err);
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
	ok = lp_s3_head_object(s3, bucket, key, &found, &stat, err);
	if (ok && found)
		ok = *removed = delete_object(s3, bucket, key, err);
	else if (ok)
	{
		ok = lp_s3_prefix_exists(s3, bucket, key, &found, err);
		if (ok && found)
			ok = lp_fail(err, LP_ERR_INVALID_ARGUMENT,
						 "\"s3://%s/%s\" is a directory, not a file: left alone", bucket, key);
	}
	lp_free(bucket);
	lp_free(key);
	return ok;
}

/* ---- parts written for outputs of other processes ------------------------ */

bool
lp_s3_store_copy_part(LpStore *base, const char *output_uri, const char *upload_id,
					  uint32_t number, LpInput *input, uint64_t offset, uint64_t len,
					  char *etag, size_t etag_capacity, LpError *err)
{
	S3Input    *source = base->ops == &s3_store_ops ?
		lp_s3_input_copyable((S3Store *) base, input) : NULL;
	char	   *bucket;
	char	   *key;
	bool		ok;

	if (source == NULL)
		return lp_fail(err, LP_ERR_UNSUPPORTED,
					   "S3 output \"%s\" cannot copy from \"%s\" on the server",
					   output_uri, input->name);
	if (offset > input->size || len > input->size - offset)
		return lp_fail(err, LP_ERR_CORRUPT,
					   "copy of %" PRIu64 " bytes at offset %" PRIu64 " is beyond the end of \"%s\" (%" PRIu64 " bytes)",
					   len, offset, input->name, input->size);
	if (!lp_s3_split_uri(output_uri, &bucket, &key, err))
		return false;
	ok = lp_s3_copy_part(((S3Store *) base)->client, bucket, key, upload_id, number,
						 source->bucket, source->key, offset, len,
						 etag, etag_capacity, err);
	lp_free(bucket);
	lp_free(key);
	return ok;
}

/*
 * A writer of one numbered part of another process's upload: either one
 * copy_from of the whole part from an object the store can copy
 * (UploadPartCopy at end_part), or the part's bytes written front to back
 * into memory (one UploadPart at end_part).
 */
typedef struct S3PartWriter
{
	LpOutput	base;
	S3Store    *store;
	char	   *name;			/* the output's URI */
	char	   *upload_id;
	uint32_t	number;
	uint64_t	offset;			/* of the part in the output */
	uint64_t	length;
	uint8_t    *buffer;			/* length bytes once written */
	size_t		written;
	LpInput    *copy_source;	/* the part is a copy of it, or NULL */
	uint64_t	copy_offset;
} S3PartWriter;

static void
free_part_writer(S3PartWriter *part)
{
	lp_free(part->buffer);
	lp_free(part->upload_id);
	lp_free(part->name);
	lp_free(part);
}

static bool
part_write_at(LpOutput *base, uint64_t offset, const void *data, size_t len, LpError *err)
{
	S3PartWriter *part = (S3PartWriter *) base;

	if (part->copy_source != NULL || offset != part->offset + part->written ||
		len > part->length - part->written)
		return lp_fail(err, LP_ERR_INTERNAL,
					   "write of %zu bytes at offset %" PRIu64 " is not the next of part %" PRIu32 " of \"%s\"",
					   len, offset, part->number, part->name);
	if (part->buffer == NULL && len > 0)
	{
		part->buffer = lp_alloc((size_t) part->length);
		if (part->buffer == NULL)
			return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory for part %" PRIu32 " of \"%s\"",
						   part->number, part->name);
	}
	memcpy(part->buffer + part->written, data, len);
	part->written += len;
	return true;
}

/* Only a copy of the whole part is made on the server; callers read and write the rest. */
static bool
part_copy_from(LpOutput *base, uint64_t output_offset, LpInput *input, uint64_t input_offset,
			   uint64_t len, LpError *err)
{
	S3PartWriter *part = (S3PartWriter *) base;

	if (output_offset != part->offset || len != part->length || part->written > 0 ||
		part->copy_source != NULL || lp_s3_input_copyable(part->store, input) == NULL)
		return lp_fail(err, LP_ERR_UNSUPPORTED,
					   "part %" PRIu32 " of \"%s\" cannot copy these bytes of \"%s\" on the server",
					   part->number, part->name, input->name);
	part->copy_source = input;
	part->copy_offset = input_offset;
	return true;
}

static bool
part_end(LpOutput *base, char *receipt, size_t receipt_capacity, LpError *err)
{
	S3PartWriter *part = (S3PartWriter *) base;
	char	   *bucket;
	char	   *key;
	bool		ok;

	if (part->copy_source != NULL)
		ok = lp_s3_store_copy_part(&part->store->base, part->name, part->upload_id, part->number,
								   part->copy_source, part->copy_offset, part->length,
								   receipt, receipt_capacity, err);
	else if (part->written != part->length)
		ok = lp_fail(err, LP_ERR_INTERNAL, "part %" PRIu32 " of \"%s\" ended with %zu of %" PRIu64 " bytes written",
					 part->number, part->name, part->written, part->length);
	else if ((ok = lp_s3_split_uri(part->name, &bucket, &key, err)))
	{
		ok = lp_s3_upload_part(part->store->client, bucket, key, part->upload_id, part->number,
							   part->buffer, part->written, receipt, receipt_capacity, err);
		lp_free(bucket);
		lp_free(key);
	}
	free_part_writer(part);
	return ok;
}

static bool
part_publish(LpOutput *base, LpError *err)
{
	free_part_writer((S3PartWriter *) base);
	return lp_fail(err, LP_ERR_INTERNAL, "a part is ended with end_part, not published");
}

static void
part_abort(LpOutput *base)
{
	free_part_writer((S3PartWriter *) base);
}

static const LpOutputOps s3_part_writer_ops = {
	.write_at = part_write_at,
	.copy_from = part_copy_from,
	.publish = part_publish,
	.abort = part_abort,
	.end_part = part_end,
};

static LpOutput *
s3_open_part(LpStore *store, const char *output_uri, const char *upload_id, uint32_t number,
			 uint64_t offset, uint64_t length, LpError *err)
{
	S3PartWriter *part;

	if (number == 0 || number > LP_S3_MAX_PARTS || length > LP_S3_MAX_PART_SIZE)
	{
		lp_fail(err, LP_ERR_INVALID_ARGUMENT,
				"part %" PRIu32 " of %" PRIu64 " bytes is not one S3 allows", number, length);
		return NULL;
	}
	part = lp_alloc0(sizeof(*part));
	if (part == NULL || (part->name = lp_strdup(output_uri)) == NULL ||
		(part->upload_id = lp_strdup(upload_id)) == NULL)
	{
		if (part != NULL)
			free_part_writer(part);
		lp_fail(err, LP_ERR_NO_MEMORY, "out of memory for a part of \"%s\"", output_uri);
		return NULL;
	}
	part->base.ops = &s3_part_writer_ops;
	part->base.name = part->name;
	part->store = (S3Store *) store;
	part->number = number;
	part->offset = offset;
	part->length = length;
	return &part->base;
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
	prefix = key[0] ? lp_s3_prefix_of(key) : lp_strdup("");
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
	.open_input = lp_s3_open_input,
	.open_input_lazily = lp_s3_open_input_lazily,
	.stat = s3_stat,
	.canonical = s3_canonical,
	.same_object = s3_same_object,
	.list = s3_list,
	.put_if_absent = s3_put_if_absent,
	.put = s3_put,
	.remove = s3_remove,
	.remove_tree = s3_remove_tree,
	.remove_file = s3_remove_file,
	.create_output = lp_s3_create_output,
	.list_uploads = s3_list_uploads,
	.abort_upload = s3_abort_upload,
	.upload_size = s3_upload_size,
	.open_part = s3_open_part,
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
