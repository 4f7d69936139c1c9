/*
 * lp_file_tail.c - encoding the metadata tail of a Lance v2 file.
 */
#include "format/lp_file_tail.h"

#include <string.h>

#include "file.pb-c.h"
#include "file2.pb-c.h"
#include "base/lp_alloc.h"
#include "base/lp_bytes.h"
#include "base/lp_checked.h"
#include "base/lp_protobuf.h"

static ProtobufCBinaryData
binary(const LpBytes *bytes)
{
	ProtobufCBinaryData result;

	/* protobuf-c only reads through this pointer when packing */
	result.data = bytes->data;
	result.len = bytes->len;
	return result;
}

/* Split (offset, size) pairs into the two parallel arrays of the message. */
static void
split_buffers(const LpBufferRef *buffers, uint32_t count,
			  uint64_t *offsets, uint64_t *sizes)
{
	for (uint32_t i = 0; i < count; i++)
	{
		offsets[i] = buffers[i].offset;
		sizes[i] = buffers[i].size;
	}
}

/* Serialize one ColumnMetadata message into *out (allocated). */
static bool
pack_column(const LpColumn *column, LpBytes *out, LpError *err)
{
	Lance__File__V2__ColumnMetadata message = LANCE__FILE__V2__COLUMN_METADATA__INIT;
	Lance__File__V2__ColumnMetadata__Page *pages = NULL;
	Lance__File__V2__ColumnMetadata__Page **page_pointers = NULL;
	uint64_t	num_values = column->num_column_buffers;
	uint64_t   *values = NULL;
	uint64_t	next = 0;
	size_t		size;
	bool		ok = false;

	for (uint32_t p = 0; p < column->num_pages; p++)
	{
		if (!lp_add_u64(num_values, column->pages[p].num_buffers, &num_values))
			return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
						   "a column has too many buffers");
	}
	/* offsets and sizes of every buffer */
	values = lp_alloc_array(num_values, 2 * sizeof(uint64_t));
	pages = lp_alloc_array(column->num_pages, sizeof(*pages));
	page_pointers = lp_alloc_array(column->num_pages, sizeof(*page_pointers));
	if (values == NULL || pages == NULL || page_pointers == NULL)
	{
		lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
		goto done;
	}

	message.encoding = binary(&column->encoding);
	message.n_pages = column->num_pages;
	message.pages = page_pointers;
	for (uint32_t p = 0; p < column->num_pages; p++)
	{
		const LpPage *source = &column->pages[p];
		Lance__File__V2__ColumnMetadata__Page *page = &pages[p];

		lance__file__v2__column_metadata__page__init(page);
		page->n_buffer_offsets = source->num_buffers;
		page->buffer_offsets = values + next;
		page->n_buffer_sizes = source->num_buffers;
		page->buffer_sizes = values + next + source->num_buffers;
		split_buffers(source->buffers, source->num_buffers,
					  page->buffer_offsets, page->buffer_sizes);
		next += 2 * (uint64_t) source->num_buffers;
		page->length = source->num_rows;
		page->encoding = binary(&source->encoding);
		page->priority = source->priority;
		page_pointers[p] = page;
	}
	message.n_buffer_offsets = column->num_column_buffers;
	message.buffer_offsets = values + next;
	message.n_buffer_sizes = column->num_column_buffers;
	message.buffer_sizes = values + next + column->num_column_buffers;
	split_buffers(column->column_buffers, column->num_column_buffers,
				  message.buffer_offsets, message.buffer_sizes);

	size = lance__file__v2__column_metadata__get_packed_size(&message);
	out->data = lp_alloc(size);
	if (out->data == NULL)
	{
		lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
		goto done;
	}
	out->len = lance__file__v2__column_metadata__pack(&message, out->data);
	ok = true;

done:
	lp_free(values);
	lp_free(pages);
	lp_free(page_pointers);
	return ok;
}

static void
free_packed(LpBytes *packed, uint32_t count)
{
	if (packed == NULL)
		return;
	for (uint32_t i = 0; i < count; i++)
		lp_free(packed[i].data);
	lp_free(packed);
}

