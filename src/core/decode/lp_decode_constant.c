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
 *
 * A take from a page without list layers (one level per row) makes values
 * for the requested rows only; the page's levels (two bytes a row at most)
 * are read whole.  A page with lists is decoded whole by the caller.
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

/* A constant page: its value (NULL: null) and its levels, as read. */
typedef struct ConstantPage
{
	bool		variable;
	uint32_t	bits;
	uint8_t    *value_data;
	const uint8_t *value;
	uint64_t	value_len;
	uint16_t   *rep;
	uint16_t   *def;
	uint64_t	num_levels;
} ConstantPage;

static void
constant_page_free(ConstantPage *cp)
{
	lp_free(cp->value_data);
	lp_free(cp->rep);
	lp_free(cp->def);
	memset(cp, 0, sizeof(*cp));
}

static bool
read_constant_page(const LpPageContext *ctx, LpInput *input, const LpPage *page,
				   const Lance__Encodings21__ConstantLayout *layout, const LpType *leaf_type,
				   ConstantPage *cp)
{
	bool		has_inline = layout->inline_value_presence_case ==
		LANCE__ENCODINGS21__CONSTANT_LAYOUT__INLINE_VALUE_PRESENCE_INLINE_VALUE;
	bool		has_value_buffer = false;
	uint32_t	levels_index = 0;
	uint64_t	value_data_len = 0;
	uint64_t	rep_count = 0;
	uint64_t	def_count = 0;

	memset(cp, 0, sizeof(*cp));
	if (!lp_leaf_storage(leaf_type, &cp->variable, &cp->bits))
		return lp_page_unsupported(ctx, "constant page of a nested type");
	if (ctx->file->version >= LP_FILE_VERSION_2_2 && !has_inline &&
		(page->num_buffers == 1 || page->num_buffers == 3))
		has_value_buffer = true;
	if (page->num_buffers != 0 && page->num_buffers != 2 && !has_value_buffer)
		return lp_page_fail(ctx, LP_ERR_CORRUPT, "constant page has %u buffers", page->num_buffers);

	if (has_value_buffer)
	{
		if (!lp_read_page_buffer(ctx, input, page, 0, &cp->value_data, &value_data_len))
			return false;
		if (!parse_value_buffer(ctx, cp->value_data, value_data_len, cp->variable, cp->bits,
								&cp->value, &cp->value_len))
			goto fail;
		levels_index = 1;
	}
	else if (has_inline)
	{
		if (cp->variable || layout->inline_value.len != (cp->bits == 1 ? 1 : cp->bits / 8))
		{
			lp_page_fail(ctx, LP_ERR_CORRUPT, "inline constant has the wrong width");
			goto fail;
		}
		cp->value = layout->inline_value.data;
		cp->value_len = layout->inline_value.len;
	}
	if (page->num_buffers >= levels_index + 2)
	{
		if (!read_levels(ctx, input, page, levels_index, layout->rep_compression,
						 layout->num_rep_values, &cp->rep, &rep_count) ||
			!read_levels(ctx, input, page, levels_index + 1, layout->def_compression,
						 layout->num_def_values, &cp->def, &def_count))
			goto fail;
		if (cp->rep != NULL && cp->def != NULL && rep_count != def_count)
		{
			lp_page_fail(ctx, LP_ERR_CORRUPT, "constant page has %llu repetition and %llu definition levels",
						 (unsigned long long) rep_count, (unsigned long long) def_count);
			goto fail;
		}
	}
	if (page->num_rows > ((uint64_t) 1 << 32) || levels_count_too_large(rep_count, def_count))
	{
		lp_page_fail(ctx, LP_ERR_CORRUPT, "constant page claims %llu rows",
					 (unsigned long long) page->num_rows);
		goto fail;
	}
	cp->num_levels = cp->rep ? rep_count : def_count;
	return true;

fail:
	constant_page_free(cp);
	return false;
}

/*
 * Append num_rows rows of the page to acc, their levels rep/def (num_levels
 * of them; both NULL when the page has none).
 */
