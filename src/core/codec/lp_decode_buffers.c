/*
 * lp_decode_buffers.c - growable buffers, bitmaps and value blocks used by
 * the page decoders, the generic block operations they share (dictionary
 * gather, FSST expansion), reading page buffers, and the messages they fail
 * with.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/lp_alloc.h"
#include "base/lp_bytes.h"
#include "base/lp_checked.h"
#include "codec/lp_decode_buffers.h"
#include "codec/lp_fsst.h"
#include "format/lp_values.h"

bool
lp_buf_grow(LpBuf *buf, uint64_t extra)
{
	uint64_t	needed;
	uint64_t	cap;
	uint8_t    *data;

	if (!lp_add_u64(buf->len, extra, &needed) || needed > SIZE_MAX / 2)
		return false;
	if (needed <= buf->cap)
		return true;
	cap = buf->cap < 64 ? 64 : buf->cap;
	while (cap < needed)
		cap *= 2;
	/* only the bytes in use are kept (the allocator may resize in place) */
	data = buf->len > 0 ? lp_realloc(buf->data, (size_t) buf->len, (size_t) cap) : NULL;
	if (data == NULL)
	{
		if (buf->len > 0)
			return false;
		data = lp_alloc((size_t) cap);
		if (data == NULL)
			return false;
		lp_free(buf->data);
	}
	buf->data = data;
	buf->cap = cap;
	return true;
}

bool
lp_buf_append(LpBuf *buf, const void *bytes, uint64_t len)
{
	if (len == 0)
		return true;
	if (!lp_buf_reserve(buf, len))
		return false;
	memcpy(buf->data + buf->len, bytes, (size_t) len);
	buf->len += len;
	return true;
}

bool
lp_buf_append_zeros(LpBuf *buf, uint64_t len)
{
	if (len == 0)
		return true;
	if (!lp_buf_reserve(buf, len))
		return false;
	memset(buf->data + buf->len, 0, (size_t) len);
	buf->len += len;
	return true;
}

void
lp_buf_free(LpBuf *buf)
{
	lp_free(buf->data);
	memset(buf, 0, sizeof(*buf));
}

uint8_t *
lp_buf_take(LpBuf *buf)
{
	uint8_t    *data = buf->data;

	memset(buf, 0, sizeof(*buf));
	return data;
}

/* Make room for count more bits (zeroed); *total is the new bit count. */
static bool
bits_grow(LpBits *bits, uint64_t count, uint64_t *total)
{
	uint64_t	bytes_needed;

	if (!lp_add_u64(bits->num_bits, count, total))
		return false;
	bytes_needed = (*total + 7) / 8;
	return bytes_needed <= bits->buf.len ||
		lp_buf_append_zeros(&bits->buf, bytes_needed - bits->buf.len);
}

bool
lp_bits_append_n(LpBits *bits, bool value, uint64_t count)
{
	uint64_t	total;

	if (!bits_grow(bits, count, &total))
		return false;
	if (value)
	{
		uint64_t	i = bits->num_bits;

		while (i < total && (i & 7) != 0)
			lp_bit_set(bits->buf.data, i++, true);
		if (total - i >= 8)
		{
			memset(bits->buf.data + i / 8, 0xff, (size_t) ((total - i) / 8));
			i += (total - i) / 8 * 8;
		}
		while (i < total)
			lp_bit_set(bits->buf.data, i++, true);
	}
	else
		bits->num_unset += count;
	bits->num_bits = total;
	return true;
}

bool
lp_bits_append(LpBits *bits, bool value)
{
	return lp_bits_append_n(bits, value, 1);
}

bool
lp_bits_append_bitmap(LpBits *bits, const uint8_t *bitmap, uint64_t start,
					  uint64_t count)
{
	uint64_t	total;

	if (!bits_grow(bits, count, &total))
		return false;
	for (uint64_t i = 0; i < count; i++)
	{
		bool		value = lp_bit_get(bitmap, start + i);

		if (value)
			lp_bit_set(bits->buf.data, bits->num_bits + i, true);
		else
			bits->num_unset++;
	}
	bits->num_bits = total;
	return true;
}

void
lp_flat_values_init_fixed(LpFlatValues *block, uint32_t bits_per_value)
{
	memset(block, 0, sizeof(*block));
	block->bits_per_value = bits_per_value;
}

bool
lp_flat_values_init_variable(LpFlatValues *block)
{
	memset(block, 0, sizeof(*block));
	block->variable = true;
	return lp_buf_append_u64(&block->offsets, 0);
}

