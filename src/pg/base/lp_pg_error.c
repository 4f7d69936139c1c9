/*
 * lp_pg_error.c - turning core error values into ereport calls.
 */
#include "postgres.h"

#include "miscadmin.h"

#include "base/lp_pg_error.h"

static int
lp_sqlstate(LpErrorCode code)
{
	switch (code)
	{
		case LP_ERR_CORRUPT:
			return ERRCODE_DATA_CORRUPTED;
		case LP_ERR_NOT_FOUND:
			return ERRCODE_UNDEFINED_FILE;
		case LP_ERR_INVALID_ARGUMENT:
			return ERRCODE_INVALID_PARAMETER_VALUE;
		case LP_ERR_IO:
			return ERRCODE_IO_ERROR;
		case LP_ERR_NO_MEMORY:
			return ERRCODE_OUT_OF_MEMORY;
		case LP_ERR_UNSUPPORTED:
			return ERRCODE_FEATURE_NOT_SUPPORTED;
		case LP_ERR_ALREADY_EXISTS:
			return ERRCODE_DUPLICATE_FILE;
		case LP_ERR_CONFLICT:
			return ERRCODE_T_R_SERIALIZATION_FAILURE;
		case LP_ERR_ALREADY_COMMITTED:
			return ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE;
		case LP_ERR_DISK_FULL:
			return ERRCODE_DISK_FULL;
		case LP_ERR_CANCELED:
			return ERRCODE_QUERY_CANCELED;
		case LP_ERR_NETWORK:
			return ERRCODE_CONNECTION_FAILURE;
		case LP_ERR_CREDENTIALS:
			return ERRCODE_INVALID_AUTHORIZATION_SPECIFICATION;
		case LP_ERR_ACCESS_DENIED:
			return ERRCODE_INSUFFICIENT_PRIVILEGE;
		case LP_OK:
		case LP_ERR_INTERNAL:
			break;
	}
	return ERRCODE_INTERNAL_ERROR;
}

void
lp_raise(const LpError *err)
{
	/*
	 * A cancel seen by the core is reported the way PostgreSQL reports it
	 * (statement timeout, pg_cancel_backend, termination), with our own
	 * error only if the interrupt was consumed meanwhile.
	 */
	if (err->code == LP_ERR_CANCELED)
		CHECK_FOR_INTERRUPTS();

	ereport(ERROR,
			errcode(lp_sqlstate(err->code)),
			errmsg_internal("%s", err->message),
			err->detail[0] != '\0' ? errdetail_internal("%s", err->detail) : 0);
	pg_unreachable();
}

void *
lp_require_memory(void *pointer)
{
	if (pointer == NULL)
		ereport(ERROR,
				errcode(ERRCODE_OUT_OF_MEMORY),
				errmsg("out of memory"));
	return pointer;
}
