/*
 * lp_columns.c - the physical columns a schema implies (lance-format.md §3.1).
 */
#include "format/lp_columns.h"

#include <string.h>
#include <strings.h>

#include "base/lp_alloc.h"

#define LP_BLOB_KEY "lance-encoding:blob"
#define LP_PACKED_KEY "lance-encoding:packed"
#define LP_LEGACY_PACKED_KEY "packed"
#define LP_EXTENSION_KEY "ARROW:extension:name"

/* What a field inherits from its ancestors. */
typedef struct FieldPlace
{
	int32_t		parent;			/* index into fields, -1 at the top */
	bool		has_children;
	bool		under_collapsed;	/* an ancestor is packed or a blob */
	bool		under_list;
} FieldPlace;

const LpKeyValue *
lp_field_metadata(const LpField *field, const char *key)
{
	return lp_metadata_find(field->metadata, field->num_metadata, key);
}

static bool
value_equals(const LpKeyValue *entry, const char *text, bool ignore_case)
{
	size_t		len = strlen(text);

	if (entry == NULL || entry->value.len != len)
		return false;
	if (ignore_case)
		return strncasecmp((const char *) entry->value.data, text, len) == 0;
	return memcmp(entry->value.data, text, len) == 0;
}

bool
lp_field_is_blob(const LpField *field)
{
	return lp_field_metadata(field, LP_BLOB_KEY) != NULL ||
		value_equals(lp_field_metadata(field, LP_EXTENSION_KEY),
					 LP_BLOB_V2_EXTENSION, false) ||
		(field->extension_name != NULL &&
		 strcmp(field->extension_name, LP_BLOB_V2_EXTENSION) == 0);
}

bool
lp_field_is_blob_v2(const LpField *field)
{
	if ((field->extension_name != NULL &&
		 strcmp(field->extension_name, LP_BLOB_V2_EXTENSION) == 0) ||
		value_equals(lp_field_metadata(field, LP_EXTENSION_KEY), LP_BLOB_V2_EXTENSION, false))
		return true;
	return field->logical_type != NULL && strcmp(field->logical_type, "struct") == 0 &&
		value_equals(lp_field_metadata(field, LP_BLOB_KEY), "true", true);
}

bool
lp_field_is_packed(const LpField *field)
{
	return value_equals(lp_field_metadata(field, LP_PACKED_KEY), "true", true) ||
		value_equals(lp_field_metadata(field, LP_LEGACY_PACKED_KEY), "true", true);
}

static bool
is_list_type(const char *logical_type)
{
	return strcmp(logical_type, "list") == 0 ||
		strcmp(logical_type, "large_list") == 0 ||
		strncmp(logical_type, "list.", 5) == 0 ||
		strncmp(logical_type, "large_list.", 11) == 0;
}

/* A field stored as one column whatever its children. */
static bool
is_collapsed(const LpField *field)
{
	return lp_field_is_packed(field) || lp_field_is_blob(field);
}

/*
 * Resolve every field's parent.  Fields are in pre-order, so the parent is
 * on the stack of open ancestors; anything else is a damaged schema.  A
 * field without an id (the blob v2 pseudo-fields of a file footer,
 * lance-format.md §6.5) is nobody's parent.
 */
static bool
place_fields(const LpSchema *schema, FieldPlace *places, LpError *err)
{
	uint32_t   *open;
	uint32_t	depth = 0;

	if (schema->num_fields == 0)
		return true;
	open = lp_alloc_array(schema->num_fields, sizeof(uint32_t));
	if (open == NULL)
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");

	for (uint32_t i = 0; i < schema->num_fields; i++)
	{
		const LpField *field = &schema->fields[i];
		FieldPlace *place = &places[i];

		if (field->parent_id == -1)
			depth = 0;
		while (depth > 0 && schema->fields[open[depth - 1]].id != field->parent_id)
			depth--;
		if (depth == 0 && field->parent_id != -1)
		{
			lp_free(open);
			return lp_fail(err, LP_ERR_CORRUPT,
						   "schema field \"%s\" (id %d) has parent id %d, which is not an enclosing field before it",
						   field->name, field->id, field->parent_id);
		}
		memset(place, 0, sizeof(*place));
		place->parent = depth > 0 ? (int32_t) open[depth - 1] : -1;
		if (place->parent >= 0)
		{
			const LpField *parent = &schema->fields[place->parent];
			FieldPlace *parent_place = &places[place->parent];

			parent_place->has_children = true;
			place->under_collapsed = parent_place->under_collapsed ||
				is_collapsed(parent);
			place->under_list = parent_place->under_list ||
				is_list_type(parent->logical_type);
		}
		if (field->id >= 0)
			open[depth++] = i;
	}
	lp_free(open);
	return true;
}

