/*
 * lp_decode.c - the field reader: which pages of a field's columns hold the
 * rows of a take, the pages of each leaf column of 2.1+ files, and the
 * assembly of leaves, lists and structs into one LpArray.  A take goes leaf
 * by leaf: each leaf column decodes the units holding the rows and keeps
 * only those rows (values, validity and offsets of every layer,
 * lp_levels_take.c), so the children of a struct line up whatever their
 * page boundaries.  Which columns a field owns is lp_columns.c's rule; 2.0
 * files go to lp_decode_v20.c.  lp_decode_field is a take of every row.
 */
#include <string.h>

#include "base/lp_alloc.h"
#include "format/lp_columns.h"
#include "decode/lp_decode.h"
#include "decode/lp_decode_internal.h"
#include "base/lp_protobuf.h"

/* Deepest nesting of lists and structs decoded. */
#define MAX_NESTING 32

/* ---- 2.1+ columns --------------------------------------------------------------- */

/* Decode one whole page of a leaf column into acc. */
static bool
decode_page(const LpPageContext *ctx, LpInput *input, const LpPage *page,
			const Lance__Encodings21__PageLayout *layout, const LpType *type,
			LpColumnLevels *acc)
{
	switch (layout->layout_case)
	{
		case LANCE__ENCODINGS21__PAGE_LAYOUT__LAYOUT_MINI_BLOCK_LAYOUT:
			return lp_decode_miniblock_page(ctx, input, page, layout->mini_block_layout, acc);
		case LANCE__ENCODINGS21__PAGE_LAYOUT__LAYOUT_FULL_ZIP_LAYOUT:
			return lp_decode_fullzip_page(ctx, input, page, layout->full_zip_layout, acc);
		case LANCE__ENCODINGS21__PAGE_LAYOUT__LAYOUT_CONSTANT_LAYOUT:
			return lp_decode_constant_page(ctx, input, page, layout->constant_layout, type, acc);
		default:
			return lp_page_unsupported(ctx, page->layout);
	}
}

/*
 * Whether a take must decode the page whole: pages with lists (a row's
 * place is not a matter of arithmetic) unless they are mini-block pages
 * with a repetition index, and variable-width full-zip pages without the
 * repetition index that locates their rows.
 */
static bool
take_needs_whole_page(const LpPage *page, const Lance__Encodings21__PageLayout *layout)
{
	switch (layout->layout_case)
	{
		case LANCE__ENCODINGS21__PAGE_LAYOUT__LAYOUT_MINI_BLOCK_LAYOUT:
			return lp_layers_have_list(layout->mini_block_layout->layers,
									   layout->mini_block_layout->n_layers) &&
				layout->mini_block_layout->repetition_index_depth == 0;
		case LANCE__ENCODINGS21__PAGE_LAYOUT__LAYOUT_FULL_ZIP_LAYOUT:
			return lp_layers_have_list(layout->full_zip_layout->layers,
									   layout->full_zip_layout->n_layers) ||
				(layout->full_zip_layout->details_case ==
				 LANCE__ENCODINGS21__FULL_ZIP_LAYOUT__DETAILS_BITS_PER_OFFSET &&
				 page->num_buffers < 2);
		case LANCE__ENCODINGS21__PAGE_LAYOUT__LAYOUT_CONSTANT_LAYOUT:
			return lp_layers_have_list(layout->constant_layout->layers,
									   layout->constant_layout->n_layers);
		default:
			return true;
	}
}

/* A take from one leaf column: the levels of the rows taken so far. */
typedef struct LeafTake
{
	LpFieldReader *reader;
	const LpType *type;
	uint32_t	num_layers;
	LpColumnLevels *acc;
} LeafTake;

