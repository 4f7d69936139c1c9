/*
 * lp_encode_miniblock.c - mini-block pages: values in chunks of about 4 KiB, flat,
 * bit-packed, run-length encoded or byte-stream-split, strings as offsets
 * and bytes, levels in every chunk (lp_encode_page_internal.h).
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

/* One chunk of a mini-block page: its values and their bytes in the value buffer. */
typedef struct Chunk
{
	uint64_t	first_value;
	uint64_t	num_values;
	uint32_t	log_num_values; /* 0 for the last chunk */
	uint64_t	value_start;
	uint64_t	value_len;
	uint64_t	second_start;	/* in the second buffer: RLE run lengths, or the items */
	uint64_t	second_len;		/* of fixed-size lists after their validity */
} Chunk;

typedef struct ChunkList
{
	Chunk	   *chunks;
	uint64_t	count;
	uint64_t	capacity;
} ChunkList;

static bool
chunk_add(ChunkList *list, uint64_t first, uint64_t n, uint32_t log, uint64_t start, uint64_t len,
		  uint64_t second_start, uint64_t second_len)
{
	if (list->count == list->capacity)
	{
		uint64_t	capacity = list->capacity ? list->capacity * 2 : 64;
		Chunk	   *grown = lp_alloc_array(capacity, sizeof(Chunk));

		if (grown == NULL)
			return false;
		if (list->count > 0)
			memcpy(grown, list->chunks, list->count * sizeof(Chunk));
		lp_free(list->chunks);
		list->chunks = grown;
		list->capacity = capacity;
	}
	list->chunks[list->count++] = (Chunk) {first, n, log, start, len, second_start, second_len};
	return true;
}

static bool
pad_to(LpBuf *buf, uint64_t alignment, uint8_t fill)
{
	while (buf->len % alignment != 0)
		if (!lp_buf_append(buf, &fill, 1))
			return false;
	return true;
}

/* ---- mini-block values ---------------------------------------------------- */


/*
 * One way of storing a page's values in mini-block chunks: how many values
 * the chunk starting at a value holds, and how they are written, to the
 * chunk's value buffer and, for two-buffer encodings, its second buffer.
 * write_chunks() cuts every page through one of these.
 */
typedef struct ChunkWriter ChunkWriter;
struct ChunkWriter
{
	uint64_t	(*chunk_values) (const ChunkWriter *writer, uint64_t first);
	bool		(*write) (const ChunkWriter *writer, uint64_t first, uint64_t count,
						  LpBuf *values, LpBuf *second);
	const LpLeafShape *shape;
	const LpPageValues *page;
	const Strings *strings;
	uint64_t	values_per_chunk;	/* flat kinds: every chunk but the last */
};

/*
 * Every chunk of the page: all but the last hold a power of two of values,
 * which the chunk's metadata word records as its log (0 for the last).
 */
static bool
write_chunks(const ChunkWriter *writer, ChunkList *chunks, LpBuf *values, LpBuf *second)
{
	uint64_t	n = writer->page->num_values;

	for (uint64_t first = 0; first < n;)
	{
		uint64_t	count = writer->chunk_values(writer, first);
		uint64_t	values_start = values->len;
		uint64_t	second_start = second->len;
		bool		last = first + count == n;

		if (!writer->write(writer, first, count, values, second) ||
			!chunk_add(chunks, first, count, last ? 0 : (uint32_t) __builtin_ctzll(count),
					   values_start, values->len - values_start,
					   second_start, second->len - second_start))
			return false;
		first += count;
	}
	return true;
}

/* The fixed number of values per chunk, the last chunk taking the rest. */
static uint64_t
fixed_chunk_values(const ChunkWriter *writer, uint64_t first)
{
	uint64_t	left = writer->page->num_values - first;

	return left < writer->values_per_chunk ? left : writer->values_per_chunk;
}

/*
 * Lance's ValueEncoder: the largest power-of-two number of values (at most
 * 4096) whose bytes stay under MAX_MINIBLOCK_BYTES, counted in words of
 * one value (whole bytes) or 8 values (bitmaps).
 */
