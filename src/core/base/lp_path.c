/*
 * lp_path.c - joining the '/'-separated paths of stores, and decoding the
 * percent-escapes of paths in URIs.
 */
#include <stdbool.h>
#include <string.h>

#include "base/lp_alloc.h"
#include "base/lp_path.h"

char *
lp_path_join(const char *a, const char *b)
{
	size_t		a_len = strlen(a);
	size_t		b_len;
	size_t		separator;
	char	   *result;

	while (a_len > 0 && a[a_len - 1] == '/')
		a_len--;
	while (*b == '/')
		b++;
	b_len = strlen(b);
	/* an empty a is no directory at all: b stays relative */
	separator = a[0] == '\0' ? 0 : 1;
	result = lp_alloc(a_len + separator + b_len + 1);
	if (result == NULL)
		return NULL;
	memcpy(result, a, a_len);
	if (separator)
		result[a_len] = '/';
	memcpy(result + a_len + separator, b, b_len + 1);
	return result;
}

int
lp_hex_digit_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

char *
lp_percent_decoded(const char *text, size_t len, bool *bad)
{
	char	   *out = lp_alloc(len + 1);
	size_t		n = 0;

	*bad = false;
	if (out == NULL)
		return NULL;
	for (size_t i = 0; i < len; i++)
	{
		if (text[i] == '%')
		{
			int			high = i + 2 < len ? lp_hex_digit_value(text[i + 1]) : -1;
			int			low = i + 2 < len ? lp_hex_digit_value(text[i + 2]) : -1;

			if (high < 0 || low < 0 || (high == 0 && low == 0))
			{
				lp_free(out);
				*bad = true;
				return NULL;
			}
			out[n++] = (char) (high * 16 + low);
			i += 2;
		}
		else
			out[n++] = text[i];
	}
	out[n] = '\0';
	return out;
}
