/*
 * lp_file.h - reading the metadata of a Lance data file (v2.0 - v2.3, and
 * detection of legacy v1 files).
 *
 * lp_file_open reads the footer, the offset tables, the schema (global buffer
 * 0) and every column's metadata.  Every offset, size and count taken from the
 * file is checked against the file size before it is used, with overflow-safe
 * arithmetic; nothing is allocated from an unchecked count.
 *
 * Checks made on open (all LP_ERR_CORRUPT unless noted):
 *  - the file ends with "LANC"; footer numbers (0,0)-(0,2) are legacy v1,
 *    (0,3) and (2,0) are 2.0, (2,1)-(2,3) are 2.1-2.3, anything else is
 *    LP_ERR_UNSUPPORTED.  Of a legacy file only the 16-byte tail is read.
 *  - the footer's regions are ordered: column metadata start <= CMO table,
 *    CMO table end <= GBO table, GBO table end <= start of the footer; at
 *    least one global buffer; every global buffer inside the file; every
 *    column metadata entry inside [column metadata start, CMO table).
 *  - global buffer 0 is a FileDescriptor with a schema whose fields come in
 *    pre-order (a parent id is -1 or the id of an earlier field); names,
 *    logical types and metadata keys are valid UTF-8.
 *  - every ColumnMetadata parses; every page (and column) buffer list has as
 *    many sizes as offsets, each buffer inside the file; every encoding is
 *    stored directly (deferred or "none" encodings: LP_ERR_UNSUPPORTED) as an
 *    Any whose type URL matches the version (§2.2 of lance-format.md) and
 *    whose message parses.
 *
 * The metadata is read with few reads: the last 64 KiB, then, if that does
 * not reach back far enough, [global buffer 0, end of file) in one read when
 * global buffer 0 lies just before the column metadata, as Lance writes it;
 * otherwise [column metadata start, end of file) and global buffer 0 alone.
 */
#ifndef LP_FILE_H
#define LP_FILE_H

#include <stdbool.h>
#include <stdint.h>

#include "base/lp_bytes.h"
#include "base/lp_error.h"
#include "format/lp_schema.h"
#include "io/lp_storage.h"

#define LP_FOOTER_LEN 40
#define LP_LEGACY_TAIL_LEN 16
#define LP_MAGIC "LANC"
/* An entry of the column metadata and global buffer offset tables: u64 position, u64 size. */
#define LP_OFFSET_TABLE_ENTRY_LEN 16

typedef enum LpFileVersion
{
	LP_FILE_VERSION_LEGACY = 0,
	LP_FILE_VERSION_2_0,
	LP_FILE_VERSION_2_1,
	LP_FILE_VERSION_2_2,
	LP_FILE_VERSION_2_3
} LpFileVersion;

/* "legacy", "2.0", "2.1", "2.2", "2.3" */
const char *lp_file_version_name(LpFileVersion version);
/* Parse the names above; false if unknown. */
bool		lp_file_version_parse(const char *name, LpFileVersion *version);
/* Footer numbers a standard writer emits for the version ((0,3) for 2.0). */
void		lp_file_version_footer_numbers(LpFileVersion version,
										   uint16_t *major, uint16_t *minor);
/* Numbers a manifest DataFile records for the version ((2,0) for 2.0). */
void		lp_file_version_data_file_numbers(LpFileVersion version,
											  uint16_t *major, uint16_t *minor);

typedef struct LpBufferRef
{
	uint64_t	offset;			/* absolute position in the file */
	uint64_t	size;
} LpBufferRef;

typedef struct LpPage
{
	uint64_t	num_rows;		/* ColumnMetadata.Page.length */
	uint64_t	priority;
	uint32_t	num_buffers;
	LpBufferRef *buffers;
	LpBytes		encoding;		/* the serialized Encoding message, verbatim */

	/*
	 * Static name of the page encoding.  2.0: the ArrayEncoding variant
	 * ("flat", "nullable", "fixed_size_list", "list", "struct" for
	 * SimpleStruct, "binary", "dictionary", "fsst", "packed_struct",
	 * "bitpacked", "fixed_size_binary", "bitpacked_for_non_neg", "constant",
	 * "inline_bitpacking", "out_of_line_bitpacking", "variable",
	 * "packed_struct_fixed_width_mini_block", "block", "rle",
	 * "general_mini_block", "byte_stream_split").  2.1+: the PageLayout
	 * variant ("mini_block", "full_zip", "blob", "sparse", and
	 * "constant" for PageLayout field 2, which 2.1's AllNullLayout and
	 * 2.2+'s ConstantLayout share).
	 */
	const char *layout;
} LpPage;

typedef struct LpColumn
{
	LpBufferRef metadata;		/* where the ColumnMetadata message lies */
	LpBytes		encoding;		/* the serialized column Encoding, verbatim */
	const char *kind;			/* ColumnEncoding variant: "values", "zone_index", "blob";
								 * NULL when the column declares none */
	uint32_t	num_pages;
	LpPage	   *pages;
	uint32_t	num_column_buffers;
	LpBufferRef *column_buffers;
} LpColumn;

typedef struct LpFile
{
	char	   *name;			/* path or URI, for messages */
	uint64_t	file_size;
	LpFileVersion version;
	uint16_t	footer_major;
	uint16_t	footer_minor;

	/* Everything below is zero for legacy files. */
	uint64_t	column_meta_start;
	uint64_t	column_meta_offsets_start;
	uint64_t	global_buffer_offsets_start;
	uint32_t	num_global_buffers;
	uint32_t	num_columns;
	LpBufferRef *global_buffers;	/* the GBO table */
	LpBytes		schema_bytes;	/* global buffer 0: the FileDescriptor, verbatim */
	uint64_t	num_rows;		/* FileDescriptor.length */
	LpSchema	schema;
	LpColumn   *columns;		/* num_columns, in CMO table order */
} LpFile;

/*
 * Read and check the metadata of the file behind input.  NULL on error.  The
 * input is only read during the call; the result owns everything it points
 * to (allocated through lp_alloc) and is released with lp_file_free.
 */
LpFile	   *lp_file_open(LpInput *input, LpError *err);
void		lp_file_free(LpFile *file);

#endif							/* LP_FILE_H */
