/*
 * lp_encode_internal.h - what the file writer hands the page encoders: the
 * values of one page of a leaf column, and the page they become.  Not part
 * of the public core API.
 */
#ifndef LP_ENCODE_INTERNAL_H
#define LP_ENCODE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "base/lp_bytes.h"
#include "base/lp_error.h"
#include "codec/lp_decode_buffers.h"
#include "format/lp_file.h"

/* How a leaf column stores its values. */
typedef enum LpLeafKind
{
	LP_LEAF_FIXED,				/* whole bytes per value */
	LP_LEAF_BOOL,				/* a bitmap */
	LP_LEAF_VARIABLE,			/* offsets and bytes */
	LP_LEAF_FIXED_SIZE_LIST		/* dimension items of whole bytes each */
} LpLeafKind;

typedef struct LpLeafShape
{
	LpLeafKind	kind;
	uint32_t	bits;			/* fixed: per value; list: per item; bool: 1 */
	uint32_t	dimension;		/* fixed-size list: items per value */
	uint32_t	offset_bits;	/* variable: 32 (string, binary) or 64 (large kinds) */
	uint32_t	num_layers;		/* 2.1+ repdef layers: the leaf and its ancestors */
	uint32_t	num_lists;		/* ancestors that are lists (not fixed-size) */
	bool		list_layer[64]; /* layer k (0 the leaf, k its k-th ancestor) is a list */
} LpLeafShape;

/* Ancestors a leaf may have, plus one (a layer fits the low bits of a u8 in null_layers). */
#define LP_ENCODE_MAX_LAYERS 64

/* In null_layers: the level is an empty list (of the layer in the low bits), not a null. */
#define LP_LEVEL_EMPTY 0x80

/* The values of one page of a leaf column, accumulated from batches. */
typedef struct LpPageValues
{
	uint64_t	num_values;
	uint64_t	null_count;
	LpBuf		values;			/* fixed and lists: the values' bytes; null slots zero */
	LpBits		bits;			/* bool: the values */
	LpBuf		offsets;		/* variable: num_values + 1 u64, the first 0 */
	LpBuf		data;			/* variable: the bytes */
	LpBits		validity;		/* one bit per value, 1 = valid */
	LpBits		item_validity;	/* fixed-size lists: one bit per item */

	/*
	 * Leaves with ancestors (num_layers > 1): one byte per level (per value
	 * without lists), 0 when the value and its ancestors are valid, else 1 +
	 * the outermost layer at which it is null (0 the leaf, 1 its parent,
	 * ...), or with LP_LEVEL_EMPTY that of an empty list; validity says
	 * whether each value is valid at every layer.
	 */
	LpBuf		null_layers;

	/*
	 * Leaves under lists: a level per value and per null or empty list
	 * above the values (which holds no value), and its repetition level
	 * (u16): k > 0 when it starts a new element of the k-th list counted
	 * from the inside (the outermost, num_lists, starts a row), 0 when it
	 * continues the innermost list.
	 */
	uint64_t	num_levels;
	LpBuf		rep;
	uint64_t	max_length;		/* variable: longest value */
} LpPageValues;

#define LP_ENCODED_PAGE_MAX_BUFFERS 4

/* A page ready to be written: its buffers and its serialized Encoding. */
typedef struct LpEncodedPage
{
	uint32_t	num_buffers;
	LpBuf		buffers[LP_ENCODED_PAGE_MAX_BUFFERS];
	LpBytes		encoding;
	const char *layout;			/* "mini_block", "full_zip", "constant", for messages */
} LpEncodedPage;

/*
 * Encode page (num_values > 0) of a leaf column of a 2.1+ file the way
 * Lance's structural encoder does (lp_encode_page.c).  On failure nothing
 * stays allocated in out.
 */
bool		lp_encode_leaf_page(LpFileVersion version, const LpLeafShape *shape,
								const LpPageValues *page, LpEncodedPage *out,
								LpError *err);
void		lp_encoded_page_free(LpEncodedPage *page);

/* The same for a 2.0 file (lp_encode_v20.c): an ArrayEncoding and its buffers. */
bool		lp_encode_v20_page(const LpLeafShape *shape, const LpPageValues *page,
							   LpEncodedPage *out, LpError *err);

/* The page of a 2.0 struct's header column: SimpleStruct without buffers. */
bool		lp_encode_v20_struct_header(LpEncodedPage *out, LpError *err);

#endif							/* LP_ENCODE_INTERNAL_H */
