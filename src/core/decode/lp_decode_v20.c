/*
 * lp_decode_v20.c - Lance 2.0 pages: ArrayEncoding trees (encodings_v2_0.proto)
 * over page buffers, and the 2.0 column layout of nested fields (struct
 * header columns, list offsets columns followed by their item columns).
 * Byte formats: lance-format.md §4.3 and §4.4.
 */
#include <stdio.h>
#include <string.h>

#include "base/lp_alloc.h"
#include "base/lp_checked.h"
#include "codec/lp_bitpack.h"
#include "decode/lp_decode_internal.h"
#include "format/lp_columns.h"
#include "base/lp_protobuf.h"

#define MAX_NESTING 32

typedef Lance__Encodings__ArrayEncoding ArrayEncoding;

/* The page being decoded: its buffers, in memory. */
typedef struct Page20
{
	const LpPageContext *ctx;
	uint32_t	num_buffers;
	const LpSlice *buffers;
	bool		variable;		/* shape of the leaf (for all-null pages) */
	uint32_t	bits;
} Page20;

static bool
missing(const Page20 *page, const char *what)
{
	return lp_page_fail(page->ctx, LP_ERR_CORRUPT, "encoding lacks its %s", what);
}

/* The bytes of the page buffer a Buffer message names; what names the encoding. */
static bool
page_buffer(const Page20 *page, const Lance__Encodings__Buffer *buffer, const char *what,
			const uint8_t **data, uint64_t *len)
{
	char		where[64];

	if (buffer == NULL)
		return missing(page, "buffer");
	if (buffer->buffer_type != LANCE__ENCODINGS__BUFFER__BUFFER_TYPE__PAGE)
	{
		snprintf(where, sizeof(where), "%s in a column or file buffer", what);
		return lp_page_unsupported(page->ctx, where);
	}
	if (buffer->buffer_index >= page->num_buffers)
		return lp_page_fail(page->ctx, LP_ERR_CORRUPT, "buffer %u does not exist",
							buffer->buffer_index);
	*data = page->buffers[buffer->buffer_index].data;
	*len = page->buffers[buffer->buffer_index].len;
	return true;
}

/* The bytes of a Flat's buffer (decompressed if asked). */
static bool
flat_bytes(const Page20 *page, const Lance__Encodings__Flat *flat, const uint8_t **data,
		   uint64_t *len, LpBuf *inflated)
{
	if (!page_buffer(page, flat->buffer, "flat values", data, len))
		return false;
	if (flat->compression != NULL && flat->compression->scheme != NULL &&
		flat->compression->scheme[0] != '\0' && strcmp(flat->compression->scheme, "none") != 0)
	{
		const char *name = flat->compression->scheme;

		/* 2.0 names the schemes that 2.1+ numbers */
		if (strcmp(name, "zstd") != 0 && strcmp(name, "lz4") != 0)
			return lp_page_fail(page->ctx, LP_ERR_UNSUPPORTED,
								"compression scheme \"%.40s\" is not supported", name);
		if (!lp_page_decompress(page->ctx, strcmp(name, "zstd") == 0 ?
								LANCE__ENCODINGS21__COMPRESSION_SCHEME__COMPRESSION_ALGORITHM_ZSTD :
								LANCE__ENCODINGS21__COMPRESSION_SCHEME__COMPRESSION_ALGORITHM_LZ4,
								*data, *len, inflated))
			return false;
		*data = inflated->data;
		*len = inflated->len;
	}
	return true;
}

static bool decode_array(const Page20 *page, const ArrayEncoding *enc, uint64_t n,
						 LpFlatValues *values, LpBits *validity, int depth);

static bool
decode_flat(const Page20 *page, const Lance__Encodings__Flat *flat, uint64_t n,
			LpFlatValues *values)
{
	const uint8_t *data;
	uint64_t	len;
	uint64_t	bytes;
	uint64_t	bits = flat->bits_per_value;
	LpBuf		inflated = {0};
	bool		ok;

	if (bits != 1 && (bits == 0 || bits % 8 != 0 || bits > 8 * 1024 * 1024))
		return lp_page_fail(page->ctx, LP_ERR_CORRUPT, "flat encoding has %llu bits per value",
							(unsigned long long) bits);
	if (!flat_bytes(page, flat, &data, &len, &inflated))
	{
		lp_buf_free(&inflated);
		return false;
	}
	if (bits == 1)
		bytes = n / 8 + (n % 8 != 0);
	else if (!lp_mul_u64(n, bits / 8, &bytes))
		bytes = UINT64_MAX;
	if (bytes > len)
	{
		lp_buf_free(&inflated);
		return lp_page_fail(page->ctx, LP_ERR_CORRUPT,
							"flat buffer of %llu bytes is too short for %llu values",
							(unsigned long long) len, (unsigned long long) n);
	}
	lp_flat_values_init_fixed(values, (uint32_t) bits);
	ok = lp_buf_append(&values->data, data, bytes);
	lp_buf_free(&inflated);
	if (!ok)
		return lp_page_no_memory(page->ctx);
	values->num_values = n;
	return true;
}

/*
 * The last end offset of n Binary indices, which is how many bytes the
 * rows hold (null rows end at the previous end + null_adjustment).
 */
static uint64_t
binary_bytes_needed(const Lance__Encodings__Binary *binary, const LpFlatValues *indices, uint64_t n)
{
	uint64_t	end;

	if (n == 0)
		return 0;
	end = lp_le64(indices->data.data + (n - 1) * 8);
	if (binary->null_adjustment > 0 && end >= binary->null_adjustment)
		end -= binary->null_adjustment;
	return end;
}

/*
 * Binary: u64 end offsets (null: previous end + null_adjustment), then
 * bytes: Flat, or (Lance 0.15 with LANCE_USE_BITPACKING) any u8 array
 * such as Nullable{Bitpacked}.
 */
