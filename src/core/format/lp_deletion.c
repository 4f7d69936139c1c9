/*
 * lp_deletion.c - reading Lance deletion files (Arrow IPC and Roaring forms),
 * and writing them (Roaring form).
 *
 * The Arrow IPC file reader handles exactly what a deletion file is: the
 * file magic, the footer (a FlatBuffer) with a schema of one 32-bit integer
 * field, no dictionaries, and record batches whose one column has no nulls.
 * Buffers may be ZSTD-compressed per buffer, as Lance writes them: an i64
 * uncompressed length (-1: stored as is) before each buffer's bytes.  Every
 * FlatBuffer offset is checked against the bytes it points into before it is
 * followed.
 */
#include <stdio.h>
#include <string.h>

#include <zstd.h>

#include "base/lp_alloc.h"
#include "base/lp_bytes.h"
#include "base/lp_checked.h"
#include "base/lp_path.h"
#include "format/lp_deletion.h"
#include "format/lp_roaring.h"

#define ARROW_MAGIC "ARROW1"
#define ARROW_MAGIC_LEN 6
#define ARROW_TAIL_LEN (4 + ARROW_MAGIC_LEN)	/* footer length + magic */
#define ARROW_CONTINUATION 0xFFFFFFFFu

/* FlatBuffer union tags and sizes from the Arrow format's schemas. */
#define ARROW_TYPE_INT 2
#define ARROW_HEADER_RECORD_BATCH 3
#define ARROW_BLOCK_SIZE 24
#define ARROW_FIELD_NODE_SIZE 16
#define ARROW_BUFFER_SIZE 16
#define ARROW_CODEC_ZSTD 1
#define ARROW_UNCOMPRESSED_MARKER UINT64_MAX

/* A FlatBuffer: bytes that offsets are relative to. */
typedef struct FlatBuffer
{
	const uint8_t *data;
	size_t		len;
	const char *file;			/* for messages */
} FlatBuffer;

typedef struct FlatTable
{
	size_t		pos;
	size_t		vtable;
	uint16_t	vtable_len;
	uint16_t	table_len;
} FlatTable;

static bool
damaged(const FlatBuffer *fb, LpError *err, const char *what)
{
	return lp_fail(err, LP_ERR_CORRUPT, "deletion file \"%s\" is damaged: %s",
				   fb->file, what);
}

static bool
flat_table_at(const FlatBuffer *fb, size_t pos, FlatTable *table, LpError *err)
{
	int64_t		vtable;

	if (!lp_range_within(pos, 4, fb->len))
		return damaged(fb, err, "table beyond its buffer");
	vtable = (int64_t) pos - (int32_t) lp_le32(fb->data + pos);
	if (vtable < 0 || !lp_range_within((uint64_t) vtable, 4, fb->len))
		return damaged(fb, err, "vtable beyond its buffer");
	table->pos = pos;
	table->vtable = (size_t) vtable;
	table->vtable_len = lp_le16(fb->data + vtable);
	table->table_len = lp_le16(fb->data + vtable + 2);
	if (table->vtable_len < 4 || table->vtable_len % 2 != 0 ||
		!lp_range_within(table->vtable, table->vtable_len, fb->len) ||
		!lp_range_within(pos, table->table_len, fb->len))
		return damaged(fb, err, "malformed vtable");
	return true;
}

/* Position of field number field in the table, or 0 when it is absent. */
static bool
flat_field(const FlatBuffer *fb, const FlatTable *table, unsigned field,
		   size_t size, size_t *pos, LpError *err)
{
	size_t		slot = 4 + 2 * (size_t) field;
	uint16_t	offset;

	*pos = 0;
	if (slot + 2 > table->vtable_len)
		return true;
	offset = lp_le16(fb->data + table->vtable + slot);
	if (offset == 0)
		return true;
	if ((size_t) offset + size > table->table_len)
		return damaged(fb, err, "field beyond its table");
	*pos = table->pos + offset;
	return true;
}

