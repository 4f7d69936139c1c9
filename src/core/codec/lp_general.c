/*
 * lp_general.c - general-purpose compression of buffers, both ways: zstd
 * (u64 LE uncompressed length + frame, or a bare frame) and lz4 (u32 LE
 * uncompressed length + block), lance-format.md §4.4.
 */
#include <lz4.h>
#include <zstd.h>

#include "base/lp_bytes.h"
#include "codec/lp_general.h"

/* No single decompressed buffer may claim more than this. */
#define MAX_DECOMPRESSED_LEN ((uint64_t) 1 << 31)

#define ZSTD_FRAME_MAGIC 0xFD2FB528u

static bool
decompress_zstd(const uint8_t *data, uint64_t len, LpBuf *out, LpError *err)
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
			return lp_fail(err, LP_ERR_CORRUPT, "zstd buffer has no usable frame header");
		expected = content;
	}
	else
	{
		expected = lp_le64(data);
		frame = data + 8;
		frame_len = len - 8;
	}
	if (expected > MAX_DECOMPRESSED_LEN)
		return lp_fail(err, LP_ERR_CORRUPT, "zstd buffer claims %llu bytes",
							(unsigned long long) expected);
	if (!lp_buf_reserve(out, expected))
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory decompressing a buffer");
	/* An empty result may leave out unallocated. */
	result = ZSTD_decompress(expected > 0 ? out->data + out->len : NULL, (size_t) expected,
							 frame, (size_t) frame_len);
	if (ZSTD_isError(result) || result != expected)
		return lp_fail(err, LP_ERR_CORRUPT, "zstd buffer does not decompress");
	out->len += expected;
	return true;
}

static bool
decompress_lz4(const uint8_t *data, uint64_t len, LpBuf *out, LpError *err)
{
	uint64_t	expected;
	int			result;

	if (len < 4)
		return lp_fail(err, LP_ERR_CORRUPT, "lz4 buffer is too short");
	expected = lp_le32(data);
	if (expected > MAX_DECOMPRESSED_LEN || len - 4 > INT32_MAX)
		return lp_fail(err, LP_ERR_CORRUPT, "lz4 buffer is too large");
	if (!lp_buf_reserve(out, expected))
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory decompressing a buffer");
	result = LZ4_decompress_safe((const char *) data + 4,
								 expected > 0 ? (char *) out->data + out->len : NULL,
								 (int) (len - 4), (int) expected);
	if (result < 0 || (uint64_t) result != expected)
		return lp_fail(err, LP_ERR_CORRUPT, "lz4 buffer does not decompress");
	out->len += expected;
	return true;
}

bool
lp_general_decompress(LpGeneralScheme scheme, const uint8_t *data, uint64_t len, LpBuf *out,
					  LpError *err)
{
	return scheme == LP_GENERAL_LZ4 ? decompress_lz4(data, len, out, err) :
		decompress_zstd(data, len, out, err);
}

static bool
compress_lz4(const uint8_t *data, uint64_t len, LpBuf *out)
{
	uint64_t	start = out->len;
	int			bound;
	int			written;

	if (len > LZ4_MAX_INPUT_SIZE)
		return false;
	bound = LZ4_compressBound((int) len);
	if (!lp_buf_reserve(out, 4 + (uint64_t) bound))
		return false;
	lp_put_le32(out->data + start, (uint32_t) len);
	if (len == 0)
	{
		out->data[start + 4] = 0;	/* the empty block: one token, no literals */
		written = 1;
	}
	else
		written = LZ4_compress_default((const char *) data, (char *) out->data + start + 4,
									   (int) len, bound);
	if (written <= 0)
		return false;
	out->len = start + 4 + (uint64_t) written;
	return true;
}

static bool
compress_zstd(bool has_level, int32_t level, const uint8_t *data, uint64_t len, LpBuf *out)
{
	uint64_t	start = out->len;
	size_t		bound = ZSTD_compressBound((size_t) len);
	ZSTD_CCtx  *context;
	size_t		written;

	if (ZSTD_isError(bound) || !lp_buf_reserve(out, 8 + (uint64_t) bound))
		return false;
	context = ZSTD_createCCtx();
	if (context == NULL)
		return false;
	lp_put_le64(out->data + start, len);
	/* Lance streams its frames, which leaves the content size out of the header. */
	written = ZSTD_CCtx_setParameter(context, ZSTD_c_compressionLevel, has_level ? level : 0);
	if (!ZSTD_isError(written))
		written = ZSTD_CCtx_setParameter(context, ZSTD_c_contentSizeFlag, 0);
	if (!ZSTD_isError(written))
		written = ZSTD_compress2(context, out->data + start + 8, bound, data, (size_t) len);
	ZSTD_freeCCtx(context);
	if (ZSTD_isError(written))
		return false;
	out->len = start + 8 + written;
	return true;
}

bool
lp_general_compress(LpGeneralScheme scheme, bool has_level, int32_t level,
					const uint8_t *data, uint64_t len, LpBuf *out)
{
	return scheme == LP_GENERAL_LZ4 ? compress_lz4(data, len, out) :
		compress_zstd(has_level, level, data, len, out);
}
