/*
 * lp_compact_sql.c - compaction by page copy, the SQL function: the core
 * plans which fragments are rewritten in which groups (lp_compact_plan.h
 * says which fragments take part), this file writes each group's file by
 * concatenation without decoding and commits them as one Lance Rewrite.
 * With rewrite_deletions, fragments with deletion files take part: their
 * deletion files are read and their live rows re-encoded into the group's
 * file (lp_assemble_file, in the staging directory a target of the new
 * file would have, removed again), and the Rewrite records which deletion file each was read
 * through, so that a concurrent delete makes the commit a conflict.
 * Everything not rewritten is reported as skipped, with the reason.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

#include "assemble/lp_assemble.h"
#include "base/lp_alloc.h"
#include "dataset/lp_commit.h"
#include "functions/lp_compact_blobs.h"
#include "functions/lp_compact_indexes.h"
#include "write/lp_publication.h"
#include "dataset/lp_compact_plan.h"
#include "dataset/lp_dataset.h"
#include "format/lp_deletion.h"
#include "base/lp_pg_alloc.h"
#include "base/lp_pg_error.h"
#include "base/lp_pg_random.h"
#include "store/lp_pg_storage.h"
#include "assemble/lp_progress.h"
#include "base/lp_sql_args.h"

PG_FUNCTION_INFO_V1(lp_compact);

/* The fragment ids to consider, NULL for all; ERROR for one the dataset lacks. */
static uint64_t *
selected_fragments(FunctionCallInfo fcinfo, const LpManifest *manifest, const char *root,
				   size_t *n_selected)
{
	Datum	   *wanted;
	bool	   *wanted_nulls;
	int			num_wanted;
	uint64_t   *selected;

	*n_selected = 0;
	if (PG_ARGISNULL(1))
		return NULL;
	lp_check_one_dimensional(PG_GETARG_ARRAYTYPE_P(1), "fragment_ids");
	deconstruct_array(PG_GETARG_ARRAYTYPE_P(1), INT8OID, 8, FLOAT8PASSBYVAL,
					  TYPALIGN_DOUBLE, &wanted, &wanted_nulls, &num_wanted);
	selected = palloc(sizeof(uint64_t) * Max(num_wanted, 1));
	for (int w = 0; w < num_wanted; w++)
	{
		if (wanted_nulls[w] ||
			!lp_manifest_has_fragment(manifest, (uint64_t) DatumGetInt64(wanted[w])))
			ereport(ERROR,
					errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					errmsg("dataset \"%s\" has no fragment %s", root,
						   wanted_nulls[w] ? "NULL" : psprintf(INT64_FORMAT, DatumGetInt64(wanted[w]))));
		selected[w] = (uint64_t) DatumGetInt64(wanted[w]);
	}
	*n_selected = num_wanted;
	return selected;
}

/* The deleted rows of a candidate, read from its deletion file in the dataset root. */
static LpDeletions *
read_deletions(const LpCompactCandidate *candidate, const char *root)
{
	char	   *relative = lp_require_memory(lp_deletion_file_path(candidate->fragment_id,
																	  candidate->deletion_file.read_version,
																	  candidate->deletion_file.id,
																	  candidate->deletion_file.form));
	LpInput    *input = lp_open_input_in(lp_store_below(root), psprintf("%s/%s", root, relative));
	LpDeletions *deletions = palloc0(sizeof(LpDeletions));
	LpError		err;

	if (!lp_deletions_read(input, candidate->deletion_file.form, candidate->physical_rows,
						   deletions, &err))
		lp_raise(&err);
	lp_input_close(input);
	lp_free(relative);
	return deletions;
}

/*
 * The file written for a group: its name in the data directory, its sidecar
 * directory relative to the root (or NULL), and its fields and columns when
 * they are not those of the group's first file (NULL: they are).
 */
typedef struct GroupFile
{
	char	   *name;
	char	   *sidecar_dir;
	int32_t    *fields;
	int32_t    *column_indices;
	size_t		n_fields;
} GroupFile;

