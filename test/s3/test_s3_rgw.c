/*
 * test_s3_rgw.c - the S3 store and multipart upload of the core against a
 * real S3 server (Ceph RGW from scripts/s3-server.sh; the s3 test layer
 * starts it and passes its settings in LP_S3_* variables).  Every test works
 * under a key prefix of its own run.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "base/lp_alloc.h"
#include "io/lp_s3_client.h"
#include "io/lp_s3_multipart.h"
#include "io/lp_s3_store.h"
#include "lp_test.h"
#include "lp_test_curl.h"

typedef struct Server
{
	LpS3Config	config;
	LpS3Transport *transport;
	LpStore    *store;
	const char *bucket;
	char		root[256];		/* s3://bucket/run-PID-TIME */
	char		prefix[128];	/* run-PID-TIME */
} Server;

static bool
server_open(Server *server, const char *secret)
{
	const char *endpoint = getenv("LP_S3_ENDPOINT");
	LpError		err;

	memset(server, 0, sizeof(*server));
	if (endpoint == NULL || getenv("LP_S3_BUCKET") == NULL)
	{
		LP_CHECK_MSG(false, "LP_S3_ENDPOINT and LP_S3_BUCKET are not set: run these tests with test/run.sh --only s3");
		return false;
	}
	server->bucket = getenv("LP_S3_BUCKET");
	server->config = (LpS3Config) {
		.endpoint = endpoint,
		.region = getenv("LP_S3_REGION") ? getenv("LP_S3_REGION") : "us-east-1",
		.url_style = LP_S3_URL_PATH,
		.allow_http = true,
		.credentials = {
			.access_key_id = getenv("LP_S3_ACCESS_KEY_ID"),
			.secret_access_key = secret ? secret : getenv("LP_S3_SECRET_ACCESS_KEY"),
		},
		.max_retries = 3,
		.retry_base_delay_ms = 50,
		.retry_max_delay_ms = 500,
		.connect_timeout_ms = 5000,
		.request_timeout_ms = 60000,
	};
	server->transport = lp_test_curl_create();
	LP_CHECK(server->transport != NULL);
	server->store = lp_s3_store_create(&server->config, server->transport, &err);
	LP_CHECK_MSG(server->store != NULL, "store: %.300s", err.message);
	snprintf(server->prefix, sizeof(server->prefix), "run-%d-%lld", (int) getpid(),
			 (long long) time(NULL));
	snprintf(server->root, sizeof(server->root), "s3://%s/%s", server->bucket, server->prefix);
	return server->store != NULL;
}

static void
server_close(Server *server)
{
	lp_s3_store_free(server->store);
	lp_test_curl_free(server->transport);
}

static void
uri(const Server *server, const char *relative, char *buffer, size_t size)
{
	snprintf(buffer, size, "%s/%s", server->root, relative);
}

static uint8_t *
pattern(size_t len, unsigned seed)
{
	uint8_t    *data = malloc(len ? len : 1);
	uint32_t	x = seed * 2654435761u + 1;

	for (size_t i = 0; i < len; i++)
	{
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		data[i] = (uint8_t) x;
	}
	return data;
}

/* The object at path holds exactly len bytes of data (read in three ranges). */
static void
check_object(Server *server, const char *path, const uint8_t *data, size_t len)
{
	LpError		err;
	LpInput    *input = server->store->ops->open_input(server->store, path, &err);
	uint8_t    *read;

	LP_CHECK_MSG(input != NULL, "open %s: %.300s", path, err.message);
	if (input == NULL)
		return;
	LP_CHECK_EQ_U64(input->size, len);
	read = malloc(len ? len : 1);
	if (len > 0)
	{
		size_t		third = len / 3;

		LP_CHECK_MSG(lp_input_read(input, 0, read, third, &err), "read: %.300s", err.message);
		LP_CHECK_MSG(lp_input_read(input, third, read + third, len - 2 * third, &err),
					 "read: %.300s", err.message);
		LP_CHECK_MSG(lp_input_read(input, len - third, read + len - third, third, &err),
					 "read: %.300s", err.message);
		LP_CHECK_MSG(memcmp(read, data, len) == 0, "bytes of %s differ", path);
	}
	free(read);
	lp_input_close(input);
}

