/*
 * lp_write_sql.c - writing Lance from SQL: write_file (a raw file),
 * write_part (one part of a target, for register_part) and write_dataset
 * (create, append or overwrite a dataset), and what COPY ... TO with format
 * 'lance' runs (write/lp_copy_to.c).
 *
 * A query's rows are read through an SPI cursor in batches, converted to
 * LpArrays (write/lp_write_values.c) and encoded by the core's file writer
 * into outputs of the URI's store: in this backend, or for a dataset's
 * files in parallel workers (write/lp_write_workers.c).  Outputs are written under a temporary
 * name and published only once complete, so an ERROR or a cancel leaves no
 * partial file; a dataset's new files are committed through the core's
 * commit code (core/dataset/lp_commit.c) once all are published.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/tuplestore.h"

#include "assemble/lp_progress.h"
#include "base/lp_alloc.h"
#include "base/lp_path.h"
#include "dataset/lp_commit.h"
#include "dataset/lp_dataset.h"
#include "encode/lp_file_writer.h"
#include "base/lp_pg_alloc.h"
#include "base/lp_pg_error.h"
#include "base/lp_pg_random.h"
#include "base/lp_sql_args.h"
#include "format/lp_columns.h"
#include "write/lp_publication.h"
#include "targets/lp_sidecar.h"
#include "store/lp_pg_storage.h"
#include "targets/lp_target.h"
#include "write/lp_write_blobs.h"
#include "write/lp_write_sql.h"
#include "write/lp_write_values.h"
#include "write/lp_write_workers.h"

PG_FUNCTION_INFO_V1(lp_write_file);
PG_FUNCTION_INFO_V1(lp_write_part);
PG_FUNCTION_INFO_V1(lp_write_dataset);

/* Rows fetched from the cursor at a time, and the size of a batch for the writer. */
#define FETCH_ROWS 1000
#define BATCH_MAX_ROWS 8192
#define BATCH_MAX_BYTES (4 * 1024 * 1024)

static int	new_dataset_naming = LP_NAMING_V2;

static const struct config_enum_entry naming_options[] = {
	{"v1", LP_NAMING_V1, false},
	{"v2", LP_NAMING_V2, false},
	{NULL, 0, false}
};

void
LpWriteInit(void)
{
	DefineCustomEnumVariable("lance_parts.manifest_naming",
							 gettext_noop("Manifest naming scheme of datasets created by write_dataset and COPY TO."),
							 gettext_noop("v2 (Lance's default) names manifests by the complement of their version, v1 by the version."),
							 &new_dataset_naming,
							 LP_NAMING_V2, naming_options,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);
}

/* A file a write published. */
typedef struct WrittenFile
{
	char	   *name;			/* file name (in the data directory for datasets) */
	char	   *path;			/* key in the store */
	uint64		rows;
	uint64		size_bytes;
} WrittenFile;

/* Where a write puts its files. */
typedef struct WriteSink
{
	LpStore    *store;
	LpFileVersion version;
	LpSchema   *schema;			/* NULL: the query's columns (write_file, create) */
	const char *what;			/* for messages: "dataset \"...\"", ... */
	const char *progress_dataset;
	/* one file at fixed_path (written even without rows), or files in data_dir */
	const char *fixed_path;
	const char *data_dir;
	uint64		max_rows_per_file;
	bool		has_expected_rows;
	uint64		expected_rows;
	LpBlobWriter *blobs;		/* the payloads of Blob v2 fields; NULL: none are written */
	List	   *blob_columns;	/* without a schema: the columns that are Blob v2 fields */

	LpWriteWorkers *workers;	/* NULL: files encoded in this backend */
	bool		in_order;		/* files hold the rows in the order given: no workers */

	/* results, in the caller's memory context */
	List	   *files;			/* WrittenFile * */
	uint64		total_rows;
} WriteSink;

/* The file being written. */
typedef struct OpenFile
{
	LpOutput   *output;
	LpFileWriter *writer;
	WrittenFile *file;
} OpenFile;

LpFileVersion
lp_write_file_version(const char *name)
{
	LpFileVersion version;

	if (!lp_file_version_parse(name, &version) || version == LP_FILE_VERSION_LEGACY)
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("unknown Lance file version \"%s\"", name),
				errhint("Use 2.0, 2.1, 2.2 or 2.3."));
	return version;
}

