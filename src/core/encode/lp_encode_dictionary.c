/*
 * lp_encode_dictionary.c - dictionary encoding of low-cardinality pages as
 * Lance chooses and lays it out (encodings/logical/primitive.rs
 * should_dictionary_encode and primitive/dict.rs for 2.1+,
 * previous/encoder.rs check_dict_encoding for 2.0):
 *  - 2.0: Utf8 pages of at least 100 values with fewer than 100 distinct
 *    valid values (Lance estimates them with HyperLogLog; this counts);
 *  - 2.1+: pages of at least 100 values, strings, binaries and 128-bit
 *    values of every version, 64-bit values from 2.2 on (what lancedb 0.39
 *    writes; 32-bit and narrower values never), when the page has at most
 *    LP_DICTIONARY_MAX_ITEMS distinct values and the estimated dictionary
 *    size (items, their offsets, one index of 1, 2 or 4 bytes per value)
 *    is under 0.8 of the page's bytes.  Lance's own distinct count is an
 *    estimate, so pages right at the bound may go either way there.
 * The dictionary of a 2.1+ page is written by Lance's block compressor
 * (compression.rs create_block_compressor); its indices are mini-block
 * values like any other 32-bit integers (lp_encode_page.c).
 */
#include <string.h>

#include "base/lp_alloc.h"
#include "base/lp_bytes.h"
#include "codec/lp_bitpack.h"
#include "encode/lp_encode_internal.h"
#include "format/lp_values.h"

/* Lance 2.1+ writes no dictionary of more distinct values than about this (observed). */
#define LP_DICTIONARY_MAX_ITEMS 2560
#define V20_MAX_ITEMS 99
#define LEAST_VALUES 100
#define TABLE_SLOTS 8192		/* a power of two above twice the largest dictionary */

static uint64_t
hash_bytes(const uint8_t *data, uint64_t len)
{
	uint64_t	hash = 0xcbf29ce484222325ULL;

	for (uint64_t i = 0; i < len; i++)
		hash = (hash ^ data[i]) * 0x100000001b3ULL;
	return hash;
}

static void
value_at(const LpLeafShape *shape, const LpPageValues *page, uint64_t i,
		 const uint8_t **data, uint64_t *len)
{
	if (shape->kind == LP_LEAF_VARIABLE)
	{
		const uint64_t *offsets = (const uint64_t *) page->offsets.data;

		*len = offsets[i + 1] - offsets[i];
		/* A page of empty strings may have no bytes at all. */
		*data = *len > 0 ? page->data.data + offsets[i] : (const uint8_t *) "";
	}
	else
	{
		*len = shape->bits / 8;
		*data = page->values.data + i * *len;
	}
}

static void
item_at(const LpLeafShape *shape, const LpDictionary *dictionary, uint64_t k,
		const uint8_t **data, uint64_t *len)
{
	if (shape->kind == LP_LEAF_VARIABLE)
	{
		const uint64_t *offsets = (const uint64_t *) dictionary->item_offsets.data;

		*len = offsets[k + 1] - offsets[k];
		*data = *len > 0 ? dictionary->items.data + offsets[k] : (const uint8_t *) "";
	}
	else
	{
		*len = shape->bits / 8;
		*data = dictionary->items.data + k * *len;
	}
}

/*
 * The distinct values of page in order of first appearance and every
 * value's index; *complete is false (and out freed) once there are more
 * than max_items.  With skip_nulls, null rows take index UINT32_MAX and no
 * item.  False when out of memory.
 */
