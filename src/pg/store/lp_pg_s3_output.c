/*
 * lp_pg_s3_output.c - outputs of the server's S3 store: the core's (a
 * pending PUT, an open multipart upload, or a writer of one of its parts),
 * aborted when the memory context they were created in goes unpublished,
 * and each call run in that context (see lp_pg_s3.c).
 */
#include "postgres.h"

#include "store/lp_pg_s3_internal.h"

typedef struct PgS3Output
{
	LpOutput	base;
	LpOutput   *core;
	bool		finished;		/* published or aborted: core is gone */
	MemoryContext context;		/* the one it was made in: see lp_pg_s3.c */
	MemoryContextCallback cleanup;
} PgS3Output;

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

	input = lp_pg_s3_core_input(input);
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
	return CORE_OUTPUT(output)->ops->copies_part_from(CORE_OUTPUT(output), lp_pg_s3_core_input(input));
}

/* the part writer is freed whatever end_part returns */
static bool
pg_s3_end_part(LpOutput *output, char *receipt, size_t receipt_capacity, LpError *err)
{
	PgS3Output *pg = (PgS3Output *) output;
	MemoryContext old = MemoryContextSwitchTo(pg->context);
	bool		ok;

	pg->finished = true;
	ok = pg->core->ops->end_part(pg->core, receipt, receipt_capacity, err);
	MemoryContextSwitchTo(old);
	return ok;
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
	.add_part = pg_s3_add_part,
	.copies_part_from = pg_s3_copies_part_from,
	.end_part = pg_s3_end_part,
};

LpOutput *
lp_pg_s3_wrap_output(LpOutput *core, const char *path, LpError *err)
{
	PgS3Output *pg;

	if (core == NULL)
		return NULL;
	pg = lp_pg_s3_alloc_wrapper(sizeof(PgS3Output), offsetof(PgS3Output, cleanup),
								pg_s3_output_cleanup, "an output", path, err);
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
