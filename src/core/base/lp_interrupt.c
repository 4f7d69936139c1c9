/*
 * lp_interrupt.c - cancellation hook of the core.
 */
#include "base/lp_interrupt.h"

static LpCancelCheck cancel_check;

void
lp_set_cancel_check(LpCancelCheck check)
{
	cancel_check = check;
}

bool
lp_cancel_requested(void)
{
	return cancel_check != NULL && cancel_check();
}

bool
lp_check_cancel(LpError *err)
{
	if (!lp_cancel_requested())
		return false;
	lp_fail(err, LP_ERR_CANCELED, "canceling operation on user request");
	return true;
}
