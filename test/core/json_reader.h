/*
 * json_reader.h - a small JSON reader for the core tests (reference rows
 * and the data set manifest).  Numbers keep their text; strings are decoded
 * to UTF-8 (they may contain NUL bytes, so they carry a length).
 */
#ifndef JSON_READER_H
#define JSON_READER_H

#include <stdbool.h>
#include <stddef.h>

typedef enum JsonKind
{
	JSON_NULL,
	JSON_BOOL,
	JSON_NUMBER,
	JSON_STRING,
	JSON_ARRAY,
	JSON_OBJECT
} JsonKind;

typedef struct JsonValue JsonValue;

struct JsonValue
{
	JsonKind	kind;
	bool		boolean;
	char	   *text;			/* number text or string bytes, NUL-terminated */
	size_t		len;
	size_t		count;			/* array items or object members */
	JsonValue  *items;
	char	  **keys;			/* object member names */
};

/* Parse text[0, len); NULL (and *error set) if it is not valid JSON. */
JsonValue  *json_parse(const char *text, size_t len, const char **error);
/* Read and parse a whole file; NULL on error. */
JsonValue  *json_parse_file(const char *path, const char **error);
void		json_free(JsonValue *value);
/* Member of an object, or NULL. */
const JsonValue *json_get(const JsonValue *object, const char *key);

#endif							/* JSON_READER_H */
