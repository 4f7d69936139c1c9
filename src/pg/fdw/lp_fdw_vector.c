/*
 * lp_fdw_vector.c - Lance's IVF vector indexes in top-k scans: the rows a
 * search of the index makes candidates for ORDER BY a distance LIMIT k.
 *
 * A top-k scan (lp_fdw_topk.c) asks, before ranking, for the candidates of
 * its query vector (lp_fdw_vector_candidates): a vector index of the
 * manifest on the ranked field alone, of the operator's metric (<-> l2,
 * <=> cosine, <#> dot) and the query's dimension, in a form the core reads
 * (lp_ivf_index.h), on a dataset without a fragment reuse index.  Each of
 * its segments probes the lance_parts.fdw_nprobes partitions whose
 * centroids are nearest the query and scores their rows; the best k * lance_parts.fdw_refine_factor rows by
 * score become the candidates (lancedb's refine: the scan ranks them by the
 * exact distance, which PostgreSQL's ORDER BY needs anyway).  When the scan
 * has a filter or the dataset deleted rows, every row of the probed
 * partitions is a candidate, so that rows the filter or the deletions drop
 * cannot push matching rows out (lancedb's prefilter finds no fewer); so
 * too with stable row ids, whose index may hold rows that Lance's
 * compaction dropped (lp_fdw_topk.c).  Stable row ids are turned into rows
 * as the scalar indexes' are (lp_fdw_index_rows).  The scan then reads
 * only the candidates of the fragments a used segment covers, and every row
 * of the others (appended after the index was built), so their rows are
 * ranked exactly and merged; deleted rows are dropped as in any scan.  Anything else (no such index, another metric or dimension,
 * a zero query under cosine, an index type or version the core does not
 * read) leaves the exact top-k, with a DEBUG1 message saying why.
 *
 * The models (centroids, codebooks, partition tables) and the partitions
 * read (their row ids and stored vectors or codes) are cached per backend,
 * keyed by the index directory (its UUID names one immutable index), within
 * lance_parts.fdw_vector_index_cache; the least recently used go first,
 * never one the current search uses, and what does not fit is read for the
 * query only.
 */
#include "postgres.h"

#include <math.h>

#include "lib/ilist.h"
#include "miscadmin.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"

#include "base/lp_alloc.h"
#include "format/lp_roaring.h"
#include "index/lp_ivf_index.h"
#include "fdw/lp_fdw.h"
#include "base/lp_pg_error.h"
#include "store/lp_pg_storage.h"

#define VECTOR_DETAILS_TYPE_URL "/lance.index.pb.VectorIndexDetails"

bool		lp_fdw_vector_index = true;
int			lp_fdw_nprobes = 20;
int			lp_fdw_refine_factor = 1;
int			lp_fdw_ef = 0;
static int	lp_fdw_vector_index_cache = 64 * 1024;	/* kB */

/*
 * A cached model or partition, in a memory context of its own, keyed by its
 * index directory (a model) or directory#partition (a partition's rows).
 */
typedef struct CacheEntry
{
	char		key[MAXPGPATH];	/* the hash key */
	dlist_node	lru;			/* in cache_lru: most recently used first */
	MemoryContext context;
	void	   *value;			/* an LpIvfModel or an LpIvfPartition */
	uint64		memory;
	uint64		search;			/* the last search that used it: not evicted during it */
} CacheEntry;

static MemoryContext cache_context;
static HTAB *cache;
static dlist_head cache_lru = DLIST_STATIC_INIT(cache_lru);
static uint64 cache_memory;
static uint64 current_search;

static uint64
cache_limit(void)
{
	return (uint64) lp_fdw_vector_index_cache * 1024;
}

