/*
 * lp_file_writer.c - a Lance data file from batches of LpArrays: per-column
 * page accumulation, page buffers written as pages fill (64-byte aligned,
 * padded with 0x48, pages of different columns interleaved as Lance writes
 * them), and the metadata tail at the end.
 */
#include "encode/lp_file_writer.h"

#include <string.h>

#include "base/lp_alloc.h"
#include "base/lp_checked.h"
#include "base/lp_interrupt.h"
#include "encode/lp_encode_internal.h"
#include "format/lp_columns.h"
#include "format/lp_encodings.h"
#include "format/lp_file_tail.h"

/* Rows appended to a page between checks of its size. */
#define APPEND_SLICE_ROWS 1024

typedef struct WriterColumn
{
	char	   *name;			/* the schema field's, for messages */
	LpType	   *type;			/* the leaf's (2.0 struct header and list columns: the field's) */
	uint32_t	field_index;	/* into the schema's fields */
	bool		struct_header;	/* 2.0: a struct's column, one page without buffers */
	bool		list_offsets;	/* 2.0: a list's column of offsets; its items follow */
	int64_t		list_column;	/* 2.0: the column of the innermost list above, or -1 */
	bool		flushed;		/* a page was written for the current slice of rows */
	bool		over_budget;	/* its page is written after this slice to keep the file's in budget */
	uint32_t	top;			/* the top-level field (batch array) it lies in */
	uint32_t	depth;			/* struct ancestors */
	uint32_t	path[LP_ENCODE_MAX_LAYERS]; /* child index at each struct, from the top */
	LpLeafShape shape;
	LpPageValues page;
	uint64_t	page_rows;		/* rows in page (values count items under lists) */
	uint64_t	rows_flushed;
	LpPage	   *pages;
	uint32_t	num_pages;
	uint32_t	pages_capacity;
} WriterColumn;

struct LpFileWriter
{
	LpOutput   *output;
	LpFileVersion version;
	uint64_t	pos;			/* bytes written so far */
	uint64_t	rows;
	LpBytes		descriptor;		/* FileDescriptor of the schema, length 0 */
	uint32_t	num_top;		/* top-level fields: arrays per batch */
	uint32_t	num_columns;
	WriterColumn *columns;
	const LpArray **chains;		/* per column: its arrays of the current batch (array_chain) */
	uint64_t	flush_bytes;	/* LP_PAGE_FLUSH_BYTES unless set */
	uint64_t	buffer_bytes;	/* LP_WRITER_BUFFER_BYTES unless set */
	bool		done;			/* finished or failed: only free is left */
};

static const uint8_t padding[LP_PAGE_BUFFER_ALIGNMENT] = {
	[0 ... LP_PAGE_BUFFER_ALIGNMENT - 1] = LP_PAD_BYTE
};

static bool
no_memory(LpError *err)
{
	return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
}

/* How a leaf type stores its values; false for types this writer cannot encode. */
static bool
leaf_shape(const LpType *type, LpLeafShape *shape)
{
	uint32_t	width;

	/* the layers stay as field_path() set them */
	shape->bits = 0;
	shape->dimension = 0;
	shape->offset_bits = 0;
	switch (type->id)
	{
		case LP_TYPE_BOOL:
			shape->kind = LP_LEAF_BOOL;
			shape->bits = 1;
			return true;
		case LP_TYPE_STRING:
		case LP_TYPE_BINARY:
			shape->kind = LP_LEAF_VARIABLE;
			shape->offset_bits = 32;
			shape->utf8 = type->id == LP_TYPE_STRING;
			return true;
		case LP_TYPE_LARGE_STRING:
		case LP_TYPE_LARGE_BINARY:
			shape->kind = LP_LEAF_VARIABLE;
			shape->offset_bits = 64;
			return true;
		case LP_TYPE_FIXED_SIZE_LIST:
			if (type->num_children != 1 || type->fixed_size <= 0 ||
				(width = lp_type_byte_width(type->children[0])) == 0 ||
				type->children[0]->id == LP_TYPE_FIXED_SIZE_LIST)
				return false;
			shape->kind = LP_LEAF_FIXED_SIZE_LIST;
			shape->bits = width * 8;
			shape->dimension = (uint32_t) type->fixed_size;
			return true;
		case LP_TYPE_NULL:
		case LP_TYPE_LIST:
		case LP_TYPE_LARGE_LIST:
		case LP_TYPE_STRUCT:
			return false;
		default:
			width = lp_type_byte_width(type);
			if (width == 0)
				return false;
			shape->kind = LP_LEAF_FIXED;
			shape->bits = width * 8;
			return true;
	}
}

/* Index of the field with id field_id before index before, or -1. */
static int64_t
field_index_of(const LpSchema *schema, int32_t field_id, uint32_t before)
{
	for (uint32_t i = before; i-- > 0;)
		if (schema->fields[i].id == field_id)
			return i;
	return -1;
}

/*
 * Where field index lies: its top-level field and its child index at each
 * struct on the way down (0 under a list), which of its layers are lists
 * and the innermost list above it (*list_field, -1 if none).  Refuses
 * ancestors the encoder cannot write (packed structs, blobs).
 */
