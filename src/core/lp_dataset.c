/*
 * lp_dataset.c - layout of a Lance dataset directory.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "lp_alloc.h"
#include "lp_dataset.h"

#define V2_STEM_DIGITS 20
#define MANIFEST_SUFFIX ".manifest"

bool
lp_manifest_name_parse(const char *entry_name, uint64_t *version,
					   LpManifestNaming *naming)
{
	size_t		len = strlen(entry_name);
	size_t		suffix_len = strlen(MANIFEST_SUFFIX);
	size_t		digits;
	uint64_t	value = 0;

	if (len <= suffix_len ||
		strcmp(entry_name + len - suffix_len, MANIFEST_SUFFIX) != 0)
		return false;
	digits = len - suffix_len;
	for (size_t i = 0; i < digits; i++)
	{
		unsigned	digit;

		if (entry_name[i] < '0' || entry_name[i] > '9')
			return false;
		digit = (unsigned) (entry_name[i] - '0');
		if (value > (UINT64_MAX - digit) / 10)
			return false;
		value = value * 10 + digit;
	}

	/* Lance tells the schemes apart by the length of the stem alone. */
	if (digits == V2_STEM_DIGITS)
	{
		*naming = LP_NAMING_V2;
		*version = UINT64_MAX - value;
	}
	else
	{
		*naming = LP_NAMING_V1;
		*version = value;
	}
	return true;
}

void
lp_manifest_name(LpManifestNaming naming, uint64_t version,
				 char name[LP_MANIFEST_NAME_SIZE])
{
	if (naming == LP_NAMING_V2)
		snprintf(name, LP_MANIFEST_NAME_SIZE, "%020" PRIu64 MANIFEST_SUFFIX,
				 UINT64_MAX - version);
	else
		snprintf(name, LP_MANIFEST_NAME_SIZE, "%" PRIu64 MANIFEST_SUFFIX, version);
}

char *
lp_path_join(const char *a, const char *b)
{
	size_t		a_len = strlen(a);
	size_t		b_len;
	char	   *result;

	while (a_len > 0 && a[a_len - 1] == '/')
		a_len--;
	while (*b == '/')
		b++;
	b_len = strlen(b);
	result = lp_alloc(a_len + 1 + b_len + 1);
	if (result == NULL)
		return NULL;
	memcpy(result, a, a_len);
	result[a_len] = '/';
	memcpy(result + a_len + 1, b, b_len + 1);
	return result;
}

typedef struct LatestScan
{
	const char *directory;
	bool		found;
	uint64_t	version;
	LpManifestNaming naming;
	bool		seen_v1;
	bool		seen_v2;
} LatestScan;

static bool
scan_entry(void *arg, const char *entry_name, LpError *err)
{
	LatestScan *scan = arg;
	uint64_t	version;
	LpManifestNaming naming;

	if (!lp_manifest_name_parse(entry_name, &version, &naming))
		return true;
	if (naming == LP_NAMING_V1)
		scan->seen_v1 = true;
	else
		scan->seen_v2 = true;
	if (scan->seen_v1 && scan->seen_v2)
		return lp_fail(err, LP_ERR_CORRUPT,
					   "directory \"%s\" mixes both manifest naming schemes",
					   scan->directory);
	if (!scan->found || version > scan->version)
	{
		scan->found = true;
		scan->version = version;
		scan->naming = naming;
	}
	return true;
}

bool
lp_dataset_latest_version(LpStore *store, const char *root, uint64_t *version,
						  LpManifestNaming *naming, LpError *err)
{
	char	   *directory = lp_path_join(root, LP_VERSIONS_DIR);
	LatestScan	scan;
	bool		ok;

	if (directory == NULL)
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
	memset(&scan, 0, sizeof(scan));
	scan.directory = directory;
	ok = store->ops->list(store, directory, scan_entry, &scan, err);
	if (ok && !scan.found)
		ok = lp_fail(err, LP_ERR_NOT_FOUND,
					 "no Lance manifest found in \"%s\"", directory);
	lp_free(directory);
	if (!ok)
		return false;
	*version = scan.version;
	*naming = scan.naming;
	return true;
}

