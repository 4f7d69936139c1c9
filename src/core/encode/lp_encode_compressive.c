/*
 * lp_encode_compressive.c - the strings of a 2.1+ page as stored (FSST, per-value
 * General) and the compressive encoding messages that describe a page's
 * buffers (lp_encode_page_internal.h).
 */
#include <math.h>
#include <string.h>

#include "base/lp_alloc.h"
#include "base/lp_bytes.h"
#include "base/lp_checked.h"
#include "codec/lp_bitpack.h"
#include "codec/lp_fsst.h"
#include "encode/lp_encode_page_internal.h"
#include "format/lp_encodings.h"
#include "format/lp_values.h"

/* What Lance's per-value compressor (CompressedBufferEncoder::default()) writes: zstd, level 0. */
static const LpColumnCompression per_value_zstd = {LP_COMPRESSION_ZSTD, true, 0};

/*
 * Lance's create_per_value for full-zip strings: every value compressed on
 * its own when the page has at least 32 KiB and its longest value more
 * than 32 KiB or the field asks for lz4 or zstd (zstd either way).
 */
static bool
prefers_per_value_general(const LpLeafShape *shape, const LpPageValues *page)
{
	return shape->compression.request != LP_COMPRESSION_NONE &&
		(page->max_length > PER_VALUE_GENERAL_LEAST_MAX_LENGTH ||
		 lp_compression_is_general(&shape->compression)) &&
		page->data.len >= FSST_LEAST_INPUT_SIZE;
}

/* Every valid value of page compressed on its own into strings (null values stay empty). */
static bool
compress_values(const LpPageValues *page, Strings *strings)
{
	const uint64_t *offsets = (const uint64_t *) page->offsets.data;

	if (!lp_buf_append_u64(&strings->compressed_offsets, 0))
		return false;
	for (uint64_t i = 0; i < page->num_values; i++)
	{
		if (!lp_enc_is_null(page, i) &&
			!lp_column_compress(&per_value_zstd, page->data.data + offsets[i],
								 offsets[i + 1] - offsets[i], &strings->compressed_data))
			return false;
		if (!lp_buf_append_u64(&strings->compressed_offsets, strings->compressed_data.len))
			return false;
	}
	strings->general = true;
	strings->offsets = (const uint64_t *) strings->compressed_offsets.data;
	strings->data = strings->compressed_data.data;
	strings->data_len = strings->compressed_data.len;
	return true;
}

/* The strings of page as a mini-block (or, with fullzip, a full-zip) page stores them. */
bool
lp_enc_strings_prepare(const LpLeafShape *shape, const LpPageValues *page, bool fullzip, Strings *strings)
{
	const uint64_t *offsets = (const uint64_t *) page->offsets.data;
	LpCompressionRequest request = shape->compression.request;
	LpFsstEncoder *encoder;

	memset(strings, 0, sizeof(*strings));
	strings->offsets = offsets;
	strings->data = page->data.data;
	strings->data_len = page->data.len;
	if (fullzip && prefers_per_value_general(shape, page))
		return compress_values(page, strings);
	if (request == LP_COMPRESSION_NONE || lp_compression_is_general(&shape->compression))
		return true;
	if (request != LP_COMPRESSION_FSST &&
		(page->max_length < FSST_LEAST_INPUT_MAX_LENGTH || page->data.len < FSST_LEAST_INPUT_SIZE))
		return true;
	encoder = lp_fsst_encoder_build(page->data.data, offsets, page->num_values);
	if (encoder == NULL || !lp_buf_reserve(&strings->compressed_data, 2 * page->data.len) ||
		!lp_buf_append_u64(&strings->compressed_offsets, 0))
	{
		lp_free(encoder);
		return false;
	}
	for (uint64_t i = 0; i < page->num_values; i++)
	{
		LpBuf	   *out = &strings->compressed_data;

		out->len += lp_fsst_encode(encoder, page->data.data + offsets[i],
								   offsets[i + 1] - offsets[i], out->data + out->len);
		if (!lp_buf_append_u64(&strings->compressed_offsets, out->len))
		{
			lp_free(encoder);
			return false;
		}
	}
	lp_fsst_table_write(&encoder->table, strings->table);
	lp_free(encoder);
	strings->fsst = true;
	strings->offsets = (const uint64_t *) strings->compressed_offsets.data;
	strings->data = strings->compressed_data.data;
	strings->data_len = strings->compressed_data.len;
	return true;
}

