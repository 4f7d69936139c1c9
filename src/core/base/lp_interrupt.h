/*
 * lp_interrupt.h - cancellation of long core loops.
 *
 * Core code must not longjmp, so it cannot call CHECK_FOR_INTERRUPTS itself.
 * Long loops poll lp_cancel_requested() instead and unwind with
 * LP_ERR_CANCELED; the embedding program then raises its own cancel error
 * (the PostgreSQL layer calls CHECK_FOR_INTERRUPTS after cleaning up).
 */
#ifndef LP_INTERRUPT_H
#define LP_INTERRUPT_H

#include <stdbool.h>

#include "base/lp_error.h"

typedef bool (*LpCancelCheck) (void);

/* Install the check; NULL means "never cancelled". */
void		lp_set_cancel_check(LpCancelCheck check);

/* True if the embedding program asked the current operation to stop. */
bool		lp_cancel_requested(void);

/* lp_cancel_requested(), filling err with LP_ERR_CANCELED when it is true. */
bool		lp_check_cancel(LpError *err);

#endif							/* LP_INTERRUPT_H */