static bool
take_from_page(void *arg, const LpPageContext *ctx, const LpPage *page,
			   const LpRowRange *ranges, size_t num_ranges)
{
	LeafTake   *take = arg;
	LpInput    *input = take->reader->input;
	Lance__Encodings21__PageLayout *layout;
	bool		ok;

	if (!lp_unpack_page_encoding(ctx, page, (ProtobufCMessage **) &layout))
		return false;
	if (take_needs_whole_page(page, layout))
	{
		LpColumnLevels page_levels;

		if (!lp_column_levels_init(&page_levels, take->num_layers))
			ok = lp_page_no_memory(ctx);
		else
		{
			ok = decode_page(ctx, input, page, layout, take->type, &page_levels) &&
				lp_column_levels_take(ctx, &page_levels, ranges, num_ranges, take->acc);
			lp_column_levels_free(&page_levels);
		}
		if (ok)
			take->reader->rows_decoded += page->num_rows;
	}
	else if (layout->layout_case == LANCE__ENCODINGS21__PAGE_LAYOUT__LAYOUT_MINI_BLOCK_LAYOUT)
		ok = lp_take_miniblock_page(ctx, input, page, layout->mini_block_layout, ranges,
									num_ranges, take->acc, &take->reader->rows_decoded);
	else if (layout->layout_case == LANCE__ENCODINGS21__PAGE_LAYOUT__LAYOUT_FULL_ZIP_LAYOUT)
		ok = lp_take_fullzip_page(ctx, input, page, layout->full_zip_layout, ranges, num_ranges,
								  take->acc, &take->reader->rows_decoded);
	else
		ok = lp_take_constant_page(ctx, input, page, layout->constant_layout, take->type,
								   ranges, num_ranges, take->acc, &take->reader->rows_decoded);
	lp_protobuf_free(&layout->base);
	return ok;
}

static bool
take_leaf(LpFieldReader *reader, uint32_t column, const LpType *type, uint32_t num_layers,
		  const LpRowRange *ranges, size_t num_ranges, LpColumnLevels *acc, LpError *err)
{
	LeafTake	take = {reader, type, num_layers, acc};

	if (!lp_column_levels_init(acc, num_layers))
		return lp_decode_no_memory(err);
	return lp_reader_visit_pages(reader, column, reader->file->num_rows, ranges, num_ranges,
								 take_from_page, &take, err);
}

/* What assembling a subtree leaves behind: its column's layers, and the next one. */
typedef struct Assembled
{
	LpArray    *array;
	LpColumnLevels *levels;
	uint32_t	next_layer;
} Assembled;

static void
assembled_free(Assembled *a)
{
	lp_array_free(a->array);
	if (a->levels)
	{
		lp_column_levels_free(a->levels);
		lp_free(a->levels);
	}
	memset(a, 0, sizeof(*a));
}

