/*
 * lp_write_workers.h - the files of a write encoded by parallel workers:
 * the leader reads the query's rows into batches and hands whole batches
 * to the worker that owns the file they belong to.
 */
#ifndef LP_WRITE_WORKERS_H
#define LP_WRITE_WORKERS_H

#include "format/lp_file.h"
#include "format/lp_schema.h"
#include "format/lp_values.h"
#include "io/lp_storage.h"

/* GUC lance_parts.write_workers */
extern int	lp_write_workers;

typedef struct LpWriteWorkers LpWriteWorkers;

/* Define the GUC above (from _PG_init). */
extern void LpWriteWorkersInit(void);

/*
 * Start up to lance_parts.write_workers parallel workers that encode files
 * of schema and version into outputs of store (what names the write in
 * messages).  NULL, with a NOTICE when workers were wanted, when
 * the write runs serially: no worker configured or free, or a store whose
 * outputs other processes cannot open.  Enters parallel mode until
 * lp_write_workers_end.
 */
extern LpWriteWorkers *lp_write_workers_start(LpStore *store, const LpSchema *schema,
											  LpFileVersion version, const char *what);

/*
 * The next file, written into output (created by the caller, which keeps
 * it) by the next worker in turn; owner is the caller's, given back by
 * lp_write_workers_next_done.
 */
extern void lp_write_workers_open_file(LpWriteWorkers *workers, LpOutput *output, void *owner);

/* Hand a batch of the open file to its worker (waits while its queue is full). */
extern void lp_write_workers_write(LpWriteWorkers *workers, const LpArray *const *arrays,
								   uint32 num_arrays);

/* The open file has all its rows: its worker finishes it. */
extern void lp_write_workers_close_file(LpWriteWorkers *workers);

/*
 * The earliest closed file whose worker finished it, in the order the
 * files were opened: true with its owner, output (to publish) and size.
 * Waits for it when wait is true or when too many files are in flight;
 * false when no finished file is left to give.
 */
extern bool lp_write_workers_next_done(LpWriteWorkers *workers, bool wait, void **owner,
									   LpOutput **output, uint64 *size_bytes);

/* Number of workers encoding. */
extern int	lp_write_workers_count(const LpWriteWorkers *workers);

/* Stop the workers (every file must have been given back) and leave parallel mode. */
extern void lp_write_workers_end(LpWriteWorkers *workers);

#endif							/* LP_WRITE_WORKERS_H */