static uint64_t
flat_values_per_chunk(uint64_t bytes_per_word, bool bitmap)
{
	uint64_t	size = 2 * bytes_per_word;
	uint64_t	n_per_chunk = bitmap ? 8 : 2;

	while (2 * size < MAX_MINIBLOCK_BYTES && 2 * n_per_chunk <= MAX_MINIBLOCK_VALUES)
	{
		size *= 2;
		n_per_chunk *= 2;
	}
	return n_per_chunk;
}

/* Flat values: their bytes, or their bits (chunks start on whole bytes). */
static bool
write_flat(const ChunkWriter *writer, uint64_t first, uint64_t count, LpBuf *values, LpBuf *second)
{
	const LpPageValues *page = writer->page;
	uint32_t	bytes = lp_enc_bytes_per_value(writer->shape);

	(void) second;
	if (writer->shape->kind == LP_LEAF_BOOL)
		return lp_buf_append(values, page->bits.buf.data + first / 8, (count + 7) / 8);
	return lp_buf_append(values, page->values.data + first * bytes, count * bytes);
}

/* Byte-stream split: in each chunk, byte j of every value, then byte j + 1, ... */
static bool
write_byte_stream_split(const ChunkWriter *writer, uint64_t first, uint64_t count, LpBuf *values,
						LpBuf *second)
{
	uint32_t	bytes = writer->shape->bits / 8;
	const uint8_t *source = writer->page->values.data + first * bytes;
	uint64_t	start = values->len;

	(void) second;
	if (!lp_buf_append_zeros(values, count * bytes))
		return false;
	for (uint64_t i = 0; i < count; i++)
		for (uint32_t j = 0; j < bytes; j++)
			values->data[start + j * count + i] = source[i * bytes + j];
	return true;
}


/*
 * Fixed-size lists with null items (Lance's chunk_fsl): each chunk's item
 * validity, a bitmap of its own, then its items; rows per chunk counted
 * with the validity bytes of a row.
 */
static bool
write_fixed_size_list_validity(const ChunkWriter *writer, uint64_t first, uint64_t count,
							   LpBuf *validity, LpBuf *items)
{
	uint64_t	dim = writer->shape->dimension;
	uint64_t	row_bytes = lp_enc_bytes_per_value(writer->shape);
	LpBits		bits = {0};
	bool		ok;

	ok = lp_bits_append_bitmap(&bits, writer->page->item_validity.buf.data, first * dim, count * dim) &&
		lp_buf_append(validity, bits.buf.data, (count * dim + 7) / 8) &&
		lp_buf_append(items, writer->page->values.data + first * row_bytes, count * row_bytes);
	lp_buf_free(&bits.buf);
	return ok;
}

/* InlineBitpacking: blocks of 1024 values, each its width word and FastLanes words. */
static bool
write_bitpacked(const ChunkWriter *writer, uint64_t first, uint64_t count, LpBuf *values,
				LpBuf *second)
{
	uint32_t	type_bits = writer->shape->bits;
	uint32_t	bytes = type_bits / 8;
	uint64_t	block[LP_FASTLANES_BLOCK];
	uint64_t	packed[LP_FASTLANES_BLOCK];
	uint32_t	width;
	uint8_t		word[8];

	(void) second;
	memset(block, 0, sizeof(block));
	memcpy(block, writer->page->values.data + first * bytes, count * bytes);
	width = lp_bit_width(type_bits, (const uint8_t *) block, count);
	lp_put_le_uint(word, bytes, width);
	lp_fastlanes_pack(type_bits, width, (const uint8_t *) block, (uint8_t *) packed);
	return lp_buf_append(values, word, bytes) &&
		lp_buf_append(values, packed, lp_fastlanes_packed_bytes(width));
}

/*
 * Lance's BinaryMiniBlockEncoder: from each chunk start, double the number
 * of values while the offsets and bytes fit in AIM_MINICHUNK_SIZE; the rest
 * of the page is one chunk once it fits.  A chunk is its offsets (relative
 * to the chunk, so the first is the size of the offsets) and its bytes,
 * padded to the offset width.
 */