/* The rows ranges[0..num_ranges) of the subtree of type, from its leaf columns on. */
static bool
assemble(LpFieldReader *reader, const LpType *type, uint32_t depth, uint32_t *column,
		 const LpRowRange *ranges, size_t num_ranges, Assembled *out, LpError *err)
{
	const LpFile *file = reader->file;

	memset(out, 0, sizeof(*out));
	if (depth > MAX_NESTING)
		return lp_fail(err, LP_ERR_UNSUPPORTED, "field \"%s\" of file \"%s\" is nested too deeply",
					   type->name, file->name);
	if (type->id == LP_TYPE_STRUCT && type->num_children > 0 && !type->packed)
	{
		Assembled	first;
		LpArray    *array = lp_array_new(type);
		LpLayerValues *layer;

		if (array == NULL)
			return lp_decode_no_memory(err);
		array->children = lp_alloc_array(type->num_children, sizeof(LpArray *));
		if (array->children == NULL)
		{
			lp_array_free(array);
			return lp_decode_no_memory(err);
		}
		memset(&first, 0, sizeof(first));
		for (uint32_t i = 0; i < type->num_children; i++)
		{
			Assembled	child;

			if (!assemble(reader, type->children[i], depth + 1, column, ranges, num_ranges,
						  &child, err))
			{
				assembled_free(&first);
				lp_array_free(array);
				return false;
			}
			array->children[array->num_children++] = child.array;
			child.array = NULL;
			if (i == 0)
				first = child;
			else
			{
				bool		same = child.levels->layers[child.next_layer].count ==
					first.levels->layers[first.next_layer].count;

				assembled_free(&child);
				if (!same)
				{
					assembled_free(&first);
					lp_array_free(array);
					return lp_fail(err, LP_ERR_CORRUPT,
								   "children of struct \"%s\" of file \"%s\" have different lengths",
								   type->name, file->name);
				}
			}
		}
		layer = &first.levels->layers[first.next_layer];
		if (layer->is_list)
		{
			assembled_free(&first);
			lp_array_free(array);
			return lp_fail(err, LP_ERR_CORRUPT,
						   "struct \"%s\" of file \"%s\" has a list layer in its levels",
						   type->name, file->name);
		}
		array->length = layer->count;
		lp_take_validity(array, &layer->validity);
		out->array = array;
		out->levels = first.levels;
		out->next_layer = first.next_layer + 1;
		return true;
	}
	if (type->id == LP_TYPE_LIST || type->id == LP_TYPE_LARGE_LIST)
	{
		Assembled	child;
		LpArray    *array;
		LpLayerValues *layer;
		uint64_t	last;

		if (!assemble(reader, type->children[0], depth + 1, column, ranges, num_ranges,
					  &child, err))
			return false;
		layer = &child.levels->layers[child.next_layer];
		if (!layer->is_list && layer->count > 0)
		{
			assembled_free(&child);
			return lp_fail(err, LP_ERR_CORRUPT,
						   "list \"%s\" of file \"%s\" has no list layer in its levels",
						   type->name, file->name);
		}
		if (layer->offsets.len == 0 && !lp_buf_append_u64(&layer->offsets, 0))
		{
			assembled_free(&child);
			return lp_decode_no_memory(err);
		}
		last = ((uint64_t *) layer->offsets.data)[layer->offsets.len / 8 - 1];
		if (layer->offsets.len / 8 != layer->count + 1 || last != child.array->length)
		{
			assembled_free(&child);
			return lp_fail(err, LP_ERR_CORRUPT,
						   "list offsets of \"%s\" of file \"%s\" do not match its items",
						   type->name, file->name);
		}
		array = lp_array_new(type);
		if (array == NULL || (array->children = lp_alloc(sizeof(LpArray *))) == NULL)
		{
			lp_array_free(array);
			assembled_free(&child);
			return lp_decode_no_memory(err);
		}
		array->children[0] = child.array;
		array->num_children = 1;
		array->length = layer->count;
		array->offsets = (uint64_t *) lp_buf_take(&layer->offsets);
		lp_take_validity(array, &layer->validity);
		out->array = array;
		out->levels = child.levels;
		out->next_layer = child.next_layer + 1;
		return true;
	}

	/* A leaf: one column. */
	{
		LpColumnLevels *levels = lp_alloc0(sizeof(LpColumnLevels));
		uint32_t	this_column = (*column)++;

		if (levels == NULL)
			return lp_decode_no_memory(err);
		out->levels = levels;
		if (!take_leaf(reader, this_column, type, depth + 1, ranges, num_ranges, levels, err) ||
			!lp_leaf_array(type, &levels->values, levels->layers[0].count, &out->array, file,
						   this_column, err))
		{
			assembled_free(out);
			return false;
		}
		lp_take_validity(out->array, &levels->layers[0].validity);
		out->next_layer = 1;
		return true;
	}
}

static bool
take_v21_field(LpFieldReader *reader, const LpRowRange *ranges, size_t num_ranges,
			   uint64_t num_rows, LpArray **out, LpError *err)
{
	const LpType *type = reader->type;
	Assembled	result;
	uint32_t	column = reader->first_column;

	if (!assemble(reader, type, 0, &column, ranges, num_ranges, &result, err))
		return false;
	if (result.next_layer != result.levels->num_layers)
	{
		assembled_free(&result);
		return lp_fail(err, LP_ERR_CORRUPT,
					   "field \"%s\" of file \"%s\" has more levels than its type nests",
					   type->name, reader->file->name);
	}
	if (result.array->length != num_rows)
	{
		uint64_t	length = result.array->length;

		assembled_free(&result);
		return lp_fail(err, LP_ERR_CORRUPT,
					   "field \"%s\" of file \"%s\" decodes to %llu rows where %llu were taken",
					   type->name, reader->file->name, (unsigned long long) length,
					   (unsigned long long) num_rows);
	}
	*out = result.array;
	result.array = NULL;
	assembled_free(&result);
	return true;
}

/* Legacy blob (v1) columns hold descriptors of bytes elsewhere; refuse them by name. */
static bool
check_supported_fields(const LpFile *file, uint32_t index, LpError *err)
{
	const LpField *top = &file->schema.fields[index];

	for (uint32_t i = index; i < file->schema.num_fields; i++)
	{
		const LpField *field = &file->schema.fields[i];

		if (i > index && field->parent_id == -1)
			break;
		if (lp_field_is_blob(field) && strcmp(field->logical_type, "struct") != 0)
			return lp_fail(err, LP_ERR_UNSUPPORTED,
						   "field \"%s\" of file \"%s\" is a legacy blob column, which cannot be decoded",
						   top->name, file->name);
	}
	return true;
}