static void
open_file(WriteSink *sink, OpenFile *open, MemoryContext results)
{
	MemoryContext old = MemoryContextSwitchTo(results);
	WrittenFile *file = palloc0(sizeof(WrittenFile));
	LpError		err;
	LpStat		st;

	if (sink->fixed_path != NULL)
	{
		file->path = pstrdup(sink->fixed_path);
		file->name = file->path;
	}
	else
	{
		char		name[LP_DATA_FILE_NAME_SIZE];

		if (!lp_generate_data_file_name(lp_random_bytes, NULL, name, &err))
			lp_raise(&err);
		file->name = pstrdup(name);
		file->path = lp_require_memory(lp_path_join(sink->data_dir, name));
	}
	MemoryContextSwitchTo(old);

	/* a path that cannot be examined is left to create_output to report */
	if (sink->store->ops->stat(sink->store, file->path, false, &st, &err) &&
		st.kind != LP_OBJECT_ABSENT)
		ereport(ERROR,
				errcode(ERRCODE_DUPLICATE_FILE),
				errmsg("file \"%s\" already exists", file->path),
				errhint("Writing never replaces a file; choose another path or remove it."));
	open->output = sink->store->ops->create_output(sink->store, file->path, &err);
	if (open->output == NULL)
		lp_raise(&err);
	open->file = file;
	if (sink->workers != NULL)
	{
		lp_write_workers_open_file(sink->workers, open->output, file);
		return;
	}
	open->writer = lp_file_writer_open(open->output, sink->schema, sink->version, &err);
	if (open->writer == NULL)
		lp_raise(&err);
	if (sink->blobs != NULL)
		lp_blob_writer_begin_file(sink->blobs, open->writer, file->path);
}

/* Encode the batch into the open file. */
static void
write_batch(WriteSink *sink, OpenFile *open, LpRowBatch *batch)
{
	uint32		num_arrays;
	const LpArray *const *arrays = lp_row_batch_arrays(batch, &num_arrays);
	LpError		err;

	if (lp_row_batch_rows(batch) == 0)
		return;
	if (sink->workers != NULL)
		lp_write_workers_write(sink->workers, arrays, num_arrays);
	else if (!lp_file_writer_write(open->writer, arrays, num_arrays, &err))
		lp_raise(&err);
	open->file->rows += lp_row_batch_rows(batch);
	lp_row_batch_reset(batch);
}

/* Publish a finished file's output. */
static void
publish_file(WriteSink *sink, LpOutput *output, WrittenFile *file, MemoryContext results)
{
	LpError		err;
	MemoryContext old;

	if (!output->ops->publish(output, &err))
		lp_raise(&err);
	old = MemoryContextSwitchTo(results);
	sink->files = lappend(sink->files, file);
	MemoryContextSwitchTo(old);
	sink->total_rows += file->rows;
}

/* Publish the files the workers finished, in order (wait: all of them). */
static void
publish_encoded_files(WriteSink *sink, bool wait, MemoryContext results)
{
	void	   *owner;
	LpOutput   *output;
	uint64		size_bytes;

	while (lp_write_workers_next_done(sink->workers, wait, &owner, &output, &size_bytes))
	{
		WrittenFile *file = owner;

		file->size_bytes = size_bytes;
		publish_file(sink, output, file, results);
	}
}

/*
 * Finish and publish the open file (with workers: once its worker finished
 * it), unless its row count is not the expected one.
 */
static void
close_file(WriteSink *sink, OpenFile *open, MemoryContext results)
{
	LpError		err;

	if (sink->has_expected_rows && open->file->rows != sink->expected_rows)
		ereport(ERROR,
				errcode(ERRCODE_CARDINALITY_VIOLATION),
				errmsg("the query returned " UINT64_FORMAT " rows for %s, not the " UINT64_FORMAT " expected",
					   open->file->rows, sink->what, sink->expected_rows),
				errdetail("Nothing was written."));
	/* its sidecars are complete before the file that names them */
	if (sink->blobs != NULL)
		lp_blob_writer_end_file(sink->blobs);
	if (sink->workers != NULL)
	{
		lp_write_workers_close_file(sink->workers);
		publish_encoded_files(sink, false, results);
	}
	else
	{
		if (!lp_file_writer_finish(open->writer, &open->file->size_bytes, &err))
			lp_raise(&err);
		lp_file_writer_free(open->writer);
		publish_file(sink, open->output, open->file, results);
	}
	memset(open, 0, sizeof(*open));
}

