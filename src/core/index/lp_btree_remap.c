/*
 * lp_btree_remap.c - rewriting a BTREE index for moved rows
 * (lp_btree_remap.h).
 */
#include <string.h>

#include "base/lp_alloc.h"
#include "base/lp_interrupt.h"
#include "encode/lp_file_writer.h"
#include "index/lp_btree_index.h"
#include "index/lp_btree_remap.h"

/* What the rewrite keeps while it goes through the old pages. */
typedef struct Remap
{
	LpBTreeIndex *index;
	const LpRowAddressMap *map;
	LpFileWriter *pages_writer;
	uint64_t	batch_size;
	/* kept rows not yet written: old row numbers and their new ids */
	uint64_t   *pending_rows;
	uint64_t   *pending_ids;
	uint64_t	n_pending;
	/* per new page: the old rows of its first and last value, its nulls */
	uint64_t   *first_rows;
	uint64_t   *last_rows;
	uint32_t   *null_counts;
	uint64_t	n_pages;
	uint64_t	rows_kept;
} Remap;

/* Write the first n pending rows as one page of the new page file. */
static bool
write_page(Remap *remap, uint64_t n, LpError *err)
{
	LpArray    *values = NULL;
	LpArray    *ids = NULL;
	const LpFile *pages = lp_btree_index_pages_file(remap->index);
	const LpArray *batch[2];
	bool		ok = false;
	bool		values_first = lp_index_file_field(pages, "values") < lp_index_file_field(pages, "ids");

	if (!lp_field_reader_take(lp_btree_index_values_reader(remap->index), remap->pending_rows, n,
							  &values, err))
		return false;
	ids = lp_array_new(lp_field_reader_type(lp_btree_index_ids_reader(remap->index)));
	if (ids == NULL || (ids->values = lp_alloc_array((size_t) n, sizeof(uint64_t))) == NULL)
	{
		lp_fail(err, LP_ERR_NO_MEMORY, "out of memory remapping a BTREE index");
		goto done;
	}
	memcpy(ids->values, remap->pending_ids, (size_t) n * sizeof(uint64_t));
	ids->length = n;
	batch[values_first ? 0 : 1] = values;
	batch[values_first ? 1 : 0] = ids;
	if (!lp_file_writer_write(remap->pages_writer, batch, 2, err))
		goto done;
	remap->first_rows[remap->n_pages] = remap->pending_rows[0];
	remap->last_rows[remap->n_pages] = remap->pending_rows[n - 1];
	remap->null_counts[remap->n_pages] = (uint32_t) values->null_count;
	remap->n_pages++;
	memmove(remap->pending_rows, remap->pending_rows + n,
			(size_t) (remap->n_pending - n) * sizeof(uint64_t));
	memmove(remap->pending_ids, remap->pending_ids + n,
			(size_t) (remap->n_pending - n) * sizeof(uint64_t));
	remap->n_pending -= n;
	ok = true;

done:
	lp_array_free(values);
	lp_array_free(ids);
	return ok;
}

/* Map the ids of old page p; write a new page whenever a full one is pending. */
static bool
remap_page(Remap *remap, uint64_t p, uint64_t *rows, LpError *err)
{
	uint64_t	first = p * remap->batch_size;
	uint64_t	end = first + remap->batch_size;
	uint64_t	total = lp_btree_index_pages_file(remap->index)->num_rows;
	LpArray    *ids = NULL;

	if (end > total)
		end = total;
	for (uint64_t r = first; r < end; r++)
		rows[r - first] = r;
	if (!lp_field_reader_take(lp_btree_index_ids_reader(remap->index), rows, end - first, &ids, err))
		return false;
	if (ids->length != end - first || ids->null_count != 0)
	{
		lp_array_free(ids);
		return lp_fail(err, LP_ERR_CORRUPT, "BTREE index page file \"%s\" has null row ids in page %llu",
					   lp_btree_index_pages_file(remap->index)->name, (unsigned long long) p);
	}
	for (uint64_t i = 0; i < ids->length; i++)
	{
		uint64_t	moved;
		bool		kept;

		if (!lp_row_address_map_apply(remap->map, ((const uint64_t *) ids->values)[i], &moved,
									  &kept, err))
		{
			lp_array_free(ids);
			return false;
		}
		if (!kept)
			continue;
		remap->pending_rows[remap->n_pending] = first + i;
		remap->pending_ids[remap->n_pending++] = moved;
		remap->rows_kept++;
	}
	lp_array_free(ids);
	if (remap->n_pending >= remap->batch_size)
		return write_page(remap, remap->batch_size, err);
	return true;
}

