/*
 * lp_compact_blobs.c - compaction of a group of data files with Blob v2
 * columns (see lp_compact_blobs.h).
 */
#include "postgres.h"

#include "miscadmin.h"

#include "assemble/lp_progress.h"
#include "base/lp_alloc.h"
#include "base/lp_path.h"
#include "concat/lp_concat.h"
#include "dataset/lp_dataset.h"
#include "format/lp_columns.h"
#include "base/lp_pg_error.h"
#include "reencode/lp_reencode.h"
#include "functions/lp_compact_blobs.h"
#include "targets/lp_sidecar.h"
#include "store/lp_pg_storage.h"
#include "targets/lp_part_blobs.h"

bool
lp_compact_file_has_blobs(const char *root, const char *path)
{
	const LpSchema *schema = &lp_read_lance_file_below(root, path)->schema;
	bool		has_v2 = false;

	for (uint32 i = 0; i < schema->num_fields; i++)
	{
		/* legacy (v1) blob columns stay with assembly, which skips them (blob_columns) */
		if (lp_field_is_blob(&schema->fields[i]) && !lp_field_is_blob_v2(&schema->fields[i]))
			return false;
		has_v2 |= lp_field_is_blob_v2(&schema->fields[i]);
	}
	return has_v2;
}

/*
 * Give the sidecar at from the name of blob id to_id in to_dir: a link
 * where the store can make one, else a copy within the store.
 */
static void
place_sidecar(LpStore *store, const char *from, const char *to_dir, uint32 to_id)
{
	char		name[LP_BLOB_FILE_NAME_SIZE];
	LpSidecar  *sidecar;
	LpInput    *input;
	LpError		err;

	lp_blob_sidecar_file_name(to_id, name);
	if (store->ops->link_file != NULL)
	{
		if (store->ops->link_file(store, from, lp_require_memory(lp_path_join(to_dir, name)), &err))
			return;
		if (err.code != LP_ERR_UNSUPPORTED)
			lp_raise(&err);
	}
	input = lp_open_input_in(store, from);
	sidecar = lp_sidecar_open(store, to_dir, to_id);
	lp_sidecar_copy(sidecar, input);
	lp_sidecar_publish(sidecar);
	lp_input_close(input);
}

/*
 * The amount to add to the blob ids of a file whose sidecars are
 * uses[0..num_uses) (sorted by id) so that they follow the ids below
 * *next_free, which then moves past them: 0 when they already do.
 */
static uint32
blob_id_offset(const LpBlobSidecarUse *uses, size_t num_uses, uint64 *next_free,
			   const char *path)
{
	uint64		offset;

	if (num_uses == 0)
		return 0;
	offset = uses[0].blob_id >= *next_free ? 0 : *next_free - uses[0].blob_id;
	*next_free = uses[num_uses - 1].blob_id + offset + 1;
	if (*next_free > LP_BLOB_ID_LIMIT)
		ereport(ERROR,
				errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				errmsg("blob ids of data file \"%s\" cannot follow those of the files before it in the compacted file",
					   path),
				errdetail("Blob ids are 32-bit; compact fewer fragments together."));
	return (uint32) offset;
}

/* Every sidecar the group's descriptors read, under its new name in new_dir. */
static void
place_group_sidecars(LpStore *store, const LpBlobCheck *checks, const LpReencodeSource *sources,
					 char *const *old_dirs, int num_parts, const char *new_dir,
					 volatile bool *placed)
{
	for (int i = 0; i < num_parts; i++)
	{
		for (size_t u = 0; u < checks[i].num_uses; u++)
		{
			char		old_name[LP_BLOB_FILE_NAME_SIZE];
			uint32		id = checks[i].uses[u].blob_id;

			CHECK_FOR_INTERRUPTS();
			lp_blob_sidecar_file_name(id, old_name);
			*placed = true;
			place_sidecar(store, lp_require_memory(lp_path_join(old_dirs[i], old_name)),
						  new_dir, id + sources[i].blob_id_offset);
		}
	}
}

/*
 * The Blob v2 fields of the dataset's schema with their children, for the
 * descriptor file (the same top-level fields the file footer's replaced
 * columns belong to, in order).
 */
static LpSchema *
blob_fields_of(const LpSchema *schema)
{
	LpSchema   *blobs = palloc0(sizeof(LpSchema));
	int64		kept_top = -1;

	blobs->fields = palloc0(sizeof(LpField) * Max(schema->num_fields, 1));
	for (uint32 i = 0; i < schema->num_fields; i++)
	{
		const LpField *field = &schema->fields[i];

		if (field->parent_id == -1)
			kept_top = lp_field_is_blob_v2(field) ? field->id : -1;
		/* a Blob v2 field's children are data and uri, its subtree one level deep */
		if (kept_top >= 0 && (field->parent_id == -1 || field->parent_id == kept_top))
			blobs->fields[blobs->num_fields++] = *field;
	}
	return blobs;
}

