/*
 * lp_compact_blobs.h - compaction of a group of data files with Blob v2
 * columns.
 *
 * Their descriptors name payloads by where each file keeps them: Inline at
 * offsets of the file itself, Packed and Dedicated in sidecars named by
 * blob ids that are unique only within one file.  So the descriptor
 * columns are written anew, as a file of their own that the assembly
 * copies whole after the parts' pages (every other column is copied page
 * by page, core/concat LpConcatTarget.replaced): Inline payloads copied
 * along, at the offsets the descriptors then name, and the blob ids of a
 * file that would collide with an earlier file's moved past them.  Groups
 * that cannot be joined by page copy, and those with deleted rows to leave
 * out, are re-encoded whole (reencode/lp_reencode.h).  Each sidecar a
 * descriptor reads is given its (new) name in the new file's sidecar
 * directory without copying its bytes where the store can
 * (LpStoreOps.link_file), else copied within the store (server-side on
 * object storage).  The old sidecars stay with the old files, for the
 * versions that still name them, until cleanup_orphans removes both.
 * Every descriptor and sidecar is checked before anything is written.
 */
#ifndef LP_COMPACT_BLOBS_H
#define LP_COMPACT_BLOBS_H

#include "postgres.h"

#include "nodes/pg_list.h"
#include "utils/array.h"

#include "assemble/lp_assemble.h"
#include "format/lp_schema.h"

/* Whether the data file at path (below root) has Blob v2 columns and no legacy (v1) blob column. */
extern bool lp_compact_file_has_blobs(const char *root, const char *path);

/*
 * Write parts (LpAssemblePart *: data files of the dataset at root, in
 * data_dir, with their expected rows and deletions) as the new data file
 * data_dir/name of schema (the dataset's) and version.  *result as
 * lp_assemble_file fills it: "unsupported" with reason schema_mismatch when
 * a file's fields are not the schema's.  *sidecar_dir receives the new
 * file's sidecar directory relative to root, or NULL when it has none.
 * Returns whether the group was re-encoded (its file then has the columns
 * of schema as the writer lays them out), false when its pages were copied
 * (the columns of its files).  ERROR for a bad descriptor or sidecar
 * (nothing written then).
 */
extern bool lp_compact_blob_group(const char *root, const char *data_dir, const char *name,
								  List *parts, const LpSchema *schema, LpFileVersion version,
								  LpAssembleResult *result, char **sidecar_dir);

#endif							/* LP_COMPACT_BLOBS_H */