static bool
decode_binary(const Page20 *page, const Lance__Encodings__Binary *binary, uint64_t n,
			  LpFlatValues *values, LpBits *validity, int depth)
{
	LpFlatValues		indices;
	LpFlatValues		bytes_block;
	LpBits		ignored = {0};
	const ArrayEncoding *bytes_enc = binary->bytes;
	const uint8_t *bytes;
	uint64_t	bytes_len;
	LpBuf		inflated = {0};
	uint64_t	start = 0;
	bool		ok = false;

	memset(&indices, 0, sizeof(indices));
	memset(&bytes_block, 0, sizeof(bytes_block));
	if (binary->indices == NULL || bytes_enc == NULL)
		return missing(page, "binary indices or bytes");
	if (!decode_array(page, binary->indices, n, &indices, &ignored, depth + 1))
		goto done;
	if (indices.variable || indices.bits_per_value != 64 || indices.num_values != n)
	{
		lp_page_fail(page->ctx, LP_ERR_CORRUPT, "binary indices are not 64-bit");
		goto done;
	}
	if (bytes_enc->array_encoding_case == LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_FLAT &&
		bytes_enc->flat->bits_per_value == 8)
	{
		if (!flat_bytes(page, bytes_enc->flat, &bytes, &bytes_len, &inflated))
			goto done;
	}
	else
	{
		Page20		bytes_page = *page;
		LpBits		bytes_validity = {0};

		bytes_page.variable = false;
		bytes_page.bits = 8;
		bytes_len = binary_bytes_needed(binary, &indices, n);
		ok = decode_array(&bytes_page, bytes_enc, bytes_len, &bytes_block, &bytes_validity,
						  depth + 1);
		lp_buf_free(&bytes_validity.buf);
		if (!ok)
			goto done;
		ok = false;
		if (bytes_block.variable || bytes_block.bits_per_value != 8 ||
			bytes_block.num_values != bytes_len)
		{
			lp_page_fail(page->ctx, LP_ERR_CORRUPT, "binary bytes are not %llu u8 values",
						 (unsigned long long) bytes_len);
			goto done;
		}
		bytes = bytes_block.data.data;
	}
	if (!lp_flat_values_init_variable(values))
	{
		lp_page_no_memory(page->ctx);
		goto done;
	}
	for (uint64_t i = 0; i < n; i++)
	{
		uint64_t	end = lp_le64(indices.data.data + i * 8);
		bool		is_null = binary->null_adjustment > 0 && end >= binary->null_adjustment;

		if (is_null)
			end -= binary->null_adjustment;
		if (end < start || end > bytes_len)
		{
			lp_page_fail(page->ctx, LP_ERR_CORRUPT, "binary offset %llu is out of range",
						 (unsigned long long) end);
			goto done;
		}
		/* A page of empty strings has no bytes at all (bytes NULL). */
		if (!lp_flat_values_append_repeated(values, end > start ? bytes + start : bytes,
									  is_null ? 0 : end - start, 1) ||
			!lp_bits_append(validity, !is_null))
		{
			lp_page_no_memory(page->ctx);
			goto done;
		}
		start = end;
	}
	ok = true;

done:
	if (!ok)
		lp_flat_values_free(values);
	lp_flat_values_free(&indices);
	lp_flat_values_free(&bytes_block);
	lp_buf_free(&ignored.buf);
	lp_buf_free(&inflated);
	return ok;
}

/*
 * Dictionary: indices count from 1 into the page-local items; index 0 is a
 * null row.  Items may themselves be null.
 */
static bool
decode_dictionary(const Page20 *page, const Lance__Encodings__Dictionary *dictionary,
				  uint64_t n, LpFlatValues *values, LpBits *validity, int depth)
{
	LpFlatValues		indices;
	LpFlatValues		items;
	LpBits		index_validity = {0};
	LpBits		item_validity = {0};
	LpBits		row_validity = {0};
	uint32_t	index_bytes;
	bool		ok = false;

	memset(&indices, 0, sizeof(indices));
	memset(&items, 0, sizeof(items));
	if (dictionary->indices == NULL || dictionary->items == NULL)
		return missing(page, "dictionary indices or items");
	if (!decode_array(page, dictionary->indices, n, &indices, &index_validity, depth + 1) ||
		!decode_array(page, dictionary->items, dictionary->num_dictionary_items, &items,
					  &item_validity, depth + 1))
		goto done;
	if (indices.variable || (indices.bits_per_value != 8 && indices.bits_per_value != 16 &&
							 indices.bits_per_value != 32 && indices.bits_per_value != 64))
	{
		lp_page_fail(page->ctx, LP_ERR_CORRUPT, "dictionary indices are not integers");
		goto done;
	}
	index_bytes = indices.bits_per_value / 8;
	for (uint64_t i = 0; i < n; i++)
	{
		uint8_t    *p = indices.data.data + i * index_bytes;
		uint64_t	index = lp_le_uint(p, index_bytes);
		bool		valid = lp_bit_get(index_validity.buf.data, i) && index > 0;

		if (valid && index > items.num_values)
		{
			lp_page_fail(page->ctx, LP_ERR_CORRUPT,
						 "dictionary index %llu is out of range (%llu items)",
						 (unsigned long long) index, (unsigned long long) items.num_values);
			goto done;
		}
		valid = valid && lp_bit_get(item_validity.buf.data, index - 1);
		/* Shift to 0-based; null rows point at nothing. */
		index = valid ? index - 1 : UINT64_MAX;
		lp_put_le_uint(p, index_bytes, index);
		if (!lp_bits_append(&row_validity, valid))
		{
			lp_page_no_memory(page->ctx);
			goto done;
		}
	}
	if (!lp_dictionary_gather(page->ctx, &indices, &items, row_validity.buf.data, values))
		goto done;
	if (!lp_bits_append_bitmap(validity, row_validity.buf.data, 0, n))
	{
		lp_flat_values_free(values);
		lp_page_no_memory(page->ctx);
		goto done;
	}
	ok = true;

done:
	lp_flat_values_free(&indices);
	lp_flat_values_free(&items);
	lp_buf_free(&index_validity.buf);
	lp_buf_free(&item_validity.buf);
	lp_buf_free(&row_validity.buf);
	return ok;
}