static bool
flat_scalar(const FlatBuffer *fb, const FlatTable *table, unsigned field,
			size_t size, uint64_t default_value, uint64_t *value, LpError *err)
{
	size_t		pos;

	if (!flat_field(fb, table, field, size, &pos, err))
		return false;
	if (pos == 0)
		*value = default_value;
	else if (size == 1)
		*value = fb->data[pos];
	else if (size == 2)
		*value = lp_le16(fb->data + pos);
	else if (size == 4)
		*value = lp_le32(fb->data + pos);
	else
		*value = lp_le64(fb->data + pos);
	return true;
}

/* Follow an offset field (table, vector); *target is 0 when absent. */
static bool
flat_reference(const FlatBuffer *fb, const FlatTable *table, unsigned field,
			   size_t *target, LpError *err)
{
	size_t		pos;
	uint64_t	end;

	if (!flat_field(fb, table, field, 4, &pos, err))
		return false;
	*target = 0;
	if (pos == 0)
		return true;
	end = (uint64_t) pos + lp_le32(fb->data + pos);
	if (end >= fb->len)
		return damaged(fb, err, "offset beyond its buffer");
	*target = (size_t) end;
	return true;
}

static bool
flat_subtable(const FlatBuffer *fb, const FlatTable *table, unsigned field,
			  FlatTable *sub, bool *present, LpError *err)
{
	size_t		target;

	if (!flat_reference(fb, table, field, &target, err))
		return false;
	*present = target != 0;
	return target == 0 || flat_table_at(fb, target, sub, err);
}

/* A vector of elements of element_size bytes; count 0 when absent. */
static bool
flat_vector(const FlatBuffer *fb, const FlatTable *table, unsigned field,
			size_t element_size, size_t *start, uint32_t *count, LpError *err)
{
	size_t		target;
	uint64_t	bytes;

	*count = 0;
	*start = 0;
	if (!flat_reference(fb, table, field, &target, err))
		return false;
	if (target == 0)
		return true;
	if (!lp_range_within(target, 4, fb->len))
		return damaged(fb, err, "vector beyond its buffer");
	*count = lp_le32(fb->data + target);
	*start = target + 4;
	if (!lp_mul_u64(*count, element_size, &bytes) ||
		!lp_range_within(*start, bytes, fb->len))
		return damaged(fb, err, "vector beyond its buffer");
	return true;
}

static bool
flat_root(const FlatBuffer *fb, FlatTable *root, LpError *err)
{
	if (fb->len < 4)
		return damaged(fb, err, "empty FlatBuffer");
	return flat_table_at(fb, lp_le32(fb->data), root, err);
}

/* ---- the Arrow IPC file --------------------------------------------------- */

/* The schema must be one 32-bit integer field, little-endian, not dictionary-encoded. */
static bool
check_schema(const FlatBuffer *footer, const FlatTable *footer_table, bool *is_signed,
			 LpError *err)
{
	FlatTable	schema;
	FlatTable	field;
	FlatTable	int_type;
	bool		present;
	uint64_t	value;
	size_t		fields_start;
	uint32_t	num_fields;
	size_t		dictionary;
	size_t		children_start;
	uint32_t	num_children;

	if (!flat_subtable(footer, footer_table, 1, &schema, &present, err))
		return false;
	if (!present)
		return damaged(footer, err, "no schema");
	if (!flat_scalar(footer, &schema, 0, 2, 0, &value, err))
		return false;
	if (value != 0)
		return lp_fail(err, LP_ERR_UNSUPPORTED,
					   "deletion file \"%s\" is big-endian", footer->file);
	if (!flat_vector(footer, &schema, 1, 4, &fields_start, &num_fields, err))
		return false;
	if (num_fields != 1)
		return damaged(footer, err, "its schema does not have exactly one field");
	if (!flat_table_at(footer, fields_start + lp_le32(footer->data + fields_start), &field, err))
		return false;
	if (!flat_scalar(footer, &field, 2, 1, 0, &value, err))
		return false;
	if (value != ARROW_TYPE_INT)
		return damaged(footer, err, "its field is not an integer");
	if (!flat_subtable(footer, &field, 3, &int_type, &present, err))
		return false;
	if (!present)
		return damaged(footer, err, "its integer field has no type");
	if (!flat_scalar(footer, &int_type, 0, 4, 0, &value, err))
		return false;
	if (value != 32)
		return damaged(footer, err, "its field is not a 32-bit integer");
	if (!flat_scalar(footer, &int_type, 1, 1, 0, &value, err))
		return false;
	*is_signed = value != 0;
	if (!flat_reference(footer, &field, 4, &dictionary, err) ||
		!flat_vector(footer, &field, 5, 4, &children_start, &num_children, err))
		return false;
	if (dictionary != 0 || num_children != 0)
		return damaged(footer, err, "its field is dictionary-encoded or nested");
	return true;
}

