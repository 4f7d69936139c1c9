/*
 * lp_hnsw_graph.c - reading and searching the HNSW graphs of Lance's vector
 * indexes (lp_hnsw_graph.h).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/lp_alloc.h"
#include "base/lp_checked.h"
#include "decode/lp_decode.h"
#include "format/lp_schema.h"
#include "format/lp_values.h"
#include "index/lp_hnsw_graph.h"
#include "index/lp_index_json.h"

/* Far above Lance's (its max_level defaults to 7). */
#define MAX_LEVELS 64

/* One level: the neighbours of node v are neighbors[starts[v] .. starts[v + 1]). */
typedef struct Level
{
	uint64_t   *starts;			/* num_nodes + 1 */
	uint32_t   *neighbors;
} Level;

struct LpHnswGraph
{
	uint32_t	num_nodes;
	uint32_t	entry_point;	/* where a search starts, on the top level */
	uint32_t	num_levels;
	Level	   *levels;
	uint64_t	memory;
};

/* A node and its distance, in the search's heaps. */
typedef struct Scored
{
	float		distance;
	uint32_t	node;
} Scored;

void
lp_hnsw_graph_free(LpHnswGraph *graph)
{
	if (graph == NULL)
		return;
	for (uint32_t l = 0; l < graph->num_levels && graph->levels != NULL; l++)
	{
		lp_free(graph->levels[l].starts);
		lp_free(graph->levels[l].neighbors);
	}
	lp_free(graph->levels);
	lp_free(graph);
}

uint64_t
lp_hnsw_graph_memory(const LpHnswGraph *graph)
{
	return graph->memory;
}

/* level_offsets of metadata: levels + 1 ascending row numbers from 0 to count. */
static bool
read_level_offsets(const char *metadata, const char *file, uint64_t count,
				   uint64_t *offsets, uint32_t *num_levels, LpError *err)
{
	LpJsonSpan	json = {metadata, strlen(metadata)};
	LpJsonSpan	array;
	LpJsonSpan	element;
	uint32_t	n = 0;

	if (!lp_json_member(json, "level_offsets", &array))
		return lp_fail(err, LP_ERR_CORRUPT, "vector index file \"%s\" has HNSW metadata without level_offsets", file);
	while (n <= MAX_LEVELS && lp_json_element(array, n, &element))
	{
		double		value;

		if (!lp_json_number(element, &value) || value < 0 || value > (double) count ||
			value != floor(value) || (n > 0 && (uint64_t) value < offsets[n - 1]) ||
			(n == 0 && value != 0))
			return lp_fail(err, LP_ERR_CORRUPT, "vector index file \"%s\" has invalid HNSW level_offsets", file);
		offsets[n++] = (uint64_t) value;
	}
	if (n < 2 || n > MAX_LEVELS || offsets[n - 1] != count)
		return lp_fail(err, LP_ERR_CORRUPT, "vector index file \"%s\" has HNSW level_offsets that do not cover its %llu rows",
					   file, (unsigned long long) count);
	*num_levels = n - 1;
	return true;
}

/* entry_point of metadata (a node of the top level); 0 where it has none. */
static bool
read_entry_point(const char *metadata, const char *file, uint32_t num_nodes, uint32_t *entry,
				 LpError *err)
{
	LpJsonSpan	json = {metadata, strlen(metadata)};
	LpJsonSpan	member;
	double		value;

	*entry = 0;
	if (!lp_json_member(json, "entry_point", &member))
		return true;
	if (!lp_json_number(member, &value) || value < 0 || value != floor(value) ||
		value >= (double) (num_nodes > 0 ? num_nodes : 1))
		return lp_fail(err, LP_ERR_CORRUPT, "vector index file \"%s\" has an HNSW entry_point outside its %u nodes",
					   file, num_nodes);
	*entry = (uint32_t) value;
	return true;
}