bool
lp_file_tail_build(LpFileVersion version, uint64_t start,
				   const LpBytes *global_buffers, uint32_t num_global_buffers,
				   const LpColumn *columns, uint32_t num_columns,
				   LpFileTail *tail, LpError *err)
{
	LpBytes    *packed = NULL;
	uint64_t   *global_positions = NULL;
	uint64_t	pos = start;
	uint64_t	table_len;
	uint8_t    *out;
	uint16_t	major;
	uint16_t	minor;

	memset(tail, 0, sizeof(*tail));
	if (version == LP_FILE_VERSION_LEGACY || num_global_buffers == 0 ||
		start % LP_PAGE_BUFFER_ALIGNMENT != 0)
		return lp_fail(err, LP_ERR_INTERNAL,
					   "invalid file tail request (version %s, %u global buffers, start %llu)",
					   lp_file_version_name(version), num_global_buffers,
					   (unsigned long long) start);

	packed = lp_alloc_array(num_columns, sizeof(LpBytes));
	global_positions = lp_alloc_array(num_global_buffers, sizeof(uint64_t));
	if (packed == NULL || global_positions == NULL)
	{
		lp_free(global_positions);
		lp_free(packed);
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
	}
	for (uint32_t c = 0; c < num_columns; c++)
	{
		if (!pack_column(&columns[c], &packed[c], err))
			goto fail;
	}

	/* Lay out: global buffers (aligned), column metadata, tables, footer. */
	for (uint32_t g = 0; g < num_global_buffers; g++)
	{
		if (!lp_align_up_u64(pos, LP_PAGE_BUFFER_ALIGNMENT, &pos))
			goto overflow;
		global_positions[g] = pos;
		if (!lp_add_u64(pos, global_buffers[g].len, &pos))
			goto overflow;
	}
	tail->column_meta_start = pos;
	for (uint32_t c = 0; c < num_columns; c++)
	{
		if (!lp_add_u64(pos, packed[c].len, &pos))
			goto overflow;
	}
	tail->column_meta_offsets_start = pos;
	if (!lp_mul_u64(num_columns, LP_OFFSET_TABLE_ENTRY_LEN, &table_len) ||
		!lp_add_u64(pos, table_len, &pos))
		goto overflow;
	tail->global_buffer_offsets_start = pos;
	if (!lp_mul_u64(num_global_buffers, LP_OFFSET_TABLE_ENTRY_LEN, &table_len) ||
		!lp_add_u64(pos, table_len, &pos) ||
		!lp_add_u64(pos, LP_FOOTER_LEN, &pos) ||
		pos - start > SIZE_MAX)
		goto overflow;
	tail->start = start;
	tail->end = pos;
	tail->bytes.len = (size_t) (pos - start);
	tail->bytes.data = lp_alloc(tail->bytes.len);
	if (tail->bytes.data == NULL)
	{
		lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
		goto fail;
	}

	out = tail->bytes.data;
	memset(out, LP_PAD_BYTE, tail->column_meta_start - start);
	for (uint32_t g = 0; g < num_global_buffers; g++)
	{
		if (global_buffers[g].len > 0)
			memcpy(out + (global_positions[g] - start), global_buffers[g].data,
				   global_buffers[g].len);
	}
	pos = tail->column_meta_start;
	for (uint32_t c = 0; c < num_columns; c++)
	{
		uint8_t    *entry = out + (tail->column_meta_offsets_start - start) +
			(uint64_t) c * LP_OFFSET_TABLE_ENTRY_LEN;

		if (packed[c].len > 0)
			memcpy(out + (pos - start), packed[c].data, packed[c].len);
		lp_put_le64(entry, pos);
		lp_put_le64(entry + 8, packed[c].len);
		pos += packed[c].len;
	}
	for (uint32_t g = 0; g < num_global_buffers; g++)
	{
		uint8_t    *entry = out + (tail->global_buffer_offsets_start - start) +
			(uint64_t) g * LP_OFFSET_TABLE_ENTRY_LEN;

		lp_put_le64(entry, global_positions[g]);
		lp_put_le64(entry + 8, global_buffers[g].len);
	}
	out += tail->bytes.len - LP_FOOTER_LEN;
	lp_file_version_footer_numbers(version, &major, &minor);
	lp_put_le64(out, tail->column_meta_start);
	lp_put_le64(out + 8, tail->column_meta_offsets_start);
	lp_put_le64(out + 16, tail->global_buffer_offsets_start);
	lp_put_le32(out + 24, num_global_buffers);
	lp_put_le32(out + 28, num_columns);
	lp_put_le16(out + 32, major);
	lp_put_le16(out + 34, minor);
	memcpy(out + 36, LP_MAGIC, 4);

	free_packed(packed, num_columns);
	lp_free(global_positions);
	return true;

overflow:
	lp_fail(err, LP_ERR_INVALID_ARGUMENT,
			"file metadata of the output does not fit in a 64-bit file size");
fail:
	free_packed(packed, num_columns);
	lp_free(global_positions);
	lp_file_tail_free(tail);
	return false;
}

void
lp_file_tail_free(LpFileTail *tail)
{
	lp_free(tail->bytes.data);
	memset(tail, 0, sizeof(*tail));
}

