/*
 * lp_decode.h - decoding the values of a Lance data file (2.0 - 2.3) into
 * LpArrays (lp_values.h).
 *
 * A top-level field is decoded with all its children, for every row of the
 * file (lp_decode_field) or for chosen rows (an LpFieldReader).  A take
 * reads no page that holds none of its rows, and its working memory beyond
 * the result is bounded by the units holding the rows, per leaf column:
 *  - 2.1+ mini-block pages: the stored bytes of the chunks from the first
 *    to the last holding requested rows (read in one piece), decoded one
 *    chunk at a time (at most 4096 values in 2.1), plus the page's chunk
 *    metadata, dictionary and repetition index; with lists, a row spanning
 *    chunks takes the chunks it spans;
 *  - 2.1+ full-zip pages without lists: the items of the requested rows
 *    (fixed width by stride, variable width through the repetition index);
 *  - 2.1+ constant and all-null pages without lists: values for the
 *    requested rows only, the page's levels (2 bytes a row) read whole;
 *  - 2.1+ full-zip and constant pages with lists, mini-block pages with lists
 *    but no repetition index, and 2.0 pages: the whole page.
 * Fields map to physical columns as lance-format.md §3.1 says
 * (lp_columns.h): in 2.0 every field owns a column in pre-order (struct
 * headers and list offsets included); in 2.1+ only leaves do.  Every offset, size and count
 * read from the file is checked; damaged input gives LP_ERR_CORRUPT, an
 * encoding this decoder does not know LP_ERR_UNSUPPORTED naming it with the
 * file, column and page - never wrong values.
 */
#ifndef LP_DECODE_H
#define LP_DECODE_H

#include <stdbool.h>
#include <stdint.h>

#include "base/lp_error.h"
#include "format/lp_file.h"
#include "io/lp_storage.h"
#include "format/lp_values.h"

typedef struct LpFieldReader LpFieldReader;

typedef struct LpDecodeStats
{
	uint64_t	pages_decoded;	/* pages of the field's columns some of whose values were decoded */
	uint64_t	pages_skipped;	/* pages not read at all because no requested row lies in them */

	/*
	 * Top-level rows decoded, including rows decoded only because they share
	 * a unit (chunk, page) with a requested one; summed over the field's
	 * columns (2.0 columns under a list count items, not rows, and are left
	 * out).
	 */
	uint64_t	rows_decoded;
} LpDecodeStats;

/*
 * A reader of top-level field number field_index of the file behind input.
 * It borrows input and file: the caller keeps both open until
 * lp_field_reader_close.  Fails as lp_decode_field does for legacy files,
 * legacy blob columns and fields that are not top-level.
 */
bool		lp_field_reader_open(LpInput *input, const LpFile *file, uint32_t field_index,
								 LpFieldReader **out, LpError *err);

/* The field's type, owned by the reader. */
const LpType *lp_field_reader_type(const LpFieldReader *reader);

/*
 * Decode rows[0..n) of the field (strictly ascending, each below
 * file->num_rows, else LP_ERR_INVALID_ARGUMENT) into *out: an array of n
 * rows in that order, of the reader's type, freed by the caller with
 * lp_array_free.  n == 0 gives an empty array.
 */
bool		lp_field_reader_take(LpFieldReader *reader, const uint64_t *rows, uint64_t n,
								 LpArray **out, LpError *err);

/*
 * The byte ranges a take of rows[0..n) (checked as by lp_field_reader_take)
 * reads, to fetch them ahead (LpInputOps.prefetch): the buffers of every
 * page of the field's columns holding one of the rows, whole pages (a
 * little more than a take of some rows of a mini-block page reads).  2.0
 * columns whose pages count list items or bytes rather than rows are left
 * out.  *ranges is lp_alloc'd (NULL when none), freed by the caller.
 */
bool		lp_field_reader_ranges(LpFieldReader *reader, const uint64_t *rows, uint64_t n,
								   LpByteRange **ranges, size_t *num_ranges, LpError *err);

/* What the reader's takes decoded and skipped since it was opened. */
void		lp_field_reader_stats(const LpFieldReader *reader, LpDecodeStats *stats);

void		lp_field_reader_close(LpFieldReader *reader);

/*
 * Decode top-level field number field_index (an index into
 * file->schema.fields whose parent_id is -1) of the file behind input.  On
 * success *out is an array of file->num_rows rows whose type (*type_out,
 * also reachable as (*out)->type) the caller frees with lp_type_free after
 * lp_array_free(*out).
 */
bool		lp_decode_field(LpInput *input, const LpFile *file, uint32_t field_index,
							LpType **type_out, LpArray **out, LpError *err);

#endif							/* LP_DECODE_H */
