/*
 * lp_decode.h - decoding the values of a Lance data file (2.0 - 2.3) into
 * LpArrays (lp_values.h).
 *
 * A top-level field is decoded with all its children for every row of the
 * file.  Fields map to physical columns as lance-format.md §3.1 says
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
