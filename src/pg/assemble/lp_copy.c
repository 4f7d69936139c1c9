/*
 * lp_copy.c - the data region of an assembly, copied by the leader and
 * PostgreSQL parallel workers.
 *
 * The plan fixes every output byte before the copy starts, so the region
 * [0, tail.start) is cut into spans of equal size (lp_concat_span_bytes)
 * that copiers claim with an atomic counter and write with positional I/O
 * into the one temporary output file: no locks, no ordering between
 * copiers, and the same bytes whatever the number of workers.  The leader
 * writes the tail and publishes after every span is written.
 *
 * A ParallelContext gives the workers the leader's GUCs, sends their
 * errors back (raised in the leader with "parallel worker" context) and
 * terminates and waits for them when the leader's transaction aborts, so no
 * worker outlives a failed or cancelled call.  The leader's temporary file
 * is removed by its memory-context callback, which runs after the workers
 * are gone (AtEOXact_Parallel precedes the portal's memory cleanup).
 * Parallel mode only forbids catalog writes and XID assignment, neither of
 * which copying needs.
 *
 * An output written by part number (LpOutputOps.start_parts: object
 * storage, lp_copy_numbered_parts) is copied by parts instead: the copiers
 * claim the parts of lp_concat_upload_parts, part k being part number k + 1
 * of the output, a copy part one LpStoreOps.copy_part in the store, whose
 * receipt the copier leaves in shared memory for the leader to add before
 * it publishes.  The leader sends the send parts (the tail, short parts)
 * before it claims copy parts.  A worker gets the store of the output from
 * its name as the leader did (on object storage: settings and credentials
 * from the catalog, as the leader's user and within its transaction), so no
 * secret passes through shared memory.  Any ERROR in the leader or a worker
 * (a worker's is re-raised in the leader) drops the parts after the workers
 * are gone, through the output's memory-context callback.
 */
#include "postgres.h"

#include "access/parallel.h"
#include "miscadmin.h"
#include "optimizer/optimizer.h"
#include "pgstat.h"
#include "port/atomics.h"
#include "storage/latch.h"
#include "storage/shm_toc.h"
#include "utils/guc.h"

#include "assemble/lp_copy.h"
#include "base/lp_parallel.h"
#include "base/lp_pg_error.h"
#include "store/lp_pg_storage.h"
#include "assemble/lp_progress.h"

PGDLLEXPORT void lp_copy_worker_main(dsm_segment *seg, shm_toc *toc);
PGDLLEXPORT void lp_copy_parts_worker_main(dsm_segment *seg, shm_toc *toc);

int			lp_read_batch_bytes = 16 * 1024 * 1024;
int			lp_max_copy_workers = 2;

#define MAX_COPY_WORKERS_LIMIT 64

void
LpCopyInit(void)
{
	DefineCustomIntVariable("lance_parts.read_batch_bytes",
							gettext_noop("Largest amount of page data read or copied in one request."),
							gettext_noop("Assembly reads input pages in batches of at most this size, so its memory use does not grow with the inputs."),
							&lp_read_batch_bytes,
							16 * 1024 * 1024,
							64 * 1024,
							1024 * 1024 * 1024,
							PGC_USERSET,
							GUC_UNIT_BYTE,
							NULL, NULL, NULL);

	DefineCustomIntVariable("lance_parts.max_copy_workers",
							gettext_noop("Largest number of parallel workers that copy part data during one assembly."),
							gettext_noop("On object storage they issue the server-side part copies. The leader copies too. 0 copies in the calling backend only. Workers also count against max_worker_processes and max_parallel_workers; when none can be started, the copy runs serially."),
							&lp_max_copy_workers,
							2, 0, MAX_COPY_WORKERS_LIMIT,
							PGC_USERSET, 0,
							NULL, NULL, NULL);
}

