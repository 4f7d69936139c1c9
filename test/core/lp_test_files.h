/*
 * lp_test_files.h - POSIX files behind LpInput and LpOutput, for core tests.
 *
 * The PostgreSQL layer has its own backends on fd.c; these exist so that
 * core tests can write real files and read them back.  An output is
 * written as "<path>.tmp" and renamed into place by publish().
 */
#ifndef LP_TEST_FILES_H
#define LP_TEST_FILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "io/lp_storage.h"

/* NULL with err set if the file cannot be opened. */
LpInput    *lp_test_file_input_open(const char *path, LpError *err);

/*
 * Start writing path.  With use_copy_from the output offers copy_from
 * (copy_file_range from file inputs; other inputs are refused with
 * LP_ERR_UNSUPPORTED, and counted in lp_test_file_copies_refused).
 */
LpOutput   *lp_test_file_output_create(const char *path, bool use_copy_from,
									   LpError *err);

extern int	lp_test_file_copies_refused;

/* The temporary name an output for path is written under. */
void		lp_test_file_temp_name(const char *path, char *buffer, size_t len);

bool		lp_test_file_exists(const char *path);

/* Whole file into memory (malloc); false if it cannot be read. */
bool		lp_test_file_read_all(const char *path, uint8_t **data, size_t *len);

/* A fresh empty directory under $TMPDIR (or /tmp); static buffer. */
const char *lp_test_make_temp_dir(void);

#endif							/* LP_TEST_FILES_H */
