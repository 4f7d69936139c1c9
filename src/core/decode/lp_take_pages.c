/*
 * lp_take_pages.c - which pages of a column hold the rows of a take: the
 * first row of each page (cached in the reader), and the rows split into
 * page-relative ranges, page by page (lp_split_ranges, which mini-block
 * pages use for their chunks too).  Pages
 * holding none of the rows are not read; the 2.0 and 2.1+ decoders both
 * visit pages through here, which is where a take polls for a cancel.
 * The buffers of the pages a take would visit (lp_reader_page_buffers) are
 * what a scan fetches ahead.
 */
#include <string.h>

#include "base/lp_alloc.h"
#include "base/lp_checked.h"
#include "base/lp_interrupt.h"
#include "decode/lp_decode_internal.h"

static bool
column_page_starts(LpFieldReader *reader, uint32_t column, const uint64_t **starts,
				   LpError *err)
{
	const LpFile *file = reader->file;
	const LpColumn *col;
	uint64_t   *first_rows;

	if (column >= file->num_columns)
		return lp_fail(err, LP_ERR_CORRUPT, "file \"%s\" has no column %u for field \"%s\"",
					   file->name, column, reader->type->name);
	if (reader->page_starts[column] == NULL)
	{
		col = &file->columns[column];
		first_rows = lp_alloc_array((size_t) col->num_pages + 1, sizeof(uint64_t));
		if (first_rows == NULL)
			return lp_decode_no_memory(err);
		for (uint32_t p = 0; p < col->num_pages; p++)
			if (!lp_add_u64(first_rows[p], col->pages[p].num_rows, &first_rows[p + 1]))
			{
				lp_free(first_rows);
				return lp_fail(err, LP_ERR_CORRUPT,
							   "pages of column %u of file \"%s\" hold too many rows",
							   column, file->name);
			}
		reader->page_starts[column] = first_rows;
	}
	*starts = reader->page_starts[column];
	return true;
}

/* The first unit holding row (units of no rows hold none). */
static uint64_t
unit_of_row(const uint64_t *starts, uint64_t num_units, uint64_t row)
{
	uint64_t	low = 0;
	uint64_t	high = num_units;

	while (low < high)
	{
		uint64_t	middle = low + (high - low) / 2;

		if (starts[middle + 1] > row)
			high = middle;
		else
			low = middle + 1;
	}
	return low;
}

LpSplitResult
lp_split_ranges(const uint64_t *starts, uint64_t num_units, const LpRowRange *ranges,
				size_t num_ranges, LpUnitVisitor visit, void *arg)
{
	LpRowRange *local;
	uint64_t	done = 0;		/* rows of ranges[r] already visited */
	size_t		r = 0;
	LpSplitResult result = LP_SPLIT_OK;

	if (num_ranges == 0)
		return LP_SPLIT_OK;
	local = lp_alloc_array(num_ranges + 1, sizeof(LpRowRange));
	if (local == NULL)
		return LP_SPLIT_NO_MEMORY;
	for (uint64_t u = unit_of_row(starts, num_units, ranges[0].start);
		 result == LP_SPLIT_OK && u < num_units && r < num_ranges; u++)
	{
		uint64_t	unit_end = starts[u + 1];
		size_t		n = 0;

		while (r < num_ranges)
		{
			uint64_t	first = ranges[r].start + done;
			uint64_t	end = ranges[r].start + ranges[r].count;
			uint64_t	stop = end < unit_end ? end : unit_end;

			if (first >= unit_end)
				break;
			local[n].start = first - starts[u];
			local[n].count = stop - first;
			n++;
			if (end > unit_end)
			{
				done = stop - ranges[r].start;
				break;
			}
			r++;
			done = 0;
		}
		if (n > 0 && !visit(arg, u, local, n))
			result = LP_SPLIT_VISIT_FAILED;
	}
	lp_free(local);
	if (result == LP_SPLIT_OK && r < num_ranges)
		result = LP_SPLIT_BEYOND;
	return result;
}

/* A page visit of lp_reader_visit_pages: the cancel poll, the page's context. */
typedef struct PageVisit
{
	LpFieldReader *reader;
	uint32_t	column;
	LpPageVisitor visit;
	void	   *arg;
	LpError    *err;
	uint64_t	visited;
} PageVisit;

