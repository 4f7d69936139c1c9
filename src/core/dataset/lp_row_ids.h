/*
 * lp_row_ids.h - the stable row ids of fragments (Lance's RowIdSequence)
 * and the created-at / last-updated-at versions of their rows (run-length
 * sequences beside them), carried into the fragment a rewrite makes: the
 * values of each old fragment in order, without the rows the new file
 * leaves out (its deleted rows, when deletions are materialized), as
 * Lance's compaction carries them (rechunk_stable_row_ids and
 * recalc_versions_for_rewritten_fragments in optimize.rs).  Row ids never
 * change, so indexes keyed on them stay valid; lp_row_ids_find turns the
 * ids such an index gives back into rows of a fragment.
 *
 * A new fragment's values are gathered as runs (consecutive row ids, equal
 * versions) and written back as ranges where they run on, so that a
 * compacted sequence is as small as its input and gathering costs memory
 * for the runs, not 24 bytes a row: ranges and version runs are taken as
 * they are, and only segments of other forms and fragments with deleted
 * rows are expanded (one fragment at a time).
 * Everything read from a manifest is checked: segment bounds, array sizes,
 * holes, and that a fragment's sequences count exactly its physical rows.
 */
#ifndef LP_ROW_IDS_H
#define LP_ROW_IDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/lp_error.h"
#include "dataset/lp_manifest.h"
#include "format/lp_deletion.h"

/*
 * Values as runs of (first, count): for row ids first, first + 1, ...; for
 * versions first, count times.
 */
typedef struct LpValueRun
{
	uint64_t	first;
	uint64_t	count;
} LpValueRun;

typedef struct LpValueRuns
{
	LpValueRun *runs;
	size_t		n;
	size_t		allocated;
} LpValueRuns;

typedef struct LpRowMeta
{
	uint64_t	rows;			/* rows gathered so far */
	uint64_t	capacity;		/* rows of the new fragment */
	LpValueRuns row_ids;		/* runs of consecutive ids */
	LpValueRuns created_at;		/* runs of equal versions */
	LpValueRuns last_updated_at;
} LpRowMeta;

/* Room for the rows of one new fragment. */
void		lp_row_meta_init(LpRowMeta *meta, uint64_t capacity);

/*
 * Add the rows of the manifest's fragment at index (dataset order), without
 * those set in deleted (NULL: all its rows).  A fragment without row ids is
 * LP_ERR_CORRUPT (every fragment of a dataset with stable row ids has them);
 * missing version sequences mean version 1, as in Lance.
 */
bool		lp_row_meta_append(LpRowMeta *meta, const LpManifest *manifest, size_t index,
							   const LpDeletions *deleted, LpError *err);

/*
 * The serialized RowIdSequence and RowVersionSequences of the rows
 * gathered, which must fill the capacity (lp_alloc'd, free with lp_free).
 */
bool		lp_row_meta_pack(const LpRowMeta *meta, uint8_t **row_ids, size_t *row_ids_len,
							 uint8_t **created_at, size_t *created_at_len,
							 uint8_t **last_updated_at, size_t *last_updated_at_len,
							 LpError *err);

void		lp_row_meta_free(LpRowMeta *meta);

/*
 * The row ids, created-at and last-updated-at versions of the manifest's
 * fragment at index (dataset order), physical_rows values each, expanded
 * into ids, created_at and last_updated_at: how UPDATE finds the ids of
 * the rows it moves.  Errors as lp_row_meta_append's.
 */
bool		lp_row_meta_read(const LpManifest *manifest, size_t index, uint64_t *ids,
							 uint64_t *created_at, uint64_t *last_updated_at, LpError *err);

/*
 * The offsets of the rows of the manifest's fragment at index (dataset
 * order) whose stable row id is one of ids[0..num_ids) or has its high 32
 * bits among whole[0..num_whole) (both ascending, without repeats), ascending,
 * into *offsets (lp_alloc'd; freed by the caller) and *num_offsets: how an
 * index keyed on row ids finds rows.  Ranges of the sequence are mapped by
 * arithmetic, its other segments expanded.  Row ids in an external file
 * are LP_ERR_UNSUPPORTED; a sequence that does not count the fragment's rows
 * or repeats an id LP_ERR_CORRUPT.
 */
bool		lp_row_ids_find(const LpManifest *manifest, size_t index, const uint64_t *ids,
							uint64_t num_ids, const uint32_t *whole, size_t num_whole,
							uint64_t **offsets, uint64_t *num_offsets, LpError *err);

/*
 * Serialized RowIdSequence of ids and RowVersionSequence of versions (n
 * each; lp_alloc'd), as lp_row_meta_pack writes them; NULL when out of memory.
 */
uint8_t    *lp_row_ids_pack(const uint64_t *ids, uint64_t n, size_t *len, LpError *err);
uint8_t    *lp_row_versions_pack(const uint64_t *versions, uint64_t n, size_t *len, LpError *err);

#endif							/* LP_ROW_IDS_H */
