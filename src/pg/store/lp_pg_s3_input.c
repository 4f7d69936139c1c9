/*
 * lp_pg_s3_input.c - inputs of the server's S3 store: the core's, closed
 * when the memory context they were opened in goes, so that GETs started
 * ahead (LpInputOps.prefetch) are aborted before the buffers they write
 * into are freed, and each call run in that context (see lp_pg_s3.c).
 */
#include "postgres.h"

#include "store/lp_pg_s3_internal.h"

typedef struct PgS3Input
{
	LpInput		base;
	LpInput    *core;
	bool		closed;			/* core is gone */
	MemoryContext context;		/* the one it was made in: see lp_pg_s3.c */
	MemoryContextCallback cleanup;
} PgS3Input;

#define CORE_INPUT(input) (((PgS3Input *) (input))->core)

void *
lp_pg_s3_alloc_wrapper(Size size, Size cleanup_offset, MemoryContextCallbackFunction func,
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

LpInput *
lp_pg_s3_wrap_input(LpInput *core, const char *path, LpError *err)
{
	PgS3Input  *pg;

	if (core == NULL)
		return NULL;
	pg = lp_pg_s3_alloc_wrapper(sizeof(PgS3Input), offsetof(PgS3Input, cleanup), pg_s3_input_cleanup,
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

LpInput *
lp_pg_s3_core_input(LpInput *input)
{
	return input->ops == &pg_s3_input_ops ? CORE_INPUT(input) : input;
}
