/*
 * lp_fdw.c - lance_fdw's scans: planning, the executor's scans (through
 * the scan iterator of lp_fdw_scan.c; parallel scans share a queue of units,
 * lp_fdw_parallel.c) and EXPLAIN.
 *
 * The plan carries the columns to read and whether the scan ranks the rows
 * (fdw_private), and the clauses the scan evaluates while decoding
 * (fdw_exprs, chosen by lp_fdw_pushdown.c), followed in a top-k scan by the
 * ranking, LIMIT and OFFSET (lp_fdw_topk.c); the executor evaluates only the
 * other clauses.
 */
#include "postgres.h"

#include "access/sysattr.h"
#include "access/parallel.h"
#include "access/table.h"
#include "commands/explain.h"
#include "foreign/fdwapi.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/planmain.h"
#include "optimizer/restrictinfo.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"

#include "base/lp_pg_compat.h"
#include "fdw/lp_fdw.h"

/* ---- planning -------------------------------------------------------------- */

/* What planning learns of a foreign table (baserel->fdw_private). */
typedef struct LpFdwRelInfo
{
	LpFdwSource *source;
	List	   *pushed;			/* RestrictInfos the scan evaluates */
} LpFdwRelInfo;

static void
lance_get_rel_size(PlannerInfo *root, RelOptInfo *baserel, Oid foreigntableid)
{
	LpFdwTableOptions options;
	LpFdwSource *source;
	LpFdwRelInfo *info = palloc0(sizeof(LpFdwRelInfo));
	double		live_rows;

	lp_fdw_table_options(foreigntableid, &options);
	source = lp_fdw_open_source(options.path, options.server, options.has_version, options.version, false);
	info->source = source;
	info->pushed = lp_fdw_pushable_clauses(baserel, foreigntableid, source);
	live_rows = (double) source->physical_rows - (double) source->deleted_rows;
	baserel->tuples = Max(live_rows, 0);
	baserel->rows = clamp_row_est(baserel->tuples *
								  clauselist_selectivity(root, baserel->baserestrictinfo,
														 0, JOIN_INNER, NULL));
	baserel->fdw_private = info;
}

/*
 * Foreign tables may be scanned in parallel, but only through the partial
 * path (lance_get_paths): a scan in a worker learns the leader's dataset
 * version from the shared memory of a parallel-aware node, which a
 * whole-table scan in a worker would not have.
 */
static bool
lance_parallel_safe(PlannerInfo *root, RelOptInfo *rel, RangeTblEntry *rte)
{
	return true;
}

static void
lance_get_paths(PlannerInfo *root, RelOptInfo *baserel, Oid foreigntableid)
{
	LpFdwSource *source = ((LpFdwRelInfo *) baserel->fdw_private)->source;
	int			width_columns = list_length(baserel->reltarget->exprs);
	Cost		startup = 10 * (Cost) source->num_files;
	Cost		run = baserel->tuples * cpu_tuple_cost * (1 + width_columns) +
		baserel->tuples * cpu_operator_cost * list_length(baserel->baserestrictinfo);
	Path	   *path;

	path = (Path *) create_foreignscan_path(root, baserel, NULL, baserel->rows, 0,
											startup, startup + run, NIL,
											baserel->lateral_relids, NULL, NIL, NIL);
	path->parallel_safe = false;
	add_path(baserel, path);
	lp_fdw_add_partial_path(root, baserel, source, startup, run);
	lp_fdw_topk_add_paths(root, baserel, foreigntableid, source,
						  ((LpFdwRelInfo *) baserel->fdw_private)->pushed, startup);
}

/* The attribute numbers of the columns the query reads, as an integer list. */
static List *
needed_columns(PlannerInfo *root, RelOptInfo *baserel, Oid foreigntableid)
{
	Bitmapset  *attrs = NULL;
	List	   *result = NIL;
	Relation	rel;
	TupleDesc	desc;
	bool		whole_row;
	ListCell   *cell;

	pull_varattnos((Node *) baserel->reltarget->exprs, baserel->relid, &attrs);
	foreach(cell, baserel->baserestrictinfo)
		pull_varattnos((Node *) ((RestrictInfo *) lfirst(cell))->clause, baserel->relid, &attrs);
	whole_row = bms_is_member(0 - FirstLowInvalidHeapAttributeNumber, attrs);

	rel = table_open(foreigntableid, NoLock);
	desc = RelationGetDescr(rel);
	for (int i = 0; i < desc->natts; i++)
	{
		AttrNumber	attnum = TupleDescAttr(desc, i)->attnum;

		if (TupleDescAttr(desc, i)->attisdropped)
			continue;
		if (whole_row || bms_is_member(attnum - FirstLowInvalidHeapAttributeNumber, attrs))
			result = lappend_int(result, attnum);
	}
	table_close(rel, NoLock);
	return result;
}