static bool
visit_page(void *arg, uint64_t unit, const LpRowRange *ranges, size_t num_ranges)
{
	PageVisit  *pv = arg;
	const LpFile *file = pv->reader->file;
	LpPageContext ctx = {file, pv->column, (uint32_t) unit, pv->err};

	if (lp_check_cancel(pv->err))
		return false;
	pv->visited++;
	return pv->visit(pv->arg, &ctx, &file->columns[pv->column].pages[unit], ranges, num_ranges);
}

bool
lp_reader_visit_pages(LpFieldReader *reader, uint32_t column, uint64_t expected_rows,
					  const LpRowRange *ranges, size_t num_ranges,
					  LpPageVisitor visit, void *arg, LpError *err)
{
	const LpFile *file = reader->file;
	const LpColumn *col;
	const uint64_t *starts = NULL;
	PageVisit	pv = {reader, column, visit, arg, err, 0};
	bool		ok = true;

	if (!column_page_starts(reader, column, &starts, err))
		return false;
	col = &file->columns[column];
	if (starts[col->num_pages] != expected_rows)
		return lp_fail(err, LP_ERR_CORRUPT,
					   "pages of column %u of field \"%s\" of file \"%s\" hold %llu rows, not %llu",
					   column, reader->type->name, file->name,
					   (unsigned long long) starts[col->num_pages],
					   (unsigned long long) expected_rows);
	switch (lp_split_ranges(starts, col->num_pages, ranges, num_ranges, visit_page, &pv))
	{
		case LP_SPLIT_OK:
			break;
		case LP_SPLIT_VISIT_FAILED:
			ok = false;
			break;
		case LP_SPLIT_NO_MEMORY:
			ok = lp_decode_no_memory(err);
			break;
		case LP_SPLIT_BEYOND:
			ok = lp_fail(err, LP_ERR_CORRUPT,
						 "column %u of file \"%s\" has fewer rows than its field \"%s\" refers to",
						 column, file->name, reader->type->name);
			break;
	}
	reader->pages_decoded += pv.visited;
	reader->pages_skipped += col->num_pages - pv.visited;
	return ok;
}

/* A page visit of lp_reader_page_buffers. */
typedef struct BufferVisit
{
	const LpColumn *column;
	LpByteRanges *out;
	bool		no_memory;
} BufferVisit;

static bool
add_page_buffers(void *arg, uint64_t unit, const LpRowRange *ranges, size_t num_ranges)
{
	BufferVisit *bv = arg;
	const LpPage *page = &bv->column->pages[unit];
	LpByteRanges *out = bv->out;

	(void) ranges;
	(void) num_ranges;
	if (out->count + page->num_buffers > out->capacity)
	{
		size_t		capacity = out->capacity * 2 + page->num_buffers + 16;
		LpByteRange *longer = lp_alloc_array(capacity, sizeof(LpByteRange));

		if (longer == NULL)
		{
			bv->no_memory = true;
			return false;
		}
		if (out->count > 0)
			memcpy(longer, out->items, out->count * sizeof(LpByteRange));
		lp_free(out->items);
		out->items = longer;
		out->capacity = capacity;
	}
	for (uint32_t b = 0; b < page->num_buffers; b++)
		if (page->buffers[b].size > 0)
			out->items[out->count++] = (LpByteRange) {page->buffers[b].offset, page->buffers[b].size};
	return true;
}

bool
lp_reader_page_buffers(LpFieldReader *reader, uint32_t column, const LpRowRange *ranges,
					   size_t num_ranges, LpByteRanges *out, LpError *err)
{
	const uint64_t *starts = NULL;
	BufferVisit bv;

	if (!column_page_starts(reader, column, &starts, err))
		return false;
	bv = (BufferVisit) {&reader->file->columns[column], out, false};
	if (lp_split_ranges(starts, bv.column->num_pages, ranges, num_ranges, add_page_buffers,
						&bv) == LP_SPLIT_NO_MEMORY || bv.no_memory)
		return lp_decode_no_memory(err);
	return true;
}
