/*
 * lp_fdw_index.c - Lance's scalar indexes in lance_fdw scans: the rows a
 * BTREE index finds for the pushed clauses of one column.
 *
 * A scan with pushed clauses asks, before its first batch, for an index on
 * the column of one of them (lp_fdw_index_lookup): a BTREE index of the
 * manifest on that field alone, in a form the core reads (index version 0,
 * in the dataset's own base, row addresses: no stable row ids, no fragment
 * reuse index).  Its segments are searched for the range the clauses' =,
 * <, <=, >, >= and BETWEEN bound the column to, or for the elements of an
 * = ANY (IN) list; the row addresses found restrict the scan of each
 * fragment a segment covers to those rows, and the fragments none covers
 * (appended since the index was built) are read whole.  The scan still
 * drops deleted rows and evaluates every pushed clause on the rows it
 * takes, so an index can only make it read less, never return other rows.
 * Anything else (another index type or version, another key type, clauses
 * that meet more than an eighth of the index's pages, which a plain scan
 * reads faster) leaves the scan as it was, with a DEBUG1 message saying why.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"

#include "base/lp_alloc.h"
#include "format/lp_roaring.h"
#include "index/lp_btree_index.h"
#include "fdw/lp_fdw.h"
#include "base/lp_pg_error.h"
#include "store/lp_pg_storage.h"

#define BTREE_DETAILS_TYPE_URL "/lance.table.BTreeIndexDetails"
#define BTREE_INDEX_VERSION 0

/*
 * An index whose search would read more than this share of its pages (and
 * more than MIN_MAX_PAGES) is not used: over 10M rows, reading the rows of
 * half of them through the index took twice the plain scan's time, a
 * twentieth of them less than half of it.
 */
#define MAX_PAGES_DIVISOR 8
#define MIN_MAX_PAGES 8

bool		lp_fdw_scalar_index = true;

