/*
 * lp_compact_blobs.c - compaction of a group of data files with Blob v2
 * columns (see lp_compact_blobs.h).
 */
#include "postgres.h"

#include "miscadmin.h"

#include "assemble/lp_progress.h"
#include "base/lp_path.h"
#include "concat/lp_concat.h"
#include "dataset/lp_dataset.h"
#include "format/lp_columns.h"
#include "lp_pg_error.h"
#include "reencode/lp_reencode.h"
#include "sql/lp_compact_blobs.h"
#include "sql/lp_sidecar.h"
#include "storage/lp_pg_storage.h"
#include "target/lp_part_blobs.h"

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
 * Give sidecar from its new name to in the store: a link where the store
 * can make one, else a copy within the store.
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

void
lp_compact_blob_group(const char *root, const char *data_dir, const char *name, List *parts,
					  const LpSchema *schema, LpFileVersion version, LpAssembleResult *result,
					  char **sidecar_dir)
{
	int			num_parts = list_length(parts);
	LpReencodeSource *sources = palloc0(sizeof(LpReencodeSource) * num_parts);
	LpBlobCheck *checks = palloc0(sizeof(LpBlobCheck) * num_parts);
	char	  **old_dirs = palloc0(sizeof(char *) * num_parts);
	char	   *output_path = psprintf("%s/%s", data_dir, name);
	char	   *new_dir = lp_require_memory(lp_data_file_sidecar_dir(data_dir, name));
	char	   *relative_dir = psprintf("%s/%s", LP_DATA_DIR,
										(char *) lp_require_memory(lp_blob_sidecar_dir(name)));
	LpStore    *store = lp_store_for_uri_below(root, output_path, NULL);
	uint64		next_free = 1;
	volatile bool placed = false;
	LpOutput   *output;
	uint64		rows;
	uint64		size;
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
			return;
		}
		old_dirs[i] = lp_require_memory(lp_blob_sidecar_dir(part->path));
		lp_blob_check_init_data_file(&checks[i], part->path, file->file_size);
		lp_blob_check_file(&checks[i], root, part->path, file, old_dirs[i]);
		sources[i].input = lp_open_input_below(root, part->path);
		sources[i].file = file;
		sources[i].deletions = part->deletions;
		sources[i].blob_id_offset = blob_id_offset(checks[i].uses, checks[i].num_uses,
												   &next_free, part->path);
		lp_progress_update(++i, 0);
	}

	lp_progress_phase(LP_PHASE_REENCODING, 0, 0, 0, 0);
	output = store->ops->create_output(store, output_path, &err);
	if (output == NULL)
		lp_raise(&err);
	if (!lp_reencode_files(sources, num_parts, schema, version, output, NULL, &rows, &size,
						   &err))
	{
		output->ops->abort(output);
		lp_raise(&err);
	}

	/* the sidecars are complete before the file that names them; an ERROR removes them */
	PG_TRY();
	{
		place_group_sidecars(store, checks, sources, old_dirs, num_parts, new_dir, &placed);
		lp_progress_phase(LP_PHASE_FINALIZING, num_parts, (int64) size, (int64) size, 0);
		if (!output->ops->publish(output, &err))
			lp_raise(&err);
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
	result->status = "written";
	result->num_rows = rows;
	result->size_bytes = size;
	if (placed)
		*sidecar_dir = relative_dir;
}
