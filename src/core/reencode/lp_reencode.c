/*
 * lp_reencode.c - re-encoding a data file's live rows (see lp_reencode.h).
 */
#include "reencode/lp_reencode.h"

#include <string.h>

#include "base/lp_alloc.h"
#include "base/lp_bytes.h"
#include "base/lp_checked.h"
#include "base/lp_interrupt.h"
#include "decode/lp_decode.h"
#include "dataset/lp_blob.h"
#include "encode/lp_file_writer.h"
#include "format/lp_columns.h"
#include "format/lp_values.h"

/* One past the last field of index's subtree (fields are in pre-order). */
static uint32_t
subtree_end(const LpSchema *schema, uint32_t index)
{
	uint32_t	end = index + 1;

	while (end < schema->num_fields)
	{
		int64_t		parent = lp_schema_find_field(schema, schema->fields[end].parent_id);

		if (parent < (int64_t) index || parent >= (int64_t) end)
			break;
		end++;
	}
	return end;
}

static bool
same_text(const char *a, const char *b)
{
	return strcmp(a != NULL ? a : "", b != NULL ? b : "") == 0;
}

/*
 * The subtrees have the same shape, types and (below the top) names.  A
 * Blob v2 field matches one: a file footer stores it childless (the
 * descriptor's pseudo-fields follow at the top level), a manifest with its
 * logical children.
 */
static bool
same_subtree(const LpSchema *a, uint32_t ai, const LpSchema *b, uint32_t bi)
{
	uint32_t	a_end = subtree_end(a, ai);
	uint32_t	b_end = subtree_end(b, bi);

	if (lp_field_is_blob_v2(&a->fields[ai]) || lp_field_is_blob_v2(&b->fields[bi]))
		return lp_field_is_blob_v2(&a->fields[ai]) && lp_field_is_blob_v2(&b->fields[bi]);
	if (a_end - ai != b_end - bi)
		return false;
	for (uint32_t k = 0; k < a_end - ai; k++)
	{
		const LpField *fa = &a->fields[ai + k];
		const LpField *fb = &b->fields[bi + k];
		int64_t		pa = lp_schema_find_field(a, fa->parent_id);
		int64_t		pb = lp_schema_find_field(b, fb->parent_id);

		if (!same_text(fa->logical_type, fb->logical_type) ||
			!same_text(fa->extension_name, fb->extension_name) ||
			(k > 0 && (!same_text(fa->name, fb->name) || pa - ai != pb - bi)))
			return false;
	}
	return true;
}

/* A top-level field; not a Blob v2 descriptor's pseudo-field (id -1, §6.5). */
static bool
is_top_level(const LpField *field)
{
	return field->parent_id == -1 && field->id != -1;
}

/* The top-level field of schema named name, or -1. */
static int64_t
find_top_level(const LpSchema *schema, const char *name)
{
	for (uint32_t i = 0; i < schema->num_fields; i++)
		if (is_top_level(&schema->fields[i]) && strcmp(schema->fields[i].name, name) == 0)
			return i;
	return -1;
}

/*
 * For each top-level field of schema, in order, the index of the source's
 * field it is written from (*map, lp_alloc'd, *num_top entries).
 */
static bool
match_fields(const LpFile *file, const LpSchema *schema, bool only_schema_fields, uint32_t **map,
			 uint32_t *num_top, LpError *err)
{
	uint32_t	top = 0;
	uint32_t	source_top = 0;

	*map = NULL;
	*num_top = 0;
	if (file->version == LP_FILE_VERSION_LEGACY)
		return lp_fail(err, LP_ERR_UNSUPPORTED,
					   "file \"%s\" is a legacy Lance v1 file, which cannot be re-encoded",
					   file->name);
	for (uint32_t i = 0; i < schema->num_fields; i++)
		top += is_top_level(&schema->fields[i]);
	for (uint32_t i = 0; i < file->schema.num_fields; i++)
		source_top += is_top_level(&file->schema.fields[i]);
	*map = lp_alloc_array(top > 0 ? top : 1, sizeof(uint32_t));
	if (*map == NULL)
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory re-encoding \"%s\"", file->name);

	for (uint32_t i = 0; i < schema->num_fields; i++)
	{
		const LpField *field = &schema->fields[i];
		int64_t		s;

		if (!is_top_level(field))
			continue;
		s = find_top_level(&file->schema, field->name);
		if (s < 0)
		{
			lp_fail(err, LP_ERR_UNSUPPORTED, "file \"%s\" has no field \"%s\"", file->name,
					field->name);
			goto fail;
		}
		if (!same_subtree(&file->schema, (uint32_t) s, schema, i))
		{
			lp_fail(err, LP_ERR_UNSUPPORTED,
					"field \"%s\" of file \"%s\" has type \"%s\", which is not the target's \"%s\"",
					field->name, file->name, file->schema.fields[s].logical_type,
					field->logical_type);
			lp_error_detail(err, "Re-encoding matches fields by name and keeps their types; every field below it must match too.");
			goto fail;
		}
		(*map)[(*num_top)++] = (uint32_t) s;
	}
	if (source_top != top && !only_schema_fields)
	{
		lp_fail(err, LP_ERR_UNSUPPORTED,
				"file \"%s\" has %u top-level fields, but the target has %u", file->name,
				source_top, top);
		lp_error_detail(err, "Re-encoding never drops a field of its source.");
		goto fail;
	}
	return true;

