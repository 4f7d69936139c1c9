/*
 * lp_commit_manifest.c - the manifest of the version a commit makes
 * (lp_commit_manifest.h).
 *
 * The new manifest is the base manifest with a few fields changed.  It is
 * built as a shallow copy of the base's protobuf-c message whose changed
 * members point at storage owned here, so everything not touched (schema,
 * config, unknown fields, ...) is written back exactly as it was read.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "base/lp_alloc.h"
#include "base/lp_path.h"
#include "base/lp_protobuf.h"
#include "dataset/lp_commit_internal.h"
#include "dataset/lp_commit_manifest.h"
#include "dataset/lp_fragment.h"
#include "dataset/lp_row_ids.h"
#include "format/lp_file_tail.h"
#include "format/lp_roaring.h"
#include "rowids.pb-c.h"

static bool
check_rows(uint64_t rows, LpError *err)
{
	/* A row address is fragment id << 32 | row offset; 0 means "unknown". */
	if (rows == 0 || rows > UINT32_MAX)
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
					   "a fragment must hold between 1 and %u rows, not %llu",
					   UINT32_MAX, (unsigned long long) rows);
	return true;
}


static bool
check_new_file(const LpManifest *base, const LpNewDataFile *file, LpError *err)
{
	const Lance__Table__Manifest *m = base->proto;
	const char *format = lp_manifest_data_format(base);
	LpFileVersion dataset_version;

	if (file->path == NULL || file->path[0] == '\0' ||
		strchr(file->path, '/') != NULL || strcmp(file->path, "..") == 0)
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
					   "data file name \"%s\" is not a plain file name",
					   file->path ? file->path : "");
	if (file->version == LP_FILE_VERSION_LEGACY)
		return lp_fail(err, LP_ERR_UNSUPPORTED,
					   "data file \"%s\" is a legacy (v1) file", file->path);
	if (format == NULL)
		return lp_fail(err, LP_ERR_UNSUPPORTED,
					   "manifest file \"%s\" records no data storage format",
					   base->name);
	if (!lp_manifest_data_version(base, &dataset_version) || dataset_version != file->version)
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
					   "data file \"%s\" has format version %s but the dataset stores version %s",
					   file->path, lp_file_version_name(file->version), format);
	if (file->size_bytes == 0)
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
					   "data file \"%s\" has no size", file->path);
	if (file->n_fields == 0 || file->fields == NULL || file->column_indices == NULL)
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
					   "data file \"%s\" holds no fields", file->path);
	for (size_t i = 0; i < file->n_fields; i++)
	{
		if (lp_manifest_find_field(m, file->fields[i]) == NULL)
			return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
						   "field id %d of data file \"%s\" is not in the schema of version %llu",
						   file->fields[i], file->path,
						   (unsigned long long) m->version);
		for (size_t j = 0; j < i; j++)
			if (file->fields[j] == file->fields[i])
				return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
							   "field id %d appears twice in data file \"%s\"",
							   file->fields[i], file->path);
		if (file->column_indices[i] < -1 ||
			file->column_indices[i] >= (int64_t) file->n_fields)
			return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
						   "column index %d of data file \"%s\" is out of range",
						   file->column_indices[i], file->path);
	}
	if (file->has_base_id)
	{
		bool		found = false;

		for (size_t i = 0; i < m->n_base_paths; i++)
			if (m->base_paths[i]->id == file->base_id)
				found = true;
		if (!found)
			return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
						   "base id %u of data file \"%s\" is not a base path of the dataset",
						   file->base_id, file->path);
	}
	return true;
}


/* The id the next new fragment gets. */


/* Storage for everything the new manifest points at that the base does not own. */
typedef struct ManifestBuild
{
	Lance__Table__Manifest manifest;
	Lance__Table__Timestamp timestamp;
	Lance__Table__Manifest__WriterVersion writer_version;
	Lance__Table__DataFragment **fragments;
	Lance__Table__DataFragment *new_fragments;
	Lance__Table__DataFile *new_files;
	Lance__Table__DataFile **new_file_pointers;
	Lance__Table__DataFile **replaced_files;
	uint8_t   **row_meta;		/* serialized row ids and versions of new fragments */
	size_t		n_row_meta;
	size_t		row_meta_capacity;
	uint8_t    *index_section;	/* a rewrite's, with new fragment bitmaps */
	size_t		index_section_len;
	Lance__File__FileDescriptor *descriptor;	/* overwrite: the new schema */
	LpCommitDeleteParts deletes;		/* delete, update */
	Lance__Table__Manifest__DataStorageFormat data_format;
	bool		drop_indexes;	/* overwrite */
} ManifestBuild;

static void
free_build(ManifestBuild *build)
{
	lp_free(build->fragments);
	lp_free(build->new_fragments);
	lp_free(build->new_files);
	lp_free(build->new_file_pointers);
	lp_free(build->replaced_files);
	for (size_t i = 0; i < build->n_row_meta; i++)
		lp_free(build->row_meta[i]);
	lp_free(build->row_meta);
	lp_free(build->index_section);
	lp_protobuf_free((ProtobufCMessage *) build->descriptor);
	lp_commit_free_delete_parts(&build->deletes);
}

static uint8_t *
pack_message(const ProtobufCMessage *message, size_t *len)
{
	uint8_t    *data;

	*len = protobuf_c_message_get_packed_size(message);
	data = lp_alloc(*len > 0 ? *len : 1);
	if (data != NULL)
		protobuf_c_message_pack(message, data);
	return data;
}

/* Keep data until the build is freed; false (data freed) when out of memory. */
static bool
own_row_meta(ManifestBuild *build, uint8_t *data, LpError *err)
{
	if (data == NULL)
		return false;
	if (build->n_row_meta == build->row_meta_capacity)
	{
		size_t		capacity = build->row_meta_capacity > 0 ? build->row_meta_capacity * 2 : 8;
		uint8_t   **wider = lp_alloc_array(capacity, sizeof(*wider));

		if (wider == NULL)
		{
			lp_free(data);
			return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
		}
		if (build->n_row_meta > 0)
			memcpy(wider, build->row_meta, build->n_row_meta * sizeof(*wider));
		lp_free(build->row_meta);
		build->row_meta = wider;
		build->row_meta_capacity = capacity;
	}
	build->row_meta[build->n_row_meta++] = data;
	return true;
}

