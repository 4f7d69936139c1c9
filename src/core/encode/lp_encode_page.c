/*
 * lp_encode_page.c - one page of a leaf column of a Lance 2.1+ file, laid
 * out and compressed as Lance's structural encoder chooses
 * (encodings/logical/primitive.rs do_flush, compression.rs
 * DefaultCompressionStrategy; byte formats in lance-format.md §4.4):
 *  - every value null: a constant page (2.1's AllNullLayout) without buffers;
 *  - from 2.2 on, every valid value equal: a constant page;
 *  - values narrower than 256 bytes: mini-block.  8/16/32/64-bit values are
 *    run-length encoded when there are fewer runs than half the values, else
 *    bit-packed in FastLanes blocks of 1024 with their width inline when
 *    that saves bits; other fixed widths, bools and fixed-size lists are
 *    stored flat in chunks of about 4 KiB; strings and binaries as offsets
 *    and bytes in chunks of about 4 KiB;
 *  - wider values: full-zip, each value after its control word (and its
 *    length when variable), with a repetition index for variable widths;
 *  - low-cardinality pages (lp_encode_dictionary.c, checked first): a
 *    mini-block page of u32 indices, compressed as above, and the
 *    dictionary in page buffer 2.
 * Field metadata lance-encoding:compression "none" turns RLE, bit-packing
 * and FSST off, "fsst" forces FSST, and "lz4"/"zstd" store strings without
 * FSST and compress each mini-block chunk's values (Lance's
 * GeneralMiniBlockCompressor: when the values reach 4 KiB and shrink).
 * Definition levels (1 = null) go into every chunk or control word when the
 * page has nulls, compressed as Lance compresses levels: bit-packed when
 * every block of 1024 levels holds a null, else flat.
 */
#include <string.h>

#include "base/lp_alloc.h"
#include "base/lp_bytes.h"
#include "base/lp_checked.h"
#include "codec/lp_bitpack.h"
#include "codec/lp_fsst.h"
#include "encode/lp_encode_internal.h"
#include "format/lp_encodings.h"
#include "format/lp_values.h"

typedef Lance__Encodings21__CompressiveEncoding CE;

#define MINIBLOCK_ALIGNMENT 8
#define MINIBLOCK_FILL_BYTE 0xFE
#define VARIABLE_FILL_BYTE 0x48
#define MAX_MINIBLOCK_BYTES (8 * 1024 - 6)
#define MAX_MINIBLOCK_VALUES 4096
#define AIM_MINICHUNK_SIZE 4096
#define MINIBLOCK_MAX_VALUE_BYTES 256
#define LEVEL_BITS 16

/* One chunk of a mini-block page: its values and their bytes in the value buffer. */
typedef struct Chunk
{
	uint64_t	first_value;
	uint64_t	num_values;
	uint32_t	log_num_values; /* 0 for the last chunk */
	uint64_t	value_start;
	uint64_t	value_len;
	uint64_t	second_start;	/* RLE run lengths, or list items after their validity */
	uint64_t	second_len;
} Chunk;

typedef struct ChunkList
{
	Chunk	   *chunks;
	uint64_t	count;
	uint64_t	capacity;
} ChunkList;

static bool
no_memory(LpError *err)
{
	return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
}

static bool
chunk_add(ChunkList *list, uint64_t first, uint64_t n, uint32_t log, uint64_t start, uint64_t len)
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
	list->chunks[list->count++] = (Chunk) {first, n, log, start, len, 0, 0};
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

static bool
is_null(const LpPageValues *page, uint64_t index)
{
	return page->null_count > 0 && !lp_bit_get(page->validity.buf.data, index);
}

/*
 * The strings of a variable-width page as they are stored: FSST-compressed
 * (Lance does so when the longest value has at least 5 bytes and the page
 * at least 32 KiB), or the page's own.
 */
typedef struct Strings
{
	const uint64_t *offsets;	/* num_values + 1 */
	const uint8_t *data;
	uint64_t	data_len;
	bool		fsst;
	uint8_t		table[LP_FSST_SYMBOL_TABLE_LEN];
	LpBuf		compressed_offsets;
	LpBuf		compressed_data;
} Strings;

#define FSST_LEAST_INPUT_SIZE (32 * 1024)
#define FSST_LEAST_INPUT_MAX_LENGTH 5

static bool
strings_prepare(const LpLeafShape *shape, const LpPageValues *page, Strings *strings)
{
	const uint64_t *offsets = (const uint64_t *) page->offsets.data;
	LpCompressionRequest request = shape->compression.request;
	LpFsstEncoder *encoder;

	memset(strings, 0, sizeof(*strings));
	strings->offsets = offsets;
	strings->data = page->data.data;
	strings->data_len = page->data.len;
	if (request == LP_COMPRESSION_NONE || lp_compression_is_general(&shape->compression))
		return true;
	if (request != LP_COMPRESSION_FSST &&
		(page->max_length < FSST_LEAST_INPUT_MAX_LENGTH || page->data.len < FSST_LEAST_INPUT_SIZE))
		return true;
	encoder = lp_fsst_encoder_build(page->data.data, offsets, page->num_values);
	if (encoder == NULL || !lp_buf_reserve(&strings->compressed_data, 2 * page->data.len) ||
		!lp_buf_append_u64(&strings->compressed_offsets, 0))
	{
		lp_free(encoder);
		return false;
	}
	for (uint64_t i = 0; i < page->num_values; i++)
	{
		LpBuf	   *out = &strings->compressed_data;

		out->len += lp_fsst_encode(encoder, page->data.data + offsets[i],
								   offsets[i + 1] - offsets[i], out->data + out->len);
		if (!lp_buf_append_u64(&strings->compressed_offsets, out->len))
		{
			lp_free(encoder);
			return false;
		}
	}
	lp_fsst_table_write(&encoder->table, strings->table);
	lp_free(encoder);
	strings->fsst = true;
	strings->offsets = (const uint64_t *) strings->compressed_offsets.data;
	strings->data = strings->compressed_data.data;
	strings->data_len = strings->compressed_data.len;
	return true;
}

