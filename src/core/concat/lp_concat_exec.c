/*
 * lp_concat_exec.c - writing a concatenation plan.
 *
 * The data region is written as spans of output bytes; a serial run is one
 * span over the whole region, a parallel run many spans in any order.
 * Within a span the output is written front to back.  Without copy_from
 * (or where it refuses an input: one of another store),
 * consecutive ranges of one part that keep their distance from each other
 * (the usual case: a part's buffers are already 64-byte aligned) are read
 * with one read of at most the batch size, the padding between them is
 * overwritten with 0x48 in the buffer, and the batch goes out in one write.
 * Memory is one batch buffer per copier, whatever the size of the inputs.
 */
#include "concat/lp_concat.h"

#include <inttypes.h>
#include <string.h>

#include "base/lp_alloc.h"
#include "base/lp_interrupt.h"

static bool
write_padding(LpConcatCopier *copier, uint64_t start, uint64_t end, LpError *err)
{
	while (start < end)
	{
		uint64_t	len = end - start;

		if (len > sizeof(copier->padding))
			len = sizeof(copier->padding);
		if (!copier->output->ops->write_at(copier->output, start, copier->padding,
										   (size_t) len, err))
			return false;
		start += len;
	}
	return true;
}

/*
 * Output bytes [*pos, end) of one range through copy_from, batch by batch;
 * *pos is advanced past what was copied, also when copy_from refuses the
 * input (LP_ERR_UNSUPPORTED) and the caller reads and writes the rest.
 */
static bool
copy_direct(LpConcatCopier *copier, const LpCopyRange *range, uint64_t *pos,
			uint64_t end, LpError *err)
{
	LpInput    *input = copier->inputs[range->input];

	while (*pos < end)
	{
		uint64_t	len = end - *pos;

		if (len > copier->batch)
			len = copier->batch;
		if (lp_check_cancel(err) ||
			!copier->output->ops->copy_from(copier->output, *pos, input,
											range->source_offset + (*pos - range->dest_offset),
											len, err))
			return false;
		*pos += len;
	}
	return true;
}

static bool
ensure_buffer(LpConcatCopier *copier, LpError *err)
{
	if (copier->buffer != NULL)
		return true;
	copier->buffer_len = copier->batch;
	if (copier->plan->tail.start < copier->buffer_len)
		copier->buffer_len = (size_t) copier->plan->tail.start;
	copier->buffer = lp_alloc(copier->buffer_len);
	if (copier->buffer == NULL)
		return lp_fail(err, LP_ERR_NO_MEMORY,
					   "out of memory for a read batch of %zu bytes", copier->buffer_len);
	return true;
}

/*
 * Output bytes from pos, starting in range r, through the read buffer: as
 * many following ranges of the same part at the same distance as fit in one
 * batch and before end.  Returns the index of the first range not finished
 * and sets *pos past what was written.
 */
static bool
copy_batch(LpConcatCopier *copier, size_t r, uint64_t *pos, uint64_t end,
		   size_t *next, LpError *err)
{
	const LpConcatPlan *plan = copier->plan;
	const LpCopyRange *first = &plan->ranges[r];
	uint64_t	start = *pos;
	uint64_t	distance = first->dest_offset - first->source_offset;
	uint64_t	limit = end - start < copier->batch ? end : start + copier->batch;
	uint64_t	span_end;
	size_t		last = r;

	/* ranges are in output order and do not overlap */
	while (last + 1 < plan->num_ranges)
	{
		const LpCopyRange *candidate = &plan->ranges[last + 1];

		if (candidate->input != first->input ||
			candidate->dest_offset - candidate->source_offset != distance ||
			candidate->dest_offset + candidate->length > limit)
			break;
		last++;
	}
	span_end = plan->ranges[last].dest_offset + plan->ranges[last].length;
	if (span_end > limit)
		span_end = limit;

	if (lp_check_cancel(err) ||
		!ensure_buffer(copier, err) ||
		!lp_input_read(copier->inputs[first->input], start - distance, copier->buffer,
					   (size_t) (span_end - start), err))
		return false;
	for (size_t k = r; k < last; k++)
	{
		uint64_t	gap_start = plan->ranges[k].dest_offset + plan->ranges[k].length;
		uint64_t	gap_end = plan->ranges[k + 1].dest_offset;

		memset(copier->buffer + (gap_start - start), LP_PAD_BYTE, gap_end - gap_start);
	}
	if (!copier->output->ops->write_at(copier->output, start, copier->buffer,
									   (size_t) (span_end - start), err))
		return false;
	*pos = span_end;
	*next = span_end == plan->ranges[last].dest_offset + plan->ranges[last].length
		? last + 1 : last;
	return true;
}

