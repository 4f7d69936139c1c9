/*
 * lp_ivf_remap.h - an IVF vector index (lp_ivf_index.h) rewritten for the
 * rows a compaction moved, as Lance's compaction remaps it into a new
 * index: the partitions, their centroids and the quantizer stay; in each
 * partition the stored rows keep their order, their row ids are mapped
 * (lp_row_address_map.h) and rows that were deleted are left out, so
 * auxiliary.idx is written anew (same schema and metadata, file version
 * and global buffers, but for the IVF message's partition offsets and
 * lengths; PQ codes transposed again over the partition's new rows).
 * index.idx holds no row ids: with a FLAT sub-index it stays as it is.  An
 * HNSW graph numbers its partition's stored rows, so it stays valid while
 * no row of the index is dropped; otherwise every partition's graph is
 * rebuilt over its kept rows as Lance's remap rebuilds them
 * (lp_hnsw_build.h, the old parameters) and index.idx written anew.
 */
#ifndef LP_IVF_REMAP_H
#define LP_IVF_REMAP_H

#include <stdbool.h>

#include "base/lp_error.h"
#include "index/lp_ivf_index.h"
#include "index/lp_row_address_map.h"
#include "io/lp_storage.h"

/*
 * Write the remapped auxiliary.idx of the index whose files are behind
 * index and auxiliary into auxiliary_out, and its index.idx into index_out
 * where graphs were rebuilt (*index_written; otherwise the caller copies
 * index.idx there), from offset 0, published or aborted by the caller.  A
 * damaged file or a row id past its fragment's rows is LP_ERR_CORRUPT;
 * forms lp_ivf_model_read does not read are LP_ERR_UNSUPPORTED; nothing is
 * published either way.
 */
bool		lp_ivf_index_remap(LpInput *index, LpInput *auxiliary, const LpRowAddressMap *map,
							   LpOutput *auxiliary_out, LpOutput *index_out, bool *index_written,
							   LpError *err);

#endif							/* LP_IVF_REMAP_H */
