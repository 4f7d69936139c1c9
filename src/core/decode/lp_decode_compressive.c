/*
 * lp_decode_compressive.c - the CompressiveEncoding tree of Lance 2.1+
 * (encodings_v2_1.proto), in its two forms: per mini-block chunk (a chunk's
 * value buffers) and per block (one whole buffer: levels, dictionaries).
 * Byte formats: lance-format.md §4.4.
 */
#include <string.h>

#include "base/lp_alloc.h"
#include "codec/lp_bitpack.h"
#include "codec/lp_general.h"
#include "base/lp_checked.h"
#include "decode/lp_decode_internal.h"

/* Bits per value accepted from a file: a bitmap or whole bytes, sanely wide. */
#define MAX_BITS_PER_VALUE (8 * 1024 * 1024)

typedef Lance__Encodings21__CompressiveEncoding CE;

bool
lp_page_decompress(const LpPageContext *ctx, Lance__Encodings21__CompressionScheme scheme,
				   const uint8_t *data, uint64_t len, LpBuf *out)
{
	LpError		local = {0};

	if (scheme != LANCE__ENCODINGS21__COMPRESSION_SCHEME__COMPRESSION_ALGORITHM_LZ4 &&
		scheme != LANCE__ENCODINGS21__COMPRESSION_SCHEME__COMPRESSION_ALGORITHM_ZSTD)
		return lp_page_fail(ctx, LP_ERR_UNSUPPORTED,
							"general compression scheme %d is not supported", (int) scheme);
	if (lp_general_decompress(scheme == LANCE__ENCODINGS21__COMPRESSION_SCHEME__COMPRESSION_ALGORITHM_LZ4 ?
							  LP_GENERAL_LZ4 : LP_GENERAL_ZSTD, data, len, out, &local))
		return true;
	lp_page_fail(ctx, local.code, "%s", local.message);
	if (local.detail[0] != '\0')
		lp_error_detail(ctx->err, "%s", local.detail);
	return false;
}

static bool
missing(const LpPageContext *ctx, const char *what)
{
	return lp_page_fail(ctx, LP_ERR_CORRUPT, "encoding lacks its %s", what);
}

static bool
valid_bits(uint64_t bits)
{
	return bits == 1 || (bits > 0 && bits % 8 == 0 && bits <= MAX_BITS_PER_VALUE);
}

/* Bytes taken by n values of bits each (bitmap when bits == 1). */
static bool
fixed_bytes(uint64_t bits, uint64_t n, uint64_t *bytes)
{
	if (bits == 1)
	{
		*bytes = n / 8 + (n % 8 != 0);
		return true;
	}
	return lp_mul_u64(n, bits / 8, bytes);
}

/* A Flat leaf (bits_per_value, optional whole-buffer compression). */
static bool
decode_flat(const LpPageContext *ctx, const Lance__Encodings21__Flat *flat,
			const uint8_t *data, uint64_t len, uint64_t n, LpFlatValues *out)
{
	uint64_t	bytes;
	LpBuf		inflated = {0};
	bool		ok;

	if (!valid_bits(flat->bits_per_value))
		return lp_page_fail(ctx, LP_ERR_CORRUPT, "flat encoding has %llu bits per value",
							(unsigned long long) flat->bits_per_value);
	if (flat->data != NULL &&
		flat->data->scheme != LANCE__ENCODINGS21__COMPRESSION_SCHEME__COMPRESSION_ALGORITHM_UNSPECIFIED)
	{
		if (!lp_page_decompress(ctx, flat->data->scheme, data, len, &inflated))
		{
			lp_buf_free(&inflated);
			return false;
		}
		data = inflated.data;
		len = inflated.len;
	}
	lp_flat_values_init_fixed(out, (uint32_t) flat->bits_per_value);
	if (!fixed_bytes(flat->bits_per_value, n, &bytes) || bytes > len)
	{
		lp_buf_free(&inflated);
		return lp_page_fail(ctx, LP_ERR_CORRUPT,
							"flat buffer of %llu bytes is too short for %llu values of %llu bits",
							(unsigned long long) len, (unsigned long long) n,
							(unsigned long long) flat->bits_per_value);
	}
	ok = lp_buf_append(&out->data, data, bytes);
	lp_buf_free(&inflated);
	if (!ok)
		return lp_page_no_memory(ctx);
	out->num_values = n;
	return true;
}

static bool
check_word_bits(const LpPageContext *ctx, uint64_t bits)
{
	if (bits != 8 && bits != 16 && bits != 32 && bits != 64)
		return lp_page_fail(ctx, LP_ERR_CORRUPT,
							"bit-packed values are %llu bits wide", (unsigned long long) bits);
	return true;
}

/*
 * InlineBitpacking: blocks of 1024 values, each a T-bit word holding the
 * packed width W and then 1024 * W / T packed words; the last block is
 * zero-padded to 1024 values.
 */
