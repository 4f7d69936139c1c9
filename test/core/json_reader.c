/*
 * json_reader.c - a small recursive-descent JSON reader for the core tests.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_reader.h"
#include "lp_test_files.h"

#include "base/lp_path.h"

#define JSON_MAX_DEPTH 64

typedef struct Parser
{
	const char *p;
	const char *end;
	const char *error;
} Parser;

static bool parse_value(Parser *parser, JsonValue *out, int depth);

static void
skip_space(Parser *parser)
{
	while (parser->p < parser->end &&
		   (*parser->p == ' ' || *parser->p == '\n' || *parser->p == '\r' || *parser->p == '\t'))
		parser->p++;
}

static bool
fail(Parser *parser, const char *message)
{
	if (parser->error == NULL)
		parser->error = message;
	return false;
}

static void
free_contents(JsonValue *value)
{
	for (size_t i = 0; i < value->count; i++)
	{
		free_contents(&value->items[i]);
		if (value->keys)
			free(value->keys[i]);
	}
	free(value->items);
	free(value->keys);
	free(value->text);
}

void
json_free(JsonValue *value)
{
	if (value == NULL)
		return;
	free_contents(value);
	free(value);
}

static bool
read_hex4(Parser *parser, uint32_t *out)
{
	uint32_t	value = 0;

	if (parser->end - parser->p < 4)
		return fail(parser, "short \\u escape");
	for (int i = 0; i < 4; i++)
	{
		int			d = lp_hex_digit_value(parser->p[i]);

		if (d < 0)
			return fail(parser, "bad \\u escape");
		value = value * 16 + (uint32_t) d;
	}
	parser->p += 4;
	*out = value;
	return true;
}

static size_t
put_utf8(char *out, uint32_t cp)
{
	if (cp < 0x80)
	{
		out[0] = (char) cp;
		return 1;
	}
	if (cp < 0x800)
	{
		out[0] = (char) (0xc0 | (cp >> 6));
		out[1] = (char) (0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000)
	{
		out[0] = (char) (0xe0 | (cp >> 12));
		out[1] = (char) (0x80 | ((cp >> 6) & 0x3f));
		out[2] = (char) (0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (char) (0xf0 | (cp >> 18));
	out[1] = (char) (0x80 | ((cp >> 12) & 0x3f));
	out[2] = (char) (0x80 | ((cp >> 6) & 0x3f));
	out[3] = (char) (0x80 | (cp & 0x3f));
	return 4;
}

static bool
parse_string(Parser *parser, char **text, size_t *len)
{
	/* Decoded text is never longer than the source. */
	const char *start = ++parser->p;
	char	   *out;
	size_t		n = 0;

	while (parser->p < parser->end && *parser->p != '"')
		parser->p += (*parser->p == '\\' && parser->p + 1 < parser->end) ? 2 : 1;
	if (parser->p >= parser->end)
		return fail(parser, "unterminated string");
	out = malloc((size_t) (parser->p - start) + 1);
	if (out == NULL)
		return fail(parser, "out of memory");
	parser->p = start;
	while (*parser->p != '"')
	{
		char		c = *parser->p++;

		if (c != '\\')
		{
			out[n++] = c;
			continue;
		}
		c = *parser->p++;
		switch (c)
		{
			case '"':
			case '\\':
			case '/':
				out[n++] = c;
				break;
			case 'b':
				out[n++] = '\b';
				break;
			case 'f':
				out[n++] = '\f';
				break;
			case 'n':
				out[n++] = '\n';
				break;
			case 'r':
				out[n++] = '\r';
				break;
			case 't':
				out[n++] = '\t';
				break;
			case 'u':
				{
					uint32_t	cp;

					if (!read_hex4(parser, &cp))
					{
						free(out);
						return false;
					}
					if (cp >= 0xd800 && cp < 0xdc00 && parser->end - parser->p >= 6 &&
						parser->p[0] == '\\' && parser->p[1] == 'u')
					{
						uint32_t	low;

						parser->p += 2;
						if (!read_hex4(parser, &low))
						{
							free(out);
							return false;
						}
						cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
					}
					n += put_utf8(out + n, cp);
					break;
				}
			default:
				free(out);
				return fail(parser, "bad escape");
		}
	}
	parser->p++;
	out[n] = '\0';
	*text = out;
	*len = n;
	return true;
}