/* The top-level Blob v2 fields of schema. */
static uint32
num_blob_v2_fields(const LpSchema *schema)
{
	uint32		count = 0;

	for (uint32 i = 0; i < schema->num_fields; i++)
		count += schema->fields[i].parent_id == -1 && lp_field_is_blob_v2(&schema->fields[i]);
	return count;
}

/*
 * Rows being written into a sink: the batch being filled and the file it
 * goes to.  Rows come from a query (write_rows) or from the executor
 * (inserts into lance_fdw tables, lp_dataset_append_*).
 */
typedef struct LpWriteStream
{
	WriteSink  *sink;
	MemoryContext results;		/* where the sink's results go */
	MemoryContext row_context;	/* reset after each row */
	LpRowBatch *batch;
	OpenFile	open;
	uint64		bytes_done;
} LpWriteStream;

/*
 * Begin writing rows of desc into the sink (which gets desc's schema when
 * it has none, in the current memory context, as do the results).
 */
static LpWriteStream *
stream_begin(WriteSink *sink, TupleDesc desc)
{
	LpWriteStream *stream = palloc0(sizeof(LpWriteStream));
	MemoryContext batch_context;
	MemoryContext old;

	stream->sink = sink;
	stream->results = CurrentMemoryContext;
	if (sink->schema == NULL)
	{
		sink->schema = palloc(sizeof(LpSchema));
		lp_write_schema_for_columns(desc, sink->blob_columns, sink->schema);
	}
	batch_context = AllocSetContextCreate(CurrentMemoryContext, "lance_parts write batch",
										  ALLOCSET_DEFAULT_SIZES);
	stream->row_context = AllocSetContextCreate(CurrentMemoryContext, "lance_parts write rows",
												ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(batch_context);
	stream->batch = lp_row_batch_create(desc, sink->schema, sink->what, sink->blobs);
	MemoryContextSwitchTo(old);

	/*
	 * A dataset's files may be encoded by workers (one file alone is written
	 * here); not with Blob v2 fields, whose inline payloads go into the file
	 * as its rows are converted.  (Every dataset write has a blob writer, in
	 * case its schema has such fields.)
	 */
	if (sink->fixed_path == NULL && !sink->in_order && num_blob_v2_fields(sink->schema) == 0)
	{
		sink->workers = lp_write_workers_start(sink->store, sink->schema, sink->version, sink->what);
		if (sink->workers != NULL)
			lp_progress_phase(LP_PHASE_ENCODING, 0, 0, 0, lp_write_workers_count(sink->workers));
	}
	if (sink->fixed_path != NULL)
		open_file(sink, &stream->open, stream->results);
	return stream;
}

/* Add one row (values and nulls of the stream's desc). */
static void
stream_add(LpWriteStream *stream, const Datum *values, const bool *nulls)
{
	WriteSink  *sink = stream->sink;
	LpRowBatch *batch = stream->batch;
	OpenFile   *open = &stream->open;
	MemoryContext old;

	/* first the file: a row's inline blob payloads go into it */
	if (open->file == NULL)
		open_file(sink, open, stream->results);
	old = MemoryContextSwitchTo(stream->row_context);
	lp_row_batch_add(batch, values, nulls);
	MemoryContextSwitchTo(old);
	MemoryContextReset(stream->row_context);
	if (lp_row_batch_rows(batch) >= BATCH_MAX_ROWS ||
		lp_row_batch_bytes(batch) >= BATCH_MAX_BYTES ||
		(sink->max_rows_per_file > 0 &&
		 open->file->rows + lp_row_batch_rows(batch) >= sink->max_rows_per_file))
	{
		stream->bytes_done += lp_row_batch_bytes(batch);
		write_batch(sink, open, batch);
		if (sink->max_rows_per_file > 0 && open->file->rows >= sink->max_rows_per_file)
			close_file(sink, open, stream->results);
		lp_progress_update(list_length(sink->files), (int64) stream->bytes_done);
	}
}

/* Finish the open file and wait for the workers' files: every file is published. */
static void
stream_end(LpWriteStream *stream)
{
	WriteSink  *sink = stream->sink;

	if (stream->open.file != NULL)
	{
		write_batch(sink, &stream->open, stream->batch);
		close_file(sink, &stream->open, stream->results);
	}
	if (sink->workers != NULL)
	{
		publish_encoded_files(sink, true, stream->results);
		lp_write_workers_end(sink->workers);
		sink->workers = NULL;
	}
}

/* write_query's work, in its scope of mapped buffers. */
static void
write_rows(const char *query, WriteSink *sink)
{
	MemoryContext results = CurrentMemoryContext;
	SPIPlanPtr	plan;
	Portal		portal;
	LpWriteStream *stream;
	Datum	   *values;
	bool	   *nulls;

	/* in the caller's memory context: the record outlives the SPI connection, until the commit */
	lp_progress_begin(sink->progress_dataset, sink->fixed_path ? sink->fixed_path : sink->data_dir,
					  LP_PHASE_ENCODING, 0);
	lp_progress_phase(LP_PHASE_ENCODING, 0, 0, 0, 0);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	plan = SPI_prepare(query, 0, NULL);
	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
	if (!SPI_is_cursor_plan(plan))
		ereport(ERROR,
				errcode(ERRCODE_WRONG_OBJECT_TYPE),
				errmsg("the query of %s returns no rows", sink->what),
				errhint("Give a SELECT, VALUES or TABLE query."));
	portal = SPI_cursor_open(NULL, plan, NULL, NULL, false);

	{
		MemoryContext old = MemoryContextSwitchTo(results);

		stream = stream_begin(sink, portal->tupDesc);
		MemoryContextSwitchTo(old);
	}
	values = palloc(sizeof(Datum) * Max(portal->tupDesc->natts, 1));
	nulls = palloc(sizeof(bool) * Max(portal->tupDesc->natts, 1));
	for (;;)
	{
		SPITupleTable *table;

		CHECK_FOR_INTERRUPTS();
		SPI_cursor_fetch(portal, true, FETCH_ROWS);
		if (SPI_processed == 0)
			break;
		table = SPI_tuptable;
		for (uint64 i = 0; i < SPI_processed; i++)
		{
			heap_deform_tuple(table->vals[i], table->tupdesc, values, nulls);
			stream_add(stream, values, nulls);
		}
		SPI_freetuptable(table);
	}
	stream_end(stream);
	SPI_cursor_close(portal);
	SPI_finish();
}

/*
 * Run query and write its rows to the sink's files.  Without a schema the
 * sink gets the query's (in the caller's memory context).  The page
 * buffers are mapped apart for this write only (lp_pg_alloc.h).
 */
static void
write_query(const char *query, WriteSink *sink)
{
	lp_pg_map_large_begin();
	PG_TRY();
	{
		write_rows(query, sink);
	}
	PG_FINALLY();
	{
		lp_pg_map_large_end();
	}
	PG_END_TRY();
}

/* ---- write_file --------------------------------------------------------------- */

static void
check_text_arg(FunctionCallInfo fcinfo, int arg, const char *what)
{
	if (PG_ARGISNULL(arg))
		ereport(ERROR,
				errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("%s must not be NULL", what));
}

Datum
lp_write_file(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	WriteSink	sink = {0};
	char	   *key;
	WrittenFile *file;
	Datum		values[3];
	bool		nulls[3] = {false, false, false};

	check_text_arg(fcinfo, 0, "file URI");
	check_text_arg(fcinfo, 1, "query");
	check_text_arg(fcinfo, 2, "file version");
	InitMaterializedSRF(fcinfo, 0);
	sink.store = lp_store_for_write_uri(text_to_cstring(PG_GETARG_TEXT_PP(0)), "a Lance file", &key);
	lp_check_write_privilege_for(key);
	sink.version = lp_write_file_version(text_to_cstring(PG_GETARG_TEXT_PP(2)));
	sink.fixed_path = key;
	sink.what = psprintf("file \"%s\"", key);
	write_query(text_to_cstring(PG_GETARG_TEXT_PP(1)), &sink);
	lp_progress_end();

	file = linitial(sink.files);
	values[0] = CStringGetTextDatum(file->path);
	values[1] = Int64GetDatum((int64) file->rows);
	values[2] = Int64GetDatum((int64) file->size_bytes);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	return (Datum) 0;
}

/* ---- write_part --------------------------------------------------------------- */

Datum
lp_write_part(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	LpTarget   *target;
	LpManifestNaming naming;
	WriteSink	sink = {0};
	char		name[LP_DATA_FILE_NAME_SIZE];
	WrittenFile *file;
	LpError		err;
	uint32		blob_fields;
	Datum		values[4];
	bool		nulls[4] = {false, false, false, true};

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("target must not be NULL"));
	check_text_arg(fcinfo, 1, "query");
	if (!PG_ARGISNULL(2) && PG_GETARG_INT64(2) < 0)
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("expected row count must not be negative"));
	InitMaterializedSRF(fcinfo, 0);
	target = lp_target_from_jsonb(PG_GETARG_JSONB_P(0));
	lp_target_check_privileges(target, true);
	(void) lp_target_check_binding(target, &naming);

	/* a part's name only has to be new: a data file name is drawn the same way */
	if (!lp_generate_data_file_name(lp_random_bytes, NULL, name, &err))
		lp_raise(&err);
	sink.store = lp_store_below(target->base_path);
	sink.version = target->file_version;
	sink.schema = &target->schema;
	sink.fixed_path = lp_require_memory(lp_path_join(lp_target_staging_dir(target), name));
	sink.what = psprintf("target file \"%s\"", target->file_name);
	sink.progress_dataset = target->dataset;
	sink.has_expected_rows = !PG_ARGISNULL(2);
	sink.expected_rows = PG_ARGISNULL(2) ? 0 : (uint64) PG_GETARG_INT64(2);
	blob_fields = num_blob_v2_fields(&target->schema);
	/* a payload takes at most one new id */
	if (blob_fields > 0)
		sink.blobs = lp_blob_writer_create_for_part(sink.store, sink.what, target,
													sink.expected_rows * blob_fields);
	/* an ERROR or a cancel removes the sidecars published so far */
	PG_TRY();
	{
		write_query(text_to_cstring(PG_GETARG_TEXT_PP(1)), &sink);
	}
	PG_CATCH();
	{
		if (sink.blobs != NULL)
			lp_blob_writer_remove_sidecars(sink.blobs, NULL);
		PG_RE_THROW();
	}
	PG_END_TRY();
	lp_progress_end();

	file = linitial(sink.files);
	values[0] = CStringGetTextDatum(file->path);
	values[1] = Int64GetDatum((int64) file->rows);
	values[2] = Int64GetDatum((int64) file->size_bytes);
	if (sink.blobs != NULL)
	{
		LpBlobLease lease = lp_blob_writer_part_lease(sink.blobs);

		values[3] = RangeTypePGetDatum(lp_blob_lease_range(&lease));
		nulls[3] = false;
	}
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	return (Datum) 0;
}

