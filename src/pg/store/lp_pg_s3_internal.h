/*
 * lp_pg_s3_internal.h - what the server's S3 store (lp_pg_s3.c), its inputs
 * (lp_pg_s3_input.c) and its outputs (lp_pg_s3_output.c) share: wrappers of
 * the core's that are released with the memory context they were made in
 * (see lp_pg_s3.c).
 */
#ifndef LP_PG_S3_INTERNAL_H
#define LP_PG_S3_INTERNAL_H

#include "io/lp_storage.h"
#include "utils/palloc.h"

/*
 * A zeroed wrapper of size bytes in the current memory context whose
 * MemoryContextCallback (at cleanup_offset) calls func on it when that
 * context goes; NULL with err set when out of memory, and the caller
 * releases what it would have wrapped.  Nothing raises before the caller
 * has filled in the wrapper, so the callback never sees it half made.
 */
extern void *lp_pg_s3_alloc_wrapper(Size size, Size cleanup_offset,
									MemoryContextCallbackFunction func,
									const char *what, const char *path, LpError *err);

/*
 * The core's input wrapped to be closed when the current memory context
 * goes, and every call into it run in that context; NULL when core is NULL
 * or out of memory (core closed, err set).
 */
extern LpInput *lp_pg_s3_wrap_input(LpInput *core, const char *path, LpError *err);

/*
 * The core's input an input of this store wraps (the core copies those on
 * the server); any other input as it is.
 */
extern LpInput *lp_pg_s3_core_input(LpInput *input);

/*
 * The core's output wrapped to be aborted when the current memory context
 * goes unpublished, and every call into it run in that context; NULL when
 * core is NULL or out of memory (core aborted, err set).
 */
extern LpOutput *lp_pg_s3_wrap_output(LpOutput *core, const char *path, LpError *err);

#endif							/* LP_PG_S3_INTERNAL_H */
