/*
 * lp_fdw_index.c - Lance's scalar indexes in lance_fdw scans: the rows a
 * BTREE or BITMAP index finds for the pushed clauses of one column.
 *
 * A scan with pushed clauses asks, before its first batch, for an index on
 * the column of one of them (lp_fdw_index_lookup): a BTREE or BITMAP index
 * of the manifest on that field alone, in a form the core reads (index
 * version 0, in the dataset's own base, no fragment reuse index).  Its
 * segments are searched for the range the clauses' =, <, <=, >, >= and
 * BETWEEN bound the column to, or for the elements of an = ANY (IN) list.
 * The ids found are row addresses, or, in a dataset with stable row ids,
 * row ids that the fragments' row-id sequences turn into rows; they
 * restrict the scan of each fragment a segment covers to those rows, and
 * the fragments none covers (appended since the index was built) are read
 * whole.  The scan still drops deleted rows and evaluates every pushed
 * clause on the rows it takes, so an index can only make it read less,
 * never return other rows.  Anything else (another index type or version,
 * another key type, clauses that meet more than an eighth of a BTREE
 * index's pages unless they are a few points, or of a BITMAP index's rows,
 * which a plain scan reads faster) leaves the scan as it was, with a DEBUG1
 * message saying why.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"

#include "base/lp_alloc.h"
#include "base/lp_search.h"
#include "dataset/lp_compact_plan.h"
#include "dataset/lp_row_ids.h"
#include "format/lp_roaring.h"
#include "index/lp_bitmap_index.h"
#include "index/lp_btree_index.h"
#include "fdw/lp_fdw.h"
#include "base/lp_pg_error.h"
#include "store/lp_pg_storage.h"

/*
 * An index whose search would read more than this share of its pages (and
 * more than MIN_MAX_PAGES) is not used: over 10M rows, reading the rows of
 * half of them through the index took twice the plain scan's time, a
 * twentieth of them less than half of it.  A BITMAP index likewise when
 * it finds more than this share of the dataset's rows (and more than
 * MIN_MAX_ROWS).
 */
#define MAX_PAGES_DIVISOR 8
#define MIN_MAX_PAGES 8

/*
 * Points (an IN list, an equality) read a page and take a row or so each:
 * a BTREE index answers up to one point per this many rows of the dataset,
 * whatever pages they meet.  Over 4M rows, 1000 random ids took 86 ms
 * through the index against 150 ms for the plain scan, 3000 of them 210 ms
 * against 120-160 ms.
 */
#define ROWS_PER_POINT 2048
#define MIN_MAX_ROWS 4096

/* What one index segment's search found. */
typedef struct SegmentSearch
{
	uint64	   *ids;			/* row addresses, or stable row ids */
	uint64		num_ids;
	uint32	   *whole;			/* high halves of which every row is found (BITMAP) */
	size_t		num_whole;
} SegmentSearch;

bool		lp_fdw_scalar_index = true;

void
LpFdwIndexInit(void)
{
	DefineCustomBoolVariable("lance_parts.fdw_scalar_index",
							 gettext_noop("Uses the BTREE and BITMAP scalar indexes of Lance datasets to find the rows of pushed clauses."),
							 gettext_noop("Off: lance_fdw reads every row of every fragment and tests it."),
							 &lp_fdw_scalar_index,
							 true,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);
}

/* value (of type value_type) as a key of kind; false when that type does not make one. */
static bool
key_of_datum(LpIndexKeyKind kind, Oid value_type, Datum value, LpIndexKey *key)
{
	memset(key, 0, sizeof(*key));
	key->kind = kind;
	switch (value_type)
	{
		case INT2OID:
			key->integer = DatumGetInt16(value);
			return kind == LP_INDEX_KEY_INTEGER;
		case INT4OID:
			key->integer = DatumGetInt32(value);
			return kind == LP_INDEX_KEY_INTEGER;
		case INT8OID:
			key->integer = DatumGetInt64(value);
			return kind == LP_INDEX_KEY_INTEGER;
		case FLOAT4OID:
			key->real = DatumGetFloat4(value);
			return kind == LP_INDEX_KEY_FLOAT;
		case FLOAT8OID:
			key->real = DatumGetFloat8(value);
			return kind == LP_INDEX_KEY_FLOAT;
		case TEXTOID:
		case VARCHAROID:
			{
				text	   *t = DatumGetTextPP(value);

				key->bytes = (const uint8_t *) VARDATA_ANY(t);
				key->len = VARSIZE_ANY_EXHDR(t);
				return kind == LP_INDEX_KEY_BYTES;
			}
		default:
			return false;
	}
}