/* ---- write_dataset ------------------------------------------------------------ */

LpWriteMode
lp_write_mode(const char *mode)
{
	if (strcmp(mode, "create") == 0)
		return LP_WRITE_CREATE;
	if (strcmp(mode, "append") == 0)
		return LP_WRITE_APPEND;
	if (strcmp(mode, "overwrite") == 0)
		return LP_WRITE_OVERWRITE;
	ereport(ERROR,
			errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			errmsg("unknown write mode \"%s\"", mode),
			errhint("Use create, append or overwrite."));
	pg_unreachable();
}

/* The new fragments of the files written, for a commit. */
static LpNewFragment *
new_fragments(const WriteSink *sink, const LpSchema *schema)
{
	LpNewFragment *fragments = palloc0(sizeof(LpNewFragment) * Max(list_length(sink->files), 1));
	int32_t    *field_ids;
	int32_t    *column_indices;
	size_t		n_columns;
	LpError		err;
	ListCell   *cell;
	int			i = 0;

	if (!lp_data_file_columns(schema, NULL, 0, sink->version, &field_ids, &column_indices,
							  &n_columns, &err))
		lp_raise(&err);
	foreach(cell, sink->files)
	{
		WrittenFile *file = lfirst(cell);
		LpNewFragment *fragment = &fragments[i++];

		fragment->file.path = file->name;
		fragment->file.fields = field_ids;
		fragment->file.column_indices = column_indices;
		fragment->file.n_fields = n_columns;
		fragment->file.version = sink->version;
		fragment->file.size_bytes = file->size_bytes;
		fragment->physical_rows = file->rows;
	}
	return fragments;
}

