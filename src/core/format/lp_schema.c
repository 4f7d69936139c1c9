/*
 * lp_schema.c - copying protobuf schemas into LpSchema values, and comparing
 * them.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/lp_alloc.h"
#include "format/lp_schema_internal.h"
#include "table.pb-c.h"

/* Every map entry type handed to lp_schema_from_proto has LpProtoMapEntry's layout. */
#define LP_SAME_MAP_LAYOUT(type) \
	_Static_assert(offsetof(type, key) == offsetof(LpProtoMapEntry, key) && \
				   offsetof(type, value) == offsetof(LpProtoMapEntry, value) && \
				   sizeof(type) == sizeof(LpProtoMapEntry), #type " is not a map entry")
LP_SAME_MAP_LAYOUT(Lance__File__Schema__MetadataEntry);
LP_SAME_MAP_LAYOUT(Lance__File__Field__MetadataEntry);
LP_SAME_MAP_LAYOUT(Lance__Table__Manifest__SchemaMetadataEntry);

static bool
out_of_memory(const char *where, LpError *err)
{
	return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory copying the schema of %s", where);
}

/* Well-formed UTF-8 (RFC 3629: no overlong forms, surrogates or > U+10FFFF). */
static bool
valid_utf8(const char *text)
{
	const unsigned char *p = (const unsigned char *) text;

	while (*p)
	{
		unsigned char c = *p;
		int			extra;
		uint32_t	code;

		if (c < 0x80)
		{
			p++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf)
			extra = 1, code = c & 0x1f;
		else if (c >= 0xe0 && c <= 0xef)
			extra = 2, code = c & 0x0f;
		else if (c >= 0xf0 && c <= 0xf4)
			extra = 3, code = c & 0x07;
		else
			return false;
		p++;
		for (int i = 0; i < extra; i++, p++)
		{
			if ((*p & 0xc0) != 0x80)
				return false;
			code = (code << 6) | (*p & 0x3f);
		}
		if ((extra == 2 && (code < 0x800 || (code >= 0xd800 && code <= 0xdfff))) ||
			(extra == 3 && (code < 0x10000 || code > 0x10ffff)))
			return false;
	}
	return true;
}

/* One map entry on its way into a sorted LpKeyValue array. */
typedef struct KeyedEntry
{
	const char *key;
	const ProtobufCBinaryData *value;
	size_t		index;
} KeyedEntry;

static int
compare_keyed_entries(const void *a, const void *b)
{
	const KeyedEntry *x = a;
	const KeyedEntry *y = b;
	int			order = strcmp(x->key, y->key);

	if (order != 0)
		return order;
	return x->index < y->index ? -1 : x->index > y->index;
}

/*
 * Copy collected map entries into key/value pairs sorted by key, and free
 * the collection.  A key repeated on the wire keeps its last value, as
 * protobuf map semantics say.
 */
static bool
copy_metadata(const char *where, KeyedEntry *entries, size_t n_entries,
			  const char *owner, uint32_t *num_metadata, LpKeyValue **metadata,
			  LpError *err)
{
	bool		ok = true;
	uint32_t	count = 0;

	for (size_t i = 0; ok && i < n_entries; i++)
	{
		if (!valid_utf8(entries[i].key))
			ok = lp_fail(err, LP_ERR_CORRUPT,
						 "%s of %s has a metadata key that is not valid UTF-8",
						 owner, where);
	}
	if (ok)
	{
		*metadata = lp_alloc_array(n_entries, sizeof(LpKeyValue));
		if (*metadata == NULL)
			ok = out_of_memory(where, err);
	}
	if (ok)
		qsort(entries, n_entries, sizeof(KeyedEntry), compare_keyed_entries);
	for (size_t i = 0; ok && i < n_entries; i++)
	{
		LpKeyValue *pair;

		if (i + 1 < n_entries && strcmp(entries[i].key, entries[i + 1].key) == 0)
			continue;
		pair = &(*metadata)[count++];
		*num_metadata = count;
		pair->key = lp_strdup(entries[i].key);
		pair->value.len = entries[i].value->len;
		if (pair->key == NULL ||
			(pair->value.data = lp_memdup(entries[i].value->data,
										  entries[i].value->len)) == NULL)
			ok = out_of_memory(where, err);
	}
	lp_free(entries);
	return ok;
}

/* Room for n map entries, or NULL with err set; n = 0 gives a valid pointer. */
static KeyedEntry *
alloc_keyed_entries(const char *where, size_t n_entries, const char *owner,
					LpError *err)
{
	KeyedEntry *entries;

	if (n_entries > UINT32_MAX)
	{
		lp_fail(err, LP_ERR_CORRUPT,
				"%s of %s has too many metadata entries",
				owner, where);
		return NULL;
	}
	entries = lp_alloc_array(n_entries, sizeof(KeyedEntry));
	if (entries == NULL)
		out_of_memory(where, err);
	return entries;
}

typedef struct FieldPosition
{
	int32_t		id;
	uint32_t	index;
} FieldPosition;

static int
compare_field_positions(const void *a, const void *b)
{
	const FieldPosition *x = a;
	const FieldPosition *y = b;

	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

/*
 * Every parent id must be -1 or the id of an earlier field (pre-order).  The
 * id -1 also marks the blob v2 pseudo-fields (§6.5), which are top level.
 */
static bool
check_parents(const char *where, const LpSchema *schema, LpError *err)
{
	FieldPosition *positions;
	bool		ok = true;

	if (schema->num_fields == 0)
		return true;
	positions = lp_alloc_array(schema->num_fields, sizeof(FieldPosition));
	if (positions == NULL)
		return out_of_memory(where, err);
	for (uint32_t i = 0; i < schema->num_fields; i++)
	{
		positions[i].id = schema->fields[i].id;
		positions[i].index = i;
	}
	qsort(positions, schema->num_fields, sizeof(FieldPosition),
		  compare_field_positions);
	for (uint32_t i = 0; i < schema->num_fields && ok; i++)
	{
		const LpField *field = &schema->fields[i];
		FieldPosition key = {field->parent_id, 0};
		const FieldPosition *first;
		size_t		low = 0;
		size_t		high = schema->num_fields;

		if (field->parent_id == -1)
			continue;
		/* lower bound: the first field with this id */
		while (low < high)
		{
			size_t		middle = low + (high - low) / 2;

			if (compare_field_positions(&positions[middle], &key) < 0)
				low = middle + 1;
			else
				high = middle;
		}
		first = low < schema->num_fields ? &positions[low] : NULL;
		if (first == NULL || first->id != field->parent_id || first->index >= i)
		{
			lp_fail(err, LP_ERR_CORRUPT,
					"field %u of the schema of %s has a parent that is not an earlier field",
					i, where);
			lp_error_detail(err, "Field id %d names parent id %d; fields must be stored parents first.",
							field->id, field->parent_id);
			ok = false;
		}
	}
	lp_free(positions);
	return ok;
}

static bool
copy_field(const char *where, uint32_t index, const Lance__File__Field *source,
		   LpField *field, LpError *err)
{
	char		owner[64];
	KeyedEntry *entries;

	if (!valid_utf8(source->name) || !valid_utf8(source->logical_type) ||
		!valid_utf8(source->extension_name))
		return lp_fail(err, LP_ERR_CORRUPT,
					   "field %u of the schema of %s has a name or type that is not valid UTF-8",
					   index, where);
	field->id = source->id;
	field->parent_id = source->parent_id;
	field->nullable = source->nullable;
	field->legacy_encoding = source->encoding;
	field->unenforced_primary_key = source->unenforced_primary_key;
	field->name = lp_strdup(source->name);
	field->logical_type = lp_strdup(source->logical_type);
	field->extension_name = lp_strdup(source->extension_name);
	if (field->name == NULL || field->logical_type == NULL ||
		field->extension_name == NULL)
		return out_of_memory(where, err);
	if (source->n_metadata == 0)
		return true;
	snprintf(owner, sizeof(owner), "field %u of the schema", index);
	entries = alloc_keyed_entries(where, source->n_metadata, owner, err);
	if (entries == NULL)
		return false;
	for (size_t i = 0; i < source->n_metadata; i++)
	{
		entries[i].key = source->metadata[i]->key;
		entries[i].value = &source->metadata[i]->value;
		entries[i].index = i;
	}
	return copy_metadata(where, entries, source->n_metadata, owner,
						 &field->num_metadata, &field->metadata, err);
}

static void
free_metadata(uint32_t num_metadata, LpKeyValue *metadata)
{
	if (metadata == NULL)
		return;
	for (uint32_t i = 0; i < num_metadata; i++)
	{
		lp_free(metadata[i].key);
		lp_free(metadata[i].value.data);
	}
	lp_free(metadata);
}

void
lp_schema_free(LpSchema *schema)
{
	if (schema->fields != NULL)
	{
		for (uint32_t i = 0; i < schema->num_fields; i++)
		{
			LpField    *field = &schema->fields[i];

			lp_free(field->name);
			lp_free(field->logical_type);
			lp_free(field->extension_name);
			free_metadata(field->num_metadata, field->metadata);
		}
		lp_free(schema->fields);
	}
	free_metadata(schema->num_metadata, schema->metadata);
	memset(schema, 0, sizeof(*schema));
}

bool
lp_schema_from_proto(const char *where, Lance__File__Field *const *fields,
					 size_t n_fields, const LpProtoMapEntry *const *metadata,
					 size_t n_metadata, LpSchema *schema, LpError *err)
{
	bool		ok = true;

	memset(schema, 0, sizeof(*schema));
	if (n_fields > UINT32_MAX)
		return lp_fail(err, LP_ERR_CORRUPT, "schema of %s has too many fields", where);
	if (n_fields > 0)
	{
		schema->fields = lp_alloc_array(n_fields, sizeof(LpField));
		if (schema->fields == NULL)
			return out_of_memory(where, err);
		memset(schema->fields, 0, n_fields * sizeof(LpField));
		schema->num_fields = (uint32_t) n_fields;
	}
	for (uint32_t i = 0; ok && i < schema->num_fields; i++)
		ok = copy_field(where, i, fields[i], &schema->fields[i], err);
	if (ok && n_metadata > 0)
	{
		KeyedEntry *entries = alloc_keyed_entries(where, n_metadata, "the schema", err);

		ok = entries != NULL;
		for (size_t i = 0; ok && i < n_metadata; i++)
		{
			entries[i].key = metadata[i]->key;
			entries[i].value = &metadata[i]->value;
			entries[i].index = i;
		}
		ok = ok && copy_metadata(where, entries, n_metadata, "the schema",
								 &schema->num_metadata, &schema->metadata, err);
	}
	ok = ok && check_parents(where, schema, err);
	if (!ok)
		lp_schema_free(schema);
	return ok;
}

/* Absent and empty strings are the same thing in proto3. */
static bool
text_equal(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "") == 0;
}

/* Metadata maps, compared as sets (both are sorted by key). */
static bool
metadata_equal(const LpKeyValue *a, uint32_t num_a,
			   const LpKeyValue *b, uint32_t num_b)
{
	if (num_a != num_b)
		return false;
	for (uint32_t i = 0; i < num_a; i++)
	{
		if (!text_equal(a[i].key, b[i].key) || !lp_bytes_equal(&a[i].value, &b[i].value))
			return false;
	}
	return true;
}

static bool
field_equal(const LpField *a, const LpField *b)
{
	return a->id == b->id &&
		a->parent_id == b->parent_id &&
		text_equal(a->name, b->name) &&
		text_equal(a->logical_type, b->logical_type) &&
		a->nullable == b->nullable &&
		a->legacy_encoding == b->legacy_encoding &&
		text_equal(a->extension_name, b->extension_name) &&
		a->unenforced_primary_key == b->unenforced_primary_key &&
		metadata_equal(a->metadata, a->num_metadata, b->metadata, b->num_metadata);
}

bool
lp_schema_equal(const LpSchema *a, const LpSchema *b)
{
	if (a->num_fields != b->num_fields ||
		!metadata_equal(a->metadata, a->num_metadata, b->metadata, b->num_metadata))
		return false;
	for (uint32_t i = 0; i < a->num_fields; i++)
	{
		if (!field_equal(&a->fields[i], &b->fields[i]))
			return false;
	}
	return true;
}

int64_t
lp_schema_find_field(const LpSchema *schema, int32_t id)
{
	for (uint32_t i = 0; i < schema->num_fields; i++)
		if (schema->fields[i].id == id)
			return i;
	return -1;
}

const LpKeyValue *
lp_metadata_find(const LpKeyValue *metadata, uint32_t count, const char *key)
{
	for (uint32_t i = 0; i < count; i++)
		if (strcmp(metadata[i].key, key) == 0)
			return &metadata[i];
	return NULL;
}

LpSchemaSelectResult
lp_schema_select(const LpSchema *full, const char *const *names, size_t n_names,
				 LpSchema *selected, size_t *bad)
{
	size_t		n_slots = full->num_fields > 0 ? full->num_fields : 1;
	bool	   *keep = lp_alloc_array(n_slots, sizeof(bool));
	int32_t    *kept_ids = lp_alloc_array(n_slots, sizeof(int32_t));
	LpField    *fields = NULL;
	size_t		num_kept = 0;
	uint32_t	n = 0;
	LpSchemaSelectResult result = LP_SCHEMA_SELECT_OK;

	if (keep == NULL || kept_ids == NULL)
	{
		result = LP_SCHEMA_SELECT_NO_MEMORY;
		goto done;
	}
	memset(keep, 0, sizeof(bool) * n_slots);
	for (size_t k = 0; k < n_names; k++)
	{
		bool		found = false;

		for (uint32_t i = 0; i < full->num_fields; i++)
		{
			if (full->fields[i].parent_id != -1 || strcmp(full->fields[i].name, names[k]) != 0)
				continue;
			if (keep[i])
			{
				*bad = k;
				result = LP_SCHEMA_SELECT_DUPLICATE;
				goto done;
			}
			keep[i] = true;
			found = true;
		}
		if (!found)
		{
			*bad = k;
			result = LP_SCHEMA_SELECT_UNKNOWN;
			goto done;
		}
	}

	/* pre-order: a child follows its parent, so one pass finds descendants */
	for (uint32_t i = 0; i < full->num_fields; i++)
	{
		for (size_t k = 0; !keep[i] && k < num_kept; k++)
			keep[i] = full->fields[i].parent_id == kept_ids[k];
		if (keep[i])
			kept_ids[num_kept++] = full->fields[i].id;
	}
	fields = lp_alloc_array(num_kept > 0 ? num_kept : 1, sizeof(LpField));
	if (fields == NULL)
	{
		result = LP_SCHEMA_SELECT_NO_MEMORY;
		goto done;
	}
	for (uint32_t i = 0; i < full->num_fields; i++)
		if (keep[i])
			fields[n++] = full->fields[i];
	*selected = *full;
	selected->fields = fields;
	selected->num_fields = n;

done:
	lp_free(keep);
	lp_free(kept_ids);
	return result;
}

bool
lp_schema_subtree(const LpSchema *schema, uint32_t index, int32_t **ids, size_t *n_ids)
{
	int32_t    *result = lp_alloc_array(schema->num_fields - index, sizeof(int32_t));
	size_t		n = 0;

	if (result == NULL)
		return false;
	result[n++] = schema->fields[index].id;
	/* pre-order: descendants follow their parent */
	for (uint32_t i = index + 1; i < schema->num_fields; i++)
		for (size_t k = 0; k < n; k++)
			if (schema->fields[i].parent_id == result[k])
			{
				result[n++] = schema->fields[i].id;
				break;
			}
	*ids = result;
	*n_ids = n;
	return true;
}

int64_t
lp_schema_top_field(const LpSchema *schema, const char *name)
{
	for (uint32_t i = 0; i < schema->num_fields; i++)
		if (schema->fields[i].parent_id == -1 && strcmp(schema->fields[i].name, name) == 0)
			return i;
	return -1;
}
