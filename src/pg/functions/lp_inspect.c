/*
 * lp_inspect.c - SQL functions that show a Lance file's footer, schema and
 * pages: file_info, file_schema, file_pages.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/tuplestore.h"

#include "base/lp_checked.h"
#include "base/lp_json.h"
#include "store/lp_pg_storage.h"

PG_FUNCTION_INFO_V1(lp_file_info);
PG_FUNCTION_INFO_V1(lp_file_schema);
PG_FUNCTION_INFO_V1(lp_file_pages);

static Datum
metadata_to_jsonb(const LpKeyValue *metadata, uint32_t count)
{
	StringInfoData json;

	initStringInfo(&json);
	lp_json_append_metadata(&json, metadata, count);
	return DirectFunctionCall1(jsonb_in, CStringGetDatum(json.data));
}

/* Legacy (v1) files have a schema but no v2 column metadata or pages. */
static void
refuse_legacy(const LpFile *file, const char *function)
{
	if (file->version == LP_FILE_VERSION_LEGACY)
		ereport(ERROR,
				errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				errmsg("file \"%s\" uses the legacy Lance format", file->name),
				errdetail("%s reads files of format version 2.0 and later.", function));
}

Datum
lp_file_info(PG_FUNCTION_ARGS)
{
	char	   *uri = text_to_cstring(PG_GETARG_TEXT_PP(0));
	LpFile	   *file = lp_open_lance_file(uri);
	TupleDesc	tupdesc;
	Datum		values[5];
	bool		nulls[5] = {false, false, false, false, false};
	bool		legacy = file->version == LP_FILE_VERSION_LEGACY;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");

	values[0] = CStringGetTextDatum(lp_file_version_name(file->version));
	values[1] = Int64GetDatum((int64) file->num_rows);
	values[2] = Int32GetDatum((int32) file->num_columns);
	values[3] = Int32GetDatum((int32) file->num_global_buffers);
	values[4] = Int64GetDatum((int64) file->file_size);
	nulls[1] = nulls[2] = nulls[3] = legacy;

	lp_file_free(file);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

Datum
lp_file_schema(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *uri = text_to_cstring(PG_GETARG_TEXT_PP(0));
	LpFile	   *file;

	InitMaterializedSRF(fcinfo, 0);
	file = lp_open_lance_file(uri);

	for (uint32_t i = 0; i < file->schema.num_fields; i++)
	{
		const LpField *field = &file->schema.fields[i];
		Datum		values[6];
		bool		nulls[6] = {false, false, false, false, false, false};

		values[0] = Int32GetDatum(field->id);
		values[1] = Int32GetDatum(field->parent_id);
		values[2] = CStringGetTextDatum(field->name);
		values[3] = CStringGetTextDatum(field->logical_type);
		values[4] = BoolGetDatum(field->nullable);
		values[5] = metadata_to_jsonb(field->metadata, field->num_metadata);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}

	lp_file_free(file);
	return (Datum) 0;
}

Datum
lp_file_pages(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *uri = text_to_cstring(PG_GETARG_TEXT_PP(0));
	LpFile	   *file;

	InitMaterializedSRF(fcinfo, 0);
	file = lp_open_lance_file(uri);
	refuse_legacy(file, "file_pages");

	for (uint32_t c = 0; c < file->num_columns; c++)
	{
		const LpColumn *column = &file->columns[c];

		for (uint32_t p = 0; p < column->num_pages; p++)
		{
			const LpPage *page = &column->pages[p];
			Datum		values[7];
			bool		nulls[7] = {false, false, false, false, false, false, false};
			uint64_t	buffer_bytes = 0;

			for (uint32_t b = 0; b < page->num_buffers; b++)
				if (!lp_add_u64(buffer_bytes, page->buffers[b].size, &buffer_bytes) ||
					buffer_bytes > (uint64_t) PG_INT64_MAX)
					ereport(ERROR,
							errcode(ERRCODE_DATA_CORRUPTED),
							errmsg("buffers of page %u of column %u of file \"%s\" add up to more than %lld bytes",
								   p, c, file->name, (long long) PG_INT64_MAX));

			values[0] = Int32GetDatum((int32) c);
			values[1] = Int32GetDatum((int32) p);
			values[2] = Int64GetDatum((int64) page->num_rows);
			values[3] = Int64GetDatum((int64) page->priority);
			values[4] = Int32GetDatum((int32) page->num_buffers);
			values[5] = Int64GetDatum((int64) buffer_bytes);
			values[6] = CStringGetTextDatum(page->layout);
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
	}

	lp_file_free(file);
	return (Datum) 0;
}
