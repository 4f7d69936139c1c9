/*
 * lp_pg_random.c - the core's source of randomness in the server (see
 * lp_pg_random.h).
 */
#include "postgres.h"

#include "base/lp_pg_random.h"

bool
lp_random_bytes(void *arg, uint8_t *buffer, size_t len, LpError *err)
{
	if (!pg_strong_random(buffer, len))
		return lp_fail(err, LP_ERR_INTERNAL, "could not generate random bytes");
	return true;
}