/* The data files and sidecar directories of the sink, for a publication (LpPublicationPath *). */
static List *
written_paths(const WriteSink *sink, const char *root)
{
	List	   *written = NIL;
	ListCell   *cell;

	foreach(cell, sink->files)
	{
		WrittenFile *file = lfirst(cell);

		written = lappend(written,
						  lp_publication_path(root, psprintf("%s/%s", LP_DATA_DIR, file->name), false,
											  psprintf("The data file \"%s/%s/%s\"", root, LP_DATA_DIR, file->name)));
	}
	foreach(cell, lp_blob_writer_sidecar_dirs(sink->blobs))
		written = lappend(written,
						  lp_publication_path(root, lfirst(cell), true,
											  psprintf("The sidecar directory \"%s/%s\"", root, (char *) lfirst(cell))));
	return written;
}

/*
 * The sink's files as the publication of the mode: an Append, an Overwrite,
 * or the creation of the dataset (latest NULL); result->published false
 * when it is queued for the commit of the transaction.
 */
static void
publish_dataset_write(WriteSink *sink, const char *root, Oid server, LpWriteMode mode,
					  const LpManifest *latest, LpManifestNaming naming, LpWriteResult *result)
{
	LpCommitRequest request = {0};
	LpPublicationRequest publication = {0};
	LpCommitResult commit;

	result->num_rows = sink->total_rows;
	result->fragments = list_length(sink->files);
	if (mode == LP_WRITE_APPEND && sink->files == NIL)
	{
		/* nothing to add: Lance makes no version for an empty append either */
		result->dataset_version = lp_manifest_version(latest);
		result->published = true;
		lp_progress_end();
		return;
	}

	lp_progress_phase(LP_PHASE_COMMITTING, list_length(sink->files), 0, 0, 0);
	request.kind = mode == LP_WRITE_APPEND ? LP_COMMIT_APPEND : LP_COMMIT_OVERWRITE;
	request.fragments = new_fragments(sink, sink->schema);
	request.n_fragments = list_length(sink->files);
	request.schema = sink->schema;
	request.data_version = sink->version;
	if (latest != NULL)
	{
		request.read_version = lp_manifest_version(latest);
		request.read_manifest = latest;
		request.read_naming = naming;
	}
	publication.root = root;
	publication.server = server;
	publication.commit = &request;
	publication.create = latest == NULL;
	publication.create_naming = naming;
	publication.written = written_paths(sink, root);
	result->published = lp_publish(&publication, &commit);
	lp_progress_end();
	result->dataset_version = commit.version;
	lp_free(commit.new_fragment_ids);
}