/*
 * Write the file of every group of the plan into data_dir; a group whose
 * parts cannot be concatenated is taken out of the plan with the verdict.
 * Returns how many were written; results[g] tells about group g, and
 * deletions[g] (NULL when no fragment of the group has a deletion file) the
 * deletion files its live rows were read through.
 */
static int
write_group_files(LpCompactPlan *plan, const LpManifest *manifest, const char *root,
				  const char *data_dir, LpAssembleResult *results, GroupFile *files,
				  LpRewriteDeletions **deletions)
{
	LpSchema   *schema = NULL;

	int			num_written = 0;

	for (size_t g = 0; g < plan->n_groups; g++)
	{
		const LpCompactGroup *group = &plan->groups[g];
		List	   *parts = NIL;
		char		name[LP_DATA_FILE_NAME_SIZE];
		LpAssembleTarget no_target = {plan->version, NULL, root, NULL, true, false, root};
		LpError		err;

		/* left out before anything was written (lp_compact_skip_unremappable_vector_groups) */
		if (group->skipped)
			continue;
		for (size_t k = group->first; k < group->first + group->count; k++)
		{
			const LpCompactCandidate *candidate = &plan->candidates[k];
			LpAssemblePart *part = palloc0(sizeof(LpAssemblePart));

			part->path = psprintf("%s/%s", data_dir, candidate->file.path);
			part->has_expected_rows = true;
			part->expected_rows = (int64) candidate->physical_rows;
			if (candidate->has_deletion_file)
			{
				LpRewriteDeletions *read;

				if (deletions[g] == NULL)
					deletions[g] = palloc0(sizeof(LpRewriteDeletions) * group->count);
				part->deletions = read_deletions(candidate, root);
				read = &deletions[g][k - group->first];
				read->has_deletion_file = true;
				read->read_version = candidate->deletion_file.read_version;
				read->id = candidate->deletion_file.id;
				read->live_rows = candidate->physical_rows - part->deletions->num_deleted;
				read->deleted = part->deletions;
			}
			parts = lappend(parts, part);
		}
		if (!lp_generate_data_file_name(lp_random_bytes, NULL, name, &err))
			lp_raise(&err);
		files[g].name = pstrdup(name);
		if (lp_compact_file_has_blobs(root, ((LpAssemblePart *) linitial(parts))->path))
		{
			if (schema == NULL)
			{
				schema = palloc0(sizeof(LpSchema));
				if (!lp_manifest_schema(manifest, schema, &err))
					lp_raise(&err);
			}
			/* re-encoded: the columns of the dataset's schema, as the writer lays them out */
			if (lp_compact_blob_group(root, data_dir, name, parts, schema, plan->version,
									  &results[g], &files[g].sidecar_dir) &&
				!lp_data_file_columns(schema, NULL, 0, plan->version, &files[g].fields,
									  &files[g].column_indices, &files[g].n_fields, &err))
				lp_raise(&err);
		}
		else
		{
			if (deletions[g] != NULL)
				no_target.reencode_dir = psprintf("%s/_parts/%s", data_dir, name);
			lp_assemble_file(psprintf("%s/%s", data_dir, name), parts, &no_target, false,
							 &results[g]);
		}
		if (strcmp(results[g].status, "written") != 0)
			lp_compact_plan_skip_group(plan, g, results[g].reason);
		else
			num_written++;
	}
	return num_written;
}

/* The indexes remapped for the written groups (datasets without stable row ids). */
typedef struct RemappedIndexes
{
	LpRewrittenIndex *rewritten;
	size_t		n_rewritten;
	uint64_t	first_new_fragment_id;
	List	   *directories;	/* LpPublicationPath * of their directories */
} RemappedIndexes;

/*
 * Remap the indexes over the written groups.  An ERROR (a damaged index)
 * removes the group files and whatever was written of the indexes first, so
 * that a failed compaction leaves nothing behind.
 */
