/*
 * lp_compact_indexes.c - remapping the indexes a compaction moves rows
 * under (lp_compact_indexes.h): the row address map of the written groups
 * (core index/lp_row_address_map), each covering BTREE or BITMAP index
 * rewritten by the core (index/lp_btree_remap, index/lp_bitmap_remap) into
 * _indices/<new uuid>/.
 */
#include "postgres.h"

#include "base/lp_alloc.h"
#include "dataset/lp_dataset.h"
#include "format/lp_roaring.h"
#include "functions/lp_compact_indexes.h"
#include "index/lp_bitmap_remap.h"
#include "index/lp_btree_index.h"
#include "index/lp_btree_remap.h"
#include "index/lp_row_address_map.h"
#include "base/lp_pg_error.h"
#include "base/lp_pg_random.h"
#include "store/lp_pg_storage.h"
#include "write/lp_publication.h"

#define INDICES_DIR "_indices"

/* Where the rows of every fragment of the written groups go. */
static LpRowAddressMap *
moved_rows(const LpCompactPlan *plan, LpRewriteDeletions *const *deletions, uint64_t first_new_id)
{
	LpMovedFragment *moved = palloc0(sizeof(LpMovedFragment) * Max(plan->n_candidates, 1));
	size_t		n_moved = 0;
	uint64_t	new_id = first_new_id;
	LpRowAddressMap *map;
	LpError		err;

	for (size_t g = 0; g < plan->n_groups; g++)
	{
		const LpCompactGroup *group = &plan->groups[g];
		uint64_t	next_row = 0;

		if (group->skipped)
			continue;
		for (size_t k = 0; k < group->count; k++)
		{
			const LpCompactCandidate *candidate = &plan->candidates[group->first + k];
			const LpDeletions *deleted = deletions[g] != NULL ? deletions[g][k].deleted : NULL;
			LpMovedFragment *f = &moved[n_moved++];

			f->old_id = candidate->fragment_id;
			f->physical_rows = candidate->physical_rows;
			f->deleted = deleted;
			f->new_id = new_id;
			f->new_first_row = next_row;
			next_row += candidate->physical_rows - (deleted != NULL ? deleted->num_deleted : 0);
		}
		new_id++;
	}
	if (!lp_row_address_map_new(moved, n_moved, &map, &err))
		lp_raise(&err);
	return map;
}

/* Whether the index covers a fragment the map moves. */
static bool
covers_moved(const LpIndexEntry *entry, const LpCompactPlan *plan, const LpRowAddressMap *map)
{
	for (size_t i = 0; i < plan->n_candidates; i++)
	{
		uint64_t	id = plan->candidates[i].fragment_id;
		bool		covers = false;
		LpError		err;

		if (id > UINT32_MAX || !lp_row_address_map_moves(map, id, NULL))
			continue;
		if (!lp_roaring32_contains(entry->fragment_bitmap, entry->fragment_bitmap_len,
								   (uint32_t) id, &covers, &err))
			lp_raise(&err);
		if (covers)
			return true;
	}
	return false;
}

static void
publish_output(LpOutput *output)
{
	LpError		err;

	if (!output->ops->publish(output, &err))
		lp_raise(&err);
}

static LpOutput *
create_output(LpStore *store, const char *path)
{
	LpError		err;
	LpOutput   *output = store->ops->create_output(store, path, &err);

	if (output == NULL)
		lp_raise(&err);
	return output;
}

static void
raise_not_remapped(LpError *err, const char *name, const char *root)
{
	lp_error_detail(err, "Index \"%s\" of dataset \"%s\" could not be remapped, so its fragments were not compacted.",
					name, root);
	lp_raise(err);
}

/*
 * Write the remapped index old_dir holds (a BTREE or BITMAP index, as
 * type_url says) into new_dir (paths below root); its outputs are
 * published only when all are written.
 */
