/*
 * lp_compact_indexes.c - remapping the indexes a compaction moves rows
 * under (lp_compact_indexes.h): the row address map of the written groups
 * (core index/lp_row_address_map), each covering BTREE or BITMAP index
 * rewritten by the core (index/lp_btree_remap, index/lp_bitmap_remap) into
 * _indices/<new uuid>/; each covering IVF vector index the same way
 * (index/lp_ivf_remap: auxiliary.idx written anew, index.idx copied or,
 * for HNSW graphs that lose rows, rebuilt), but for the forms it does not
 * read, whose fragments are left out before anything is written.
 */
#include "postgres.h"

#include "base/lp_alloc.h"
#include "dataset/lp_dataset.h"
#include "format/lp_roaring.h"
#include "functions/lp_compact_indexes.h"
#include "index/lp_bitmap_remap.h"
#include "index/lp_btree_index.h"
#include "index/lp_btree_remap.h"
#include "index/lp_ivf_index.h"
#include "index/lp_ivf_remap.h"
#include "index/lp_row_address_map.h"
#include "base/lp_pg_error.h"
#include "base/lp_pg_random.h"
#include "store/lp_pg_storage.h"
#include "write/lp_publication.h"

#define INDICES_DIR "_indices"
/* what index.idx is copied in */
#define COPY_CHUNK_BYTES (8 * 1024 * 1024)

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

/* Whether the index's fragment bitmap holds fragment id. */
static bool
covers_fragment(const LpIndexEntry *entry, uint64_t id)
{
	bool		covers = false;
	LpError		err;

	if (id > UINT32_MAX)
		return false;
	if (!lp_roaring32_contains(entry->fragment_bitmap, entry->fragment_bitmap_len,
							   (uint32_t) id, &covers, &err))
		lp_raise(&err);
	return covers;
}