#define COPY_KEY_SHARED		UINT64CONST(0x4C50000000000001)
#define COPY_KEY_RANGES		UINT64CONST(0x4C50000000000002)
#define COPY_KEY_SIZES		UINT64CONST(0x4C50000000000003)
#define COPY_KEY_PATHS		UINT64CONST(0x4C50000000000004)	/* the parts', the output's, the root ("": none) */
#define COPY_KEY_OUTPUT		UINT64CONST(0x4C50000000000006)
#define PARTS_KEY_SHARED	UINT64CONST(0x4C50000000000011)
#define PARTS_KEY_PARTS		UINT64CONST(0x4C50000000000012)
#define PARTS_KEY_RECEIPTS	UINT64CONST(0x4C50000000000013)	/* LP_PART_RECEIPT_MAX per part */
#define PARTS_KEY_SIZES		UINT64CONST(0x4C50000000000014)
#define PARTS_KEY_NAMES		UINT64CONST(0x4C50000000000015)	/* the parts', the output's, its parts token */

/* State shared by every copier of one region. */
typedef struct CopyShared
{
	uint64		span_bytes;
	uint64		num_spans;
	uint64		region_end;		/* plan->tail.start */
	uint64		region_alignment;
	uint64		num_ranges;
	uint64		read_batch_bytes;
	uint32		num_inputs;
	uint64		output_token_bytes; /* the output's share token (COPY_KEY_OUTPUT) */
	pg_atomic_uint64 next_span; /* the next span to claim */
	pg_atomic_uint64 spans_done;
	pg_atomic_uint64 bytes_done;
	pg_atomic_uint32 failed;	/* a copier failed: the others stop claiming */
	pg_atomic_uint32 done_bits[FLEXIBLE_ARRAY_MEMBER];	/* one bit per span */
} CopyShared;

/* The leader's view of how far the copy is, for lp_progress. */
typedef struct CopyProgress
{
	uint64	   *part_ends;		/* output end of each part's data */
	int			num_parts;
	int			parts_done;
	uint64		prefix_spans;	/* spans [0, prefix_spans) are all written */
} CopyProgress;

static Size
shared_size(uint64 num_spans)
{
	return add_size(offsetof(CopyShared, done_bits),
					mul_size(sizeof(pg_atomic_uint32), (Size) ((num_spans + 31) / 32)));
}

static void
init_shared(CopyShared *shared, const LpConcatPlan *plan, uint64 span_bytes,
			uint64 num_spans)
{
	shared->span_bytes = span_bytes;
	shared->num_spans = num_spans;
	shared->region_end = plan->tail.start;
	shared->region_alignment = plan->region_alignment;
	shared->num_ranges = plan->num_ranges;
	shared->read_batch_bytes = (uint64) lp_read_batch_bytes;
	shared->num_inputs = plan->num_inputs;
	shared->output_token_bytes = 0;
	pg_atomic_init_u64(&shared->next_span, 0);
	pg_atomic_init_u64(&shared->spans_done, 0);
	pg_atomic_init_u64(&shared->bytes_done, 0);
	pg_atomic_init_u32(&shared->failed, 0);
	for (uint64 w = 0; w < (num_spans + 31) / 32; w++)
		pg_atomic_init_u32(&shared->done_bits[w], 0);
}

static void
report_progress(CopyShared *shared, CopyProgress *progress)
{
	uint64		prefix_bytes;

	while (progress->prefix_spans < shared->num_spans &&
		   (pg_atomic_read_u32(&shared->done_bits[progress->prefix_spans / 32]) &
			(1U << (progress->prefix_spans % 32))) != 0)
		progress->prefix_spans++;
	prefix_bytes = Min(progress->prefix_spans * shared->span_bytes, shared->region_end);
	while (progress->parts_done < progress->num_parts &&
		   progress->part_ends[progress->parts_done] <= prefix_bytes)
		progress->parts_done++;
	lp_progress_update(progress->parts_done,
					   (int64) pg_atomic_read_u64(&shared->bytes_done));
}

/*
 * Claim and write spans until none is left or another copier failed.
 * False, with err, when this copier failed.
 */
