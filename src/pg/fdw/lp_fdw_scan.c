/*
 * lp_fdw_scan.c - the lance_fdw scan iterator: the live rows of a foreign
 * table's source as datums, for the executor's scans (lp_fdw.c) and for
 * ANALYZE's row sample (lp_fdw_analyze.c).
 *
 * A scan reads one version of a dataset unit by unit: serially each whole
 * fragment in turn; in a parallel scan the fragments and row ranges it takes
 * from the queue shared with the other processes (lp_fdw_parallel.c).  For
 * each fragment it reads the deletion file, then decodes, file by file, only the
 * fields asked for (a query's target list and quals; every declared column
 * for ANALYZE); everything decoded for a fragment lives in a memory context
 * that is reset when the scan moves on, so memory follows the largest
 * fragment, not the dataset.  Rows whose offset the deletion file lists are
 * skipped.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "decode/lp_decode.h"
#include "fdw/lp_fdw.h"
#include "lp_pg_error.h"
#include "storage/lp_pg_storage.h"
#include "format/lp_schema.h"

/* One column a scan reads. */
typedef struct ScanColumn
{
	AttrNumber	attnum;
	char	   *attname;
	char	   *field_name;		/* the Lance field it reads */
	int32		field_id;		/* -1: the source has no such field */
	int32_t    *field_ids;		/* it and its descendants (2.1+ files list leaves) */
	size_t		n_field_ids;
	Oid			typid;
	int32		typmod;
	/* for the current fragment */
	LpArray    *array;			/* NULL: no data file of the fragment holds it */
	const char *file;			/* the data file it came from */
	LpFdwConverter converter;
} ScanColumn;

struct LpFdwScan
{
	LpFdwSource *source;
	char	   *relname;
	int			natts;			/* of the relation's tuple descriptor */
	int			num_columns;
	ScanColumn *columns;
	bool		explain_only;

	/* position */
	LpFdwUnitQueue *queue;		/* parallel scans: where the units come from */
	uint64		next_fragment;	/* serial scans: the next unit is this fragment */
	bool		unit_open;
	bool		fragment_loaded;
	uint64		fragment_index; /* the loaded fragment */
	uint64		fragment_id;
	uint64		fragment_rows;
	uint64		row;			/* the current row, once lp_fdw_scan_next returned it */
	uint64		next_row;		/* the first row of the unit not yet looked at */
	uint64		end_row;		/* the unit's end in the fragment */
	uint64		deleted_rows_skipped;
	LpDeletions deletions;
	const char *current_file;
	const ScanColumn *current_column;

	MemoryContext fragment_context;
	MemoryContext row_context;
};

static void
scan_error_context(void *arg)
{
	LpFdwScan  *state = arg;

	if (state->current_column != NULL)
		errcontext("column \"%s\" of foreign table \"%s\", row " UINT64_FORMAT " of fragment " UINT64_FORMAT " (file \"%s\")",
				   state->current_column->attname, state->relname, state->row,
				   state->fragment_id, state->current_column->file);
	else if (state->current_file != NULL)
		errcontext("foreign table \"%s\", fragment " UINT64_FORMAT " (file \"%s\")",
				   state->relname, state->fragment_id, state->current_file);
}

LpFdwScan *
lp_fdw_scan_begin(Relation rel, List *attnums, bool explain_only, const uint64 *version)
{
	Oid			relid = RelationGetRelid(rel);
	TupleDesc	desc = RelationGetDescr(rel);
	LpFdwTableOptions options;
	LpFdwScan  *state = palloc0(sizeof(LpFdwScan));
	ListCell   *cell;

	state->relname = pstrdup(RelationGetRelationName(rel));
	state->natts = desc->natts;
	state->explain_only = explain_only;
	lp_fdw_table_options(relid, &options);
	if (version != NULL)
	{
		options.has_version = true;
		options.version = *version;
	}
	/* EXPLAIN shows the version a scan would read; it reads no data files. */
	state->source = lp_fdw_open_source(options.path, options.has_version, options.version,
									   !state->explain_only);

	state->columns = palloc0(sizeof(ScanColumn) * Max(list_length(attnums), 1));
	foreach(cell, attnums)
	{
		Form_pg_attribute attr = TupleDescAttr(desc, lfirst_int(cell) - 1);
		ScanColumn *column = &state->columns[state->num_columns++];
		int			field_index;

		column->attnum = attr->attnum;
		column->attname = pstrdup(NameStr(attr->attname));
		column->typid = attr->atttypid;
		column->typmod = attr->atttypmod;
		column->field_name = lp_fdw_column_field_name(relid, attr->attnum, column->attname);
		field_index = lp_fdw_find_top_field(&state->source->schema, column->field_name);
		if (field_index < 0 && !state->explain_only)
			ereport(ERROR,
					errcode(ERRCODE_FDW_COLUMN_NAME_NOT_FOUND),
					errmsg("column \"%s\" of foreign table \"%s\" has no field \"%s\" in Lance %s \"%s\"",
						   column->attname, state->relname, column->field_name,
						   state->source->single_file ? "file" : "dataset", state->source->path),
					errhint("Name the field with the column option \"column_name\"."));
		column->field_id = field_index < 0 ? -1 : state->source->schema.fields[field_index].id;
		if (field_index >= 0 &&
			!lp_schema_subtree(&state->source->schema, (uint32) field_index,
							   &column->field_ids, &column->n_field_ids))
			lp_require_memory(NULL);
	}
	if (state->explain_only)
		return state;

	state->fragment_context = AllocSetContextCreate(CurrentMemoryContext,
													"lance_fdw fragment",
													ALLOCSET_DEFAULT_SIZES);
	state->row_context = AllocSetContextCreate(CurrentMemoryContext,
											   "lance_fdw row",
											   ALLOCSET_DEFAULT_SIZES);
	return state;
}

