/*
 * lp_write_blobs.h - the Blob v2 columns of the data files write_dataset
 * writes and of the parts write_part writes: where each payload of a bytea
 * column goes (a data file: Lance's thresholds, Inline in the data file,
 * Packed into pack files, Dedicated sidecars under the data file's sidecar
 * directory; a part: Packed or Dedicated in the target's sidecar directory
 * under a lease), which descriptors of a jsonb column may be written as
 * they are, and the removal of the sidecars of a write that failed.
 */
#ifndef LP_WRITE_BLOBS_H
#define LP_WRITE_BLOBS_H

#include "utils/jsonb.h"

#include "encode/lp_file_writer.h"
#include "format/lp_schema.h"
#include "dataset/lp_blob.h"
#include "io/lp_storage.h"
#include "targets/lp_target.h"

/* A Blob v2 descriptor as the file writer stores it. */
typedef struct LpBlobDescriptor
{
	uint8		kind;			/* LP_BLOB_KIND_* */
	uint64		position;
	uint64		size;
	uint32		blob_id;
	char	   *uri;			/* "" unless External */
} LpBlobDescriptor;

typedef struct LpBlobWriter LpBlobWriter;

/* A writer of the sidecars of the data files of store (what names the write in messages). */
extern LpBlobWriter *lp_blob_writer_create(LpStore *store, const char *what);

/*
 * A writer of the sidecars of the part of target write_part writes, in the
 * target's sidecar directory; its ids come from a lease it claims (about
 * expected_ids at a time, 0 when unknown).
 */
extern LpBlobWriter *lp_blob_writer_create_for_part(LpStore *store, const char *what,
													const LpTarget *target, uint64 expected_ids);

/*
 * The part's lease: the one it claimed, or the caller's holding the ids of
 * its jsonb descriptors; a lease of one id is claimed if it used none.
 */
extern LpBlobLease lp_blob_writer_part_lease(LpBlobWriter *writer);

/*
 * The data file at data_file_path (ending in .lance), written by file,
 * takes the payloads from now on; its sidecars go to the directory of its
 * stem, blob ids from 1 (a namespace of one data file).
 */
extern void lp_blob_writer_begin_file(LpBlobWriter *writer, LpFileWriter *file,
									  const char *data_file_path);

/*
 * Store a payload (len bytes, 0 for an empty one) of Blob v2 field field of
 * the current data file and describe it in *out.
 */
extern void lp_blob_writer_store(LpBlobWriter *writer, const LpField *field, const uint8 *data,
								 uint64 len, LpBlobDescriptor *out);

/*
 * ERROR unless descriptor (given as jsonb) can be written as it is: in a
 * data file External with an absolute blob_uri, or an empty Inline one; in
 * a part also Packed and Dedicated (at position 0) ones whose id lies in a
 * lease of the target, all of one lease.
 */
extern void lp_blob_writer_check(LpBlobWriter *writer, const LpField *field,
								 const LpBlobDescriptor *descriptor);

/* Publish the current data file's open pack file; call before publishing the data file. */
extern void lp_blob_writer_end_file(LpBlobWriter *writer);

/*
 * Remove the sidecar directories of every data file begun (root/data/<stem>)
 * or a part's sidecars published, never through a symlink; for a write that
 * failed, so errors are ignored (cleanup_orphans finds what is left).
 */
extern void lp_blob_writer_remove_sidecars(const LpBlobWriter *writer, const char *root);

/* The sidecar directories of the data files begun, "data/<stem>" below the root. */
extern List *lp_blob_writer_sidecar_dirs(const LpBlobWriter *writer);

/*
 * A descriptor as write_packed_blobs and write_dedicated_blob return it
 * ({"kind", "position", "size", "blob_id", "blob_uri"}); ERROR (22023)
 * naming column when a key is missing, of the wrong type or out of range.
 */
extern void lp_blob_descriptor_from_jsonb(Jsonb *jsonb, const char *column,
										  LpBlobDescriptor *out);

#endif							/* LP_WRITE_BLOBS_H */