/* Mark the offsets of one record batch (a Block of the footer). */
static bool
read_record_batch(const FlatBuffer *file, const uint8_t *block, uint64_t body_limit,
				  bool is_signed, LpDeletions *out, LpError *err)
{
	uint64_t	offset = lp_le64(block);
	uint64_t	meta_len = lp_le32(block + 8);
	uint64_t	body_len = lp_le64(block + 16);
	uint64_t	body_start;
	uint64_t	prefix;
	uint64_t	message_len;
	FlatBuffer	message;
	FlatTable	message_table;
	FlatTable	batch;
	bool		present;
	uint64_t	value;
	uint64_t	rows;
	size_t		nodes_start;
	uint32_t	num_nodes;
	size_t		buffers_start;
	uint32_t	num_buffers;
	size_t		compression;
	uint64_t	values_offset;
	uint64_t	values_len;
	uint64_t	needed;
	const uint8_t *values;
	uint8_t    *decompressed = NULL;

	if (!lp_add_u64(offset, meta_len, &body_start) ||
		!lp_range_within(offset, meta_len, body_limit) ||
		!lp_range_within(body_start, body_len, body_limit) || meta_len < 8)
		return damaged(file, err, "record batch beyond the file");
	prefix = lp_le32(file->data + offset) == ARROW_CONTINUATION ? 8 : 4;
	message_len = lp_le32(file->data + offset + prefix - 4);
	if (message_len > meta_len - prefix)
		return damaged(file, err, "record batch message longer than its block");
	message.data = file->data + offset + prefix;
	message.len = (size_t) message_len;
	message.file = file->file;

	if (!flat_root(&message, &message_table, err) ||
		!flat_scalar(&message, &message_table, 1, 1, 0, &value, err))
		return false;
	if (value != ARROW_HEADER_RECORD_BATCH)
		return damaged(file, err, "a record batch block holds another message");
	if (!flat_subtable(&message, &message_table, 2, &batch, &present, err))
		return false;
	if (!present)
		return damaged(file, err, "record batch message without a header");
	if (!flat_scalar(&message, &batch, 0, 8, 0, &rows, err) ||
		!flat_vector(&message, &batch, 1, ARROW_FIELD_NODE_SIZE, &nodes_start, &num_nodes, err) ||
		!flat_vector(&message, &batch, 2, ARROW_BUFFER_SIZE, &buffers_start, &num_buffers, err) ||
		!flat_reference(&message, &batch, 3, &compression, err))
		return false;
	if (num_nodes != 1 || num_buffers != 2)
		return damaged(file, err, "a record batch does not hold one integer column");
	if (lp_le64(message.data + nodes_start) != rows)
		return damaged(file, err, "column length differs from the record batch length");
	if (lp_le64(message.data + nodes_start + 8) != 0)
		return damaged(file, err, "it lists null row offsets");
	if (rows > out->num_rows)
		return damaged(file, err, "it lists more offsets than the fragment has rows");

	values_offset = lp_le64(message.data + buffers_start + ARROW_BUFFER_SIZE);
	values_len = lp_le64(message.data + buffers_start + ARROW_BUFFER_SIZE + 8);
	needed = rows * 4;
	if (!lp_range_within(values_offset, values_len, body_len))
		return damaged(file, err, "offsets buffer beyond the record batch");
	values = file->data + body_start + values_offset;
	if (compression != 0)
	{
		FlatTable	compression_table;
		uint64_t	codec;
		uint64_t	uncompressed_len;

		if (!flat_table_at(&message, compression, &compression_table, err) ||
			!flat_scalar(&message, &compression_table, 0, 1, 0, &codec, err))
			return false;
		if (values_len < 8)
			return damaged(file, err, "compressed buffer without its length");
		uncompressed_len = lp_le64(values);
		values += 8;
		values_len -= 8;
		if (uncompressed_len != ARROW_UNCOMPRESSED_MARKER)
		{
			size_t		result;

			if (codec != ARROW_CODEC_ZSTD)
				return lp_fail(err, LP_ERR_UNSUPPORTED,
							   "deletion file \"%s\" uses Arrow compression codec %llu; only ZSTD is supported",
							   file->file, (unsigned long long) codec);
			if (uncompressed_len < needed)
				return damaged(file, err, "offsets buffer shorter than the record batch");
			decompressed = lp_alloc(needed > 0 ? (size_t) needed : 1);
			if (decompressed == NULL)
				return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory reading deletion file \"%s\"",
							   file->file);
			/* Only the offsets are needed; a longer buffer is cut to them. */
			result = ZSTD_decompress(decompressed, (size_t) needed, values, (size_t) values_len);
			if (uncompressed_len != needed || ZSTD_isError(result) || result != needed)
			{
				lp_free(decompressed);
				return damaged(file, err, "offsets buffer does not decompress to its length");
			}
			values = decompressed;
			values_len = needed;
		}
	}
	if (values_len < needed)
		return damaged(file, err, "offsets buffer shorter than the record batch");

	for (uint64_t i = 0; i < rows; i++)
	{
		uint32_t	raw = lp_le32(values + 4 * i);

		if ((is_signed && (int32_t) raw < 0) || raw >= out->num_rows)
		{
			char		text[64];

			snprintf(text, sizeof(text), "row offset %lld is outside the fragment's %llu rows",
					 is_signed ? (long long) (int32_t) raw : (long long) raw,
					 (unsigned long long) out->num_rows);
			lp_free(decompressed);
			return damaged(file, err, text);
		}
		if (!((out->deleted[raw >> 3] >> (raw & 7)) & 1))
		{
			out->deleted[raw >> 3] |= (uint8_t) (1 << (raw & 7));
			out->num_deleted++;
		}
	}
	lp_free(decompressed);
	return true;
}