/* Evict the least recently used entries not in use until memory more bytes fit; false when they cannot. */
static bool
make_room(uint64 memory)
{
	dlist_node *node;

	if (memory > cache_limit())
		return false;
	node = dlist_is_empty(&cache_lru) ? NULL : dlist_tail_node(&cache_lru);
	while (node != NULL && cache_memory + memory > cache_limit())
	{
		CacheEntry *entry = dlist_container(CacheEntry, lru, node);

		node = dlist_has_prev(&cache_lru, node) ? dlist_prev_node(&cache_lru, node) : NULL;
		if (entry->search == current_search && current_search != 0)
			continue;
		dlist_delete(&entry->lru);
		cache_memory -= entry->memory;
		MemoryContextDelete(entry->context);
		hash_search(cache, entry->key, HASH_REMOVE, NULL);
	}
	return cache_memory + memory <= cache_limit();
}

static void
cache_size_assign(int newval, void *extra)
{
	uint64		search = current_search;

	/* between searches: every entry may go */
	current_search = 0;
	lp_fdw_vector_index_cache = newval;
	if (cache != NULL)
		(void) make_room(0);
	current_search = search;
}

/* The cached value of key, marked as used by the current search; NULL when absent. */
static void *
cache_lookup(const char *key)
{
	CacheEntry *entry;

	if (cache == NULL || strlen(key) >= MAXPGPATH)
		return NULL;
	entry = hash_search(cache, key, HASH_FIND, NULL);
	if (entry == NULL)
		return NULL;
	dlist_move_head(&cache_lru, &entry->lru);
	entry->search = current_search;
	return entry->value;
}

/*
 * Keep value (all of it in context, memory bytes) under key when it fits;
 * otherwise context stays where it is, freed with the query's memory.
 */
static void
cache_insert(const char *key, MemoryContext context, void *value, uint64 memory)
{
	CacheEntry *entry;
	bool		found;

	if (strlen(key) >= MAXPGPATH || !make_room(memory))
		return;
	if (cache == NULL)
	{
		HASHCTL		ctl;

		cache_context = AllocSetContextCreate(TopMemoryContext, "lance_fdw vector index cache",
											  ALLOCSET_DEFAULT_SIZES);
		ctl.keysize = MAXPGPATH;
		ctl.entrysize = sizeof(CacheEntry);
		ctl.hcxt = cache_context;
		cache = hash_create("lance_fdw vector index cache", 64, &ctl,
							HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);
	}
	entry = hash_search(cache, key, HASH_ENTER, &found);
	Assert(!found);
	MemoryContextSetParent(context, cache_context);
	entry->context = context;
	entry->value = value;
	entry->memory = memory;
	entry->search = current_search;
	dlist_push_head(&cache_lru, &entry->lru);
	cache_memory += memory;
}

