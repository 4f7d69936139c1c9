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
#include "format/lp_encodings.h"
#include "format/lp_schema.h"

/* How a leaf column stores its values. */
typedef enum LpLeafKind
{
	LP_LEAF_FIXED,				/* whole bytes per value */
	LP_LEAF_BOOL,				/* a bitmap */
	LP_LEAF_VARIABLE,			/* offsets and bytes */
	LP_LEAF_FIXED_SIZE_LIST		/* dimension items of whole bytes each */
} LpLeafKind;

/*
 * What the field metadata lance-encoding:compression (and -level) asks of
 * a column (lp_encode_general.c): nothing, "none", "fsst", or General
 * compression with lz4 or zstd.
 */
typedef enum LpCompressionRequest
{
	LP_COMPRESSION_DEFAULT,		/* no metadata: Lance's own choices */
	LP_COMPRESSION_NONE,
	LP_COMPRESSION_FSST,
	LP_COMPRESSION_LZ4,
	LP_COMPRESSION_ZSTD
} LpCompressionRequest;

typedef struct LpColumnCompression
{
	LpCompressionRequest request;
	bool		has_level;
	int32_t		level;
} LpColumnCompression;

typedef struct LpLeafShape
{
	LpLeafKind	kind;
	uint32_t	bits;			/* fixed: per value; list: per item; bool: 1 */
	uint32_t	dimension;		/* fixed-size list: items per value */
	uint32_t	offset_bits;	/* variable: 32 (string, binary) or 64 (large kinds) */
	uint32_t	num_layers;		/* 2.1+ repdef layers: the leaf and its ancestors */
	uint32_t	num_lists;		/* ancestors that are lists (not fixed-size) */
	bool		list_layer[64]; /* layer k (0 the leaf, k its k-th ancestor) is a list */
	bool		utf8;			/* variable: Arrow Utf8 (2.0 dictionaries are for Utf8 only) */
	/* variable: Blob v2 descriptors, each value a packed row (lp_blob_descriptor_pack) */
	bool		blob_descriptor;
	LpColumnCompression compression;
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
	LpBuf		offsets;		/* variable: num_values + 1 u64, the first 0; 2.0 list: num_values ends */
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

/*
 * A Blob v2 descriptor {kind u8, position u64, size u64, blob_id u32,
 * blob_uri utf8} as a row of Lance's VariablePackedStruct: the fixed
 * fields little-endian, then the URI's u32 length and bytes.
 */
#define LP_BLOB_DESCRIPTOR_FIXED_BYTES (1 + 8 + 8 + 4)

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

/*
 * Serialize message into out->encoding as Encoding{direct{Any{type_url,
 * message}}}, the shape of every page's encoding (lp_encode_page.c).
 */
bool		lp_encoded_page_wrap(const ProtobufCMessage *message, const char *type_url,
								 LpEncodedPage *out, LpError *err);

/* The same for a 2.0 file (lp_encode_v20.c): an ArrayEncoding and its buffers. */
bool		lp_encode_v20_page(const LpLeafShape *shape, const LpPageValues *page,
							   LpEncodedPage *out, LpError *err);

/* The page of a 2.0 struct's header column: SimpleStruct without buffers. */
bool		lp_encode_v20_struct_header(LpEncodedPage *out, LpError *err);

/*
 * The page of a 2.0 list's own column (page: num_values lists, offsets
 * their num_values u64 page-relative ends, validity): List of u64 offsets.
 */
bool		lp_encode_v20_list_page(const LpPageValues *page, LpEncodedPage *out, LpError *err);

/* ---- General compression (lp_encode_general.c) ---------------------------- */

/*
 * Read lance-encoding:compression and lance-encoding:compression-level of
 * field (of file file_name, for messages) into out; an unknown scheme or a
 * level that is not an integer is LP_ERR_INVALID_ARGUMENT.
 */
bool		lp_column_compression_parse(const LpField *field, const char *file_name,
										LpColumnCompression *out, LpError *err);

/* The request is General compression (lz4 or zstd). */
bool		lp_compression_is_general(const LpColumnCompression *compression);

/*
 * Append data compressed with the General scheme and level compression asks
 * for (lp_general_compress).  False when out of memory or the data exceeds
 * what the scheme can frame.
 */
bool		lp_column_compress(const LpColumnCompression *compression, const uint8_t *data,
							   uint64_t len, LpBuf *out);

/* The BufferCompression message of compression (lz4 or zstd). */
void		lp_buffer_compression_init(const LpColumnCompression *compression,
									   Lance__Encodings21__BufferCompression *out);

/* ---- dictionaries (lp_encode_dictionary.c) -------------------------------- */

/*
 * A page's distinct values in the order of their first appearance (null
 * slots count with their stored bytes: zeros, or the empty string) and the
 * u32 index of every value into them.
 */
typedef struct LpDictionary
{
	uint64_t	num_items;
	LpBuf		items;			/* fixed: the values' bytes; variable: the bytes */
	LpBuf		item_offsets;	/* variable: num_items + 1 u64, the first 0 */
	LpBuf		indices;		/* num_values u32 */
} LpDictionary;

/*
 * Whether Lance 2.1+ writes page as a dictionary (lp_encode_dictionary.c
 * tells the rules); if so *use is set and out holds the dictionary.  False
 * when out of memory.
 */
bool		lp_dictionary_plan(LpFileVersion version, const LpLeafShape *shape,
							   const LpPageValues *page, LpDictionary *out, bool *use);

/*
 * The same for Lance 2.0, whose dictionaries leave nulls out: their rows
 * take index UINT32_MAX.
 */
bool		lp_dictionary_plan_v20(const LpLeafShape *shape, const LpPageValues *page,
								   LpDictionary *out, bool *use);

void		lp_dictionary_free(LpDictionary *dictionary);

/*
 * The dictionary of a 2.1+ mini-block page as Lance's block compressor
 * writes it into page buffer 2: fixed widths bit-packed when that pays
 * (inline up to 1024 values, else out of line), else flat; strings as one
 * block (u32 or u64 offset width, start of the bytes, the offsets, the
 * bytes); from 2.2 on what is not bit-packed is lz4-compressed.  The
 * encoding's messages live in the LpDictionaryBlock.
 */
typedef struct LpDictionaryBlock
{
	LpBuf		buffer;
	Lance__Encodings21__CompressiveEncoding *encoding;
	Lance__Encodings21__CompressiveEncoding ce[3];
	Lance__Encodings21__Flat flat;
	Lance__Encodings21__Variable variable;
	Lance__Encodings21__General general;
	Lance__Encodings21__BufferCompression compression;
	Lance__Encodings21__InlineBitpacking inline_bitpacking;
	Lance__Encodings21__OutOfLineBitpacking out_of_line;
} LpDictionaryBlock;

bool		lp_dictionary_block_encode(LpFileVersion version, const LpLeafShape *shape,
									   const LpDictionary *dictionary, LpDictionaryBlock *out);

#endif							/* LP_ENCODE_INTERNAL_H */
