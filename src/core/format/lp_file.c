/*
 * lp_file.c - reading and checking the metadata of a Lance data file.
 *
 * See lp_file.h for what is checked.  The layout facts come from
 * lance-format.md §1 (footer, offset tables) and §2 (messages).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/lp_alloc.h"
#include "base/lp_bytes.h"
#include "base/lp_checked.h"
#include "format/lp_encodings.h"
#include "format/lp_file.h"
#include "base/lp_protobuf.h"
#include "format/lp_schema_internal.h"

#include "file.pb-c.h"
#include "file2.pb-c.h"

/* Bytes read from the end of the file before anything else is known. */
#define TAIL_PREFETCH_LEN (64 * 1024)

/* Largest hole between global buffer 0 and the column metadata that the
 * single metadata read may include. */
#define METADATA_READ_MAX_GAP (64 * 1024)

#define VERSION_TAIL_LEN 8

/*
 * The bytes [start, file size) of the file, read in one piece.  All metadata
 * from the column metadata start to the end of the file ends up in here.
 */
typedef struct TailBuffer
{
	uint8_t    *data;
	uint64_t	start;
} TailBuffer;

const char *
lp_file_version_name(LpFileVersion version)
{
	switch (version)
	{
		case LP_FILE_VERSION_LEGACY:
			return "legacy";
		case LP_FILE_VERSION_2_0:
			return "2.0";
		case LP_FILE_VERSION_2_1:
			return "2.1";
		case LP_FILE_VERSION_2_2:
			return "2.2";
		case LP_FILE_VERSION_2_3:
			return "2.3";
	}
	return "unknown";
}

bool
lp_file_version_parse(const char *name, LpFileVersion *version)
{
	static const LpFileVersion all[] = {
		LP_FILE_VERSION_LEGACY, LP_FILE_VERSION_2_0, LP_FILE_VERSION_2_1,
		LP_FILE_VERSION_2_2, LP_FILE_VERSION_2_3
	};

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
	{
		if (strcmp(name, lp_file_version_name(all[i])) == 0)
		{
			*version = all[i];
			return true;
		}
	}
	return false;
}

void
lp_file_version_footer_numbers(LpFileVersion version,
							   uint16_t *major, uint16_t *minor)
{
	switch (version)
	{
		case LP_FILE_VERSION_LEGACY:
			*major = 0;
			*minor = 2;
			return;
		case LP_FILE_VERSION_2_0:
			*major = 0;
			*minor = 3;
			return;
		case LP_FILE_VERSION_2_1:
			*major = 2;
			*minor = 1;
			return;
		case LP_FILE_VERSION_2_2:
			*major = 2;
			*minor = 2;
			return;
		case LP_FILE_VERSION_2_3:
			*major = 2;
			*minor = 3;
			return;
	}
	*major = 0;
	*minor = 0;
}

void
lp_file_version_data_file_numbers(LpFileVersion version,
								  uint16_t *major, uint16_t *minor)
{
	if (version == LP_FILE_VERSION_2_0)
	{
		*major = 2;
		*minor = 0;
		return;
	}
	lp_file_version_footer_numbers(version, major, minor);
}

/* Map footer numbers to a version; false if they name none we know. */
static bool
version_from_footer(uint16_t major, uint16_t minor, LpFileVersion *version)
{
	if (major == 0 && minor <= 2)
		*version = LP_FILE_VERSION_LEGACY;
	else if ((major == 0 && minor == 3) || (major == 2 && minor == 0))
		*version = LP_FILE_VERSION_2_0;
	else if (major == 2 && minor == 1)
		*version = LP_FILE_VERSION_2_1;
	else if (major == 2 && minor == 2)
		*version = LP_FILE_VERSION_2_2;
	else if (major == 2 && minor == 3)
		*version = LP_FILE_VERSION_2_3;
	else
		return false;
	return true;
}

