/*
 * lp_encode_fullzip.c - full-zip pages: each value after its control word, with a
 * repetition index for variable widths and lists (lp_encode_page_internal.h).
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

/* ---- full-zip ------------------------------------------------------------- */

static uint32_t
bytepack_width(uint64_t max_value)
{
	if (max_value <= UINT8_MAX)
		return 1;
	if (max_value <= UINT16_MAX)
		return 2;
	if (max_value <= UINT32_MAX)
		return 4;
	return 8;
}

bool
lp_enc_fullzip(const LpLeafShape *shape, const LpPageValues *page, const Levels *levels,
			   const Strings *strings, LpEncodedPage *out, LpError *err)
{
	Messages	m;
	Lance__Encodings21__FullZipLayout layout = LANCE__ENCODINGS21__FULL_ZIP_LAYOUT__INIT;
	Lance__Encodings21__PageLayout page_layout = LANCE__ENCODINGS21__PAGE_LAYOUT__INIT;
	bool		has_def = levels->def.v != NULL;
	bool		has_rep = levels->rep.v != NULL;
	bool		variable = shape->kind == LP_LEAF_VARIABLE;
	uint64_t	n = page->num_values;
	uint64_t	num_levels = levels->num_levels;
	LpBuf	   *zipped = &out->buffers[0];
	LpBuf	   *index = &out->buffers[1];
	bool		item_nulls = lp_enc_has_item_nulls(shape, page);
	uint32_t	validity_bytes = item_nulls ? (shape->dimension + 7) / 8 : 0;
	uint32_t	width = variable ? shape->offset_bits / 8 : lp_enc_bytes_per_value(shape) + validity_bytes;
	uint32_t	control_bits = levels->rep.width + levels->def.width;
	uint32_t	control_bytes = control_bits == 0 ? 0 : control_bits <= 8 ? 1 : control_bits <= 16 ? 2 : 4;
	uint32_t	index_width = 0;
	uint64_t	i = 0;			/* the value of the next visible level */

	memset(&m, 0, sizeof(m));
	if (num_levels > UINT32_MAX)
		return lp_fail(err, LP_ERR_INTERNAL, "full-zip page of %llu levels",
					   (unsigned long long) num_levels);
	if (variable || has_rep)
	{
		/*
		 * Lance sizes the repetition index (an entry per row, the zipped
		 * bytes before it) by an upper bound of the zipped bytes.
		 */
		uint64_t	bound = (variable ? strings->data_len : page->values.len) +
			(uint64_t) control_bytes * num_levels + (uint64_t) (variable ? width : validity_bytes) * n;

		index_width = bytepack_width(bound);
	}

	/*
	 * The zipped bytes at most, reserved at once: grown by doubling from
	 * nothing, a page of wide values was copied again as often.
	 */
	if (!lp_buf_reserve(zipped, (uint64_t) control_bytes * num_levels + (uint64_t) width * n +
						(variable ? strings->data_len : 0)))
		return lp_enc_no_memory(err);
	for (uint64_t l = 0; l < num_levels; l++)
	{
		bool		null;
		uint8_t		word[8];

		if ((variable && !has_rep) || (has_rep && levels->rep.v[l] == levels->rep.max))
		{
			lp_put_le_uint(word, index_width, zipped->len);
			if (!lp_buf_append(index, word, index_width))
				return lp_enc_no_memory(err);
		}
		if (control_bytes > 0)
		{
			uint32_t	control = (has_rep ? (uint32_t) levels->rep.v[l] << levels->def.width : 0) |
				(has_def ? levels->def.v[l] : 0);

			lp_put_le_uint(word, control_bytes, control);
			if (!lp_buf_append(zipped, word, control_bytes))
				return lp_enc_no_memory(err);
		}
		if (has_def && levels->def.v[l] > levels->max_visible)
			continue;			/* a null or empty list: no value */
		null = lp_enc_is_null(page, i);
		if (!variable)
		{
			if (item_nulls)
			{
				LpBits		bits = {0};
				bool		ok = lp_bits_append_bitmap(&bits, page->item_validity.buf.data,
													   i * shape->dimension, shape->dimension) &&
					lp_buf_append(zipped, bits.buf.data, validity_bytes);

				lp_buf_free(&bits.buf);
				if (!ok)
					return lp_enc_no_memory(err);
			}
			if (!lp_buf_append(zipped, page->values.data + i * (width - validity_bytes),
							   width - validity_bytes))
				return lp_enc_no_memory(err);
		}
		else if (!null)
		{
			const uint64_t *offsets = strings->offsets;
			uint64_t	len = offsets[i + 1] - offsets[i];

			lp_put_le_uint(word, width, len);
			if (!lp_buf_append(zipped, word, width) ||
				(len > 0 && !lp_buf_append(zipped, strings->data + offsets[i], len)))
				return lp_enc_no_memory(err);
		}
		i++;
	}
	out->num_buffers = 1;
	if (variable || has_rep)
	{
		uint8_t		word[8];

		lp_put_le_uint(word, index_width, zipped->len);
		if (!lp_buf_append(index, word, index_width))
			return lp_enc_no_memory(err);
		out->num_buffers = 2;
	}

	layout.bits_def = levels->def.width;
	if (variable)
	{
		layout.details_case = LANCE__ENCODINGS21__FULL_ZIP_LAYOUT__DETAILS_BITS_PER_OFFSET;
		layout.bits_per_offset = shape->offset_bits;
		layout.value_compression = shape->blob_descriptor ? lp_enc_blob_descriptor(&m) :
			lp_enc_strings(&m, strings, shape->offset_bits);
	}
	else
	{
		layout.details_case = LANCE__ENCODINGS21__FULL_ZIP_LAYOUT__DETAILS_BITS_PER_VALUE;
		layout.bits_per_value = width * 8;
		layout.value_compression = shape->kind == LP_LEAF_FIXED_SIZE_LIST ?
			lp_enc_fixed_size_list(&m, shape->dimension, shape->bits) :
			lp_enc_flat(&m, shape->bits);
		if (item_nulls)
			layout.value_compression->fixed_size_list->has_validity = true;
	}
	layout.bits_rep = levels->rep.width;
	layout.num_items = (uint32_t) num_levels;
	layout.num_visible_items = (uint32_t) n;
	layout.n_layers = levels->num_layers;
	layout.layers = (Layer *) levels->layers;
	page_layout.layout_case = LANCE__ENCODINGS21__PAGE_LAYOUT__LAYOUT_FULL_ZIP_LAYOUT;
	page_layout.full_zip_layout = &layout;
	out->layout = "full_zip";
	return lp_enc_wrap_layout(&page_layout, out, err);
}

