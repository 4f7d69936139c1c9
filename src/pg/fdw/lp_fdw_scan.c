/*
 * lp_fdw_scan.c - the lance_fdw scan iterator: the live rows of a foreign
 * table's source as datums, for the executor's scans (lp_fdw.c) and for
 * ANALYZE's row sample (lp_fdw_analyze.c).
 *
 * A scan reads one version of a dataset in units: a range of rows of one
 * fragment (scan_next_unit says which: serially, every fragment whole; in a
 * parallel scan, the fragments and row ranges it takes from the queue shared
 * with the other processes, lp_fdw_parallel.c).  For
 * a unit's fragment it reads the deletion file and opens, file by file, a
 * field reader for each field asked for (a query's target list and quals;
 * every declared column for ANALYZE); they stay open, in a memory context of
 * the fragment, until the scan moves to another fragment.  A unit is read in
 * batches of lance_parts.fdw_batch_rows rows: the batch's
 * live rows (those the deletion file does not list), then, with a filter of
 * pushed clauses, the filter's columns of those rows, converted column by
 * column and tested row by row,
 * and the other columns only for the rows that match (a batch without a
 * match decodes nothing more); without a filter, every column of the live
 * rows.  A batch's arrays are freed when the next batch is read, so memory
 * follows the batch size and the readers' pages, not the fragment's size;
 * rows stream, so a LIMIT stops the decoding early.  With
 * lance_parts.fdw_readahead, before a batch is decoded the byte ranges of
 * the next one (lp_field_reader_ranges) are handed to each data file's input
 * (lp_input_prefetch: S3 inputs start their GETs, local ones do nothing), so
 * the next batch's requests run while this one decodes.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "base/lp_alloc.h"
#include "decode/lp_decode.h"
#include "format/lp_columns.h"
#include "fdw/lp_fdw.h"
#include "base/lp_pg_alloc.h"
#include "base/lp_pg_error.h"
#include "store/lp_pg_storage.h"
#include "format/lp_schema.h"

int			lp_fdw_batch_rows = 8192;
bool		lp_fdw_readahead = true;

void
LpFdwScanInit(void)
{
	DefineCustomIntVariable("lance_parts.fdw_batch_rows",
							gettext_noop("Rows lance_fdw decodes together."),
							gettext_noop("A scan decodes the rows of a fragment in batches of this many rows, so its memory use follows this setting, not the fragment's size."),
							&lp_fdw_batch_rows,
							8192, 1, 1024 * 1024,
							PGC_USERSET, 0,
							NULL, NULL, NULL);
	DefineCustomBoolVariable("lance_parts.fdw_readahead",
							 gettext_noop("Whether lance_fdw fetches the next batch's bytes from S3 while it decodes the current batch."),
							 gettext_noop("Each data file on S3 holds at most 16 MiB fetched ahead."),
							 &lp_fdw_readahead,
							 true,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);
}

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
	bool		in_filter;		/* the filter tests it */
	bool		filter_value;	/* the filter needs its values, not only its NULLs */
	bool		reads_payload;	/* a Blob v2 field read as its payloads (column option blob) */
	bool		deferred;		/* decoded only by lp_fdw_scan_take (lp_fdw_scan_defer_columns) */
	/* for the current unit */
	LpFieldReader *reader;		/* NULL: no data file of the fragment holds it */
	const char *file;			/* the data file it comes from */
	LpInput    *input;			/* that file's input */
	LpFdwConverter converter;
	LpFdwBlobReader blob;		/* reads_payload: where the payloads are */
	/* for the current batch */
	LpArray    *array;			/* the batch's rows: live rows (filter columns) or output rows */
	Datum	   *filter_datums;	/* filter columns: the live rows' values, converted */
	bool	   *filter_isnull;
} ScanColumn;

/* A data file open for the current fragment. */
typedef struct OpenFile
{
	LpInput    *input;
	LpFile	   *file;
} OpenFile;

struct LpFdwScan
{
	LpFdwSource *source;
	char	   *relname;
	int			natts;			/* of the relation's tuple descriptor */
	int			num_columns;
	ScanColumn *columns;
	bool		explain_only;
	LpFdwFilter *filter;
	uint64		batch_rows;		/* lance_parts.fdw_batch_rows when the scan began */
	bool		readahead;		/* lance_parts.fdw_readahead when the scan began */
	uint64	   *readahead_rows; /* batch_rows * 2, once an input fetches ahead */

