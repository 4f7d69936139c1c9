/*
 * lp_manifest.c - reading and writing Lance manifest files.
 */
#include <stdio.h>
#include <string.h>

#include "base/lp_alloc.h"
#include "base/lp_bytes.h"
#include "base/lp_checked.h"
#include "dataset/lp_manifest_internal.h"
#include "base/lp_protobuf.h"
#include "format/lp_roaring.h"
#include "any.pb-c.h"
#include "format/lp_schema_internal.h"

/*
 * Locate a "u32 length + body" section starting at offset; it must end at
 * or before limit.
 */
static bool
locate_section(const LpManifest *manifest, const char *what, uint64_t offset,
			   uint64_t limit, const uint8_t **body, size_t *body_len,
			   LpError *err)
{
	uint32_t	len;

	if (!lp_range_within(offset, 4, limit))
		return lp_fail(err, LP_ERR_CORRUPT,
					   "%s of manifest file \"%s\" starts at offset %llu, outside the file",
					   what, manifest->name, (unsigned long long) offset);
	len = lp_le32(manifest->file_data + offset);
	if (!lp_range_within(offset + 4, len, limit))
		return lp_fail(err, LP_ERR_CORRUPT,
					   "%s of manifest file \"%s\" (%u bytes at offset %llu) runs past its end",
					   what, manifest->name, len, (unsigned long long) offset);
	*body = manifest->file_data + offset + 4;
	*body_len = len;
	return true;
}

bool
lp_manifest_relative_path_valid(const char *path)
{
	const char *name = path;

	if (path == NULL)
		return false;
	for (;;)
	{
		size_t		len = strcspn(name, "/");

		if (len == 0 || (len == 1 && name[0] == '.') ||
			(len == 2 && name[0] == '.' && name[1] == '.') ||
			memchr(name, '\\', len) != NULL)
			return false;
		if (name[len] == '\0')
			return true;
		name += len + 1;
	}
}

/*
 * The paths of a manifest are names under the dataset's directories; one
 * that would leave them (or, for a base, depend on the server's working
 * directory) is damaged metadata, refused before any caller can open it.
 * Deletion and index files are named from numbers and UUIDs, never from
 * strings, so they need no check.
 */
static bool
check_paths(const LpManifest *manifest, LpError *err)
{
	const Lance__Table__Manifest *proto = manifest->proto;
	const char *transaction_file = proto->transaction_file;

	for (size_t f = 0; f < proto->n_fragments; f++)
	{
		const Lance__Table__DataFragment *fragment = proto->fragments[f];

		for (size_t d = 0; d < fragment->n_files; d++)
		{
			const char *path = fragment->files[d]->path;

			if (!lp_manifest_relative_path_valid(path))
			{
				lp_fail(err, LP_ERR_CORRUPT,
						"manifest file \"%s\" names data file \"%s\" in fragment %llu, which is not a relative path inside the data directory",
						manifest->name, path ? path : "",
						(unsigned long long) fragment->id);
				lp_error_detail(err, "Data file paths are names joined onto the data directory; empty names, \".\", \"..\", backslashes and absolute paths are refused.");
				return false;
			}
		}
	}
	if (transaction_file != NULL && transaction_file[0] != '\0' &&
		(!lp_manifest_relative_path_valid(transaction_file) ||
		 strchr(transaction_file, '/') != NULL))
		return lp_fail(err, LP_ERR_CORRUPT,
					   "manifest file \"%s\" names an invalid transaction file \"%s\"",
					   manifest->name, transaction_file);
	for (size_t i = 0; i < proto->n_base_paths; i++)
	{
		const char *path = proto->base_paths[i]->path;

		/* bases are registered locations, absolute by design in Lance */
		if (path == NULL || (path[0] != '/' && strstr(path, "://") == NULL))
		{
			lp_fail(err, LP_ERR_CORRUPT,
					"manifest file \"%s\" names base path %u as \"%s\", which is neither an absolute path nor a URI",
					manifest->name, proto->base_paths[i]->id, path ? path : "");
			return false;
		}
	}
	return true;
}