/* Narrow bound to key when key is tighter (lower: larger; upper: smaller). */
static void
tighten(LpIndexBound *bound, const LpIndexKey *key, bool inclusive, bool lower)
{
	int			c;

	if (bound->present)
	{
		c = lp_index_key_compare(key, &bound->key);
		if (lower ? c < 0 : c > 0)
			return;
		if (c == 0)
		{
			bound->inclusive = bound->inclusive && inclusive;
			return;
		}
	}
	bound->present = true;
	bound->key = *key;
	bound->inclusive = inclusive;
}

/* The point ranges of an equality term's values; false when one makes no key of kind. */
static bool
points_of_term(const LpFdwIndexTerm *term, LpIndexKeyKind kind, LpIndexRange **ranges,
			   size_t *num_ranges)
{
	*ranges = palloc0(sizeof(LpIndexRange) * Max(term->num_values, 1));
	for (int i = 0; i < term->num_values; i++)
	{
		LpIndexKey	key;

		if (!key_of_datum(kind, term->value_type, term->values[i], &key))
		{
			pfree(*ranges);
			return false;
		}
		(*ranges)[i].lower = (LpIndexBound) {true, true, key};
		(*ranges)[i].upper = (LpIndexBound) {true, true, key};
	}
	*num_ranges = term->num_values;
	return true;
}

/*
 * The ranges of terms for keys of kind: the points of the first IN list
 * that makes keys, else the one range the comparisons and equalities bound
 * the column to; false when the terms bound nothing the index can search.
 */
static bool
ranges_of_terms(List *terms, LpIndexKeyKind kind, LpIndexRange **ranges, size_t *num_ranges)
{
	LpIndexRange range;
	ListCell   *cell;

	memset(&range, 0, sizeof(range));
	foreach(cell, terms)
	{
		LpFdwIndexTerm *term = lfirst(cell);
		LpIndexKey	key;

		if (term->strategy == BTEqualStrategyNumber && term->num_values != 1)
		{
			if (points_of_term(term, kind, ranges, num_ranges))
				return true;
			continue;
		}
		if (!key_of_datum(kind, term->value_type, term->values[0], &key))
			continue;
		if (term->strategy <= BTEqualStrategyNumber)
			tighten(&range.upper, &key, term->strategy != BTLessStrategyNumber, false);
		if (term->strategy >= BTEqualStrategyNumber)
			tighten(&range.lower, &key, term->strategy != BTGreaterStrategyNumber, true);
	}
	if (!range.lower.present && !range.upper.present)
		return false;
	*ranges = palloc(sizeof(LpIndexRange));
	**ranges = range;
	*num_ranges = 1;
	return true;
}

/* Why an index entry is not used, or NULL when it is. */
static const char *
unusable_reason(const LpIndexEntry *entry)
{
	if (strcmp(entry->type_url, LP_BTREE_DETAILS_TYPE_URL) != 0 &&
		strcmp(entry->type_url, LP_BITMAP_DETAILS_TYPE_URL) != 0)
		return "its type is neither BTREE nor BITMAP";
	if (entry->has_index_version && entry->index_version != 0)
		return "its version is not 0";
	if (entry->has_base_id)
		return "it is stored in another base";
	return NULL;
}

char *
lp_fdw_index_directory(const LpFdwSource *source, const LpIndexEntry *entry)
{
	const uint8_t *u = entry->uuid;

	return psprintf("%s/_indices/%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
					source->path, u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9],
					u[10], u[11], u[12], u[13], u[14], u[15]);
}

static int
compare_row_ids(const void *a, const void *b)
{
	uint64		x = *(const uint64 *) a;
	uint64		y = *(const uint64 *) b;

	return x < y ? -1 : x > y;
}

