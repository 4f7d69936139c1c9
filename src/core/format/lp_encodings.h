/*
 * lp_encodings.h - the Encoding messages of Lance v2 files (lance-format.md
 * §2.2): a column's or page's encoding is stored as
 * Encoding{direct{Any{type_url, value}}}, where the Any holds a
 * ColumnEncoding, a 2.0 ArrayEncoding or a 2.1+ PageLayout.  This module
 * wraps a message that way, unwraps it again with its type URL checked, and
 * names the variants (LpPage.layout, LpColumn.kind and messages).  Core
 * internal: it exposes protobuf-c types.
 */
#ifndef LP_ENCODINGS_H
#define LP_ENCODINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/lp_bytes.h"
#include "base/lp_protobuf.h"

#include "encodings_v2_0.pb-c.h"
#include "encodings_v2_1.pb-c.h"

#define LP_COLUMN_ENCODING_URL "/lance.encodings.ColumnEncoding"
#define LP_ARRAY_ENCODING_URL "/lance.encodings.ArrayEncoding"
#define LP_PAGE_LAYOUT_URL "/lance.encodings21.PageLayout"

/* What an Encoding is expected to wrap. */
typedef enum LpEncodingRole
{
	LP_ENCODING_COLUMN,			/* ColumnEncoding */
	LP_ENCODING_PAGE_V2_0,		/* ArrayEncoding */
	LP_ENCODING_PAGE_V2_1		/* PageLayout (2.1 - 2.3) */
} LpEncodingRole;

/* The type URL an Any of the role carries. */
const char *lp_encoding_type_url(LpEncodingRole role);

/*
 * The serialized Encoding{direct{Any{type_url, value}}} of value, a
 * serialized message of type type_url; out->data is allocated with
 * lp_alloc.  False when out of memory.
 */
bool		lp_encoding_wrap(const char *type_url, const uint8_t *value, size_t value_len,
							 LpBytes *out);

typedef enum LpUnwrapStatus
{
	LP_UNWRAP_OK = 0,
	LP_UNWRAP_BAD_WRAPPER,		/* the Encoding or its Any does not unpack */
	LP_UNWRAP_BAD_MESSAGE,		/* the wrapped message does not unpack */
	LP_UNWRAP_INDIRECT,			/* stored elsewhere in the file (deferred) */
	LP_UNWRAP_NONE,				/* declares that there is no encoding */
	LP_UNWRAP_NO_LOCATION,		/* sets no location at all */
	LP_UNWRAP_WRONG_TYPE		/* the Any holds another type than the role's */
} LpUnwrapStatus;

/* Longest type URL copied into LpUnwrapResult.found_url. */
#define LP_TYPE_URL_QUOTE_MAX 128

typedef struct LpUnwrapResult
{
	LpUnwrapStatus status;
	/* Why unpacking failed (BAD_*); LP_UNPACK_MALFORMED for the other failures. */
	LpUnpackResult unpack;
	/* WRONG_TYPE: the URL found, if it is printable ASCII of at most LP_TYPE_URL_QUOTE_MAX bytes. */
	bool		found_url_quotable;
	char		found_url[LP_TYPE_URL_QUOTE_MAX + 1];
} LpUnwrapResult;

/*
 * Unwrap the serialized Encoding in data: on success *inner is the message
 * of the role (free it with lp_protobuf_free) and true is returned; else
 * *inner is NULL and *result says what is wrong.
 */
bool		lp_encoding_unwrap(const uint8_t *data, size_t len, LpEncodingRole role,
							   ProtobufCMessage **inner, LpUnwrapResult *result);

/*
 * Name of the variant an unwrapped message of the role sets: the
 * ColumnEncoding variant ("values", "zone_index", "blob"), the ArrayEncoding
 * variant (lp_array_encoding_name) or the PageLayout variant ("mini_block",
 * "full_zip", "constant", "blob", "sparse").  NULL if it sets none known.
 */
const char *lp_encoding_name(LpEncodingRole role, const ProtobufCMessage *inner);

/* Name of a 2.0 page encoding (ArrayEncoding variant, as LpPage.layout gives it), or NULL. */
const char *lp_array_encoding_name(const Lance__Encodings__ArrayEncoding *encoding);

/* Name of a 2.1+ CompressiveEncoding variant, for messages. */
const char *lp_compressive_name(const Lance__Encodings21__CompressiveEncoding *encoding);

#endif							/* LP_ENCODINGS_H */