/* Attach serialized row ids and versions (owned by build from now on). */
static bool
set_row_meta(ManifestBuild *build, Lance__Table__DataFragment *fragment,
			 uint8_t *row_ids, size_t row_ids_len, uint8_t *created_at, size_t created_at_len,
			 uint8_t *last_updated_at, size_t last_updated_at_len, LpError *err)
{
	bool		owned = own_row_meta(build, row_ids, err);

	owned = (owned ? own_row_meta(build, created_at, err) : (lp_free(created_at), false));
	owned = (owned ? own_row_meta(build, last_updated_at, err) : (lp_free(last_updated_at), false));
	if (!owned)
		return false;
	fragment->row_id_sequence_case = LANCE__TABLE__DATA_FRAGMENT__ROW_ID_SEQUENCE_INLINE_ROW_IDS;
	fragment->inline_row_ids.data = row_ids;
	fragment->inline_row_ids.len = row_ids_len;
	fragment->created_at_version_sequence_case =
		LANCE__TABLE__DATA_FRAGMENT__CREATED_AT_VERSION_SEQUENCE_INLINE_CREATED_AT_VERSIONS;
	fragment->inline_created_at_versions.data = created_at;
	fragment->inline_created_at_versions.len = created_at_len;
	fragment->last_updated_at_version_sequence_case =
		LANCE__TABLE__DATA_FRAGMENT__LAST_UPDATED_AT_VERSION_SEQUENCE_INLINE_LAST_UPDATED_AT_VERSIONS;
	fragment->inline_last_updated_at_versions.data = last_updated_at;
	fragment->inline_last_updated_at_versions.len = last_updated_at_len;
	return true;
}

/*
 * Stable row ids: a new fragment gets the next row ids as one range, and
 * created-at / last-updated-at versions of the new version for all rows
 * (Lance's assign_row_ids and build_version_meta).
 */
static bool
assign_row_ids(ManifestBuild *build, Lance__Table__DataFragment *fragment,
			   uint64_t rows, uint64_t new_version, LpError *err)
{
	Lance__Table__RowIdSequence sequence;
	Lance__Table__U64Segment segment;
	Lance__Table__U64Segment *segments[1];
	Lance__Table__U64Segment__Range range;
	Lance__Table__RowVersionSequence versions;
	Lance__Table__RowVersionRun run;
	Lance__Table__RowVersionRun *runs[1];
	Lance__Table__U64Segment span;
	Lance__Table__U64Segment__Range span_range;
	size_t		row_ids_len;
	size_t		versions_len;
	uint8_t    *row_ids;
	uint8_t    *created_at;
	uint8_t    *last_updated_at;
	uint64_t	next_row_id = build->manifest.next_row_id;

	if (next_row_id > UINT64_MAX - rows)
		return lp_fail(err, LP_ERR_UNSUPPORTED, "the dataset has used every row id");

	lance__table__u64_segment__range__init(&range);
	range.start = next_row_id;
	range.end = next_row_id + rows;
	lance__table__u64_segment__init(&segment);
	segment.segment_case = LANCE__TABLE__U64_SEGMENT__SEGMENT_RANGE;
	segment.range = &range;
	segments[0] = &segment;
	lance__table__row_id_sequence__init(&sequence);
	sequence.n_segments = 1;
	sequence.segments = segments;

	lance__table__u64_segment__range__init(&span_range);
	span_range.start = 0;
	span_range.end = rows;
	lance__table__u64_segment__init(&span);
	span.segment_case = LANCE__TABLE__U64_SEGMENT__SEGMENT_RANGE;
	span.range = &span_range;
	lance__table__row_version_run__init(&run);
	run.span = &span;
	run.version = new_version;
	runs[0] = &run;
	lance__table__row_version_sequence__init(&versions);
	versions.n_runs = 1;
	versions.runs = runs;

	row_ids = pack_message((const ProtobufCMessage *) &sequence, &row_ids_len);
	created_at = pack_message((const ProtobufCMessage *) &versions, &versions_len);
	last_updated_at = pack_message((const ProtobufCMessage *) &versions, &versions_len);
	if (row_ids == NULL || created_at == NULL || last_updated_at == NULL)
	{
		lp_free(row_ids);
		lp_free(created_at);
		lp_free(last_updated_at);
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
	}
	if (!set_row_meta(build, fragment, row_ids, row_ids_len, created_at, versions_len,
					  last_updated_at, versions_len, err))
		return false;
	build->manifest.next_row_id = next_row_id + rows;
	return true;
}

/*
 * Stable row ids of rows an update moved into a new fragment: their own row
 * ids and created-at versions, the new version as last-updated-at (Lance's
 * Update in its rewrite-rows mode); next_row_id stays.
 */
static bool
keep_moved_row_ids(ManifestBuild *build, Lance__Table__DataFragment *fragment,
				   const LpNewFragment *moved, uint64_t new_version, LpError *err)
{
	uint64_t	rows = moved->physical_rows;
	uint64_t   *updated;
	uint8_t    *row_ids;
	uint8_t    *created_at = NULL;
	uint8_t    *last_updated_at = NULL;
	size_t		row_ids_len;
	size_t		created_at_len;
	size_t		last_updated_at_len;

	if (moved->moved_created_at == NULL)
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
					   "moved rows need the versions they were created in");
	updated = lp_alloc_array(rows > 0 ? (size_t) rows : 1, sizeof(uint64_t));
	if (updated == NULL)
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
	for (uint64_t i = 0; i < rows; i++)
		updated[i] = new_version;
	row_ids = lp_row_ids_pack(moved->moved_row_ids, rows, &row_ids_len, err);
	if (row_ids != NULL)
		created_at = lp_row_versions_pack(moved->moved_created_at, rows, &created_at_len, err);
	if (created_at != NULL)
		last_updated_at = lp_row_versions_pack(updated, rows, &last_updated_at_len, err);
	lp_free(updated);
	if (last_updated_at == NULL)
	{
		lp_free(row_ids);
		lp_free(created_at);
		return false;
	}
	return set_row_meta(build, fragment, row_ids, row_ids_len, created_at, created_at_len,
						last_updated_at, last_updated_at_len, err);
}

