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
 *    length when variable), with a repetition index for variable widths
 *    and lists;
 *    strings whose longest value exceeds 32 KiB, or of a field asking for
 *    lz4 or zstd, each zstd-compressed on its own (General);
 *  - low-cardinality pages (lp_encode_dictionary.c, checked first): a
 *    mini-block page of u32 indices, compressed as above, and the
 *    dictionary in page buffer 2.
 * Field metadata lance-encoding:compression "none" turns RLE, bit-packing
 * and FSST off, "fsst" forces FSST, and "lz4"/"zstd" store strings without
 * FSST and compress each mini-block chunk's values (Lance's
 * GeneralMiniBlockCompressor: when the values reach 4 KiB and shrink).
 * Definition levels go into every chunk or control word when the page has
 * nulls, one repdef layer for the leaf and one for each struct and list
 * above it (a null takes the level of its outermost null layer); with
 * lists, repetition levels and a repetition index go with them (in
 * full-zip pages an entry per row).  Levels are compressed as
 * Lance compresses levels: bit-packed at the width of the highest level,
 * run-length encoded from 2.2 on when nulls are rare, flat for tiny pages.
 */
#include <math.h>
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
/* A chunk's headers (levels count, buffer sizes) and the padding of its four buffers, at most. */
#define MINIBLOCK_CHUNK_OVERHEAD (2 + 3 * 4 + 4 * (MINIBLOCK_ALIGNMENT - 1))
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
no_memory(LpError *err)
{
	return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
}

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

static bool
is_null(const LpPageValues *page, uint64_t index)
{
	return page->null_count > 0 && !lp_bit_get(page->validity.buf.data, index);
}

typedef Lance__Encodings21__RepDefLayer Layer;

/* Whether the n bytes are all 0, read a word at a time. */
static bool
all_zero(const uint8_t *bytes, uint64_t n)
{
	uint64_t	all = 0;
	uint64_t	i = 0;

	for (; i + 8 <= n; i += 8)
	{
		uint64_t	word;

		memcpy(&word, bytes + i, 8);
		all |= word;
	}
	for (; i < n; i++)
		all |= bytes[i];
	return all == 0;
}

/* Levels of one kind (definition or repetition), one per level of the page. */
typedef struct LevelSeq
{
	const uint16_t *v;			/* NULL when every level is 0 */
	uint16_t	max;
	uint32_t	width;			/* bits of max */
} LevelSeq;

/*
 * The levels of a page and the repdef layers they follow, innermost (the
 * leaf) first, as Lance's RepDefBuilder serializes them: a layer with a
 * null in the page is NULLABLE_ITEM (a list NULLABLE_LIST, EMPTYABLE_LIST
 * with empty lists, NULL_AND_EMPTY_LIST with both) and takes the next
 * definition levels (null before empty), a layer without is ALL_VALID_ITEM
 * (ALL_VALID_LIST) and takes none; a level's definition level is that of
 * its outermost null or empty layer.  Levels are one per value without
 * lists; with lists the levels of nulls and empty lists above the values
 * hold no value (their definition level is above max_visible).
 */
typedef struct Levels
{
	LevelSeq	def;
	LevelSeq	rep;			/* v NULL without lists */
	uint64_t	num_levels;
	uint16_t	max_visible;	/* highest definition level that holds a value */
	uint16_t   *def_values;		/* def.v, owned; rep.v is the page's */
	uint32_t	num_layers;
	Layer		layers[LP_ENCODE_MAX_LAYERS];
} Levels;

/* The null or empty layer of level i (see null_layers), 0 when it is valid. */
static uint32_t
level_code(const LpLeafShape *shape, const LpPageValues *page, uint64_t i)
{
	if (shape->num_layers > 1)
		return page->null_layers.data[i];
	return is_null(page, i) ? 1 : 0;
}

static uint32_t
bits_of(uint16_t max)
{
	return max == 0 ? 0 : 32 - (uint32_t) __builtin_clz(max);
}