/*
 * Remove the data files and sidecars a failed write published (never
 * through a symlink: from the root down); what cannot be removed is left
 * to cleanup_orphans, since an error is already on its way.
 */
static void
remove_written_files(const WriteSink *sink, const char *root)
{
	ListCell   *cell;

	foreach(cell, sink->files)
	{
		WrittenFile *file = lfirst(cell);
		char	   *relative = lp_path_join(LP_DATA_DIR, file->name);
		bool		removed;
		LpError		err;

		if (relative != NULL)
			(void) sink->store->ops->remove_file(sink->store, root, relative, &removed, &err);
		lp_free(relative);
	}
	lp_blob_writer_remove_sidecars(sink->blobs, root);
}

/*
 * A sink for new data files of the dataset at root (reached through store),
 * checked against the mode: *latest (NULL: there is none) and *naming are
 * its latest version.  version is the file version of create and
 * overwrite; appends write the dataset's.
 */
static WriteSink *
dataset_sink(const char *root, LpStore *store, Oid server, LpWriteMode mode, LpFileVersion version,
			 int64 max_rows_per_file, List *blob_columns,
			 LpManifest **latest, LpManifestNaming *naming)
{
	WriteSink  *sink = palloc0(sizeof(WriteSink));
	LpError		err;

	if (max_rows_per_file < 1 || max_rows_per_file > (int64) UINT32_MAX)
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("max_rows_per_file must be between 1 and %u", UINT32_MAX),
				errdetail("A fragment holds at most %u rows.", UINT32_MAX));
	sink->store = store;
	*naming = (LpManifestNaming) new_dataset_naming;
	*latest = lp_read_latest_manifest(store, root, server, naming, &err);
	if (*latest == NULL && err.code != LP_ERR_NOT_FOUND)
		lp_raise(&err);
	if (lp_publication_replaces(root) && mode == LP_WRITE_APPEND)
		lp_publication_refuse_after_replacement(root);
	if (*latest == NULL && mode == LP_WRITE_APPEND)
		ereport(ERROR,
				errcode(ERRCODE_UNDEFINED_OBJECT),
				errmsg("dataset \"%s\" does not exist", root),
				errhint("Use mode create to make it."));
	if (*latest != NULL && mode == LP_WRITE_CREATE)
		ereport(ERROR,
				errcode(ERRCODE_DUPLICATE_OBJECT),
				errmsg("dataset \"%s\" already exists", root),
				errhint("Use mode append or overwrite."));
	if (*latest != NULL && !lp_manifest_check_writable(*latest, root, &err))
		lp_raise(&err);

	sink->what = psprintf("dataset \"%s\"", root);
	sink->progress_dataset = root;
	sink->data_dir = lp_require_memory(lp_path_join(root, LP_DATA_DIR));
	sink->max_rows_per_file = (uint64) max_rows_per_file;
	sink->version = version;
	sink->blobs = lp_blob_writer_create(sink->store, sink->what);
	if (blob_columns != NIL && mode == LP_WRITE_APPEND)
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("blob_columns is for modes create and overwrite"),
				errdetail("An append writes the dataset's own schema, whose Blob v2 columns it knows."));
	if (blob_columns != NIL && version < LP_FILE_VERSION_2_2)
		ereport(ERROR,
				errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				errmsg("Blob v2 columns need file version 2.2 or later, not %s",
					   lp_file_version_name(version)));
	sink->blob_columns = blob_columns;
	if (mode == LP_WRITE_APPEND)
	{
		/* appended files have the dataset's storage format and schema */
		if (!lp_manifest_data_version(*latest, &sink->version) ||
			sink->version == LP_FILE_VERSION_LEGACY)
			ereport(ERROR,
					errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					errmsg("dataset \"%s\" has data storage format %s, which cannot be written",
						   root, lp_manifest_data_format(*latest) ? lp_manifest_data_format(*latest) : "(none)"),
					errdetail("Only Lance 2.0 to 2.3 files are written."));
		sink->schema = palloc0(sizeof(LpSchema));
		if (!lp_manifest_schema(*latest, sink->schema, &err))
			lp_raise(&err);
	}
	return sink;
}

