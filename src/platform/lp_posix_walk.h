/*
 * lp_posix_walk.h - reaching a directory below a trusted root without
 * following a symlink.
 *
 * Plain POSIX (openat, mkdirat, fstat), like lp_tree_removal, which walks
 * to what it removes with it, and the server's local store, which opens,
 * creates and lists everything below a dataset's root or base with it.
 */
#ifndef LP_POSIX_WALK_H
#define LP_POSIX_WALK_H

#include <sys/types.h>

#include "io/lp_storage.h"

/*
 * Accounting of the descriptors a walk holds; the server reports them to
 * fd.c.  acquire() returning false fails the open as EMFILE would.
 */
typedef struct LpDescriptorBudget
{
	bool		(*acquire) (void);
	void		(*release) (void);
} LpDescriptorBudget;

/*
 * Open the directory root/relative and return its descriptor (O_RDONLY,
 * close-on-exec, counted in budget, which may be NULL), or -1 with err set.
 * root is trusted: it may be reached through symlinks.  relative ("" for
 * root itself; otherwise names joined by '/', no ".", ".." or empty ones)
 * is walked component by component from root with O_NOFOLLOW | O_DIRECTORY,
 * so a symlink at any component is never followed: it fails the walk with
 * LP_ERR_INVALID_ARGUMENT naming it ("... is a symbolic link, not a
 * directory"), as does any other entry that is not a directory.  A missing
 * component is LP_ERR_NOT_FOUND, unless create is set: it is then made
 * with mkdirat (mode) and opened again without following, and the
 * directory opened must be the one just made (device and inode), so that
 * nothing swapped in between is used.  Other failures are LP_ERR_IO, or
 * LP_ERR_DISK_FULL for ENOSPC and EDQUOT; errno is that of the failure
 * (ELOOP or ENOTDIR for an entry that is not a directory).  It never
 * allocates.
 */
int			lp_posix_open_directory(const char *root, const char *relative, bool create,
									mode_t mode, const LpDescriptorBudget *budget,
									LpError *err);

/* Close a descriptor lp_posix_open_directory gave, releasing it from budget. */
void		lp_posix_close_directory(int fd, const LpDescriptorBudget *budget);

/* What an entry of mode is, for messages ("a symbolic link", "a FIFO", ...). */
const char *lp_posix_kind_name(mode_t mode);

#endif							/* LP_POSIX_WALK_H */
