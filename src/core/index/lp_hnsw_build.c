/*
 * lp_hnsw_build.c - building an HNSW graph as Lance's HnswBuilder does
 * (lp_hnsw_build.h).
 */
#include <math.h>
#include <string.h>

#include "base/lp_alloc.h"
#include "base/lp_interrupt.h"
#include "index/lp_hnsw_build.h"

typedef struct Edge
{
	uint32_t	id;
	float		dist;
} Edge;

/* A node's neighbours on one level, nearest first, at most capacity. */
typedef struct Neighbors
{
	Edge	   *edges;
	uint32_t	count;
	uint32_t	capacity;		/* m_max of the level, plus one being added */
} Neighbors;

struct LpHnswBuilt
{
	uint32_t	n;
	uint32_t	dimension;
	LpVectorMetric metric;
	LpHnswParams params;
	const float *vectors;		/* during the build only */
	uint32_t   *node_levels;	/* levels each node is on */
	Neighbors **neighbors;		/* [node][level] */
	uint32_t	level_nodes[LP_HNSW_MAX_LEVELS];
	/* the searches' scratch */
	uint32_t   *visited;		/* == stamp: visited in the current search */
	uint32_t	stamp;
	Edge	   *candidates;		/* a min-heap */
	Edge	   *results;		/* a max-heap of at most ef */
	bool	   *kept;			/* prune's choices */
};

static float
distance(const LpHnswBuilt *g, uint32_t a, uint32_t b)
{
	const float *x = g->vectors + (uint64_t) a * g->dimension;
	const float *y = g->vectors + (uint64_t) b * g->dimension;
	float		sum = 0;
	float		xx = 0;
	float		yy = 0;

	switch (g->metric)
	{
		case LP_VECTOR_L2:
			for (uint32_t i = 0; i < g->dimension; i++)
				sum += (x[i] - y[i]) * (x[i] - y[i]);
			return sum;
		case LP_VECTOR_COSINE:
			for (uint32_t i = 0; i < g->dimension; i++)
			{
				sum += x[i] * y[i];
				xx += x[i] * x[i];
				yy += y[i] * y[i];
			}
			return 1 - sum / sqrtf(xx * yy);
		default:
			for (uint32_t i = 0; i < g->dimension; i++)
				sum += x[i] * y[i];
			return 1 - sum;
	}
}

/* NaN (a zero vector under cosine) ranks after every number, as in Lance's OrderedFloat. */
static bool
nearer(float a, float b)
{
	if (isnan(a))
		return false;
	return isnan(b) || a < b;
}

/* Binary heaps of edges: the root is the nearest (min) or the farthest (max). */
static bool
heap_before(const Edge *a, const Edge *b, bool max)
{
	return max ? nearer(b->dist, a->dist) : nearer(a->dist, b->dist);
}

static void
heap_push(Edge *heap, uint32_t *count, Edge edge, bool max)
{
	uint32_t	i = (*count)++;

	heap[i] = edge;
	while (i > 0 && heap_before(&heap[i], &heap[(i - 1) / 2], max))
	{
		Edge		parent = heap[(i - 1) / 2];

		heap[(i - 1) / 2] = heap[i];
		heap[i] = parent;
		i = (i - 1) / 2;
	}
}

static Edge
heap_pop(Edge *heap, uint32_t *count, bool max)
{
	Edge		top = heap[0];
	uint32_t	i = 0;

	heap[0] = heap[--(*count)];
	for (;;)
	{
		uint32_t	first = i;
		uint32_t	left = 2 * i + 1;

		if (left < *count && heap_before(&heap[left], &heap[first], max))
			first = left;
		if (left + 1 < *count && heap_before(&heap[left + 1], &heap[first], max))
			first = left + 1;
		if (first == i)
			break;
		{
			Edge		swap = heap[i];

			heap[i] = heap[first];
			heap[first] = swap;
		}
		i = first;
	}
	return top;
}

static uint32_t
m_max(const LpHnswBuilt *g, uint32_t level)
{
	return level == 0 ? 2 * g->params.m : g->params.m;
}

/* From ep, move to a nearer neighbour on level while there is one (Lance's greedy_search). */
static Edge
greedy(const LpHnswBuilt *g, uint32_t query, Edge ep, uint32_t level)
{
	bool		moved = true;

	while (moved)
	{
		const Neighbors *list = &g->neighbors[ep.id][level];

		moved = false;
		for (uint32_t i = 0; i < list->count; i++)
		{
			float		d = distance(g, query, list->edges[i].id);

			if (nearer(d, ep.dist))
			{
				ep.id = list->edges[i].id;
				ep.dist = d;
				moved = true;
			}
		}
	}
	return ep;
}

/*
 * The at most ef nodes of level nearest query a beam search from ep finds,
 * nearest first, into g->results; their count.
 */
