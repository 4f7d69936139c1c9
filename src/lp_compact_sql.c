/*
 * lp_compact_sql.c - compaction by page copy: groups of adjacent small
 * fragments are concatenated without decoding and committed as one Lance
 * Rewrite.
 *
 * A fragment takes part only when its rows are exactly its one data file:
 * no deletion file, one data file, in the dataset's storage format, in the
 * dataset root, and not covered by an index (rewriting would leave the index
 * pointing at fragments that no longer exist).  Everything else is reported
 * as skipped, with the reason.
 */
#include "postgres.h"

#include <unistd.h>

#include "catalog/pg_type.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

#include "lance_parts.h"
#include "lp_assemble.h"
#include "lp_commit.h"
#include "lp_manifest.h"
#include "lp_pg_storage.h"
#include "lp_progress.h"
#include "lp_target.h"

PG_FUNCTION_INFO_V1(lp_compact);

typedef struct Candidate
{
	const Lance__Table__DataFragment *fragment;
	const char *skip_reason;	/* NULL: eligible */
	int			group;			/* -1: not in a group */
} Candidate;

typedef struct CompactGroup
{
	int			first;			/* candidate indexes [first, first + count) */
	int			count;
	uint64_t	rows;
	char	   *file_name;
	LpAssembleResult result;
} CompactGroup;

static const char *
skip_reason(const LpManifest *manifest, const Lance__Table__DataFragment *fragment,
			LpFileVersion dataset_version, int64 target_rows)
{
	const Lance__Table__DataFile *file;
	uint16_t	major;
	uint16_t	minor;
	bool		indexed;
	LpError		err;

	if (fragment->deletion_file != NULL)
		return "deletion_file";
	if (fragment->n_files != 1)
		return "several_data_files";
	file = fragment->files[0];
	lp_file_version_data_file_numbers(dataset_version, &major, &minor);
	if (file->file_major_version != major || file->file_minor_version != minor)
		return "version_mismatch";
	if (file->base_id_present_case == LANCE__TABLE__DATA_FILE__BASE_ID_PRESENT_BASE_ID)
		return "external_base";
	if (!lp_manifest_fragment_indexed(manifest, fragment->id, NULL, 0, &indexed, &err))
		lp_raise(&err);
	if (indexed)
		return "indexed";
	if (fragment->physical_rows == 0 || fragment->physical_rows >= (uint64_t) target_rows)
		return "large_enough";
	return NULL;
}

static bool
same_columns(const Lance__Table__DataFile *a, const Lance__Table__DataFile *b)
{
	return a->n_fields == b->n_fields && a->n_column_indices == b->n_column_indices &&
		memcmp(a->fields, b->fields, sizeof(int32_t) * a->n_fields) == 0 &&
		memcmp(a->column_indices, b->column_indices, sizeof(int32_t) * a->n_column_indices) == 0;
}

