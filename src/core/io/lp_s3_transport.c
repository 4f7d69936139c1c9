/*
 * lp_s3_transport.c - what every S3 transport's caller shares: freeing a
 * response.
 */
#include <string.h>

#include "base/lp_alloc.h"
#include "io/lp_s3_transport.h"

void
lp_s3_http_response_clear(LpS3HttpResponse *response)
{
	if (response->body)
		lp_free(response->body);
	memset(response, 0, sizeof(*response));
}
