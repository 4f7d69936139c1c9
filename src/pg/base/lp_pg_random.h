/*
 * lp_pg_random.h - the core's source of randomness (base/lp_random.h) in the
 * server: PostgreSQL's strong random bytes, for the names of data,
 * transaction, deletion and sidecar files and transaction UUIDs.
 */
#ifndef LP_PG_RANDOM_H
#define LP_PG_RANDOM_H

#include <stddef.h>
#include <stdint.h>

#include "base/lp_error.h"

/* An LpRandomFunction: len strong random bytes into buffer (arg unused). */
extern bool lp_random_bytes(void *arg, uint8_t *buffer, size_t len, LpError *err);

#endif							/* LP_PG_RANDOM_H */