static ForeignScan *
lance_get_plan(PlannerInfo *root, RelOptInfo *baserel, Oid foreigntableid,
			   ForeignPath *best_path, List *tlist, List *scan_clauses, Plan *outer_plan)
{
	LpFdwRelInfo *info = baserel->fdw_private;
	List	   *local = NIL;
	List	   *pushed = NIL;
	ListCell   *cell;

	foreach(cell, scan_clauses)
	{
		RestrictInfo *rinfo = lfirst_node(RestrictInfo, cell);

		/* pseudoconstant clauses go to a gating Result node */
		if (rinfo->pseudoconstant)
			continue;
		if (list_member_ptr(info->pushed, rinfo))
			pushed = lappend(pushed, rinfo->clause);
		else
			local = lappend(local, rinfo->clause);
	}
	/* a top-k path's fdw_private is its ranking, LIMIT and OFFSET (lp_fdw_topk_add_paths) */
	return make_foreignscan(tlist, local, baserel->relid,
							list_concat(pushed, best_path->fdw_private),
							list_make2(needed_columns(root, baserel, foreigntableid),
									   makeBoolean(best_path->fdw_private != NIL)),
							NIL, NIL, outer_plan);
}

/* ---- the plan's lists ----------------------------------------------------------- */

static bool
plan_ranks_rows(const ForeignScan *plan)
{
	return boolVal(lsecond(plan->fdw_private));
}

/* The clauses of fdw_exprs the scan evaluates. */
static List *
plan_pushed_clauses(const ForeignScan *plan)
{
	if (!plan_ranks_rows(plan))
		return plan->fdw_exprs;
	return list_copy_head(plan->fdw_exprs, list_length(plan->fdw_exprs) - LP_FDW_TOPK_EXPRS);
}

/* The ranking, LIMIT and OFFSET of a top-k plan. */
static List *
plan_topk_exprs(const ForeignScan *plan)
{
	return list_copy_tail(plan->fdw_exprs, list_length(plan->fdw_exprs) - LP_FDW_TOPK_EXPRS);
}

/* ---- the executor's scan ------------------------------------------------------ */

/* node->fdw_state */
typedef struct LanceScanState
{
	LpFdwScan  *scan;
	LpFdwTopK  *topk;			/* a top-k scan: what ranks the scan's rows */
} LanceScanState;

LpFdwScan *
lp_fdw_node_scan(ForeignScanState *node)
{
	return ((LanceScanState *) node->fdw_state)->scan;
}

/* Begin node's scan of version (NULL: the table's own), with its pushed clauses. */
static void
begin_scan(ForeignScanState *node, bool explain_only, const uint64 *version)
{
	ForeignScan *plan = (ForeignScan *) node->ss.ps.plan;
	LanceScanState *state = palloc0(sizeof(LanceScanState));
	List	   *pushed = plan_pushed_clauses(plan);

	state->scan = lp_fdw_scan_begin(node->ss.ss_currentRelation,
									linitial(plan->fdw_private), explain_only, version);
	node->fdw_state = state;
	/* EXPLAIN names the index the filter's clauses would use */
	if (pushed != NIL)
		lp_fdw_scan_set_filter(state->scan,
							   lp_fdw_filter_begin(pushed, plan->scan.scanrelid, &node->ss.ps));
	/* and the vector index the ranking would search */
	if (plan_ranks_rows(plan))
		state->topk = lp_fdw_topk_begin(state->scan, plan_topk_exprs(plan), &node->ss.ps);
}

static void
lance_begin_scan(ForeignScanState *node, int eflags)
{
	/* A worker reads its leader's version: its scan begins in lance_initialize_worker. */
	if (IsParallelWorker() && node->ss.ps.plan->parallel_aware)
		return;
	begin_scan(node, (eflags & EXEC_FLAG_EXPLAIN_ONLY) != 0, NULL);
}

