/*
 * lp_deletion.h - Lance deletion files: which row offsets of a fragment were
 * deleted.
 *
 * A fragment's DeletionFile names _deletions/{fragment id}-{read version}-
 * {id}.arrow (an Arrow IPC file with one Int32 or UInt32 column of deleted
 * row offsets, the sparse form) or ….bin (a serialized Roaring bitmap of
 * them, the dense form).  Both are read whole and checked: every offset must
 * lie below the fragment's physical row count.  A delete adds offsets to
 * those read and writes the union as a new file of the dense form.
 */
#ifndef LP_DELETION_H
#define LP_DELETION_H

#include <stdbool.h>
#include <stdint.h>

#include "base/lp_error.h"
#include "base/lp_random.h"
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

/*
 * Add the offsets rows (n of them, strictly ascending, each below num_rows)
 * to the deletions of a fragment of num_rows physical rows: *deletions as
 * lp_deletions_read filled it, or zeroed for a fragment without deletions
 * (then its bitmap is allocated here; free with lp_deletions_free).  An
 * offset already deleted stays deleted once.  On failure (invalid rows,
 * LP_ERR_INVALID_ARGUMENT) *deletions is unchanged.
 */
bool		lp_deletions_add(LpDeletions *deletions, uint64_t num_rows,
							 const uint32_t *rows, size_t n, LpError *err);

/*
 * Write deletions as the deletion file of fragment fragment_id of the
 * dataset at root, in the dense form, at lp_deletion_file_path(fragment_id,
 * read_version, *id, LP_DELETION_BITMAP) with *id drawn from random.  The
 * file is created whole and only if absent (LpStoreOps.put_if_absent: a
 * temporary file published complete); it never replaces an existing file
 * (LP_ERR_ALREADY_EXISTS).  deletions must
 * delete some rows but not all (Lance removes such a fragment instead of
 * giving it a deletion file): LP_ERR_INVALID_ARGUMENT otherwise.
 */
bool		lp_deletion_file_write(LpStore *store, const char *root, uint64_t fragment_id,
								   uint64_t read_version, const LpDeletions *deletions,
								   LpRandomFunction random, void *random_arg,
								   uint64_t *id, LpError *err);

static inline bool
lp_deletions_contains(const LpDeletions *deletions, uint64_t row)
{
	return deletions->deleted != NULL &&
		((deletions->deleted[row >> 3] >> (row & 7)) & 1);
}

#endif							/* LP_DELETION_H */