/* Decode rows [first, first + count) of top-level field name of type id (list: of uint32). */
static bool
take_field(LpInput *input, const LpFile *file, const char *name, LpTypeId id, uint64_t first,
		   uint64_t count, LpArray **out, LpError *err)
{
	int64_t		field = lp_schema_top_field(&file->schema, name);
	LpFieldReader *reader;
	const LpType *type;
	uint64_t   *rows;
	bool		ok;

	*out = NULL;
	if (field < 0)
		return lp_fail(err, LP_ERR_CORRUPT, "vector index file \"%s\" has no field \"%s\"", file->name, name);
	if (!lp_field_reader_open(input, file, (uint32_t) field, &reader, err))
		return false;
	type = lp_field_reader_type(reader);
	if (type->id != id || (id == LP_TYPE_LIST &&
						   (type->num_children != 1 || type->children[0]->id != LP_TYPE_UINT32)))
	{
		lp_field_reader_close(reader);
		return lp_fail(err, LP_ERR_CORRUPT, "vector index file \"%s\" has field \"%s\" of an unexpected type",
					   file->name, name);
	}
	rows = lp_alloc(sizeof(uint64_t) * (count > 0 ? count : 1));
	if (rows == NULL)
	{
		lp_field_reader_close(reader);
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
	}
	for (uint64_t i = 0; i < count; i++)
		rows[i] = first + i;
	ok = lp_field_reader_take(reader, rows, count, out, err);
	lp_free(rows);
	lp_field_reader_close(reader);
	if (ok && ((*out)->length != count || (*out)->null_count != 0 ||
			   (id == LP_TYPE_LIST && ((*out)->num_children != 1 ||
									   (*out)->children[0]->null_count != 0))))
	{
		lp_array_free(*out);
		*out = NULL;
		return lp_fail(err, LP_ERR_CORRUPT, "vector index file \"%s\" has null or missing values of \"%s\"",
					   file->name, name);
	}
	return ok;
}

/* Level l of the graph from rows [begin, end) of ids and lists. */
static bool
build_level(LpHnswGraph *graph, Level *level, const LpArray *ids, const LpArray *lists,
			uint64_t begin, uint64_t end, const char *file, LpError *err)
{
	const uint32_t *nodes = (const uint32_t *) ids->values;
	const uint64_t *offsets = lists->offsets;
	const LpArray *items = lists->children[0];
	const uint32_t *values = (const uint32_t *) items->values;
	uint64_t	total = 0;
	uint64_t   *fill;

	level->starts = lp_alloc0(sizeof(uint64_t) * ((uint64_t) graph->num_nodes + 1));
	if (level->starts == NULL)
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
	for (uint64_t r = begin; r < end; r++)
	{
		if (nodes[r] >= graph->num_nodes || offsets[r] > offsets[r + 1] ||
			offsets[r + 1] > items->length)
			return lp_fail(err, LP_ERR_CORRUPT, "vector index file \"%s\" has an HNSW row naming node %u of %u",
						   file, nodes[r], graph->num_nodes);
		level->starts[nodes[r] + 1] += offsets[r + 1] - offsets[r];
		total += offsets[r + 1] - offsets[r];
	}
	for (uint32_t v = 0; v < graph->num_nodes; v++)
		level->starts[v + 1] += level->starts[v];
	level->neighbors = lp_alloc(sizeof(uint32_t) * (total > 0 ? total : 1));
	fill = lp_alloc(sizeof(uint64_t) * ((uint64_t) graph->num_nodes + 1));
	if (level->neighbors == NULL || fill == NULL)
	{
		lp_free(fill);
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
	}
	memcpy(fill, level->starts, sizeof(uint64_t) * ((uint64_t) graph->num_nodes + 1));
	for (uint64_t r = begin; r < end; r++)
		for (uint64_t i = offsets[r]; i < offsets[r + 1]; i++)
		{
			if (values[i] >= graph->num_nodes)
			{
				lp_free(fill);
				return lp_fail(err, LP_ERR_CORRUPT, "vector index file \"%s\" has an HNSW neighbour %u of %u nodes",
							   file, values[i], graph->num_nodes);
			}
			level->neighbors[fill[nodes[r]]++] = values[i];
		}
	lp_free(fill);
	graph->memory += sizeof(uint64_t) * ((uint64_t) graph->num_nodes + 1) + sizeof(uint32_t) * total;
	return true;
}

