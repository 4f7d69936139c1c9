/*
 * lp_schema.h - Lance schemas (lance.file.Field lists) as LpSchema values.
 *
 * Data files store their schema in global buffer 0 and manifests store the
 * dataset's; both are lists of lance.file.Field in pre-order.  The copy
 * checks names for UTF-8 and parents for order, and sorts metadata maps by
 * key, so schemas compare semantically whatever order a writer used.
 */
#ifndef LP_SCHEMA_H
#define LP_SCHEMA_H

#include <protobuf-c/protobuf-c.h>

#include "file.pb-c.h"
#include "lp_error.h"
#include "lp_file.h"

/* Room for "file \"<path>\"" style descriptions in messages. */
#define LP_SCHEMA_WHERE_LEN 1100

/* The layout protobuf-c gives every map<string, bytes> entry message. */
typedef struct LpProtoMapEntry
{
	ProtobufCMessage base;
	char	   *key;
	ProtobufCBinaryData value;
} LpProtoMapEntry;

/*
 * Copy fields and schema-level metadata into *schema (zeroed first).  where
 * names the container in messages, e.g. "file \"/x/y.lance\"".  On failure
 * whatever was copied is freed.
 */
bool		lp_schema_from_proto(const char *where,
								 Lance__File__Field *const *fields, size_t n_fields,
								 const LpProtoMapEntry *const *metadata,
								 size_t n_metadata,
								 LpSchema *schema, LpError *err);

void		lp_schema_free(LpSchema *schema);

/* Index of the field with this id, or -1. */
int64_t		lp_schema_find_field(const LpSchema *schema, int32_t id);

/* Metadata value for key, or NULL. */
const LpKeyValue *lp_metadata_find(const LpKeyValue *metadata, uint32_t count,
								   const char *key);

#endif							/* LP_SCHEMA_H */
