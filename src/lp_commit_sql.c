/*
 * lp_commit_sql.c - publishing a target's assembled file as a new version of
 * its dataset (commit), and removing what an abandoned target left behind
 * (cleanup_target).
 *
 * A commit becomes visible to Lance readers when the call returns, not at
 * the end of the surrounding PostgreSQL transaction: Lance has no two-phase
 * protocol, and a version once published cannot be withdrawn atomically.
 * Rolling back the SQL transaction therefore does not undo a commit.
 */
#include "postgres.h"

#include <sys/stat.h>
#include <unistd.h>

#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/tuplestore.h"

#include "lance_parts.h"
#include "lp_assemble.h"
#include "lp_commit.h"
#include "lp_concat.h"
#include "lp_pg_storage.h"
#include "lp_progress.h"
#include "lp_schema.h"
#include "lp_target.h"

PG_FUNCTION_INFO_V1(lp_commit_target);
PG_FUNCTION_INFO_V1(lp_cleanup_target);

int			lp_commit_retries = 20;

/* The target's fields must still exist in the dataset, unchanged. */
static void
check_fields_still_present(const LpTarget *target, const LpSchema *dataset_schema)
{
	for (uint32_t i = 0; i < target->schema.num_fields; i++)
	{
		const LpField *field = &target->schema.fields[i];
		int64_t		index = lp_schema_find_field(dataset_schema, field->id);

		if (index < 0 ||
			strcmp(dataset_schema->fields[index].name, field->name) != 0 ||
			strcmp(dataset_schema->fields[index].logical_type, field->logical_type) != 0)
			ereport(ERROR,
					errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					errmsg("dataset \"%s\" no longer has field \"%s\" (id %d) of target file \"%s\"",
						   target->dataset, field->name, field->id, target->file_name),
					errdetail("The dataset's schema changed after the target was made."));
	}
}

/* Open the assembled file and check it is the target's: version, schema, rows. */
static LpFile *
open_assembled_file(const LpTarget *target, const char *path)
{
	LpFile	   *file = lp_open_lance_file(path);
	int			reason;
	char	   *why = lp_file_incompatibility(target->file_version, &target->schema,
											  file, false, 0, &reason);

	if (why != NULL)
		ereport(ERROR,
				errcode(ERRCODE_DATA_CORRUPTED),
				errmsg("file \"%s\" is not the data file of its target", path),
				errdetail_internal("%s", why));
	if (file->num_rows == 0)
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("file \"%s\" holds no rows", path),
				errdetail("Lance datasets never hold empty fragments."));
	return file;
}

/* Is file_name (in the target's base) part of any version of the dataset? */
static bool
referenced_by_any_version(const LpTarget *target, LpManifestNaming naming,
						  uint64_t latest_version, uint64_t *version_found)
{
	for (uint64_t v = latest_version; v >= 1; v--)
	{
		LpError		err;
		LpManifest *manifest = lp_dataset_read_manifest(lp_local_store(), target->dataset,
														naming, v, &err);

		if (manifest == NULL)
		{
			if (err.code == LP_ERR_NOT_FOUND)
				continue;		/* cleaned up by Lance */
			lp_raise(&err);
		}
		for (size_t f = 0; f < manifest->proto->n_fragments; f++)
		{
			const Lance__Table__DataFragment *fragment = manifest->proto->fragments[f];

			for (size_t d = 0; d < fragment->n_files; d++)
			{
				const Lance__Table__DataFile *file = fragment->files[d];
				bool		same_base = target->has_base_id
					? (file->base_id_present_case == LANCE__TABLE__DATA_FILE__BASE_ID_PRESENT_BASE_ID &&
					   (int64) file->base_id == target->base_id)
					: file->base_id_present_case != LANCE__TABLE__DATA_FILE__BASE_ID_PRESENT_BASE_ID;

				if (same_base && strcmp(file->path, target->file_name) == 0)
				{
					*version_found = v;
					lp_manifest_free(manifest);
					return true;
				}
			}
		}
		lp_manifest_free(manifest);
	}
	return false;
}

/*
 * The target's data directory below its base: "data/" for a dataset root,
 * "" for another base (lp_target_check_binding checked it is one of these).
 */