static bool
copy_spans(CopyShared *shared, LpConcatCopier *copier, CopyProgress *progress,
		   LpError *err)
{
	for (;;)
	{
		uint64		span;
		uint64		start;
		uint64		end;

		CHECK_FOR_INTERRUPTS();
		if (pg_atomic_read_u32(&shared->failed) != 0)
			return true;
		span = pg_atomic_fetch_add_u64(&shared->next_span, 1);
		if (span >= shared->num_spans)
			return true;
		start = span * shared->span_bytes;
		end = Min(start + shared->span_bytes, shared->region_end);
		if (!lp_concat_copy_span(copier, start, end, err))
		{
			pg_atomic_write_u32(&shared->failed, 1);
			return false;
		}
		pg_atomic_fetch_or_u32(&shared->done_bits[span / 32], 1U << (span % 32));
		pg_atomic_fetch_add_u64(&shared->bytes_done, end - start);
		pg_atomic_fetch_add_u64(&shared->spans_done, 1);
		if (progress != NULL)
			report_progress(shared, progress);
	}
}

/* The leader's own spans; ERROR if one fails. */
static void
leader_copy_spans(CopyShared *shared, const LpConcatPlan *plan, LpInput *const *inputs,
				  LpOutput *output, CopyProgress *progress)
{
	LpConcatCopier copier;
	LpError		err;

	if (!lp_concat_copier_init(&copier, plan, inputs, output,
							   (size_t) lp_read_batch_bytes, &err) ||
		!copy_spans(shared, &copier, progress, &err))
		lp_raise(&err);
	lp_concat_copier_free(&copier);
}

static bool
all_workers_stopped(ParallelContext *pcxt)
{
	for (int i = 0; i < pcxt->nworkers_launched; i++)
	{
		pid_t		pid;

		if (pcxt->worker[i].bgwhandle != NULL &&
			GetBackgroundWorkerPid(pcxt->worker[i].bgwhandle, &pid) != BGWH_STOPPED)
			return false;
	}
	return true;
}

/*
 * The parts' paths and then the output's, each ending in a NUL, from dest
 * on; returns where the next string goes.
 */
static char *
pack_names(char *dest, const char *const *paths, uint32 num_paths, const char *output_name)
{
	for (uint32 i = 0; i < num_paths; i++)
		dest = stpcpy(dest, paths[i]) + 1;
	return stpcpy(dest, output_name) + 1;
}

/* What pack_names packed, then the root the parts are read below ("" for none). */
static void
pack_copy_names(char *dest, const char *const *paths, uint32 num_paths, const char *output_name,
				const char *root)
{
	strcpy(pack_names(dest, paths, num_paths, output_name), root != NULL ? root : "");
}

/* What copy_in_parallel puts in the workers' segment. */
typedef struct CopySegment
{
	const LpConcatPlan *plan;
	const char *root;
	const char *const *paths;
	LpOutput   *output;
	uint64		span_bytes;
	uint64		num_spans;
	Size		paths_size;
	Size		output_token_size;
	CopyShared *shared;			/* set by fill_copy_segment */
} CopySegment;

static void
fill_copy_segment(ParallelContext *pcxt, void *arg)
{
	CopySegment *segment = arg;
	const LpConcatPlan *plan = segment->plan;
	LpOutput   *output = segment->output;
	CopyShared *shared;
	char	   *path_chars;
	char	   *output_token;

	shared = shm_toc_allocate(pcxt->toc, shared_size(segment->num_spans));
	init_shared(shared, plan, segment->span_bytes, segment->num_spans);
	shm_toc_insert(pcxt->toc, COPY_KEY_SHARED, shared);
	output_token = shm_toc_allocate(pcxt->toc, segment->output_token_size);
	shared->output_token_bytes = output->ops->share_token(output, output_token,
														  segment->output_token_size);
	shm_toc_insert(pcxt->toc, COPY_KEY_OUTPUT, output_token);
	lp_parallel_insert_copy(pcxt, COPY_KEY_RANGES, plan->ranges,
							sizeof(LpCopyRange) * plan->num_ranges);
	lp_parallel_insert_copy(pcxt, COPY_KEY_SIZES, plan->input_sizes,
							sizeof(uint64) * plan->num_inputs);
	path_chars = shm_toc_allocate(pcxt->toc, segment->paths_size);
	shm_toc_insert(pcxt->toc, COPY_KEY_PATHS, path_chars);
	pack_copy_names(path_chars, segment->paths, plan->num_inputs, output->name, segment->root);
	segment->shared = shared;
}