bool
lp_file_descriptor_with_length(const LpBytes *descriptor, uint64_t length,
							   LpBytes *result, LpError *err)
{
	ProtobufCMessage *unpacked;
	Lance__File__FileDescriptor *message;
	LpUnpackResult unpack_result;

	result->data = NULL;
	result->len = 0;
	unpack_result = lp_protobuf_unpack(&lance__file__file_descriptor__descriptor,
									   descriptor->data, descriptor->len,
									   &unpacked);
	if (unpack_result == LP_UNPACK_NO_MEMORY)
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
	if (unpack_result != LP_UNPACK_OK)
		return lp_fail(err, LP_ERR_CORRUPT, "file descriptor %s",
					   lp_unpack_result_text(unpack_result));
	message = (Lance__File__FileDescriptor *) unpacked;
	message->length = length;
	result->data = lp_alloc(lance__file__file_descriptor__get_packed_size(message));
	if (result->data == NULL)
	{
		lp_protobuf_free(unpacked);
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
	}
	result->len = lance__file__file_descriptor__pack(message, result->data);
	lp_protobuf_free(unpacked);
	return true;
}

/* The map entries of metadata as protobuf-c messages (both entry types share a layout). */
static bool
metadata_entries(const LpKeyValue *metadata, uint32_t count, bool field_level,
				 Lance__File__Field__MetadataEntry **entries_out, void ***pointers_out)
{
	Lance__File__Field__MetadataEntry *entries = lp_alloc_array(count + 1, sizeof(*entries));
	void	  **pointers = lp_alloc_array(count + 1, sizeof(*pointers));

	if (entries == NULL || pointers == NULL)
	{
		lp_free(entries);
		lp_free(pointers);
		return false;
	}
	for (uint32_t i = 0; i < count; i++)
	{
		if (field_level)
			lance__file__field__metadata_entry__init(&entries[i]);
		else
			lance__file__schema__metadata_entry__init((Lance__File__Schema__MetadataEntry *) &entries[i]);
		entries[i].key = metadata[i].key;
		entries[i].value = binary(&metadata[i].value);
		pointers[i] = &entries[i];
	}
	*entries_out = entries;
	*pointers_out = pointers;
	return true;
}

bool
lp_file_descriptor_build(const LpSchema *schema, uint64_t length, LpBytes *result,
						 LpError *err)
{
	Lance__File__FileDescriptor message = LANCE__FILE__FILE_DESCRIPTOR__INIT;
	Lance__File__Schema proto_schema = LANCE__FILE__SCHEMA__INIT;
	uint32_t	n = schema->num_fields;
	Lance__File__Field *fields = lp_alloc_array(n + 1, sizeof(*fields));
	Lance__File__Field **field_pointers = lp_alloc_array(n + 1, sizeof(*field_pointers));
	Lance__File__Field__MetadataEntry **entries = lp_alloc_array(n + 1, sizeof(*entries));
	void	 ***entry_pointers = lp_alloc_array(n + 1, sizeof(*entry_pointers));
	Lance__File__Field__MetadataEntry *schema_entries = NULL;
	void	  **schema_entry_pointers = NULL;
	bool		ok = false;

	result->data = NULL;
	result->len = 0;
	if (fields == NULL || field_pointers == NULL || entries == NULL || entry_pointers == NULL)
		goto done;
	for (uint32_t i = 0; i < n; i++)
	{
		const LpField *field = &schema->fields[i];

		lance__file__field__init(&fields[i]);
		fields[i].name = field->name ? field->name : "";
		fields[i].id = field->id;
		fields[i].parent_id = field->parent_id;
		fields[i].logical_type = field->logical_type ? field->logical_type : "";
		fields[i].nullable = field->nullable;
		fields[i].encoding = (Lance__File__Encoding) field->legacy_encoding;
		fields[i].extension_name = field->extension_name ? field->extension_name : "";
		fields[i].unenforced_primary_key = field->unenforced_primary_key;
		if (!metadata_entries(field->metadata, field->num_metadata, true, &entries[i],
							  &entry_pointers[i]))
			goto done;
		fields[i].n_metadata = field->num_metadata;
		fields[i].metadata = (Lance__File__Field__MetadataEntry **) entry_pointers[i];
		field_pointers[i] = &fields[i];
	}
	if (!metadata_entries(schema->metadata, schema->num_metadata, false, &schema_entries,
						  &schema_entry_pointers))
		goto done;
	proto_schema.n_fields = n;
	proto_schema.fields = field_pointers;
	proto_schema.n_metadata = schema->num_metadata;
	proto_schema.metadata = (Lance__File__Schema__MetadataEntry **) schema_entry_pointers;
	message.schema = &proto_schema;
	message.length = length;
	result->data = lp_alloc(lance__file__file_descriptor__get_packed_size(&message) + 1);
	if (result->data == NULL)
		goto done;
	result->len = lance__file__file_descriptor__pack(&message, result->data);
	ok = true;

done:
	for (uint32_t i = 0; entries != NULL && entry_pointers != NULL && i < n; i++)
	{
		lp_free(entries[i]);
		lp_free(entry_pointers[i]);
	}
	lp_free(fields);
	lp_free(field_pointers);
	lp_free(entries);
	lp_free(entry_pointers);
	lp_free(schema_entries);
	lp_free(schema_entry_pointers);
	return ok ? true : lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
}
