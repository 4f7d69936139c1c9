/*
 * lp_posix_files.h - what is at a local path, its canonical name, and
 * whether two paths name one file.
 *
 * Plain POSIX (lstat, stat, realpath), like lp_tree_removal: the server's
 * local store and the core tests' POSIX store both implement
 * LpStoreOps.stat, .canonical and .same_object with it.
 */
#ifndef LP_POSIX_FILES_H
#define LP_POSIX_FILES_H

#include "io/lp_storage.h"

/* LpStoreOps.stat over the local file system (ENOENT is LP_OBJECT_ABSENT). */
bool		lp_posix_stat(const char *path, bool follow_symlinks, LpStat *result,
						  LpError *err);

/*
 * The same for the entry name of the directory open at directory
 * (AT_FDCWD: name is a path); path names it in messages.
 */
bool		lp_posix_stat_at(int directory, const char *name, const char *path,
							 bool follow_symlinks, LpStat *result, LpError *err);

/* LpStoreOps.canonical over the local file system (realpath). */
char	   *lp_posix_canonical(const char *path, const char *what, LpError *err);

/* LpStoreOps.same_object over the local file system (device and inode). */
bool		lp_posix_same_file(const char *path_a, const char *path_b);

#endif							/* LP_POSIX_FILES_H */