static void
remap_index(const char *root, const char *name, const char *type_url, const char *old_dir,
			const char *new_dir, const LpRowAddressMap *map)
{
	LpStore    *store = lp_store_below(root);
	LpError		err;

	if (strcmp(type_url, LP_BITMAP_DETAILS_TYPE_URL) == 0)
	{
		LpInput    *lookup = lp_open_input_in(store, psprintf("%s/%s/%s", root, old_dir, LP_BITMAP_LOOKUP_FILE));
		LpOutput   *out = create_output(store, psprintf("%s/%s/%s", root, new_dir, LP_BITMAP_LOOKUP_FILE));

		if (!lp_bitmap_index_remap(lookup, map, out, &err))
			raise_not_remapped(&err, name, root);
		publish_output(out);
		lp_input_close(lookup);
	}
	else
	{
		LpInput    *lookup = lp_open_input_in(store, psprintf("%s/%s/%s", root, old_dir, LP_BTREE_LOOKUP_FILE));
		LpInput    *pages = lp_open_input_in(store, psprintf("%s/%s/%s", root, old_dir, LP_BTREE_PAGES_FILE));
		LpOutput   *lookup_out = create_output(store, psprintf("%s/%s/%s", root, new_dir, LP_BTREE_LOOKUP_FILE));
		LpOutput   *pages_out = create_output(store, psprintf("%s/%s/%s", root, new_dir, LP_BTREE_PAGES_FILE));
		uint64_t	rows_kept;

		if (!lp_btree_index_remap(lookup, pages, map, lookup_out, pages_out, &rows_kept, &err))
			raise_not_remapped(&err, name, root);
		publish_output(pages_out);
		publish_output(lookup_out);
		lp_input_close(lookup);
		lp_input_close(pages);
	}
}

LpRewrittenIndex *
lp_compact_remap_indexes(const LpCompactPlan *plan, const LpManifest *manifest, const char *root,
						 LpRewriteDeletions *const *deletions, uint64_t first_new_id,
						 size_t *n_rewritten, List **written)
{
	LpIndexEntry *entries;
	size_t		n_entries;
	LpRewrittenIndex *rewritten;
	LpRowAddressMap *map;
	LpError		err;

	*n_rewritten = 0;
	if (lp_manifest_stable_row_ids(manifest))
		return NULL;
	if (!lp_manifest_index_entries(manifest, &entries, &n_entries, &err))
		lp_raise(&err);
	rewritten = palloc0(sizeof(LpRewrittenIndex) * Max(n_entries, 1));
	map = moved_rows(plan, deletions, first_new_id);
	for (size_t i = 0; i < n_entries; i++)
	{
		LpRewrittenIndex *index = &rewritten[*n_rewritten];
		char		old_uuid[LP_UUID_STRING_SIZE];
		char		new_uuid[LP_UUID_STRING_SIZE];
		char	   *new_dir;

		if (!covers_moved(&entries[i], plan, map))
			continue;
		/* the plan leaves fragments under any other index out */
		Assert(strcmp(entries[i].type_url, LP_BTREE_DETAILS_TYPE_URL) == 0 ||
			   strcmp(entries[i].type_url, LP_BITMAP_DETAILS_TYPE_URL) == 0);
		memcpy(index->old_uuid, entries[i].uuid, 16);
		if (!lp_random_bytes(NULL, index->new_uuid, 16, &err))
			lp_raise(&err);
		lp_uuid_v4(index->new_uuid);
		lp_uuid_format(index->old_uuid, old_uuid);
		lp_uuid_format(index->new_uuid, new_uuid);
		new_dir = psprintf("%s/%s", INDICES_DIR, new_uuid);
		/* listed first, so that what a failure leaves of it is removed with the rest */
		*written = lappend(*written,
						   lp_publication_path(root, new_dir, true,
											   psprintf("The remapped index directory \"%s/%s\"",
														root, new_dir)));
		remap_index(root, entries[i].name, entries[i].type_url,
					psprintf("%s/%s", INDICES_DIR, old_uuid), new_dir, map);
		(*n_rewritten)++;
	}
	lp_row_address_map_free(map);
	lp_manifest_index_entries_free(entries, n_entries);
	return rewritten;
}
