/*
 * lp_copy_to.h - COPY ... TO with format 'lance' (lp_copy_to.c).
 */
#ifndef LP_COPY_TO_H
#define LP_COPY_TO_H

/* Install the ProcessUtility hook when loaded by shared_preload_libraries (from _PG_init). */
extern void LpCopyToInit(void);

#endif							/* LP_COPY_TO_H */
