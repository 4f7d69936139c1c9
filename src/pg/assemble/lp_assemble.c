/*
 * lp_assemble.c - assembly of part files into one Lance data file, and the
 * raw SQL entry point concat_files.
 *
 * Every part is opened and validated before the output is created.  The
 * output is written under a temporary name in the destination directory,
 * fsynced and linked into place; on error or cancel the temporary file is
 * removed (explicitly, or by the output's memory-context callback when an
 * ERROR unwinds past it).  The data region is copied by lp_copy (parallel
 * workers); the leader writes the tail last.
 *
 * With a re-encode directory, a part that cannot be joined by page copy
 * (a verdict lp_concat_reason_reencodable accepts) or that has deletions is
 * decoded and written again as a file of the target's version and schema
 * in that directory (reencode/lp_reencode.h), and the assembly joins that
 * file instead; the re-encoded files are removed when the assembly ends,
 * also after an ERROR.
 *
 * When the destination filesystem shares extents (XFS with reflink, btrfs)
 * and every part lives on it, each part's data region is placed at a block
 * boundary so that the kernel clones it instead of copying: assembly then
 * costs metadata writes only.  The first clone is tried before the copy; if
 * the filesystem refuses it, the packed layout is planned instead.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "portability/instr_time.h"
#include "utils/lsyscache.h"
#include "utils/tuplestore.h"

#include "miscadmin.h"

#include "assemble/lp_assemble.h"
#include "base/lp_interrupt.h"
#include "concat/lp_concat.h"
#include "concat/lp_concat_parts.h"
#include "format/lp_file_tail.h"
#include "assemble/lp_copy.h"
#include "lp_pg_error.h"
#include "store/lp_pg_storage.h"
#include "assemble/lp_progress.h"
#include "lp_sql_args.h"
#include "reencode/lp_reencode.h"

PG_FUNCTION_INFO_V1(lp_concat_files);

bool
lp_parse_on_unsupported(const char *value)
{
	if (strcmp(value, "reencode") == 0)
		return true;
	if (strcmp(value, "refuse") != 0)
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("on_unsupported must be 'refuse' or 'reencode', not \"%s\"", value));
	return false;
}

void
lp_assemble_emit(FunctionCallInfo fcinfo, const LpAssembleResult *result)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	bool		has_size = strcmp(result->status, "unsupported") != 0;
	Datum		values[7];
	bool		nulls[7] = {false, result->reason == NULL, false, false, !has_size, !has_size, false};

	if (result->message != NULL)
		ereport(NOTICE,
				errmsg("parts cannot be concatenated into \"%s\": %s",
					   result->path, result->message));
	values[0] = CStringGetTextDatum(result->status);
	values[1] = result->reason ? CStringGetTextDatum(result->reason) : (Datum) 0;
	values[2] = CStringGetTextDatum(result->path);
	values[3] = CStringGetTextDatum(lp_file_version_name(result->version));
	values[4] = Int64GetDatum((int64) result->num_rows);
	values[5] = Int64GetDatum((int64) result->size_bytes);
	if (rsinfo->setDesc->natts > 6)
	{
		int			n = list_length(result->reencoded);
		Datum	   *positions = palloc(sizeof(Datum) * Max(n, 1));
		int			k = 0;
		ListCell   *cell;

		foreach(cell, result->reencoded)
			positions[k++] = Int32GetDatum(lfirst_int(cell));
		values[6] = PointerGetDatum(construct_array(positions, n, INT4OID, 4, true, TYPALIGN_INT));
	}
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/*
 * The block size at which the output's store can clone every part's data
 * region into place, or 0: the parts must be in the output's store, and a
 * block must keep the page buffers' alignment.
 */
static uint64
clone_alignment(LpStore *store, const char *root, const char *output_path,
				const char *const *paths, int num_parts)
{
	uint64		block;

	if (store->ops->clone_alignment == NULL)
		return 0;
	for (int i = 0; i < num_parts; i++)
		if (lp_store_for_uri_below(root, paths[i], NULL) != store)
			return 0;
	block = store->ops->clone_alignment(store, output_path, paths, num_parts);
	return block < LP_PAGE_BUFFER_ALIGNMENT ? 0 : block;
}

