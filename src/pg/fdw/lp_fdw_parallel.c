/*
 * lp_fdw_parallel.c - parallel lance_fdw scans: the units of work of a
 * source, the partial path the planner may put under a Gather, and the queue
 * of units in dynamic shared memory that the leader and its workers take
 * units from.
 *
 * A unit is a fragment, or a range of lance_parts.fdw_unit_rows rows of a
 * larger one; a single data file is one unit.  The leader lists the units of
 * the version it read in the queue, with that version: workers read exactly
 * that manifest instead of resolving the latest version again, so every
 * process reads the same fragments.  Each process takes the next unit with an
 * atomic increment until none is left, and reads it with the deletion file of
 * its fragment, as a serial scan does.
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

#include "fdw/lp_fdw.h"

static int	lp_fdw_unit_rows = 1024 * 1024;

struct LpFdwUnitQueue
{
	bool		has_version;	/* datasets: version is the one to read */
	uint64		version;
	uint64		num_fragments;	/* of that version */
	uint64		num_units;
	pg_atomic_uint64 next_unit;
	LpFdwUnit	units[FLEXIBLE_ARRAY_MEMBER];
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
 * The units of source in scan order, stored into units unless it is NULL;
 * returns their number.  A fragment whose row count the manifest does not
 * record is one unit.
 */
static uint64
list_units(const LpFdwSource *source, LpFdwUnit *units)
{
	uint64		count = 0;

	for (uint64 f = 0; f < source->num_fragments; f++)
	{
		LpFragment	fragment;
		uint64		rows = PG_UINT64_MAX;	/* not recorded: the fragment is one unit */
		uint64		first = 0;

		if (!source->single_file)
		{
			lp_manifest_fragment(source->manifest, f, &fragment);
			if (fragment.physical_rows != 0)
				rows = fragment.physical_rows;
		}
		do
		{
			if (units != NULL)
			{
				units[count].fragment = f;
				units[count].first_row = first;
				units[count].num_rows = rows == PG_UINT64_MAX ? rows : (uint64) lp_fdw_unit_rows;
			}
			count++;
			first += (uint64) lp_fdw_unit_rows;
		} while (rows != PG_UINT64_MAX && first < rows);
	}
	return count;
}

uint64
lp_fdw_count_units(const LpFdwSource *source)
{
	return list_units(source, NULL);
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

void
lp_fdw_add_partial_path(PlannerInfo *root, RelOptInfo *baserel, const LpFdwSource *source,
						Cost startup_cost, Cost run_cost)
{
	uint64		num_units;
	double		pages;
	int			workers;
	double		divisor;
	Path	   *path;

	if (!baserel->consider_parallel)
		return;
	num_units = lp_fdw_count_units(source);
	if (num_units < 2)
		return;

	/*
	 * Workers by size as for a table (min_parallel_table_scan_size): the
	 * data files' size when the manifest records it, else the rows' width.
	 */
	pages = source->data_bytes > 0 ? (double) source->data_bytes / BLCKSZ
		: baserel->tuples * baserel->reltarget->width / BLCKSZ;
	workers = compute_parallel_worker(baserel, ceil(pages), -1, max_parallel_workers_per_gather);
	workers = (int) Min((uint64) workers, num_units);
	if (workers <= 0)
		return;

	divisor = parallel_divisor(workers);
	path = (Path *) create_foreignscan_path(root, baserel, NULL,
											clamp_row_est(baserel->rows / divisor),
											startup_cost, startup_cost + run_cost / divisor,
											NIL, baserel->lateral_relids, NULL, NIL);
	path->parallel_aware = true;
	path->parallel_safe = true;
	path->parallel_workers = workers;
	add_partial_path(baserel, path);
}

Size
lp_fdw_queue_size(const LpFdwSource *source)
{
	return add_size(offsetof(LpFdwUnitQueue, units),
					mul_size(sizeof(LpFdwUnit), lp_fdw_count_units(source)));
}

LpFdwUnitQueue *
lp_fdw_queue_create(void *space, const LpFdwSource *source)
{
	LpFdwUnitQueue *queue = space;

	queue->has_version = !source->single_file;
	queue->version = source->version;
	queue->num_fragments = source->num_fragments;
	queue->num_units = list_units(source, queue->units);
	pg_atomic_init_u64(&queue->next_unit, 0);
	return queue;
}

void
lp_fdw_queue_reset(LpFdwUnitQueue *queue)
{
	pg_atomic_write_u64(&queue->next_unit, 0);
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

	if (index >= queue->num_units)
		return false;
	*unit = queue->units[index];
	return true;
}
