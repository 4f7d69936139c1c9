/*
 * lp_test_json.h - a small JSON reader for the tests (the reference data
 * index, manifest.json).  Not for untrusted input: it trusts nesting depth
 * and handles \uXXXX escapes only well enough for comparisons of ASCII text.
 */
#ifndef LP_TEST_JSON_H
#define LP_TEST_JSON_H

#include <stdbool.h>
#include <stddef.h>

typedef enum JsonType
{
	JSON_NULL,
	JSON_BOOL,
	JSON_NUMBER,
	JSON_STRING,
	JSON_ARRAY,
	JSON_OBJECT
} JsonType;

typedef struct JsonValue JsonValue;

struct JsonValue
{
	JsonType	type;
	bool		boolean;
	double		number;
	char	   *string;			/* JSON_STRING */
	size_t		count;			/* JSON_ARRAY, JSON_OBJECT */
	char	  **keys;			/* JSON_OBJECT */
	JsonValue **items;			/* JSON_ARRAY, JSON_OBJECT */
};

/* Parse text; NULL on a syntax error. */
JsonValue  *json_parse(const char *text);
void		json_free(JsonValue *value);

/* Member of an object, or NULL if absent or value is not an object. */
const JsonValue *json_get(const JsonValue *object, const char *key);

#endif							/* LP_TEST_JSON_H */