static void
not_used(const LpIndexEntry *entry, const char *reason)
{
	ereport(DEBUG1,
			errmsg_internal("lance_fdw does not use index \"%s\": %s", entry->name, reason));
}

/* The opened index's error: UNSUPPORTED only skips the index, anything else is raised. */
static void
skip_or_raise(const LpIndexEntry *entry, LpError *err)
{
	if (err->code != LP_ERR_UNSUPPORTED)
		lp_raise(err);
	not_used(entry, err->message);
}

/* Whether ranges are points, at most one per ROWS_PER_POINT of rows. */
static bool
few_points(const LpIndexRange *ranges, size_t num_ranges, uint64 rows)
{
	if (num_ranges > rows / ROWS_PER_POINT)
		return false;
	for (size_t i = 0; i < num_ranges; i++)
		if (!ranges[i].lower.present || !ranges[i].upper.present ||
			lp_index_key_compare(&ranges[i].lower.key, &ranges[i].upper.key) != 0)
			return false;
	return true;
}

/*
 * Search one BTREE segment into *found; false (with a DEBUG1 message) when
 * the core cannot read it, the terms give it no key or meet too many pages.
 */
static bool
search_btree(const LpFdwSource *source, const LpIndexEntry *entry, const char *directory,
			 List *terms, SegmentSearch *found)
{
	LpInput    *lookup = lp_open_input_in(source->store, psprintf("%s/%s", directory, LP_BTREE_LOOKUP_FILE));
	LpInput    *pages = lp_open_input_in(source->store, psprintf("%s/%s", directory, LP_BTREE_PAGES_FILE));
	LpBTreeIndex *index;
	LpIndexRange *ranges = NULL;
	size_t		num_ranges = 0;
	LpError		err;
	bool		ok;
	bool		too_many_pages = false;

	if (!lp_btree_index_open(lookup, pages, &index, &err))
	{
		lp_input_close(lookup);
		lp_input_close(pages);
		skip_or_raise(entry, &err);
		return false;
	}
	ok = ranges_of_terms(terms, lp_btree_index_key_kind(index), &ranges, &num_ranges);
	if (ok && !lp_btree_index_search(index, ranges, num_ranges,
									 few_points(ranges, num_ranges, source->physical_rows) ? 0 :
									 Max(lp_btree_index_num_pages(index) / MAX_PAGES_DIVISOR,
										 MIN_MAX_PAGES),
									 &too_many_pages, &found->ids, &found->num_ids, &err))
	{
		lp_btree_index_close(index);
		lp_input_close(lookup);
		lp_input_close(pages);
		lp_raise(&err);
	}
	lp_btree_index_close(index);
	lp_input_close(lookup);
	lp_input_close(pages);
	if (!ok)
		not_used(entry, "the pushed clauses give no key of its type");
	else if (too_many_pages)
		not_used(entry, psprintf("the pushed clauses meet more than 1/%d of its pages", MAX_PAGES_DIVISOR));
	return ok && !too_many_pages;
}

/*
 * Search one BITMAP segment into *found; false (with a DEBUG1 message) when
 * the core cannot read it, the terms give it no key or find too many rows.
 */
static bool
search_bitmap(const LpFdwSource *source, const LpIndexEntry *entry, const char *directory,
			  List *terms, SegmentSearch *found)
{
	LpInput    *lookup = lp_open_input_in(source->store, psprintf("%s/%s", directory, LP_BITMAP_LOOKUP_FILE));
	LpBitmapIndex *index;
	LpIndexValueType value_type;
	LpIndexRange *ranges = NULL;
	size_t		num_ranges = 0;
	uint64		max_ids = Max(source->physical_rows / MAX_PAGES_DIVISOR, MIN_MAX_ROWS);
	LpError		err;
	bool		ok;
	bool		too_many = false;

	if (!lp_bitmap_index_open(lookup, &index, &err))
	{
		lp_input_close(lookup);
		skip_or_raise(entry, &err);
		return false;
	}
	if (!lp_bitmap_index_value_type(index, &value_type))
	{
		lp_bitmap_index_close(index);
		lp_input_close(lookup);
		not_used(entry, "its keys are of a type lance_fdw does not compare");
		return false;
	}
	ok = ranges_of_terms(terms, value_type.kind, &ranges, &num_ranges);
	if (ok && !lp_bitmap_index_search(index, ranges, num_ranges, max_ids, &too_many,
									  &found->ids, &found->num_ids, &found->whole,
									  &found->num_whole, &err))
	{
		lp_bitmap_index_close(index);
		lp_input_close(lookup);
		lp_raise(&err);
	}
	lp_bitmap_index_close(index);
	lp_input_close(lookup);
	if (!ok)
		not_used(entry, "the pushed clauses give no key of its type");
	else if (too_many)
		not_used(entry, psprintf("the pushed clauses find more than " UINT64_FORMAT " rows", max_ids));
	return ok && !too_many;
}

