/*
 * lp_index_json.c - finding values in the JSON of index metadata
 * (lp_index_json.h).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/lp_alloc.h"
#include "index/lp_index_json.h"

/* Longest number text accepted (strtod needs a terminated copy). */
#define MAX_NUMBER_LEN 64

static size_t
skip_space(const char *p, size_t pos, size_t len)
{
	while (pos < len && (p[pos] == ' ' || p[pos] == '\t' || p[pos] == '\n' || p[pos] == '\r'))
		pos++;
	return pos;
}

/* The end (one past the closing quote) of the string at pos; 0 when malformed. */
static size_t
skip_string(const char *p, size_t pos, size_t len)
{
	if (pos >= len || p[pos] != '"')
		return 0;
	for (pos++; pos < len; pos++)
	{
		if (p[pos] == '"')
			return pos + 1;
		if (p[pos] == '\\')
			pos++;
		else if ((unsigned char) p[pos] < 0x20)
			return 0;
	}
	return 0;
}

/* The end of the value starting at pos; 0 when malformed or nested too deeply. */
static size_t
skip_value(const char *p, size_t pos, size_t len, int depth)
{
	char		close;

	if (pos >= len || depth > LP_JSON_MAX_DEPTH)
		return 0;
	if (p[pos] == '"')
		return skip_string(p, pos, len);
	if (p[pos] != '{' && p[pos] != '[')
	{
		size_t		start = pos;

		while (pos < len && strchr("+-.0123456789eEtruefalsn", p[pos]) != NULL)
			pos++;
		return pos > start ? pos : 0;
	}
	close = p[pos] == '{' ? '}' : ']';
	pos = skip_space(p, pos + 1, len);
	if (pos < len && p[pos] == close)
		return pos + 1;
	for (;;)
	{
		if (close == '}')
		{
			pos = skip_string(p, pos, len);
			if (pos == 0)
				return 0;
			pos = skip_space(p, pos, len);
			if (pos >= len || p[pos] != ':')
				return 0;
			pos = skip_space(p, pos + 1, len);
		}
		pos = skip_value(p, pos, len, depth + 1);
		if (pos == 0)
			return 0;
		pos = skip_space(p, pos, len);
		if (pos >= len)
			return 0;
		if (p[pos] == close)
			return pos + 1;
		if (p[pos] != ',')
			return 0;
		pos = skip_space(p, pos + 1, len);
	}
}

/*
 * The member called key (open '{') or the element number index (open '[')
 * of container; false when it has none or is malformed up to it.
 */
static bool
find_in(LpJsonSpan container, char open, const char *key, size_t index, LpJsonSpan *value)
{
	const char *p = container.data;
	size_t		len = container.len;
	size_t		pos = skip_space(p, 0, len);
	size_t		count = 0;

	if (pos >= len || p[pos] != open)
		return false;
	pos = skip_space(p, pos + 1, len);
	if (pos < len && p[pos] == (open == '{' ? '}' : ']'))
		return false;
	for (;;)
	{
		bool		match;
		size_t		end;

		if (open == '{')
		{
			size_t		key_end = skip_string(p, pos, len);

			if (key_end == 0)
				return false;
			match = key_end - pos - 2 == strlen(key) && memcmp(p + pos + 1, key, key_end - pos - 2) == 0;
			pos = skip_space(p, key_end, len);
			if (pos >= len || p[pos] != ':')
				return false;
			pos = skip_space(p, pos + 1, len);
		}
		else
			match = count == index;
		end = skip_value(p, pos, len, 1);
		if (end == 0)
			return false;
		if (match)
		{
			value->data = p + pos;
			value->len = end - pos;
			return true;
		}
		count++;
		pos = skip_space(p, end, len);
		if (pos >= len || p[pos] != ',')
			return false;
		pos = skip_space(p, pos + 1, len);
	}
}

bool
lp_json_member(LpJsonSpan object, const char *key, LpJsonSpan *value)
{
	return find_in(object, '{', key, 0, value);
}

bool
lp_json_element(LpJsonSpan array, size_t index, LpJsonSpan *value)
{
	return find_in(array, '[', NULL, index, value);
}

static int
hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

bool
lp_json_string(LpJsonSpan value, char **out)
{
	const char *p = value.data;
	char	   *result;
	size_t		n = 0;

	*out = NULL;
	if (value.len < 2 || skip_string(p, 0, value.len) != value.len)
		return false;
	result = lp_alloc(value.len);
	if (result == NULL)
		return false;
	for (size_t i = 1; i + 1 < value.len; i++)
	{
		char		c = p[i];

		if (c == '\\')
		{
			c = p[++i];
			if (c == 'u')
			{
				int			code = 0;

				for (int d = 0; d < 4; d++)
				{
					int			h = i + 1 + d < value.len - 1 ? hex_digit(p[i + 1 + d]) : -1;

					if (h < 0)
					{
						lp_free(result);
						return false;
					}
					code = code * 16 + h;
				}
				if (code == 0 || code > 0x7f)
				{
					lp_free(result);
					return false;
				}
				c = (char) code;
				i += 4;
			}
			else if (c == 'n')
				c = '\n';
			else if (c == 't')
				c = '\t';
			else if (c == 'r')
				c = '\r';
			else if (c == 'b')
				c = '\b';
			else if (c == 'f')
				c = '\f';
			else if (c != '"' && c != '\\' && c != '/')
			{
				lp_free(result);
				return false;
			}
		}
		result[n++] = c;
	}
	result[n] = '\0';
	*out = result;
	return true;
}

bool
lp_json_number(LpJsonSpan value, double *out)
{
	char		text[MAX_NUMBER_LEN + 1];
	char	   *end;

	if (value.len == 0 || value.len > MAX_NUMBER_LEN || strchr("-0123456789", value.data[0]) == NULL)
		return false;
	memcpy(text, value.data, value.len);
	text[value.len] = '\0';
	*out = strtod(text, &end);
	return end == text + value.len && isfinite(*out);
}