Datum
lp_compact(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *root;
	LpManifestNaming naming;
	LpManifest *manifest;
	LpFileVersion version;
	int64		target_rows;
	Candidate  *candidates;
	int			num_candidates = 0;
	CompactGroup	   *groups;
	int			num_groups = 0;
	int			num_written = 0;
	LpRewriteGroup *rewrite;
	uint64_t  **old_ids;
	LpCommitRequest request;
	LpCommitOptions options;
	LpCommitResult result;
	LpError		err;
	char	   *data_dir;
	const char *format;
	Datum	   *wanted = NULL;
	bool	   *wanted_nulls;
	int			num_wanted = 0;

	InitMaterializedSRF(fcinfo, 0);
	if (PG_ARGISNULL(0) || PG_ARGISNULL(2))
		ereport(ERROR,
				errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("dataset and target_rows_per_fragment must not be NULL"));
	lp_check_read_privilege();
	lp_check_write_privilege();
	root = lp_resolve_existing_path(lp_local_write_path_from_uri(text_to_cstring(PG_GETARG_TEXT_PP(0)),
																 "the dataset of compact"),
									"dataset");
	target_rows = PG_GETARG_INT64(2);
	if (target_rows < 2 || target_rows > (int64) UINT32_MAX)
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("target_rows_per_fragment must be between 2 and %u", UINT32_MAX));
	if (!PG_ARGISNULL(1))
	{
		lp_check_one_dimensional(PG_GETARG_ARRAYTYPE_P(1), "fragment_ids");
		deconstruct_array(PG_GETARG_ARRAYTYPE_P(1), INT8OID, 8, FLOAT8PASSBYVAL,
						  TYPALIGN_DOUBLE, &wanted, &wanted_nulls, &num_wanted);
	}

	manifest = lp_dataset_read_latest(lp_local_store(), root, &naming, &err);
	if (manifest == NULL || !lp_manifest_check_flags(manifest, &err))
		lp_raise(&err);
	format = manifest->proto->data_format ? manifest->proto->data_format->version : "";
	if (!lp_file_version_parse(format, &version) || version == LP_FILE_VERSION_LEGACY)
		ereport(ERROR,
				errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				errmsg("dataset \"%s\" has data storage format \"%s\", which cannot be compacted by page copy",
					   root, format));
	if (manifest->proto->reader_feature_flags & LP_FLAG_STABLE_ROW_IDS)
		ereport(ERROR,
				errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				errmsg("dataset \"%s\" uses stable row ids, which compaction by page copy does not carry over yet",
					   root));
	for (int w = 0; w < num_wanted; w++)
		if (wanted_nulls[w] ||
			lp_manifest_find_fragment(manifest->proto, (uint64_t) DatumGetInt64(wanted[w])) == NULL)
			ereport(ERROR,
					errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					errmsg("dataset \"%s\" has no fragment %s", root,
						   wanted_nulls[w] ? "NULL" : psprintf(INT64_FORMAT, DatumGetInt64(wanted[w]))));

	/* candidates in dataset order, each eligible or skipped with a reason */
	candidates = palloc0(sizeof(Candidate) * Max(manifest->proto->n_fragments, 1));
	for (size_t f = 0; f < manifest->proto->n_fragments; f++)
	{
		const Lance__Table__DataFragment *fragment = manifest->proto->fragments[f];
		bool		selected = wanted == NULL;

		for (int w = 0; !selected && w < num_wanted; w++)
			selected = (uint64_t) DatumGetInt64(wanted[w]) == fragment->id;
		candidates[num_candidates].fragment = fragment;
		candidates[num_candidates].group = -1;
		candidates[num_candidates].skip_reason = selected
			? skip_reason(manifest, fragment, version, target_rows) : "not_selected";
		num_candidates++;
	}

	/* greedy runs of adjacent eligible fragments with compatible file layouts */
	groups = palloc0(sizeof(CompactGroup) * Max(num_candidates, 1));
	for (int i = 0; i < num_candidates;)
	{
		int			j = i;
		uint64_t	rows = 0;

		while (j < num_candidates && candidates[j].skip_reason == NULL &&
			   rows + candidates[j].fragment->physical_rows <= (uint64_t) target_rows &&
			   same_columns(candidates[i].fragment->files[0], candidates[j].fragment->files[0]))
			rows += candidates[j++].fragment->physical_rows;
		if (j - i >= 2)
		{
			groups[num_groups].first = i;
			groups[num_groups].count = j - i;
			groups[num_groups].rows = rows;
			for (int k = i; k < j; k++)
				candidates[k].group = num_groups;
			num_groups++;
			i = j;
		}
		else
		{
			if (candidates[i].skip_reason == NULL)
				candidates[i].skip_reason = "no_adjacent_fragment";
			i++;
		}
	}

	/* write every group's file; an unsupported group is skipped with the verdict */
	data_dir = psprintf("%s/%s", root, LP_DATA_DIR);
	for (int g = 0; g < num_groups; g++)
	{
		CompactGroup	   *group = &groups[g];
		List	   *parts = NIL;
		char		name[LP_DATA_FILE_NAME_SIZE];
		LpAssembleTarget no_target = {version, NULL, root};

		for (int k = group->first; k < group->first + group->count; k++)
		{
			LpAssemblePart *part = palloc0(sizeof(LpAssemblePart));

			part->path = psprintf("%s/%s", data_dir, candidates[k].fragment->files[0]->path);
			part->has_expected_rows = true;
			part->expected_rows = (int64) candidates[k].fragment->physical_rows;
			parts = lappend(parts, part);
		}
		if (!lp_generate_data_file_name(lp_random_bytes, NULL, name, &err))
			lp_raise(&err);
		group->file_name = pstrdup(name);
		lp_assemble_file(psprintf("%s/%s", data_dir, name), parts, &no_target, false,
						 &group->result);
		if (strcmp(group->result.status, "written") != 0)
			for (int k = group->first; k < group->first + group->count; k++)
			{
				candidates[k].skip_reason = group->result.reason;
				candidates[k].group = -1;
			}
		else
			num_written++;
	}

	memset(&result, 0, sizeof(result));
	if (num_written > 0)
	{
		int			n = 0;

		rewrite = palloc0(sizeof(LpRewriteGroup) * num_written);
		old_ids = palloc0(sizeof(uint64_t *) * num_written);
		for (int g = 0; g < num_groups; g++)
		{
			CompactGroup	   *group = &groups[g];
			const Lance__Table__DataFile *first;

			if (strcmp(group->result.status, "written") != 0)
				continue;
			first = candidates[group->first].fragment->files[0];
			old_ids[n] = palloc(sizeof(uint64_t) * group->count);
			for (int k = 0; k < group->count; k++)
				old_ids[n][k] = candidates[group->first + k].fragment->id;
			rewrite[n].old_fragment_ids = old_ids[n];
			rewrite[n].n_old = group->count;
			rewrite[n].file.path = group->file_name;
			rewrite[n].file.fields = first->fields;
			rewrite[n].file.column_indices = first->column_indices;
			rewrite[n].file.n_fields = first->n_fields;
			rewrite[n].file.version = version;
			rewrite[n].file.size_bytes = group->result.size_bytes;
			rewrite[n].physical_rows = group->rows;
			n++;
		}
		memset(&request, 0, sizeof(request));
		request.kind = LP_COMMIT_REWRITE;
		request.read_version = manifest->proto->version;
		request.groups = rewrite;
		request.n_groups = num_written;
		options.max_retries = lp_commit_retries;
		options.random = lp_random_bytes;
		options.random_arg = NULL;
		/* several files may be committed: progress names their directory */
		lp_progress_begin(root, data_dir, LP_PHASE_COMMITTING, 0);
		if (!lp_commit(lp_local_store(), root, &request, &options, &result, &err))
		{
			/* the new files are referenced by nothing: remove them */
			for (int g = 0; g < num_groups; g++)
				if (strcmp(groups[g].result.status, "written") == 0)
					unlink(groups[g].result.path);
			lp_raise(&err);
		}
		lp_progress_end();
	}

	for (int i = 0, n = -1, last_group = -1; i < num_candidates; i++)
	{
		Datum		values[5];
		bool		nulls[5] = {false, false, false, false, false};
		int			g = candidates[i].group;

		if (g >= 0 && g != last_group)
		{
			n++;
			last_group = g;
		}
		values[0] = Int64GetDatum((int64) candidates[i].fragment->id);
		values[1] = CStringGetTextDatum(g >= 0 ? "rewritten" : "skipped");
		nulls[2] = g >= 0;
		values[2] = g >= 0 ? (Datum) 0 : CStringGetTextDatum(candidates[i].skip_reason);
		nulls[3] = g < 0;
		values[3] = g >= 0 ? Int64GetDatum((int64) result.new_fragment_ids[n]) : (Datum) 0;
		nulls[4] = g < 0;
		values[4] = Int64GetDatum((int64) result.version);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
