/*
 * lp_blob_validate.h - the validator of a part's Blob v2 columns
 * (blob-v2.md §4): what a part must satisfy before its descriptors can be
 * copied page by page into the final data file of its target.
 *
 * A part's Packed and Dedicated payloads already lie in the final file's
 * sidecar directory, named by blob id, so the part carries only
 * descriptors.  They survive concatenation when the part's blob ids lie in
 * the lease the part was written under, leases of one target's parts never
 * overlap, no descriptor points into the part file itself (non-empty
 * Inline) and every sidecar it names is there and long enough.  The caller
 * decodes the descriptor columns (the field reader); this file judges
 * them.  Errors name the part file, the column and the row:
 * LP_ERR_INVALID_ARGUMENT for what the caller got wrong (a lease, an id
 * outside it, a non-empty Inline payload), LP_ERR_UNSUPPORTED for legacy
 * blob columns and Managed descriptors, LP_ERR_CORRUPT for descriptors no
 * writer makes (Dedicated at a position other than 0, an unknown kind, a
 * sidecar shorter than a descriptor's range), LP_ERR_NOT_FOUND for a
 * missing sidecar.
 */
#ifndef LP_BLOB_VALIDATE_H
#define LP_BLOB_VALIDATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/lp_error.h"
#include "dataset/lp_blob.h"
#include "format/lp_schema.h"
#include "format/lp_values.h"
#include "io/lp_storage.h"

/* The descriptor kinds (blob-v2.md §1); 4 and above are refused. */
typedef enum LpBlobKind
{
	LP_BLOB_INLINE = 0,
	LP_BLOB_PACKED = 1,
	LP_BLOB_DEDICATED = 2,
	LP_BLOB_EXTERNAL = 3,
	LP_BLOB_MANAGED = 4
} LpBlobKind;

/* A sidecar some descriptor reads: bytes [0, needed) must exist. */
typedef struct LpBlobSidecarUse
{
	uint32_t	blob_id;
	uint64_t	needed;			/* position + size */
	uint64_t	row;			/* a top-level row of the part naming it */
	const char *column;			/* that descriptor's column (borrowed from the schema) */
} LpBlobSidecarUse;

/*
 * The state of validating one part file: its name (for messages), its
 * lease (NULL: ids are not checked against a lease, for a file assembled
 * from parts whose leases were checked) and the sidecars its descriptors
 * read, collected for lp_blob_check_sidecars.
 */
typedef struct LpBlobCheck
{
	const char *file_name;
	const LpBlobLease *lease;
	uint64_t	file_size;		/* 0: a part; else a data file of this size */
	LpBlobSidecarUse *uses;		/* lp_alloc'ed; sorted and merged by lp_blob_check_sidecars */
	size_t		num_uses;
	size_t		capacity;
} LpBlobCheck;

void		lp_blob_check_init(LpBlobCheck *check, const char *file_name,
							   const LpBlobLease *lease);

/*
 * Validating a complete data file of a dataset (compaction) instead of a
 * part: no lease, and Inline payloads are allowed where they lie inside the
 * file's file_size bytes (LP_ERR_CORRUPT otherwise).
 */
void		lp_blob_check_init_data_file(LpBlobCheck *check, const char *file_name,
										 uint64_t file_size);
void		lp_blob_check_free(LpBlobCheck *check);

/*
 * A lease given for a part: non-empty and starting at 1 or above
 * (LP_ERR_INVALID_ARGUMENT otherwise).
 */
bool		lp_blob_lease_validate(const LpBlobLease *lease, const char *file_name,
								   LpError *err);

/* Whether lease lies inside the union of claimed[0..num_claimed). */
bool		lp_blob_lease_claimed(const LpBlobLease *claimed, uint64_t num_claimed,
								  const LpBlobLease *lease);

/* Whether two leases share an id. */
bool		lp_blob_leases_overlap(const LpBlobLease *a, const LpBlobLease *b);

/*
 * The blob fields of a part's (footer) schema: *num_v2 receives how many
 * are Blob v2; a legacy (v1) blob field is LP_ERR_UNSUPPORTED.
 */
bool		lp_blob_schema_check(const LpSchema *schema, const char *file_name,
								 uint32_t *num_v2, LpError *err);

/*
 * Judge the descriptors in values, the decoded rows [0, values->length) of
 * one top-level field of the part (of the part's schema), whose row 0 is
 * top-level row first_row of the file: every Blob v2 column inside it,
 * through structs and lists, honouring validity at every level (a null
 * struct or list hides its children; a null descriptor, or a null kind, is
 * no payload).  Sidecars read are added to check.
 */
bool		lp_blob_check_values(LpBlobCheck *check, const LpSchema *schema,
								 const LpArray *values, uint64_t first_row, LpError *err);

/*
 * Every sidecar check collected exists in sidecar_dir of store as a file of
 * at least the bytes its descriptors read.
 */
bool		lp_blob_check_sidecars(LpBlobCheck *check, LpStore *store,
								   const char *sidecar_dir, LpError *err);

#endif							/* LP_BLOB_VALIDATE_H */
