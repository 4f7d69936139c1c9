/*
 * lp_concat_plan.c - the complete layout of a concatenated Lance file,
 * computed before anything is written.
 *
 * Parts are laid out one after the other.  Within a part, its page buffers
 * keep the order they have in the part's file, each moved to the next
 * 64-byte boundary, so the part is read and the output written front to
 * back whatever the part's column order or page interleaving (Lance bugs
 * #8501, #6991).  With region alignment, an eligible part is instead copied
 * as one block-aligned piece and its buffers keep their relative offsets.  The column metadata lists the pages column by column,
 * part by part, each buffer entry pointing at its new position.
 */
#include "concat/lp_concat.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/lp_alloc.h"
#include "base/lp_checked.h"
#include "format/lp_columns.h"

/* A page buffer to place: where it comes from and which entry it fills. */
typedef struct BufferEntry
{
	uint32_t	input;
	uint64_t	source_offset;
	uint64_t	size;
	size_t		slot;			/* index into plan->buffer_storage */
} BufferEntry;

static int
compare_entries(const void *a, const void *b)
{
	const BufferEntry *x = a;
	const BufferEntry *y = b;

	if (x->input != y->input)
		return x->input < y->input ? -1 : 1;
	if (x->source_offset != y->source_offset)
		return x->source_offset < y->source_offset ? -1 : 1;
	if (x->slot != y->slot)
		return x->slot < y->slot ? -1 : 1;
	return 0;
}

static bool
is_header(const LpConcatPlan *plan, const LpPhysicalColumn *columns, uint32_t c)
{
	return plan->version == LP_FILE_VERSION_2_0 && columns[c].struct_header;
}

/* How many pages and page buffers the output has. */
static bool
count_output(const LpConcatPlan *plan, const LpConcatTarget *target, const LpConcatPart *parts,
			 uint32_t num_parts, const LpPhysicalColumn *columns, uint64_t *num_pages,
			 uint64_t *num_buffers, LpError *err)
{
	uint32_t	replaced = 0;

	*num_pages = 0;
	*num_buffers = 0;
	for (uint32_t c = 0; c < plan->num_columns; c++)
	{
		if (target->replaced != NULL && target->replaced[c])
		{
			const LpColumn *column = target->donor != NULL && replaced < target->donor->num_columns ?
				&target->donor->columns[replaced] : NULL;

			replaced++;
			if (target->donor != NULL && column == NULL)
				return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
							   "the donor file \"%s\" has fewer columns than the columns it replaces",
							   target->donor->name);
			if (column == NULL)
				continue;
			if (!lp_add_u64(*num_pages, column->num_pages, num_pages))
				goto overflow;
			for (uint32_t p = 0; p < column->num_pages; p++)
			{
				if (!lp_add_u64(*num_buffers, column->pages[p].num_buffers, num_buffers))
					goto overflow;
			}
			continue;
		}
		if (is_header(plan, columns, c))
		{
			/* one page without buffers, however many parts */
			if (!lp_add_u64(*num_pages, 1, num_pages))
				goto overflow;
			continue;
		}
		for (uint32_t i = 0; i < num_parts; i++)
		{
			const LpColumn *column = &parts[i].file->columns[c];

			if (parts[i].file->num_rows == 0)
				continue;
			if (!lp_add_u64(*num_pages, column->num_pages, num_pages))
				goto overflow;
			for (uint32_t p = 0; p < column->num_pages; p++)
			{
				if (!lp_add_u64(*num_buffers, column->pages[p].num_buffers, num_buffers))
					goto overflow;
			}
		}
	}
	return true;

overflow:
	return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
				   "the output would have too many pages or buffers");
}

/* The buffers of page, copied from source of input (a part, or num_parts: the donor). */
static void
copy_page_buffers(LpConcatPlan *plan, BufferEntry *entries, const LpPage *source, LpPage *page,
				  uint32_t input, size_t *next_slot)
{
	page->buffers = &plan->buffer_storage[*next_slot];
	for (uint32_t b = 0; b < source->num_buffers; b++)
	{
		BufferEntry *entry = &entries[*next_slot];

		entry->input = input;
		entry->source_offset = source->buffers[b].offset;
		entry->size = source->buffers[b].size;
		entry->slot = *next_slot;
		(*next_slot)++;
	}
}