/* Append the core's array of n values of size bytes to the palloc'd *all of *num_all. */
static void
append_found(void **all, uint64 *num_all, void *found, uint64 n, size_t size)
{
	*all = *all == NULL ? palloc(size * Max(*num_all + n, 1))
		: repalloc(*all, size * Max(*num_all + n, 1));
	if (n > 0)
		memcpy((char *) *all + *num_all * size, found, n * size);
	*num_all += n;
	lp_free(found);
}

/*
 * Search one segment of a BTREE or BITMAP index and add what it finds to
 * *all; false when it is not used.
 */
static bool
search_segment(const LpFdwSource *source, const LpIndexEntry *entry, List *terms,
			   SegmentSearch *all)
{
	char	   *directory = lp_fdw_index_directory(source, entry);
	SegmentSearch found = {NULL, 0, NULL, 0};
	uint64		num_whole = all->num_whole;

	if (strcmp(entry->type_url, LP_BITMAP_DETAILS_TYPE_URL) == 0 ?
		!search_bitmap(source, entry, directory, terms, &found) :
		!search_btree(source, entry, directory, terms, &found))
		return false;
	append_found((void **) &all->ids, &all->num_ids, found.ids, found.num_ids, sizeof(uint64));
	append_found((void **) &all->whole, &num_whole, found.whole, found.num_whole, sizeof(uint32));
	all->num_whole = (size_t) num_whole;
	return true;
}

/* Whether one of the segments covers the fragment. */
static bool
covered(const LpIndexEntry *entries, const bool *used, size_t n, uint64 fragment_id)
{
	for (size_t i = 0; i < n; i++)
	{
		bool		covers = false;
		LpError		err;

		if (!used[i] || fragment_id > PG_UINT32_MAX)
			continue;
		if (!lp_roaring32_contains(entries[i].fragment_bitmap, entries[i].fragment_bitmap_len,
								   (uint32) fragment_id, &covers, &err))
			lp_raise(&err);
		if (covers)
			return true;
	}
	return false;
}

static int
compare_u32(const void *a, const void *b)
{
	uint32		x = *(const uint32 *) a;
	uint32		y = *(const uint32 *) b;

	return x < y ? -1 : x > y;
}

/* Sort values[0..*n) of size bytes and drop repeats, in place. */
static void
sort_unique(void *values, uint64 *n, size_t size, int (*compare) (const void *, const void *))
{
	uint64		kept = 0;
	char	   *bytes = values;

	if (*n > 1)
		qsort(values, *n, size, compare);
	for (uint64 i = 0; i < *n; i++)
		if (kept == 0 || compare(bytes + (kept - 1) * size, bytes + i * size) != 0)
			memmove(bytes + kept++ * size, bytes + i * size, size);
	*n = kept;
}

/* Whether high is one of whole[0..n) (ascending). */
static bool
among(const uint32 *whole, size_t n, uint64 high)
{
	uint32		key = (uint32) high;

	return n > 0 && high <= PG_UINT32_MAX &&
		bsearch(&key, whole, n, sizeof(uint32), compare_u32) != NULL;
}