static bool
field_path(const LpSchema *schema, uint32_t index, const char *file_name, WriterColumn *column,
		   int64_t *list_field, LpError *err)
{
	uint32_t	chain[LP_ENCODE_MAX_LAYERS];
	uint32_t	depth = 0;
	uint32_t	at = index;
	LpType	   *type;
	bool		is_list;
	bool		is_struct;

	*list_field = -1;
	while (schema->fields[at].parent_id != -1)
	{
		int64_t		parent = field_index_of(schema, schema->fields[at].parent_id, at);
		const LpField *field;

		if (parent < 0)
			return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
						   "field \"%s\" of file \"%s\" has no parent before it",
						   schema->fields[at].name, file_name);
		field = &schema->fields[parent];
		if (!lp_type_parse(field->logical_type, file_name, field->name, &type, err))
			return false;
		is_list = type->id == LP_TYPE_LIST || type->id == LP_TYPE_LARGE_LIST;
		is_struct = type->id == LP_TYPE_STRUCT;
		lp_type_free(type);
		if ((!is_list && !is_struct) || lp_field_is_packed(field) || lp_field_is_blob(field))
		{
			lp_fail(err, LP_ERR_UNSUPPORTED,
					"field \"%s\" of file \"%s\" lies in field \"%s\" of type \"%s\", which the encoder cannot write",
					schema->fields[index].name, file_name, field->name, field->logical_type);
			lp_error_detail(err, "The encoder writes lists and structs (not packed) of leaves, lists and structs.");
			return false;
		}
		if (depth + 1 >= LP_ENCODE_MAX_LAYERS)
			return lp_fail(err, LP_ERR_UNSUPPORTED,
						   "field \"%s\" of file \"%s\" is nested more than %d levels deep",
						   schema->fields[index].name, file_name, LP_ENCODE_MAX_LAYERS - 1);
		chain[depth++] = at;
		at = (uint32_t) parent;
		if (is_list && *list_field < 0)
			*list_field = parent;
		column->shape.list_layer[depth] = is_list;
		column->shape.num_lists += is_list;
	}
	column->depth = depth;
	column->top = 0;
	for (uint32_t i = 0; i < at; i++)
		column->top += schema->fields[i].parent_id == -1;
	/* chain[depth - 1] is the child of the top-level field, chain[0] the field itself. */
	for (uint32_t d = 0; d < depth; d++)
	{
		uint32_t	child = chain[depth - 1 - d];
		uint32_t	sibling_index = 0;

		for (uint32_t i = 0; i < child; i++)
			sibling_index += schema->fields[i].parent_id == schema->fields[child].parent_id;
		column->path[d] = sibling_index;
	}
	return true;
}

static void
page_reset(LpPageValues *page)
{
	page->num_values = 0;
	page->null_count = 0;
	page->values.len = 0;
	page->bits.buf.len = 0;
	page->bits.num_bits = 0;
	page->bits.num_unset = 0;
	page->offsets.len = 0;
	page->data.len = 0;
	page->validity.buf.len = 0;
	page->validity.num_bits = 0;
	page->validity.num_unset = 0;
	page->item_validity.buf.len = 0;
	page->item_validity.num_bits = 0;
	page->item_validity.num_unset = 0;
	page->null_layers.len = 0;
	page->num_levels = 0;
	page->rep.len = 0;
	page->max_length = 0;
}

#define PAGE_BUFFERS 8

/* Every buffer of the page. */
static void
page_buffers(LpPageValues *page, LpBuf *buffers[PAGE_BUFFERS])
{
	buffers[0] = &page->values;
	buffers[1] = &page->bits.buf;
	buffers[2] = &page->offsets;
	buffers[3] = &page->data;
	buffers[4] = &page->validity.buf;
	buffers[5] = &page->item_validity.buf;
	buffers[6] = &page->null_layers;
	buffers[7] = &page->rep;
}

static void
page_free(LpPageValues *page)
{
	LpBuf	   *buffers[PAGE_BUFFERS];

	page_buffers(page, buffers);
	for (int b = 0; b < PAGE_BUFFERS; b++)
		lp_buf_free(buffers[b]);
}

/*
 * Empty the page for the next one, keeping its buffers when asked: taken
 * afresh for every page, a column's buffers grew by doubling and faulted
 * every copy in again, which cost a write worker half its time.  A kept
 * buffer stays resident at the most its column's pages held.
 */
static void
page_renew(LpPageValues *page, bool keep_buffers)
{
	if (!keep_buffers)
		page_free(page);
	page_reset(page);
}

/* Bytes the page's values take in memory, as Lance measures what it accumulates. */
static uint64_t
page_bytes(const WriterColumn *column)
{
	const LpPageValues *page = &column->page;

	/* Item validity only counts when some item is null (Arrow has no bitmap otherwise). */
	return page->values.len + page->bits.buf.len + page->data.len + page->validity.buf.len +
		(page->item_validity.num_unset > 0 ? page->item_validity.buf.len : 0) + page->rep.len +
		page->num_values * (column->shape.offset_bits / 8);
}

#define BLOB_TRUE {(uint8_t *) "true", 4}

/*
 * What lancedb stores for a Blob v2 field in a file footer, in its order
 * (not sorted by key: the footer schema only goes to
 * lp_file_descriptor_build, which keeps the order).
 */
static const LpKeyValue blob_footer_metadata[2] = {
	{"lance-encoding:packed", BLOB_TRUE},
	{"lance-encoding:blob", BLOB_TRUE}
};

/* The descriptor's pseudo-fields that follow a Blob v2 field in a file footer. */
static const LpField blob_pseudo_fields[5] = {
	{.id = -1, .parent_id = -1, .name = "kind", .logical_type = "uint8", .legacy_encoding = 1},
	{.id = -1, .parent_id = -1, .name = "position", .logical_type = "uint64", .legacy_encoding = 1},
	{.id = -1, .parent_id = -1, .name = "size", .logical_type = "uint64", .legacy_encoding = 1},
	{.id = -1, .parent_id = -1, .name = "blob_id", .logical_type = "uint32", .legacy_encoding = 1},
	{.id = -1, .parent_id = -1, .name = "blob_uri", .logical_type = "string", .legacy_encoding = 2}
};

/*
 * The schema of the file footer (lance-format.md §6.5): schema's fields,
 * shallow copies (free only out->fields), except that a top-level Blob v2
 * field is stored as a childless struct with lance-encoding:blob and
 * lance-encoding:packed, followed by the five descriptor pseudo-fields of
 * id -1, as lancedb writes it.  False when out of memory.
 */
static bool
footer_schema(const LpSchema *schema, LpSchema *out)
{
	uint32_t	num_blobs = 0;
	uint32_t	n = 0;

	for (uint32_t i = 0; i < schema->num_fields; i++)
		num_blobs += schema->fields[i].parent_id == -1 && lp_field_is_blob_v2(&schema->fields[i]);
	*out = *schema;
	out->fields = lp_alloc_array((size_t) schema->num_fields + 5 * num_blobs + 1, sizeof(LpField));
	if (out->fields == NULL)
		return false;
	for (uint32_t i = 0; i < schema->num_fields; i++)
	{
		const LpField *field = &schema->fields[i];

		out->fields[n++] = *field;
		if (field->parent_id != -1 || !lp_field_is_blob_v2(field))
			continue;
		out->fields[n - 1].extension_name = NULL;
		out->fields[n - 1].num_metadata = 2;
		out->fields[n - 1].metadata = (LpKeyValue *) blob_footer_metadata;
		for (int p = 0; p < 5; p++)
			out->fields[n++] = blob_pseudo_fields[p];
		/* its children (data, uri) follow it in pre-order */
		while (i + 1 < schema->num_fields && schema->fields[i + 1].parent_id != -1)
			i++;
	}
	out->num_fields = n;
	return true;
}

