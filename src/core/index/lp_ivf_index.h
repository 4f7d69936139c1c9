/*
 * lp_ivf_index.h - searching the IVF vector indexes Lance writes (lancedb's
 * createIndex with Index.ivfFlat, ivfPq, hnswSq, ...), under
 * <dataset>/_indices/<uuid>/ as two Lance files:
 *  - index.idx: schema metadata "lance:index" (JSON: type, distance_type)
 *    and "lance:ivf", the number of the global buffer holding the IVF
 *    message (index.proto): the centroids, a Tensor [partitions, dimension];
 *    its rows are the sub-index (none for FLAT, the graphs for HNSW);
 *  - auxiliary.idx: the stored vectors, grouped by partition: _rowid
 *    (uint64) and one of "flat" (the vectors), "__pq_code" (product
 *    quantization codes, the codebook a Tensor in the global buffer
 *    storage_metadata's codebook_position names) or "__sq_code" (8-bit
 *    scalar quantization, bounds in storage_metadata); its own "lance:ivf"
 *    buffer gives each partition's first row and row count.
 * A search probes the partitions whose centroids are nearest the query and
 * scores every stored row of them, or walks their HNSW graphs
 * (lp_hnsw_graph.h) for the sub-index IVF_HNSW_* indexes have.
 * Scores are Lance's _distance for flat storage (squared L2, 1 - cosine,
 * 1 - dot), approximations of it for PQ and SQ; callers re-rank with exact
 * distances.  The model (centroids, codebook, partition table, the
 * auxiliary file's metadata) and the partitions read are plain memory, so
 * callers may cache them; partitions are read through any input of the
 * same auxiliary file.  Every
 * count, offset and shape read from the files is checked; errors are
 * values: LP_ERR_UNSUPPORTED for forms it does not read (the caller falls
 * back to an exact search), LP_ERR_CORRUPT for damaged files.
 */
#ifndef LP_IVF_INDEX_H
#define LP_IVF_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/lp_error.h"
#include "format/lp_file.h"
#include "io/lp_storage.h"

#define LP_IVF_INDEX_FILE "index.idx"
#define LP_IVF_AUXILIARY_FILE "auxiliary.idx"

typedef enum LpVectorMetric
{
	LP_VECTOR_L2,
	LP_VECTOR_COSINE,
	LP_VECTOR_DOT
} LpVectorMetric;

typedef enum LpIvfStorage
{
	LP_IVF_STORAGE_FLAT,
	LP_IVF_STORAGE_PQ,
	LP_IVF_STORAGE_SQ
} LpIvfStorage;

typedef struct LpIvfModel LpIvfModel;

/*
 * Read the model of the index whose files are behind index and auxiliary
 * (both only read during the call).
 */
bool		lp_ivf_model_read(LpInput *index, LpInput *auxiliary, LpIvfModel **out, LpError *err);
void		lp_ivf_model_free(LpIvfModel *model);

/* The index type as lance:index names it ("IVF_PQ", "IVF_HNSW_SQ", ...). */
const char *lp_ivf_model_type(const LpIvfModel *model);
LpVectorMetric lp_ivf_model_metric(const LpIvfModel *model);
LpIvfStorage lp_ivf_model_storage(const LpIvfModel *model);
uint32_t	lp_ivf_model_dimension(const LpIvfModel *model);
uint32_t	lp_ivf_model_num_partitions(const LpIvfModel *model);

/* Bytes the model holds, for bounded caches. */
uint64_t	lp_ivf_model_memory(const LpIvfModel *model);

/*
 * What rewriting the auxiliary file takes (lp_ivf_remap.h): its metadata,
 * the fields of row ids and of stored vectors, and the bytes of one row's
 * vector or codes (PQ codes transposed per partition when
 * lp_ivf_model_pq_transposed).
 */
const LpFile *lp_ivf_model_auxiliary_file(const LpIvfModel *model);
uint32_t	lp_ivf_model_row_id_field(const LpIvfModel *model);
uint32_t	lp_ivf_model_vector_field(const LpIvfModel *model);
uint64_t	lp_ivf_model_row_width(const LpIvfModel *model);
bool		lp_ivf_model_pq_transposed(const LpIvfModel *model);

/*
 * What rebuilding the HNSW graphs takes (lp_ivf_remap.h): index.idx's
 * metadata (NULL without graphs), partition's "lance:hnsw" entry (a JSON
 * object, lp_alloc'd into *json), and row of the stored values of a
 * partition of num_rows rows (as stored) as a vector of dimension floats
 * (SQ codes and PQ codes decoded, PQ residuals added to the centroid).
 */
const LpFile *lp_ivf_model_index_file(const LpIvfModel *model);
bool		lp_ivf_model_hnsw_metadata(const LpIvfModel *model, uint32_t partition, char **json,
									   LpError *err);