/* The rows of fragment (not a stable-row-id dataset's) among the row addresses ids. */
static void
rows_of_addresses(const LpFdwSource *source, const LpFragment *fragment, const char *name,
				  const uint64 *ids, uint64 num_ids, LpFdwIndexFragment *rows)
{
	uint64		first = lp_lower_bound_u64(ids, num_ids, (uint64) fragment->id << 32);
	uint64		end = first;

	while (end < num_ids && (ids[end] >> 32) == fragment->id)
		end++;
	rows->rows = palloc(sizeof(uint64) * Max(end - first, 1));
	for (uint64 i = first; i < end; i++)
	{
		uint64		row = ids[i] & PG_UINT32_MAX;

		if (row >= fragment->physical_rows)
			ereport(ERROR,
					errcode(ERRCODE_DATA_CORRUPTED),
					errmsg("index \"%s\" of Lance dataset \"%s\" names row " UINT64_FORMAT " of fragment " UINT64_FORMAT ", which has " UINT64_FORMAT " rows",
						   name, source->path, row, (uint64) fragment->id,
						   (uint64) fragment->physical_rows));
		rows->rows[rows->num_rows++] = row;
	}
}

/* The rows of fragment of a stable-row-id dataset whose row ids are among ids or whole; false when unsupported. */
static bool
rows_of_row_ids(const LpFdwSource *source, const LpFragment *fragment, const char *name,
				const uint64 *ids, uint64 num_ids, const uint32 *whole, size_t num_whole,
				LpFdwIndexFragment *rows)
{
	uint64	   *offsets;
	uint64		num_offsets;
	LpError		err;

	if (!lp_row_ids_find(source->manifest, fragment->index, ids, num_ids, whole, num_whole,
						 &offsets, &num_offsets, &err))
	{
		if (err.code != LP_ERR_UNSUPPORTED)
			lp_raise(&err);
		ereport(DEBUG1,
				errmsg_internal("lance_fdw does not use index \"%s\": %s", name, err.message));
		return false;
	}
	rows->rows = palloc(sizeof(uint64) * Max(num_offsets, 1));
	if (num_offsets > 0)
		memcpy(rows->rows, offsets, sizeof(uint64) * num_offsets);
	rows->num_rows = num_offsets;
	lp_free(offsets);
	return true;
}

LpFdwIndexRows *
lp_fdw_index_rows(const LpFdwSource *source, const LpIndexEntry *entries, const bool *used,
				  size_t n, const char *name, const char *type, uint64 *ids, uint64 num_ids,
				  uint32 *whole, size_t num_whole)
{
	LpFdwIndexRows *result = palloc0(sizeof(LpFdwIndexRows));
	bool		stable = lp_manifest_stable_row_ids(source->manifest);
	uint64		num_unique_whole = num_whole;

	sort_unique(ids, &num_ids, sizeof(uint64), compare_row_ids);
	if (whole != NULL)
		sort_unique(whole, &num_unique_whole, sizeof(uint32), compare_u32);
	num_whole = (size_t) num_unique_whole;
	result->index_name = pstrdup(name);
	result->index_type = type;
	result->fragments = palloc0(sizeof(LpFdwIndexFragment) * Max(source->num_fragments, 1));
	result->num_fragments = source->num_fragments;
	for (uint64 f = 0; f < source->num_fragments; f++)
	{
		LpFragment	fragment;
		LpFdwIndexFragment *rows = &result->fragments[f];

		CHECK_FOR_INTERRUPTS();
		lp_manifest_fragment(source->manifest, f, &fragment);
		/* a fragment an entry takes whole is read whole, like one no segment covers */
		rows->restricted = covered(entries, used, n, fragment.id) &&
			(stable || !among(whole, num_whole, fragment.id));
		if (!rows->restricted)
			continue;
		if (!stable)
			rows_of_addresses(source, &fragment, name, ids, num_ids, rows);
		else if (!rows_of_row_ids(source, &fragment, name, ids, num_ids, whole, num_whole, rows))
			return NULL;
		result->num_rows += rows->num_rows;
	}
	return result;
}

