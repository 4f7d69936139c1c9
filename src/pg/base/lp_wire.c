/*
 * lp_wire.c - values through shared memory for parallel workers (see
 * lp_wire.h).  Leader and workers run the same build, so integers travel
 * in the machine's own byte order.
 */
#include "postgres.h"

#include "base/lp_wire.h"

void
lp_wire_put_bytes(StringInfo buf, const void *data, uint32 len)
{
	appendBinaryStringInfo(buf, (const char *) &len, sizeof(len));
	if (len > 0)
		appendBinaryStringInfo(buf, data, (int) len);
}

void
lp_wire_put_string(StringInfo buf, const char *s)
{
	uint32		none = PG_UINT32_MAX;

	if (s == NULL)
		appendBinaryStringInfo(buf, (const char *) &none, sizeof(none));
	else
		lp_wire_put_bytes(buf, s, (uint32) strlen(s));
}

void
lp_wire_put_u64(StringInfo buf, uint64 value)
{
	appendBinaryStringInfo(buf, (const char *) &value, sizeof(value));
}

static void
put_metadata(StringInfo buf, const LpKeyValue *metadata, uint32 count)
{
	appendBinaryStringInfo(buf, (const char *) &count, sizeof(count));
	for (uint32 i = 0; i < count; i++)
	{
		lp_wire_put_string(buf, metadata[i].key);
		lp_wire_put_bytes(buf, metadata[i].value.data, (uint32) metadata[i].value.len);
	}
}

void
lp_wire_put_schema(StringInfo buf, const LpSchema *schema)
{
	appendBinaryStringInfo(buf, (const char *) &schema->num_fields, sizeof(uint32));
	for (uint32 i = 0; i < schema->num_fields; i++)
	{
		const LpField *field = &schema->fields[i];
		uint8		flags = (field->nullable ? 1 : 0) | (field->unenforced_primary_key ? 2 : 0);

		appendBinaryStringInfo(buf, (const char *) &field->id, sizeof(int32));
		appendBinaryStringInfo(buf, (const char *) &field->parent_id, sizeof(int32));
		appendBinaryStringInfo(buf, (const char *) &field->legacy_encoding, sizeof(int32));
		appendBinaryStringInfo(buf, (const char *) &flags, sizeof(flags));
		lp_wire_put_string(buf, field->name);
		lp_wire_put_string(buf, field->logical_type);
		lp_wire_put_string(buf, field->extension_name);
		put_metadata(buf, field->metadata, field->num_metadata);
	}
	put_metadata(buf, schema->metadata, schema->num_metadata);
}

const char *
lp_wire_take(LpWireReader *reader, Size len)
{
	const char *at = reader->data + reader->pos;

	if (len > reader->len - reader->pos)
		elog(ERROR, "message for a lance_parts parallel worker ends early (%zu of %zu bytes)",
			 reader->pos + len, reader->len);
	reader->pos += len;
	return at;
}

uint32
lp_wire_take_u32(LpWireReader *reader)
{
	uint32		value;

	memcpy(&value, lp_wire_take(reader, sizeof(value)), sizeof(value));
	return value;
}

uint64
lp_wire_take_u64(LpWireReader *reader)
{
	uint64		value;

	memcpy(&value, lp_wire_take(reader, sizeof(value)), sizeof(value));
	return value;
}

const char *
lp_wire_take_bytes(LpWireReader *reader, uint32 *len)
{
	*len = lp_wire_take_u32(reader);
	return lp_wire_take(reader, *len);
}

char *
lp_wire_take_string(LpWireReader *reader)
{
	uint32		len = lp_wire_take_u32(reader);

	if (len == PG_UINT32_MAX)
		return NULL;
	return pnstrdup(lp_wire_take(reader, len), len);
}

static LpKeyValue *
take_metadata(LpWireReader *reader, uint32 *count)
{
	LpKeyValue *metadata;

	*count = lp_wire_take_u32(reader);
	metadata = palloc0(sizeof(LpKeyValue) * Max(*count, 1));
	for (uint32 i = 0; i < *count; i++)
	{
		uint32		len;

		metadata[i].key = lp_wire_take_string(reader);
		len = lp_wire_take_u32(reader);
		metadata[i].value.len = len;
		metadata[i].value.data = len > 0 ?
			(uint8_t *) pnstrdup(lp_wire_take(reader, len), len) : NULL;
	}
	return metadata;
}

void
lp_wire_take_schema(LpWireReader *reader, LpSchema *schema)
{
	memset(schema, 0, sizeof(*schema));
	schema->num_fields = lp_wire_take_u32(reader);
	schema->fields = palloc0(sizeof(LpField) * Max(schema->num_fields, 1));
	for (uint32 i = 0; i < schema->num_fields; i++)
	{
		LpField    *field = &schema->fields[i];
		uint8		flags;

		memcpy(&field->id, lp_wire_take(reader, sizeof(int32)), sizeof(int32));
		memcpy(&field->parent_id, lp_wire_take(reader, sizeof(int32)), sizeof(int32));
		memcpy(&field->legacy_encoding, lp_wire_take(reader, sizeof(int32)), sizeof(int32));
		memcpy(&flags, lp_wire_take(reader, sizeof(flags)), sizeof(flags));
		field->nullable = (flags & 1) != 0;
		field->unenforced_primary_key = (flags & 2) != 0;
		field->name = lp_wire_take_string(reader);
		field->logical_type = lp_wire_take_string(reader);
		field->extension_name = lp_wire_take_string(reader);
		field->metadata = take_metadata(reader, &field->num_metadata);
	}
	schema->metadata = take_metadata(reader, &schema->num_metadata);
}
