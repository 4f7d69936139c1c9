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

/* ---- general compression (lp_decode_compressive.c) ------------------------ */

/* Decompress one lz4 or zstd buffer of the page, appending to out. */
bool		lp_page_decompress(const LpPageContext *ctx,
							   Lance__Encodings21__CompressionScheme scheme,
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
									uint64_t num_values, LpFlatValues *out);
/*
 * The same, for a take of the chunk's values whose bit is set in selected: FSST
 * values are expanded only there, the others are left empty (cheaper when a
 * take keeps a few strings of a chunk).  Other encodings decode every value.
 */
bool		lp_miniblock_decompress_selected(const LpPageContext *ctx,
											 const LpCompressive *encoding,
											 const LpSlice *buffers, uint32_t num_buffers,
											 uint64_t num_values, const uint8_t *selected,
											 LpFlatValues *out);
/* Values of a whole buffer compressed as one block (levels, dictionaries). */
bool		lp_flat_values_decompress(const LpPageContext *ctx, const LpCompressive *encoding,
								const uint8_t *data, uint64_t len, uint64_t num_values,
								LpFlatValues *out);
/* Undo the per-value compression of full-zip values in place. */
bool		lp_per_value_decompress(const LpPageContext *ctx, const LpCompressive *encoding,
									LpFlatValues *block);
/* Levels (u16) of a block; *levels is allocated with num_levels entries. */
bool		lp_levels_decompress(const LpPageContext *ctx, const LpCompressive *encoding,
								 const uint8_t *data, uint64_t len, uint64_t num_levels,
								 uint16_t **levels);

/* ---- the field reader (lp_decode.c) and its pages (lp_take_pages.c) --------- */

/* Rows [start, start + count) of a column (top-level rows, or 2.0 list items). */
typedef struct LpRowRange
{
	uint64_t	start;
	uint64_t	count;
} LpRowRange;

/* The reader behind lp_decode.h's opaque LpFieldReader (same typedef). */
typedef struct LpFieldReader LpFieldReader;

struct LpFieldReader
{
	LpInput    *input;
	const LpFile *file;
	uint32_t	field_index;
	LpType	   *type;
	uint32_t	first_column;
	/* per column of the file, once visited: the first row of each page, then the column's rows */
	uint64_t  **page_starts;
	/* 2.0 list offsets columns, once visited: the first item of each page, then the items */
	uint64_t  **item_starts;
	/* what lp_field_reader_stats reports (LpDecodeStats) */
	uint64_t	pages_decoded;
	uint64_t	pages_skipped;
	uint64_t	rows_decoded;
};

/* What lp_split_ranges found. */
typedef enum LpSplitResult
{
	LP_SPLIT_OK,
	LP_SPLIT_VISIT_FAILED,		/* the visitor failed (and set the error) */
	LP_SPLIT_NO_MEMORY,
	LP_SPLIT_BEYOND				/* rows lie beyond the last unit */
} LpSplitResult;

typedef bool (*LpUnitVisitor) (void *arg, uint64_t unit, const LpRowRange *ranges,
							   size_t num_ranges);

/*
 * Split ranges (ascending, disjoint) over consecutive units (pages, chunks)
 * whose first rows are starts[0..num_units), starts[num_units] being the
 * end of the last, and visit each unit holding any of the rows with them
 * as unit-relative ranges.
 */
LpSplitResult lp_split_ranges(const uint64_t *starts, uint64_t num_units,
							  const LpRowRange *ranges, size_t num_ranges,
							  LpUnitVisitor visit, void *arg);

/*
 * Called for each page of a column holding rows of a take, with those rows
 * as page-relative ranges (ascending, at least one).
 */
typedef bool (*LpPageVisitor) (void *arg, const LpPageContext *ctx, const LpPage *page,
							   const LpRowRange *ranges, size_t num_ranges);

/*
 * Visit the pages of column holding rows of ranges (ascending, disjoint),
 * after checking that the column's pages hold expected_rows rows in all and
 * polling for a cancel once per page visited.  Counts pages decoded and
 * skipped.
 */
bool		lp_reader_visit_pages(LpFieldReader *reader, uint32_t column, uint64_t expected_rows,
								  const LpRowRange *ranges, size_t num_ranges,
								  LpPageVisitor visit, void *arg, LpError *err);

/* Byte ranges collected, grown with lp_alloc. */
typedef struct LpByteRanges
{
	LpByteRange *items;
	size_t		count;
	size_t		capacity;
} LpByteRanges;

