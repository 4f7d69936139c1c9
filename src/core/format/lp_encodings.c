/*
 * lp_encodings.c - wrapping and unwrapping the Encoding messages of Lance v2
 * files, and the names of their variants (lp_encodings.h).
 */
#include "format/lp_encodings.h"

#include <string.h>

#include "base/lp_alloc.h"

#include "any.pb-c.h"
#include "file2.pb-c.h"

/* ---- type URLs and wrapping ----------------------------------------------- */

const char *
lp_encoding_type_url(LpEncodingRole role)
{
	switch (role)
	{
		case LP_ENCODING_COLUMN:
			return LP_COLUMN_ENCODING_URL;
		case LP_ENCODING_PAGE_V2_0:
			return LP_ARRAY_ENCODING_URL;
		default:
			return LP_PAGE_LAYOUT_URL;
	}
}

static const ProtobufCMessageDescriptor *
role_descriptor(LpEncodingRole role)
{
	switch (role)
	{
		case LP_ENCODING_COLUMN:
			return &lance__encodings__column_encoding__descriptor;
		case LP_ENCODING_PAGE_V2_0:
			return &lance__encodings__array_encoding__descriptor;
		default:
			return &lance__encodings21__page_layout__descriptor;
	}
}

/* The serialized form of message in lp_alloc'd memory; false when out of memory. */
static bool
pack(const ProtobufCMessage *message, LpBytes *out)
{
	size_t		len = protobuf_c_message_get_packed_size(message);

	out->data = lp_alloc(len);
	if (out->data == NULL)
		return false;
	out->len = protobuf_c_message_pack(message, out->data);
	return true;
}

bool
lp_encoding_wrap(const char *type_url, const uint8_t *value, size_t value_len, LpBytes *out)
{
	LanceParts__Any any = LANCE_PARTS__ANY__INIT;
	Lance__File__V2__DirectEncoding direct = LANCE__FILE__V2__DIRECT_ENCODING__INIT;
	Lance__File__V2__Encoding encoding = LANCE__FILE__V2__ENCODING__INIT;
	LpBytes		any_bytes;
	bool		ok;

	out->data = NULL;
	out->len = 0;
	any.type_url = (char *) type_url;
	any.value.data = (uint8_t *) value;
	any.value.len = value_len;
	if (!pack(&any.base, &any_bytes))
		return false;
	direct.encoding.data = any_bytes.data;
	direct.encoding.len = any_bytes.len;
	encoding.location_case = LANCE__FILE__V2__ENCODING__LOCATION_DIRECT;
	encoding.direct = &direct;
	ok = pack(&encoding.base, out);
	lp_free(any_bytes.data);
	return ok;
}

/* ---- unwrapping ------------------------------------------------------------ */

/* True if text is short printable ASCII, safe to quote in a message. */
static bool
quotable(const char *text)
{
	size_t		len = 0;

	for (; text[len]; len++)
		if (text[len] < 0x20 || text[len] > 0x7e || len >= 128)
			return false;
	return true;
}

static bool
unwrap_fail(LpUnwrapResult *result, LpUnwrapStatus status, LpUnpackResult unpack)
{
	result->status = status;
	result->unpack = unpack;
	return false;
}

bool
lp_encoding_unwrap(const uint8_t *data, size_t len, LpEncodingRole role,
				   ProtobufCMessage **inner, LpUnwrapResult *result)
{
	const char *expected_url = lp_encoding_type_url(role);
	Lance__File__V2__Encoding *encoding = NULL;
	LanceParts__Any *any = NULL;
	LpUnpackResult unpack;
	bool		ok = false;

	*inner = NULL;
	memset(result, 0, sizeof(*result));
	unpack = lp_protobuf_unpack(&lance__file__v2__encoding__descriptor, data, len,
								(ProtobufCMessage **) &encoding);
	if (unpack != LP_UNPACK_OK)
		unwrap_fail(result, LP_UNWRAP_BAD_WRAPPER, unpack);
	else if (encoding->location_case == LANCE__FILE__V2__ENCODING__LOCATION_INDIRECT)
		unwrap_fail(result, LP_UNWRAP_INDIRECT, LP_UNPACK_MALFORMED);
	else if (encoding->location_case == LANCE__FILE__V2__ENCODING__LOCATION_NONE)
		unwrap_fail(result, LP_UNWRAP_NONE, LP_UNPACK_MALFORMED);
	else if (encoding->location_case != LANCE__FILE__V2__ENCODING__LOCATION_DIRECT)
		unwrap_fail(result, LP_UNWRAP_NO_LOCATION, LP_UNPACK_MALFORMED);
	else if ((unpack = lp_protobuf_unpack(&lance_parts__any__descriptor,
										  encoding->direct->encoding.data,
										  encoding->direct->encoding.len,
										  (ProtobufCMessage **) &any)) != LP_UNPACK_OK)
		unwrap_fail(result, LP_UNWRAP_BAD_WRAPPER, unpack);
	else if (strcmp(any->type_url, expected_url) != 0)
	{
		unwrap_fail(result, LP_UNWRAP_WRONG_TYPE, LP_UNPACK_MALFORMED);
		result->found_url_quotable = quotable(any->type_url);
		if (result->found_url_quotable)
			strcpy(result->found_url, any->type_url);
	}
	else if ((unpack = lp_protobuf_unpack(role_descriptor(role), any->value.data,
										  any->value.len, inner)) != LP_UNPACK_OK)
		unwrap_fail(result, LP_UNWRAP_BAD_MESSAGE, unpack);
	else
		ok = true;
	lp_protobuf_free(any ? &any->base : NULL);
	lp_protobuf_free(encoding ? &encoding->base : NULL);
	return ok;
}