fail:
	lp_free(*map);
	*map = NULL;
	return false;
}

bool
lp_reencode_check(const LpFile *file, const LpSchema *schema, LpError *err)
{
	uint32_t   *map;
	uint32_t	num_top;

	if (!match_fields(file, schema, false, &map, &num_top, err))
		return false;
	lp_free(map);
	return true;
}

/*
 * Items of null fixed-size-list rows hold no value, whatever validity the
 * decoder gave them: mark them valid, so that only nulls inside valid rows
 * remain (which 2.0 files cannot store), and drop an item bitmap left with
 * no null.
 */
static void
clear_items_of_null_rows(LpArray *array)
{
	LpArray    *items;
	uint64_t	dimension;

	if (array->type->id != LP_TYPE_FIXED_SIZE_LIST || array->validity == NULL ||
		array->num_children != 1 || array->children[0]->validity == NULL)
		return;
	items = array->children[0];
	dimension = (uint64_t) array->type->fixed_size;
	for (uint64_t row = 0; row < array->length; row++)
		if (!lp_bit_get(array->validity, row))
			for (uint64_t i = row * dimension; i < (row + 1) * dimension && i < items->length; i++)
				lp_bit_set(items->validity, i, true);
	items->null_count = 0;
	for (uint64_t i = 0; i < items->length; i++)
		items->null_count += !lp_bit_get(items->validity, i);
	if (items->null_count == 0)
	{
		lp_free(items->validity);
		items->validity = NULL;
	}
}

/*
 * The next at most batch_rows live rows at or after *cursor into rows;
 * *cursor moves past them.
 */
static uint64_t
next_rows(const LpReencodeSource *source, uint64_t *cursor, uint64_t batch_rows, uint64_t *rows)
{
	uint64_t	n = 0;

	while (*cursor < source->file->num_rows && n < batch_rows)
	{
		if (source->deletions == NULL || !lp_deletions_contains(source->deletions, *cursor))
			rows[n++] = *cursor;
		(*cursor)++;
	}
	return n;
}

/* A child of a decoded Blob v2 descriptor array, by name and type, or NULL. */
static LpArray *
descriptor_child(LpArray *descriptors, const char *name, LpTypeId id)
{
	for (uint32_t c = 0; c < descriptors->num_children; c++)
		if (strcmp(descriptors->type->children[c]->name, name) == 0 &&
			descriptors->type->children[c]->id == id &&
			descriptors->children[c]->length >= descriptors->length)
			return descriptors->children[c];
	return NULL;
}

/* Make descriptor index null, giving the array a validity bitmap if it has none. */
static bool
null_descriptor(LpArray *descriptors, uint64_t index, LpError *err)
{
	if (descriptors->validity == NULL)
	{
		size_t		bytes = (size_t) ((descriptors->length + 7) / 8);

		descriptors->validity = lp_alloc(bytes > 0 ? bytes : 1);
		if (descriptors->validity == NULL)
			return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
		memset(descriptors->validity, 0xff, bytes);
	}
	lp_bit_set(descriptors->validity, index, false);
	descriptors->null_count++;
	return true;
}

