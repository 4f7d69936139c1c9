/*
 * lp_btree_index.c - reading Lance's BTREE scalar index files and searching
 * them for ranges of values (lp_btree_index.h).
 */
#include <stdlib.h>
#include <string.h>

#include "base/lp_alloc.h"
#include "base/lp_checked.h"
#include "base/lp_interrupt.h"
#include "decode/lp_decode.h"
#include "format/lp_file.h"
#include "format/lp_schema.h"
#include "format/lp_values.h"
#include "index/lp_btree_index.h"
#include "index/lp_index_key.h"

/* Lance's page size when the lookup file names none (DEFAULT_BTREE_BATCH_SIZE). */
#define DEFAULT_BATCH_SIZE 4096
/* Far above what Lance writes; bounds the row list of one page. */
#define MAX_BATCH_SIZE ((uint64_t) 1 << 24)

/* A decoded top-level field of the lookup file. */
typedef struct LookupColumn
{
	LpType	   *type;
	LpArray    *values;
} LookupColumn;

struct LpBTreeIndex
{
	LpFile	   *lookup_file;
	LpFile	   *pages_file;
	LpIndexValueType value_type;
	uint64_t	batch_size;
	uint64_t	num_pages;		/* pages of page_data.lance */
	LookupColumn min;
	LookupColumn max;
	LookupColumn page_idx;
	LpFieldReader *values_reader;
	LpFieldReader *ids_reader;
	uint64_t	pages_read;
};

/* One page a search reads, for one of its ranges. */
typedef struct PageRange
{
	uint32_t	page;
	uint32_t	range;
} PageRange;

static bool
decode_lookup_column(LpInput *input, const LpFile *file, const char *name,
					 LookupColumn *column, LpError *err)
{
	int64_t		field = lp_index_file_field(file, name);

	if (field < 0)
		return lp_fail(err, LP_ERR_CORRUPT, "BTREE index lookup file \"%s\" has no field \"%s\"",
					   file->name, name);
	if (!lp_decode_field(input, file, (uint32_t) field, &column->type, &column->values, err))
		return false;
	if (column->values->length != file->num_rows)
		return lp_fail(err, LP_ERR_CORRUPT, "BTREE index lookup file \"%s\" decoded %llu rows of \"%s\", expected %llu",
					   file->name, (unsigned long long) column->values->length, name,
					   (unsigned long long) file->num_rows);
	return true;
}

static bool
read_batch_size(const LpFile *lookup, uint64_t *batch_size, LpError *err)
{
	const LpKeyValue *entry = lp_metadata_find(lookup->schema.metadata,
											   lookup->schema.num_metadata, "batch_size");
	uint64_t	value = 0;

	if (entry == NULL)
	{
		*batch_size = DEFAULT_BATCH_SIZE;
		return true;
	}
	for (size_t i = 0; i < entry->value.len; i++)
	{
		uint8_t		digit = entry->value.data[i];

		if (digit < '0' || digit > '9' || value > MAX_BATCH_SIZE)
			return lp_fail(err, LP_ERR_CORRUPT, "BTREE index lookup file \"%s\" has an invalid batch_size",
						   lookup->name);
		value = value * 10 + (digit - '0');
	}
	if (value == 0 || value > MAX_BATCH_SIZE)
		return lp_fail(err, LP_ERR_CORRUPT, "BTREE index lookup file \"%s\" has an invalid batch_size",
					   lookup->name);
	*batch_size = value;
	return true;
}