static void
strings_free(Strings *strings)
{
	lp_buf_free(&strings->compressed_offsets);
	lp_buf_free(&strings->compressed_data);
}

/* ---- compressive encoding messages ---------------------------------------- */

/* The messages of one page's encoding trees (values and levels), on the stack. */
typedef struct Messages
{
	CE			ce[8];
	Lance__Encodings21__Flat flat[4];
	Lance__Encodings21__InlineBitpacking inline_bitpacking[2];
	Lance__Encodings21__OutOfLineBitpacking out_of_line;
	Lance__Encodings21__Variable variable;
	Lance__Encodings21__FixedSizeList fixed_size_list;
	Lance__Encodings21__Rle rle;
	Lance__Encodings21__Fsst fsst;
	Lance__Encodings21__ConstantLayout constant;
	Lance__Encodings21__General general;
	Lance__Encodings21__BufferCompression buffer_compression;
	int			used_ce;
	int			used_flat;
	int			used_inline;
} Messages;

static CE *
flat_encoding(Messages *m, uint64_t bits)
{
	CE		   *ce = &m->ce[m->used_ce++];
	Lance__Encodings21__Flat *flat = &m->flat[m->used_flat++];

	lance__encodings21__compressive_encoding__init(ce);
	lance__encodings21__flat__init(flat);
	flat->bits_per_value = bits;
	ce->compression_case = LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_FLAT;
	ce->flat = flat;
	return ce;
}

static CE *
inline_bitpacking_encoding(Messages *m, uint64_t bits)
{
	CE		   *ce = &m->ce[m->used_ce++];
	Lance__Encodings21__InlineBitpacking *inline_bitpacking =
		&m->inline_bitpacking[m->used_inline++];

	lance__encodings21__compressive_encoding__init(ce);
	lance__encodings21__inline_bitpacking__init(inline_bitpacking);
	inline_bitpacking->uncompressed_bits_per_value = bits;
	ce->compression_case = LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_INLINE_BITPACKING;
	ce->inline_bitpacking = inline_bitpacking;
	return ce;
}

static CE *
out_of_line_encoding(Messages *m, uint64_t bits, uint64_t width)
{
	CE		   *values = flat_encoding(m, width);
	CE		   *ce = &m->ce[m->used_ce++];

	lance__encodings21__compressive_encoding__init(ce);
	lance__encodings21__out_of_line_bitpacking__init(&m->out_of_line);
	m->out_of_line.uncompressed_bits_per_value = bits;
	m->out_of_line.values = values;
	ce->compression_case = LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_OUT_OF_LINE_BITPACKING;
	ce->out_of_line_bitpacking = &m->out_of_line;
	return ce;
}

static CE *
variable_encoding(Messages *m, uint64_t offset_bits)
{
	CE		   *offsets = flat_encoding(m, offset_bits);
	CE		   *ce = &m->ce[m->used_ce++];

	lance__encodings21__compressive_encoding__init(ce);
	lance__encodings21__variable__init(&m->variable);
	m->variable.offsets = offsets;
	ce->compression_case = LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_VARIABLE;
	ce->variable = &m->variable;
	return ce;
}

static CE *
fixed_size_list_encoding(Messages *m, uint64_t dimension, uint64_t item_bits)
{
	CE		   *items = flat_encoding(m, item_bits);
	CE		   *ce = &m->ce[m->used_ce++];

	lance__encodings21__compressive_encoding__init(ce);
	lance__encodings21__fixed_size_list__init(&m->fixed_size_list);
	m->fixed_size_list.items_per_value = dimension;
	m->fixed_size_list.values = items;
	ce->compression_case = LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_FIXED_SIZE_LIST;
	ce->fixed_size_list = &m->fixed_size_list;
	return ce;
}

static CE *
rle_encoding(Messages *m, uint64_t bits)
{
	CE		   *values = flat_encoding(m, bits);
	CE		   *lengths = flat_encoding(m, 8);
	CE		   *ce = &m->ce[m->used_ce++];

	lance__encodings21__compressive_encoding__init(ce);
	lance__encodings21__rle__init(&m->rle);
	m->rle.values = values;
	m->rle.run_lengths = lengths;
	ce->compression_case = LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_RLE;
	ce->rle = &m->rle;
	return ce;
}

/* Variable offsets and bytes, FSST-compressed when the strings are. */
static CE *
strings_encoding(Messages *m, const Strings *strings, uint64_t offset_bits)
{
	CE		   *variable = variable_encoding(m, offset_bits);
	CE		   *ce;

	if (!strings->fsst)
		return variable;
	ce = &m->ce[m->used_ce++];
	lance__encodings21__compressive_encoding__init(ce);
	lance__encodings21__fsst__init(&m->fsst);
	m->fsst.symbol_table.data = (uint8_t *) strings->table;
	m->fsst.symbol_table.len = LP_FSST_SYMBOL_TABLE_LEN;
	m->fsst.values = variable;
	ce->compression_case = LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_FSST;
	ce->fsst = &m->fsst;
	return ce;
}

/* Serialize layout into out->encoding as Encoding{direct{Any{PageLayout}}}. */
static bool
wrap_layout(const Lance__Encodings21__PageLayout *layout, LpEncodedPage *out, LpError *err)
{
	size_t		size = lance__encodings21__page_layout__get_packed_size(layout);
	uint8_t    *bytes = lp_alloc(size + 1);
	bool		ok;

	if (bytes == NULL)
		return no_memory(err);
	lance__encodings21__page_layout__pack(layout, bytes);
	ok = lp_encoding_wrap(LP_PAGE_LAYOUT_URL, bytes, size, &out->encoding);
	lp_free(bytes);
	return ok ? true : no_memory(err);
}