static bool
data_file_holds(const LpDataFileRef *file, const ScanColumn *column)
{
	for (size_t i = 0; i < file->n_fields; i++)
		for (size_t k = 0; k < column->n_field_ids; k++)
			if (column->field_ids[k] == file->fields[i])
				return true;
	return false;
}

/* Decode the needed fields that one data file holds. */
static void
decode_data_file(LpFdwScan *state, const char *path, const LpDataFileRef *entry)
{
	LpInput    *input;
	LpFile	   *file;
	LpError		err;

	state->current_file = path;
	input = lp_open_input_for_uri(path);
	file = lp_file_open(input, &err);
	if (file == NULL)
		lp_raise(&err);
	if (file->version == LP_FILE_VERSION_LEGACY)
		ereport(ERROR,
				errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				errmsg("file \"%s\" uses the legacy Lance file format, which lance_fdw cannot read",
					   path));
	if (state->fragment_rows == 0 && !state->source->single_file)
		state->fragment_rows = file->num_rows;
	if (file->num_rows != state->fragment_rows)
		ereport(ERROR,
				errcode(ERRCODE_DATA_CORRUPTED),
				errmsg("data file \"%s\" has " UINT64_FORMAT " rows, but its fragment " UINT64_FORMAT " has " UINT64_FORMAT,
					   path, (uint64) file->num_rows, state->fragment_id, state->fragment_rows));

	for (int c = 0; c < state->num_columns; c++)
	{
		ScanColumn *column = &state->columns[c];
		LpType	   *type;
		int			index = -1;

		if (column->array != NULL || column->field_id < 0 ||
			(entry != NULL && !data_file_holds(entry, column)))
			continue;
		for (uint32 i = 0; i < file->schema.num_fields; i++)
			if (file->schema.fields[i].id == column->field_id &&
				file->schema.fields[i].parent_id == -1)
				index = (int) i;
		if (index < 0)
			continue;
		CHECK_FOR_INTERRUPTS();
		if (!lp_decode_field(input, file, (uint32) index, &type, &column->array, &err))
			lp_raise(&err);
		if (column->array->length != file->num_rows)
			ereport(ERROR,
					errcode(ERRCODE_DATA_CORRUPTED),
					errmsg("field \"%s\" of data file \"%s\" decoded to " UINT64_FORMAT " rows instead of " UINT64_FORMAT,
						   column->field_name, path, (uint64) column->array->length,
						   (uint64) file->num_rows));
		column->file = path;
		lp_fdw_converter_init(&column->converter, type, column->typid, column->typmod);
	}
	lp_input_close(input);
}

static void
read_deletions(LpFdwScan *state, const LpFragment *fragment)
{
	const LpDeletionFileRef *deletion = &fragment->deletion_file;
	char	   *path = lp_fdw_deletion_file_path(state->source, fragment);
	LpInput    *input;
	LpError		err;

	state->current_file = path;
	input = lp_open_input_for_uri(path);
	if (!lp_deletions_read(input, deletion->form, state->fragment_rows, &state->deletions, &err))
		lp_raise(&err);
	lp_input_close(input);
	if (deletion->num_deleted_rows != 0 &&
		deletion->num_deleted_rows != state->deletions.num_deleted)
		ereport(ERROR,
				errcode(ERRCODE_DATA_CORRUPTED),
				errmsg("deletion file \"%s\" lists " UINT64_FORMAT " rows, but the manifest says " UINT64_FORMAT,
					   path, state->deletions.num_deleted,
					   (uint64) deletion->num_deleted_rows));
}