static bool
build(const LpLeafShape *shape, const LpPageValues *page, uint64_t max_items, bool skip_nulls,
	  LpDictionary *out, bool *complete)
{
	uint32_t   *table = lp_alloc_array(TABLE_SLOTS, sizeof(uint32_t));	/* item + 1, 0 = free */
	bool		variable = shape->kind == LP_LEAF_VARIABLE;

	memset(out, 0, sizeof(*out));
	*complete = true;
	if (table == NULL || !lp_buf_reserve(&out->indices, page->num_values * 4) ||
		(variable && !lp_buf_append_u64(&out->item_offsets, 0)))
		goto no_memory;
	memset(table, 0, TABLE_SLOTS * sizeof(uint32_t));
	for (uint64_t i = 0; i < page->num_values; i++)
	{
		const uint8_t *data;
		uint64_t	len;
		uint64_t	slot;
		uint32_t	index;

		if (skip_nulls && page->null_count > 0 && !lp_bit_get(page->validity.buf.data, i))
		{
			lp_put_le32(out->indices.data + i * 4, UINT32_MAX);
			continue;
		}
		value_at(shape, page, i, &data, &len);
		for (slot = hash_bytes(data, len) & (TABLE_SLOTS - 1);; slot = (slot + 1) & (TABLE_SLOTS - 1))
		{
			const uint8_t *item;
			uint64_t	item_len;

			if (table[slot] == 0)
			{
				if (out->num_items == max_items)
				{
					*complete = false;
					lp_free(table);
					lp_dictionary_free(out);
					return true;
				}
				if (!lp_buf_append(&out->items, data, len) ||
					(variable && !lp_buf_append_u64(&out->item_offsets, out->items.len)))
					goto no_memory;
				table[slot] = (uint32_t) ++out->num_items;
				break;
			}
			item_at(shape, out, table[slot] - 1, &item, &item_len);
			if (item_len == len && (len == 0 || memcmp(item, data, len) == 0))
				break;
		}
		index = table[slot] - 1;
		lp_put_le32(out->indices.data + i * 4, index);
	}
	out->indices.len = page->num_values * 4;
	lp_free(table);
	return true;

no_memory:
	lp_free(table);
	lp_dictionary_free(out);
	return false;
}

bool
lp_dictionary_plan(LpFileVersion version, const LpLeafShape *shape, const LpPageValues *page,
				   LpDictionary *out, bool *use)
{
	uint64_t	n = page->num_values;
	uint64_t	data_size;
	uint64_t	estimate;
	uint64_t	index_bytes;
	bool		complete;

	memset(out, 0, sizeof(*out));
	*use = false;
	if (n < LEAST_VALUES)
		return true;
	if (shape->kind == LP_LEAF_VARIABLE)
		data_size = page->data.len;
	else if (shape->kind == LP_LEAF_FIXED &&
			 (shape->bits == 128 || (shape->bits == 64 && version >= LP_FILE_VERSION_2_2)))
		data_size = n * (shape->bits / 8);
	else
		return true;
	if (data_size == 0)
		return true;
	if (!build(shape, page, LP_DICTIONARY_MAX_ITEMS, false, out, &complete))
		return false;
	if (!complete)
		return true;
	index_bytes = out->num_items <= 256 ? 1 : out->num_items <= 65536 ? 2 : 4;
	estimate = n * index_bytes;
	if (shape->kind == LP_LEAF_VARIABLE)
		estimate += out->num_items * (data_size / n + shape->offset_bits / 8);
	else
		estimate += out->num_items * (shape->bits / 8);
	*use = 5 * estimate < 4 * data_size;
	if (!*use)
		lp_dictionary_free(out);
	return true;
}

bool
lp_dictionary_plan_v20(const LpLeafShape *shape, const LpPageValues *page, LpDictionary *out,
					   bool *use)
{
	bool		complete;

	memset(out, 0, sizeof(*out));
	*use = false;
	if (shape->kind != LP_LEAF_VARIABLE || !shape->utf8 || page->num_values < LEAST_VALUES)
		return true;
	if (!build(shape, page, V20_MAX_ITEMS, true, out, &complete))
		return false;
	*use = complete;
	return true;
}

void
lp_dictionary_free(LpDictionary *dictionary)
{
	lp_buf_free(&dictionary->items);
	lp_buf_free(&dictionary->item_offsets);
	lp_buf_free(&dictionary->indices);
	memset(dictionary, 0, sizeof(*dictionary));
}

