/*
 * lp_general.h - Lance's general-purpose compression of buffers, both ways:
 * zstd (a u64 LE uncompressed length and a frame, or a bare frame) and lz4
 * (a u32 LE uncompressed length and a block), lance-format.md §4.4.
 */
#ifndef LP_GENERAL_H
#define LP_GENERAL_H

#include <stdbool.h>
#include <stdint.h>

#include "base/lp_error.h"
#include "codec/lp_decode_buffers.h"

typedef enum LpGeneralScheme
{
	LP_GENERAL_LZ4,
	LP_GENERAL_ZSTD,
} LpGeneralScheme;

/*
 * Append the bytes of one compressed buffer to out.  A buffer that does not
 * decompress is LP_ERR_CORRUPT saying what is wrong with it; the caller
 * says where the buffer lies.
 */
bool		lp_general_decompress(LpGeneralScheme scheme, const uint8_t *data, uint64_t len,
								  LpBuf *out, LpError *err);

/*
 * Append data compressed and framed as Lance's writers frame it, zstd at
 * level (its default without has_level).  False when out of memory or when
 * the library fails.
 */
bool		lp_general_compress(LpGeneralScheme scheme, bool has_level, int32_t level,
								const uint8_t *data, uint64_t len, LpBuf *out);

#endif							/* LP_GENERAL_H */