typedef struct Names
{
	char		names[16][64];
	int			count;
} Names;

static bool
collect_name(void *arg, const char *name, LpError *err)
{
	Names	   *names = arg;

	(void) err;
	if (names->count < 16)
		snprintf(names->names[names->count++], 64, "%s", name);
	return true;
}

static bool
has_name(const Names *names, const char *name)
{
	for (int i = 0; i < names->count; i++)
		if (strcmp(names->names[i], name) == 0)
			return true;
	return false;
}

LP_TEST(s3_rgw_objects_stat_list_remove)
{
	Server		server;
	LpError		err;
	LpStat		st;
	Names		names = {0};
	char		path[512];
	char		dir[512];
	char	   *canonical;
	uint8_t    *data = pattern(300000, 1);

	if (!server_open(&server, NULL))
		return;
	uri(&server, "ds/data/a.lance", path, sizeof(path));
	LP_CHECK_MSG(server.store->ops->put(server.store, path, data, 300000, &err), "put: %.300s", err.message);
	uri(&server, "ds/_versions/1.manifest", dir, sizeof(dir));
	LP_CHECK_MSG(server.store->ops->put(server.store, dir, "m", 1, &err), "put: %.300s", err.message);
	check_object(&server, path, data, 300000);

	LP_CHECK_MSG(server.store->ops->stat(server.store, path, true, &st, &err), "stat: %.300s", err.message);
	LP_CHECK(st.kind == LP_OBJECT_FILE);
	LP_CHECK_EQ_U64(st.size, 300000);
	LP_CHECK_MSG(st.mtime > time(NULL) - 600 && st.mtime < time(NULL) + 600, "mtime %lld", (long long) st.mtime);
	uri(&server, "ds", dir, sizeof(dir));
	LP_CHECK(server.store->ops->stat(server.store, dir, true, &st, &err) && st.kind == LP_OBJECT_DIRECTORY);
	uri(&server, "d", dir, sizeof(dir));
	LP_CHECK(server.store->ops->stat(server.store, dir, true, &st, &err) && st.kind == LP_OBJECT_ABSENT);

	uri(&server, "ds", dir, sizeof(dir));
	LP_CHECK_MSG(server.store->ops->list(server.store, dir, collect_name, &names, &err), "list: %.300s", err.message);
	LP_CHECK_EQ_U64(names.count, 2);
	LP_CHECK(has_name(&names, "data") && has_name(&names, "_versions"));
	uri(&server, "nothing-here", dir, sizeof(dir));
	LP_CHECK(!server.store->ops->list(server.store, dir, collect_name, &names, &err) &&
			 err.code == LP_ERR_NOT_FOUND);

	uri(&server, "ds/", dir, sizeof(dir));
	canonical = server.store->ops->canonical(server.store, dir, "dataset", &err);
	uri(&server, "ds", dir, sizeof(dir));
	LP_CHECK_MSG(canonical && strcmp(canonical, dir) == 0, "canonical %.200s", canonical ? canonical : "(null)");
	lp_free(canonical);
	LP_CHECK(server.store->ops->same_object(server.store, path, path));
	LP_CHECK(!server.store->ops->same_object(server.store, path, dir));

	LP_CHECK_MSG(server.store->ops->remove(server.store, path, &err), "remove: %.300s", err.message);
	LP_CHECK(server.store->ops->stat(server.store, path, true, &st, &err) && st.kind == LP_OBJECT_ABSENT);
	LP_CHECK(server.store->ops->open_input(server.store, path, &err) == NULL && err.code == LP_ERR_NOT_FOUND);
	LP_CHECK_MSG(strstr(err.message, path) != NULL, "%.300s", err.message);
	free(data);
	server_close(&server);
}