static bool
read_arrow_file(const FlatBuffer *file, LpDeletions *out, LpError *err)
{
	uint64_t	footer_len;
	uint64_t	footer_start;
	FlatBuffer	footer;
	FlatTable	footer_table;
	bool		is_signed = false;
	size_t		dictionaries_start;
	uint32_t	num_dictionaries;
	size_t		blocks_start;
	uint32_t	num_blocks;

	if (file->len < ARROW_MAGIC_LEN + 2 + ARROW_TAIL_LEN ||
		memcmp(file->data, ARROW_MAGIC, ARROW_MAGIC_LEN) != 0 ||
		memcmp(file->data + file->len - ARROW_MAGIC_LEN, ARROW_MAGIC, ARROW_MAGIC_LEN) != 0)
		return damaged(file, err, "it is not an Arrow IPC file");
	footer_len = lp_le32(file->data + file->len - ARROW_TAIL_LEN);
	if (footer_len > file->len - ARROW_TAIL_LEN - ARROW_MAGIC_LEN - 2)
		return damaged(file, err, "footer longer than the file");
	footer_start = file->len - ARROW_TAIL_LEN - footer_len;
	footer.data = file->data + footer_start;
	footer.len = (size_t) footer_len;
	footer.file = file->file;

	if (!flat_root(&footer, &footer_table, err) ||
		!check_schema(&footer, &footer_table, &is_signed, err) ||
		!flat_vector(&footer, &footer_table, 2, ARROW_BLOCK_SIZE,
					 &dictionaries_start, &num_dictionaries, err) ||
		!flat_vector(&footer, &footer_table, 3, ARROW_BLOCK_SIZE,
					 &blocks_start, &num_blocks, err))
		return false;
	if (num_dictionaries != 0)
		return damaged(file, err, "it has dictionaries");
	for (uint32_t b = 0; b < num_blocks; b++)
		if (!read_record_batch(file, footer.data + blocks_start + (size_t) b * ARROW_BLOCK_SIZE,
							   footer_start, is_signed, out, err))
			return false;
	return true;
}

