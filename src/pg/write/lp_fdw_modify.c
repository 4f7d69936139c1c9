/*
 * lp_fdw_modify.c - INSERT, INSERT ... SELECT, COPY FROM, UPDATE and DELETE
 * on lance_fdw tables over datasets.
 *
 * A statement's rows are encoded into new data files of the dataset (the
 * writer of write_dataset's appends, write/lp_write_sql.c) and published as
 * one Append: with the transaction (lance_parts.publish_at = 'commit',
 * where the appends of one transaction become one version) or when the
 * statement ends ('call').  A DELETE takes the row identities its scan
 * gives (fragment id and row offset in the ctid, lp_fdw_scan_row_identity)
 * and publishes Lance deletion files of the version the scan read, as one
 * Lance Delete (write/lp_write_deletions.c); an UPDATE deletes its old rows
 * so and appends its new ones, published together as one Lance Update.
 * Rows are taken one at a time unless the batch_size option asks for
 * ExecForeignBatchInsert: the writer gathers them into its own batches of
 * columns as they come, and the executor's batches first copy every row into
 * a slot of their own and deform it again, which cost an INSERT ... SELECT
 * 40 % of its backend's time.  Tables pinned to a version and tables over one data file are
 * read-only.  Writing a local dataset needs the privileges of
 * pg_write_server_files, as write_dataset does; on S3 the user mapping's
 * credentials decide.
 */
#include "postgres.h"

#include "access/tupdesc.h"
#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/appendinfo.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "base/lp_pg_compat.h"
#include "fdw/lp_fdw.h"
#include "store/lp_pg_storage.h"
#include "write/lp_fdw_modify.h"
#include "write/lp_write_deletions.h"
#include "write/lp_write_sql.h"

typedef struct ModifyState
{
	MemoryContext context;		/* the statement's, where the state lives */
	/* INSERT */
	LpDatasetAppend *append;
	/* DELETE */
	AttrNumber	ctid_attno;		/* the row identity in the plan's rows */
	AttrNumber	wholerow_attno; /* the old row, for RETURNING; or invalid */
	const LpFdwSource *source;	/* the scan's: how its row identities are packed */
	LpDatasetDeletion *deletion;
} ModifyState;

/*
 * The relation's columns renamed to the Lance fields they stand for (their
 * column_name option), for the writer's matching by name.
 */
static TupleDesc
field_named_desc(Relation rel)
{
	TupleDesc	desc = CreateTupleDescCopy(RelationGetDescr(rel));

	for (int a = 0; a < desc->natts; a++)
	{
		Form_pg_attribute attr = TupleDescAttr(desc, a);

		if (!attr->attisdropped)
			namestrcpy(&attr->attname,
					   lp_fdw_column_field_name(RelationGetRelid(rel), attr->attnum,
												NameStr(attr->attname)));
	}
	return desc;
}

/*
 * ERROR unless rel is a table over a dataset (kind: what its uri is) that
 * may change; what names the operation.
 */
static void
check_writable(Relation rel, LpObjectKind kind, const char *what)
{
	LpFdwTableOptions options;

	lp_fdw_table_options(RelationGetRelid(rel), &options);
	if (options.has_version)
		ereport(ERROR,
				errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				errmsg("cannot %s foreign table \"%s\"", what, RelationGetRelationName(rel)),
				errdetail("It reads version " UINT64_FORMAT " of its dataset, which cannot change.",
						  options.version),
				errhint("Use a foreign table without the option \"version\"."));
	if (kind != LP_OBJECT_DIRECTORY)
		ereport(ERROR,
				errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				errmsg("cannot %s foreign table \"%s\"", what, RelationGetRelationName(rel)),
				errdetail("Its uri \"%s\" is %s, not a dataset.", options.path,
						  kind == LP_OBJECT_ABSENT ? "missing" : "a single data file"));
	lp_check_read_privilege_for(options.path);
	lp_check_write_privilege_for(options.path);
}

static void
begin_append(ResultRelInfo *rinfo)
{
	Relation	rel = rinfo->ri_RelationDesc;
	LpFdwTableOptions options;
	LpStat		st;
	ModifyState *state = palloc0(sizeof(ModifyState));

	lp_fdw_table_options(RelationGetRelid(rel), &options);
	lp_store_stat(lp_store_for_uri_via(options.path, options.server, NULL), options.path, false, &st);
	check_writable(rel, st.kind, "insert into");
	state->context = CurrentMemoryContext;
	state->append = lp_dataset_append_begin(options.path, options.server, field_named_desc(rel), false);
	rinfo->ri_FdwState = state;
}

/* What find_scan looks for: the scan of the modified table, by range table index. */
typedef struct ScanSearch
{
	Index		rtindex;
	ForeignScanState *found;
} ScanSearch;

static bool
find_scan(PlanState *planstate, void *context)
{
	ScanSearch *search = context;

	if (IsA(planstate, ForeignScanState) &&
		((ForeignScan *) planstate->plan)->scan.scanrelid == search->rtindex)
	{
		search->found = (ForeignScanState *) planstate;
		return true;
	}
	return planstate_tree_walker(planstate, find_scan, context);
}