void
lp_enc_strings_free(Strings *strings)
{
	lp_buf_free(&strings->compressed_offsets);
	lp_buf_free(&strings->compressed_data);
}

/* ---- compressive encoding messages ---------------------------------------- */

CE *
lp_enc_flat(Messages *m, uint64_t bits)
{
	CE		   *ce = &m->ce[m->used_ce++];
	Lance__Encodings21__Flat *flat = &m->flat[m->used_flat++];

	lance__encodings21__compressive_encoding__init(ce);
	lance__encodings21__flat__init(flat);
	flat->bits_per_value = bits;
	ce->compression_case = LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_FLAT;
	ce->flat = flat;
	return ce;
}

CE *
lp_enc_inline_bitpacking(Messages *m, uint64_t bits)
{
	CE		   *ce = &m->ce[m->used_ce++];
	Lance__Encodings21__InlineBitpacking *inline_bitpacking =
		&m->inline_bitpacking[m->used_inline++];

	lance__encodings21__compressive_encoding__init(ce);
	lance__encodings21__inline_bitpacking__init(inline_bitpacking);
	inline_bitpacking->uncompressed_bits_per_value = bits;
	ce->compression_case = LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_INLINE_BITPACKING;
	ce->inline_bitpacking = inline_bitpacking;
	return ce;
}

CE *
lp_enc_out_of_line(Messages *m, uint64_t bits, uint64_t width)
{
	CE		   *values = lp_enc_flat(m, width);
	CE		   *ce = &m->ce[m->used_ce++];
	Lance__Encodings21__OutOfLineBitpacking *out_of_line = &m->out_of_line[m->used_out_of_line++];

	lance__encodings21__compressive_encoding__init(ce);
	lance__encodings21__out_of_line_bitpacking__init(out_of_line);
	out_of_line->uncompressed_bits_per_value = bits;
	out_of_line->values = values;
	ce->compression_case = LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_OUT_OF_LINE_BITPACKING;
	ce->out_of_line_bitpacking = out_of_line;
	return ce;
}

static CE *
variable_encoding(Messages *m, uint64_t offset_bits)
{
	CE		   *offsets = lp_enc_flat(m, offset_bits);
	CE		   *ce = &m->ce[m->used_ce++];

	lance__encodings21__compressive_encoding__init(ce);
	lance__encodings21__variable__init(&m->variable);
	m->variable.offsets = offsets;
	ce->compression_case = LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_VARIABLE;
	ce->variable = &m->variable;
	return ce;
}

CE *
lp_enc_fixed_size_list(Messages *m, uint64_t dimension, uint64_t item_bits)
{
	CE		   *items = lp_enc_flat(m, item_bits);
	CE		   *ce = &m->ce[m->used_ce++];

	lance__encodings21__compressive_encoding__init(ce);
	lance__encodings21__fixed_size_list__init(&m->fixed_size_list);
	m->fixed_size_list.items_per_value = dimension;
	m->fixed_size_list.values = items;
	ce->compression_case = LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_FIXED_SIZE_LIST;
	ce->fixed_size_list = &m->fixed_size_list;
	return ce;
}

CE *
lp_enc_rle(Messages *m, uint64_t bits)
{
	CE		   *values = lp_enc_flat(m, bits);
	CE		   *lengths = lp_enc_flat(m, 8);
	CE		   *ce = &m->ce[m->used_ce++];
	Lance__Encodings21__Rle *rle = &m->rle[m->used_rle++];

	lance__encodings21__compressive_encoding__init(ce);
	lance__encodings21__rle__init(rle);
	rle->values = values;
	rle->run_lengths = lengths;
	ce->compression_case = LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_RLE;
	ce->rle = rle;
	return ce;
}

CE *
lp_enc_byte_stream_split(Messages *m, uint64_t bits)
{
	CE		   *values = lp_enc_flat(m, bits);
	CE		   *ce = &m->ce[m->used_ce++];

	lance__encodings21__compressive_encoding__init(ce);
	lance__encodings21__byte_stream_split__init(&m->byte_stream_split);
	m->byte_stream_split.values = values;
	ce->compression_case = LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_BYTE_STREAM_SPLIT;
	ce->byte_stream_split = &m->byte_stream_split;
	return ce;
}