void
lp_write_dataset_run(const char *dataset_uri, const char *query, LpWriteMode mode,
					 LpFileVersion version, int64 max_rows_per_file, List *blob_columns,
					 LpWriteResult *result)
{
	char	   *root;
	LpStore    *store;
	LpManifest *latest;
	LpManifestNaming naming;
	WriteSink  *sink;

	(void) lp_store_for_write_uri(dataset_uri, "a Lance dataset", &root);
	lp_check_write_privilege_for(root);
	lp_check_read_privilege_for(root);
	store = lp_store_below(root);
	sink = dataset_sink(root, store, InvalidOid, mode, version, max_rows_per_file, blob_columns,
						&latest, &naming);

	/* an ERROR or a cancel before the publication removes the files published so far */
	PG_TRY();
	{
		write_query(query, sink);
		publish_dataset_write(sink, root, InvalidOid, mode, latest, naming, result);
	}
	PG_CATCH();
	{
		remove_written_files(sink, root);
		PG_RE_THROW();
	}
	PG_END_TRY();
}

/* ---- appends from the executor (inserts into lance_fdw tables) ----------------- */

struct LpDatasetAppend
{
	char	   *root;
	Oid			server;
	LpManifest *latest;
	LpManifestNaming naming;
	WriteSink  *sink;
	LpWriteStream *stream;
	bool		handed_over;	/* the files belong to a publication */
	MemoryContextCallback cleanup;
};

