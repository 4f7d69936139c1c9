/*
 * lp_s3_xml.h - the XML of S3: response bodies read into typed results, and
 * the CompleteMultipartUpload request body written.
 *
 * The reader is a small, strict XML parser bounded in body size, nesting
 * depth and element count.  It accepts the XML declaration, comments,
 * processing instructions, CDATA sections, attributes (namespace declarations
 * included) and namespace prefixes, and ignores them; it decodes the five
 * predefined entities and numeric character references and checks that the
 * body is UTF-8 made of XML characters.  It refuses document type
 * declarations (no entity expansion), text mixed with elements, and anything
 * malformed, with LP_ERR_CORRUPT naming what is wrong and where.
 *
 * Elements are matched by local name (a namespace prefix is ignored);
 * unknown elements are skipped, so servers may add fields.  A field this
 * module reads must appear at most once and hold text only.  Strings are
 * returned exactly as decoded; numbers, booleans and timestamps may have
 * whitespace around them.  Absent optional strings are NULL.
 */
#ifndef LP_S3_XML_H
#define LP_S3_XML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/lp_error.h"

/* Bounds of a body the reader accepts. */
#define LP_S3_XML_MAX_BODY ((size_t) 16 << 20)
#define LP_S3_XML_MAX_DEPTH 16
#define LP_S3_XML_MAX_ELEMENTS 100000

/* The part numbers and count S3 allows in one multipart upload. */
#define LP_S3_MAX_PARTS 10000

typedef enum LpS3DocumentKind
{
	LP_S3_ERROR,				/* Error */
	LP_S3_LIST_OBJECTS,			/* ListBucketResult (ListObjectsV2) */
	LP_S3_INITIATE_MULTIPART,	/* InitiateMultipartUploadResult */
	LP_S3_COMPLETE_MULTIPART,	/* CompleteMultipartUploadResult */
	LP_S3_COPY_PART,			/* CopyPartResult (UploadPartCopy) */
	LP_S3_COPY_OBJECT,			/* CopyObjectResult */
	LP_S3_LIST_MULTIPART_UPLOADS,	/* ListMultipartUploadsResult */
	LP_S3_LIST_PARTS,			/* ListPartsResult */
	LP_S3_COMPLETE_MULTIPART_REQUEST	/* CompleteMultipartUpload (a request) */
} LpS3DocumentKind;

/* An instant as seconds and microseconds since 1970-01-01T00:00:00Z. */
typedef struct LpS3Timestamp
{
	int64_t		seconds;
	int32_t		microseconds;	/* 0..999999; finer digits are cut off */
} LpS3Timestamp;

typedef struct LpS3Object
{
	const char *key;
	uint64_t	size;
	LpS3Timestamp last_modified;
	const char *etag;			/* as sent, quotes included; NULL if absent */
} LpS3Object;

typedef struct LpS3ListObjects
{
	LpS3Object *objects;		/* Contents, in the server's order */
	size_t		num_objects;
	const char **common_prefixes;	/* CommonPrefixes/Prefix */
	size_t		num_common_prefixes;
	bool		is_truncated;
	const char *next_continuation_token;	/* never NULL when truncated */
	bool		has_key_count;
	uint64_t	key_count;
} LpS3ListObjects;

typedef struct LpS3InitiateMultipart
{
	const char *bucket;
	const char *key;
	const char *upload_id;		/* never empty */
} LpS3InitiateMultipart;

typedef struct LpS3CompleteMultipart
{
	const char *location;		/* NULL if absent */
	const char *bucket;
	const char *key;
	const char *etag;
} LpS3CompleteMultipart;

/* CopyPartResult and CopyObjectResult */
typedef struct LpS3CopyResult
{
	const char *etag;
	bool		has_last_modified;
	LpS3Timestamp last_modified;
} LpS3CopyResult;

typedef struct LpS3Upload
{
	const char *key;
	const char *upload_id;		/* never empty */
	LpS3Timestamp initiated;
} LpS3Upload;

typedef struct LpS3ListUploads
{
	LpS3Upload *uploads;
	size_t		num_uploads;
	bool		is_truncated;
	const char *next_key_marker;	/* never NULL when truncated */
	const char *next_upload_id_marker;	/* NULL if absent */
} LpS3ListUploads;

/* One part of an upload in progress, as ListParts lists it. */
typedef struct LpS3ListedPart
{
	uint32_t	part_number;	/* 1..LP_S3_MAX_PARTS, rising through a page */
	uint64_t	size;
} LpS3ListedPart;

typedef struct LpS3ListParts
{
	LpS3ListedPart *parts;
	size_t		num_parts;
	bool		is_truncated;
	uint32_t	next_part_number_marker;	/* when truncated: 1..LP_S3_MAX_PARTS */
} LpS3ListParts;

typedef struct LpS3ErrorBody
{
	const char *code;			/* never empty */
	const char *message;
	const char *request_id;
	const char *host_id;
	const char *resource;
	const char *key;
	const char *bucket_name;
} LpS3ErrorBody;

/* One part of a multipart upload, as CompleteMultipartUpload lists it. */
typedef struct LpS3Part
{
	uint32_t	part_number;	/* 1..LP_S3_MAX_PARTS */
	const char *etag;
} LpS3Part;

typedef struct LpS3CompleteRequest
{
	LpS3Part   *parts;
	size_t		num_parts;
} LpS3CompleteRequest;

/*
 * A parsed document: kind tells which one it is, and the member of that
 * name is filled.  Every string points into memory the document owns.
 */
typedef struct LpS3Document
{
	LpS3DocumentKind kind;
	union
	{
		LpS3ErrorBody error;
		LpS3ListObjects list_objects;
		LpS3InitiateMultipart initiate;
		LpS3CompleteMultipart complete;
		LpS3CopyResult copy;	/* LP_S3_COPY_PART and LP_S3_COPY_OBJECT */
		LpS3ListUploads list_uploads;
		LpS3ListParts list_parts;
		LpS3CompleteRequest complete_request;
	};
	/* private: the text every string of the document points into */
	char	   *text;
} LpS3Document;

/*
 * Parse body (len bytes, not NUL-terminated) as a document of the expected
 * kind.  An Error document is accepted whatever is expected, since S3
 * answers some requests (CompleteMultipartUpload, UploadPartCopy) with
 * status 200 and an Error body: check (*document)->kind.  Any other root
 * element, a missing or malformed field, or malformed XML is LP_ERR_CORRUPT;
 * a listing of URL-encoded keys (encoding-type=url) is LP_ERR_UNSUPPORTED.
 * Free the result with lp_s3_xml_free.
 */
bool		lp_s3_xml_parse(const char *body, size_t len, LpS3DocumentKind expected,
							LpS3Document **document, LpError *err);

void		lp_s3_xml_free(LpS3Document *document);

/* The root element name of a kind ("ListBucketResult", ...). */
const char *lp_s3_xml_root_name(LpS3DocumentKind kind);

/*
 * The CompleteMultipartUpload request body for parts (1..LP_S3_MAX_PARTS of
 * them, part numbers strictly ascending, ETags escaped), lp_alloc'd and
 * NUL-terminated, with its length.  LP_ERR_INVALID_ARGUMENT for parts S3
 * would refuse or an ETag XML cannot carry.
 */
bool		lp_s3_xml_complete_request(const LpS3Part *parts, size_t num_parts,
									   char **body, size_t *len, LpError *err);

#endif							/* LP_S3_XML_H */