static void
remap_indexes(const LpCompactPlan *plan, const LpManifest *manifest, const char *root,
			  const GroupFile *files, LpRewriteDeletions *const *deletions,
			  RemappedIndexes *indexes)
{
	LpError		err;
	MemoryContext context = CurrentMemoryContext;

	memset(indexes, 0, sizeof(*indexes));
	if (!lp_manifest_next_fragment_id(manifest, &indexes->first_new_fragment_id, &err))
		lp_raise(&err);
	lp_pg_map_large_begin();
	PG_TRY();
	{
		indexes->rewritten = lp_compact_remap_indexes(plan, manifest, root, deletions,
													  indexes->first_new_fragment_id,
													  &indexes->n_rewritten,
													  &indexes->directories);
		lp_pg_map_large_end();
	}
	PG_CATCH();
	{
		List	   *written;
		ErrorData  *edata;

		lp_pg_map_large_end();
		/* the error kept aside: the removals handle errors of their own */
		MemoryContextSwitchTo(context);
		edata = CopyErrorData();
		FlushErrorState();
		written = indexes->directories;

		for (size_t g = 0; g < plan->n_groups; g++)
		{
			if (plan->groups[g].skipped)
				continue;
			written = lappend(written,
							  lp_publication_path(root, psprintf("%s/%s", LP_DATA_DIR, files[g].name),
												  false, psprintf("The compacted file \"%s\"",
																  files[g].name)));
			if (files[g].sidecar_dir != NULL)
				written = lappend(written,
								  lp_publication_path(root, files[g].sidecar_dir, true,
													  psprintf("The sidecar directory \"%s/%s\"", root,
															   files[g].sidecar_dir)));
		}
		lp_publication_discard(root, InvalidOid, written);
		ReThrowError(edata);
	}
	PG_END_TRY();
}

/*
 * Commit the written groups as one Rewrite on the version planned on, now
 * (true, *result filled) or with the transaction (false).
 */
static bool
commit_rewrite(const LpCompactPlan *plan, const LpManifest *manifest, LpManifestNaming naming,
			   const char *root, const char *data_dir,
			   const LpAssembleResult *results, const GroupFile *files,
			   LpRewriteDeletions *const *deletions, int num_written,
			   const RemappedIndexes *indexes, LpCommitResult *result)
{
	LpRewriteGroup *rewrite = palloc0(sizeof(LpRewriteGroup) * num_written);
	LpCommitRequest request;
	LpPublicationRequest publication = {0};
	bool		published;
	int			n = 0;

	publication.written = list_copy(indexes->directories);

	for (size_t g = 0; g < plan->n_groups; g++)
	{
		const LpCompactGroup *group = &plan->groups[g];
		const LpDataFileRef *first = &plan->candidates[group->first].file;

		if (group->skipped)
			continue;
		rewrite[n].old_fragment_ids = group->fragment_ids;
		rewrite[n].n_old = group->count;
		rewrite[n].file.path = files[g].name;
		rewrite[n].file.fields = files[g].fields != NULL ? files[g].fields : first->fields;
		rewrite[n].file.column_indices = files[g].fields != NULL ? files[g].column_indices :
			first->column_indices;
		rewrite[n].file.n_fields = files[g].fields != NULL ? files[g].n_fields : first->n_fields;
		rewrite[n].file.version = plan->version;
		rewrite[n].file.size_bytes = results[g].size_bytes;
		rewrite[n].physical_rows = results[g].num_rows;
		rewrite[n].deletions = deletions[g];
		publication.written =
			lappend(publication.written,
					lp_publication_path(root, psprintf("%s/%s", LP_DATA_DIR, files[g].name), false,
										psprintf("The compacted file \"%s\"", results[g].path)));
		if (files[g].sidecar_dir != NULL)
			publication.written =
				lappend(publication.written,
						lp_publication_path(root, files[g].sidecar_dir, true,
											psprintf("The sidecar directory \"%s/%s\"", root,
													 files[g].sidecar_dir)));
		n++;
	}
	memset(&request, 0, sizeof(request));
	request.kind = LP_COMMIT_REWRITE;
	request.read_version = plan->read_version;
	request.read_manifest = manifest;
	request.read_naming = naming;
	request.groups = rewrite;
	request.n_groups = num_written;
	request.rewritten_indices = indexes->rewritten;
	request.n_rewritten_indices = indexes->n_rewritten;
	request.first_new_fragment_id = indexes->first_new_fragment_id;
	publication.root = root;
	publication.commit = &request;
	/* several files may be committed: progress names their directory */
	lp_progress_begin(root, data_dir, LP_PHASE_COMMITTING, 0);
	published = lp_publish(&publication, result);
	lp_progress_end();
	return published;
}