/*
 * Stable row ids of a rewrite group's new fragment: the old fragments' row
 * ids and versions, in order, without the rows the new file leaves out.
 */
static bool
carry_row_ids(ManifestBuild *build, const LpManifest *base, const LpRewriteGroup *group,
			  size_t first, Lance__Table__DataFragment *fragment, LpError *err)
{
	LpRowMeta	meta;
	uint8_t    *row_ids;
	uint8_t    *created_at;
	uint8_t    *last_updated_at;
	size_t		row_ids_len;
	size_t		created_at_len;
	size_t		last_updated_at_len;
	bool		ok;

	lp_row_meta_init(&meta, group->physical_rows);
	ok = true;
	for (size_t j = 0; ok && j < group->n_old; j++)
	{
		const LpDeletions *deleted = NULL;

		if (group->deletions != NULL && group->deletions[j].has_deletion_file)
		{
			deleted = group->deletions[j].deleted;
			if (deleted == NULL)
				ok = lp_fail(err, LP_ERR_INVALID_ARGUMENT,
							 "the rows deleted from fragment %llu are needed to carry its stable row ids",
							 (unsigned long long) group->old_fragment_ids[j]);
		}
		if (ok)
			ok = lp_row_meta_append(&meta, base, first + j, deleted, err);
	}
	ok = ok && lp_row_meta_pack(&meta, &row_ids, &row_ids_len, &created_at, &created_at_len,
								&last_updated_at, &last_updated_at_len, err);
	lp_row_meta_free(&meta);
	return ok && set_row_meta(build, fragment, row_ids, row_ids_len, created_at, created_at_len,
							  last_updated_at, last_updated_at_len, err);
}

/*
 * New fragments of one data file each, placed after the fragments the new
 * manifest holds so far, with the next fragment ids of base.
 */
static bool
add_new_fragments(ManifestBuild *build, const LpManifest *base,
				  const LpNewFragment *fragments, size_t n,
				  uint64_t *new_fragment_ids, LpError *err)
{
	const Lance__Table__Manifest *m = base->proto;
	size_t		n_kept = build->manifest.n_fragments;
	Lance__Table__DataFragment **all;
	uint64_t	id;

	for (size_t i = 0; i < n; i++)
		if (!check_new_file(base, &fragments[i].file, err) ||
			!check_rows(fragments[i].physical_rows, err))
			return false;
	if (!lp_manifest_next_fragment_id(base, &id, err))
		return false;
	if (id + n - 1 > UINT32_MAX)
		return lp_fail(err, LP_ERR_UNSUPPORTED, "the dataset has used every fragment id");
	all = lp_alloc_array(n_kept + n, sizeof(*all));
	if (all == NULL)
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
	if (n_kept > 0)
		memcpy(all, build->manifest.fragments, n_kept * sizeof(*all));
	/* the kept fragments may be build's own list (an update's deletions) */
	lp_free(build->fragments);
	build->fragments = all;
	build->new_fragments = lp_alloc_array(n, sizeof(*build->new_fragments));
	build->new_files = lp_alloc_array(n, sizeof(*build->new_files));
	build->new_file_pointers = lp_alloc_array(n, sizeof(*build->new_file_pointers));
	if (build->new_fragments == NULL || build->new_files == NULL ||
		build->new_file_pointers == NULL)
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");

	for (size_t i = 0; i < n; i++)
	{
		Lance__Table__DataFragment *fragment = &build->new_fragments[i];

		lp_commit_init_data_file(&build->new_files[i], &fragments[i].file);
		build->new_file_pointers[i] = &build->new_files[i];
		lance__table__data_fragment__init(fragment);
		fragment->id = id + i;
		fragment->n_files = 1;
		fragment->files = &build->new_file_pointers[i];
		fragment->physical_rows = fragments[i].physical_rows;
		if ((m->reader_feature_flags & LP_FLAG_STABLE_ROW_IDS) &&
			!(fragments[i].moved_row_ids != NULL ?
			  keep_moved_row_ids(build, fragment, &fragments[i], m->version + 1, err) :
			  assign_row_ids(build, fragment, fragments[i].physical_rows, m->version + 1, err)))
			return false;
		build->fragments[n_kept + i] = fragment;
		if (new_fragment_ids != NULL)
			new_fragment_ids[i] = id + i;
	}
	build->manifest.n_fragments = n_kept + n;
	build->manifest.fragments = build->fragments;
	build->manifest.max_fragment_id_present_case =
		LANCE__TABLE__MANIFEST__MAX_FRAGMENT_ID_PRESENT_MAX_FRAGMENT_ID;
	build->manifest.max_fragment_id = (uint32_t) (id + n - 1);
	return true;
}

static bool
build_append(ManifestBuild *build, const LpManifest *base,
			 const LpCommitRequest *request, uint64_t *new_fragment_ids,
			 LpError *err)
{
	LpNewFragment single;
	size_t		n;
	const LpNewFragment *fragments = lp_commit_request_fragments(request, &single, &n);

	if (n == 0)
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT, "an append needs a fragment");
	return add_new_fragments(build, base, fragments, n, new_fragment_ids, err);
}