static bool
parse_container(Parser *parser, JsonValue *out, bool object, int depth)
{
	size_t		cap = 0;

	out->kind = object ? JSON_OBJECT : JSON_ARRAY;
	parser->p++;
	skip_space(parser);
	if (parser->p < parser->end && *parser->p == (object ? '}' : ']'))
	{
		parser->p++;
		return true;
	}
	for (;;)
	{
		char	   *key = NULL;
		size_t		key_len;

		skip_space(parser);
		if (object)
		{
			if (parser->p >= parser->end || *parser->p != '"' ||
				!parse_string(parser, &key, &key_len))
				return fail(parser, "expected a member name");
			skip_space(parser);
			if (parser->p >= parser->end || *parser->p != ':')
			{
				free(key);
				return fail(parser, "expected ':'");
			}
			parser->p++;
		}
		if (out->count == cap)
		{
			size_t		new_cap = cap ? cap * 2 : 8;
			JsonValue  *items = realloc(out->items, new_cap * sizeof(JsonValue));
			char	  **keys = object ? realloc(out->keys, new_cap * sizeof(char *)) : NULL;

			if (items == NULL || (object && keys == NULL))
			{
				if (items)
					out->items = items;
				free(key);
				return fail(parser, "out of memory");
			}
			out->items = items;
			if (object)
				out->keys = keys;
			cap = new_cap;
		}
		memset(&out->items[out->count], 0, sizeof(JsonValue));
		if (object)
			out->keys[out->count] = key;
		out->count++;
		if (!parse_value(parser, &out->items[out->count - 1], depth + 1))
			return false;
		skip_space(parser);
		if (parser->p < parser->end && *parser->p == ',')
		{
			parser->p++;
			continue;
		}
		if (parser->p < parser->end && *parser->p == (object ? '}' : ']'))
		{
			parser->p++;
			return true;
		}
		return fail(parser, "expected ',' or a closing bracket");
	}
}

static bool
parse_value(Parser *parser, JsonValue *out, int depth)
{
	memset(out, 0, sizeof(*out));
	if (depth > JSON_MAX_DEPTH)
		return fail(parser, "nested too deeply");
	skip_space(parser);
	if (parser->p >= parser->end)
		return fail(parser, "unexpected end");
	switch (*parser->p)
	{
		case '{':
			return parse_container(parser, out, true, depth);
		case '[':
			return parse_container(parser, out, false, depth);
		case '"':
			out->kind = JSON_STRING;
			return parse_string(parser, &out->text, &out->len);
		case 't':
			if (parser->end - parser->p >= 4 && memcmp(parser->p, "true", 4) == 0)
			{
				out->kind = JSON_BOOL;
				out->boolean = true;
				parser->p += 4;
				return true;
			}
			return fail(parser, "bad literal");
		case 'f':
			if (parser->end - parser->p >= 5 && memcmp(parser->p, "false", 5) == 0)
			{
				out->kind = JSON_BOOL;
				parser->p += 5;
				return true;
			}
			return fail(parser, "bad literal");
		case 'n':
			if (parser->end - parser->p >= 4 && memcmp(parser->p, "null", 4) == 0)
			{
				out->kind = JSON_NULL;
				parser->p += 4;
				return true;
			}
			return fail(parser, "bad literal");
		default:
			{
				const char *start = parser->p;

				while (parser->p < parser->end &&
					   strchr("+-0123456789.eE", *parser->p) != NULL)
					parser->p++;
				if (parser->p == start)
					return fail(parser, "unexpected character");
				out->kind = JSON_NUMBER;
				out->len = (size_t) (parser->p - start);
				out->text = malloc(out->len + 1);
				if (out->text == NULL)
					return fail(parser, "out of memory");
				memcpy(out->text, start, out->len);
				out->text[out->len] = '\0';
				return true;
			}
	}
}

JsonValue *
json_parse(const char *text, size_t len, const char **error)
{
	Parser		parser = {text, text + len, NULL};
	JsonValue  *value = calloc(1, sizeof(JsonValue));

	if (value == NULL)
	{
		*error = "out of memory";
		return NULL;
	}
	if (!parse_value(&parser, value, 0))
	{
		*error = parser.error;
		json_free(value);
		return NULL;
	}
	skip_space(&parser);
	if (parser.p != parser.end)
	{
		*error = "trailing characters";
		json_free(value);
		return NULL;
	}
	return value;
}

JsonValue  *
json_parse_file(const char *path, const char **error)
{
	uint8_t    *text;
	size_t		size;
	JsonValue  *value;

	if (!lp_test_file_read_all(path, &text, &size))
	{
		*error = "cannot read file";
		return NULL;
	}
	value = json_parse((const char *) text, size, error);
	free(text);
	return value;
}

const JsonValue *
json_get(const JsonValue *object, const char *key)
{
	if (object == NULL || object->kind != JSON_OBJECT)
		return NULL;
	for (size_t i = 0; i < object->count; i++)
		if (strcmp(object->keys[i], key) == 0)
			return &object->items[i];
	return NULL;
}
