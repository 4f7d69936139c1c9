/*
 * lp_pg_s3.c - the store of an s3:// URI in the server; its inputs and
 * outputs are lp_pg_s3_input.c's and lp_pg_s3_output.c's.
 *
 * A store is made per lookup, in the current memory context, with the
 * settings of the lance_fdw server covering the URI at that moment: its
 * strings live in the same context, so the store never outlives them, and a
 * changed user mapping or server option applies to the next statement.
 *
 * The core's S3 store is wrapped so that an output (a pending PUT or an
 * open multipart upload) is aborted when an ERROR or a cancel unwinds past
 * it.  The core aborts an upload itself when one of its own requests fails;
 * what it cannot see is an ERROR raised between its calls (a cancel seen by
 * CHECK_FOR_INTERRUPTS, a part that fails to read, a worker's error).  The
 * abort is a memory context callback on the context the output is created
 * in, as local outputs remove their temporary file: that context (the
 * statement's or a function call's) is deleted or reset on every exit from
 * the statement, error, cancel, FATAL (proc_exit aborts the transaction) and
 * success alike, and its callbacks run before any of its memory is freed, so
 * the output, its store and the settings they point to are still there.  A
 * transaction callback would also fire, but would have to keep the open
 * outputs in a list of its own outside any context and misses outputs of a
 * subtransaction rolled back to a savepoint until the whole transaction
 * ends.  The abort request itself runs with the cancel hook ignored
 * (lp_s3_multipart) and never raises, as nothing may during cleanup; an
 * abort the server does not answer is left to the bucket's lifecycle rules.
 * Inputs are wrapped the same way: one whose context goes while GETs it
 * started ahead (LpInputOps.prefetch) are in flight is closed, which aborts
 * them before the buffers they write into are freed.
 *
 * The core takes memory as it goes (an output's part buffer at its first
 * write, its multipart upload and list of parts later; an input's read
 * block and read-ahead pieces), from the context current at the call, and
 * keeps it until the output or input ends.  Callers write from shorter
 * contexts (the blob writer writes a row's inline and packed payloads while
 * the row is converted, in a context reset after each row), so every call
 * into a core output or input runs in the context the wrapper was made in:
 * what it keeps lives exactly as long as its owner.
 */
#include "postgres.h"

#include "base/lp_alloc.h"
#include "io/lp_s3_store.h"
#include "io/lp_s3_uri.h"
#include "base/lp_pg_error.h"
#include "store/lp_pg_s3.h"
#include "store/lp_pg_s3_config.h"
#include "store/lp_pg_s3_curl.h"
#include "store/lp_pg_s3_internal.h"

typedef struct PgS3Store
{
	LpStore		base;
	LpStore    *core;
} PgS3Store;

#define CORE(store) (((PgS3Store *) (store))->core)

static LpInput *
pg_s3_open_input(LpStore *store, const char *path, LpError *err)
{
	return lp_pg_s3_wrap_input(CORE(store)->ops->open_input(CORE(store), path, err), path, err);
}

static LpInput *
pg_s3_open_input_lazily(LpStore *store, const char *path, uint64_t size, LpError *err)
{
	return lp_pg_s3_wrap_input(CORE(store)->ops->open_input_lazily(CORE(store), path, size, err),
							   path, err);
}

static bool
pg_s3_stat(LpStore *store, const char *path, bool follow_symlinks, LpStat *result,
		   LpError *err)
{
	return CORE(store)->ops->stat(CORE(store), path, follow_symlinks, result, err);
}

static char *
pg_s3_canonical(LpStore *store, const char *path, const char *what, LpError *err)
{
	return CORE(store)->ops->canonical(CORE(store), path, what, err);
}

static bool
pg_s3_same_object(LpStore *store, const char *path_a, const char *path_b)
{
	return CORE(store)->ops->same_object(CORE(store), path_a, path_b);
}

static bool
pg_s3_list(LpStore *store, const char *directory, LpListCallback callback, void *arg,
		   LpError *err)
{
	return CORE(store)->ops->list(CORE(store), directory, callback, arg, err);
}

