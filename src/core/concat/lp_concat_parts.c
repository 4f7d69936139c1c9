/*
 * lp_concat_parts.c - the multipart upload parts of a concatenation plan.
 *
 * The algorithm is described in lp_concat_parts.h: segments of the plan's
 * copy ranges, a front-to-back layout, and, when that needs too many parts,
 * the most copies of the longest segments whose layout fits.
 */
#include "concat/lp_concat_parts.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/lp_alloc.h"
#include "base/lp_checked.h"
#include "base/lp_interrupt.h"

/*
 * Consecutive ranges of one input at one distance, and how far a copy of
 * them may run: output bytes [start, copy_end) are input bytes from
 * source_start on.  Padding between copy_end and the next segment (or the
 * tail) is what the input cannot cover.
 */
typedef struct Segment
{
	uint32_t	input;
	uint64_t	source_start;
	uint64_t	start;
	uint64_t	copy_end;
} Segment;

/* The parts of one layout; with parts NULL they are only counted. */
typedef struct Layout
{
	const LpMultipartLimits *limits;
	LpUploadPart *parts;
	uint64_t	count;
	uint64_t	copied_bytes;
	uint64_t	sent_bytes;
} Layout;

/*
 * Output bytes [dest, dest + length) as the fewest parts of at most
 * max_part_bytes, of nearly equal sizes (the first length % k one byte
 * longer), so that with max >= 2 * min every one has at least min bytes.
 */
static void
emit_split(Layout *layout, LpUploadPartKind kind, uint32_t input,
		   uint64_t source, uint64_t dest, uint64_t length)
{
	uint64_t	max = layout->limits->max_part_bytes;
	uint64_t	k = length / max + (length % max != 0);
	uint64_t	base = length / k;
	uint64_t	longer = length % k;

	if (kind == LP_UPLOAD_PART_COPY)
		layout->copied_bytes += length;
	else
		layout->sent_bytes += length;
	if (layout->parts == NULL)
	{
		layout->count += k;
		return;
	}
	for (uint64_t j = 0; j < k; j++)
	{
		LpUploadPart *part = &layout->parts[layout->count++];

		part->kind = kind;
		part->input = kind == LP_UPLOAD_PART_COPY ? input : 0;
		part->source_offset = kind == LP_UPLOAD_PART_COPY ? source : 0;
		part->dest_offset = dest;
		part->length = base + (j < longer);
		source += part->length;
		dest += part->length;
	}
}

/*
 * Lay the output out front to back: segments that may be copied (all, or
 * with rank given, those whose rank is below copies) and are long enough
 * are copied, everything else joins the pending send run [run_start, next
 * segment's start).
 */
static void
lay_out(const LpConcatPlan *plan, const Segment *segments, size_t num_segments,
		const size_t *rank, size_t copies, Layout *layout)
{
	uint64_t	min = layout->limits->min_part_bytes;
	uint64_t	run_start = 0;

	for (size_t s = 0; s < num_segments; s++)
	{
		const Segment *segment = &segments[s];
		uint64_t	copy_len = segment->copy_end - segment->start;
		uint64_t	run = segment->start - run_start;
		uint64_t	head = 0;

		/* a copy that ends the output is the last part: no minimum */
		uint64_t	least = segment->copy_end == plan->output_size ? 1 : min;

		if ((rank != NULL && rank[s] >= copies) || copy_len < least)
			continue;
		/* a run too short to be a part takes the segment's first bytes */
		if (run > 0 && run < min)
			head = min - run;
		if (copy_len - head < least)
			continue;
		if (run + head > 0)
			emit_split(layout, LP_UPLOAD_PART_SEND, 0, 0, run_start, run + head);
		emit_split(layout, LP_UPLOAD_PART_COPY, segment->input,
				   segment->source_start + head, segment->start + head,
				   copy_len - head);
		run_start = segment->copy_end;
	}
	if (plan->output_size > run_start)
		emit_split(layout, LP_UPLOAD_PART_SEND, 0, 0, run_start,
				   plan->output_size - run_start);
}

