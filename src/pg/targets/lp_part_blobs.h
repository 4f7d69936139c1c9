/*
 * lp_part_blobs.h - a target's parts with Blob v2 columns: their blob id
 * leases (int8range arguments, claimed in the target's lease directory,
 * pairwise disjoint) and their descriptors judged by the core's validator
 * (dataset/lp_blob_validate.h) against the lease and the target's sidecars.
 */
#ifndef LP_PART_BLOBS_H
#define LP_PART_BLOBS_H

#include "postgres.h"

#include "nodes/pg_list.h"

#include "dataset/lp_blob.h"
#include "dataset/lp_blob_validate.h"
#include "format/lp_file.h"
#include "targets/lp_target.h"

/*
 * The lease an int8range argument gives for part uri: finite, non-empty,
 * starting at 1 or above and ending at most at 2^32 - 1; ERROR (22023)
 * otherwise.
 */
extern LpBlobLease lp_part_lease_from_range(Datum range, const char *uri);

/*
 * ERROR (22023) unless lease lies inside the leases claimed for target
 * (lease_blob_ids) and overlaps none of the leases of its registered parts.
 */
extern void lp_part_lease_check(const LpTarget *target, const LpBlobLease *lease,
								const char *uri);

/*
 * ERROR (22023) if two of parts (LpRegisteredPart *) have overlapping
 * leases: assembly checks again before it creates any output.
 */
extern void lp_part_leases_check_disjoint(List *parts, const char *target_file);

/* Whether a file's schema has Blob v2 columns; a legacy blob column is an ERROR (0A000). */
extern bool lp_part_has_blob_columns(const LpFile *file, const char *uri);

/*
 * Decode every Blob v2 column of the file at uri (opened as file) and judge
 * its descriptors: lease NULL for a file assembled from validated parts
 * (ids then need no lease); every sidecar they read must exist in the
 * target's sidecar directory and be long enough.  ERROR naming the file,
 * the column and the row otherwise.
 */
extern void lp_part_check_blobs(const LpTarget *target, const char *uri, const LpFile *file,
								const LpBlobLease *lease);

/*
 * Decode every Blob v2 column of the file at uri (below base, opened as
 * file) and judge its descriptors with check (lp_blob_check_init for a part,
 * lp_blob_check_init_data_file for a dataset's data file); every sidecar
 * they read must be a file in sidecar_dir, long enough.  ERROR naming the
 * file, the column and the row otherwise.  check->uses then lists the
 * sidecars read, by blob id.
 */
extern void lp_blob_check_file(LpBlobCheck *check, const char *base, const char *uri,
							   const LpFile *file, const char *sidecar_dir);

#endif							/* LP_PART_BLOBS_H */
