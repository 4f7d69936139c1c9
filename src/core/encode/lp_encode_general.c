/*
 * lp_encode_general.c - General (lz4, zstd) compression of encoder buffers
 * and the field metadata that asks for it: lance-encoding:compression
 * ("none", "fsst", "lz4", "zstd") and lance-encoding:compression-level, as
 * Lance's writers read them (compression.rs parse_field_metadata,
 * previous/encoder.rs get_field_compression).  The framing is the one
 * lp_general.c reads (lance-format.md §4.4).
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <lz4.h>
#include <zstd.h>

#include "base/lp_bytes.h"
#include "encode/lp_encode_internal.h"

#define COMPRESSION_KEY "lance-encoding:compression"
#define COMPRESSION_LEVEL_KEY "lance-encoding:compression-level"

/* A metadata value as a NUL-terminated string in buffer (values are short words). */
static bool
metadata_text(const LpKeyValue *entry, char *buffer, size_t size)
{
	if (entry->value.len >= size || memchr(entry->value.data, '\0', entry->value.len) != NULL)
		return false;
	memcpy(buffer, entry->value.data, entry->value.len);
	buffer[entry->value.len] = '\0';
	return true;
}

bool
lp_column_compression_parse(const LpField *field, const char *file_name,
							LpColumnCompression *out, LpError *err)
{
	const LpKeyValue *scheme = lp_metadata_find(field->metadata, field->num_metadata,
												COMPRESSION_KEY);
	const LpKeyValue *level = lp_metadata_find(field->metadata, field->num_metadata,
											   COMPRESSION_LEVEL_KEY);
	char		text[32];

	memset(out, 0, sizeof(*out));
	if (scheme != NULL)
	{
		bool		known = metadata_text(scheme, text, sizeof(text));

		if (known && strcmp(text, "none") == 0)
			out->request = LP_COMPRESSION_NONE;
		else if (known && strcmp(text, "fsst") == 0)
			out->request = LP_COMPRESSION_FSST;
		else if (known && strcmp(text, "lz4") == 0)
			out->request = LP_COMPRESSION_LZ4;
		else if (known && strcmp(text, "zstd") == 0)
			out->request = LP_COMPRESSION_ZSTD;
		else
		{
			lp_fail(err, LP_ERR_INVALID_ARGUMENT,
					"field \"%s\" of file \"%s\" asks for an unknown compression scheme",
					field->name, file_name);
			lp_error_detail(err, "The metadata %s is \"%.*s\"; the encoder knows \"none\", \"fsst\", \"lz4\" and \"zstd\".",
							COMPRESSION_KEY, (int) (scheme->value.len > 40 ? 40 : scheme->value.len),
							(const char *) scheme->value.data);
			return false;
		}
	}
	if (level != NULL)
	{
		char	   *end;
		long		value;

		errno = 0;
		value = metadata_text(level, text, sizeof(text)) ? strtol(text, &end, 10) : 0;
		if (!metadata_text(level, text, sizeof(text)) || text[0] == '\0' || *end != '\0' ||
			errno != 0 || value < INT32_MIN || value > INT32_MAX)
		{
			lp_fail(err, LP_ERR_INVALID_ARGUMENT,
					"field \"%s\" of file \"%s\" has a compression level that is not an integer",
					field->name, file_name);
			lp_error_detail(err, "The metadata %s must be a 32-bit integer.", COMPRESSION_LEVEL_KEY);
			return false;
		}
		out->has_level = true;
		out->level = (int32_t) value;
	}
	return true;
}

bool
lp_compression_is_general(const LpColumnCompression *compression)
{
	return compression->request == LP_COMPRESSION_LZ4 || compression->request == LP_COMPRESSION_ZSTD;
}

bool
lp_general_compress(const LpColumnCompression *compression, const uint8_t *data, uint64_t len,
					LpBuf *out)
{
	uint64_t	start = out->len;

	if (compression->request == LP_COMPRESSION_LZ4)
	{
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
	else
	{
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
		written = ZSTD_CCtx_setParameter(context, ZSTD_c_compressionLevel,
										 compression->has_level ? compression->level : 0);
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
}

void
lp_buffer_compression_init(const LpColumnCompression *compression,
						   Lance__Encodings21__BufferCompression *out)
{
	lance__encodings21__buffer_compression__init(out);
	out->scheme = compression->request == LP_COMPRESSION_LZ4 ?
		LANCE__ENCODINGS21__COMPRESSION_SCHEME__COMPRESSION_ALGORITHM_LZ4 :
		LANCE__ENCODINGS21__COMPRESSION_SCHEME__COMPRESSION_ALGORITHM_ZSTD;
	if (compression->has_level)
	{
		out->level_presence_case = LANCE__ENCODINGS21__BUFFER_COMPRESSION__LEVEL_PRESENCE_LEVEL;
		out->level = compression->level;
	}
}
