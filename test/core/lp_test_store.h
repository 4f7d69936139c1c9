/*
 * lp_test_store.h - a POSIX LpStore for the core unit tests.
 *
 * The server has its own backends (fd.c, libcurl); this one exists so the
 * tests can run commits against real directories that the reference
 * implementation then reads.  Paths are plain local paths.
 */
#ifndef LP_TEST_STORE_H
#define LP_TEST_STORE_H

#include "io/lp_storage.h"

/* A store over the local file system (there is no state; never freed). */
LpStore    *lp_test_store(void);

/* Number of put_if_absent calls that found the path already there. */
extern int	lp_test_store_conflicts;

/* Number of list and open_input calls (the reads a commit costs). */
extern int	lp_test_store_lists;
extern int	lp_test_store_opens;

#endif							/* LP_TEST_STORE_H */