/* ---- definition levels ---------------------------------------------------- */

typedef enum LevelCompression
{
	LEVELS_FLAT,
	LEVELS_INLINE,
	LEVELS_OUT_OF_LINE,
	LEVELS_RLE
} LevelCompression;

/* Bytes of the levels [first, first + count) as RLE runs (u16 values, u8 lengths). */
static uint64_t
level_rle_bytes(const LpPageValues *page, uint64_t first, uint64_t count)
{
	uint64_t	bytes = 0;

	for (uint64_t i = first; i < first + count;)
	{
		uint64_t	run = 1;

		while (i + run < first + count && is_null(page, i + run) == is_null(page, i))
			run++;
		bytes += (run + 254) / 255 * 3;
		i += run;
	}
	return bytes;
}

/*
 * Lance 12 picks the levels' compression from the whole page: flat when the
 * page is so small that one packed block outweighs it; from 2.2 on RLE
 * when its runs take fewer bytes than 1-bit packing (rare nulls); else
 * bit-packing, inline for at most 1024 levels and out of line (one width,
 * 1 bit) beyond.
 */
static LevelCompression
choose_level_compression(LpFileVersion version, const LpPageValues *page)
{
	uint64_t	n = page->num_values;

	if (n <= LP_FASTLANES_BLOCK && lp_fastlanes_packed_bytes(1) >= n * 2)
		return LEVELS_FLAT;
	if (version >= LP_FILE_VERSION_2_2 &&
		level_rle_bytes(page, 0, n) <
		(n + LP_FASTLANES_BLOCK - 1) / LP_FASTLANES_BLOCK * lp_fastlanes_packed_bytes(1))
		return LEVELS_RLE;
	return n <= LP_FASTLANES_BLOCK ? LEVELS_INLINE : LEVELS_OUT_OF_LINE;
}

/* Pack 1024 u16 levels (zero-padded) of [first, first + count) at width. */
static bool
pack_level_block(const LpPageValues *page, uint64_t first, uint64_t count, uint32_t width,
				 LpBuf *out)
{
	uint16_t	levels[LP_FASTLANES_BLOCK];
	uint8_t		packed[LP_FASTLANES_BLOCK * 2];

	memset(levels, 0, sizeof(levels));
	for (uint64_t i = 0; i < count; i++)
		lp_put_le16((uint8_t *) &levels[i], is_null(page, first + i) ? 1 : 0);
	lp_fastlanes_pack(LEVEL_BITS, width, (const uint8_t *) levels, packed);
	return lp_buf_append(out, packed, lp_fastlanes_packed_bytes(width));
}

/* The definition levels of chunk [first, first + count), compressed, appended to out. */
static bool
compress_levels(const LpPageValues *page, LevelCompression compression, uint64_t first,
				uint64_t count, LpBuf *out)
{
	switch (compression)
	{
		case LEVELS_RLE:
			{
				/* A block: u64 size of the run values, the values (u16), the lengths (u8). */
				uint64_t	runs_bytes = level_rle_bytes(page, first, count);
				uint64_t	start = out->len;
				uint8_t		word[8];

				lp_put_le64(word, runs_bytes / 3 * 2);
				if (!lp_buf_append(out, word, 8) || !lp_buf_append_zeros(out, runs_bytes))
					return false;
				for (uint64_t i = first, r = 0, n_runs = runs_bytes / 3; i < first + count;)
				{
					uint64_t	run = 1;

					while (i + run < first + count && is_null(page, i + run) == is_null(page, i))
						run++;
					for (uint64_t left = run; left > 0; r++)
					{
						uint8_t		length = (uint8_t) (left > 255 ? 255 : left);

						lp_put_le16(out->data + start + 8 + r * 2, is_null(page, i) ? 1 : 0);
						out->data[start + 8 + n_runs * 2 + r] = length;
						left -= length;
					}
					i += run;
				}
				return true;
			}
		case LEVELS_FLAT:
			for (uint64_t i = 0; i < count; i++)
			{
				uint8_t		level[2];

				lp_put_le16(level, is_null(page, first + i) ? 1 : 0);
				if (!lp_buf_append(out, level, 2))
					return false;
			}
			return true;
		case LEVELS_INLINE:
			{
				uint8_t		width[2];

				lp_put_le16(width, 1);
				return lp_buf_append(out, width, 2) && pack_level_block(page, first, count, 1, out);
			}
		case LEVELS_OUT_OF_LINE:
			{
				uint64_t	whole = count / LP_FASTLANES_BLOCK;
				uint64_t	tail = count % LP_FASTLANES_BLOCK;

				for (uint64_t b = 0; b < whole; b++)
					if (!pack_level_block(page, first + b * LP_FASTLANES_BLOCK,
										  LP_FASTLANES_BLOCK, 1, out))
						return false;
				if (tail == 0)
					return true;
				/* Pad and pack the tail only when that is smaller than raw levels. */
				if (1 * (LP_FASTLANES_BLOCK - tail) < (LEVEL_BITS - 1) * tail)
					return pack_level_block(page, first + whole * LP_FASTLANES_BLOCK, tail, 1, out);
				return compress_levels(page, LEVELS_FLAT, first + whole * LP_FASTLANES_BLOCK,
									   tail, out);
			}
	}
	return false;
}