/*
 * Make the descriptors of a Blob v2 field, decoded from source, name their
 * payloads as the new file holds them: Inline payloads copied into the new
 * file (an Inline payload lies at an offset of its own file), Packed and
 * Dedicated blob ids moved by the source's offset (ids are a namespace of
 * one data file).  batch_rows[i] is the source row of descriptor i.
 */
static bool
rewrite_descriptors(const LpReencodeSource *source, LpFileWriter *writer, uint64_t inline_offset,
					LpArray *descriptors, const char *field_name, const uint64_t *batch_rows,
					LpError *err)
{
	LpArray    *kind = descriptor_child(descriptors, "kind", LP_TYPE_UINT8);
	LpArray    *position = descriptor_child(descriptors, "position", LP_TYPE_UINT64);
	LpArray    *size = descriptor_child(descriptors, "size", LP_TYPE_UINT64);
	LpArray    *blob_id = descriptor_child(descriptors, "blob_id", LP_TYPE_UINT32);

	if (kind == NULL || position == NULL || size == NULL || blob_id == NULL)
		return lp_fail(err, LP_ERR_CORRUPT,
					   "blob descriptors of field \"%s\" of file \"%s\" lack a kind, position, size or blob_id",
					   field_name, source->file->name);
	for (uint64_t i = 0; i < descriptors->length; i++)
	{
		uint8_t    *id_bytes = blob_id->values + i * 4;
		uint64_t	offset = lp_le64(position->values + i * 8);
		uint64_t	length = lp_le64(size->values + i * 8);

		if (!lp_array_is_valid(descriptors, i))
			continue;
		/* a null kind is no payload (blob-v2.md §1): the writer takes it as a null descriptor */
		if (!lp_array_is_valid(kind, i))
		{
			if (!null_descriptor(descriptors, i, err))
				return false;
			continue;
		}
		if (kind->values[i] == LP_BLOB_KIND_INLINE && length > 0)
		{
			uint8_t    *payload;
			uint64_t	new_offset;
			bool		ok;

			if (offset > source->file->file_size || length > source->file->file_size - offset ||
				length > SIZE_MAX)
				return lp_fail(err, LP_ERR_CORRUPT,
							   "inline blob of row %llu of field \"%s\" of file \"%s\" lies at [%llu, %llu), outside the file's %llu bytes",
							   (unsigned long long) batch_rows[i], field_name, source->file->name,
							   (unsigned long long) offset, (unsigned long long) offset + length,
							   (unsigned long long) source->file->file_size);
			payload = lp_alloc((size_t) length);
			if (payload == NULL)
				return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory re-encoding \"%s\"",
							   source->file->name);
			ok = lp_input_read(source->input, offset, payload, (size_t) length, err) &&
				lp_file_writer_write_blob(writer, payload, length, &new_offset, err);
			lp_free(payload);
			if (!ok)
				return false;
			if (!lp_add_u64(new_offset, inline_offset, &new_offset))
				return lp_fail(err, LP_ERR_INVALID_ARGUMENT, "inline blob offsets overflow");
			lp_put_le64(position->values + i * 8, new_offset);
		}
		else if ((kind->values[i] == LP_BLOB_KIND_PACKED ||
				  kind->values[i] == LP_BLOB_KIND_DEDICATED) && source->blob_id_offset > 0)
		{
			uint64_t	id = lp_le32(id_bytes) + source->blob_id_offset;

			if (id >= LP_BLOB_ID_LIMIT)
				return lp_fail(err, LP_ERR_UNSUPPORTED,
							   "blob id %llu of row %llu of field \"%s\" of file \"%s\" cannot be moved past the other files' ids: blob ids are 32-bit",
							   (unsigned long long) lp_le32(id_bytes),
							   (unsigned long long) batch_rows[i], field_name, source->file->name);
			lp_put_le32(id_bytes, id);
		}
	}
	return true;
}