/* Bits per value of a packed struct child: Flat, possibly wrapped in Nullable{no_nulls}. */
static bool
packed_child_bits(const ArrayEncoding *enc, uint64_t *bits)
{
	while (enc != NULL &&
		   enc->array_encoding_case == LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_NULLABLE &&
		   enc->nullable->nullability_case == LANCE__ENCODINGS__NULLABLE__NULLABILITY_NO_NULLS)
		enc = enc->nullable->no_nulls->values;
	if (enc == NULL || enc->array_encoding_case != LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_FLAT)
		return false;
	*bits = enc->flat->bits_per_value;
	return *bits > 0 && *bits % 8 == 0 && *bits <= 8 * 1024 * 1024;
}

/*
 * PackedStruct: one buffer of rows, each the children's fixed-width values
 * one after another - already the canonical form of lp_decode_packed.c.
 */
static bool
decode_packed_struct(const Page20 *page, const Lance__Encodings__PackedStruct *packed,
					 uint64_t n, LpFlatValues *values, LpBits *validity)
{
	uint64_t	row_bits = 0;
	uint64_t	bytes;
	const uint8_t *data;
	uint64_t	len;

	for (size_t i = 0; i < packed->n_inner; i++)
	{
		uint64_t	bits;

		if (!packed_child_bits(packed->inner[i], &bits))
			return lp_page_unsupported(page->ctx, "packed_struct with children that are not flat");
		row_bits += bits;
	}
	if (!page_buffer(page, packed->buffer, "packed_struct", &data, &len))
		return false;
	if (row_bits == 0 || row_bits > UINT32_MAX || !lp_mul_u64(n, row_bits / 8, &bytes) ||
		bytes > len)
		return lp_page_fail(page->ctx, LP_ERR_CORRUPT,
							"packed struct buffer is too short for %llu rows",
							(unsigned long long) n);
	lp_flat_values_init_fixed(values, (uint32_t) row_bits);
	if (!lp_buf_append(&values->data, data, bytes) ||
		!lp_bits_append_n(validity, true, n))
		return lp_page_no_memory(page->ctx);
	values->num_values = n;
	return true;
}

static bool
check_bitpacked_widths(const Page20 *page, uint64_t width, uint64_t type_bits)
{
	if ((type_bits != 8 && type_bits != 16 && type_bits != 32 && type_bits != 64) ||
		width > type_bits)
		return lp_page_fail(page->ctx, LP_ERR_CORRUPT,
							"bit-packed values of %llu bits are packed to %llu bits",
							(unsigned long long) type_bits, (unsigned long long) width);
	return true;
}

/*
 * Bitpacked: the values one after another, compressed_bits_per_value bits
 * each, least significant bit first; signed values are sign-extended from
 * their top packed bit.
 */
static bool
decode_bitpacked(const Page20 *page, const Lance__Encodings__Bitpacked *bitpacked, uint64_t n,
				 LpFlatValues *values)
{
	uint64_t	width = bitpacked->compressed_bits_per_value;
	uint64_t	type_bits = bitpacked->uncompressed_bits_per_value;
	const uint8_t *data;
	uint64_t	len;
	uint64_t	bits;

	if (!check_bitpacked_widths(page, width, type_bits))
		return false;
	if (width == 0)
		return lp_page_fail(page->ctx, LP_ERR_CORRUPT, "bit-packed values are packed to 0 bits");
	if (!page_buffer(page, bitpacked->buffer, "bitpacked", &data, &len))
		return false;
	if (!lp_mul_u64(n, width, &bits) || bits / 8 + (bits % 8 != 0) > len)
		return lp_page_fail(page->ctx, LP_ERR_CORRUPT,
							"bit-packed buffer of %llu bytes is too short for %llu values of %llu bits",
							(unsigned long long) len, (unsigned long long) n,
							(unsigned long long) width);
	lp_flat_values_init_fixed(values, (uint32_t) type_bits);
	if (!lp_buf_reserve(&values->data, n * (type_bits / 8)))
		return lp_page_no_memory(page->ctx);
	lp_bitstream_unpack(data, n, (uint32_t) width, (uint32_t) type_bits,
						bitpacked->is_signed, values->data.data);
	values->data.len = n * (type_bits / 8);
	values->num_values = n;
	return true;
}

/*
 * BitpackedForNonNeg: FastLanes blocks of 1024 values, all packed to
 * compressed_bits_per_value bits and without headers; the last block is
 * zero-padded to 1024 values.
 */
