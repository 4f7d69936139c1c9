/*
 * lp_assemble.c - assembly of part files into one Lance data file, and the
 * raw SQL entry point concat_files.
 *
 * Every part is opened and validated before the output is created.  The
 * output is written under a temporary name in the destination directory,
 * fsynced and linked into place; on error or cancel the temporary file is
 * removed (explicitly, or by the output's memory-context callback when an
 * ERROR unwinds past it).
 */
#include "postgres.h"

#include <sys/stat.h>

#include "catalog/pg_type.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/tuplestore.h"

#include "lance_parts.h"
#include "lp_assemble.h"
#include "lp_concat.h"
#include "lp_pg_storage.h"

PG_FUNCTION_INFO_V1(lp_concat_files);

void
lp_assemble_emit(FunctionCallInfo fcinfo, const LpAssembleResult *result)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	bool		has_size = strcmp(result->status, "unsupported") != 0;
	Datum		values[6];
	bool		nulls[6] = {false, result->reason == NULL, false, false, !has_size, !has_size};

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
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

static bool
same_file(const char *a, const char *b)
{
	struct stat sa;
	struct stat sb;

	return stat(a, &sa) == 0 && stat(b, &sb) == 0 &&
		sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

void
lp_assemble_file(const char *output_path, List *parts,
				 const LpAssembleTarget *target, bool allow_reuse,
				 LpAssembleResult *result)
{
	int			num_parts = list_length(parts);
	LpConcatPart *concat_parts;
	LpInput   **inputs;
	LpConcatTarget concat_target;
	LpConcatVerdict verdict;
	LpConcatPlan *plan;
	LpOutput   *output;
	LpError		err;
	ListCell   *cell;
	int			i = 0;
	struct stat st;

	if (num_parts == 0)
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("no parts to assemble into \"%s\"", output_path));

	/* validate every part before anything is created */
	concat_parts = palloc0(sizeof(LpConcatPart) * num_parts);
	foreach(cell, parts)
	{
		LpAssemblePart *part = lfirst(cell);

		concat_parts[i].file = lp_read_lance_file(part->path);
		concat_parts[i].has_expected_rows = part->has_expected_rows;
		concat_parts[i].expected_rows = (uint64_t) part->expected_rows;
		i++;
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

	if (!lp_concat_plan(&concat_target, concat_parts, num_parts, &verdict, &plan, &err))
		lp_raise(&err);
	memset(result, 0, sizeof(*result));
	result->path = output_path;
	result->version = concat_target.version;
	if (verdict.reason != LP_CONCAT_COMPATIBLE)
	{
		result->message = palloc(1024);
		lp_concat_verdict_message(&verdict, concat_parts, result->message, 1024);
		result->status = "unsupported";
		result->reason = lp_concat_reason_name(verdict.reason);
		return;
	}
	result->num_rows = plan->num_rows;
	result->size_bytes = plan->output_size;

	if (allow_reuse && num_parts == 1 &&
		same_file(((LpAssemblePart *) linitial(parts))->path, output_path))
	{
		result->status = "reused";
		return;
	}
	if (lstat(output_path, &st) == 0)
		ereport(ERROR,
				errcode(ERRCODE_DUPLICATE_FILE),
				errmsg("file \"%s\" already exists", output_path),
				errhint("Assembly never replaces a file; choose another output or remove it."));

	inputs = palloc(sizeof(LpInput *) * num_parts);
	i = 0;
	foreach(cell, parts)
	{
		inputs[i] = lp_local_input_reopenable(((LpAssemblePart *) lfirst(cell))->path,
											  plan->input_sizes[i]);
		i++;
	}

	output = lp_local_store()->ops->create_output(lp_local_store(), output_path, &err);
	if (output == NULL)
		lp_raise(&err);
	if (!lp_concat_execute(plan, inputs, output, (size_t) lp_read_batch_bytes, &err))
	{
		output->ops->abort(output);
		lp_raise(&err);
	}
	if (!output->ops->publish(output, &err))
		lp_raise(&err);

	result->status = "written";
	for (i = 0; i < num_parts; i++)
		lp_input_close(inputs[i]);
	lp_concat_plan_free(plan);
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

	if (ARR_NDIM(uris) > 1)
		ereport(ERROR,
				errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				errmsg("part list must be a one-dimensional array"));
	deconstruct_array(uris, TEXTOID, -1, false, TYPALIGN_INT,
					  &uri_values, &uri_nulls, &num_uris);
	if (expected_rows != NULL)
	{
		if (ARR_NDIM(expected_rows) > 1)
			ereport(ERROR,
					errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
					errmsg("expected row counts must be a one-dimensional array"));
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
		part->path = lp_local_path_from_uri(TextDatumGetCString(uri_values[i]));
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
	LpAssembleTarget target = {LP_FILE_VERSION_2_0, NULL};
	LpAssembleResult result;

	InitMaterializedSRF(fcinfo, 0);
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("output and inputs of concat_files must not be NULL"));
	lp_check_read_privilege();
	lp_check_write_privilege();
	output_path = lp_local_path_from_uri(text_to_cstring(PG_GETARG_TEXT_PP(0)));
	parts = lp_parts_from_arrays(PG_GETARG_ARRAYTYPE_P(1),
								 PG_ARGISNULL(2) ? NULL : PG_GETARG_ARRAYTYPE_P(2));
	lp_assemble_file(output_path, parts, &target, true, &result);
	lp_assemble_emit(fcinfo, &result);
	return (Datum) 0;
}
