/*
 * lp_write_values.h - PostgreSQL rows as Lance values: the type mapping
 * PostgreSQL -> Lance (the inverse of fdw/lp_fdw_types.c) and batches of
 * rows as LpArrays for the file writer.
 *
 * Every Lance field is filled from its "input type", the PostgreSQL type
 * lance_fdw maps that Lance type to (lp_fdw_mapped_type; uuid for 16-byte
 * fixed-size binary); a query column of another type is cast to it first
 * (varchar, enums, jsonb and char(n) to text, pgvector's vector to real[]).
 * Composite types are structs of their attributes, arrays lists of their
 * elements (the file writer decides which it can encode).  Values that do
 * not fit the Lance type exactly are errors, never changed.
 */
#ifndef LP_WRITE_VALUES_H
#define LP_WRITE_VALUES_H

#include "access/tupdesc.h"
#include "nodes/pg_list.h"

#include "format/lp_file.h"
#include "format/lp_schema.h"
#include "format/lp_values.h"
#include "write/lp_write_blobs.h"

typedef struct LpRowBatch LpRowBatch;

/*
 * The Lance schema of the columns of desc (field ids 0.. in pre-order, the
 * members of structs and items of lists after their parent): ERROR naming
 * the column for a type without a mapping (0A000, also numeric without
 * precision and scale, asking for a cast).  The columns named in
 * blob_columns (String nodes; 42703 for a name that is not a column) are
 * Blob v2 fields as lancedb declares them.
 */
extern void lp_write_schema_for_columns(TupleDesc desc, const List *blob_columns,
										LpSchema *schema);

/*
 * A batch builder of rows of desc for the top-level fields of schema (what
 * names it in messages): each field takes the column of its name, which
 * must exist once and be castable to the field's input type, and every
 * column must be a field.  Errors name the column before any row is read.
 * The batch's buffers live in the memory context current here; rows may
 * be added from a shorter-lived one.  A Blob v2 field (2.2+) takes a bytea
 * column, whose payloads blobs stores as they are added, or a jsonb column
 * of descriptors blobs checks; without blobs a blob field is an ERROR.
 */
extern LpRowBatch *lp_row_batch_create(TupleDesc desc, const LpSchema *schema,
									   const char *what, LpBlobWriter *blobs);

/* Append one row (values and nulls of desc's columns). */
extern void lp_row_batch_add(LpRowBatch *batch, const Datum *values, const bool *isnull);

extern uint64 lp_row_batch_rows(const LpRowBatch *batch);

/* Bytes the batch holds, to decide when to hand it to the writer. */
extern uint64 lp_row_batch_bytes(const LpRowBatch *batch);

/* The batch as one LpArray per top-level field, valid until the next reset. */
extern const LpArray *const *lp_row_batch_arrays(LpRowBatch *batch, uint32 *num_arrays);

/* Empty the batch, keeping its buffers. */
extern void lp_row_batch_reset(LpRowBatch *batch);

#endif							/* LP_WRITE_VALUES_H */
