/*
 * lp_decode_constant.c - pages where every visible value is null (2.1's
 * AllNullLayout) or, from 2.2 on, equal (ConstantLayout, the same field of
 * PageLayout).  lance-format.md §4.2.
 *
 * Buffers: with an inline value (at most 32 bytes, fixed-width types) or
 * none at all, buffers 0 and 1 are the repetition and definition levels
 * when the page has any; without an inline value, buffer 0 may instead
 * hold the value (u32 number of Arrow buffers, u32 length of each, then
 * their bytes), followed by the levels.  Levels are raw u16 unless
 * rep_compression / def_compression say otherwise.
 */
#include <string.h>

#include "base/lp_alloc.h"
#include "base/lp_checked.h"
#include "decode/lp_decode_internal.h"

/* Levels from buffer index (raw u16, or compressed); NULL when empty. */
static bool
read_levels(const LpPageContext *ctx, LpInput *input, const LpPage *page, uint32_t index,
			const LpCompressive *compression, uint64_t num_values, uint16_t **levels,
			uint64_t *count)
{
	uint8_t    *data;
	uint64_t	len;
	bool		ok;

	*levels = NULL;
	*count = 0;
	if (!lp_read_page_buffer(ctx, input, page, index, &data, &len))
		return false;
	if (data == NULL)
		return true;
	if (compression != NULL)
	{
		ok = lp_levels_decompress(ctx, compression, data, len, num_values, levels);
		lp_free(data);
		*count = num_values;
		return ok;
	}
	if (len % 2 != 0)
	{
		lp_free(data);
		return lp_page_fail(ctx, LP_ERR_CORRUPT, "levels buffer has an odd length");
	}
	*levels = (uint16_t *) data;
	*count = len / 2;
	return true;
}

static bool
levels_count_too_large(uint64_t rep_count, uint64_t def_count)
{
	return rep_count > ((uint64_t) 1 << 32) || def_count > ((uint64_t) 1 << 32);
}

/*
 * The scalar of a value buffer: one Arrow buffer for fixed width, offsets
 * and bytes for variable width.
 */
static bool
parse_value_buffer(const LpPageContext *ctx, const uint8_t *data, uint64_t len,
				   bool variable, uint32_t bits, const uint8_t **value, uint64_t *value_len)
{
	uint64_t	num_buffers;
	uint64_t	pos;
	uint64_t	lengths[2];
	uint64_t	starts[2];

	if (len < 4)
		return lp_page_fail(ctx, LP_ERR_CORRUPT, "constant value buffer is too short");
	num_buffers = lp_le32(data);
	if (num_buffers != (variable ? 2u : 1u) || len < 4 + 4 * num_buffers)
		return lp_page_fail(ctx, LP_ERR_CORRUPT, "constant value buffer has %llu parts",
							(unsigned long long) num_buffers);
	pos = 4 + 4 * num_buffers;
	for (uint64_t i = 0; i < num_buffers; i++)
	{
		lengths[i] = lp_le32(data + 4 + 4 * i);
		if (lengths[i] > len - pos)
			return lp_page_fail(ctx, LP_ERR_CORRUPT, "constant value buffer is truncated");
		starts[i] = pos;
		pos += lengths[i];
	}
	if (pos != len)
		return lp_page_fail(ctx, LP_ERR_CORRUPT, "constant value buffer has trailing bytes");
	if (!variable)
	{
		if (lengths[0] != (bits == 1 ? 1 : bits / 8))
			return lp_page_fail(ctx, LP_ERR_CORRUPT, "constant value has the wrong width");
		*value = data + starts[0];
		*value_len = lengths[0];
		return true;
	}
	else
	{
		/* i32 offsets for string/binary, i64 for the large kinds */
		uint32_t	width = lengths[0] == 8 ? 4 : lengths[0] == 16 ? 8 : 0;
		uint64_t	begin;
		uint64_t	end;

		if (width == 0)
			return lp_page_fail(ctx, LP_ERR_CORRUPT, "constant value has bad offsets");
		begin = lp_le_uint(data + starts[0], width);
		end = lp_le_uint(data + starts[0] + width, width);
		if (begin > end || end > lengths[1])
			return lp_page_fail(ctx, LP_ERR_CORRUPT, "constant value offsets are out of range");
		*value = data + starts[1] + begin;
		*value_len = end - begin;
		return true;
	}
}

