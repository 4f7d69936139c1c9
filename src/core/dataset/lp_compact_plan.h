/*
 * lp_compact_plan.h - which fragments of a dataset version compaction by
 * page copy rewrites, in which groups, and why the others are skipped.
 *
 * A fragment takes part only when its rows are exactly its one data file: no
 * deletion file, one data file, in the dataset's storage format, in the
 * dataset root, and smaller than the target.  Fragments an index covers
 * take part where the dataset has stable row ids (the index keys on row ids,
 * which the rewrite carries; its fragment bitmap follows), not where it keys
 * on row addresses (the rewrite moves them).  Groups are greedy runs of
 * adjacent such fragments whose data files hold the same fields in the same
 * columns and which the same indexes cover, at least two per group and at
 * most target_rows rows.  With rewrite_deletions, fragments with a deletion file
 * take part too, whatever their size, counted by their live rows: their
 * live rows are re-encoded into the group's file (as Lance's compaction
 * materializes deletions), so such a fragment is rewritten even alone.
 * The plan is computed before anything is written; the
 * caller then writes each group's file and commits them as one Rewrite
 * (lp_commit).
 */
#ifndef LP_COMPACT_PLAN_H
#define LP_COMPACT_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/lp_error.h"
#include "format/lp_file.h"
#include "dataset/lp_fragment.h"
#include "dataset/lp_manifest.h"

/* Skip reasons, as the compact function reports them. */
#define LP_COMPACT_NOT_SELECTED "not_selected"
#define LP_COMPACT_DELETION_FILE "deletion_file"
#define LP_COMPACT_SEVERAL_FILES "several_data_files"
#define LP_COMPACT_VERSION_MISMATCH "version_mismatch"
#define LP_COMPACT_EXTERNAL_BASE "external_base"
#define LP_COMPACT_INDEXED "indexed"
#define LP_COMPACT_LARGE_ENOUGH "large_enough"
#define LP_COMPACT_NO_ADJACENT "no_adjacent_fragment"

/* The index_details of the indexes compaction remaps (lancedb's Index.btree() and Index.bitmap()), at version 0. */
#define LP_BTREE_DETAILS_TYPE_URL "/lance.table.BTreeIndexDetails"
#define LP_BITMAP_DETAILS_TYPE_URL "/lance.table.BitmapIndexDetails"
#define LP_REMAPPED_INDEX_VERSION 0
/* IVF vector indexes (lancedb's Index.ivfFlat(), ivfPq(), hnswSq(), ...), at version 1 */
#define LP_VECTOR_DETAILS_TYPE_URL "/lance.index.pb.VectorIndexDetails"
#define LP_REMAPPED_VECTOR_INDEX_VERSION 1

/* One fragment of the version, in dataset order. */
typedef struct LpCompactCandidate
{
	uint64_t	fragment_id;
	uint64_t	physical_rows;
	LpDataFileRef file;			/* its data file (when it has exactly one) */
	bool		has_deletion_file;	/* rewritten: its live rows only */
	LpDeletionFileRef deletion_file;	/* when has_deletion_file */
	uint64_t	indexes;		/* lp_manifest_fragment_indexes */
	const char *skip_reason;	/* NULL: rewritten by group `group` */
	int64_t		group;			/* -1: not in a group */
} LpCompactCandidate;

/* Adjacent candidates [first, first + count) rewritten into one file. */
typedef struct LpCompactGroup
{
	size_t		first;
	size_t		count;
	uint64_t	rows;			/* physical rows; live rows where deletion files record them */
	uint64_t   *fragment_ids;	/* the candidates' fragment ids, in order */
	bool		skipped;		/* lp_compact_plan_skip_group */
} LpCompactGroup;

typedef struct LpCompactPlan
{
	uint64_t	read_version;	/* the version planned on */
	LpFileVersion version;		/* the dataset's storage format */
	LpCompactCandidate *candidates;
	size_t		n_candidates;
	LpCompactGroup *groups;
	size_t		n_groups;
} LpCompactPlan;

/*
 * Whether the dataset version can be compacted by page copy at all: not in
 * the legacy or an unknown storage format (LP_ERR_UNSUPPORTED; dataset names
 * it in messages).  *version receives its storage format.
 */
bool		lp_compact_check_dataset(const LpManifest *manifest, const char *dataset,
									 LpFileVersion *version, LpError *err);

/*
 * Plan the compaction of the version manifest describes into fragments of at
 * most target_rows rows (rewrite_deletions: see above).  selected lists the fragment ids to consider (NULL:
 * every fragment; callers check the ids with lp_manifest_has_fragment, to
 * word their own message).  The dataset is checked first
 * (lp_compact_check_dataset).  Free the plan with lp_compact_plan_free; it points
 * into manifest, which must outlive it.
 */
bool		lp_compact_plan(const LpManifest *manifest, const char *dataset,
							const uint64_t *selected, size_t n_selected,
							uint64_t target_rows, bool rewrite_deletions,
							LpCompactPlan *plan, LpError *err);

/*
 * Take group g out of the plan (its file could not be written): its
 * candidates become skipped with the given reason, which must outlive the
 * plan.
 */
void		lp_compact_plan_skip_group(LpCompactPlan *plan, size_t g, const char *reason);

void		lp_compact_plan_free(LpCompactPlan *plan);

#endif							/* LP_COMPACT_PLAN_H */