static uint64_t
variable_chunk_values(const ChunkWriter *writer, uint64_t start)
{
	const uint64_t *offsets = writer->strings->offsets;
	uint64_t	n = writer->page->num_values;
	uint32_t	width = writer->shape->offset_bits / 8;
	uint64_t	count = 1;
	uint64_t	next = 2;

	for (;;)
	{
		if (start + next >= n + 1)
		{
			if (offsets[n] - offsets[start] + (n + 1 - start) * width <= AIM_MINICHUNK_SIZE)
				return n - start;
			return count;
		}
		if (offsets[start + next] - offsets[start] + (next + 1) * width > AIM_MINICHUNK_SIZE)
			break;
		count = next;
		next *= 2;
	}
	/* lancedb 0.39 ends the chunk at the last doubling that fits. */
	return count;
}

static bool
write_variable(const ChunkWriter *writer, uint64_t start, uint64_t count, LpBuf *values,
			   LpBuf *second)
{
	const uint64_t *offsets = writer->strings->offsets;
	uint32_t	width = writer->shape->offset_bits / 8;
	uint64_t	end = start + count;
	uint64_t	table = (count + 1) * width;

	(void) second;
	for (uint64_t i = start; i <= end; i++)
	{
		uint8_t		word[8];

		lp_put_le_uint(word, width, offsets[i] - offsets[start] + table);
		if (!lp_buf_append(values, word, width))
			return false;
	}
	return (offsets[end] == offsets[start] ||
			lp_buf_append(values, writer->strings->data + offsets[start],
						  offsets[end] - offsets[start])) &&
		pad_to(values, width, VARIABLE_FILL_BYTE);
}

/*
 * RLE: runs of equal values as the values and u8 run lengths (runs longer
 * than 255 split), in chunks of at most 2048 values (Lance's limit) whose
 * runs fit MAX_MINIBLOCK_BYTES, halved until they do; every chunk but the
 * last holds a power of two of values.
 */

/* Values from i on (before end) equal to value i, the 1-, 2-, 4- or 8-byte words compared whole. */
static uint64_t
run_length(const uint8_t *values, uint32_t bytes, uint64_t i, uint64_t end)
{
	uint64_t	j = i + 1;

	switch (bytes)
	{
		case 1:
			while (j < end && values[j] == values[i])
				j++;
			break;
		case 2:
			while (j < end && lp_le16(values + j * 2) == lp_le16(values + i * 2))
				j++;
			break;
		case 4:
			while (j < end && lp_le32(values + j * 4) == lp_le32(values + i * 4))
				j++;
			break;
		case 8:
			while (j < end && lp_le64(values + j * 8) == lp_le64(values + i * 8))
				j++;
			break;
		default:
			while (j < end && memcmp(values + j * bytes, values + i * bytes, bytes) == 0)
				j++;
			break;
	}
	return j - i;
}

/*
 * Bytes of the runs of values [first, first + count); the counting stops
 * once they reach stop_at (the callers only compare them with it).
 */
static uint64_t
rle_chunk_bytes(const uint8_t *values, uint32_t bytes, uint64_t first, uint64_t count,
				uint64_t stop_at)
{
	uint64_t	total = 0;

	for (uint64_t i = first; i < first + count && total < stop_at;)
	{
		uint64_t	run = run_length(values, bytes, i, first + count);

		total += (run + 254) / 255 * (bytes + 1);
		i += run;
	}
	return total;
}

static uint64_t
rle_chunk_values(const ChunkWriter *writer, uint64_t first)
{
	uint64_t	left = writer->page->num_values - first;
	uint64_t	count = left < 2048 ? left : 2048;

	while (count > 1 &&
		   rle_chunk_bytes(writer->page->values.data, writer->shape->bits / 8, first, count,
						   MAX_MINIBLOCK_BYTES + 1) > MAX_MINIBLOCK_BYTES)
	{
		uint64_t	power = 1;

		while (power * 2 < count)
			power *= 2;
		count = power;
	}
	return count;
}