/* ---- names of the variants ------------------------------------------------ */

const char *
lp_array_encoding_name(const Lance__Encodings__ArrayEncoding *encoding)
{
	switch (encoding->array_encoding_case)
	{
		case LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_FLAT:
			return "flat";
		case LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_NULLABLE:
			return "nullable";
		case LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_FIXED_SIZE_LIST:
			return "fixed_size_list";
		case LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_LIST:
			return "list";
		case LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_SIMPLE_STRUCT:
			return "struct";
		case LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_BINARY:
			return "binary";
		case LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_DICTIONARY:
			return "dictionary";
		case LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_FSST:
			return "fsst";
		case LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_PACKED_STRUCT:
			return "packed_struct";
		case LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_BITPACKED:
			return "bitpacked";
		case LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_FIXED_SIZE_BINARY:
			return "fixed_size_binary";
		case LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_BITPACKED_FOR_NON_NEG:
			return "bitpacked_for_non_neg";
		case LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_CONSTANT:
			return "constant";
		case LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_INLINE_BITPACKING:
			return "inline_bitpacking";
		case LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_OUT_OF_LINE_BITPACKING:
			return "out_of_line_bitpacking";
		case LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_VARIABLE:
			return "variable";
		case LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_PACKED_STRUCT_FIXED_WIDTH_MINI_BLOCK:
			return "packed_struct_fixed_width_mini_block";
		case LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_BLOCK:
			return "block";
		case LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_RLE:
			return "rle";
		case LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_GENERAL_MINI_BLOCK:
			return "general_mini_block";
		case LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_BYTE_STREAM_SPLIT:
			return "byte_stream_split";
		default:
			return NULL;
	}
}

static const char *
page_layout_name(const Lance__Encodings21__PageLayout *layout)
{
	switch (layout->layout_case)
	{
		case LANCE__ENCODINGS21__PAGE_LAYOUT__LAYOUT_MINI_BLOCK_LAYOUT:
			return "mini_block";
		case LANCE__ENCODINGS21__PAGE_LAYOUT__LAYOUT_CONSTANT_LAYOUT:
			/*
			 * All-null pages are constant pages of null; where the value of
			 * a non-null constant lives (inline or in a page buffer) depends
			 * on its width, so the name does not try to tell them apart.
			 */
			return "constant";
		case LANCE__ENCODINGS21__PAGE_LAYOUT__LAYOUT_FULL_ZIP_LAYOUT:
			return "full_zip";
		case LANCE__ENCODINGS21__PAGE_LAYOUT__LAYOUT_BLOB_LAYOUT:
			return "blob";
		case LANCE__ENCODINGS21__PAGE_LAYOUT__LAYOUT_SPARSE_LAYOUT:
			return "sparse";
		default:
			return NULL;
	}
}

static const char *
column_encoding_name(const Lance__Encodings__ColumnEncoding *encoding)
{
	switch (encoding->column_encoding_case)
	{
		case LANCE__ENCODINGS__COLUMN_ENCODING__COLUMN_ENCODING_VALUES:
			return "values";
		case LANCE__ENCODINGS__COLUMN_ENCODING__COLUMN_ENCODING_ZONE_INDEX:
			return "zone_index";
		case LANCE__ENCODINGS__COLUMN_ENCODING__COLUMN_ENCODING_BLOB:
			return "blob";
		default:
			return NULL;
	}
}

const char *
lp_encoding_name(LpEncodingRole role, const ProtobufCMessage *inner)
{
	switch (role)
	{
		case LP_ENCODING_COLUMN:
			return column_encoding_name((const Lance__Encodings__ColumnEncoding *) inner);
		case LP_ENCODING_PAGE_V2_0:
			return lp_array_encoding_name((const Lance__Encodings__ArrayEncoding *) inner);
		default:
			return page_layout_name((const Lance__Encodings21__PageLayout *) inner);
	}
}

const char *
lp_compressive_name(const Lance__Encodings21__CompressiveEncoding *encoding)
{
	switch (encoding->compression_case)
	{
		case LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_FLAT:
			return "flat";
		case LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_VARIABLE:
			return "variable";
		case LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_CONSTANT:
			return "constant";
		case LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_OUT_OF_LINE_BITPACKING:
			return "out_of_line_bitpacking";
		case LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_INLINE_BITPACKING:
			return "inline_bitpacking";
		case LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_FSST:
			return "fsst";
		case LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_DICTIONARY:
			return "dictionary";
		case LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_RLE:
			return "rle";
		case LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_BYTE_STREAM_SPLIT:
			return "byte_stream_split";
		case LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_GENERAL:
			return "general";
		case LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_FIXED_SIZE_LIST:
			return "fixed_size_list";
		case LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_PACKED_STRUCT:
			return "packed_struct";
		case LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_VARIABLE_PACKED_STRUCT:
			return "variable_packed_struct";
		default:
			return "unknown compressive encoding";
	}
}
