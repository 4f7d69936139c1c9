/*
 * lp_encode_constant.c - pages without value buffers: every value null (2.1's
 * AllNullLayout) and, from 2.2 on, every valid value equal (a constant
 * page) (lp_encode_page_internal.h).
 */
#include <math.h>
#include <string.h>

#include "base/lp_alloc.h"
#include "base/lp_bytes.h"
#include "base/lp_checked.h"
#include "codec/lp_bitpack.h"
#include "codec/lp_fsst.h"
#include "encode/lp_encode_page_internal.h"
#include "format/lp_encodings.h"
#include "format/lp_values.h"

/* ---- all null ------------------------------------------------------------- */

/* Levels as raw u16 into out (constant and all-null pages); nothing when all are 0. */
static bool
append_raw_levels(const LevelSeq *levels, uint64_t n, LpBuf *out)
{
	for (uint64_t i = 0; levels->v != NULL && i < n; i++)
	{
		uint8_t		level[2];

		lp_put_le16(level, levels->v[i]);
		if (!lp_buf_append(out, level, 2))
			return false;
	}
	return true;
}

/*
 * Every value null: a leaf without structs above it gets a page without
 * buffers (Lance's simple all-null page, the only kind its reader takes
 * for a single NULLABLE_ITEM layer); under structs, as Lance's complex
 * all-null pages, an empty repetition buffer and the definition levels as
 * raw u16.
 */
bool
lp_enc_all_null(const Levels *levels, LpEncodedPage *out, LpError *err)
{
	Lance__Encodings21__ConstantLayout layout = LANCE__ENCODINGS21__CONSTANT_LAYOUT__INIT;
	Lance__Encodings21__PageLayout page_layout = LANCE__ENCODINGS21__PAGE_LAYOUT__INIT;

	layout.n_layers = levels->num_layers;
	layout.layers = (Layer *) levels->layers;
	page_layout.layout_case = LANCE__ENCODINGS21__PAGE_LAYOUT__LAYOUT_CONSTANT_LAYOUT;
	page_layout.constant_layout = &layout;
	out->num_buffers = 0;
	if (levels->num_layers > 1)
	{
		if (!append_raw_levels(&levels->rep, levels->num_levels, &out->buffers[0]) ||
			!append_raw_levels(&levels->def, levels->num_levels, &out->buffers[1]))
			return lp_enc_no_memory(err);
		out->num_buffers = 2;
	}
	out->layout = "constant";
	return lp_enc_wrap_layout(&page_layout, out, err);
}

/* ---- constant (2.2+) ----------------------------------------------------- */

#define MAX_INLINE_VALUE_BYTES 32

/* Every valid value equals the first valid one (first_valid receives its index). */
bool
lp_enc_valid_values_equal(const LpLeafShape *shape, const LpPageValues *page, uint64_t *first_valid)
{
	const uint64_t *offsets = (const uint64_t *) page->offsets.data;
	uint32_t	bytes = lp_enc_bytes_per_value(shape);
	uint64_t	first = 0;

	while (first < page->num_values && lp_enc_is_null(page, first))
		first++;
	*first_valid = first;
	for (uint64_t i = first + 1; i < page->num_values; i++)
	{
		if (lp_enc_is_null(page, i))
			continue;
		switch (shape->kind)
		{
			case LP_LEAF_BOOL:
				if (lp_bit_get(page->bits.buf.data, i) != lp_bit_get(page->bits.buf.data, first))
					return false;
				break;
			case LP_LEAF_VARIABLE:
				if (offsets[i + 1] - offsets[i] != offsets[first + 1] - offsets[first] ||
					(offsets[i + 1] > offsets[i] &&
					 memcmp(page->data.data + offsets[i], page->data.data + offsets[first],
							offsets[i + 1] - offsets[i]) != 0))
					return false;
				break;
			default:
				if (memcmp(page->values.data + i * bytes, page->values.data + first * bytes, bytes) != 0)
					return false;
				break;
		}
	}
	return true;
}