static bool
decode_inline_bitpacking(const LpPageContext *ctx, uint64_t type_bits,
						 const uint8_t *data, uint64_t len, uint64_t n, LpFlatValues *out)
{
	uint32_t	word_bytes = (uint32_t) type_bits / 8;
	uint64_t	pos = 0;
	uint64_t	done = 0;
	uint8_t    *unpacked;

	if (!check_word_bits(ctx, type_bits))
		return false;
	lp_flat_values_init_fixed(out, (uint32_t) type_bits);
	unpacked = lp_alloc((size_t) LP_FASTLANES_BLOCK * word_bytes);
	if (unpacked == NULL || !lp_buf_reserve(&out->data, n * word_bytes))
	{
		lp_free(unpacked);
		return lp_page_no_memory(ctx);
	}
	while (done < n)
	{
		uint64_t	width;
		uint64_t	take = n - done < LP_FASTLANES_BLOCK ? n - done : LP_FASTLANES_BLOCK;

		if (len - pos < word_bytes)
			break;
		width = lp_le_uint(data + pos, word_bytes);
		pos += word_bytes;
		if (width > type_bits || len - pos < lp_fastlanes_packed_bytes((uint32_t) width))
			break;
		lp_fastlanes_unpack((uint32_t) type_bits, (uint32_t) width, data + pos, unpacked);
		pos += lp_fastlanes_packed_bytes((uint32_t) width);
		lp_buf_append(&out->data, unpacked, take * word_bytes);
		done += take;
	}
	lp_free(unpacked);
	if (done < n)
		return lp_page_fail(ctx, LP_ERR_CORRUPT,
							"inline bit-packed buffer of %llu bytes is damaged or too short for %llu values",
							(unsigned long long) len, (unsigned long long) n);
	out->num_values = n;
	return true;
}

/*
 * OutOfLineBitpacking: whole blocks of 1024 values at one width W without
 * headers; a partial last block is either packed (zero-padded) or stored as
 * raw T-bit values, told apart by the buffer length.
 */
static bool
decode_out_of_line_bitpacking(const LpPageContext *ctx,
							  const Lance__Encodings21__OutOfLineBitpacking *enc,
							  const uint8_t *data, uint64_t len, uint64_t n, LpFlatValues *out)
{
	uint64_t	type_bits = enc->uncompressed_bits_per_value;
	uint64_t	width;
	uint32_t	word_bytes;
	uint64_t	words_per_block;
	uint64_t	whole;
	uint64_t	tail;
	uint64_t	total_words;
	uint64_t	needed;
	uint8_t    *unpacked;

	if (!check_word_bits(ctx, type_bits))
		return false;
	if (enc->values == NULL ||
		enc->values->compression_case != LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_FLAT)
		return lp_page_unsupported(ctx, "out_of_line_bitpacking without flat values");
	width = enc->values->flat->bits_per_value;
	if (width > type_bits)
		return lp_page_fail(ctx, LP_ERR_CORRUPT, "bit width %llu exceeds %llu",
							(unsigned long long) width, (unsigned long long) type_bits);
	word_bytes = (uint32_t) type_bits / 8;
	words_per_block = LP_FASTLANES_BLOCK * width / type_bits;
	whole = n / LP_FASTLANES_BLOCK;
	tail = n % LP_FASTLANES_BLOCK;
	if (len % word_bytes != 0)
		return lp_page_fail(ctx, LP_ERR_CORRUPT, "bit-packed buffer is not whole words");
	total_words = len / word_bytes;
	needed = whole * words_per_block;
	if (needed > total_words)
		return lp_page_fail(ctx, LP_ERR_CORRUPT, "bit-packed buffer is too short");

	lp_flat_values_init_fixed(out, (uint32_t) type_bits);
	unpacked = lp_alloc((size_t) LP_FASTLANES_BLOCK * word_bytes);
	if (unpacked == NULL || !lp_buf_reserve(&out->data, n * word_bytes))
	{
		lp_free(unpacked);
		return lp_page_no_memory(ctx);
	}
	for (uint64_t b = 0; b < whole; b++)
	{
		lp_fastlanes_unpack((uint32_t) type_bits, (uint32_t) width,
							data + b * words_per_block * word_bytes, unpacked);
		lp_buf_append(&out->data, unpacked, (uint64_t) LP_FASTLANES_BLOCK * word_bytes);
	}
	if (tail > 0)
	{
		const uint8_t *rest = data + needed * word_bytes;

		if (total_words == needed + tail)
			lp_buf_append(&out->data, rest, tail * word_bytes);
		else if (total_words >= needed + words_per_block)
		{
			lp_fastlanes_unpack((uint32_t) type_bits, (uint32_t) width, rest, unpacked);
			lp_buf_append(&out->data, unpacked, tail * word_bytes);
		}
		else
		{
			lp_free(unpacked);
			return lp_page_fail(ctx, LP_ERR_CORRUPT, "bit-packed buffer has a short last block");
		}
	}
	lp_free(unpacked);
	out->num_values = n;
	return true;
}