/*
 * Copy with workers.  False, with nothing written and a NOTICE, when no
 * worker could be started.
 */
static bool
copy_in_parallel(const LpConcatPlan *plan, const char *root, const char *const *paths,
				 LpInput *const *inputs, LpOutput *output, uint64 span_bytes,
				 uint64 num_spans, int nworkers, CopyProgress *progress)
{
	ParallelContext *pcxt;
	CopyShared *shared;
	CopySegment segment = {plan, root, paths, output, span_bytes, num_spans, 0,
	output->ops->share_token(output, NULL, 0), NULL};

	for (uint32 i = 0; i < plan->num_inputs; i++)
		segment.paths_size = add_size(segment.paths_size, strlen(paths[i]) + 1);
	segment.paths_size = add_size(segment.paths_size, strlen(output->name) + 1);
	segment.paths_size = add_size(segment.paths_size, (root != NULL ? strlen(root) : 0) + 1);
	{
		/* the chunks of fill_copy_segment */
		const Size	chunk_sizes[] = {
			shared_size(num_spans),
			mul_size(sizeof(LpCopyRange), plan->num_ranges),
			mul_size(sizeof(uint64), plan->num_inputs),
			segment.paths_size,
			segment.output_token_size,
		};

		pcxt = lp_parallel_start("lp_copy_worker_main", nworkers, chunk_sizes,
								 lengthof(chunk_sizes), fill_copy_segment, &segment);
	}
	if (pcxt == NULL)
	{
		ereport(NOTICE,
				errmsg("no parallel workers could be started to copy into \"%s\", copying serially",
					   output->name),
				errhint("Raise max_worker_processes or max_parallel_workers, or set lance_parts.max_copy_workers to 0."));
		return false;
	}
	shared = segment.shared;
	ereport(DEBUG1,
			errmsg_internal("copying into \"%s\" with %d parallel workers, %llu spans of %llu bytes",
							output->name, pcxt->nworkers_launched,
							(unsigned long long) num_spans, (unsigned long long) span_bytes));
	lp_progress_phase(LP_PHASE_COPYING, 0, 0, (int64) plan->output_size,
					  pcxt->nworkers_launched);

	if (parallel_leader_participation)
		leader_copy_spans(shared, plan, inputs, output, progress);
	while (pg_atomic_read_u64(&shared->spans_done) < num_spans &&
		   !all_workers_stopped(pcxt))
	{
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 LP_PROGRESS_INTERVAL_MS, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		report_progress(shared, progress);
	}
	/* raises a worker's error, if any */
	WaitForParallelWorkersToFinish(pcxt);

	/* spans no worker got to (workers that could not start) are the leader's */
	leader_copy_spans(shared, plan, inputs, output, progress);
	if (pg_atomic_read_u64(&shared->spans_done) != num_spans)
		elog(ERROR, "parallel copy into \"%s\" ended with " UINT64_FORMAT " of " UINT64_FORMAT " spans written",
			 output->name, pg_atomic_read_u64(&shared->spans_done), num_spans);
	ereport(DEBUG1,
			errmsg_internal("copy into \"%s\" finished", output->name));
	report_progress(shared, progress);
	lp_parallel_end(pcxt);
	return true;
}