/* A file of an overwrite: checked against the new schema and format. */
static bool
check_overwrite_file(const LpCommitRequest *request, const LpNewFragment *fragment,
					 LpError *err)
{
	const LpNewDataFile *file = &fragment->file;

	if (file->path == NULL || file->path[0] == '\0' ||
		strchr(file->path, '/') != NULL || strcmp(file->path, "..") == 0)
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
					   "data file name \"%s\" is not a plain file name",
					   file->path ? file->path : "");
	if (file->version != request->data_version)
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
					   "data file \"%s\" has format version %s but the overwrite stores version %s",
					   file->path, lp_file_version_name(file->version),
					   lp_file_version_name(request->data_version));
	if (file->size_bytes == 0 || file->n_fields == 0 ||
		file->fields == NULL || file->column_indices == NULL)
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
					   "data file \"%s\" has no size or no fields", file->path);
	if (file->has_base_id)
		return lp_fail(err, LP_ERR_UNSUPPORTED,
					   "an overwrite writes its data files in the dataset root");
	for (size_t i = 0; i < file->n_fields; i++)
		if (lp_schema_find_field(request->schema, file->fields[i]) < 0)
			return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
						   "field id %d of data file \"%s\" is not in the new schema",
						   file->fields[i], file->path);
	return check_rows(fragment->physical_rows, err);
}

/*
 * Lance's Overwrite: the new schema and fragments (ids from 0), the data
 * storage format of the new files; indexes go, config and bases stay.
 */
static bool
build_overwrite(ManifestBuild *build, const LpManifest *base,
				const LpCommitRequest *request, uint64_t *new_fragment_ids,
				LpError *err)
{
	size_t		n = request->n_fragments;

	if (request->schema == NULL)
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT, "an overwrite needs a schema");
	if (request->data_version == LP_FILE_VERSION_LEGACY)
		return lp_fail(err, LP_ERR_UNSUPPORTED, "an overwrite cannot write legacy (v1) files");
	for (size_t i = 0; i < n; i++)
		if (!check_overwrite_file(request, &request->fragments[i], err))
			return false;
	build->descriptor = lp_commit_schema_message(request->schema, err);
	if (build->descriptor == NULL)
		return false;
	build->fragments = lp_alloc_array(n + 1, sizeof(*build->fragments));
	build->new_fragments = lp_alloc_array(n + 1, sizeof(*build->new_fragments));
	build->new_files = lp_alloc_array(n + 1, sizeof(*build->new_files));
	build->new_file_pointers = lp_alloc_array(n + 1, sizeof(*build->new_file_pointers));
	if (build->fragments == NULL || build->new_fragments == NULL ||
		build->new_files == NULL || build->new_file_pointers == NULL)
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
	for (size_t i = 0; i < n; i++)
	{
		Lance__Table__DataFragment *fragment = &build->new_fragments[i];

		lp_commit_init_data_file(&build->new_files[i], &request->fragments[i].file);
		build->new_file_pointers[i] = &build->new_files[i];
		lance__table__data_fragment__init(fragment);
		fragment->id = i;
		fragment->n_files = 1;
		fragment->files = &build->new_file_pointers[i];
		fragment->physical_rows = request->fragments[i].physical_rows;
		/* row ids go on from the dataset's next one (Lance's Overwrite) */
		if ((base->proto->reader_feature_flags & LP_FLAG_STABLE_ROW_IDS) &&
			!assign_row_ids(build, fragment, fragment->physical_rows,
							base->proto->version + 1, err))
			return false;
		build->fragments[i] = fragment;
		if (new_fragment_ids != NULL)
			new_fragment_ids[i] = i;
	}
	build->manifest.n_fragments = n;
	build->manifest.fragments = build->fragments;
	build->manifest.max_fragment_id_present_case = n > 0 ?
		LANCE__TABLE__MANIFEST__MAX_FRAGMENT_ID_PRESENT_MAX_FRAGMENT_ID :
		LANCE__TABLE__MANIFEST__MAX_FRAGMENT_ID_PRESENT__NOT_SET;
	build->manifest.max_fragment_id = n > 0 ? (uint32_t) (n - 1) : 0;
	if (!(base->proto->reader_feature_flags & LP_FLAG_STABLE_ROW_IDS))
		build->manifest.next_row_id = 0;
	build->manifest.n_fields = build->descriptor->schema->n_fields;
	build->manifest.fields = build->descriptor->schema->fields;
	build->manifest.n_schema_metadata = build->descriptor->schema->n_metadata;
	build->manifest.schema_metadata = (Lance__Table__Manifest__SchemaMetadataEntry **)
		build->descriptor->schema->metadata;
	lance__table__manifest__data_storage_format__init(&build->data_format);
	build->data_format.file_format = (char *) "lance";
	build->data_format.version = (char *) lp_file_version_name(request->data_version);
	build->manifest.data_format = &build->data_format;
	build->manifest.index_section_present_case =
		LANCE__TABLE__MANIFEST__INDEX_SECTION_PRESENT__NOT_SET;
	build->drop_indexes = true;
	return true;
}

static bool
same_field_set(const Lance__Table__DataFile *file, const LpNewDataFile *new_file,
			   bool *overlaps)
{
	size_t		common = 0;

	for (size_t i = 0; i < file->n_fields; i++)
		for (size_t j = 0; j < new_file->n_fields; j++)
			if (file->fields[i] == new_file->fields[j])
				common++;
	*overlaps = common > 0;
	return common == file->n_fields && common == new_file->n_fields;
}

