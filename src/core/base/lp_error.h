/*
 * lp_error.h - errors as values for the PostgreSQL-independent core.
 *
 * Every core function that can fail takes an LpError * and returns false (or
 * NULL) after filling it.  The PostgreSQL layer maps the code to a SQLSTATE.
 */
#ifndef LP_ERROR_H
#define LP_ERROR_H

#include <stdbool.h>
#include <stddef.h>

typedef enum LpErrorCode
{
	LP_OK = 0,
	LP_ERR_CORRUPT,				/* damaged or malformed file (XX001) */
	LP_ERR_NOT_FOUND,			/* file does not exist (58P01) */
	LP_ERR_INVALID_ARGUMENT,	/* caller passed something unusable (22023) */
	LP_ERR_IO,					/* read/write failure (58030) */
	LP_ERR_NO_MEMORY,			/* allocation hook returned NULL (53200) */
	LP_ERR_UNSUPPORTED,			/* valid but not handled (0A000) */
	LP_ERR_ALREADY_EXISTS,		/* a file to be created exists (58P02) */
	LP_ERR_CONFLICT,			/* a concurrent commit won; retrying may succeed (40001) */
	LP_ERR_ALREADY_COMMITTED,	/* a data file is part of a version already (55000) */
	LP_ERR_DISK_FULL,			/* no space or quota left (53100) */
	LP_ERR_CANCELED,			/* lp_cancel_requested() said stop */
	LP_ERR_NETWORK,				/* a server could not be reached or dropped the connection (08006) */
	LP_ERR_CREDENTIALS,			/* a server rejected the credentials or the signature (28000) */
	LP_ERR_ACCESS_DENIED,		/* a server refused access to an object (42501) */
	LP_ERR_INTERNAL				/* a core invariant failed (XX000) */
} LpErrorCode;

#define LP_ERROR_MESSAGE_LEN 512

typedef struct LpError
{
	LpErrorCode code;
	char		message[LP_ERROR_MESSAGE_LEN];	/* PostgreSQL style: lowercase, no period */
	char		detail[LP_ERROR_MESSAGE_LEN];	/* optional full sentence, "" if none */
} LpError;

/* Fill *err (if not NULL) and return false, so callers can "return lp_fail(...)". */
bool		lp_fail(LpError *err, LpErrorCode code, const char *fmt,...)
			__attribute__((format(printf, 3, 4)));

/* Add a detail sentence to an error that is already set. */
void		lp_error_detail(LpError *err, const char *fmt,...)
			__attribute__((format(printf, 2, 3)));

void		lp_error_clear(LpError *err);

const char *lp_error_code_name(LpErrorCode code);

#endif							/* LP_ERROR_H */