LpFileWriter *
lp_file_writer_open(LpOutput *output, const LpSchema *schema, LpFileVersion version,
					LpError *err)
{
	LpFileWriter *writer;
	LpPhysicalColumn *physical = NULL;
	uint32_t	num_physical = 0;
	uint32_t	opened = 0;
	LpSchema	footer;
	bool		built;

	if (version < LP_FILE_VERSION_2_0)
	{
		lp_fail(err, LP_ERR_UNSUPPORTED, "writing Lance %s files is not supported",
				lp_file_version_name(version));
		lp_error_detail(err, "The encoder writes versions 2.0, 2.1, 2.2 and 2.3.");
		return NULL;
	}
	writer = lp_alloc0(sizeof(*writer));
	if (writer == NULL)
	{
		no_memory(err);
		return NULL;
	}
	writer->output = output;
	writer->version = version;
	writer->flush_bytes = LP_PAGE_FLUSH_BYTES;
	writer->buffer_bytes = LP_WRITER_BUFFER_BYTES;
	for (uint32_t i = 0; i < schema->num_fields; i++)
		writer->num_top += schema->fields[i].parent_id == -1;
	if (!lp_schema_physical_columns(version, schema, &physical, &num_physical, err))
		goto fail;
	writer->columns = lp_alloc_array(num_physical + 1, sizeof(WriterColumn));
	if (writer->columns == NULL)
		goto no_memory;
	for (uint32_t c = 0; c < num_physical; c++)
	{
		const LpField *field = &schema->fields[physical[c].field_index];
		WriterColumn *column = &writer->columns[c];
		int64_t		list_field;

		memset(column, 0, sizeof(*column));
		opened = c + 1;
		if (!lp_type_parse(field->logical_type, output->name, field->name, &column->type, err) ||
			!field_path(schema, physical[c].field_index, output->name, column, &list_field, err))
			goto fail;
		column->name = lp_strdup(field->name);
		if (column->name == NULL)
			goto no_memory;
		column->field_index = physical[c].field_index;
		column->struct_header = physical[c].struct_header;
		/* In 2.0 every field owns a column, so the list's lies before. */
		column->list_column = -1;
		for (uint32_t before = 0; version == LP_FILE_VERSION_2_0 && before < c; before++)
			if (writer->columns[before].field_index == list_field)
				column->list_column = before;
		column->list_offsets = version == LP_FILE_VERSION_2_0 &&
			(column->type->id == LP_TYPE_LIST || column->type->id == LP_TYPE_LARGE_LIST) &&
			!lp_field_is_packed(field) && !lp_field_is_blob(field);
		if (column->list_offsets)
		{
			/* Lance measures a list page by the Arrow offsets it holds. */
			column->shape.offset_bits = column->type->id == LP_TYPE_LIST ? 32 : 64;
			continue;
		}
		if (column->struct_header)
			continue;
		if (lp_field_is_blob_v2(field) && column->depth == 0 && version >= LP_FILE_VERSION_2_2)
		{
			column->shape.kind = LP_LEAF_VARIABLE;
			column->shape.offset_bits = 32;
			column->shape.blob_descriptor = true;
		}
		else if (lp_field_is_packed(field) || lp_field_is_blob(field) || column->type->dictionary ||
				 !leaf_shape(column->type, &column->shape))
		{
			lp_fail(err, LP_ERR_UNSUPPORTED,
					"field \"%s\" of file \"%s\" has type \"%s\", which the encoder cannot write",
					field->name, output->name, field->logical_type);
			goto fail;
		}
		if (!lp_column_compression_parse(field, output->name, &column->shape.compression, err))
			goto fail;
		column->shape.num_layers = column->depth + 1;
		if (column->shape.kind == LP_LEAF_VARIABLE && !lp_buf_append_u64(&column->page.offsets, 0))
			goto no_memory;
	}
	writer->num_columns = num_physical;
	lp_free(physical);
	writer->chains = lp_alloc_array((size_t) num_physical * LP_ENCODE_MAX_LAYERS + 1,
									sizeof(const LpArray *));
	if (writer->chains == NULL || !footer_schema(schema, &footer))
		goto no_memory_late;
	built = lp_file_descriptor_build(&footer, 0, &writer->descriptor, err);
	lp_free(footer.fields);
	if (!built)
	{
		lp_file_writer_free(writer);
		return NULL;
	}
	return writer;

no_memory_late:
	no_memory(err);
	lp_file_writer_free(writer);
	return NULL;

no_memory:
	no_memory(err);
fail:
	lp_free(physical);
	writer->num_columns = opened;
	lp_file_writer_free(writer);
	return NULL;
}

static bool
write_bytes(LpFileWriter *writer, const void *data, uint64_t len, LpError *err)
{
	if (len > 0 && !writer->output->ops->write_at(writer->output, writer->pos, data, len, err))
		return false;
	writer->pos += len;
	return true;
}

static bool
pad_output(LpFileWriter *writer, LpError *err)
{
	uint64_t	pad = (LP_PAGE_BUFFER_ALIGNMENT - writer->pos % LP_PAGE_BUFFER_ALIGNMENT) %
		LP_PAGE_BUFFER_ALIGNMENT;

	return write_bytes(writer, padding, pad, err);
}

/*
 * Encode the column's page, write its buffers and record it; the page is
 * reset.  A 2.0 struct header gets its one page, of every row, at the end.
 */
