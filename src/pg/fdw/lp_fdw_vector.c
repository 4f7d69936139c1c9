/*
 * lp_fdw_vector.c - Lance's IVF vector indexes in top-k scans: the rows a
 * search of the index makes candidates for ORDER BY a distance LIMIT k.
 *
 * A top-k scan (lp_fdw_topk.c) asks, before ranking, for the candidates of
 * its query vector (lp_fdw_vector_candidates): a vector index of the
 * manifest on the ranked field alone, of the operator's metric (<-> l2,
 * <=> cosine, <#> dot) and the query's dimension, in a form the core reads
 * (lp_ivf_index.h), on a dataset whose row ids are row addresses (no stable
 * row ids, no fragment reuse index).  Each of its segments probes the
 * lance_parts.fdw_nprobes partitions whose centroids are nearest the query
 * and scores their rows; the best k * lance_parts.fdw_refine_factor rows by
 * score become the candidates (lancedb's refine: the scan ranks them by the
 * exact distance, which PostgreSQL's ORDER BY needs anyway).  When the scan
 * has a filter or the dataset deleted rows, every row of the probed
 * partitions is a candidate, so that rows the filter or the deletions drop
 * cannot push matching rows out (lancedb's prefilter finds no fewer).  The
 * scan then reads only the candidates of the fragments a used segment
 * covers, and every row of the others (appended after the index was built),
 * so their rows are ranked exactly and merged; deleted rows are dropped as
 * in any scan.  Anything else (no such index, another metric or dimension,
 * a zero query under cosine, an index type or version the core does not
 * read) leaves the exact top-k, with a DEBUG1 message saying why.
 *
 * The models (centroids, codebooks, partition tables) are cached per
 * backend, keyed by the index directory (its UUID names one immutable
 * index), within lance_parts.fdw_vector_index_cache; the least recently
 * used go first, and a model larger than the cache is read for the query
 * only.
 */
#include "postgres.h"

#include <math.h>

#include "miscadmin.h"
#include "utils/guc.h"
#include "utils/memutils.h"

#include "base/lp_alloc.h"
#include "format/lp_roaring.h"
#include "index/lp_ivf_index.h"
#include "fdw/lp_fdw.h"
#include "lp_pg_error.h"
#include "store/lp_pg_storage.h"

#define VECTOR_DETAILS_TYPE_URL "/lance.index.pb.VectorIndexDetails"

bool		lp_fdw_vector_index = true;
int			lp_fdw_nprobes = 20;
int			lp_fdw_refine_factor = 1;
static int	lp_fdw_vector_index_cache = 64 * 1024;	/* kB */

/* A cached model, in a memory context of its own. */
typedef struct CachedModel
{
	char	   *directory;
	LpIvfModel *model;
	MemoryContext context;
	uint64		memory;
	uint64		last_used;
} CachedModel;

static MemoryContext cache_context;
static List *cached_models;
static uint64 cache_memory;
static uint64 cache_clock;

/* Drop the least recently used models until the cache holds at most limit bytes. */
static void
evict_to(uint64 limit)
{
	while (cache_memory > limit && cached_models != NIL)
	{
		ListCell   *cell;
		CachedModel *oldest = NULL;

		foreach(cell, cached_models)
		{
			CachedModel *entry = lfirst(cell);

			if (oldest == NULL || entry->last_used < oldest->last_used)
				oldest = entry;
		}
		cached_models = list_delete_ptr(cached_models, oldest);
		cache_memory -= oldest->memory;
		MemoryContextDelete(oldest->context);
	}
}

static void
cache_size_assign(int newval, void *extra)
{
	evict_to((uint64) newval * 1024);
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
	ListCell   *cell;
	char	   *index_path;
	char	   *auxiliary_path;
	LpInput    *index;
	LpInput    *auxiliary;
	LpIvfModel *model;
	MemoryContext context;
	MemoryContext old;
	LpError		err;
	bool		ok;
	uint64		memory;

	foreach(cell, cached_models)
	{
		CachedModel *entry = lfirst(cell);

		if (strcmp(entry->directory, directory) == 0)
		{
			entry->last_used = ++cache_clock;
			return entry->model;
		}
	}
	if (cache_context == NULL)
		cache_context = AllocSetContextCreate(TopMemoryContext, "lance_fdw vector index cache",
											  ALLOCSET_SMALL_SIZES);
	index_path = psprintf("%s/%s", directory, LP_IVF_INDEX_FILE);
	auxiliary_path = psprintf("%s/%s", directory, LP_IVF_AUXILIARY_FILE);
	index = lp_open_input_in(source->store, index_path);
	auxiliary = lp_open_input_in(source->store, auxiliary_path);
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
	memory = lp_ivf_model_memory(model);
	if (memory <= (uint64) lp_fdw_vector_index_cache * 1024)
	{
		CachedModel *entry;

		evict_to((uint64) lp_fdw_vector_index_cache * 1024 - memory);
		MemoryContextSetParent(context, cache_context);
		old = MemoryContextSwitchTo(cache_context);
		entry = palloc0(sizeof(CachedModel));
		entry->directory = pstrdup(directory);
		entry->model = model;
		entry->context = context;
		entry->memory = memory;
		entry->last_used = ++cache_clock;
		cached_models = lappend(cached_models, entry);
		MemoryContextSwitchTo(old);
		cache_memory += memory;
	}
	return model;
}

