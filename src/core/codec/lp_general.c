/*
 * lp_general.c - general-purpose compression of buffers: zstd (u64
 * LE uncompressed length + frame, or a bare frame) and lz4 (u32 LE
 * uncompressed length + block), lance-format.md §4.4.
 */
#include <string.h>

#include <lz4.h>
#include <zstd.h>

#include "base/lp_alloc.h"
#include "decode/lp_decode_internal.h"

/* No single decompressed buffer may claim more than this. */
#define MAX_DECOMPRESSED_LEN ((uint64_t) 1 << 31)

#define ZSTD_FRAME_MAGIC 0xFD2FB528u

static bool
decompress_zstd(const LpPageContext *ctx, const uint8_t *data, uint64_t len,
				LpBuf *out)
{
	uint64_t	expected;
	const uint8_t *frame = data;
	uint64_t	frame_len = len;
	size_t		result;
	bool		bare;

	if (len == 0)
		return true;
	/* A bare frame starts with the magic and a header byte whose reserved bit is 0. */
	bare = len >= 8 ? (lp_le32(data) == ZSTD_FRAME_MAGIC && (data[4] & 0x10) == 0) : true;
	if (bare)
	{
		unsigned long long content = ZSTD_getFrameContentSize(data, (size_t) len);

		if (content == ZSTD_CONTENTSIZE_ERROR || content == ZSTD_CONTENTSIZE_UNKNOWN)
			return lp_page_fail(ctx, LP_ERR_CORRUPT, "zstd buffer has no usable frame header");
		expected = content;
	}
	else
	{
		expected = lp_le64(data);
		frame = data + 8;
		frame_len = len - 8;
	}
	if (expected > MAX_DECOMPRESSED_LEN)
		return lp_page_fail(ctx, LP_ERR_CORRUPT, "zstd buffer claims %llu bytes",
							(unsigned long long) expected);
	if (!lp_buf_reserve(out, expected))
		return lp_page_no_memory(ctx);
	/* An empty result may leave out unallocated. */
	result = ZSTD_decompress(expected > 0 ? out->data + out->len : NULL, (size_t) expected,
							 frame, (size_t) frame_len);
	if (ZSTD_isError(result) || result != expected)
		return lp_page_fail(ctx, LP_ERR_CORRUPT, "zstd buffer does not decompress");
	out->len += expected;
	return true;
}

static bool
decompress_lz4(const LpPageContext *ctx, const uint8_t *data, uint64_t len,
			   LpBuf *out)
{
	uint64_t	expected;
	int			result;

	if (len < 4)
		return lp_page_fail(ctx, LP_ERR_CORRUPT, "lz4 buffer is too short");
	expected = lp_le32(data);
	if (expected > MAX_DECOMPRESSED_LEN || len - 4 > INT32_MAX)
		return lp_page_fail(ctx, LP_ERR_CORRUPT, "lz4 buffer is too large");
	if (!lp_buf_reserve(out, expected))
		return lp_page_no_memory(ctx);
	result = LZ4_decompress_safe((const char *) data + 4,
								 expected > 0 ? (char *) out->data + out->len : NULL,
								 (int) (len - 4), (int) expected);
	if (result < 0 || (uint64_t) result != expected)
		return lp_page_fail(ctx, LP_ERR_CORRUPT, "lz4 buffer does not decompress");
	out->len += expected;
	return true;
}

bool
lp_general_decompress(const LpPageContext *ctx,
					  Lance__Encodings21__CompressionScheme scheme,
					  const uint8_t *data, uint64_t len, LpBuf *out)
{
	switch (scheme)
	{
		case LANCE__ENCODINGS21__COMPRESSION_SCHEME__COMPRESSION_ALGORITHM_LZ4:
			return decompress_lz4(ctx, data, len, out);
		case LANCE__ENCODINGS21__COMPRESSION_SCHEME__COMPRESSION_ALGORITHM_ZSTD:
			return decompress_zstd(ctx, data, len, out);
		default:
			return lp_page_fail(ctx, LP_ERR_UNSUPPORTED,
								"general compression scheme %d is not supported", (int) scheme);
	}
}

bool
lp_general_decompress_named(const LpPageContext *ctx, const char *scheme,
							const uint8_t *data, uint64_t len, LpBuf *out)
{
	if (strcmp(scheme, "zstd") == 0)
		return decompress_zstd(ctx, data, len, out);
	if (strcmp(scheme, "lz4") == 0)
		return decompress_lz4(ctx, data, len, out);
	if (strcmp(scheme, "none") == 0 || scheme[0] == '\0')
		return lp_buf_append(out, data, len) ? true : lp_page_no_memory(ctx);
	return lp_page_fail(ctx, LP_ERR_UNSUPPORTED,
						"compression scheme \"%.40s\" is not supported", scheme);
}