/* ---- the 2.1+ dictionary buffer ------------------------------------------ */

static Lance__Encodings21__CompressiveEncoding *
next_ce(LpDictionaryBlock *out, int *used)
{
	Lance__Encodings21__CompressiveEncoding *ce = &out->ce[(*used)++];

	lance__encodings21__compressive_encoding__init(ce);
	return ce;
}

static Lance__Encodings21__CompressiveEncoding *
flat_ce(LpDictionaryBlock *out, int *used, uint64_t bits)
{
	Lance__Encodings21__CompressiveEncoding *ce = next_ce(out, used);

	lance__encodings21__flat__init(&out->flat);
	out->flat.bits_per_value = bits;
	ce->compression_case = LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_FLAT;
	ce->flat = &out->flat;
	return ce;
}

/* Lance's try_bitpack_for_block: bit-packed unless a block is all zeros or one block outweighs the values. */
static bool
bitpack_block(const LpLeafShape *shape, const LpDictionary *dictionary, LpDictionaryBlock *out,
			  int *used, bool *packed)
{
	uint32_t	bits = shape->bits;
	uint32_t	bytes = bits / 8;
	uint64_t	n = dictionary->num_items;
	uint64_t	blocks = (n + LP_FASTLANES_BLOCK - 1) / LP_FASTLANES_BLOCK;
	uint32_t	max_width = 0;
	uint8_t    *block;
	uint8_t    *packed_block;
	bool		ok = true;

	*packed = false;
	if (bits != 8 && bits != 16 && bits != 32 && bits != 64)
		return true;
	for (uint64_t b = 0; b < blocks; b++)
	{
		uint64_t	count = n - b * LP_FASTLANES_BLOCK < LP_FASTLANES_BLOCK ?
			n - b * LP_FASTLANES_BLOCK : LP_FASTLANES_BLOCK;
		uint32_t	width = lp_bit_width(bits, dictionary->items.data + b * LP_FASTLANES_BLOCK * bytes,
										 count);

		if (width == 0)
			return true;
		if (width > max_width)
			max_width = width;
	}
	if (blocks == 1 && lp_fastlanes_packed_bytes(max_width) >= n * bytes)
		return true;

	block = lp_alloc((size_t) LP_FASTLANES_BLOCK * bytes);
	packed_block = lp_alloc((size_t) LP_FASTLANES_BLOCK * bytes);
	if (block == NULL || packed_block == NULL)
		ok = false;
	for (uint64_t b = 0; ok && b < blocks; b++)
	{
		uint64_t	first = b * LP_FASTLANES_BLOCK;
		uint64_t	count = n - first < LP_FASTLANES_BLOCK ? n - first : LP_FASTLANES_BLOCK;
		uint8_t		word[8];

		if (n <= LP_FASTLANES_BLOCK)
		{
			lp_put_le_uint(word, bytes, max_width);
			ok = lp_buf_append(&out->buffer, word, bytes);
		}
		else if (count < LP_FASTLANES_BLOCK &&
				 (uint64_t) max_width * (LP_FASTLANES_BLOCK - count) >= (uint64_t) (bits - max_width) * count)
		{
			/* Out of line, padding the tail would cost more than packing it saves: raw values. */
			ok = lp_buf_append(&out->buffer, dictionary->items.data + first * bytes, count * bytes);
			continue;
		}
		memset(block, 0, (size_t) LP_FASTLANES_BLOCK * bytes);
		memcpy(block, dictionary->items.data + first * bytes, count * bytes);
		ok = ok && lp_fastlanes_pack(bits, max_width, block, packed_block) &&
			lp_buf_append(&out->buffer, packed_block, lp_fastlanes_packed_bytes(max_width));
	}
	lp_free(block);
	lp_free(packed_block);
	if (!ok)
		return false;
	if (n <= LP_FASTLANES_BLOCK)
	{
		Lance__Encodings21__CompressiveEncoding *ce = next_ce(out, used);

		lance__encodings21__inline_bitpacking__init(&out->inline_bitpacking);
		out->inline_bitpacking.uncompressed_bits_per_value = bits;
		ce->compression_case = LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_INLINE_BITPACKING;
		ce->inline_bitpacking = &out->inline_bitpacking;
		out->encoding = ce;
	}
	else
	{
		Lance__Encodings21__CompressiveEncoding *values = flat_ce(out, used, max_width);
		Lance__Encodings21__CompressiveEncoding *ce = next_ce(out, used);

		lance__encodings21__out_of_line_bitpacking__init(&out->out_of_line);
		out->out_of_line.uncompressed_bits_per_value = bits;
		out->out_of_line.values = values;
		ce->compression_case = LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_OUT_OF_LINE_BITPACKING;
		ce->out_of_line_bitpacking = &out->out_of_line;
		out->encoding = ce;
	}
	*packed = true;
	return true;
}