void
lp_flat_values_free(LpFlatValues *block)
{
	lp_buf_free(&block->data);
	lp_buf_free(&block->offsets);
	lp_buf_free(&block->item_validity.buf);
	block->num_values = 0;
	block->has_item_validity = false;
	memset(&block->item_validity, 0, sizeof(block->item_validity));
}

bool
lp_flat_values_add_item_validity(LpFlatValues *block, uint32_t items_per_value)
{
	uint64_t	items;

	if (block->has_item_validity)
		return block->items_per_value == items_per_value;
	if (!lp_mul_u64(block->num_values, items_per_value, &items))
		return false;
	block->has_item_validity = true;
	block->items_per_value = items_per_value;
	memset(&block->item_validity, 0, sizeof(block->item_validity));
	return lp_bits_append_n(&block->item_validity, true, items);
}

/* Append count bits of bitmap (from bit start) to the packed data of a block. */
static bool
append_packed_bits(LpFlatValues *block, const uint8_t *bitmap, uint64_t start, uint64_t count)
{
	LpBits		bits;
	bool		ok;

	bits.buf = block->data;
	bits.num_bits = block->num_values * block->bits_per_value;
	bits.num_unset = 0;
	ok = bitmap == NULL ? lp_bits_append_n(&bits, false, count) :
		lp_bits_append_bitmap(&bits, bitmap, start, count);
	block->data = bits.buf;
	return ok;
}

bool
lp_flat_values_append(LpFlatValues *dst, const LpFlatValues *src)
{
	return lp_flat_values_append_range(dst, src, 0, src->num_values);
}

bool
lp_flat_values_append_range(LpFlatValues *dst, const LpFlatValues *src, uint64_t start, uint64_t count)
{
	uint64_t	total;
	uint64_t	end;

	if (dst->variable != src->variable ||
		(!dst->variable && dst->bits_per_value != src->bits_per_value))
		return false;
	if (!lp_add_u64(start, count, &end) || end > src->num_values ||
		!lp_add_u64(dst->num_values, count, &total))
		return false;
	/* nothing to append, and src may have no buffer to point into */
	if (count == 0)
		return true;
	if (src->has_item_validity && !lp_flat_values_add_item_validity(dst, src->items_per_value))
		return false;
	if (dst->has_item_validity &&
		!(src->has_item_validity ?
		  lp_bits_append_bitmap(&dst->item_validity, src->item_validity.buf.data,
								start * src->items_per_value, count * src->items_per_value) :
		  lp_bits_append_n(&dst->item_validity, true, count * dst->items_per_value)))
		return false;
	if (dst->variable)
	{
		const uint64_t *offsets = lp_flat_values_offsets(src);
		uint64_t	base = dst->data.len;

		if (!lp_buf_reserve(&dst->offsets, count * 8))
			return false;
		for (uint64_t i = start + 1; i <= end; i++)
			if (!lp_buf_append_u64(&dst->offsets, base + offsets[i] - offsets[start]))
				return false;
		/* strings that are all empty have no bytes */
		if (offsets[end] > offsets[start] &&
			!lp_buf_append(&dst->data, src->data.data + offsets[start],
						   offsets[end] - offsets[start]))
			return false;
	}
	else if (dst->bits_per_value % 8 != 0)
	{
		if (!append_packed_bits(dst, src->data.data, start * dst->bits_per_value,
								count * dst->bits_per_value))
			return false;
	}
	else if (!lp_buf_append(&dst->data, src->data.data + start * (dst->bits_per_value / 8),
							count * (dst->bits_per_value / 8)))
		return false;
	dst->num_values = total;
	return true;
}

static bool
blocks_have_same_shape(const LpFlatValues *a, const LpFlatValues *b)
{
	return a->variable == b->variable &&
		(a->variable || a->bits_per_value == b->bits_per_value) &&
		(!a->has_item_validity || !b->has_item_validity ||
		 a->items_per_value == b->items_per_value);
}

bool
lp_flat_values_merge(const LpPageContext *ctx, LpFlatValues *dst, LpFlatValues *src)
{
	bool		ok = true;

	if (dst->num_values == 0)
	{
		lp_flat_values_free(dst);
		*dst = *src;
		memset(src, 0, sizeof(*src));
		return true;
	}
	if (src->num_values > 0)
	{
		/* Shapes first: a failed append past this point is out of memory. */
		if (!blocks_have_same_shape(dst, src))
			ok = lp_page_fail(ctx, LP_ERR_CORRUPT,
							  "values decode to a different width than the values before them");
		else if (!lp_flat_values_append(dst, src))
			ok = lp_page_no_memory(ctx);
	}
	lp_flat_values_free(src);
	return ok;
}