/* Check offsets[0..n] (width bytes each) and build a variable block. */
static bool
variable_from_offsets(const LpPageContext *ctx, const uint8_t *offsets, uint32_t width,
					  uint64_t n, const uint8_t *bytes, uint64_t bytes_len,
					  uint64_t base, LpFlatValues *out)
{
	uint64_t	first;
	uint64_t	prev;

	if (!lp_flat_values_init_variable(out) || !lp_buf_reserve(&out->offsets, n * 8))
	{
		lp_flat_values_free(out);
		return lp_page_no_memory(ctx);
	}
	first = lp_le_uint(offsets, width);
	prev = first;
	if (first < base)
	{
		lp_flat_values_free(out);
		return lp_page_fail(ctx, LP_ERR_CORRUPT, "variable-width offsets start inside the offsets");
	}
	for (uint64_t i = 1; i <= n; i++)
	{
		uint64_t	offset = lp_le_uint(offsets + i * width, width);

		if (offset < prev || offset - base > bytes_len)
		{
			lp_flat_values_free(out);
			return lp_page_fail(ctx, LP_ERR_CORRUPT, "variable-width offsets are out of order or out of range");
		}
		lp_buf_append_u64(&out->offsets, offset - first);
		prev = offset;
	}
	if (!lp_buf_append(&out->data, bytes + (first - base), prev - first))
	{
		lp_flat_values_free(out);
		return lp_page_no_memory(ctx);
	}
	out->num_values = n;
	return true;
}

static bool
offsets_width(const LpPageContext *ctx, const Lance__Encodings21__Variable *variable,
			  uint32_t *width)
{
	if (variable->offsets == NULL ||
		variable->offsets->compression_case != LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_FLAT)
		return lp_page_unsupported(ctx, "variable with compressed offsets");
	if (variable->offsets->flat->bits_per_value != 32 &&
		variable->offsets->flat->bits_per_value != 64)
		return lp_page_fail(ctx, LP_ERR_CORRUPT, "variable offsets are %llu bits wide",
							(unsigned long long) variable->offsets->flat->bits_per_value);
	*width = (uint32_t) variable->offsets->flat->bits_per_value / 8;
	return true;
}

/* Variable in a chunk: n + 1 offsets relative to the buffer start, then bytes. */
static bool
decode_variable_chunk(const LpPageContext *ctx, const Lance__Encodings21__Variable *variable,
					  const uint8_t *data, uint64_t len, uint64_t n, LpFlatValues *out)
{
	uint32_t	width = 0;
	uint64_t	table;
	LpBuf		inflated = {0};
	bool		ok;

	if (!offsets_width(ctx, variable, &width))
		return false;
	if (variable->values != NULL &&
		variable->values->scheme != LANCE__ENCODINGS21__COMPRESSION_SCHEME__COMPRESSION_ALGORITHM_UNSPECIFIED)
	{
		if (!lp_page_decompress(ctx, variable->values->scheme, data, len, &inflated))
		{
			lp_buf_free(&inflated);
			return false;
		}
		data = inflated.data;
		len = inflated.len;
	}
	if (!lp_mul_u64(n + 1, width, &table) || table > len)
	{
		lp_buf_free(&inflated);
		return lp_page_fail(ctx, LP_ERR_CORRUPT, "variable-width chunk is too short for its offsets");
	}
	ok = variable_from_offsets(ctx, data, width, n, data, len, 0, out);
	lp_buf_free(&inflated);
	return ok;
}

/*
 * Variable as a block: u32 bits per offset, then the start of the bytes
 * (u32 for 32-bit offsets; u32 padding + u64 for 64-bit), then the offsets,
 * relative to the start of the bytes.
 */
static bool
decode_variable_block(const LpPageContext *ctx, const uint8_t *data, uint64_t len,
					  uint64_t n, LpFlatValues *out)
{
	uint32_t	bits;
	uint64_t	header;
	uint64_t	bytes_start;
	uint64_t	table;

	if (len < 8)
		return lp_page_fail(ctx, LP_ERR_CORRUPT, "variable-width block is too short");
	bits = lp_le32(data);
	if (bits == 32)
	{
		header = 8;
		bytes_start = lp_le32(data + 4);
	}
	else if (bits == 64 && len >= 16)
	{
		header = 16;
		bytes_start = lp_le64(data + 8);
	}
	else
		return lp_page_fail(ctx, LP_ERR_CORRUPT, "variable-width block has a bad header");
	if (!lp_mul_u64(n + 1, bits / 8, &table) || bytes_start > len ||
		bytes_start < header || bytes_start - header < table)
		return lp_page_fail(ctx, LP_ERR_CORRUPT, "variable-width block is too short for its offsets");
	return variable_from_offsets(ctx, data + header, bits / 8, n, data + bytes_start,
								 len - bytes_start, 0, out);
}

static bool
fsst_expand(const LpPageContext *ctx, const ProtobufCBinaryData *symbol_table,
			LpFlatValues *block)
{
	return lp_fsst_expand_values(ctx, symbol_table->data, symbol_table->len, NULL, block);
}