static uint32_t
search_level(LpHnswBuilt *g, uint32_t query, Edge ep, uint32_t level, uint32_t ef)
{
	uint32_t	n_candidates = 0;
	uint32_t	n_results = 0;

	g->stamp++;
	g->visited[ep.id] = g->stamp;
	heap_push(g->candidates, &n_candidates, ep, false);
	heap_push(g->results, &n_results, ep, true);
	while (n_candidates > 0)
	{
		Edge		c = heap_pop(g->candidates, &n_candidates, false);
		const Neighbors *list = &g->neighbors[c.id][level];

		if (n_results >= ef && nearer(g->results[0].dist, c.dist))
			break;
		for (uint32_t i = 0; i < list->count; i++)
		{
			uint32_t	id = list->edges[i].id;
			Edge		e;

			if (g->visited[id] == g->stamp)
				continue;
			g->visited[id] = g->stamp;
			e.id = id;
			e.dist = distance(g, query, id);
			if (n_results < ef || nearer(e.dist, g->results[0].dist))
			{
				heap_push(g->candidates, &n_candidates, e, false);
				heap_push(g->results, &n_results, e, true);
				if (n_results > ef)
					heap_pop(g->results, &n_results, true);
			}
		}
	}
	/* farthest popped first: the results end nearest first */
	for (uint32_t k = n_results; k > 0; k--)
	{
		uint32_t	count = k;
		Edge		e = heap_pop(g->results, &count, true);

		g->candidates[k - 1] = e;
	}
	memcpy(g->results, g->candidates, sizeof(Edge) * n_results);
	return n_results;
}

/*
 * Cut list (nearest first) to at most k by Lance's heuristic: a candidate
 * is kept when it is nearer the node than to every one kept before it;
 * then, as Lance keeps pruned connections, the nearest of those passed
 * over fill what is left of the k.  The list stays nearest first.
 */
static void
prune(LpHnswBuilt *g, Neighbors *list, uint32_t k)
{
	uint32_t	kept = 0;
	uint32_t	considered = 0;
	uint32_t	fill;
	uint32_t	out = 0;

	if (list->count <= k)
		return;
	for (; considered < list->count && kept < k; considered++)
	{
		Edge		u = list->edges[considered];
		bool		keep = true;

		for (uint32_t j = 0; j < considered && keep; j++)
			if (g->kept[j])
				keep = nearer(u.dist, distance(g, u.id, list->edges[j].id));
		g->kept[considered] = keep;
		kept += keep;
	}
	fill = k - kept;
	for (uint32_t i = 0; i < considered; i++)
	{
		if (!g->kept[i])
		{
			if (fill == 0)
				continue;
			fill--;
		}
		list->edges[out++] = list->edges[i];
	}
	list->count = out;
}

/* Add edge to list (nearest first; room for one more than m_max). */
static void
add_sorted(Neighbors *list, Edge edge)
{
	uint32_t	i = list->count;

	while (i > 0 && nearer(edge.dist, list->edges[i - 1].dist))
	{
		list->edges[i] = list->edges[i - 1];
		i--;
	}
	list->edges[i] = edge;
	list->count++;
}

/* Insert node (after node 0, which is the entry point on every level). */
static void
insert(LpHnswBuilt *g, uint32_t node)
{
	uint32_t	top = g->node_levels[node] - 1;
	Edge		ep = {0, distance(g, node, 0)};

	for (uint32_t level = g->params.max_level - 1; level > top; level--)
		ep = greedy(g, node, ep, level);
	for (uint32_t level = top + 1; level-- > 0;)
	{
		Neighbors  *own = &g->neighbors[node][level];
		uint32_t	found = search_level(g, node, ep, level, g->params.ef_construction);
		uint32_t	limit = m_max(g, level);

		/* the beam's results, nearest first, cut as Lance cuts them */
		own->count = 0;
		{
			Neighbors	all = {g->candidates, 0, found};

			memcpy(all.edges, g->results, sizeof(Edge) * found);
			all.count = found;
			prune(g, &all, limit);
			memcpy(own->edges, all.edges, sizeof(Edge) * all.count);
			own->count = all.count;
		}
		ep = g->results[0];
	}
	/* the reverse edges, where they beat the neighbour's farthest */
	for (uint32_t level = 0; level <= top; level++)
	{
		const Neighbors *own = &g->neighbors[node][level];
		uint32_t	limit = m_max(g, level);

		for (uint32_t i = 0; i < own->count; i++)
		{
			Neighbors  *theirs = &g->neighbors[own->edges[i].id][level];
			Edge		back = {node, own->edges[i].dist};

			if (theirs->count >= limit && !nearer(back.dist, theirs->edges[theirs->count - 1].dist))
				continue;
			add_sorted(theirs, back);
			prune(g, theirs, limit);
		}
	}
}