static uint64_t
count_parts(const LpConcatPlan *plan, const LpMultipartLimits *limits,
			const Segment *segments, size_t num_segments, const size_t *rank,
			size_t copies)
{
	Layout		layout = {limits, NULL, 0, 0, 0};

	lay_out(plan, segments, num_segments, rank, copies, &layout);
	return layout.count;
}

/* Group the plan's ranges into segments; *segments is NULL when there are none. */
static bool
build_segments(const LpConcatPlan *plan, Segment **segments, size_t *num_segments,
			   LpError *err)
{
	size_t		n = 0;

	*segments = NULL;
	*num_segments = 0;
	if (plan->num_ranges == 0)
		return true;
	*segments = lp_alloc_array(plan->num_ranges, sizeof(Segment));
	if (*segments == NULL)
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory for %zu segments",
					   plan->num_ranges);
	for (size_t r = 0; r < plan->num_ranges; r++)
	{
		const LpCopyRange *range = &plan->ranges[r];
		Segment    *last = n > 0 ? &(*segments)[n - 1] : NULL;

		/* distances compared modulo 2^64: a range may sit before its source */
		if (last != NULL && last->input == range->input &&
			range->dest_offset - range->source_offset == last->start - last->source_start)
		{
			last->copy_end = range->dest_offset + range->length;
			continue;
		}
		last = &(*segments)[n++];
		last->input = range->input;
		last->source_start = range->source_offset;
		last->start = range->dest_offset;
		last->copy_end = range->dest_offset + range->length;
	}

	/* extend each copy over the padding after it, as far as its input goes */
	for (size_t s = 0; s < n; s++)
	{
		Segment    *segment = &(*segments)[s];
		uint64_t	source_end = segment->source_start + (segment->copy_end - segment->start);
		uint64_t	next_start = s + 1 < n ? (*segments)[s + 1].start : plan->tail.start;
		uint64_t	available;

		if (source_end > plan->input_sizes[segment->input])
		{
			lp_free(*segments);
			*segments = NULL;
			return lp_fail(err, LP_ERR_INTERNAL,
						   "a copy range of the plan ends after the end of input %u",
						   segment->input + 1);
		}
		available = plan->input_sizes[segment->input] - source_end;
		if (next_start - segment->copy_end < available)
			available = next_start - segment->copy_end;
		segment->copy_end += available;
	}
	*num_segments = n;
	return true;
}

/* A segment's copy length and index, to rank segments longest first. */
typedef struct RankEntry
{
	uint64_t	copy_len;
	size_t		segment;
} RankEntry;

static int
compare_longest_first(const void *a, const void *b)
{
	const RankEntry *x = a;
	const RankEntry *y = b;

	if (x->copy_len != y->copy_len)
		return x->copy_len > y->copy_len ? -1 : 1;
	return x->segment < y->segment ? -1 : x->segment > y->segment;
}

/*
 * When copying every segment that can be copied needs more than max_parts:
 * rank the segments longest first (earlier first among equals) and find the
 * most copies of the top-ranked whose layout fits, knowing that none (every
 * byte sent) fits and that all do not.
 */
static bool
fitting_copies(const LpConcatPlan *plan, const LpMultipartLimits *limits,
			   const Segment *segments, size_t num_segments, size_t **rank,
			   size_t *copies, LpError *err)
{
	RankEntry  *order = lp_alloc_array(num_segments, sizeof(RankEntry));
	size_t		low = 0;
	size_t		high = num_segments;

	*rank = lp_alloc_array(num_segments, sizeof(size_t));
	if (order == NULL || *rank == NULL)
	{
		lp_free(order);
		lp_free(*rank);
		*rank = NULL;
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory for ranking %zu segments",
					   num_segments);
	}
	for (size_t s = 0; s < num_segments; s++)
	{
		order[s].copy_len = segments[s].copy_end - segments[s].start;
		order[s].segment = s;
	}
	qsort(order, num_segments, sizeof(RankEntry), compare_longest_first);
	for (size_t r = 0; r < num_segments; r++)
		(*rank)[order[r].segment] = r;
	lp_free(order);

	/* low copies fit (it was counted, or is 0); high copies do not */
	while (high - low > 1)
	{
		size_t		mid = low + (high - low) / 2;

		if (count_parts(plan, limits, segments, num_segments, *rank, mid) <= limits->max_parts)
			low = mid;
		else
			high = mid;
	}
	*copies = low;
	return true;
}

