/*
 * lp_pg_s3.c - the store of an s3:// URI in the server.
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

typedef struct PgS3Store
{
	LpStore		base;
	LpStore    *core;
} PgS3Store;

typedef struct PgS3Output
{
	LpOutput	base;
	LpOutput   *core;
	bool		finished;		/* published or aborted: core is gone */
	MemoryContext context;		/* the one it was made in: see the top */
	MemoryContextCallback cleanup;
} PgS3Output;

typedef struct PgS3Input
{
	LpInput		base;
	LpInput    *core;
	bool		closed;			/* core is gone */
	MemoryContext context;		/* the one it was made in: see the top */
	MemoryContextCallback cleanup;
} PgS3Input;

#define CORE(store) (((PgS3Store *) (store))->core)
#define CORE_INPUT(input) (((PgS3Input *) (input))->core)

/*
 * A zeroed wrapper of `size` bytes in the current memory context whose
 * MemoryContextCallback (at cleanup_offset) calls `func` on it when that
 * context goes; NULL with err set when out of memory, and the caller releases
 * what it would have wrapped.  Nothing raises before the caller has filled in
 * the wrapper, so the callback never sees it half made.
 */
static void *
alloc_wrapper(Size size, Size cleanup_offset, MemoryContextCallbackFunction func,
			  const char *what, const char *path, LpError *err)
{
	char	   *wrapper = palloc_extended(size, MCXT_ALLOC_ZERO | MCXT_ALLOC_NO_OOM);
	MemoryContextCallback *cleanup;

	if (wrapper == NULL)
	{
		lp_fail(err, LP_ERR_NO_MEMORY, "out of memory for %s of \"%s\"", what, path);
		return NULL;
	}
	cleanup = (MemoryContextCallback *) (wrapper + cleanup_offset);
	cleanup->func = func;
	cleanup->arg = wrapper;
	MemoryContextRegisterResetCallback(CurrentMemoryContext, cleanup);
	return wrapper;
}

/* ---- inputs closed when their memory context goes -------------------------- */

static bool
pg_s3_read_at(LpInput *input, uint64_t offset, void *buffer, size_t len, LpError *err)
{
	MemoryContext old = MemoryContextSwitchTo(((PgS3Input *) input)->context);
	bool		ok = CORE_INPUT(input)->ops->read_at(CORE_INPUT(input), offset, buffer, len, err);

	MemoryContextSwitchTo(old);
	return ok;
}

static bool
pg_s3_prefetch(LpInput *input, const LpByteRange *ranges, size_t num_ranges, LpError *err)
{
	MemoryContext old = MemoryContextSwitchTo(((PgS3Input *) input)->context);
	bool		ok = lp_input_prefetch(CORE_INPUT(input), ranges, num_ranges, err);

	MemoryContextSwitchTo(old);
	return ok;
}

/* The wrapper stays until its context goes: the callback points at it. */
static void
pg_s3_input_close(LpInput *input)
{
	PgS3Input  *pg = (PgS3Input *) input;

	pg->closed = true;
	lp_input_close(pg->core);
}

static void
pg_s3_input_cleanup(void *arg)
{
	PgS3Input  *pg = (PgS3Input *) arg;

	if (!pg->closed)
		pg_s3_input_close(&pg->base);
}

static const LpInputOps pg_s3_input_ops = {
	.read_at = pg_s3_read_at,
	.close = pg_s3_input_close,
	.prefetch = pg_s3_prefetch,
};

static LpInput *
wrap_input(LpInput *core, const char *path, LpError *err)
{
	PgS3Input  *pg;

	if (core == NULL)
		return NULL;
	pg = alloc_wrapper(sizeof(PgS3Input), offsetof(PgS3Input, cleanup), pg_s3_input_cleanup,
					   "an input", path, err);
	if (pg == NULL)
	{
		lp_input_close(core);
		return NULL;
	}
	pg->base.ops = &pg_s3_input_ops;
	pg->base.name = core->name;
	pg->base.size = core->size;
	pg->core = core;
	pg->context = CurrentMemoryContext;
	return &pg->base;
}

/*
 * The core's input an input of this store wraps (the core copies those on
 * the server); any other input as it is.
 */
static LpInput *
core_input_of(LpInput *input)
{
	return input->ops == &pg_s3_input_ops ? CORE_INPUT(input) : input;
}

static LpInput *
pg_s3_open_input(LpStore *store, const char *path, LpError *err)
{
	return wrap_input(CORE(store)->ops->open_input(CORE(store), path, err), path, err);
}