/*
 * A DELETE or UPDATE: the row identities come from the scan of the table
 * below it, whose dataset version the deletions are made on; an UPDATE's
 * new rows are appended as an INSERT's are.
 */
static void
begin_change(ModifyTableState *mtstate, ResultRelInfo *rinfo)
{
	const char *what = mtstate->operation == CMD_UPDATE ? "update" : "delete from";
	Relation	rel = rinfo->ri_RelationDesc;
	Plan	   *subplan = outerPlanState(mtstate)->plan;
	ModifyState *state = palloc0(sizeof(ModifyState));
	ScanSearch	search = {.rtindex = rinfo->ri_RangeTableIndex};
	const LpFdwSource *source;

	(void) find_scan(outerPlanState(mtstate), &search);
	/* no scan: the planner proved that no row qualifies (WHERE false); nothing changes */
	if (search.found == NULL)
		return;
	if (search.found->fdw_state == NULL)
		ereport(ERROR,
				errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				errmsg("cannot %s foreign table \"%s\" without scanning it",
					   what, RelationGetRelationName(rel)));
	source = lp_fdw_scan_source(lp_fdw_node_scan(search.found));
	check_writable(rel, source->single_file ? LP_OBJECT_FILE : LP_OBJECT_DIRECTORY, what);
	state->context = CurrentMemoryContext;
	state->ctid_attno = ExecFindJunkAttributeInTlist(subplan->targetlist, "ctid");
	if (!AttributeNumberIsValid(state->ctid_attno))
		elog(ERROR, "could not find the junk ctid column");
	state->wholerow_attno = ExecFindJunkAttributeInTlist(subplan->targetlist, "wholerow");
	state->source = source;
	state->deletion = lp_dataset_deletion_begin(source, mtstate->operation == CMD_UPDATE);
	/* moved rows keep their row ids: the i-th new row is the i-th row deleted */
	if (mtstate->operation == CMD_UPDATE)
		state->append = lp_dataset_append_begin(source->path, source->server, field_named_desc(rel),
												lp_manifest_stable_row_ids(source->manifest));
	rinfo->ri_FdwState = state;
}

static void
lance_begin_modify(ModifyTableState *mtstate, ResultRelInfo *rinfo, List *fdw_private,
				   int subplan_index, int eflags)
{
	if (eflags & EXEC_FLAG_EXPLAIN_ONLY)
		return;
	if (mtstate->operation == CMD_INSERT)
		begin_append(rinfo);
	else
		begin_change(mtstate, rinfo);
}

/*
 * The row identity of a DELETE or UPDATE (ctid), and for a DELETE's
 * RETURNING the old row (wholerow; the planner adds it to every UPDATE),
 * added to what the scan returns.
 */
static void
lance_add_update_targets(PlannerInfo *root, Index rtindex, RangeTblEntry *target_rte,
						 Relation target_relation)
{
	add_row_identity_var(root, makeVar(rtindex, SelfItemPointerAttributeNumber, TIDOID, -1,
									   InvalidOid, 0),
						 rtindex, "ctid");
	if (root->parse->commandType == CMD_DELETE && root->parse->returningList != NIL)
		add_row_identity_var(root, (Var *) makeWholeRowVar(target_rte, rtindex, 0, false),
							 rtindex, "wholerow");
}

/* The row plan_slot identifies is deleted (or replaced by an UPDATE's new row). */
static void
mark_deleted(ModifyState *state, ResultRelInfo *rinfo, TupleTableSlot *plan_slot)
{
	bool		isnull;
	Datum		ctid;
	uint64		fragment_id;
	uint64		row;
	MemoryContext old;

	if (state == NULL)
		elog(ERROR, "foreign table \"%s\" gave a row to change without a scan of it",
			 RelationGetRelationName(rinfo->ri_RelationDesc));
	ctid = ExecGetJunkAttribute(plan_slot, state->ctid_attno, &isnull);
	if (isnull || !lp_fdw_row_address(state->source, (ItemPointer) DatumGetPointer(ctid), &fragment_id, &row))
		ereport(ERROR,
				errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				errmsg("cannot delete a row of foreign table \"%s\": its address does not fit a row identity",
					   RelationGetRelationName(rinfo->ri_RelationDesc)),
				errdetail("A row identity has 48 bits; with fragments of up to " UINT64_FORMAT " rows, it reaches fragments with ids below " UINT64_FORMAT ".",
						  UINT64CONST(1) << state->source->row_address_bits,
						  lp_fdw_row_address_fragments(state->source)));
	old = MemoryContextSwitchTo(state->context);
	lp_dataset_deletion_add(state->deletion, fragment_id, row);
	MemoryContextSwitchTo(old);
}