LpFdwIndexRows *
lp_fdw_index_lookup(const LpFdwSource *source, LpFdwFilter *filter, AttrNumber attnum,
					int32 field_id, Oid column_type)
{
	LpIndexEntry *entries;
	size_t		n;
	bool	   *used;
	const char *name = NULL;
	const char *type = NULL;
	SegmentSearch found = {NULL, 0, NULL, 0};
	List	   *terms;
	LpFdwIndexRows *result;
	LpError		err;

	if (!lp_fdw_scalar_index || source->single_file)
		return NULL;
	terms = lp_fdw_filter_index_terms(filter, attnum, column_type);
	if (terms == NIL)
		return NULL;
	if (!lp_manifest_index_entries(source->manifest, &entries, &n, &err))
		lp_raise(&err);
	used = palloc0(sizeof(bool) * Max(n, 1));
	for (size_t i = 0; i < n; i++)
	{
		const char *reason;

		if (entries[i].n_fields != 1 || entries[i].fields[0] != field_id)
			continue;
		if (lp_manifest_fragment_reuse(source->manifest))
			reason = "the dataset has a fragment reuse index";
		else
			reason = unusable_reason(&entries[i]);
		/* the segments of one index share its name: take the first index's */
		if (reason == NULL && name != NULL && strcmp(name, entries[i].name) != 0)
			continue;
		if (reason != NULL)
			not_used(&entries[i], reason);
		else if (search_segment(source, &entries[i], terms, &found))
		{
			used[i] = true;
			name = entries[i].name;
			type = strcmp(entries[i].type_url, LP_BITMAP_DETAILS_TYPE_URL) == 0 ? "BITMAP" : "BTREE";
		}
	}
	if (name == NULL)
	{
		lp_manifest_index_entries_free(entries, n);
		return NULL;
	}
	result = lp_fdw_index_rows(source, entries, used, n, name, type, found.ids, found.num_ids,
							   found.whole, found.num_whole);
	if (found.ids != NULL)
		pfree(found.ids);
	if (found.whole != NULL)
		pfree(found.whole);
	lp_manifest_index_entries_free(entries, n);
	return result;
}

LpFdwIndexRows *
lp_fdw_index_rows_intersect(const LpFdwIndexRows *a, const LpFdwIndexRows *b)
{
	LpFdwIndexRows *both = palloc0(sizeof(LpFdwIndexRows));

	if (a->num_fragments != b->num_fragments)
		elog(ERROR, "index lookups of %llu and %llu fragments cannot be intersected",
			 (unsigned long long) a->num_fragments, (unsigned long long) b->num_fragments);
	both->index_name = a->index_name;
	both->index_type = a->index_type;
	both->num_fragments = a->num_fragments;
	both->fragments = palloc0(sizeof(LpFdwIndexFragment) * Max(a->num_fragments, 1));
	for (uint64 f = 0; f < a->num_fragments; f++)
	{
		const LpFdwIndexFragment *x = &a->fragments[f];
		const LpFdwIndexFragment *y = &b->fragments[f];
		LpFdwIndexFragment *out = &both->fragments[f];

		if (!x->restricted || !y->restricted)
			*out = x->restricted ? *x : *y;
		else
		{
			uint64		i = 0;
			uint64		j = 0;

			out->restricted = true;
			out->rows = palloc(sizeof(uint64) * Max(Min(x->num_rows, y->num_rows), 1));
			while (i < x->num_rows && j < y->num_rows)
			{
				if (x->rows[i] < y->rows[j])
					i++;
				else if (x->rows[i] > y->rows[j])
					j++;
				else
				{
					out->rows[out->num_rows++] = x->rows[i];
					i++;
					j++;
				}
			}
		}
		if (out->restricted)
			both->num_rows += out->num_rows;
	}
	return both;
}

bool
lp_fdw_index_unit_rows(const LpFdwIndexRows *index_rows, uint64 fragment, uint64 first_row,
					   uint64 end_row, const uint64 **rows, uint64 *num_rows)
{
	const LpFdwIndexFragment *found;
	uint64		first;

	if (fragment >= index_rows->num_fragments || !index_rows->fragments[fragment].restricted)
		return false;
	found = &index_rows->fragments[fragment];
	first = lp_lower_bound_u64(found->rows, found->num_rows, first_row);
	*rows = found->rows + first;
	*num_rows = lp_lower_bound_u64(found->rows, found->num_rows, end_row) - first;
	return true;
}
