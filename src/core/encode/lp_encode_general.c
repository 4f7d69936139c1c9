/*
 * lp_encode_general.c - General (lz4, zstd) compression of encoder buffers
 * and the field metadata that asks for it: lance-encoding:compression
 * ("none", "fsst", "lz4", "zstd") and lance-encoding:compression-level, as
 * Lance's writers read them (compression.rs parse_field_metadata,
 * previous/encoder.rs get_field_compression), and General buffers compressed
 * as they ask (codec/lp_general.c).
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "codec/lp_general.h"
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
lp_column_compress(const LpColumnCompression *compression, const uint8_t *data, uint64_t len,
				   LpBuf *out)
{
	return lp_general_compress(compression->request == LP_COMPRESSION_LZ4 ? LP_GENERAL_LZ4 : LP_GENERAL_ZSTD,
							   compression->has_level, compression->level, data, len, out);
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