/* An FSST chunk: its compressed values, then those selected expanded (NULL: all). */
static bool
fsst_chunk(const LpPageContext *ctx, const Lance__Encodings21__Fsst *fsst,
		   const LpSlice *buffers, uint32_t num_buffers, uint64_t n,
		   const uint8_t *selected, LpFlatValues *out)
{
	if (!lp_miniblock_decompress(ctx, fsst->values, buffers, num_buffers, n, out))
		return false;
	if (!lp_fsst_expand_values(ctx, fsst->symbol_table.data, fsst->symbol_table.len,
							  selected, out))
	{
		lp_flat_values_free(out);
		return false;
	}
	return true;
}

/*
 * Whether an RLE side tells its own number of runs: flat values, or general
 * compression around them (Lance 12 compresses each chunk's slice of either
 * side on its own).  Other sides (out-of-line bit-packed run lengths) need
 * the count from the other side.
 */
static bool
rle_side_counts_itself(const LpCompressive *side)
{
	if (side->compression_case == LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_GENERAL)
		return side->general->values != NULL && rle_side_counts_itself(side->general->values);
	return side->compression_case == LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_FLAT &&
		side->flat->bits_per_value >= 8 && side->flat->bits_per_value % 8 == 0;
}

/* Decode a side that counts itself: as many values as its (inflated) bytes hold. */
static bool
rle_side_decode_counted(const LpPageContext *ctx, const LpCompressive *side,
						const uint8_t *data, uint64_t len, LpFlatValues *out)
{
	memset(out, 0, sizeof(*out));
	if (side->compression_case == LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_GENERAL)
	{
		LpBuf		inflated = {0};
		bool		ok;

		if (side->general->compression == NULL)
			return missing(ctx, "general compression settings");
		if (!lp_page_decompress(ctx, side->general->compression->scheme, data, len, &inflated))
		{
			lp_buf_free(&inflated);
			return false;
		}
		ok = rle_side_decode_counted(ctx, side->general->values, inflated.data, inflated.len, out);
		lp_buf_free(&inflated);
		return ok;
	}
	if (len % (side->flat->bits_per_value / 8) != 0)
		return lp_page_fail(ctx, LP_ERR_CORRUPT,
							"rle buffer of %llu bytes is not whole %llu-bit values",
							(unsigned long long) len,
							(unsigned long long) side->flat->bits_per_value);
	return decode_flat(ctx, side->flat, data, len, len / (side->flat->bits_per_value / 8), out);
}

/*
 * The two sides of an RLE: the one that counts itself first, then the other
 * with that many runs.  When both count themselves the counts must agree.
 */
static bool
rle_decode_sides(const LpPageContext *ctx, const Lance__Encodings21__Rle *rle,
				 const uint8_t *values, uint64_t values_len,
				 const uint8_t *lengths, uint64_t lengths_len,
				 LpFlatValues *run_values, LpFlatValues *run_lengths)
{
	bool		values_count = rle_side_counts_itself(rle->values);
	bool		lengths_count = rle_side_counts_itself(rle->run_lengths);
	bool		ok;

	memset(run_values, 0, sizeof(*run_values));
	memset(run_lengths, 0, sizeof(*run_lengths));
	if (!values_count && !lengths_count)
		return lp_page_fail(ctx, LP_ERR_CORRUPT,
							"rle values and run lengths both need the number of runs");
	if (values_count)
	{
		ok = rle_side_decode_counted(ctx, rle->values, values, values_len, run_values) &&
			(lengths_count ?
			 rle_side_decode_counted(ctx, rle->run_lengths, lengths, lengths_len, run_lengths) :
			 lp_flat_values_decompress(ctx, rle->run_lengths, lengths, lengths_len,
								 run_values->num_values, run_lengths));
	}
	else
		ok = rle_side_decode_counted(ctx, rle->run_lengths, lengths, lengths_len, run_lengths) &&
			lp_flat_values_decompress(ctx, rle->values, values, values_len,
								run_lengths->num_values, run_values);
	if (ok && run_values->num_values != run_lengths->num_values)
		ok = lp_page_fail(ctx, LP_ERR_CORRUPT, "rle has %llu run values but %llu run lengths",
						  (unsigned long long) run_values->num_values,
						  (unsigned long long) run_lengths->num_values);
	if (!ok)
	{
		lp_flat_values_free(run_values);
		lp_flat_values_free(run_lengths);
	}
	return ok;
}

/*
 * RLE: the run values and the run lengths, each through its own encoding
 * (flat, general around flat, or bit-packed run lengths), expanded to n
 * values.  Runs past n are cut off, as Lance does for mini-block chunks.
 */
