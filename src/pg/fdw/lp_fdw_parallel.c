/*
 * lp_fdw_parallel.c - parallel lance_fdw scans: the units of work of a
 * source, the partial path the planner may put under a Gather, and the queue
 * of units in dynamic shared memory that the leader and its workers take
 * units from.
 *
 * A unit is a fragment, or a range of lance_parts.fdw_unit_rows rows of a
 * larger one; a single data file is one unit.  The queue holds the version
 * the leader read and, per fragment of it, the number of its first unit (so
 * its size follows the fragments, not the setting): workers read exactly that
 * manifest instead of resolving the latest version again, so every process
 * reads the same fragments.  Each process takes the next unit number with an
 * atomic increment until none is left, and reads the unit with the deletion
 * file of its fragment, as a serial scan does.
 *
 * Only the partial path is parallel-safe: a non-partial scan in a worker gets
 * no shared memory, so it could not learn the leader's version.
 */
#include "postgres.h"

#include <math.h>

#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "port/atomics.h"
#include "utils/guc.h"

#include "base/lp_pg_compat.h"
#include "fdw/lp_fdw.h"

static int	lp_fdw_unit_rows = 1024 * 1024;

struct LpFdwUnitQueue
{
	bool		has_version;	/* datasets: version is the one to read */
	uint64		version;
	/*
	 * The leader reads its transaction's pending publications, which only it
	 * knows (a generic plan made before they were queued): workers take no
	 * unit.
	 */
	bool		leader_only;
	uint64		unit_rows;		/* the leader's lance_parts.fdw_unit_rows */
	uint64		num_fragments;	/* of that version */
	pg_atomic_uint64 next_unit;
	/* the workers' counts for EXPLAIN ANALYZE, until the leader takes them */
	pg_atomic_uint64 filtered_rows;
	pg_atomic_uint64 pages_decoded;
	pg_atomic_uint64 pages_skipped;
	/* fragment f has the units first_unit[f] to first_unit[f + 1] - 1 */
	uint64		first_unit[FLEXIBLE_ARRAY_MEMBER];
};

void
LpFdwParallelInit(void)
{
	DefineCustomIntVariable("lance_parts.fdw_unit_rows",
							gettext_noop("Rows of a fragment that one process of a parallel lance_fdw scan takes at a time."),
							gettext_noop("Fragments with more rows are split into ranges of this many rows; the leader and the workers of a parallel scan take fragments and ranges from a shared queue."),
							&lp_fdw_unit_rows,
							1024 * 1024, 1, INT_MAX,
							PGC_USERSET, 0,
							NULL, NULL, NULL);
}

/*
 * The number of units of fragment f of source: one when it has at most
 * lance_parts.fdw_unit_rows rows or the manifest does not record how many.
 */
static uint64
fragment_units(const LpFdwSource *source, uint64 f)
{
	LpFragment	fragment;

	if (source->single_file)
		return 1;
	lp_manifest_fragment(source->manifest, f, &fragment);
	if (fragment.physical_rows == 0)
		return 1;
	return (fragment.physical_rows - 1) / (uint64) lp_fdw_unit_rows + 1;
}

uint64
lp_fdw_count_units(const LpFdwSource *source)
{
	uint64		count = 0;

	for (uint64 f = 0; f < source->num_fragments; f++)
		count += fragment_units(source, f);
	return count;
}

/* How many processes share the rows of a parallel path, as the planner reckons it (costsize.c). */
static double
parallel_divisor(int workers)
{
	double		divisor = workers;
	double		leader_contribution = 1.0 - 0.3 * workers;

	if (parallel_leader_participation && leader_contribution > 0)
		divisor += leader_contribution;
	return divisor;
}

int
lp_fdw_parallel_workers(PlannerInfo *root, RelOptInfo *baserel, const LpFdwSource *source,
						double *divisor)
{
	uint64		num_units;
	double		pages;
	int			workers;

	/* the pending publications a source reads are its backend's alone */
	if (!baserel->consider_parallel || lp_fdw_source_has_pending(source))
		return 0;
	num_units = lp_fdw_count_units(source);
	if (num_units < 2)
		return 0;

	/*
	 * Workers by size as for a table (min_parallel_table_scan_size): the
	 * data files' size when the manifest records it, else the rows' width.
	 */
	pages = source->data_bytes > 0 ? (double) source->data_bytes / BLCKSZ
		: baserel->tuples * baserel->reltarget->width / BLCKSZ;
	workers = compute_parallel_worker(baserel, ceil(pages), -1, max_parallel_workers_per_gather);
	workers = (int) Min((uint64) workers, num_units);
	if (workers <= 0)
		return 0;
	*divisor = parallel_divisor(workers);
	return workers;
}