/* ---- API ------------------------------------------------------------------- */

char *
lp_deletion_file_path(uint64_t fragment_id, uint64_t read_version, uint64_t id,
					  LpDeletionForm form)
{
	char		buffer[128];

	snprintf(buffer, sizeof(buffer), "_deletions/%llu-%llu-%llu.%s",
			 (unsigned long long) fragment_id, (unsigned long long) read_version,
			 (unsigned long long) id, form == LP_DELETION_BITMAP ? "bin" : "arrow");
	return lp_strdup(buffer);
}

bool
lp_deletions_read(LpInput *input, LpDeletionForm form, uint64_t num_rows,
				  LpDeletions *out, LpError *err)
{
	FlatBuffer	file;
	uint8_t    *data;
	bool		ok;

	memset(out, 0, sizeof(*out));
	lp_error_clear(err);
	if (input->size > LP_DELETION_FILE_MAX_SIZE)
		return lp_fail(err, LP_ERR_UNSUPPORTED,
					   "deletion file \"%s\" is larger than %llu bytes", input->name,
					   (unsigned long long) LP_DELETION_FILE_MAX_SIZE);
	if (num_rows > (uint64_t) UINT32_MAX + 1)
		return lp_fail(err, LP_ERR_CORRUPT,
					   "fragment of deletion file \"%s\" has %llu rows, more than row offsets can address",
					   input->name, (unsigned long long) num_rows);
	data = lp_alloc(input->size > 0 ? (size_t) input->size : 1);
	out->deleted = lp_alloc0((size_t) (num_rows + 7) / 8 + 1);
	if (data == NULL || out->deleted == NULL)
	{
		lp_free(data);
		lp_deletions_free(out);
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory reading deletion file \"%s\"",
					   input->name);
	}
	out->num_rows = num_rows;
	ok = lp_input_read(input, 0, data, (size_t) input->size, err);
	if (ok && form == LP_DELETION_BITMAP)
	{
		char		what[LP_ERROR_MESSAGE_LEN / 2];

		snprintf(what, sizeof(what), "deletion file \"%s\"", input->name);
		ok = lp_roaring32_expand(data, (size_t) input->size, what, out->deleted,
								 num_rows, &out->num_deleted, err);
	}
	else if (ok)
	{
		file.data = data;
		file.len = (size_t) input->size;
		file.file = input->name;
		ok = read_arrow_file(&file, out, err);
	}
	lp_free(data);
	if (!ok)
		lp_deletions_free(out);
	return ok;
}

void
lp_deletions_free(LpDeletions *deletions)
{
	lp_free(deletions->deleted);
	deletions->deleted = NULL;
	deletions->num_deleted = 0;
}

/* ---- writing ----------------------------------------------------------------- */