static bool
write_rle(const ChunkWriter *writer, uint64_t first, uint64_t count, LpBuf *values,
		  LpBuf *lengths)
{
	uint32_t	bytes = writer->shape->bits / 8;
	const uint8_t *data = writer->page->values.data;

	for (uint64_t i = first; i < first + count;)
	{
		uint64_t	run = run_length(data, bytes, i, first + count);

		for (uint64_t left = run; left > 0;)
		{
			uint8_t		length = (uint8_t) (left > 255 ? 255 : left);

			if (!lp_buf_append(values, data + i * bytes, bytes) ||
				!lp_buf_append(lengths, &length, 1))
				return false;
			left -= length;
		}
		i += run;
	}
	return true;
}

/*
 * Bit-packed when that saves bits: Lance 12 stores values flat when their
 * widest block needs every bit of the type, and when a single block would
 * outweigh the values (its "too small").
 */
static bool
prefers_bitpacking(const LpLeafShape *shape, const LpPageValues *page)
{
	uint64_t	bytes = shape->bits / 8;
	uint32_t	width;

	if (shape->kind != LP_LEAF_FIXED || shape->compression.request == LP_COMPRESSION_NONE ||
		(shape->bits != 8 && shape->bits != 16 && shape->bits != 32 && shape->bits != 64))
		return false;
	width = lp_bit_width(shape->bits, page->values.data, page->num_values);
	if (width == shape->bits)
		return false;
	if (page->num_values <= LP_FASTLANES_BLOCK)
		return (LP_FASTLANES_BLOCK * (uint64_t) width + 7) / 8 < page->num_values * bytes;
	return true;
}

/* Bytes of page's values bit-packed in blocks of 1024, each with its width word. */
static uint64_t
bitpacked_bytes(const LpLeafShape *shape, const LpPageValues *page)
{
	uint32_t	bytes = shape->bits / 8;
	uint64_t	total = 0;

	for (uint64_t first = 0; first < page->num_values; first += LP_FASTLANES_BLOCK)
	{
		uint64_t	count = page->num_values - first < LP_FASTLANES_BLOCK ?
			page->num_values - first : LP_FASTLANES_BLOCK;

		total += bytes + lp_fastlanes_packed_bytes(lp_bit_width(shape->bits,
																page->values.data + first * bytes,
																count));
	}
	return total;
}

/*
 * lancedb 0.39's choice for 8/16/32/64-bit values, nulls or not: RLE when
 * its runs take fewer bytes than the values bit-packed (or flat).
 */
static bool
prefers_rle(const LpLeafShape *shape, const LpPageValues *page)
{
	uint32_t	bytes = shape->bits / 8;
	uint64_t	other;

	if (shape->kind != LP_LEAF_FIXED || shape->compression.request == LP_COMPRESSION_NONE ||
		(shape->bits != 8 && shape->bits != 16 && shape->bits != 32 && shape->bits != 64))
		return false;
	other = prefers_bitpacking(shape, page) ? bitpacked_bytes(shape, page) :
		page->num_values * bytes;
	return rle_chunk_bytes(page->values.data, bytes, 0, page->num_values, other) < other;
}

#define BSS_SAMPLE_VALUES 64
#define BSS_MAX_ENTROPY 4.0

/*
 * Lance's should_use_bss in its automatic mode, for 32- and 64-bit values
 * of a field asking for compression: the Shannon entropy of each byte
 * position over the first 64 values (in thousandths, truncated, as Lance
 * keeps it), averaged, is under 4 bits.
 */