/* Variable offsets and bytes, FSST- or General-compressed when the strings are. */
CE *
lp_enc_strings(Messages *m, const Strings *strings, uint64_t offset_bits)
{
	CE		   *variable = variable_encoding(m, offset_bits);
	CE		   *ce;

	if (strings->general)
	{
		ce = &m->ce[m->used_ce++];
		lance__encodings21__compressive_encoding__init(ce);
		lp_buffer_compression_init(&per_value_zstd, &m->buffer_compression);
		lance__encodings21__general__init(&m->general);
		m->general.compression = &m->buffer_compression;
		m->general.values = variable;
		ce->compression_case = LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_GENERAL;
		ce->general = &m->general;
		return ce;
	}
	if (!strings->fsst)
		return variable;
	ce = &m->ce[m->used_ce++];
	lance__encodings21__compressive_encoding__init(ce);
	lance__encodings21__fsst__init(&m->fsst);
	m->fsst.symbol_table.data = (uint8_t *) strings->table;
	m->fsst.symbol_table.len = LP_FSST_SYMBOL_TABLE_LEN;
	m->fsst.values = variable;
	ce->compression_case = LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_FSST;
	ce->fsst = &m->fsst;
	return ce;
}

/*
 * The VariablePackedStruct of Blob v2 descriptors as lancedb writes it:
 * kind, position, size and blob_id flat (8, 64, 64, 32 bits), blob_uri
 * variable with a 32-bit length.
 */
CE *
lp_enc_blob_descriptor(Messages *m)
{
	static const uint64_t fixed_bits[4] = {8, 64, 64, 32};
	CE		   *ce;

	for (int f = 0; f < 5; f++)
	{
		Lance__Encodings21__VariablePackedStruct__FieldEncoding *field = &m->packed_fields[f];

		lance__encodings21__variable_packed_struct__field_encoding__init(field);
		if (f < 4)
		{
			field->value = lp_enc_flat(m, fixed_bits[f]);
			field->layout_case =
				LANCE__ENCODINGS21__VARIABLE_PACKED_STRUCT__FIELD_ENCODING__LAYOUT_BITS_PER_VALUE;
			field->bits_per_value = fixed_bits[f];
		}
		else
		{
			field->value = variable_encoding(m, 32);
			field->layout_case =
				LANCE__ENCODINGS21__VARIABLE_PACKED_STRUCT__FIELD_ENCODING__LAYOUT_BITS_PER_LENGTH;
			field->bits_per_length = 32;
		}
		m->packed_field_pointers[f] = field;
	}
	lance__encodings21__variable_packed_struct__init(&m->packed_struct);
	m->packed_struct.n_fields = 5;
	m->packed_struct.fields = m->packed_field_pointers;
	ce = &m->ce[m->used_ce++];
	lance__encodings21__compressive_encoding__init(ce);
	ce->compression_case = LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_VARIABLE_PACKED_STRUCT;
	ce->variable_packed_struct = &m->packed_struct;
	return ce;
}

/* Serialize layout into out->encoding as Encoding{direct{Any{PageLayout}}}. */
bool
lp_enc_wrap_layout(const Lance__Encodings21__PageLayout *layout, LpEncodedPage *out, LpError *err)
{
	return lp_encoded_page_wrap(&layout->base, LP_PAGE_LAYOUT_URL, out, err);
}


bool
lp_encoded_page_wrap(const ProtobufCMessage *message, const char *type_url, LpEncodedPage *out,
					 LpError *err)
{
	size_t		size = protobuf_c_message_get_packed_size(message);
	uint8_t    *bytes = lp_alloc(size + 1);
	bool		ok;

	if (bytes == NULL)
		return lp_enc_no_memory(err);
	protobuf_c_message_pack(message, bytes);
	ok = lp_encoding_wrap(type_url, bytes, size, &out->encoding);
	lp_free(bytes);
	return ok ? true : lp_enc_no_memory(err);
}

void
lp_encoded_page_free(LpEncodedPage *page)
{
	for (uint32_t i = 0; i < LP_ENCODED_PAGE_MAX_BUFFERS; i++)
		lp_buf_free(&page->buffers[i]);
	lp_free(page->encoding.data);
	memset(page, 0, sizeof(*page));
}