static bool
decode_bitpacked_for_non_neg(const Page20 *page, const Lance__Encodings__BitpackedForNonNeg *bitpacked,
							 uint64_t n, LpFlatValues *values)
{
	uint64_t	width = bitpacked->compressed_bits_per_value;
	uint64_t	type_bits = bitpacked->uncompressed_bits_per_value;
	uint64_t	value_bytes = type_bits / 8;
	uint64_t	blocks = n / LP_FASTLANES_BLOCK + (n % LP_FASTLANES_BLOCK != 0);
	const uint8_t *data;
	uint64_t	len;
	uint64_t	needed;
	uint8_t    *unpacked;

	if (!check_bitpacked_widths(page, width, type_bits) ||
		!page_buffer(page, bitpacked->buffer, "bitpacked_for_non_neg", &data, &len))
		return false;
	if (!lp_mul_u64(blocks, lp_fastlanes_packed_bytes((uint32_t) width), &needed) || needed > len)
		return lp_page_fail(page->ctx, LP_ERR_CORRUPT,
							"bit-packed buffer of %llu bytes is too short for %llu values of %llu bits",
							(unsigned long long) len, (unsigned long long) n,
							(unsigned long long) width);
	lp_flat_values_init_fixed(values, (uint32_t) type_bits);
	unpacked = lp_alloc((size_t) LP_FASTLANES_BLOCK * value_bytes);
	if (unpacked == NULL || !lp_buf_reserve(&values->data, n * value_bytes))
	{
		lp_free(unpacked);
		return lp_page_no_memory(page->ctx);
	}
	for (uint64_t b = 0; b < blocks; b++)
	{
		uint64_t	take = n - b * LP_FASTLANES_BLOCK;

		if (take > LP_FASTLANES_BLOCK)
			take = LP_FASTLANES_BLOCK;
		lp_fastlanes_unpack((uint32_t) type_bits, (uint32_t) width,
							data + b * lp_fastlanes_packed_bytes((uint32_t) width), unpacked);
		lp_buf_append(&values->data, unpacked, take * value_bytes);
	}
	lp_free(unpacked);
	values->num_values = n;
	return true;
}

/* Null values of the leaf's shape. */
static bool
null_values(const Page20 *page, uint64_t n, LpFlatValues *values, LpBits *validity)
{
	if (page->variable)
	{
		if (!lp_flat_values_init_variable(values))
			return lp_page_no_memory(page->ctx);
	}
	else
		lp_flat_values_init_fixed(values, page->bits);
	if (!lp_flat_values_append_repeated(values, NULL, 0, n) || !lp_bits_append_n(validity, false, n))
		return lp_page_no_memory(page->ctx);
	return true;
}

static bool
decode_array_inner(const Page20 *page, const ArrayEncoding *enc, uint64_t n, LpFlatValues *values,
				   LpBits *validity, int depth)
{
	memset(values, 0, sizeof(*values));
	if (enc == NULL)
		return missing(page, "array encoding");
	if (depth > MAX_NESTING)
		return lp_page_fail(page->ctx, LP_ERR_CORRUPT, "encoding is nested too deeply");
	if (n > ((uint64_t) 1 << 40))
		return lp_page_fail(page->ctx, LP_ERR_CORRUPT, "page claims %llu values",
							(unsigned long long) n);
	switch (enc->array_encoding_case)
	{
		case LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_FLAT:
			if (!decode_flat(page, enc->flat, n, values))
				return false;
			return lp_bits_append_n(validity, true, n) ? true : lp_page_no_memory(page->ctx);
		case LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_NULLABLE:
			{
				const Lance__Encodings__Nullable *nullable = enc->nullable;
				LpBits		inner = {0};
				LpFlatValues		bitmap;
				bool		ok;

				switch (nullable->nullability_case)
				{
					case LANCE__ENCODINGS__NULLABLE__NULLABILITY_NO_NULLS:
						return decode_array(page, nullable->no_nulls->values, n, values,
											validity, depth + 1);
					case LANCE__ENCODINGS__NULLABLE__NULLABILITY_ALL_NULLS:
						return null_values(page, n, values, validity);
					case LANCE__ENCODINGS__NULLABLE__NULLABILITY_SOME_NULLS:
						if (!decode_array(page, nullable->some_nulls->validity, n, &bitmap,
										  &inner, depth + 1))
						{
							lp_buf_free(&inner.buf);
							return false;
						}
						lp_buf_free(&inner.buf);
						memset(&inner, 0, sizeof(inner));
						if (bitmap.variable || bitmap.bits_per_value != 1)
						{
							lp_flat_values_free(&bitmap);
							return lp_page_fail(page->ctx, LP_ERR_CORRUPT, "validity is not a bitmap");
						}
						if (!decode_array(page, nullable->some_nulls->values, n, values, &inner,
										  depth + 1))
						{
							lp_flat_values_free(&bitmap);
							lp_buf_free(&inner.buf);
							return false;
						}
						/* Null if either the bitmap or the values say so. */
						ok = true;
						for (uint64_t i = 0; i < n && ok; i++)
							ok = lp_bits_append(validity, lp_bit_get(bitmap.data.data, i) &&
												lp_bit_get(inner.buf.data, i));
						lp_flat_values_free(&bitmap);
						lp_buf_free(&inner.buf);
						return ok ? true : lp_page_no_memory(page->ctx);
					default:
						return missing(page, "nullability");
				}
			}
		case LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_FIXED_SIZE_LIST:
			{
				const Lance__Encodings__FixedSizeList *fsl = enc->fixed_size_list;
				LpBits		items_validity = {0};
				uint64_t	items;
				uint64_t	bits;

				if (fsl->dimension == 0 || !lp_mul_u64(n, fsl->dimension, &items))
					return lp_page_fail(page->ctx, LP_ERR_CORRUPT, "fixed-size list of dimension %u",
										fsl->dimension);
				if (!decode_array(page, fsl->items, items, values, &items_validity, depth + 1))
				{
					lp_buf_free(&items_validity.buf);
					return false;
				}
				/* Items are whole bytes, or bools packed dimension bits per list. */
				if (values->variable || values->has_item_validity ||
					(values->bits_per_value % 8 != 0 && values->bits_per_value != 1) ||
					!lp_mul_u64(values->bits_per_value, fsl->dimension, &bits) || bits > UINT32_MAX)
				{
					lp_buf_free(&items_validity.buf);
					lp_flat_values_free(values);
					return lp_page_unsupported(page->ctx, "fixed_size_list of nested lists or variable-width items");
				}
				values->bits_per_value = (uint32_t) bits;
				values->num_values = n;
				if (items_validity.num_unset > 0)
				{
					values->has_item_validity = true;
					values->items_per_value = fsl->dimension;
					values->item_validity = items_validity;
				}
				else
					lp_buf_free(&items_validity.buf);
				return lp_bits_append_n(validity, true, n) ? true : lp_page_no_memory(page->ctx);
			}
		case LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_BINARY:
			return decode_binary(page, enc->binary, n, values, validity, depth);
		case LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_DICTIONARY:
			return decode_dictionary(page, enc->dictionary, n, values, validity, depth);
		case LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_FSST:
			if (enc->fsst->binary == NULL)
				return missing(page, "fsst values");
			if (!decode_array(page, enc->fsst->binary, n, values, validity, depth + 1))
				return false;
			if (!lp_fsst_expand_values(page->ctx, enc->fsst->symbol_table.data,
									  enc->fsst->symbol_table.len, NULL, values))
			{
				lp_flat_values_free(values);
				return false;
			}
			return true;
		case LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_FIXED_SIZE_BINARY:
			{
				const Lance__Encodings__FixedSizeBinary *fsb = enc->fixed_size_binary;
				uint64_t	bytes;
				LpBits		ignored = {0};
				bool		ok;

				if (fsb->byte_width == 0 || !lp_mul_u64(n, fsb->byte_width, &bytes))
					return lp_page_fail(page->ctx, LP_ERR_CORRUPT, "fixed-size binary of width %u",
										fsb->byte_width);
				ok = decode_array(page, fsb->bytes, bytes, values, &ignored, depth + 1);
				lp_buf_free(&ignored.buf);
				if (!ok)
					return false;
				if (values->variable || values->bits_per_value != 8)
				{
					lp_flat_values_free(values);
					return lp_page_fail(page->ctx, LP_ERR_CORRUPT, "fixed-size binary bytes are not bytes");
				}
				values->bits_per_value = fsb->byte_width * 8;
				values->num_values = n;
				return lp_bits_append_n(validity, true, n) ? true : lp_page_no_memory(page->ctx);
			}
		case LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_PACKED_STRUCT:
			return decode_packed_struct(page, enc->packed_struct, n, values, validity);
		case LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_BITPACKED:
			if (!decode_bitpacked(page, enc->bitpacked, n, values))
				return false;
			return lp_bits_append_n(validity, true, n) ? true : lp_page_no_memory(page->ctx);
		case LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_BITPACKED_FOR_NON_NEG:
			if (!decode_bitpacked_for_non_neg(page, enc->bitpacked_for_non_neg, n, values))
				return false;
			return lp_bits_append_n(validity, true, n) ? true : lp_page_no_memory(page->ctx);
		case LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_CONSTANT:
			{
				const ProtobufCBinaryData *value = &enc->constant->value;

				if (value->len == 0 || value->len > 1024)
					return lp_page_fail(page->ctx, LP_ERR_CORRUPT, "constant of %zu bytes",
										value->len);
				lp_flat_values_init_fixed(values, (uint32_t) value->len * 8);
				if (!lp_flat_values_append_repeated(values, value->data, value->len, n) ||
					!lp_bits_append_n(validity, true, n))
				{
					lp_flat_values_free(values);
					return lp_page_no_memory(page->ctx);
				}
				return true;
			}
		default:
			return lp_page_unsupported(page->ctx, lp_array_encoding_name(enc));
	}
}