static bool
flush_page(LpFileWriter *writer, WriterColumn *column, LpError *err)
{
	LpEncodedPage encoded;
	LpPage	   *page;
	bool		ok = true;
	uint64_t	num_rows = column->page_rows;

	/* A struct header has its one page even when the lists above it hold no item (Lance reads exactly one). */
	if ((column->struct_header ? writer->rows : num_rows) == 0 ||
		(column->struct_header && !writer->done))
		return true;
	if (lp_check_cancel(err))
		return false;
	if (!(column->struct_header ? lp_encode_v20_struct_header(&encoded, err) :
		  column->list_offsets ? lp_encode_v20_list_page(&column->page, &encoded, err) :
		  writer->version == LP_FILE_VERSION_2_0 ?
		  lp_encode_v20_page(&column->shape, &column->page, &encoded, err) :
		  lp_encode_leaf_page(writer->version, &column->shape, &column->page, &encoded, err)))
		return false;
	if (column->num_pages == column->pages_capacity)
	{
		uint32_t	capacity = column->pages_capacity ? column->pages_capacity * 2 : 8;
		LpPage	   *grown = lp_alloc_array(capacity, sizeof(LpPage));

		if (grown == NULL)
		{
			lp_encoded_page_free(&encoded);
			return no_memory(err);
		}
		if (column->num_pages > 0)
			memcpy(grown, column->pages, column->num_pages * sizeof(LpPage));
		lp_free(column->pages);
		column->pages = grown;
		column->pages_capacity = capacity;
	}
	page = &column->pages[column->num_pages];
	memset(page, 0, sizeof(*page));
	page->buffers = lp_alloc_array(encoded.num_buffers + 1, sizeof(LpBufferRef));
	if (page->buffers == NULL)
	{
		lp_encoded_page_free(&encoded);
		return no_memory(err);
	}
	for (uint32_t b = 0; ok && b < encoded.num_buffers; b++)
	{
		ok = pad_output(writer, err);
		page->buffers[b].offset = writer->pos;
		page->buffers[b].size = encoded.buffers[b].len;
		ok = ok && write_bytes(writer, encoded.buffers[b].data, encoded.buffers[b].len, err);
	}
	page->num_buffers = encoded.num_buffers;
	page->num_rows = num_rows;
	/* 2.0 writers leave the priority 0; 2.1+ record the page's first row. */
	page->priority = writer->version == LP_FILE_VERSION_2_0 ? 0 : column->rows_flushed;
	page->encoding = encoded.encoding;
	page->layout = encoded.layout;
	encoded.encoding.data = NULL;
	lp_encoded_page_free(&encoded);
	column->num_pages++;
	column->rows_flushed += num_rows;
	column->page_rows = 0;
	/*
	 * Only a page that filled up keeps its buffers for the next, which will
	 * too: pages the budget cut short (mark_over_budget) vary in size, and
	 * keeping theirs would hold each column at its largest page so far.
	 */
	page_renew(&column->page, !writer->done && page_bytes(column) >= writer->flush_bytes);
	if ((column->shape.kind == LP_LEAF_VARIABLE && !lp_buf_append_u64(&column->page.offsets, 0)))
		return no_memory(err);
	return ok;
}

/*
 * The arrays from the column's top-level array down to its leaf: chain[0]
 * the leaf, chain[depth] the top-level array; a list's items are its
 * child, whose length its offsets bound.  false when the batch's arrays
 * do not have the schema's lists and structs (a message in err).
 */
static bool
array_chain(const LpFileWriter *writer, const WriterColumn *column, const LpArray *const *arrays,
			uint64_t length, const LpArray **chain, LpError *err)
{
	const LpArray *array = arrays[column->top];

	for (uint32_t d = 0; d <= column->depth; d++)
	{
		bool		leaf = d == column->depth;
		bool		list = !leaf && column->shape.list_layer[column->depth - d];
		LpTypeId	expected = leaf ? column->type->id : list ? LP_TYPE_LIST : LP_TYPE_STRUCT;
		bool		ok = array != NULL && array->type != NULL && array->length == length;

		if (ok && list)
			ok = (array->type->id == LP_TYPE_LIST || array->type->id == LP_TYPE_LARGE_LIST) &&
				array->num_children == 1 && array->children[0] != NULL &&
				(length == 0 || array->offsets != NULL);
		else if (ok)
			ok = array->type->id == expected &&
				(leaf || column->path[d] < array->num_children);
		if (!ok)
			return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
						   "batch for file \"%s\" has no array of %llu rows of type %s for field \"%s\"",
						   writer->output->name, (unsigned long long) length,
						   lp_type_id_name(expected), column->name);
		chain[column->depth - d] = array;
		if (leaf)
			break;
		if (list)
		{
			const LpArray *items = array->children[0];

			for (uint64_t i = 0; i < length; i++)
				if (array->offsets[i] > array->offsets[i + 1] ||
					array->offsets[i + 1] > items->length)
					return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
								   "list offsets above field \"%s\" are out of order or range at row %llu",
								   column->name, (unsigned long long) i);
			length = items->length;
		}
		array = array->children[column->path[d]];
	}
	return true;
}

/* The child types of a Blob v2 descriptor array, in order. */
static const LpTypeId blob_descriptor_types[5] = {
	LP_TYPE_UINT8, LP_TYPE_UINT64, LP_TYPE_UINT64, LP_TYPE_UINT32, LP_TYPE_STRING
};

/*
 * A Blob v2 field's array: a struct of {kind, position, size, blob_id,
 * blob_uri} whose valid rows have every child valid and a kind lance_parts
 * writes (Inline, Packed, Dedicated, External).
 */
static bool
check_blob_descriptors(const WriterColumn *column, const LpArray *array, LpError *err)
{
	const LpArray *const *children = (const LpArray *const *) array->children;

	if (array->num_children != 5)
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
					   "array of blob field \"%s\" has %u children, not the 5 of a descriptor",
					   column->name, array->num_children);
	for (int f = 0; f < 5; f++)
	{
		const LpArray *child = children[f];

		if (child == NULL || child->type == NULL || child->type->id != blob_descriptor_types[f] ||
			child->length != array->length ||
			(f < 4 ? child->values == NULL :
			 child->offsets == NULL || (child->data == NULL && child->data_len > 0)))
			return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
						   "descriptor child %s of blob field \"%s\" is not a %s array of %llu rows",
						   blob_pseudo_fields[f].name, column->name,
						   lp_type_id_name(blob_descriptor_types[f]),
						   (unsigned long long) array->length);
	}
	for (uint64_t i = 0; i < array->length; i++)
	{
		const LpArray *uri = children[4];

		if (!lp_array_is_valid(array, i))
			continue;
		for (int f = 0; f < 5; f++)
			if (!lp_array_is_valid(children[f], i))
				return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
							   "descriptor of blob field \"%s\" has a null %s at row %llu",
							   column->name, blob_pseudo_fields[f].name, (unsigned long long) i);
		if (children[0]->values[i] > LP_BLOB_KIND_EXTERNAL)
			return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
						   "descriptor of blob field \"%s\" has kind %u at row %llu",
						   column->name, children[0]->values[i], (unsigned long long) i);
		if (uri->offsets[i] > uri->offsets[i + 1] || uri->offsets[i + 1] > uri->data_len ||
			uri->offsets[i + 1] - uri->offsets[i] > UINT32_MAX)
			return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
						   "blob_uri offsets of blob field \"%s\" are out of order or range at row %llu",
						   column->name, (unsigned long long) i);
	}
	return true;
}