static bool
build_replace(ManifestBuild *build, const LpManifest *base,
			  const LpCommitRequest *request, LpError *err)
{
	const Lance__Table__Manifest *m = base->proto;
	const LpNewDataFile *file = &request->file;
	size_t		position = m->n_fragments;
	Lance__Table__DataFragment *old;
	size_t		replaced = SIZE_MAX;

	if (!check_new_file(base, file, err))
		return false;
	for (size_t i = 0; i < m->n_fragments; i++)
		if (m->fragments[i]->id == request->fragment_id)
			position = i;
	if (position == m->n_fragments)
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
					   "fragment %llu does not exist in version %llu",
					   (unsigned long long) request->fragment_id,
					   (unsigned long long) m->version);
	old = m->fragments[position];
	if (old->physical_rows != request->physical_rows)
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
					   "data file \"%s\" has %llu rows but fragment %llu has %llu",
					   file->path, (unsigned long long) request->physical_rows,
					   (unsigned long long) old->id,
					   (unsigned long long) old->physical_rows);
	for (size_t i = 0; i < old->n_files; i++)
	{
		bool		overlaps;

		if (same_field_set(old->files[i], file, &overlaps))
			replaced = i;
		else if (overlaps)
			return lp_fail(err, LP_ERR_UNSUPPORTED,
						   "data file \"%s\" of fragment %llu holds only some of the fields being replaced",
						   old->files[i]->path, (unsigned long long) old->id);
	}

	build->fragments = lp_alloc_array(m->n_fragments, sizeof(*build->fragments));
	build->new_fragments = lp_alloc0(sizeof(*build->new_fragments));
	build->new_files = lp_alloc0(sizeof(*build->new_files));
	build->replaced_files = lp_alloc_array(old->n_files + 1, sizeof(*build->replaced_files));
	if (build->fragments == NULL || build->new_fragments == NULL ||
		build->new_files == NULL || build->replaced_files == NULL)
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");

	lp_commit_init_data_file(build->new_files, file);
	if (old->n_files > 0)
		memcpy(build->replaced_files, old->files, old->n_files * sizeof(*old->files));
	*build->new_fragments = *old;
	build->new_fragments->files = build->replaced_files;
	if (replaced != SIZE_MAX)
		build->replaced_files[replaced] = build->new_files;
	else
	{
		/* No file held these fields (they were all null): add one. */
		build->replaced_files[old->n_files] = build->new_files;
		build->new_fragments->n_files = old->n_files + 1;
	}

	memcpy(build->fragments, m->fragments, m->n_fragments * sizeof(*build->fragments));
	build->fragments[position] = build->new_fragments;
	build->manifest.fragments = build->fragments;
	return true;
}

/* The entry of request->rewritten_indices remapping index, or NULL. */
static const LpRewrittenIndex *
rewritten_entry(const LpCommitRequest *request, const Lance__Table__IndexMetadata *index)
{
	for (size_t r = 0; r < request->n_rewritten_indices; r++)
		if (index->uuid != NULL && index->uuid->uuid.len == 16 &&
			memcmp(index->uuid->uuid.data, request->rewritten_indices[r].old_uuid, 16) == 0)
			return &request->rewritten_indices[r];
	return NULL;
}

/*
 * The fragments each index covers after a rewrite, as Lance recalculates
 * them (recalculate_fragment_bitmap): a group wholly covered is replaced by
 * its new fragment; a group partly covered is refused.  With stable row
 * ids the index stays as it is.  Without them an index keys on row
 * addresses, which a rewrite moves: a covered group needs the index
 * remapped (request->rewritten_indices), and the remapped one is listed
 * under its new UUID (its list of files, which are the old ones, dropped);
 * an index that covers a group but was not remapped (one created since the
 * rewrite read the dataset) is refused.
 */
static bool
rewrite_index_section(ManifestBuild *build, const LpManifest *base, const LpCommitRequest *request,
					  uint64_t first_new_id, LpError *err)
{
	const LpRewriteGroup *groups = request->groups;
	size_t		n_groups = request->n_groups;
	bool		stable = (base->proto->reader_feature_flags & LP_FLAG_STABLE_ROW_IDS) != 0;
	Lance__Table__IndexSection *section;
	uint64_t	num_bits = first_new_id + n_groups;
	uint8_t    *covered = NULL;
	uint32_t   *members = NULL;
	uint8_t   **bitmaps;
	ProtobufCBinaryData *originals;
	ProtobufCBinaryData *original_uuids;
	size_t	   *original_n_files;
	size_t		n_found = 0;
	bool		ok_allocated;
	bool		changed = false;
	bool		ok = true;

	if (!lp_manifest_index_section(base, &section, err))
		return false;
	if (section == NULL)
		return request->n_rewritten_indices == 0 ||
			lp_fail(err, LP_ERR_CONFLICT, "the indexes the rewrite remapped are gone from version %llu",
					(unsigned long long) base->proto->version);
	bitmaps = lp_alloc_array(section->n_indices + 1, sizeof(*bitmaps));
	originals = lp_alloc_array(section->n_indices + 1, sizeof(*originals));
	original_uuids = lp_alloc_array(section->n_indices + 1, sizeof(*original_uuids));
	original_n_files = lp_alloc_array(section->n_indices + 1, sizeof(*original_n_files));
	covered = lp_alloc((size_t) (num_bits / 8 + 1));
	members = lp_alloc_array((size_t) num_bits, sizeof(uint32_t));
	if (bitmaps == NULL || originals == NULL || original_uuids == NULL ||
		original_n_files == NULL || covered == NULL || members == NULL)
		ok = lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
	ok_allocated = ok;
	for (size_t i = 0; ok && i < section->n_indices; i++)
	{
		bitmaps[i] = NULL;
		original_uuids[i].data = NULL;
	}
	for (size_t i = 0; ok && i < section->n_indices; i++)
	{
		Lance__Table__IndexMetadata *index = section->indices[i];
		const LpRewrittenIndex *rewritten = rewritten_entry(request, index);
		uint64_t	count;
		size_t		n_members = 0;

		n_found += rewritten != NULL;
		if (index->fragment_bitmap.len == 0)
			continue;
		memset(covered, 0, (size_t) (num_bits / 8 + 1));
		if (!lp_roaring32_expand(index->fragment_bitmap.data, index->fragment_bitmap.len,
								 "fragment bitmap of an index", covered, num_bits, &count, err))
		{
			ok = false;
			break;
		}
		for (size_t g = 0; ok && g < n_groups; g++)
		{
			size_t		n_covered = 0;

			for (size_t j = 0; j < groups[g].n_old; j++)
			{
				uint64_t	id = groups[g].old_fragment_ids[j];

				n_covered += (covered[id / 8] >> (id % 8)) & 1;
			}
			if (n_covered == 0)
				continue;
			if (!stable && rewritten == NULL && request->n_rewritten_indices == 0)
				ok = lp_fail(err, LP_ERR_UNSUPPORTED,
							 "index \"%s\" covers fragments of rewrite group %zu; rewriting them would need the index remapped",
							 index->name, g);
			else if (!stable && rewritten == NULL)
				ok = lp_fail(err, LP_ERR_CONFLICT,
							 "index \"%s\" of version %llu covers fragments of rewrite group %zu and was not remapped",
							 index->name, (unsigned long long) base->proto->version, g);
			else if (n_covered != groups[g].n_old)
				ok = lp_fail(err, LP_ERR_INVALID_ARGUMENT,
							 "rewrite group %zu mixes fragments index \"%s\" covers with fragments it does not",
							 g, index->name);
			for (size_t j = 0; ok && j < groups[g].n_old; j++)
			{
				uint64_t	id = groups[g].old_fragment_ids[j];

				covered[id / 8] &= (uint8_t) ~(1u << (id % 8));
			}
			if (ok)
				covered[(first_new_id + g) / 8] |= (uint8_t) (1u << ((first_new_id + g) % 8));
			changed = true;
		}
		for (uint64_t id = 0; ok && id < num_bits; id++)
			if ((covered[id / 8] >> (id % 8)) & 1)
				members[n_members++] = (uint32_t) id;
		originals[i] = index->fragment_bitmap;
		if (ok && !lp_roaring32_serialize(members, n_members, &bitmaps[i],
										  &index->fragment_bitmap.len, err))
			ok = false;
		if (ok)
			index->fragment_bitmap.data = bitmaps[i];
		if (ok && rewritten != NULL)
		{
			original_uuids[i] = index->uuid->uuid;
			original_n_files[i] = index->n_files;
			index->uuid->uuid.data = (uint8_t *) rewritten->new_uuid;
			index->n_files = 0;
		}
	}
	if (ok && n_found != request->n_rewritten_indices)
		ok = lp_fail(err, LP_ERR_CONFLICT,
					 "an index the rewrite remapped is gone from version %llu",
					 (unsigned long long) base->proto->version);
	if (ok && changed)
	{
		build->index_section = pack_message((const ProtobufCMessage *) section,
											&build->index_section_len);
		if (build->index_section == NULL)
			ok = lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
	}
	/* the section's own bitmaps, UUIDs and files back in place, so that freeing it frees them */
	for (size_t i = 0; ok_allocated && i < section->n_indices; i++)
	{
		Lance__Table__IndexMetadata *index = section->indices[i];

		if (bitmaps[i] != NULL)
		{
			index->fragment_bitmap = originals[i];
			lp_free(bitmaps[i]);
		}
		if (original_uuids[i].data != NULL)
		{
			index->uuid->uuid = original_uuids[i];
			index->n_files = original_n_files[i];
		}
	}
	lp_free(bitmaps);
	lp_free(originals);
	lp_free(original_uuids);
	lp_free(original_n_files);
	lp_free(covered);
	lp_free(members);
	lp_protobuf_free((ProtobufCMessage *) section);
	return ok;
}

