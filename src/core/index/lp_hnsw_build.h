/*
 * lp_hnsw_build.h - building the HNSW graph of one partition of an
 * IVF_HNSW_* index (lp_hnsw_graph.h reads them), as Lance's HnswBuilder
 * builds it when a remap leaves a partition with other rows: node 0 on
 * every level and the entry point, every other node on 1 + min(floor(-ln u
 * / ln m), max_level - 1) levels (u from a PRNG seeded by the caller, where
 * Lance draws from the thread's), inserted in order: a greedy descent
 * through the levels above its own, then on each of its levels a beam
 * search of width ef_construction whose results are cut to m_max (2 m on
 * level 0, m above) by Lance's neighbour heuristic (pruned connections
 * kept to fill m_max, as Lance keeps them), and the reverse edges added
 * where they beat the neighbour's farthest and cut alike.  Distances
 * are those of the metric between the nodes' vectors (squared L2, 1 -
 * cosine, 1 - dot).
 */
#ifndef LP_HNSW_BUILD_H
#define LP_HNSW_BUILD_H

#include <stdbool.h>
#include <stdint.h>

#include "base/lp_error.h"
#include "index/lp_ivf_index.h"

/* Far above what lancedb writes (max_level 7, m 20, ef_construction 300). */
#define LP_HNSW_MAX_LEVELS 64
#define LP_HNSW_MAX_M 1024
#define LP_HNSW_MAX_EF 100000

typedef struct LpHnswParams
{
	uint32_t	max_level;		/* levels, 1..LP_HNSW_MAX_LEVELS */
	uint32_t	m;				/* 2..LP_HNSW_MAX_M */
	uint32_t	ef_construction;	/* 1..LP_HNSW_MAX_EF */
} LpHnswParams;

typedef struct LpHnswBuilt LpHnswBuilt;

/* The graph of vectors[0..n * dimension) (n nodes). */
bool		lp_hnsw_build(const float *vectors, uint32_t n, uint32_t dimension,
						  LpVectorMetric metric, const LpHnswParams *params, uint64_t seed,
						  LpHnswBuilt **out, LpError *err);

/* Levels of the graph (params->max_level) and the nodes on level l. */
uint32_t	lp_hnsw_built_levels(const LpHnswBuilt *graph);
uint32_t	lp_hnsw_built_level_nodes(const LpHnswBuilt *graph, uint32_t level);

/* Whether node is on level l, and then its neighbours there, nearest first (with their distances). */
bool		lp_hnsw_built_neighbors(const LpHnswBuilt *graph, uint32_t node, uint32_t level,
									const uint32_t **ids, const float **distances,
									uint32_t *count);

void		lp_hnsw_built_free(LpHnswBuilt *graph);

#endif							/* LP_HNSW_BUILD_H */
