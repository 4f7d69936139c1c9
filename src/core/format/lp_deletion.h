/*
 * lp_deletion.h - Lance deletion files: which row offsets of a fragment were
 * deleted.
 *
 * A fragment's DeletionFile names _deletions/{fragment id}-{read version}-
 * {id}.arrow (an Arrow IPC file with one Int32 or UInt32 column of deleted
 * row offsets, the sparse form) or ….bin (a serialized Roaring bitmap of
 * them, the dense form).  Both are read whole and checked: every offset must
 * lie below the fragment's physical row count.
 */
#ifndef LP_DELETION_H
#define LP_DELETION_H

#include <stdbool.h>
#include <stdint.h>

#include "base/lp_error.h"
#include "io/lp_storage.h"

/* Refuse deletion files larger than this (they are read whole). */
#define LP_DELETION_FILE_MAX_SIZE ((uint64_t) 1 << 30)

typedef enum LpDeletionForm
{
	LP_DELETION_ARROW = 0,		/* DeletionFile.file_type ARROW_ARRAY */
	LP_DELETION_BITMAP = 1		/* DeletionFile.file_type BITMAP */
} LpDeletionForm;

/* The deleted offsets of one fragment as a bitmap over its physical rows. */
typedef struct LpDeletions
{
	uint64_t	num_rows;		/* physical rows of the fragment */
	uint64_t	num_deleted;	/* distinct deleted offsets */
	uint8_t    *deleted;		/* num_rows bits, LSB first; set = deleted */
} LpDeletions;

/*
 * The path of a deletion file relative to its base (the dataset root):
 * "_deletions/{fragment}-{read_version}-{id}.arrow" or ".bin".  NULL when
 * out of memory; free with lp_free.
 */
char	   *lp_deletion_file_path(uint64_t fragment_id, uint64_t read_version,
								  uint64_t id, LpDeletionForm form);

/*
 * Read the deletion file behind input for a fragment of num_rows physical
 * rows into *out (free with lp_deletions_free).
 */
bool		lp_deletions_read(LpInput *input, LpDeletionForm form, uint64_t num_rows,
							  LpDeletions *out, LpError *err);

void		lp_deletions_free(LpDeletions *deletions);

static inline bool
lp_deletions_contains(const LpDeletions *deletions, uint64_t row)
{
	return deletions->deleted != NULL &&
		((deletions->deleted[row >> 3] >> (row & 7)) & 1);
}

#endif							/* LP_DELETION_H */