/* splitmix64: the levels' draws. */
static uint64_t
next_random(uint64_t *state)
{
	uint64_t	z = (*state += 0x9E3779B97F4A7C15ULL);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

static uint32_t
random_levels(const LpHnswParams *params, uint64_t *state)
{
	/* u in (0, 1] */
	double		u = ((double) (next_random(state) >> 11) + 1) / 9007199254740992.0;
	double		level = floor(-log(u) / log((double) params->m));

	return 1 + (level < params->max_level - 1 ? (uint32_t) level : params->max_level - 1);
}

bool
lp_hnsw_build(const float *vectors, uint32_t n, uint32_t dimension, LpVectorMetric metric,
			  const LpHnswParams *params, uint64_t seed, LpHnswBuilt **out, LpError *err)
{
	LpHnswBuilt *g;
	uint64_t	state = seed;
	uint64_t	edges = 0;
	Edge	   *pool;
	uint32_t	scratch;

	*out = NULL;
	if (params->max_level < 1 || params->max_level > LP_HNSW_MAX_LEVELS || params->m < 2 ||
		params->m > LP_HNSW_MAX_M || params->ef_construction < 1 ||
		params->ef_construction > LP_HNSW_MAX_EF)
		return lp_fail(err, LP_ERR_CORRUPT, "HNSW parameters max_level %u, m %u, ef_construction %u are out of range",
					   params->max_level, params->m, params->ef_construction);
	if (n == 0)
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT, "an HNSW graph needs a node");
	g = lp_alloc0(sizeof(LpHnswBuilt));
	if (g == NULL)
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory building an HNSW graph");
	g->n = n;
	g->dimension = dimension;
	g->metric = metric;
	g->params = *params;
	g->vectors = vectors;
	scratch = (params->ef_construction > 2 * params->m ? params->ef_construction : 2 * params->m) + n + 2;
	g->node_levels = lp_alloc_array(n + 1, sizeof(uint32_t));
	g->neighbors = lp_alloc_array(n + 1, sizeof(Neighbors *));
	g->visited = lp_alloc_array(n + 1, sizeof(uint32_t));
	g->candidates = lp_alloc_array(scratch, sizeof(Edge));
	g->results = lp_alloc_array(scratch, sizeof(Edge));
	g->kept = lp_alloc_array(scratch, sizeof(bool));
	if (g->node_levels == NULL || g->neighbors == NULL || g->visited == NULL ||
		g->candidates == NULL || g->results == NULL || g->kept == NULL)
		goto no_memory;
	for (uint32_t node = 0; node < n; node++)
	{
		g->node_levels[node] = node == 0 ? params->max_level : random_levels(params, &state);
		edges += 2 * params->m + 1 + (uint64_t) (g->node_levels[node] - 1) * (params->m + 1);
		for (uint32_t l = 0; l < g->node_levels[node]; l++)
			g->level_nodes[l]++;
	}
	/* one block of edges for every list, and of lists for every node */
	pool = lp_alloc_array((size_t) edges + 1, sizeof(Edge));
	if (pool == NULL)
		goto no_memory;
	for (uint32_t node = 0; node < n; node++)
	{
		g->neighbors[node] = lp_alloc_array(g->node_levels[node], sizeof(Neighbors));
		if (g->neighbors[node] == NULL)
		{
			if (node == 0)
				lp_free(pool);
			goto no_memory;
		}
		for (uint32_t l = 0; l < g->node_levels[node]; l++)
		{
			g->neighbors[node][l].edges = pool;
			g->neighbors[node][l].capacity = m_max(g, l) + 1;
			pool += m_max(g, l) + 1;
		}
	}
	for (uint32_t node = 1; node < n; node++)
	{
		if (node % 256 == 0 && lp_check_cancel(err))
		{
			lp_hnsw_built_free(g);
			return false;
		}
		insert(g, node);
	}
	g->vectors = NULL;
	*out = g;
	return true;

no_memory:
	lp_hnsw_built_free(g);
	return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory building an HNSW graph");
}

uint32_t
lp_hnsw_built_levels(const LpHnswBuilt *graph)
{
	return graph->params.max_level;
}

uint32_t
lp_hnsw_built_level_nodes(const LpHnswBuilt *graph, uint32_t level)
{
	return level < LP_HNSW_MAX_LEVELS ? graph->level_nodes[level] : 0;
}

bool
lp_hnsw_built_neighbors(const LpHnswBuilt *graph, uint32_t node, uint32_t level,
						const uint32_t **ids, const float **distances, uint32_t *count)
{
	LpHnswBuilt *g = (LpHnswBuilt *) graph;
	const Neighbors *list;

	if (node >= g->n || level >= g->node_levels[node])
		return false;
	list = &g->neighbors[node][level];
	/* the edges split into ids and distances in the graph's scratch, valid until the next call */
	for (uint32_t i = 0; i < list->count; i++)
	{
		((uint32_t *) g->candidates)[i] = list->edges[i].id;
		((float *) g->results)[i] = list->edges[i].dist;
	}
	*ids = (const uint32_t *) g->candidates;
	*distances = (const float *) g->results;
	*count = list->count;
	return true;
}

void
lp_hnsw_built_free(LpHnswBuilt *graph)
{
	if (graph == NULL)
		return;
	if (graph->neighbors != NULL && graph->n > 0 && graph->neighbors[0] != NULL)
		lp_free(graph->neighbors[0][0].edges);
	for (uint32_t node = 0; graph->neighbors != NULL && node < graph->n; node++)
		lp_free(graph->neighbors[node]);
	lp_free(graph->neighbors);
	lp_free(graph->node_levels);
	lp_free(graph->visited);
	lp_free(graph->candidates);
	lp_free(graph->results);
	lp_free(graph->kept);
	lp_free(graph);
}
