/*
 * lp_levels_take.c - some top-level rows of a decoded unit (a page, or the
 * chunks of one) of a 2.1+ leaf column, appended to the rows taken so far.
 *
 * The rows are followed from the outermost layer in: an item layer (a
 * struct's or the leaf's validity) has one entry per entry of the layer
 * inside it, a list layer's offsets map a range of its entries to the range
 * of inner entries they span.  The innermost layer's entries are the values.
 * Ranges stay ranges all the way down, so a take of consecutive rows copies
 * runs, and the scratch space is bounded by the number of ranges.  The
 * values of ranges of a block (lp_flat_values_take) serve 2.0 pages too.
 */
#include <string.h>

#include "base/lp_alloc.h"
#include "decode/lp_decode_internal.h"

static bool
take_layer(const LpPageContext *ctx, const LpLayerValues *from, LpLayerValues *to,
		   const LpRowRange *ranges, size_t num_ranges, LpRowRange *inner, size_t *num_inner)
{
	const uint64_t *offsets = (const uint64_t *) from->offsets.data;

	*num_inner = 0;
	if (to->count > 0 && to->is_list != from->is_list)
		return lp_page_fail(ctx, LP_ERR_CORRUPT, "layer changes between list and item across pages");
	to->is_list = from->is_list;
	if (from->is_list && from->offsets.len / 8 != from->count + 1)
		return lp_page_fail(ctx, LP_ERR_CORRUPT, "list layer has %llu offsets for %llu lists",
							(unsigned long long) (from->offsets.len / 8),
							(unsigned long long) from->count);
	if (from->validity.num_bits != from->count)
		return lp_page_fail(ctx, LP_ERR_CORRUPT, "layer has %llu validity bits for %llu entries",
							(unsigned long long) from->validity.num_bits,
							(unsigned long long) from->count);
	for (size_t i = 0; i < num_ranges; i++)
	{
		uint64_t	start = ranges[i].start;
		uint64_t	count = ranges[i].count;

		if (start > from->count || count > from->count - start)
			return lp_page_fail(ctx, LP_ERR_CORRUPT, "rows %llu to %llu lie beyond the %llu decoded",
								(unsigned long long) start,
								(unsigned long long) (start + count),
								(unsigned long long) from->count);
		if (!lp_bits_append_bitmap(&to->validity, from->validity.buf.data, start, count))
			return lp_page_no_memory(ctx);
		if (from->is_list)
		{
			uint64_t	base;
			uint64_t	first = offsets[start];
			uint64_t	end = offsets[start + count];

			if (to->offsets.len == 0 && !lp_buf_append_u64(&to->offsets, 0))
				return lp_page_no_memory(ctx);
			base = ((const uint64_t *) to->offsets.data)[to->offsets.len / 8 - 1];
			if (!lp_buf_reserve(&to->offsets, count * 8))
				return lp_page_no_memory(ctx);
			for (uint64_t j = start; j < start + count; j++)
			{
				if (offsets[j + 1] < offsets[j])
					return lp_page_fail(ctx, LP_ERR_CORRUPT, "list offsets decrease");
				lp_buf_append_u64(&to->offsets, base + offsets[j + 1] - first);
			}
			if (end > first)
			{
				if (*num_inner > 0 &&
					inner[*num_inner - 1].start + inner[*num_inner - 1].count == first)
					inner[*num_inner - 1].count += end - first;
				else
				{
					inner[*num_inner].start = first;
					inner[*num_inner].count = end - first;
					(*num_inner)++;
				}
			}
		}
		to->count += count;
	}
	return true;
}

bool
lp_flat_values_take(const LpPageContext *ctx, const LpFlatValues *src, const LpRowRange *ranges,
			  size_t num_ranges, LpFlatValues *dst)
{
	LpFlatValues		part;
	bool		ok = true;

	if (src->variable)
	{
		if (!lp_flat_values_init_variable(&part))
			return lp_page_no_memory(ctx);
	}
	else
		lp_flat_values_init_fixed(&part, src->bits_per_value);
	for (size_t i = 0; i < num_ranges && ok; i++)
	{
		if (ranges[i].start > src->num_values ||
			ranges[i].count > src->num_values - ranges[i].start)
			ok = lp_page_fail(ctx, LP_ERR_CORRUPT, "values %llu to %llu lie beyond the %llu decoded",
							  (unsigned long long) ranges[i].start,
							  (unsigned long long) (ranges[i].start + ranges[i].count),
							  (unsigned long long) src->num_values);
		else if (!lp_flat_values_append_range(&part, src, ranges[i].start, ranges[i].count))
			ok = lp_page_no_memory(ctx);
	}
	ok = ok && lp_flat_values_merge(ctx, dst, &part);
	lp_flat_values_free(&part);
	return ok;
}

bool
lp_column_levels_take(const LpPageContext *ctx, const LpColumnLevels *src,
					  const LpRowRange *ranges, size_t num_ranges, LpColumnLevels *dst)
{
	LpRowRange *current;
	LpRowRange *inner;
	size_t		count = num_ranges;
	uint64_t	rows = 0;
	bool		ok = false;

	if (src->num_layers != dst->num_layers || src->num_layers == 0)
		return lp_page_fail(ctx, LP_ERR_CORRUPT, "page has %u layers where %u were expected",
							src->num_layers, dst->num_layers);
	if (src->values.num_values != src->layers[0].count)
		return lp_page_fail(ctx, LP_ERR_CORRUPT, "page decodes to %llu values for %llu entries",
							(unsigned long long) src->values.num_values,
							(unsigned long long) src->layers[0].count);
	current = lp_alloc_array(num_ranges + 1, sizeof(LpRowRange));
	inner = lp_alloc_array(num_ranges + 1, sizeof(LpRowRange));
	if (current == NULL || inner == NULL)
	{
		lp_page_no_memory(ctx);
		goto done;
	}
	memcpy(current, ranges, num_ranges * sizeof(LpRowRange));
	for (size_t i = 0; i < num_ranges; i++)
		rows += ranges[i].count;

	for (uint32_t layer = src->num_layers; layer-- > 0;)
	{
		size_t		num_inner;

		if (!take_layer(ctx, &src->layers[layer], &dst->layers[layer], current, count, inner,
						&num_inner))
			goto done;
		if (src->layers[layer].is_list)
		{
			LpRowRange *swap = current;

			current = inner;
			inner = swap;
			count = num_inner;
		}
	}

	/* The innermost layer's entries are the values. */
	if (!lp_flat_values_take(ctx, &src->values, current, count, &dst->values))
		goto done;
	dst->num_rows += rows;
	ok = true;

done:
	lp_free(current);
	lp_free(inner);
	return ok;
}
