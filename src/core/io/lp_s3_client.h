/*
 * lp_s3_client.h - S3 requests: addressed, signed, sent through an injected
 * transport with bounded retries, and their failures turned into LpErrors.
 *
 * Every request is signed with io/lp_s3_sign (the payload hash of its body
 * included).  A request is sent again, after a backoff wait with jitter, when
 * the transport reports LP_ERR_NETWORK or the server answers 5xx, 429 or an
 * Error whose code says "retry" (SlowDown, InternalError,
 * ConditionalRequestConflict), at most LpS3Config.max_retries times.
 * Messages name the request's URL (which never holds credentials), the HTTP
 * status, the S3 error code and the request id.
 */
#ifndef LP_S3_CLIENT_H
#define LP_S3_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/lp_error.h"
#include "io/lp_s3_transport.h"
#include "io/lp_s3_xml.h"

/* the largest S3 key, in bytes */
#define LP_S3_MAX_KEY_LEN 1024

typedef struct LpS3Client LpS3Client;

/*
 * A client of the endpoint config describes, sending through transport
 * (both the caller's; they must outlive the client).  LP_ERR_INVALID_ARGUMENT
 * for an endpoint that is not "http[s]://host[:port]", plain HTTP without
 * allow_http, a missing region or credentials.
 */
LpS3Client *lp_s3_client_create(const LpS3Config *config, LpS3Transport *transport,
								LpError *err);

/* Free the client; it clears its cached signing key. */
void		lp_s3_client_free(LpS3Client *client);

/*
 * Whether both clients send to the same endpoint (and region, URL style)
 * with the same credentials: then a request of one may name the other's
 * objects, as UploadPartCopy names its source.
 */
bool		lp_s3_client_same_account(const LpS3Client *a, const LpS3Client *b);

/* One S3 request. */
typedef struct LpS3Call
{
	const char *method;
	const char *bucket;
	const char *key;			/* "" for a request on the bucket itself */
	const LpS3Pair *query;		/* not encoded; a NULL value for "?uploads" */
	size_t		query_count;
	const LpS3Pair *headers;	/* signed and sent besides host and the signer's */
	size_t		header_count;
	const void *body;
	size_t		body_len;
	/* see LpS3HttpRequest: a 2xx body goes here when set */
	void	   *response_buffer;
	size_t		response_capacity;
	size_t		response_body_max;	/* 0: LP_S3_XML_MAX_BODY */
	/*
	 * The server may answer 200 with an Error body (CompleteMultipartUpload,
	 * UploadPartCopy): such an answer is a failure, retried like the status
	 * its code stands for.
	 */
	bool		error_body_on_success;
	bool		ignore_cancel;	/* see LpS3HttpRequest */
} LpS3Call;

/*
 * Send call, retrying as described above, and fill *response (zeroed here)
 * with the last answer: true whatever its status, so the caller decides
 * what a 404 or 412 means; check lp_s3_succeeded.  False with err (and
 * nothing in *response) when no answer came after the retries
 * (LP_ERR_NETWORK), on a cancel, or when the request cannot be formed.
 */
bool		lp_s3_call(LpS3Client *client, const LpS3Call *call,
					   LpS3HttpResponse *response, LpError *err);

/*
 * A call sent without waiting for its answer (read-ahead).  lp_s3_call_start
 * signs call and hands it to the transport; call (copied) and what it points
 * to (headers, body, response buffer) stay the caller's until
 * lp_s3_call_finish or lp_s3_call_abort, exactly one of which must follow a
 * start that returned true.  finish waits for the answer and goes on as
 * lp_s3_call does (the same retries, each signed anew); abort stops the
 * request.  Both free pending.  Over a transport without start, the call is
 * sent when it is finished.
 */
typedef struct LpS3Pending LpS3Pending;

bool		lp_s3_call_start(LpS3Client *client, const LpS3Call *call, LpS3Pending **pending,
							 LpError *err);
bool		lp_s3_call_finish(LpS3Client *client, LpS3Pending *pending,
							  LpS3HttpResponse *response, LpError *err);
void		lp_s3_call_abort(LpS3Client *client, LpS3Pending *pending);

/* Let the started calls progress (LpS3TransportOps.progress), if any. */
void		lp_s3_client_progress(LpS3Client *client);

/* Whether a response of call is a success: 2xx without an Error body. */
bool		lp_s3_succeeded(const LpS3Call *call, const LpS3HttpResponse *response);

/*
 * Fill err for a response that did not succeed and return false: the code
 * from the status and the S3 error code (LP_ERR_CREDENTIALS for a
 * rejected signature or key, LP_ERR_ACCESS_DENIED, LP_ERR_NOT_FOUND for a
 * missing bucket, key or upload, LP_ERR_CONFLICT for a failed precondition,
 * LP_ERR_IO otherwise), a message naming what (e.g. "could not read"), the
 * URL, the status, the code and the request id, and the server's message as
 * detail.
 */
bool		lp_s3_fail(LpS3Client *client, const LpS3Call *call,
					   const LpS3HttpResponse *response, const char *what, LpError *err);

/*
 * lp_s3_call, then lp_s3_fail unless the answer succeeded: true only for a
 * success (the response is then the caller's to clear).
 */
bool		lp_s3_call_checked(LpS3Client *client, const LpS3Call *call, const char *what,
							   LpS3HttpResponse *response, LpError *err);

/*
 * One page of a listing of bucket: a GET with query (query_count pairs),
 * its body parsed as a document of kind into *document, which the caller
 * frees (lp_s3_xml_free).  what and prefix name the listing in messages
 * ("could not <what> \"s3://bucket/prefix\""); an Error body is LP_ERR_IO.
 */
bool		lp_s3_list_page(LpS3Client *client, const char *bucket, const char *prefix,
							const LpS3Pair *query, size_t query_count, const char *what,
							LpS3DocumentKind kind, LpS3Document **document, LpError *err);

/* The URL of call as it is sent (lp_alloc'd), for messages; NULL when out of memory. */
char	   *lp_s3_call_url(LpS3Client *client, const LpS3Call *call);

/* Seconds since 1970 of an IMF-fixdate ("Tue, 01 Dec 2026 22:20:29 GMT"); false if malformed. */
bool		lp_s3_parse_http_date(const char *text, int64_t *seconds);

#endif							/* LP_S3_CLIENT_H */