static bool
emit_rows(const LpPageContext *ctx, const Lance__Encodings21__ConstantLayout *layout,
		  const ConstantPage *cp, uint16_t *rep, uint16_t *def, uint64_t num_levels,
		  uint64_t num_rows, LpColumnLevels *acc)
{
	uint16_t	max_visible = lp_max_visible_def(layout->layers, layout->n_layers);
	uint16_t   *null_def = NULL;
	uint64_t	visible;
	LpPageLevels levels;
	LpFlatValues		values;
	bool		ok = false;

	memset(&values, 0, sizeof(values));
	levels.rep = rep;
	levels.def = def;
	levels.num_levels = num_levels;
	if (rep == NULL && def == NULL)
	{
		visible = num_rows;
		/* Without levels, an all-null page is null at its innermost nullable layer. */
		if (cp->value == NULL)
		{
			null_def = lp_alloc_array(num_rows + 1, sizeof(uint16_t));
			if (null_def == NULL)
				return lp_page_no_memory(ctx);
			for (uint64_t i = 0; i < num_rows; i++)
				null_def[i] = 1;
			levels.def = null_def;
			levels.num_levels = num_rows;
		}
	}
	else
	{
		visible = 0;
		for (uint64_t i = 0; i < num_levels; i++)
			if (def == NULL || def[i] <= max_visible)
				visible++;
	}

	if (cp->variable)
	{
		if (!lp_flat_values_init_variable(&values))
		{
			lp_page_no_memory(ctx);
			goto done;
		}
	}
	else
		lp_flat_values_init_fixed(&values, cp->bits);
	if (!lp_flat_values_append_repeated(&values, cp->value, cp->value ? cp->value_len : 0, visible))
	{
		lp_page_no_memory(ctx);
		goto done;
	}
	if (!lp_repdef_unravel(ctx, layout->layers, layout->n_layers, &levels, visible,
						   num_rows, acc))
		goto done;
	if (!lp_flat_values_merge(ctx, &acc->values, &values))
		goto done;
	ok = true;

done:
	lp_free(null_def);
	lp_flat_values_free(&values);
	return ok;
}

bool
lp_decode_constant_page(const LpPageContext *ctx, LpInput *input, const LpPage *page,
						const Lance__Encodings21__ConstantLayout *layout,
						const LpType *leaf_type, LpColumnLevels *acc)
{
	ConstantPage cp;
	bool		ok;

	if (!read_constant_page(ctx, input, page, layout, leaf_type, &cp))
		return false;
	ok = emit_rows(ctx, layout, &cp, cp.rep, cp.def, cp.num_levels, page->num_rows, acc);
	constant_page_free(&cp);
	return ok;
}

/* The levels of the rows of ranges (one level per row) into a new array. */
static bool
select_levels(const LpPageContext *ctx, const uint16_t *levels, const LpRowRange *ranges,
			  size_t num_ranges, uint64_t num_rows, uint16_t **selected)
{
	uint64_t	n = 0;

	*selected = NULL;
	if (levels == NULL)
		return true;
	*selected = lp_alloc_array(num_rows + 1, sizeof(uint16_t));
	if (*selected == NULL)
		return lp_page_no_memory(ctx);
	for (size_t r = 0; r < num_ranges; r++)
	{
		memcpy(*selected + n, levels + ranges[r].start, ranges[r].count * sizeof(uint16_t));
		n += ranges[r].count;
	}
	return true;
}

bool
lp_take_constant_page(const LpPageContext *ctx, LpInput *input, const LpPage *page,
					  const Lance__Encodings21__ConstantLayout *layout,
					  const LpType *leaf_type, const LpRowRange *ranges, size_t num_ranges,
					  LpColumnLevels *dst, uint64_t *rows_decoded)
{
	ConstantPage cp;
	uint16_t   *rep = NULL;
	uint16_t   *def = NULL;
	uint64_t	num_rows = 0;
	bool		ok;

	if (!read_constant_page(ctx, input, page, layout, leaf_type, &cp))
		return false;
	for (size_t r = 0; r < num_ranges; r++)
		num_rows += ranges[r].count;
	/* Without lists every level is a row. */
	if ((cp.rep != NULL || cp.def != NULL) && cp.num_levels != page->num_rows)
		ok = lp_page_fail(ctx, LP_ERR_CORRUPT, "page of %llu rows has %llu levels",
						  (unsigned long long) page->num_rows,
						  (unsigned long long) cp.num_levels);
	else
		ok = select_levels(ctx, cp.rep, ranges, num_ranges, num_rows, &rep) &&
			select_levels(ctx, cp.def, ranges, num_ranges, num_rows, &def) &&
			emit_rows(ctx, layout, &cp, rep, def, rep || def ? num_rows : 0, num_rows, dst);
	if (ok)
		*rows_decoded += num_rows;
	lp_free(rep);
	lp_free(def);
	constant_page_free(&cp);
	return ok;
}