static LpInput *
pg_s3_open_input_lazily(LpStore *store, const char *path, uint64_t size, LpError *err)
{
	return wrap_input(CORE(store)->ops->open_input_lazily(CORE(store), path, size, err),
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

/* ---- outputs aborted when their memory context goes ------------------------ */

#define CORE_OUTPUT(output) (((PgS3Output *) (output))->core)

static bool
pg_s3_write_at(LpOutput *output, uint64_t offset, const void *data, size_t len, LpError *err)
{
	MemoryContext old = MemoryContextSwitchTo(((PgS3Output *) output)->context);
	bool		ok = CORE_OUTPUT(output)->ops->write_at(CORE_OUTPUT(output), offset, data, len, err);

	MemoryContextSwitchTo(old);
	return ok;
}

static bool
pg_s3_copy_from(LpOutput *output, uint64_t output_offset, LpInput *input,
				uint64_t input_offset, uint64_t len, LpError *err)
{
	MemoryContext old;
	bool		ok;

	input = core_input_of(input);
	old = MemoryContextSwitchTo(((PgS3Output *) output)->context);
	ok = CORE_OUTPUT(output)->ops->copy_from(CORE_OUTPUT(output), output_offset, input,
											 input_offset, len, err);
	MemoryContextSwitchTo(old);
	return ok;
}

static const char *
pg_s3_start_parts(LpOutput *output, LpError *err)
{
	MemoryContext old = MemoryContextSwitchTo(((PgS3Output *) output)->context);
	const char *token = CORE_OUTPUT(output)->ops->start_parts(CORE_OUTPUT(output), err);

	MemoryContextSwitchTo(old);
	return token;
}

static bool
pg_s3_send_part(LpOutput *output, uint32_t number, const void *data, size_t len, LpError *err)
{
	MemoryContext old = MemoryContextSwitchTo(((PgS3Output *) output)->context);
	bool		ok = CORE_OUTPUT(output)->ops->send_part(CORE_OUTPUT(output), number, data, len,
														 err);

	MemoryContextSwitchTo(old);
	return ok;
}

static bool
pg_s3_add_part(LpOutput *output, uint32_t number, const char *receipt, LpError *err)
{
	MemoryContext old = MemoryContextSwitchTo(((PgS3Output *) output)->context);
	bool		ok = CORE_OUTPUT(output)->ops->add_part(CORE_OUTPUT(output), number, receipt, err);

	MemoryContextSwitchTo(old);
	return ok;
}

static bool
pg_s3_copies_part_from(LpOutput *output, LpInput *input)
{
	return CORE_OUTPUT(output)->ops->copies_part_from(CORE_OUTPUT(output), core_input_of(input));
}

static bool
pg_s3_publish(LpOutput *output, LpError *err)
{
	PgS3Output *pg = (PgS3Output *) output;

	/* publish frees the core's output whatever it returns */
	pg->finished = true;
	return pg->core->ops->publish(pg->core, err);
}

static void
pg_s3_abort(LpOutput *output)
{
	PgS3Output *pg = (PgS3Output *) output;

	pg->finished = true;
	pg->core->ops->abort(pg->core);
}

static void
pg_s3_output_cleanup(void *arg)
{
	PgS3Output *pg = (PgS3Output *) arg;

	if (pg->finished)
		return;
	ereport(DEBUG1,
			errmsg_internal("aborting the unfinished S3 output \"%s\"", pg->base.name));
	pg_s3_abort(&pg->base);
}

static const LpOutputOps pg_s3_output_ops = {
	.write_at = pg_s3_write_at,
	.copy_from = pg_s3_copy_from,
	.publish = pg_s3_publish,
	.abort = pg_s3_abort,
	.start_parts = pg_s3_start_parts,
	.send_part = pg_s3_send_part,
	.add_part = pg_s3_add_part,
	.copies_part_from = pg_s3_copies_part_from,
};

static LpOutput *
pg_s3_create_output(LpStore *store, const char *path, LpError *err)
{
	LpOutput   *core = CORE(store)->ops->create_output(CORE(store), path, err);
	PgS3Output *pg;

	if (core == NULL)
		return NULL;
	pg = alloc_wrapper(sizeof(PgS3Output), offsetof(PgS3Output, cleanup), pg_s3_output_cleanup,
					   "an output", path, err);
	if (pg == NULL)
	{
		core->ops->abort(core);
		return NULL;
	}
	pg->base.ops = &pg_s3_output_ops;
	pg->base.name = core->name;
	pg->base.multipart = core->multipart;
	pg->core = core;
	pg->context = CurrentMemoryContext;
	return &pg->base;
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

static bool
pg_s3_copy_part(LpStore *store, const char *output_path, const char *parts_token,
				uint32_t number, LpInput *input, uint64_t offset, uint64_t len, char *receipt,
				size_t receipt_capacity, LpError *err)
{
	return CORE(store)->ops->copy_part(CORE(store), output_path, parts_token, number,
									   core_input_of(input), offset, len, receipt,
									   receipt_capacity, err);
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
	.copy_part = pg_s3_copy_part,
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