/* Pseudo-fields without an id own no column (their data is the blob's). */
static bool
owns_column(LpFileVersion version, const LpField *field, const FieldPlace *place)
{
	if (field->id < 0 || place->under_collapsed)
		return false;
	if (version == LP_FILE_VERSION_2_0)
		return true;
	return !place->has_children || is_collapsed(field);
}

static bool
is_bytes_type(const char *logical_type)
{
	return strcmp(logical_type, "string") == 0 ||
		strcmp(logical_type, "large_string") == 0 ||
		strcmp(logical_type, "binary") == 0 ||
		strcmp(logical_type, "large_binary") == 0;
}

/*
 * A 2.0 string or binary field written by Lance 0.13 or earlier is a list of
 * u8 (an offsets column with List pages, then the bytes column), which the
 * schema cannot tell; the first page of the field's column can.
 */
bool
lp_file_column_stores_bytes_as_list(const LpFile *file, uint32_t column)
{
	const LpColumn *col;

	if (file->version != LP_FILE_VERSION_2_0 || column + 1 >= file->num_columns)
		return false;
	col = &file->columns[column];
	return col->num_pages > 0 && col->pages[0].layout != NULL &&
		strcmp(col->pages[0].layout, "list") == 0;
}

static bool
stores_bytes_as_list(const LpFile *file, const LpField *field, uint32_t column)
{
	return file != NULL && is_bytes_type(field->logical_type) &&
		lp_file_column_stores_bytes_as_list(file, column);
}

static bool
physical_columns(LpFileVersion version, const LpSchema *schema, const LpFile *file,
				 LpPhysicalColumn **columns, uint32_t *num_columns, LpError *err)
{
	FieldPlace *places;
	LpPhysicalColumn *result;
	uint32_t	count = 0;

	*columns = NULL;
	*num_columns = 0;
	if (schema->num_fields == 0)
		return true;
	places = lp_alloc_array(schema->num_fields, sizeof(FieldPlace));
	if (places == NULL)
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
	if (!place_fields(schema, places, err))
	{
		lp_free(places);
		return false;
	}

	/* Each field owns at most two columns (a string as a list of u8). */
	result = lp_alloc_array((size_t) schema->num_fields * 2, sizeof(LpPhysicalColumn));
	if (result == NULL)
	{
		lp_free(places);
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
	}
	for (uint32_t i = 0; i < schema->num_fields; i++)
	{
		const LpField *field = &schema->fields[i];
		LpPhysicalColumn *column;

		if (!owns_column(version, field, &places[i]))
			continue;
		column = &result[count++];
		column->field_index = i;
		column->struct_header = version == LP_FILE_VERSION_2_0 &&
			strcmp(field->logical_type, "struct") == 0 &&
			!is_collapsed(field);
		column->counts_items = version == LP_FILE_VERSION_2_0 &&
			places[i].under_list;
		if (stores_bytes_as_list(file, field, count - 1))
		{
			column->bytes_as_list = true;
			result[count] = *column;
			result[count].bytes_as_list = false;
			result[count].bytes_items = true;
			result[count].counts_items = true;
			count++;
		}
	}
	lp_free(places);
	*columns = result;
	*num_columns = count;
	return true;
}

bool
lp_schema_physical_columns(LpFileVersion version, const LpSchema *schema,
						   LpPhysicalColumn **columns, uint32_t *num_columns,
						   LpError *err)
{
	return physical_columns(version, schema, NULL, columns, num_columns, err);
}

bool
lp_file_physical_columns(const LpFile *file, LpPhysicalColumn **columns,
						 uint32_t *num_columns, LpError *err)
{
	return physical_columns(file->version, &file->schema, file, columns, num_columns, err);
}

bool
lp_field_first_column(const LpFile *file, uint32_t field_index, uint32_t *column,
					  LpError *err)
{
	LpPhysicalColumn *columns;
	uint32_t	num_columns;
	bool		found = false;

	if (field_index >= file->schema.num_fields)
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT, "file \"%s\" has no field number %u",
					   file->name, field_index);
	if (!lp_file_physical_columns(file, &columns, &num_columns, err))
		return false;
	/* The field itself, or (2.1+ parents) its first descendant leaf. */
	for (uint32_t c = 0; c < num_columns && !found; c++)
	{
		if (columns[c].field_index >= field_index)
		{
			*column = c;
			found = true;
		}
	}
	lp_free(columns);
	if (!found)
		return lp_fail(err, LP_ERR_CORRUPT, "field \"%s\" of file \"%s\" has no column",
					   file->schema.fields[field_index].name, file->name);
	return true;
}