/* Make tail cover [start, file size), reading again only if it does not. */
static bool
tail_extend(LpInput *input, TailBuffer *tail, uint64_t start, LpError *err)
{
	uint64_t	len = input->size - start;
	uint8_t    *data;

	if (tail->data != NULL && start >= tail->start)
		return true;
	if (len > SIZE_MAX || (data = lp_alloc((size_t) len)) == NULL)
		return lp_fail(err, LP_ERR_NO_MEMORY,
					   "out of memory reading %llu bytes of metadata of file \"%s\"",
					   (unsigned long long) len, input->name);
	if (!lp_input_read(input, start, data, (size_t) len, err))
	{
		lp_free(data);
		return false;
	}
	lp_free(tail->data);
	tail->data = data;
	tail->start = start;
	return true;
}

static const uint8_t *
tail_at(const TailBuffer *tail, uint64_t offset)
{
	return tail->data + (offset - tail->start);
}

static bool
copy_bytes(LpBytes *target, const uint8_t *data, size_t len)
{
	target->data = lp_memdup(data, len);
	target->len = len;
	return target->data != NULL;
}

static bool
out_of_memory(const LpFile *file, LpError *err)
{
	return lp_fail(err, LP_ERR_NO_MEMORY,
				   "out of memory reading the metadata of file \"%s\"", file->name);
}

/* ---- footer and offset tables --------------------------------------------- */

/* The u32-length-prefixed message at position, inside [0, limit). */
static bool
legacy_message_at(LpFile *file, LpInput *input, TailBuffer *tail,
				  uint64_t position, uint64_t limit, const char *what,
				  const ProtobufCMessageDescriptor *descriptor,
				  ProtobufCMessage **message, LpError *err)
{
	uint32_t	length;
	LpUnpackResult result;

	if (position > limit || limit - position < 4)
	{
		lp_fail(err, LP_ERR_CORRUPT, "%s of legacy Lance file \"%s\" lies outside the file",
				what, file->name);
		lp_error_detail(err, "The position is %llu; the file has %llu bytes.",
						(unsigned long long) position,
						(unsigned long long) file->file_size);
		return false;
	}
	if (!tail_extend(input, tail, position, err))
		return false;
	length = lp_le32(tail_at(tail, position));
	if (length > limit - position - 4)
		return lp_fail(err, LP_ERR_CORRUPT, "%s of legacy Lance file \"%s\" runs past the file",
					   what, file->name);
	result = lp_protobuf_unpack(descriptor, tail_at(tail, position + 4), length, message);
	if (result != LP_UNPACK_OK)
		return lp_fail(err, result == LP_UNPACK_NO_MEMORY ? LP_ERR_NO_MEMORY : LP_ERR_CORRUPT,
					   "%s of legacy Lance file \"%s\" %s",
					   what, file->name, lp_unpack_result_text(result));
	return true;
}

/*
 * Legacy (v1) files end in a 16-byte tail naming their metadata block, which
 * names the embedded manifest that holds the schema.  Nothing else of a v1
 * file is read.
 */
static bool
read_legacy_metadata(LpFile *file, LpInput *input, TailBuffer *tail, LpError *err)
{
	uint64_t	limit;
	Lance__File__LegacyMetadata *metadata;
	Lance__File__LegacyManifest *manifest;
	char		where[LP_SCHEMA_WHERE_LEN];
	bool		ok;

	if (file->file_size < LP_LEGACY_TAIL_LEN)
		return lp_fail(err, LP_ERR_CORRUPT,
					   "file \"%s\" is too short to be a Lance file (%llu bytes)",
					   file->name, (unsigned long long) file->file_size);
	limit = file->file_size - LP_LEGACY_TAIL_LEN;
	if (!legacy_message_at(file, input, tail, lp_le64(tail_at(tail, limit)), limit,
						   "metadata block", &lance__file__legacy_metadata__descriptor,
						   (ProtobufCMessage **) &metadata, err))
		return false;
	ok = legacy_message_at(file, input, tail, metadata->manifest_position, limit,
						   "schema", &lance__file__legacy_manifest__descriptor,
						   (ProtobufCMessage **) &manifest, err);
	lp_protobuf_free(&metadata->base);
	if (!ok)
		return false;
	snprintf(where, sizeof(where), "file \"%s\"", file->name);
	ok = lp_schema_from_proto(where, manifest->fields, manifest->n_fields, NULL, 0,
							  &file->schema, err);
	lp_protobuf_free(&manifest->base);
	return ok;
}