/*
 * Allocation failures deep in a decoder know at most a column number; say
 * which field of which file could not be decoded, keeping the detail (the
 * size of the failed request).
 */
static void
name_field_of_memory_error(LpError *err, const LpFile *file, uint32_t field_index)
{
	char		detail[LP_ERROR_MESSAGE_LEN];

	memcpy(detail, err->detail, sizeof(detail));
	lp_fail(err, LP_ERR_NO_MEMORY, "out of memory decoding field \"%s\" of file \"%s\"",
			file->schema.fields[field_index].name, file->name);
	memcpy(err->detail, detail, sizeof(detail));
}

static bool
open_reader(LpInput *input, const LpFile *file, uint32_t field_index, LpFieldReader **out,
			LpError *err)
{
	LpFieldReader *reader;

	*out = NULL;
	if (file->version == LP_FILE_VERSION_LEGACY)
		return lp_fail(err, LP_ERR_UNSUPPORTED,
					   "file \"%s\" is in the legacy Lance format, which cannot be decoded",
					   file->name);
	if (field_index >= file->schema.num_fields ||
		file->schema.fields[field_index].parent_id != -1 ||
		file->schema.fields[field_index].id < 0)
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
					   "field number %u of file \"%s\" is not a top-level field",
					   field_index, file->name);
	if (!check_supported_fields(file, field_index, err))
		return false;
	reader = lp_alloc0(sizeof(LpFieldReader));
	if (reader == NULL)
		return lp_decode_no_memory(err);
	reader->input = input;
	reader->file = file;
	reader->field_index = field_index;
	reader->page_starts = lp_alloc_array((size_t) file->num_columns + 1, sizeof(uint64_t *));
	reader->item_starts = lp_alloc_array((size_t) file->num_columns + 1, sizeof(uint64_t *));
	if (reader->page_starts == NULL || reader->item_starts == NULL)
	{
		lp_field_reader_close(reader);
		return lp_decode_no_memory(err);
	}
	if (!lp_type_from_field(file, field_index, &reader->type, err) ||
		!lp_field_first_column(file, field_index, &reader->first_column, err))
	{
		lp_field_reader_close(reader);
		return false;
	}
	*out = reader;
	return true;
}

bool
lp_field_reader_open(LpInput *input, const LpFile *file, uint32_t field_index,
					 LpFieldReader **out, LpError *err)
{
	if (open_reader(input, file, field_index, out, err))
		return true;
	if (err != NULL && err->code == LP_ERR_NO_MEMORY)
		name_field_of_memory_error(err, file, field_index);
	return false;
}

const LpType *
lp_field_reader_type(const LpFieldReader *reader)
{
	return reader->type;
}

void
lp_field_reader_stats(const LpFieldReader *reader, LpDecodeStats *stats)
{
	stats->pages_decoded = reader->pages_decoded;
	stats->pages_skipped = reader->pages_skipped;
	stats->rows_decoded = reader->rows_decoded;
}

void
lp_field_reader_close(LpFieldReader *reader)
{
	if (reader == NULL)
		return;
	for (uint32_t c = 0; c < reader->file->num_columns; c++)
	{
		if (reader->page_starts != NULL)
			lp_free(reader->page_starts[c]);
		if (reader->item_starts != NULL)
			lp_free(reader->item_starts[c]);
	}
	lp_free(reader->page_starts);
	lp_free(reader->item_starts);
	lp_type_free(reader->type);
	lp_free(reader);
}

/* Rows ranges[0..num_ranges), num_rows in all, of the reader's field. */
static bool
take_ranges(LpFieldReader *reader, const LpRowRange *ranges, size_t num_ranges,
			uint64_t num_rows, LpArray **out, LpError *err)
{
	bool		ok;

	*out = NULL;
	if (reader->file->version == LP_FILE_VERSION_2_0)
	{
		ok = lp_take_v20_field(reader, ranges, num_ranges, out, err);
		if (ok && (*out)->length != num_rows)
		{
			uint64_t	length = (*out)->length;

			lp_array_free(*out);
			*out = NULL;
			ok = lp_fail(err, LP_ERR_CORRUPT,
						 "field \"%s\" of file \"%s\" decodes to %llu rows where %llu were taken",
						 reader->type->name, reader->file->name, (unsigned long long) length,
						 (unsigned long long) num_rows);
		}
	}
	else
		ok = take_v21_field(reader, ranges, num_ranges, num_rows, out, err);
	if (!ok && err != NULL && err->code == LP_ERR_NO_MEMORY)
		name_field_of_memory_error(err, reader->file, reader->field_index);
	return ok;
}