bool
lp_dictionary_block_encode(LpFileVersion version, const LpLeafShape *shape,
						   const LpDictionary *dictionary, LpDictionaryBlock *out)
{
	static const LpColumnCompression lz4 = {LP_COMPRESSION_LZ4, false, 0};
	LpBuf		raw = {0};
	int			used = 0;
	Lance__Encodings21__CompressiveEncoding *inner;

	memset(out, 0, sizeof(*out));
	if (shape->kind == LP_LEAF_VARIABLE)
	{
		uint32_t	width = shape->offset_bits / 8;
		const uint64_t *offsets = (const uint64_t *) dictionary->item_offsets.data;
		uint64_t	bytes_start = 2 * (uint64_t) width + (dictionary->num_items + 1) * width;
		uint8_t		word[8];
		bool		ok;

		lp_put_le_uint(word, width, shape->offset_bits);
		ok = lp_buf_append(&raw, word, width);
		lp_put_le_uint(word, width, bytes_start);
		ok = ok && lp_buf_append(&raw, word, width);
		for (uint64_t k = 0; ok && k <= dictionary->num_items; k++)
		{
			lp_put_le_uint(word, width, offsets[k]);
			ok = lp_buf_append(&raw, word, width);
		}
		if (!ok || !lp_buf_append(&raw, dictionary->items.data, dictionary->items.len))
			goto no_memory;
		inner = flat_ce(out, &used, shape->offset_bits);
		lance__encodings21__variable__init(&out->variable);
		out->variable.offsets = inner;
		inner = next_ce(out, &used);
		inner->compression_case = LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_VARIABLE;
		inner->variable = &out->variable;
	}
	else
	{
		bool		packed;

		if (!bitpack_block(shape, dictionary, out, &used, &packed))
			goto no_memory;
		if (packed)
			return true;
		lp_buf_free(&out->buffer);
		if (!lp_buf_append(&raw, dictionary->items.data, dictionary->items.len))
			goto no_memory;
		inner = flat_ce(out, &used, shape->bits);
	}
	if (version < LP_FILE_VERSION_2_2)
	{
		out->buffer = raw;
		out->encoding = inner;
		return true;
	}
	/* From 2.2 on Lance lz4-compresses every dictionary it does not bit-pack. */
	if (!lp_column_compress(&lz4, raw.data, raw.len, &out->buffer))
		goto no_memory;
	lp_buf_free(&raw);
	lp_buffer_compression_init(&lz4, &out->compression);
	lance__encodings21__general__init(&out->general);
	out->general.compression = &out->compression;
	out->general.values = inner;
	out->encoding = next_ce(out, &used);
	out->encoding->compression_case = LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_GENERAL;
	out->encoding->general = &out->general;
	return true;

no_memory:
	lp_buf_free(&raw);
	lp_buf_free(&out->buffer);
	return false;
}