/* Parse manifest->file_data, which holds the whole file. */
static bool
parse_file(LpManifest *manifest, LpError *err)
{
	const uint8_t *data = manifest->file_data;
	size_t		len = manifest->file_len;
	const uint8_t *tail;
	uint64_t	position;
	uint64_t	body_limit;
	uint32_t	manifest_len;
	LpUnpackResult result;

	if (len < LP_MANIFEST_TAIL_LEN + 4)
		return lp_fail(err, LP_ERR_CORRUPT,
					   "manifest file \"%s\" is too short (%zu bytes)",
					   manifest->name, len);
	tail = data + len - LP_MANIFEST_TAIL_LEN;
	if (memcmp(tail + 12, "LANC", 4) != 0)
		return lp_fail(err, LP_ERR_CORRUPT,
					   "manifest file \"%s\" does not end with the Lance magic",
					   manifest->name);
	position = lp_le64(tail);
	body_limit = len - LP_MANIFEST_TAIL_LEN;
	if (!lp_range_within(position, 4, body_limit))
		return lp_fail(err, LP_ERR_CORRUPT,
					   "manifest file \"%s\" records its manifest at offset %llu, outside the file (%zu bytes)",
					   manifest->name, (unsigned long long) position, len);
	manifest_len = lp_le32(data + position);
	if ((uint64_t) manifest_len != body_limit - position - 4)
		return lp_fail(err, LP_ERR_CORRUPT,
					   "manifest file \"%s\" has a manifest length of %u bytes at offset %llu, but %llu bytes precede its tail",
					   manifest->name, manifest_len,
					   (unsigned long long) position,
					   (unsigned long long) (body_limit - position - 4));

	result = lp_protobuf_unpack(&lance__table__manifest__descriptor,
								data + position + 4, manifest_len,
								(ProtobufCMessage **) &manifest->proto);
	if (result == LP_UNPACK_NO_MEMORY)
		return lp_fail(err, LP_ERR_NO_MEMORY,
					   "out of memory reading manifest file \"%s\"", manifest->name);
	if (result != LP_UNPACK_OK)
		return lp_fail(err, LP_ERR_CORRUPT,
					   "manifest of manifest file \"%s\" %s",
					   manifest->name, lp_unpack_result_text(result));

	/* The optional sections lie before the manifest itself. */
	if (manifest->proto->index_section_present_case ==
		LANCE__TABLE__MANIFEST__INDEX_SECTION_PRESENT_INDEX_SECTION &&
		!locate_section(manifest, "index section",
						manifest->proto->index_section, position,
						&manifest->index_section,
						&manifest->index_section_len, err))
		return false;
	if (manifest->proto->transaction_section_present_case ==
		LANCE__TABLE__MANIFEST__TRANSACTION_SECTION_PRESENT_TRANSACTION_SECTION &&
		!locate_section(manifest, "transaction section",
						manifest->proto->transaction_section, position,
						&manifest->transaction,
						&manifest->transaction_len, err))
		return false;
	return check_paths(manifest, err);
}

LpManifest *
lp_manifest_parse(const char *name, const uint8_t *data, size_t len,
				  LpError *err)
{
	LpManifest *manifest = lp_alloc0(sizeof(LpManifest));

	if (manifest == NULL)
	{
		lp_fail(err, LP_ERR_NO_MEMORY, "out of memory reading manifest file \"%s\"", name);
		return NULL;
	}
	manifest->name = lp_strdup(name);
	manifest->file_data = lp_alloc(len > 0 ? len : 1);
	if (manifest->name == NULL || manifest->file_data == NULL)
	{
		lp_fail(err, LP_ERR_NO_MEMORY, "out of memory reading manifest file \"%s\"", name);
		lp_manifest_free(manifest);
		return NULL;
	}
	if (len > 0)
		memcpy(manifest->file_data, data, len);
	manifest->file_len = len;
	if (!parse_file(manifest, err))
	{
		lp_manifest_free(manifest);
		return NULL;
	}
	return manifest;
}

LpManifest *
lp_manifest_read(LpInput *input, LpError *err)
{
	LpManifest *manifest;
	uint8_t    *data;

	if (input->size > LP_MANIFEST_MAX_SIZE)
	{
		lp_fail(err, LP_ERR_UNSUPPORTED,
				"manifest file \"%s\" is too large (%llu bytes)",
				input->name, (unsigned long long) input->size);
		return NULL;
	}
	data = lp_alloc(input->size > 0 ? input->size : 1);
	if (data == NULL)
	{
		lp_fail(err, LP_ERR_NO_MEMORY, "out of memory reading manifest file \"%s\"", input->name);
		return NULL;
	}
	if (!lp_input_read(input, 0, data, input->size, err))
	{
		lp_free(data);
		return NULL;
	}
	manifest = lp_manifest_parse(input->name, data, input->size, err);
	lp_free(data);
	return manifest;
}