LP_TEST(s3_rgw_conditional_put_loses)
{
	Server		server;
	LpError		err;
	char		path[512];
	LpInput    *input;
	char		byte = 0;

	if (!server_open(&server, NULL))
		return;
	uri(&server, "_versions/18446744073709551614.manifest", path, sizeof(path));
	LP_CHECK_MSG(server.store->ops->put_if_absent(server.store, path, "A", 1, &err), "first: %.300s", err.message);
	LP_CHECK(!server.store->ops->put_if_absent(server.store, path, "B", 1, &err));
	LP_CHECK_MSG(err.code == LP_ERR_ALREADY_EXISTS, "%s: %.300s", lp_error_code_name(err.code), err.message);
	LP_CHECK_MSG(strstr(err.message, "HTTP 412 PreconditionFailed") != NULL, "%.300s", err.message);
	input = server.store->ops->open_input(server.store, path, &err);
	LP_CHECK(input != NULL && lp_input_read(input, 0, &byte, 1, &err) && byte == 'A');
	lp_input_close(input);
	server_close(&server);
}

/* Uploads in progress under the run's prefix (ListMultipartUploads). */
/* What list_uploads gives: the uploads' count, and the last one's path, id and start. */
typedef struct ListedUploads
{
	size_t		count;
	char		path[512];
	char		upload_id[256];
	int64_t		initiated;
} ListedUploads;

static bool
count_upload(void *arg, const char *path, const char *upload_id, int64_t initiated, LpError *err)
{
	ListedUploads *listed = arg;

	(void) err;
	listed->count++;
	snprintf(listed->path, sizeof(listed->path), "%s", path);
	snprintf(listed->upload_id, sizeof(listed->upload_id), "%s", upload_id);
	listed->initiated = initiated;
	return true;
}

/* The uploads in progress under the run's prefix (ListMultipartUploads through the store). */
static ListedUploads
list_uploads(Server *server)
{
	ListedUploads listed = {0};
	LpError		err;

	if (!server->store->ops->list_uploads(server->store, server->root, count_upload, &listed, &err))
	{
		LP_CHECK_MSG(false, "list uploads: %.300s", err.message);
		listed.count = SIZE_MAX;
	}
	return listed;
}

static size_t
open_uploads(Server *server)
{
	return list_uploads(server).count;
}

LP_TEST(s3_rgw_uploads_left_behind_are_listed_and_aborted)
{
	Server		server;
	LpS3Client *client;
	LpS3Multipart *upload;
	LpError		err;
	char		key[256];
	char		path[512];
	ListedUploads listed;
	int64_t		now = (int64_t) time(NULL);

	if (!server_open(&server, NULL))
		return;
	client = lp_s3_client_create(&server.config, server.transport, &err);
	snprintf(key, sizeof(key), "%s/left/behind.lance", server.prefix);
	upload = lp_s3_multipart_start(client, server.bucket, key, &err);
	LP_CHECK_MSG(upload != NULL, "start: %.300s", err.message);
	uri(&server, "left/behind.lance", path, sizeof(path));
	listed = list_uploads(&server);
	LP_CHECK_EQ_U64(listed.count, 1);
	LP_CHECK_MSG(strcmp(listed.path, path) == 0, "listed \"%.200s\"", listed.path);
	LP_CHECK_MSG(upload != NULL && strcmp(listed.upload_id, lp_s3_multipart_upload_id(upload)) == 0,
				 "listed id \"%.200s\"", listed.upload_id);
	LP_CHECK_MSG(listed.initiated >= now - 120 && listed.initiated <= now + 120,
				 "initiated %lld, now %lld", (long long) listed.initiated, (long long) now);
	LP_CHECK_MSG(server.store->ops->abort_upload(server.store, path, listed.upload_id, &err),
				 "abort: %.300s", err.message);
	LP_CHECK_EQ_U64(open_uploads(&server), 0);
	/* gone already: not an error */
	LP_CHECK(server.store->ops->abort_upload(server.store, path, listed.upload_id, &err));
	lp_s3_multipart_end(upload);
	lp_s3_client_free(client);
	server_close(&server);
}

