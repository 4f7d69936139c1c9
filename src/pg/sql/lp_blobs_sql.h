/*
 * lp_blobs_sql.h - what the sidecar writers of sql/lp_blobs_sql.c share
 * with the encoder's Blob v2 columns (write/lp_write_blobs.c): Lance's blob
 * thresholds, the publishing of a sidecar and leases of a target.
 */
#ifndef LP_BLOBS_SQL_H
#define LP_BLOBS_SQL_H

#include "utils/rangetypes.h"

#include "dataset/lp_blob.h"
#include "format/lp_schema.h"
#include "io/lp_storage.h"
#include "target/lp_target.h"

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
extern uint64 lp_blob_field_threshold(const LpField *field, const char *key, uint64 fallback);

/* Start the sidecar at path (under a temporary name); ERROR on failure. */
extern LpOutput *lp_blob_sidecar_create(LpStore *store, const char *path);

/* Write len bytes at offset; on failure the output is aborted and ERROR raised. */
extern void lp_blob_sidecar_write(LpOutput *output, uint64 offset, const void *data, size_t len);

/*
 * Publish the sidecar without replacing anything (ERROR 58P02 when the
 * name exists) and check that the store holds the bytes written.
 */
extern void lp_blob_sidecar_publish(LpStore *store, LpOutput *output, const char *path,
									uint64 written);

/* The target's lease directory (in its staging area). */
extern char *lp_blob_lease_dir(const LpTarget *target);

/* Claim a lease of count blob ids for the target (lp_blob_lease_claim); ERROR on failure. */
extern LpBlobLease lp_blob_claim_lease(const LpTarget *target, uint32 count);

/* The lease as the int8range [start, end) SQL shows it. */
extern RangeType *lp_blob_lease_range(const LpBlobLease *lease);

#endif							/* LP_BLOBS_SQL_H */
