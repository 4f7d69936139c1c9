/*
 * lp_decode_internal.h - pieces shared by the page decoders: growable
 * buffers, decoded value blocks, the page context used in messages, and the
 * entry points of each subsystem.  Not part of the public core API.
 */
#ifndef LP_DECODE_INTERNAL_H
#define LP_DECODE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "lp_bytes.h"
#include "lp_error.h"
#include "lp_file.h"
#include "lp_values.h"

#include "encodings_v2_0.pb-c.h"
#include "encodings_v2_1.pb-c.h"

typedef Lance__Encodings21__CompressiveEncoding LpCompressive;

/* A growable byte buffer (lp_alloc has no realloc). */
typedef struct LpBuf
{
	uint8_t    *data;
	uint64_t	len;
	uint64_t	cap;
} LpBuf;

bool		lp_buf_reserve(LpBuf *buf, uint64_t extra);
bool		lp_buf_append(LpBuf *buf, const void *bytes, uint64_t len);
bool		lp_buf_append_zeros(LpBuf *buf, uint64_t len);
bool		lp_buf_append_u64(LpBuf *buf, uint64_t value);
void		lp_buf_free(LpBuf *buf);
/* Hand the bytes over (NULL if empty) and reset the buffer. */
uint8_t    *lp_buf_take(LpBuf *buf);

/* A growable bitmap. */
typedef struct LpBits
{
	LpBuf		buf;
	uint64_t	num_bits;
	uint64_t	num_unset;
} LpBits;

bool		lp_bits_append(LpBits *bits, bool value);
bool		lp_bits_append_n(LpBits *bits, bool value, uint64_t count);
bool		lp_bits_append_bitmap(LpBits *bits, const uint8_t *bitmap, uint64_t start,
								  uint64_t count);

/*
 * Decoded flat values: fixed width or variable width (num_values + 1 u64
 * offsets into data).  Fixed-width values whose width is not a multiple of
 * 8 bits are packed LSB first without gaps (bool is 1 bit; a fixed-size
 * list of n bools is n bits).  Values that are fixed-size lists may carry
 * the validity of their items (items_per_value bits per value).
 */
typedef struct LpBlock
{
	bool		variable;
	uint32_t	bits_per_value;
	uint64_t	num_values;
	LpBuf		data;
	LpBuf		offsets;
	bool		has_item_validity;
	uint32_t	items_per_value;
	LpBits		item_validity;
} LpBlock;

void		lp_block_init_fixed(LpBlock *block, uint32_t bits_per_value);
bool		lp_block_init_variable(LpBlock *block);
void		lp_block_free(LpBlock *block);
/* Append src to dst (same kind and width, else false with err unset). */
bool		lp_block_append(LpBlock *dst, const LpBlock *src);
/*
 * Move src's values onto the end of dst (src is left empty).  An empty dst
 * takes src's shape; an empty src is dropped.  False if the shapes differ.
 */
bool		lp_block_merge(LpBlock *dst, LpBlock *src);
static inline const uint64_t *
lp_block_offsets(const LpBlock *block)
{
	return (const uint64_t *) block->offsets.data;
}

/* Where a page decoder is working, for messages. */
typedef struct LpPageContext
{
	const LpFile *file;
	uint32_t	column;
	uint32_t	page;
	LpError    *err;
} LpPageContext;

/* "<what> in page P of column C of file "F"" with the given code. */
bool		lp_page_fail(const LpPageContext *ctx, LpErrorCode code,
						 const char *fmt,...) __attribute__((format(printf, 3, 4)));
bool		lp_page_no_memory(const LpPageContext *ctx);
/* LP_ERR_UNSUPPORTED naming the encoding. */
bool		lp_page_unsupported(const LpPageContext *ctx, const char *encoding);

/* ---- general compression (lp_decode_general.c) ---------------------------- */

/* Decompress one lz4 ("u32 length + block") or zstd buffer, appending to out. */
bool		lp_general_decompress(const LpPageContext *ctx,
								  Lance__Encodings21__CompressionScheme scheme,
								  const uint8_t *data, uint64_t len, LpBuf *out);
/* The same for 2.0's scheme names ("zstd", "lz4"). */
bool		lp_general_decompress_named(const LpPageContext *ctx, const char *scheme,
										const uint8_t *data, uint64_t len, LpBuf *out);

/* ---- compressive encodings of 2.1+ (lp_decode_compressive.c) -------------- */

typedef struct LpSlice
{
	const uint8_t *data;
	uint64_t	len;
} LpSlice;

/* Values of one mini-block chunk from its value buffers. */
bool		lp_miniblock_decompress(const LpPageContext *ctx, const LpCompressive *encoding,
									const LpSlice *buffers, uint32_t num_buffers,
									uint64_t num_values, LpBlock *out);
/* Values of a whole buffer compressed as one block (levels, dictionaries). */
bool		lp_block_decompress(const LpPageContext *ctx, const LpCompressive *encoding,
								const uint8_t *data, uint64_t len, uint64_t num_values,
								LpBlock *out);
/* Undo the per-value compression of full-zip values in place. */
bool		lp_per_value_decompress(const LpPageContext *ctx, const LpCompressive *encoding,
									LpBlock *block);
/* Levels (u16) of a block; *levels is allocated with num_levels entries. */
bool		lp_levels_decompress(const LpPageContext *ctx, const LpCompressive *encoding,
								 const uint8_t *data, uint64_t len, uint64_t num_levels,
								 uint16_t **levels);
/* Name of the variant, for messages. */
const char *lp_compressive_name(const LpCompressive *encoding);

/* ---- repetition and definition levels (lp_repdef.c) ----------------------- */