static void
load_fragment(LpFdwScan *state, uint64 index)
{
	MemoryContext old;

	MemoryContextReset(state->fragment_context);
	memset(&state->deletions, 0, sizeof(state->deletions));
	for (int c = 0; c < state->num_columns; c++)
		state->columns[c].array = NULL;
	old = MemoryContextSwitchTo(state->fragment_context);

	if (state->source->single_file)
	{
		state->fragment_id = 0;
		state->fragment_rows = state->source->file->num_rows;
		if (state->num_columns > 0)
			decode_data_file(state, state->source->path, NULL);
	}
	else
	{
		LpFragment	fragment;
		bool		rows_known;

		lp_manifest_fragment(state->source->manifest, index, &fragment);
		rows_known = fragment.physical_rows != 0;
		state->fragment_id = fragment.id;
		state->fragment_rows = fragment.physical_rows;
		for (size_t d = 0; d < fragment.num_files; d++)
		{
			LpDataFileRef file;
			bool		needed = !rows_known && d == 0;

			lp_fragment_data_file(state->source->manifest, &fragment, d, &file);
			for (int c = 0; c < state->num_columns && !needed; c++)
				needed = state->columns[c].field_id >= 0 &&
					data_file_holds(&file, &state->columns[c]);
			if (needed)
				decode_data_file(state, lp_fdw_data_file_path(state->source, &file), &file);
		}
		if (fragment.has_deletion_file)
			read_deletions(state, &fragment);
	}
	state->current_file = NULL;
	MemoryContextSwitchTo(old);
	state->fragment_index = index;
	state->fragment_loaded = true;
}

/*
 * The next unit to read: from the parallel scan's queue, or serially the
 * next whole fragment; false when none is left.
 */
static bool
scan_next_unit(LpFdwScan *state, LpFdwUnit *unit)
{
	if (state->queue != NULL)
		return lp_fdw_queue_take(state->queue, unit);
	if (state->next_fragment >= state->source->num_fragments)
		return false;
	unit->fragment = state->next_fragment++;
	unit->first_row = 0;
	unit->num_rows = PG_UINT64_MAX;
	return true;
}

void
lp_fdw_scan_share(LpFdwScan *state, LpFdwUnitQueue *queue)
{
	state->queue = queue;
}

/* Start reading a unit; consecutive units of one fragment decode it once. */
static void
open_unit(LpFdwScan *state, const LpFdwUnit *unit)
{
	if (!state->fragment_loaded || state->fragment_index != unit->fragment)
		load_fragment(state, unit->fragment);
	state->next_row = Min(unit->first_row, state->fragment_rows);
	state->end_row = unit->num_rows > state->fragment_rows - state->next_row
		? state->fragment_rows : state->next_row + unit->num_rows;
	state->unit_open = true;
}

bool
lp_fdw_scan_next(LpFdwScan *state)
{
	ErrorContextCallback callback;

	callback.callback = scan_error_context;
	callback.arg = state;
	callback.previous = error_context_stack;
	error_context_stack = &callback;

	for (;;)
	{
		if (!state->unit_open)
		{
			LpFdwUnit	unit;

			if (!scan_next_unit(state, &unit))
			{
				error_context_stack = callback.previous;
				return false;
			}
			open_unit(state, &unit);
		}
		while (state->next_row < state->end_row &&
			   lp_deletions_contains(&state->deletions, state->next_row))
		{
			state->next_row++;
			state->deleted_rows_skipped++;
		}
		if (state->next_row < state->end_row)
			break;
		state->unit_open = false;
		CHECK_FOR_INTERRUPTS();
	}
	state->row = state->next_row++;
	error_context_stack = callback.previous;
	return true;
}

void
lp_fdw_scan_values(LpFdwScan *state, Datum *values, bool *isnull)
{
	ErrorContextCallback callback;
	MemoryContext old;

	callback.callback = scan_error_context;
	callback.arg = state;
	callback.previous = error_context_stack;
	error_context_stack = &callback;

	MemoryContextReset(state->row_context);
	old = MemoryContextSwitchTo(state->row_context);
	memset(isnull, true, sizeof(bool) * state->natts);
	for (int c = 0; c < state->num_columns; c++)
	{
		ScanColumn *column = &state->columns[c];
		int			i = column->attnum - 1;

		if (column->array == NULL || column->array->type->id == LP_TYPE_NULL ||
			!lp_array_is_valid(column->array, state->row))
			continue;
		state->current_column = column;
		values[i] = lp_fdw_convert(&column->converter, column->array, state->row);
		isnull[i] = false;
	}
	state->current_column = NULL;
	MemoryContextSwitchTo(old);
	error_context_stack = callback.previous;
}

uint64
lp_fdw_scan_deleted_rows(const LpFdwScan *state)
{
	return state->deleted_rows_skipped;
}

void
lp_fdw_scan_rewind(LpFdwScan *state)
{
	state->next_fragment = 0;
	state->unit_open = false;
	state->deleted_rows_skipped = 0;
}

void
lp_fdw_scan_end(LpFdwScan *state)
{
	if (state->fragment_context != NULL)
		MemoryContextDelete(state->fragment_context);
	if (state->row_context != NULL)
		MemoryContextDelete(state->row_context);
}

const LpFdwSource *
lp_fdw_scan_source(const LpFdwScan *state)
{
	return state->source;
}

List *
lp_fdw_scan_field_names(const LpFdwScan *state)
{
	List	   *names = NIL;

	for (int c = 0; c < state->num_columns; c++)
		names = lappend(names, state->columns[c].field_name);
	return names;
}