bool
lp_hnsw_graph_read(LpInput *input, const LpFile *file, uint64_t first, uint64_t count,
				   const char *metadata, uint32_t num_nodes, LpHnswGraph **out, LpError *err)
{
	uint64_t	level_offsets[MAX_LEVELS + 1];
	uint32_t	num_levels = 0;
	LpHnswGraph *graph;
	LpArray    *ids = NULL;
	LpArray    *lists = NULL;
	bool		ok = true;

	*out = NULL;
	if (!read_level_offsets(metadata, file->name, count, level_offsets, &num_levels, err))
		return false;
	graph = lp_alloc0(sizeof(LpHnswGraph));
	if (graph == NULL)
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
	graph->num_nodes = num_nodes;
	ok = read_entry_point(metadata, file->name, num_nodes, &graph->entry_point, err);
	graph->levels = lp_alloc0(sizeof(Level) * num_levels);
	graph->num_levels = num_levels;
	graph->memory = sizeof(LpHnswGraph) + sizeof(Level) * num_levels;
	if (ok && graph->levels == NULL)
		ok = lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
	ok = ok && take_field(input, file, "__vector_id", LP_TYPE_UINT32, first, count, &ids, err) &&
		take_field(input, file, "__neighbors", LP_TYPE_LIST, first, count, &lists, err);
	for (uint32_t l = 0; ok && l < num_levels; l++)
		ok = build_level(graph, &graph->levels[l], ids, lists, level_offsets[l],
						 level_offsets[l + 1], file->name, err);
	lp_array_free(ids);
	lp_array_free(lists);
	if (!ok)
	{
		lp_hnsw_graph_free(graph);
		return false;
	}
	*out = graph;
	return true;
}

/* ---- search ------------------------------------------------------------------------ */

/* Ascending distance, NaN last. */
static int
compare(const Scored *a, const Scored *b)
{
	if (isnan(a->distance) || isnan(b->distance))
		return isnan(a->distance) - isnan(b->distance);
	return a->distance < b->distance ? -1 : a->distance > b->distance;
}

/* A binary heap: the root is the smallest (sign 1) or the largest (sign -1). */
typedef struct Heap
{
	Scored	   *items;
	uint32_t	num;
	uint32_t	capacity;
	int			sign;
} Heap;

static bool
heap_push(Heap *heap, Scored item)
{
	uint32_t	i;

	if (heap->num == heap->capacity)
	{
		uint32_t	capacity = heap->capacity * 2;
		Scored	   *items = lp_alloc(sizeof(Scored) * capacity);

		if (items == NULL)
			return false;
		memcpy(items, heap->items, sizeof(Scored) * heap->num);
		lp_free(heap->items);
		heap->items = items;
		heap->capacity = capacity;
	}
	i = heap->num++;
	heap->items[i] = item;
	while (i > 0 && heap->sign * compare(&heap->items[i], &heap->items[(i - 1) / 2]) < 0)
	{
		Scored		t = heap->items[i];

		heap->items[i] = heap->items[(i - 1) / 2];
		heap->items[(i - 1) / 2] = t;
		i = (i - 1) / 2;
	}
	return true;
}

static Scored
heap_pop(Heap *heap)
{
	Scored		top = heap->items[0];
	uint32_t	i = 0;

	heap->items[0] = heap->items[--heap->num];
	for (;;)
	{
		uint32_t	best = i;
		uint32_t	left = 2 * i + 1;

		if (left < heap->num && heap->sign * compare(&heap->items[left], &heap->items[best]) < 0)
			best = left;
		if (left + 1 < heap->num && heap->sign * compare(&heap->items[left + 1], &heap->items[best]) < 0)
			best = left + 1;
		if (best == i)
			return top;
		{
			Scored		t = heap->items[i];

			heap->items[i] = heap->items[best];
			heap->items[best] = t;
		}
		i = best;
	}
}