/* The lookup's min, max and page_idx columns, each page number checked. */
static bool
read_lookup(LpBTreeIndex *index, LpInput *lookup, LpError *err)
{
	const LpFile *file = index->lookup_file;
	const LpKeyValue *partitioned = lp_metadata_find(file->schema.metadata,
													 file->schema.num_metadata,
													 "range_partitioned");
	const uint32_t *pages;

	if (partitioned != NULL &&
		!(partitioned->value.len == 5 && memcmp(partitioned->value.data, "false", 5) == 0))
		return lp_fail(err, LP_ERR_UNSUPPORTED, "range-partitioned BTREE index \"%s\" is not supported",
					   file->name);
	if (!decode_lookup_column(lookup, file, "min", &index->min, err) ||
		!decode_lookup_column(lookup, file, "max", &index->max, err) ||
		!decode_lookup_column(lookup, file, "page_idx", &index->page_idx, err))
		return false;
	if (!lp_index_value_type(index->min.type, &index->value_type))
		return lp_fail(err, LP_ERR_UNSUPPORTED, "BTREE index \"%s\" on values of type %s is not supported",
					   file->name, lp_type_id_name(index->min.type->id));
	if (index->max.type->id != index->value_type.id ||
		index->page_idx.type->id != LP_TYPE_UINT32 || index->page_idx.values->null_count != 0)
		return lp_fail(err, LP_ERR_CORRUPT, "BTREE index lookup file \"%s\" has unexpected field types",
					   file->name);
	pages = (const uint32_t *) index->page_idx.values->values;
	for (uint64_t i = 0; i < file->num_rows; i++)
		if (pages[i] >= index->num_pages)
			return lp_fail(err, LP_ERR_CORRUPT, "BTREE index lookup file \"%s\" names page %u of %llu",
						   file->name, pages[i], (unsigned long long) index->num_pages);
	return true;
}

static bool
open_pages_field(LpBTreeIndex *index, LpInput *pages, const char *name, LpTypeId type,
				 LpFieldReader **reader, LpError *err)
{
	int64_t		field = lp_index_file_field(index->pages_file, name);

	if (field < 0)
		return lp_fail(err, LP_ERR_CORRUPT, "BTREE index page file \"%s\" has no field \"%s\"",
					   index->pages_file->name, name);
	if (!lp_field_reader_open(pages, index->pages_file, (uint32_t) field, reader, err))
		return false;
	if (lp_field_reader_type(*reader)->id != type)
		return lp_fail(err, LP_ERR_CORRUPT, "BTREE index page file \"%s\" has field \"%s\" of type %s, expected %s",
					   index->pages_file->name, name,
					   lp_type_id_name(lp_field_reader_type(*reader)->id), lp_type_id_name(type));
	return true;
}

bool
lp_btree_index_open(LpInput *lookup, LpInput *pages, LpBTreeIndex **out, LpError *err)
{
	LpBTreeIndex *index = lp_alloc0(sizeof(LpBTreeIndex));
	uint64_t	page_rows;

	*out = NULL;
	if (index == NULL)
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
	index->lookup_file = lp_file_open(lookup, err);
	if (index->lookup_file == NULL)
		goto fail;
	index->pages_file = lp_file_open(pages, err);
	if (index->pages_file == NULL)
		goto fail;
	if (!read_batch_size(index->lookup_file, &index->batch_size, err) ||
		!lp_add_u64(index->pages_file->num_rows, index->batch_size - 1, &page_rows))
		goto fail;
	index->num_pages = page_rows / index->batch_size;
	if (!read_lookup(index, lookup, err) ||
		!open_pages_field(index, pages, "values", index->value_type.id, &index->values_reader, err) ||
		!open_pages_field(index, pages, "ids", LP_TYPE_UINT64, &index->ids_reader, err))
		goto fail;
	*out = index;
	return true;

fail:
	lp_btree_index_close(index);
	return false;
}

uint64_t
lp_btree_index_num_pages(const LpBTreeIndex *index)
{
	return index->num_pages;
}

uint64_t
lp_btree_index_batch_size(const LpBTreeIndex *index)
{
	return index->batch_size;
}

const LpFile *
lp_btree_index_lookup_file(const LpBTreeIndex *index)
{
	return index->lookup_file;
}

const LpFile *
lp_btree_index_pages_file(const LpBTreeIndex *index)
{
	return index->pages_file;
}

LpFieldReader *
lp_btree_index_values_reader(LpBTreeIndex *index)
{
	return index->values_reader;
}

LpFieldReader *
lp_btree_index_ids_reader(LpBTreeIndex *index)
{
	return index->ids_reader;
}

LpIndexKeyKind
lp_btree_index_key_kind(const LpBTreeIndex *index)
{
	return index->value_type.kind;
}

uint64_t
lp_btree_index_pages_read(const LpBTreeIndex *index)
{
	return index->pages_read;
}

