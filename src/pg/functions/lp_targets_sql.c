/*
 * lp_targets_sql.c - SQL functions around targets: create_target,
 * register_part, registered_parts, clear_parts, assemble and staging_dir.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/tuplestore.h"

#include "assemble/lp_assemble.h"
#include "assemble/lp_assemble_validate.h"
#include "write/lp_publication.h"
#include "concat/lp_concat.h"
#include "base/lp_pg_error.h"
#include "base/lp_pg_random.h"
#include "store/lp_pg_storage.h"
#include "targets/lp_part_blobs.h"
#include "targets/lp_registry.h"
#include "format/lp_schema.h"
#include "base/lp_sql_args.h"
#include "targets/lp_target.h"

PG_FUNCTION_INFO_V1(lp_create_target);
PG_FUNCTION_INFO_V1(lp_register_part);
PG_FUNCTION_INFO_V1(lp_registered_parts);
PG_FUNCTION_INFO_V1(lp_clear_parts);
PG_FUNCTION_INFO_V1(lp_assemble_registered);
PG_FUNCTION_INFO_V1(lp_assemble_parts);
PG_FUNCTION_INFO_V1(lp_staging_dir);

/* The manifest's schema restricted to the named top-level columns (and their children). */
static void
select_columns(const LpSchema *full, List *columns, const char *dataset,
			   LpSchema *selected)
{
	const char **names = palloc(sizeof(char *) * list_length(columns));
	ListCell   *cell;
	size_t		n = 0;
	size_t		bad;

	foreach(cell, columns)
		names[n++] = lfirst(cell);
	switch (lp_schema_select(full, names, n, selected, &bad))
	{
		case LP_SCHEMA_SELECT_OK:
			return;
		case LP_SCHEMA_SELECT_DUPLICATE:
			ereport(ERROR,
					errcode(ERRCODE_DUPLICATE_COLUMN),
					errmsg("column \"%s\" is named more than once", names[bad]));
			break;
		case LP_SCHEMA_SELECT_UNKNOWN:
			ereport(ERROR,
					errcode(ERRCODE_UNDEFINED_COLUMN),
					errmsg("dataset \"%s\" has no top-level column \"%s\"", dataset, names[bad]));
			break;
		case LP_SCHEMA_SELECT_NO_MEMORY:
			lp_require_memory(NULL);
			break;
	}
}

Datum
lp_create_target(PG_FUNCTION_ARGS)
{
	LpTarget   *target = palloc0(sizeof(LpTarget));
	LpManifestNaming naming;
	LpManifest *manifest;
	LpFileVersion dataset_version;
	LpSchema	full;
	LpError		err;
	char		file_name[LP_DATA_FILE_NAME_SIZE];
	const char *format_version;
	LpStore    *store;
	char	   *key;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("dataset URI must not be NULL"));
	lp_check_read_privilege_for(text_to_cstring(PG_GETARG_TEXT_PP(0)));
	/* the target's files are written into the dataset later */
	store = lp_store_for_write_uri(text_to_cstring(PG_GETARG_TEXT_PP(0)),
								   "the dataset of create_target", &key);
	target->dataset = lp_resolve_existing_path(store, key, "dataset");
	store = lp_store_below(target->dataset);

	manifest = lp_read_latest_manifest(store, target->dataset, InvalidOid, &naming, &err);
	if (manifest == NULL)
		lp_raise(&err);
	if (!lp_manifest_check_writable(manifest, target->dataset, &err))
		lp_raise(&err);

	format_version = lp_manifest_data_format(manifest);
	if (format_version == NULL)
		format_version = "";
	if (!lp_manifest_data_version(manifest, &dataset_version))
		ereport(ERROR,
				errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				errmsg("dataset \"%s\" has data storage format \"%s\", which lance_parts cannot write",
					   target->dataset, format_version));
	if (dataset_version == LP_FILE_VERSION_LEGACY)
		ereport(ERROR,
				errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				errmsg("dataset \"%s\" uses the legacy Lance format", target->dataset),
				errdetail("Assembled files are Lance 2.0 or later files."));
	target->file_version = dataset_version;
	if (!PG_ARGISNULL(2))
	{
		char	   *requested = text_to_cstring(PG_GETARG_TEXT_PP(2));
		LpFileVersion version;

		if (!lp_file_version_parse(requested, &version))
			ereport(ERROR,
					errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					errmsg("unknown Lance file version \"%s\"", requested),
					errhint("Use 2.0, 2.1, 2.2 or 2.3."));
		if (version != dataset_version)
			ereport(ERROR,
					errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					errmsg("file version %s does not match the data storage format %s of dataset \"%s\"",
						   requested, format_version, target->dataset),
					errdetail("Every data file of a Lance dataset has the dataset's storage format version."));
	}

	target->has_base_id = !PG_ARGISNULL(3);
	target->base_id = target->has_base_id ? PG_GETARG_INT32(3) : 0;
	lp_resolve_base(manifest, target->has_base_id, target->base_id, target->dataset, InvalidOid,
					&target->base_path, &target->data_dir);

	if (!lp_manifest_schema(manifest, &full, &err))
		lp_raise(&err);
	if (PG_ARGISNULL(1))
		target->schema = full;
	else
	{
		target->columns = lp_text_array_to_list(PG_GETARG_ARRAYTYPE_P(1), "column list");
		select_columns(&full, target->columns, target->dataset, &target->schema);
	}

	if (!lp_generate_data_file_name(lp_random_bytes, NULL, file_name, &err))
		lp_raise(&err);
	target->file_name = pstrdup(file_name);
	target->dataset_version = (int64) lp_manifest_version(manifest);
	target->dataset_tag = lp_require_memory(lp_manifest_tag(manifest));

	PG_RETURN_JSONB_P(lp_target_to_jsonb(target));
}

