/*
 * lp_schema_internal.h - building LpSchema values from the protobuf-c schema
 * messages of data files and manifests (core files only).
 */
#ifndef LP_SCHEMA_INTERNAL_H
#define LP_SCHEMA_INTERNAL_H

#include <protobuf-c/protobuf-c.h>

#include "file.pb-c.h"
#include "format/lp_schema.h"

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

#endif							/* LP_SCHEMA_INTERNAL_H */