static int
compare_page_ranges(const void *a, const void *b)
{
	const PageRange *x = a;
	const PageRange *y = b;

	if (x->page != y->page)
		return x->page < y->page ? -1 : 1;
	return x->range < y->range ? -1 : x->range > y->range;
}

static int
compare_u64(const void *a, const void *b)
{
	uint64_t	x = *(const uint64_t *) a;
	uint64_t	y = *(const uint64_t *) b;

	return x < y ? -1 : x > y;
}

/* A growable array of elements of a fixed size. */
typedef struct Growing
{
	void	   *items;
	size_t		count;
	size_t		capacity;
	size_t		size;
} Growing;

static bool
grow_push(Growing *g, const void *item, LpError *err)
{
	if (g->count == g->capacity)
	{
		size_t		capacity = g->capacity ? g->capacity * 2 : 64;
		void	   *items = lp_alloc_array(capacity, g->size);

		if (items == NULL)
			return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
		if (g->count > 0)
			memcpy(items, g->items, g->count * g->size);
		lp_free(g->items);
		g->items = items;
		g->capacity = capacity;
	}
	memcpy((uint8_t *) g->items + g->count * g->size, item, g->size);
	g->count++;
	return true;
}

/*
 * Whether a page's min bounds its values from below.  Lance's min is the
 * first value of the sorted page: NULL when the page has nulls (they sort
 * first), and a NaN with the sign bit set sorts before every number.
 */
static bool
min_bounds_page(const LpBTreeIndex *index, const LpArray *min, uint64_t row)
{
	if (!lp_array_is_valid(min, row))
		return false;
	return index->value_type.kind != LP_INDEX_KEY_FLOAT ||
		!lp_index_value_is_nan(&index->value_type, min, row);
}

/* The (page, range) pairs whose page's [min, max] meets the range. */
static bool
pages_to_read(const LpBTreeIndex *index, const LpIndexRange *ranges, size_t num_ranges,
			  Growing *found, LpError *err)
{
	const LpArray *min = index->min.values;
	const LpArray *max = index->max.values;
	const uint32_t *page_numbers = (const uint32_t *) index->page_idx.values->values;

	for (uint64_t i = 0; i < index->lookup_file->num_rows; i++)
	{
		if (lp_check_cancel(err))
			return false;
		/* A page of nulls only has no max and holds no value a range takes. */
		if (!lp_array_is_valid(max, i))
			continue;
		for (size_t r = 0; r < num_ranges; r++)
		{
			PageRange	pair = {page_numbers[i], (uint32_t) r};

			if (lp_index_value_above(&index->value_type, max, i, &ranges[r].lower) &&
				(!min_bounds_page(index, min, i) ||
				 lp_index_value_below(&index->value_type, min, i, &ranges[r].upper)) &&
				!grow_push(found, &pair, err))
				return false;
		}
	}
	if (found->count > 1)
		qsort(found->items, found->count, sizeof(PageRange), compare_page_ranges);
	return true;
}

/*
 * The ids of page's rows that lie in one of ranges[pairs[0..n).range]: the
 * page's values decoded whole, the ids of the matching rows only.
 */