/* Read a whole file of the store into memory. */
static bool
read_store_file(LpStore *store, const char *path, uint64_t max_size,
				uint8_t **data, size_t *len, LpError *err)
{
	LpInput    *input = store->ops->open_input(store, path, err);
	uint8_t    *buffer;

	if (input == NULL)
		return false;
	if (input->size > max_size)
	{
		lp_input_close(input);
		return lp_fail(err, LP_ERR_UNSUPPORTED, "file \"%s\" is too large (%llu bytes)",
					   path, (unsigned long long) input->size);
	}
	buffer = lp_alloc(input->size > 0 ? input->size : 1);
	if (buffer == NULL)
	{
		lp_input_close(input);
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory reading \"%s\"", path);
	}
	if (!lp_input_read(input, 0, buffer, input->size, err))
	{
		lp_free(buffer);
		lp_input_close(input);
		return false;
	}
	*data = buffer;
	*len = input->size;
	lp_input_close(input);
	return true;
}

LpManifest *
lp_dataset_read_manifest(LpStore *store, const char *root,
						 LpManifestNaming naming, uint64_t version, LpError *err)
{
	char		name[LP_MANIFEST_NAME_SIZE];
	char	   *directory;
	char	   *path;
	LpInput    *input;
	LpManifest *manifest = NULL;

	lp_manifest_name(naming, version, name);
	directory = lp_path_join(root, LP_VERSIONS_DIR);
	path = directory ? lp_path_join(directory, name) : NULL;
	lp_free(directory);
	if (path == NULL)
	{
		lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
		return NULL;
	}
	input = store->ops->open_input(store, path, err);
	if (input != NULL)
	{
		manifest = lp_manifest_read(input, err);
		lp_input_close(input);
	}
	if (manifest != NULL && manifest->proto->version != version)
	{
		lp_fail(err, LP_ERR_CORRUPT,
				"manifest file \"%s\" holds version %llu", path,
				(unsigned long long) manifest->proto->version);
		lp_manifest_free(manifest);
		manifest = NULL;
	}
	lp_free(path);
	return manifest;
}

LpManifest *
lp_dataset_read_latest(LpStore *store, const char *root,
					   LpManifestNaming *naming, LpError *err)
{
	uint64_t	version;

	if (!lp_dataset_latest_version(store, root, &version, naming, err))
		return NULL;
	return lp_dataset_read_manifest(store, root, *naming, version, err);
}

bool
lp_dataset_read_transaction(LpStore *store, const char *root,
							const LpManifest *manifest, uint8_t **data,
							size_t *len, LpError *err)
{
	const char *file_name = manifest->proto->transaction_file;
	char	   *directory;
	char	   *path;
	bool		ok;

	if (manifest->transaction != NULL)
	{
		*data = lp_alloc(manifest->transaction_len > 0 ? manifest->transaction_len : 1);
		if (*data == NULL)
			return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
		memcpy(*data, manifest->transaction, manifest->transaction_len);
		*len = manifest->transaction_len;
		return true;
	}
	if (file_name == NULL || file_name[0] == '\0')
		return lp_fail(err, LP_ERR_UNSUPPORTED,
					   "version %llu of dataset \"%s\" records no transaction",
					   (unsigned long long) manifest->proto->version, root);
	if (strchr(file_name, '/') != NULL || strcmp(file_name, "..") == 0)
		return lp_fail(err, LP_ERR_CORRUPT,
					   "manifest file \"%s\" names an invalid transaction file \"%s\"",
					   manifest->name, file_name);
	directory = lp_path_join(root, LP_TRANSACTIONS_DIR);
	path = directory ? lp_path_join(directory, file_name) : NULL;
	lp_free(directory);
	if (path == NULL)
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
	ok = read_store_file(store, path, LP_MANIFEST_MAX_SIZE, data, len, err);
	lp_free(path);
	return ok;
}