/*
 * Decode n values of enc into values (fresh) and append their validity to
 * validity.  On failure nothing stays allocated in values.
 */
static bool
decode_array(const Page20 *page, const ArrayEncoding *enc, uint64_t n, LpFlatValues *values,
			 LpBits *validity, int depth)
{
	if (decode_array_inner(page, enc, n, values, validity, depth))
		return true;
	lp_flat_values_free(values);
	return false;
}

bool
lp_decode_v20_page(const LpPageContext *ctx, const Lance__Encodings__ArrayEncoding *encoding,
				   const LpSlice *buffers, uint32_t num_buffers, uint64_t num_values,
				   bool variable, uint32_t bits, LpFlatValues *values, LpBits *validity)
{
	Page20		page = {ctx, num_buffers, buffers, variable, bits};

	return decode_array(&page, encoding, num_values, values, validity, 0);
}

/* Read every buffer of a page (*buffers, lp_alloc'd) and unpack its encoding. */
static bool
open_page(const LpPageContext *ctx, LpInput *input, const LpPage *lp_page, LpSlice **buffers,
		  uint32_t *num_buffers, ArrayEncoding **enc)
{
	*buffers = NULL;
	*num_buffers = 0;
	*enc = NULL;
	if (!lp_unpack_page_encoding(ctx, lp_page, (ProtobufCMessage **) enc))
		return false;
	*buffers = lp_alloc_array(lp_page->num_buffers + 1, sizeof(LpSlice));
	if (*buffers == NULL)
		return lp_page_no_memory(ctx);
	for (uint32_t b = 0; b < lp_page->num_buffers; b++)
	{
		uint8_t    *data;

		if (!lp_read_page_buffer(ctx, input, lp_page, b, &data, &(*buffers)[b].len))
			return false;
		(*buffers)[b].data = data;
		(*num_buffers)++;
	}
	return true;
}

static void
close_page(LpSlice *buffers, uint32_t num_buffers, ArrayEncoding *enc)
{
	for (uint32_t b = 0; b < num_buffers; b++)
		lp_free((void *) buffers[b].data);
	lp_free(buffers);
	lp_protobuf_free(enc ? &enc->base : NULL);
}

static bool take_field20(LpFieldReader *reader, const LpType *type, uint32_t *column,
						 int depth, const LpRowRange *ranges, size_t num_ranges,
						 uint64_t expected_rows, bool under_list, LpArray **out, LpError *err);

