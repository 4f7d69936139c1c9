/*
 * lp_encode_page_internal.h - what the page encoders of 2.1+ files share
 * (lp_encode_page.c dispatches a page to them): the page's levels
 * (lp_encode_repdef.c), its strings and the compressive encoding messages
 * (lp_encode_compressive.c), and the layouts: mini-block
 * (lp_encode_miniblock.c), full-zip (lp_encode_fullzip.c), all-null and
 * constant (lp_encode_constant.c).  Core-internal.
 */
#ifndef LP_ENCODE_PAGE_INTERNAL_H
#define LP_ENCODE_PAGE_INTERNAL_H

#include "base/lp_bytes.h"
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

typedef Lance__Encodings21__RepDefLayer Layer;

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

typedef enum LevelCompression
{
	LEVELS_FLAT,
	LEVELS_INLINE,
	LEVELS_OUT_OF_LINE,
	LEVELS_RLE
} LevelCompression;

static inline bool
lp_enc_no_memory(LpError *err)
{
	return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
}

static inline bool
lp_enc_is_null(const LpPageValues *page, uint64_t index)
{
	return page->null_count > 0 && !lp_bit_get(page->validity.buf.data, index);
}

static inline uint32_t
lp_enc_bytes_per_value(const LpLeafShape *shape)
{
	return shape->kind == LP_LEAF_FIXED_SIZE_LIST ? shape->bits / 8 * shape->dimension :
		shape->bits / 8;
}

/* Some item of a fixed-size list of the page is null. */
static inline bool
lp_enc_has_item_nulls(const LpLeafShape *shape, const LpPageValues *page)
{
	return shape->kind == LP_LEAF_FIXED_SIZE_LIST && page->item_validity.num_unset > 0;
}

/* lp_encode_repdef.c: levels */
bool		lp_enc_levels_build(const LpLeafShape *shape, const LpPageValues *page, Levels *levels);
void		lp_enc_levels_free(Levels *levels);
LevelCompression	lp_enc_choose_level_compression(LpFileVersion version, const LevelSeq *levels,
													uint64_t n);
bool		lp_enc_compress_levels(const LevelSeq *levels, LevelCompression compression,
								   uint64_t first, uint64_t count, LpBuf *out);
CE		   *lp_enc_level_encoding(Messages *m, LevelCompression compression, uint32_t width);

/* lp_encode_compressive.c: strings and encoding messages */
bool		lp_enc_strings_prepare(const LpLeafShape *shape, const LpPageValues *page, bool fullzip,
								   Strings *strings);
void		lp_enc_strings_free(Strings *strings);
CE		   *lp_enc_flat(Messages *m, uint64_t bits);
CE		   *lp_enc_inline_bitpacking(Messages *m, uint64_t bits);
CE		   *lp_enc_out_of_line(Messages *m, uint64_t bits, uint64_t width);
CE		   *lp_enc_fixed_size_list(Messages *m, uint64_t dimension, uint64_t item_bits);
CE		   *lp_enc_rle(Messages *m, uint64_t bits);
CE		   *lp_enc_byte_stream_split(Messages *m, uint64_t bits);
CE		   *lp_enc_strings(Messages *m, const Strings *strings, uint64_t offset_bits);
CE		   *lp_enc_blob_descriptor(Messages *m);
bool		lp_enc_wrap_layout(const Lance__Encodings21__PageLayout *layout, LpEncodedPage *out,
							   LpError *err);

/* the layouts */
bool		lp_enc_miniblock(LpFileVersion version, const LpLeafShape *shape,
							 const LpPageValues *page, const Levels *levels, const Strings *strings,
							 LpDictionaryBlock *dictionary, uint64_t num_dictionary_items,
							 LpEncodedPage *out, LpError *err);
bool		lp_enc_fullzip(const LpLeafShape *shape, const LpPageValues *page, const Levels *levels,
						   const Strings *strings, LpEncodedPage *out, LpError *err);
bool		lp_enc_all_null(const Levels *levels, LpEncodedPage *out, LpError *err);
bool		lp_enc_valid_values_equal(const LpLeafShape *shape, const LpPageValues *page,
									  uint64_t *first_valid);
bool		lp_enc_constant(const LpLeafShape *shape, const LpPageValues *page,
							const Levels *levels, uint64_t index, LpEncodedPage *out, LpError *err);

#endif							/* LP_ENCODE_PAGE_INTERNAL_H */