/*
 * Clone the first block of the plan's first whole region into place: true
 * if the filesystem can clone between these files, so the region plan pays.
 */
static bool
first_region_clones(const LpConcatPlan *plan, LpInput *const *inputs, LpOutput *output)
{
	for (size_t r = 0; r < plan->num_ranges; r++)
	{
		const LpCopyRange *range = &plan->ranges[r];

		if (range->source_offset == 0 && range->dest_offset % plan->region_alignment == 0 &&
			range->length >= plan->region_alignment)
			return output->ops->clone_range != NULL &&
				output->ops->clone_range(output, range->dest_offset, inputs[range->input],
										 0, plan->region_alignment);
	}
	return false;
}

/*
 * Write the whole output as the upload parts of a multipart output (object
 * storage): the parts' data regions copied on the server where they are in
 * the output's store, only the rest (the tail, short parts, padding no part
 * covers) sent.  False, with nothing written, when no layout fits the
 * output's part limits; the caller then copies as for any output.
 */
static bool
write_upload_parts(const LpConcatPlan *plan, const char *const *paths, LpInput *const *inputs,
				   LpOutput *output)
{
	LpUploadParts *parts;
	LpError		err;
	uint64		sent = 0;

	if (!lp_concat_upload_parts(plan, output->multipart, &parts, &err))
	{
		if (err.code != LP_ERR_UNSUPPORTED)
			lp_raise(&err);
		ereport(DEBUG1,
				errmsg_internal("no upload layout for \"%s\": %s", output->name, err.message));
		return false;
	}
	if (!lp_copy_numbered_parts(plan, parts, paths, inputs, output))
	{
		lp_progress_phase(LP_PHASE_COPYING, 0, 0, (int64) plan->output_size, 0);
		if (!lp_concat_write_upload_parts(plan, parts, inputs, output,
										  (size_t) lp_read_batch_bytes, &err))
			lp_raise(&err);
	}
	for (size_t p = 0; p < parts->num_parts; p++)
		if (parts->parts[p].kind == LP_UPLOAD_PART_SEND)
			sent += parts->parts[p].length;
	ereport(DEBUG1,
			errmsg_internal("wrote \"%s\" as %zu upload parts: " UINT64_FORMAT " bytes laid out as server-side copies, " UINT64_FORMAT " bytes sent",
							output->name, parts->num_parts, plan->output_size - sent, sent));
	lp_concat_upload_parts_free(parts);
	lp_progress_phase(LP_PHASE_FINALIZING, (int) plan->num_inputs, (int64) plan->output_size,
					  (int64) plan->output_size, 0);
	return true;
}

static LpConcatPlan *
plan_or_raise(const LpConcatTarget *target, const LpConcatPart *parts, int num_parts,
			  uint64 alignment, LpConcatVerdict *verdict)
{
	LpConcatPlan *plan;
	LpError		err;
	bool		ok;

	if (alignment > 0)
		ok = lp_concat_plan_regions(target, parts, num_parts, alignment, verdict, &plan, &err);
	else
		ok = lp_concat_plan(target, parts, num_parts, verdict, &plan, &err);
	if (!ok)
		lp_raise(&err);
	return plan;
}

/* The re-encoded files of an assembly, removed when it ends. */
typedef struct ReencodedFiles
{
	MemoryContextCallback callback;
	LpStore    *store;
	List	   *paths;
	const char *dir;			/* removed too (when empty), or NULL */
} ReencodedFiles;

/*
 * Remove the re-encoded files (and the owned directory); problems are
 * WARNINGs (this also runs during abort).
 */
static void
remove_reencoded_files(void *arg)
{
	ReencodedFiles *files = arg;
	ListCell   *cell;

	foreach(cell, files->paths)
	{
		LpError		err;

		if (!files->store->ops->remove(files->store, lfirst(cell), &err) &&
			err.code != LP_ERR_NOT_FOUND)
			ereport(WARNING,
					errmsg("could not remove re-encoded part \"%s\": %s",
						   (char *) lfirst(cell), err.message));
	}
	files->paths = NIL;
	if (files->dir != NULL)
	{
		LpError		err;

		if (!files->store->ops->remove(files->store, files->dir, &err) &&
			err.code != LP_ERR_NOT_FOUND)
			ereport(WARNING,
					errmsg("could not remove directory \"%s\": %s", files->dir, err.message));
		files->dir = NULL;
	}
}