static CE *
level_encoding(Messages *m, LevelCompression compression)
{
	switch (compression)
	{
		case LEVELS_RLE:
			return rle_encoding(m, LEVEL_BITS);
		case LEVELS_INLINE:
			return inline_bitpacking_encoding(m, LEVEL_BITS);
		case LEVELS_OUT_OF_LINE:
			return out_of_line_encoding(m, LEVEL_BITS, 1);
		default:
			return flat_encoding(m, LEVEL_BITS);
	}
}

/* ---- mini-block values ---------------------------------------------------- */

static uint32_t
bytes_per_value(const LpLeafShape *shape)
{
	return shape->kind == LP_LEAF_FIXED_SIZE_LIST ? shape->bits / 8 * shape->dimension :
		shape->bits / 8;
}

/*
 * Lance's ValueEncoder: the largest power-of-two number of values (at most
 * 4096) whose bytes stay under MAX_MINIBLOCK_BYTES, counted in words of
 * one value (whole bytes) or 8 values (bitmaps).
 */
static uint64_t
flat_values_per_chunk(uint64_t bytes_per_word, bool bitmap, uint32_t *log)
{
	uint64_t	size = 2 * bytes_per_word;
	uint64_t	n_per_chunk = bitmap ? 8 : 2;

	*log = bitmap ? 3 : 1;
	while (2 * size < MAX_MINIBLOCK_BYTES && 2 * n_per_chunk <= MAX_MINIBLOCK_VALUES)
	{
		(*log)++;
		size *= 2;
		n_per_chunk *= 2;
	}
	return n_per_chunk;
}

static bool
chunk_flat(const LpLeafShape *shape, const LpPageValues *page, ChunkList *chunks, LpBuf *values)
{
	bool		bitmap = shape->kind == LP_LEAF_BOOL;
	uint64_t	bytes_per_word = bitmap ? 1 : bytes_per_value(shape);
	uint32_t	log;
	uint64_t	n_per_chunk = flat_values_per_chunk(bytes_per_word, bitmap, &log);
	uint64_t	n = page->num_values;
	uint64_t	pos = 0;

	if (bitmap)
	{
		if (!lp_buf_append(values, page->bits.buf.data, (n + 7) / 8))
			return false;
	}
	else if (!lp_buf_append(values, page->values.data, n * bytes_per_word))
		return false;
	for (uint64_t first = 0; first < n; first += n_per_chunk)
	{
		uint64_t	count = n - first < n_per_chunk ? n - first : n_per_chunk;
		uint64_t	len = bitmap ? (count + 7) / 8 : count * bytes_per_word;
		bool		last = first + count == n;

		if (!chunk_add(chunks, first, count, last ? 0 : log, pos, len))
			return false;
		pos += len;
	}
	return true;
}

/* Some item of a fixed-size list of the page is null. */
static bool
has_item_nulls(const LpLeafShape *shape, const LpPageValues *page)
{
	return shape->kind == LP_LEAF_FIXED_SIZE_LIST && page->item_validity.num_unset > 0;
}

/*
 * Fixed-size lists with null items (Lance's chunk_fsl): each chunk's item
 * validity, a bitmap of its own, then its items; rows per chunk counted
 * with the validity bytes of a row.
 */
static bool
chunk_fixed_size_list_validity(const LpLeafShape *shape, const LpPageValues *page,
							   ChunkList *chunks, LpBuf *validity, LpBuf *items)
{
	uint64_t	dim = shape->dimension;
	uint64_t	row_bytes = bytes_per_value(shape);
	uint32_t	log;
	uint64_t	n_per_chunk = flat_values_per_chunk((dim + 7) / 8 + row_bytes, false, &log);
	uint64_t	n = page->num_values;

	for (uint64_t first = 0; first < n; first += n_per_chunk)
	{
		uint64_t	count = n - first < n_per_chunk ? n - first : n_per_chunk;
		uint64_t	validity_start = validity->len;
		uint64_t	items_start = items->len;
		LpBits		bits = {0};
		bool		ok;

		ok = lp_bits_append_bitmap(&bits, page->item_validity.buf.data, first * dim, count * dim) &&
			lp_buf_append(validity, bits.buf.data, (count * dim + 7) / 8) &&
			lp_buf_append(items, page->values.data + first * row_bytes, count * row_bytes) &&
			chunk_add(chunks, first, count, first + count == n ? 0 : log, validity_start,
					  validity->len - validity_start);
		lp_buf_free(&bits.buf);
		if (!ok)
			return false;
		chunks->chunks[chunks->count - 1].second_start = items_start;
		chunks->chunks[chunks->count - 1].second_len = items->len - items_start;
	}
	return true;
}

/* InlineBitpacking: blocks of 1024 values, each its width word and FastLanes words. */
static bool
chunk_bitpacked(const LpLeafShape *shape, const LpPageValues *page, ChunkList *chunks,
				LpBuf *values)
{
	uint32_t	bytes = shape->bits / 8;
	uint64_t	n = page->num_values;
	uint8_t    *block = lp_alloc((size_t) LP_FASTLANES_BLOCK * bytes);
	uint8_t    *packed = lp_alloc((size_t) LP_FASTLANES_BLOCK * bytes);
	bool		ok = block != NULL && packed != NULL;

	for (uint64_t first = 0; ok && first < n; first += LP_FASTLANES_BLOCK)
	{
		uint64_t	count = n - first < LP_FASTLANES_BLOCK ? n - first : LP_FASTLANES_BLOCK;
		uint64_t	start = values->len;
		uint32_t	width;
		uint8_t		word[8];

		memset(block, 0, (size_t) LP_FASTLANES_BLOCK * bytes);
		memcpy(block, page->values.data + first * bytes, count * bytes);
		width = lp_bit_width(shape->bits, block, count);
		lp_put_le_uint(word, bytes, width);
		lp_fastlanes_pack(shape->bits, width, block, packed);
		ok = lp_buf_append(values, word, bytes) &&
			lp_buf_append(values, packed, lp_fastlanes_packed_bytes(width)) &&
			chunk_add(chunks, first, count, first + count == n ? 0 : 10, start,
					  values->len - start);
	}
	lp_free(block);
	lp_free(packed);
	return ok;
}