/* One layer of a column, accumulated over its pages. */
typedef struct LpLayerValues
{
	bool		is_list;
	LpBits		validity;		/* one bit per entry of the layer */
	LpBuf		offsets;		/* lists: u64 offsets, count + 1 of them */
	uint64_t	count;			/* entries of the layer so far */
} LpLayerValues;

/*
 * The pages of one leaf column: its values (visible items) and, for every
 * layer from the innermost out, validity and list offsets.
 */
typedef struct LpColumnLevels
{
	uint32_t	num_layers;
	LpLayerValues *layers;
	LpBlock		values;
	uint64_t	num_rows;
} LpColumnLevels;

bool		lp_column_levels_init(LpColumnLevels *levels, uint32_t num_layers);
void		lp_column_levels_free(LpColumnLevels *levels);

/* Levels of one page: rep/def NULL when absent; num_levels 0 then. */
typedef struct LpPageLevels
{
	uint64_t	num_levels;
	uint16_t   *rep;
	uint16_t   *def;
} LpPageLevels;

/* Largest definition level that still has a value slot (before any list). */
uint16_t	lp_max_visible_def(const Lance__Encodings21__RepDefLayer *layers, size_t n);

/*
 * Unravel one page's levels into validity and offsets, appending to the
 * layers of acc.  num_values = visible items of the page, num_rows = its
 * top-level rows.  The level arrays are scratch space and get overwritten.
 */
bool		lp_repdef_unravel(const LpPageContext *ctx,
							  const Lance__Encodings21__RepDefLayer *layers, size_t n_layers,
							  LpPageLevels *levels, uint64_t num_values, uint64_t num_rows,
							  LpColumnLevels *acc);

/* ---- structural page layouts of 2.1+ -------------------------------------- */

/*
 * Each decodes one page of a leaf column into acc (values appended, layers
 * unravelled).  value_bits: bits per value the leaf type stores (0 for
 * variable width), used to shape values of all-null and constant pages.
 */
bool		lp_decode_miniblock_page(const LpPageContext *ctx, LpInput *input,
									 const LpPage *page,
									 const Lance__Encodings21__MiniBlockLayout *layout,
									 LpColumnLevels *acc);
bool		lp_decode_fullzip_page(const LpPageContext *ctx, LpInput *input,
								   const LpPage *page,
								   const Lance__Encodings21__FullZipLayout *layout,
								   LpColumnLevels *acc);
bool		lp_decode_constant_page(const LpPageContext *ctx, LpInput *input,
									const LpPage *page,
									const Lance__Encodings21__ConstantLayout *layout,
									const LpType *leaf_type, LpColumnLevels *acc);

/*
 * How a leaf of this type is stored: variable width, or bits per value
 * (1 for bool).  False for types that are not leaves.
 */
bool		lp_leaf_storage(const LpType *type, bool *variable, uint32_t *bits);

/* Move validity bits into array (NULL when all valid). */
void		lp_take_validity(LpArray *array, LpBits *bits);

/* An array of the leaf type from count decoded values (block is consumed). */
bool		lp_leaf_array(const LpType *type, LpBlock *block, uint64_t count, LpArray **out,
						  LpError *err, const LpFile *file, uint32_t column);

/* Expand FSST-compressed values of a variable block in place. */
bool		lp_fsst_expand_block(const LpPageContext *ctx, const uint8_t *symbol_table,
								 uint64_t table_len, LpBlock *block);

/* Read buffer index of page into memory (lp_alloc'd; *data NULL if empty). */
bool		lp_read_page_buffer(const LpPageContext *ctx, LpInput *input,
								const LpPage *page, uint32_t index,
								uint8_t **data, uint64_t *len);

/* Replace dictionary indices (fixed width ints) by the dictionary's values. */
bool		lp_dictionary_gather(const LpPageContext *ctx, const LpBlock *indices,
								 const LpBlock *dictionary, const uint8_t *valid,
								 LpBlock *out);

/*
 * Give a block of fixed-size lists item validity: items_per_value bits per
 * value, all valid so far.
 */
bool		lp_block_add_item_validity(LpBlock *block, uint32_t items_per_value);

/* Append n copies of one value (fixed: bits wide; variable: len bytes). */
bool		lp_block_append_repeated(LpBlock *block, const uint8_t *value,
									 uint64_t value_len, uint64_t count);

/* ---- structs stored as one column (lp_decode_packed.c) -------------------- */

/* Shape of a packed struct's canonical rows; false if its children cannot be packed. */
bool		lp_packed_struct_storage(const LpType *type, bool *variable, uint32_t *bits);
/* Check that fixed-width rows are as wide as a PackedStruct's children. */
bool		lp_packed_struct_check(const LpPageContext *ctx,
								   const Lance__Encodings21__PackedStruct *packed,
								   const LpBlock *rows);
/* Bring the rows of a VariablePackedStruct into canonical form in place. */
bool		lp_variable_packed_canonical(const LpPageContext *ctx,
										 const Lance__Encodings21__VariablePackedStruct *vps,
										 LpBlock *block);
/* A struct array from count canonical rows (block is consumed). */
bool		lp_packed_struct_array(const LpType *type, LpBlock *block, uint64_t count,
								   LpArray **out, LpError *err, const LpFile *file,
								   uint32_t column);

/* ---- 2.0 (lp_decode_v20.c) ------------------------------------------------ */

/* Decode the whole top-level field of a 2.0 file (columns from first_column). */
bool		lp_decode_v20_field(LpInput *input, const LpFile *file, const LpType *type,
								uint32_t first_column, LpArray **out, LpError *err);

/* Unpack the ArrayEncoding / PageLayout of a page (owned by caller). */
bool		lp_unpack_page_encoding(const LpPageContext *ctx, const LpPage *page,
									ProtobufCMessage **message);

#endif							/* LP_DECODE_INTERNAL_H */