bool
lp_decode_constant_page(const LpPageContext *ctx, LpInput *input, const LpPage *page,
						const Lance__Encodings21__ConstantLayout *layout,
						const LpType *leaf_type, LpColumnLevels *acc)
{
	bool		has_inline = layout->inline_value_presence_case ==
		LANCE__ENCODINGS21__CONSTANT_LAYOUT__INLINE_VALUE_PRESENCE_INLINE_VALUE;
	bool		has_value_buffer = false;
	uint32_t	levels_index = 0;
	bool		variable;
	uint32_t	bits;
	uint8_t    *value_data = NULL;
	uint64_t	value_data_len = 0;
	const uint8_t *value = NULL;
	uint64_t	value_len = 0;
	uint16_t   *rep = NULL;
	uint16_t   *def = NULL;
	uint64_t	rep_count = 0;
	uint64_t	def_count = 0;
	uint64_t	visible;
	uint16_t	max_visible;
	LpPageLevels levels;
	LpBlock		values;
	bool		ok = false;

	memset(&values, 0, sizeof(values));
	if (!lp_leaf_storage(leaf_type, &variable, &bits))
		return lp_page_unsupported(ctx, "constant page of a nested type");
	if (ctx->file->version >= LP_FILE_VERSION_2_2 && !has_inline &&
		(page->num_buffers == 1 || page->num_buffers == 3))
		has_value_buffer = true;
	if (page->num_buffers != 0 && page->num_buffers != 2 && !has_value_buffer)
		return lp_page_fail(ctx, LP_ERR_CORRUPT, "constant page has %u buffers", page->num_buffers);

	if (has_value_buffer)
	{
		if (!lp_read_page_buffer(ctx, input, page, 0, &value_data, &value_data_len))
			return false;
		if (!parse_value_buffer(ctx, value_data, value_data_len, variable, bits, &value,
								&value_len))
			goto done;
		levels_index = 1;
	}
	else if (has_inline)
	{
		if (variable || layout->inline_value.len != (bits == 1 ? 1 : bits / 8))
		{
			lp_page_fail(ctx, LP_ERR_CORRUPT, "inline constant has the wrong width");
			goto done;
		}
		value = layout->inline_value.data;
		value_len = layout->inline_value.len;
	}
	if (page->num_buffers >= levels_index + 2)
	{
		if (!read_levels(ctx, input, page, levels_index, layout->rep_compression,
						 layout->num_rep_values, &rep, &rep_count) ||
			!read_levels(ctx, input, page, levels_index + 1, layout->def_compression,
						 layout->num_def_values, &def, &def_count))
			goto done;
		if (rep != NULL && def != NULL && rep_count != def_count)
		{
			lp_page_fail(ctx, LP_ERR_CORRUPT, "constant page has %llu repetition and %llu definition levels",
						 (unsigned long long) rep_count, (unsigned long long) def_count);
			goto done;
		}
	}

	if (page->num_rows > ((uint64_t) 1 << 32) || levels_count_too_large(rep_count, def_count))
	{
		lp_page_fail(ctx, LP_ERR_CORRUPT, "constant page claims %llu rows",
					 (unsigned long long) page->num_rows);
		goto done;
	}
	max_visible = lp_max_visible_def(layout->layers, layout->n_layers);
	levels.rep = rep;
	levels.def = def;
	levels.num_levels = rep ? rep_count : def_count;
	if (rep == NULL && def == NULL)
	{
		visible = page->num_rows;
		/* Without levels, an all-null page is null at its innermost nullable layer. */
		if (value == NULL)
		{
			def = lp_alloc_array(page->num_rows + 1, sizeof(uint16_t));
			if (def == NULL)
			{
				lp_page_no_memory(ctx);
				goto done;
			}
			for (uint64_t i = 0; i < page->num_rows; i++)
				def[i] = 1;
			levels.def = def;
			levels.num_levels = page->num_rows;
		}
	}
	else
	{
		visible = 0;
		for (uint64_t i = 0; i < levels.num_levels; i++)
			if (def == NULL || def[i] <= max_visible)
				visible++;
	}

	if (variable)
	{
		if (!lp_block_init_variable(&values))
		{
			lp_page_no_memory(ctx);
			goto done;
		}
	}
	else
		lp_block_init_fixed(&values, bits);
	if (!lp_block_append_repeated(&values, value, value ? value_len : 0, visible))
	{
		lp_page_no_memory(ctx);
		goto done;
	}
	if (!lp_repdef_unravel(ctx, layout->layers, layout->n_layers, &levels, visible,
						   page->num_rows, acc))
		goto done;
	if (!lp_block_merge(ctx, &acc->values, &values))
		goto done;
	ok = true;

done:
	lp_free(value_data);
	lp_free(rep);
	lp_free(def);
	lp_block_free(&values);
	return ok;
}
