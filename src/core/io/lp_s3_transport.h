/*
 * lp_s3_transport.h - the HTTP transport the S3 client is given, and the
 * configuration of an S3 endpoint.
 *
 * The client (io/lp_s3_client) forms and signs every request itself; a
 * transport only carries one request to the server and its answer back (the
 * PostgreSQL layer's is libcurl, the core tests' an in-process server).  It
 * adds no header that is signed, so it must send the headers given exactly as
 * given, including Host; it may add unsigned ones (Accept, User-Agent) and
 * must not add "Expect: 100-continue" or Transfer-Encoding.  A body, even an
 * empty one of a PUT or POST, is sent with its Content-Length (RGW answers
 * 411 otherwise).
 */
#ifndef LP_S3_TRANSPORT_H
#define LP_S3_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/lp_error.h"
#include "io/lp_s3_sign.h"

/* room for a response header value the client reads, its NUL included */
#define LP_S3_HEADER_VALUE_MAX 256

typedef struct LpS3HttpRequest
{
	const char *method;			/* "GET", "PUT", "POST", "DELETE", "HEAD" */
	/*
	 * The full URL, "http[s]://host[:port]/path[?query]", its path and query
	 * already encoded as they were signed: send it byte for byte, never
	 * re-encoded or normalized ("." and ".." segments stay).
	 */
	const char *url;
	const LpS3Pair *headers;	/* every header to send, "host" among them */
	size_t		header_count;
	const void *body;			/* the request body; NULL with body_len 0 for none */
	size_t		body_len;

	/*
	 * Where a successful (2xx) response body goes.  With response_buffer
	 * set (a ranged GET), the body is written there and must fit in
	 * response_capacity; a longer one fails the request with LP_ERR_CORRUPT.
	 * Without it, the body is collected into memory from lp_alloc, and one
	 * longer than response_body_max fails the request with LP_ERR_CORRUPT.
	 * A body of any other status (an Error document) is always collected,
	 * up to response_body_max, whatever response_buffer says.
	 */
	void	   *response_buffer;
	size_t		response_capacity;
	size_t		response_body_max;

	uint32_t	connect_timeout_ms; /* to establish the connection; 0: no limit */
	uint32_t	timeout_ms;		/* the whole request, transfer included; 0: no limit */

	/*
	 * A clean-up request (the abort of a multipart upload after an error or
	 * a cancel) that must reach the server although a cancel is pending: the
	 * transport does not poll lp_cancel_requested() for it, only its
	 * timeouts bound it.
	 */
	bool		ignore_cancel;
} LpS3HttpRequest;

/*
 * The answer of a server.  Header values are "" when the header was absent;
 * one too long for LP_S3_HEADER_VALUE_MAX fails the request with
 * LP_ERR_CORRUPT.  Names are matched without regard to case.
 */
typedef struct LpS3HttpResponse
{
	long		status;			/* the HTTP status of the final response */
	char		etag[LP_S3_HEADER_VALUE_MAX];	/* as sent, quotes included */
	char		request_id[LP_S3_HEADER_VALUE_MAX]; /* x-amz-request-id */
	char		content_range[LP_S3_HEADER_VALUE_MAX];	/* "bytes a-b/n" of a 206 */
	char		last_modified[LP_S3_HEADER_VALUE_MAX];	/* RFC 7231 IMF-fixdate */
	bool		has_content_length;
	uint64_t	content_length;	/* of the entity (HEAD: of the object) */

	/*
	 * The body received: in the request's response_buffer when it went there
	 * (body_in_buffer; then body is NULL), else lp_alloc'd (NULL when
	 * empty), freed by lp_s3_http_response_clear.
	 */
	char	   *body;
	size_t		body_len;
	bool		body_in_buffer;
} LpS3HttpResponse;

typedef struct LpS3Transport LpS3Transport;

/* A request a transport started and has not finished yet. */
typedef struct LpS3Transfer LpS3Transfer;