/* Why a vector index entry is not used, or NULL when it may be. */
static const char *
unusable_reason(const LpFdwSource *source, const LpIndexEntry *entry)
{
	if (lp_manifest_stable_row_ids(source->manifest))
		return "the dataset has stable row ids";
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

/* Keep row if it is among the limit best so far: the heap's root is the worst kept. */
static void
offer_candidate(Candidates *candidates, float score, uint64 row_id)
{
	Candidate	row = {score, row_id};
	Candidate  *heap = candidates->rows;
	uint64		i;

	if (candidates->num == candidates->limit)
	{
		if (candidates->limit == 0 || compare_candidates(&row, &heap[0]) >= 0)
			return;
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
				return;
			swap_candidates(&heap[i], &heap[largest]);
			i = largest;
		}
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
	char	   *auxiliary_path = psprintf("%s/%s", directory, LP_IVF_AUXILIARY_FILE);
	LpInput    *auxiliary;
	LpIvfScan  *scan;
	LpError		err;

	if (!lp_ivf_nearest_partitions(model, query, (uint32) lp_fdw_nprobes, partitions, &probed, &err))
	{
		if (err.code != LP_ERR_INVALID_ARGUMENT)
			lp_raise(&err);
		ereport(DEBUG1,
				errmsg_internal("lance_fdw does not use index \"%s\": %s", entry->name, err.message));
		return false;
	}
	auxiliary = lp_open_input_in(source->store, auxiliary_path);
	if (!lp_ivf_scan_open(model, auxiliary, query, &scan, &err))
	{
		lp_input_close(auxiliary);
		lp_raise(&err);
	}
	for (uint32 p = 0; p < probed; p++)
	{
		uint64	   *ids;
		float	   *scores;
		uint64		n;

		CHECK_FOR_INTERRUPTS();
		if (!lp_ivf_scan_partition(scan, partitions[p], &ids, &scores, &n, &err))
		{
			lp_ivf_scan_close(scan);
			lp_input_close(auxiliary);
			if (err.code == LP_ERR_CANCELED)
				CHECK_FOR_INTERRUPTS();
			lp_raise(&err);
		}
		for (uint64 i = 0; i < n; i++)
		{
			bool		covers = false;

			if ((ids[i] >> 32) > PG_UINT32_MAX)
				continue;
			if (!lp_roaring32_contains(entry->fragment_bitmap, entry->fragment_bitmap_len,
									   (uint32) (ids[i] >> 32), &covers, &err))
				lp_raise(&err);
			if (covers)
				offer_candidate(candidates, scores[i], ids[i]);
		}
		lp_free(ids);
		lp_free(scores);
	}
	search->partitions_probed += probed;
	search->num_partitions += lp_ivf_model_num_partitions(model);
	search->rows_read += lp_ivf_scan_rows_read(scan);
	lp_ivf_scan_close(scan);
	lp_input_close(auxiliary);
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
	if (!lp_manifest_index_entries(source->manifest, &entries, &n, &err))
		lp_raise(&err);
	used = palloc0(sizeof(bool) * Max(n, 1));
	for (size_t i = 0; i < n; i++)
	{
		const char *reason;
		char	   *directory;
		LpIvfModel *model;

		if (entries[i].n_fields != 1 || entries[i].fields[0] != field_id ||
			strcmp(entries[i].type_url, VECTOR_DETAILS_TYPE_URL) != 0)
			continue;
		/* the segments of one index share its name: take the first index's */
		if (name != NULL && strcmp(name, entries[i].name) != 0)
			continue;
		reason = unusable_reason(source, &entries[i]);
		if (reason != NULL)
		{
			ereport(DEBUG1,
					errmsg_internal("lance_fdw does not use index \"%s\": %s", entries[i].name, reason));
			continue;
		}
		directory = lp_fdw_index_directory(source, &entries[i]);
		model = model_of(source, directory, entries[i].name);
		if (model == NULL)
			continue;
		if (lp_ivf_model_metric(model) != metric ||
			lp_ivf_model_dimension(model) != (uint32) dimension)
		{
			ereport(DEBUG1,
					errmsg_internal("lance_fdw does not use index \"%s\": it is an index of %u dimensions under %s, the query has %d under %s",
									entries[i].name, lp_ivf_model_dimension(model),
									metric_name(lp_ivf_model_metric(model)), dimension,
									metric_name(metric)));
			continue;
		}
		if (!search_segment(source, &entries[i], model, directory, query, search, &candidates))
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
	result = lp_fdw_index_rows(source, entries, used, n, name, ids, candidates.num);
	lp_manifest_index_entries_free(entries, n);
	return result;
}
