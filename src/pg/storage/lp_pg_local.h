/*
 * lp_pg_local.h - the local-file store (lp_pg_local.c, on fd.c).
 *
 * Only lp_pg_storage.c names it: everything else gets its store from a URI
 * (lp_store_for_uri), so that other stores plug in beside it.
 */
#ifndef LP_PG_LOCAL_H
#define LP_PG_LOCAL_H

#include "io/lp_storage.h"

/* The local filesystem as a store; keys are local paths. */
extern LpStore *lp_local_store(void);

#endif							/* LP_PG_LOCAL_H */
