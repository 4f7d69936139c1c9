/*
 * lp_decode_buffers.h - what the page decoders share, below all of them:
 * growable buffers and bitmaps, flat values (decoded values of fixed or
 * variable width) with their generic operations (dictionary gather, FSST
 * expansion), the page context used in messages, and reading a page's
 * buffers (lp_decode_buffers.c).  Not part of the public core API.
 */
#ifndef LP_DECODE_BUFFERS_H
#define LP_DECODE_BUFFERS_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "base/lp_error.h"
#include "format/lp_file.h"
#include "io/lp_storage.h"

/* A growable byte buffer (lp_alloc has no realloc). */
typedef struct LpBuf
{
	uint8_t    *data;
	uint64_t	len;
	uint64_t	cap;
} LpBuf;

/* Make room for extra more bytes (lp_buf_reserve when there is none yet). */
bool		lp_buf_grow(LpBuf *buf, uint64_t extra);

/* Room for extra more bytes after len; false if out of memory. Inline: decoders call it per value. */
static inline bool
lp_buf_reserve(LpBuf *buf, uint64_t extra)
{
	return extra <= buf->cap - buf->len || lp_buf_grow(buf, extra);
}

bool		lp_buf_append(LpBuf *buf, const void *bytes, uint64_t len);
bool		lp_buf_append_zeros(LpBuf *buf, uint64_t len);

static inline bool
lp_buf_append_u64(LpBuf *buf, uint64_t value)
{
	if (!lp_buf_reserve(buf, sizeof(value)))
		return false;
	memcpy(buf->data + buf->len, &value, sizeof(value));
	buf->len += sizeof(value);
	return true;
}

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
typedef struct LpFlatValues
{
	bool		variable;
	uint32_t	bits_per_value;
	uint64_t	num_values;
	LpBuf		data;
	LpBuf		offsets;
	bool		has_item_validity;
	uint32_t	items_per_value;
	LpBits		item_validity;
} LpFlatValues;

void		lp_flat_values_init_fixed(LpFlatValues *block, uint32_t bits_per_value);
bool		lp_flat_values_init_variable(LpFlatValues *block);
void		lp_flat_values_free(LpFlatValues *block);
/* Append src to dst; false (err unset) if the shapes differ or dst cannot grow. */
bool		lp_flat_values_append(LpFlatValues *dst, const LpFlatValues *src);
/* The same for values [start, start + count) of src (false also if they are not all there). */
bool		lp_flat_values_append_range(LpFlatValues *dst, const LpFlatValues *src, uint64_t start,
								  uint64_t count);
static inline const uint64_t *
lp_flat_values_offsets(const LpFlatValues *block)
{
	return (const uint64_t *) block->offsets.data;
}

/*
 * Give a block of fixed-size lists item validity: items_per_value bits per
 * value, all valid so far.
 */
bool		lp_flat_values_add_item_validity(LpFlatValues *block, uint32_t items_per_value);

/* Append n copies of one value (fixed: bits wide; variable: len bytes). */
bool		lp_flat_values_append_repeated(LpFlatValues *block, const uint8_t *value,
									 uint64_t value_len, uint64_t count);

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

/*
 * Move src's values onto the end of dst (src is left empty).  An empty dst
 * takes src's shape; an empty src is dropped.  Fails with LP_ERR_CORRUPT if
 * the shapes differ and LP_ERR_NO_MEMORY if dst cannot grow.
 */
bool		lp_flat_values_merge(const LpPageContext *ctx, LpFlatValues *dst, LpFlatValues *src);

/* Read buffer index of page into memory (lp_alloc'd; *data NULL if empty). */
bool		lp_read_page_buffer(const LpPageContext *ctx, LpInput *input,
								const LpPage *page, uint32_t index,
								uint8_t **data, uint64_t *len);
/* Bytes [offset, offset + len) of buffer index of page (LP_ERR_CORRUPT if not all there). */
bool		lp_read_page_buffer_range(const LpPageContext *ctx, LpInput *input,
									  const LpPage *page, uint32_t index, uint64_t offset,
									  uint64_t len, uint8_t **data);

/* Replace dictionary indices (fixed width ints) by the dictionary's values. */
bool		lp_dictionary_gather(const LpPageContext *ctx, const LpFlatValues *indices,
								 const LpFlatValues *dictionary, const uint8_t *valid,
								 LpFlatValues *out);

/*
 * Expand FSST-compressed values of a variable block in place: those whose
 * bit is set in selected (a bitmap of the block's values; NULL: all), the
 * others become empty (a take that keeps only the selected ones).
 */
bool		lp_fsst_expand_values(const LpPageContext *ctx, const uint8_t *symbol_table,
								 uint64_t table_len, const uint8_t *selected, LpFlatValues *block);

#endif							/* LP_DECODE_BUFFERS_H */