static bool
rle_decode(const LpPageContext *ctx, const Lance__Encodings21__Rle *rle,
		   const uint8_t *values, uint64_t values_len,
		   const uint8_t *lengths, uint64_t lengths_len, uint64_t n, LpFlatValues *out)
{
	LpFlatValues		run_values;
	LpFlatValues		run_lengths;
	uint64_t	runs;
	uint32_t	value_bytes;
	uint32_t	length_bytes;
	uint64_t	done = 0;
	bool		ok = false;

	memset(out, 0, sizeof(*out));
	if (rle->values == NULL || rle->run_lengths == NULL)
		return missing(ctx, "rle values or run lengths");
	if (!rle_decode_sides(ctx, rle, values, values_len, lengths, lengths_len,
						  &run_values, &run_lengths))
		return false;
	runs = run_values.num_values;
	value_bytes = run_values.bits_per_value / 8;
	length_bytes = run_lengths.bits_per_value / 8;
	if (run_values.variable || !check_word_bits(ctx, run_values.bits_per_value))
		goto done;
	if (run_lengths.variable ||
		(length_bytes != 1 && length_bytes != 2 && length_bytes != 4 && length_bytes != 8) ||
		run_lengths.bits_per_value % 8 != 0)
	{
		lp_page_fail(ctx, LP_ERR_CORRUPT, "rle run lengths are %u bits wide",
					 run_lengths.bits_per_value);
		goto done;
	}
	lp_flat_values_init_fixed(out, run_values.bits_per_value);
	if (!lp_buf_reserve(&out->data, n * value_bytes))
	{
		lp_page_no_memory(ctx);
		goto done;
	}
	for (uint64_t r = 0; r < runs && done < n; r++)
	{
		uint64_t	run = lp_le_uint(run_lengths.data.data + r * length_bytes, length_bytes);

		if (run == 0)
		{
			lp_page_fail(ctx, LP_ERR_CORRUPT, "rle run %llu has length 0",
						 (unsigned long long) r);
			goto done;
		}
		if (run > n - done)
			run = n - done;
		for (uint64_t i = 0; i < run; i++)
			lp_buf_append(&out->data, run_values.data.data + r * value_bytes, value_bytes);
		done += run;
	}
	if (done != n)
	{
		lp_page_fail(ctx, LP_ERR_CORRUPT, "rle runs cover %llu of %llu values",
					 (unsigned long long) done, (unsigned long long) n);
		goto done;
	}
	out->num_values = n;
	ok = true;

done:
	if (!ok)
		lp_flat_values_free(out);
	lp_flat_values_free(&run_values);
	lp_flat_values_free(&run_lengths);
	return ok;
}

/* ByteStreamSplit: byte j of value i is at j * n + i. */
static bool
decode_byte_stream_split(const LpPageContext *ctx, const Lance__Encodings21__ByteStreamSplit *bss,
						 const uint8_t *data, uint64_t len, uint64_t n, LpFlatValues *out)
{
	uint64_t	bits;
	uint32_t	width;
	uint64_t	bytes;

	if (bss->values == NULL ||
		bss->values->compression_case != LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_FLAT)
		return lp_page_unsupported(ctx, "byte_stream_split without flat values");
	bits = bss->values->flat->bits_per_value;
	if (!check_word_bits(ctx, bits))
		return false;
	width = (uint32_t) bits / 8;
	if (!lp_mul_u64(n, width, &bytes) || bytes > len)
		return lp_page_fail(ctx, LP_ERR_CORRUPT, "byte stream split buffer is too short");
	lp_flat_values_init_fixed(out, (uint32_t) bits);
	if (!lp_buf_reserve(&out->data, bytes))
		return lp_page_no_memory(ctx);
	for (uint64_t i = 0; i < n; i++)
		for (uint32_t j = 0; j < width; j++)
			out->data.data[i * width + j] = data[j * n + i];
	out->data.len = bytes;
	out->num_values = n;
	return true;
}

/*
 * Values of FixedSizeList: the items, regrouped as one wide value per list
 * (n bits for a list of n bools).  item_validity, when given, is the
 * bitmap of the items' validity.
 */
static bool
regroup_fixed_size_list(const LpPageContext *ctx, const Lance__Encodings21__FixedSizeList *fsl,
						uint64_t n, LpFlatValues *items, const uint8_t *item_validity, LpFlatValues *out)
{
	uint64_t	bits;

	if (items->variable || items->has_item_validity ||
		(items->bits_per_value != 1 && items->bits_per_value % 8 != 0) ||
		!lp_mul_u64(items->bits_per_value, fsl->items_per_value, &bits) ||
		bits > MAX_BITS_PER_VALUE)
	{
		lp_flat_values_free(items);
		return lp_page_unsupported(ctx, "fixed_size_list of nested lists or variable-width items");
	}
	*out = *items;
	memset(items, 0, sizeof(*items));
	out->bits_per_value = (uint32_t) bits;
	out->num_values = n;
	if (item_validity != NULL)
	{
		out->has_item_validity = true;
		out->items_per_value = (uint32_t) fsl->items_per_value;
		if (!lp_bits_append_bitmap(&out->item_validity, item_validity, 0,
								   n * fsl->items_per_value))
		{
			lp_flat_values_free(out);
			return lp_page_no_memory(ctx);
		}
	}
	return true;
}

static bool
fsl_items(const LpPageContext *ctx, const Lance__Encodings21__FixedSizeList *fsl, uint64_t n,
		  uint64_t *items)
{
	if (fsl->values == NULL)
		return missing(ctx, "fixed-size-list values");
	if (fsl->items_per_value == 0 || fsl->items_per_value > UINT32_MAX ||
		!lp_mul_u64(n, fsl->items_per_value, items) || *items > ((uint64_t) 1 << 40))
		return lp_page_fail(ctx, LP_ERR_CORRUPT, "fixed-size list of %llu items per value",
							(unsigned long long) fsl->items_per_value);
	return true;
}

