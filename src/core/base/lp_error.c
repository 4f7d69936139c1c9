/*
 * lp_error.c - errors as values.
 *
 * Messages longer than the buffer are cut off; vsnprintf always terminates
 * them, so a long path in a message can never overrun the buffer.
 */
#include <stdarg.h>
#include <stdio.h>

#include "base/lp_alloc.h"
#include "base/lp_error.h"

bool
lp_fail(LpError *err, LpErrorCode code, const char *fmt,...)
{
	va_list		args;

	if (err == NULL)
		return false;
	err->code = code;
	va_start(args, fmt);
	vsnprintf(err->message, sizeof(err->message), fmt, args);
	va_end(args);
	err->detail[0] = '\0';
	if (code == LP_ERR_NO_MEMORY)
	{
		size_t		failed_size = lp_alloc_take_failed_size();

		if (failed_size > 0)
			lp_error_detail(err, "An allocation of %zu bytes failed.", failed_size);
	}
	return false;
}

void
lp_error_detail(LpError *err, const char *fmt,...)
{
	va_list		args;

	if (err == NULL)
		return;
	va_start(args, fmt);
	vsnprintf(err->detail, sizeof(err->detail), fmt, args);
	va_end(args);
}

void
lp_error_clear(LpError *err)
{
	if (err == NULL)
		return;
	err->code = LP_OK;
	err->message[0] = '\0';
	err->detail[0] = '\0';
}

const char *
lp_error_code_name(LpErrorCode code)
{
	switch (code)
	{
		case LP_OK:
			return "ok";
		case LP_ERR_CORRUPT:
			return "corrupt";
		case LP_ERR_NOT_FOUND:
			return "not found";
		case LP_ERR_INVALID_ARGUMENT:
			return "invalid argument";
		case LP_ERR_IO:
			return "i/o error";
		case LP_ERR_NO_MEMORY:
			return "out of memory";
		case LP_ERR_UNSUPPORTED:
			return "unsupported";
		case LP_ERR_ALREADY_EXISTS:
			return "already exists";
		case LP_ERR_CONFLICT:
			return "conflict";
		case LP_ERR_ALREADY_COMMITTED:
			return "already committed";
		case LP_ERR_DISK_FULL:
			return "disk full";
		case LP_ERR_CANCELED:
			return "canceled";
		case LP_ERR_NETWORK:
			return "network failure";
		case LP_ERR_CREDENTIALS:
			return "credentials rejected";
		case LP_ERR_ACCESS_DENIED:
			return "access denied";
		case LP_ERR_INTERNAL:
			return "internal error";
	}
	return "unknown error";
}