void
lp_uuid_v4(uint8_t bytes[16])
{
	bytes[6] = (bytes[6] & 0x0f) | 0x40;
	bytes[8] = (bytes[8] & 0x3f) | 0x80;
}

void
lp_uuid_format(const uint8_t bytes[16], char out[LP_UUID_STRING_SIZE])
{
	static const char hex[] = "0123456789abcdef";
	int			pos = 0;

	for (int i = 0; i < 16; i++)
	{
		if (i == 4 || i == 6 || i == 8 || i == 10)
			out[pos++] = '-';
		out[pos++] = hex[bytes[i] >> 4];
		out[pos++] = hex[bytes[i] & 0x0f];
	}
	out[pos] = '\0';
}

void
lp_data_file_name(const uint8_t uuid[16], char out[LP_DATA_FILE_NAME_SIZE])
{
	static const char hex[] = "0123456789abcdef";
	int			pos = 0;

	for (int i = 0; i < 3; i++)
		for (int bit = 7; bit >= 0; bit--)
			out[pos++] = (uuid[i] >> bit) & 1 ? '1' : '0';
	for (int i = 3; i < 16; i++)
	{
		out[pos++] = hex[uuid[i] >> 4];
		out[pos++] = hex[uuid[i] & 0x0f];
	}
	memcpy(out + pos, ".lance", sizeof(".lance"));
}

bool
lp_generate_data_file_name(LpRandomFunction random, void *random_arg,
						   char out[LP_DATA_FILE_NAME_SIZE], LpError *err)
{
	uint8_t		uuid[16];

	if (!random(random_arg, uuid, sizeof(uuid), err))
		return false;
	lp_uuid_v4(uuid);
	lp_data_file_name(uuid, out);
	return true;
}

char *
lp_blob_sidecar_dir(const char *data_file_name)
{
	size_t		len = strlen(data_file_name);
	size_t		suffix_len = strlen(".lance");
	char	   *stem;

	if (len <= suffix_len || strcmp(data_file_name + len - suffix_len, ".lance") != 0)
		return NULL;
	stem = lp_alloc(len - suffix_len + 1);
	if (stem == NULL)
		return NULL;
	memcpy(stem, data_file_name, len - suffix_len);
	stem[len - suffix_len] = '\0';
	return stem;
}

void
lp_blob_sidecar_file_name(uint32_t blob_id, char out[LP_BLOB_FILE_NAME_SIZE])
{
	/* The id's bits reversed and printed MSB first = the id's bits LSB first. */
	for (int bit = 0; bit < 32; bit++)
		out[bit] = (blob_id >> bit) & 1 ? '1' : '0';
	memcpy(out + 32, ".blob", sizeof(".blob"));
}

static bool
metadata_is_true(const Lance__File__Field *field, const char *key)
{
	for (size_t i = 0; i < field->n_metadata; i++)
	{
		const Lance__File__Field__MetadataEntry *entry = field->metadata[i];

		if (strcmp(entry->key, key) == 0)
			return entry->value.len == 4 &&
				strncasecmp((const char *) entry->value.data, "true", 4) == 0;
	}
	return false;
}

static bool
metadata_equals(const Lance__File__Field *field, const char *key, const char *value)
{
	size_t		value_len = strlen(value);

	for (size_t i = 0; i < field->n_metadata; i++)
	{
		const Lance__File__Field__MetadataEntry *entry = field->metadata[i];

		if (strcmp(entry->key, key) == 0)
			return entry->value.len == value_len &&
				memcmp(entry->value.data, value, value_len) == 0;
	}
	return false;
}

