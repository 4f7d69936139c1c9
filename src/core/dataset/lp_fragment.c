/*
 * lp_fragment.c - views of the fragments, data files, deletion files and
 * bases of a manifest.
 */
#include <string.h>

#include "base/lp_alloc.h"
#include "dataset/lp_fragment.h"
#include "dataset/lp_manifest_internal.h"
#include "base/lp_path.h"

size_t
lp_manifest_num_fragments(const LpManifest *manifest)
{
	return manifest->proto->n_fragments;
}

void
lp_manifest_fragment(const LpManifest *manifest, size_t index, LpFragment *fragment)
{
	const Lance__Table__DataFragment *entry = manifest->proto->fragments[index];
	const Lance__Table__DeletionFile *deletion = entry->deletion_file;

	memset(fragment, 0, sizeof(*fragment));
	fragment->index = index;
	fragment->id = entry->id;
	fragment->physical_rows = entry->physical_rows;
	fragment->num_files = entry->n_files;
	fragment->has_deletion_file = deletion != NULL;
	if (deletion != NULL)
	{
		fragment->deletion_file.form =
			deletion->file_type == LANCE__TABLE__DELETION_FILE__DELETION_FILE_TYPE__BITMAP
			? LP_DELETION_BITMAP : LP_DELETION_ARROW;
		fragment->deletion_file.read_version = deletion->read_version;
		fragment->deletion_file.id = deletion->id;
		fragment->deletion_file.num_deleted_rows = deletion->num_deleted_rows;
		fragment->deletion_file.has_base_id =
			deletion->base_id_present_case == LANCE__TABLE__DELETION_FILE__BASE_ID_PRESENT_BASE_ID;
		fragment->deletion_file.base_id = deletion->base_id;
	}
}

void
lp_data_file_ref_from_proto(const Lance__Table__DataFile *entry, LpDataFileRef *file)
{
	file->path = entry->path;
	file->fields = entry->fields;
	file->n_fields = entry->n_fields;
	file->column_indices = entry->column_indices;
	file->n_column_indices = entry->n_column_indices;
	file->major_version = entry->file_major_version;
	file->minor_version = entry->file_minor_version;
	file->size_bytes = entry->file_size_bytes;
	file->has_base_id =
		entry->base_id_present_case == LANCE__TABLE__DATA_FILE__BASE_ID_PRESENT_BASE_ID;
	file->base_id = entry->base_id;
}

void
lp_fragment_data_file(const LpManifest *manifest, const LpFragment *fragment,
					  size_t file_index, LpDataFileRef *file)
{
	lp_data_file_ref_from_proto(manifest->proto->fragments[fragment->index]->files[file_index],
								file);
}

bool
lp_data_file_in_base(const LpDataFileRef *file, bool has_base_id, uint32_t base_id)
{
	return file->has_base_id == has_base_id && (!has_base_id || file->base_id == base_id);
}

bool
lp_data_file_has_version(const LpDataFileRef *file, LpFileVersion version)
{
	uint16_t	major;
	uint16_t	minor;

	lp_file_version_data_file_numbers(version, &major, &minor);
	return file->major_version == major && file->minor_version == minor;
}

bool
lp_data_file_same_columns(const LpDataFileRef *a, const LpDataFileRef *b)
{
	return a->n_fields == b->n_fields && a->n_column_indices == b->n_column_indices &&
		(a->n_fields == 0 || memcmp(a->fields, b->fields, sizeof(int32_t) * a->n_fields) == 0) &&
		(a->n_column_indices == 0 ||
		 memcmp(a->column_indices, b->column_indices, sizeof(int32_t) * a->n_column_indices) == 0);
}

bool
lp_manifest_references_file(const LpManifest *manifest, bool has_base_id,
							uint32_t base_id, const char *name)
{
	for (size_t f = 0; f < manifest->proto->n_fragments; f++)
	{
		const Lance__Table__DataFragment *fragment = manifest->proto->fragments[f];

		for (size_t d = 0; d < fragment->n_files; d++)
		{
			LpDataFileRef file;

			lp_data_file_ref_from_proto(fragment->files[d], &file);
			if (lp_data_file_in_base(&file, has_base_id, base_id) &&
				strcmp(file.path, name) == 0)
				return true;
		}
	}
	return false;
}

bool
lp_manifest_base(const LpManifest *manifest, bool has_base_id, uint32_t base_id,
				 const char *dataset_root, LpBaseLocation *base, LpError *err)
{
	if (!has_base_id)
	{
		base->path = NULL;
		base->is_dataset_root = true;
		return true;
	}
	for (size_t i = 0; i < lp_manifest_num_bases(manifest); i++)
	{
		uint32_t	id;

		lp_manifest_base_at(manifest, i, &id, base);
		if (id == base_id)
			return true;
	}
	return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
				   "dataset \"%s\" has no base path with id %d", dataset_root, (int) base_id);
}

size_t
lp_manifest_num_bases(const LpManifest *manifest)
{
	return manifest->proto->n_base_paths;
}

void
lp_manifest_base_at(const LpManifest *manifest, size_t index, uint32_t *id,
					LpBaseLocation *base)
{
	const Lance__Table__BasePath *proto = manifest->proto->base_paths[index];

	*id = proto->id;
	base->path = proto->path;
	base->is_dataset_root = proto->is_dataset_root;
}