void
lp_copy_data_region(const LpConcatPlan *plan, const char *root, const char *const *paths,
					LpInput *const *inputs, LpOutput *output)
{
	uint64		span_bytes = lp_concat_span_bytes(plan, (size_t) lp_read_batch_bytes);
	uint64		num_spans = (plan->tail.start + span_bytes - 1) / span_bytes;
	int			nworkers = lp_max_copy_workers;
	CopyProgress progress;
	CopyShared *shared;

	progress.num_parts = (int) plan->num_inputs;
	progress.parts_done = 0;
	progress.prefix_spans = 0;
	progress.part_ends = palloc0(sizeof(uint64) * plan->num_inputs);
	for (size_t r = 0; r < plan->num_ranges; r++)
		progress.part_ends[plan->ranges[r].input] =
			plan->ranges[r].dest_offset + plan->ranges[r].length;
	for (uint32 i = 1; i < plan->num_inputs; i++)
		progress.part_ends[i] = Max(progress.part_ends[i], progress.part_ends[i - 1]);

	/* a worker needs at least one span of its own, and an output it can open */
	if ((uint64) nworkers > num_spans - Min(num_spans, 1))
		nworkers = (int) (num_spans - Min(num_spans, 1));
	if (output->ops->share_token == NULL)
		nworkers = 0;
	if (nworkers > 0 &&
		copy_in_parallel(plan, root, paths, inputs, output, span_bytes, num_spans,
						 nworkers, &progress))
		return;

	lp_progress_phase(LP_PHASE_COPYING, 0, 0, (int64) plan->output_size, 0);
	shared = palloc(shared_size(num_spans));
	init_shared(shared, plan, span_bytes, num_spans);
	leader_copy_spans(shared, plan, inputs, output, &progress);
	report_progress(shared, &progress);
	pfree(shared);
}

void
lp_copy_worker_main(dsm_segment *seg, shm_toc *toc)
{
	CopyShared *shared = shm_toc_lookup(toc, COPY_KEY_SHARED, false);
	LpCopyRange *ranges = shm_toc_lookup(toc, COPY_KEY_RANGES, false);
	uint64	   *sizes = shm_toc_lookup(toc, COPY_KEY_SIZES, false);
	const char *path_chars = shm_toc_lookup(toc, COPY_KEY_PATHS, false);
	const char *root;
	const char *output_token = shm_toc_lookup(toc, COPY_KEY_OUTPUT, false);
	LpConcatPlan plan;
	LpInput   **inputs;
	LpStore    *output_store;
	LpOutput   *output;
	LpConcatCopier copier;
	LpError		err;

	lp_parallel_worker_show_query(toc);

	/* the part of a plan a copier reads */
	memset(&plan, 0, sizeof(plan));
	plan.num_inputs = shared->num_inputs;
	plan.input_sizes = sizes;
	plan.num_ranges = (size_t) shared->num_ranges;
	plan.ranges = ranges;
	plan.region_alignment = shared->region_alignment;
	plan.tail.start = shared->region_end;

	/* the root follows the parts' paths and the output's name */
	root = path_chars;
	for (uint32 i = 0; i <= shared->num_inputs; i++)
		root += strlen(root) + 1;
	inputs = palloc(sizeof(LpInput *) * shared->num_inputs);
	for (uint32 i = 0; i < shared->num_inputs; i++)
	{
		char	   *key;
		LpStore    *store = lp_store_for_uri_below(root[0] != '\0' ? root : NULL, path_chars, &key);

		inputs[i] = store->ops->open_input_lazily(store, key, sizes[i], &err);
		if (inputs[i] == NULL)
			lp_raise(&err);
		path_chars += strlen(path_chars) + 1;
	}
	/* the output's name picks the store that shares it */
	output_store = lp_store_for_uri(path_chars, NULL);
	output = output_store->ops->open_shared_output(output_store, output_token,
												   (size_t) shared->output_token_bytes,
												   &err);
	if (output == NULL ||
		!lp_concat_copier_init(&copier, &plan, inputs, output,
							   (size_t) shared->read_batch_bytes, &err) ||
		!copy_spans(shared, &copier, NULL, &err))
	{
		pg_atomic_write_u32(&shared->failed, 1);
		lp_raise(&err);
	}
	lp_concat_copier_free(&copier);
	output->ops->abort(output);
	for (uint32 i = 0; i < shared->num_inputs; i++)
		lp_input_close(inputs[i]);
}

/* ---- numbered parts copied in the store ------------------------------- */

/* State shared by every copier of one output written by part number. */
typedef struct PartsShared
{
	uint64		num_parts;
	uint64		num_copies;		/* copy parts among them */
	uint32		num_inputs;
	pg_atomic_uint64 next_part; /* the next part to claim */
	pg_atomic_uint64 copies_done;
	pg_atomic_uint64 bytes_done;
	pg_atomic_uint32 failed;	/* a copier failed: the others stop claiming */
} PartsShared;

