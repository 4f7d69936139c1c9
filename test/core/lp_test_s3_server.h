/*
 * lp_test_s3_server.h - an S3 server inside the test process, reached as an
 * LpS3Transport: enough of S3 to test the client and the store without a
 * network (objects, ranged GET, HEAD, conditional PUT, DELETE,
 * ListObjectsV2 with continuation, multipart uploads with UploadPartCopy and
 * the 5 MiB minimum, ListMultipartUploads with markers), checking on every request that it is signed (the
 * signature recomputed from what was received), and answering with injected
 * faults where a test asks for them.
 */
#ifndef LP_TEST_S3_SERVER_H
#define LP_TEST_S3_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "io/lp_s3_transport.h"

#define LP_TEST_S3_HOST "s3.test:9000"
#define LP_TEST_S3_ENDPOINT "http://" LP_TEST_S3_HOST
#define LP_TEST_S3_BUCKET "bucket"
#define LP_TEST_S3_ACCESS_KEY "AKIDTEST"
#define LP_TEST_S3_SECRET "test-secret-key"
#define LP_TEST_S3_MAX_WAITS 64

typedef enum LpTestS3Fault
{
	LP_TEST_S3_DROP,			/* the connection drops: LP_ERR_NETWORK */
	LP_TEST_S3_DROP_ANSWER,		/* served, then the answer is lost: LP_ERR_NETWORK */
	LP_TEST_S3_SLOW_DOWN,		/* 503 SlowDown */
	LP_TEST_S3_INTERNAL_ERROR,	/* 500 InternalError */
	LP_TEST_S3_TOO_MANY,		/* 429 without a body */
	LP_TEST_S3_CONDITIONAL_CONFLICT,	/* 409 ConditionalRequestConflict */
	LP_TEST_S3_BAD_REQUEST,		/* 400 InvalidRequest: not retried */
	LP_TEST_S3_CANCEL			/* a cancel arrives during the transfer */
} LpTestS3Fault;

typedef struct LpTestS3Server LpTestS3Server;

LpTestS3Server *lp_test_s3_server_create(void);
void		lp_test_s3_server_free(LpTestS3Server *server);
LpS3Transport *lp_test_s3_transport(LpTestS3Server *server);

/*
 * Whether the transport lacks the start/finish pair (serial) or has it (the
 * default: a started request is served at the next progress or at its
 * finish, whichever comes first).
 */
void		lp_test_s3_server_serial(LpTestS3Server *server, bool serial);

/* A configuration reaching the server, with max_retries 3 and short waits. */
LpS3Config	lp_test_s3_config(void);

/*
 * Answer the next count requests whose method is method (NULL: any) with
 * fault instead of serving them.
 */
void		lp_test_s3_server_fault(LpTestS3Server *server, const char *method,
									LpTestS3Fault fault, int count);

/* Whether a cancel is pending (set by LP_TEST_S3_CANCEL; the test clears it). */
extern bool lp_test_s3_cancel_pending;
bool		lp_test_s3_cancel_check(void);

typedef struct LpTestS3Counts
{
	unsigned	requests;		/* every request, faults included */
	unsigned	gets;			/* GETs of objects served (not listings) */
	unsigned	heads;
	unsigned	puts;			/* PutObject served */
	unsigned	part_uploads;	/* UploadPart served */
	unsigned	part_copies;	/* UploadPartCopy served */
	unsigned	object_copies;	/* CopyObject served */
	unsigned	completes;
	unsigned	aborts;
	unsigned	lists;
	unsigned	unsigned_requests;	/* requests whose signature did not check */
	unsigned	aborts_while_canceled;	/* aborts received with a cancel pending */
	unsigned	waits;			/* LpS3TransportOps.wait calls */
	unsigned	transfers_started;	/* LpS3TransportOps.start calls */
	unsigned	transfers_aborted;
	unsigned	progress_calls;
	uint32_t	wait_ms[LP_TEST_S3_MAX_WAITS];
	char		last_range[128];	/* the Range header of the last GET */
	char		last_url[1024];
	char		last_host[256];
} LpTestS3Counts;

const LpTestS3Counts *lp_test_s3_counts(LpTestS3Server *server);
void		lp_test_s3_reset_counts(LpTestS3Server *server);

/* Transfers started and neither finished nor aborted. */
size_t		lp_test_s3_open_transfers(LpTestS3Server *server);

/* Multipart uploads started and neither completed nor aborted. */
size_t		lp_test_s3_open_uploads(LpTestS3Server *server);

/* The bytes of the parts those uploads hold. */
uint64_t	lp_test_s3_open_upload_bytes(LpTestS3Server *server);

/* Store an object directly; its bytes are copied. */
void		lp_test_s3_put(LpTestS3Server *server, const char *key, const void *data, size_t len);

/* The bytes of an object, or NULL (with *len 0) when absent. */
const uint8_t *lp_test_s3_get(LpTestS3Server *server, const char *key, size_t *len);

#endif							/* LP_TEST_S3_SERVER_H */
