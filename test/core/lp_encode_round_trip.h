/*
 * lp_encode_round_trip.h - encode → decode round trips of the encoder
 * (encode/lp_file_writer.h), shared by the unit tests (test_encode.c) and
 * the fuzzer (test/fuzz/fuzz_encode.c): columns written in batches of
 * slices into a file in memory, decoded again by our decoder and compared
 * row by row, at every nesting level.  Uses no test harness: failures are
 * returned (with a message in err) for the caller to report.
 */
#ifndef LP_ENCODE_ROUND_TRIP_H
#define LP_ENCODE_ROUND_TRIP_H

#include <stdbool.h>
#include <stdint.h>

#include "base/lp_error.h"
#include "format/lp_file.h"
#include "format/lp_schema.h"
#include "format/lp_values.h"
#include "io/lp_storage.h"

/*
 * Rows [start, start + count) of whole as an array sharing nothing with it.
 * Validity and bools are re-based; string and list offsets are shifted to
 * start at up to 7 bytes or items after those of the earlier rows kept
 * before them, so the encoder sees offsets that do not start at 0 while
 * a slice copies about its own rows only.
 */
LpArray    *lp_round_trip_slice(const LpType *type, const LpArray *whole, uint64_t start,
								uint64_t count);

/* Row ia of a and row ib of b are the same value, nulls at every level included. */
bool		lp_round_trip_rows_equal(const LpType *type, const LpArray *a, uint64_t ia,
									 const LpArray *b, uint64_t ib);

/*
 * Write the rows of arrays (one per top-level field of schema, types[i] its
 * type) into a file of version in batches of batch_rows, pages written at
 * about flush_bytes (0: the writer's default; lp_file_writer_set_page_bytes);
 * *bytes receives the file (lp_alloc) and *size its size.  false with err
 * when the writer refuses.
 */
bool		lp_round_trip_encode(const LpSchema *schema, LpFileVersion version,
								 LpType *const *types, LpArray *const *arrays, uint32_t num_arrays,
								 uint64_t rows, uint64_t batch_rows, uint64_t flush_bytes,
								 uint8_t **bytes, uint64_t *size, LpError *err);

/*
 * Decode top-level field field_index of file (read through input) and
 * compare it with expected: *first_difference receives the first row that
 * differs, UINT64_MAX when none does (or the decoded length when the
 * lengths differ).  false with err when decoding fails.
 */
bool		lp_round_trip_compare(LpInput *input, const LpFile *file, uint32_t field_index,
								  const LpType *type, const LpArray *expected,
								  uint64_t *first_difference, LpError *err);

#endif							/* LP_ENCODE_ROUND_TRIP_H */
