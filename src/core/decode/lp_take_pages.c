/*
 * lp_take_pages.c - which pages of a column hold the rows of a take: the
 * first row of each page (cached in the reader), the first page holding a
 * row, and the rows split into page-relative ranges, page by page.  Pages
 * holding none of the rows are not read; the 2.0 and 2.1+ decoders both
 * visit pages through here, which is where a take polls for a cancel.
 */
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

/* The first page holding row (pages of no rows hold none). */
static uint32_t
page_of_row(const uint64_t *starts, uint32_t num_pages, uint64_t row)
{
	uint32_t	low = 0;
	uint32_t	high = num_pages;

	while (low < high)
	{
		uint32_t	middle = low + (high - low) / 2;

		if (starts[middle + 1] > row)
			high = middle;
		else
			low = middle + 1;
	}
	return low;
}

bool
lp_reader_visit_pages(LpFieldReader *reader, uint32_t column, uint64_t expected_rows,
					  const LpRowRange *ranges, size_t num_ranges,
					  LpPageVisitor visit, void *arg, LpError *err)
{
	const LpFile *file = reader->file;
	const LpColumn *col;
	const uint64_t *starts = NULL;
	LpRowRange *local;
	uint64_t	visited = 0;
	uint64_t	done = 0;		/* rows of ranges[r] already visited */
	size_t		r = 0;
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
	local = lp_alloc_array(num_ranges + 1, sizeof(LpRowRange));
	if (local == NULL)
		return lp_decode_no_memory(err);
	for (uint32_t p = num_ranges > 0 ? page_of_row(starts, col->num_pages, ranges[0].start) : 0;
		 ok && p < col->num_pages && r < num_ranges; p++)
	{
		uint64_t	page_end = starts[p + 1];
		size_t		n = 0;

		while (r < num_ranges)
		{
			uint64_t	first = ranges[r].start + done;
			uint64_t	end = ranges[r].start + ranges[r].count;
			uint64_t	stop = end < page_end ? end : page_end;

			if (first >= page_end)
				break;
			local[n].start = first - starts[p];
			local[n].count = stop - first;
			n++;
			if (end > page_end)
			{
				done = stop - ranges[r].start;
				break;
			}
			r++;
			done = 0;
		}
		if (n == 0)
			continue;
		if (lp_check_cancel(err))
			ok = false;
		else
		{
			LpPageContext ctx = {file, column, p, err};

			ok = visit(arg, &ctx, &col->pages[p], local, n);
			visited++;
		}
	}
	lp_free(local);
	if (ok && r < num_ranges)
		ok = lp_fail(err, LP_ERR_CORRUPT,
					 "column %u of file \"%s\" has fewer rows than its field \"%s\" refers to",
					 column, file->name, reader->type->name);
	reader->pages_decoded += visited;
	reader->pages_skipped += col->num_pages - visited;
	return ok;
}