static bool
check_column(const LpFile *file, uint32_t column, const LpType *type, LpError *err)
{
	if (column >= file->num_columns)
		return lp_fail(err, LP_ERR_CORRUPT, "file \"%s\" has no column %u for field \"%s\"",
					   file->name, column, type->name);
	return true;
}

/* The rows of a take from a leaf column so far. */
typedef struct Leaf20Take
{
	LpFieldReader *reader;
	bool		variable;
	uint32_t	bits;
	bool		under_list;
	LpFlatValues		values;
	LpBits		validity;
} Leaf20Take;

static bool
take_leaf20_page(void *arg, const LpPageContext *ctx, const LpPage *lp_page,
				 const LpRowRange *ranges, size_t num_ranges)
{
	Leaf20Take *take = arg;
	LpSlice    *buffers;
	uint32_t	num_buffers;
	ArrayEncoding *enc;
	LpFlatValues		page_values;
	LpBits		page_validity = {0};
	bool		ok;

	memset(&page_values, 0, sizeof(page_values));
	ok = open_page(ctx, take->reader->input, lp_page, &buffers, &num_buffers, &enc) &&
		lp_decode_v20_page(ctx, enc, buffers, num_buffers, lp_page->num_rows, take->variable,
						   take->bits, &page_values, &page_validity);
	close_page(buffers, num_buffers, enc);
	if (ok && (page_values.num_values != lp_page->num_rows ||
			   page_validity.num_bits != lp_page->num_rows))
		ok = lp_page_fail(ctx, LP_ERR_CORRUPT, "page decodes to %llu values for %llu rows",
						  (unsigned long long) page_values.num_values,
						  (unsigned long long) lp_page->num_rows);
	ok = ok && lp_flat_values_take(ctx, &page_values, ranges, num_ranges, &take->values);
	for (size_t i = 0; ok && i < num_ranges; i++)
		if (!lp_bits_append_bitmap(&take->validity, page_validity.buf.data, ranges[i].start,
								   ranges[i].count))
			ok = lp_page_no_memory(ctx);
	if (ok && !take->under_list)
		take->reader->rows_decoded += lp_page->num_rows;
	lp_flat_values_free(&page_values);
	lp_buf_free(&page_validity.buf);
	return ok;
}

static bool
take_leaf20(LpFieldReader *reader, const LpType *type, uint32_t column,
			const LpRowRange *ranges, size_t num_ranges, uint64_t expected_rows,
			bool under_list, LpArray **out, LpError *err)
{
	const LpFile *file = reader->file;
	Leaf20Take	take;

	memset(&take, 0, sizeof(take));
	take.reader = reader;
	take.under_list = under_list;
	if (!lp_leaf_storage(type, &take.variable, &take.bits))
		return lp_fail(err, LP_ERR_UNSUPPORTED,
					   "values of type \"%s\" in column %u of file \"%s\" are not supported",
					   lp_type_id_name(type->id), column, file->name);
	if (!lp_reader_visit_pages(reader, column, expected_rows, ranges, num_ranges,
							   take_leaf20_page, &take, err) ||
		!lp_leaf_array(type, &take.values, take.validity.num_bits, out, file, column, err))
	{
		lp_flat_values_free(&take.values);
		lp_buf_free(&take.validity.buf);
		return false;
	}
	lp_take_validity(*out, &take.validity);
	return true;
}

/* The first item of each page of a list offsets column, then its items. */
static bool
list_item_starts(LpFieldReader *reader, uint32_t column, const uint64_t **starts, LpError *err)
{
	const LpColumn *col = &reader->file->columns[column];
	uint64_t   *first_items;

	if (reader->item_starts[column] != NULL)
	{
		*starts = reader->item_starts[column];
		return true;
	}
	first_items = lp_alloc_array((size_t) col->num_pages + 1, sizeof(uint64_t));
	if (first_items == NULL)
		return lp_decode_no_memory(err);
	for (uint32_t p = 0; p < col->num_pages; p++)
	{
		LpPageContext ctx = {reader->file, column, p, err};
		ArrayEncoding *enc;
		bool		ok;

		if (!lp_unpack_page_encoding(&ctx, &col->pages[p], (ProtobufCMessage **) &enc))
		{
			lp_free(first_items);
			return false;
		}
		if (enc->array_encoding_case != LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_LIST)
			ok = lp_page_fail(&ctx, LP_ERR_CORRUPT, "list column has a \"%s\" page",
							  lp_array_encoding_name(enc));
		else if (!lp_add_u64(first_items[p], enc->list->num_items, &first_items[p + 1]))
			ok = lp_page_fail(&ctx, LP_ERR_CORRUPT, "list pages hold too many items");
		else
			ok = true;
		lp_protobuf_free(&enc->base);
		if (!ok)
		{
			lp_free(first_items);
			return false;
		}
	}
	reader->item_starts[column] = first_items;
	*starts = first_items;
	return true;
}

/* The rows of a take from a list offsets column so far, and the items they span. */
typedef struct List20Take
{
	LpFieldReader *reader;
	const uint64_t *item_starts;
	bool		under_list;
	LpBuf		offsets;
	LpBits		validity;
	LpBuf		items;			/* LpRowRange of the items, coalesced */
} List20Take;

static bool
add_item_range(List20Take *take, uint64_t start, uint64_t count)
{
	LpRowRange *last = take->items.len == 0 ? NULL :
		(LpRowRange *) (take->items.data + take->items.len - sizeof(LpRowRange));
	LpRowRange	range = {start, count};

	if (count == 0)
		return true;
	if (last != NULL && last->start + last->count == start)
	{
		last->count += count;
		return true;
	}
	return lp_buf_append(&take->items, &range, sizeof(range));
}

