/*
 * lp_fdw_source.c - what a lance_fdw foreign table reads: one version of a
 * dataset (its schema, fragments, data files and deletion files), or one
 * .lance data file.
 */
#include "postgres.h"

#include "dataset/lp_dataset.h"
#include "fdw/lp_fdw.h"
#include "base/lp_pg_error.h"
#include "store/lp_pg_storage.h"

static void
legacy_error(const char *what, const char *path)
{
	ereport(ERROR,
			errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			errmsg("%s \"%s\" uses the legacy Lance file format, which lance_fdw cannot read",
				   what, path),
			errhint("Rewrite it with data storage version 2.0 or later."));
}

LpFdwPendingViewHook lp_fdw_pending_view_hook = NULL;

static void
open_dataset(LpFdwSource *source, bool has_version, uint64 version, bool refuse_legacy)
{
	LpStore    *store = source->store;
	LpManifestNaming naming;
	LpError		err;

	if (has_version)
	{
		uint64_t	latest;

		if (!lp_dataset_latest_version(store, source->path, &latest, &naming, &err))
			lp_raise(&err);
		source->manifest = lp_read_manifest_version(store, source->path, source->server, naming,
												   version, &err);
		if (source->manifest == NULL && err.code == LP_ERR_NOT_FOUND)
			ereport(ERROR,
					errcode(ERRCODE_UNDEFINED_FILE),
					errmsg("dataset \"%s\" has no version " UINT64_FORMAT, source->path, version),
					errdetail("Its latest version is " UINT64_FORMAT "; older versions may have been cleaned up.",
							  (uint64) latest));
	}
	else
		source->manifest = lp_read_latest_manifest(store, source->path, source->server, &naming,
												   &err);
	if (source->manifest == NULL)
		lp_raise(&err);
	source->published = source->manifest;
	source->published_version = lp_manifest_version(source->manifest);
	if (!has_version && lp_fdw_pending_view_hook != NULL)
	{
		LpManifest *view = lp_fdw_pending_view_hook(source->path, source->published);

		if (view != NULL)
			source->manifest = view;
	}
	if (!lp_manifest_schema(source->manifest, &source->schema, &err))
		lp_raise(&err);
	if (refuse_legacy && lp_manifest_is_legacy(source->manifest))
		legacy_error("dataset", source->path);

	source->version = lp_manifest_version(source->manifest);
	source->num_fragments = lp_manifest_num_fragments(source->manifest);
	source->row_address_bits = 1;
	for (size_t f = 0; f < source->num_fragments; f++)
	{
		LpFragment	fragment;

		lp_manifest_fragment(source->manifest, f, &fragment);
		while (source->row_address_bits < 48 &&
			   fragment.physical_rows > (UINT64CONST(1) << source->row_address_bits))
			source->row_address_bits++;
		source->num_files += fragment.num_files;
		source->physical_rows += fragment.physical_rows;
		if (fragment.has_deletion_file)
			source->deleted_rows += fragment.deletion_file.num_deleted_rows;
		for (size_t d = 0; d < fragment.num_files; d++)
		{
			LpDataFileRef file;

			lp_fragment_data_file(source->manifest, &fragment, d, &file);
			source->data_bytes += file.size_bytes;
		}
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
	source->file = lp_read_lance_file_via(source->path, source->server);
	if (refuse_legacy && source->file->version == LP_FILE_VERSION_LEGACY)
		legacy_error("file", source->path);
	source->schema = source->file->schema;
	source->num_fragments = 1;
	source->num_files = 1;
	source->physical_rows = source->file->num_rows;
	source->data_bytes = source->file->file_size;
}

LpFdwSource *
lp_fdw_open_source(const char *path, Oid server, bool has_version, uint64 version,
				   bool refuse_legacy)
{
	LpFdwSource *source = palloc0(sizeof(LpFdwSource));
	LpStat		st;

	source->path = pstrdup(path);
	source->server = server;
	/* what the manifest names below the dataset is reached without following a symlink */
	source->store = lp_store_below_via(path, server);
	lp_store_stat(source->store, path, true, &st);
	if (st.kind == LP_OBJECT_ABSENT)
		ereport(ERROR,
				errcode(ERRCODE_UNDEFINED_FILE),
				errmsg("could not open Lance dataset or file \"%s\": %s", path, lp_absent_reason()));
	source->single_file = st.kind != LP_OBJECT_DIRECTORY;
	if (source->single_file)
		open_single_file(source, has_version, refuse_legacy);
	else
		open_dataset(source, has_version, version, refuse_legacy);
	return source;
}

bool
lp_fdw_source_has_pending(const LpFdwSource *source)
{
	return source->published != source->manifest;
}

bool
lp_fdw_source_fragment_pending(const LpFdwSource *source, uint64 fragment_id)
{
	return lp_fdw_source_has_pending(source) &&
		!lp_manifest_has_fragment(source->published, fragment_id);
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

char *
lp_fdw_data_file_path(const LpFdwSource *source, const LpDataFileRef *file, LpStore **store)
{
	char	   *base_path;
	char	   *data_dir;

	if (source->single_file)
	{
		*store = source->store;
		return source->path;
	}
	lp_resolve_base(source->manifest, file->has_base_id, (int32) file->base_id, source->path,
					source->server, &base_path, &data_dir);
	*store = lp_store_below_via(base_path, source->server);
	return psprintf("%s/%s", data_dir, file->path);
}

char *
lp_fdw_deletion_file_path(const LpFdwSource *source, const LpFragment *fragment, LpStore **store)
{
	const LpDeletionFileRef *deletion = &fragment->deletion_file;
	char	   *base_path;
	char	   *data_dir;
	char	   *relative;

	lp_resolve_base(source->manifest, deletion->has_base_id, (int32) deletion->base_id,
					source->path, source->server, &base_path, &data_dir);
	*store = lp_store_below_via(base_path, source->server);
	relative = lp_require_memory(lp_deletion_file_path(fragment->id, deletion->read_version,
													   deletion->id, deletion->form));
	return psprintf("%s/%s", base_path, relative);
}