bool
lp_concat_upload_parts(const LpConcatPlan *plan, const LpMultipartLimits *limits,
					   LpUploadParts **result, LpError *err)
{
	Segment    *segments = NULL;
	size_t		num_segments;
	size_t	   *rank = NULL;
	size_t		copies = 0;
	uint64_t	fewest;
	uint64_t	count;
	Layout		layout = {limits, NULL, 0, 0, 0};
	LpUploadParts *parts;

	*result = NULL;
	if (limits->min_part_bytes == 0 || limits->max_parts == 0 ||
		limits->min_part_bytes > limits->max_part_bytes / 2)
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
					   "multipart limits of %" PRIu64 " to %" PRIu64 " bytes in at most %u parts are not usable",
					   limits->min_part_bytes, limits->max_part_bytes, limits->max_parts);

	fewest = plan->output_size / limits->max_part_bytes +
		(plan->output_size % limits->max_part_bytes != 0);
	if (fewest > limits->max_parts)
	{
		lp_fail(err, LP_ERR_UNSUPPORTED,
				"an output of %" PRIu64 " bytes needs at least %" PRIu64 " upload parts of at most %" PRIu64 " bytes, more than the limit of %u parts",
				plan->output_size, fewest, limits->max_part_bytes, limits->max_parts);
		lp_error_detail(err, "The store accepts no multipart upload of this size.");
		return false;
	}

	if (!build_segments(plan, &segments, &num_segments, err))
		return false;
	count = count_parts(plan, limits, segments, num_segments, NULL, 0);
	if (count > limits->max_parts)
	{
		if (!fitting_copies(plan, limits, segments, num_segments, &rank, &copies, err))
		{
			lp_free(segments);
			return false;
		}
		count = count_parts(plan, limits, segments, num_segments, rank, copies);
	}

	parts = lp_alloc0(sizeof(LpUploadParts));
	if (parts != NULL)
		parts->parts = lp_alloc_array((size_t) count, sizeof(LpUploadPart));
	if (parts == NULL || parts->parts == NULL)
	{
		lp_free(parts);
		lp_free(rank);
		lp_free(segments);
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory for %" PRIu64 " upload parts",
					   count);
	}
	layout.parts = parts->parts;
	lay_out(plan, segments, num_segments, rank, copies, &layout);
	parts->num_parts = (size_t) layout.count;
	parts->copied_bytes = layout.copied_bytes;
	parts->sent_bytes = layout.sent_bytes;
	lp_free(rank);
	lp_free(segments);
	*result = parts;
	return true;
}

/* The data region in spans of span_bytes, then the tail: parts of the plan's bytes. */
static bool
span_parts(const LpConcatPlan *plan, uint64_t span_bytes, LpUploadParts **result,
		   LpError *err)
{
	uint64_t	num_spans = plan->tail.start / span_bytes + (plan->tail.start % span_bytes != 0);
	uint64_t	count = num_spans + (plan->output_size > plan->tail.start);
	LpUploadParts *parts = lp_alloc0(sizeof(LpUploadParts));

	if (parts != NULL && count > 0)
		parts->parts = lp_alloc_array((size_t) count, sizeof(LpUploadPart));
	if (parts == NULL || (count > 0 && parts->parts == NULL))
	{
		lp_free(parts);
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory for %" PRIu64 " output parts", count);
	}
	for (uint64_t start = 0; start < plan->output_size; parts->num_parts++)
	{
		uint64_t	end = start < plan->tail.start && plan->tail.start - start > span_bytes
			? start + span_bytes : start < plan->tail.start ? plan->tail.start : plan->output_size;

		parts->parts[parts->num_parts] = (LpUploadPart) {
			.kind = LP_UPLOAD_PART_SEND, .dest_offset = start, .length = end - start,
		};
		start = end;
	}
	parts->sent_bytes = plan->output_size;
	*result = parts;
	return true;
}