bool
lp_flat_values_append_repeated(LpFlatValues *block, const uint8_t *value, uint64_t value_len,
						 uint64_t count)
{
	/* Repeated values (nulls, constants) have valid items. */
	if (block->has_item_validity &&
		!lp_bits_append_n(&block->item_validity, true, count * block->items_per_value))
		return false;
	if (!block->variable && block->bits_per_value % 8 != 0)
	{
		bool		ok = true;

		if (value_len == 0 || block->bits_per_value == 1)
		{
			LpBits		bits;

			/* one bit repeated: all zero or all one */
			bits.buf = block->data;
			bits.num_bits = block->num_values * block->bits_per_value;
			bits.num_unset = 0;
			ok = lp_bits_append_n(&bits, value_len > 0 && (value[0] & 1),
								  count * block->bits_per_value);
			block->data = bits.buf;
		}
		else if (value_len * 8 < block->bits_per_value)
			return false;
		else
			for (uint64_t i = 0; i < count && ok; i++)
			{
				ok = append_packed_bits(block, value, 0, block->bits_per_value);
				block->num_values++;
			}
		if (!ok)
			return false;
		if (value_len == 0 || block->bits_per_value == 1)
			block->num_values += count;
		return true;
	}
	for (uint64_t i = 0; i < count; i++)
	{
		if (block->variable)
		{
			if (!lp_buf_append(&block->data, value, value_len) ||
				!lp_buf_append_u64(&block->offsets, block->data.len))
				return false;
		}
		else if (value_len == 0 ? !lp_buf_append_zeros(&block->data, block->bits_per_value / 8)
				 : !lp_buf_append(&block->data, value, block->bits_per_value / 8))
			return false;
		block->num_values++;
	}
	return true;
}

bool
lp_page_fail(const LpPageContext *ctx, LpErrorCode code, const char *fmt,...)
{
	char		what[LP_ERROR_MESSAGE_LEN];
	va_list		args;

	va_start(args, fmt);
	vsnprintf(what, sizeof(what), fmt, args);
	va_end(args);
	return lp_fail(ctx->err, code, "%s in page %u of column %u of file \"%s\"",
				   what, ctx->page, ctx->column, ctx->file->name);
}

bool
lp_page_no_memory(const LpPageContext *ctx)
{
	return lp_page_fail(ctx, LP_ERR_NO_MEMORY, "out of memory decoding values");
}

bool
lp_page_unsupported(const LpPageContext *ctx, const char *encoding)
{
	return lp_page_fail(ctx, LP_ERR_UNSUPPORTED,
						"encoding \"%s\" is not supported", encoding);
}

bool
lp_read_page_buffer(const LpPageContext *ctx, LpInput *input, const LpPage *page,
					uint32_t index, uint8_t **data, uint64_t *len)
{
	*data = NULL;
	*len = 0;
	if (index >= page->num_buffers)
		return lp_page_fail(ctx, LP_ERR_CORRUPT, "buffer %u is missing", index);
	if (!lp_read_page_buffer_range(ctx, input, page, index, 0, page->buffers[index].size, data))
		return false;
	*len = page->buffers[index].size;
	return true;
}

bool
lp_read_page_buffer_range(const LpPageContext *ctx, LpInput *input, const LpPage *page,
						  uint32_t index, uint64_t offset, uint64_t len, uint8_t **data)
{
	const LpBufferRef *ref;

	*data = NULL;
	if (index >= page->num_buffers)
		return lp_page_fail(ctx, LP_ERR_CORRUPT, "buffer %u is missing", index);
	ref = &page->buffers[index];
	if (offset > ref->size || len > ref->size - offset)
		return lp_page_fail(ctx, LP_ERR_CORRUPT,
							"bytes %llu to %llu lie beyond buffer %u of %llu bytes",
							(unsigned long long) offset, (unsigned long long) (offset + len),
							index, (unsigned long long) ref->size);
	if (len == 0)
		return true;
	if (len > SIZE_MAX / 2)
		return lp_page_fail(ctx, LP_ERR_CORRUPT, "buffer %u is too large", index);
	*data = lp_alloc((size_t) len);
	if (*data == NULL)
		return lp_page_no_memory(ctx);
	if (!lp_input_read(input, ref->offset + offset, *data, (size_t) len, ctx->err))
	{
		lp_free(*data);
		*data = NULL;
		return false;
	}
	return true;
}

