/*
 * lp_reencode.c - re-encoding a data file's live rows (see lp_reencode.h).
 */
#include "reencode/lp_reencode.h"

#include <string.h>

#include "base/lp_alloc.h"
#include "base/lp_interrupt.h"
#include "decode/lp_decode.h"
#include "encode/lp_file_writer.h"
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

/* The subtrees have the same shape, types and (below the top) names. */
static bool
same_subtree(const LpSchema *a, uint32_t ai, const LpSchema *b, uint32_t bi)
{
	uint32_t	a_end = subtree_end(a, ai);
	uint32_t	b_end = subtree_end(b, bi);

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

/* The top-level field of schema named name, or -1. */
static int64_t
find_top_level(const LpSchema *schema, const char *name)
{
	for (uint32_t i = 0; i < schema->num_fields; i++)
		if (schema->fields[i].parent_id == -1 && strcmp(schema->fields[i].name, name) == 0)
			return i;
	return -1;
}

/*
 * For each top-level field of schema, in order, the index of the source's
 * field it is written from (*map, lp_alloc'd, *num_top entries).
 */
static bool
match_fields(const LpFile *file, const LpSchema *schema, uint32_t **map, uint32_t *num_top,
			 LpError *err)
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
		top += schema->fields[i].parent_id == -1;
	for (uint32_t i = 0; i < file->schema.num_fields; i++)
		source_top += file->schema.fields[i].parent_id == -1;
	*map = lp_alloc_array(top > 0 ? top : 1, sizeof(uint32_t));
	if (*map == NULL)
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory re-encoding \"%s\"", file->name);

	for (uint32_t i = 0; i < schema->num_fields; i++)
	{
		const LpField *field = &schema->fields[i];
		int64_t		s;

		if (field->parent_id != -1)
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
	if (source_top != top)
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

	if (!match_fields(file, schema, &map, &num_top, err))
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

bool
lp_reencode(const LpReencodeSource *source, const LpSchema *schema, LpFileVersion version,
			LpOutput *output, const LpReencodeOptions *options, uint64_t *rows,
			uint64_t *file_size, LpError *err)
{
	const LpFile *file = source->file;
	uint64_t	batch_rows = options != NULL && options->batch_rows > 0 ?
		options->batch_rows : LP_REENCODE_DEFAULT_BATCH_ROWS;
	uint64_t	live = file->num_rows;
	uint32_t   *map = NULL;
	uint32_t	num_top = 0;
	LpFieldReader **readers = NULL;
	LpArray   **arrays = NULL;
	uint64_t   *batch = NULL;
	LpFileWriter *writer = NULL;
	uint64_t	cursor = 0;
	uint64_t	written = 0;
	bool		ok = false;

	*rows = 0;
	*file_size = 0;
	if (source->deletions != NULL)
	{
		if (source->deletions->num_rows != file->num_rows)
			return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
						   "the deletions given for file \"%s\" cover %llu rows, but it has %llu",
						   file->name, (unsigned long long) source->deletions->num_rows,
						   (unsigned long long) file->num_rows);
		live -= source->deletions->num_deleted;
	}
	if (!match_fields(file, schema, &map, &num_top, err))
		return false;
	writer = lp_file_writer_open(output, schema, version, err);
	if (writer == NULL)
		goto done;
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
			while (schema->fields[t].parent_id != -1)
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
		}
		if (!lp_file_writer_write(writer, (const LpArray *const *) arrays, num_top, err))
			goto done;
		for (uint32_t f = 0; f < num_top; f++)
		{
			lp_array_free(arrays[f]);
			arrays[f] = NULL;
		}
		written += n;
		if (options != NULL && options->progress != NULL)
			options->progress(options->progress_arg, written, live);
	}
	if (!lp_file_writer_finish(writer, file_size, err))
		goto done;
	*rows = written;
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
	if (writer != NULL)
		lp_file_writer_free(writer);
	return ok;
}