/*
 * Fill the output columns, pages and buffer entries (positions still
 * unknown) and record where every buffer comes from.
 */
static bool
fill_columns(LpConcatPlan *plan, const LpConcatTarget *target, const LpConcatPart *parts,
			 uint32_t num_parts, const LpPhysicalColumn *columns, BufferEntry *entries,
			 LpError *err)
{
	size_t		next_page = 0;
	size_t		next_slot = 0;
	uint32_t	replaced = 0;

	for (uint32_t c = 0; c < plan->num_columns; c++)
	{
		LpColumn   *out = &plan->columns[c];
		uint64_t	row_offset = 0;

		out->encoding = parts[0].file->columns[c].encoding;
		out->pages = &plan->page_storage[next_page];
		if (target->replaced != NULL && target->replaced[c])
		{
			/* the donor's pages span the rows of every part already */
			const LpColumn *column = target->donor != NULL ? &target->donor->columns[replaced] : NULL;

			replaced++;
			if (column == NULL)
				continue;
			out->encoding = column->encoding;
			for (uint32_t p = 0; p < column->num_pages; p++)
			{
				const LpPage *source = &column->pages[p];
				LpPage	   *page = &out->pages[out->num_pages++];

				*page = *source;
				next_page++;
				copy_page_buffers(plan, entries, source, page, num_parts, &next_slot);
			}
			continue;
		}
		for (uint32_t i = 0; i < num_parts; i++)
		{
			const LpFile *file = parts[i].file;
			const LpColumn *column = &file->columns[c];

			if (file->num_rows == 0)
				continue;
			if (is_header(plan, columns, c))
			{
				/* keep the first header page and let it span every part */
				if (out->num_pages == 0)
				{
					out->pages[0] = column->pages[0];
					out->pages[0].num_rows = 0;
					out->pages[0].priority = 0;
					out->num_pages = 1;
					next_page++;
				}
				if (!lp_add_u64(out->pages[0].num_rows, column->pages[0].num_rows,
								&out->pages[0].num_rows))
					return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
								   "the struct header rows of column %u overflow", c);
				continue;
			}
			for (uint32_t p = 0; p < column->num_pages; p++)
			{
				const LpPage *source = &column->pages[p];
				LpPage	   *page = &out->pages[out->num_pages++];

				*page = *source;
				next_page++;
				if (plan->version != LP_FILE_VERSION_2_0 &&
					!lp_add_u64(source->priority, row_offset, &page->priority))
					return lp_fail(err, LP_ERR_CORRUPT,
								   "part %u (\"%s\"): the priority of page %u of column %u overflows after relocation",
								   i + 1, file->name, p, c);
				copy_page_buffers(plan, entries, source, page, i, &next_slot);
			}
			/* the total was checked when the plan began */
			row_offset += file->num_rows;
		}
	}
	return true;
}

/* Append a range, or extend the last one when it continues it in both files. */
static void
add_range(LpConcatPlan *plan, uint32_t input, uint64_t source_offset,
		  uint64_t dest_offset, uint64_t length)
{
	LpCopyRange *last = plan->num_ranges > 0 ? &plan->ranges[plan->num_ranges - 1] : NULL;
	LpCopyRange *range;

	if (last != NULL && last->input == input &&
		last->source_offset + last->length == source_offset &&
		last->dest_offset + last->length == dest_offset)
	{
		last->length += length;
		return;
	}
	range = &plan->ranges[plan->num_ranges++];
	range->input = input;
	range->source_offset = source_offset;
	range->dest_offset = dest_offset;
	range->length = length;
}

/*
 * Whether a part's buffers (entries[first, end), all of one part) can be
 * copied as one region, and how long that region is: up to the end of its
 * last buffer, rounded up to the alignment when the part has that many
 * bytes.  When it has not, the region ends with its last buffer: a partial
 * block cannot be shared anyway, and cloning it only to overwrite its end
 * with padding would make the filesystem copy it on write.
 */