/* Replace dictionary indices (fixed-width integers) by the dictionary's values. */
bool
lp_dictionary_gather(const LpPageContext *ctx, const LpFlatValues *indices,
					 const LpFlatValues *dictionary, const uint8_t *valid, LpFlatValues *out)
{
	uint32_t	index_bytes;
	uint32_t	value_bytes;

	if (indices->variable || (indices->bits_per_value != 8 && indices->bits_per_value != 16 &&
							  indices->bits_per_value != 32 && indices->bits_per_value != 64))
		return lp_page_fail(ctx, LP_ERR_CORRUPT, "dictionary indices are not integers");
	index_bytes = indices->bits_per_value / 8;
	if (dictionary->variable)
	{
		if (!lp_flat_values_init_variable(out))
			return lp_page_no_memory(ctx);
	}
	else
	{
		if (dictionary->bits_per_value % 8 != 0)
			return lp_page_unsupported(ctx, "dictionary of bit-packed values");
		lp_flat_values_init_fixed(out, dictionary->bits_per_value);
	}
	value_bytes = dictionary->bits_per_value / 8;
	for (uint64_t i = 0; i < indices->num_values; i++)
	{
		uint64_t	index = lp_le_uint(indices->data.data + i * index_bytes, index_bytes);
		bool		is_valid = valid == NULL || lp_bit_get(valid, i);
		bool		ok;

		if (index >= dictionary->num_values)
		{
			if (is_valid)
			{
				lp_flat_values_free(out);
				return lp_page_fail(ctx, LP_ERR_CORRUPT,
									"dictionary index %llu is out of range (%llu items)",
									(unsigned long long) index,
									(unsigned long long) dictionary->num_values);
			}
			ok = lp_flat_values_append_repeated(out, NULL, 0, 1);
		}
		else if (dictionary->variable)
		{
			const uint64_t *offsets = lp_flat_values_offsets(dictionary);
			uint64_t	len = offsets[index + 1] - offsets[index];

			/* A dictionary of empty strings may have no bytes at all. */
			ok = lp_flat_values_append_repeated(out, len > 0 ? dictionary->data.data + offsets[index] : NULL,
										  len, 1);
		}
		else
			ok = lp_flat_values_append_repeated(out, dictionary->data.data + index * value_bytes,
										  value_bytes, 1);
		if (!ok)
		{
			lp_flat_values_free(out);
			return lp_page_no_memory(ctx);
		}
	}
	return true;
}

/* FSST over a variable block, value by value. */
bool
lp_fsst_expand_values(const LpPageContext *ctx, const uint8_t *symbol_table,
					 uint64_t table_len, const uint8_t *selected, LpFlatValues *block)
{
	LpFsstTable table;
	LpFlatValues		result;
	const uint64_t *offsets = lp_flat_values_offsets(block);

	if (!block->variable)
		return lp_page_fail(ctx, LP_ERR_CORRUPT, "fsst applies to fixed-width values");
	if (!lp_fsst_table_parse(symbol_table, table_len, &table))
		return lp_page_fail(ctx, LP_ERR_CORRUPT, "fsst symbol table is malformed");
	if (!table.compressed)
		return true;
	if (!lp_flat_values_init_variable(&result))
		return lp_page_no_memory(ctx);
	for (uint64_t i = 0; i < block->num_values; i++)
	{
		uint64_t	in_len = offsets[i + 1] - offsets[i];
		const uint8_t *in;
		uint64_t	out_len;

		/* Empty values stay empty (and the buffers may be unallocated). */
		if (in_len == 0 || (selected != NULL && !lp_bit_get(selected, i)))
		{
			if (!lp_buf_append_u64(&result.offsets, result.data.len))
			{
				lp_flat_values_free(&result);
				return lp_page_no_memory(ctx);
			}
			continue;
		}
		in = block->data.data + offsets[i];
		if (in_len > UINT64_MAX / 8 || !lp_buf_reserve(&result.data, LP_FSST_DECODE_ROOM(in_len)))
		{
			lp_flat_values_free(&result);
			return lp_page_no_memory(ctx);
		}
		if (!lp_fsst_decode(&table, in, in_len, result.data.data + result.data.len, &out_len))
		{
			lp_flat_values_free(&result);
			return lp_page_fail(ctx, LP_ERR_CORRUPT, "fsst value %llu is malformed",
								(unsigned long long) i);
		}
		result.data.len += out_len;
		if (!lp_buf_append_u64(&result.offsets, result.data.len))
		{
			lp_flat_values_free(&result);
			return lp_page_no_memory(ctx);
		}
	}
	result.num_values = block->num_values;
	lp_flat_values_free(block);
	*block = result;
	return true;
}