static bool
parse_footer(LpFile *file, const TailBuffer *tail, LpError *err)
{
	const uint8_t *footer;
	uint64_t	footer_start;
	uint64_t	cmo_len;
	uint64_t	gbo_len;

	if (file->file_size < LP_FOOTER_LEN)
	{
		lp_fail(err, LP_ERR_CORRUPT,
				"file \"%s\" is too short to be a Lance file (%llu bytes)",
				file->name, (unsigned long long) file->file_size);
		lp_error_detail(err, "A Lance %s file ends with a %d-byte footer.",
						lp_file_version_name(file->version), LP_FOOTER_LEN);
		return false;
	}
	footer_start = file->file_size - LP_FOOTER_LEN;
	footer = tail_at(tail, footer_start);
	file->column_meta_start = lp_le64(footer);
	file->column_meta_offsets_start = lp_le64(footer + 8);
	file->global_buffer_offsets_start = lp_le64(footer + 16);
	file->num_global_buffers = lp_le32(footer + 24);
	file->num_columns = lp_le32(footer + 28);

	if (file->num_global_buffers == 0)
		return lp_fail(err, LP_ERR_CORRUPT,
					   "footer of file \"%s\" declares no global buffers",
					   file->name);
	/* 16 * a u32 count always fits in a u64; checked anyway */
	if (!lp_mul_u64(file->num_global_buffers, LP_OFFSET_TABLE_ENTRY_LEN, &gbo_len) ||
		!lp_range_within(file->global_buffer_offsets_start, gbo_len, footer_start))
	{
		lp_fail(err, LP_ERR_CORRUPT,
				"global buffer offset table of file \"%s\" lies outside the file",
				file->name);
		lp_error_detail(err, "The footer places %u entries at offset %llu; the footer starts at %llu.",
						file->num_global_buffers,
						(unsigned long long) file->global_buffer_offsets_start,
						(unsigned long long) footer_start);
		return false;
	}
	if (!lp_mul_u64(file->num_columns, LP_OFFSET_TABLE_ENTRY_LEN, &cmo_len) ||
		!lp_range_within(file->column_meta_offsets_start, cmo_len,
						 file->global_buffer_offsets_start))
	{
		lp_fail(err, LP_ERR_CORRUPT,
				"column metadata offset table of file \"%s\" does not end before the global buffer offset table",
				file->name);
		lp_error_detail(err, "The footer places %u entries at offset %llu; the global buffer offset table starts at %llu.",
						file->num_columns,
						(unsigned long long) file->column_meta_offsets_start,
						(unsigned long long) file->global_buffer_offsets_start);
		return false;
	}
	if (file->column_meta_start > file->column_meta_offsets_start)
	{
		lp_fail(err, LP_ERR_CORRUPT,
				"column metadata of file \"%s\" starts after the column metadata offset table",
				file->name);
		lp_error_detail(err, "Column metadata starts at %llu; the offset table at %llu.",
						(unsigned long long) file->column_meta_start,
						(unsigned long long) file->column_meta_offsets_start);
		return false;
	}
	return true;
}

static bool
read_global_buffer_table(LpFile *file, const TailBuffer *tail, LpError *err)
{
	const uint8_t *entry = tail_at(tail, file->global_buffer_offsets_start);
	uint64_t	limit = file->file_size - LP_FOOTER_LEN;

	/* the count was checked against the bytes of the table in parse_footer */
	file->global_buffers = lp_alloc_array(file->num_global_buffers,
										  sizeof(LpBufferRef));
	if (file->global_buffers == NULL)
		return out_of_memory(file, err);
	for (uint32_t i = 0; i < file->num_global_buffers; i++, entry += LP_OFFSET_TABLE_ENTRY_LEN)
	{
		LpBufferRef *buffer = &file->global_buffers[i];

		buffer->offset = lp_le64(entry);
		buffer->size = lp_le64(entry + 8);
		if (!lp_range_within(buffer->offset, buffer->size, limit))
		{
			lp_fail(err, LP_ERR_CORRUPT,
					"global buffer %u of file \"%s\" lies outside the file",
					i, file->name);
			lp_error_detail(err, "It has %llu bytes at offset %llu; the footer starts at %llu.",
							(unsigned long long) buffer->size,
							(unsigned long long) buffer->offset,
							(unsigned long long) limit);
			return false;
		}
	}
	return true;
}

