/*
 * lp_test_json.c - a small recursive-descent JSON reader for the tests.
 */
#include <stdlib.h>
#include <string.h>

#include "lp_test_json.h"

typedef struct JsonParser
{
	const char *p;
} JsonParser;

static JsonValue *parse_value(JsonParser *parser);

static void
skip_space(JsonParser *parser)
{
	while (*parser->p == ' ' || *parser->p == '\n' || *parser->p == '\r' ||
		   *parser->p == '\t')
		parser->p++;
}

static void
add_item(JsonValue *value, char *key, JsonValue *item)
{
	value->items = realloc(value->items, (value->count + 1) * sizeof(JsonValue *));
	if (value->type == JSON_OBJECT)
		value->keys = realloc(value->keys, (value->count + 1) * sizeof(char *));
	value->items[value->count] = item;
	if (value->type == JSON_OBJECT)
		value->keys[value->count] = key;
	value->count++;
}

static char *
parse_string(JsonParser *parser)
{
	size_t		cap = 16;
	size_t		len = 0;
	char	   *out;

	if (*parser->p != '"')
		return NULL;
	parser->p++;
	out = malloc(cap);
	while (*parser->p != '"')
	{
		char		c = *parser->p++;

		if (c == '\0')
		{
			free(out);
			return NULL;
		}
		if (c == '\\')
		{
			char		e = *parser->p++;

			switch (e)
			{
				case 'n':
					c = '\n';
					break;
				case 't':
					c = '\t';
					break;
				case 'r':
					c = '\r';
					break;
				case 'b':
					c = '\b';
					break;
				case 'f':
					c = '\f';
					break;
				case 'u':
					/* non-ASCII escapes are not needed by the tests */
					if (strlen(parser->p) < 4)
					{
						free(out);
						return NULL;
					}
					{
						char		hex[5];

						memcpy(hex, parser->p, 4);
						hex[4] = '\0';
						c = (char) strtol(hex, NULL, 16);
						parser->p += 4;
					}
					break;
				case '\0':
					free(out);
					return NULL;
				default:
					c = e;
					break;
			}
		}
		if (len + 2 > cap)
			out = realloc(out, cap *= 2);
		out[len++] = c;
	}
	parser->p++;
	out[len] = '\0';
	return out;
}

static JsonValue *
parse_container(JsonParser *parser, JsonType type)
{
	JsonValue  *value = calloc(1, sizeof(JsonValue));
	char		close = type == JSON_ARRAY ? ']' : '}';

	value->type = type;
	parser->p++;
	skip_space(parser);
	if (*parser->p == close)
	{
		parser->p++;
		return value;
	}
	for (;;)
	{
		char	   *key = NULL;
		JsonValue  *item;

		skip_space(parser);
		if (type == JSON_OBJECT)
		{
			key = parse_string(parser);
			skip_space(parser);
			if (key == NULL || *parser->p != ':')
			{
				free(key);
				json_free(value);
				return NULL;
			}
			parser->p++;
		}
		item = parse_value(parser);
		if (item == NULL)
		{
			free(key);
			json_free(value);
			return NULL;
		}
		add_item(value, key, item);
		skip_space(parser);
		if (*parser->p == ',')
		{
			parser->p++;
			continue;
		}
		if (*parser->p == close)
		{
			parser->p++;
			return value;
		}
		json_free(value);
		return NULL;
	}
}

static JsonValue *
parse_value(JsonParser *parser)
{
	JsonValue  *value;

	skip_space(parser);
	if (*parser->p == '{')
		return parse_container(parser, JSON_OBJECT);
	if (*parser->p == '[')
		return parse_container(parser, JSON_ARRAY);
	value = calloc(1, sizeof(JsonValue));
	if (*parser->p == '"')
	{
		value->type = JSON_STRING;
		value->string = parse_string(parser);
		if (value->string == NULL)
		{
			free(value);
			return NULL;
		}
	}
	else if (strncmp(parser->p, "true", 4) == 0 || strncmp(parser->p, "false", 5) == 0)
	{
		value->type = JSON_BOOL;
		value->boolean = *parser->p == 't';
		parser->p += value->boolean ? 4 : 5;
	}
	else if (strncmp(parser->p, "null", 4) == 0)
	{
		value->type = JSON_NULL;
		parser->p += 4;
	}
	else
	{
		char	   *end;

		value->type = JSON_NUMBER;
		value->number = strtod(parser->p, &end);
		if (end == parser->p)
		{
			free(value);
			return NULL;
		}
		parser->p = end;
	}
	return value;
}

JsonValue *
json_parse(const char *text)
{
	JsonParser	parser = {text};
	JsonValue  *value = parse_value(&parser);

	skip_space(&parser);
	if (value != NULL && *parser.p != '\0')
	{
		json_free(value);
		return NULL;
	}
	return value;
}

void
json_free(JsonValue *value)
{
	if (value == NULL)
		return;
	for (size_t i = 0; i < value->count; i++)
	{
		json_free(value->items[i]);
		if (value->keys)
			free(value->keys[i]);
	}
	free(value->items);
	free(value->keys);
	free(value->string);
	free(value);
}

const JsonValue *
json_get(const JsonValue *object, const char *key)
{
	if (object == NULL || object->type != JSON_OBJECT)
		return NULL;
	for (size_t i = 0; i < object->count; i++)
		if (strcmp(object->keys[i], key) == 0)
			return object->items[i];
	return NULL;
}
