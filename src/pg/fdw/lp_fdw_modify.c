/*
 * lp_fdw_modify.c - INSERT, INSERT ... SELECT and COPY FROM into lance_fdw
 * tables over datasets.
 *
 * A statement's rows are encoded into new data files of the dataset (the
 * writer of write_dataset's appends, write/lp_write_sql.c) and published as
 * one Append: with the transaction (lance_parts.publish_at = 'commit',
 * where the appends of one transaction become one version) or when the
 * statement ends ('call').  Tables pinned to a version and tables over one
 * data file are read-only.  Writing a local dataset needs the privileges of
 * pg_write_server_files, as write_dataset does; on S3 the user mapping's
 * credentials decide.
 */
#include "postgres.h"

#include "access/tupdesc.h"
#include "executor/executor.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "fdw/lp_fdw.h"
#include "storage/lp_pg_storage.h"
#include "write/lp_write_sql.h"

/* Rows ExecForeignBatchInsert is given at a time. */
#define INSERT_BATCH_ROWS 1000

typedef struct ModifyState
{
	LpDatasetAppend *append;
	MemoryContext context;		/* the statement's, where the append lives */
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

static void
begin_append(ResultRelInfo *rinfo)
{
	Relation	rel = rinfo->ri_RelationDesc;
	LpFdwTableOptions options;
	LpStat		st;
	ModifyState *state = palloc0(sizeof(ModifyState));

	lp_fdw_table_options(RelationGetRelid(rel), &options);
	if (options.has_version)
		ereport(ERROR,
				errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				errmsg("cannot insert into foreign table \"%s\"", RelationGetRelationName(rel)),
				errdetail("It reads version " UINT64_FORMAT " of its dataset, which cannot change.",
						  options.version),
				errhint("Insert into a foreign table without the option \"version\"."));
	lp_check_read_privilege_for(options.path);
	lp_check_write_privilege_for(options.path);
	lp_store_stat(lp_store_for_uri_via(options.path, options.server, NULL), options.path, false, &st);
	if (st.kind != LP_OBJECT_DIRECTORY)
		ereport(ERROR,
				errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				errmsg("cannot insert into foreign table \"%s\"", RelationGetRelationName(rel)),
				errdetail("Its uri \"%s\" is %s, not a dataset.", options.path,
						  st.kind == LP_OBJECT_ABSENT ? "missing" : "a single data file"));
	state->context = CurrentMemoryContext;
	state->append = lp_dataset_append_begin(options.path, options.server, field_named_desc(rel));
	rinfo->ri_FdwState = state;
}

static void
lance_begin_modify(ModifyTableState *mtstate, ResultRelInfo *rinfo, List *fdw_private,
				   int subplan_index, int eflags)
{
	if (eflags & EXEC_FLAG_EXPLAIN_ONLY)
		return;
	begin_append(rinfo);
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

static TupleTableSlot **
lance_exec_batch_insert(EState *estate, ResultRelInfo *rinfo, TupleTableSlot **slots,
						TupleTableSlot **plan_slots, int *num_slots)
{
	for (int i = 0; i < *num_slots; i++)
		add_slot(rinfo->ri_FdwState, slots[i]);
	return slots;
}

/*
 * Batches of rows, unless each row must come back at once: for RETURNING,
 * row triggers or WITH CHECK OPTION (as postgres_fdw decides).
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
	return INSERT_BATCH_ROWS;
}

static void
end_append(ResultRelInfo *rinfo)
{
	ModifyState *state = rinfo->ri_FdwState;
	MemoryContext old;

	if (state == NULL)
		return;
	old = MemoryContextSwitchTo(state->context);
	(void) lp_dataset_append_finish(state->append);
	MemoryContextSwitchTo(old);
}

static void
lance_end_modify(EState *estate, ResultRelInfo *rinfo)
{
	end_append(rinfo);
}

static void
lance_end_insert(EState *estate, ResultRelInfo *rinfo)
{
	end_append(rinfo);
}

void
lp_fdw_modify_routines(FdwRoutine *routine)
{
	routine->BeginForeignModify = lance_begin_modify;
	routine->ExecForeignInsert = lance_exec_insert;
	routine->ExecForeignBatchInsert = lance_exec_batch_insert;
	routine->GetForeignModifyBatchSize = lance_batch_size;
	routine->EndForeignModify = lance_end_modify;
	routine->BeginForeignInsert = lance_begin_insert;
	routine->EndForeignInsert = lance_end_insert;
}