/* Append the packed descriptor of row index of array (valid) to page. */
static bool
append_blob_descriptor(LpPageValues *page, const LpArray *array, uint64_t index)
{
	const LpArray *uri = array->children[4];
	uint64_t	uri_len = uri->offsets[index + 1] - uri->offsets[index];
	uint8_t		row[LP_BLOB_DESCRIPTOR_FIXED_BYTES + 4];

	row[0] = array->children[0]->values[index];
	memcpy(row + 1, array->children[1]->values + index * 8, 8);
	memcpy(row + 9, array->children[2]->values + index * 8, 8);
	memcpy(row + 17, array->children[3]->values + index * 4, 4);
	lp_put_le32(row + 21, (uint32_t) uri_len);
	return lp_buf_append(&page->data, row, sizeof(row)) &&
		(uri_len == 0 || lp_buf_append(&page->data, uri->data + uri->offsets[index], uri_len));
}

/* Check a leaf's arrays against its column before any of them is taken. */
static bool
check_array(const LpFileWriter *writer, const WriterColumn *column, const LpArray *const *chain,
			uint64_t length, LpError *err)
{
	const LpLeafShape *shape = &column->shape;
	const LpArray *array = chain[0];

	/* Lance 2.0 has no place for a null struct (a null list has one). */
	for (uint32_t d = 0; writer->version == LP_FILE_VERSION_2_0 && d <= column->depth; d++)
	{
		bool		is_struct = d == 0 ? column->struct_header : !shape->list_layer[d];
		bool		in_list = false;

		for (uint32_t k = d + 1; k <= column->depth; k++)
			in_list |= shape->list_layer[k];

		for (uint64_t i = 0; is_struct && chain[d]->validity != NULL && i < chain[d]->length; i++)
			if (!lp_bit_get(chain[d]->validity, i))
				return lp_fail(err, LP_ERR_UNSUPPORTED,
							   "a struct %s field \"%s\" is null at %s %llu, which the encoder cannot write in a 2.0 file",
							   d == 0 ? "in" : "above", column->name,
							   in_list ? "list item" : "row", (unsigned long long) i);
	}
	length = array->length;
	if (length == 0 || column->struct_header)
		return true;
	if (column->list_offsets)
	{
		const LpArray *items = array->num_children == 1 ? array->children[0] : NULL;

		if (items == NULL || array->offsets == NULL)
			return lp_fail(err, LP_ERR_INVALID_ARGUMENT, "array of field \"%s\" lacks its offsets or items",
						   column->name);
		for (uint64_t i = 0; i < length; i++)
			if (array->offsets[i] > array->offsets[i + 1] || array->offsets[i + 1] > items->length)
				return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
							   "offsets of the array of field \"%s\" are out of order or range at row %llu",
							   column->name, (unsigned long long) i);
		return true;
	}
	if (shape->blob_descriptor)
		return check_blob_descriptors(column, array, err);
	if (shape->kind == LP_LEAF_VARIABLE)
	{
		if (array->offsets == NULL || (array->data == NULL && array->data_len > 0))
			return lp_fail(err, LP_ERR_INVALID_ARGUMENT, "array of field \"%s\" lacks its offsets",
						   column->name);
		for (uint64_t i = 0; i < length; i++)
			if (array->offsets[i] > array->offsets[i + 1] || array->offsets[i + 1] > array->data_len)
				return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
							   "offsets of the array of field \"%s\" are out of order or range at row %llu",
							   column->name, (unsigned long long) i);
		return true;
	}
	if (shape->kind == LP_LEAF_FIXED_SIZE_LIST)
	{
		const LpArray *items = array->num_children == 1 ? array->children[0] : NULL;

		if (items == NULL || items->values == NULL ||
			items->length != length * shape->dimension)
			return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
						   "array of field \"%s\" lacks its %u items per row", column->name,
						   shape->dimension);
		if (items->validity != NULL && writer->version == LP_FILE_VERSION_2_0)
			for (uint64_t i = 0; i < items->length; i++)
				if (!lp_bit_get(items->validity, i))
					return lp_fail(err, LP_ERR_UNSUPPORTED,
								   "field \"%s\" has null items inside fixed-size lists, which the encoder cannot write in a 2.0 file",
								   column->name);
		return true;
	}
	if (array->values == NULL)
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT, "array of field \"%s\" lacks its values",
					   column->name);
	return true;
}

/*
 * The validity of rows [start, start + count) of a leaf (chain[0]) under
 * structs: for each row the outermost layer at which it is null, as the
 * page encoder's levels need it, and whether it is valid at every layer.
 */
static bool
append_struct_validity(LpPageValues *page, const LpArray *const *chain, uint32_t depth,
					   uint64_t start, uint64_t count)
{
	for (uint64_t i = start; i < start + count; i++)
	{
		uint8_t		layer = 0;

		for (uint32_t d = depth + 1; d-- > 0;)
			if (chain[d]->validity != NULL && !lp_bit_get(chain[d]->validity, i))
			{
				layer = (uint8_t) (d + 1);
				break;
			}
		if (!lp_buf_append(&page->null_layers, &layer, 1) || !lp_bits_append(&page->validity, layer == 0))
			return false;
	}
	return true;
}