void
LpFdwVectorInit(void)
{
	DefineCustomBoolVariable("lance_parts.fdw_vector_index",
							 gettext_noop("Uses the IVF vector indexes of Lance datasets for ORDER BY a distance LIMIT k."),
							 gettext_noop("Off: the scan ranks every row exactly."),
							 &lp_fdw_vector_index,
							 true,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);
	DefineCustomIntVariable("lance_parts.fdw_nprobes",
							gettext_noop("Partitions of an IVF vector index a search probes (lancedb's nprobes)."),
							NULL,
							&lp_fdw_nprobes,
							20, 1, INT_MAX,
							PGC_USERSET, 0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("lance_parts.fdw_refine_factor",
							gettext_noop("Candidates of an IVF vector index search per row asked for (lancedb's refine_factor)."),
							gettext_noop("The candidates are ranked by their exact distances."),
							&lp_fdw_refine_factor,
							1, 1, 1000000,
							PGC_USERSET, 0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("lance_parts.fdw_ef",
							gettext_noop("Beam width of the HNSW graph searches of IVF_HNSW_* vector indexes (lancedb's ef)."),
							gettext_noop("0: 1.5 times the candidates asked for, and at least " CppAsString2(LP_IVF_MIN_DEFAULT_BEAM) ", where lancedb finds its graphs' nearest rows."),
							&lp_fdw_ef,
							0, 0, INT_MAX,
							PGC_USERSET, 0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("lance_parts.fdw_vector_index_cache",
							gettext_noop("Memory a backend keeps IVF vector index models (centroids, codebooks) in between queries."),
							gettext_noop("0 reads them for every query."),
							&lp_fdw_vector_index_cache,
							64 * 1024, 0, MAX_KILOBYTES,
							PGC_USERSET, GUC_UNIT_KB,
							NULL, cache_size_assign, NULL);
}

/*
 * The model of the index in directory, from the cache or read (then cached
 * when it fits); NULL with a DEBUG1 message when the core does not read
 * its form; an ERROR naming the file when it is damaged.
 */
static LpIvfModel *
model_of(const LpFdwSource *source, const char *directory, const char *name)
{
	LpIvfModel *model = cache_lookup(directory);
	LpInput    *index;
	LpInput    *auxiliary;
	MemoryContext context;
	MemoryContext old;
	LpError		err;
	bool		ok;

	if (model != NULL)
		return model;
	index = lp_open_input_in(source->store, psprintf("%s/%s", directory, LP_IVF_INDEX_FILE));
	auxiliary = lp_open_input_in(source->store, psprintf("%s/%s", directory, LP_IVF_AUXILIARY_FILE));
	context = AllocSetContextCreate(CurrentMemoryContext, "lance_fdw vector index model",
									ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(context);
	ok = lp_ivf_model_read(index, auxiliary, &model, &err);
	MemoryContextSwitchTo(old);
	lp_input_close(index);
	lp_input_close(auxiliary);
	if (!ok)
	{
		MemoryContextDelete(context);
		if (err.code != LP_ERR_UNSUPPORTED)
			lp_raise(&err);
		ereport(DEBUG1,
				errmsg_internal("lance_fdw does not use index \"%s\": %s", name, err.message));
		return NULL;
	}
	cache_insert(directory, context, model, lp_ivf_model_memory(model));
	return model;
}

/* The inputs of an index's files, opened when a partition is first read. */
typedef struct IndexInputs
{
	LpInput    *index;			/* models with graphs only */
	LpInput    *auxiliary;
} IndexInputs;

/*
 * The rows (and graph) of a partition of model, from the cache or read
 * through inputs (then cached when they fit).
 */
static const LpIvfPartition *
partition_of(const LpFdwSource *source, const LpIvfModel *model, const char *directory,
			 uint32 number, IndexInputs *inputs)
{
	char	   *key = psprintf("%s#%u", directory, number);
	LpIvfPartition *partition = cache_lookup(key);
	MemoryContext context;
	MemoryContext old;
	LpError		err;
	bool		ok;

	if (partition != NULL)
		return partition;
	if (inputs->auxiliary == NULL)
		inputs->auxiliary = lp_open_input_in(source->store,
											 psprintf("%s/%s", directory, LP_IVF_AUXILIARY_FILE));
	if (inputs->index == NULL && lp_ivf_model_has_graph(model))
		inputs->index = lp_open_input_in(source->store,
										 psprintf("%s/%s", directory, LP_IVF_INDEX_FILE));
	context = AllocSetContextCreate(CurrentMemoryContext, "lance_fdw vector index partition",
									ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(context);
	ok = lp_ivf_partition_read(model, inputs->index, inputs->auxiliary, number, &partition, &err);
	MemoryContextSwitchTo(old);
	if (!ok)
	{
		MemoryContextDelete(context);
		if (err.code == LP_ERR_CANCELED)
			CHECK_FOR_INTERRUPTS();
		lp_raise(&err);
	}
	cache_insert(key, context, partition, lp_ivf_partition_memory(partition));
	return partition;
}

/* Why a vector index entry is not used, or NULL when it may be. */
static const char *
unusable_reason(const LpFdwSource *source, const LpIndexEntry *entry)
{
	if (lp_manifest_fragment_reuse(source->manifest))
		return "the dataset has a fragment reuse index";
	if (entry->has_base_id)
		return "it is stored in another base";
	return NULL;
}

static const char *
metric_name(LpVectorMetric metric)
{
	return metric == LP_VECTOR_L2 ? "l2" : metric == LP_VECTOR_COSINE ? "cosine" : "dot";
}

/*
 * The model of entry when it is a vector index on Lance field field_id
 * alone that a search of metric and dimension may use (with its directory),
 * or NULL (with a DEBUG1 message when it is such an index but unusable).
 */
static LpIvfModel *
usable_model(const LpFdwSource *source, const LpIndexEntry *entry, int32 field_id,
			 LpVectorMetric metric, int dimension, char **directory)
{
	const char *reason;
	LpIvfModel *model;

	if (entry->n_fields != 1 || entry->fields[0] != field_id ||
		strcmp(entry->type_url, VECTOR_DETAILS_TYPE_URL) != 0)
		return NULL;
	reason = unusable_reason(source, entry);
	if (reason != NULL)
	{
		ereport(DEBUG1,
				errmsg_internal("lance_fdw does not use index \"%s\": %s", entry->name, reason));
		return NULL;
	}
	*directory = lp_fdw_index_directory(source, entry);
	model = model_of(source, *directory, entry->name);
	if (model == NULL)
		return NULL;
	if (lp_ivf_model_metric(model) != metric || lp_ivf_model_dimension(model) != (uint32) dimension)
	{
		ereport(DEBUG1,
				errmsg_internal("lance_fdw does not use index \"%s\": it is an index of %u dimensions under %s, the query has %d under %s",
								entry->name, lp_ivf_model_dimension(model),
								metric_name(lp_ivf_model_metric(model)), dimension,
								metric_name(metric)));
		return NULL;
	}
	return model;
}

/* A row an index search scored. */
typedef struct Candidate
{
	float		score;
	uint64		row_id;
} Candidate;

/* The best rows so far: a max-heap of at most limit rows (all of them when limit is PG_UINT64_MAX). */
typedef struct Candidates
{
	Candidate  *rows;
	uint64		num;
	uint64		capacity;
	uint64		limit;
	/* when limit rows are kept and the worst's score is a number: a row must score below it */
	bool		bounded;
	float		bound;
} Candidates;

/* Scores in ascending order, NaN last. */
static int
compare_candidates(const Candidate *a, const Candidate *b)
{
	float		x = a->score;
	float		y = b->score;

	if (isnan(x) || isnan(y))
		return isnan(x) - isnan(y);
	return x < y ? -1 : x > y;
}

static void
swap_candidates(Candidate *a, Candidate *b)
{
	Candidate	t = *a;

	*a = *b;
	*b = t;
}

/* Whether a row of score would be among the limit best so far: the heap's root is the worst kept. */
static inline bool
would_keep(const Candidates *candidates, float score)
{
	Candidate	row = {score, 0};

	return candidates->num < candidates->limit ||
		(candidates->limit > 0 && compare_candidates(&row, &candidates->rows[0]) < 0);
}

static void
set_bound(Candidates *candidates)
{
	candidates->bounded = candidates->num == candidates->limit && !isnan(candidates->rows[0].score);
	candidates->bound = candidates->rows[0].score;
}

/* Keep row if it is among the limit best so far. */
static void
offer_candidate(Candidates *candidates, float score, uint64 row_id)
{
	Candidate	row = {score, row_id};
	Candidate  *heap = candidates->rows;
	uint64		i;

	if (!would_keep(candidates, score))
		return;
	if (candidates->num == candidates->limit)
	{
		heap[0] = row;
		for (i = 0;;)
		{
			uint64		largest = i;
			uint64		left = 2 * i + 1;

			if (left < candidates->num && compare_candidates(&heap[left], &heap[largest]) > 0)
				largest = left;
			if (left + 1 < candidates->num && compare_candidates(&heap[left + 1], &heap[largest]) > 0)
				largest = left + 1;
			if (largest == i)
				break;
			swap_candidates(&heap[i], &heap[largest]);
			i = largest;
		}
		set_bound(candidates);
		return;
	}
	if (candidates->num == candidates->capacity)
	{
		candidates->capacity = Min(candidates->limit, Max(candidates->capacity * 2, 1024));
		candidates->rows = heap = repalloc_huge(heap, sizeof(Candidate) * candidates->capacity);
	}
	i = candidates->num++;
	heap[i] = row;
	if (candidates->limit == PG_UINT64_MAX)
		return;
	while (i > 0 && compare_candidates(&heap[(i - 1) / 2], &heap[i]) < 0)
	{
		swap_candidates(&heap[(i - 1) / 2], &heap[i]);
		i = (i - 1) / 2;
	}
	set_bound(candidates);
}

/*
 * Score the rows of the nprobes partitions of model nearest query that lie
 * in fragments entry covers, offering them to candidates; false (with a
 * DEBUG1 message) when the query has no partitions (a zero vector under
 * cosine).
 */
static bool
search_segment(const LpFdwSource *source, const LpIndexEntry *entry, const LpIvfModel *model,
			   const char *directory, const float *query, LpFdwVectorSearch *search,
			   Candidates *candidates)
{
	uint32	   *partitions = palloc(sizeof(uint32) * Min((uint32) lp_fdw_nprobes,
														 lp_ivf_model_num_partitions(model)));
	uint32		probed;
	IndexInputs inputs = {NULL, NULL};
	LpIvfScan  *scan;
	uint32		ef = 0;
	uint32	   *rows = NULL;
	uint64		fragment = PG_UINT64_MAX;	/* of the last row looked up, and whether entry covers it */
	bool		covers = false;
	/* stable row ids do not name their fragment: lp_fdw_index_rows finds them in the covered ones */
	bool		stable = lp_manifest_stable_row_ids(source->manifest);
	LpError		err;

	if (!lp_ivf_nearest_partitions(model, query, (uint32) lp_fdw_nprobes, partitions, &probed, &err) ||
		!lp_ivf_scan_open(model, query, &scan, &err))
	{
		if (err.code != LP_ERR_INVALID_ARGUMENT)
			lp_raise(&err);
		ereport(DEBUG1,
				errmsg_internal("lance_fdw does not use index \"%s\": %s", entry->name, err.message));
		return false;
	}
	/*
	 * An HNSW graph is walked with a beam of lance_parts.fdw_ef, or by
	 * default lancedb's, when candidates are limited; otherwise every row is
	 * scored.
	 */
	if (lp_ivf_model_has_graph(model) && candidates->limit != PG_UINT64_MAX)
	{
		uint64		limit = Min(candidates->limit, (uint64) PG_INT32_MAX);
		uint64		beam = lp_fdw_ef > 0 ? (uint64) lp_fdw_ef : lp_ivf_default_beam(limit);

		ef = (uint32) Min(Max(beam, limit), (uint64) PG_INT32_MAX);
	}
	for (uint32 p = 0; p < probed; p++)
	{
		const LpIvfPartition *partition;
		const uint64 *ids;
		float	   *scores;
		uint64		n;
		uint32		found;
		bool		walk;

		CHECK_FOR_INTERRUPTS();
		partition = partition_of(source, model, directory, partitions[p], &inputs);
		n = lp_ivf_partition_num_rows(partition);
		ids = lp_ivf_partition_row_ids(partition);
		walk = ef > 0 && lp_ivf_partition_graph_unread(partition) == NULL;
		if (ef > 0 && !walk)
			ereport(DEBUG1,
					errmsg_internal("lance_fdw scores every row of partition %u of index \"%s\": %s",
									partitions[p], entry->name, lp_ivf_partition_graph_unread(partition)));
		scores = palloc(sizeof(float) * Max(walk ? Min(ef, n) : n, 1));
		if (walk)
		{
			search->graph = true;
			rows = palloc(sizeof(uint32) * Max(Min(ef, n), 1));
			if (n > 0 && !lp_ivf_scan_search(scan, partition, (uint32) Min(ef, n), rows, scores,
											 &found, &err))
				lp_raise(&err);
		}
		else
			lp_ivf_scan_score(scan, partition, scores);
		/* rows come mostly fragment by fragment: the bitmap is asked once per run */
		for (uint64 i = 0; i < (walk ? (n > 0 ? found : 0) : n); i++)
		{
			uint64		id;

			/* most rows score no better than the worst kept: their fragment is not looked up */
			if (candidates->bounded && !(scores[i] < candidates->bound))
				continue;
			id = ids[walk ? rows[i] : i];
			if (!stable && (id >> 32) != fragment)
			{
				fragment = id >> 32;
				covers = false;
				if (!lp_roaring32_contains(entry->fragment_bitmap, entry->fragment_bitmap_len,
										   (uint32) fragment, &covers, &err))
					lp_raise(&err);
			}
			if (stable || covers)
				offer_candidate(candidates, scores[i], id);
		}
		pfree(scores);
		if (rows != NULL)
			pfree(rows);
		rows = NULL;
		search->rows_read += n;
	}
	search->partitions_probed += probed;
	search->num_partitions += lp_ivf_model_num_partitions(model);
	lp_ivf_scan_close(scan);
	if (inputs.auxiliary != NULL)
		lp_input_close(inputs.auxiliary);
	if (inputs.index != NULL)
		lp_input_close(inputs.index);
	return true;
}

LpFdwIndexRows *
lp_fdw_vector_candidates(const LpFdwSource *source, int32 field_id, LpVectorMetric metric,
						 const float *query, int dimension, uint64 limit,
						 LpFdwVectorSearch *search)
{
	LpIndexEntry *entries;
	size_t		n;
	bool	   *used;
	const char *name = NULL;
	Candidates	candidates = {palloc(sizeof(Candidate) * 1024), 0, 1024, limit};
	uint64	   *ids;
	LpFdwIndexRows *result;
	LpError		err;

	memset(search, 0, sizeof(*search));
	if (!lp_fdw_vector_index || source->single_file)
		return NULL;
	current_search++;
	if (!lp_manifest_index_entries(source->manifest, &entries, &n, &err))
		lp_raise(&err);
	used = palloc0(sizeof(bool) * Max(n, 1));
	for (size_t i = 0; i < n; i++)
	{
		char	   *directory;
		LpIvfModel *model;

		/* the segments of one index share its name: take the first index's */
		if (name != NULL && strcmp(name, entries[i].name) != 0)
			continue;
		model = usable_model(source, &entries[i], field_id, metric, dimension, &directory);
		if (model == NULL ||
			!search_segment(source, &entries[i], model, directory, query, search, &candidates))
			continue;
		used[i] = true;
		name = entries[i].name;
		search->index_name = pstrdup(name);
		search->index_type = pstrdup(lp_ivf_model_type(model));
		search->metric = metric_name(metric);
	}
	if (name == NULL)
	{
		lp_manifest_index_entries_free(entries, n);
		return NULL;
	}
	search->candidates = candidates.num;
	ids = palloc(sizeof(uint64) * Max(candidates.num, 1));
	for (uint64 i = 0; i < candidates.num; i++)
		ids[i] = candidates.rows[i].row_id;
	pfree(candidates.rows);
	result = lp_fdw_index_rows(source, entries, used, n, name, search->index_type, ids,
							   candidates.num, NULL, 0);
	lp_manifest_index_entries_free(entries, n);
	return result;
}

char *
lp_fdw_vector_index_planned(const LpFdwSource *source, int32 field_id, LpVectorMetric metric,
							int dimension)
{
	LpIndexEntry *entries;
	size_t		n;
	char	   *found = NULL;
	LpError		err;

	if (!lp_fdw_vector_index || source->single_file)
		return NULL;
	current_search++;
	if (!lp_manifest_index_entries(source->manifest, &entries, &n, &err))
		lp_raise(&err);
	for (size_t i = 0; i < n && found == NULL; i++)
	{
		char	   *directory;
		LpIvfModel *model = usable_model(source, &entries[i], field_id, metric, dimension,
										 &directory);

		if (model != NULL)
			found = psprintf("%s (%s, %s)", entries[i].name, lp_ivf_model_type(model),
							 metric_name(metric));
	}
	lp_manifest_index_entries_free(entries, n);
	return found;
}
