/*
 * lp_s3_store.h - an LpStore over an S3 bucket, through io/lp_s3_client.
 *
 * Paths are URIs "s3://bucket/key" (io/lp_s3_uri: any other is refused).  The ops map onto S3: stat is a HEAD (a
 * one-key listing for a prefix, which is a directory; never a symlink),
 * list a ListObjectsV2 with delimiter "/" and continuation, put_if_absent a
 * PUT with "If-None-Match: *" (412: LP_ERR_ALREADY_EXISTS, unless the object
 * holds exactly the bytes given: a retried PUT whose first attempt was
 * stored meets its own object), remove a DELETE,
 * remove_tree a listing and a DELETE per key, canonical and same_object
 * compare normalized "s3://bucket/key" names.  Inputs read with ranged GETs:
 * a read smaller than LP_S3_READ_BLOCK fetches the aligned blocks around it
 * and later reads inside them are served from memory, so nearby small reads
 * (a footer, the metadata before it, neighbouring pages) cost one request.
 * An input's prefetch starts ranged GETs of the ranges a reader will ask for
 * next (widened to the blocks and merged), at most LP_S3_READAHEAD_BYTES of
 * them held, and reads inside one are served from it; the pieces of all but
 * the last two prefetches are dropped, and close aborts the pending ones.
 * Outputs are written front to back and published as one PUT or, from
 * LP_S3_UPLOAD_PART_SIZE on, as a multipart upload whose copy_from ranges of
 * objects of this store, or of another store of the same endpoint and
 * account (lp_s3_client_same_account), become UploadPartCopy parts (server-side, when
 * the copied run is at least LP_S3_MIN_PART_SIZE; smaller runs are read and
 * uploaded), or by part number from several processes (below; the output's
 * start_parts, add_part and copies_part_from ops are these functions, and
 * the store's open_part gives writers of one part each: an UploadPartCopy
 * of a whole part copied from an object of the account, else one UploadPart
 * of the bytes written into it).  Publication never replaces an object: a single PUT is
 * conditional; a multipart upload checks with a HEAD and completes with
 * "If-None-Match: *", which servers without conditional completion (Ceph RGW
 * 16) ignore, leaving a window between the HEAD and the completion.  The
 * clone ops and shared outputs are absent.
 */
#ifndef LP_S3_STORE_H
#define LP_S3_STORE_H

#include "base/lp_error.h"
#include "io/lp_s3_sizes.h"
#include "io/lp_s3_transport.h"
#include "io/lp_storage.h"


/*
 * A store of the endpoint config describes through transport (both the
 * caller's, outliving the store); NULL with err for a configuration the
 * client refuses.
 */
LpStore    *lp_s3_store_create(const LpS3Config *config, LpS3Transport *transport,
							   LpError *err);

/* Free a store whose inputs and outputs are all closed. */
void		lp_s3_store_free(LpStore *store);

/*
 * An S3 output whose parts several processes write at once (parallel
 * server-side assembly).  lp_s3_output_start_parts starts the multipart
 * upload of an S3 output nothing was written to and returns its upload id
 * (owned by the output); from then on only the calls below write it.  The
 * caller uploads parts itself with lp_s3_output_send_part and records with
 * lp_s3_output_add_part the ETags other processes got with
 * lp_s3_store_copy_part or a part writer of the store (LpStoreOps.open_part);
 * publish completes with the parts sorted by number,
 * abort (or any failure of these calls) aborts the upload.  NULL with
 * LP_ERR_INTERNAL for any other output.
 */
const char *lp_s3_output_start_parts(LpOutput *output, LpError *err);
bool		lp_s3_output_send_part(LpOutput *output, uint32_t number, const void *data,
								   size_t len, LpError *err);
bool		lp_s3_output_add_part(LpOutput *output, uint32_t number, const char *etag,
								  LpError *err);

/* Whether output is an S3 output whose copy_from copies input on the server. */
bool		lp_s3_output_copies_on_server(LpOutput *output, LpInput *input);

/*
 * UploadPartCopy of len bytes of input at offset as part number of upload
 * upload_id of output_uri, through store (any S3 store of the output's
 * account, e.g. one a parallel worker opened): the ETag into etag
 * (LP_S3_PART_ETAG_MAX bytes suffice).  LP_ERR_UNSUPPORTED when store is no
 * S3 store or cannot copy input on the server.  Aborts nothing.
 */
bool		lp_s3_store_copy_part(LpStore *store, const char *output_uri,
								  const char *upload_id, uint32_t number, LpInput *input,
								  uint64_t offset, uint64_t len, char *etag,
								  size_t etag_capacity, LpError *err);

#endif							/* LP_S3_STORE_H */