static bool
prefers_byte_stream_split(const LpLeafShape *shape, const LpPageValues *page)
{
	LpCompressionRequest request = shape->compression.request;
	uint32_t	bytes = shape->bits / 8;
	uint64_t	sample = page->num_values < BSS_SAMPLE_VALUES ? page->num_values : BSS_SAMPLE_VALUES;
	uint64_t	sum = 0;

	if (shape->kind != LP_LEAF_FIXED || (shape->bits != 32 && shape->bits != 64) ||
		(request != LP_COMPRESSION_FSST && !lp_compression_is_general(&shape->compression)) ||
		sample == 0)
		return false;
	for (uint32_t position = 0; position < bytes; position++)
	{
		uint32_t	counts[256] = {0};
		double		entropy = 0.0;

		for (uint64_t i = 0; i < sample; i++)
			counts[page->values.data[i * bytes + position]]++;
		for (int b = 0; b < 256; b++)
			if (counts[b] > 0)
			{
				double		p = (double) counts[b] / (double) sample;

				entropy -= p * log2(p);
			}
		sum += (uint64_t) (entropy * 1000.0);
	}
	return (double) sum / bytes / 1000.0 < BSS_MAX_ENTROPY;
}

#define GENERAL_LEAST_VALUE_BYTES 4096

/*
 * Lance's GeneralMiniBlockCompressor: each chunk's values (its first value
 * buffer) compressed on their own, kept only when the page's values reach
 * GENERAL_LEAST_VALUE_BYTES and shrink; *value_encoding is then wrapped in
 * General.  False when out of memory.
 */
static bool
compress_chunks(const LpColumnCompression *compression, Messages *m, ChunkList *chunks,
				LpBuf *values, CE **value_encoding)
{
	LpBuf		compressed = {0};
	uint64_t   *sizes;
	CE		   *ce;

	if (values->len < GENERAL_LEAST_VALUE_BYTES)
		return true;
	sizes = lp_alloc_array(chunks->count, sizeof(uint64_t));
	if (sizes == NULL)
		return false;
	for (uint64_t c = 0; c < chunks->count; c++)
	{
		const Chunk *chunk = &chunks->chunks[c];
		uint64_t	start = compressed.len;

		if (!lp_column_compress(compression, values->data + chunk->value_start, chunk->value_len,
								 &compressed))
		{
			lp_free(sizes);
			lp_buf_free(&compressed);
			return false;
		}
		sizes[c] = compressed.len - start;
	}
	if (compressed.len < values->len)
	{
		uint64_t	start = 0;

		for (uint64_t c = 0; c < chunks->count; c++)
		{
			chunks->chunks[c].value_start = start;
			chunks->chunks[c].value_len = sizes[c];
			start += sizes[c];
		}
		lp_buf_free(values);
		*values = compressed;
		ce = &m->ce[m->used_ce++];
		lance__encodings21__compressive_encoding__init(ce);
		lp_buffer_compression_init(compression, &m->buffer_compression);
		lance__encodings21__general__init(&m->general);
		m->general.compression = &m->buffer_compression;
		m->general.values = *value_encoding;
		ce->compression_case = LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_GENERAL;
		ce->general = &m->general;
		*value_encoding = ce;
	}
	else
		lp_buf_free(&compressed);
	lp_free(sizes);
	return true;
}

/*
 * The value compression Lance chooses for a mini-block page, as the chunk
 * writer that stores it, its encoding and its number of value buffers.
 */
static CE *
choose_miniblock_values(Messages *m, const LpLeafShape *shape, const LpPageValues *page,
						const Strings *strings, ChunkWriter *writer, uint32_t *num_value_buffers)
{
	CE		   *encoding;

	*writer = (ChunkWriter) {fixed_chunk_values, write_flat, shape, page, strings, 0};
	*num_value_buffers = 1;
	if (shape->kind == LP_LEAF_VARIABLE)
	{
		writer->chunk_values = variable_chunk_values;
		writer->write = write_variable;
		return lp_enc_strings(m, strings, shape->offset_bits);
	}
	if (prefers_byte_stream_split(shape, page))
	{
		writer->write = write_byte_stream_split;
		writer->values_per_chunk = shape->bits == 32 ? 1024 : 512;	/* 4 KiB */
		return lp_enc_byte_stream_split(m, shape->bits);
	}
	if (prefers_rle(shape, page))
	{
		writer->chunk_values = rle_chunk_values;
		writer->write = write_rle;
		*num_value_buffers = 2;
		return lp_enc_rle(m, shape->bits);
	}
	if (prefers_bitpacking(shape, page))
	{
		writer->write = write_bitpacked;
		writer->values_per_chunk = LP_FASTLANES_BLOCK;
		return lp_enc_inline_bitpacking(m, shape->bits);
	}
	if (lp_enc_has_item_nulls(shape, page))
	{
		uint64_t	dim = shape->dimension;

		writer->write = write_fixed_size_list_validity;
		writer->values_per_chunk = flat_values_per_chunk((dim + 7) / 8 + lp_enc_bytes_per_value(shape), false);
		*num_value_buffers = 2;
		encoding = lp_enc_fixed_size_list(m, dim, shape->bits);
		encoding->fixed_size_list->has_validity = true;
		return encoding;
	}
	writer->values_per_chunk = shape->kind == LP_LEAF_BOOL ? flat_values_per_chunk(1, true) :
		flat_values_per_chunk(lp_enc_bytes_per_value(shape), false);
	return shape->kind == LP_LEAF_FIXED_SIZE_LIST ?
		lp_enc_fixed_size_list(m, shape->dimension, shape->bits) :
		lp_enc_flat(m, shape->bits);
}

