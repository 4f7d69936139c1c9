/*
 * lp_fdw_source.c - what a lance_fdw foreign table reads: one version of a
 * dataset (its schema, fragments, data files and deletion files), or one
 * .lance data file.
 */
#include "postgres.h"

#include <sys/stat.h>

#include "lance_parts.h"
#include "lp_alloc.h"
#include "lp_dataset.h"
#include "lp_fdw.h"
#include "lp_pg_storage.h"
#include "lp_target.h"

static bool
is_legacy_format(const LpManifest *manifest)
{
	const Lance__Table__Manifest *proto = manifest->proto;

	if (proto->data_format != NULL && proto->data_format->version != NULL &&
		(strcmp(proto->data_format->version, "0.1") == 0 ||
		 strcmp(proto->data_format->version, "legacy") == 0))
		return true;
	for (size_t f = 0; f < proto->n_fragments; f++)
		for (size_t d = 0; d < proto->fragments[f]->n_files; d++)
			if (proto->fragments[f]->files[d]->file_major_version == 0 &&
				proto->fragments[f]->files[d]->file_minor_version < 3)
				return true;
	return false;
}

static void
legacy_error(const char *what, const char *path)
{
	ereport(ERROR,
			errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			errmsg("%s \"%s\" uses the legacy Lance file format, which lance_fdw cannot read",
				   what, path),
			errhint("Rewrite it with data storage version 2.0 or later."));
}

static void
open_dataset(LpFdwSource *source, bool has_version, uint64 version, bool refuse_legacy)
{
	LpStore    *store = lp_local_store();
	LpManifestNaming naming;
	LpError		err;
	const Lance__Table__Manifest *proto;

	if (has_version)
	{
		uint64_t	latest;

		if (!lp_dataset_latest_version(store, source->path, &latest, &naming, &err))
			lp_raise(&err);
		source->manifest = lp_dataset_read_manifest(store, source->path, naming, version, &err);
		if (source->manifest == NULL && err.code == LP_ERR_NOT_FOUND)
			ereport(ERROR,
					errcode(ERRCODE_UNDEFINED_FILE),
					errmsg("dataset \"%s\" has no version " UINT64_FORMAT, source->path, version),
					errdetail("Its latest version is " UINT64_FORMAT "; older versions may have been cleaned up.",
							  (uint64) latest));
	}
	else
		source->manifest = lp_dataset_read_latest(store, source->path, &naming, &err);
	if (source->manifest == NULL)
		lp_raise(&err);
	if (!lp_manifest_check_flags(source->manifest, &err) ||
		!lp_manifest_schema(source->manifest, &source->schema, &err))
		lp_raise(&err);
	if (refuse_legacy && is_legacy_format(source->manifest))
		legacy_error("dataset", source->path);

	proto = source->manifest->proto;
	source->version = proto->version;
	source->num_fragments = proto->n_fragments;
	for (size_t f = 0; f < proto->n_fragments; f++)
	{
		const Lance__Table__DataFragment *fragment = proto->fragments[f];

		source->num_files += fragment->n_files;
		source->physical_rows += fragment->physical_rows;
		if (fragment->deletion_file != NULL)
			source->deleted_rows += fragment->deletion_file->num_deleted_rows;
	}
}

static void
open_single_file(LpFdwSource *source, bool has_version, bool refuse_legacy)
{
	if (has_version)
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("option \"%s\" applies to datasets, but \"%s\" is a data file",
					   "version", source->path));
	source->file = lp_read_lance_file(source->path);
	if (refuse_legacy && source->file->version == LP_FILE_VERSION_LEGACY)
		legacy_error("file", source->path);
	source->schema = source->file->schema;
	source->num_fragments = 1;
	source->num_files = 1;
	source->physical_rows = source->file->num_rows;
}

LpFdwSource *
lp_fdw_open_source(const char *path, bool has_version, uint64 version, bool refuse_legacy)
{
	LpFdwSource *source = palloc0(sizeof(LpFdwSource));
	struct stat st;

	source->path = pstrdup(path);
	if (stat(path, &st) != 0)
		ereport(ERROR,
				errcode_for_file_access(),
				errmsg("could not open Lance dataset or file \"%s\": %m", path));
	source->single_file = !S_ISDIR(st.st_mode);
	if (source->single_file)
		open_single_file(source, has_version, refuse_legacy);
	else
		open_dataset(source, has_version, version, refuse_legacy);
	return source;
}

int
lp_fdw_find_top_field(const LpSchema *schema, const char *name)
{
	for (uint32 i = 0; i < schema->num_fields; i++)
		if (schema->fields[i].parent_id == -1 && schema->fields[i].id >= 0 &&
			strcmp(schema->fields[i].name, name) == 0)
			return (int) i;
	return -1;
}

LpType *
lp_fdw_schema_field_type(const LpSchema *schema, uint32 index, const char *where)
{
	/* lp_type_from_field reads only the schema and the name of the file. */
	LpFile		view;
	LpType	   *type;
	LpError		err;

	memset(&view, 0, sizeof(view));
	view.name = (char *) where;
	view.schema = *schema;
	if (!lp_type_from_field(&view, index, &type, &err))
		lp_raise(&err);
	return type;
}

static void
resolve_base(const LpFdwSource *source, bool has_base_id, uint32 base_id,
			 char **base_path, char **data_dir)
{
	lp_resolve_base(source->manifest, has_base_id, (int32) base_id, source->path,
					base_path, data_dir);
}

char *
lp_fdw_data_file_path(const LpFdwSource *source, const Lance__Table__DataFile *file)
{
	char	   *base_path;
	char	   *data_dir;

	if (source->single_file)
		return source->path;
	resolve_base(source, file->base_id_present_case == LANCE__TABLE__DATA_FILE__BASE_ID_PRESENT_BASE_ID,
				 file->base_id, &base_path, &data_dir);
	return psprintf("%s/%s", data_dir, file->path);
}

char *
lp_fdw_deletion_file_path(const LpFdwSource *source, uint64 fragment_id,
						  const Lance__Table__DeletionFile *deletion)
{
	char	   *base_path;
	char	   *data_dir;
	char	   *relative;
	char	   *result;

	resolve_base(source, deletion->base_id_present_case == LANCE__TABLE__DELETION_FILE__BASE_ID_PRESENT_BASE_ID,
				 deletion->base_id, &base_path, &data_dir);
	relative = lp_deletion_file_path(fragment_id, deletion->read_version, deletion->id,
									 deletion->file_type == LANCE__TABLE__DELETION_FILE__DELETION_FILE_TYPE__BITMAP
									 ? LP_DELETION_BITMAP : LP_DELETION_ARROW);
	if (relative == NULL)
		ereport(ERROR,
				errcode(ERRCODE_OUT_OF_MEMORY),
				errmsg("out of memory"));
	result = psprintf("%s/%s", base_path, relative);
	lp_free(relative);
	return result;
}
