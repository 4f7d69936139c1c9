/*
 * lp_commit_request.c - what the transaction, the new manifest and the
 * publication of a commit share of a request (lp_commit_internal.h).
 */
#include <string.h>

#include "base/lp_alloc.h"
#include "base/lp_protobuf.h"
#include "dataset/lp_commit_internal.h"
#include "format/lp_file_tail.h"

void
lp_commit_init_data_file(Lance__Table__DataFile *data_file, const LpNewDataFile *file)
{
	uint16_t	major;
	uint16_t	minor;

	lance__table__data_file__init(data_file);
	data_file->path = (char *) file->path;
	data_file->n_fields = file->n_fields;
	data_file->fields = (int32_t *) file->fields;
	data_file->n_column_indices = file->n_fields;
	data_file->column_indices = (int32_t *) file->column_indices;
	lp_file_version_data_file_numbers(file->version, &major, &minor);
	data_file->file_major_version = major;
	data_file->file_minor_version = minor;
	data_file->file_size_bytes = file->size_bytes;
	if (file->has_base_id)
	{
		data_file->base_id_present_case = LANCE__TABLE__DATA_FILE__BASE_ID_PRESENT_BASE_ID;
		data_file->base_id = file->base_id;
	}
}

/*
 * The new fragments of an append, an update or an overwrite; a plain
 * append's one file becomes *single.
 */
const LpNewFragment *
lp_commit_request_fragments(const LpCommitRequest *request, LpNewFragment *single, size_t *n)
{
	if (request->kind == LP_COMMIT_APPEND && request->n_fragments == 0)
	{
		memset(single, 0, sizeof(*single));
		single->file = request->file;
		single->physical_rows = request->physical_rows;
		*n = 1;
		return single;
	}
	*n = request->n_fragments;
	return request->fragments;
}

/* A delete or an update names the fragments it deletes from. */
static bool
check_deletes_given(const LpCommitRequest *request, LpError *err)
{
	if (request->n_deletes == 0 || request->deletes == NULL)
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT, "%s needs a fragment to delete from",
					   request->kind == LP_COMMIT_UPDATE ? "an update" : "a delete");
	return true;
}

/* How many new fragments a request makes (one per group for a rewrite). */
bool
lp_commit_count_new_fragments(const LpCommitRequest *request, size_t *n, LpError *err)
{
	LpNewFragment single;

	switch (request->kind)
	{
		case LP_COMMIT_REPLACE:
			*n = 1;
			return true;
		case LP_COMMIT_DELETE:
			*n = 0;
			return check_deletes_given(request, err);
		case LP_COMMIT_UPDATE:
			*n = request->n_fragments;
			if (*n == 0 || *n > LP_COMMIT_MAX_GROUPS || request->fragments == NULL)
				return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
							   "an update adds between 1 and %d fragments", LP_COMMIT_MAX_GROUPS);
			return check_deletes_given(request, err);
		case LP_COMMIT_REWRITE:
			*n = request->n_groups;
			if (*n == 0 || *n > LP_COMMIT_MAX_GROUPS)
				return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
							   "a rewrite needs between 1 and %d groups", LP_COMMIT_MAX_GROUPS);
			return true;
		case LP_COMMIT_APPEND:
		case LP_COMMIT_OVERWRITE:
			(void) lp_commit_request_fragments(request, &single, n);
			if (*n > LP_COMMIT_MAX_GROUPS)
				return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
							   "a commit adds at most %d fragments", LP_COMMIT_MAX_GROUPS);
			if (request->kind == LP_COMMIT_OVERWRITE && request->schema == NULL)
				return lp_fail(err, LP_ERR_INVALID_ARGUMENT, "an overwrite needs a schema");
			return true;
	}
	return lp_fail(err, LP_ERR_INVALID_ARGUMENT, "unknown commit kind %d", (int) request->kind);
}

/*
 * The protobuf fields of a schema: its FileDescriptor packed and read back,
 * so the one encoding of LpSchema as lance.file.Field lives in lp_file_tail.
 */