static TupleTableSlot *
lance_iterate(ForeignScanState *node)
{
	TupleTableSlot *slot = node->ss.ss_ScanTupleSlot;
	LanceScanState *state = node->fdw_state;

	ExecClearTuple(slot);
	if (state == NULL)
		return slot;
	if (state->topk != NULL)
	{
		lp_fdw_topk_next(state->topk, slot);
		return slot;
	}
	if (!lp_fdw_scan_next(state->scan))
		return slot;
	lp_fdw_scan_values(state->scan, slot->tts_values, slot->tts_isnull);
	ExecStoreVirtualTuple(slot);
	lp_fdw_scan_row_identity(state->scan, &slot->tts_tid);
	return slot;
}

static void
lance_rescan(ForeignScanState *node)
{
	LanceScanState *state = node->fdw_state;

	if (state == NULL)
		return;
	lp_fdw_scan_rewind(state->scan);
	if (state->topk != NULL)
		lp_fdw_topk_rewind(state->topk);
}

/* A worker's counts for EXPLAIN ANALYZE go to its leader through the queue. */
static void
add_worker_counts(LpFdwScan *scan)
{
	uint64		pages_decoded;
	uint64		pages_skipped;

	lp_fdw_scan_pages(scan, &pages_decoded, &pages_skipped);
	lp_fdw_queue_add_counts(lp_fdw_scan_queue(scan), lp_fdw_scan_filtered_rows(scan),
							pages_decoded, pages_skipped);
}

static void
lance_end_scan(ForeignScanState *node)
{
	/*
	 * Closes the data files of the fragment being read (a LIMIT ends scans early);
	 * memory goes with the executor's context, and an ERROR closes the files
	 * with the transaction.
	 */
	if (node->fdw_state == NULL)
		return;
	if (IsParallelWorker() && node->ss.ps.plan->parallel_aware)
		add_worker_counts(lp_fdw_node_scan(node));
	lp_fdw_scan_end(lp_fdw_node_scan(node));
}

/*
 * The leader takes its workers' counts before the Gather frees the shared
 * memory (children shut down first); a rescan after that shares a new queue.
 */
static void
lance_shutdown(ForeignScanState *node)
{
	LpFdwUnitQueue *queue;
	uint64		filtered_rows;
	uint64		pages_decoded;
	uint64		pages_skipped;

	if (IsParallelWorker() || node->fdw_state == NULL)
		return;
	queue = lp_fdw_scan_queue(lp_fdw_node_scan(node));
	if (queue == NULL)
		return;
	lp_fdw_queue_take_counts(queue, &filtered_rows, &pages_decoded, &pages_skipped);
	lp_fdw_scan_add_counts(lp_fdw_node_scan(node), filtered_rows, pages_decoded, pages_skipped);
	lp_fdw_scan_share(lp_fdw_node_scan(node), NULL);
}

/* ---- parallel scans: the queue of units in dynamic shared memory -------------- */

static Size
lance_estimate_dsm(ForeignScanState *node, ParallelContext *pcxt)
{
	return lp_fdw_queue_size(lp_fdw_scan_source(lp_fdw_node_scan(node)));
}

static void
lance_initialize_dsm(ForeignScanState *node, ParallelContext *pcxt, void *coordinate)
{
	lp_fdw_scan_share(lp_fdw_node_scan(node),
					  lp_fdw_queue_create(coordinate, lp_fdw_scan_source(lp_fdw_node_scan(node))));
}

/* Before a rescan; lance_rescan resets the leader's own position. */
static void
lance_reinitialize_dsm(ForeignScanState *node, ParallelContext *pcxt, void *coordinate)
{
	lp_fdw_queue_reset(coordinate);
}

static void
lance_initialize_worker(ForeignScanState *node, shm_toc *toc, void *coordinate)
{
	LpFdwUnitQueue *queue = coordinate;

	/* no scan state: the worker returns no rows */
	if (lp_fdw_queue_leader_only(queue))
		return;
	begin_scan(node, false, lp_fdw_queue_version(queue));
	lp_fdw_queue_check_source(queue, lp_fdw_scan_source(lp_fdw_node_scan(node)));
	lp_fdw_scan_share(lp_fdw_node_scan(node), queue);
}

/* ---- EXPLAIN ------------------------------------------------------------------ */

static bool
has_parameter(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Param))
		return true;
	return expression_tree_walker(node, has_parameter, context);
}

