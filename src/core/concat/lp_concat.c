/*
 * lp_concat.c - compatibility of complete Lance files for concatenation.
 *
 * The order of the checks follows lance-format.md §3.7: legacy files, blob
 * columns (in the target schema unless they are Blob v2 columns and the
 * parts carry leases, or a blob column encoding in any part),
 * then per part in order: expected row count
 * (error), exact version, schema, column count, complete rectangular
 * metadata (error), global buffers, and per column: column buffers, the 2.0
 * struct header shape, column encoding.  The column count is compared with
 * part 0 before the metadata is validated against the schema, so a part
 * with another column count is a verdict, and a part whose column count
 * does not fit its own schema is an error.
 */
#include "concat/lp_concat.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "base/lp_alloc.h"
#include "base/lp_checked.h"
#include "format/lp_columns.h"

static void
set_verdict(LpConcatVerdict *verdict, LpConcatReason reason, uint32_t input,
			uint32_t column)
{
	verdict->reason = reason;
	verdict->input = input;
	verdict->column = column;
}

/*
 * The part's metadata describes a complete rectangular file of its schema:
 * the implied column count and page rows adding up to the file's rows
 * (§3.3, §3.4).  lp_file_open has already checked that every buffer lies
 * inside the file.
 */
static bool
validate_metadata(uint32_t index, const LpFile *file,
				  const LpPhysicalColumn *expected, uint32_t num_expected,
				  LpError *err)
{
	if (file->num_columns == 0)
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
					   "part %u (\"%s\") has no columns", index + 1, file->name);
	if (file->num_columns != num_expected)
		return lp_fail(err, LP_ERR_CORRUPT,
					   "part %u (\"%s\") has %u columns, but its schema implies %u for file version %s",
					   index + 1, file->name, file->num_columns, num_expected,
					   lp_file_version_name(file->version));

	for (uint32_t c = 0; c < file->num_columns; c++)
	{
		const LpColumn *column = &file->columns[c];
		uint64_t	rows = 0;

		for (uint32_t p = 0; p < column->num_pages; p++)
		{
			if (!lp_add_u64(rows, column->pages[p].num_rows, &rows))
				return lp_fail(err, LP_ERR_CORRUPT,
							   "part %u (\"%s\"): the page rows of column %u overflow",
							   index + 1, file->name, c);
		}
		if (expected[c].struct_header &&
			column->num_pages != 1 && !(column->num_pages == 0 && file->num_rows == 0))
			return lp_fail(err, LP_ERR_CORRUPT,
						   "part %u (\"%s\"): struct header column %u has %u pages, expected 1",
						   index + 1, file->name, c, column->num_pages);
		if (!expected[c].counts_items && rows != file->num_rows)
			return lp_fail(err, LP_ERR_CORRUPT,
						   "part %u (\"%s\"): the pages of column %u hold %" PRIu64 " rows, but the file has %" PRIu64 " rows",
						   index + 1, file->name, c, rows, file->num_rows);
	}
	return true;
}

/* Per-column checks of one part against part 0 (the baseline). */
static void
check_columns(uint32_t index, const LpFile *file, const LpFile *baseline,
			  const LpPhysicalColumn *expected, LpConcatVerdict *verdict)
{
	for (uint32_t c = 0; c < file->num_columns; c++)
	{
		const LpColumn *column = &file->columns[c];

		if (column->num_column_buffers > 0)
		{
			set_verdict(verdict, LP_CONCAT_COLUMN_BUFFERS, index, c);
			verdict->count = column->num_column_buffers;
			return;
		}

		/*
		 * Only the first part's 2.0 struct header page is kept, so the header
		 * pages must carry nothing but their row count.
		 */
		if (expected[c].struct_header && column->num_pages == 1 &&
			column->pages[0].num_buffers > 0)
		{
			set_verdict(verdict, LP_CONCAT_COLUMN_LAYOUT_MISMATCH, index, c);
			return;
		}
		if (!lp_bytes_equal(&column->encoding, &baseline->columns[c].encoding))
		{
			set_verdict(verdict, LP_CONCAT_COLUMN_ENCODING_MISMATCH, index, c);
			return;
		}
	}
}

/* The descriptor's pseudo-fields of a footer's Blob v2 field, in order (§6.5). */
static const char *const blob_pseudo_fields[][2] = {
	{"kind", "uint8"}, {"position", "uint64"}, {"size", "uint64"},
	{"blob_id", "uint32"}, {"blob_uri", "string"}
};

#define NUM_BLOB_PSEUDO_FIELDS (sizeof(blob_pseudo_fields) / sizeof(blob_pseudo_fields[0]))

static bool
same_text(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "") == 0;
}

