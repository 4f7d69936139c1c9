/*
 * lp_index_json.h - the small JSON documents Lance's index files keep in
 * their schema metadata ("lance:index", "storage_metadata", "lance:hnsw"):
 * members of objects, elements of arrays, strings and numbers, found in
 * place.  Input is untrusted: every scan is bounded by the document and
 * nesting is limited, so damaged metadata only makes a lookup fail.
 */
#ifndef LP_INDEX_JSON_H
#define LP_INDEX_JSON_H

#include <stdbool.h>
#include <stddef.h>

/* A JSON value in place: the bytes from its first to its last character. */
typedef struct LpJsonSpan
{
	const char *data;
	size_t		len;
} LpJsonSpan;

/* Far deeper than any index metadata Lance writes. */
#define LP_JSON_MAX_DEPTH 32

/* The value of member key of object; false when object is not an object, is malformed or has no such member. */
bool		lp_json_member(LpJsonSpan object, const char *key, LpJsonSpan *value);

/* Element index of array; false when array is not an array, is malformed or is shorter. */
bool		lp_json_element(LpJsonSpan array, size_t index, LpJsonSpan *value);

/*
 * A string value unescaped into *out (lp_alloc'd, NUL-terminated, freed by
 * the caller); false when value is not a string, escapes a NUL or a
 * character beyond ASCII, or memory runs out.
 */
bool		lp_json_string(LpJsonSpan value, char **out);

/* A finite number value; false for anything else. */
bool		lp_json_number(LpJsonSpan value, double *out);

#endif							/* LP_INDEX_JSON_H */