/* What a copier of numbered parts works with, in the leader or a worker. */
typedef struct PartsCopier
{
	PartsShared *shared;
	const LpUploadPart *parts;
	char	   *receipts;		/* LP_PART_RECEIPT_MAX bytes per part */
	LpStore    *store;			/* a store of the output's account */
	LpInput   **inputs;
	const char *output_name;
	const char *parts_token;
} PartsCopier;

/*
 * Claim parts and copy the copy parts among them until none is left or
 * another copier failed.  False, with err, when this copier failed.
 */
static bool
copy_numbered_parts(PartsCopier *copier, LpError *err)
{
	PartsShared *shared = copier->shared;

	for (;;)
	{
		const LpUploadPart *part;
		uint64		p;

		CHECK_FOR_INTERRUPTS();
		if (pg_atomic_read_u32(&shared->failed) != 0)
			return true;
		p = pg_atomic_fetch_add_u64(&shared->next_part, 1);
		if (p >= shared->num_parts)
			return true;
		part = &copier->parts[p];
		if (part->kind != LP_UPLOAD_PART_COPY)
			continue;
		if (!copier->store->ops->copy_part(copier->store, copier->output_name,
										   copier->parts_token, (uint32) (p + 1),
										   copier->inputs[part->input],
										   part->source_offset, part->length,
										   copier->receipts + p * LP_PART_RECEIPT_MAX,
										   LP_PART_RECEIPT_MAX, err))
		{
			pg_atomic_write_u32(&shared->failed, 1);
			return false;
		}
		pg_atomic_fetch_add_u64(&shared->bytes_done, part->length);
		pg_atomic_fetch_add_u64(&shared->copies_done, 1);
		lp_progress_update(0, (int64) pg_atomic_read_u64(&shared->bytes_done));
	}
}

static void
leader_copy_numbered_parts(PartsCopier *copier)
{
	LpError		err;

	if (!copy_numbered_parts(copier, &err))
		lp_raise(&err);
}

/* Send the send parts from the leader, each read into one buffer. */
static void
send_numbered_parts(const LpConcatPlan *plan, const LpUploadParts *parts,
					LpInput *const *inputs, LpOutput *output)
{
	for (size_t p = 0; p < parts->num_parts; p++)
	{
		const LpUploadPart *part = &parts->parts[p];
		void	   *buffer;
		LpError		err;

		if (part->kind != LP_UPLOAD_PART_SEND)
			continue;
		CHECK_FOR_INTERRUPTS();
		buffer = palloc((Size) part->length);
		if (!lp_concat_output_bytes(plan, inputs, part->dest_offset, buffer,
									(size_t) part->length, &err) ||
			!output->ops->send_part(output, (uint32) (p + 1), buffer,
									(size_t) part->length, &err))
			lp_raise(&err);
		pfree(buffer);
	}
}

/*
 * Whether the parts can be written by number: every copy part's input is
 * copied in the store, every send part fits in one buffer.
 */
static bool
parts_by_number_fit(const LpUploadParts *parts, LpInput *const *inputs, LpOutput *output,
					uint64 *num_copies)
{
	uint64		largest_send = Max((uint64) lp_read_batch_bytes,
								   2 * output->multipart->min_part_bytes);

	*num_copies = 0;
	for (size_t p = 0; p < parts->num_parts; p++)
	{
		const LpUploadPart *part = &parts->parts[p];

		if (part->kind == LP_UPLOAD_PART_COPY)
		{
			if (!output->ops->copies_part_from(output, inputs[part->input]))
				return false;
			(*num_copies)++;
		}
		else if (part->length > largest_send)
			return false;
	}
	return true;
}

/* What lp_copy_numbered_parts puts in the workers' segment. */
typedef struct PartsSegment
{
	const LpConcatPlan *plan;
	const LpUploadParts *parts;
	const char *const *paths;
	const char *output_name;
	const char *parts_token;
	uint64		num_copies;
	Size		names_size;
	PartsShared *shared;		/* set by fill_parts_segment */
	char	   *receipts;		/* likewise */
} PartsSegment;