bool
lp_concat_output_parts(const LpConcatPlan *plan, const LpOutput *output, uint64_t span_bytes,
					   LpUploadParts **parts, LpError *err)
{
	if (output->multipart != NULL)
		return lp_concat_upload_parts(plan, output->multipart, parts, err);
	if (span_bytes == 0)
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT, "the span of output parts must not be empty");
	return span_parts(plan, span_bytes, parts, err);
}

bool
lp_concat_parts_by_number(const LpUploadParts *parts, LpInput *const *inputs, LpOutput *output,
						  size_t read_batch_bytes, uint64_t *num_copies)
{
	uint64_t	largest_held = read_batch_bytes;

	if (output->ops->start_parts == NULL)
		return false;
	if (output->multipart != NULL && largest_held < 2 * output->multipart->min_part_bytes)
		largest_held = 2 * output->multipart->min_part_bytes;
	*num_copies = 0;
	for (size_t p = 0; p < parts->num_parts; p++)
	{
		const LpUploadPart *part = &parts->parts[p];

		if (part->kind == LP_UPLOAD_PART_COPY)
		{
			if (output->ops->copies_part_from == NULL ||
				!output->ops->copies_part_from(output, inputs[part->input]))
				return false;
			(*num_copies)++;
		}
		else if (output->multipart != NULL && part->length > largest_held)
			return false;
	}
	/* nothing for the store to copy: front to back is as cheap (one PUT when small) */
	return output->multipart == NULL || *num_copies > 0;
}

bool
lp_concat_write_part(LpConcatCopier *copier, const LpUploadPart *part, LpError *err)
{
	const LpConcatPlan *plan = copier->plan;
	LpOutput   *output = copier->output;
	uint64_t	end = part->dest_offset + part->length;

	if (lp_check_cancel(err))
		return false;
	if (part->kind == LP_UPLOAD_PART_COPY && output->ops->copy_from != NULL)
	{
		if (output->ops->copy_from(output, part->dest_offset, copier->inputs[part->input],
								   part->source_offset, part->length, err))
			return true;
		if (err->code != LP_ERR_UNSUPPORTED)
			return false;
		/* the plan's bytes instead, as a send part */
		lp_error_clear(err);
	}
	if (part->dest_offset < plan->tail.start &&
		!lp_concat_copy_span(copier, part->dest_offset, end, err))
		return false;
	if (end > plan->tail.start)
	{
		uint64_t	from = part->dest_offset > plan->tail.start ? part->dest_offset : plan->tail.start;

		return output->ops->write_at(output, from, plan->tail.bytes.data + (from - plan->tail.start),
									 (size_t) (end - from), err);
	}
	return true;
}

void
lp_concat_upload_parts_free(LpUploadParts *parts)
{
	if (parts == NULL)
		return;
	lp_free(parts->parts);
	lp_free(parts);
}

/* An output that is a caller's buffer holding output bytes [start, start + len). */
typedef struct WindowOutput
{
	LpOutput	base;
	uint64_t	start;
	uint8_t    *buffer;
	size_t		len;
} WindowOutput;