	/* units */
	LpFdwUnitQueue *queue;		/* parallel scans: where the units come from */
	uint64		next_fragment;	/* serial scans: the next unit is this fragment */
	bool		fragment_open;	/* its files, readers and deletions */
	uint64		fragment_index; /* the open fragment */
	uint64		fragment_id;
	uint64		fragment_rows;
	uint64		unit_next_row;	/* the first row of the unit not read in a batch yet */
	uint64		unit_end_row;
	uint64		fetched_ahead_to;	/* rows before it were handed to prefetch */
	bool		unit_restricted;	/* an index found the unit's rows: read only those */
	const uint64 *unit_candidates;	/* those not read yet, ascending */
	uint64		unit_num_candidates;

	/* the rows a scalar index found, looked up before the first batch of each scan */
	bool		index_looked_up;
	LpFdwIndexRows *index_rows;
	const LpFdwIndexRows *vector_rows;	/* a vector index's candidates (lp_fdw_scan_restrict) */
	List	   *restricted_units;	/* LpFdwUnit taken while vector_rows restricted them */
	int			next_replayed;	/* after lp_fdw_scan_unrestrict: the next of them to read again, or -1 */
	MemoryContext index_context;
	LpDeletions deletions;
	List	   *open_files;		/* OpenFile, in the fragment context */
	const char *current_file;

	/* the current batch */
	uint64	   *live_rows;		/* fragment row numbers of the batch's live rows */
	uint64		num_live;
	uint64		live_capacity;	/* of live_rows */
	/* with a filter: the rows it matched, and the index of each among the live rows */
	uint64	   *output_rows;
	uint64	   *output_live;
	const uint64 *batch_output; /* the rows returned: live_rows, or output_rows */
	uint64		num_output;
	bool		filter_columns_live;	/* filter columns hold the live rows, not the output rows */
	uint64		next_output;
	uint64		row;			/* the current row's fragment row number */
	uint64		output_index;	/* the current row's index among the output rows */
	const ScanColumn *current_column;

	/* counters */
	uint64		deleted_rows_skipped;
	uint64		filtered_rows;
	uint64		pages_decoded;	/* of readers closed already */
	uint64		pages_skipped;