void
LpFdwIndexInit(void)
{
	DefineCustomBoolVariable("lance_parts.fdw_scalar_index",
							 gettext_noop("Uses the BTREE scalar indexes of Lance datasets to find the rows of pushed clauses."),
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
	if (strcmp(entry->type_url, BTREE_DETAILS_TYPE_URL) != 0)
		return "its type is not BTREE";
	if (entry->has_index_version && entry->index_version != BTREE_INDEX_VERSION)
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

/*
 * Search one segment; false (with a DEBUG1 message) when the core cannot
 * read it or the terms give it no key.  Its row ids are appended to *ids.
 */
static bool
search_segment(const LpFdwSource *source, const LpIndexEntry *entry, List *terms,
			   uint64 **ids, uint64 *num_ids)
{
	char	   *directory = lp_fdw_index_directory(source, entry);
	char	   *lookup_path = psprintf("%s/%s", directory, LP_BTREE_LOOKUP_FILE);
	char	   *pages_path = psprintf("%s/%s", directory, LP_BTREE_PAGES_FILE);
	LpInput    *lookup = lp_open_input_in(source->store, lookup_path);
	LpInput    *pages = lp_open_input_in(source->store, pages_path);
	LpBTreeIndex *index;
	LpIndexRange *ranges = NULL;
	size_t		num_ranges = 0;
	uint64	   *found;
	uint64		num_found;
	LpError		err;
	bool		ok;
	bool		too_many_pages = false;

	if (!lp_btree_index_open(lookup, pages, &index, &err))
	{
		lp_input_close(lookup);
		lp_input_close(pages);
		if (err.code != LP_ERR_UNSUPPORTED)
			lp_raise(&err);
		ereport(DEBUG1,
				errmsg_internal("lance_fdw does not use index \"%s\": %s", entry->name, err.message));
		return false;
	}
	ok = ranges_of_terms(terms, lp_btree_index_key_kind(index), &ranges, &num_ranges);
	if (ok && !lp_btree_index_search(index, ranges, num_ranges,
									 Max(lp_btree_index_num_pages(index) / MAX_PAGES_DIVISOR,
										 MIN_MAX_PAGES),
									 &too_many_pages, &found, &num_found, &err))
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
	{
		ereport(DEBUG1,
				errmsg_internal("lance_fdw does not use index \"%s\": the pushed clauses give no key of its type",
								entry->name));
		return false;
	}
	if (too_many_pages)
	{
		ereport(DEBUG1,
				errmsg_internal("lance_fdw does not use index \"%s\": the pushed clauses meet more than 1/%d of its pages",
								entry->name, MAX_PAGES_DIVISOR));
		return false;
	}
	*ids = *ids == NULL ? palloc(sizeof(uint64) * Max(*num_ids + num_found, 1))
		: repalloc(*ids, sizeof(uint64) * Max(*num_ids + num_found, 1));
	if (num_found > 0)
		memcpy(*ids + *num_ids, found, sizeof(uint64) * num_found);
	*num_ids += num_found;
	lp_free(found);
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

/* The first of ids[0..n) (ascending) at or above address. */
static uint64
first_at_or_above(const uint64 *ids, uint64 n, uint64 address)
{
	uint64		low = 0;
	uint64		high = n;

	while (low < high)
	{
		uint64		middle = low + (high - low) / 2;

		if (ids[middle] < address)
			low = middle + 1;
		else
			high = middle;
	}
	return low;
}

LpFdwIndexRows *
lp_fdw_index_rows(const LpFdwSource *source, const LpIndexEntry *entries, const bool *used,
				  size_t n, const char *name, uint64 *ids, uint64 num_ids)
{
	LpFdwIndexRows *result = palloc0(sizeof(LpFdwIndexRows));
	uint64		kept = 0;

	if (num_ids > 1)
		qsort(ids, num_ids, sizeof(uint64), compare_row_ids);
	for (uint64 i = 0; i < num_ids; i++)
		if (kept == 0 || ids[kept - 1] != ids[i])
			ids[kept++] = ids[i];
	num_ids = kept;

	result->index_name = pstrdup(name);
	result->fragments = palloc0(sizeof(LpFdwIndexFragment) * Max(source->num_fragments, 1));
	result->num_fragments = source->num_fragments;
	for (uint64 f = 0; f < source->num_fragments; f++)
	{
		LpFragment	fragment;
		LpFdwIndexFragment *rows = &result->fragments[f];
		uint64		first;
		uint64		end;

		CHECK_FOR_INTERRUPTS();
		lp_manifest_fragment(source->manifest, f, &fragment);
		rows->restricted = covered(entries, used, n, fragment.id);
		if (!rows->restricted)
			continue;
		first = first_at_or_above(ids, num_ids, (uint64) fragment.id << 32);
		end = first;
		while (end < num_ids && (ids[end] >> 32) == fragment.id)
			end++;
		rows->rows = palloc(sizeof(uint64) * Max(end - first, 1));
		for (uint64 i = first; i < end; i++)
		{
			uint64		row = ids[i] & PG_UINT32_MAX;

			if (row >= fragment.physical_rows)
				ereport(ERROR,
						errcode(ERRCODE_DATA_CORRUPTED),
						errmsg("index \"%s\" of Lance dataset \"%s\" names row " UINT64_FORMAT " of fragment " UINT64_FORMAT ", which has " UINT64_FORMAT " rows",
							   name, source->path, row, (uint64) fragment.id,
							   (uint64) fragment.physical_rows));
			rows->rows[rows->num_rows++] = row;
		}
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
	uint64	   *ids = NULL;
	uint64		num_ids = 0;
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
		if (lp_manifest_stable_row_ids(source->manifest))
			reason = "the dataset has stable row ids";
		else if (lp_manifest_fragment_reuse(source->manifest))
			reason = "the dataset has a fragment reuse index";
		else
			reason = unusable_reason(&entries[i]);
		/* the segments of one index share its name: take the first index's */
		if (reason == NULL && name != NULL && strcmp(name, entries[i].name) != 0)
			continue;
		if (reason != NULL)
			ereport(DEBUG1,
					errmsg_internal("lance_fdw does not use index \"%s\": %s", entries[i].name, reason));
		else if (search_segment(source, &entries[i], terms, &ids, &num_ids))
		{
			used[i] = true;
			name = entries[i].name;
		}
	}
	if (name == NULL)
	{
		lp_manifest_index_entries_free(entries, n);
		return NULL;
	}
	result = lp_fdw_index_rows(source, entries, used, n, name, ids, num_ids);
	if (ids != NULL)
		pfree(ids);
	lp_manifest_index_entries_free(entries, n);
	return result;
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
	first = first_at_or_above(found->rows, found->num_rows, first_row);
	*rows = found->rows + first;
	*num_rows = first_at_or_above(found->rows, found->num_rows, end_row) - first;
	return true;
}