/* The scalar as a value buffer: u32 number of Arrow buffers, u32 length of each, their bytes. */
static bool
scalar_value_buffer(const LpLeafShape *shape, const LpPageValues *page, uint64_t index, LpBuf *out)
{
	uint8_t		word[8];

	if (shape->kind == LP_LEAF_VARIABLE)
	{
		const uint64_t *offsets = (const uint64_t *) page->offsets.data;
		uint32_t	width = shape->offset_bits / 8;
		uint64_t	len = offsets[index + 1] - offsets[index];

		lp_put_le32(word, 2);
		if (!lp_buf_append(out, word, 4))
			return false;
		lp_put_le32(word, 2 * width);
		if (!lp_buf_append(out, word, 4))
			return false;
		lp_put_le32(word, (uint32_t) len);
		if (!lp_buf_append(out, word, 4) || !lp_buf_append_zeros(out, width))
			return false;
		lp_put_le_uint(word, width, len);
		return lp_buf_append(out, word, width) &&
			(len == 0 || lp_buf_append(out, page->data.data + offsets[index], len));
	}
	lp_put_le32(word, 1);
	if (!lp_buf_append(out, word, 4))
		return false;
	lp_put_le32(word, lp_enc_bytes_per_value(shape));
	return lp_buf_append(out, word, 4) &&
		lp_buf_append(out, page->values.data + index * lp_enc_bytes_per_value(shape), lp_enc_bytes_per_value(shape));
}

/*
 * A page whose valid values are all equal, as Lance 12 writes it from 2.2
 * on: the value inline (fixed widths up to 32 bytes) or in buffer 0, and,
 * when the page has nulls, an empty repetition buffer and the definition
 * levels as raw u16.
 */
bool
lp_enc_constant(const LpLeafShape *shape, const LpPageValues *page, const Levels *levels,
				uint64_t index, LpEncodedPage *out, LpError *err)
{
	Messages	m;
	Lance__Encodings21__PageLayout page_layout = LANCE__ENCODINGS21__PAGE_LAYOUT__INIT;
	Lance__Encodings21__ConstantLayout *layout = &m.constant;
	uint8_t		inline_value[MAX_INLINE_VALUE_BYTES];
	bool		inline_ok = shape->kind == LP_LEAF_BOOL ||
		(shape->kind == LP_LEAF_FIXED && lp_enc_bytes_per_value(shape) <= MAX_INLINE_VALUE_BYTES);
	uint32_t	next = 0;

	memset(&m, 0, sizeof(m));
	lance__encodings21__constant_layout__init(layout);
	layout->n_layers = levels->num_layers;
	layout->layers = (Layer *) levels->layers;
	if (inline_ok)
	{
		size_t		len = shape->kind == LP_LEAF_BOOL ? 1 : lp_enc_bytes_per_value(shape);

		if (shape->kind == LP_LEAF_BOOL)
			inline_value[0] = lp_bit_get(page->bits.buf.data, index) ? 1 : 0;
		else
			memcpy(inline_value, page->values.data + index * len, len);
		layout->inline_value_presence_case =
			LANCE__ENCODINGS21__CONSTANT_LAYOUT__INLINE_VALUE_PRESENCE_INLINE_VALUE;
		layout->inline_value.data = inline_value;
		layout->inline_value.len = len;
	}
	else if (!scalar_value_buffer(shape, page, index, &out->buffers[next++]))
		return lp_enc_no_memory(err);
	if (levels->def.v != NULL)
	{
		/* the repetition buffer stays empty: constant pages have no lists */
		if (!append_raw_levels(&levels->def, page->num_values, &out->buffers[next + 1]))
			return lp_enc_no_memory(err);
		next += 2;
	}
	out->num_buffers = next;
	page_layout.layout_case = LANCE__ENCODINGS21__PAGE_LAYOUT__LAYOUT_CONSTANT_LAYOUT;
	page_layout.constant_layout = layout;
	out->layout = "constant";
	return lp_enc_wrap_layout(&page_layout, out, err);
}