static bool
region_length(const LpFile *file, const BufferEntry *entries, size_t first,
			  size_t end, uint64_t alignment, uint64_t *length)
{
	uint64_t	region_end = 0;

	if (file->num_global_buffers == 0)
		return false;
	for (size_t e = first; e < end; e++)
	{
		/* the check proved every buffer lies within the file */
		if (entries[e].source_offset + entries[e].size > region_end)
			region_end = entries[e].source_offset + entries[e].size;
	}
	if (region_end > file->global_buffers[0].offset)
		return false;
	if (!lp_align_up_u64(region_end, alignment, length) || *length > file->file_size)
		*length = region_end;
	return true;
}

/*
 * Give every buffer its output position, part by part, and collect the copy
 * ranges.  Packed (alignment 0): within a part, in source order, each at the
 * next 64-byte boundary.  Regions: each eligible part's buffers keep their
 * offsets relative to the part's base, the next multiple of alignment.  A
 * donor (input num_parts) is always one region at the next 64-byte
 * boundary.  Returns the end of the data region.
 */
static bool
place_buffers(LpConcatPlan *plan, const LpConcatPart *parts, uint32_t num_parts,
			  const LpFile *donor, uint64_t alignment, BufferEntry *entries, size_t num_entries,
			  uint64_t *data_end, LpError *err)
{
	uint64_t	pos = 0;
	size_t		first = 0;

	qsort(entries, num_entries, sizeof(BufferEntry), compare_entries);
	while (first < num_entries)
	{
		uint32_t	input = entries[first].input;
		size_t		end = first;
		uint64_t	length;
		const LpFile *file = input < num_parts ? parts[input].file : donor;
		uint64_t	region_alignment = input < num_parts ? alignment : LP_PAGE_BUFFER_ALIGNMENT;

		while (end < num_entries && entries[end].input == input)
			end++;

		if (region_alignment > 0 &&
			region_length(file, entries, first, end, region_alignment, &length))
		{
			uint64_t	base;

			if (!lp_align_up_u64(pos, region_alignment, &base) ||
				!lp_add_u64(base, length, &pos))
				goto overflow;
			for (size_t e = first; e < end; e++)
			{
				plan->buffer_storage[entries[e].slot].offset = base + entries[e].source_offset;
				plan->buffer_storage[entries[e].slot].size = entries[e].size;
			}
			if (length > 0)
				add_range(plan, input, 0, base, length);
			plan->num_region_parts += input < num_parts;
			first = end;
			continue;
		}
		if (input == num_parts)
			return lp_fail(err, LP_ERR_CORRUPT,
						   "the donor file \"%s\" has page buffers after its metadata", file->name);

		for (size_t e = first; e < end; e++)
		{
			const BufferEntry *entry = &entries[e];

			if (!lp_align_up_u64(pos, LP_PAGE_BUFFER_ALIGNMENT, &pos))
				goto overflow;
			plan->buffer_storage[entry->slot].offset = pos;
			plan->buffer_storage[entry->slot].size = entry->size;
			if (entry->size == 0)
				continue;
			add_range(plan, entry->input, entry->source_offset, pos, entry->size);
			if (!lp_add_u64(pos, entry->size, &pos))
				goto overflow;
		}
		first = end;
	}
	if (!lp_align_up_u64(pos, LP_PAGE_BUFFER_ALIGNMENT, &pos))
		goto overflow;
	*data_end = pos;
	return true;

overflow:
	return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
				   "the output would be larger than a 64-bit file size");
}

