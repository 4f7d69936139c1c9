/*
 * lp_random.h - randomness the embedding program supplies: pg_strong_random
 * in the server, fixed bytes in tests.  Names of data files, transaction
 * files and deletion files are drawn from it.
 */
#ifndef LP_RANDOM_H
#define LP_RANDOM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/lp_error.h"

typedef bool (*LpRandomFunction) (void *arg, uint8_t *buffer, size_t len,
								  LpError *err);

#endif							/* LP_RANDOM_H */
