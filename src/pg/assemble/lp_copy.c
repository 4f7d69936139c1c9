/*
 * lp_copy.c - an assembly's output written as numbered parts by the leader
 * and PostgreSQL parallel workers.
 *
 * The plan fixes every output byte before the copy starts, and the output's
 * parts (lp_concat_output_parts: a local file's are spans of equal size of
 * the data region and the tail, an object's the parts its multipart limits
 * allow) fix which bytes each part holds.  Copiers claim parts with an
 * atomic counter; each opens a writer of its part in the output's store
 * (LpStoreOps.open_part, named by the token of LpOutputOps.start_parts),
 * writes the part's bytes into it (lp_concat_write_part: kernel copies or
 * copies in the store where the backend makes them) and ends it, leaving
 * the part's receipt in shared memory.  No locks, no ordering between
 * copiers, and the same bytes whatever the number of workers.  The leader
 * adds every receipt to the output (LpOutputOps.add_part) before it
 * publishes; how the parts become one file is the store's business.
 *
 * A ParallelContext gives the workers the leader's GUCs, sends their
 * errors back (raised in the leader with "parallel worker" context) and
 * terminates and waits for them when the leader's transaction aborts, so no
 * worker outlives a failed or cancelled call.  A worker gets the store of
 * the output from its name as the leader did (settings and credentials from
 * the catalog, as the leader's user and within its transaction), so no
 * secret passes through shared memory.  The leader's output is dropped (its
 * temporary file removed, its parts aborted) by its memory-context
 * callback, which runs after the workers are gone (AtEOXact_Parallel
 * precedes the portal's memory cleanup).  Parallel mode only forbids
 * catalog writes and XID assignment, neither of which copying needs.
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
							gettext_noop("Largest number of parallel workers that copy or re-encode part data during one assembly."),
							gettext_noop("On object storage they issue the server-side part copies. Locally they also re-encode long runs of parts with deletions, cut into pieces of a few MB, one per worker and the leader. The leader works too. 0 works in the calling backend only. Workers also count against max_worker_processes and max_parallel_workers; when none can be started, the copy runs serially."),
							&lp_max_copy_workers,
							2, 0, MAX_COPY_WORKERS_LIMIT,
							PGC_USERSET, 0,
							NULL, NULL, NULL);
}

#define PARTS_KEY_SHARED	UINT64CONST(0x4C50000000000011)
#define PARTS_KEY_PARTS		UINT64CONST(0x4C50000000000012)
#define PARTS_KEY_RECEIPTS	UINT64CONST(0x4C50000000000013)	/* LP_PART_RECEIPT_MAX per part */
#define PARTS_KEY_SIZES		UINT64CONST(0x4C50000000000014)
#define PARTS_KEY_NAMES		UINT64CONST(0x4C50000000000015)	/* the parts', the output's, its parts token, the root ("": none) */
#define PARTS_KEY_RANGES	UINT64CONST(0x4C50000000000016)
#define PARTS_KEY_TAIL		UINT64CONST(0x4C50000000000017)

/* State shared by every copier of one output. */
typedef struct PartsShared
{
	uint64		num_parts;
	uint64		num_ranges;
	uint64		region_end;		/* plan->tail.start */
	uint64		region_alignment;
	uint64		output_size;
	uint64		read_batch_bytes;
	uint32		num_inputs;
	pg_atomic_uint64 next_part; /* the next part to claim */
	pg_atomic_uint64 parts_done;
	pg_atomic_uint64 bytes_done;
	pg_atomic_uint32 failed;	/* a copier failed: the others stop claiming */
	pg_atomic_uint32 done_bits[FLEXIBLE_ARRAY_MEMBER];	/* one bit per part */
} PartsShared;

/* The leader's view of how far the copy is, for lp_progress. */
typedef struct CopyProgress
{
	uint64	   *input_ends;		/* output end of each input's data */
	int			num_inputs;
	int			inputs_done;
	uint64		prefix_parts;	/* parts [0, prefix_parts) are all written */
} CopyProgress;

/* What a copier works with, in the leader or a worker. */
typedef struct PartsCopier
{
	PartsShared *shared;
	const LpUploadPart *parts;
	char	   *receipts;		/* LP_PART_RECEIPT_MAX bytes per part */
	LpStore    *store;			/* a store of the output's account */
	const char *output_name;
	const char *parts_token;
	LpConcatCopier copier;		/* its output: the part being written */
} PartsCopier;

static Size
shared_size(uint64 num_parts)
{
	return add_size(offsetof(PartsShared, done_bits),
					mul_size(sizeof(pg_atomic_uint32), (Size) ((num_parts + 31) / 32)));
}

