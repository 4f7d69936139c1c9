/*
 * lp_concat_exec.c - writing a concatenation plan, serially.
 *
 * The output is written front to back.  Without copy_from, consecutive
 * ranges of one part that keep their distance from each other (the usual
 * case: a part's buffers are already 64-byte aligned) are read with one
 * read of at most read_batch_bytes, the padding between them is overwritten
 * with 0x48 in the buffer, and the batch goes out in one write.  Memory is
 * one batch buffer, whatever the size of the inputs.
 */
#include "lp_concat.h"

#include <inttypes.h>
#include <string.h>

#include "lp_alloc.h"
#include "lp_interrupt.h"

typedef struct Writer
{
	LpOutput   *output;
	uint64_t	pos;			/* everything before is written */
} Writer;

static bool
write_bytes(Writer *writer, const void *data, size_t len, LpError *err)
{
	if (len > 0 && !writer->output->ops->write_at(writer->output, writer->pos,
												   data, len, err))
		return false;
	writer->pos += len;
	return true;
}

/* Pad with 0x48 up to offset. */
static bool
pad_to(Writer *writer, uint64_t offset, LpError *err)
{
	uint8_t		padding[LP_PAGE_BUFFER_ALIGNMENT];

	memset(padding, LP_PAD_BYTE, sizeof(padding));
	while (writer->pos < offset)
	{
		uint64_t	len = offset - writer->pos;

		if (!write_bytes(writer, padding,
						 len < sizeof(padding) ? (size_t) len : sizeof(padding), err))
			return false;
	}
	return true;
}

/* One range through copy_from, in steps of batch bytes to stay cancellable. */
static bool
copy_range_direct(Writer *writer, const LpCopyRange *range, LpInput *input,
				  size_t batch, LpError *err)
{
	uint64_t	done = 0;

	while (done < range->length)
	{
		uint64_t	len = range->length - done;

		if (len > batch)
			len = batch;
		if (lp_check_cancel(err) ||
			!writer->output->ops->copy_from(writer->output, writer->pos, input,
											range->source_offset + done, len, err))
			return false;
		writer->pos += len;
		done += len;
	}
	return true;
}

/* One range larger than a batch: read and write it in pieces. */
static bool
copy_range_chunked(Writer *writer, const LpCopyRange *range, LpInput *input,
				   uint8_t *buffer, size_t batch, LpError *err)
{
	uint64_t	done = 0;

	while (done < range->length)
	{
		uint64_t	len = range->length - done;

		if (len > batch)
			len = batch;
		if (lp_check_cancel(err) ||
			!lp_input_read(input, range->source_offset + done, buffer, (size_t) len, err) ||
			!write_bytes(writer, buffer, (size_t) len, err))
			return false;
		done += len;
	}
	return true;
}

/*
 * How many ranges from first on can go in one read: same part, same
 * distance between source and output, and within batch bytes.
 */
static size_t
batch_extent(const LpConcatPlan *plan, size_t first, size_t batch)
{
	const LpCopyRange *start = &plan->ranges[first];
	size_t		last = first;

	while (last + 1 < plan->num_ranges)
	{
		const LpCopyRange *next = &plan->ranges[last + 1];

		if (next->input != start->input ||
			next->source_offset < start->source_offset ||
			next->source_offset - start->source_offset !=
			next->dest_offset - start->dest_offset ||
			next->source_offset - start->source_offset > batch ||
			next->length > batch - (next->source_offset - start->source_offset))
			break;
		last++;
	}
	return last - first + 1;
}

/* Read ranges [first, first + count) in one piece and write them in one. */
static bool
copy_batch(Writer *writer, const LpConcatPlan *plan, size_t first, size_t count,
		   LpInput *input, uint8_t *buffer, LpError *err)
{
	const LpCopyRange *start = &plan->ranges[first];
	const LpCopyRange *end = &plan->ranges[first + count - 1];
	size_t		span = (size_t) (end->source_offset + end->length - start->source_offset);

	if (lp_check_cancel(err) ||
		!lp_input_read(input, start->source_offset, buffer, span, err))
		return false;
	for (size_t r = first; r + 1 < first + count; r++)
	{
		size_t		gap_start = (size_t) (plan->ranges[r].source_offset +
										  plan->ranges[r].length - start->source_offset);
		size_t		gap_end = (size_t) (plan->ranges[r + 1].source_offset -
										start->source_offset);

		memset(buffer + gap_start, LP_PAD_BYTE, gap_end - gap_start);
	}
	return write_bytes(writer, buffer, span, err);
}

static bool
check_inputs(const LpConcatPlan *plan, LpInput *const *inputs, LpError *err)
{
	for (uint32_t i = 0; i < plan->num_inputs; i++)
	{
		if (inputs[i]->size != plan->input_sizes[i])
			return lp_fail(err, LP_ERR_IO,
						   "part %u (\"%s\") has %" PRIu64 " bytes, but was %" PRIu64 " bytes when the concatenation was planned",
						   i + 1, inputs[i]->name, inputs[i]->size, plan->input_sizes[i]);
	}
	return true;
}

bool
lp_concat_execute(const LpConcatPlan *plan, LpInput *const *inputs,
				  LpOutput *output, size_t read_batch_bytes, LpError *err)
{
	Writer		writer = {output, 0};
	uint8_t    *buffer = NULL;
	bool		direct = output->ops->copy_from != NULL;
	size_t		r = 0;

	if (read_batch_bytes == 0)
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
					   "the read batch size must be greater than zero");
	if (!check_inputs(plan, inputs, err))
		return false;
	if (!direct && plan->num_ranges > 0)
	{
		size_t		buffer_len = read_batch_bytes;

		if (plan->tail.start < buffer_len)
			buffer_len = (size_t) plan->tail.start;
		buffer = lp_alloc(buffer_len);
		if (buffer == NULL)
			return lp_fail(err, LP_ERR_NO_MEMORY,
						   "out of memory for a read batch of %zu bytes", buffer_len);
	}

	while (r < plan->num_ranges)
	{
		const LpCopyRange *range = &plan->ranges[r];
		LpInput    *input = inputs[range->input];
		size_t		count = 1;
		bool		ok;

		if (!pad_to(&writer, range->dest_offset, err))
			goto fail;
		if (direct)
			ok = copy_range_direct(&writer, range, input, read_batch_bytes, err);
		else if (range->length > read_batch_bytes)
			ok = copy_range_chunked(&writer, range, input, buffer,
									read_batch_bytes, err);
		else
		{
			count = batch_extent(plan, r, read_batch_bytes);
			ok = copy_batch(&writer, plan, r, count, input, buffer, err);
		}
		if (!ok)
			goto fail;
		r += count;
	}
	if (lp_check_cancel(err) ||
		!pad_to(&writer, plan->tail.start, err) ||
		!write_bytes(&writer, plan->tail.bytes.data, plan->tail.bytes.len, err))
		goto fail;
	lp_free(buffer);
	return true;

fail:
	lp_free(buffer);
	return false;
}