void
lp_manifest_free(LpManifest *manifest)
{
	if (manifest == NULL)
		return;
	lp_protobuf_free((ProtobufCMessage *) manifest->proto);
	lp_free(manifest->file_data);
	lp_free(manifest->name);
	lp_free(manifest);
}

bool
lp_manifest_serialize(Lance__Table__Manifest *manifest,
					  const uint8_t *index_section, size_t index_section_len,
					  const uint8_t *transaction, size_t transaction_len,
					  uint8_t **out, size_t *out_len, LpError *err)
{
	uint64_t	offset = 0;
	uint64_t	manifest_position;
	size_t		manifest_len;
	uint64_t	total;
	uint8_t    *buffer;

	if (index_section_len > UINT32_MAX || transaction_len > UINT32_MAX)
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
					   "manifest section is too large to serialize");

	if (index_section != NULL)
	{
		manifest->index_section_present_case =
			LANCE__TABLE__MANIFEST__INDEX_SECTION_PRESENT_INDEX_SECTION;
		manifest->index_section = offset;
		offset += 4 + index_section_len;
	}
	else
		manifest->index_section_present_case =
			LANCE__TABLE__MANIFEST__INDEX_SECTION_PRESENT__NOT_SET;
	if (transaction != NULL)
	{
		manifest->transaction_section_present_case =
			LANCE__TABLE__MANIFEST__TRANSACTION_SECTION_PRESENT_TRANSACTION_SECTION;
		manifest->transaction_section = offset;
		offset += 4 + transaction_len;
	}
	else
		manifest->transaction_section_present_case =
			LANCE__TABLE__MANIFEST__TRANSACTION_SECTION_PRESENT__NOT_SET;

	manifest_position = offset;
	manifest_len = protobuf_c_message_get_packed_size((const ProtobufCMessage *) manifest);
	if (manifest_len > UINT32_MAX)
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
					   "manifest of %zu bytes is too large to serialize", manifest_len);
	total = manifest_position + 4 + manifest_len + LP_MANIFEST_TAIL_LEN;
	buffer = lp_alloc(total);
	if (buffer == NULL)
		return lp_fail(err, LP_ERR_NO_MEMORY,
					   "out of memory serializing a manifest of %llu bytes",
					   (unsigned long long) total);

	if (index_section != NULL)
	{
		lp_put_le32(buffer + manifest->index_section, (uint32_t) index_section_len);
		memcpy(buffer + manifest->index_section + 4, index_section, index_section_len);
	}
	if (transaction != NULL)
	{
		lp_put_le32(buffer + manifest->transaction_section, (uint32_t) transaction_len);
		memcpy(buffer + manifest->transaction_section + 4, transaction, transaction_len);
	}
	lp_put_le32(buffer + manifest_position, (uint32_t) manifest_len);
	protobuf_c_message_pack((const ProtobufCMessage *) manifest,
							buffer + manifest_position + 4);

	/* Tail: i64 position, u16 major 0, u16 minor 2, magic. */
	lp_put_le64(buffer + total - LP_MANIFEST_TAIL_LEN, manifest_position);
	buffer[total - 8] = 0;
	buffer[total - 7] = 0;
	buffer[total - 6] = 2;
	buffer[total - 5] = 0;
	memcpy(buffer + total - 4, "LANC", 4);

	*out = buffer;
	*out_len = total;
	return true;
}

void
lp_manifest_compute_flags(const Lance__Table__Manifest *manifest,
						  uint64_t *reader_flags, uint64_t *writer_flags)
{
	uint64_t	flags = 0;

	for (size_t i = 0; i < manifest->n_fragments; i++)
		if (manifest->fragments[i]->deletion_file != NULL)
		{
			flags |= LP_FLAG_DELETION_FILES;
			break;
		}
	/* Stable row ids are a property of the dataset, kept from the old flags. */
	if (manifest->reader_feature_flags & LP_FLAG_STABLE_ROW_IDS)
		flags |= LP_FLAG_STABLE_ROW_IDS;
	if (manifest->n_base_paths > 0)
		flags |= LP_FLAG_BASE_PATHS;
	*reader_flags = flags;

	if (manifest->n_config > 0)
		flags |= LP_FLAG_TABLE_CONFIG;
	if (manifest->writer_feature_flags & LP_FLAG_NO_TRANSACTION_FILE)
		flags |= LP_FLAG_NO_TRANSACTION_FILE;
	*writer_flags = flags;
}