/*
 * Append the buffers of every page of column holding rows of ranges (as
 * lp_reader_visit_pages finds them, without counting or checking the
 * column's rows: a page beyond them holds none) to out.
 */
bool		lp_reader_page_buffers(LpFieldReader *reader, uint32_t column,
								   const LpRowRange *ranges, size_t num_ranges,
								   LpByteRanges *out, LpError *err);

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
	LpFlatValues		values;
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

/* Append values ranges[0..num_ranges) of src to dst (LP_ERR_CORRUPT if they are not all there). */
bool		lp_flat_values_take(const LpPageContext *ctx, const LpFlatValues *src, const LpRowRange *ranges,
						  size_t num_ranges, LpFlatValues *dst);

/*
 * Append top-level rows ranges[0..num_ranges) (ascending, disjoint, within
 * src's rows) of src to dst (which has src's layers): the validity and list
 * offsets of every layer and the values under them (lp_levels_take.c).
 */
bool		lp_column_levels_take(const LpPageContext *ctx, const LpColumnLevels *src,
								  const LpRowRange *ranges, size_t num_ranges,
								  LpColumnLevels *dst);

/* True if one of the layers is a list. */
bool		lp_layers_have_list(const Lance__Encodings21__RepDefLayer *layers, size_t n);

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
/*
 * Takes from pages without list layers (every level a row), and from
 * mini-block pages with lists and a repetition index: page-relative ranges
 * appended to dst, decoding only the units holding them, whose rows are
 * added to *rows_decoded.
 */
bool		lp_take_miniblock_page(const LpPageContext *ctx, LpInput *input, const LpPage *page,
								   const Lance__Encodings21__MiniBlockLayout *layout,
								   const LpRowRange *ranges, size_t num_ranges,
								   LpColumnLevels *dst, uint64_t *rows_decoded);
bool		lp_take_fullzip_page(const LpPageContext *ctx, LpInput *input, const LpPage *page,
								 const Lance__Encodings21__FullZipLayout *layout,
								 const LpRowRange *ranges, size_t num_ranges,
								 LpColumnLevels *dst, uint64_t *rows_decoded);
bool		lp_take_constant_page(const LpPageContext *ctx, LpInput *input, const LpPage *page,
								  const Lance__Encodings21__ConstantLayout *layout,
								  const LpType *leaf_type, const LpRowRange *ranges,
								  size_t num_ranges, LpColumnLevels *dst, uint64_t *rows_decoded);
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
bool		lp_leaf_array(const LpType *type, LpFlatValues *block, uint64_t count, LpArray **out,
						  const LpFile *file, uint32_t column, LpError *err);

/* Shape of a packed struct's canonical rows; false if its children cannot be packed. */
bool		lp_packed_struct_storage(const LpType *type, bool *variable, uint32_t *bits);

/* A struct array from count canonical rows (block is consumed). */
bool		lp_packed_struct_array(const LpType *type, LpFlatValues *block, uint64_t count,
								   LpArray **out, const LpFile *file, uint32_t column,
								   LpError *err);

/* ---- pages of structs stored as one column (lp_decode_packed.c) ---------- */

/* Check that fixed-width rows are as wide as a PackedStruct's children. */
bool		lp_packed_struct_check(const LpPageContext *ctx,
								   const Lance__Encodings21__PackedStruct *packed,
								   const LpFlatValues *rows);
/* Bring the rows of a VariablePackedStruct into canonical form in place. */
bool		lp_variable_packed_canonical(const LpPageContext *ctx,
										 const Lance__Encodings21__VariablePackedStruct *vps,
										 LpFlatValues *block);

/* ---- 2.0 (lp_decode_v20.c) ------------------------------------------------ */

/*
 * Values of one 2.0 page whose buffers are in memory, and their validity
 * appended to validity; variable / bits: the leaf's shape, for all-null
 * pages.  On failure nothing stays allocated in values.
 */
bool		lp_decode_v20_page(const LpPageContext *ctx,
							   const Lance__Encodings__ArrayEncoding *encoding,
							   const LpSlice *buffers, uint32_t num_buffers, uint64_t num_values,
							   bool variable, uint32_t bits, LpFlatValues *values, LpBits *validity);

/* Rows ranges[0..num_ranges) of the reader's field of a 2.0 file. */
bool		lp_take_v20_field(LpFieldReader *reader, const LpRowRange *ranges, size_t num_ranges,
							  LpArray **out, LpError *err);

#endif							/* LP_DECODE_INTERNAL_H */