Lance__File__FileDescriptor *
lp_commit_schema_message(const LpSchema *schema, LpError *err)
{
	LpBytes		packed;
	ProtobufCMessage *message = NULL;
	LpUnpackResult unpacked;

	if (!lp_file_descriptor_build(schema, 0, &packed, err))
		return NULL;
	unpacked = lp_protobuf_unpack(&lance__file__file_descriptor__descriptor,
								  packed.data, packed.len, &message);
	lp_free(packed.data);
	if (unpacked != LP_UNPACK_OK)
	{
		lp_fail(err, unpacked == LP_UNPACK_NO_MEMORY ? LP_ERR_NO_MEMORY : LP_ERR_INTERNAL,
				"could not encode the new schema: %s", lp_unpack_result_text(unpacked));
		return NULL;
	}
	return (Lance__File__FileDescriptor *) message;
}

void
lp_commit_free_delete_parts(LpCommitDeleteParts *parts)
{
	lp_free(parts->fragments);
	lp_free(parts->files);
	lp_free(parts->updated);
	lp_free(parts->deleted_ids);
}

/*
 * The Delete of a request (or the deletions of an Update) applied to base:
 * each touched fragment is checked (it exists, once, with the deletion file
 * the caller read it with) and either copied with its new deletion file or
 * listed as removed.  The copies share everything else with base.
 */
bool
lp_commit_build_delete_parts(const LpManifest *base, const LpCommitRequest *request,
				   LpCommitDeleteParts *parts, LpError *err)
{
	const Lance__Table__Manifest *m = base->proto;
	size_t		n = request->n_deletes;

	if (!check_deletes_given(request, err))
		return false;
	parts->fragments = lp_alloc_array(n, sizeof(*parts->fragments));
	parts->files = lp_alloc_array(n, sizeof(*parts->files));
	parts->updated = lp_alloc_array(n, sizeof(*parts->updated));
	parts->deleted_ids = lp_alloc_array(n, sizeof(*parts->deleted_ids));
	if (parts->fragments == NULL || parts->files == NULL || parts->updated == NULL ||
		parts->deleted_ids == NULL)
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");

	for (size_t i = 0; i < n; i++)
	{
		const LpDeleteFragment *entry = &request->deletes[i];
		const Lance__Table__DataFragment *old = lp_manifest_find_fragment(m, entry->fragment_id);
		const Lance__Table__DeletionFile *had;
		Lance__Table__DataFragment *fragment;
		Lance__Table__DeletionFile *file;

		if (old == NULL)
			return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
						   "fragment %llu does not exist in version %llu",
						   (unsigned long long) entry->fragment_id,
						   (unsigned long long) m->version);
		for (size_t j = 0; j < i; j++)
			if (request->deletes[j].fragment_id == entry->fragment_id)
				return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
							   "fragment %llu appears twice in a delete",
							   (unsigned long long) entry->fragment_id);
		/* the new deletion file holds the old one's rows: it must still be that one */
		had = old->deletion_file;
		if ((had != NULL) != entry->had_deletion_file ||
			(had != NULL && (had->read_version != entry->old_read_version ||
							 had->id != entry->old_id)))
			return lp_fail(err, LP_ERR_CONFLICT,
						   "the deletion file of fragment %llu changed in version %llu",
						   (unsigned long long) old->id, (unsigned long long) m->version);
		if (entry->all_deleted)
		{
			parts->deleted_ids[parts->n_deleted++] = old->id;
			continue;
		}
		/* physical_rows 0 is "not recorded" */
		if (entry->num_deleted_rows == 0 ||
			(old->physical_rows != 0 && entry->num_deleted_rows >= old->physical_rows))
			return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
						   "a deletion file cannot delete %llu of the %llu rows of fragment %llu",
						   (unsigned long long) entry->num_deleted_rows,
						   (unsigned long long) old->physical_rows,
						   (unsigned long long) old->id);
		fragment = &parts->fragments[parts->n_updated];
		file = &parts->files[parts->n_updated];
		*fragment = *old;
		lance__table__deletion_file__init(file);
		file->file_type = LANCE__TABLE__DELETION_FILE__DELETION_FILE_TYPE__BITMAP;
		file->read_version = entry->read_version;
		file->id = entry->id;
		file->num_deleted_rows = entry->num_deleted_rows;
		fragment->deletion_file = file;
		parts->updated[parts->n_updated++] = fragment;
	}
	return true;
}