/*
 * Bring everything from the column metadata to the end of the file into the
 * tail buffer, and global buffer 0 into schema_bytes.
 */
static bool
read_metadata(LpFile *file, LpInput *input, TailBuffer *tail, LpError *err)
{
	const LpBufferRef *gb0 = &file->global_buffers[0];
	uint64_t	gb0_end = gb0->offset + gb0->size;	/* checked in the table */
	uint64_t	start = file->column_meta_start;

	if (gb0_end <= file->column_meta_start &&
		file->column_meta_start - gb0_end <= METADATA_READ_MAX_GAP)
		start = gb0->offset;
	if (!tail_extend(input, tail, start, err))
		return false;
	if (gb0->size > SIZE_MAX)
		return out_of_memory(file, err);
	if (gb0->offset >= tail->start)
	{
		if (!copy_bytes(&file->schema_bytes, tail_at(tail, gb0->offset),
						(size_t) gb0->size))
			return out_of_memory(file, err);
		return true;
	}
	file->schema_bytes.data = lp_alloc((size_t) gb0->size);
	if (file->schema_bytes.data == NULL)
		return out_of_memory(file, err);
	file->schema_bytes.len = (size_t) gb0->size;
	return lp_input_read(input, gb0->offset, file->schema_bytes.data,
						 (size_t) gb0->size, err);
}

static bool
parse_schema(LpFile *file, LpError *err)
{
	Lance__File__FileDescriptor *descriptor;
	LpUnpackResult result;
	char		where[LP_SCHEMA_WHERE_LEN];
	bool		ok;

	result = lp_protobuf_unpack(&lance__file__file_descriptor__descriptor,
								file->schema_bytes.data, file->schema_bytes.len,
								(ProtobufCMessage **) &descriptor);
	if (result != LP_UNPACK_OK)
	{
		lp_fail(err, result == LP_UNPACK_NO_MEMORY ? LP_ERR_NO_MEMORY : LP_ERR_CORRUPT,
				"file descriptor in global buffer 0 of file \"%s\" %s",
				file->name, lp_unpack_result_text(result));
		return false;
	}
	file->num_rows = descriptor->length;
	snprintf(where, sizeof(where), "file \"%s\"", file->name);
	if (descriptor->schema == NULL)
		ok = lp_fail(err, LP_ERR_CORRUPT,
					 "file descriptor in global buffer 0 of file \"%s\" has no schema",
					 file->name);
	else
		ok = lp_schema_from_proto(where, descriptor->schema->fields,
								  descriptor->schema->n_fields,
								  (const LpProtoMapEntry *const *) descriptor->schema->metadata,
								  descriptor->schema->n_metadata,
								  &file->schema, err);
	lp_protobuf_free(&descriptor->base);
	return ok;
}

/* ---- encodings ------------------------------------------------------------ */

/* The error for an encoding that did not unwrap. */
static bool
unwrap_failed(const LpFile *file, const char *where, LpEncodingRole role,
			  const LpUnwrapResult *result, LpError *err)
{
	const char *expected_url = lp_encoding_type_url(role);
	LpErrorCode unpack_code = result->unpack == LP_UNPACK_NO_MEMORY ?
		LP_ERR_NO_MEMORY : LP_ERR_CORRUPT;

	switch (result->status)
	{
		case LP_UNWRAP_INDIRECT:
			lp_fail(err, LP_ERR_UNSUPPORTED,
					"%s of file \"%s\" uses a deferred encoding", where, file->name);
			lp_error_detail(err, "Encodings stored elsewhere in the file are not supported.");
			return false;
		case LP_UNWRAP_NONE:
			return lp_fail(err, LP_ERR_UNSUPPORTED,
						   "%s of file \"%s\" declares no encoding", where, file->name);
		case LP_UNWRAP_NO_LOCATION:
			return lp_fail(err, LP_ERR_CORRUPT,
						   "%s of file \"%s\" has no encoding", where, file->name);
		case LP_UNWRAP_WRONG_TYPE:
			lp_fail(err, LP_ERR_CORRUPT,
					"encoding of %s of file \"%s\" has an unexpected type",
					where, file->name);
			if (result->found_url_quotable)
				lp_error_detail(err, "The type URL is \"%s\"; a %s file needs \"%s\".",
								result->found_url, lp_file_version_name(file->version),
								expected_url);
			else
				lp_error_detail(err, "The type URL is not readable text; a %s file needs \"%s\".",
								lp_file_version_name(file->version), expected_url);
			return false;
		case LP_UNWRAP_BAD_MESSAGE:
			lp_fail(err, unpack_code, "encoding of %s of file \"%s\" %s", where, file->name,
					lp_unpack_result_text(result->unpack));
			lp_error_detail(err, "It should be a %s message.", expected_url + 1);
			return false;
		default:
			return lp_fail(err, unpack_code, "encoding of %s of file \"%s\" %s", where,
						   file->name, lp_unpack_result_text(result->unpack));
	}
}