static const char *
data_dir_below_base(const LpTarget *target)
{
	size_t		base_len = strlen(target->base_path);

	if (strncmp(target->data_dir, target->base_path, base_len) != 0 ||
		(target->data_dir[base_len] != '/' && target->data_dir[base_len] != '\0'))
		ereport(ERROR,
				errcode(ERRCODE_INTERNAL_ERROR),
				errmsg("data directory \"%s\" of target file \"%s\" is not below its base \"%s\"",
					   target->data_dir, target->file_name, target->base_path));
	return target->data_dir[base_len] == '\0' ? "" : psprintf("%s/", target->data_dir + base_len + 1);
}

/* <data_dir>/_parts/<file>, relative to the base */
static char *
staging_dir_below_base(const LpTarget *target)
{
	return psprintf("%s_parts/%s", data_dir_below_base(target), target->file_name);
}

/* <data_dir>/<file stem>, where Lance keeps a data file's sidecars, relative to the base */
static char *
sidecar_dir_below_base(const LpTarget *target)
{
	return psprintf("%s%.*s", data_dir_below_base(target),
					(int) (strlen(target->file_name) - strlen(".lance")), target->file_name);
}

/*
 * Remove a directory of the target, <base>/<relative>, with the store's
 * walk that never follows a symlink.  One that is not a real directory is
 * left alone with a WARNING.  What could not be removed is a WARNING after
 * publication (the call must then succeed) and an ERROR otherwise.  True if
 * anything was removed.
 */
static bool
remove_target_directory(const LpTarget *target, const char *relative,
						const char *what, bool after_publication)
{
	LpStore    *store = lp_local_store();
	LpTreeRemoval removal;
	LpError		err;
	char	   *path;

	if (store->ops->remove_tree(store, target->base_path, relative, &removal, &err))
		return removal.outcome == LP_TREE_REMOVED;

	path = psprintf("%s/%s", target->base_path, relative);
	if (removal.outcome == LP_TREE_NOT_DIRECTORY)
		ereport(WARNING,
				errcode(ERRCODE_WRONG_OBJECT_TYPE),
				errmsg_internal("%s", err.message),
				errdetail("The %s \"%s\" of target file \"%s\" was left in place: the server removes nothing through a symbolic link or in place of a directory.",
						  what, path, target->file_name));
	else
	{
		errno = removal.failure_errno;
		ereport(after_publication ? WARNING : ERROR,
				removal.failure_errno != 0 ? errcode_for_file_access() : errcode(ERRCODE_INTERNAL_ERROR),
				errmsg_internal("%s", err.message),
				errdetail("The %s \"%s\" of target file \"%s\" was not removed completely.",
						  what, path, target->file_name),
				after_publication ? errhint("The new version is published; what is left can be removed once the cause is fixed.") : 0);
	}
	pfree(path);
	return removal.removed_entries > 0;
}

