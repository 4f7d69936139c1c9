/*
 * lp_file_writer.h - writing a complete Lance data file from batches of
 * LpArrays, in bounded memory.
 *
 * The writer is opened on an output with the file's schema and version;
 * each batch is one LpArray (lp_values.h) per top-level field, all of the
 * same length.  Every leaf column buffers its values until they reach about
 * LP_PAGE_FLUSH_BYTES (the 8 MiB Lance accumulates per column before it
 * writes a page), then encodes and writes that page, so memory stays bounded
 * whatever the number of rows.  Finishing flushes the last pages and writes
 * the column metadata, the schema and the footer (format/lp_file_tail.h).
 * The output stays the caller's: publish or abort it after finishing.
 *
 * Versions 2.0, 2.1, 2.2 and 2.3.  Blob v2 fields in 2.2 and 2.3 (see
 * lp_file_writer_write_blob).  Leaves: integers, floats, bool, string
 * and binary (also large), date, time, timestamp, duration, decimal,
 * fixed-size binary and fixed-size lists of fixed-width items, with nulls
 * (of items too, except in 2.0); structs (not packed) of leaves, lists and
 * structs, nulls at every level (2.1+: one repdef layer per struct in the
 * leaves' definition levels; 2.0: a header column per struct, which has no
 * place for a null struct, refused there); lists and large lists of the
 * same, null and empty lists (2.1+: repetition levels, pages of whole
 * rows; 2.0: a column of offsets per list before its items' columns, whose
 * pages end where the list's do).  Null structs and null items of
 * fixed-size lists in 2.0 are refused with LP_ERR_UNSUPPORTED when the
 * batch is written.  Page layouts and compression: lp_encode_page.c (2.1+)
 * and lp_encode_v20.c.
 */
#ifndef LP_FILE_WRITER_H
#define LP_FILE_WRITER_H

#include <stdbool.h>
#include <stdint.h>

#include "base/lp_error.h"
#include "format/lp_file.h"
#include "format/lp_schema.h"
#include "format/lp_values.h"
#include "io/lp_storage.h"

#define LP_PAGE_FLUSH_BYTES (8 * 1024 * 1024)
/* What the pages of all columns of a file may hold together before the largest is written. */
#define LP_WRITER_BUFFER_BYTES (16 * 1024 * 1024)

typedef struct LpFileWriter LpFileWriter;

/*
 * Start a file of schema (copied; fields in pre-order, ids as the dataset
 * has them) and version on output, writing from offset 0.  NULL on error.
 */
LpFileWriter *lp_file_writer_open(LpOutput *output, const LpSchema *schema,
								  LpFileVersion version, LpError *err);

/*
 * Write a column's page once it holds about flush_bytes (instead of
 * LP_PAGE_FLUSH_BYTES) and keep the pages of all columns under
 * buffer_bytes (instead of LP_WRITER_BUFFER_BYTES), as Lance's
 * max_page_bytes and data_cache_bytes do: small pages make the tests and
 * the fuzzer reach files of many pages with few rows.  Before the first batch.
 */
void		lp_file_writer_set_page_bytes(LpFileWriter *writer, uint64_t flush_bytes,
										  uint64_t buffer_bytes);

/*
 * Append a batch: arrays[i] holds the rows of the i-th top-level field of
 * the schema (a struct's with one child per member, in schema order, a
 * list's with its items as its child),
 * num_arrays is the number of top-level fields and every array has the
 * same length, with the field's type (LP_ERR_INVALID_ARGUMENT otherwise).  Pages that fill up are written.  After a failure the writer
 * can only be freed.
 */
bool		lp_file_writer_write(LpFileWriter *writer, const LpArray *const *arrays,
								 uint32_t num_arrays, LpError *err);

/*
 * Blob v2 (2.2 and later): a top-level field of the schema with the
 * extension lance.blob.v2 (a struct of data and uri, as a dataset's
 * manifest has it) is stored as lancedb 0.39 stores it: one full-zip
 * VariablePackedStruct column of descriptors, and in the footer schema a
 * childless struct with lance-encoding:blob and lance-encoding:packed
 * followed by the five descriptor pseudo-fields of id -1.  Its batch
 * array is a struct of five children: kind (uint8), position (uint64),
 * size (uint64), blob_id (uint32) and blob_uri (string); a valid row has
 * every child valid and a kind up to LP_BLOB_KIND_EXTERNAL, a null row is a
 * null descriptor.
 */
#define LP_BLOB_KIND_INLINE 0
#define LP_BLOB_KIND_PACKED 1
#define LP_BLOB_KIND_DEDICATED 2
#define LP_BLOB_KIND_EXTERNAL 3

/*
 * An Inline payload of a Blob v2 field: len bytes written into the file
 * at the next 64-byte boundary (the padding as Lance pads), whose offset
 * *position receives, for the descriptor {Inline, position, len} of a
 * later batch.  An empty payload (len 0) writes only the padding, as
 * lancedb does.  After a failure the writer can only be freed.
 */
bool		lp_file_writer_write_blob(LpFileWriter *writer, const void *data, uint64_t len,
									  uint64_t *position, LpError *err);

/* Rows written so far. */
uint64_t	lp_file_writer_rows(const LpFileWriter *writer);

/*
 * Write the remaining pages and the metadata tail; *file_size receives the
 * size of the whole file.  The writer can then only be freed.
 */
bool		lp_file_writer_finish(LpFileWriter *writer, uint64_t *file_size, LpError *err);

/*
 * lp_file_writer_finish with buffers[0..num_buffers) as the file's global
 * buffers 1 to num_buffers (after the schema's, 0), as index files keep
 * their models in them (copied into the tail).
 */
bool		lp_file_writer_finish_with_buffers(LpFileWriter *writer, const LpBytes *buffers,
											   uint32_t num_buffers, uint64_t *file_size,
											   LpError *err);

void		lp_file_writer_free(LpFileWriter *writer);

#endif							/* LP_FILE_WRITER_H */