/* Progress of re-encoding: source bytes, pro rata of the rows written. */
typedef struct ReencodeProgress
{
	int64		bytes_before;	/* bytes of the parts re-encoded before this one */
	uint64		file_size;		/* bytes of the part being re-encoded */
	int			parts_done;
} ReencodeProgress;

static void
report_reencode_progress(void *arg, uint64_t rows_done, uint64_t rows_total)
{
	ReencodeProgress *progress = arg;
	double		fraction = rows_total > 0 ? (double) rows_done / rows_total : 1.0;

	lp_progress_update(progress->parts_done,
					   progress->bytes_before + (int64) (fraction * progress->file_size));
}

/*
 * Re-encode part `index` (its file, at source_path) as a file of the target
 * into the re-encode directory; returns the new file's path, registered in
 * files for removal.
 */
static char *
reencode_part(const char *source_path, const LpFile *file,
			  const LpDeletions *deletions, const LpConcatTarget *target, int index,
			  ReencodedFiles *files, const char *dir, const char *root,
			  ReencodeProgress *progress)
{
	char	   *path;
	char	   *source_key;
	LpStore    *source_store = lp_store_for_uri_below(root, source_path, &source_key);
	LpReencodeSource source = {0};
	LpReencodeOptions options = {0, report_reencode_progress, progress, false, 0};
	LpOutput   *output;
	LpInput    *input;
	LpError		err;
	LpStat		st;
	uint64		rows;
	uint64		size;

	/* a name nothing in the directory has (a part, or what a crash left) */
	path = psprintf("%s/reencoded-%d.lance", dir, index + 1);
	for (int attempt = 1;
		 files->store->ops->stat(files->store, path, false, &st, &err) && st.kind != LP_OBJECT_ABSENT;
		 attempt++)
		path = psprintf("%s/reencoded-%d-%d.lance", dir, index + 1, attempt);
	input = source_store->ops->open_input(source_store, source_key, &err);
	if (input == NULL)
		lp_raise(&err);
	output = files->store->ops->create_output(files->store, path, &err);
	if (output == NULL)
		lp_raise(&err);
	source.input = input;
	source.file = file;
	source.deletions = deletions;
	progress->file_size = file->file_size;
	if (!lp_reencode(&source, target->schema, target->version, output, &options, &rows,
					 &size, &err))
	{
		LpError		named;

		output->ops->abort(output);
		lp_input_close(input);
		lp_fail(&named, err.code, "part %d (\"%s\") cannot be re-encoded: %s", index + 1,
				source_path, err.message);
		if (err.detail[0] != '\0')
			lp_error_detail(&named, "%s", err.detail);
		lp_raise(&named);
	}
	lp_input_close(input);
	/* registered before it can exist, so that an ERROR from here on removes it */
	files->paths = lappend(files->paths, path);
	if (!output->ops->publish(output, &err))
		lp_raise(&err);
	progress->bytes_before += (int64) file->file_size;
	progress->parts_done++;
	ereport(DEBUG1,
			errmsg_internal("re-encoded part %d (\"%s\") as \"%s\": " UINT64_FORMAT " rows, " UINT64_FORMAT " bytes",
							index + 1, source_path, path, rows, size));
	return path;
}

/*
 * The part to re-encode for a verdict: the part it names, or when that one
 * was re-encoded already (its encoding differs from part 0's, which is
 * another writer's), the first part not re-encoded yet; -1 when every part
 * was.
 */
static int
part_to_reencode(const LpConcatVerdict *verdict, const bool *reencoded, int num_parts)
{
	if (!reencoded[verdict->input])
		return (int) verdict->input;
	for (int i = 0; i < num_parts; i++)
		if (!reencoded[i])
			return i;
	return -1;
}