/*
 * Lance's BinaryMiniBlockEncoder: from each chunk start, double the number
 * of values while the offsets and bytes fit in AIM_MINICHUNK_SIZE; the rest
 * of the page is one chunk once it fits.  A chunk is its offsets (relative
 * to the chunk, so the first is the size of the offsets) and its bytes,
 * padded to the offset width.
 */
static uint64_t
next_chunk_end(const uint64_t *offsets, uint64_t n, uint64_t start, uint32_t width)
{
	uint64_t	count = 1;
	uint64_t	next = 2;

	for (;;)
	{
		if (start + next >= n + 1)
		{
			if (offsets[n] - offsets[start] + (n + 1 - start) * width <= AIM_MINICHUNK_SIZE)
				return n;
			return start + count;
		}
		if (offsets[start + next] - offsets[start] + (next + 1) * width > AIM_MINICHUNK_SIZE)
			break;
		count = next;
		next *= 2;
	}
	/* lancedb 0.39 ends the chunk at the last doubling that fits. */
	return start + count;
}

static bool
chunk_variable(const LpLeafShape *shape, const LpPageValues *page, const Strings *strings,
			   ChunkList *chunks, LpBuf *values)
{
	const uint64_t *offsets = strings->offsets;
	uint32_t	width = shape->offset_bits / 8;
	uint64_t	n = page->num_values;
	uint64_t	start = 0;

	while (start < n)
	{
		uint64_t	end = next_chunk_end(offsets, n, start, width);
		uint64_t	count;
		uint64_t	chunk_start = values->len;
		uint64_t	table;

		count = end - start;
		table = (count + 1) * width;
		for (uint64_t i = start; i <= end; i++)
		{
			uint8_t		word[8];

			lp_put_le_uint(word, width, offsets[i] - offsets[start] + table);
			if (!lp_buf_append(values, word, width))
				return false;
		}
		if ((offsets[end] > offsets[start] &&
			 !lp_buf_append(values, strings->data + offsets[start], offsets[end] - offsets[start])) ||
			!pad_to(values, width, VARIABLE_FILL_BYTE) ||
			!chunk_add(chunks, start, count,
					   end == n ? 0 : (uint32_t) __builtin_ctzll(count), chunk_start,
					   values->len - chunk_start))
			return false;
		start = end;
	}
	return true;
}

/*
 * RLE: runs of equal values as the values and u8 run lengths (runs longer
 * than 255 split), in chunks of at most 2048 values (Lance's limit) whose
 * runs fit MAX_MINIBLOCK_BYTES, halved until they do; every chunk but the
 * last holds a power of two of values.
 */
static uint64_t
rle_chunk_bytes(const uint8_t *values, uint32_t bytes, uint64_t first, uint64_t count)
{
	uint64_t	total = 0;
	uint64_t	i = first;

	while (i < first + count)
	{
		uint64_t	run = 1;

		while (i + run < first + count &&
			   memcmp(values + (i + run) * bytes, values + i * bytes, bytes) == 0)
			run++;
		total += (run + 254) / 255 * (bytes + 1);
		i += run;
	}
	return total;
}