static bool
build_rewrite(ManifestBuild *build, const LpManifest *base,
			  const LpCommitRequest *request, uint64_t *new_fragment_ids,
			  LpError *err)
{
	const Lance__Table__Manifest *m = base->proto;
	size_t		n_groups = request->n_groups;
	size_t		n_out = 0;
	uint64_t	next_id;
	size_t	   *group_start;

	if (n_groups == 0 || n_groups > LP_COMMIT_MAX_GROUPS)
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
					   "a rewrite needs between 1 and %d groups", LP_COMMIT_MAX_GROUPS);
	if (!lp_manifest_next_fragment_id(base, &next_id, err))
		return false;
	if (next_id + n_groups - 1 > UINT32_MAX)
		return lp_fail(err, LP_ERR_UNSUPPORTED, "the dataset has used every fragment id");
	if (request->n_rewritten_indices > 0 && next_id != request->first_new_fragment_id)
	{
		lp_fail(err, LP_ERR_CONFLICT,
				"the fragment ids the remapped indexes name were taken by version %llu",
				(unsigned long long) m->version);
		lp_error_detail(err, "A compaction that remaps indexes names its new fragments in them; run it again to remap them for the next free ids.");
		return false;
	}

	/* Where each group starts in the fragment list (SIZE_MAX: not a start). */
	group_start = lp_alloc_array(m->n_fragments > 0 ? m->n_fragments : 1, sizeof(size_t));
	build->fragments = lp_alloc_array(m->n_fragments > 0 ? m->n_fragments : 1,
									  sizeof(*build->fragments));
	build->new_fragments = lp_alloc_array(n_groups, sizeof(*build->new_fragments));
	build->new_files = lp_alloc_array(n_groups, sizeof(*build->new_files));
	build->new_file_pointers = lp_alloc_array(n_groups, sizeof(*build->new_file_pointers));
	if (group_start == NULL || build->fragments == NULL || build->new_fragments == NULL ||
		build->new_files == NULL || build->new_file_pointers == NULL)
	{
		lp_free(group_start);
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
	}
	for (size_t i = 0; i < m->n_fragments; i++)
		group_start[i] = SIZE_MAX;

	for (size_t g = 0; g < n_groups; g++)
	{
		const LpRewriteGroup *group = &request->groups[g];
		size_t		first = m->n_fragments;
		uint64_t	rows = 0;

		if (!check_new_file(base, &group->file, err) ||
			!check_rows(group->physical_rows, err))
			goto fail;
		if (group->n_old == 0 || group->n_old > m->n_fragments)
		{
			lp_fail(err, LP_ERR_INVALID_ARGUMENT,
					"rewrite group %zu names %zu old fragments", g, group->n_old);
			goto fail;
		}
		for (size_t i = 0; i < m->n_fragments; i++)
			if (m->fragments[i]->id == group->old_fragment_ids[0])
				first = i;
		if (first == m->n_fragments)
		{
			lp_fail(err, LP_ERR_INVALID_ARGUMENT,
					"fragment %llu does not exist in version %llu",
					(unsigned long long) group->old_fragment_ids[0],
					(unsigned long long) m->version);
			goto fail;
		}
		for (size_t j = 0; j < group->n_old; j++)
		{
			const Lance__Table__DataFragment *old;

			if (first + j >= m->n_fragments ||
				m->fragments[first + j]->id != group->old_fragment_ids[j])
			{
				lp_fail(err, LP_ERR_INVALID_ARGUMENT,
						"the fragments of rewrite group %zu are not adjacent in version %llu",
						g, (unsigned long long) m->version);
				goto fail;
			}
			if (group_start[first + j] != SIZE_MAX)
			{
				lp_fail(err, LP_ERR_INVALID_ARGUMENT,
						"fragment %llu is in two rewrite groups",
						(unsigned long long) group->old_fragment_ids[j]);
				goto fail;
			}
			old = m->fragments[first + j];
			if (group->deletions != NULL && group->deletions[j].has_deletion_file)
			{
				const LpRewriteDeletions *read = &group->deletions[j];

				if (old->deletion_file == NULL || old->deletion_file->id != read->id ||
					old->deletion_file->read_version != read->read_version)
				{
					lp_fail(err, LP_ERR_CONFLICT,
							"the deletion file of fragment %llu changed in version %llu",
							(unsigned long long) old->id, (unsigned long long) m->version);
					goto fail;
				}
				rows += read->live_rows;
			}
			else if (old->deletion_file != NULL)
			{
				lp_fail(err, LP_ERR_INVALID_ARGUMENT,
						"fragment %llu has deleted rows and cannot be rewritten by copying",
						(unsigned long long) old->id);
				goto fail;
			}
			else
				rows += old->physical_rows;
			/* the first fragment of the group holds its index, the rest a marker */
			group_start[first + j] = j == 0 ? g : SIZE_MAX - 1;
		}
		if (rows != group->physical_rows)
		{
			lp_fail(err, LP_ERR_INVALID_ARGUMENT,
					"rewrite group %zu replaces %llu rows with %llu",
					g, (unsigned long long) rows,
					(unsigned long long) group->physical_rows);
			goto fail;
		}

		lp_commit_init_data_file(&build->new_files[g], &group->file);
		build->new_file_pointers[g] = &build->new_files[g];
		lance__table__data_fragment__init(&build->new_fragments[g]);
		build->new_fragments[g].id = next_id + g;
		build->new_fragments[g].n_files = 1;
		build->new_fragments[g].files = &build->new_file_pointers[g];
		build->new_fragments[g].physical_rows = group->physical_rows;
		if ((m->reader_feature_flags & LP_FLAG_STABLE_ROW_IDS) &&
			!carry_row_ids(build, base, group, first, &build->new_fragments[g], err))
			goto fail;
		if (new_fragment_ids != NULL)
			new_fragment_ids[g] = next_id + g;
	}
	if (!rewrite_index_section(build, base, request, next_id, err))
		goto fail;

	/* Each group's new fragment takes the place of its old ones. */
	for (size_t i = 0; i < m->n_fragments; i++)
	{
		if (group_start[i] == SIZE_MAX)
			build->fragments[n_out++] = m->fragments[i];
		else if (group_start[i] != SIZE_MAX - 1)
			build->fragments[n_out++] = &build->new_fragments[group_start[i]];
	}
	lp_free(group_start);
	build->manifest.n_fragments = n_out;
	build->manifest.fragments = build->fragments;
	build->manifest.max_fragment_id_present_case =
		LANCE__TABLE__MANIFEST__MAX_FRAGMENT_ID_PRESENT_MAX_FRAGMENT_ID;
	build->manifest.max_fragment_id = (uint32_t) (next_id + n_groups - 1);
	return true;