/* One value of the leaf, index of array or (array NULL) a null one, to the page. */
static bool
append_value(WriterColumn *column, const LpArray *array, uint64_t index)
{
	LpPageValues *page = &column->page;
	const LpLeafShape *shape = &column->shape;
	bool		valid = array != NULL;
	uint32_t	bytes = shape->bits / 8;

	if (!lp_bits_append(&page->validity, valid))
		return false;
	switch (shape->kind)
	{
		case LP_LEAF_BOOL:
			if (!lp_bits_append(&page->bits, valid && lp_bit_get(array->values, index)))
				return false;
			break;
		case LP_LEAF_FIXED:
			if (valid ? !lp_buf_append(&page->values, array->values + index * bytes, bytes) :
				!lp_buf_append_zeros(&page->values, bytes))
				return false;
			break;
		case LP_LEAF_FIXED_SIZE_LIST:
			{
				uint64_t	row_bytes = (uint64_t) shape->dimension * bytes;
				const LpArray *items = valid ? array->children[0] : NULL;

				if (valid ? !lp_buf_append(&page->values, items->values + index * row_bytes, row_bytes) :
					!lp_buf_append_zeros(&page->values, row_bytes))
					return false;
				if (items == NULL || items->validity == NULL ?
					!lp_bits_append_n(&page->item_validity, true, shape->dimension) :
					!lp_bits_append_bitmap(&page->item_validity, items->validity,
										   index * shape->dimension, shape->dimension))
					return false;
				break;
			}
		case LP_LEAF_VARIABLE:
			{
				uint64_t	len = valid ? array->offsets[index + 1] - array->offsets[index] : 0;

				if ((len > 0 && !lp_buf_append(&page->data, array->data + array->offsets[index], len)) ||
					!lp_buf_append_u64(&page->offsets, page->data.len))
					return false;
				if (len > page->max_length)
					page->max_length = len;
				break;
			}
	}
	page->num_values++;
	page->null_count = page->validity.num_unset;
	return true;
}

static bool
append_level(LpPageValues *page, uint16_t rep, uint8_t code)
{
	uint8_t		word[2];

	lp_put_le16(word, rep);
	page->num_levels++;
	return lp_buf_append(&page->rep, word, 2) && lp_buf_append(&page->null_layers, &code, 1);
}

static bool append_values(WriterColumn *column, const LpArray *array, uint64_t start,
						  uint64_t count, uint64_t first_value);

/*
 * The levels and values of a list's items [first, first + count) when they
 * are the leaf's values and none is null: what append_element gives them one
 * by one, at once (the items of lists are most of the values written).
 */
static bool
append_valid_items(WriterColumn *column, const LpArray *leaf, uint64_t first, uint64_t count,
				   uint16_t rep, uint16_t continued)
{
	LpPageValues *page = &column->page;
	uint8_t    *levels;

	if (!lp_buf_reserve(&page->rep, count * 2) || !lp_buf_append_zeros(&page->null_layers, count))
		return false;
	levels = page->rep.data + page->rep.len;
	lp_put_le16(levels, rep);
	for (uint64_t i = 1; i < count; i++)
		lp_put_le16(levels + i * 2, continued);
	page->rep.len += count * 2;
	page->num_levels += count;
	return lp_bits_append_n(&page->validity, true, count) &&
		append_values(column, leaf, first, count, page->num_values);
}

/*
 * The levels and values of element index of layer k (chain[k]) of a leaf
 * under lists, its first level at repetition level rep: a null (the
 * outermost) ends the descent, as does an empty list; a list's items
 * after the first continue it (the repetition level of its layer, counted
 * from the inside, less one).  Levels below the innermost list hold a
 * value, null or not.
 */
static bool
append_element(WriterColumn *column, const LpArray *const *chain, uint32_t k, uint64_t index,
			   uint16_t rep, uint32_t innermost_list)
{
	const LpArray *array = chain[k];
	LpPageValues *page = &column->page;

	if (array->validity != NULL && !lp_bit_get(array->validity, index))
		return append_level(page, rep, (uint8_t) (k + 1)) &&
			(k >= innermost_list || append_value(column, NULL, 0));
	if (k == 0)
		return append_level(page, rep, 0) && append_value(column, array, index);
	if (column->shape.list_layer[k])
	{
		uint64_t	first = array->offsets[index];
		uint64_t	end = array->offsets[index + 1];
		uint16_t	continued = 0;

		if (first == end)
			return append_level(page, rep, (uint8_t) (k + 1) | LP_LEVEL_EMPTY);
		for (uint32_t j = 1; j < k; j++)
			continued += column->shape.list_layer[j];
		if (k == 1 && chain[0]->validity == NULL && !column->shape.blob_descriptor)
			return append_valid_items(column, chain[0], first, end - first, rep, continued);
		for (uint64_t j = first; j < end; j++)
			if (!append_element(column, chain, k - 1, j, j == first ? rep : continued,
								innermost_list))
				return false;
		return true;
	}
	return append_element(column, chain, k - 1, index, rep, innermost_list);
}

/* Append rows [start, start + count) of the leaf (chain[0]) to the column's page. */
static bool
append_rows(WriterColumn *column, const LpArray *const *chain, uint64_t start, uint64_t count)
{
	LpPageValues *page = &column->page;
	const LpLeafShape *shape = &column->shape;
	const LpArray *array = chain[0];
	uint64_t	first_value = page->num_values;

	column->page_rows += count;
	if (shape->num_lists > 0)
	{
		uint32_t	innermost_list = 1;

		while (!shape->list_layer[innermost_list])
			innermost_list++;
		for (uint64_t row = start; row < start + count; row++)
			if (!append_element(column, chain, column->depth, row, (uint16_t) shape->num_lists,
								innermost_list))
				return false;
		return true;
	}
	if (column->depth > 0)
	{
		if (!append_struct_validity(page, chain, column->depth, start, count))
			return false;
	}
	else if (array->validity == NULL)
	{
		if (!lp_bits_append_n(&page->validity, true, count))
			return false;
	}
	else if (!lp_bits_append_bitmap(&page->validity, array->validity, start, count))
		return false;
	return append_values(column, array, start, count, first_value);
}

/*
 * The values of rows [start, start + count) of the leaf array to the page,
 * whose validity already has them from first_value on.
 */