void
lp_fdw_add_partial_path(PlannerInfo *root, RelOptInfo *baserel, const LpFdwSource *source,
						Cost startup_cost, Cost run_cost)
{
	double		divisor;
	int			workers = lp_fdw_parallel_workers(root, baserel, source, &divisor);
	Path	   *path;

	if (workers <= 0)
		return;
	path = (Path *) create_foreignscan_path(root, baserel, NULL,
											clamp_row_est(baserel->rows / divisor), 0,
											startup_cost, startup_cost + run_cost / divisor,
											NIL, baserel->lateral_relids, NULL, NIL, NIL);
	path->parallel_aware = true;
	path->parallel_safe = true;
	path->parallel_workers = workers;
	add_partial_path(baserel, path);
}

Size
lp_fdw_queue_size(const LpFdwSource *source)
{
	return add_size(offsetof(LpFdwUnitQueue, first_unit),
					mul_size(sizeof(uint64), add_size(source->num_fragments, 1)));
}

LpFdwUnitQueue *
lp_fdw_queue_create(void *space, const LpFdwSource *source)
{
	LpFdwUnitQueue *queue = space;

	queue->has_version = !source->single_file;
	queue->version = source->version;
	queue->leader_only = lp_fdw_source_has_pending(source);
	queue->unit_rows = (uint64) lp_fdw_unit_rows;
	queue->num_fragments = source->num_fragments;
	queue->first_unit[0] = 0;
	for (uint64 f = 0; f < source->num_fragments; f++)
		queue->first_unit[f + 1] = queue->first_unit[f] + fragment_units(source, f);
	pg_atomic_init_u64(&queue->next_unit, 0);
	pg_atomic_init_u64(&queue->filtered_rows, 0);
	pg_atomic_init_u64(&queue->pages_decoded, 0);
	pg_atomic_init_u64(&queue->pages_skipped, 0);
	return queue;
}

void
lp_fdw_queue_reset(LpFdwUnitQueue *queue)
{
	pg_atomic_write_u64(&queue->next_unit, 0);
}

bool
lp_fdw_queue_leader_only(const LpFdwUnitQueue *queue)
{
	return queue->leader_only;
}

const uint64 *
lp_fdw_queue_version(const LpFdwUnitQueue *queue)
{
	return queue->has_version ? &queue->version : NULL;
}

void
lp_fdw_queue_check_source(const LpFdwUnitQueue *queue, const LpFdwSource *source)
{
	if (source->num_fragments != queue->num_fragments)
		ereport(ERROR,
				errcode(ERRCODE_DATA_CORRUPTED),
				errmsg("version " UINT64_FORMAT " of dataset \"%s\" changed during a parallel scan",
					   source->version, source->path),
				errdetail("The leader read " UINT64_FORMAT " fragments in its manifest, a worker " UINT64_FORMAT ".",
						  queue->num_fragments, source->num_fragments));
}

bool
lp_fdw_queue_take(LpFdwUnitQueue *queue, LpFdwUnit *unit)
{
	uint64		index = pg_atomic_fetch_add_u64(&queue->next_unit, 1);
	uint64		low = 0;
	uint64		high = queue->num_fragments;

	if (index >= queue->first_unit[queue->num_fragments])
		return false;
	/* the fragment f with first_unit[f] <= index < first_unit[f + 1] */
	while (high - low > 1)
	{
		uint64		middle = low + (high - low) / 2;

		if (queue->first_unit[middle] <= index)
			low = middle;
		else
			high = middle;
	}
	unit->fragment = low;
	unit->first_row = (index - queue->first_unit[low]) * queue->unit_rows;
	/* a fragment of one unit is read whole, whatever its row count */
	unit->num_rows = queue->first_unit[low + 1] - queue->first_unit[low] == 1
		? PG_UINT64_MAX : queue->unit_rows;
	return true;
}

void
lp_fdw_queue_add_counts(LpFdwUnitQueue *queue, uint64 filtered_rows, uint64 pages_decoded,
						uint64 pages_skipped)
{
	pg_atomic_fetch_add_u64(&queue->filtered_rows, (int64) filtered_rows);
	pg_atomic_fetch_add_u64(&queue->pages_decoded, (int64) pages_decoded);
	pg_atomic_fetch_add_u64(&queue->pages_skipped, (int64) pages_skipped);
}

void
lp_fdw_queue_take_counts(LpFdwUnitQueue *queue, uint64 *filtered_rows, uint64 *pages_decoded,
						 uint64 *pages_skipped)
{
	*filtered_rows = pg_atomic_exchange_u64(&queue->filtered_rows, 0);
	*pages_decoded = pg_atomic_exchange_u64(&queue->pages_decoded, 0);
	*pages_skipped = pg_atomic_exchange_u64(&queue->pages_skipped, 0);
}
