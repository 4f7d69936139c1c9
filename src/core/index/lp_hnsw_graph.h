/*
 * lp_hnsw_graph.h - the HNSW graphs of Lance's IVF_HNSW_* vector indexes
 * (one per partition, the rows of index.idx), and their search.
 *
 * A partition's rows are its levels one after the other, level l the rows
 * [level_offsets[l], level_offsets[l + 1]) of its "lance:hnsw" metadata
 * entry; a row is a node (__vector_id, an index into the partition's stored
 * rows) and its neighbours on that level (__neighbors, list<uint32>).  A
 * search descends greedily from the entry point through the levels above
 * level 0 and ends with a beam search of width ef on level 0, as Lance 12's
 * does (the HNSW paper's search).  Every node and neighbour number is checked against
 * the partition's rows; errors are values.
 */
#ifndef LP_HNSW_GRAPH_H
#define LP_HNSW_GRAPH_H

#include <stdbool.h>
#include <stdint.h>

#include "base/lp_error.h"
#include "format/lp_file.h"
#include "io/lp_storage.h"

typedef struct LpHnswGraph LpHnswGraph;

/*
 * Read the graph of rows [first, first + count) of file (index.idx, behind
 * input, only read during the call), whose levels metadata (the partition's
 * "lance:hnsw" entry, JSON) gives, over num_nodes nodes.
 */
bool		lp_hnsw_graph_read(LpInput *input, const LpFile *file, uint64_t first, uint64_t count,
							   const char *metadata, uint32_t num_nodes, LpHnswGraph **out,
							   LpError *err);

/* Bytes the graph holds, for bounded caches. */
uint64_t	lp_hnsw_graph_memory(const LpHnswGraph *graph);
void		lp_hnsw_graph_free(LpHnswGraph *graph);

/* The distance of the query to node (smaller is nearer; NaN after every number). */
typedef float (*LpHnswDistance) (void *context, uint32_t node);

/*
 * The at most ef nodes (ef >= 1) nearest the query the search finds, nearest
 * first, into nodes[] and distances[] (ef entries each); *found their count.
 */
bool		lp_hnsw_graph_search(const LpHnswGraph *graph, uint32_t ef, LpHnswDistance distance,
								 void *context, uint32_t *nodes, float *distances,
								 uint32_t *found, LpError *err);

#endif							/* LP_HNSW_GRAPH_H */
