/*
 * lp_index_key.h - what Lance's scalar indexes (BTREE, BITMAP) share: keys
 * searches are given, ranges of them, and how an index's stored values of
 * each Arrow type compare with them (PostgreSQL's order: NaN above every
 * number, -0 equal to 0, strings bytewise).
 */
#ifndef LP_INDEX_KEY_H
#define LP_INDEX_KEY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "decode/lp_decode.h"
#include "format/lp_file.h"

/* How values of an index compare with keys: by integer, float or bytes. */
typedef enum LpIndexKeyKind
{
	LP_INDEX_KEY_INTEGER,		/* int*, uint*, date, time, timestamp, duration */
	LP_INDEX_KEY_FLOAT,			/* float, double; NaN above every number */
	LP_INDEX_KEY_BYTES			/* string, binary: bytewise, shorter prefix first */
} LpIndexKeyKind;

typedef struct LpIndexKey
{
	LpIndexKeyKind kind;
	int64_t		integer;
	double		real;
	const uint8_t *bytes;
	size_t		len;
} LpIndexKey;

/* a against b, both of one kind, in the order searches use: <0, 0, >0. */
int			lp_index_key_compare(const LpIndexKey *a, const LpIndexKey *b);

typedef struct LpIndexBound
{
	bool		present;		/* false: unbounded on this side */
	bool		inclusive;
	LpIndexKey	key;
} LpIndexBound;

/* Values v with lower <= v <= upper (or < where a bound is exclusive); never nulls. */
typedef struct LpIndexRange
{
	LpIndexBound lower;
	LpIndexBound upper;
} LpIndexRange;

/* The type of an index's stored values, as comparisons need it. */
typedef struct LpIndexValueType
{
	LpTypeId	id;
	uint32_t	width;			/* bytes of an integer value */
	LpIndexKeyKind kind;
} LpIndexValueType;

/* The value type of values of type; false when keys cannot be compared with them. */
bool		lp_index_value_type(const LpType *type, LpIndexValueType *out);

/* Value row of array (of type, not null) against key (of type's kind): <0, 0, >0. */
int			lp_index_value_compare(const LpIndexValueType *type, const LpArray *array,
								   uint64_t row, const LpIndexKey *key);

/* Whether value row of array lies in range. */
bool		lp_index_value_in_range(const LpIndexValueType *type, const LpArray *array,
									uint64_t row, const LpIndexRange *range);
bool		lp_index_value_above(const LpIndexValueType *type, const LpArray *array,
								 uint64_t row, const LpIndexBound *lower);
bool		lp_index_value_below(const LpIndexValueType *type, const LpArray *array,
								 uint64_t row, const LpIndexBound *upper);

/* Whether value row of array (of a float type) is a NaN. */
bool		lp_index_value_is_nan(const LpIndexValueType *type, const LpArray *array, uint64_t row);

/* Whether every bound of ranges[0..n) has a key of kind. */
bool		lp_index_ranges_of_kind(const LpIndexRange *ranges, size_t n, LpIndexKeyKind kind);

/* Index of the top-level field called name of one of an index's files, or -1. */
int64_t		lp_index_file_field(const LpFile *file, const char *name);

#endif							/* LP_INDEX_KEY_H */