void
lp_assemble_file(const char *output_path, List *parts,
				 const LpAssembleTarget *target, bool allow_reuse,
				 LpAssembleResult *result)
{
	int			num_parts = list_length(parts);
	LpConcatPart *concat_parts;
	const char **paths;
	LpInput   **inputs;
	LpConcatTarget concat_target = {0};
	LpConcatVerdict verdict;
	LpConcatPlan *plan;
	LpOutput   *output;
	LpError		err;
	ListCell   *cell;
	int			i = 0;
	LpStore    *store = lp_store_for_uri_below(target->root, output_path, NULL);
	LpStat		st;
	instr_time	started;
	instr_time	elapsed;
	bool	   *reencoded;
	ReencodedFiles *files = NULL;
	ReencodeProgress reencode_progress = {0, 0, 0};
	uint64		alignment;

	if (num_parts == 0)
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("no parts to assemble into \"%s\"", output_path));

	foreach(cell, parts)
		lp_check_read_privilege_for(((LpAssemblePart *) lfirst(cell))->path);
	lp_check_write_privilege_for(output_path);
	lp_progress_begin(target->dataset, output_path, LP_PHASE_VALIDATING, num_parts);
	INSTR_TIME_SET_CURRENT(started);

	/* validate every part before anything is created */
	concat_parts = palloc0(sizeof(LpConcatPart) * num_parts);
	/* one more for a donor */
	paths = palloc(sizeof(char *) * (num_parts + 1));
	paths[num_parts] = target->donor_path;
	foreach(cell, parts)
	{
		LpAssemblePart *part = lfirst(cell);

		paths[i] = part->path;
		concat_parts[i].file = lp_read_lance_file_below(target->root, part->path);
		concat_parts[i].has_expected_rows = part->has_expected_rows;
		concat_parts[i].expected_rows = (uint64_t) part->expected_rows;
		i++;
		lp_progress_update(i, 0);
	}

	if (target->schema != NULL)
	{
		concat_target.version = target->version;
		concat_target.schema = target->schema;
	}
	else
	{
		concat_target.version = concat_parts[0].file->version;
		concat_target.schema = &concat_parts[0].file->schema;
	}
	concat_target.blob_ids_leased = target->blob_ids_leased;
	concat_target.replaced = target->replaced_columns;
	if (target->donor_path != NULL)
		concat_target.donor = lp_read_lance_file_below(target->root, target->donor_path);

	memset(result, 0, sizeof(*result));
	result->path = output_path;
	result->version = concat_target.version;
	reencoded = palloc0(sizeof(bool) * num_parts);
	if (target->reencode_dir != NULL)
	{
		files = palloc0(sizeof(ReencodedFiles));
		files->store = lp_store_for_uri_below(target->root, target->reencode_dir, NULL);
		files->dir = target->reencode_dir_owned ? target->reencode_dir : NULL;
		files->callback.func = remove_reencoded_files;
		files->callback.arg = files;
		MemoryContextRegisterResetCallback(CurrentMemoryContext, &files->callback);
	}

	/* parts with deletions: their live rows only */
	i = 0;
	foreach(cell, parts)
	{
		LpAssemblePart *part = lfirst(cell);

		if (part->deletions != NULL)
		{
			if (files == NULL)
				elog(ERROR, "part with deletions assembled without a re-encode directory");
			if (part->has_expected_rows &&
				concat_parts[i].file->num_rows != (uint64) part->expected_rows)
				ereport(ERROR,
						errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("part %d (\"%s\") has " UINT64_FORMAT " rows, but " INT64_FORMAT " were expected",
							   i + 1, part->path, concat_parts[i].file->num_rows,
							   part->expected_rows));
			lp_progress_phase(LP_PHASE_REENCODING, reencode_progress.parts_done,
							  reencode_progress.bytes_before, 0, 0);
			paths[i] = reencode_part(part->path, concat_parts[i].file,
									 part->deletions, &concat_target, i, files,
									 target->reencode_dir, target->root, &reencode_progress);
			concat_parts[i].file = lp_read_lance_file_below(target->root, paths[i]);
			concat_parts[i].has_expected_rows = false;
			reencoded[i] = true;
			result->reencoded = lappend_int(result->reencoded, i + 1);
		}
		i++;
	}

	/* plan; with a re-encode directory, re-encode the part each verdict names until none is left */
	for (;;)
	{
		int			r;

		alignment = target->replaced_columns != NULL ? 0 :
			clone_alignment(store, target->root, output_path, paths, num_parts);
		plan = plan_or_raise(&concat_target, concat_parts, num_parts, alignment, &verdict);
		if (verdict.reason == LP_CONCAT_COMPATIBLE || files == NULL ||
			!lp_concat_reason_reencodable(&verdict) ||
			(r = part_to_reencode(&verdict, reencoded, num_parts)) < 0)
			break;
		if (!lp_reencode_check(concat_parts[r].file, concat_target.schema, &err))
		{
			char		message[1024];

			/* rows that do not fit the schema stay unsupported, with the reason */
			lp_concat_verdict_message(&verdict, concat_parts, message, sizeof(message));
			result->message = psprintf("%s; it cannot be re-encoded: %s", message, err.message);
			result->status = "unsupported";
			result->reason = lp_concat_reason_name(verdict.reason);
			remove_reencoded_files(files);
			lp_progress_end();
			return;
		}
		lp_progress_phase(LP_PHASE_REENCODING, reencode_progress.parts_done,
						  reencode_progress.bytes_before, 0, 0);
		paths[r] = reencode_part(paths[r], concat_parts[r].file, NULL,
								 &concat_target, r, files, target->reencode_dir, target->root,
								 &reencode_progress);
		concat_parts[r].file = lp_read_lance_file_below(target->root, paths[r]);
		concat_parts[r].has_expected_rows = false;
		reencoded[r] = true;
		result->reencoded = lappend_int(result->reencoded, r + 1);
	}
	list_sort(result->reencoded, list_int_cmp);
	if (verdict.reason != LP_CONCAT_COMPATIBLE)
	{
		result->message = palloc(1024);
		lp_concat_verdict_message(&verdict, concat_parts, result->message, 1024);
		result->status = "unsupported";
		result->reason = lp_concat_reason_name(verdict.reason);
		if (files != NULL)
			remove_reencoded_files(files);
		lp_progress_end();
		return;
	}
	result->num_rows = plan->num_rows;

	if (allow_reuse && num_parts == 1 && !reencoded[0] &&
		lp_store_for_uri_below(target->root, paths[0], NULL) == store &&
		store->ops->same_object(store, paths[0], output_path))
	{
		result->status = "reused";
		result->size_bytes = concat_parts[0].file->file_size;
		lp_progress_end();
		return;
	}
	/* a path that cannot be examined is left to create_output to report */
	if (store->ops->stat(store, output_path, false, &st, &err) && st.kind != LP_OBJECT_ABSENT)
		ereport(ERROR,
				errcode(ERRCODE_DUPLICATE_FILE),
				errmsg("file \"%s\" already exists", output_path),
				errhint("Assembly never replaces a file; choose another output or remove it."));

	inputs = palloc(sizeof(LpInput *) * plan->num_inputs);
	for (i = 0; i < (int) plan->num_inputs; i++)
	{
		char	   *key;
		LpStore    *part_store = lp_store_for_uri_below(target->root, paths[i], &key);

		inputs[i] = part_store->ops->open_input_lazily(part_store, key, plan->input_sizes[i],
													   &err);
		if (inputs[i] == NULL)
			lp_raise(&err);
	}

	output = store->ops->create_output(store, output_path, &err);
	if (output == NULL)
		lp_raise(&err);
	if (plan->region_alignment > 0 && !first_region_clones(plan, inputs, output))
	{
		lp_concat_plan_free(plan);
		plan = plan_or_raise(&concat_target, concat_parts, num_parts, 0, &verdict);
	}
	INSTR_TIME_SET_CURRENT(elapsed);
	INSTR_TIME_SUBTRACT(elapsed, started);
	ereport(DEBUG1,
			errmsg_internal("validated and planned %d parts of \"%s\" in %.3f ms",
							num_parts, output_path, INSTR_TIME_GET_MILLISEC(elapsed)));

	if (output->multipart == NULL || !write_upload_parts(plan, paths, inputs, output))
	{
		lp_copy_data_region(plan, target->root, paths, inputs, output);
		lp_progress_phase(LP_PHASE_FINALIZING, num_parts, (int64) plan->tail.start,
						  (int64) plan->output_size, 0);
		if (!lp_concat_write_tail(plan, output, &err))
		{
			output->ops->abort(output);
			lp_raise(&err);
		}
	}
	if (!output->ops->publish(output, &err))
		lp_raise(&err);
	lp_progress_end();

	result->status = "written";
	result->size_bytes = plan->output_size;
	for (i = 0; i < (int) plan->num_inputs; i++)
		lp_input_close(inputs[i]);
	lp_concat_plan_free(plan);
	if (files != NULL)
		remove_reencoded_files(files);
}