/* Whether the index covers a fragment the map moves. */
static bool
covers_moved(const LpIndexEntry *entry, const LpCompactPlan *plan, const LpRowAddressMap *map)
{
	for (size_t i = 0; i < plan->n_candidates; i++)
	{
		uint64_t	id = plan->candidates[i].fragment_id;

		if (lp_row_address_map_moves(map, id, NULL) && covers_fragment(entry, id))
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

/* Copy the file behind input into output (index.idx, which holds no row ids). */
static void
copy_file(LpInput *input, LpOutput *output)
{
	char	   *buffer = palloc(Min(Max(input->size, 1), COPY_CHUNK_BYTES));
	LpError		err;

	for (uint64 pos = 0; pos < input->size;)
	{
		size_t		len = (size_t) Min(input->size - pos, COPY_CHUNK_BYTES);

		CHECK_FOR_INTERRUPTS();
		if (!lp_input_read(input, pos, buffer, len, &err) ||
			!output->ops->write_at(output, pos, buffer, len, &err))
			lp_raise(&err);
		pos += len;
	}
	pfree(buffer);
}

/* An index type's files, in the order published, remapped from old to new by the core. */
#define MAX_INDEX_FILES 2

typedef bool (*RemapFiles) (LpInput **inputs, const LpRowAddressMap *map, LpOutput **outputs,
							LpError *err);

typedef struct RemappedKind
{
	const char *type_url;
	const char *files[MAX_INDEX_FILES];	/* NULL after the last */
	RemapFiles	remap;
} RemappedKind;

static bool
remap_bitmap(LpInput **inputs, const LpRowAddressMap *map, LpOutput **outputs, LpError *err)
{
	return lp_bitmap_index_remap(inputs[0], map, outputs[0], err);
}

static bool
remap_btree(LpInput **inputs, const LpRowAddressMap *map, LpOutput **outputs, LpError *err)
{
	uint64_t	rows_kept;

	return lp_btree_index_remap(inputs[1], inputs[0], map, outputs[1], outputs[0], &rows_kept, err);
}

/* index.idx is written anew only for HNSW graphs that lose rows; otherwise copied */
static bool
remap_ivf(LpInput **inputs, const LpRowAddressMap *map, LpOutput **outputs, LpError *err)
{
	bool		index_written;

	if (!lp_ivf_index_remap(inputs[1], inputs[0], map, outputs[0], outputs[1], &index_written, err))
		return false;
	if (!index_written)
		copy_file(inputs[1], outputs[1]);
	return true;
}

static const RemappedKind REMAPPED_KINDS[] = {
	{LP_BTREE_DETAILS_TYPE_URL, {LP_BTREE_PAGES_FILE, LP_BTREE_LOOKUP_FILE}, remap_btree},
	{LP_BITMAP_DETAILS_TYPE_URL, {LP_BITMAP_LOOKUP_FILE, NULL}, remap_bitmap},
	{LP_VECTOR_DETAILS_TYPE_URL, {LP_IVF_AUXILIARY_FILE, LP_IVF_INDEX_FILE}, remap_ivf},
};

/* How an index of type_url is remapped; NULL if it is not. */
static const RemappedKind *
remapped_kind(const char *type_url)
{
	for (size_t k = 0; k < lengthof(REMAPPED_KINDS); k++)
		if (strcmp(type_url, REMAPPED_KINDS[k].type_url) == 0)
			return &REMAPPED_KINDS[k];
	return NULL;
}

/*
 * Write the remapped index old_dir holds (of a type REMAPPED_KINDS names)
 * into new_dir (paths below root); its outputs are published only when all
 * are written.
 */
static void
remap_index(const char *root, const char *name, const RemappedKind *kind, const char *old_dir,
			const char *new_dir, const LpRowAddressMap *map)
{
	LpStore    *store = lp_store_below(root);
	LpInput    *inputs[MAX_INDEX_FILES] = {0};
	LpOutput   *outputs[MAX_INDEX_FILES] = {0};
	LpError		err;

	for (int f = 0; f < MAX_INDEX_FILES && kind->files[f] != NULL; f++)
	{
		inputs[f] = lp_open_input_in(store, psprintf("%s/%s/%s", root, old_dir, kind->files[f]));
		outputs[f] = create_output(store, psprintf("%s/%s/%s", root, new_dir, kind->files[f]));
	}
	if (!kind->remap(inputs, map, outputs, &err))
		raise_not_remapped(&err, name, root);
	for (int f = 0; f < MAX_INDEX_FILES && kind->files[f] != NULL; f++)
	{
		publish_output(outputs[f]);
		lp_input_close(inputs[f]);
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
		const RemappedKind *kind;

		if (!covers_moved(&entries[i], plan, map))
			continue;
		kind = remapped_kind(entries[i].type_url);
		/* the plan leaves fragments under any other index out */
		if (kind == NULL)
			elog(ERROR, "index \"%s\" of dataset \"%s\" cannot be remapped", entries[i].name, root);
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
		remap_index(root, entries[i].name, kind,
					psprintf("%s/%s", INDICES_DIR, old_uuid), new_dir, map);
		(*n_rewritten)++;
	}
	lp_row_address_map_free(map);
	lp_manifest_index_entries_free(entries, n_entries);
	return rewritten;
}

/* Whether entry covers a fragment of group g of plan. */
static bool
covers_group(const LpIndexEntry *entry, const LpCompactPlan *plan, size_t g)
{
	const LpCompactGroup *group = &plan->groups[g];

	for (size_t k = 0; k < group->count; k++)
		if (covers_fragment(entry, group->fragment_ids[k]))
			return true;
	return false;
}

/*
 * Whether the vector index in dir (below root) can be remapped: a form
 * lance_parts does not read is left as it is (a damaged index is an ERROR).
 */
static bool
vector_index_remappable(const char *root, const char *name, const char *dir)
{
	LpStore    *store = lp_store_below(root);
	LpInput    *index = lp_open_input_in(store, psprintf("%s/%s/%s", root, dir, LP_IVF_INDEX_FILE));
	LpInput    *auxiliary = lp_open_input_in(store, psprintf("%s/%s/%s", root, dir, LP_IVF_AUXILIARY_FILE));
	LpIvfModel *model;
	LpError		err;

	if (!lp_ivf_model_read(index, auxiliary, &model, &err))
	{
		if (err.code != LP_ERR_UNSUPPORTED)
			raise_not_remapped(&err, name, root);
		lp_input_close(index);
		lp_input_close(auxiliary);
		return false;
	}
	lp_ivf_model_free(model);
	lp_input_close(index);
	lp_input_close(auxiliary);
	return true;
}

void
lp_compact_skip_unremappable_vector_groups(LpCompactPlan *plan, const LpManifest *manifest,
										   const char *root)
{
	LpIndexEntry *entries;
	size_t		n_entries;
	LpError		err;

	if (lp_manifest_stable_row_ids(manifest))
		return;
	if (!lp_manifest_index_entries(manifest, &entries, &n_entries, &err))
		lp_raise(&err);
	for (size_t i = 0; i < n_entries; i++)
	{
		char		uuid[LP_UUID_STRING_SIZE];
		bool		checked = false;
		bool		remappable = false;

		if (strcmp(entries[i].type_url, LP_VECTOR_DETAILS_TYPE_URL) != 0)
			continue;
		lp_uuid_format(entries[i].uuid, uuid);
		for (size_t g = 0; g < plan->n_groups; g++)
		{
			if (plan->groups[g].skipped || !covers_group(&entries[i], plan, g))
				continue;
			if (!checked)
				remappable = vector_index_remappable(root, entries[i].name,
													 psprintf("%s/%s", INDICES_DIR, uuid));
			checked = true;
			if (!remappable)
				lp_compact_plan_skip_group(plan, g, LP_COMPACT_INDEXED);
		}
	}
	lp_manifest_index_entries_free(entries, n_entries);
}