Datum
lp_commit_target(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	LpTarget   *target;
	LpManifestNaming naming;
	LpManifest *latest;
	LpSchema	dataset_schema;
	LpFile	   *file;
	LpCommitRequest request;
	LpCommitOptions options;
	LpCommitResult result;
	LpError		err;
	uint64_t	version_found;
	char	   *path;
	char	   *mode;
	int32_t    *selected = NULL;
	size_t		n_selected = 0;
	int32_t    *field_ids;
	int32_t    *column_indices;
	size_t		n_columns;
	Datum		values[2];
	bool		nulls[2] = {false, false};

	InitMaterializedSRF(fcinfo, 0);
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("target and mode must not be NULL"));
	lp_check_read_privilege();
	lp_check_write_privilege();
	target = lp_target_from_jsonb(PG_GETARG_JSONB_P(0));
	mode = text_to_cstring(PG_GETARG_TEXT_PP(1));

	memset(&request, 0, sizeof(request));
	if (strcmp(mode, "append") == 0)
	{
		request.kind = LP_COMMIT_APPEND;
		if (!PG_ARGISNULL(2))
			ereport(ERROR,
					errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					errmsg("fragment_id is only used with mode \"replace\""));
	}
	else if (strcmp(mode, "replace") == 0)
	{
		request.kind = LP_COMMIT_REPLACE;
		if (PG_ARGISNULL(2) || PG_GETARG_INT64(2) < 0)
			ereport(ERROR,
					errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					errmsg("mode \"replace\" needs the fragment_id whose file is replaced"));
		request.fragment_id = (uint64_t) PG_GETARG_INT64(2);
	}
	else
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("unknown commit mode \"%s\"", mode),
				errhint("Valid modes are \"append\" and \"replace\"."));

	path = lp_target_data_file_path(target);
	lp_progress_begin(target->dataset, path, LP_PHASE_COMMITTING, 0);

	/* nothing is written before every check passed */
	latest = lp_target_check_binding(target, &naming);
	if (referenced_by_any_version(target, naming, latest->proto->version, &version_found))
		ereport(ERROR,
				errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				errmsg("file \"%s\" of the target was already committed in version " UINT64_FORMAT " of dataset \"%s\"",
					   target->file_name, version_found, target->dataset),
				errdetail("A data file is committed once; committing it again would repeat its rows."),
				errhint("Create a new target for new data."));
	if (!lp_manifest_schema(latest, &dataset_schema, &err))
		lp_raise(&err);
	check_fields_still_present(target, &dataset_schema);
	file = open_assembled_file(target, path);

	if (target->columns != NIL)
	{
		selected = palloc(sizeof(int32_t) * target->schema.num_fields);
		for (uint32_t i = 0; i < target->schema.num_fields; i++)
			if (target->schema.fields[i].parent_id == -1)
				selected[n_selected++] = target->schema.fields[i].id;
	}
	if (!lp_data_file_columns(&dataset_schema, selected, n_selected, target->file_version,
							  &field_ids, &column_indices, &n_columns, &err))
		lp_raise(&err);
	if (n_columns != file->num_columns)
		ereport(ERROR,
				errcode(ERRCODE_DATA_CORRUPTED),
				errmsg("file \"%s\" has %u columns, but its fields need %zu",
					   path, file->num_columns, n_columns));

	/*
	 * An index over replaced fields would go on answering from the old
	 * file's values; Lance drops such fragments from the index, which needs
	 * a Roaring writer this extension does not have yet, so refuse instead.
	 */
	if (request.kind == LP_COMMIT_REPLACE)
	{
		bool		indexed;

		if (!lp_manifest_fragment_indexed(latest, request.fragment_id, field_ids,
										  n_columns, &indexed, &err))
			lp_raise(&err);
		if (indexed)
			ereport(ERROR,
					errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					errmsg("fragment " UINT64_FORMAT " of dataset \"%s\" is covered by an index on the replaced columns",
						   request.fragment_id, target->dataset),
					errhint("Drop the index, replace the data, then create the index again."));
	}

	request.read_version = latest->proto->version;
	request.file.path = target->file_name;
	request.file.fields = field_ids;
	request.file.column_indices = column_indices;
	request.file.n_fields = n_columns;
	request.file.version = target->file_version;
	request.file.size_bytes = file->file_size;
	request.file.has_base_id = target->has_base_id;
	request.file.base_id = (uint32_t) target->base_id;
	request.physical_rows = file->num_rows;

	options.max_retries = lp_commit_retries;
	options.random = lp_random_bytes;
	options.random_arg = NULL;
	if (!lp_commit(lp_local_store(), target->dataset, &request, &options, &result, &err))
		lp_raise(&err);

	/* the parts are now copied into a committed file; their staging area can go */
	remove_target_directory(target, staging_dir_below_base(target), "staging directory", true);
	lp_progress_end();

	values[0] = Int64GetDatum((int64) result.version);
	values[1] = Int64GetDatum((int64) result.fragment_id);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	return (Datum) 0;
}


Datum
lp_cleanup_target(PG_FUNCTION_ARGS)
{
	LpTarget   *target;
	LpManifestNaming naming;
	LpManifest *latest;
	uint64_t	version_found;
	char	   *path;
	struct stat st;
	bool		removed = false;

	lp_check_read_privilege();
	lp_check_write_privilege();
	target = lp_target_from_jsonb(PG_GETARG_JSONB_P(0));
	latest = lp_target_check_binding(target, &naming);
	if (referenced_by_any_version(target, naming, latest->proto->version, &version_found))
		ereport(ERROR,
				errcode(ERRCODE_OBJECT_IN_USE),
				errmsg("file \"%s\" of the target is part of version " UINT64_FORMAT " of dataset \"%s\"",
					   target->file_name, version_found, target->dataset),
				errhint("Committed files are removed by Lance's own cleanup of old versions."));

	path = lp_target_data_file_path(target);
	if (lstat(path, &st) == 0)
	{
		if (unlink(path) != 0)
			ereport(ERROR,
					errcode_for_file_access(),
					errmsg("could not remove file \"%s\": %m", path));
		removed = true;
	}
	removed |= remove_target_directory(target, staging_dir_below_base(target),
									   "staging directory", false);
	removed |= remove_target_directory(target, sidecar_dir_below_base(target),
									   "sidecar directory", false);
	PG_RETURN_BOOL(removed);
}