/*
 * Whether file field *f and its pseudo-fields are the footer form of the
 * manifest's Blob v2 field: same id, parent, name and nullability, a
 * childless struct marked as a blob, then the five pseudo-fields of id -1.
 */
static bool
blob_footer_matches(const LpSchema *file, uint32_t f, const LpField *manifest)
{
	const LpField *field = &file->fields[f];

	if (field->id != manifest->id || field->parent_id != manifest->parent_id ||
		!same_text(field->name, manifest->name) || field->nullable != manifest->nullable ||
		!lp_field_is_blob_v2(field) || !same_text(field->logical_type, "struct") ||
		(uint64_t) f + 1 + NUM_BLOB_PSEUDO_FIELDS > file->num_fields)
		return false;
	for (uint32_t p = 0; p < NUM_BLOB_PSEUDO_FIELDS; p++)
	{
		const LpField *pseudo = &file->fields[f + 1 + p];

		if (pseudo->id != -1 || pseudo->parent_id != -1 ||
			!same_text(pseudo->name, blob_pseudo_fields[p][0]) ||
			!same_text(pseudo->logical_type, blob_pseudo_fields[p][1]))
			return false;
	}
	return true;
}

/* One past the last descendant of field root (fields are in pre-order). */
static uint32_t
subtree_end(const LpSchema *schema, uint32_t root)
{
	uint32_t	end = root + 1;

	while (end < schema->num_fields)
	{
		int32_t		parent = schema->fields[end].parent_id;
		bool		inside = false;

		for (uint32_t a = root; a < end && !inside; a++)
			inside = parent != -1 && schema->fields[a].id == parent;
		if (!inside)
			break;
		end++;
	}
	return end;
}

/*
 * The part's (footer) schema against the target's: equal field by field,
 * except that a Blob v2 field of a manifest's form (the extension, with its
 * logical children) matches its footer form.
 */
static bool
schema_matches(const LpSchema *file, const LpSchema *target)
{
	LpSchema	metadata_a = {0, NULL, file->num_metadata, file->metadata};
	LpSchema	metadata_b = {0, NULL, target->num_metadata, target->metadata};
	uint32_t	f = 0;
	uint32_t	t = 0;

	if (!lp_schema_equal(&metadata_a, &metadata_b))
		return false;
	while (t < target->num_fields)
	{
		const LpField *field = &target->fields[t];

		if (f >= file->num_fields)
			return false;
		/* a manifest names the extension; a footer's field is the marked struct */
		if (same_text(field->extension_name, LP_BLOB_V2_EXTENSION))
		{
			if (!blob_footer_matches(file, f, field))
				return false;
			f += 1 + NUM_BLOB_PSEUDO_FIELDS;
			t = subtree_end(target, t);
			continue;
		}
		{
			LpSchema	one_a = {1, &file->fields[f], 0, NULL};
			LpSchema	one_b = {1, &target->fields[t], 0, NULL};

			if (!lp_schema_equal(&one_a, &one_b))
				return false;
		}
		f++;
		t++;
	}
	return f == file->num_fields;
}

static bool
check_part(const LpConcatTarget *target, const LpConcatPart *parts,
		   uint32_t index, const LpPhysicalColumn *expected,
		   uint32_t num_expected, LpConcatVerdict *verdict, LpError *err)
{
	const LpFile *file = parts[index].file;
	const LpFile *baseline = parts[0].file;

	if (parts[index].has_expected_rows && file->num_rows != parts[index].expected_rows)
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
					   "part %u (\"%s\") has %" PRIu64 " rows, but %" PRIu64 " were expected",
					   index + 1, file->name, file->num_rows, parts[index].expected_rows);
	if (file->version != target->version)
	{
		set_verdict(verdict, LP_CONCAT_VERSION_MISMATCH, index, LP_CONCAT_NONE);
		verdict->actual = file->version;
		verdict->expected = target->version;
		return true;
	}
	if (!(target->blob_ids_leased ? schema_matches(&file->schema, target->schema)
		  : lp_schema_equal(&file->schema, target->schema)))
	{
		set_verdict(verdict, LP_CONCAT_SCHEMA_MISMATCH, index, LP_CONCAT_NONE);
		return true;
	}
	if (file->num_columns != baseline->num_columns)
	{
		set_verdict(verdict, LP_CONCAT_COLUMN_LAYOUT_MISMATCH, index, LP_CONCAT_NONE);
		verdict->count = file->num_columns;
		verdict->expected_count = baseline->num_columns;
		return true;
	}
	if (!validate_metadata(index, file, expected, num_expected, err))
		return false;
	if (file->num_global_buffers > 1)
	{
		set_verdict(verdict, LP_CONCAT_EXTRA_GLOBAL_BUFFERS, index, LP_CONCAT_NONE);
		verdict->count = file->num_global_buffers;
		return true;
	}
	check_columns(index, file, baseline, expected, verdict);
	return true;
}