static bool
miniblock_decompress(const LpPageContext *ctx, const LpCompressive *enc,
					 const LpSlice *buffers, uint32_t num_buffers,
					 uint64_t n, LpFlatValues *out)
{
	memset(out, 0, sizeof(*out));
	if (enc == NULL)
		return missing(ctx, "value compression");
	switch (enc->compression_case)
	{
		case LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_FLAT:
		case LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_INLINE_BITPACKING:
		case LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_VARIABLE:
		case LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_BYTE_STREAM_SPLIT:
			if (num_buffers != 1)
				return lp_page_fail(ctx, LP_ERR_CORRUPT, "%s chunk has %u buffers",
									lp_compressive_name(enc), num_buffers);
			break;
		default:
			break;
	}
	switch (enc->compression_case)
	{
		case LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_FLAT:
			return decode_flat(ctx, enc->flat, buffers[0].data, buffers[0].len, n, out);
		case LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_INLINE_BITPACKING:
			if (enc->inline_bitpacking->values != NULL &&
				enc->inline_bitpacking->values->scheme != LANCE__ENCODINGS21__COMPRESSION_SCHEME__COMPRESSION_ALGORITHM_UNSPECIFIED)
				return lp_page_unsupported(ctx, "inline_bitpacking with general compression");
			return decode_inline_bitpacking(ctx, enc->inline_bitpacking->uncompressed_bits_per_value,
											buffers[0].data, buffers[0].len, n, out);
		case LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_VARIABLE:
			return decode_variable_chunk(ctx, enc->variable, buffers[0].data, buffers[0].len, n, out);
		case LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_BYTE_STREAM_SPLIT:
			return decode_byte_stream_split(ctx, enc->byte_stream_split, buffers[0].data,
											buffers[0].len, n, out);
		case LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_FSST:
			return fsst_chunk(ctx, enc->fsst, buffers, num_buffers, n, NULL, out);
		case LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_RLE:
			if (num_buffers != 2)
				return lp_page_fail(ctx, LP_ERR_CORRUPT, "rle chunk has %u buffers", num_buffers);
			return rle_decode(ctx, enc->rle, buffers[0].data, buffers[0].len,
							  buffers[1].data, buffers[1].len, n, out);
		case LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_FIXED_SIZE_LIST:
			{
				uint64_t	items;
				LpFlatValues		inner;

				const uint8_t *validity = NULL;

				if (!fsl_items(ctx, enc->fixed_size_list, n, &items))
					return false;
				/* Item validity comes first: a bitmap of the chunk's items. */
				if (enc->fixed_size_list->has_validity)
				{
					if (num_buffers < 2 || buffers[0].len < (items + 7) / 8)
						return lp_page_fail(ctx, LP_ERR_CORRUPT,
											"fixed-size list chunk lacks its item validity");
					validity = buffers[0].data;
					buffers++;
					num_buffers--;
				}
				if (!lp_miniblock_decompress(ctx, enc->fixed_size_list->values, buffers,
											 num_buffers, items, &inner))
					return false;
				return regroup_fixed_size_list(ctx, enc->fixed_size_list, n, &inner, validity, out);
			}
		case LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_PACKED_STRUCT:
			if (enc->packed_struct->values == NULL)
				return missing(ctx, "packed struct values");
			if (!lp_miniblock_decompress(ctx, enc->packed_struct->values, buffers, num_buffers,
										 n, out))
				return false;
			return lp_packed_struct_check(ctx, enc->packed_struct, out);
		case LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_GENERAL:
			{
				LpBuf		inflated = {0};
				LpSlice    *copy;
				bool		ok;

				if (enc->general->compression == NULL || enc->general->values == NULL)
					return missing(ctx, "general compression settings");
				if (num_buffers < 1)
					return lp_page_fail(ctx, LP_ERR_CORRUPT, "general chunk has no buffers");
				if (!lp_page_decompress(ctx, enc->general->compression->scheme,
										   buffers[0].data, buffers[0].len, &inflated))
				{
					lp_buf_free(&inflated);
					return false;
				}
				copy = lp_alloc_array(num_buffers, sizeof(LpSlice));
				if (copy == NULL)
				{
					lp_buf_free(&inflated);
					return lp_page_no_memory(ctx);
				}
				memcpy(copy, buffers, num_buffers * sizeof(LpSlice));
				copy[0].data = inflated.data;
				copy[0].len = inflated.len;
				ok = lp_miniblock_decompress(ctx, enc->general->values, copy, num_buffers, n, out);
				lp_free(copy);
				lp_buf_free(&inflated);
				return ok;
			}
		default:
			return lp_page_unsupported(ctx, lp_compressive_name(enc));
	}
}