/*
 * Unwrap a serialized Encoding, checking its type URL, to learn the
 * variant's name.  where names the page or column for messages ("page 3 of
 * column 1").
 */
static bool
decode_encoding(const LpFile *file, const ProtobufCBinaryData *raw,
				LpEncodingRole role, const char *where, const char **name,
				LpError *err)
{
	ProtobufCMessage *inner;
	LpUnwrapResult result;

	if (!lp_encoding_unwrap(raw->data, raw->len, role, &inner, &result))
		return unwrap_failed(file, where, role, &result, err);
	*name = lp_encoding_name(role, inner);
	lp_protobuf_free(inner);
	if (*name == NULL)
	{
		lp_fail(err, LP_ERR_UNSUPPORTED,
				"encoding of %s of file \"%s\" is of a kind this reader does not know",
				where, file->name);
		lp_error_detail(err, "The %s message sets none of the variants known to this reader.",
						lp_encoding_type_url(role) + 1);
		return false;
	}
	return true;
}

/* ---- columns -------------------------------------------------------------- */

/*
 * A column Encoding that says there is none (2.0 writers of Lance 0.13 and
 * earlier): the column's pages alone describe it.
 */
static bool
declares_no_encoding(const ProtobufCBinaryData *raw)
{
	ProtobufCMessage *inner;
	LpUnwrapResult result;

	if (lp_encoding_unwrap(raw->data, raw->len, LP_ENCODING_COLUMN, &inner, &result))
	{
		lp_protobuf_free(inner);
		return false;
	}
	return result.status == LP_UNWRAP_NONE;
}

/* Build an offset/size list after checking it against the file. */
static bool
copy_buffer_list(const LpFile *file, size_t n_offsets, const uint64_t *offsets,
				 size_t n_sizes, const uint64_t *sizes, const char *where,
				 uint32_t *num_buffers, LpBufferRef **buffers, LpError *err)
{
	if (n_offsets != n_sizes)
	{
		lp_fail(err, LP_ERR_CORRUPT,
				"%s of file \"%s\" lists %zu buffer offsets but %zu buffer sizes",
				where, file->name, n_offsets, n_sizes);
		return false;
	}
	if (n_offsets == 0)
		return true;
	if (n_offsets > UINT32_MAX)
		return lp_fail(err, LP_ERR_CORRUPT, "%s of file \"%s\" has too many buffers",
					   where, file->name);
	*buffers = lp_alloc_array(n_offsets, sizeof(LpBufferRef));
	if (*buffers == NULL)
		return out_of_memory(file, err);
	*num_buffers = (uint32_t) n_offsets;
	for (size_t i = 0; i < n_offsets; i++)
	{
		if (!lp_range_within(offsets[i], sizes[i], file->file_size))
		{
			lp_fail(err, LP_ERR_CORRUPT,
					"buffer %zu of %s of file \"%s\" lies outside the file",
					i, where, file->name);
			lp_error_detail(err, "It has %llu bytes at offset %llu; the file has %llu bytes.",
							(unsigned long long) sizes[i],
							(unsigned long long) offsets[i],
							(unsigned long long) file->file_size);
			return false;
		}
		(*buffers)[i].offset = offsets[i];
		(*buffers)[i].size = sizes[i];
	}
	return true;
}