static LpConcatPlan *
build_plan(const LpConcatTarget *target, const LpConcatPart *parts,
		   uint32_t num_parts, uint64_t total_rows, uint64_t alignment,
		   LpError *err)
{
	LpConcatPlan *plan;
	LpPhysicalColumn *columns = NULL;
	uint32_t	num_schema_columns;
	BufferEntry *entries = NULL;
	uint64_t	num_pages;
	uint64_t	num_buffers;
	uint64_t	data_end = 0;
	LpBytes		descriptor = {NULL, 0};

	plan = lp_alloc0(sizeof(LpConcatPlan));
	if (plan == NULL)
	{
		lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
		return NULL;
	}
	plan->version = target->version;
	plan->num_rows = total_rows;
	plan->num_inputs = num_parts + (target->donor != NULL);
	plan->num_columns = parts[0].file->num_columns;
	plan->region_alignment = alignment;

	if (!lp_schema_physical_columns(target->version, target->schema,
									&columns, &num_schema_columns, err) ||
		!count_output(plan, target, parts, num_parts, columns, &num_pages, &num_buffers, err))
		goto fail;
	if (num_pages > SIZE_MAX || num_buffers > SIZE_MAX)
	{
		lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
		goto fail;
	}

	plan->input_sizes = lp_alloc_array(plan->num_inputs, sizeof(uint64_t));
	plan->columns = lp_alloc_array(plan->num_columns, sizeof(LpColumn));
	plan->page_storage = lp_alloc_array((size_t) num_pages, sizeof(LpPage));
	plan->buffer_storage = lp_alloc_array((size_t) num_buffers, sizeof(LpBufferRef));
	plan->ranges = lp_alloc_array((size_t) num_buffers, sizeof(LpCopyRange));
	entries = lp_alloc_array((size_t) num_buffers, sizeof(BufferEntry));
	if (plan->input_sizes == NULL || plan->columns == NULL ||
		plan->page_storage == NULL || plan->buffer_storage == NULL ||
		plan->ranges == NULL || entries == NULL)
	{
		lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
		goto fail;
	}
	memset(plan->columns, 0, plan->num_columns * sizeof(LpColumn));
	for (uint32_t i = 0; i < num_parts; i++)
		plan->input_sizes[i] = parts[i].file->file_size;
	if (target->donor != NULL)
		plan->input_sizes[num_parts] = target->donor->file_size;

	if (!fill_columns(plan, target, parts, num_parts, columns, entries, err) ||
		!place_buffers(plan, parts, num_parts, target->donor, alignment, entries,
					   (size_t) num_buffers, &data_end, err) ||
		!lp_file_descriptor_with_length(&parts[0].file->schema_bytes, total_rows,
										&descriptor, err) ||
		!lp_file_tail_build(target->version, data_end, &descriptor, 1,
							plan->columns, plan->num_columns, &plan->tail, err))
		goto fail;
	plan->output_size = plan->tail.end;

	lp_free(descriptor.data);
	lp_free(entries);
	lp_free(columns);
	return plan;

fail:
	lp_free(descriptor.data);
	lp_free(entries);
	lp_free(columns);
	lp_concat_plan_free(plan);
	return NULL;
}

static bool
plan_with_alignment(const LpConcatTarget *target, const LpConcatPart *parts,
					uint32_t num_parts, uint64_t alignment,
					LpConcatVerdict *verdict, LpConcatPlan **plan, LpError *err)
{
	uint64_t	total_rows = 0;

	*plan = NULL;
	if (!lp_concat_check(target, parts, num_parts, verdict, err))
		return false;
	if (verdict->reason != LP_CONCAT_COMPATIBLE)
		return true;

	for (uint32_t i = 0; i < num_parts; i++)
	{
		if (!lp_add_u64(total_rows, parts[i].file->num_rows, &total_rows))
			return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
						   "the total row count of the inputs overflows");
	}
	if (total_rows == 0)
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
					   "the input files hold no rows");

	*plan = build_plan(target, parts, num_parts, total_rows, alignment, err);
	return *plan != NULL;
}

bool
lp_concat_plan(const LpConcatTarget *target, const LpConcatPart *parts,
			   uint32_t num_parts, LpConcatVerdict *verdict,
			   LpConcatPlan **plan, LpError *err)
{
	return plan_with_alignment(target, parts, num_parts, 0, verdict, plan, err);
}

bool
lp_concat_plan_regions(const LpConcatTarget *target, const LpConcatPart *parts,
					   uint32_t num_parts, uint64_t alignment,
					   LpConcatVerdict *verdict, LpConcatPlan **plan, LpError *err)
{
	*plan = NULL;
	if (alignment < LP_PAGE_BUFFER_ALIGNMENT || (alignment & (alignment - 1)) != 0)
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
					   "region alignment %" PRIu64 " is not a power of two of at least %d",
					   alignment, LP_PAGE_BUFFER_ALIGNMENT);
	return plan_with_alignment(target, parts, num_parts, alignment, verdict, plan, err);
}

void
lp_concat_plan_free(LpConcatPlan *plan)
{
	if (plan == NULL)
		return;
	lp_file_tail_free(&plan->tail);
	lp_free(plan->input_sizes);
	lp_free(plan->columns);
	lp_free(plan->page_storage);
	lp_free(plan->buffer_storage);
	lp_free(plan->ranges);
	lp_free(plan);
}