/* Write the live rows of source into writer (see lp_reencode_files). */
static bool
reencode_source(const LpReencodeSource *source, const LpSchema *schema,
				LpFileWriter *writer, uint64_t batch_rows, const LpReencodeOptions *options,
				uint64_t *written, uint64_t live, LpError *err)
{
	const LpFile *file = source->file;
	uint32_t   *map = NULL;
	uint32_t	num_top = 0;
	LpFieldReader **readers = NULL;
	LpArray   **arrays = NULL;
	uint64_t   *batch = NULL;
	uint64_t	cursor = 0;
	bool		ok = false;

	if (!match_fields(file, schema, options != NULL && options->only_schema_fields, &map, &num_top,
					  err))
		return false;
	readers = lp_alloc0(sizeof(LpFieldReader *) * (num_top > 0 ? num_top : 1));
	arrays = lp_alloc0(sizeof(LpArray *) * (num_top > 0 ? num_top : 1));
	batch = lp_alloc_array(batch_rows, sizeof(uint64_t));
	if (readers == NULL || arrays == NULL || batch == NULL)
	{
		lp_fail(err, LP_ERR_NO_MEMORY, "out of memory re-encoding \"%s\"", file->name);
		goto done;
	}
	for (uint32_t f = 0; f < num_top; f++)
		if (!lp_field_reader_open(source->input, file, map[f], &readers[f], err))
			goto done;

	for (;;)
	{
		uint64_t	n = next_rows(source, &cursor, batch_rows, batch);

		if (n == 0)
			break;
		if (lp_check_cancel(err))
			goto done;
		for (uint32_t f = 0, t = 0; f < num_top; f++, t++)
		{
			while (!is_top_level(&schema->fields[t]))
				t++;
			if (!lp_field_reader_take(readers[f], batch, n, &arrays[f], err))
				goto done;
			clear_items_of_null_rows(arrays[f]);
			if (!schema->fields[t].nullable && arrays[f]->null_count > 0)
			{
				lp_fail(err, LP_ERR_INVALID_ARGUMENT,
						"file \"%s\" has nulls in field \"%s\", which the target declares not nullable",
						file->name, schema->fields[t].name);
				goto done;
			}
			if (lp_field_is_blob_v2(&schema->fields[t]) &&
				!rewrite_descriptors(source, writer, options != NULL ? options->inline_offset : 0,
									 arrays[f], schema->fields[t].name, batch, err))
				goto done;
		}
		if (!lp_file_writer_write(writer, (const LpArray *const *) arrays, num_top, err))
			goto done;
		for (uint32_t f = 0; f < num_top; f++)
		{
			lp_array_free(arrays[f]);
			arrays[f] = NULL;
		}
		*written += n;
		if (options != NULL && options->progress != NULL)
			options->progress(options->progress_arg, *written, live);
	}
	ok = true;

done:
	for (uint32_t f = 0; f < num_top; f++)
	{
		if (arrays != NULL)
			lp_array_free(arrays[f]);
		if (readers != NULL && readers[f] != NULL)
			lp_field_reader_close(readers[f]);
	}
	lp_free(arrays);
	lp_free(readers);
	lp_free(batch);
	lp_free(map);
	return ok;
}

bool
lp_reencode_files(const LpReencodeSource *sources, uint32_t num_sources,
				  const LpSchema *schema, LpFileVersion version, LpOutput *output,
				  const LpReencodeOptions *options, uint64_t *rows, uint64_t *file_size,
				  LpError *err)
{
	uint64_t	batch_rows = options != NULL && options->batch_rows > 0 ?
		options->batch_rows : LP_REENCODE_DEFAULT_BATCH_ROWS;
	uint64_t	live = 0;
	uint64_t	written = 0;
	LpFileWriter *writer;
	bool		ok = true;

	*rows = 0;
	*file_size = 0;
	for (uint32_t s = 0; s < num_sources; s++)
	{
		const LpFile *file = sources[s].file;
		const LpDeletions *deletions = sources[s].deletions;

		if (deletions != NULL && deletions->num_rows != file->num_rows)
			return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
						   "the deletions given for file \"%s\" cover %llu rows, but it has %llu",
						   file->name, (unsigned long long) deletions->num_rows,
						   (unsigned long long) file->num_rows);
		live += file->num_rows - (deletions != NULL ? deletions->num_deleted : 0);
		if (options == NULL || !options->only_schema_fields)
		{
			if (!lp_reencode_check(file, schema, err))
				return false;
		}
	}
	writer = lp_file_writer_open(output, schema, version, err);
	if (writer == NULL)
		return false;
	for (uint32_t s = 0; s < num_sources && ok; s++)
		ok = reencode_source(&sources[s], schema, writer, batch_rows, options, &written, live,
							 err);
	if (ok && lp_file_writer_finish(writer, file_size, err))
		*rows = written;
	else
		ok = false;
	lp_file_writer_free(writer);
	return ok;
}
