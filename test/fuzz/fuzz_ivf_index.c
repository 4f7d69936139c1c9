/*
 * fuzz_ivf_index.c - libFuzzer target for IVF vector index files
 * (lp_ivf_index.h) as lance_fdw reads and searches them.  Input: a u32
 * (little-endian) length L, then L bytes of index.idx, then auxiliary.idx.
 * A model that reads is probed with a query made of the header's bytes, and
 * every probed partition is read, scored and (HNSW) searched: the
 * partitions are distinct, at most as many as asked, an empty partition has
 * no row ids, and a graph search finds rows of the partition.  The index
 * is then remapped (lp_ivf_remap.h) as if compaction moved fragment 0's
 * REMAP_ROWS rows, some deleted (the header's bits), to fragment 1: a remap
 * that succeeds writes an auxiliary file that reads back with index.idx
 * (the same, or rebuilt HNSW graphs), with as many partitions as before.
 * Seeds: indexes lancedb wrote on 300 vectors of 8 dimensions
 * (test/fuzz/corpus/fuzz_ivf_index: IVF_FLAT under l2, IVF_PQ under cosine,
 * IVF_HNSW_SQ under dot).
 */
#include <stdint.h>
#include <stdlib.h>

#include "lp_fuzz.h"
#include "index/lp_ivf_index.h"
#include "index/lp_ivf_remap.h"
#include "io/lp_storage.h"

#define HEADER_BYTES 4
#define NPROBES 3
#define EF 15
/* the rows of the seeds' fragment 0 */
#define REMAP_ROWS 300

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
search(const LpIvfModel *model, LpInput *index, LpInput *auxiliary, const uint8_t *seed)
{
	uint32_t	dimension = lp_ivf_model_dimension(model);
	float	   *query = lp_alloc(sizeof(float) * dimension);
	uint32_t	partitions[NPROBES];
	uint32_t	n = 0;
	LpIvfScan  *scan;
	LpError		err;

	if (query == NULL)
		return;
	for (uint32_t i = 0; i < dimension; i++)
		query[i] = (float) (int8_t) seed[i % HEADER_BYTES] / 16 + (float) i;
	if (lp_ivf_nearest_partitions(model, query, NPROBES, partitions, &n, &err))
	{
		if (n > NPROBES || n > lp_ivf_model_num_partitions(model))
			abort();
		for (uint32_t a = 0; a < n; a++)
			for (uint32_t b = a + 1; b < n; b++)
				if (partitions[a] == partitions[b])
					abort();
		if (lp_ivf_scan_open(model, query, &scan, &err))
		{
			for (uint32_t p = 0; p < n; p++)
			{
				LpIvfPartition *partition;

				if (lp_ivf_partition_read(model, index, auxiliary, partitions[p], &partition, &err))
				{
					uint64_t	count = lp_ivf_partition_num_rows(partition);
					float	   *scores = lp_alloc(sizeof(float) * (count + 1));
					uint32_t	rows[EF];
					float		found_scores[EF];
					uint32_t	found;

					if ((count == 0) != (lp_ivf_partition_row_ids(partition) == NULL))
						abort();
					if (scores != NULL)
						lp_ivf_scan_score(scan, partition, scores);
					if (lp_ivf_model_has_graph(model) && count > 0 &&
						lp_ivf_scan_search(scan, partition, count < EF ? (uint32_t) count : EF,
										   rows, found_scores, &found, &err))
						for (uint32_t i = 0; i < found; i++)
							if (rows[i] >= count)
								abort();
					lp_free(scores);
					lp_ivf_partition_free(partition);
				}
			}
			lp_ivf_scan_close(scan);
		}
	}
	lp_free(query);
}

/* Remap model's index as compaction would, and read the result back. */
static void
remap(const LpIvfModel *model, LpInput *index, LpInput *auxiliary, const uint8_t *seed)
{
	uint8_t		bits[REMAP_ROWS / 8 + 1] = {0};
	LpDeletions deleted = {REMAP_ROWS, 0, bits};
	LpMovedFragment moved = {0, REMAP_ROWS, &deleted, 1, 0};
	LpRowAddressMap *map;
	LpOutput   *out;
	LpOutput   *index_out;
	bool		index_written = false;
	LpError		err;

	for (uint32_t r = 0; r < REMAP_ROWS; r++)
		if ((seed[r % HEADER_BYTES] >> (r % 8)) & 1)
		{
			bits[r / 8] |= (uint8_t) (1u << (r % 8));
			deleted.num_deleted++;
		}
	if (!lp_row_address_map_new(&moved, 1, &map, &err))
		return;
	out = lp_memory_output_open("remapped auxiliary.idx");
	index_out = lp_memory_output_open("remapped index.idx");
	if (out != NULL && index_out != NULL &&
		lp_ivf_index_remap(index, auxiliary, map, out, index_out, &index_written, &err))
	{
		uint64_t	len;
		uint64_t	index_len;
		const uint8_t *bytes = lp_memory_output_data(out, &len);
		const uint8_t *index_bytes = lp_memory_output_data(index_out, &index_len);
		LpInput    *remapped = lp_memory_input_open("remapped auxiliary.idx", bytes, len);
		LpInput    *remapped_index = index_written ?
			lp_memory_input_open("remapped index.idx", index_bytes, index_len) : index;
		LpIvfModel *again;

		if (remapped == NULL || remapped_index == NULL)
			abort();
		if (!lp_ivf_model_read(remapped_index, remapped, &again, &err))
		{
			/* memory the bounded allocator refuses is the one failure allowed */
			if (err.code != LP_ERR_NO_MEMORY)
				abort();
		}
		else
		{
			if (lp_ivf_model_num_partitions(again) != lp_ivf_model_num_partitions(model))
				abort();
			lp_ivf_model_free(again);
		}
		lp_input_close(remapped);
		if (remapped_index != index)
			lp_input_close(remapped_index);
	}
	if (out != NULL)
		out->ops->abort(out);
	if (index_out != NULL)
		index_out->ops->abort(index_out);
	lp_row_address_map_free(map);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint32_t	index_len;
	LpInput    *index;
	LpInput    *auxiliary;
	LpIvfModel *model;
	LpError		err;

	if (size < HEADER_BYTES)
		return 0;
	index_len = lp_fuzz_u32(data);
	if (index_len > size - HEADER_BYTES)
		return 0;
	lp_fuzz_use_bounded_allocator();
	index = lp_memory_input_open("index.idx", data + HEADER_BYTES, index_len);
	auxiliary = lp_memory_input_open("auxiliary.idx", data + HEADER_BYTES + index_len,
									 size - HEADER_BYTES - index_len);
	if (index != NULL && auxiliary != NULL && lp_ivf_model_read(index, auxiliary, &model, &err))
	{
		search(model, index, auxiliary, data);
		remap(model, index, auxiliary, data);
		lp_ivf_model_free(model);
	}
	if (index != NULL)
		lp_input_close(index);
	if (auxiliary != NULL)
		lp_input_close(auxiliary);
	return 0;
}