/* The statement ended before its files were handed over: nothing references them. */
static void
remove_unpublished_append(void *arg)
{
	LpDatasetAppend *append = arg;

	if (!append->handed_over)
		remove_written_files(append->sink, append->root);
	lp_pg_map_large_end();
}

LpDatasetAppend *
lp_dataset_append_begin(const char *root, Oid server, TupleDesc desc, bool in_order)
{
	LpDatasetAppend *append = palloc0(sizeof(LpDatasetAppend));

	append->root = pstrdup(root);
	append->server = server;
	append->sink = dataset_sink(append->root, lp_store_below_via(root, server), server,
								LP_WRITE_APPEND, LP_FILE_VERSION_2_2, 1048576, NIL,
								&append->latest, &append->naming);
	append->sink->in_order = in_order;
	lp_progress_begin(root, append->sink->data_dir, LP_PHASE_ENCODING, 0);
	lp_progress_phase(LP_PHASE_ENCODING, 0, 0, 0, 0);
	/* the page buffers are mapped apart while the statement writes (lp_pg_alloc.h) */
	lp_pg_map_large_begin();
	append->cleanup.func = remove_unpublished_append;
	append->cleanup.arg = append;
	MemoryContextRegisterResetCallback(CurrentMemoryContext, &append->cleanup);
	append->stream = stream_begin(append->sink, desc);
	return append;
}

void
lp_dataset_append_row(LpDatasetAppend *append, const Datum *values, const bool *nulls)
{
	stream_add(append->stream, values, nulls);
}

uint64
lp_dataset_append_finish(LpDatasetAppend *append)
{
	LpWriteResult result;

	stream_end(append->stream);
	publish_dataset_write(append->sink, append->root, append->server, LP_WRITE_APPEND,
						  append->latest, append->naming, &result);
	append->handed_over = true;
	return result.num_rows;
}

void
lp_dataset_append_end(LpDatasetAppend *append, LpNewFragment **fragments, size_t *n_fragments,
					  List **written)
{
	stream_end(append->stream);
	lp_progress_end();
	*fragments = new_fragments(append->sink, append->sink->schema);
	*n_fragments = list_length(append->sink->files);
	*written = written_paths(append->sink, append->root);
	append->handed_over = true;
}

Datum
lp_write_dataset(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	LpWriteResult result;
	List	   *blob_columns = NIL;
	Datum		values[3];
	bool		nulls[3] = {false, false, false};

	check_text_arg(fcinfo, 0, "dataset URI");
	check_text_arg(fcinfo, 1, "query");
	check_text_arg(fcinfo, 2, "mode");
	check_text_arg(fcinfo, 3, "file version");
	if (PG_ARGISNULL(4))
		ereport(ERROR,
				errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("max_rows_per_file must not be NULL"));
	if (!PG_ARGISNULL(5))
	{
		ArrayType  *names = PG_GETARG_ARRAYTYPE_P(5);
		Datum	   *elements;
		bool	   *element_nulls;
		int			count;

		lp_check_one_dimensional(names, "blob_columns");
		deconstruct_array(names, TEXTOID, -1, false, TYPALIGN_INT, &elements, &element_nulls, &count);
		for (int i = 0; i < count; i++)
		{
			if (element_nulls[i])
				ereport(ERROR,
						errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
						errmsg("blob_columns must not contain NULL"));
			blob_columns = lappend(blob_columns, makeString(TextDatumGetCString(elements[i])));
		}
	}
	InitMaterializedSRF(fcinfo, 0);
	lp_write_dataset_run(text_to_cstring(PG_GETARG_TEXT_PP(0)),
						 text_to_cstring(PG_GETARG_TEXT_PP(1)),
						 lp_write_mode(text_to_cstring(PG_GETARG_TEXT_PP(2))),
						 lp_write_file_version(text_to_cstring(PG_GETARG_TEXT_PP(3))),
						 PG_GETARG_INT64(4), blob_columns, &result);
	/* known once published */
	nulls[0] = !result.published;
	values[0] = Int64GetDatum((int64) result.dataset_version);
	values[1] = Int32GetDatum(result.fragments);
	values[2] = Int64GetDatum((int64) result.num_rows);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	return (Datum) 0;
}
