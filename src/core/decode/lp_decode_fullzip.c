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

bool
lp_decode_fullzip_page(const LpPageContext *ctx, LpInput *input, const LpPage *page,
					   const Lance__Encodings21__FullZipLayout *layout,
					   LpColumnLevels *acc)
{
	uint8_t    *data = NULL;
	uint64_t	len;
	uint64_t	pos = 0;
	uint32_t	cw_bytes;
	uint16_t	max_visible;
	bool		has_rep = layout->bits_rep > 0;
	bool		has_def = layout->bits_def > 0;
	bool		variable;
	uint32_t	value_bytes = 0;
	uint32_t	length_bytes = 0;
	uint16_t   *rep = NULL;
	uint16_t   *def = NULL;
	LpBlock		values;
	LpPageLevels levels;
	bool		ok = false;

	memset(&values, 0, sizeof(values));
	if (layout->bits_rep > 16 || layout->bits_def > 16)
		return lp_page_fail(ctx, LP_ERR_CORRUPT, "full-zip levels are too wide");
	cw_bytes = control_word_bytes(layout->bits_rep + layout->bits_def);
	max_visible = lp_max_visible_def(layout->layers, layout->n_layers);
	switch (layout->details_case)
	{
		case LANCE__ENCODINGS21__FULL_ZIP_LAYOUT__DETAILS_BITS_PER_VALUE:
			if (layout->bits_per_value == 0 || layout->bits_per_value % 8 != 0)
				return lp_page_unsupported(ctx, "full-zip values that are not whole bytes");
			variable = false;
			value_bytes = layout->bits_per_value / 8;
			lp_block_init_fixed(&values, layout->bits_per_value);
			break;
		case LANCE__ENCODINGS21__FULL_ZIP_LAYOUT__DETAILS_BITS_PER_OFFSET:
			if (layout->bits_per_offset != 32 && layout->bits_per_offset != 64)
				return lp_page_fail(ctx, LP_ERR_CORRUPT, "full-zip lengths are %u bits wide",
									layout->bits_per_offset);
			variable = true;
			length_bytes = layout->bits_per_offset / 8;
			if (!lp_block_init_variable(&values))
				return lp_page_no_memory(ctx);
			break;
		default:
			return lp_page_fail(ctx, LP_ERR_CORRUPT, "full-zip page has no value width");
	}
	if (!lp_read_page_buffer(ctx, input, page, 0, &data, &len))
		goto done;
	/* Every level takes at least a control word or a value byte. */
	if (cw_bytes + value_bytes > 0 && layout->num_items > len / (cw_bytes + value_bytes))
	{
		lp_page_fail(ctx, LP_ERR_CORRUPT, "full-zip buffer is too short for %u items",
					 layout->num_items);
		goto done;
	}
	if (cw_bytes + value_bytes == 0 && layout->num_items > 0 && !variable)
	{
		lp_page_fail(ctx, LP_ERR_CORRUPT, "full-zip page has neither levels nor values");
		goto done;
	}
	if (has_rep)
		rep = lp_alloc_array(layout->num_items + 1, sizeof(uint16_t));
	if (has_def)
		def = lp_alloc_array(layout->num_items + 1, sizeof(uint16_t));
	if ((has_rep && rep == NULL) || (has_def && def == NULL))
	{
		lp_page_no_memory(ctx);
		goto done;
	}

	for (uint32_t i = 0; i < layout->num_items; i++)
	{
		uint64_t	word = 0;
		uint16_t	rep_level = 0;
		uint16_t	def_level = 0;
		bool		visible = true;
		bool		valid = true;

		if (cw_bytes > len - pos)
			goto short_buffer;
		if (cw_bytes > 0)
			word = lp_le_uint(data + pos, cw_bytes);
		pos += cw_bytes;
		if (has_def)
		{
			def_level = (uint16_t) (word & ((1u << layout->bits_def) - 1));
			def[i] = def_level;
			valid = def_level == 0;
		}
		if (has_rep)
		{
			rep_level = (uint16_t) ((word >> layout->bits_def) & ((1u << layout->bits_rep) - 1));
			rep[i] = rep_level;
		}
		if (has_rep && has_def)
			visible = def_level <= max_visible;
		if (!visible)
			continue;
		if (!variable)
		{
			if (value_bytes > len - pos)
				goto short_buffer;
			if (!lp_buf_append(&values.data, data + pos, value_bytes))
				goto no_memory;
			pos += value_bytes;
			values.num_values++;
		}
		else
		{
			uint64_t	value_len = 0;

			if (valid)
			{
				if (length_bytes > len - pos)
					goto short_buffer;
				value_len = lp_le_uint(data + pos, length_bytes);
				pos += length_bytes;
				if (value_len > len - pos)
					goto short_buffer;
			}
			if (!lp_block_append_repeated(&values, data + pos, value_len, 1))
				goto no_memory;
			pos += value_len;
		}
	}
	if (layout->num_visible_items != values.num_values && layout->num_visible_items != 0)
	{
		lp_page_fail(ctx, LP_ERR_CORRUPT, "full-zip page has %llu visible items, not %u",
					 (unsigned long long) values.num_values, layout->num_visible_items);
		goto done;
	}
	if (!lp_per_value_decompress(ctx, layout->value_compression, &values))
		goto done;

	levels.num_levels = layout->num_items;
	levels.rep = rep;
	levels.def = def;
	if (!lp_repdef_unravel(ctx, layout->layers, layout->n_layers, &levels, values.num_values,
						   page->num_rows, acc))
		goto done;
	if (!lp_block_merge(ctx, &acc->values, &values))
		goto done;
	ok = true;
	goto done;

short_buffer:
	lp_page_fail(ctx, LP_ERR_CORRUPT, "full-zip buffer ends inside an item");
	goto done;
no_memory:
	lp_page_no_memory(ctx);
done:
	lp_free(data);
	lp_free(rep);
	lp_free(def);
	lp_block_free(&values);
	return ok;
}