static void
init_parts_shared(PartsShared *shared, const PartsSegment *segment)
{
	shared->num_parts = segment->parts->num_parts;
	shared->num_copies = segment->num_copies;
	shared->num_inputs = segment->plan->num_inputs;
	pg_atomic_init_u64(&shared->next_part, 0);
	pg_atomic_init_u64(&shared->copies_done, 0);
	pg_atomic_init_u64(&shared->bytes_done, 0);
	pg_atomic_init_u32(&shared->failed, 0);
}

static void
fill_parts_segment(ParallelContext *pcxt, void *arg)
{
	PartsSegment *segment = arg;
	const LpConcatPlan *plan = segment->plan;
	size_t		num_parts = segment->parts->num_parts;
	char	   *names;

	segment->shared = shm_toc_allocate(pcxt->toc, sizeof(PartsShared));
	init_parts_shared(segment->shared, segment);
	shm_toc_insert(pcxt->toc, PARTS_KEY_SHARED, segment->shared);
	lp_parallel_insert_copy(pcxt, PARTS_KEY_PARTS, segment->parts->parts,
							sizeof(LpUploadPart) * num_parts);
	segment->receipts = shm_toc_allocate(pcxt->toc, mul_size(LP_PART_RECEIPT_MAX, num_parts));
	shm_toc_insert(pcxt->toc, PARTS_KEY_RECEIPTS, segment->receipts);
	lp_parallel_insert_copy(pcxt, PARTS_KEY_SIZES, plan->input_sizes,
							sizeof(uint64) * plan->num_inputs);
	names = shm_toc_allocate(pcxt->toc, segment->names_size);
	shm_toc_insert(pcxt->toc, PARTS_KEY_NAMES, names);
	strcpy(pack_names(names, segment->paths, plan->num_inputs, segment->output_name),
		   segment->parts_token);
}