static bool
window_write_at(LpOutput *output, uint64_t offset, const void *data, size_t len,
				LpError *err)
{
	WindowOutput *window = (WindowOutput *) output;

	if (offset < window->start || !lp_range_within(offset - window->start, len, window->len))
		return lp_fail(err, LP_ERR_INTERNAL,
					   "a write of %zu bytes at offset %" PRIu64 " is outside the requested output bytes",
					   len, offset);
	memcpy(window->buffer + (offset - window->start), data, len);
	return true;
}

static const LpOutputOps window_ops = {
	.write_at = window_write_at,
};

bool
lp_concat_output_bytes(const LpConcatPlan *plan, LpInput *const *inputs,
					   uint64_t offset, void *buffer, size_t len, LpError *err)
{
	WindowOutput window = {{&window_ops, "output bytes", NULL}, offset, buffer, len};
	uint64_t	end = offset + len;

	if (!lp_range_within(offset, len, plan->output_size))
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
					   "output bytes [%" PRIu64 ", +%zu) are not within the output of %" PRIu64 " bytes",
					   offset, len, plan->output_size);
	if (len == 0)
		return true;
	if (offset < plan->tail.start)
	{
		LpConcatCopier copier;
		size_t		batch = len < LP_CONCAT_DEFAULT_READ_BATCH_BYTES
			? len : LP_CONCAT_DEFAULT_READ_BATCH_BYTES;
		bool		ok;

		if (!lp_concat_copier_init(&copier, plan, inputs, &window.base, batch, err))
			return false;
		ok = lp_concat_copy_span(&copier, offset, end, err);
		lp_concat_copier_free(&copier);
		if (!ok)
			return false;
	}
	if (end > plan->tail.start)
	{
		uint64_t	from = offset > plan->tail.start ? offset : plan->tail.start;

		memcpy((uint8_t *) buffer + (from - offset),
			   plan->tail.bytes.data + (from - plan->tail.start), (size_t) (end - from));
	}
	return true;
}

/* Output bytes [offset, offset + len) as the plan makes them, written in batches. */
static bool
send_bytes(const LpConcatPlan *plan, LpInput *const *inputs, LpOutput *output,
		   uint64_t offset, uint64_t len, uint8_t *buffer, size_t batch_bytes, LpError *err)
{
	while (len > 0)
	{
		size_t		n = len < batch_bytes ? (size_t) len : batch_bytes;

		if (lp_check_cancel(err) ||
			!lp_concat_output_bytes(plan, inputs, offset, buffer, n, err) ||
			!output->ops->write_at(output, offset, buffer, n, err))
			return false;
		offset += n;
		len -= n;
	}
	return true;
}

bool
lp_concat_write_upload_parts(const LpConcatPlan *plan, const LpUploadParts *parts,
							 LpInput *const *inputs, LpOutput *output, size_t batch_bytes,
							 LpError *err)
{
	uint8_t    *buffer;
	bool		ok = true;

	if (batch_bytes == 0)
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT, "the write batch must not be empty");
	if (plan->output_size < batch_bytes)
		batch_bytes = plan->output_size > 0 ? (size_t) plan->output_size : 1;
	buffer = lp_alloc(batch_bytes);
	if (buffer == NULL)
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory for a write batch of %zu bytes",
					   batch_bytes);
	for (size_t p = 0; ok && p < parts->num_parts; p++)
	{
		const LpUploadPart *part = &parts->parts[p];

		if (part->kind == LP_UPLOAD_PART_COPY && output->ops->copy_from != NULL)
		{
			if (lp_check_cancel(err))
				ok = false;
			else if (!output->ops->copy_from(output, part->dest_offset, inputs[part->input],
											 part->source_offset, part->length, err))
			{
				if (err->code != LP_ERR_UNSUPPORTED)
					ok = false;
				else
				{
					lp_error_clear(err);
					ok = send_bytes(plan, inputs, output, part->dest_offset, part->length,
									buffer, batch_bytes, err);
				}
			}
		}
		else
			ok = send_bytes(plan, inputs, output, part->dest_offset, part->length, buffer,
							batch_bytes, err);
	}
	lp_free(buffer);
	return ok;
}
