/*
 * lp_decode_fullzip.c - full-zip pages of Lance 2.1+ (lance-format.md §4.4).
 *
 * Buffer 0 holds, for every level (num_items of them): a control word of
 * 0, 1, 2 or 4 bytes (repetition level in the high bits above bits_def
 * bits of definition level), then, if the level carries a value: the value
 * (fixed width), or for variable width a length of bits_per_offset bits and
 * the bytes, present only for valid values.  Buffer 1, when present, is the
 * repetition index, which a full decode does not need.
 */
#include <string.h>

#include "base/lp_alloc.h"
#include "base/lp_checked.h"
#include "decode/lp_decode_internal.h"

static uint32_t
control_word_bytes(uint32_t bits)
{
	if (bits == 0)
		return 0;
	if (bits <= 8)
		return 1;
	if (bits <= 16)
		return 2;
	return 4;
}

/* How the items of a page are laid out. */
typedef struct ItemShape
{
	uint32_t	cw_bytes;
	uint16_t	max_visible;
	bool		has_rep;
	bool		has_def;
	bool		variable;
	uint32_t	value_bytes;
	uint32_t	length_bytes;
} ItemShape;

static bool
item_shape(const LpPageContext *ctx, const Lance__Encodings21__FullZipLayout *layout,
		   ItemShape *shape, LpFlatValues *values)
{
	memset(shape, 0, sizeof(*shape));
	memset(values, 0, sizeof(*values));
	if (layout->bits_rep > 16 || layout->bits_def > 16)
		return lp_page_fail(ctx, LP_ERR_CORRUPT, "full-zip levels are too wide");
	shape->cw_bytes = control_word_bytes(layout->bits_rep + layout->bits_def);
	shape->max_visible = lp_max_visible_def(layout->layers, layout->n_layers);
	shape->has_rep = layout->bits_rep > 0;
	shape->has_def = layout->bits_def > 0;
	switch (layout->details_case)
	{
		case LANCE__ENCODINGS21__FULL_ZIP_LAYOUT__DETAILS_BITS_PER_VALUE:
			if (layout->bits_per_value == 0 || layout->bits_per_value % 8 != 0)
				return lp_page_unsupported(ctx, "full-zip values that are not whole bytes");
			shape->value_bytes = layout->bits_per_value / 8;
			lp_flat_values_init_fixed(values, layout->bits_per_value);
			return true;
		case LANCE__ENCODINGS21__FULL_ZIP_LAYOUT__DETAILS_BITS_PER_OFFSET:
			if (layout->bits_per_offset != 32 && layout->bits_per_offset != 64)
				return lp_page_fail(ctx, LP_ERR_CORRUPT, "full-zip lengths are %u bits wide",
									layout->bits_per_offset);
			shape->variable = true;
			shape->length_bytes = layout->bits_per_offset / 8;
			return lp_flat_values_init_variable(values) ? true : lp_page_no_memory(ctx);
		default:
			return lp_page_fail(ctx, LP_ERR_CORRUPT, "full-zip page has no value width");
	}
}

/*
 * Parse num_items items from data, appending visible values to values and
 * levels to rep/def (when the page has them) from index first_level on.
 * *used: the bytes the items took.
 */
static bool
parse_items(const LpPageContext *ctx, const Lance__Encodings21__FullZipLayout *layout,
			const ItemShape *shape, const uint8_t *data, uint64_t len, uint64_t num_items,
			LpFlatValues *values, uint16_t *rep, uint16_t *def, uint64_t first_level,
			uint64_t *used)
{
	uint64_t	pos = 0;

	for (uint64_t i = 0; i < num_items; i++)
	{
		uint64_t	word = 0;
		uint16_t	def_level = 0;
		bool		visible = true;
		bool		valid = true;

		if (shape->cw_bytes > len - pos)
			goto short_buffer;
		if (shape->cw_bytes > 0)
			word = lp_le_uint(data + pos, shape->cw_bytes);
		pos += shape->cw_bytes;
		if (shape->has_def)
		{
			def_level = (uint16_t) (word & ((1u << layout->bits_def) - 1));
			def[first_level + i] = def_level;
			valid = def_level == 0;
		}
		if (shape->has_rep)
			rep[first_level + i] = (uint16_t) ((word >> layout->bits_def) &
											   ((1u << layout->bits_rep) - 1));
		if (shape->has_rep && shape->has_def)
			visible = def_level <= shape->max_visible;
		if (!visible)
			continue;
		if (!shape->variable)
		{
			if (shape->value_bytes > len - pos)
				goto short_buffer;
			if (!lp_buf_append(&values->data, data + pos, shape->value_bytes))
				return lp_page_no_memory(ctx);
			pos += shape->value_bytes;
			values->num_values++;
		}
		else
		{
			uint64_t	value_len = 0;

			if (valid)
			{
				if (shape->length_bytes > len - pos)
					goto short_buffer;
				value_len = lp_le_uint(data + pos, shape->length_bytes);
				pos += shape->length_bytes;
				if (value_len > len - pos)
					goto short_buffer;
			}
			if (!lp_flat_values_append_repeated(values, data + pos, value_len, 1))
				return lp_page_no_memory(ctx);
			pos += value_len;
		}
	}
	*used = pos;
	return true;

short_buffer:
	return lp_page_fail(ctx, LP_ERR_CORRUPT, "full-zip buffer ends inside an item");
}