static bool
append_values(WriterColumn *column, const LpArray *array, uint64_t start, uint64_t count,
			  uint64_t first_value)
{
	LpPageValues *page = &column->page;
	const LpLeafShape *shape = &column->shape;

	switch (shape->kind)
	{
		case LP_LEAF_BOOL:
			if (!lp_bits_append_bitmap(&page->bits, array->values, start, count))
				return false;
			break;
		case LP_LEAF_FIXED:
			if (!lp_buf_append(&page->values, array->values + start * (shape->bits / 8),
							   count * (shape->bits / 8)))
				return false;
			break;
		case LP_LEAF_FIXED_SIZE_LIST:
			{
				uint64_t	row_bytes = (uint64_t) shape->dimension * (shape->bits / 8);

				const LpArray *items = array->children[0];

				if (!lp_buf_append(&page->values, items->values + start * row_bytes,
								   count * row_bytes))
					return false;
				if (items->validity == NULL ?
					!lp_bits_append_n(&page->item_validity, true, count * shape->dimension) :
					!lp_bits_append_bitmap(&page->item_validity, items->validity,
										   start * shape->dimension, count * shape->dimension))
					return false;
				break;
			}
		case LP_LEAF_VARIABLE:
			for (uint64_t i = start; shape->blob_descriptor && i < start + count; i++)
			{
				/* a null descriptor has no bytes */
				if ((lp_array_is_valid(array, i) && !append_blob_descriptor(page, array, i)) ||
					!lp_buf_append_u64(&page->offsets, page->data.len))
					return false;
			}
			for (uint64_t i = start; !shape->blob_descriptor && i < start + count; i++)
			{
				/* A value null at any layer is stored empty. */
				bool		valid = lp_bit_get(page->validity.buf.data, first_value + i - start);
				uint64_t	len = valid ? array->offsets[i + 1] - array->offsets[i] : 0;

				if ((len > 0 && !lp_buf_append(&page->data, array->data + array->offsets[i], len)) ||
					!lp_buf_append_u64(&page->offsets, page->data.len))
					return false;
				if (len > page->max_length)
					page->max_length = len;
			}
			break;
	}
	page->num_values += count;
	page->null_count = page->validity.num_unset;
	return true;
}

/*
 * Append rows [start, start + count) to a column of a 2.0 file, which holds
 * the elements of its innermost list above (the rows without one): a list
 * maps a run of its elements onto the run of their items, a struct (never
 * null) onto the same run.  A list's column gets the page-relative end of
 * each list and its validity, a struct header only the count, a leaf its
 * values with their own validity.
 */
static bool
append_rows_v20(WriterColumn *column, const LpArray *const *chain, uint64_t start, uint64_t count)
{
	LpPageValues *page = &column->page;
	const LpArray *array = chain[0];
	uint64_t	end = start + count;

	for (uint32_t k = column->depth; k >= 1; k--)
		if (column->shape.list_layer[k] && end > start)
		{
			start = chain[k]->offsets[start];
			end = chain[k]->offsets[end];
		}
		else if (column->shape.list_layer[k])
			start = end = 0;
	column->page_rows += end - start;
	if (column->struct_header)
		return true;
	if (column->list_offsets)
	{
		uint64_t	last = page->num_values > 0 ?
			((const uint64_t *) page->offsets.data)[page->num_values - 1] : 0;

		for (uint64_t i = start; i < end; i++)
		{
			last += array->offsets[i + 1] - array->offsets[i];
			if (!lp_buf_append_u64(&page->offsets, last) ||
				!lp_bits_append(&page->validity,
								array->validity == NULL || lp_bit_get(array->validity, i)))
				return false;
		}
		page->num_values += end - start;
		page->null_count = page->validity.num_unset;
		return true;
	}
	if (array->validity == NULL ?
		!lp_bits_append_n(&page->validity, true, end - start) :
		!lp_bits_append_bitmap(&page->validity, array->validity, start, end - start))
		return false;
	return append_values(column, array, start, end - start, page->num_values);
}

/*
 * Whether the column's page is written after the current slice: when it
 * holds about the writer's flush_bytes or the writer's budget needs its memory,
 * or (2.0) when the page of the list above was, as Lance never lets two
 * pages of a list share a page of its items.
 */
static bool
page_is_due(const LpFileWriter *writer, const WriterColumn *column)
{
	if (column->struct_header)
		return false;
	return page_bytes(column) >= writer->flush_bytes || column->over_budget ||
		(column->list_column >= 0 && writer->columns[column->list_column].flushed);
}

/* Bytes the column's page buffers hold. */
static uint64_t
page_memory(const WriterColumn *column)
{
	const LpPageValues *page = &column->page;

	return page->values.len + page->bits.buf.len + page->offsets.len + page->data.len +
		page->validity.buf.len + page->item_validity.buf.len + page->null_layers.len +
		page->rep.len;
}

/*
 * Mark the largest pages over_budget until the rest hold at most the
 * writer's buffer_bytes: the pages of every column wait for 8 MiB each, so
 * a file of many narrow columns would otherwise hold about 8 MiB per column
 * once enough rows came.  Items of a 2.0 list are left to their list's page
 * (page_is_due), struct headers hold nothing.
 */
static void
mark_over_budget(LpFileWriter *writer)
{
	uint64_t	total = 0;

	for (uint32_t c = 0; c < writer->num_columns; c++)
	{
		writer->columns[c].over_budget = false;
		total += page_memory(&writer->columns[c]);
	}
	while (total > writer->buffer_bytes)
	{
		WriterColumn *largest = NULL;

		for (uint32_t c = 0; c < writer->num_columns; c++)
		{
			WriterColumn *column = &writer->columns[c];

			if (!column->over_budget && !column->struct_header && column->list_column < 0 &&
				column->page_rows > 0 &&
				(largest == NULL || page_memory(column) > page_memory(largest)))
				largest = column;
		}
		if (largest == NULL)
			return;
		largest->over_budget = true;
		total -= page_memory(largest);
	}
}

void
lp_file_writer_set_page_bytes(LpFileWriter *writer, uint64_t flush_bytes, uint64_t buffer_bytes)
{
	writer->flush_bytes = flush_bytes;
	writer->buffer_bytes = buffer_bytes;
}

