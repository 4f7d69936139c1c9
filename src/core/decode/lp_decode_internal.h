/*
 * lp_decode_internal.h - the entry points of each decoder subsystem, shared
 * by the page decoders.  The buffers, blocks and page context they work on
 * are in lp_decode_buffers.h.  Not part of the public core API.
 */
#ifndef LP_DECODE_INTERNAL_H
#define LP_DECODE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "base/lp_bytes.h"
#include "codec/lp_decode_buffers.h"
#include "format/lp_encodings.h"
#include "base/lp_error.h"
#include "format/lp_file.h"
#include "format/lp_values.h"

#include "encodings_v2_0.pb-c.h"
#include "encodings_v2_1.pb-c.h"

typedef Lance__Encodings21__CompressiveEncoding LpCompressive;

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

/* ---- leaves (lp_decode_leaf.c) ------------------------------------------- */

/* LP_ERR_NO_MEMORY for a decode that is not inside a page. */
bool		lp_decode_no_memory(LpError *err);

/* Unpack the ArrayEncoding / PageLayout of a page (owned by caller). */
bool		lp_unpack_page_encoding(const LpPageContext *ctx, const LpPage *page,
									ProtobufCMessage **message);

/*
 * How a leaf of this type is stored: variable width, or bits per value
 * (1 for bool).  False for types that are not leaves.
 */
bool		lp_leaf_storage(const LpType *type, bool *variable, uint32_t *bits);

/* Move validity bits into array (NULL when all valid). */
void		lp_take_validity(LpArray *array, LpBits *bits);

/* An array of the leaf type from count decoded values (block is consumed). */
bool		lp_leaf_array(const LpType *type, LpBlock *block, uint64_t count, LpArray **out,
						  const LpFile *file, uint32_t column, LpError *err);

/* Shape of a packed struct's canonical rows; false if its children cannot be packed. */
bool		lp_packed_struct_storage(const LpType *type, bool *variable, uint32_t *bits);

/* A struct array from count canonical rows (block is consumed). */
bool		lp_packed_struct_array(const LpType *type, LpBlock *block, uint64_t count,
								   LpArray **out, const LpFile *file, uint32_t column,
								   LpError *err);

/* ---- pages of structs stored as one column (lp_decode_packed.c) ---------- */

/* Check that fixed-width rows are as wide as a PackedStruct's children. */
bool		lp_packed_struct_check(const LpPageContext *ctx,
								   const Lance__Encodings21__PackedStruct *packed,
								   const LpBlock *rows);
/* Bring the rows of a VariablePackedStruct into canonical form in place. */
bool		lp_variable_packed_canonical(const LpPageContext *ctx,
										 const Lance__Encodings21__VariablePackedStruct *vps,
										 LpBlock *block);

/* ---- 2.0 (lp_decode_v20.c) ------------------------------------------------ */

/*
 * Values of one 2.0 page whose buffers are in memory, and their validity
 * appended to validity; variable / bits: the leaf's shape, for all-null
 * pages.  On failure nothing stays allocated in values.
 */
bool		lp_decode_v20_page(const LpPageContext *ctx,
							   const Lance__Encodings__ArrayEncoding *encoding,
							   const LpSlice *buffers, uint32_t num_buffers, uint64_t num_values,
							   bool variable, uint32_t bits, LpBlock *values, LpBits *validity);

/* Decode the whole top-level field of a 2.0 file (columns from first_column). */
bool		lp_decode_v20_field(LpInput *input, const LpFile *file, const LpType *type,
								uint32_t first_column, LpArray **out, LpError *err);

#endif							/* LP_DECODE_INTERNAL_H */