bool
lp_copy_numbered_parts(const LpConcatPlan *plan, const LpUploadParts *parts,
					   const char *const *paths, LpInput *const *inputs, LpOutput *output)
{
	ParallelContext *pcxt;
	PartsCopier copier;
	PartsShared *shared;
	PartsSegment segment = {plan, parts, paths, output->name};
	int			nworkers = lp_max_copy_workers;
	int			nworkers_launched;
	LpError		err;

	if (nworkers == 0 || output->ops->start_parts == NULL ||
		!parts_by_number_fit(parts, inputs, output, &segment.num_copies) ||
		segment.num_copies == 0)
		return false;
	if ((uint64) nworkers > segment.num_copies)
		nworkers = (int) segment.num_copies;

	segment.parts_token = output->ops->start_parts(output, &err);
	if (segment.parts_token == NULL)
		lp_raise(&err);
	for (uint32 i = 0; i < plan->num_inputs; i++)
		segment.names_size = add_size(segment.names_size, strlen(paths[i]) + 1);
	segment.names_size = add_size(segment.names_size, strlen(output->name) + 1);
	segment.names_size = add_size(segment.names_size, strlen(segment.parts_token) + 1);
	{
		/* the chunks of fill_parts_segment */
		const Size	chunk_sizes[] = {
			sizeof(PartsShared),
			mul_size(sizeof(LpUploadPart), parts->num_parts),
			mul_size(LP_PART_RECEIPT_MAX, parts->num_parts),
			mul_size(sizeof(uint64), plan->num_inputs),
			segment.names_size,
		};

		pcxt = lp_parallel_start("lp_copy_parts_worker_main", nworkers, chunk_sizes,
								 lengthof(chunk_sizes), fill_parts_segment, &segment);
	}
	/* without workers the leader copies every part itself */
	if (pcxt == NULL)
	{
		segment.shared = palloc(sizeof(PartsShared));
		init_parts_shared(segment.shared, &segment);
		segment.receipts = palloc(mul_size(LP_PART_RECEIPT_MAX, parts->num_parts));
		nworkers_launched = 0;
		ereport(NOTICE,
				errmsg("no parallel workers could be started to copy parts into \"%s\", copying serially",
					   output->name),
				errhint("Raise max_worker_processes or max_parallel_workers, or set lance_parts.max_copy_workers to 0."));
	}
	else
	{
		nworkers_launched = pcxt->nworkers_launched;
		ereport(DEBUG1,
				errmsg_internal("copying " UINT64_FORMAT " of %zu upload parts of \"%s\" with %d parallel workers",
								segment.num_copies, parts->num_parts, output->name,
								nworkers_launched));
	}
	shared = segment.shared;
	lp_progress_phase(LP_PHASE_COPYING, 0, 0, (int64) plan->output_size, nworkers_launched);

	copier.shared = shared;
	copier.parts = parts->parts;
	copier.receipts = segment.receipts;
	copier.store = lp_store_for_uri(output->name, NULL);
	copier.inputs = (LpInput **) inputs;
	copier.output_name = output->name;
	copier.parts_token = segment.parts_token;
	send_numbered_parts(plan, parts, inputs, output);
	if (parallel_leader_participation || nworkers_launched == 0)
		leader_copy_numbered_parts(&copier);
	if (pcxt != NULL)
	{
		while (pg_atomic_read_u64(&shared->copies_done) < segment.num_copies &&
			   !all_workers_stopped(pcxt))
		{
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 LP_PROGRESS_INTERVAL_MS, PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
			CHECK_FOR_INTERRUPTS();
			lp_progress_update(0, (int64) pg_atomic_read_u64(&shared->bytes_done));
		}
		/* raises a worker's error, if any */
		WaitForParallelWorkersToFinish(pcxt);
		/* parts no worker got to (workers that could not start) are the leader's */
		leader_copy_numbered_parts(&copier);
	}
	if (pg_atomic_read_u64(&shared->copies_done) != segment.num_copies)
		elog(ERROR, "parallel copy into \"%s\" ended with " UINT64_FORMAT " of " UINT64_FORMAT " parts copied",
			 output->name, pg_atomic_read_u64(&shared->copies_done), segment.num_copies);
	for (size_t p = 0; p < parts->num_parts; p++)
		if (parts->parts[p].kind == LP_UPLOAD_PART_COPY &&
			!output->ops->add_part(output, (uint32) (p + 1),
								   copier.receipts + p * LP_PART_RECEIPT_MAX, &err))
			lp_raise(&err);
	if (pcxt != NULL)
		lp_parallel_end(pcxt);
	return true;
}

void
lp_copy_parts_worker_main(dsm_segment *seg, shm_toc *toc)
{
	PartsShared *shared = shm_toc_lookup(toc, PARTS_KEY_SHARED, false);
	uint64	   *sizes = shm_toc_lookup(toc, PARTS_KEY_SIZES, false);
	const char *names = shm_toc_lookup(toc, PARTS_KEY_NAMES, false);
	PartsCopier copier;
	LpError		err;

	lp_parallel_worker_show_query(toc);
	copier.shared = shared;
	copier.parts = shm_toc_lookup(toc, PARTS_KEY_PARTS, false);
	copier.receipts = shm_toc_lookup(toc, PARTS_KEY_RECEIPTS, false);
	copier.inputs = palloc(sizeof(LpInput *) * shared->num_inputs);
	for (uint32 i = 0; i < shared->num_inputs; i++)
	{
		char	   *key;
		LpStore    *store = lp_store_for_uri(names, &key);

		copier.inputs[i] = store->ops->open_input_lazily(store, key, sizes[i], &err);
		if (copier.inputs[i] == NULL)
			lp_raise(&err);
		names += strlen(names) + 1;
	}
	copier.output_name = names;
	copier.parts_token = names + strlen(names) + 1;
	/* the output's store (on object storage: its server and user mapping), looked up as the leader did */
	copier.store = lp_store_for_uri(copier.output_name, NULL);
	if (!copy_numbered_parts(&copier, &err))
		lp_raise(&err);
	for (uint32 i = 0; i < shared->num_inputs; i++)
		lp_input_close(copier.inputs[i]);
}