static void
init_shared(PartsShared *shared, const LpConcatPlan *plan, uint64 num_parts)
{
	shared->num_parts = num_parts;
	shared->num_ranges = plan->num_ranges;
	shared->region_end = plan->tail.start;
	shared->region_alignment = plan->region_alignment;
	shared->output_size = plan->output_size;
	shared->read_batch_bytes = (uint64) lp_read_batch_bytes;
	shared->num_inputs = plan->num_inputs;
	pg_atomic_init_u64(&shared->next_part, 0);
	pg_atomic_init_u64(&shared->parts_done, 0);
	pg_atomic_init_u64(&shared->bytes_done, 0);
	pg_atomic_init_u32(&shared->failed, 0);
	for (uint64 w = 0; w < (num_parts + 31) / 32; w++)
		pg_atomic_init_u32(&shared->done_bits[w], 0);
}

static void
report_progress(PartsShared *shared, const LpUploadPart *parts, CopyProgress *progress)
{
	uint64		prefix_bytes = 0;

	while (progress->prefix_parts < shared->num_parts &&
		   (pg_atomic_read_u32(&shared->done_bits[progress->prefix_parts / 32]) &
			(1U << (progress->prefix_parts % 32))) != 0)
		progress->prefix_parts++;
	if (progress->prefix_parts > 0)
		prefix_bytes = parts[progress->prefix_parts - 1].dest_offset +
			parts[progress->prefix_parts - 1].length;
	while (progress->inputs_done < progress->num_inputs &&
		   progress->input_ends[progress->inputs_done] <= prefix_bytes)
		progress->inputs_done++;
	lp_progress_update(progress->inputs_done,
					   (int64) pg_atomic_read_u64(&shared->bytes_done));
}

/*
 * Claim parts and write each through a writer of its own until none is
 * left or another copier failed.  False, with err, when this copier failed.
 */
static bool
write_parts(PartsCopier *copier, CopyProgress *progress, LpError *err)
{
	PartsShared *shared = copier->shared;

	for (;;)
	{
		const LpUploadPart *part;
		LpOutput   *writer;
		uint64		p;

		CHECK_FOR_INTERRUPTS();
		if (pg_atomic_read_u32(&shared->failed) != 0)
			return true;
		p = pg_atomic_fetch_add_u64(&shared->next_part, 1);
		if (p >= shared->num_parts)
			return true;
		part = &copier->parts[p];
		writer = copier->store->ops->open_part(copier->store, copier->output_name,
											   copier->parts_token, (uint32) (p + 1),
											   part->dest_offset, part->length, err);
		copier->copier.output = writer;
		if (writer != NULL && !lp_concat_write_part(&copier->copier, part, err))
		{
			writer->ops->abort(writer);
			writer = NULL;
		}
		if (writer == NULL ||
			!writer->ops->end_part(writer, copier->receipts + p * LP_PART_RECEIPT_MAX,
								   LP_PART_RECEIPT_MAX, err))
		{
			pg_atomic_write_u32(&shared->failed, 1);
			return false;
		}
		pg_atomic_fetch_or_u32(&shared->done_bits[p / 32], 1U << (p % 32));
		pg_atomic_fetch_add_u64(&shared->bytes_done, part->length);
		pg_atomic_fetch_add_u64(&shared->parts_done, 1);
		if (progress != NULL)
			report_progress(shared, copier->parts, progress);
	}
}

