/*
 * lp_fsst.h - FSST string compression and decompression (Lance's `fsst`
 * crate).
 *
 * A symbol table is FSST_SYMBOL_TABLE_LEN bytes: a little-endian u64 header
 * whose top 32 bits are "FSST" (0x46535354), whose bit 24 says whether the
 * values were compressed at all (the writer leaves inputs under 32 KiB as
 * they are) and whose low byte is the number of symbols n; then n symbols
 * of 8 bytes each, then n symbol lengths of one byte (the rest is padding).  Compressed text is a sequence of codes: a
 * code c < 255 stands for symbol c (its first len[c] bytes); 255 escapes
 * the next byte, which stands for itself.
 */
#ifndef LP_FSST_H
#define LP_FSST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LP_FSST_SYMBOL_TABLE_LEN (8 + 256 * 8 + 256)
#define LP_FSST_ESCAPE 255

typedef struct LpFsstTable
{
	bool		compressed;		/* false: values are stored as they are */
	uint32_t	num_symbols;
	uint8_t		lengths[256];
	uint8_t		symbols[256][8];
} LpFsstTable;

/* Parse a symbol table; false if it is malformed. */
bool		lp_fsst_table_parse(const uint8_t *data, size_t len, LpFsstTable *table);

/* Room lp_fsst_decode needs for len bytes of codes: a code stands for at most 8 bytes. */
#define LP_FSST_DECODE_ROOM(len) ((uint64_t) (len) * 8)

/*
 * Decompress in[0, len) to out, which has room for LP_FSST_DECODE_ROOM(len)
 * bytes (it writes whole 8-byte symbols, so possibly beyond the decoded
 * length); the decoded length in *out_len.  False if the codes are malformed
 * (a code with no symbol, an escape without its byte).
 */
bool		lp_fsst_decode(const LpFsstTable *table, const uint8_t *in, size_t len,
						   uint8_t *out, uint64_t *out_len);

/*
 * The compressing side: a symbol table built from a sample of the strings
 * (FSST's rounds: compress the sample with the table so far, count symbols
 * and pairs of symbols, keep the 255 that gain most), and a matcher that
 * compresses greedily, longest symbol first.  Strings are
 * data[offsets[i], offsets[i + 1]).
 */
/* Four slots per symbol at most: short probes. */
#define LP_FSST_PREFIX_SLOTS 1024
#define LP_FSST_SYMBOL_SLOTS 1024

typedef struct LpFsstEncoder
{
	LpFsstTable table;
	uint16_t	single[256];	/* the code of the one-byte symbol b, or UINT16_MAX */

	/*
	 * The lengths of the symbols of two bytes or more by their first two: a
	 * hash table of prefixes (open addressing; lengths 0 is a free slot),
	 * bit L - 2 of lengths set when a symbol of L bytes starts with key.
	 */
	uint16_t	prefix_key[LP_FSST_PREFIX_SLOTS];
	uint8_t		prefix_lengths[LP_FSST_PREFIX_SLOTS];

	/*
	 * Those symbols by their bytes (a little-endian word) and length: a
	 * hash table (open addressing; length 0 is a free slot) naming codes.
	 */
	uint64_t	symbol_value[LP_FSST_SYMBOL_SLOTS];
	uint8_t		symbol_len[LP_FSST_SYMBOL_SLOTS];
	uint8_t		symbol_code[LP_FSST_SYMBOL_SLOTS];
} LpFsstEncoder;

/* NULL when out of memory; free with lp_free. */
LpFsstEncoder *lp_fsst_encoder_build(const uint8_t *data, const uint64_t *offsets, uint64_t n);

/* The table as Lance stores it (LP_FSST_SYMBOL_TABLE_LEN bytes, "compressed" set). */
void		lp_fsst_table_write(const LpFsstTable *table, uint8_t *out);

/* Compress in[0, len) into out (room for 2 * len bytes); returns the bytes written. */
size_t		lp_fsst_encode(const LpFsstEncoder *encoder, const uint8_t *in, size_t len,
						   uint8_t *out);

#endif							/* LP_FSST_H */