Datum
lp_compact(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	LpStore    *store;
	char	   *key;
	char	   *root;
	LpManifestNaming naming;
	LpManifest *manifest;
	LpFileVersion version;
	int64		target_rows;
	uint64_t   *selected;
	size_t		n_selected;
	LpCompactPlan plan;
	LpAssembleResult *results;
	GroupFile  *files;
	LpRewriteDeletions **deletions;
	bool		rewrite_deletions;
	int			num_written;
	bool		published = false;
	LpCommitResult result;
	LpError		err;
	char	   *data_dir;
	RemappedIndexes indexes;

	InitMaterializedSRF(fcinfo, 0);
	if (PG_ARGISNULL(0) || PG_ARGISNULL(2) || PG_ARGISNULL(3))
		ereport(ERROR,
				errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("dataset, target_rows_per_fragment and rewrite_deletions must not be NULL"));
	rewrite_deletions = PG_GETARG_BOOL(3);
	lp_check_read_privilege_for(text_to_cstring(PG_GETARG_TEXT_PP(0)));
	lp_check_write_privilege_for(text_to_cstring(PG_GETARG_TEXT_PP(0)));
	store = lp_store_for_write_uri(text_to_cstring(PG_GETARG_TEXT_PP(0)),
								   "the dataset of compact", &key);
	root = lp_resolve_existing_path(store, key, "dataset");
	store = lp_store_below(root);
	target_rows = PG_GETARG_INT64(2);
	if (target_rows < 2 || target_rows > (int64) UINT32_MAX)
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("target_rows_per_fragment must be between 2 and %u", UINT32_MAX));

	manifest = lp_read_latest_manifest(store, root, InvalidOid, &naming, &err);
	if (manifest == NULL || !lp_manifest_check_writable(manifest, root, &err) ||
		!lp_compact_check_dataset(manifest, root, &version, &err))
		lp_raise(&err);
	selected = selected_fragments(fcinfo, manifest, root, &n_selected);
	if (!lp_compact_plan(manifest, root, selected, n_selected, (uint64_t) target_rows,
						 rewrite_deletions, &plan, &err))
		lp_raise(&err);
	lp_compact_skip_unremappable_vector_groups(&plan, manifest, root);

	data_dir = lp_require_memory(lp_base_data_dir(root, true));
	results = palloc0(sizeof(LpAssembleResult) * Max(plan.n_groups, 1));
	files = palloc0(sizeof(GroupFile) * Max(plan.n_groups, 1));
	deletions = palloc0(sizeof(LpRewriteDeletions *) * Max(plan.n_groups, 1));
	num_written = write_group_files(&plan, manifest, root, data_dir, results, files, deletions);
	memset(&result, 0, sizeof(result));
	if (num_written > 0)
	{
		remap_indexes(&plan, manifest, root, files, deletions, &indexes);
		published = commit_rewrite(&plan, manifest, naming, root, data_dir, results, files,
								   deletions, num_written, &indexes, &result);
	}

	for (int64_t i = 0, n = -1, last_group = -1; i < (int64_t) plan.n_candidates; i++)
	{
		const LpCompactCandidate *candidate = &plan.candidates[i];
		Datum		values[5];
		bool		nulls[5] = {false, false, false, false, false};
		int64_t		g = candidate->group;

		/* one new fragment per written group, in order */
		if (g >= 0 && g != last_group)
		{
			n++;
			last_group = g;
		}
		values[0] = Int64GetDatum((int64) candidate->fragment_id);
		values[1] = CStringGetTextDatum(g >= 0 ? "rewritten" : "skipped");
		nulls[2] = g >= 0;
		values[2] = g >= 0 ? (Datum) 0 : CStringGetTextDatum(candidate->skip_reason);
		/* known once published */
		nulls[3] = g < 0 || !published;
		values[3] = nulls[3] ? (Datum) 0 : Int64GetDatum((int64) result.new_fragment_ids[n]);
		nulls[4] = g < 0 || !published;
		values[4] = Int64GetDatum((int64) result.version);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