static void
lance_explain(ForeignScanState *node, ExplainState *es)
{
	ForeignScan *plan = (ForeignScan *) node->ss.ps.plan;
	LanceScanState *state = node->fdw_state;
	LpFdwScan  *scan = state->scan;
	const LpFdwSource *source = lp_fdw_scan_source(scan);
	List	   *pushed = plan_pushed_clauses(plan);
	List	   *context = NIL;

	if (source->single_file)
		ExplainPropertyText("Lance File", source->path, es);
	else
	{
		ExplainPropertyText("Lance Dataset", source->path, es);
		ExplainPropertyUInteger("Dataset Version", NULL, source->published_version, es);
		if (lp_fdw_source_has_pending(source))
			ExplainPropertyBool("Pending Writes Read", true, es);
		ExplainPropertyUInteger("Fragments", NULL, source->num_fragments, es);
	}
	ExplainPropertyUInteger("Data Files", NULL, source->num_files, es);
	if (!source->single_file)
		ExplainPropertyUInteger("Deleted Rows", NULL, source->deleted_rows, es);
	ExplainPropertyList("Lance Fields", lp_fdw_scan_field_names(scan), es);
	if (node->ss.ps.plan->parallel_aware)
		ExplainPropertyUInteger("Lance Units", NULL, lp_fdw_count_units(source), es);
	if (es->verbose && !source->single_file)
	{
		List	   *files = NIL;

		for (size_t f = 0; f < source->num_fragments; f++)
		{
			LpFragment	fragment;

			lp_manifest_fragment(source->manifest, f, &fragment);
			for (size_t d = 0; d < fragment.num_files; d++)
			{
				LpDataFileRef file;

				lp_fragment_data_file(source->manifest, &fragment, d, &file);
				files = lappend(files, (char *) file.path);
			}
		}
		ExplainPropertyList("Lance Data Files", files, es);
	}
	if (plan->fdw_exprs != NIL)
		context = set_deparse_context_plan(es->deparse_cxt, (Plan *) plan, NIL);
	if (pushed != NIL)
		ExplainPropertyText("Lance Filter",
							deparse_expression((Node *) make_ands_explicit(pushed),
											   context, es->verbose, false),
							es);
	/* with EXPLAIN (GENERIC_PLAN) parameters have no values to look up */
	if (pushed != NIL && !source->single_file &&
		(es->analyze || node->ss.ps.state->es_param_list_info != NULL ||
		 !has_parameter((Node *) pushed, NULL)))
	{
		const LpFdwIndexRows *index_rows = lp_fdw_scan_index_rows(scan);

		if (index_rows != NULL)
			ExplainPropertyText("Lance Index",
								psprintf("%s (%s), " UINT64_FORMAT " rows", index_rows->index_name,
										 index_rows->index_type, index_rows->num_rows),
								es);
	}
	if (plan_ranks_rows(plan))
		ExplainPropertyText("Lance Top-K",
							lp_fdw_topk_explain(plan_topk_exprs(plan), context, es->verbose), es);
	if (state->topk != NULL)
	{
		char	   *index = es->analyze ? lp_fdw_topk_explain_index(state->topk)
			: lp_fdw_topk_explain_planned_index(state->topk);

		if (index != NULL)
			ExplainPropertyText("Lance Vector Index", index, es);
	}
	if (es->analyze)
	{
		uint64		decoded;
		uint64		skipped;

		if (pushed != NIL)
			ExplainPropertyUInteger("Rows Removed by Lance Filter", NULL,
									lp_fdw_scan_filtered_rows(scan), es);
		lp_fdw_scan_pages(scan, &decoded, &skipped);
		ExplainPropertyUInteger("Lance Pages Decoded", NULL, decoded, es);
		ExplainPropertyUInteger("Lance Pages Skipped", NULL, skipped, es);
	}
}

/* ---- routines ------------------------------------------------------------------ */

void
lp_fdw_scan_routines(FdwRoutine *routine)
{
	routine->GetForeignRelSize = lance_get_rel_size;
	routine->GetForeignPaths = lance_get_paths;
	routine->GetForeignPlan = lance_get_plan;
	routine->BeginForeignScan = lance_begin_scan;
	routine->IterateForeignScan = lance_iterate;
	routine->ReScanForeignScan = lance_rescan;
	routine->EndForeignScan = lance_end_scan;
	routine->ExplainForeignScan = lance_explain;
	routine->IsForeignScanParallelSafe = lance_parallel_safe;
	routine->EstimateDSMForeignScan = lance_estimate_dsm;
	routine->InitializeDSMForeignScan = lance_initialize_dsm;
	routine->ReInitializeDSMForeignScan = lance_reinitialize_dsm;
	routine->InitializeWorkerForeignScan = lance_initialize_worker;
	routine->ShutdownForeignScan = lance_shutdown;
	routine->AnalyzeForeignTable = lp_fdw_analyze;
	routine->ImportForeignSchema = lp_fdw_import_schema;
}