/* Level arrays of num_levels entries for the levels the page has. */
static bool
alloc_levels(const LpPageContext *ctx, const ItemShape *shape, uint64_t num_levels,
			 uint16_t **rep, uint16_t **def)
{
	*rep = NULL;
	*def = NULL;
	if (shape->has_rep)
		*rep = lp_alloc_array(num_levels + 1, sizeof(uint16_t));
	if (shape->has_def)
		*def = lp_alloc_array(num_levels + 1, sizeof(uint16_t));
	if ((shape->has_rep && *rep == NULL) || (shape->has_def && *def == NULL))
	{
		lp_free(*rep);
		lp_free(*def);
		return lp_page_no_memory(ctx);
	}
	return true;
}

/* Undo per-value compression, unravel the levels, move the values into acc. */
static bool
finish_items(const LpPageContext *ctx, const Lance__Encodings21__FullZipLayout *layout,
			 LpFlatValues *values, uint16_t *rep, uint16_t *def, uint64_t num_levels,
			 uint64_t num_rows, LpColumnLevels *acc)
{
	LpPageLevels levels;

	if (!lp_per_value_decompress(ctx, layout->value_compression, values))
		return false;
	levels.num_levels = num_levels;
	levels.rep = rep;
	levels.def = def;
	return lp_repdef_unravel(ctx, layout->layers, layout->n_layers, &levels, values->num_values,
							 num_rows, acc) &&
		lp_flat_values_merge(ctx, &acc->values, values);
}

bool
lp_decode_fullzip_page(const LpPageContext *ctx, LpInput *input, const LpPage *page,
					   const Lance__Encodings21__FullZipLayout *layout,
					   LpColumnLevels *acc)
{
	ItemShape	shape;
	uint8_t    *data = NULL;
	uint64_t	len;
	uint64_t	used;
	uint16_t   *rep = NULL;
	uint16_t   *def = NULL;
	LpFlatValues		values;
	bool		ok = false;

	if (!item_shape(ctx, layout, &shape, &values))
		return false;
	if (!lp_read_page_buffer(ctx, input, page, 0, &data, &len))
		goto done;
	/*
	 * Every level takes at least its control word (a null or empty list
	 * nothing more), or without control words a value.
	 */
	if (shape.cw_bytes + shape.value_bytes > 0 &&
		layout->num_items > len / (shape.cw_bytes > 0 ? shape.cw_bytes : shape.value_bytes))
	{
		lp_page_fail(ctx, LP_ERR_CORRUPT, "full-zip buffer is too short for %u items",
					 layout->num_items);
		goto done;
	}
	if (shape.cw_bytes + shape.value_bytes == 0 && layout->num_items > 0 && !shape.variable)
	{
		lp_page_fail(ctx, LP_ERR_CORRUPT, "full-zip page has neither levels nor values");
		goto done;
	}
	if (!alloc_levels(ctx, &shape, layout->num_items, &rep, &def) ||
		!parse_items(ctx, layout, &shape, data, len, layout->num_items, &values, rep, def, 0,
					 &used))
		goto done;
	if (layout->num_visible_items != values.num_values && layout->num_visible_items != 0)
	{
		lp_page_fail(ctx, LP_ERR_CORRUPT, "full-zip page has %llu visible items, not %u",
					 (unsigned long long) values.num_values, layout->num_visible_items);
		goto done;
	}
	ok = finish_items(ctx, layout, &values, rep, def, layout->num_items, page->num_rows, acc);

done:
	lp_free(data);
	lp_free(rep);
	lp_free(def);
	lp_flat_values_free(&values);
	return ok;
}