/* A field whose whole subtree is stored in a single column. */
static bool
field_is_single_column(const Lance__File__Field *field)
{
	return metadata_is_true(field, "lance-encoding:packed") ||
		metadata_is_true(field, "packed") ||
		metadata_is_true(field, "lance-encoding:blob") ||
		metadata_equals(field, "ARROW:extension:name", "lance.blob.v2") ||
		(field->extension_name != NULL &&
		 strcmp(field->extension_name, "lance.blob.v2") == 0);
}

#define MAX_FIELD_DEPTH 64

typedef struct ColumnWalk
{
	Lance__File__Field *const *fields;
	size_t		n_fields;
	LpFileVersion version;
	int32_t    *ids;
	int32_t    *columns;
	size_t		count;
} ColumnWalk;

static bool
walk_field(ColumnWalk *walk, const Lance__File__Field *field, int depth,
		   LpError *err)
{
	bool		has_children = false;

	if (depth >= MAX_FIELD_DEPTH)
		return lp_fail(err, LP_ERR_UNSUPPORTED,
					   "schema is nested more than %d levels deep at field id %d",
					   MAX_FIELD_DEPTH, field->id);
	for (size_t i = 0; i < walk->n_fields; i++)
		if (walk->fields[i]->parent_id == field->id)
			has_children = true;

	if (field_is_single_column(field) || walk->version == LP_FILE_VERSION_2_0 ||
		!has_children)
	{
		for (size_t i = 0; i < walk->count; i++)
			if (walk->ids[i] == field->id)
				return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
							   "field id %d appears twice", field->id);
		/* count < n_fields: every field is emitted at most once */
		walk->ids[walk->count] = field->id;
		walk->columns[walk->count] = (int32_t) walk->count;
		walk->count++;
		if (field_is_single_column(field))
			return true;
	}
	for (size_t i = 0; i < walk->n_fields; i++)
		if (walk->fields[i]->parent_id == field->id &&
			!walk_field(walk, walk->fields[i], depth + 1, err))
			return false;
	return true;
}

static const Lance__File__Field *
find_top_level(Lance__File__Field *const *fields, size_t n_fields, int32_t id)
{
	for (size_t i = 0; i < n_fields; i++)
		if (fields[i]->id == id && fields[i]->parent_id == -1)
			return fields[i];
	return NULL;
}

bool
lp_data_file_columns(Lance__File__Field *const *fields, size_t n_fields,
					 const int32_t *selected, size_t n_selected,
					 LpFileVersion version, int32_t **field_ids,
					 int32_t **column_indices, size_t *n_columns, LpError *err)
{
	ColumnWalk	walk;
	size_t		n_top = selected ? n_selected : n_fields;

	if (version == LP_FILE_VERSION_LEGACY)
		return lp_fail(err, LP_ERR_UNSUPPORTED,
					   "legacy (v1) data files have no column mapping");
	memset(&walk, 0, sizeof(walk));
	walk.fields = fields;
	walk.n_fields = n_fields;
	walk.version = version;
	walk.ids = lp_alloc_array(n_fields > 0 ? n_fields : 1, sizeof(int32_t));
	walk.columns = lp_alloc_array(n_fields > 0 ? n_fields : 1, sizeof(int32_t));
	if (walk.ids == NULL || walk.columns == NULL)
	{
		lp_free(walk.ids);
		lp_free(walk.columns);
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
	}

	for (size_t i = 0; i < n_top; i++)
	{
		const Lance__File__Field *top;

		if (selected)
		{
			top = find_top_level(fields, n_fields, selected[i]);
			if (top == NULL)
			{
				lp_free(walk.ids);
				lp_free(walk.columns);
				return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
							   "field id %d is not a top-level field of the schema",
							   selected[i]);
			}
		}
		else if (fields[i]->parent_id == -1)
			top = fields[i];
		else
			continue;
		if (!walk_field(&walk, top, 0, err))
		{
			lp_free(walk.ids);
			lp_free(walk.columns);
			return false;
		}
	}
	*field_ids = walk.ids;
	*column_indices = walk.columns;
	*n_columns = walk.count;
	return true;
}