/* The leader's own parts; ERROR if one fails. */
static void
leader_write_parts(PartsCopier *copier, CopyProgress *progress)
{
	LpError		err;

	if (!write_parts(copier, progress, &err))
		lp_raise(&err);
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

/* What lp_copy_output_parts puts in the workers' segment. */
typedef struct PartsSegment
{
	const LpConcatPlan *plan;
	const LpUploadParts *parts;
	const char *root;
	const char *const *paths;
	const char *output_name;
	const char *parts_token;
	Size		names_size;
	PartsShared *shared;		/* set by fill_parts_segment */
	char	   *receipts;		/* likewise */
} PartsSegment;

static void
fill_parts_segment(ParallelContext *pcxt, void *arg)
{
	PartsSegment *segment = arg;
	const LpConcatPlan *plan = segment->plan;
	size_t		num_parts = segment->parts->num_parts;
	char	   *names;

	segment->shared = shm_toc_allocate(pcxt->toc, shared_size(num_parts));
	init_shared(segment->shared, plan, num_parts);
	shm_toc_insert(pcxt->toc, PARTS_KEY_SHARED, segment->shared);
	lp_parallel_insert_copy(pcxt, PARTS_KEY_PARTS, segment->parts->parts,
							sizeof(LpUploadPart) * num_parts);
	segment->receipts = shm_toc_allocate(pcxt->toc, mul_size(LP_PART_RECEIPT_MAX, num_parts));
	shm_toc_insert(pcxt->toc, PARTS_KEY_RECEIPTS, segment->receipts);
	lp_parallel_insert_copy(pcxt, PARTS_KEY_SIZES, plan->input_sizes,
							sizeof(uint64) * plan->num_inputs);
	lp_parallel_insert_copy(pcxt, PARTS_KEY_RANGES, plan->ranges,
							sizeof(LpCopyRange) * plan->num_ranges);
	lp_parallel_insert_copy(pcxt, PARTS_KEY_TAIL, plan->tail.bytes.data, plan->tail.bytes.len);
	names = shm_toc_allocate(pcxt->toc, segment->names_size);
	shm_toc_insert(pcxt->toc, PARTS_KEY_NAMES, names);
	for (uint32 i = 0; i < plan->num_inputs; i++)
		names = stpcpy(names, segment->paths[i]) + 1;
	names = stpcpy(names, segment->output_name) + 1;
	names = stpcpy(names, segment->parts_token) + 1;
	strcpy(names, segment->root != NULL ? segment->root : "");
}

/* The progress of the inputs: each one's end in the output. */
static void
init_progress(CopyProgress *progress, const LpConcatPlan *plan)
{
	progress->num_inputs = (int) plan->num_inputs;
	progress->inputs_done = 0;
	progress->prefix_parts = 0;
	progress->input_ends = palloc0(sizeof(uint64) * plan->num_inputs);
	for (size_t r = 0; r < plan->num_ranges; r++)
		progress->input_ends[plan->ranges[r].input] =
			plan->ranges[r].dest_offset + plan->ranges[r].length;
	for (uint32 i = 1; i < plan->num_inputs; i++)
		progress->input_ends[i] = Max(progress->input_ends[i], progress->input_ends[i - 1]);
}

/*
 * Start the workers; NULL, with a NOTICE, when none could be started
 * (num_copies: parts copied in the store, which the message names).
 */
static ParallelContext *
start_workers(PartsSegment *segment, int nworkers, uint64 num_copies)
{
	const LpConcatPlan *plan = segment->plan;
	size_t		num_parts = segment->parts->num_parts;
	ParallelContext *pcxt;

	for (uint32 i = 0; i < plan->num_inputs; i++)
		segment->names_size = add_size(segment->names_size, strlen(segment->paths[i]) + 1);
	segment->names_size = add_size(segment->names_size, strlen(segment->output_name) + 1);
	segment->names_size = add_size(segment->names_size, strlen(segment->parts_token) + 1);
	segment->names_size = add_size(segment->names_size,
								   (segment->root != NULL ? strlen(segment->root) : 0) + 1);
	{
		/* the chunks of fill_parts_segment */
		const Size	chunk_sizes[] = {
			shared_size(num_parts),
			mul_size(sizeof(LpUploadPart), num_parts),
			mul_size(LP_PART_RECEIPT_MAX, num_parts),
			mul_size(sizeof(uint64), plan->num_inputs),
			mul_size(sizeof(LpCopyRange), plan->num_ranges),
			plan->tail.bytes.len,
			segment->names_size,
		};

		pcxt = lp_parallel_start("lp_copy_parts_worker_main", nworkers, chunk_sizes,
								 lengthof(chunk_sizes), fill_parts_segment, segment);
	}
	if (pcxt == NULL)
		ereport(NOTICE,
				errmsg("no parallel workers could be started to copy %s \"%s\", copying serially",
					   num_copies > 0 ? "parts into" : "into", segment->output_name),
				errhint("Raise max_worker_processes or max_parallel_workers, or set lance_parts.max_copy_workers to 0."));
	else if (num_copies > 0)
		ereport(DEBUG1,
				errmsg_internal("copying " UINT64_FORMAT " of %zu upload parts of \"%s\" with %d parallel workers",
								num_copies, num_parts, segment->output_name,
								pcxt->nworkers_launched));
	else
		ereport(DEBUG1,
				errmsg_internal("copying into \"%s\" with %d parallel workers",
								segment->output_name, pcxt->nworkers_launched));
	return pcxt;
}

bool
lp_copy_output_parts(const LpConcatPlan *plan, const LpUploadParts *parts, const char *root,
					 const char *const *paths, LpInput *const *inputs, LpOutput *output)
{
	ParallelContext *pcxt = NULL;
	PartsCopier copier;
	PartsShared *shared;
	PartsSegment segment = {plan, parts, root, paths, output->name};
	CopyProgress progress;
	uint64		num_copies;
	int			nworkers = lp_max_copy_workers;
	int			nworkers_launched = 0;
	LpError		err;

	if (!lp_concat_parts_by_number(parts, inputs, output, (size_t) lp_read_batch_bytes,
								   &num_copies))
		return false;
	segment.parts_token = output->ops->start_parts(output, &err);
	if (segment.parts_token == NULL)
		lp_raise(&err);
	init_progress(&progress, plan);

	/* a worker needs at least one part of its own */
	if ((uint64) nworkers > parts->num_parts - Min(parts->num_parts, 1))
		nworkers = (int) (parts->num_parts - Min(parts->num_parts, 1));
	if (nworkers > 0)
		pcxt = start_workers(&segment, nworkers, num_copies);
	if (pcxt != NULL)
		nworkers_launched = pcxt->nworkers_launched;
	else
	{
		/* without workers the leader writes every part itself */
		segment.shared = palloc(shared_size(parts->num_parts));
		init_shared(segment.shared, plan, parts->num_parts);
		segment.receipts = palloc(mul_size(LP_PART_RECEIPT_MAX, parts->num_parts));
	}
	shared = segment.shared;
	lp_progress_phase(LP_PHASE_COPYING, 0, 0, (int64) plan->output_size, nworkers_launched);

	copier.shared = shared;
	copier.parts = parts->parts;
	copier.receipts = segment.receipts;
	copier.store = lp_store_for_uri(output->name, NULL);
	copier.output_name = output->name;
	copier.parts_token = segment.parts_token;
	if (!lp_concat_copier_init(&copier.copier, plan, inputs, NULL, (size_t) lp_read_batch_bytes,
							   &err))
		lp_raise(&err);
	if (parallel_leader_participation || nworkers_launched == 0)
		leader_write_parts(&copier, &progress);
	if (pcxt != NULL)
	{
		while (pg_atomic_read_u64(&shared->parts_done) < parts->num_parts &&
			   !all_workers_stopped(pcxt))
		{
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 LP_PROGRESS_INTERVAL_MS, PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
			CHECK_FOR_INTERRUPTS();
			report_progress(shared, parts->parts, &progress);
		}
		/* raises a worker's error, if any */
		WaitForParallelWorkersToFinish(pcxt);
		/* parts no worker got to (workers that could not start) are the leader's */
		leader_write_parts(&copier, &progress);
	}
	lp_concat_copier_free(&copier.copier);
	if (pg_atomic_read_u64(&shared->parts_done) != parts->num_parts)
		elog(ERROR, "parallel copy into \"%s\" ended with " UINT64_FORMAT " of %zu parts written",
			 output->name, pg_atomic_read_u64(&shared->parts_done), parts->num_parts);
	report_progress(shared, parts->parts, &progress);
	for (size_t p = 0; p < parts->num_parts; p++)
		if (!output->ops->add_part(output, (uint32) (p + 1),
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
	const char *root;
	LpConcatPlan plan;
	LpInput   **inputs;
	PartsCopier copier;
	LpError		err;

	lp_parallel_worker_show_query(toc);

	/* the part of a plan a copier reads */
	memset(&plan, 0, sizeof(plan));
	plan.num_inputs = shared->num_inputs;
	plan.input_sizes = sizes;
	plan.num_ranges = (size_t) shared->num_ranges;
	plan.ranges = shm_toc_lookup(toc, PARTS_KEY_RANGES, false);
	plan.region_alignment = shared->region_alignment;
	plan.output_size = shared->output_size;
	plan.tail.start = shared->region_end;
	plan.tail.bytes.data = shm_toc_lookup(toc, PARTS_KEY_TAIL, false);
	plan.tail.bytes.len = (size_t) (shared->output_size - shared->region_end);

	/* the root follows the parts' paths, the output's name and its parts token */
	root = names;
	for (uint32 i = 0; i < shared->num_inputs + 2; i++)
		root += strlen(root) + 1;
	inputs = palloc(sizeof(LpInput *) * shared->num_inputs);
	for (uint32 i = 0; i < shared->num_inputs; i++)
	{
		char	   *key;
		LpStore    *store = lp_store_for_uri_below(root[0] != '\0' ? root : NULL, names, &key);

		inputs[i] = store->ops->open_input_lazily(store, key, sizes[i], &err);
		if (inputs[i] == NULL)
			lp_raise(&err);
		names += strlen(names) + 1;
	}
	copier.shared = shared;
	copier.parts = shm_toc_lookup(toc, PARTS_KEY_PARTS, false);
	copier.receipts = shm_toc_lookup(toc, PARTS_KEY_RECEIPTS, false);
	copier.output_name = names;
	copier.parts_token = names + strlen(names) + 1;
	/* the output's store (on object storage: its server and user mapping), looked up as the leader did */
	copier.store = lp_store_for_uri(copier.output_name, NULL);
	if (!lp_concat_copier_init(&copier.copier, &plan, inputs, NULL,
							   (size_t) shared->read_batch_bytes, &err) ||
		!write_parts(&copier, NULL, &err))
	{
		pg_atomic_write_u32(&shared->failed, 1);
		lp_raise(&err);
	}
	lp_concat_copier_free(&copier.copier);
	for (uint32 i = 0; i < shared->num_inputs; i++)
		lp_input_close(inputs[i]);
}