LP_TEST(s3_rgw_multipart_minimum_part_size_refused_and_aborted)
{
	Server		server;
	LpS3Client *client;
	LpS3Multipart *upload;
	LpError		err;
	char		key[256];
	uint8_t    *small = pattern(1 << 20, 2);
	LpStat		st;
	char		path[512];

	if (!server_open(&server, NULL))
		return;
	client = lp_s3_client_create(&server.config, server.transport, &err);
	snprintf(key, sizeof(key), "%s/too-small.bin", server.prefix);
	upload = lp_s3_multipart_start(client, server.bucket, key, &err);
	LP_CHECK_MSG(upload != NULL, "start: %.300s", err.message);
	LP_CHECK(open_uploads(&server) == 1);
	LP_CHECK(lp_s3_multipart_upload_part(upload, small, 1 << 20, &err));
	LP_CHECK(lp_s3_multipart_upload_part(upload, small, 1 << 20, &err));
	LP_CHECK(!lp_s3_multipart_complete(upload, false, &err));
	LP_CHECK_MSG(strstr(err.message, "EntityTooSmall") != NULL && strstr(err.message, "HTTP 400") != NULL,
				 "%.300s", err.message);
	LP_CHECK_MSG(strstr(err.message, "request id tx") != NULL, "%.300s", err.message);
	/* the failed completion aborted the upload: nothing left behind */
	LP_CHECK_EQ_U64(open_uploads(&server), 0);
	lp_s3_multipart_end(upload);
	uri(&server, "too-small.bin", path, sizeof(path));
	LP_CHECK(server.store->ops->stat(server.store, path, true, &st, &err) && st.kind == LP_OBJECT_ABSENT);
	lp_s3_client_free(client);
	free(small);
	server_close(&server);
}

/*
 * The object written in LP_S3_UPLOAD_PART_SIZE parts (the last one longer,
 * up to LP_S3_MIN_PART_SIZE more) has the ETag S3 gives
 * multipart objects, "<MD5 of the parts' MD5s>-N", as lp_s3_multipart relies
 * on to recognize a completion whose answer was lost.
 */
static void
check_multipart_etag(Server *server, const char *relative, const uint8_t *data, size_t len)
{
	/* full parts while the buffer fills up to a part and a minimum part more */
	size_t		full_parts = len < LP_S3_UPLOAD_PART_SIZE + LP_S3_MIN_PART_SIZE ? 0 :
		(len - LP_S3_MIN_PART_SIZE) / LP_S3_UPLOAD_PART_SIZE;
	size_t		parts = full_parts + 1;
	unsigned char *digests = malloc(parts * 16);
	unsigned char digest[16];
	unsigned int digest_len;
	char		expected[64];
	char		key[256];
	size_t		used;
	LpS3Client *client;
	LpS3Call	call = {.method = "HEAD", .bucket = server->bucket, .key = key};
	LpS3HttpResponse response;
	LpError		err;

	for (size_t i = 0; i < parts; i++)
	{
		size_t		part_len = i < full_parts ? LP_S3_UPLOAD_PART_SIZE : len - i * LP_S3_UPLOAD_PART_SIZE;

		EVP_Digest(data + i * LP_S3_UPLOAD_PART_SIZE, part_len, digests + 16 * i, &digest_len, EVP_md5(), NULL);
	}
	EVP_Digest(digests, parts * 16, digest, &digest_len, EVP_md5(), NULL);
	used = (size_t) snprintf(expected, sizeof(expected), "\"");
	for (int b = 0; b < 16; b++)
		used += (size_t) snprintf(expected + used, sizeof(expected) - used, "%02x", digest[b]);
	snprintf(expected + used, sizeof(expected) - used, "-%zu\"", parts);
	snprintf(key, sizeof(key), "%s/%s", server->prefix, relative);
	client = lp_s3_client_create(&server->config, server->transport, &err);
	LP_CHECK(client && lp_s3_call_checked(client, &call, "examine", &response, &err));
	LP_CHECK_MSG(strcmp(response.etag, expected) == 0, "ETag %.100s, expected %.100s", response.etag, expected);
	lp_s3_http_response_clear(&response);
	lp_s3_client_free(client);
	free(digests);
}