bool
lp_file_writer_write(LpFileWriter *writer, const LpArray *const *arrays, uint32_t num_arrays,
					 LpError *err)
{
	uint64_t	length;

	if (writer->done)
		return lp_fail(err, LP_ERR_INTERNAL, "file writer of \"%s\" used after it finished or failed",
					   writer->output->name);
	if (num_arrays != writer->num_top || (num_arrays > 0 && arrays[0] == NULL))
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
					   "batch for file \"%s\" has %u arrays, not one per top-level field (%u)",
					   writer->output->name, num_arrays, writer->num_top);
	length = num_arrays > 0 ? arrays[0]->length : 0;
	for (uint32_t c = 0; c < writer->num_columns; c++)
	{
		const WriterColumn *column = &writer->columns[c];
		const LpArray **chain = &writer->chains[(size_t) c * LP_ENCODE_MAX_LAYERS];

		if (!array_chain(writer, column, arrays, length, chain, err) ||
			!check_array(writer, column, chain, length, err))
			return false;
	}
	if (length > UINT32_MAX || writer->rows + length > UINT32_MAX)
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
					   "file \"%s\" would hold more than %u rows", writer->output->name, UINT32_MAX);

	/* Slice by slice over every column, so the pages of a 2.0 list and its items end together. */
	for (uint64_t start = 0; start < length; start += APPEND_SLICE_ROWS)
	{
		uint64_t	count = length - start < APPEND_SLICE_ROWS ? length - start : APPEND_SLICE_ROWS;

		for (uint32_t c = 0; c < writer->num_columns; c++)
		{
			WriterColumn *column = &writer->columns[c];
			const LpArray *const *chain = &writer->chains[(size_t) c * LP_ENCODE_MAX_LAYERS];
			bool		ok = writer->version == LP_FILE_VERSION_2_0 ?
				append_rows_v20(column, chain, start, count) :
				append_rows(column, chain, start, count);

			if (!ok)
			{
				writer->done = true;
				return no_memory(err);
			}
		}
		mark_over_budget(writer);
		for (uint32_t c = 0; c < writer->num_columns; c++)
		{
			WriterColumn *column = &writer->columns[c];
			bool		due = page_is_due(writer, column);

			if (due && !flush_page(writer, column, err))
			{
				writer->done = true;
				return false;
			}
			column->flushed = due;
		}
	}
	writer->rows += length;
	return true;
}

bool
lp_file_writer_write_blob(LpFileWriter *writer, const void *data, uint64_t len,
						  uint64_t *position, LpError *err)
{
	if (writer->done)
		return lp_fail(err, LP_ERR_INTERNAL, "file writer of \"%s\" used after it finished or failed",
					   writer->output->name);
	/* lancedb aligns every inline payload, an empty one too, to 64 bytes */
	if (!pad_output(writer, err))
	{
		writer->done = true;
		return false;
	}
	*position = writer->pos;
	if (!write_bytes(writer, data, len, err))
	{
		writer->done = true;
		return false;
	}
	return true;
}

uint64_t
lp_file_writer_rows(const LpFileWriter *writer)
{
	return writer->rows;
}

bool
lp_file_writer_finish(LpFileWriter *writer, uint64_t *file_size, LpError *err)
{
	return lp_file_writer_finish_with_buffers(writer, NULL, 0, file_size, err);
}

bool
lp_file_writer_finish_with_buffers(LpFileWriter *writer, const LpBytes *buffers,
								   uint32_t num_buffers, uint64_t *file_size, LpError *err)
{
	LpColumn   *columns;
	LpBytes    *global_buffers;
	LpFileTail	tail;
	bool		ok;

	if (writer->done)
		return lp_fail(err, LP_ERR_INTERNAL, "file writer of \"%s\" used after it finished or failed",
					   writer->output->name);
	writer->done = true;
	/* a column's last page gives its buffers back before the next is encoded */
	for (uint32_t c = 0; c < writer->num_columns; c++)
	{
		if (!flush_page(writer, &writer->columns[c], err))
			return false;
		page_free(&writer->columns[c].page);
	}
	if (!pad_output(writer, err))
		return false;

	columns = lp_alloc_array(writer->num_columns + 1, sizeof(LpColumn));
	global_buffers = lp_alloc_array((size_t) num_buffers + 1, sizeof(LpBytes));
	if (columns == NULL || global_buffers == NULL)
	{
		lp_free(columns);
		lp_free(global_buffers);
		return no_memory(err);
	}
	if (!lp_file_descriptor_with_length(&writer->descriptor, writer->rows, &global_buffers[0], err))
	{
		lp_free(columns);
		lp_free(global_buffers);
		return false;
	}
	if (num_buffers > 0)
		memcpy(&global_buffers[1], buffers, sizeof(LpBytes) * num_buffers);
	{
		/* Every column is ColumnEncoding{values}, as Lance writes it. */
		Lance__Encodings__ColumnEncoding encoding = LANCE__ENCODINGS__COLUMN_ENCODING__INIT;
		Lance__Encodings__PlainValues values = LANCE__ENCODINGS__PLAIN_VALUES__INIT;
		uint8_t		packed[16];
		size_t		len;
		LpBytes		column_encoding;

		encoding.column_encoding_case = LANCE__ENCODINGS__COLUMN_ENCODING__COLUMN_ENCODING_VALUES;
		encoding.values = &values;
		len = lance__encodings__column_encoding__pack(&encoding, packed);
		if (!lp_encoding_wrap(LP_COLUMN_ENCODING_URL, packed, len, &column_encoding))
		{
			lp_free(columns);
			lp_free(global_buffers[0].data);
			lp_free(global_buffers);
			return no_memory(err);
		}
		for (uint32_t c = 0; c < writer->num_columns; c++)
		{
			columns[c].encoding = column_encoding;
			columns[c].kind = "values";
			columns[c].num_pages = writer->columns[c].num_pages;
			columns[c].pages = writer->columns[c].pages;
		}
		ok = lp_file_tail_build(writer->version, writer->pos, global_buffers, num_buffers + 1,
								columns, writer->num_columns, &tail, err);
		lp_free(column_encoding.data);
	}
	lp_free(columns);
	lp_free(global_buffers[0].data);
	lp_free(global_buffers);
	if (!ok)
		return false;
	ok = write_bytes(writer, tail.bytes.data, tail.bytes.len, err);
	if (ok)
		*file_size = writer->pos;
	lp_file_tail_free(&tail);
	return ok;
}

void
lp_file_writer_free(LpFileWriter *writer)
{
	if (writer == NULL)
		return;
	for (uint32_t c = 0; c < writer->num_columns; c++)
	{
		WriterColumn *column = &writer->columns[c];

		lp_type_free(column->type);
		lp_free(column->name);
		page_free(&column->page);
		for (uint32_t p = 0; p < column->num_pages; p++)
		{
			lp_free(column->pages[p].buffers);
			lp_free(column->pages[p].encoding.data);
		}
		lp_free(column->pages);
	}
	lp_free(writer->columns);
	lp_free(writer->chains);
	lp_free(writer->descriptor.data);
	lp_free(writer);
}