char *
lp_file_incompatibility(LpFileVersion version, const LpSchema *schema,
						bool blob_ids_leased, const LpFile *file,
						bool has_expected_rows, uint64_t expected_rows, int *reason)
{
	LpConcatTarget target = {version, schema, blob_ids_leased, NULL, NULL};
	LpConcatPart part = {file, has_expected_rows, expected_rows};
	LpConcatVerdict verdict;
	LpError		err;
	char		message[1024];

	if (!lp_concat_check(&target, &part, 1, &verdict, &err))
		lp_raise(&err);
	*reason = verdict.reason;
	if (verdict.reason == LP_CONCAT_COMPATIBLE)
		return NULL;
	lp_concat_verdict_message(&verdict, &part, message, sizeof(message));
	return psprintf("%s (%s).", message, lp_concat_reason_name(verdict.reason));
}

List *
lp_parts_from_arrays(ArrayType *uris, ArrayType *expected_rows)
{
	Datum	   *uri_values;
	bool	   *uri_nulls;
	int			num_uris;
	Datum	   *row_values = NULL;
	bool	   *row_nulls = NULL;
	int			num_rows = 0;
	List	   *parts = NIL;

	lp_check_one_dimensional(uris, "part list");
	deconstruct_array(uris, TEXTOID, -1, false, TYPALIGN_INT,
					  &uri_values, &uri_nulls, &num_uris);
	if (expected_rows != NULL)
	{
		lp_check_one_dimensional(expected_rows, "expected row counts");
		deconstruct_array(expected_rows, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE,
						  &row_values, &row_nulls, &num_rows);
		if (num_rows != num_uris)
			ereport(ERROR,
					errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					errmsg("%d expected row counts given for %d parts", num_rows, num_uris),
					errhint("Give one count per part, or NULL for a part whose count is not checked."));
	}

	for (int i = 0; i < num_uris; i++)
	{
		LpAssemblePart *part = palloc0(sizeof(LpAssemblePart));

		if (uri_nulls[i])
			ereport(ERROR,
					errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					errmsg("part %d is NULL", i + 1));
		(void) lp_store_for_uri(TextDatumGetCString(uri_values[i]), &part->path);
		if (row_values != NULL && !row_nulls[i])
		{
			part->has_expected_rows = true;
			part->expected_rows = DatumGetInt64(row_values[i]);
			if (part->expected_rows < 0)
				ereport(ERROR,
						errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("expected row count of part %d must not be negative", i + 1));
		}
		parts = lappend(parts, part);
	}
	return parts;
}

Datum
lp_concat_files(PG_FUNCTION_ARGS)
{
	char	   *output_path;
	List	   *parts;
	LpAssembleTarget target = {LP_FILE_VERSION_2_0, NULL, NULL, NULL, false, false, NULL};
	LpAssembleResult result;

	InitMaterializedSRF(fcinfo, 0);
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("output and inputs of concat_files must not be NULL"));
	/* privileges: per file, in lp_assemble_file */
	(void) lp_store_for_write_uri(text_to_cstring(PG_GETARG_TEXT_PP(0)),
								  "the output of concat_files", &output_path);
	parts = lp_parts_from_arrays(PG_GETARG_ARRAYTYPE_P(1),
								 PG_ARGISNULL(2) ? NULL : PG_GETARG_ARRAYTYPE_P(2));
	lp_assemble_file(output_path, parts, &target, true, &result);
	lp_assemble_emit(fcinfo, &result);
	return (Datum) 0;
}
