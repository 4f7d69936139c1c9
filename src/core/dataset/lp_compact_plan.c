/*
 * lp_compact_plan.c - planning compaction by page copy (see lp_compact_plan.h).
 */
#include <string.h>

#include "base/lp_alloc.h"
#include "dataset/lp_compact_plan.h"

/*
 * The bits (as lp_manifest_fragment_indexes gives them) of the indexes
 * compaction cannot remap: all but BTREE and BITMAP indexes (of the
 * layouts lp_btree_remap.h and lp_bitmap_remap.h know) and IVF vector
 * indexes (lp_ivf_remap.h; the forms it does not read are found when their
 * files are read) of one field in the dataset's own base.
 */
static bool
unremappable_indexes(const LpManifest *manifest, uint64_t *bits, LpError *err)
{
	LpIndexEntry *entries;
	size_t		n_entries;

	*bits = 0;
	if (!lp_manifest_index_entries(manifest, &entries, &n_entries, err))
		return false;
	for (size_t i = 0; i < n_entries; i++)
	{
		bool		scalar = strcmp(entries[i].type_url, LP_BTREE_DETAILS_TYPE_URL) == 0 ||
			strcmp(entries[i].type_url, LP_BITMAP_DETAILS_TYPE_URL) == 0;
		bool		vector = strcmp(entries[i].type_url, LP_VECTOR_DETAILS_TYPE_URL) == 0;
		int32_t		version = vector ? LP_REMAPPED_VECTOR_INDEX_VERSION : LP_REMAPPED_INDEX_VERSION;

		if ((!scalar && !vector) || entries[i].n_fields != 1 || entries[i].has_base_id ||
			(entries[i].has_index_version && entries[i].index_version != version))
			*bits |= (uint64_t) 1 << (i % 64);
	}
	lp_manifest_index_entries_free(entries, n_entries);
	return true;
}

/* Why a selected fragment cannot be rewritten, or NULL; false on error. */
static bool
skip_reason(const LpManifest *manifest, const LpFragment *fragment,
			const LpDataFileRef *file, LpFileVersion version, uint64_t target_rows,
			bool rewrite_deletions, uint64_t unremappable, LpCompactCandidate *candidate,
			const char **reason, LpError *err)
{
	*reason = NULL;
	if (fragment->has_deletion_file && !rewrite_deletions)
		*reason = LP_COMPACT_DELETION_FILE;
	else if (fragment->has_deletion_file && fragment->deletion_file.has_base_id)
		*reason = LP_COMPACT_EXTERNAL_BASE;
	else if (fragment->num_files != 1)
		*reason = LP_COMPACT_SEVERAL_FILES;
	else if (!lp_data_file_has_version(file, version))
		*reason = LP_COMPACT_VERSION_MISMATCH;
	else if (!lp_data_file_in_base(file, false, 0))
		*reason = LP_COMPACT_EXTERNAL_BASE;
	else
	{
		if (!lp_manifest_fragment_indexes(manifest, fragment->id, NULL, 0,
										  &candidate->indexes, err))
			return false;
		/* indexes keyed on row addresses are remapped; stable row ids do not move */
		if ((candidate->indexes & unremappable) != 0 && !lp_manifest_stable_row_ids(manifest))
			*reason = LP_COMPACT_INDEXED;
		else if (!fragment->has_deletion_file &&
				 (fragment->physical_rows == 0 || fragment->physical_rows >= target_rows))
			*reason = LP_COMPACT_LARGE_ENOUGH;
	}
	return true;
}

static bool
is_selected(uint64_t id, const uint64_t *selected, size_t n_selected)
{
	if (selected == NULL)
		return true;
	for (size_t i = 0; i < n_selected; i++)
		if (selected[i] == id)
			return true;
	return false;
}

/* The rows a candidate brings into a group: its live rows where known. */
static uint64_t
group_rows(const LpCompactCandidate *candidate)
{
	if (candidate->has_deletion_file &&
		candidate->deletion_file.num_deleted_rows <= candidate->physical_rows)
		return candidate->physical_rows - candidate->deletion_file.num_deleted_rows;
	return candidate->physical_rows;
}

/*
 * Greedy runs of adjacent eligible candidates with the same file layout,
 * covered by the same indexes (a group's new fragment is covered by an index
 * exactly when all of its old ones were); a candidate with a deletion file
 * forms a group even alone.
 */
