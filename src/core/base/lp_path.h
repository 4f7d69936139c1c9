/*
 * lp_path.h - joining the '/'-separated paths of stores.
 */
#ifndef LP_PATH_H
#define LP_PATH_H

/*
 * "<a>/<b>" with exactly one slash between them, or b alone when a is ""
 * (a path relative to some root); NULL when out of memory (lp_alloc'd).
 */
char	   *lp_path_join(const char *a, const char *b);

#endif							/* LP_PATH_H */