/* The names of the flags of newer Lance versions that messages name, else NULL. */
static const char *
foreign_flag_name(uint64_t flag)
{
	switch (flag)
	{
		case LP_FLAG_OVERLAYS:
			return "overlays";
		case LP_FLAG_FRAGMENT_REUSE_INDEX:
			return "fragment reuse index";
		case LP_FLAG_MANAGED_BLOBS:
			return "managed blobs";
		default:
			return NULL;
	}
}

/* role is "reader" or "writer", flags the manifest's flags of that role. */
static bool
check_feature_flags(const LpManifest *manifest, const char *dataset, const char *role,
					uint64_t flags, LpError *err)
{
	uint64_t	foreign = flags & ~LP_FLAGS_KNOWN;
	uint64_t	lowest = foreign & (~foreign + 1);
	const char *name = foreign_flag_name(lowest);

	if (foreign == 0)
		return true;
	if (name != NULL)
		lp_fail(err, LP_ERR_UNSUPPORTED,
				"dataset \"%s\" needs %s feature \"%s\" (flag %llu), which lance_parts does not implement",
				dataset, role, name, (unsigned long long) lowest);
	else
		lp_fail(err, LP_ERR_UNSUPPORTED,
				"dataset \"%s\" needs %s feature flag %llu, which lance_parts does not implement",
				dataset, role, (unsigned long long) lowest);
	lp_error_detail(err,
					"Manifest file \"%s\" sets %s feature flags %llu; lance_parts implements those below %llu.",
					manifest->name, role, (unsigned long long) flags,
					(unsigned long long) LP_FLAGS_KNOWN + 1);
	return false;
}

bool
lp_manifest_check_readable(const LpManifest *manifest, const char *dataset, LpError *err)
{
	return check_feature_flags(manifest, dataset, "reader",
							   manifest->proto->reader_feature_flags, err);
}

bool
lp_manifest_check_writable(const LpManifest *manifest, const char *dataset, LpError *err)
{
	return check_feature_flags(manifest, dataset, "writer",
							   manifest->proto->writer_feature_flags, err);
}

bool
lp_manifest_schema(const LpManifest *manifest, LpSchema *schema, LpError *err)
{
	char		where[LP_SCHEMA_WHERE_LEN];

	snprintf(where, sizeof(where), "manifest file \"%s\"", manifest->name);
	return lp_schema_from_proto(where, manifest->proto->fields,
								manifest->proto->n_fields,
								(const LpProtoMapEntry *const *) manifest->proto->schema_metadata,
								manifest->proto->n_schema_metadata, schema, err);
}

Lance__Table__DataFragment *
lp_manifest_find_fragment(const Lance__Table__Manifest *manifest,
						  uint64_t fragment_id)
{
	for (size_t i = 0; i < manifest->n_fragments; i++)
		if (manifest->fragments[i]->id == fragment_id)
			return manifest->fragments[i];
	return NULL;
}

Lance__File__Field *
lp_manifest_find_field(const Lance__Table__Manifest *manifest, int32_t field_id)
{
	for (size_t i = 0; i < manifest->n_fields; i++)
		if (manifest->fields[i]->id == field_id)
			return manifest->fields[i];
	return NULL;
}

/* Whether the index is on one of fields (any field when fields is NULL). */
static bool
index_on_fields(const Lance__Table__IndexMetadata *index, const int32_t *fields,
				size_t n_fields)
{
	if (fields == NULL)
		return true;
	for (size_t i = 0; i < index->n_fields; i++)
		for (size_t k = 0; k < n_fields; k++)
			if (index->fields[i] == fields[k])
				return true;
	return false;
}

bool
lp_manifest_index_section(const LpManifest *manifest, Lance__Table__IndexSection **section,
						  LpError *err)
{
	LpUnpackResult result;

	*section = NULL;
	if (manifest->index_section == NULL)
		return true;
	result = lp_protobuf_unpack(&lance__table__index_section__descriptor,
								manifest->index_section, manifest->index_section_len,
								(ProtobufCMessage **) section);
	if (result != LP_UNPACK_OK)
		return lp_fail(err, result == LP_UNPACK_NO_MEMORY ? LP_ERR_NO_MEMORY : LP_ERR_CORRUPT,
					   "index section of manifest \"%s\" %s", manifest->name,
					   lp_unpack_result_text(result));
	return true;
}