LP_TEST(s3_rgw_output_multipart_and_server_side_copy)
{
	Server		server;
	LpError		err;
	char		source[512];
	char		target[512];
	char		copied[512];
	size_t		len = 21 << 20;
	uint8_t    *data = pattern(len, 3);
	uint8_t    *expected = malloc(len + 100);
	LpOutput   *output;
	LpInput    *input;
	unsigned	before;

	if (!server_open(&server, NULL))
		return;
	/* written in 1 MiB writes: three parts, the last one short */
	uri(&server, "written.bin", source, sizeof(source));
	output = server.store->ops->create_output(server.store, source, &err);
	for (size_t off = 0; output && off < len; off += 1 << 20)
		LP_CHECK_MSG(output->ops->write_at(output, off, data + off, 1 << 20, &err), "write: %.300s", err.message);
	LP_CHECK_MSG(output && output->ops->publish(output, &err), "publish: %.300s", err.message);
	check_object(&server, source, data, len);
	check_multipart_etag(&server, "written.bin", data, len);

	/* 100 bytes written, then 20 MiB copied in 1 MiB steps, then 6 MiB more copied */
	uri(&server, "copied.bin", copied, sizeof(copied));
	input = server.store->ops->open_input(server.store, source, &err);
	output = server.store->ops->create_output(server.store, copied, &err);
	LP_CHECK(input && output);
	if (input && output)
	{
		memcpy(expected, data + 5, 100);
		LP_CHECK(output->ops->write_at(output, 0, data + 5, 100, &err));
		before = lp_test_curl_requests(server.transport);
		for (size_t off = 0; off < (20u << 20); off += 1 << 20)
			LP_CHECK_MSG(output->ops->copy_from(output, 100 + off, input, off, 1 << 20, &err),
						 "copy: %.300s", err.message);
		memcpy(expected + 100, data, 20u << 20);
		LP_CHECK_MSG(output->ops->publish(output, &err), "publish: %.300s", err.message);
		/* the first 5 MiB of copies joined the 100 bytes in the buffer (5 GETs); the rest was copied */
		LP_CHECK_MSG(lp_test_curl_requests(server.transport) - before == 10, "%u requests",
					 lp_test_curl_requests(server.transport) - before);
		check_object(&server, copied, expected, 100 + (20u << 20));
	}
	lp_input_close(input);

	/* a pure server-side copy: 12 MiB from offset 3 MiB, then a 64-byte write */
	uri(&server, "server-side.bin", target, sizeof(target));
	input = server.store->ops->open_input(server.store, source, &err);
	output = server.store->ops->create_output(server.store, target, &err);
	LP_CHECK(input && output);
	if (input && output)
	{
		before = lp_test_curl_requests(server.transport);
		for (size_t off = 0; off < (12u << 20); off += 1 << 20)
			LP_CHECK(output->ops->copy_from(output, off, input, (3u << 20) + off, 1 << 20, &err));
		LP_CHECK(output->ops->write_at(output, 12u << 20, data, 64, &err));
		LP_CHECK_MSG(output->ops->publish(output, &err), "publish: %.300s", err.message);
		/* create, one copied part, one uploaded part, HEAD, complete: no GET of the copied bytes */
		LP_CHECK_EQ_U64(lp_test_curl_requests(server.transport) - before, 5);
		memcpy(expected, data + (3u << 20), 12u << 20);
		memcpy(expected + (12u << 20), data, 64);
		check_object(&server, target, expected, (12u << 20) + 64);
	}
	lp_input_close(input);

	/* publication never replaces an object */
	output = server.store->ops->create_output(server.store, target, &err);
	LP_CHECK(output->ops->write_at(output, 0, "x", 1, &err));
	LP_CHECK(!output->ops->publish(output, &err) && err.code == LP_ERR_ALREADY_EXISTS);
	LP_CHECK_EQ_U64(open_uploads(&server), 0);
	free(data);
	free(expected);
	server_close(&server);
}

