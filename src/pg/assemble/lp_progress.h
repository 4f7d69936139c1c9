/*
 * lp_progress.h - what a running assembly or commit reports to other
 * sessions (the view lance_parts.progress).
 */
#ifndef LP_PROGRESS_H
#define LP_PROGRESS_H

typedef enum LpProgressPhase
{
	LP_PHASE_VALIDATING,
	LP_PHASE_COPYING,
	LP_PHASE_FINALIZING,
	LP_PHASE_COMMITTING,
	LP_PHASE_ENCODING,			/* write_file, write_part, write_dataset */
	LP_PHASE_REENCODING			/* bytes: of the parts re-encoded, pro rata of their rows */
} LpProgressPhase;

/*
 * Start reporting an operation of this backend (one at a time).  dataset
 * may be NULL (a raw concatenation).  The report disappears at
 * lp_progress_end, when the current memory context is reset or deleted
 * (also after an ERROR), and when the backend exits.
 */
extern void lp_progress_begin(const char *dataset, const char *target_file,
							  LpProgressPhase phase, int64 parts_total);

/* Enter a phase with its starting counters; always reported at once. */
extern void lp_progress_phase(LpProgressPhase phase, int64 parts_done, int64 bytes_done,
							  int64 bytes_total, int workers);

/* Counters; reported at most every LP_PROGRESS_INTERVAL_MS. */
extern void lp_progress_update(int64 parts_done, int64 bytes_done);

extern void lp_progress_end(void);

#define LP_PROGRESS_INTERVAL_MS 100

#endif							/* LP_PROGRESS_H */