/* From entry, move to a nearer neighbour on level while there is one. */
static Scored
greedy(const Level *level, Scored entry, LpHnswDistance distance, void *context)
{
	bool		moved = true;

	while (moved)
	{
		uint32_t	node = entry.node;

		moved = false;
		for (uint64_t i = level->starts[node]; i < level->starts[node + 1]; i++)
		{
			Scored		next = {distance(context, level->neighbors[i]), level->neighbors[i]};

			if (compare(&next, &entry) < 0)
			{
				entry = next;
				moved = true;
			}
		}
	}
	return entry;
}

static int
compare_qsort(const void *a, const void *b)
{
	return compare(a, b);
}

bool
lp_hnsw_graph_search(const LpHnswGraph *graph, uint32_t ef, LpHnswDistance distance,
					 void *context, uint32_t *nodes, float *distances, uint32_t *found,
					 LpError *err)
{
	const Level *bottom;
	uint8_t    *visited;
	Heap		candidates = {lp_alloc(sizeof(Scored) * 64), 0, 64, 1};
	Heap		results = {lp_alloc(sizeof(Scored) * ((uint64_t) ef + 1)), 0, ef + 1, -1};
	Scored		entry;
	bool		ok = true;

	*found = 0;
	visited = lp_alloc0(((uint64_t) graph->num_nodes + 7) / 8 + 1);
	if (visited == NULL || candidates.items == NULL || results.items == NULL)
		ok = false;
	if (!ok || graph->num_nodes == 0 || ef == 0)
		goto done;
	entry.node = graph->entry_point;
	entry.distance = distance(context, entry.node);
	/*
	 * As Lance 12 (lancedb 0.39) and the HNSW paper: greedy down to level 1,
	 * the beam on level 0 starting where that ends (older Lance went on
	 * greedily through level 0, which leaves the beam in a local minimum:
	 * with it, a beam of lancedb's 1.5 k found about 75 % of its rows).
	 */
	for (uint32_t l = graph->num_levels; l-- > 1;)
		entry = greedy(&graph->levels[l], entry, distance, context);
	bottom = &graph->levels[0];
	visited[entry.node / 8] |= 1 << (entry.node % 8);
	ok = heap_push(&candidates, entry) && heap_push(&results, entry);
	while (ok && candidates.num > 0)
	{
		Scored		nearest = heap_pop(&candidates);

		if (results.num >= ef && compare(&nearest, &results.items[0]) > 0)
			break;
		/* as Lance 12's beam search: neighbours within the results' bound as it is now */
		for (uint64_t i = bottom->starts[nearest.node]; ok && i < bottom->starts[nearest.node + 1]; i++)
		{
			uint32_t	node = bottom->neighbors[i];
			Scored		next;

			if (visited[node / 8] & (1 << (node % 8)))
				continue;
			visited[node / 8] |= 1 << (node % 8);
			next.node = node;
			next.distance = distance(context, node);
			if (results.num >= ef && compare(&next, &results.items[0]) > 0)
				continue;
			if (results.num < ef)
				ok = heap_push(&results, next);
			else if (compare(&next, &results.items[0]) < 0)
			{
				(void) heap_pop(&results);
				ok = heap_push(&results, next);
			}
			ok = ok && heap_push(&candidates, next);
		}
	}
	if (ok)
	{
		qsort(results.items, results.num, sizeof(Scored), compare_qsort);
		for (uint32_t i = 0; i < results.num; i++)
		{
			nodes[i] = results.items[i].node;
			distances[i] = results.items[i].distance;
		}
		*found = results.num;
	}

done:
	lp_free(visited);
	lp_free(candidates.items);
	lp_free(results.items);
	return ok || lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
}