bool
lp_manifest_fragment_indexes(const LpManifest *manifest, uint64_t fragment_id,
							 const int32_t *fields, size_t n_fields,
							 uint64_t *indexes, LpError *err)
{
	Lance__Table__IndexSection *section;
	bool		ok = true;

	*indexes = 0;
	if (!lp_manifest_index_section(manifest, &section, err))
		return false;
	if (section == NULL)
		return true;
	for (size_t i = 0; ok && i < section->n_indices; i++)
	{
		const Lance__Table__IndexMetadata *index = section->indices[i];
		bool		covers = false;

		/* fragment ids are u32 in row addresses; larger ones cannot be covered */
		if (fragment_id <= UINT32_MAX && index_on_fields(index, fields, n_fields))
			ok = lp_roaring32_contains(index->fragment_bitmap.data,
									   index->fragment_bitmap.len,
									   (uint32_t) fragment_id, &covers, err);
		if (covers)
			*indexes |= (uint64_t) 1 << (i % 64);
	}
	lp_protobuf_free(&section->base);
	return ok;
}

void
lp_manifest_index_entries_free(LpIndexEntry *entries, size_t n_entries)
{
	for (size_t i = 0; entries != NULL && i < n_entries; i++)
	{
		lp_free(entries[i].name);
		lp_free(entries[i].fields);
		lp_free(entries[i].type_url);
		lp_free(entries[i].fragment_bitmap);
	}
	lp_free(entries);
}

/* entry's copy of index; false when out of memory or damaged. */
static bool
copy_index_entry(const LpManifest *manifest, const Lance__Table__IndexMetadata *index,
				 LpIndexEntry *entry, LpError *err)
{
	LanceParts__Any *details = NULL;

	if (index->uuid == NULL || index->uuid->uuid.len != 16)
		return lp_fail(err, LP_ERR_CORRUPT, "index \"%s\" of manifest \"%s\" has no valid UUID",
					   index->name, manifest->name);
	memcpy(entry->uuid, index->uuid->uuid.data, 16);
	entry->has_index_version = index->index_version_present_case ==
		LANCE__TABLE__INDEX_METADATA__INDEX_VERSION_PRESENT_INDEX_VERSION;
	entry->index_version = index->index_version;
	entry->has_base_id = index->base_id_present_case ==
		LANCE__TABLE__INDEX_METADATA__BASE_ID_PRESENT_BASE_ID;
	if (index->index_details.len > 0)
	{
		LpUnpackResult result = lp_protobuf_unpack(&lance_parts__any__descriptor,
												   index->index_details.data,
												   index->index_details.len,
												   (ProtobufCMessage **) &details);

		if (result != LP_UNPACK_OK)
			return lp_fail(err, result == LP_UNPACK_NO_MEMORY ? LP_ERR_NO_MEMORY : LP_ERR_CORRUPT,
						   "details of index \"%s\" of manifest \"%s\" %s", index->name,
						   manifest->name, lp_unpack_result_text(result));
	}
	entry->name = lp_strdup(index->name);
	entry->type_url = lp_strdup(details != NULL ? details->type_url : "");
	entry->n_fields = index->n_fields;
	/* one spare element or byte: empty copies are not NULL */
	entry->fields = lp_alloc0(sizeof(int32_t) * (index->n_fields + 1));
	if (entry->fields != NULL && index->n_fields > 0)
		memcpy(entry->fields, index->fields, sizeof(int32_t) * index->n_fields);
	entry->fragment_bitmap_len = index->fragment_bitmap.len;
	entry->fragment_bitmap = lp_alloc0(index->fragment_bitmap.len + 1);
	if (entry->fragment_bitmap != NULL && index->fragment_bitmap.len > 0)
		memcpy(entry->fragment_bitmap, index->fragment_bitmap.data, index->fragment_bitmap.len);
	if (details != NULL)
		lp_protobuf_free(&details->base);
	if (entry->name == NULL || entry->type_url == NULL || entry->fields == NULL ||
		entry->fragment_bitmap == NULL)
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
	return true;
}

bool
lp_manifest_index_entries(const LpManifest *manifest, LpIndexEntry **entries,
						  size_t *n_entries, LpError *err)
{
	Lance__Table__IndexSection *section;
	bool		ok = true;

	*entries = NULL;
	*n_entries = 0;
	if (!lp_manifest_index_section(manifest, &section, err))
		return false;
	if (section == NULL)
		return true;
	if (section->n_indices > 0)
	{
		*entries = lp_alloc_array(section->n_indices, sizeof(LpIndexEntry));
		if (*entries == NULL)
			ok = lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
		else
			memset(*entries, 0, section->n_indices * sizeof(LpIndexEntry));
	}
	for (size_t i = 0; ok && i < section->n_indices; i++)
	{
		*n_entries = i + 1;
		ok = copy_index_entry(manifest, section->indices[i], &(*entries)[i], err);
	}
	lp_protobuf_free(&section->base);
	if (!ok)
	{
		lp_manifest_index_entries_free(*entries, *n_entries);
		*entries = NULL;
		*n_entries = 0;
	}
	return ok;
}