void		lp_ivf_stored_vector(const LpIvfModel *model, uint32_t partition, const uint8_t *values,
								 uint64_t num_rows, uint64_t row, float *out);

/* The number of the global buffer of file (index.idx or auxiliary.idx) holding its IVF message ("lance:ivf"). */
bool		lp_ivf_message_buffer(const LpFile *file, uint64_t *number, LpError *err);

/* Global buffer number of file, read whole into *out (lp_alloc'd), *len its size. */
bool		lp_ivf_read_global_buffer(LpInput *input, const LpFile *file, uint64_t number,
									  uint8_t **out, size_t *len, LpError *err);

/*
 * The min(nprobes, partitions) partitions whose centroids are nearest query
 * (dimension floats, finite) into partitions[], nearest first (Lance's
 * order: L2 for l2 and for cosine after normalizing the query, 1 - dot for
 * dot); *num their count.  A zero query under cosine is
 * LP_ERR_INVALID_ARGUMENT.
 */
bool		lp_ivf_nearest_partitions(const LpIvfModel *model, const float *query, uint32_t nprobes,
									  uint32_t *partitions, uint32_t *num, LpError *err);

/*
 * The stored rows of one partition (their row ids and vectors or codes),
 * plain memory, so that callers may cache it too.
 */
typedef struct LpIvfPartition LpIvfPartition;

/* Whether the model's partitions have HNSW graphs (its index.idx has rows). */
bool		lp_ivf_model_has_graph(const LpIvfModel *model);

/*
 * Read partition of model through auxiliary and, for a model with graphs,
 * index (inputs of the model's auxiliary.idx and index.idx, only read during
 * the call; index is not read otherwise and may be NULL).
 */
bool		lp_ivf_partition_read(const LpIvfModel *model, LpInput *index, LpInput *auxiliary,
								  uint32_t partition, LpIvfPartition **out, LpError *err);
uint64_t	lp_ivf_partition_num_rows(const LpIvfPartition *partition);

/* Row addresses, or stable row ids on datasets that have them. */
const uint64_t *lp_ivf_partition_row_ids(const LpIvfPartition *partition);

/*
 * For a model with graphs: why the partition's graph was not read (it is in
 * an encoding the core does not read: lp_ivf_scan_search cannot walk it,
 * lp_ivf_scan_score scores its rows), or NULL when it was.
 */
const char *lp_ivf_partition_graph_unread(const LpIvfPartition *partition);

/* The stored vectors or codes of its rows, as stored (lp_ivf_model_row_width bytes a row). */
const uint8_t *lp_ivf_partition_values(const LpIvfPartition *partition);

/* Bytes the partition holds, for bounded caches. */
uint64_t	lp_ivf_partition_memory(const LpIvfPartition *partition);
void		lp_ivf_partition_free(LpIvfPartition *partition);

/* A search of model for query (copied; normalized under cosine). */
typedef struct LpIvfScan LpIvfScan;

/* A zero query under cosine is LP_ERR_INVALID_ARGUMENT. */
bool		lp_ivf_scan_open(const LpIvfModel *model, const float *query, LpIvfScan **out,
							 LpError *err);

/*
 * The scores of partition's rows (a partition of the scan's model) into
 * scores[0..lp_ivf_partition_num_rows).  A NaN score (a zero vector under
 * cosine) ranks after every number.
 */
void		lp_ivf_scan_score(LpIvfScan *scan, const LpIvfPartition *partition, float *scores);

/*
 * Search the HNSW graph of partition (lp_ivf_model_has_graph, and not
 * lp_ivf_partition_graph_unread) with a beam
 * of ef (>= 1, at most the partition's rows): the rows it finds, nearest
 * first, as indexes into lp_ivf_partition_row_ids into rows[] and their
 * scores into scores[] (ef entries each), *found their count.
 */
bool		lp_ivf_scan_search(LpIvfScan *scan, const LpIvfPartition *partition, uint32_t ef,
							   uint32_t *rows, float *scores, uint32_t *found, LpError *err);

/*
 * The beam lance_fdw searches an HNSW graph with when no ef is given, for
 * the candidates wanted: lancedb 0.39's (1.5 times them), and at least
 * LP_IVF_MIN_DEFAULT_BEAM.  The walk is Lance 12's (lp_hnsw_graph.h), which
 * returns lancedb's rows at lancedb's beam; a wider one finds at least as
 * many of the nearest rows.
 */
#define LP_IVF_MIN_DEFAULT_BEAM 100

uint64_t	lp_ivf_default_beam(uint64_t candidates);

void		lp_ivf_scan_close(LpIvfScan *scan);

#endif							/* LP_IVF_INDEX_H */