static bool
chunk_rle(const LpLeafShape *shape, const LpPageValues *page, ChunkList *chunks, LpBuf *values,
		  LpBuf *lengths)
{
	uint32_t	bytes = shape->bits / 8;
	uint64_t	n = page->num_values;
	const uint8_t *data = page->values.data;

	for (uint64_t first = 0; first < n;)
	{
		uint64_t	count = n - first < 2048 ? n - first : 2048;
		uint64_t	values_start = values->len;
		uint64_t	lengths_start = lengths->len;

		while (count > 1 && rle_chunk_bytes(data, bytes, first, count) > MAX_MINIBLOCK_BYTES)
		{
			uint64_t	power = 1;

			while (power * 2 < count)
				power *= 2;
			count = power;
		}
		for (uint64_t i = first; i < first + count;)
		{
			uint64_t	run = 1;

			while (i + run < first + count &&
				   memcmp(data + (i + run) * bytes, data + i * bytes, bytes) == 0)
				run++;
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
		if (!chunk_add(chunks, first, count,
					   first + count == n ? 0 : (uint32_t) __builtin_ctzll(count),
					   values_start, values->len - values_start))
			return false;
		chunks->chunks[chunks->count - 1].second_start = lengths_start;
		chunks->chunks[chunks->count - 1].second_len = lengths->len - lengths_start;
		first += count;
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
	return rle_chunk_bytes(page->values.data, bytes, 0, page->num_values) < other;
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

		if (!lp_general_compress(compression, values->data + chunk->value_start, chunk->value_len,
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
 * A mini-block page of page's values; with dictionary (its items counted
 * in num_dictionary_items) the values are its indices and its buffer
 * becomes page buffer 2.
 */
static bool
encode_miniblock(LpFileVersion version, const LpLeafShape *shape, const LpPageValues *page,
				 const Strings *strings, LpDictionaryBlock *dictionary,
				 uint64_t num_dictionary_items, LpEncodedPage *out, LpError *err)
{
	Messages	m;
	ChunkList	chunks = {0};
	LpBuf		values = {0};
	LpBuf		second = {0};	/* the chunks' second buffers */
	LpBuf		levels = {0};
	uint32_t	num_value_buffers = 1;
	LpBuf	   *meta = &out->buffers[0];
	LpBuf	   *data = &out->buffers[1];
	bool		has_def = page->null_count > 0;
	bool		large = version >= LP_FILE_VERSION_2_2;
	uint32_t	size_bytes = large ? 4 : 2;
	LevelCompression level_compression = LEVELS_FLAT;
	Lance__Encodings21__MiniBlockLayout layout = LANCE__ENCODINGS21__MINI_BLOCK_LAYOUT__INIT;
	Lance__Encodings21__PageLayout page_layout = LANCE__ENCODINGS21__PAGE_LAYOUT__INIT;
	Lance__Encodings21__RepDefLayer layer;
	CE		   *value_encoding;
	bool		ok = false;

	memset(&m, 0, sizeof(m));
	if (shape->kind == LP_LEAF_VARIABLE)
	{
		value_encoding = strings_encoding(&m, strings, shape->offset_bits);
		ok = chunk_variable(shape, page, strings, &chunks, &values);
	}
	else if (prefers_rle(shape, page))
	{
		value_encoding = rle_encoding(&m, shape->bits);
		num_value_buffers = 2;
		ok = chunk_rle(shape, page, &chunks, &values, &second);
	}
	else if (prefers_bitpacking(shape, page))
	{
		value_encoding = inline_bitpacking_encoding(&m, shape->bits);
		ok = chunk_bitpacked(shape, page, &chunks, &values);
	}
	else if (has_item_nulls(shape, page))
	{
		value_encoding = fixed_size_list_encoding(&m, shape->dimension, shape->bits);
		value_encoding->fixed_size_list->has_validity = true;
		num_value_buffers = 2;
		ok = chunk_fixed_size_list_validity(shape, page, &chunks, &values, &second);
	}
	else
	{
		value_encoding = shape->kind == LP_LEAF_FIXED_SIZE_LIST ?
			fixed_size_list_encoding(&m, shape->dimension, shape->bits) :
			flat_encoding(&m, shape->bits);
		ok = chunk_flat(shape, page, &chunks, &values);
	}
	if (!ok)
		goto no_memory;
	/* Lance leaves fixed-size lists uncompressed. */
	if (lp_compression_is_general(&shape->compression) && shape->kind != LP_LEAF_FIXED_SIZE_LIST &&
		!compress_chunks(&shape->compression, &m, &chunks, &values, &value_encoding))
		goto no_memory;
	if (has_def)
		level_compression = choose_level_compression(version, page);

	out->num_buffers = 2;
	if (dictionary != NULL)
	{
		out->buffers[2] = dictionary->buffer;
		memset(&dictionary->buffer, 0, sizeof(dictionary->buffer));
		out->num_buffers = 3;
		layout.dictionary = dictionary->encoding;
		layout.num_dictionary_items = num_dictionary_items;
	}
	for (uint64_t c = 0; c < chunks.count; c++)
	{
		const Chunk *chunk = &chunks.chunks[c];
		uint64_t	chunk_start = data->len;
		uint64_t	chunk_bytes;
		uint64_t	word;
		uint8_t		header[8];

		levels.len = 0;
		if (has_def && !compress_levels(page, level_compression, chunk->first_value,
										chunk->num_values, &levels))
			goto no_memory;
		lp_put_le16(header, has_def ? (uint16_t) chunk->num_values : 0);
		if (!lp_buf_append(data, header, 2))
			goto no_memory;
		if (has_def)
		{
			lp_put_le16(header, (uint16_t) levels.len);
			if (!lp_buf_append(data, header, 2))
				goto no_memory;
		}
		lp_put_le_uint(header, size_bytes, chunk->value_len);
		if (!lp_buf_append(data, header, size_bytes))
			goto no_memory;
		lp_put_le_uint(header, size_bytes, chunk->second_len);
		if ((num_value_buffers == 2 && !lp_buf_append(data, header, size_bytes)) ||
			!pad_to(data, MINIBLOCK_ALIGNMENT, MINIBLOCK_FILL_BYTE))
			goto no_memory;
		if (has_def && (!lp_buf_append(data, levels.data, levels.len) ||
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
	}

	layer = has_def ? LANCE__ENCODINGS21__REP_DEF_LAYER__REPDEF_NULLABLE_ITEM :
		LANCE__ENCODINGS21__REP_DEF_LAYER__REPDEF_ALL_VALID_ITEM;
	layout.def_compression = has_def ? level_encoding(&m, level_compression) : NULL;
	layout.value_compression = value_encoding;
	layout.n_layers = 1;
	layout.layers = &layer;
	layout.num_buffers = num_value_buffers;
	layout.num_items = page->num_values;
	layout.has_large_chunk = large;
	page_layout.layout_case = LANCE__ENCODINGS21__PAGE_LAYOUT__LAYOUT_MINI_BLOCK_LAYOUT;
	page_layout.mini_block_layout = &layout;
	out->layout = "mini_block";
	ok = wrap_layout(&page_layout, out, err);
	goto done;

no_memory:
	ok = no_memory(err);
done:
	lp_free(chunks.chunks);
	lp_buf_free(&values);
	lp_buf_free(&second);
	lp_buf_free(&levels);
	return ok;
}

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

static bool
encode_fullzip(const LpLeafShape *shape, const LpPageValues *page, const Strings *strings,
			   LpEncodedPage *out, LpError *err)
{
	Messages	m;
	Lance__Encodings21__FullZipLayout layout = LANCE__ENCODINGS21__FULL_ZIP_LAYOUT__INIT;
	Lance__Encodings21__PageLayout page_layout = LANCE__ENCODINGS21__PAGE_LAYOUT__INIT;
	Lance__Encodings21__RepDefLayer layer;
	bool		has_def = page->null_count > 0;
	bool		variable = shape->kind == LP_LEAF_VARIABLE;
	uint64_t	n = page->num_values;
	LpBuf	   *zipped = &out->buffers[0];
	LpBuf	   *index = &out->buffers[1];
	bool		item_nulls = has_item_nulls(shape, page);
	uint32_t	validity_bytes = item_nulls ? (shape->dimension + 7) / 8 : 0;
	uint32_t	width = variable ? shape->offset_bits / 8 : bytes_per_value(shape) + validity_bytes;
	uint32_t	index_width = 0;

	memset(&m, 0, sizeof(m));
	if (n > UINT32_MAX)
		return lp_fail(err, LP_ERR_INTERNAL, "full-zip page of %llu values", (unsigned long long) n);
	if (variable)
	{
		/* Lance sizes the repetition index by an upper bound of the zipped bytes. */
		uint64_t	bound = strings->data_len + (has_def ? n : 0) + (uint64_t) width * n;

		index_width = bytepack_width(bound);
	}
	for (uint64_t i = 0; i < n; i++)
	{
		bool		null = is_null(page, i);
		uint8_t		word[8];

		if (variable)
		{
			lp_put_le_uint(word, index_width, zipped->len);
			if (!lp_buf_append(index, word, index_width))
				return no_memory(err);
		}
		if (has_def)
		{
			word[0] = null ? 1 : 0;
			if (!lp_buf_append(zipped, word, 1))
				return no_memory(err);
		}
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
					return no_memory(err);
			}
			if (!lp_buf_append(zipped, page->values.data + i * (width - validity_bytes),
							   width - validity_bytes))
				return no_memory(err);
		}
		else if (!null)
		{
			const uint64_t *offsets = strings->offsets;
			uint64_t	len = offsets[i + 1] - offsets[i];

			lp_put_le_uint(word, width, len);
			if (!lp_buf_append(zipped, word, width) ||
				(len > 0 && !lp_buf_append(zipped, strings->data + offsets[i], len)))
				return no_memory(err);
		}
	}
	out->num_buffers = 1;
	if (variable)
	{
		uint8_t		word[8];

		lp_put_le_uint(word, index_width, zipped->len);
		if (!lp_buf_append(index, word, index_width))
			return no_memory(err);
		out->num_buffers = 2;
	}

	layer = has_def ? LANCE__ENCODINGS21__REP_DEF_LAYER__REPDEF_NULLABLE_ITEM :
		LANCE__ENCODINGS21__REP_DEF_LAYER__REPDEF_ALL_VALID_ITEM;
	layout.bits_def = has_def ? 1 : 0;
	if (variable)
	{
		layout.details_case = LANCE__ENCODINGS21__FULL_ZIP_LAYOUT__DETAILS_BITS_PER_OFFSET;
		layout.bits_per_offset = shape->offset_bits;
		layout.value_compression = strings_encoding(&m, strings, shape->offset_bits);
	}
	else
	{
		layout.details_case = LANCE__ENCODINGS21__FULL_ZIP_LAYOUT__DETAILS_BITS_PER_VALUE;
		layout.bits_per_value = width * 8;
		layout.value_compression = shape->kind == LP_LEAF_FIXED_SIZE_LIST ?
			fixed_size_list_encoding(&m, shape->dimension, shape->bits) :
			flat_encoding(&m, shape->bits);
		if (item_nulls)
			layout.value_compression->fixed_size_list->has_validity = true;
	}
	layout.num_items = (uint32_t) n;
	layout.num_visible_items = (uint32_t) n;
	layout.n_layers = 1;
	layout.layers = &layer;
	page_layout.layout_case = LANCE__ENCODINGS21__PAGE_LAYOUT__LAYOUT_FULL_ZIP_LAYOUT;
	page_layout.full_zip_layout = &layout;
	out->layout = "full_zip";
	return wrap_layout(&page_layout, out, err);
}

/* ---- all null ------------------------------------------------------------- */

static bool
encode_all_null(LpEncodedPage *out, LpError *err)
{
	Lance__Encodings21__ConstantLayout layout = LANCE__ENCODINGS21__CONSTANT_LAYOUT__INIT;
	Lance__Encodings21__PageLayout page_layout = LANCE__ENCODINGS21__PAGE_LAYOUT__INIT;
	Lance__Encodings21__RepDefLayer layer = LANCE__ENCODINGS21__REP_DEF_LAYER__REPDEF_NULLABLE_ITEM;

	layout.n_layers = 1;
	layout.layers = &layer;
	page_layout.layout_case = LANCE__ENCODINGS21__PAGE_LAYOUT__LAYOUT_CONSTANT_LAYOUT;
	page_layout.constant_layout = &layout;
	out->num_buffers = 0;
	out->layout = "constant";
	return wrap_layout(&page_layout, out, err);
}

/* ---- constant (2.2+) ----------------------------------------------------- */

#define MAX_INLINE_VALUE_BYTES 32

/* Every valid value equals the first valid one (first_valid receives its index). */
static bool
valid_values_equal(const LpLeafShape *shape, const LpPageValues *page, uint64_t *first_valid)
{
	const uint64_t *offsets = (const uint64_t *) page->offsets.data;
	uint32_t	bytes = bytes_per_value(shape);
	uint64_t	first = 0;

	while (first < page->num_values && is_null(page, first))
		first++;
	*first_valid = first;
	for (uint64_t i = first + 1; i < page->num_values; i++)
	{
		if (is_null(page, i))
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
	lp_put_le32(word, bytes_per_value(shape));
	return lp_buf_append(out, word, 4) &&
		lp_buf_append(out, page->values.data + index * bytes_per_value(shape), bytes_per_value(shape));
}

/*
 * A page whose valid values are all equal, as Lance 12 writes it from 2.2
 * on: the value inline (fixed widths up to 32 bytes) or in buffer 0, and,
 * when the page has nulls, an empty repetition buffer and the definition
 * levels as raw u16.
 */
static bool
encode_constant(const LpLeafShape *shape, const LpPageValues *page, uint64_t index,
				LpEncodedPage *out, LpError *err)
{
	Messages	m;
	Lance__Encodings21__PageLayout page_layout = LANCE__ENCODINGS21__PAGE_LAYOUT__INIT;
	Lance__Encodings21__RepDefLayer layer = page->null_count > 0 ?
		LANCE__ENCODINGS21__REP_DEF_LAYER__REPDEF_NULLABLE_ITEM :
		LANCE__ENCODINGS21__REP_DEF_LAYER__REPDEF_ALL_VALID_ITEM;
	Lance__Encodings21__ConstantLayout *layout = &m.constant;
	uint8_t		inline_value[MAX_INLINE_VALUE_BYTES];
	bool		inline_ok = shape->kind == LP_LEAF_BOOL ||
		(shape->kind == LP_LEAF_FIXED && bytes_per_value(shape) <= MAX_INLINE_VALUE_BYTES);
	uint32_t	next = 0;

	memset(&m, 0, sizeof(m));
	lance__encodings21__constant_layout__init(layout);
	layout->n_layers = 1;
	layout->layers = &layer;
	if (inline_ok)
	{
		size_t		len = shape->kind == LP_LEAF_BOOL ? 1 : bytes_per_value(shape);

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
		return no_memory(err);
	if (page->null_count > 0)
	{
		LpBuf	   *def = &out->buffers[next + 1];

		next += 2;				/* the repetition buffer stays empty */
		for (uint64_t i = 0; i < page->num_values; i++)
		{
			uint8_t		level[2];

			lp_put_le16(level, is_null(page, i) ? 1 : 0);
			if (!lp_buf_append(def, level, 2))
				return no_memory(err);
		}
	}
	out->num_buffers = next;
	page_layout.layout_case = LANCE__ENCODINGS21__PAGE_LAYOUT__LAYOUT_CONSTANT_LAYOUT;
	page_layout.constant_layout = layout;
	out->layout = "constant";
	return wrap_layout(&page_layout, out, err);
}

/*
 * A dictionary page: the indices, with the page's validity and the
 * column's compression, as a mini-block page of 32-bit values.
 */
static bool
encode_dictionary(LpFileVersion version, const LpLeafShape *shape, const LpPageValues *page,
				  const LpDictionary *dictionary, LpEncodedPage *out, LpError *err)
{
	LpLeafShape index_shape = {LP_LEAF_FIXED, 32, 0, 0, false, shape->compression};
	LpPageValues indices;
	LpDictionaryBlock block;
	Strings		no_strings;
	bool		ok;

	memset(&indices, 0, sizeof(indices));
	memset(&no_strings, 0, sizeof(no_strings));
	indices.num_values = page->num_values;
	indices.null_count = page->null_count;
	indices.values = dictionary->indices;
	indices.validity = page->validity;
	if (!lp_dictionary_block_encode(version, shape, dictionary, &block))
		return no_memory(err);
	ok = encode_miniblock(version, &index_shape, &indices, &no_strings, &block,
						  dictionary->num_items, out, err);
	lp_buf_free(&block.buffer);
	return ok;
}

/* Lance's is_narrow: the longest value is under 256 bytes. */
static bool
is_narrow(const LpLeafShape *shape, const LpPageValues *page)
{
	if (shape->kind == LP_LEAF_VARIABLE)
		return page->max_length < MINIBLOCK_MAX_VALUE_BYTES;
	return shape->kind == LP_LEAF_BOOL || bytes_per_value(shape) < MINIBLOCK_MAX_VALUE_BYTES;
}

bool
lp_encode_leaf_page(LpFileVersion version, const LpLeafShape *shape, const LpPageValues *page,
					LpEncodedPage *out, LpError *err)
{
	bool		ok;
	uint64_t	first_valid;

	memset(out, 0, sizeof(*out));
	if (version < LP_FILE_VERSION_2_1)
		return lp_fail(err, LP_ERR_INTERNAL, "structural pages requested for a %s file",
					   lp_file_version_name(version));
	if (page->null_count == page->num_values)
		ok = encode_all_null(out, err);
	else if (version >= LP_FILE_VERSION_2_2 && shape->kind != LP_LEAF_FIXED_SIZE_LIST &&
			 valid_values_equal(shape, page, &first_valid))
		ok = encode_constant(shape, page, first_valid, out, err);
	else
	{
		Strings		strings;
		LpDictionary dictionary;
		bool		use_dictionary;

		memset(&strings, 0, sizeof(strings));
		if (!lp_dictionary_plan(version, shape, page, &dictionary, &use_dictionary))
			ok = no_memory(err);
		else if (use_dictionary)
			ok = encode_dictionary(version, shape, page, &dictionary, out, err);
		else if (shape->kind == LP_LEAF_VARIABLE && !strings_prepare(shape, page, &strings))
			ok = no_memory(err);
		else if (is_narrow(shape, page))
			ok = encode_miniblock(version, shape, page, &strings, NULL, 0, out, err);
		else
			ok = encode_fullzip(shape, page, &strings, out, err);
		lp_dictionary_free(&dictionary);
		strings_free(&strings);
	}
	if (!ok)
		lp_encoded_page_free(out);
	return ok;
}

void
lp_encoded_page_free(LpEncodedPage *page)
{
	for (uint32_t i = 0; i < LP_ENCODED_PAGE_MAX_BUFFERS; i++)
		lp_buf_free(&page->buffers[i]);
	lp_free(page->encoding.data);
	memset(page, 0, sizeof(*page));
}