/*
 * About the bytes of the chunks' values: the page's values flat (the
 * encodings chosen over flat are smaller), for strings their offsets and
 * bytes, with slack for the chunks' own offsets and padding.
 */
static uint64_t
miniblock_values_bytes(const LpLeafShape *shape, const LpPageValues *page, const Strings *strings)
{
	uint64_t	bytes = shape->kind == LP_LEAF_VARIABLE ?
		strings->data_len + (page->num_values + 1) * (shape->offset_bits / 8) :
		page->values.len + page->bits.buf.len + page->item_validity.buf.len;

	return bytes + bytes / 128 + 64;
}

/*
 * Lance's RepDefSlicer: a chunk takes the levels up to and with its last
 * value; levels without a value after it (null and empty lists) go to the
 * next chunk, the rest of the page to the last.
 */
static uint64_t
chunk_levels_end(const Levels *levels, uint64_t start, uint64_t num_values, bool last)
{
	uint64_t	end = start;

	if (last)
		return levels->num_levels;
	if (levels->rep.v == NULL)
		return start + num_values;
	while (num_values > 0)
	{
		if (levels->def.v == NULL || levels->def.v[end] <= levels->max_visible)
			num_values--;
		end++;
	}
	return end;
}

/*
 * The repetition index entry of a chunk as Lance computes it: the rows
 * that finish in the chunk (a row start after its first level, plus the
 * last row in the last chunk) and the levels left over after the last row
 * start (0 in the last chunk); a chunk that starts a row turns the
 * previous chunk's leftovers into a finished row.
 */
static bool
add_repetition_index(const Levels *levels, uint64_t start, uint64_t end, bool first, bool last,
					 LpBuf *index)
{
	uint16_t	row_start = levels->rep.max;
	uint64_t	finished = 0;
	uint64_t	leftovers = end - start;
	uint8_t		word[8];

	for (uint64_t i = start + 1; i < end; i++)
		finished += levels->rep.v[i] == row_start;
	for (uint64_t i = end; i > start; i--)
		if (levels->rep.v[i - 1] == row_start)
		{
			leftovers = end - (i - 1);
			break;
		}
	if (last)
	{
		finished++;
		leftovers = 0;
	}
	if (!first && end > start && levels->rep.v[start] == row_start &&
		lp_le64(index->data + index->len - 8) != 0)
	{
		lp_put_le64(index->data + index->len - 16, lp_le64(index->data + index->len - 16) + 1);
		lp_put_le64(index->data + index->len - 8, 0);
	}
	lp_put_le64(word, finished);
	if (!lp_buf_append(index, word, 8))
		return false;
	lp_put_le64(word, leftovers);
	return lp_buf_append(index, word, 8);
}

/* The compressed levels [start, end) of a chunk, and their u16 size in its header. */
static bool
chunk_level_buffer(const LevelSeq *levels, LevelCompression compression, uint64_t start,
				   uint64_t end, LpBuf *out, LpBuf *header)
{
	uint8_t		size[2];

	out->len = 0;
	if (!lp_enc_compress_levels(levels, compression, start, end - start, out))
		return false;
	lp_put_le16(size, (uint16_t) out->len);
	return lp_buf_append(header, size, 2);
}