/* Parse, verify and bind a target argument. */
static LpTarget *
bound_target(FunctionCallInfo fcinfo, int argno)
{
	LpTarget   *target;
	LpManifestNaming naming;

	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("target must not be NULL"));
	target = lp_target_from_jsonb(PG_GETARG_JSONB_P(argno));
	lp_target_check_privileges(target, false);
	lp_manifest_free(lp_target_check_binding(target, &naming));
	return target;
}

Datum
lp_register_part(PG_FUNCTION_ARGS)
{
	LpTarget   *target = bound_target(fcinfo, 0);
	char	   *uri;
	LpFile	   *file;
	char	   *why;
	int			reason;
	bool		has_lease = !PG_ARGISNULL(3);
	LpBlobLease lease = {0, 0};

	if (PG_ARGISNULL(1))
		ereport(ERROR,
				errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("part URI must not be NULL"));
	(void) lp_store_for_uri(text_to_cstring(PG_GETARG_TEXT_PP(1)), &uri);
	lp_check_read_privilege_for(uri);
	/* a part in the target's staging directory is reached without following a symlink */
	file = lp_read_lance_file_below(target->base_path, uri);

	if (!PG_ARGISNULL(2) && PG_GETARG_INT64(2) < 0)
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("expected row count must not be negative"));
	if (has_lease)
	{
		lease = lp_part_lease_from_range(PG_GETARG_DATUM(3), uri);
		lp_part_lease_check(target, &lease, uri);
	}
	if (lp_part_has_blob_columns(file, uri) && !has_lease)
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("part \"%s\" has Blob v2 columns but no blob id lease", uri),
				errdetail("Its descriptors can only be checked against the lease its sidecars were written under."),
				errhint("Register it with blob_ids => the range lance_parts.lease_blob_ids returned for its writer."));
	why = lp_file_incompatibility(target->file_version, &target->schema, has_lease, file,
								  !PG_ARGISNULL(2),
								  PG_ARGISNULL(2) ? 0 : (uint64_t) PG_GETARG_INT64(2),
								  &reason);
	if (why != NULL)
		ereport(ERROR,
				errcode(reason == LP_CONCAT_LEGACY_VERSION || reason == LP_CONCAT_BLOB_COLUMNS ||
						reason == LP_CONCAT_BYTES_AS_LISTS
						? ERRCODE_FEATURE_NOT_SUPPORTED : ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("part \"%s\" cannot be assembled into target file \"%s\"",
					   uri, target->file_name),
				errdetail_internal("%s", why));
	if (has_lease)
		lp_part_check_blobs(target, uri, file, &lease);

	PG_RETURN_INT32(lp_registry_add(lp_target_key(target), uri,
									(int64) file->num_rows, (int64) file->file_size,
									has_lease ? &lease : NULL));
}

