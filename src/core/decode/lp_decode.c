/*
 * lp_decode.c - decoding a top-level field: the pages of each leaf column of
 * 2.1+ files, and the assembly of leaves, lists and structs into one
 * LpArray.  Which columns a field owns is lp_columns.c's rule; 2.0 files go
 * to lp_decode_v20.c.
 */
#include <string.h>

#include "base/lp_alloc.h"
#include "base/lp_interrupt.h"
#include "format/lp_columns.h"
#include "decode/lp_decode.h"
#include "decode/lp_decode_internal.h"
#include "base/lp_protobuf.h"

/* Deepest nesting of lists and structs decoded. */
#define MAX_NESTING 32

/* ---- 2.1+ columns --------------------------------------------------------------- */

static bool
decode_leaf_pages(LpInput *input, const LpFile *file, uint32_t column, const LpType *type,
				  uint32_t num_layers, LpColumnLevels *acc, LpError *err)
{
	const LpColumn *col;

	if (column >= file->num_columns)
		return lp_fail(err, LP_ERR_CORRUPT, "file \"%s\" has no column %u for field \"%s\"",
					   file->name, column, type->name);
	if (!lp_column_levels_init(acc, num_layers))
		return lp_decode_no_memory(err);
	col = &file->columns[column];
	for (uint32_t p = 0; p < col->num_pages; p++)
	{
		LpPageContext ctx = {file, column, p, err};
		Lance__Encodings21__PageLayout *layout;
		bool		ok;

		if (lp_check_cancel(err))
			return false;
		if (!lp_unpack_page_encoding(&ctx, &col->pages[p], (ProtobufCMessage **) &layout))
			return false;
		switch (layout->layout_case)
		{
			case LANCE__ENCODINGS21__PAGE_LAYOUT__LAYOUT_MINI_BLOCK_LAYOUT:
				ok = lp_decode_miniblock_page(&ctx, input, &col->pages[p],
											  layout->mini_block_layout, acc);
				break;
			case LANCE__ENCODINGS21__PAGE_LAYOUT__LAYOUT_FULL_ZIP_LAYOUT:
				ok = lp_decode_fullzip_page(&ctx, input, &col->pages[p],
											layout->full_zip_layout, acc);
				break;
			case LANCE__ENCODINGS21__PAGE_LAYOUT__LAYOUT_CONSTANT_LAYOUT:
				ok = lp_decode_constant_page(&ctx, input, &col->pages[p],
											 layout->constant_layout, type, acc);
				break;
			default:
				ok = lp_page_unsupported(&ctx, col->pages[p].layout);
				break;
		}
		lp_protobuf_free(&layout->base);
		if (!ok)
			return false;
	}
	return true;
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

static bool
assemble(LpInput *input, const LpFile *file, const LpType *type, uint32_t depth,
		 uint32_t *column, Assembled *out, LpError *err)
{
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

			if (!assemble(input, file, type->children[i], depth + 1, column, &child, err))
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

		if (!assemble(input, file, type->children[0], depth + 1, column, &child, err))
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
		if (!decode_leaf_pages(input, file, this_column, type, depth + 1, levels, err) ||
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
decode_v21_field(LpInput *input, const LpFile *file, const LpType *type, uint32_t first_column,
				 LpArray **out, LpError *err)
{
	Assembled	result;
	uint32_t	column = first_column;

	if (!assemble(input, file, type, 0, &column, &result, err))
		return false;
	if (result.next_layer != result.levels->num_layers)
	{
		assembled_free(&result);
		return lp_fail(err, LP_ERR_CORRUPT,
					   "field \"%s\" of file \"%s\" has more levels than its type nests",
					   type->name, file->name);
	}
	if (result.array->length != file->num_rows)
	{
		uint64_t	length = result.array->length;

		assembled_free(&result);
		return lp_fail(err, LP_ERR_CORRUPT,
					   "field \"%s\" of file \"%s\" has %llu rows, the file %llu",
					   type->name, file->name, (unsigned long long) length,
					   (unsigned long long) file->num_rows);
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
decode_field(LpInput *input, const LpFile *file, uint32_t field_index,
			 LpType **type_out, LpArray **out, LpError *err)
{
	LpType	   *type;
	uint32_t	first_column;
	bool		ok;

	*out = NULL;
	*type_out = NULL;
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
	if (!lp_type_from_field(file, field_index, &type, err))
		return false;
	if (!lp_field_first_column(file, field_index, &first_column, err))
	{
		lp_type_free(type);
		return false;
	}
	if (file->version == LP_FILE_VERSION_2_0)
		ok = lp_decode_v20_field(input, file, type, first_column, out, err);
	else
		ok = decode_v21_field(input, file, type, first_column, out, err);
	if (!ok)
	{
		lp_type_free(type);
		return false;
	}
	*type_out = type;
	return true;
}

bool
lp_decode_field(LpInput *input, const LpFile *file, uint32_t field_index,
				LpType **type_out, LpArray **out, LpError *err)
{
	if (decode_field(input, file, field_index, type_out, out, err))
		return true;
	if (err != NULL && err->code == LP_ERR_NO_MEMORY)
		name_field_of_memory_error(err, file, field_index);
	return false;
}