/*
 * Parts by number, as parallel workers write them: part 3 sent first, part 2
 * copied through a second store (another process's), part 1 sent last; the
 * object holds them in number order.  A refused copy aborts nothing; the
 * output's abort does.
 */
LP_TEST(s3_rgw_output_parts_by_number)
{
	Server		server;
	Server		other;
	LpError		err;
	char		source[512];
	char		target[512];
	char		etag[LP_S3_PART_ETAG_MAX];
	size_t		len = 6 << 20;
	uint8_t    *data = pattern(len, 7);
	uint8_t    *expected = malloc(2 * len + 10);
	LpOutput   *output;
	LpInput    *input;
	LpInput    *other_input;
	const char *upload_id;

	if (!server_open(&server, NULL) || !server_open(&other, NULL))
		return;
	uri(&server, "numbered-source.bin", source, sizeof(source));
	LP_CHECK_MSG(server.store->ops->put(server.store, source, data, len, &err), "put: %.300s", err.message);
	uri(&server, "numbered.bin", target, sizeof(target));
	output = server.store->ops->create_output(server.store, target, &err);
	input = server.store->ops->open_input(server.store, source, &err);
	other_input = other.store->ops->open_input(other.store, source, &err);
	LP_CHECK(output && input && other_input);
	LP_CHECK(lp_s3_output_copies_on_server(output, other_input));
	upload_id = lp_s3_output_start_parts(output, &err);
	LP_CHECK_MSG(upload_id != NULL, "start: %.300s", err.message);
	/* the output is no longer written front to back */
	LP_CHECK(!output->ops->write_at(output, 0, data, 1, &err) && err.code == LP_ERR_INTERNAL);
	LP_CHECK_MSG(lp_s3_output_send_part(output, 3, data, 10, &err), "send 3: %.300s", err.message);
	LP_CHECK_MSG(lp_s3_store_copy_part(other.store, target, upload_id, 2, other_input, 0, len,
									   etag, sizeof(etag), &err), "copy 2: %.300s", err.message);
	LP_CHECK_MSG(lp_s3_output_add_part(output, 2, etag, &err), "add 2: %.300s", err.message);
	LP_CHECK_MSG(lp_s3_output_send_part(output, 1, data + 1, len, &err), "send 1: %.300s", err.message);
	/* a copy beyond the source's end is refused before any request */
	LP_CHECK(!lp_s3_store_copy_part(other.store, target, upload_id, 4, other_input, 1, len,
									etag, sizeof(etag), &err) && err.code == LP_ERR_CORRUPT);
	LP_CHECK_MSG(output->ops->publish(output, &err), "publish: %.300s", err.message);
	memcpy(expected, data + 1, len);
	memcpy(expected + len, data, len);
	memcpy(expected + 2 * len, data, 10);
	check_object(&server, target, expected, 2 * len + 10);

	/* an output aborted after its parts started leaves no upload */
	uri(&server, "numbered-aborted.bin", target, sizeof(target));
	output = server.store->ops->create_output(server.store, target, &err);
	LP_CHECK(output && lp_s3_output_start_parts(output, &err) != NULL);
	LP_CHECK(output && lp_s3_output_send_part(output, 1, data, len, &err));
	output->ops->abort(output);
	LP_CHECK_EQ_U64(open_uploads(&server), 0);
	lp_input_close(input);
	lp_input_close(other_input);
	free(data);
	free(expected);
	server_close(&other);
	server_close(&server);
}