fail:
	lp_free(group_start);
	return false;
}

/*
 * Lance's Delete: updated fragments take their new deletion files, removed
 * ones go; everything else (indexes with their fragment bitmaps too) stays.
 */
static bool
build_delete(ManifestBuild *build, const LpManifest *base,
			 const LpCommitRequest *request, LpError *err)
{
	const Lance__Table__Manifest *m = base->proto;
	const LpCommitDeleteParts *parts = &build->deletes;
	size_t		n_out = 0;
	uint64_t	max_id = 0;

	if (!lp_commit_build_delete_parts(base, request, &build->deletes, err))
		return false;
	build->fragments = lp_alloc_array(m->n_fragments + 1, sizeof(*build->fragments));
	if (build->fragments == NULL)
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
	for (size_t i = 0; i < m->n_fragments; i++)
	{
		Lance__Table__DataFragment *fragment = m->fragments[i];
		bool		removed = false;

		if (fragment->id > max_id)
			max_id = fragment->id;
		for (size_t d = 0; d < parts->n_deleted; d++)
			if (parts->deleted_ids[d] == fragment->id)
				removed = true;
		for (size_t u = 0; u < parts->n_updated; u++)
			if (parts->updated[u]->id == fragment->id)
				fragment = parts->updated[u];
		if (!removed)
			build->fragments[n_out++] = fragment;
	}
	build->manifest.n_fragments = n_out;
	build->manifest.fragments = build->fragments;

	/* without the high-water mark, removing the last fragment would free its id again */
	if (m->max_fragment_id_present_case !=
		LANCE__TABLE__MANIFEST__MAX_FRAGMENT_ID_PRESENT_MAX_FRAGMENT_ID &&
		m->n_fragments > 0 && max_id <= UINT32_MAX)
	{
		build->manifest.max_fragment_id_present_case =
			LANCE__TABLE__MANIFEST__MAX_FRAGMENT_ID_PRESENT_MAX_FRAGMENT_ID;
		build->manifest.max_fragment_id = (uint32_t) max_id;
	}
	return true;
}

/*
 * Lance's Update of rewritten rows: the delete, then the new rows' fragments
 * after the fragments left, with ids after every id the base has used.
 */
static bool
build_update(ManifestBuild *build, const LpManifest *base,
			 const LpCommitRequest *request, uint64_t *new_fragment_ids,
			 LpError *err)
{
	size_t		n_new;

	if (!lp_commit_count_new_fragments(request, &n_new, err))
		return false;
	return build_delete(build, base, request, err) &&
		add_new_fragments(build, base, request->fragments, n_new, new_fragment_ids, err);
}