static Layer
layer_kind(bool list, bool nullable, bool emptyable)
{
	if (!list)
		return nullable ? LANCE__ENCODINGS21__REP_DEF_LAYER__REPDEF_NULLABLE_ITEM :
			LANCE__ENCODINGS21__REP_DEF_LAYER__REPDEF_ALL_VALID_ITEM;
	if (nullable && emptyable)
		return LANCE__ENCODINGS21__REP_DEF_LAYER__REPDEF_NULL_AND_EMPTY_LIST;
	if (nullable)
		return LANCE__ENCODINGS21__REP_DEF_LAYER__REPDEF_NULLABLE_LIST;
	if (emptyable)
		return LANCE__ENCODINGS21__REP_DEF_LAYER__REPDEF_EMPTYABLE_LIST;
	return LANCE__ENCODINGS21__REP_DEF_LAYER__REPDEF_ALL_VALID_LIST;
}

static bool
levels_build(const LpLeafShape *shape, const LpPageValues *page, Levels *levels)
{
	bool		nullable[LP_ENCODE_MAX_LAYERS] = {false};
	bool		emptyable[LP_ENCODE_MAX_LAYERS] = {false};
	uint16_t	null_level[LP_ENCODE_MAX_LAYERS];
	uint16_t	empty_level[LP_ENCODE_MAX_LAYERS];
	uint64_t	n = shape->num_lists > 0 ? page->num_levels : page->num_values;
	bool		inside_lists = false;
	bool		any_null;

	memset(levels, 0, sizeof(*levels));
	levels->num_layers = shape->num_layers;
	levels->num_levels = n;
	/* the layers with nulls or empty lists, where some level has one (mostly none does) */
	any_null = shape->num_layers > 1 ? !all_zero(page->null_layers.data, n) : page->null_count > 0;
	for (uint64_t i = 0; any_null && i < n; i++)
	{
		uint32_t	code = level_code(shape, page, i);

		if (code & LP_LEVEL_EMPTY)
			emptyable[(code & ~LP_LEVEL_EMPTY) - 1] = true;
		else if (code > 0)
			nullable[code - 1] = true;
	}
	for (uint32_t k = 0; k < levels->num_layers; k++)
	{
		levels->layers[k] = layer_kind(shape->list_layer[k], nullable[k], emptyable[k]);
		null_level[k] = nullable[k] ? ++levels->def.max : 0;
		empty_level[k] = emptyable[k] ? ++levels->def.max : 0;
		inside_lists = inside_lists || shape->list_layer[k];
		if (!inside_lists)
			levels->max_visible = levels->def.max;
	}
	levels->def.width = bits_of(levels->def.max);
	if (levels->def.max > 0)
	{
		levels->def_values = lp_alloc_array(n + 1, sizeof(uint16_t));
		if (levels->def_values == NULL)
			return false;
		for (uint64_t i = 0; i < n; i++)
		{
			uint32_t	code = level_code(shape, page, i);

			levels->def_values[i] = code == 0 ? 0 : (code & LP_LEVEL_EMPTY) ?
				empty_level[(code & ~LP_LEVEL_EMPTY) - 1] : null_level[code - 1];
		}
		levels->def.v = levels->def_values;
	}
	if (shape->num_lists > 0)
	{
		levels->rep.max = (uint16_t) shape->num_lists;
		levels->rep.width = bits_of(levels->rep.max);
		/* read where the file writer put them (native u16, as every reader of v takes them) */
		levels->rep.v = (const uint16_t *) page->rep.data;
	}
	return true;
}

static void
levels_free(Levels *levels)
{
	lp_free(levels->def_values);
}

/*
 * The strings of a variable-width page as they are stored: FSST-compressed
 * (Lance does so when the longest value has at least 5 bytes and the page
 * at least 32 KiB), in full-zip pages each valid value zstd-compressed on
 * its own (general, see prefers_per_value_general), or the page's own.
 */
typedef struct Strings
{
	const uint64_t *offsets;	/* num_values + 1 */
	const uint8_t *data;
	uint64_t	data_len;
	bool		fsst;
	bool		general;
	uint8_t		table[LP_FSST_SYMBOL_TABLE_LEN];
	LpBuf		compressed_offsets;
	LpBuf		compressed_data;
} Strings;