/* Check rows[0..n) of a take and make runs of consecutive rows ranges. */
static bool
rows_to_ranges(LpFieldReader *reader, const uint64_t *rows, uint64_t n, LpRowRange **out,
			   size_t *num_out, LpError *err)
{
	const LpFile *file = reader->file;
	LpRowRange *ranges;
	size_t		num_ranges = 0;

	for (uint64_t i = 0; i < n; i++)
	{
		if (rows[i] >= file->num_rows)
			return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
						   "row %llu of field \"%s\" is beyond the %llu rows of file \"%s\"",
						   (unsigned long long) rows[i], reader->type->name,
						   (unsigned long long) file->num_rows, file->name);
		if (i > 0 && rows[i] <= rows[i - 1])
			return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
						   "rows to take from field \"%s\" of file \"%s\" are not strictly ascending (row %llu after %llu)",
						   reader->type->name, file->name, (unsigned long long) rows[i],
						   (unsigned long long) rows[i - 1]);
		if (i == 0 || rows[i] != rows[i - 1] + 1)
			num_ranges++;
	}
	ranges = lp_alloc_array(num_ranges + 1, sizeof(LpRowRange));
	if (ranges == NULL)
	{
		lp_decode_no_memory(err);
		name_field_of_memory_error(err, file, reader->field_index);
		return false;
	}
	num_ranges = 0;
	for (uint64_t i = 0; i < n; i++)
	{
		if (i == 0 || rows[i] != rows[i - 1] + 1)
			ranges[num_ranges++].start = rows[i];
		ranges[num_ranges - 1].count++;
	}
	*out = ranges;
	*num_out = num_ranges;
	return true;
}

bool
lp_field_reader_take(LpFieldReader *reader, const uint64_t *rows, uint64_t n,
					 LpArray **out, LpError *err)
{
	LpRowRange *ranges;
	size_t		num_ranges;
	bool		ok;

	*out = NULL;
	if (!rows_to_ranges(reader, rows, n, &ranges, &num_ranges, err))
		return false;
	ok = take_ranges(reader, ranges, num_ranges, n, out, err);
	lp_free(ranges);
	return ok;
}

bool
lp_field_reader_ranges(LpFieldReader *reader, const uint64_t *rows, uint64_t n,
					   LpByteRange **ranges, size_t *num_ranges, LpError *err)
{
	const LpFile *file = reader->file;
	LpRowRange *row_ranges = NULL;
	size_t		num_row_ranges = 0;
	LpPhysicalColumn *columns = NULL;
	uint32_t	num_columns = 0;
	uint32_t	end_field = reader->field_index + 1;
	LpByteRanges found = {0};
	bool		ok;

	*ranges = NULL;
	*num_ranges = 0;
	/* the field's subtree: the fields before the next top-level one (pre-order) */
	while (end_field < file->schema.num_fields && file->schema.fields[end_field].parent_id != -1)
		end_field++;
	ok = rows_to_ranges(reader, rows, n, &row_ranges, &num_row_ranges, err) &&
		lp_file_physical_columns(file, &columns, &num_columns, err);
	for (uint32_t c = reader->first_column; ok && c < num_columns &&
		 columns[c].field_index >= reader->field_index && columns[c].field_index < end_field; c++)
		if (!columns[c].counts_items && !columns[c].bytes_items)
			ok = lp_reader_page_buffers(reader, c, row_ranges, num_row_ranges, &found, err);
	lp_free(columns);
	lp_free(row_ranges);
	if (!ok)
	{
		lp_free(found.items);
		return false;
	}
	*ranges = found.items;
	*num_ranges = found.count;
	return true;
}

bool
lp_decode_field(LpInput *input, const LpFile *file, uint32_t field_index,
				LpType **type_out, LpArray **out, LpError *err)
{
	LpFieldReader *reader;
	LpRowRange	all = {0, file->num_rows};
	bool		ok;

	*out = NULL;
	*type_out = NULL;
	if (!lp_field_reader_open(input, file, field_index, &reader, err))
		return false;
	ok = take_ranges(reader, &all, file->num_rows > 0 ? 1 : 0, file->num_rows, out, err);
	if (ok)
	{
		/* the array's type is the reader's: hand it over */
		*type_out = reader->type;
		reader->type = NULL;
	}
	lp_field_reader_close(reader);
	return ok;
}
