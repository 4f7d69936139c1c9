/*
 * lp_path.h - joining the '/'-separated paths of stores, and decoding the
 * percent-escapes of paths in URIs.
 */
#ifndef LP_PATH_H
#define LP_PATH_H

#include <stdbool.h>
#include <stddef.h>

/*
 * "<a>/<b>" with exactly one slash between them, or b alone when a is ""
 * (a path relative to some root); NULL when out of memory (lp_alloc'd).
 */
char	   *lp_path_join(const char *a, const char *b);

/*
 * text[0..len) with its %XX escapes decoded (lp_alloc'd); NULL with *bad
 * set for a malformed escape or one that decodes to a NUL byte, NULL with
 * *bad false when out of memory.
 */
char	   *lp_percent_decoded(const char *text, size_t len, bool *bad);

/* The value of a hex digit (either case), -1 for any other character. */
int			lp_hex_digit_value(char c);

#endif							/* LP_PATH_H */