#define FSST_LEAST_INPUT_SIZE (32 * 1024)
#define FSST_LEAST_INPUT_MAX_LENGTH 5
#define PER_VALUE_GENERAL_LEAST_MAX_LENGTH (32 * 1024)

/* What Lance's per-value compressor (CompressedBufferEncoder::default()) writes: zstd, level 0. */
static const LpColumnCompression per_value_zstd = {LP_COMPRESSION_ZSTD, true, 0};

/*
 * Lance's create_per_value for full-zip strings: every value compressed on
 * its own when the page has at least 32 KiB and its longest value more
 * than 32 KiB or the field asks for lz4 or zstd (zstd either way).
 */
static bool
prefers_per_value_general(const LpLeafShape *shape, const LpPageValues *page)
{
	return shape->compression.request != LP_COMPRESSION_NONE &&
		(page->max_length > PER_VALUE_GENERAL_LEAST_MAX_LENGTH ||
		 lp_compression_is_general(&shape->compression)) &&
		page->data.len >= FSST_LEAST_INPUT_SIZE;
}

/* Every valid value of page compressed on its own into strings (null values stay empty). */
static bool
compress_values(const LpPageValues *page, Strings *strings)
{
	const uint64_t *offsets = (const uint64_t *) page->offsets.data;

	if (!lp_buf_append_u64(&strings->compressed_offsets, 0))
		return false;
	for (uint64_t i = 0; i < page->num_values; i++)
	{
		if (!is_null(page, i) &&
			!lp_general_compress(&per_value_zstd, page->data.data + offsets[i],
								 offsets[i + 1] - offsets[i], &strings->compressed_data))
			return false;
		if (!lp_buf_append_u64(&strings->compressed_offsets, strings->compressed_data.len))
			return false;
	}
	strings->general = true;
	strings->offsets = (const uint64_t *) strings->compressed_offsets.data;
	strings->data = strings->compressed_data.data;
	strings->data_len = strings->compressed_data.len;
	return true;
}

/* The strings of page as a mini-block (or, with fullzip, a full-zip) page stores them. */
static bool
strings_prepare(const LpLeafShape *shape, const LpPageValues *page, bool fullzip, Strings *strings)
{
	const uint64_t *offsets = (const uint64_t *) page->offsets.data;
	LpCompressionRequest request = shape->compression.request;
	LpFsstEncoder *encoder;

	memset(strings, 0, sizeof(*strings));
	strings->offsets = offsets;
	strings->data = page->data.data;
	strings->data_len = page->data.len;
	if (fullzip && prefers_per_value_general(shape, page))
		return compress_values(page, strings);
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
	CE			ce[14];
	Lance__Encodings21__Flat flat[8];
	Lance__Encodings21__InlineBitpacking inline_bitpacking[3];
	Lance__Encodings21__OutOfLineBitpacking out_of_line[2];
	Lance__Encodings21__Variable variable;
	Lance__Encodings21__FixedSizeList fixed_size_list;
	Lance__Encodings21__Rle rle[3];
	Lance__Encodings21__Fsst fsst;
	Lance__Encodings21__ConstantLayout constant;
	Lance__Encodings21__General general;
	Lance__Encodings21__BufferCompression buffer_compression;
	Lance__Encodings21__ByteStreamSplit byte_stream_split;
	Lance__Encodings21__VariablePackedStruct packed_struct;
	Lance__Encodings21__VariablePackedStruct__FieldEncoding packed_fields[5];
	Lance__Encodings21__VariablePackedStruct__FieldEncoding *packed_field_pointers[5];
	int			used_ce;
	int			used_flat;
	int			used_inline;
	int			used_out_of_line;
	int			used_rle;
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
	Lance__Encodings21__OutOfLineBitpacking *out_of_line = &m->out_of_line[m->used_out_of_line++];

	lance__encodings21__compressive_encoding__init(ce);
	lance__encodings21__out_of_line_bitpacking__init(out_of_line);
	out_of_line->uncompressed_bits_per_value = bits;
	out_of_line->values = values;
	ce->compression_case = LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_OUT_OF_LINE_BITPACKING;
	ce->out_of_line_bitpacking = out_of_line;
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
	Lance__Encodings21__Rle *rle = &m->rle[m->used_rle++];

	lance__encodings21__compressive_encoding__init(ce);
	lance__encodings21__rle__init(rle);
	rle->values = values;
	rle->run_lengths = lengths;
	ce->compression_case = LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_RLE;
	ce->rle = rle;
	return ce;
}

