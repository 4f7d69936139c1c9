/*
 * lp_values.h - decoded column values in memory: an Arrow-like array model
 * and the data types parsed from Lance logical type strings.
 *
 * An LpArray holds one column (or one child of a nested column) for a range
 * of rows:
 *  - validity: a bitmap (bit i set = row i is valid, LSB first) or NULL when
 *    every row is valid;
 *  - fixed-width types: `values` holds length * width bytes, little-endian;
 *    bool is a bitmap in `values`;
 *  - string/binary and lists: `offsets` holds length + 1 64-bit offsets into
 *    `data` (bytes) or into children[0] (list items);
 *  - fixed_size_list: children[0] holds length * list_size items;
 *  - struct: one child per member, each of the same length.
 * Null slots hold zeroed (or empty) values.  Dictionary columns are decoded
 * to their value type.  Every buffer is allocated with lp_alloc.
 */
#ifndef LP_VALUES_H
#define LP_VALUES_H

#include <stdbool.h>
#include <stdint.h>

#include "base/lp_error.h"
#include "format/lp_file.h"

typedef enum LpTypeId
{
	LP_TYPE_NULL = 0,
	LP_TYPE_BOOL,
	LP_TYPE_INT8,
	LP_TYPE_INT16,
	LP_TYPE_INT32,
	LP_TYPE_INT64,
	LP_TYPE_UINT8,
	LP_TYPE_UINT16,
	LP_TYPE_UINT32,
	LP_TYPE_UINT64,
	LP_TYPE_HALF_FLOAT,
	LP_TYPE_FLOAT,
	LP_TYPE_DOUBLE,
	LP_TYPE_DECIMAL128,
	LP_TYPE_DECIMAL256,
	LP_TYPE_DATE32,				/* days since the epoch */
	LP_TYPE_DATE64,				/* milliseconds since the epoch */
	LP_TYPE_TIME32,
	LP_TYPE_TIME64,
	LP_TYPE_TIMESTAMP,
	LP_TYPE_DURATION,
	LP_TYPE_STRING,
	LP_TYPE_LARGE_STRING,
	LP_TYPE_BINARY,
	LP_TYPE_LARGE_BINARY,
	LP_TYPE_FIXED_SIZE_BINARY,
	LP_TYPE_FIXED_SIZE_LIST,
	LP_TYPE_LIST,
	LP_TYPE_LARGE_LIST,
	LP_TYPE_STRUCT
} LpTypeId;

typedef enum LpTimeUnit
{
	LP_UNIT_SECOND = 0,
	LP_UNIT_MILLI,
	LP_UNIT_MICRO,
	LP_UNIT_NANO
} LpTimeUnit;

typedef struct LpType LpType;

struct LpType
{
	LpTypeId	id;
	char	   *name;			/* field name ("item" for FSL items) */
	bool		nullable;
	bool		dictionary;		/* stored dictionary-encoded ("dict:...") */
	bool		packed;			/* struct stored as one column (packed struct, blob v2) */
	LpTimeUnit	unit;			/* time32/64, timestamp, duration */
	char	   *timezone;		/* timestamp: NULL when none ("-") */
	int32_t		precision;		/* decimal */
	int32_t		scale;			/* decimal */
	int32_t		fixed_size;		/* fixed_size_binary bytes, fixed_size_list items */
	int32_t		field_id;		/* schema field id, -1 for FSL items */
	uint32_t	num_children;
	LpType	  **children;
};

typedef struct LpArray LpArray;

struct LpArray
{
	const LpType *type;			/* owned by the caller of the decoder */
	uint64_t	length;
	uint64_t	null_count;
	uint8_t    *validity;		/* NULL: all valid */
	uint8_t    *values;			/* fixed width; bool as a bitmap */
	uint64_t   *offsets;		/* variable width and lists: length + 1 */
	uint8_t    *data;			/* variable width bytes */
	uint64_t	data_len;
	uint32_t	num_children;
	LpArray   **children;
};

/* "int32", "timestamp", ... for messages */
const char *lp_type_id_name(LpTypeId id);

/*
 * Bytes per value of a fixed-width type (1..32), 0 for bool (a bitmap) and
 * for variable-width and nested types; fixed_size_binary gives its width.
 */
uint32_t	lp_type_byte_width(const LpType *type);

/* True for string, large_string, binary and large_binary. */
bool		lp_type_is_variable_width(const LpType *type);

/*
 * Parse a logical type string (lance-format.md §2.4) into a type without
 * children for list/struct; fixed_size_list gets its item child.  file and
 * field name appear in messages only.
 */
bool		lp_type_parse(const char *logical_type, const char *file_name,
						  const char *field_name, LpType **out, LpError *err);

/*
 * The type of schema field field_index of file (an index into
 * file->schema.fields), with the children that follow it in pre-order.
 * A blob v2 field of a data file's footer (a struct without children,
 * followed by the descriptor's pseudo-fields of id -1, lance-format.md
 * §6.5) gets those pseudo-fields as its children.
 */
bool		lp_type_from_field(const LpFile *file, uint32_t field_index,
							   LpType **out, LpError *err);

void		lp_type_free(LpType *type);

/* An empty array of the type (every pointer NULL); NULL if out of memory. */
LpArray    *lp_array_new(const LpType *type);
void		lp_array_free(LpArray *array);

static inline bool
lp_bit_get(const uint8_t *bitmap, uint64_t index)
{
	return (bitmap[index >> 3] >> (index & 7)) & 1;
}

static inline void
lp_bit_set(uint8_t *bitmap, uint64_t index, bool value)
{
	if (value)
		bitmap[index >> 3] |= (uint8_t) (1 << (index & 7));
	else
		bitmap[index >> 3] &= (uint8_t) ~(1 << (index & 7));
}

/* True if row index of array is valid. */
static inline bool
lp_array_is_valid(const LpArray *array, uint64_t index)
{
	return array->validity == NULL || lp_bit_get(array->validity, index);
}

#endif							/* LP_VALUES_H */