static bool
copy_page(const LpFile *file, uint32_t column_index, uint32_t page_index,
		  const Lance__File__V2__ColumnMetadata__Page *source, LpPage *page,
		  LpError *err)
{
	char		where[64];

	snprintf(where, sizeof(where), "page %u of column %u", page_index, column_index);
	page->num_rows = source->length;
	page->priority = source->priority;
	if (!copy_buffer_list(file, source->n_buffer_offsets, source->buffer_offsets,
						  source->n_buffer_sizes, source->buffer_sizes, where,
						  &page->num_buffers, &page->buffers, err))
		return false;
	if (!decode_encoding(file, &source->encoding,
						 file->version == LP_FILE_VERSION_2_0
						 ? LP_ENCODING_PAGE_V2_0 : LP_ENCODING_PAGE_V2_1,
						 where, &page->layout, err))
		return false;
	if (!copy_bytes(&page->encoding, source->encoding.data, source->encoding.len))
		return out_of_memory(file, err);
	return true;
}

static bool
parse_column(LpFile *file, uint32_t index, const uint8_t *metadata,
			 LpColumn *column, LpError *err)
{
	Lance__File__V2__ColumnMetadata *message;
	LpUnpackResult result;
	char		where[32];
	bool		ok;

	result = lp_protobuf_unpack(&lance__file__v2__column_metadata__descriptor,
								metadata, (size_t) column->metadata.size,
								(ProtobufCMessage **) &message);
	if (result != LP_UNPACK_OK)
	{
		lp_fail(err, result == LP_UNPACK_NO_MEMORY ? LP_ERR_NO_MEMORY : LP_ERR_CORRUPT,
				"metadata of column %u of file \"%s\" %s", index, file->name,
				lp_unpack_result_text(result));
		return false;
	}
	snprintf(where, sizeof(where), "column %u", index);
	ok = declares_no_encoding(&message->encoding) ||
		decode_encoding(file, &message->encoding, LP_ENCODING_COLUMN, where,
						&column->kind, err);
	if (ok && !copy_bytes(&column->encoding, message->encoding.data,
						  message->encoding.len))
		ok = out_of_memory(file, err);
	ok = ok && copy_buffer_list(file, message->n_buffer_offsets,
								message->buffer_offsets, message->n_buffer_sizes,
								message->buffer_sizes, where,
								&column->num_column_buffers,
								&column->column_buffers, err);
	if (ok && message->n_pages > UINT32_MAX)
		ok = lp_fail(err, LP_ERR_CORRUPT, "column %u of file \"%s\" has too many pages",
					 index, file->name);
	if (ok && message->n_pages > 0)
	{
		column->pages = lp_alloc_array(message->n_pages, sizeof(LpPage));
		if (column->pages == NULL)
			ok = out_of_memory(file, err);
		else
			column->num_pages = (uint32_t) message->n_pages;
	}
	for (uint32_t i = 0; ok && i < column->num_pages; i++)
		ok = copy_page(file, index, i, message->pages[i], &column->pages[i], err);
	lp_protobuf_free(&message->base);
	return ok;
}

static bool
parse_columns(LpFile *file, const TailBuffer *tail, LpError *err)
{
	const uint8_t *entry = tail_at(tail, file->column_meta_offsets_start);

	if (file->num_columns == 0)
		return true;
	/* the count was checked against the bytes of the CMO table */
	file->columns = lp_alloc_array(file->num_columns, sizeof(LpColumn));
	if (file->columns == NULL)
		return out_of_memory(file, err);
	for (uint32_t i = 0; i < file->num_columns; i++, entry += LP_OFFSET_TABLE_ENTRY_LEN)
	{
		LpColumn   *column = &file->columns[i];

		column->metadata.offset = lp_le64(entry);
		column->metadata.size = lp_le64(entry + 8);
		if (!lp_range_within(column->metadata.offset, column->metadata.size,
							 file->file_size))
		{
			lp_fail(err, LP_ERR_CORRUPT,
					"column metadata entry %u of file \"%s\" lies outside the file",
					i, file->name);
			lp_error_detail(err, "It has %llu bytes at offset %llu; the file has %llu bytes.",
							(unsigned long long) column->metadata.size,
							(unsigned long long) column->metadata.offset,
							(unsigned long long) file->file_size);
			return false;
		}
		if (column->metadata.offset < file->column_meta_start ||
			!lp_range_within(column->metadata.offset, column->metadata.size,
							 file->column_meta_offsets_start))
		{
			lp_fail(err, LP_ERR_CORRUPT,
					"column metadata entry %u of file \"%s\" lies outside the column metadata region",
					i, file->name);
			lp_error_detail(err, "It has %llu bytes at offset %llu; column metadata occupies bytes %llu to %llu.",
							(unsigned long long) column->metadata.size,
							(unsigned long long) column->metadata.offset,
							(unsigned long long) file->column_meta_start,
							(unsigned long long) file->column_meta_offsets_start);
			return false;
		}
		if (!parse_column(file, i, tail_at(tail, column->metadata.offset), column, err))
			return false;
	}
	return true;
}

