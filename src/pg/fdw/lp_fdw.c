/*
 * lp_fdw.c - the lance_fdw handler: planning, the executor's scans (through
 * the scan iterator of lp_fdw_scan.c) and EXPLAIN.
 *
 * The plan carries the columns to read (fdw_private) and the clauses the
 * scan evaluates while decoding (fdw_exprs, chosen by lp_fdw_pushdown.c);
 * the executor evaluates only the other clauses.
 */
#include "postgres.h"

#include "access/sysattr.h"
#include "access/table.h"
#include "commands/explain.h"
#include "foreign/fdwapi.h"
#include "nodes/makefuncs.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/planmain.h"
#include "optimizer/restrictinfo.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"

#include "fdw/lp_fdw.h"

PG_FUNCTION_INFO_V1(lance_fdw_handler);

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
	source = lp_fdw_open_source(options.path, options.has_version, options.version, false);
	info->source = source;
	info->pushed = lp_fdw_pushable_clauses(baserel, foreigntableid, source);
	live_rows = (double) source->physical_rows - (double) source->deleted_rows;
	baserel->tuples = Max(live_rows, 0);
	baserel->rows = clamp_row_est(baserel->tuples *
								  clauselist_selectivity(root, baserel->baserestrictinfo,
														 0, JOIN_INNER, NULL));
	baserel->fdw_private = info;
}

static void
lance_get_paths(PlannerInfo *root, RelOptInfo *baserel, Oid foreigntableid)
{
	LpFdwSource *source = ((LpFdwRelInfo *) baserel->fdw_private)->source;
	int			width_columns = list_length(baserel->reltarget->exprs);
	Cost		startup = 10 * (Cost) source->num_files;
	Cost		total = startup + baserel->tuples * cpu_tuple_cost * (1 + width_columns) +
		baserel->tuples * cpu_operator_cost * list_length(baserel->baserestrictinfo);

	add_path(baserel, (Path *) create_foreignscan_path(root, baserel, NULL, baserel->rows,
													   startup, total, NIL,
													   baserel->lateral_relids,
													   NULL, NIL));
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
	return make_foreignscan(tlist, local, baserel->relid, pushed,
							list_make1(needed_columns(root, baserel, foreigntableid)),
							NIL, NIL, outer_plan);
}

/* ---- the executor's scan ------------------------------------------------------ */

static void
lance_begin_scan(ForeignScanState *node, int eflags)
{
	ForeignScan *plan = (ForeignScan *) node->ss.ps.plan;
	bool		explain_only = (eflags & EXEC_FLAG_EXPLAIN_ONLY) != 0;

	node->fdw_state = lp_fdw_scan_begin(node->ss.ss_currentRelation,
										linitial(plan->fdw_private), explain_only);
	if (plan->fdw_exprs != NIL && !explain_only)
		lp_fdw_scan_set_filter(node->fdw_state,
							   lp_fdw_filter_begin(plan->fdw_exprs, plan->scan.scanrelid,
												   &node->ss.ps));
}

static TupleTableSlot *
lance_iterate(ForeignScanState *node)
{
	TupleTableSlot *slot = node->ss.ss_ScanTupleSlot;

	ExecClearTuple(slot);
	if (!lp_fdw_scan_next(node->fdw_state))
		return slot;
	lp_fdw_scan_values(node->fdw_state, slot->tts_values, slot->tts_isnull);
	ExecStoreVirtualTuple(slot);
	return slot;
}

static void
lance_rescan(ForeignScanState *node)
{
	lp_fdw_scan_rewind(node->fdw_state);
}

static void
lance_end_scan(ForeignScanState *node)
{
	/*
	 * Closes the data files of the fragment being read (a LIMIT ends scans early);
	 * memory goes with the executor's context, and an ERROR closes the files
	 * with the transaction.
	 */
	if (node->fdw_state != NULL)
		lp_fdw_scan_end(node->fdw_state);
}

/* ---- EXPLAIN ------------------------------------------------------------------ */

static void
lance_explain(ForeignScanState *node, ExplainState *es)
{
	ForeignScan *plan = (ForeignScan *) node->ss.ps.plan;
	const LpFdwSource *source = lp_fdw_scan_source(node->fdw_state);

	if (source->single_file)
		ExplainPropertyText("Lance File", source->path, es);
	else
	{
		ExplainPropertyText("Lance Dataset", source->path, es);
		ExplainPropertyUInteger("Dataset Version", NULL, source->version, es);
		ExplainPropertyUInteger("Fragments", NULL, source->num_fragments, es);
	}
	ExplainPropertyUInteger("Data Files", NULL, source->num_files, es);
	if (!source->single_file)
		ExplainPropertyUInteger("Deleted Rows", NULL, source->deleted_rows, es);
	ExplainPropertyList("Lance Fields", lp_fdw_scan_field_names(node->fdw_state), es);
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
	{
		List	   *context = set_deparse_context_plan(es->deparse_cxt, (Plan *) plan, NIL);

		ExplainPropertyText("Lance Filter",
							deparse_expression((Node *) make_ands_explicit(plan->fdw_exprs),
											   context, es->verbose, false),
							es);
	}
	if (es->analyze)
	{
		uint64		decoded;
		uint64		skipped;

		if (plan->fdw_exprs != NIL)
			ExplainPropertyUInteger("Rows Removed by Lance Filter", NULL,
									lp_fdw_scan_filtered_rows(node->fdw_state), es);
		lp_fdw_scan_pages(node->fdw_state, &decoded, &skipped);
		ExplainPropertyUInteger("Lance Pages Decoded", NULL, decoded, es);
		ExplainPropertyUInteger("Lance Pages Skipped", NULL, skipped, es);
	}
}

/* ---- handler ------------------------------------------------------------------- */

Datum
lance_fdw_handler(PG_FUNCTION_ARGS)
{
	FdwRoutine *routine = makeNode(FdwRoutine);

	routine->GetForeignRelSize = lance_get_rel_size;
	routine->GetForeignPaths = lance_get_paths;
	routine->GetForeignPlan = lance_get_plan;
	routine->BeginForeignScan = lance_begin_scan;
	routine->IterateForeignScan = lance_iterate;
	routine->ReScanForeignScan = lance_rescan;
	routine->EndForeignScan = lance_end_scan;
	routine->ExplainForeignScan = lance_explain;
	routine->AnalyzeForeignTable = lp_fdw_analyze;
	routine->ImportForeignSchema = lp_fdw_import_schema;
	PG_RETURN_POINTER(routine);
}