typedef struct LpS3TransportOps
{
	/*
	 * Perform one request and fill *response (zeroed by the caller), whatever
	 * the HTTP status: a 4xx or 5xx answer is a success of the transport.
	 * False with err when no complete answer came, and then *response holds
	 * nothing to free (a partial body is discarded):
	 *
	 * LP_ERR_NETWORK  the request failed at the network and sending it again
	 *                 may succeed: connection refused or reset, a connection
	 *                 dropped before the whole answer came, name resolution,
	 *                 a timeout.  The client retries these.
	 * LP_ERR_CANCELED lp_cancel_requested() became true.  The transport polls
	 *                 it while connecting and transferring at least every
	 *                 100 ms, and stops the transfer at once (not for a
	 *                 request with ignore_cancel).
	 * anything else   retrying cannot help (LP_ERR_NO_MEMORY, LP_ERR_CORRUPT
	 *                 for a body or header over its bound, LP_ERR_IO for a
	 *                 TLS verification failure or a malformed URL).
	 *
	 * Messages name the URL (which holds no credentials) and what failed;
	 * they never quote header values.
	 */
	bool		(*perform) (LpS3Transport *transport, const LpS3HttpRequest *request,
							LpS3HttpResponse *response, LpError *err);

	/*
	 * Wait delay_ms before a retry, polling lp_cancel_requested() as
	 * perform() does: false with LP_ERR_CANCELED when it became true
	 * (never for the retry of a request with ignore_cancel).
	 */
	bool		(*wait) (LpS3Transport *transport, uint32_t delay_ms, bool ignore_cancel,
						 LpError *err);

	/*
	 * Requests in flight together (read-ahead), all four set or all NULL
	 * (then the client sends a started call when it is finished).  start
	 * sends request without waiting for the answer: request, what it points
	 * to and *response stay the caller's and valid until finish or abort,
	 * exactly one of which follows every start that returned true.
	 * progress moves every started transfer on without waiting; the caller
	 * calls it between pieces of its own work, as no thread runs the
	 * transfers.  finish waits for transfer's end (polling the cancel hook
	 * as perform does), fills *response and returns as perform does; abort
	 * stops it, leaving nothing in *response.  Both free transfer.
	 */
	bool		(*start) (LpS3Transport *transport, const LpS3HttpRequest *request,
						  LpS3HttpResponse *response, LpS3Transfer **transfer, LpError *err);
	void		(*progress) (LpS3Transport *transport);
	bool		(*finish) (LpS3Transport *transport, LpS3Transfer *transfer, LpError *err);
	void		(*abort) (LpS3Transport *transport, LpS3Transfer *transfer);
} LpS3TransportOps;

/* Transports embed this as their first member; their creator frees them. */
struct LpS3Transport
{
	const LpS3TransportOps *ops;
};

/* Free an lp_alloc'd body and zero *response. */
void		lp_s3_http_response_clear(LpS3HttpResponse *response);

typedef enum LpS3UrlStyle
{
	LP_S3_URL_PATH,				/* http://host/bucket/key */
	LP_S3_URL_VIRTUAL			/* http://bucket.host/key */
} LpS3UrlStyle;

/*
 * An S3 endpoint and how the client talks to it.  The strings are the
 * caller's and must outlive every client made from the configuration.
 */
typedef struct LpS3Config
{
	/*
	 * "scheme://host[:port]" without a path, or NULL for AWS's endpoint of
	 * the region (https://s3.REGION.amazonaws.com).
	 */
	const char *endpoint;
	const char *region;			/* signed into the credential scope */
	LpS3UrlStyle url_style;
	bool		allow_http;		/* whether an http:// endpoint is accepted */
	LpS3Credentials credentials;

	/*
	 * Retries of a request after its first attempt, for LP_ERR_NETWORK,
	 * 5xx and 429 answers; waits grow from retry_base_delay_ms doubling up
	 * to retry_max_delay_ms, each drawn at random between half and all of
	 * its bound ("equal jitter").
	 */
	uint32_t	max_retries;
	uint32_t	retry_base_delay_ms;
	uint32_t	retry_max_delay_ms;
	uint32_t	connect_timeout_ms; /* passed to every request */
	uint32_t	request_timeout_ms; /* passed to every request */
} LpS3Config;

#endif							/* LP_S3_TRANSPORT_H */