/*
 * A mini-block page of page's values; with dictionary (its items counted
 * in num_dictionary_items) the values are its indices and its buffer
 * becomes page buffer 2.
 */
bool
lp_enc_miniblock(LpFileVersion version, const LpLeafShape *shape, const LpPageValues *page,
				 const Levels *levels, const Strings *strings, LpDictionaryBlock *dictionary,
				 uint64_t num_dictionary_items, LpEncodedPage *out, LpError *err)
{
	Messages	m;
	ChunkWriter writer;
	ChunkList	chunks = {0};
	LpBuf		values = {0};
	LpBuf		second = {0};	/* the chunks' second buffers */
	LpBuf		chunk_rep = {0};
	LpBuf		chunk_def = {0};
	uint32_t	num_value_buffers;
	LpBuf	   *meta = &out->buffers[0];
	LpBuf	   *data = &out->buffers[1];
	LpBuf	   *repetition_index = &out->buffers[dictionary != NULL ? 3 : 2];
	bool		has_def = levels->def.v != NULL;
	bool		has_rep = levels->rep.v != NULL;
	bool		large = version >= LP_FILE_VERSION_2_2;
	uint32_t	size_bytes = large ? 4 : 2;
	LevelCompression def_compression = LEVELS_FLAT;
	LevelCompression rep_compression = LEVELS_FLAT;
	uint64_t	level_start = 0;
	Lance__Encodings21__MiniBlockLayout layout = LANCE__ENCODINGS21__MINI_BLOCK_LAYOUT__INIT;
	Lance__Encodings21__PageLayout page_layout = LANCE__ENCODINGS21__PAGE_LAYOUT__INIT;
	CE		   *value_encoding;
	bool		ok = false;

	memset(&m, 0, sizeof(m));
	value_encoding = choose_miniblock_values(&m, shape, page, strings, &writer, &num_value_buffers);
	/* reserved once: doubled up to a page's size, the buffer was copied and faulted in again and again */
	if (!lp_buf_reserve(&values, miniblock_values_bytes(shape, page, strings)) ||
		!write_chunks(&writer, &chunks, &values, &second))
		goto no_memory;
	/* Lance leaves fixed-size lists uncompressed. */
	if (lp_compression_is_general(&shape->compression) && shape->kind != LP_LEAF_FIXED_SIZE_LIST &&
		!compress_chunks(&shape->compression, &m, &chunks, &values, &value_encoding))
		goto no_memory;
	if (has_def)
		def_compression = lp_enc_choose_level_compression(version, &levels->def, levels->num_levels);
	if (has_rep)
		rep_compression = lp_enc_choose_level_compression(version, &levels->rep, levels->num_levels);
	/*
	 * The chunks' bytes with room for their headers, padding and levels at
	 * most: a buffer doubled past a page's size would hold up to twice it.
	 */
	if (!lp_buf_reserve(data, values.len + second.len + chunks.count * MINIBLOCK_CHUNK_OVERHEAD +
						(has_rep + has_def) * levels->num_levels * sizeof(uint16_t)))
		goto no_memory;

	out->num_buffers = has_rep ? 3 : 2;
	if (dictionary != NULL)
	{
		out->buffers[2] = dictionary->buffer;
		memset(&dictionary->buffer, 0, sizeof(dictionary->buffer));
		out->num_buffers++;
		layout.dictionary = dictionary->encoding;
		layout.num_dictionary_items = num_dictionary_items;
	}
	for (uint64_t c = 0; c < chunks.count; c++)
	{
		const Chunk *chunk = &chunks.chunks[c];
		bool		last = c + 1 == chunks.count;
		uint64_t	level_end = chunk_levels_end(levels, level_start, chunk->num_values, last);
		uint64_t	chunk_start = data->len;
		uint64_t	chunk_bytes;
		uint64_t	word;
		uint8_t		header[8];

		if ((has_rep || has_def) && level_end - level_start > UINT16_MAX)
		{
			lp_fail(err, LP_ERR_UNSUPPORTED,
					"a mini-block chunk would hold %llu levels, more than its header can count",
					(unsigned long long) (level_end - level_start));
			goto done;
		}
		lp_put_le16(header, has_rep || has_def ? (uint16_t) (level_end - level_start) : 0);
		if (!lp_buf_append(data, header, 2) ||
			(has_rep && !chunk_level_buffer(&levels->rep, rep_compression, level_start, level_end,
											&chunk_rep, data)) ||
			(has_def && !chunk_level_buffer(&levels->def, def_compression, level_start, level_end,
											&chunk_def, data)) ||
			(has_rep && !add_repetition_index(levels, level_start, level_end, c == 0, last,
											  repetition_index)))
			goto no_memory;
		lp_put_le_uint(header, size_bytes, chunk->value_len);
		if (!lp_buf_append(data, header, size_bytes))
			goto no_memory;
		lp_put_le_uint(header, size_bytes, chunk->second_len);
		if ((num_value_buffers == 2 && !lp_buf_append(data, header, size_bytes)) ||
			!pad_to(data, MINIBLOCK_ALIGNMENT, MINIBLOCK_FILL_BYTE))
			goto no_memory;
		if (has_rep && (!lp_buf_append(data, chunk_rep.data, chunk_rep.len) ||
						!pad_to(data, MINIBLOCK_ALIGNMENT, MINIBLOCK_FILL_BYTE)))
			goto no_memory;
		if (has_def && (!lp_buf_append(data, chunk_def.data, chunk_def.len) ||
						!pad_to(data, MINIBLOCK_ALIGNMENT, MINIBLOCK_FILL_BYTE)))
			goto no_memory;
		if (!lp_buf_append(data, values.data + chunk->value_start, chunk->value_len) ||
			!pad_to(data, MINIBLOCK_ALIGNMENT, MINIBLOCK_FILL_BYTE))
			goto no_memory;
		if (num_value_buffers == 2 &&
			(!lp_buf_append(data, second.data + chunk->second_start, chunk->second_len) ||
			 !pad_to(data, MINIBLOCK_ALIGNMENT, MINIBLOCK_FILL_BYTE)))
			goto no_memory;
		chunk_bytes = data->len - chunk_start;
		if (chunk_bytes > 32 * 1024)
		{
			lp_fail(err, LP_ERR_INTERNAL, "mini-block chunk of %llu bytes",
					(unsigned long long) chunk_bytes);
			goto done;
		}
		word = ((chunk_bytes / MINIBLOCK_ALIGNMENT - 1) << 4) | chunk->log_num_values;
		lp_put_le_uint(header, size_bytes, word);
		if (!lp_buf_append(meta, header, size_bytes))
			goto no_memory;
		level_start = level_end;
	}

	layout.rep_compression = has_rep ? lp_enc_level_encoding(&m, rep_compression, levels->rep.width) : NULL;
	layout.def_compression = has_def ? lp_enc_level_encoding(&m, def_compression, levels->def.width) : NULL;
	layout.value_compression = value_encoding;
	layout.n_layers = levels->num_layers;
	layout.layers = (Layer *) levels->layers;
	layout.num_buffers = num_value_buffers;
	layout.num_items = page->num_values;
	layout.repetition_index_depth = has_rep ? 1 : 0;
	layout.has_large_chunk = large;
	page_layout.layout_case = LANCE__ENCODINGS21__PAGE_LAYOUT__LAYOUT_MINI_BLOCK_LAYOUT;
	page_layout.mini_block_layout = &layout;
	out->layout = "mini_block";
	ok = lp_enc_wrap_layout(&page_layout, out, err);
	goto done;

no_memory:
	ok = lp_enc_no_memory(err);
done:
	lp_free(chunks.chunks);
	lp_buf_free(&values);
	lp_buf_free(&second);
	lp_buf_free(&chunk_rep);
	lp_buf_free(&chunk_def);
	return ok;
}