/*
 * Each end is the page-local end of the row, + adjustment when the list is
 * null; every page's rows end at its last item, or items unreferenced by a
 * page would shift the rows of later ones.
 */
static bool
take_list20_page(void *arg, const LpPageContext *ctx, const LpPage *lp_page,
				 const LpRowRange *ranges, size_t num_ranges)
{
	List20Take *take = arg;
	LpSlice    *buffers;
	uint32_t	num_buffers;
	ArrayEncoding *enc;
	LpFlatValues		ends;
	LpBits		ignored = {0};
	LpBits		valid = {0};
	const Lance__Encodings__List *list = NULL;
	uint64_t	page_first_item = take->item_starts[ctx->page];
	uint64_t	previous = 0;
	bool		ok;

	memset(&ends, 0, sizeof(ends));
	ok = open_page(ctx, take->reader->input, lp_page, &buffers, &num_buffers, &enc);
	if (ok && enc->array_encoding_case != LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_LIST)
		ok = lp_page_fail(ctx, LP_ERR_CORRUPT, "list column has a \"%s\" page",
						  lp_array_encoding_name(enc));
	list = ok ? enc->list : NULL;
	ok = ok && lp_decode_v20_page(ctx, list->offsets, buffers, num_buffers, lp_page->num_rows,
								  false, 0, &ends, &ignored);
	if (ok && (ends.variable || ends.bits_per_value != 64 || ends.num_values != lp_page->num_rows))
		ok = lp_page_fail(ctx, LP_ERR_CORRUPT, "list offsets are not 64-bit");
	/* Adjusted ends in place, with the nulls beside them. */
	for (uint64_t i = 0; ok && i < ends.num_values; i++)
	{
		uint64_t	end = lp_le64(ends.data.data + i * 8);
		bool		is_null = list->null_offset_adjustment > 0 &&
			end >= list->null_offset_adjustment;

		if (is_null)
			end -= list->null_offset_adjustment;
		if (end < previous || end > list->num_items)
			ok = lp_page_fail(ctx, LP_ERR_CORRUPT, "list offset %llu is out of range",
							  (unsigned long long) end);
		else if (!lp_bits_append(&valid, !is_null))
			ok = lp_page_no_memory(ctx);
		lp_put_le_uint(ends.data.data + i * 8, 8, end);
		previous = end;
	}
	if (ok && previous != list->num_items)
		ok = lp_page_fail(ctx, LP_ERR_CORRUPT, "list rows reference %llu of the page's %llu items",
						  (unsigned long long) previous, (unsigned long long) list->num_items);
	for (size_t r = 0; ok && r < num_ranges; r++)
	{
		const uint8_t *data = ends.data.data;
		uint64_t	start = ranges[r].start;
		uint64_t	first = start == 0 ? 0 : lp_le64(data + (start - 1) * 8);
		uint64_t	base = ((uint64_t *) take->offsets.data)[take->offsets.len / 8 - 1];

		for (uint64_t i = start; ok && i < start + ranges[r].count; i++)
			if (!lp_buf_append_u64(&take->offsets, base + lp_le64(data + i * 8) - first))
				ok = lp_page_no_memory(ctx);
		if (ok && (!lp_bits_append_bitmap(&take->validity, valid.buf.data, start, ranges[r].count) ||
				   !add_item_range(take, page_first_item + first,
								   lp_le64(data + (start + ranges[r].count - 1) * 8) - first)))
			ok = lp_page_no_memory(ctx);
	}
	if (ok && !take->under_list)
		take->reader->rows_decoded += lp_page->num_rows;
	lp_flat_values_free(&ends);
	lp_buf_free(&ignored.buf);
	lp_buf_free(&valid.buf);
	close_page(buffers, num_buffers, enc);
	return ok;
}

static void
free_list_take(List20Take *take)
{
	lp_buf_free(&take->offsets);
	lp_buf_free(&take->validity.buf);
	lp_buf_free(&take->items);
}

/* The rows' offsets and validity from a list offsets column, and the items they span. */
static bool
take_list_offsets20(LpFieldReader *reader, uint32_t offsets_column, const LpRowRange *ranges,
					size_t num_ranges, uint64_t expected_rows, bool under_list, List20Take *take,
					LpError *err)
{
	bool		ok;

	memset(take, 0, sizeof(*take));
	take->reader = reader;
	take->under_list = under_list;
	ok = list_item_starts(reader, offsets_column, &take->item_starts, err);
	if (ok && !lp_buf_append_u64(&take->offsets, 0))
		ok = lp_decode_no_memory(err);
	ok = ok && lp_reader_visit_pages(reader, offsets_column, expected_rows, ranges, num_ranges,
									 take_list20_page, take, err);
	if (!ok)
		free_list_take(take);
	return ok;
}

/* A list: its offsets column, then its item column(s). */
static bool
take_list20(LpFieldReader *reader, const LpType *type, uint32_t *column, int depth,
			const LpRowRange *ranges, size_t num_ranges, uint64_t expected_rows,
			bool under_list, LpArray **out, LpError *err)
{
	const LpFile *file = reader->file;
	uint32_t	offsets_column = (*column)++;
	const LpColumn *col = &file->columns[offsets_column];
	List20Take	take;
	LpArray    *array;
	uint64_t	rows;
	uint64_t	items;
	bool		ok;

	if (!take_list_offsets20(reader, offsets_column, ranges, num_ranges, expected_rows,
							 under_list, &take, err))
		return false;
	array = lp_array_new(type);
	if (array == NULL || (array->children = lp_alloc(sizeof(LpArray *))) == NULL)
	{
		lp_array_free(array);
		free_list_take(&take);
		return lp_decode_no_memory(err);
	}
	rows = take.offsets.len / 8 - 1;
	items = ((uint64_t *) take.offsets.data)[rows];
	array->length = rows;
	array->offsets = (uint64_t *) lp_buf_take(&take.offsets);
	lp_take_validity(array, &take.validity);
	ok = take_field20(reader, type->children[0], column, depth + 1,
					  (const LpRowRange *) take.items.data, take.items.len / sizeof(LpRowRange),
					  take.item_starts[col->num_pages], true, &array->children[0], err);
	lp_buf_free(&take.items);
	if (!ok)
	{
		lp_array_free(array);
		return false;
	}
	array->num_children = 1;
	if (array->children[0]->length != items)
	{
		lp_array_free(array);
		return lp_fail(err, LP_ERR_CORRUPT,
					   "list field \"%s\" of file \"%s\" has %llu items, its offsets %llu",
					   type->name, file->name,
					   (unsigned long long) array->children[0]->length, (unsigned long long) items);
	}
	*out = array;
	return true;
}