static bool
block_decompress(const LpPageContext *ctx, const LpCompressive *enc,
				 const uint8_t *data, uint64_t len, uint64_t n, LpFlatValues *out)
{
	memset(out, 0, sizeof(*out));
	if (enc == NULL)
		return missing(ctx, "block compression");
	switch (enc->compression_case)
	{
		case LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_FLAT:
			return decode_flat(ctx, enc->flat, data, len, n, out);
		case LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_INLINE_BITPACKING:
			return decode_inline_bitpacking(ctx, enc->inline_bitpacking->uncompressed_bits_per_value,
											data, len, n, out);
		case LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_OUT_OF_LINE_BITPACKING:
			{
				bool		ok = decode_out_of_line_bitpacking(ctx, enc->out_of_line_bitpacking,
															   data, len, n, out);

				if (!ok)
					lp_flat_values_free(out);
				return ok;
			}
		case LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_VARIABLE:
			{
				bool		ok = decode_variable_block(ctx, data, len, n, out);

				if (!ok)
					lp_flat_values_free(out);
				return ok;
			}
		case LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_CONSTANT:
			{
				const Lance__Encodings21__Constant *constant = enc->constant;

				if (constant->value_presence_case != LANCE__ENCODINGS21__CONSTANT__VALUE_PRESENCE_VALUE ||
					constant->value.len == 0 || constant->value.len > MAX_BITS_PER_VALUE / 8)
					return lp_page_unsupported(ctx, "constant without a value");
				lp_flat_values_init_fixed(out, (uint32_t) constant->value.len * 8);
				if (!lp_flat_values_append_repeated(out, constant->value.data, constant->value.len, n))
				{
					lp_flat_values_free(out);
					return lp_page_no_memory(ctx);
				}
				return true;
			}
		case LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_FIXED_SIZE_LIST:
			{
				uint64_t	items;
				LpFlatValues		inner;

				if (!fsl_items(ctx, enc->fixed_size_list, n, &items))
					return false;
				if (enc->fixed_size_list->has_validity)
					return lp_page_unsupported(ctx, "fixed_size_list block with item validity");
				if (!lp_flat_values_decompress(ctx, enc->fixed_size_list->values, data, len, items, &inner))
					return false;
				return regroup_fixed_size_list(ctx, enc->fixed_size_list, n, &inner, NULL, out);
			}
		case LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_GENERAL:
			{
				LpBuf		inflated = {0};
				bool		ok;

				if (enc->general->compression == NULL || enc->general->values == NULL)
					return missing(ctx, "general compression settings");
				if (!lp_page_decompress(ctx, enc->general->compression->scheme, data, len,
										   &inflated))
				{
					lp_buf_free(&inflated);
					return false;
				}
				ok = lp_flat_values_decompress(ctx, enc->general->values, inflated.data, inflated.len,
										 n, out);
				lp_buf_free(&inflated);
				return ok;
			}
		case LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_RLE:
			{
				/* u64 size of the values, the values, then the run lengths */
				uint64_t	values_len;

				if (len < 8 || (values_len = lp_le64(data)) > len - 8)
					return lp_page_fail(ctx, LP_ERR_CORRUPT, "rle block is too short");
				return rle_decode(ctx, enc->rle, data + 8, values_len,
								  data + 8 + values_len, len - 8 - values_len, n, out);
			}
		case LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_FSST:
			{
				if (!lp_flat_values_decompress(ctx, enc->fsst->values, data, len, n, out))
					return false;
				if (!fsst_expand(ctx, &enc->fsst->symbol_table, out))
				{
					lp_flat_values_free(out);
					return false;
				}
				return true;
			}
		default:
			return lp_page_unsupported(ctx, lp_compressive_name(enc));
	}
}

/* On failure nothing stays allocated in out. */
bool
lp_miniblock_decompress(const LpPageContext *ctx, const LpCompressive *enc,
						const LpSlice *buffers, uint32_t num_buffers,
						uint64_t n, LpFlatValues *out)
{
	if (miniblock_decompress(ctx, enc, buffers, num_buffers, n, out))
		return true;
	lp_flat_values_free(out);
	return false;
}

bool
lp_miniblock_decompress_selected(const LpPageContext *ctx, const LpCompressive *enc,
								 const LpSlice *buffers, uint32_t num_buffers,
								 uint64_t n, const uint8_t *selected, LpFlatValues *out)
{
	if (enc != NULL && enc->compression_case == LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_FSST)
		return fsst_chunk(ctx, enc->fsst, buffers, num_buffers, n, selected, out);
	return lp_miniblock_decompress(ctx, enc, buffers, num_buffers, n, out);
}

bool
lp_flat_values_decompress(const LpPageContext *ctx, const LpCompressive *enc,
					const uint8_t *data, uint64_t len, uint64_t n, LpFlatValues *out)
{
	if (block_decompress(ctx, enc, data, len, n, out))
		return true;
	lp_flat_values_free(out);
	return false;
}