static TupleTableSlot *
lance_exec_delete(EState *estate, ResultRelInfo *rinfo, TupleTableSlot *slot,
				  TupleTableSlot *plan_slot)
{
	ModifyState *state = rinfo->ri_FdwState;
	bool		isnull;

	mark_deleted(state, rinfo, plan_slot);
	if (AttributeNumberIsValid(state->wholerow_attno))
	{
		Datum		wholerow = ExecGetJunkAttribute(plan_slot, state->wholerow_attno, &isnull);
		HeapTupleHeader header = DatumGetHeapTupleHeader(wholerow);
		HeapTupleData tuple;

		tuple.t_len = HeapTupleHeaderGetDatumLength(header);
		ItemPointerSetInvalid(&tuple.t_self);
		tuple.t_tableOid = RelationGetRelid(rinfo->ri_RelationDesc);
		tuple.t_data = header;
		ExecClearTuple(slot);
		heap_deform_tuple(&tuple, slot->tts_tupleDescriptor, slot->tts_values, slot->tts_isnull);
		ExecStoreVirtualTuple(slot);
	}
	return slot;
}

static void
lance_begin_insert(ModifyTableState *mtstate, ResultRelInfo *rinfo)
{
	begin_append(rinfo);
}

static void
add_slot(ModifyState *state, TupleTableSlot *slot)
{
	MemoryContext old = MemoryContextSwitchTo(state->context);

	slot_getallattrs(slot);
	lp_dataset_append_row(state->append, slot->tts_values, slot->tts_isnull);
	MemoryContextSwitchTo(old);
}

static TupleTableSlot *
lance_exec_insert(EState *estate, ResultRelInfo *rinfo, TupleTableSlot *slot,
				  TupleTableSlot *plan_slot)
{
	add_slot(rinfo->ri_FdwState, slot);
	return slot;
}

static TupleTableSlot *
lance_exec_update(EState *estate, ResultRelInfo *rinfo, TupleTableSlot *slot,
				  TupleTableSlot *plan_slot)
{
	mark_deleted(rinfo->ri_FdwState, rinfo, plan_slot);
	add_slot(rinfo->ri_FdwState, slot);
	return slot;
}

static TupleTableSlot **
lance_exec_batch_insert(EState *estate, ResultRelInfo *rinfo, TupleTableSlot **slots,
						TupleTableSlot **plan_slots, int *num_slots)
{
	for (int i = 0; i < *num_slots; i++)
		add_slot(rinfo->ri_FdwState, slots[i]);
	return slots;
}

/*
 * Rows at a time as the batch_size option says, 1 by default: the writer
 * gathers rows into batches of columns itself as they come, and the
 * executor's batches first copy every row into a slot of their own and
 * deform it again.  One at a time too when each row must come back at once:
 * for RETURNING, row triggers or WITH CHECK OPTION (as postgres_fdw decides).
 */
static int
lance_batch_size(ResultRelInfo *rinfo)
{
	if (rinfo->ri_projectReturning != NULL ||
		rinfo->ri_WithCheckOptions != NIL ||
		(rinfo->ri_TrigDesc != NULL &&
		 (rinfo->ri_TrigDesc->trig_insert_before_row ||
		  rinfo->ri_TrigDesc->trig_insert_after_row)))
		return 1;
	return lp_fdw_insert_batch_size(RelationGetRelid(rinfo->ri_RelationDesc));
}

/* EXPLAIN VERBOSE of an INSERT shows its batch size, as postgres_fdw's does. */
static void
lance_explain_modify(ModifyTableState *mtstate, ResultRelInfo *rinfo, List *fdw_private,
					 int subplan_index, ExplainState *es)
{
	if (es->verbose && rinfo->ri_BatchSize > 0)
		ExplainPropertyInteger("Batch Size", NULL, rinfo->ri_BatchSize, es);
}

static void
end_modify(ResultRelInfo *rinfo)
{
	ModifyState *state = rinfo->ri_FdwState;
	MemoryContext old;

	if (state == NULL)
		return;
	old = MemoryContextSwitchTo(state->context);
	if (state->deletion != NULL && state->append != NULL)
		(void) lp_dataset_update_finish(state->deletion, state->append);
	else if (state->deletion != NULL)
		(void) lp_dataset_deletion_finish(state->deletion);
	else
		(void) lp_dataset_append_finish(state->append);
	MemoryContextSwitchTo(old);
}

static void
lance_end_modify(EState *estate, ResultRelInfo *rinfo)
{
	end_modify(rinfo);
}

static void
lance_end_insert(EState *estate, ResultRelInfo *rinfo)
{
	end_modify(rinfo);
}

void
lp_fdw_modify_routines(FdwRoutine *routine)
{
	routine->AddForeignUpdateTargets = lance_add_update_targets;
	routine->BeginForeignModify = lance_begin_modify;
	routine->ExecForeignUpdate = lance_exec_update;
	routine->ExecForeignDelete = lance_exec_delete;
	routine->ExecForeignInsert = lance_exec_insert;
	routine->ExecForeignBatchInsert = lance_exec_batch_insert;
	routine->GetForeignModifyBatchSize = lance_batch_size;
	routine->ExplainForeignModify = lance_explain_modify;
	routine->EndForeignModify = lance_end_modify;
	routine->BeginForeignInsert = lance_begin_insert;
	routine->EndForeignInsert = lance_end_insert;
}