/* ---- open and free -------------------------------------------------------- */

static bool
read_file_metadata(LpFile *file, LpInput *input, TailBuffer *tail, LpError *err)
{
	const uint8_t *version_tail;
	uint64_t	prefetch;

	if (file->file_size < VERSION_TAIL_LEN)
		return lp_fail(err, LP_ERR_CORRUPT,
					   "file \"%s\" is too short to be a Lance file (%llu bytes)",
					   file->name, (unsigned long long) file->file_size);
	prefetch = file->file_size < TAIL_PREFETCH_LEN ? file->file_size : TAIL_PREFETCH_LEN;
	if (!tail_extend(input, tail, file->file_size - prefetch, err))
		return false;

	version_tail = tail_at(tail, file->file_size - VERSION_TAIL_LEN);
	if (memcmp(version_tail + 4, LP_MAGIC, 4) != 0)
	{
		lp_fail(err, LP_ERR_CORRUPT, "file \"%s\" is not a Lance file", file->name);
		lp_error_detail(err, "It does not end with the magic bytes \"%s\".", LP_MAGIC);
		return false;
	}
	file->footer_major = lp_le16(version_tail);
	file->footer_minor = lp_le16(version_tail + 2);
	if (!version_from_footer(file->footer_major, file->footer_minor, &file->version))
		return lp_fail(err, LP_ERR_UNSUPPORTED,
					   "file \"%s\" has unsupported Lance format version %u.%u",
					   file->name, file->footer_major, file->footer_minor);
	if (file->version == LP_FILE_VERSION_LEGACY)
		return read_legacy_metadata(file, input, tail, err);

	return parse_footer(file, tail, err) &&
		tail_extend(input, tail, file->global_buffer_offsets_start, err) &&
		read_global_buffer_table(file, tail, err) &&
		read_metadata(file, input, tail, err) &&
		parse_schema(file, err) &&
		parse_columns(file, tail, err);
}

LpFile *
lp_file_open(LpInput *input, LpError *err)
{
	LpFile	   *file = lp_alloc0(sizeof(LpFile));
	TailBuffer	tail = {NULL, 0};
	bool		ok;

	if (file == NULL || (file->name = lp_strdup(input->name)) == NULL)
	{
		lp_free(file);
		lp_fail(err, LP_ERR_NO_MEMORY, "out of memory opening file \"%s\"",
				input->name);
		return NULL;
	}
	file->file_size = input->size;
	ok = read_file_metadata(file, input, &tail, err);
	lp_free(tail.data);
	if (!ok)
	{
		lp_file_free(file);
		return NULL;
	}
	return file;
}

static void
free_column(LpColumn *column)
{
	if (column->pages != NULL)
	{
		for (uint32_t i = 0; i < column->num_pages; i++)
		{
			lp_free(column->pages[i].buffers);
			lp_free(column->pages[i].encoding.data);
		}
		lp_free(column->pages);
	}
	lp_free(column->column_buffers);
	lp_free(column->encoding.data);
}

void
lp_file_free(LpFile *file)
{
	if (file == NULL)
		return;
	if (file->columns != NULL)
	{
		for (uint32_t i = 0; i < file->num_columns; i++)
			free_column(&file->columns[i]);
		lp_free(file->columns);
	}
	lp_schema_free(&file->schema);
	lp_free(file->schema_bytes.data);
	lp_free(file->global_buffers);
	lp_free(file->name);
	lp_free(file);
}
