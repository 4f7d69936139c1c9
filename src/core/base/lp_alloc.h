/*
 * lp_alloc.h - allocation hook of the core.
 *
 * The core never calls malloc directly.  The embedding program installs an
 * allocator once (the PostgreSQL layer points it at the current memory
 * context with MCXT_ALLOC_NO_OOM, so failures come back as NULL instead of a
 * longjmp through core frames).  The default is malloc/free.
 */
#ifndef LP_ALLOC_H
#define LP_ALLOC_H

#include <stddef.h>

typedef struct LpAllocator
{
	void	   *(*alloc) (size_t size, void *context);	/* NULL on failure */
	void		(*free) (void *pointer, void *context); /* never given NULL */
	void	   *context;

	/*
	 * Optional: pointer (never NULL) grown or shrunk to size bytes, its first
	 * old_size bytes (no more than it holds) kept; NULL on failure, the block
	 * left as it was.  Without it lp_realloc takes a new block and
	 * copies.  A growing buffer resized in place (mremap) is neither copied
	 * nor faulted in again.
	 */
	void	   *(*resize) (void *pointer, size_t old_size, size_t size, void *context);
} LpAllocator;

/* Install an allocator; NULL restores malloc/free. */
void		lp_set_allocator(const LpAllocator *allocator);

void	   *lp_alloc(size_t size);
void	   *lp_alloc0(size_t size);
/* count * size bytes, zeroed, with overflow check; NULL on overflow or failure */
void	   *lp_alloc_array(size_t count, size_t size);
/*
 * The same, not zeroed: for arrays written before they are read, where
 * zeroing a large one costs more than the work on it (every page faulted in).
 */
void	   *lp_alloc_array_unzeroed(size_t count, size_t size);
void		lp_free(void *pointer);
/*
 * pointer (NULL: none) resized to size keeping its first old_size bytes;
 * NULL on failure, pointer untouched.
 */
void	   *lp_realloc(void *pointer, size_t old_size, size_t size);
/* A copy of len bytes (a valid pointer even for len 0); NULL on failure. */
void	   *lp_memdup(const void *data, size_t len);
char	   *lp_strdup(const char *s);

/*
 * Size of the last request the allocator refused, 0 after it was taken (or
 * if none failed); lp_fail() reports it with every LP_ERR_NO_MEMORY.
 */
size_t		lp_alloc_take_failed_size(void);

#endif							/* LP_ALLOC_H */
