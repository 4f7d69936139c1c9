/*
 * lp_tree_removal.h - removing a directory tree without following symlinks.
 *
 * Plain POSIX (openat, fdopendir, unlinkat), neither core (it does I/O) nor
 * PostgreSQL layer (no PostgreSQL headers): the server's local store and the
 * core tests' POSIX store both implement LpStoreOps.remove_tree with it.
 */
#ifndef LP_TREE_REMOVAL_H
#define LP_TREE_REMOVAL_H

#include "io/lp_storage.h"
#include "platform/lp_posix_walk.h"

/* Directories nested deeper than this below the removed one are not entered. */
#define LP_TREE_REMOVAL_MAX_DEPTH 64

/*
 * LpStoreOps.remove_tree over the local file system; budget may be NULL.
 * It never allocates, so it cannot fail half-way for lack of memory.
 */
bool		lp_posix_remove_tree(const char *root, const char *relative,
								 const LpDescriptorBudget *budget,
								 LpTreeRemoval *result, LpError *err);

/* LpStoreOps.remove_file over the local file system; budget may be NULL. */
bool		lp_posix_remove_file(const char *root, const char *relative,
								 const LpDescriptorBudget *budget, bool *removed, LpError *err);

#endif							/* LP_TREE_REMOVAL_H */