	/* the filter's view of a row: values and nulls of the tuple descriptor */
	Datum	   *filter_values;
	bool	   *filter_nulls;

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

/* Name the scan's position in the errors raised until error_context_stack is restored. */
static void
push_error_context(LpFdwScan *state, ErrorContextCallback *callback)
{
	callback->callback = scan_error_context;
	callback->arg = state;
	callback->previous = error_context_stack;
	error_context_stack = callback;
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
	state->source = lp_fdw_open_source(options.path, options.server, options.has_version, options.version,
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
		column->reads_payload = lp_fdw_column_reads_payload(relid, attr->attnum);
		if (column->reads_payload && field_index >= 0)
		{
			const LpField *field = &state->source->schema.fields[field_index];

			if (!lp_field_is_blob(field) || strcmp(field->logical_type, "struct") != 0)
				ereport(ERROR,
						errcode(ERRCODE_FDW_INVALID_DATA_TYPE),
						errmsg("column \"%s\" of foreign table \"%s\" reads blob payloads, but field \"%s\" is not a Blob v2 column",
							   column->attname, state->relname, column->field_name));
			if (column->typid != BYTEAOID)
				ereport(ERROR,
						errcode(ERRCODE_FDW_INVALID_DATA_TYPE),
						errmsg("column \"%s\" of foreign table \"%s\" reads blob payloads and must be of type bytea",
							   column->attname, state->relname));
		}
		if (field_index >= 0 &&
			!lp_schema_subtree(&state->source->schema, (uint32) field_index,
							   &column->field_ids, &column->n_field_ids))
			lp_require_memory(NULL);
	}
	if (state->explain_only)
		return state;

	state->batch_rows = lp_fdw_batch_rows;
	state->live_rows = palloc(sizeof(uint64) * state->batch_rows);
	state->live_capacity = state->batch_rows;
	state->readahead = lp_fdw_readahead;
	state->next_replayed = -1;
	state->filter_values = palloc0(sizeof(Datum) * Max(state->natts, 1));
	state->filter_nulls = palloc0(sizeof(bool) * Max(state->natts, 1));
	state->fragment_context = AllocSetContextCreate(CurrentMemoryContext,
													"lance_fdw fragment",
													ALLOCSET_DEFAULT_SIZES);
	state->row_context = AllocSetContextCreate(CurrentMemoryContext,
											   "lance_fdw row",
											   ALLOCSET_DEFAULT_SIZES);
	return state;
}

void
lp_fdw_scan_set_filter(LpFdwScan *state, LpFdwFilter *filter)
{
	state->filter = filter;
	state->output_rows = palloc(sizeof(uint64) * state->batch_rows);
	state->output_live = palloc(sizeof(uint64) * state->batch_rows);
	for (int c = 0; c < state->num_columns; c++)
	{
		ScanColumn *column = &state->columns[c];

		column->in_filter = list_member_int(lp_fdw_filter_columns(filter), column->attnum);
		column->filter_value = lp_fdw_filter_needs_value(filter, column->attnum);
		if (column->in_filter)
		{
			column->filter_datums = palloc(sizeof(Datum) * state->batch_rows);
			column->filter_isnull = palloc(sizeof(bool) * state->batch_rows);
		}
	}
}

void
lp_fdw_scan_defer_columns(LpFdwScan *state, AttrNumber keep)
{
	for (int c = 0; c < state->num_columns; c++)
		state->columns[c].deferred = !state->columns[c].in_filter &&
			state->columns[c].attnum != keep;
}

/*
 * The next unit to read; false when there is none.  Parallel scans take
 * theirs from the shared queue; serial scans read every fragment whole, in
 * the manifest's order.
 */
static bool
scan_next_unit(LpFdwScan *state, LpFdwUnit *unit)
{
	LpFdwUnit  *taken;

	if (state->next_replayed >= 0)
	{
		if (state->next_replayed >= list_length(state->restricted_units))
			return false;
		*unit = *(LpFdwUnit *) list_nth(state->restricted_units, state->next_replayed++);
		return true;
	}
	if (state->queue != NULL)
	{
		if (!lp_fdw_queue_take(state->queue, unit))
			return false;
	}
	else
	{
		if (state->next_fragment >= state->source->num_fragments)
			return false;
		unit->fragment = state->next_fragment++;
		unit->first_row = 0;
		unit->num_rows = PG_UINT64_MAX;
	}
	if (state->vector_rows != NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(GetMemoryChunkContext(state));

		taken = palloc(sizeof(LpFdwUnit));
		*taken = *unit;
		state->restricted_units = lappend(state->restricted_units, taken);
		MemoryContextSwitchTo(old);
	}
	return true;
}

void
lp_fdw_scan_share(LpFdwScan *state, LpFdwUnitQueue *queue)
{
	state->queue = queue;
}

LpFdwUnitQueue *
lp_fdw_scan_queue(const LpFdwScan *state)
{
	return state->queue;
}

void
lp_fdw_scan_add_counts(LpFdwScan *state, uint64 filtered_rows, uint64 pages_decoded,
					   uint64 pages_skipped)
{
	state->filtered_rows += filtered_rows;
	state->pages_decoded += pages_decoded;
	state->pages_skipped += pages_skipped;
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

/*
 * Open one data file of the fragment (entry NULL: the single file) and a
 * reader for each needed field it holds.
 */
static void
open_data_file(LpFdwScan *state, const LpDataFileRef *entry)
{
	OpenFile   *open = palloc0(sizeof(OpenFile));
	LpStore    *store;
	const char *path = lp_fdw_data_file_path(state->source, entry, &store);
	LpError		err;

	state->current_file = path;
	open->input = lp_open_input_in(store, path);
	open->file = lp_file_open(open->input, &err);
	if (open->file == NULL)
		lp_raise(&err);
	state->open_files = lappend(state->open_files, open);
	if (open->file->version == LP_FILE_VERSION_LEGACY)
		ereport(ERROR,
				errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				errmsg("file \"%s\" uses the legacy Lance file format, which lance_fdw cannot read",
					   path));
	if (state->fragment_rows == 0 && !state->source->single_file)
		state->fragment_rows = open->file->num_rows;
	if (open->file->num_rows != state->fragment_rows)
		ereport(ERROR,
				errcode(ERRCODE_DATA_CORRUPTED),
				errmsg("data file \"%s\" has " UINT64_FORMAT " rows, but its fragment " UINT64_FORMAT " has " UINT64_FORMAT,
					   path, (uint64) open->file->num_rows, state->fragment_id, state->fragment_rows));

	for (int c = 0; c < state->num_columns; c++)
	{
		ScanColumn *column = &state->columns[c];
		int			index = -1;

		if (column->reader != NULL || column->field_id < 0 ||
			(entry != NULL && !data_file_holds(entry, column)))
			continue;
		for (uint32 i = 0; i < open->file->schema.num_fields; i++)
			if (open->file->schema.fields[i].id == column->field_id &&
				open->file->schema.fields[i].parent_id == -1)
				index = (int) i;
		if (index < 0)
			continue;
		if (!lp_field_reader_open(open->input, open->file, (uint32) index, &column->reader, &err))
			lp_raise(&err);
		column->file = path;
		column->input = open->input;
		if (column->reads_payload)
		{
			column->blob.data_file = path;
			column->blob.data_store = store;
			column->blob.data_input = open->input;
			column->blob.source = state->source;
			column->blob.context = state->fragment_context;
		}
		else
			lp_fdw_converter_init(&column->converter, lp_field_reader_type(column->reader),
								  column->typid, column->typmod);
	}
}

static void
read_deletions(LpFdwScan *state, const LpFragment *fragment)
{
	const LpDeletionFileRef *deletion = &fragment->deletion_file;
	LpStore    *store;
	char	   *path = lp_fdw_deletion_file_path(state->source, fragment, &store);
	LpInput    *input;
	LpError		err;

	state->current_file = path;
	input = lp_open_input_in(store, path);
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

/* Free the current batch's arrays. */
static void
release_batch(LpFdwScan *state)
{
	for (int c = 0; c < state->num_columns; c++)
	{
		lp_array_free(state->columns[c].array);
		state->columns[c].array = NULL;
	}
	state->num_live = 0;
	state->num_output = 0;
	state->next_output = 0;
	state->filter_columns_live = false;
}

/* Close the open fragment's readers and files, keeping their page counts. */
static void
close_fragment(LpFdwScan *state)
{
	ListCell   *cell;

	release_batch(state);
	for (int c = 0; c < state->num_columns; c++)
	{
		ScanColumn *column = &state->columns[c];
		LpDecodeStats stats;

		lp_fdw_blob_reader_close(&column->blob);
		if (column->reader == NULL)
			continue;
		lp_field_reader_stats(column->reader, &stats);
		state->pages_decoded += stats.pages_decoded;
		state->pages_skipped += stats.pages_skipped;
		lp_field_reader_close(column->reader);
		column->reader = NULL;
	}
	foreach(cell, state->open_files)
		lp_input_close(((OpenFile *) lfirst(cell))->input);
	state->open_files = NIL;
	MemoryContextReset(state->fragment_context);
	memset(&state->deletions, 0, sizeof(state->deletions));
	state->fragment_open = false;
}

static void
open_fragment(LpFdwScan *state, uint64 index)
{
	MemoryContext old = MemoryContextSwitchTo(state->fragment_context);

	if (state->source->single_file)
	{
		state->fragment_id = 0;
		state->fragment_rows = state->source->file->num_rows;
		if (state->num_columns > 0)
			open_data_file(state, NULL);
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
				open_data_file(state, &file);
		}
		if (fragment.has_deletion_file)
			read_deletions(state, &fragment);
	}
	state->current_file = NULL;
	MemoryContextSwitchTo(old);
	state->fragment_index = index;
	state->fragment_open = true;
}

/*
 * Start reading a unit.  A unit of the open fragment that starts where the
 * last one ended or later keeps its readers (they read forward); another
 * fragment is opened.
 */
static void
open_unit(LpFdwScan *state, const LpFdwUnit *unit)
{
	const LpFdwIndexRows *restricting = state->vector_rows != NULL ? state->vector_rows
		: state->index_rows;

	if (state->fragment_open &&
		(state->fragment_index != unit->fragment || unit->first_row < state->unit_end_row))
		close_fragment(state);
	if (!state->fragment_open)
		open_fragment(state, unit->fragment);
	state->unit_next_row = Min(unit->first_row, state->fragment_rows);
	state->unit_end_row = unit->num_rows > state->fragment_rows - state->unit_next_row ?
		state->fragment_rows : state->unit_next_row + unit->num_rows;
	state->fetched_ahead_to = state->unit_next_row;
	state->unit_restricted = restricting != NULL &&
		lp_fdw_index_unit_rows(restricting, unit->fragment, state->unit_next_row,
							   state->unit_end_row, &state->unit_candidates,
							   &state->unit_num_candidates);
}

/*
 * Hand the byte ranges of the unit's rows from the batch starting at start
 * up to the end of the next one, those not handed over already (the first
 * batch of a unit is fetched with the second), to the inputs that fetch
 * ahead: one prefetch per input, so that each holds a batch's pieces while
 * the next ones come.  Deleted rows and rows a filter will drop are fetched
 * too.
 */
static void
fetch_ahead(LpFdwScan *state, uint64 start)
{
	uint64		from = Max(start, state->fetched_ahead_to);
	uint64		to = Min(start + 2 * state->batch_rows, state->unit_end_row);
	uint64		n;
	ListCell   *cell;
	MemoryContext old;
	bool		any = false;

	foreach(cell, state->open_files)
		any |= ((OpenFile *) lfirst(cell))->input->ops->prefetch != NULL;
	if (from >= to || !any)
		return;
	/* local files fetch nothing ahead: only S3 scans pay for the rows */
	if (state->readahead_rows == NULL)
		state->readahead_rows = MemoryContextAlloc(GetMemoryChunkContext(state),
												   sizeof(uint64) * state->batch_rows * 2);
	n = to - from;
	for (uint64 i = 0; i < n; i++)
		state->readahead_rows[i] = from + i;
	state->fetched_ahead_to = to;
	/* the pieces fetched belong to the inputs, in the fragment's context */
	old = MemoryContextSwitchTo(state->fragment_context);
	foreach(cell, state->open_files)
	{
		LpInput    *input = ((OpenFile *) lfirst(cell))->input;
		LpByteRange *ranges = NULL;
		size_t		num_ranges = 0;
		LpError		err;

		if (input->ops->prefetch == NULL)
			continue;
		for (int c = 0; c < state->num_columns; c++)
		{
			ScanColumn *column = &state->columns[c];
			LpByteRange *found;
			size_t		num_found;

			if (column->reader == NULL || column->input != input)
				continue;
			state->current_file = column->file;
			if (!lp_field_reader_ranges(column->reader, state->readahead_rows, n, &found,
										&num_found, &err))
				lp_raise(&err);
			if (num_found == 0)
				continue;
			ranges = ranges == NULL ? palloc(sizeof(LpByteRange) * num_found)
				: repalloc(ranges, sizeof(LpByteRange) * (num_ranges + num_found));
			memcpy(ranges + num_ranges, found, sizeof(LpByteRange) * num_found);
			num_ranges += num_found;
			lp_free(found);
		}
		if (!lp_input_prefetch(input, ranges, num_ranges, &err))
			lp_raise(&err);
		if (ranges != NULL)
			pfree(ranges);
	}
	state->current_file = NULL;
	MemoryContextSwitchTo(old);
}

/* Decode column's values of the n rows (ascending) into its batch array. */
static void
take_rows(LpFdwScan *state, ScanColumn *column, const uint64 *rows, uint64 n)
{
	MemoryContext old;
	LpError		err;
	volatile bool ok;

	if (column->reader == NULL)
		return;
	state->current_file = column->file;
	/*
	 * The reader's own state lives in the unit's context; the array is freed
	 * with the batch.  Large buffers are mappings, reused batch after batch
	 * (lp_pg_recycle_large_begin).
	 */
	old = MemoryContextSwitchTo(state->fragment_context);
	lp_pg_recycle_large_begin();
	PG_TRY();
	{
		ok = lp_field_reader_take(column->reader, rows, n, &column->array, &err);
	}
	PG_FINALLY();
	{
		lp_pg_recycle_large_end();
	}
	PG_END_TRY();
	MemoryContextSwitchTo(old);
	if (!ok)
		lp_raise(&err);
	if (column->array->length != n)
		ereport(ERROR,
				errcode(ERRCODE_DATA_CORRUPTED),
				errmsg("field \"%s\" of data file \"%s\" decoded to " UINT64_FORMAT " rows instead of " UINT64_FORMAT,
					   column->field_name, column->file, (uint64) column->array->length, n));
	state->current_file = NULL;
}

/*
 * The row context holds the values of the rows returned since it was last
 * reset (and, while a batch is filtered, the filter's values of the batch).
 * Most rows allocate a few small values or none, so it is reset once it holds
 * this much rather than for every row.
 */
#define ROW_CONTEXT_RESET_BYTES (256 * 1024)

static void
reset_row_context(LpFdwScan *state)
{
	if (MemoryContextMemAllocated(state->row_context, false) >= ROW_CONTEXT_RESET_BYTES)
		MemoryContextReset(state->row_context);
}

static bool
value_is_null(const ScanColumn *column, uint64 index)
{
	return column->array == NULL || column->array->type->id == LP_TYPE_NULL ||
		!lp_array_is_valid(column->array, index);
}

/*
 * The filter's verdicts on the batch's live rows: the rows that match and
 * their indexes among the live rows in output_rows and output_live.  The
 * filter columns are converted column by column, then the rows tested; the
 * converted values live in the row context until the batch's verdicts are
 * in (the rows of the batch before were all returned).
 */
static void
filter_batch(LpFdwScan *state)
{
	MemoryContext old;

	MemoryContextReset(state->row_context);
	old = MemoryContextSwitchTo(state->row_context);
	for (int c = 0; c < state->num_columns; c++)
	{
		ScanColumn *column = &state->columns[c];

		if (!column->in_filter)
			continue;
		state->current_column = column;
		for (uint64 i = 0; i < state->num_live; i++)
		{
			column->filter_isnull[i] = value_is_null(column, i);
			if (column->filter_isnull[i] || !column->filter_value)
				continue;
			state->row = state->live_rows[i];
			column->filter_datums[i] = lp_fdw_convert(&column->converter, column->array, i);
		}
	}
	state->current_column = NULL;
	for (uint64 i = 0; i < state->num_live; i++)
	{
		for (int c = 0; c < state->num_columns; c++)
		{
			const ScanColumn *column = &state->columns[c];
			int			a = column->attnum - 1;

			if (!column->in_filter)
				continue;
			state->filter_nulls[a] = column->filter_isnull[i];
			if (!column->filter_isnull[i] && column->filter_value)
				state->filter_values[a] = column->filter_datums[i];
		}
		state->row = state->live_rows[i];
		if (lp_fdw_filter_matches(state->filter, state->filter_values, state->filter_nulls))
		{
			state->output_rows[state->num_output] = state->live_rows[i];
			state->output_live[state->num_output++] = i;
		}
	}
	MemoryContextSwitchTo(old);
}

/*
 * The live rows of the next batch of a unit whose rows an index found: up
 * to a batch of those rows, the deleted ones left out.
 */
static void
take_index_rows(LpFdwScan *state)
{
	while (state->num_live < state->batch_rows && state->unit_num_candidates > 0)
	{
		uint64		row = *state->unit_candidates++;

		state->unit_num_candidates--;
		if (lp_deletions_contains(&state->deletions, row))
			state->deleted_rows_skipped++;
		else
			state->live_rows[state->num_live++] = row;
	}
	state->unit_next_row = state->unit_num_candidates > 0 ? state->unit_candidates[0]
		: state->unit_end_row;
}

/*
 * The rows the scalar index of a filter column finds, if one does
 * (lp_fdw_index.c); once per scan, when the filter's values are known.
 */
static void
look_up_index(LpFdwScan *state)
{
	MemoryContext old;

	state->index_looked_up = true;
	if (state->filter == NULL || state->source->single_file)
		return;
	if (state->index_context == NULL)
		state->index_context = AllocSetContextCreate(GetMemoryChunkContext(state),
													 "lance_fdw index rows",
													 ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(state->index_context);
	for (int c = 0; c < state->num_columns && state->index_rows == NULL; c++)
	{
		const ScanColumn *column = &state->columns[c];

		if (column->in_filter && column->filter_value && column->field_id >= 0)
			state->index_rows = lp_fdw_index_lookup(state->source, state->filter, column->attnum,
													column->field_id, column->typid);
	}
	MemoryContextSwitchTo(old);
}

/*
 * Read the unit's next batch that has rows to return; false when the unit
 * has no more.
 */
static bool
read_batch(LpFdwScan *state)
{
	while (state->unit_next_row < state->unit_end_row)
	{
		uint64		start = state->unit_next_row;
		uint64		end = start + Min(state->batch_rows, state->unit_end_row - start);

		CHECK_FOR_INTERRUPTS();
		release_batch(state);
		if (state->unit_restricted)
			take_index_rows(state);
		else
		{
			state->unit_next_row = end;
			for (uint64 row = start; row < end; row++)
			{
				if (lp_deletions_contains(&state->deletions, row))
					state->deleted_rows_skipped++;
				else
					state->live_rows[state->num_live++] = row;
			}
		}
		if (state->num_live == 0)
			continue;
		if (state->readahead && !state->unit_restricted)
			fetch_ahead(state, start);

		if (state->filter == NULL)
		{
			for (int c = 0; c < state->num_columns; c++)
				if (!state->columns[c].deferred)
					take_rows(state, &state->columns[c], state->live_rows, state->num_live);
			state->batch_output = state->live_rows;
			state->num_output = state->num_live;
			return true;
		}

		for (int c = 0; c < state->num_columns; c++)
			if (state->columns[c].in_filter)
				take_rows(state, &state->columns[c], state->live_rows, state->num_live);
		state->filter_columns_live = true;
		filter_batch(state);
		state->filtered_rows += state->num_live - state->num_output;
		if (state->num_output == 0)
			continue;
		for (int c = 0; c < state->num_columns; c++)
			if (!state->columns[c].in_filter && !state->columns[c].deferred)
				take_rows(state, &state->columns[c], state->output_rows, state->num_output);
		state->batch_output = state->output_rows;
		return true;
	}
	return false;
}

/* Read the next batch with rows to return, from the next units as needed; false after the last. */
static bool
next_batch(LpFdwScan *state)
{
	if (!state->index_looked_up)
		look_up_index(state);
	for (;;)
	{
		LpFdwUnit	unit;

		if (state->fragment_open && read_batch(state))
			return true;
		if (!scan_next_unit(state, &unit))
		{
			if (state->fragment_open)
				close_fragment(state);
			return false;
		}
		open_unit(state, &unit);
	}
}

bool
lp_fdw_scan_next(LpFdwScan *state)
{
	ErrorContextCallback callback;
	bool		found = true;

	push_error_context(state, &callback);

	if (state->next_output >= state->num_output)
		found = next_batch(state);
	if (found)
		lp_fdw_scan_select(state, state->next_output++);
	error_context_stack = callback.previous;
	return found;
}

uint64
lp_fdw_scan_next_batch(LpFdwScan *state)
{
	ErrorContextCallback callback;

	push_error_context(state, &callback);

	if (!next_batch(state))
		release_batch(state);
	state->next_output = state->num_output;
	error_context_stack = callback.previous;
	return state->num_output;
}

uint64
lp_fdw_scan_batch_rows(const LpFdwScan *state, uint64 *fragment, const uint64 **rows)
{
	*fragment = state->fragment_index;
	*rows = state->batch_output;
	return state->num_output;
}

/* The index in column's batch array of the batch's output row index. */
static uint64
column_position(const LpFdwScan *state, const ScanColumn *column, uint64 index)
{
	return column->in_filter && state->filter_columns_live ? state->output_live[index] : index;
}

const LpArray *
lp_fdw_scan_batch_column(const LpFdwScan *state, AttrNumber attnum, const uint64 **positions)
{
	for (int c = 0; c < state->num_columns; c++)
	{
		const ScanColumn *column = &state->columns[c];

		if (column->attnum != attnum)
			continue;
		*positions = column->in_filter && state->filter_columns_live ? state->output_live : NULL;
		if (column->array == NULL || column->array->type->id == LP_TYPE_NULL)
			return NULL;
		return column->array;
	}
	elog(ERROR, "lance_fdw scan does not read column %d", attnum);
	pg_unreachable();
}

void
lp_fdw_scan_select(LpFdwScan *state, uint64 index)
{
	Assert(index < state->num_output);
	state->output_index = index;
	state->row = state->batch_output[index];
}

void
lp_fdw_scan_take(LpFdwScan *state, uint64 fragment, const uint64 *rows, uint64 n)
{
	ErrorContextCallback callback;

	push_error_context(state, &callback);

	if (state->fragment_open && state->fragment_index != fragment)
		close_fragment(state);
	if (!state->fragment_open)
		open_fragment(state, fragment);
	release_batch(state);
	if (n > state->live_capacity)
	{
		state->live_rows = repalloc_huge(state->live_rows, sizeof(uint64) * n);
		state->live_capacity = n;
	}
	memcpy(state->live_rows, rows, sizeof(uint64) * n);
	state->num_live = n;
	for (int c = 0; c < state->num_columns; c++)
		take_rows(state, &state->columns[c], state->live_rows, n);
	state->batch_output = state->live_rows;
	state->num_output = n;
	state->next_output = n;
	error_context_stack = callback.previous;
}

void
lp_fdw_scan_values(LpFdwScan *state, Datum *values, bool *isnull)
{
	ErrorContextCallback callback;
	MemoryContext old;

	push_error_context(state, &callback);

	reset_row_context(state);
	old = MemoryContextSwitchTo(state->row_context);
	memset(isnull, true, sizeof(bool) * state->natts);
	for (int c = 0; c < state->num_columns; c++)
	{
		ScanColumn *column = &state->columns[c];
		int			i = column->attnum - 1;
		uint64		index = column_position(state, column, state->output_index);

		if (value_is_null(column, index))
			continue;
		state->current_column = column;
		if (column->reads_payload)
			isnull[i] = !lp_fdw_blob_payload(&column->blob, column->array, index, &values[i]);
		else
		{
			values[i] = lp_fdw_convert(&column->converter, column->array, index);
			isnull[i] = false;
		}
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

uint64
lp_fdw_scan_filtered_rows(const LpFdwScan *state)
{
	return state->filtered_rows;
}

void
lp_fdw_scan_pages(const LpFdwScan *state, uint64 *decoded, uint64 *skipped)
{
	*decoded = state->pages_decoded;
	*skipped = state->pages_skipped;
	for (int c = 0; c < state->num_columns; c++)
	{
		LpDecodeStats stats;

		if (state->columns[c].reader == NULL)
			continue;
		lp_field_reader_stats(state->columns[c].reader, &stats);
		*decoded += stats.pages_decoded;
		*skipped += stats.pages_skipped;
	}
}

void
lp_fdw_scan_rewind(LpFdwScan *state)
{
	if (state->fragment_open)
		close_fragment(state);
	state->next_fragment = 0;
	state->deleted_rows_skipped = 0;
	if (state->filter != NULL)
		lp_fdw_filter_rewind(state->filter);
	/* the next scan's parameters may find other rows */
	state->index_looked_up = false;
	state->index_rows = NULL;
	state->vector_rows = NULL;
	list_free_deep(state->restricted_units);
	state->restricted_units = NIL;
	state->next_replayed = -1;
	if (state->index_context != NULL)
		MemoryContextReset(state->index_context);
}

bool
lp_fdw_scan_has_filter(const LpFdwScan *state)
{
	return state->filter != NULL;
}

void
lp_fdw_scan_restrict(LpFdwScan *state, const LpFdwIndexRows *rows)
{
	state->vector_rows = rows;
	/* the candidates replace the rows a scalar index would find */
	state->index_looked_up = true;
	state->index_rows = NULL;
}

void
lp_fdw_scan_unrestrict(LpFdwScan *state)
{
	if (state->fragment_open)
		close_fragment(state);
	state->vector_rows = NULL;
	state->next_replayed = 0;
}

const LpFdwIndexRows *
lp_fdw_scan_index_rows(LpFdwScan *state)
{
	if (!state->index_looked_up)
		look_up_index(state);
	return state->index_rows;
}

void
lp_fdw_scan_end(LpFdwScan *state)
{
	if (state->fragment_open)
		close_fragment(state);
	if (state->fragment_context != NULL)
		MemoryContextDelete(state->fragment_context);
	if (state->row_context != NULL)
		MemoryContextDelete(state->row_context);
}

/*
 * A row address (fragment id, row offset) as an ItemPointer, the row
 * identity DELETE carries from the scan to the modification: 48 bits, high
 * to low over the block and offset numbers, the offset in the source's
 * row_address_bits.  The largest fragment id is left out, so that no
 * address is the invalid ItemPointer.
 */
#define ROW_IDENTITY_BITS 48

uint64
lp_fdw_row_address_fragments(const LpFdwSource *source)
{
	return (UINT64CONST(1) << (ROW_IDENTITY_BITS - source->row_address_bits)) - 1;
}

void
lp_fdw_scan_row_identity(const LpFdwScan *state, ItemPointer tid)
{
	const LpFdwSource *source = state->source;
	uint64		address;

	if (source->single_file || state->fragment_id >= lp_fdw_row_address_fragments(source) ||
		state->row >> source->row_address_bits != 0)
	{
		ItemPointerSetInvalid(tid);
		return;
	}
	address = state->fragment_id << source->row_address_bits | state->row;
	ItemPointerSet(tid, (BlockNumber) (address >> 16), (OffsetNumber) (address & 0xFFFF));
}

bool
lp_fdw_row_address(const LpFdwSource *source, ItemPointer tid, uint64 *fragment_id, uint64 *row)
{
	uint64		address;

	if (ItemPointerGetBlockNumberNoCheck(tid) == InvalidBlockNumber &&
		ItemPointerGetOffsetNumberNoCheck(tid) == InvalidOffsetNumber)
		return false;
	address = (uint64) ItemPointerGetBlockNumberNoCheck(tid) << 16 |
		ItemPointerGetOffsetNumberNoCheck(tid);
	*fragment_id = address >> source->row_address_bits;
	*row = address & ((UINT64CONST(1) << source->row_address_bits) - 1);
	return true;
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