bool
lp_manifest_fragment_reuse(const LpManifest *manifest)
{
	return ((manifest->proto->reader_feature_flags | manifest->proto->writer_feature_flags) &
			LP_FLAG_FRAGMENT_REUSE_INDEX) != 0;
}

bool
lp_manifest_fragment_indexed(const LpManifest *manifest, uint64_t fragment_id,
							 const int32_t *fields, size_t n_fields,
							 bool *indexed, LpError *err)
{
	uint64_t	indexes;

	if (!lp_manifest_fragment_indexes(manifest, fragment_id, fields, n_fields, &indexes, err))
		return false;
	*indexed = indexes != 0;
	return true;
}

bool
lp_manifest_next_fragment_id(const LpManifest *manifest, uint64_t *id, LpError *err)
{
	const Lance__Table__Manifest *m = manifest->proto;
	uint64_t	next = 0;

	if (m->max_fragment_id_present_case ==
		LANCE__TABLE__MANIFEST__MAX_FRAGMENT_ID_PRESENT_MAX_FRAGMENT_ID)
		next = (uint64_t) m->max_fragment_id + 1;
	for (size_t i = 0; i < m->n_fragments; i++)
		if (m->fragments[i]->id >= next)
			next = m->fragments[i]->id + 1;
	if (next > UINT32_MAX)
		return lp_fail(err, LP_ERR_UNSUPPORTED,
					   "the dataset has used every fragment id");
	*id = next;
	return true;
}

uint64_t
lp_manifest_version(const LpManifest *manifest)
{
	return manifest->proto->version;
}

const char *
lp_manifest_file_name(const LpManifest *manifest)
{
	return manifest->name;
}

const char *
lp_manifest_data_format(const LpManifest *manifest)
{
	const Lance__Table__Manifest__DataStorageFormat *format = manifest->proto->data_format;

	return format != NULL ? format->version : NULL;
}

bool
lp_manifest_data_version(const LpManifest *manifest, LpFileVersion *version)
{
	const char *format = lp_manifest_data_format(manifest);

	return format != NULL && lp_file_version_parse(format, version);
}

bool
lp_manifest_is_legacy(const LpManifest *manifest)
{
	const Lance__Table__Manifest *proto = manifest->proto;
	const char *format = lp_manifest_data_format(manifest);
	LpFileVersion version;

	/* Lance names the legacy storage format "0.1" */
	if (format != NULL && (strcmp(format, "0.1") == 0 ||
						   (lp_file_version_parse(format, &version) &&
							version == LP_FILE_VERSION_LEGACY)))
		return true;
	/* before 0.3, data file numbers were those of v1 files */
	for (size_t f = 0; f < proto->n_fragments; f++)
		for (size_t d = 0; d < proto->fragments[f]->n_files; d++)
			if (proto->fragments[f]->files[d]->file_major_version == 0 &&
				proto->fragments[f]->files[d]->file_minor_version < 3)
				return true;
	return false;
}

bool
lp_manifest_stable_row_ids(const LpManifest *manifest)
{
	return (manifest->proto->reader_feature_flags & LP_FLAG_STABLE_ROW_IDS) != 0;
}

char *
lp_manifest_tag(const LpManifest *manifest)
{
	const Lance__Table__Manifest *proto = manifest->proto;
	char		buffer[64];
	const char *tag = buffer;
	size_t		len;
	char	   *result;

	if (proto->transaction_file != NULL && proto->transaction_file[0] != '\0')
		tag = proto->transaction_file;
	else if (proto->timestamp != NULL)
		snprintf(buffer, sizeof(buffer), "timestamp:%lld.%09d",
				 (long long) proto->timestamp->seconds, (int) proto->timestamp->nanos);
	else
		snprintf(buffer, sizeof(buffer), "version:%llu",
				 (unsigned long long) proto->version);
	len = strlen(tag);
	result = lp_alloc(len + 1);
	if (result != NULL)
		memcpy(result, tag, len + 1);
	return result;
}

bool
lp_manifest_has_fragment(const LpManifest *manifest, uint64_t fragment_id)
{
	return lp_manifest_find_fragment(manifest->proto, fragment_id) != NULL;
}