/*
 * The columns of the files that hold Blob v2 descriptors, if they are those
 * of the fields of blobs in order; NULL otherwise (the group is re-encoded).
 */
static bool *
descriptor_columns(const LpFile *file, const LpSchema *blobs)
{
	LpPhysicalColumn *columns;
	uint32		num_columns;
	uint32		k = 0;
	bool	   *replaced;
	LpError		err;

	if (!lp_schema_physical_columns(file->version, &file->schema, &columns, &num_columns, &err))
		lp_raise(&err);
	if (num_columns != file->num_columns)
		return NULL;
	replaced = palloc0(sizeof(bool) * Max(num_columns, 1));
	for (uint32 c = 0; c < num_columns; c++)
	{
		const LpField *field = &file->schema.fields[columns[c].field_index];

		if (field->parent_id != -1 || !lp_field_is_blob_v2(field))
			continue;
		while (k < blobs->num_fields && blobs->fields[k].parent_id != -1)
			k++;
		if (k == blobs->num_fields || strcmp(blobs->fields[k].name, field->name) != 0)
			return NULL;
		replaced[c] = true;
		k++;
	}
	lp_free(columns);
	return replaced;
}

/*
 * Write the group by page copy: every column but the descriptors' copied
 * page by page, the descriptors (Inline payloads copied along, blob ids
 * moved) encoded into a file of their own in the new file's staging
 * directory and copied whole after the parts, where a first plan of the
 * parts alone says it will lie.  False, with nothing written, when the
 * files cannot be joined by page copy.
 */
static bool
write_by_page_copy(const char *root, const char *data_dir, const char *name, List *parts,
				   LpFile **files, const LpReencodeSource *sources, const LpSchema *schema,
				   LpFileVersion version, LpAssembleResult *result)
{
	int			num_parts = list_length(parts);
	LpSchema   *blobs = blob_fields_of(schema);
	bool	   *replaced = descriptor_columns(files[0], blobs);
	LpConcatPart *concat_parts = palloc0(sizeof(LpConcatPart) * num_parts);
	LpConcatTarget concat_target = {version, &files[0]->schema, true, replaced, NULL};
	LpAssembleTarget target = {0};
	LpReencodeOptions options = {0};
	LpConcatVerdict verdict;
	LpConcatPlan *plan;
	char	   *staging = lp_require_memory(lp_data_file_staging_dir(data_dir, name));
	char	   *donor_path = psprintf("%s/descriptors.lance", staging);
	LpStore    *store = lp_store_for_uri_below(root, donor_path, NULL);
	LpOutput   *output;
	uint64		rows;
	uint64		size;
	LpError		err;
	int			i = 0;
	ListCell   *cell;

	if (replaced == NULL)
		return false;
	foreach(cell, parts)
	{
		LpAssemblePart *part = lfirst(cell);

		concat_parts[i].file = files[i];
		concat_parts[i].has_expected_rows = part->has_expected_rows;
		concat_parts[i].expected_rows = (uint64) part->expected_rows;
		i++;
	}
	if (!lp_concat_plan(&concat_target, concat_parts, num_parts, &verdict, &plan, &err))
		lp_raise(&err);
	if (verdict.reason != LP_CONCAT_COMPATIBLE)
		return false;

	/* the descriptors, with Inline offsets where the parts' pages end */
	options.only_schema_fields = true;
	options.inline_offset = plan->tail.start;
	lp_concat_plan_free(plan);
	output = store->ops->create_output(store, donor_path, &err);
	if (output == NULL)
		lp_raise(&err);
	if (!lp_reencode_files(sources, num_parts, blobs, version, output, &options, &rows, &size,
						   &err))
	{
		output->ops->abort(output);
		lp_raise(&err);
	}
	if (!output->ops->publish(output, &err))
		lp_raise(&err);

	target.version = version;
	target.schema = &files[0]->schema;
	target.dataset = root;
	target.blob_ids_leased = true;
	target.root = root;
	target.replaced_columns = replaced;
	target.donor_path = donor_path;
	PG_TRY();
	{
		lp_assemble_file(psprintf("%s/%s", data_dir, name), parts, &target, false, result);
	}
	PG_FINALLY();
	{
		LpTreeRemoval removal;
		LpError		ignored;

		(void) store->ops->remove_tree(store, root,
									   psprintf("%s/%s/%s", LP_DATA_DIR, LP_STAGING_DIR, name),
									   &removal, &ignored);
	}
	PG_END_TRY();
	if (strcmp(result->status, "written") != 0)
		elog(ERROR, "descriptor columns planned but not assembled into \"%s\": %s", name,
			 result->message != NULL ? result->message : result->status);
	return true;
}

