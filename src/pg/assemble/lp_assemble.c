/*
 * lp_assemble.c - assembly of part files into one Lance data file, in three
 * phases, and the raw SQL entry point concat_files.
 *
 * Every part is opened and validated before the output is created
 * (lp_assemble_validate); parts that cannot be joined by page copy, or
 * that have deletions, are re-encoded when the caller allows it
 * (lp_assemble_reencode); the plan of the result is then written and
 * published (lp_assemble_write).  This file orders the phases and gives
 * the result.
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
#include "assemble/lp_assemble_reencode.h"
#include "assemble/lp_assemble_validate.h"
#include "assemble/lp_assemble_write.h"
#include "assemble/lp_progress.h"
#include "base/lp_pg_error.h"
#include "base/lp_sql_args.h"
#include "format/lp_columns.h"
#include "reencode/lp_reencode.h"
#include "store/lp_pg_storage.h"

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

/* Whether schema has a Blob v2 field. */
static bool
has_blob_v2(const LpSchema *schema)
{
	for (uint32_t f = 0; f < schema->num_fields; f++)
		if (lp_field_is_blob_v2(&schema->fields[f]))
			return true;
	return false;
}

/*
 * The verdict's message, naming its part by its position among those given
 * (re-encoding several parts into one shifts the others in inputs).
 */
static char *
verdict_message(const LpConcatVerdict *verdict, const LpAssembleInputs *inputs,
				const LpAssembleReencoder *reencoder, int num_given)
{
	LpConcatVerdict named = *verdict;
	LpConcatPart *parts = palloc0(sizeof(LpConcatPart) * num_given);
	char	   *message = palloc(1024);

	if (verdict->input != LP_CONCAT_NONE)
	{
		named.input = (uint32_t) (lp_assemble_reencoder_position(reencoder, (int) verdict->input) - 1);
		parts[named.input] = inputs->parts[verdict->input];
	}
	lp_concat_verdict_message(&named, parts, message, 1024);
	return message;
}

void
lp_assemble_file(const char *output_path, List *parts,
				 const LpAssembleTarget *target, bool allow_reuse,
				 LpAssembleResult *result)
{
	int			num_parts = list_length(parts);
	LpAssembleInputs inputs;
	LpAssembleReencoder *reencoder;
	const LpDeletions **deletions = palloc(sizeof(LpDeletions *) * Max(num_parts, 1));
	LpConcatVerdict verdict;
	LpConcatPlan *plan;
	LpError		err;
	ListCell   *cell;
	int			i;
	LpStore    *store = lp_store_for_uri_below(target->root, output_path, NULL);
	LpStat		st;
	bool		joins_runs;
	LpAssembleRun *runs = palloc(sizeof(LpAssembleRun) * Max(num_parts, 1));
	int			num_runs = 0;
	instr_time	started;

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
	lp_assemble_validate(parts, target, &inputs);

	memset(result, 0, sizeof(*result));
	result->path = output_path;
	result->version = inputs.target.version;
	reencoder = lp_assemble_reencoder_start(target, num_parts);

	/* parts with deletions: their live rows only */
	i = 0;
	foreach(cell, parts)
	{
		LpAssemblePart *part = lfirst(cell);

		deletions[i] = part->deletions;
		if (part->deletions != NULL)
		{
			if (!lp_assemble_can_reencode(reencoder))
				elog(ERROR, "part with deletions assembled without a re-encode directory");
			if (part->has_expected_rows &&
				inputs.parts[i].file->num_rows != (uint64) part->expected_rows)
				ereport(ERROR,
						errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("part %d (\"%s\") has " UINT64_FORMAT " rows, but " INT64_FORMAT " were expected",
							   i + 1, part->path, inputs.parts[i].file->num_rows,
							   part->expected_rows));
		}
		i++;
	}

	/*
	 * Each run of them as one file: one table of FSST symbols per page, not
	 * per part, and one file to sync.  Blob v2 parts one by one: their blob
	 * ids and sidecars are their own file's.
	 */
	joins_runs = !has_blob_v2(inputs.target.schema);
	for (int k = 0; k < num_parts; k++)
	{
		if (deletions[k] == NULL)
			continue;
		if (joins_runs && num_runs > 0 && runs[num_runs - 1].first + runs[num_runs - 1].count == k)
			runs[num_runs - 1].count++;
		else
			runs[num_runs++] = (LpAssembleRun) {k, 1};
	}
	if (num_runs > 0)
		lp_assemble_reencode_runs(reencoder, &inputs, runs, num_runs, deletions);

	/* plan; with a re-encode directory, re-encode the part each verdict names until none is left */
	for (;;)
	{
		uint64		alignment;
		int			r;

		alignment = target->replaced_columns != NULL ? 0 :
			lp_assemble_clone_alignment(store, &inputs, output_path);
		plan = lp_assemble_plan(&inputs, alignment, &verdict);
		if (verdict.reason == LP_CONCAT_COMPATIBLE || !lp_assemble_can_reencode(reencoder) ||
			!lp_concat_reason_reencodable(&verdict) ||
			(r = lp_assemble_part_to_reencode(reencoder, &verdict)) < 0)
			break;
		if (!lp_reencode_check(inputs.parts[r].file, inputs.target.schema, &err))
		{
			/* rows that do not fit the schema stay unsupported, with the reason */
			result->message = psprintf("%s; it cannot be re-encoded: %s",
									   verdict_message(&verdict, &inputs, reencoder, num_parts),
									   err.message);
			result->status = "unsupported";
			result->reason = lp_concat_reason_name(verdict.reason);
			result->reencoded = lp_assemble_reencoded_positions(reencoder);
			lp_assemble_reencoder_end(reencoder);
			lp_progress_end();
			return;
		}
		{
			LpAssembleRun run = {r, 1};

			lp_assemble_reencode_runs(reencoder, &inputs, &run, 1, NULL);
		}
	}
	result->reencoded = lp_assemble_reencoded_positions(reencoder);
	list_sort(result->reencoded, list_int_cmp);
	if (verdict.reason != LP_CONCAT_COMPATIBLE)
	{
		result->message = verdict_message(&verdict, &inputs, reencoder, num_parts);
		result->status = "unsupported";
		result->reason = lp_concat_reason_name(verdict.reason);
		lp_assemble_reencoder_end(reencoder);
		lp_progress_end();
		return;
	}
	result->num_rows = plan->num_rows;

	if (allow_reuse && inputs.num_parts == 1 && !lp_assemble_reencoded(reencoder, 0) &&
		lp_store_for_uri_below(target->root, inputs.paths[0], NULL) == store &&
		store->ops->same_object(store, inputs.paths[0], output_path))
	{
		result->status = "reused";
		result->size_bytes = inputs.parts[0].file->file_size;
		lp_progress_end();
		return;
	}
	/* a path that cannot be examined is left to create_output to report */
	if (store->ops->stat(store, output_path, false, &st, &err) && st.kind != LP_OBJECT_ABSENT)
		ereport(ERROR,
				errcode(ERRCODE_DUPLICATE_FILE),
				errmsg("file \"%s\" already exists", output_path),
				errhint("Assembly never replaces a file; choose another output or remove it."));

	result->size_bytes = lp_assemble_write(store, output_path, &inputs, plan, started);
	lp_progress_end();
	result->status = "written";
	lp_assemble_reencoder_end(reencoder);
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