static bool
form_groups(LpCompactPlan *plan, uint64_t target_rows, LpError *err)
{
	LpCompactCandidate *c = plan->candidates;

	for (size_t i = 0; i < plan->n_candidates;)
	{
		size_t		j = i;
		uint64_t	rows = 0;
		bool		deletions = false;

		while (j < plan->n_candidates && c[j].skip_reason == NULL &&
			   (j == i || rows + group_rows(&c[j]) <= target_rows) &&
			   c[j].indexes == c[i].indexes &&
			   lp_data_file_same_columns(&c[i].file, &c[j].file))
		{
			deletions |= c[j].has_deletion_file;
			rows += group_rows(&c[j++]);
		}
		if (j - i >= 2 || (j - i == 1 && deletions))
		{
			LpCompactGroup *group = &plan->groups[plan->n_groups];

			group->first = i;
			group->count = j - i;
			group->rows = rows;
			group->fragment_ids = lp_alloc_array(j - i, sizeof(uint64_t));
			if (group->fragment_ids == NULL)
				return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory planning a compaction");
			for (size_t k = i; k < j; k++)
			{
				group->fragment_ids[k - i] = c[k].fragment_id;
				c[k].group = (int64_t) plan->n_groups;
			}
			plan->n_groups++;
			i = j;
		}
		else
		{
			if (c[i].skip_reason == NULL)
				c[i].skip_reason = LP_COMPACT_NO_ADJACENT;
			i++;
		}
	}
	return true;
}

bool
lp_compact_check_dataset(const LpManifest *manifest, const char *dataset,
						 LpFileVersion *version, LpError *err)
{
	const char *format = lp_manifest_data_format(manifest);

	if (!lp_manifest_data_version(manifest, version) || *version == LP_FILE_VERSION_LEGACY)
		return lp_fail(err, LP_ERR_UNSUPPORTED,
					   "dataset \"%s\" has data storage format \"%s\", which cannot be compacted by page copy",
					   dataset, format ? format : "");
	return true;
}

bool
lp_compact_plan(const LpManifest *manifest, const char *dataset,
				const uint64_t *selected, size_t n_selected, uint64_t target_rows,
				bool rewrite_deletions, LpCompactPlan *plan, LpError *err)
{
	size_t		n_fragments = lp_manifest_num_fragments(manifest);
	uint64_t	unremappable;

	memset(plan, 0, sizeof(*plan));
	if (!lp_compact_check_dataset(manifest, dataset, &plan->version, err) ||
		!unremappable_indexes(manifest, &unremappable, err))
		return false;
	plan->read_version = lp_manifest_version(manifest);
	plan->candidates = lp_alloc_array(n_fragments > 0 ? n_fragments : 1,
									  sizeof(LpCompactCandidate));
	plan->groups = lp_alloc_array(n_fragments > 0 ? n_fragments : 1, sizeof(LpCompactGroup));
	if (plan->candidates == NULL || plan->groups == NULL)
	{
		lp_compact_plan_free(plan);
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory planning a compaction");
	}
	memset(plan->groups, 0, sizeof(LpCompactGroup) * (n_fragments > 0 ? n_fragments : 1));

	/* candidates in dataset order, each eligible or skipped with a reason */
	for (size_t f = 0; f < n_fragments; f++)
	{
		LpCompactCandidate *candidate = &plan->candidates[f];
		LpFragment	fragment;

		lp_manifest_fragment(manifest, f, &fragment);
		memset(candidate, 0, sizeof(*candidate));
		candidate->fragment_id = fragment.id;
		candidate->physical_rows = fragment.physical_rows;
		candidate->has_deletion_file = fragment.has_deletion_file;
		candidate->deletion_file = fragment.deletion_file;
		candidate->group = -1;
		if (fragment.num_files == 1)
			lp_fragment_data_file(manifest, &fragment, 0, &candidate->file);
		if (!is_selected(fragment.id, selected, n_selected))
			candidate->skip_reason = LP_COMPACT_NOT_SELECTED;
		else if (!skip_reason(manifest, &fragment, &candidate->file, plan->version,
							  target_rows, rewrite_deletions, unremappable, candidate,
							  &candidate->skip_reason, err))
		{
			lp_compact_plan_free(plan);
			return false;
		}
		plan->n_candidates++;
	}
	if (!form_groups(plan, target_rows, err))
	{
		lp_compact_plan_free(plan);
		return false;
	}
	return true;
}

void
lp_compact_plan_skip_group(LpCompactPlan *plan, size_t g, const char *reason)
{
	LpCompactGroup *group = &plan->groups[g];

	group->skipped = true;
	for (size_t k = group->first; k < group->first + group->count; k++)
	{
		plan->candidates[k].skip_reason = reason;
		plan->candidates[k].group = -1;
	}
}

void
lp_compact_plan_free(LpCompactPlan *plan)
{
	for (size_t g = 0; plan->groups != NULL && g < plan->n_groups; g++)
		lp_free(plan->groups[g].fragment_ids);
	lp_free(plan->groups);
	lp_free(plan->candidates);
	memset(plan, 0, sizeof(*plan));
}