static bool
same_data_file(const Lance__Table__DataFile *existing, const LpNewDataFile *file)
{
	LpDataFileRef ref;

	lp_data_file_ref_from_proto(existing, &ref);
	return strcmp(ref.path, file->path) == 0 &&
		lp_data_file_in_base(&ref, file->has_base_id, file->base_id);
}

static bool
check_file_is_new(const LpManifest *base, const LpNewDataFile *file, LpError *err)
{
	for (size_t f = 0; f < base->proto->n_fragments; f++)
	{
		const Lance__Table__DataFragment *fragment = base->proto->fragments[f];

		for (size_t d = 0; d < fragment->n_files; d++)
			if (same_data_file(fragment->files[d], file))
			{
				lp_fail(err, LP_ERR_ALREADY_COMMITTED,
						"data file \"%s\" is already part of fragment %llu of version %llu",
						file->path, (unsigned long long) fragment->id,
						(unsigned long long) base->proto->version);
				lp_error_detail(err, "A data file is committed once; committing it again would repeat its rows.");
				return false;
			}
	}
	return true;
}

/*
 * Every file a request adds must be new to the base version.  Checked on
 * every rebuild, so two writers committing the same file cannot both land.
 */
static bool
check_files_are_new(const LpManifest *base, const LpCommitRequest *request,
					LpError *err)
{
	if (request->kind == LP_COMMIT_APPEND || request->kind == LP_COMMIT_UPDATE)
	{
		LpNewFragment single;
		size_t		n;
		const LpNewFragment *fragments = lp_commit_request_fragments(request, &single, &n);

		for (size_t f = 0; f < n; f++)
			if (!check_file_is_new(base, &fragments[f].file, err))
				return false;
		return true;
	}
	/* an overwrite drops every fragment of the base; a delete adds no file */
	if (request->kind == LP_COMMIT_OVERWRITE || request->kind == LP_COMMIT_DELETE)
		return true;
	if (request->kind == LP_COMMIT_REPLACE)
		return check_file_is_new(base, &request->file, err);
	for (size_t g = 0; g < request->n_groups; g++)
		if (!check_file_is_new(base, &request->groups[g].file, err))
			return false;
	return true;
}

bool
lp_commit_build_manifest(const LpManifest *base, const LpCommitRequest *request,
						 const uint8_t *transaction, size_t transaction_len,
						 const char *transaction_file, int64_t timestamp_nanos,
						 uint8_t **out, size_t *out_len,
						 uint64_t *new_fragment_ids, LpError *err)
{
	ManifestBuild build;
	bool		ok;

	if (!check_files_are_new(base, request, err))
		return false;

	memset(&build, 0, sizeof(build));
	build.manifest = *base->proto;
	switch (request->kind)
	{
		case LP_COMMIT_APPEND:
			ok = build_append(&build, base, request, new_fragment_ids, err);
			break;
		case LP_COMMIT_REPLACE:
			ok = build_replace(&build, base, request, err);
			break;
		case LP_COMMIT_REWRITE:
			ok = build_rewrite(&build, base, request, new_fragment_ids, err);
			break;
		case LP_COMMIT_OVERWRITE:
			ok = build_overwrite(&build, base, request, new_fragment_ids, err);
			break;
		case LP_COMMIT_DELETE:
			ok = build_delete(&build, base, request, err);
			break;
		case LP_COMMIT_UPDATE:
			ok = build_update(&build, base, request, new_fragment_ids, err);
			break;
		default:
			ok = lp_fail(err, LP_ERR_INVALID_ARGUMENT, "unknown commit kind %d",
						 (int) request->kind);
			break;
	}
	if (ok && base->proto->version == UINT64_MAX)
		ok = lp_fail(err, LP_ERR_UNSUPPORTED, "the dataset has used every version number");
	if (ok)
	{
		Lance__Table__Manifest *m = &build.manifest;

		m->version = base->proto->version + 1;
		m->version_aux_data = 0;
		m->tag = (char *) protobuf_c_empty_string;
		lance__table__timestamp__init(&build.timestamp);
		build.timestamp.seconds = timestamp_nanos / 1000000000;
		build.timestamp.nanos = (int32_t) (timestamp_nanos % 1000000000);
		m->timestamp = &build.timestamp;
		lance__table__manifest__writer_version__init(&build.writer_version);
		build.writer_version.library = (char *) LP_WRITER_LIBRARY;
		build.writer_version.version = (char *) LP_WRITER_VERSION;
		m->writer_version = &build.writer_version;
		m->transaction_file = (char *) transaction_file;
		lp_manifest_compute_flags(m, &m->reader_feature_flags, &m->writer_feature_flags);
		const uint8_t *index_section = build.index_section != NULL ?
			build.index_section : base->index_section;
		size_t		index_section_len = build.index_section != NULL ?
			build.index_section_len : base->index_section_len;

		ok = lp_manifest_serialize(m, build.drop_indexes ? NULL : index_section,
								   build.drop_indexes ? 0 : index_section_len,
								   transaction, transaction_len, out, out_len, err);
	}
	free_build(&build);
	return ok;
}

LpManifest *
lp_commit_preview_manifest(const LpManifest *base, const LpCommitRequest *request, LpError *err)
{
	size_t		n_new = request->n_fragments > request->n_groups ? request->n_fragments : request->n_groups;
	uint64_t   *new_fragment_ids = lp_alloc(sizeof(uint64_t) * (n_new + 1));
	uint8_t    *bytes = NULL;
	size_t		len;
	LpManifest *preview = NULL;

	if (new_fragment_ids == NULL)
	{
		lp_fail(err, LP_ERR_NO_MEMORY, "out of memory building a manifest");
		return NULL;
	}
	if (lp_commit_build_manifest(base, request, NULL, 0, "", 0, &bytes, &len, new_fragment_ids, err))
		preview = lp_manifest_parse(lp_manifest_file_name(base), bytes, len, err);
	lp_free(bytes);
	lp_free(new_fragment_ids);
	return preview;
}
