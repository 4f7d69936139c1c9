/*
 * lp_test_util.h - helpers of the core unit tests: paths of the generated
 * reference datasets, copies of them, deterministic randomness.
 */
#ifndef LP_TEST_UTIL_H
#define LP_TEST_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/lp_error.h"

/* "<data dir>/<name>.lance" */
void		lp_test_dataset_path(const char *name, char *out, size_t size);

/*
 * The paths of a generated dataset's data files (data/<name>.lance), sorted
 * by name, into paths[0..max) (malloc'd: free each); returns how many, or -1
 * after recording a failed check when the directory cannot be listed.
 * Data file names are random, so tests must not rely on this order matching
 * the fragments'.
 */
int			lp_test_dataset_data_files(const char *name, char **paths, int max);

/* cp -r of a generated dataset to destination. */
void		lp_test_copy_dataset(const char *name, const char *destination);

/* rm -rf */
void		lp_test_remove_tree(const char *path);

/*
 * Route the core's allocations through an allocator that lets the next
 * `succeeding` allocations through and fails every one after them, so a test
 * can fail each allocation point of an operation in turn.
 */
void		lp_test_fail_allocations_after(long succeeding);
/* Back to malloc/free. */
void		lp_test_restore_allocations(void);

/* An LpRandomFunction drawing from a fixed-seed generator (arg: uint64_t *state). */
bool		lp_test_random(void *arg, uint8_t *buffer, size_t len, LpError *err);

#endif							/* LP_TEST_UTIL_H */