/* The first range that ends after offset. */
static size_t
first_range_after(const LpConcatPlan *plan, uint64_t offset)
{
	size_t		low = 0;
	size_t		high = plan->num_ranges;

	while (low < high)
	{
		size_t		mid = low + (high - low) / 2;
		const LpCopyRange *range = &plan->ranges[mid];

		if (range->dest_offset + range->length <= offset)
			low = mid + 1;
		else
			high = mid;
	}
	return low;
}

bool
lp_concat_copier_init(LpConcatCopier *copier, const LpConcatPlan *plan,
					  LpInput *const *inputs, LpOutput *output,
					  size_t read_batch_bytes, LpError *err)
{
	memset(copier, 0, sizeof(*copier));
	if (read_batch_bytes == 0)
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
					   "the read batch size must be greater than zero");
	for (uint32_t i = 0; i < plan->num_inputs; i++)
	{
		if (inputs[i]->size != plan->input_sizes[i])
			return lp_fail(err, LP_ERR_IO,
						   "part %u (\"%s\") has %" PRIu64 " bytes, but was %" PRIu64 " bytes when the concatenation was planned",
						   i + 1, inputs[i]->name, inputs[i]->size, plan->input_sizes[i]);
	}
	copier->plan = plan;
	copier->inputs = inputs;
	copier->output = output;
	copier->batch = read_batch_bytes;

	/*
	 * Kernel copies of a region continue on block boundaries, so that each
	 * can clone extents.
	 */
	if (plan->region_alignment > 0 && copier->batch > plan->region_alignment)
		copier->batch -= copier->batch % plan->region_alignment;
	memset(copier->padding, LP_PAD_BYTE, sizeof(copier->padding));
	return true;
}

void
lp_concat_copier_free(LpConcatCopier *copier)
{
	lp_free(copier->buffer);
	copier->buffer = NULL;
}

bool
lp_concat_copy_span(LpConcatCopier *copier, uint64_t start, uint64_t end,
					LpError *err)
{
	const LpConcatPlan *plan = copier->plan;
	bool		direct = copier->output->ops->copy_from != NULL;
	uint64_t	pos = start;
	size_t		r;

	if (end > plan->tail.start)
		end = plan->tail.start;
	r = first_range_after(plan, start);
	while (pos < end)
	{
		const LpCopyRange *range;
		uint64_t	piece_end;

		if (r == plan->num_ranges || plan->ranges[r].dest_offset >= end)
			return write_padding(copier, pos, end, err);
		range = &plan->ranges[r];
		if (range->dest_offset > pos)
		{
			if (!write_padding(copier, pos, range->dest_offset, err))
				return false;
			pos = range->dest_offset;
		}
		piece_end = range->dest_offset + range->length;
		if (piece_end > end)
			piece_end = end;
		if (direct)
		{
			if (copy_direct(copier, range, &pos, piece_end, err))
			{
				if (pos == range->dest_offset + range->length)
					r++;
				continue;
			}
			if (err->code != LP_ERR_UNSUPPORTED)
				return false;
			/* the output cannot copy from this input: read and write it */
			lp_error_clear(err);
		}
		if (!copy_batch(copier, r, &pos, end, &r, err))
			return false;
	}
	return true;
}

bool
lp_concat_write_tail(const LpConcatPlan *plan, LpOutput *output, LpError *err)
{
	if (lp_check_cancel(err))
		return false;
	return plan->tail.bytes.len == 0 ||
		output->ops->write_at(output, plan->tail.start, plan->tail.bytes.data,
							  plan->tail.bytes.len, err);
}

uint64_t
lp_concat_span_bytes(const LpConcatPlan *plan, size_t read_batch_bytes)
{
	uint64_t	unit = plan->region_alignment > 0 ? plan->region_alignment
		: LP_PAGE_BUFFER_ALIGNMENT;
	uint64_t	span = read_batch_bytes - read_batch_bytes % unit;

	return span > unit ? span : unit;
}

bool
lp_concat_execute(const LpConcatPlan *plan, LpInput *const *inputs,
				  LpOutput *output, size_t read_batch_bytes, LpError *err)
{
	LpConcatCopier copier;
	bool		ok;

	if (!lp_concat_copier_init(&copier, plan, inputs, output, read_batch_bytes, err))
		return false;
	ok = lp_concat_copy_span(&copier, 0, plan->tail.start, err) &&
		lp_concat_write_tail(plan, output, err);
	lp_concat_copier_free(&copier);
	return ok;
}