/*
 * A string or binary of Lance 0.13 and earlier, stored as a list of u8: the
 * rows' offsets from the list column, their bytes from the u8 column after it.
 */
static bool
take_bytes_list20(LpFieldReader *reader, const LpType *type, uint32_t *column,
				  const LpRowRange *ranges, size_t num_ranges, uint64_t expected_rows,
				  bool under_list, LpArray **out, LpError *err)
{
	static const LpType byte_type = {.id = LP_TYPE_UINT8, .name = "item", .field_id = -1};
	const LpFile *file = reader->file;
	uint32_t	offsets_column = (*column)++;
	uint32_t	bytes_column = (*column)++;
	List20Take	take;
	LpArray    *bytes = NULL;
	LpArray    *array;
	uint64_t	rows;

	if (!check_column(file, bytes_column, type, err) ||
		!take_list_offsets20(reader, offsets_column, ranges, num_ranges, expected_rows,
							 under_list, &take, err))
		return false;
	if (!take_leaf20(reader, &byte_type, bytes_column, (const LpRowRange *) take.items.data,
					 take.items.len / sizeof(LpRowRange),
					 take.item_starts[file->columns[offsets_column].num_pages], true, &bytes, err))
	{
		free_list_take(&take);
		return false;
	}
	rows = take.offsets.len / 8 - 1;
	if (bytes->length != ((uint64_t *) take.offsets.data)[rows] || bytes->null_count > 0)
	{
		lp_fail(err, LP_ERR_CORRUPT,
				"bytes of field \"%s\" in column %u of file \"%s\" do not match their offsets",
				type->name, bytes_column, file->name);
		lp_array_free(bytes);
		free_list_take(&take);
		return false;
	}
	array = lp_array_new(type);
	if (array == NULL)
	{
		lp_array_free(bytes);
		free_list_take(&take);
		return lp_decode_no_memory(err);
	}
	array->length = rows;
	array->offsets = (uint64_t *) lp_buf_take(&take.offsets);
	lp_take_validity(array, &take.validity);
	array->data_len = bytes->length;
	array->data = bytes->values;
	bytes->values = NULL;
	lp_array_free(bytes);
	free_list_take(&take);
	*out = array;
	return true;
}

/*
 * Rows ranges[0..num_ranges) of the subtree of type, whose columns hold
 * expected_rows rows (the file's, or under a list the list's items).
 */
static bool
take_field20(LpFieldReader *reader, const LpType *type, uint32_t *column, int depth,
			 const LpRowRange *ranges, size_t num_ranges, uint64_t expected_rows,
			 bool under_list, LpArray **out, LpError *err)
{
	const LpFile *file = reader->file;

	*out = NULL;
	if (depth > MAX_NESTING)
		return lp_fail(err, LP_ERR_UNSUPPORTED, "field \"%s\" of file \"%s\" is nested too deeply",
					   type->name, file->name);
	if (!check_column(file, *column, type, err))
		return false;
	if (type->id == LP_TYPE_LIST || type->id == LP_TYPE_LARGE_LIST)
		return take_list20(reader, type, column, depth, ranges, num_ranges, expected_rows,
						   under_list, out, err);
	if (type->id == LP_TYPE_STRUCT && !type->packed)
	{
		/* The header column carries no data; 2.0 cannot store null structs. */
		LpArray    *array = lp_array_new(type);
		uint64_t	length = 0;

		(*column)++;
		if (array == NULL ||
			(array->children = lp_alloc_array(type->num_children + 1, sizeof(LpArray *))) == NULL)
		{
			lp_array_free(array);
			return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory while decoding a Lance file");
		}
		for (size_t r = 0; r < num_ranges; r++)
			length += ranges[r].count;
		for (uint32_t i = 0; i < type->num_children; i++)
		{
			if (!take_field20(reader, type->children[i], column, depth + 1, ranges, num_ranges,
							  expected_rows, under_list, &array->children[i], err))
			{
				lp_array_free(array);
				return false;
			}
			array->num_children++;
			if (array->children[i]->length != length)
			{
				lp_array_free(array);
				return lp_fail(err, LP_ERR_CORRUPT,
							   "children of struct \"%s\" of file \"%s\" have different lengths",
							   type->name, file->name);
			}
		}
		array->length = length;
		*out = array;
		return true;
	}
	if (lp_type_is_variable_width(type) && lp_file_column_stores_bytes_as_list(file, *column))
		return take_bytes_list20(reader, type, column, ranges, num_ranges, expected_rows,
								 under_list, out, err);
	return take_leaf20(reader, type, (*column)++, ranges, num_ranges, expected_rows, under_list,
					   out, err);
}

bool
lp_take_v20_field(LpFieldReader *reader, const LpRowRange *ranges, size_t num_ranges,
				  LpArray **out, LpError *err)
{
	uint32_t	column = reader->first_column;

	return take_field20(reader, reader->type, &column, 0, ranges, num_ranges,
						reader->file->num_rows, false, out, err);
}