static bool
pg_s3_put_if_absent(LpStore *store, const char *path, const void *data, size_t len,
					LpError *err)
{
	return CORE(store)->ops->put_if_absent(CORE(store), path, data, len, err);
}

static bool
pg_s3_put(LpStore *store, const char *path, const void *data, size_t len, LpError *err)
{
	return CORE(store)->ops->put(CORE(store), path, data, len, err);
}

static bool
pg_s3_remove(LpStore *store, const char *path, LpError *err)
{
	return CORE(store)->ops->remove(CORE(store), path, err);
}

static bool
pg_s3_remove_tree(LpStore *store, const char *root, const char *relative,
				  LpTreeRemoval *result, LpError *err)
{
	return CORE(store)->ops->remove_tree(CORE(store), root, relative, result, err);
}

static bool
pg_s3_remove_file(LpStore *store, const char *root, const char *relative, bool *removed,
				  LpError *err)
{
	return CORE(store)->ops->remove_file(CORE(store), root, relative, removed, err);
}

static LpOutput *
pg_s3_create_output(LpStore *store, const char *path, LpError *err)
{
	return lp_pg_s3_wrap_output(CORE(store)->ops->create_output(CORE(store), path, err), path, err);
}

static bool
pg_s3_list_uploads(LpStore *store, const char *directory, LpUploadCallback callback, void *arg,
				   LpError *err)
{
	return CORE(store)->ops->list_uploads(CORE(store), directory, callback, arg, err);
}

static bool
pg_s3_upload_size(LpStore *store, const char *path, const char *upload_id, uint64_t *bytes,
				  LpError *err)
{
	return CORE(store)->ops->upload_size(CORE(store), path, upload_id, bytes, err);
}

static bool
pg_s3_abort_upload(LpStore *store, const char *path, const char *upload_id, LpError *err)
{
	return CORE(store)->ops->abort_upload(CORE(store), path, upload_id, err);
}

static LpOutput *
pg_s3_open_part(LpStore *store, const char *output_path, const char *parts_token,
				uint32_t number, uint64_t offset, uint64_t length, LpError *err)
{
	return lp_pg_s3_wrap_output(CORE(store)->ops->open_part(CORE(store), output_path, parts_token,
															number, offset, length, err),
								output_path, err);
}

static const LpStoreOps pg_s3_store_ops = {
	.open_input = pg_s3_open_input,
	.open_input_lazily = pg_s3_open_input_lazily,
	.stat = pg_s3_stat,
	.canonical = pg_s3_canonical,
	.same_object = pg_s3_same_object,
	.list = pg_s3_list,
	.put_if_absent = pg_s3_put_if_absent,
	.put = pg_s3_put,
	.remove = pg_s3_remove,
	.remove_tree = pg_s3_remove_tree,
	.remove_file = pg_s3_remove_file,
	.create_output = pg_s3_create_output,
	.list_uploads = pg_s3_list_uploads,
	.abort_upload = pg_s3_abort_upload,
	.upload_size = pg_s3_upload_size,
	.open_part = pg_s3_open_part,
};

bool
lp_pg_s3_name_is_canonical(const char *uri)
{
	char	   *bucket;
	char	   *key;
	LpError		err;
	bool		canonical;

	/* the split refuses "." and ".." segments and drops trailing '/' */
	if (!lp_s3_split_uri(uri, &bucket, &key, &err))
		return false;
	canonical = key[0] != '\0' &&
		strcmp(uri, psprintf("s3://%s/%s", bucket, key)) == 0 &&
		strstr(key, "//") == NULL;
	lp_free(bucket);
	lp_free(key);
	return canonical;
}

LpStore *
lp_pg_s3_store_for_uri(const char *uri, Oid server)
{
	LpS3Settings *settings = palloc0(sizeof(LpS3Settings));
	LpS3Transport *transport;
	PgS3Store  *store = palloc0(sizeof(PgS3Store));
	LpError		err;

	lp_s3_settings_for_uri(uri, server, settings);
	transport = lp_pg_s3_curl_transport(settings->config.allow_http);
	store->core = lp_s3_store_create(&settings->config, transport, &err);
	if (store->core == NULL)
		lp_raise(&err);
	store->base.ops = &pg_s3_store_ops;
	return &store->base;
}
