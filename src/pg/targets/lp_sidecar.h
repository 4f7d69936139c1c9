/*
 * lp_sidecar.h - Blob v2 sidecars: Lance's blob thresholds, the checks that
 * come before a target's sidecar is written (the target's blob columns and
 * their limits, a leased id, a target not yet assembled), one sidecar output
 * for blob id N of a data file's sidecar directory, written front to back
 * and published atomically without replacing anything, or aborted, and the
 * claiming of a target's leases.
 * Used by the SQL writers (sql/lp_blobs_sql.c) and the encoder's Blob v2
 * columns (write/lp_write_blobs.c).
 */
#ifndef LP_SIDECAR_H
#define LP_SIDECAR_H

#include "utils/rangetypes.h"

#include "dataset/lp_blob.h"
#include "format/lp_schema.h"
#include "io/lp_storage.h"
#include "targets/lp_target.h"

/* Lance's defaults (blob.rs) where a field's metadata does not override them. */
#define LP_BLOB_INLINE_THRESHOLD_KEY "lance-encoding:blob-inline-size-threshold"
#define LP_BLOB_DEDICATED_THRESHOLD_KEY "lance-encoding:blob-dedicated-size-threshold"
#define LP_BLOB_PACK_FILE_THRESHOLD_KEY "lance-encoding:blob-pack-file-size-threshold"
#define LP_BLOB_DEFAULT_INLINE_THRESHOLD (UINT64CONST(64) * 1024)
#define LP_BLOB_DEFAULT_DEDICATED_THRESHOLD (UINT64CONST(4) * 1024 * 1024)
#define LP_BLOB_DEFAULT_PACK_FILE_THRESHOLD (UINT64CONST(1024) * 1024 * 1024)

/*
 * The threshold key of a blob field's metadata, fallback without it;
 * ERROR (22023) for a value that is not a positive integer.
 */
extern uint64 lp_sidecar_field_threshold(const LpField *field, const char *key, uint64 fallback);

/* The writers' limits from the target's Blob v2 columns (blob.rs's defaults where unset). */
typedef struct LpSidecarLimits
{
	uint64		dedicated_threshold;	/* a larger payload is Dedicated */
	uint64		pack_file_threshold;	/* a pack file holds at most this */
} LpSidecarLimits;

/*
 * The largest thresholds over the target's Blob v2 columns: a payload above
 * the dedicated threshold of every blob column would be Dedicated in each of
 * them.  ERROR (22023) if the target has no Blob v2 column or a threshold in
 * its metadata is invalid.
 */
extern void lp_sidecar_limits(const LpTarget *target, LpSidecarLimits *limits);

/* ERROR (22023) unless blob_id lies inside a lease claimed for the target. */
extern uint32 lp_sidecar_check_leased(const LpTarget *target, int64 blob_id);

/*
 * ERROR (55000) once the target's file exists: it was assembled (its
 * sidecars are read from now on) or committed (its staging area, and with it
 * the lease records, may be gone, so ids could be handed out twice).
 */
extern void lp_sidecar_check_not_assembled(const LpTarget *target);

/* One sidecar being written: bytes are appended, then published or aborted. */
typedef struct LpSidecar
{
	uint32		blob_id;
	char	   *path;			/* <sidecar dir>/<reversed-bit id>.blob */
	LpStore    *store;
	LpOutput   *output;			/* NULL once published or aborted */
	uint64		written;		/* bytes appended so far */
} LpSidecar;

/*
 * Open the output of blob_id's sidecar in sidecar_dir (a data file's
 * "<data dir>/<file stem>", lp_target_sidecar_dir for a target) of store,
 * under a temporary name: nothing is visible under the sidecar's name before
 * lp_sidecar_publish.  Writers of a target make the checks above first.  An
 * ERROR before publication aborts the output (the store's memory-context
 * callback).
 */
extern LpSidecar *lp_sidecar_open(LpStore *store, const char *sidecar_dir, uint32 blob_id);

/* Append len bytes; an ERROR aborts the sidecar. */
extern void lp_sidecar_write(LpSidecar *sidecar, const void *data, size_t len);

/*
 * Append the whole input: copied within the store where it can (the output's
 * copy_from: copy_file_range locally, CopyObject or UploadPartCopy on S3),
 * else read and written through a bounded buffer; an ERROR aborts the sidecar.
 */
extern void lp_sidecar_copy(LpSidecar *sidecar, LpInput *input);

/*
 * Publish the sidecar under its name, never replacing one (58P02 if it
 * exists), and check that the store holds exactly the bytes written (XX001
 * otherwise: the seeds' finish).
 */
extern void lp_sidecar_publish(LpSidecar *sidecar);

/* Abort the sidecar: nothing appears under its name. */
extern void lp_sidecar_abort(LpSidecar *sidecar);

/* The target's lease directory (in its staging area). */
extern char *lp_blob_lease_dir(const LpTarget *target);

/* Claim a lease of count blob ids for the target (lp_blob_lease_claim); ERROR on failure. */
extern LpBlobLease lp_blob_claim_lease(const LpTarget *target, uint32 count);

/* The lease as the int8range [start, end) SQL shows it. */
extern RangeType *lp_blob_lease_range(const LpBlobLease *lease);

#endif							/* LP_SIDECAR_H */