bool
lp_deletions_add(LpDeletions *deletions, uint64_t num_rows, const uint32_t *rows, size_t n,
				 LpError *err)
{
	lp_error_clear(err);
	if (deletions->deleted != NULL && deletions->num_rows != num_rows)
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
					   "deletions of %llu rows cannot take offsets of a fragment of %llu rows",
					   (unsigned long long) deletions->num_rows, (unsigned long long) num_rows);
	for (size_t i = 0; i < n; i++)
	{
		if (rows[i] >= num_rows)
			return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
						   "row offset %u is outside the fragment's %llu rows",
						   rows[i], (unsigned long long) num_rows);
		if (i > 0 && rows[i] <= rows[i - 1])
			return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
						   "deleted row offsets must be strictly ascending, but %u follows %u",
						   rows[i], rows[i - 1]);
	}
	if (deletions->deleted == NULL)
	{
		if (num_rows > (uint64_t) UINT32_MAX + 1)
			return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
						   "a fragment of %llu rows has more rows than row offsets can address",
						   (unsigned long long) num_rows);
		deletions->deleted = lp_alloc0((size_t) ((num_rows + 7) / 8 + 1));
		if (deletions->deleted == NULL)
			return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
		deletions->num_rows = num_rows;
		deletions->num_deleted = 0;
	}
	for (size_t i = 0; i < n; i++)
		if (!lp_deletions_contains(deletions, rows[i]))
		{
			deletions->deleted[rows[i] >> 3] |= (uint8_t) (1 << (rows[i] & 7));
			deletions->num_deleted++;
		}
	return true;
}

/* The deleted offsets in ascending order (num_deleted of them, lp_alloc). */
static uint32_t *
deleted_offsets(const LpDeletions *deletions, LpError *err)
{
	uint32_t   *offsets = lp_alloc_array((size_t) deletions->num_deleted, sizeof(uint32_t));
	uint64_t	n = 0;

	if (offsets == NULL)
	{
		lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
		return NULL;
	}
	for (uint64_t byte = 0; byte < (deletions->num_rows + 7) / 8; byte++)
	{
		if (deletions->deleted[byte] == 0)
			continue;
		for (uint64_t row = byte * 8; row < byte * 8 + 8 && row < deletions->num_rows; row++)
		{
			if (!lp_deletions_contains(deletions, row))
				continue;
			if (n < deletions->num_deleted)
				offsets[n] = (uint32_t) row;
			n++;
		}
	}
	if (n != deletions->num_deleted)
	{
		lp_free(offsets);
		lp_fail(err, LP_ERR_INTERNAL, "deletions count %llu rows but mark others",
				(unsigned long long) deletions->num_deleted);
		return NULL;
	}
	return offsets;
}

bool
lp_deletion_file_write(LpStore *store, const char *root, uint64_t fragment_id,
					   uint64_t read_version, const LpDeletions *deletions,
					   LpRandomFunction random, void *random_arg,
					   uint64_t *id, LpError *err)
{
	uint8_t		id_bytes[8];
	uint32_t   *offsets;
	uint8_t    *data;
	size_t		len;
	char	   *relative;
	char	   *path;
	bool		ok;

	*id = 0;
	lp_error_clear(err);
	if (deletions->deleted == NULL || deletions->num_deleted == 0)
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
					   "fragment %llu has no deleted rows to write",
					   (unsigned long long) fragment_id);
	if (deletions->num_deleted >= deletions->num_rows)
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
					   "every row of fragment %llu is deleted: the fragment goes instead",
					   (unsigned long long) fragment_id);
	if (!random(random_arg, id_bytes, sizeof(id_bytes), err))
		return false;
	offsets = deleted_offsets(deletions, err);
	if (offsets == NULL)
		return false;
	ok = lp_roaring32_serialize(offsets, (size_t) deletions->num_deleted, &data, &len, err);
	lp_free(offsets);
	if (!ok)
		return false;

	relative = lp_deletion_file_path(fragment_id, read_version, lp_le64(id_bytes),
									 LP_DELETION_BITMAP);
	path = relative != NULL ? lp_path_join(root, relative) : NULL;
	if (path == NULL)
		ok = lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
	else
		ok = store->ops->put_if_absent(store, path, data, len, err);
	if (ok)
		*id = lp_le64(id_bytes);
	lp_free(relative);
	lp_free(path);
	lp_free(data);
	return ok;
}