/* Write the group's rows, decoded, as the new file (and its Inline payloads). */
static void
write_by_reencoding(const char *output_path, LpStore *store, const LpReencodeSource *sources,
					int num_parts, const LpSchema *schema, LpFileVersion version,
					LpAssembleResult *result)
{
	LpOutput   *output;
	LpError		err;

	lp_progress_phase(LP_PHASE_REENCODING, 0, 0, 0, 0);
	output = store->ops->create_output(store, output_path, &err);
	if (output == NULL)
		lp_raise(&err);
	if (!lp_reencode_files(sources, num_parts, schema, version, output, NULL, &result->num_rows,
						   &result->size_bytes, &err))
	{
		output->ops->abort(output);
		lp_raise(&err);
	}
	lp_progress_phase(LP_PHASE_FINALIZING, num_parts, (int64) result->size_bytes,
					  (int64) result->size_bytes, 0);
	if (!output->ops->publish(output, &err))
		lp_raise(&err);
	result->status = "written";
}

bool
lp_compact_blob_group(const char *root, const char *data_dir, const char *name, List *parts,
					  const LpSchema *schema, LpFileVersion version, LpAssembleResult *result,
					  char **sidecar_dir)
{
	int			num_parts = list_length(parts);
	LpReencodeSource *sources = palloc0(sizeof(LpReencodeSource) * num_parts);
	LpBlobCheck *checks = palloc0(sizeof(LpBlobCheck) * num_parts);
	LpFile	  **files = palloc0(sizeof(LpFile *) * num_parts);
	char	  **old_dirs = palloc0(sizeof(char *) * num_parts);
	char	   *output_path = psprintf("%s/%s", data_dir, name);
	char	   *new_dir = lp_require_memory(lp_data_file_sidecar_dir(data_dir, name));
	char	   *relative_dir = psprintf("%s/%s", LP_DATA_DIR,
										(char *) lp_require_memory(lp_blob_sidecar_dir(name)));
	LpStore    *store = lp_store_for_uri_below(root, output_path, NULL);
	uint64		next_free = 1;
	volatile bool placed = false;
	volatile bool reencoded = false;
	bool		has_deletions = false;
	LpError		err;
	int			i = 0;
	ListCell   *cell;

	memset(result, 0, sizeof(*result));
	result->path = output_path;
	result->version = version;
	*sidecar_dir = NULL;
	lp_progress_begin(root, output_path, LP_PHASE_VALIDATING, num_parts);

	/* every descriptor and sidecar checked before anything is written */
	foreach(cell, parts)
	{
		LpAssemblePart *part = lfirst(cell);
		LpFile	   *file = lp_read_lance_file_below(root, part->path);

		if (part->has_expected_rows && file->num_rows != (uint64) part->expected_rows)
			ereport(ERROR,
					errcode(ERRCODE_DATA_CORRUPTED),
					errmsg("data file \"%s\" has " UINT64_FORMAT " rows, but its fragment has " INT64_FORMAT,
						   part->path, file->num_rows, part->expected_rows));
		if (!lp_reencode_check(file, schema, &err))
		{
			result->status = "unsupported";
			result->reason = lp_concat_reason_name(LP_CONCAT_SCHEMA_MISMATCH);
			result->message = pstrdup(err.message);
			lp_progress_end();
			return false;
		}
		old_dirs[i] = lp_require_memory(lp_blob_sidecar_dir(part->path));
		lp_blob_check_init_data_file(&checks[i], part->path, file->file_size);
		lp_blob_check_file(&checks[i], root, part->path, file, old_dirs[i]);
		files[i] = file;
		sources[i].input = lp_open_input_below(root, part->path);
		sources[i].file = file;
		sources[i].deletions = part->deletions;
		sources[i].blob_id_offset = blob_id_offset(checks[i].uses, checks[i].num_uses,
												   &next_free, part->path);
		has_deletions |= part->deletions != NULL;
		lp_progress_update(++i, 0);
	}

	/* the sidecars are complete before the file that names them; an ERROR removes them */
	PG_TRY();
	{
		place_group_sidecars(store, checks, sources, old_dirs, num_parts, new_dir, &placed);
		/* deleted rows are left out only by decoding */
		if (has_deletions ||
			!write_by_page_copy(root, data_dir, name, parts, files, sources, schema, version,
								result))
		{
			reencoded = true;
			write_by_reencoding(output_path, store, sources, num_parts, schema, version, result);
		}
	}
	PG_CATCH();
	{
		LpTreeRemoval removal;
		LpError		ignored;

		if (placed)
			(void) store->ops->remove_tree(store, root, relative_dir, &removal, &ignored);
		PG_RE_THROW();
	}
	PG_END_TRY();
	lp_progress_end();

	for (i = 0; i < num_parts; i++)
	{
		lp_input_close(sources[i].input);
		lp_blob_check_free(&checks[i]);
	}
	if (placed)
		*sidecar_dir = relative_dir;
	return reencoded;
}