bool
lp_concat_check(const LpConcatTarget *target, const LpConcatPart *parts,
				uint32_t num_parts, LpConcatVerdict *verdict, LpError *err)
{
	LpPhysicalColumn *expected;
	uint32_t	num_expected;

	memset(verdict, 0, sizeof(*verdict));
	set_verdict(verdict, LP_CONCAT_COMPATIBLE, LP_CONCAT_NONE, LP_CONCAT_NONE);
	if (num_parts == 0)
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
					   "concatenation needs at least one input file");

	for (uint32_t i = 0; i < num_parts; i++)
	{
		if (parts[i].file->version == LP_FILE_VERSION_LEGACY)
		{
			set_verdict(verdict, LP_CONCAT_LEGACY_VERSION, i, LP_CONCAT_NONE);
			return true;
		}
	}
	if (target->version == LP_FILE_VERSION_LEGACY)
	{
		set_verdict(verdict, LP_CONCAT_LEGACY_VERSION, LP_CONCAT_NONE, LP_CONCAT_NONE);
		return true;
	}
	for (uint32_t f = 0; f < target->schema->num_fields; f++)
	{
		const LpField *field = &target->schema->fields[f];

		if (lp_field_is_blob(field) && !(target->blob_ids_leased && lp_field_is_blob_v2(field)))
		{
			set_verdict(verdict, LP_CONCAT_BLOB_COLUMNS, LP_CONCAT_NONE, LP_CONCAT_NONE);
			verdict->field_name = field->name;
			verdict->blob_v2 = lp_field_is_blob_v2(field);
			return true;
		}
	}

	/*
	 * Strings of Lance 0.13 and earlier stored as lists of u8 take two
	 * columns a field, which the data-file column indices of a manifest
	 * (derived from the schema) cannot describe.
	 */
	for (uint32_t i = 0; i < num_parts; i++)
	{
		const LpFile *file = parts[i].file;
		LpPhysicalColumn *columns;
		uint32_t	num_columns;

		if (!lp_file_physical_columns(file, &columns, &num_columns, err))
			return false;
		for (uint32_t c = 0; c < num_columns; c++)
		{
			if (columns[c].bytes_as_list)
			{
				set_verdict(verdict, LP_CONCAT_BYTES_AS_LISTS, i, c);
				verdict->field_name = file->schema.fields[columns[c].field_index].name;
				break;
			}
		}
		lp_free(columns);
		if (verdict->reason != LP_CONCAT_COMPATIBLE)
			return true;
	}

	/* 2.0 blob v1 columns also say so in their column encoding */
	for (uint32_t i = 0; i < num_parts; i++)
	{
		const LpFile *file = parts[i].file;

		for (uint32_t c = 0; c < file->num_columns; c++)
		{
			if (file->columns[c].kind != NULL &&
				strcmp(file->columns[c].kind, "blob") == 0)
			{
				set_verdict(verdict, LP_CONCAT_BLOB_COLUMNS, i, c);
				return true;
			}
		}
	}

	if (!lp_schema_physical_columns(target->version, target->schema,
									&expected, &num_expected, err))
		return false;
	for (uint32_t i = 0; i < num_parts; i++)
	{
		if (!check_part(target, parts, i, expected, num_expected, verdict, err))
		{
			lp_free(expected);
			return false;
		}
		if (verdict->reason != LP_CONCAT_COMPATIBLE)
			break;
	}
	lp_free(expected);
	return true;
}

bool
lp_concat_reason_reencodable(const LpConcatVerdict *verdict)
{
	if (verdict->input == LP_CONCAT_NONE)
		return false;
	switch (verdict->reason)
	{
		case LP_CONCAT_VERSION_MISMATCH:
		case LP_CONCAT_SCHEMA_MISMATCH:
		case LP_CONCAT_COLUMN_LAYOUT_MISMATCH:
		case LP_CONCAT_COLUMN_ENCODING_MISMATCH:
		case LP_CONCAT_COLUMN_BUFFERS:
		case LP_CONCAT_EXTRA_GLOBAL_BUFFERS:
		case LP_CONCAT_BYTES_AS_LISTS:
			return true;
		case LP_CONCAT_COMPATIBLE:
		case LP_CONCAT_LEGACY_VERSION:
		case LP_CONCAT_BLOB_COLUMNS:
			return false;
	}
	return false;
}

