/*
 * lp_blob.h - Blob v2 blob-id leases of a target data file.
 *
 * Part writers put Packed and Dedicated payloads straight into the final data
 * file's sidecar directory, named by blob id, so the ids of different writers
 * must never collide.  A lease is a half-open range [start, end) of ids,
 * start >= 1, claimed durably in the target's lease directory: lease records
 * "<sequence number, 20 digits>" hold "<start> <end> <claimer>\n", record
 * n + 1 starts where record n ends, and each record is created with
 * put_if_absent, so two claimers (sessions, clusters) can never both create
 * the same record and therefore never receive overlapping ranges.  The
 * claimer, random per claim, makes the bytes of two claimers' records differ:
 * a store may take a conflict over exactly its own bytes for its own retried
 * attempt (S3's conditional PUT does).  The same on any store that has an
 * atomic put_if_absent and a complete listing (local files, S3).
 */
#ifndef LP_BLOB_H
#define LP_BLOB_H

#include <stdbool.h>
#include <stdint.h>

#include "base/lp_error.h"
#include "io/lp_storage.h"

/* The lease directory below a target's staging directory. */
#define LP_BLOB_LEASE_DIR "blob_leases"

/* Blob ids are u32; 0 is reserved and u32::MAX is never handed out. */
#define LP_BLOB_ID_LIMIT UINT32_MAX

/* Lowercase hex digits of a claimer token. */
#define LP_BLOB_CLAIMER_LEN 32

typedef struct LpBlobLease
{
	uint32_t	start;			/* first id, >= 1 */
	uint32_t	end;			/* one past the last id */
} LpBlobLease;

/*
 * Claim the next count ids of lease_dir (created as needed) as *lease;
 * claimer is LP_BLOB_CLAIMER_LEN random lowercase hex digits, new for each
 * claim.  LP_ERR_INVALID_ARGUMENT for count 0, a malformed claimer or when
 * the id space would be exhausted, LP_ERR_CORRUPT for a damaged lease
 * record, LP_ERR_CANCELED when a cancel is pending between attempts.
 */
bool		lp_blob_lease_claim(LpStore *store, const char *lease_dir, uint32_t count,
								const char *claimer, LpBlobLease *lease, LpError *err);

/* Whether claimer[0..len) are lowercase hex digits. */
bool		lp_blob_claimer_valid(const char *claimer, size_t len);

/*
 * The leases claimed in lease_dir so far, in claim order (lp_alloc'ed,
 * *leases NULL when none; a missing directory holds none).
 */
bool		lp_blob_leases_read(LpStore *store, const char *lease_dir,
								LpBlobLease **leases, uint64_t *count, LpError *err);

/* Whether blob_id lies inside one of leases[0..count). */
bool		lp_blob_lease_holds(const LpBlobLease *leases, uint64_t count, uint32_t blob_id);

#endif							/* LP_BLOB_H */
