/*
 * lp_dataset.c - layout of a Lance dataset directory.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "base/lp_alloc.h"
#include "format/lp_columns.h"
#include "dataset/lp_dataset.h"
#include "base/lp_path.h"
#include "dataset/lp_fragment.h"
#include "dataset/lp_manifest_internal.h"
#include "format/lp_schema.h"

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
lp_dataset_file_referenced_since(LpStore *store, const char *root, LpManifestNaming naming,
								 const LpManifest *latest, uint64_t since_version,
								 bool has_base_id, uint32_t base_id, const char *name,
								 uint64_t *found_version, LpError *err)
{
	uint64_t	latest_version = latest->proto->version;

	*found_version = 0;
	if (latest_version <= since_version)
		return true;
	if (lp_manifest_references_file(latest, has_base_id, base_id, name))
	{
		*found_version = latest_version;
		return true;
	}
	for (uint64_t v = latest_version - 1; v > since_version; v--)
	{
		LpManifest *manifest = lp_dataset_read_manifest(store, root, naming, v, err);
		bool		referenced;

		if (manifest == NULL)
		{
			if (err->code == LP_ERR_NOT_FOUND)
				continue;		/* cleaned up by Lance */
			return false;
		}
		referenced = lp_manifest_references_file(manifest, has_base_id, base_id, name);
		lp_manifest_free(manifest);
		if (referenced)
		{
			*found_version = v;
			return true;
		}
	}
	return true;
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
	/* lp_manifest_parse checked that the name stays inside _transactions/ */
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
lp_data_file_name_valid(const char *name)
{
	if (strlen(name) != LP_DATA_FILE_NAME_SIZE - 1 ||
		strcmp(name + 50, ".lance") != 0)
		return false;
	for (int i = 0; i < 24; i++)
		if (name[i] != '0' && name[i] != '1')
			return false;
	for (int i = 24; i < 50; i++)
		if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f')))
			return false;
	return true;
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

char *
lp_base_data_dir(const char *base_path, bool is_dataset_root)
{
	size_t		len = strlen(base_path);
	char	   *copy;

	if (is_dataset_root)
		return lp_path_join(base_path, LP_DATA_DIR);
	copy = lp_alloc(len + 1);
	if (copy != NULL)
		memcpy(copy, base_path, len + 1);
	return copy;
}

char *
lp_data_file_staging_dir(const char *data_dir, const char *data_file_name)
{
	char	   *staging = lp_path_join(data_dir, LP_STAGING_DIR);
	char	   *result = staging ? lp_path_join(staging, data_file_name) : NULL;

	lp_free(staging);
	return result;
}

char *
lp_data_file_sidecar_dir(const char *data_dir, const char *data_file_name)
{
	char	   *stem = lp_blob_sidecar_dir(data_file_name);
	char	   *result = stem ? lp_path_join(data_dir, stem) : NULL;

	lp_free(stem);
	return result;
}

void
lp_blob_sidecar_file_name(uint32_t blob_id, char out[LP_BLOB_FILE_NAME_SIZE])
{
	/* The id's bits reversed and printed MSB first = the id's bits LSB first. */
	for (int bit = 0; bit < 32; bit++)
		out[bit] = (blob_id >> bit) & 1 ? '1' : '0';
	memcpy(out + 32, ".blob", sizeof(".blob"));
}

/* The top-level ancestor of a field (its index in schema->fields). */
static int64_t
top_level_of(const LpSchema *schema, uint32_t index)
{
	/* parents precede their children (lp_schema_from_proto checked it) */
	for (uint32_t steps = 0; steps < schema->num_fields; steps++)
	{
		int64_t		parent;

		if (schema->fields[index].parent_id == -1)
			return index;
		parent = lp_schema_find_field(schema, schema->fields[index].parent_id);
		if (parent < 0)
			return -1;
		index = (uint32_t) parent;
	}
	return -1;
}

bool
lp_data_file_columns(const LpSchema *schema, const int32_t *selected,
					 size_t n_selected, LpFileVersion version,
					 int32_t **field_ids, int32_t **column_indices,
					 size_t *n_columns, LpError *err)
{
	LpPhysicalColumn *columns;
	uint32_t	num_columns;
	int64_t    *tops;
	int32_t    *ids;
	int32_t    *indices;
	size_t		count = 0;
	size_t		n_top = selected ? n_selected : schema->num_fields;

	if (version == LP_FILE_VERSION_LEGACY)
		return lp_fail(err, LP_ERR_UNSUPPORTED,
					   "legacy (v1) data files have no column mapping");
	for (size_t i = 0; selected != NULL && i < n_selected; i++)
	{
		int64_t		index = lp_schema_find_field(schema, selected[i]);

		if (index < 0 || schema->fields[index].parent_id != -1)
			return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
						   "field id %d is not a top-level field of the schema",
						   selected[i]);
		for (size_t j = 0; j < i; j++)
			if (selected[j] == selected[i])
				return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
							   "field id %d is selected twice", selected[i]);
	}
	if (!lp_schema_physical_columns(version, schema, &columns, &num_columns, err))
		return false;

	tops = lp_alloc_array(num_columns > 0 ? num_columns : 1, sizeof(int64_t));
	ids = lp_alloc_array(num_columns > 0 ? num_columns : 1, sizeof(int32_t));
	indices = lp_alloc_array(num_columns > 0 ? num_columns : 1, sizeof(int32_t));
	if (tops == NULL || ids == NULL || indices == NULL)
	{
		lp_free(columns);
		lp_free(tops);
		lp_free(ids);
		lp_free(indices);
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
	}
	for (uint32_t c = 0; c < num_columns; c++)
		tops[c] = top_level_of(schema, columns[c].field_index);

	/* Per top-level field in file order, its columns in schema order. */
	for (size_t t = 0; t < n_top; t++)
	{
		int64_t		top;

		if (selected != NULL)
			top = lp_schema_find_field(schema, selected[t]);
		else if (schema->fields[t].parent_id == -1)
			top = (int64_t) t;
		else
			continue;
		for (uint32_t c = 0; c < num_columns; c++)
			if (tops[c] == top)
			{
				ids[count] = schema->fields[columns[c].field_index].id;
				indices[count] = (int32_t) count;
				count++;
			}
	}
	lp_free(columns);
	lp_free(tops);
	*field_ids = ids;
	*column_indices = indices;
	*n_columns = count;
	return true;
}