/*
 * Where the items of rows [start, start + count) lie in buffer 0: by
 * stride for fixed-width values, else through the repetition index
 * (buffer 1: num_items + 1 byte-packed offsets into buffer 0).
 */
static bool
item_bytes(const LpPageContext *ctx, LpInput *input, const LpPage *page,
		   const Lance__Encodings21__FullZipLayout *layout, const ItemShape *shape,
		   uint64_t start, uint64_t count, uint64_t *begin, uint64_t *end)
{
	uint64_t	width;
	uint8_t    *index;

	if (!shape->variable)
	{
		uint64_t	stride = shape->cw_bytes + shape->value_bytes;

		*begin = start * stride;
		*end = (start + count) * stride;
		return true;
	}
	width = page->buffers[1].size / ((uint64_t) layout->num_items + 1);
	if (page->buffers[1].size % ((uint64_t) layout->num_items + 1) != 0 ||
		(width != 1 && width != 2 && width != 4 && width != 8))
		return lp_page_fail(ctx, LP_ERR_CORRUPT,
							"full-zip repetition index of %llu bytes does not fit %u items",
							(unsigned long long) page->buffers[1].size, layout->num_items);
	if (!lp_read_page_buffer_range(ctx, input, page, 1, start * width, (count + 1) * width,
								   &index))
		return false;
	*begin = lp_le_uint(index, (uint32_t) width);
	*end = lp_le_uint(index + count * width, (uint32_t) width);
	lp_free(index);
	if (*begin > *end)
		return lp_page_fail(ctx, LP_ERR_CORRUPT, "full-zip repetition index decreases");
	return true;
}

bool
lp_take_fullzip_page(const LpPageContext *ctx, LpInput *input, const LpPage *page,
					 const Lance__Encodings21__FullZipLayout *layout,
					 const LpRowRange *ranges, size_t num_ranges, LpColumnLevels *dst,
					 uint64_t *rows_decoded)
{
	ItemShape	shape;
	uint16_t   *rep = NULL;
	uint16_t   *def = NULL;
	uint64_t	num_levels = 0;
	LpFlatValues		values;
	bool		ok = false;

	if (!item_shape(ctx, layout, &shape, &values))
		return false;
	/* Without lists every item is a row. */
	if (layout->num_items != page->num_rows)
	{
		lp_page_fail(ctx, LP_ERR_CORRUPT, "page of %llu rows holds %u items",
					 (unsigned long long) page->num_rows, layout->num_items);
		goto done;
	}
	for (size_t r = 0; r < num_ranges; r++)
		num_levels += ranges[r].count;
	if (!alloc_levels(ctx, &shape, num_levels, &rep, &def))
		goto done;
	num_levels = 0;
	for (size_t r = 0; r < num_ranges; r++)
	{
		uint64_t	begin = 0;
		uint64_t	end = 0;
		uint64_t	used;
		uint8_t    *data;
		bool		parsed;

		if (!item_bytes(ctx, input, page, layout, &shape, ranges[r].start, ranges[r].count,
						&begin, &end) ||
			!lp_read_page_buffer_range(ctx, input, page, 0, begin, end - begin, &data))
			goto done;
		parsed = parse_items(ctx, layout, &shape, data, end - begin, ranges[r].count, &values,
							 rep, def, num_levels, &used);
		lp_free(data);
		if (!parsed)
			goto done;
		if (used != end - begin)
		{
			lp_page_fail(ctx, LP_ERR_CORRUPT, "items of rows %llu to %llu take %llu bytes, not %llu",
						 (unsigned long long) ranges[r].start,
						 (unsigned long long) (ranges[r].start + ranges[r].count),
						 (unsigned long long) used, (unsigned long long) (end - begin));
			goto done;
		}
		num_levels += ranges[r].count;
	}
	ok = finish_items(ctx, layout, &values, rep, def, num_levels, num_levels, dst);
	if (ok)
		*rows_decoded += num_levels;

done:
	lp_free(rep);
	lp_free(def);
	lp_flat_values_free(&values);
	return ok;
}
