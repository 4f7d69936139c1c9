/*
 * test_encodings.c - wrapping and unwrapping Encoding messages
 * (lp_encodings.h).  How lp_file_open reports each failure is tested in
 * test_file.c; these check the module's own contract.
 */
#include <stdlib.h>

#include "base/lp_alloc.h"
#include "format/lp_encodings.h"
#include "lp_test.h"

/* A serialized PageLayout{mini_block_layout{num_items: 7}}. */
static LpBytes
mini_block_layout(void)
{
	Lance__Encodings21__MiniBlockLayout mini = LANCE__ENCODINGS21__MINI_BLOCK_LAYOUT__INIT;
	Lance__Encodings21__PageLayout layout = LANCE__ENCODINGS21__PAGE_LAYOUT__INIT;
	LpBytes		bytes;

	mini.num_items = 7;
	layout.layout_case = LANCE__ENCODINGS21__PAGE_LAYOUT__LAYOUT_MINI_BLOCK_LAYOUT;
	layout.mini_block_layout = &mini;
	bytes.len = protobuf_c_message_get_packed_size(&layout.base);
	bytes.data = malloc(bytes.len);
	protobuf_c_message_pack(&layout.base, bytes.data);
	return bytes;
}

LP_TEST(encodings_wrap_then_unwrap)
{
	LpBytes		value = mini_block_layout();
	LpBytes		wrapped;
	ProtobufCMessage *inner;
	LpUnwrapResult result;

	LP_CHECK(lp_encoding_wrap(lp_encoding_type_url(LP_ENCODING_PAGE_V2_1), value.data, value.len,
							  &wrapped));
	LP_CHECK(lp_encoding_unwrap(wrapped.data, wrapped.len, LP_ENCODING_PAGE_V2_1, &inner, &result));
	LP_CHECK(result.status == LP_UNWRAP_OK);
	if (inner != NULL)
	{
		const Lance__Encodings21__PageLayout *layout = (const Lance__Encodings21__PageLayout *) inner;

		LP_CHECK_STR(lp_encoding_name(LP_ENCODING_PAGE_V2_1, inner), "mini_block");
		LP_CHECK(layout->mini_block_layout != NULL && layout->mini_block_layout->num_items == 7);
		lp_protobuf_free(inner);
	}

	/* the same bytes are not what a 2.0 page or a column holds */
	LP_CHECK(!lp_encoding_unwrap(wrapped.data, wrapped.len, LP_ENCODING_PAGE_V2_0, &inner, &result));
	LP_CHECK(inner == NULL && result.status == LP_UNWRAP_WRONG_TYPE);
	LP_CHECK(result.found_url_quotable);
	LP_CHECK_STR(result.found_url, LP_PAGE_LAYOUT_URL);
	LP_CHECK(!lp_encoding_unwrap(wrapped.data, wrapped.len, LP_ENCODING_COLUMN, &inner, &result));
	LP_CHECK(result.status == LP_UNWRAP_WRONG_TYPE);
	lp_free(wrapped.data);
	free(value.data);
}

/* A found type URL is quoted up to LP_TYPE_URL_QUOTE_MAX bytes, and no longer. */
LP_TEST(encodings_found_url_length)
{
	char		url[LP_TYPE_URL_QUOTE_MAX + 2];
	LpBytes		wrapped;
	ProtobufCMessage *inner;
	LpUnwrapResult result;

	memset(url, 'u', sizeof(url) - 1);
	url[sizeof(url) - 1] = '\0';
	for (int extra = 1; extra >= 0; extra--)
	{
		url[LP_TYPE_URL_QUOTE_MAX + extra] = '\0';
		LP_CHECK(lp_encoding_wrap(url, NULL, 0, &wrapped));
		LP_CHECK(!lp_encoding_unwrap(wrapped.data, wrapped.len, LP_ENCODING_COLUMN, &inner,
									 &result));
		LP_CHECK(result.status == LP_UNWRAP_WRONG_TYPE);
		LP_CHECK_MSG(result.found_url_quotable == (extra == 0),
					 "a URL of %d bytes is %squoted", LP_TYPE_URL_QUOTE_MAX + extra,
					 result.found_url_quotable ? "" : "not ");
		if (extra == 0)
			LP_CHECK_STR(result.found_url, url);
		lp_free(wrapped.data);
	}
}

LP_TEST(encodings_unwrap_failures)
{
	static const uint8_t garbage[] = {0xff, 0xff, 0xff};
	static const uint8_t bad_layout[] = {0x0a, 0x05, 0x01};
	LpBytes		wrapped;
	ProtobufCMessage *inner;
	LpUnwrapResult result;

	/* an empty Encoding sets no location */
	LP_CHECK(!lp_encoding_unwrap(NULL, 0, LP_ENCODING_COLUMN, &inner, &result));
	LP_CHECK(result.status == LP_UNWRAP_NO_LOCATION && result.unpack == LP_UNPACK_MALFORMED);

	LP_CHECK(!lp_encoding_unwrap(garbage, sizeof(garbage), LP_ENCODING_COLUMN, &inner, &result));
	LP_CHECK(result.status == LP_UNWRAP_BAD_WRAPPER && result.unpack == LP_UNPACK_MALFORMED);

	LP_CHECK(lp_encoding_wrap(LP_PAGE_LAYOUT_URL, bad_layout, sizeof(bad_layout), &wrapped));
	LP_CHECK(!lp_encoding_unwrap(wrapped.data, wrapped.len, LP_ENCODING_PAGE_V2_1, &inner,
								 &result));
	LP_CHECK(inner == NULL && result.status == LP_UNWRAP_BAD_MESSAGE &&
			 result.unpack == LP_UNPACK_MALFORMED);
	lp_free(wrapped.data);
}

LP_TEST(encodings_names)
{
	Lance__Encodings__ColumnEncoding column = LANCE__ENCODINGS__COLUMN_ENCODING__INIT;
	Lance__Encodings21__CompressiveEncoding compressive =
		LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__INIT;
	Lance__Encodings__ArrayEncoding array = LANCE__ENCODINGS__ARRAY_ENCODING__INIT;

	LP_CHECK(lp_encoding_name(LP_ENCODING_COLUMN, &column.base) == NULL);
	column.column_encoding_case = LANCE__ENCODINGS__COLUMN_ENCODING__COLUMN_ENCODING_BLOB;
	LP_CHECK_STR(lp_encoding_name(LP_ENCODING_COLUMN, &column.base), "blob");
	array.array_encoding_case = LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_FSST;
	LP_CHECK_STR(lp_encoding_name(LP_ENCODING_PAGE_V2_0, &array.base), "fsst");
	compressive.compression_case = LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_RLE;
	LP_CHECK_STR(lp_compressive_name(&compressive), "rle");
}