const char *
lp_concat_reason_name(LpConcatReason reason)
{
	switch (reason)
	{
		case LP_CONCAT_COMPATIBLE:
			return "compatible";
		case LP_CONCAT_LEGACY_VERSION:
			return "legacy_version";
		case LP_CONCAT_VERSION_MISMATCH:
			return "version_mismatch";
		case LP_CONCAT_SCHEMA_MISMATCH:
			return "schema_mismatch";
		case LP_CONCAT_COLUMN_LAYOUT_MISMATCH:
			return "column_layout_mismatch";
		case LP_CONCAT_COLUMN_ENCODING_MISMATCH:
			return "column_encoding_mismatch";
		case LP_CONCAT_COLUMN_BUFFERS:
			return "column_buffers";
		case LP_CONCAT_EXTRA_GLOBAL_BUFFERS:
			return "extra_global_buffers";
		case LP_CONCAT_BLOB_COLUMNS:
			return "blob_columns";
		case LP_CONCAT_BYTES_AS_LISTS:
			return "bytes_as_lists";
	}
	return "unknown";
}

void
lp_concat_verdict_message(const LpConcatVerdict *verdict,
						  const LpConcatPart *parts, char *buffer,
						  size_t buffer_len)
{
	uint32_t	i = verdict->input;
	const char *name = i != LP_CONCAT_NONE ? parts[i].file->name : "";

	switch (verdict->reason)
	{
		case LP_CONCAT_COMPATIBLE:
			snprintf(buffer, buffer_len, "the inputs can be concatenated");
			return;
		case LP_CONCAT_LEGACY_VERSION:
			if (i == LP_CONCAT_NONE)
				snprintf(buffer, buffer_len,
						 "the target file version is legacy Lance v1, which cannot be concatenated");
			else
				snprintf(buffer, buffer_len,
						 "part %u (\"%s\") is a legacy Lance v1 file, which cannot be concatenated",
						 i + 1, name);
			return;
		case LP_CONCAT_VERSION_MISMATCH:
			snprintf(buffer, buffer_len,
					 "part %u (\"%s\") has file version %s, expected %s", i + 1, name,
					 lp_file_version_name(verdict->actual),
					 lp_file_version_name(verdict->expected));
			return;
		case LP_CONCAT_SCHEMA_MISMATCH:
			snprintf(buffer, buffer_len,
					 "part %u (\"%s\") has a different schema than the target",
					 i + 1, name);
			return;
		case LP_CONCAT_COLUMN_LAYOUT_MISMATCH:
			if (verdict->column == LP_CONCAT_NONE)
				snprintf(buffer, buffer_len,
						 "part %u (\"%s\") has %" PRIu64 " physical columns, expected %" PRIu64,
						 i + 1, name, verdict->count, verdict->expected_count);
			else
				snprintf(buffer, buffer_len,
						 "part %u (\"%s\") has a different layout of physical column %u",
						 i + 1, name, verdict->column);
			return;
		case LP_CONCAT_COLUMN_ENCODING_MISMATCH:
			snprintf(buffer, buffer_len,
					 "part %u (\"%s\") has a different encoding of physical column %u",
					 i + 1, name, verdict->column);
			return;
		case LP_CONCAT_COLUMN_BUFFERS:
			snprintf(buffer, buffer_len,
					 "part %u (\"%s\") has %" PRIu64 " column buffers in physical column %u, which cannot be relocated",
					 i + 1, name, verdict->count, verdict->column);
			return;
		case LP_CONCAT_EXTRA_GLOBAL_BUFFERS:
			snprintf(buffer, buffer_len,
					 "part %u (\"%s\") has %" PRIu64 " global buffers, but only the schema buffer can be copied",
					 i + 1, name, verdict->count);
			return;
		case LP_CONCAT_BLOB_COLUMNS:
			if (verdict->field_name != NULL && verdict->blob_v2)
				snprintf(buffer, buffer_len,
						 "the schema has Blob v2 column \"%s\", which only parts registered with blob id leases can fill",
						 verdict->field_name);
			else if (verdict->field_name != NULL)
				snprintf(buffer, buffer_len,
						 "the schema has blob column \"%s\", whose data cannot be relocated",
						 verdict->field_name);
			else
				snprintf(buffer, buffer_len,
						 "part %u (\"%s\") stores physical column %u as a blob, whose data cannot be relocated",
						 i + 1, name, verdict->column);
			return;
		case LP_CONCAT_BYTES_AS_LISTS:
			snprintf(buffer, buffer_len,
					 "part %u (\"%s\") stores field \"%s\" as a list of bytes in physical columns %u and %u (Lance 0.13 and earlier), which a data file's column indices cannot describe",
					 i + 1, name, verdict->field_name, verdict->column, verdict->column + 1);
			return;
	}
	snprintf(buffer, buffer_len, "unknown concatenation verdict %d", (int) verdict->reason);
}