LP_TEST(s3_rgw_remove_tree_and_file)
{
	Server		server;
	LpError		err;
	LpTreeRemoval removal;
	bool		removed;
	char		path[512];
	const char *keys[] = {"t/data/_parts/p1/a.lance", "t/data/_parts/p1/b.lance", "t/data/_parts/p1/sub/c", "t/data/_parts/p10/keep"};

	if (!server_open(&server, NULL))
		return;
	for (int i = 0; i < 4; i++)
	{
		uri(&server, keys[i], path, sizeof(path));
		LP_CHECK(server.store->ops->put(server.store, path, "1234", 4, &err));
	}
	uri(&server, "t", path, sizeof(path));
	LP_CHECK_MSG(server.store->ops->remove_tree(server.store, path, "data/_parts/p1", &removal, &err),
				 "remove_tree: %.300s", err.message);
	LP_CHECK(removal.outcome == LP_TREE_REMOVED);
	LP_CHECK_EQ_U64(removal.removed_entries, 3);
	LP_CHECK_EQ_U64(removal.removed_bytes, 12);
	LP_CHECK(server.store->ops->remove_tree(server.store, path, "data/_parts/p1", &removal, &err) &&
			 removal.outcome == LP_TREE_ABSENT);
	LP_CHECK(!server.store->ops->remove_tree(server.store, path, "data/_parts/p10/keep", &removal, &err) &&
			 removal.outcome == LP_TREE_NOT_DIRECTORY);
	LP_CHECK(!server.store->ops->remove_tree(server.store, path, "data/../x", &removal, &err) &&
			 err.code == LP_ERR_INVALID_ARGUMENT);
	LP_CHECK(!server.store->ops->remove_file(server.store, path, "data/_parts/p10", &removed, &err) &&
			 err.code == LP_ERR_INVALID_ARGUMENT && !removed);
	LP_CHECK(server.store->ops->remove_file(server.store, path, "data/_parts/p10/keep", &removed, &err) && removed);
	LP_CHECK(server.store->ops->remove_file(server.store, path, "data/_parts/p10/keep", &removed, &err) && !removed);
	server_close(&server);
}

LP_TEST(s3_rgw_errors_name_status_code_and_request_id)
{
	Server		server;
	LpError		err;
	LpStat		st;
	char		path[512];

	if (!server_open(&server, "wrong-secret"))
		return;
	uri(&server, "x", path, sizeof(path));
	LP_CHECK(!server.store->ops->put(server.store, path, "1", 1, &err));
	LP_CHECK_MSG(err.code == LP_ERR_CREDENTIALS, "%s: %.300s", lp_error_code_name(err.code), err.message);
	LP_CHECK_MSG(strstr(err.message, "HTTP 403 SignatureDoesNotMatch") != NULL, "%.300s", err.message);
	LP_CHECK_MSG(strstr(err.message, "wrong-secret") == NULL, "%.300s", err.message);
	/* a HEAD carries no error code: the store asks again with a GET */
	LP_CHECK(!server.store->ops->stat(server.store, path, true, &st, &err) && err.code == LP_ERR_CREDENTIALS);
	server_close(&server);

	if (!server_open(&server, NULL))
		return;
	LP_CHECK(!server.store->ops->put(server.store, "s3://no-such-bucket-lp/x", "1", 1, &err));
	LP_CHECK_MSG(err.code == LP_ERR_NOT_FOUND && strstr(err.message, "NoSuchBucket") != NULL,
				 "%s: %.300s", lp_error_code_name(err.code), err.message);
	LP_CHECK_MSG(strstr(err.message, "http://127.0.0.1:") != NULL, "%.300s", err.message);
	server_close(&server);
}
