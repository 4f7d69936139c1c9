/*
 * value_compare.h - compare decoded LpArray values with the reference rows
 * written by test/reference/values.cjs (its canonical JSON encoding).
 */
#ifndef VALUE_COMPARE_H
#define VALUE_COMPARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "json_reader.h"
#include "format/lp_values.h"

/* "YYYY-MM-DD" for days since 1970-01-01. */
void		format_date(int64_t days, char *out, size_t size);
/* "YYYY-MM-DD HH:MM:SS[.ffffff]" for microseconds since the epoch. */
void		format_micros(int64_t micros, char *out, size_t size);
/* A decimal128 value (16 little-endian bytes) with scale fraction digits. */
void		format_decimal128(const uint8_t *bytes, int32_t scale, char *out, size_t size);

/*
 * True if row index of array equals expected.  On a difference, what (of
 * size what_size) says where and how.
 */
bool		value_matches(const LpArray *array, uint64_t index, const JsonValue *expected,
						  char *what, size_t what_size);

#endif							/* VALUE_COMPARE_H */
