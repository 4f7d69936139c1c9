/*
 * lp_commit_sql.c - publishing a target's assembled file as a new version of
 * its dataset (commit), and removing what an abandoned target left behind
 * (cleanup_target).
 *
 * A commit is published with the PostgreSQL transaction, or when the call
 * returns (lance_parts.publish_at, write/lp_publication.c).
 */
#include "postgres.h"

#include <fcntl.h>
#include <unistd.h>

#include "funcapi.h"
#include "storage/lock.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/tuplestore.h"

#include "assemble/lp_assemble.h"
#include "assemble/lp_assemble_validate.h"
#include "dataset/lp_commit.h"
#include "write/lp_publication.h"
#include "concat/lp_concat.h"
#include "base/lp_path.h"
#include "base/lp_pg_error.h"
#include "store/lp_pg_s3_config.h"
#include "store/lp_pg_storage.h"
#include "assemble/lp_progress.h"
#include "format/lp_schema.h"
#include "targets/lp_part_blobs.h"
#include "targets/lp_target.h"

PG_FUNCTION_INFO_V1(lp_commit_target);
PG_FUNCTION_INFO_V1(lp_cleanup_target);

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
	LpFile	   *file;
	bool		has_blobs;
	int			reason;
	char	   *why;

	lp_check_read_privilege_for(path);
	file = lp_read_lance_file_below(target->base_path, path);
	has_blobs = lp_part_has_blob_columns(file, path);
	why = lp_file_incompatibility(target->file_version, &target->schema, has_blobs,
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
	/* the sidecars its descriptors read must still be there before a manifest names the file */
	if (has_blobs)
		lp_part_check_blobs(target, path, file, NULL);
	return file;
}

/*
 * Is the target's data file part of a version made after the target (older
 * ones cannot hold a name drawn when the target was made)?  latest is the
 * manifest lp_target_check_binding returned.
 */
static bool
committed_since_target(const LpTarget *target, LpManifestNaming naming,
					   const LpManifest *latest, uint64_t *version_found)
{
	LpError		err;

	if (!lp_dataset_file_referenced_since(lp_store_below(target->dataset),
										  target->dataset, naming, latest,
										  (uint64_t) target->dataset_version,
										  target->has_base_id, (uint32_t) target->base_id,
										  target->file_name, version_found, &err))
		lp_raise(&err);
	return *version_found != 0;
}

/*
 * Remove a directory of the target, <base>/<relative>, with the store's
 * walk that never follows a symlink.  One that is not a real directory is
 * left alone with a WARNING; what could not be removed is an ERROR.  True
 * if anything was removed.
 */
static bool
remove_target_directory(const LpTarget *target, const char *relative, const char *what)
{
	LpStore    *store = lp_store_for_uri(target->base_path, NULL);
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
		ereport(ERROR,
				removal.failure_errno != 0 ? errcode_for_file_access() : errcode(ERRCODE_INTERNAL_ERROR),
				errmsg_internal("%s", err.message),
				errdetail("The %s \"%s\" of target file \"%s\" was not removed completely.",
						  what, path, target->file_name));
	}
	pfree(path);
	return removal.removed_entries > 0;
}

/*
 * Remove the target's uncommitted data file, reached from the base without
 * following a symlink (a symlinked "data" would make the file of that name
 * in another dataset go); what is not a real directory or file on the way
 * is left with a WARNING.  True if the file was there.
 */
static bool
remove_data_file(const LpTarget *target)
{
	LpStore    *store = lp_store_for_uri(target->base_path, NULL);
	char	   *relative = lp_require_memory(lp_path_join(lp_target_data_dir_in_base(target),
														  target->file_name));
	bool		removed;
	LpError		err;

	if (!store->ops->remove_file(store, target->base_path, relative, &removed, &err))
	{
		if (err.code != LP_ERR_INVALID_ARGUMENT)
			lp_raise(&err);
		ereport(WARNING,
				errcode(ERRCODE_WRONG_OBJECT_TYPE),
				errmsg_internal("%s", err.message),
				errdetail("The data file \"%s\" of the target was left in place: the server removes nothing through a symbolic link.",
						  lp_target_data_file_path(target)));
	}
	return removed;
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
	LpPublicationRequest publication = {0};
	LpCommitResult result;
	bool		published;
	LpError		err;
	uint64_t	version_found;
	char	   *path;
	char	   *staging_dir;
	char	   *mode;
	LOCKTAG		lock_tag;
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
	target = lp_target_from_jsonb(PG_GETARG_JSONB_P(0));
	lp_target_check_privileges(target, true);
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
	lp_target_file_lock_tag(lp_target_data_file_path(target), &lock_tag);
	(void) LockAcquire(&lock_tag, ExclusiveLock, false, false);

	/* nothing is written before every check passed */
	latest = lp_target_check_binding(target, &naming);
	staging_dir = lp_target_staging_dir_in_base(target);
	if (committed_since_target(target, naming, latest, &version_found))
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

	/* the first attempt builds on the version just read */
	request.read_version = lp_manifest_version(latest);
	request.read_manifest = latest;
	request.read_naming = naming;
	request.file.path = target->file_name;
	request.file.fields = field_ids;
	request.file.column_indices = column_indices;
	request.file.n_fields = n_columns;
	request.file.version = target->file_version;
	request.file.size_bytes = file->file_size;
	request.file.has_base_id = target->has_base_id;
	request.file.base_id = (uint32_t) target->base_id;
	request.physical_rows = file->num_rows;

	publication.root = target->dataset;
	publication.commit = &request;
	publication.claimed_file = path;
	publication.after_publication =
		list_make1(lp_publication_path(target->base_path, staging_dir, true,
									   psprintf("The staging directory \"%s/%s\" of target file \"%s\"",
												target->base_path, staging_dir, target->file_name)));
	published = lp_publish(&publication, &result);
	lp_progress_end();

	/*
	 * Published now: the lock can go.  Queued: it is held to the end of the
	 * transaction, so that no other session commits the file meanwhile.
	 */
	if (published)
		LockRelease(&lock_tag, ExclusiveLock, false);

	if (!published)
		nulls[0] = nulls[1] = true;
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
	bool		removed;
	LOCKTAG		lock_tag;

	target = lp_target_from_jsonb(PG_GETARG_JSONB_P(0));
	lp_target_check_privileges(target, true);

	/* a commit of this target that validated the file finishes first */
	lp_target_file_lock_tag(lp_target_data_file_path(target), &lock_tag);
	(void) LockAcquire(&lock_tag, ExclusiveLock, false, false);
	latest = lp_target_check_binding(target, &naming);
	if (committed_since_target(target, naming, latest, &version_found))
		ereport(ERROR,
				errcode(ERRCODE_OBJECT_IN_USE),
				errmsg("file \"%s\" of the target is part of version " UINT64_FORMAT " of dataset \"%s\"",
					   target->file_name, version_found, target->dataset),
				errhint("Committed files are removed by Lance's own cleanup of old versions."));

	removed = remove_data_file(target);
	removed |= remove_target_directory(target, lp_target_staging_dir_in_base(target),
									   "staging directory");
	removed |= remove_target_directory(target, lp_target_sidecar_dir_in_base(target),
									   "sidecar directory");
	LockRelease(&lock_tag, ExclusiveLock, false);
	PG_RETURN_BOOL(removed);
}