static bool
search_page(LpBTreeIndex *index, const LpIndexRange *ranges, const PageRange *pairs,
			size_t n, Growing *ids, LpError *err)
{
	uint64_t	first = (uint64_t) pairs[0].page * index->batch_size;
	uint64_t	end = first + index->batch_size;
	uint64_t   *rows;
	uint64_t	matched = 0;
	LpArray    *values = NULL;
	LpArray    *row_ids = NULL;
	bool		ok = false;

	if (end > index->pages_file->num_rows)
		end = index->pages_file->num_rows;
	rows = lp_alloc_array((size_t) (end - first), sizeof(uint64_t));
	if (rows == NULL)
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
	for (uint64_t r = first; r < end; r++)
		rows[r - first] = r;
	if (!lp_field_reader_take(index->values_reader, rows, end - first, &values, err))
		goto done;
	index->pages_read++;
	if (values->length != end - first)
	{
		lp_fail(err, LP_ERR_CORRUPT, "BTREE index page file \"%s\" decoded page %u short",
				index->pages_file->name, pairs[0].page);
		goto done;
	}
	/* rows[] is rewritten in place with the matching rows, still ascending */
	for (uint64_t row = 0; row < end - first; row++)
	{
		if (!lp_array_is_valid(values, row))
			continue;
		for (size_t p = 0; p < n; p++)
		{
			if (lp_index_value_in_range(&index->value_type, values, row, &ranges[pairs[p].range]))
			{
				rows[matched++] = first + row;
				break;
			}
		}
	}
	if (matched == 0)
	{
		ok = true;
		goto done;
	}
	if (!lp_field_reader_take(index->ids_reader, rows, matched, &row_ids, err))
		goto done;
	if (row_ids->length != matched || row_ids->null_count != 0)
	{
		lp_fail(err, LP_ERR_CORRUPT, "BTREE index page file \"%s\" has null row ids in page %u",
				index->pages_file->name, pairs[0].page);
		goto done;
	}
	for (uint64_t i = 0; i < matched; i++)
		if (!grow_push(ids, &((const uint64_t *) row_ids->values)[i], err))
			goto done;
	ok = true;

done:
	lp_array_free(values);
	lp_array_free(row_ids);
	lp_free(rows);
	return ok;
}

/* The pages of (page, range) pairs sorted by page. */
static uint64_t
distinct_pages(const Growing *pairs)
{
	const PageRange *all = pairs->items;
	uint64_t	count = 0;

	for (size_t i = 0; i < pairs->count; i++)
		count += i == 0 || all[i].page != all[i - 1].page;
	return count;
}

bool
lp_btree_index_search(LpBTreeIndex *index, const LpIndexRange *ranges, size_t num_ranges,
					  uint64_t max_pages, bool *too_many_pages, uint64_t **row_ids,
					  uint64_t *num_row_ids, LpError *err)
{
	Growing		pairs = {NULL, 0, 0, sizeof(PageRange)};
	Growing		ids = {NULL, 0, 0, sizeof(uint64_t)};
	bool		ok = false;
	size_t		kept = 0;

	*row_ids = NULL;
	*num_row_ids = 0;
	if (too_many_pages != NULL)
		*too_many_pages = false;
	if (num_ranges > UINT32_MAX)
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT, "too many ranges for one BTREE index search");
	if (!lp_index_ranges_of_kind(ranges, num_ranges, index->value_type.kind))
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT, "key of the wrong kind for BTREE index \"%s\"",
					   index->lookup_file->name);
	if (!pages_to_read(index, ranges, num_ranges, &pairs, err))
		goto done;
	if (max_pages > 0 && distinct_pages(&pairs) > max_pages)
	{
		*too_many_pages = true;
		ok = true;
		goto done;
	}
	for (size_t start = 0; start < pairs.count;)
	{
		const PageRange *all = pairs.items;
		size_t		end = start + 1;

		if (lp_check_cancel(err))
			goto done;
		while (end < pairs.count && all[end].page == all[start].page)
			end++;
		if (!search_page(index, ranges, all + start, end - start, &ids, err))
			goto done;
		start = end;
	}
	if (ids.count > 1)
		qsort(ids.items, ids.count, sizeof(uint64_t), compare_u64);
	for (size_t i = 0; i < ids.count; i++)
	{
		uint64_t   *all = ids.items;

		if (kept == 0 || all[kept - 1] != all[i])
			all[kept++] = all[i];
	}
	*row_ids = ids.items;
	*num_row_ids = kept;
	ids.items = NULL;
	ok = true;

done:
	lp_free(pairs.items);
	lp_free(ids.items);
	return ok;
}

static void
free_lookup_column(LookupColumn *column)
{
	lp_array_free(column->values);
	if (column->type != NULL)
		lp_type_free(column->type);
}

void
lp_btree_index_close(LpBTreeIndex *index)
{
	if (index == NULL)
		return;
	if (index->values_reader != NULL)
		lp_field_reader_close(index->values_reader);
	if (index->ids_reader != NULL)
		lp_field_reader_close(index->ids_reader);
	free_lookup_column(&index->min);
	free_lookup_column(&index->max);
	free_lookup_column(&index->page_idx);
	lp_file_free(index->pages_file);
	lp_file_free(index->lookup_file);
	lp_free(index);
}