Datum
lp_registered_parts(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	LpTarget   *target;
	ListCell   *cell;
	int			position = 0;

	InitMaterializedSRF(fcinfo, 0);
	target = bound_target(fcinfo, 0);
	foreach(cell, lp_registry_parts(lp_target_key(target)))
	{
		LpRegisteredPart *part = lfirst(cell);
		Datum		values[4];
		bool		nulls[4] = {false, false, false, false};

		values[0] = Int32GetDatum(++position);
		values[1] = CStringGetTextDatum(part->uri);
		values[2] = Int64GetDatum(part->num_rows);
		values[3] = Int64GetDatum(part->size_bytes);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

Datum
lp_clear_parts(PG_FUNCTION_ARGS)
{
	LpTarget   *target = bound_target(fcinfo, 0);

	PG_RETURN_INT32(lp_registry_clear(lp_target_key(target)));
}

/*
 * reencode: parts that need it are re-encoded in the target's staging
 * directory; blob_ids_leased: every part was registered with a validated
 * lease, so Blob v2 columns are copied.
 */
static void
assemble_for_target(FunctionCallInfo fcinfo, LpTarget *target, List *parts, bool reencode,
					bool blob_ids_leased)
{
	LpAssembleTarget assemble_target = {0};
	LpAssembleResult result;

	/* privileges: per file, in lp_assemble_file */
	assemble_target.version = target->file_version;
	assemble_target.schema = &target->schema;
	assemble_target.dataset = target->dataset;
	assemble_target.reencode_dir = reencode ? lp_target_staging_dir(target) : NULL;
	assemble_target.reencode_dir_owned = false;
	assemble_target.blob_ids_leased = blob_ids_leased;
	assemble_target.root = target->base_path;
	lp_assemble_file(lp_target_data_file_path(target), parts, &assemble_target,
					 false, &result);
	lp_assemble_emit(fcinfo, &result);
}

Datum
lp_assemble_registered(PG_FUNCTION_ARGS)
{
	LpTarget   *target;
	List	   *parts = NIL;
	ListCell   *cell;
	bool		all_leased = true;

	InitMaterializedSRF(fcinfo, 0);
	target = bound_target(fcinfo, 0);
	foreach(cell, lp_registry_parts(lp_target_key(target)))
	{
		LpRegisteredPart *registered = lfirst(cell);
		LpAssemblePart *part = palloc0(sizeof(LpAssemblePart));

		all_leased = all_leased && registered->has_lease;

		/* a part must still hold the rows it had when it was registered */
		part->path = registered->uri;
		part->has_expected_rows = true;
		part->expected_rows = registered->num_rows;
		parts = lappend(parts, part);
	}
	if (parts == NIL)
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("no parts are registered for target file \"%s\"", target->file_name),
				errhint("Register parts with lance_parts.register_part in this session, or pass them to lance_parts.assemble(target, parts)."));
	/* again, before any output exists: registrations of one session are checked one by one */
	lp_part_leases_check_disjoint(lp_registry_parts(lp_target_key(target)), target->file_name);
	assemble_for_target(fcinfo, target, parts, false, all_leased);
	return (Datum) 0;
}

Datum
lp_assemble_parts(PG_FUNCTION_ARGS)
{
	LpTarget   *target;

	InitMaterializedSRF(fcinfo, 0);
	target = bound_target(fcinfo, 0);
	if (PG_ARGISNULL(1))
		ereport(ERROR,
				errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("part list must not be NULL"));
	if (PG_ARGISNULL(3))
		ereport(ERROR,
				errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("on_unsupported must not be NULL"));
	/* the parts of an array carry no leases: Blob v2 columns give the verdict blob_columns */
	assemble_for_target(fcinfo, target,
						lp_parts_from_arrays(PG_GETARG_ARRAYTYPE_P(1),
											 PG_ARGISNULL(2) ? NULL : PG_GETARG_ARRAYTYPE_P(2)),
						lp_parse_on_unsupported(text_to_cstring(PG_GETARG_TEXT_PP(3))), false);
	return (Datum) 0;
}

Datum
lp_staging_dir(PG_FUNCTION_ARGS)
{
	LpTarget   *target = bound_target(fcinfo, 0);

	PG_RETURN_TEXT_P(cstring_to_text(psprintf("%s/", lp_target_staging_dir(target))));
}
