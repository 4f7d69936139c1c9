/*
 * lp_file_tail.h - writing the metadata tail of a Lance v2 file.
 *
 * The tail is everything after the data region (lance-format.md §1.1):
 * the global buffers (each on a 64-byte boundary, padded with 0x48), the
 * ColumnMetadata messages back to back, the column metadata offset table,
 * the global buffer offset table and the 40-byte footer with the standard
 * footer numbers of the version.  Page and column encodings are embedded
 * byte for byte.
 */
#ifndef LP_FILE_TAIL_H
#define LP_FILE_TAIL_H

#include <stdbool.h>
#include <stdint.h>

#include "base/lp_error.h"
#include "format/lp_file.h"

#define LP_PAGE_BUFFER_ALIGNMENT 64
#define LP_PAD_BYTE 0x48

typedef struct LpFileTail
{
	uint64_t	start;			/* position of global buffer 0 */
	uint64_t	column_meta_start;
	uint64_t	column_meta_offsets_start;
	uint64_t	global_buffer_offsets_start;
	uint64_t	end;			/* size of the whole file */
	LpBytes		bytes;			/* the file's bytes [start, end) */
} LpFileTail;

/*
 * Build the tail of a file whose data region ends at or before start, which
 * must be a multiple of 64.  Buffer offsets in columns are absolute
 * positions in the file being written.  Free with lp_file_tail_free.
 */
bool		lp_file_tail_build(LpFileVersion version, uint64_t start,
							   const LpBytes *global_buffers,
							   uint32_t num_global_buffers,
							   const LpColumn *columns, uint32_t num_columns,
							   LpFileTail *tail, LpError *err);
void		lp_file_tail_free(LpFileTail *tail);

/*
 * A FileDescriptor (global buffer 0) equal to descriptor but with row count
 * length.  result->data is allocated with lp_alloc.
 */
bool		lp_file_descriptor_with_length(const LpBytes *descriptor,
										   uint64_t length, LpBytes *result,
										   LpError *err);

/*
 * The FileDescriptor (global buffer 0) of a file with the given schema and
 * row count, as Lance writes it (Field.type always PARENT).  result->data is
 * allocated with lp_alloc.
 */
bool		lp_file_descriptor_build(const LpSchema *schema, uint64_t length,
									 LpBytes *result, LpError *err);

#endif							/* LP_FILE_TAIL_H */