static CE *
byte_stream_split_encoding(Messages *m, uint64_t bits)
{
	CE		   *values = flat_encoding(m, bits);
	CE		   *ce = &m->ce[m->used_ce++];

	lance__encodings21__compressive_encoding__init(ce);
	lance__encodings21__byte_stream_split__init(&m->byte_stream_split);
	m->byte_stream_split.values = values;
	ce->compression_case = LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_BYTE_STREAM_SPLIT;
	ce->byte_stream_split = &m->byte_stream_split;
	return ce;
}

/* Variable offsets and bytes, FSST- or General-compressed when the strings are. */
static CE *
strings_encoding(Messages *m, const Strings *strings, uint64_t offset_bits)
{
	CE		   *variable = variable_encoding(m, offset_bits);
	CE		   *ce;

	if (strings->general)
	{
		ce = &m->ce[m->used_ce++];
		lance__encodings21__compressive_encoding__init(ce);
		lp_buffer_compression_init(&per_value_zstd, &m->buffer_compression);
		lance__encodings21__general__init(&m->general);
		m->general.compression = &m->buffer_compression;
		m->general.values = variable;
		ce->compression_case = LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_GENERAL;
		ce->general = &m->general;
		return ce;
	}
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

/*
 * The VariablePackedStruct of Blob v2 descriptors as lancedb writes it:
 * kind, position, size and blob_id flat (8, 64, 64, 32 bits), blob_uri
 * variable with a 32-bit length.
 */
static CE *
blob_descriptor_encoding(Messages *m)
{
	static const uint64_t fixed_bits[4] = {8, 64, 64, 32};
	CE		   *ce;

	for (int f = 0; f < 5; f++)
	{
		Lance__Encodings21__VariablePackedStruct__FieldEncoding *field = &m->packed_fields[f];

		lance__encodings21__variable_packed_struct__field_encoding__init(field);
		if (f < 4)
		{
			field->value = flat_encoding(m, fixed_bits[f]);
			field->layout_case =
				LANCE__ENCODINGS21__VARIABLE_PACKED_STRUCT__FIELD_ENCODING__LAYOUT_BITS_PER_VALUE;
			field->bits_per_value = fixed_bits[f];
		}
		else
		{
			field->value = variable_encoding(m, 32);
			field->layout_case =
				LANCE__ENCODINGS21__VARIABLE_PACKED_STRUCT__FIELD_ENCODING__LAYOUT_BITS_PER_LENGTH;
			field->bits_per_length = 32;
		}
		m->packed_field_pointers[f] = field;
	}
	lance__encodings21__variable_packed_struct__init(&m->packed_struct);
	m->packed_struct.n_fields = 5;
	m->packed_struct.fields = m->packed_field_pointers;
	ce = &m->ce[m->used_ce++];
	lance__encodings21__compressive_encoding__init(ce);
	ce->compression_case = LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_VARIABLE_PACKED_STRUCT;
	ce->variable_packed_struct = &m->packed_struct;
	return ce;
}

/* Serialize layout into out->encoding as Encoding{direct{Any{PageLayout}}}. */
static bool
wrap_layout(const Lance__Encodings21__PageLayout *layout, LpEncodedPage *out, LpError *err)
{
	return lp_encoded_page_wrap(&layout->base, LP_PAGE_LAYOUT_URL, out, err);
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
level_rle_bytes(const LevelSeq *levels, uint64_t first, uint64_t count)
{
	uint64_t	bytes = 0;

	for (uint64_t i = first; i < first + count;)
	{
		uint64_t	run = 1;

		while (i + run < first + count && levels->v[i + run] == levels->v[i])
			run++;
		bytes += (run + 254) / 255 * 3;
		i += run;
	}
	return bytes;
}

/*
 * Lance 12 picks the levels' compression from the whole page: flat when the
 * page is so small that one packed block outweighs it; from 2.2 on RLE
 * when its runs take fewer bytes than bit-packing (rare nulls); else
 * bit-packing at the width of the highest level, inline for at most 1024
 * levels and out of line (one width) beyond.
 */
static LevelCompression
choose_level_compression(LpFileVersion version, const LevelSeq *levels, uint64_t n)
{
	uint64_t	block_bytes = lp_fastlanes_packed_bytes(levels->width);

	if (n <= LP_FASTLANES_BLOCK && block_bytes >= n * 2)
		return LEVELS_FLAT;
	if (version >= LP_FILE_VERSION_2_2 &&
		level_rle_bytes(levels, 0, n) <
		(n + LP_FASTLANES_BLOCK - 1) / LP_FASTLANES_BLOCK * block_bytes)
		return LEVELS_RLE;
	return n <= LP_FASTLANES_BLOCK ? LEVELS_INLINE : LEVELS_OUT_OF_LINE;
}

/* Pack 1024 u16 levels (zero-padded) of [first, first + count) at width. */
static bool
pack_level_block(const LevelSeq *levels, uint64_t first, uint64_t count, uint32_t width,
				 LpBuf *out)
{
	uint16_t	block[LP_FASTLANES_BLOCK];
	uint8_t		packed[LP_FASTLANES_BLOCK * 2];

	memset(block, 0, sizeof(block));
	for (uint64_t i = 0; i < count; i++)
		lp_put_le16((uint8_t *) &block[i], levels->v[first + i]);
	lp_fastlanes_pack(LEVEL_BITS, width, (const uint8_t *) block, packed);
	return lp_buf_append(out, packed, lp_fastlanes_packed_bytes(width));
}

/* The definition levels of chunk [first, first + count), compressed, appended to out. */
static bool
compress_levels(const LevelSeq *levels, LevelCompression compression, uint64_t first,
				uint64_t count, LpBuf *out)
{
	switch (compression)
	{
		case LEVELS_RLE:
			{
				/* A block: u64 size of the run values, the values (u16), the lengths (u8). */
				uint64_t	runs_bytes = level_rle_bytes(levels, first, count);
				uint64_t	start = out->len;
				uint8_t		word[8];

				lp_put_le64(word, runs_bytes / 3 * 2);
				if (!lp_buf_append(out, word, 8) || !lp_buf_append_zeros(out, runs_bytes))
					return false;
				for (uint64_t i = first, r = 0, n_runs = runs_bytes / 3; i < first + count;)
				{
					uint64_t	run = 1;

					while (i + run < first + count && levels->v[i + run] == levels->v[i])
						run++;
					for (uint64_t left = run; left > 0; r++)
					{
						uint8_t		length = (uint8_t) (left > 255 ? 255 : left);

						lp_put_le16(out->data + start + 8 + r * 2, levels->v[i]);
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

				lp_put_le16(level, levels->v[first + i]);
				if (!lp_buf_append(out, level, 2))
					return false;
			}
			return true;
		case LEVELS_INLINE:
			{
				uint8_t		width[2];

				/* At the width of the page's widest level, which every chunk can take. */
				lp_put_le16(width, (uint16_t) levels->width);
				return lp_buf_append(out, width, 2) &&
					pack_level_block(levels, first, count, levels->width, out);
			}
		case LEVELS_OUT_OF_LINE:
			{
				uint64_t	whole = count / LP_FASTLANES_BLOCK;
				uint64_t	tail = count % LP_FASTLANES_BLOCK;

				for (uint64_t b = 0; b < whole; b++)
					if (!pack_level_block(levels, first + b * LP_FASTLANES_BLOCK,
										  LP_FASTLANES_BLOCK, levels->width, out))
						return false;
				if (tail == 0)
					return true;
				/* Pad and pack the tail only when that is smaller than raw levels. */
				if (levels->width * (LP_FASTLANES_BLOCK - tail) < (LEVEL_BITS - levels->width) * tail)
					return pack_level_block(levels, first + whole * LP_FASTLANES_BLOCK, tail,
											levels->width, out);
				return compress_levels(levels, LEVELS_FLAT, first + whole * LP_FASTLANES_BLOCK,
									   tail, out);
			}
	}
	return false;
}

static CE *
level_encoding(Messages *m, LevelCompression compression, uint32_t width)
{
	switch (compression)
	{
		case LEVELS_RLE:
			return rle_encoding(m, LEVEL_BITS);
		case LEVELS_INLINE:
			return inline_bitpacking_encoding(m, LEVEL_BITS);
		case LEVELS_OUT_OF_LINE:
			return out_of_line_encoding(m, LEVEL_BITS, width);
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
	uint32_t	bytes = bytes_per_value(writer->shape);

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
write_fixed_size_list_validity(const ChunkWriter *writer, uint64_t first, uint64_t count,
							   LpBuf *validity, LpBuf *items)
{
	uint64_t	dim = writer->shape->dimension;
	uint64_t	row_bytes = bytes_per_value(writer->shape);
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
		return strings_encoding(m, strings, shape->offset_bits);
	}
	if (prefers_byte_stream_split(shape, page))
	{
		writer->write = write_byte_stream_split;
		writer->values_per_chunk = shape->bits == 32 ? 1024 : 512;	/* 4 KiB */
		return byte_stream_split_encoding(m, shape->bits);
	}
	if (prefers_rle(shape, page))
	{
		writer->chunk_values = rle_chunk_values;
		writer->write = write_rle;
		*num_value_buffers = 2;
		return rle_encoding(m, shape->bits);
	}
	if (prefers_bitpacking(shape, page))
	{
		writer->write = write_bitpacked;
		writer->values_per_chunk = LP_FASTLANES_BLOCK;
		return inline_bitpacking_encoding(m, shape->bits);
	}
	if (has_item_nulls(shape, page))
	{
		uint64_t	dim = shape->dimension;

		writer->write = write_fixed_size_list_validity;
		writer->values_per_chunk = flat_values_per_chunk((dim + 7) / 8 + bytes_per_value(shape), false);
		*num_value_buffers = 2;
		encoding = fixed_size_list_encoding(m, dim, shape->bits);
		encoding->fixed_size_list->has_validity = true;
		return encoding;
	}
	writer->values_per_chunk = shape->kind == LP_LEAF_BOOL ? flat_values_per_chunk(1, true) :
		flat_values_per_chunk(bytes_per_value(shape), false);
	return shape->kind == LP_LEAF_FIXED_SIZE_LIST ?
		fixed_size_list_encoding(m, shape->dimension, shape->bits) :
		flat_encoding(m, shape->bits);
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
	if (!compress_levels(levels, compression, start, end - start, out))
		return false;
	lp_put_le16(size, (uint16_t) out->len);
	return lp_buf_append(header, size, 2);
}

/*
 * A mini-block page of page's values; with dictionary (its items counted
 * in num_dictionary_items) the values are its indices and its buffer
 * becomes page buffer 2.
 */
static bool
encode_miniblock(LpFileVersion version, const LpLeafShape *shape, const LpPageValues *page,
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
		def_compression = choose_level_compression(version, &levels->def, levels->num_levels);
	if (has_rep)
		rep_compression = choose_level_compression(version, &levels->rep, levels->num_levels);
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

	layout.rep_compression = has_rep ? level_encoding(&m, rep_compression, levels->rep.width) : NULL;
	layout.def_compression = has_def ? level_encoding(&m, def_compression, levels->def.width) : NULL;
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
	ok = wrap_layout(&page_layout, out, err);
	goto done;

no_memory:
	ok = no_memory(err);
done:
	lp_free(chunks.chunks);
	lp_buf_free(&values);
	lp_buf_free(&second);
	lp_buf_free(&chunk_rep);
	lp_buf_free(&chunk_def);
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
encode_fullzip(const LpLeafShape *shape, const LpPageValues *page, const Levels *levels,
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
	bool		item_nulls = has_item_nulls(shape, page);
	uint32_t	validity_bytes = item_nulls ? (shape->dimension + 7) / 8 : 0;
	uint32_t	width = variable ? shape->offset_bits / 8 : bytes_per_value(shape) + validity_bytes;
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
	for (uint64_t l = 0; l < num_levels; l++)
	{
		bool		null;
		uint8_t		word[8];

		if ((variable && !has_rep) || (has_rep && levels->rep.v[l] == levels->rep.max))
		{
			lp_put_le_uint(word, index_width, zipped->len);
			if (!lp_buf_append(index, word, index_width))
				return no_memory(err);
		}
		if (control_bytes > 0)
		{
			uint32_t	control = (has_rep ? (uint32_t) levels->rep.v[l] << levels->def.width : 0) |
				(has_def ? levels->def.v[l] : 0);

			lp_put_le_uint(word, control_bytes, control);
			if (!lp_buf_append(zipped, word, control_bytes))
				return no_memory(err);
		}
		if (has_def && levels->def.v[l] > levels->max_visible)
			continue;			/* a null or empty list: no value */
		null = is_null(page, i);
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
		i++;
	}
	out->num_buffers = 1;
	if (variable || has_rep)
	{
		uint8_t		word[8];

		lp_put_le_uint(word, index_width, zipped->len);
		if (!lp_buf_append(index, word, index_width))
			return no_memory(err);
		out->num_buffers = 2;
	}

	layout.bits_def = levels->def.width;
	if (variable)
	{
		layout.details_case = LANCE__ENCODINGS21__FULL_ZIP_LAYOUT__DETAILS_BITS_PER_OFFSET;
		layout.bits_per_offset = shape->offset_bits;
		layout.value_compression = shape->blob_descriptor ? blob_descriptor_encoding(&m) :
			strings_encoding(&m, strings, shape->offset_bits);
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
	layout.bits_rep = levels->rep.width;
	layout.num_items = (uint32_t) num_levels;
	layout.num_visible_items = (uint32_t) n;
	layout.n_layers = levels->num_layers;
	layout.layers = (Layer *) levels->layers;
	page_layout.layout_case = LANCE__ENCODINGS21__PAGE_LAYOUT__LAYOUT_FULL_ZIP_LAYOUT;
	page_layout.full_zip_layout = &layout;
	out->layout = "full_zip";
	return wrap_layout(&page_layout, out, err);
}

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
static bool
encode_all_null(const Levels *levels, LpEncodedPage *out, LpError *err)
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
			return no_memory(err);
		out->num_buffers = 2;
	}
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
encode_constant(const LpLeafShape *shape, const LpPageValues *page, const Levels *levels,
				uint64_t index, LpEncodedPage *out, LpError *err)
{
	Messages	m;
	Lance__Encodings21__PageLayout page_layout = LANCE__ENCODINGS21__PAGE_LAYOUT__INIT;
	Lance__Encodings21__ConstantLayout *layout = &m.constant;
	uint8_t		inline_value[MAX_INLINE_VALUE_BYTES];
	bool		inline_ok = shape->kind == LP_LEAF_BOOL ||
		(shape->kind == LP_LEAF_FIXED && bytes_per_value(shape) <= MAX_INLINE_VALUE_BYTES);
	uint32_t	next = 0;

	memset(&m, 0, sizeof(m));
	lance__encodings21__constant_layout__init(layout);
	layout->n_layers = levels->num_layers;
	layout->layers = (Layer *) levels->layers;
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
	if (levels->def.v != NULL)
	{
		/* the repetition buffer stays empty: constant pages have no lists */
		if (!append_raw_levels(&levels->def, page->num_values, &out->buffers[next + 1]))
			return no_memory(err);
		next += 2;
	}
	out->num_buffers = next;
	page_layout.layout_case = LANCE__ENCODINGS21__PAGE_LAYOUT__LAYOUT_CONSTANT_LAYOUT;
	page_layout.constant_layout = layout;
	out->layout = "constant";
	return wrap_layout(&page_layout, out, err);
}

/*
 * A dictionary page: the indices, with the page's levels and the column's
 * compression, as a mini-block page of 32-bit values.
 */
static bool
encode_dictionary(LpFileVersion version, const LpLeafShape *shape, const LpPageValues *page,
				  const Levels *levels, const LpDictionary *dictionary, LpEncodedPage *out,
				  LpError *err)
{
	LpLeafShape index_shape = *shape;
	LpPageValues indices = *page;	/* shares the page's buffers, with the indices as values */
	LpDictionaryBlock block;
	Strings		no_strings;
	bool		ok;

	index_shape.kind = LP_LEAF_FIXED;
	index_shape.bits = 32;
	index_shape.dimension = 0;
	index_shape.offset_bits = 0;
	index_shape.utf8 = false;
	indices.values = dictionary->indices;
	memset(&no_strings, 0, sizeof(no_strings));
	if (!lp_dictionary_block_encode(version, shape, dictionary, &block))
		return no_memory(err);
	ok = encode_miniblock(version, &index_shape, &indices, levels, &no_strings, &block,
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
	Levels		levels;

	memset(out, 0, sizeof(*out));
	if (version < LP_FILE_VERSION_2_1)
		return lp_fail(err, LP_ERR_INTERNAL, "structural pages requested for a %s file",
					   lp_file_version_name(version));
	if (shape->num_layers < 1 || shape->num_layers > LP_ENCODE_MAX_LAYERS)
		return lp_fail(err, LP_ERR_INTERNAL, "leaf column of %u repdef layers", shape->num_layers);
	if (!levels_build(shape, page, &levels))
	{
		levels_free(&levels);
		return no_memory(err);
	}
	if (page->null_count == page->num_values)
		ok = encode_all_null(&levels, out, err);
	else if (shape->blob_descriptor)
	{
		/* lancedb stores descriptors full-zip whatever their width, uncompressed */
		Strings		strings;

		memset(&strings, 0, sizeof(strings));
		strings.offsets = (const uint64_t *) page->offsets.data;
		strings.data = page->data.data;
		strings.data_len = page->data.len;
		ok = encode_fullzip(shape, page, &levels, &strings, out, err);
	}
	else if (version >= LP_FILE_VERSION_2_2 && shape->kind != LP_LEAF_FIXED_SIZE_LIST &&
			 levels.rep.v == NULL && valid_values_equal(shape, page, &first_valid))
		ok = encode_constant(shape, page, &levels, first_valid, out, err);
	else
	{
		Strings		strings;
		LpDictionary dictionary;
		bool		use_dictionary;

		memset(&strings, 0, sizeof(strings));
		if (!lp_dictionary_plan(version, shape, page, &dictionary, &use_dictionary))
			ok = no_memory(err);
		else if (use_dictionary)
			ok = encode_dictionary(version, shape, page, &levels, &dictionary, out, err);
		else if (shape->kind == LP_LEAF_VARIABLE &&
				 !strings_prepare(shape, page, !is_narrow(shape, page), &strings))
			ok = no_memory(err);
		else if (is_narrow(shape, page))
			ok = encode_miniblock(version, shape, page, &levels, &strings, NULL, 0, out, err);
		else
			ok = encode_fullzip(shape, page, &levels, &strings, out, err);
		lp_dictionary_free(&dictionary);
		strings_free(&strings);
	}
	levels_free(&levels);
	if (!ok)
		lp_encoded_page_free(out);
	return ok;
}

bool
lp_encoded_page_wrap(const ProtobufCMessage *message, const char *type_url, LpEncodedPage *out,
					 LpError *err)
{
	size_t		size = protobuf_c_message_get_packed_size(message);
	uint8_t    *bytes = lp_alloc(size + 1);
	bool		ok;

	if (bytes == NULL)
		return no_memory(err);
	protobuf_c_message_pack(message, bytes);
	ok = lp_encoding_wrap(type_url, bytes, size, &out->encoding);
	lp_free(bytes);
	return ok ? true : no_memory(err);
}

void
lp_encoded_page_free(LpEncodedPage *page)
{
	for (uint32_t i = 0; i < LP_ENCODED_PAGE_MAX_BUFFERS; i++)
		lp_buf_free(&page->buffers[i]);
	lp_free(page->encoding.data);
	memset(page, 0, sizeof(*page));
}
