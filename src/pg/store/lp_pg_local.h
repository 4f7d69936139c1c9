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

/*
 * The same, except that every path below root (a resolved dataset root or
 * base path) is reached from root without following a symlink at any
 * component, its final name included: a symlink there is an error naming
 * it (LP_ERR_INVALID_ARGUMENT), for reads as for writes.  root itself and
 * paths elsewhere are taken as given, as by lp_local_store.
 */
extern LpStore *lp_local_store_below(const char *root);

/* Whether store is the local store, plain or below a root. */
extern bool lp_is_local_store(const LpStore *store);

#endif							/* LP_PG_LOCAL_H */
