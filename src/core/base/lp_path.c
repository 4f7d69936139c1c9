/*
 * lp_path.c - joining the '/'-separated paths of stores.
 */
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