bool
lp_levels_decompress(const LpPageContext *ctx, const LpCompressive *enc,
					 const uint8_t *data, uint64_t len, uint64_t num_levels,
					 uint16_t **levels)
{
	LpFlatValues		block;

	*levels = NULL;
	if (!lp_flat_values_decompress(ctx, enc, data, len, num_levels, &block))
		return false;
	if (block.variable || block.bits_per_value != 16 || block.num_values != num_levels)
	{
		lp_flat_values_free(&block);
		return lp_page_fail(ctx, LP_ERR_CORRUPT, "repetition or definition levels are not 16-bit values");
	}
	if (num_levels == 0)
	{
		lp_flat_values_free(&block);
		*levels = lp_alloc(2);
		return *levels ? true : lp_page_no_memory(ctx);
	}
	*levels = (uint16_t *) lp_buf_take(&block.data);
	return true;
}

/* Each value of a variable block compressed on its own (full-zip General). */
static bool
general_per_value(const LpPageContext *ctx, const Lance__Encodings21__General *general,
				  LpFlatValues *block)
{
	LpFlatValues		result;
	const uint64_t *offsets = lp_flat_values_offsets(block);

	if (general->compression == NULL)
		return missing(ctx, "general compression settings");
	if (!lp_flat_values_init_variable(&result))
		return lp_page_no_memory(ctx);
	for (uint64_t i = 0; i < block->num_values; i++)
	{
		uint64_t	len = offsets[i + 1] - offsets[i];

		if (len > 0 &&
			!lp_page_decompress(ctx, general->compression->scheme,
								   block->data.data + offsets[i], len, &result.data))
		{
			lp_flat_values_free(&result);
			return false;
		}
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

/*
 * Full-zip fixed-size lists: each value is the items' validity bitmap
 * (whole bytes, when has_validity) followed by the items.
 */
static bool
fixed_size_list_per_value(const LpPageContext *ctx, const Lance__Encodings21__FixedSizeList *fsl,
						  LpFlatValues *block)
{
	uint64_t	item_bits;
	uint64_t	items_bytes;
	uint64_t	validity_bytes;
	LpFlatValues		result;

	if (fsl->values == NULL ||
		fsl->values->compression_case != LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_FLAT)
		return lp_page_unsupported(ctx, "fixed_size_list of compressed or nested items");
	item_bits = fsl->values->flat->bits_per_value;
	validity_bytes = fsl->has_validity ? (fsl->items_per_value + 7) / 8 : 0;
	if (item_bits == 0 || item_bits % 8 != 0 || fsl->items_per_value == 0 ||
		fsl->items_per_value > UINT32_MAX ||
		!lp_mul_u64(item_bits / 8, fsl->items_per_value, &items_bytes) ||
		block->variable || block->bits_per_value != (validity_bytes + items_bytes) * 8)
		return lp_page_fail(ctx, LP_ERR_CORRUPT, "fixed-size list values have the wrong width");
	if (!fsl->has_validity)
		return true;
	lp_flat_values_init_fixed(&result, (uint32_t) (items_bytes * 8));
	result.has_item_validity = true;
	result.items_per_value = (uint32_t) fsl->items_per_value;
	if (!lp_buf_reserve(&result.data, block->num_values * items_bytes))
		return lp_page_no_memory(ctx);
	for (uint64_t i = 0; i < block->num_values; i++)
	{
		const uint8_t *value = block->data.data + i * (validity_bytes + items_bytes);

		if (!lp_bits_append_bitmap(&result.item_validity, value, 0, fsl->items_per_value) ||
			!lp_buf_append(&result.data, value + validity_bytes, items_bytes))
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

bool
lp_per_value_decompress(const LpPageContext *ctx, const LpCompressive *enc, LpFlatValues *block)
{
	if (enc == NULL)
		return missing(ctx, "value compression");
	switch (enc->compression_case)
	{
		case LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_FLAT:
			if (block->variable || block->bits_per_value != enc->flat->bits_per_value)
				return lp_page_fail(ctx, LP_ERR_CORRUPT, "flat values have the wrong width");
			return true;
		case LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_FIXED_SIZE_LIST:
			return fixed_size_list_per_value(ctx, enc->fixed_size_list, block);
		case LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_VARIABLE:
			if (!block->variable)
				return lp_page_fail(ctx, LP_ERR_CORRUPT, "variable encoding of fixed-width values");
			return true;
		case LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_FSST:
			if (!block->variable)
				return lp_page_fail(ctx, LP_ERR_CORRUPT, "fsst encoding of fixed-width values");
			return fsst_expand(ctx, &enc->fsst->symbol_table, block);
		case LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_GENERAL:
			if (!block->variable)
				return lp_page_fail(ctx, LP_ERR_CORRUPT, "general encoding of fixed-width values");
			return general_per_value(ctx, enc->general, block);
		case LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_PACKED_STRUCT:
			if (enc->packed_struct->values == NULL ||
				enc->packed_struct->values->compression_case != LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_FLAT)
				return lp_page_unsupported(ctx, "packed_struct of compressed rows");
			return lp_packed_struct_check(ctx, enc->packed_struct, block);
		case LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_VARIABLE_PACKED_STRUCT:
			return lp_variable_packed_canonical(ctx, enc->variable_packed_struct, block);
		default:
			return lp_page_unsupported(ctx, lp_compressive_name(enc));
	}
}