/* The lookup of the new pages, with the schema of the old lookup file. */
static bool
write_lookup(Remap *remap, LpOutput *lookup_out, LpError *err)
{
	const LpFile *lookup = lp_btree_index_lookup_file(remap->index);
	LpFieldReader *values = lp_btree_index_values_reader(remap->index);
	const char *names[4] = {"min", "max", "null_count", "page_idx"};
	const LpArray *batch[4] = {NULL, NULL, NULL, NULL};
	LpArray    *min = NULL;
	LpArray    *max = NULL;
	LpArray    *counts = NULL;
	LpArray    *numbers = NULL;
	LpType	   *count_type = NULL;
	LpFileWriter *writer = NULL;
	uint64_t	size;
	bool		ok = false;

	if (lookup->schema.num_fields != 4)
		return lp_fail(err, LP_ERR_CORRUPT, "BTREE index lookup file \"%s\" has %u fields, expected 4",
					   lookup->name, lookup->schema.num_fields);
	if (!lp_field_reader_take(values, remap->first_rows, remap->n_pages, &min, err) ||
		!lp_field_reader_take(values, remap->last_rows, remap->n_pages, &max, err) ||
		!lp_type_from_field(lookup, (uint32_t) lp_index_file_field(lookup, "page_idx"), &count_type, err))
		goto done;
	counts = lp_array_new(count_type);
	numbers = lp_array_new(count_type);
	if (counts == NULL || numbers == NULL ||
		(counts->values = lp_alloc_array((size_t) (remap->n_pages + 1), sizeof(uint32_t))) == NULL ||
		(numbers->values = lp_alloc_array((size_t) (remap->n_pages + 1), sizeof(uint32_t))) == NULL)
	{
		lp_fail(err, LP_ERR_NO_MEMORY, "out of memory remapping a BTREE index");
		goto done;
	}
	for (uint64_t p = 0; p < remap->n_pages; p++)
	{
		((uint32_t *) counts->values)[p] = remap->null_counts[p];
		((uint32_t *) numbers->values)[p] = (uint32_t) p;
	}
	counts->length = numbers->length = remap->n_pages;
	for (uint32_t f = 0; f < 4; f++)
	{
		const LpArray *columns[4] = {min, max, counts, numbers};
		int64_t		at = lp_index_file_field(lookup, names[f]);

		if (at < 0 || at >= 4)
		{
			lp_fail(err, LP_ERR_CORRUPT, "BTREE index lookup file \"%s\" has no field \"%s\"",
					lookup->name, names[f]);
			goto done;
		}
		batch[at] = columns[f];
	}
	writer = lp_file_writer_open(lookup_out, &lookup->schema, lookup->version, err);
	if (writer == NULL ||
		(remap->n_pages > 0 && !lp_file_writer_write(writer, batch, 4, err)) ||
		!lp_file_writer_finish(writer, &size, err))
		goto done;
	ok = true;

done:
	lp_file_writer_free(writer);
	lp_array_free(min);
	lp_array_free(max);
	lp_array_free(counts);
	lp_array_free(numbers);
	if (count_type != NULL)
		lp_type_free(count_type);
	return ok;
}

bool
lp_btree_index_remap(LpInput *lookup, LpInput *pages, const LpRowAddressMap *map,
					 LpOutput *lookup_out, LpOutput *pages_out, uint64_t *rows_kept,
					 LpError *err)
{
	Remap		remap;
	uint64_t   *rows = NULL;
	uint64_t	num_pages;
	uint64_t	size;
	bool		ok = false;

	memset(&remap, 0, sizeof(remap));
	*rows_kept = 0;
	if (!lp_btree_index_open(lookup, pages, &remap.index, err))
		return false;
	remap.map = map;
	remap.batch_size = lp_btree_index_batch_size(remap.index);
	num_pages = lp_btree_index_num_pages(remap.index);
	if (lp_btree_index_pages_file(remap.index)->schema.num_fields != 2)
	{
		lp_fail(err, LP_ERR_CORRUPT, "BTREE index page file \"%s\" has %u fields, expected values and ids",
				lp_btree_index_pages_file(remap.index)->name,
				lp_btree_index_pages_file(remap.index)->schema.num_fields);
		goto done;
	}
	if (lp_btree_index_lookup_file(remap.index)->num_rows != num_pages)
	{
		lp_fail(err, LP_ERR_CORRUPT, "BTREE index lookup file \"%s\" describes %llu pages, its page file holds %llu",
				lp_btree_index_lookup_file(remap.index)->name,
				(unsigned long long) lp_btree_index_lookup_file(remap.index)->num_rows,
				(unsigned long long) num_pages);
		goto done;
	}
	/* pending rows never reach two pages: a page is written whenever one is full */
	rows = lp_alloc_array((size_t) remap.batch_size, sizeof(uint64_t));
	remap.pending_rows = lp_alloc_array((size_t) remap.batch_size * 2, sizeof(uint64_t));
	remap.pending_ids = lp_alloc_array((size_t) remap.batch_size * 2, sizeof(uint64_t));
	remap.first_rows = lp_alloc_array((size_t) (num_pages + 1), sizeof(uint64_t));
	remap.last_rows = lp_alloc_array((size_t) (num_pages + 1), sizeof(uint64_t));
	remap.null_counts = lp_alloc_array((size_t) (num_pages + 1), sizeof(uint32_t));
	if (rows == NULL || remap.pending_rows == NULL || remap.pending_ids == NULL ||
		remap.first_rows == NULL || remap.last_rows == NULL || remap.null_counts == NULL)
	{
		lp_fail(err, LP_ERR_NO_MEMORY, "out of memory remapping a BTREE index");
		goto done;
	}
	remap.pages_writer = lp_file_writer_open(pages_out, &lp_btree_index_pages_file(remap.index)->schema,
											 lp_btree_index_pages_file(remap.index)->version, err);
	if (remap.pages_writer == NULL)
		goto done;
	for (uint64_t p = 0; p < num_pages; p++)
		if (lp_check_cancel(err) || !remap_page(&remap, p, rows, err))
			goto done;
	if (remap.n_pending > 0 && !write_page(&remap, remap.n_pending, err))
		goto done;
	if (!lp_file_writer_finish(remap.pages_writer, &size, err) ||
		!write_lookup(&remap, lookup_out, err))
		goto done;
	*rows_kept = remap.rows_kept;
	ok = true;

done:
	lp_file_writer_free(remap.pages_writer);
	lp_free(rows);
	lp_free(remap.pending_rows);
	lp_free(remap.pending_ids);
	lp_free(remap.first_rows);
	lp_free(remap.last_rows);
	lp_free(remap.null_counts);
	lp_btree_index_close(remap.index);
	return ok;
}
