/*
 * lp_pg_s3_curl.c - the S3 transport of the server: libcurl
 * (platform/lp_curl_http) with one handle per process, kept for the process's
 * life so its connection is reused between requests and statements; the
 * descriptor of that connection accounted for with fd.c; requests shown as
 * waits in pg_stat_activity; retries waiting on the latch.  Started requests
 * (read-ahead) get a connection each as far as fd.c grants descriptors for
 * them, up to LP_PG_S3_READAHEAD_CONNECTIONS; beyond, libcurl runs them one
 * after another on the connections there are.  Nothing raises
 * while a request runs (the core calls in): only the creation of the handle
 * can.
 */
#include "postgres.h"

#include <curl/curl.h>

#include "miscadmin.h"
#include "pgstat.h"
#include "storage/fd.h"
#include "storage/latch.h"
#include "utils/timestamp.h"

#include "base/lp_interrupt.h"
#include "platform/lp_curl_http.h"
#include "store/lp_pg_s3_curl.h"

typedef struct CurlTransport
{
	LpS3Transport base;
	bool		allow_http;
} CurlTransport;

/* connections beyond the first that started requests may open at once */
#define LP_PG_S3_READAHEAD_CONNECTIONS 8

static LpCurl *backend_curl;
static unsigned readahead_descriptors;	/* acquired with AcquireExternalFD, kept */
static unsigned started_transfers;	/* not finished or aborted yet */

static bool curl_perform(LpS3Transport *transport, const LpS3HttpRequest *request,
						 LpS3HttpResponse *response, LpError *err);
static bool curl_wait(LpS3Transport *transport, uint32_t delay_ms, bool ignore_cancel,
					  LpError *err);
static bool curl_start(LpS3Transport *transport, const LpS3HttpRequest *request,
					   LpS3HttpResponse *response, LpS3Transfer **transfer, LpError *err);
static void curl_progress(LpS3Transport *transport);
static bool curl_finish(LpS3Transport *transport, LpS3Transfer *transfer, LpError *err);
static void curl_abort(LpS3Transport *transport, LpS3Transfer *transfer);

static const LpS3TransportOps curl_ops = {
	.perform = curl_perform, .wait = curl_wait,
	.start = curl_start, .progress = curl_progress, .finish = curl_finish, .abort = curl_abort
};
static CurlTransport https_only = {{&curl_ops}, false};
static CurlTransport http_allowed = {{&curl_ops}, true};

LpS3Transport *
lp_pg_s3_curl_transport(bool allow_http)
{
	static bool curl_initialized;

	if (backend_curl == NULL)
	{
		if (!curl_initialized)
		{
			if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
				ereport(ERROR,
						errcode(ERRCODE_INSUFFICIENT_RESOURCES),
						errmsg("could not initialize libcurl"));
			curl_initialized = true;
		}
		/* the connection kept between requests is a descriptor fd.c does not own */
		if (!AcquireExternalFD())
			ereport(ERROR,
					errcode(ERRCODE_INSUFFICIENT_RESOURCES),
					errmsg("could not open a connection for S3 requests: too many open files"),
					errhint("Raise max_files_per_process or the process's descriptor limit."));
		backend_curl = lp_curl_create();
		if (backend_curl == NULL)
		{
			ReleaseExternalFD();
			ereport(ERROR,
					errcode(ERRCODE_OUT_OF_MEMORY),
					errmsg("out of memory"),
					errdetail("libcurl could not create a handle."));
		}
	}
	return allow_http ? &http_allowed.base : &https_only.base;
}

static bool
curl_perform(LpS3Transport *base, const LpS3HttpRequest *request,
			 LpS3HttpResponse *response, LpError *err)
{
	CurlTransport *transport = (CurlTransport *) base;
	bool		done;

	pgstat_report_wait_start(PG_WAIT_EXTENSION);
	done = lp_curl_perform(backend_curl, transport->allow_http, request, response, err);
	pgstat_report_wait_end();
	return done;
}

/* A retry's wait: on the latch, so that a cancel ends it at once. */
static bool
curl_wait(LpS3Transport *transport, uint32_t delay_ms, bool ignore_cancel, LpError *err)
{
	TimestampTz end = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), delay_ms);

	for (;;)
	{
		long		remaining;

		if (!ignore_cancel && lp_cancel_requested())
			return lp_fail(err, LP_ERR_CANCELED, "canceled while waiting to retry an S3 request");
		remaining = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), end);
		if (remaining <= 0)
			return true;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 Min(remaining, LP_CURL_POLL_INTERVAL_MS), PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}

/*
 * Each started request may hold a connection while a plain one needs
 * another: as many descriptors beyond the first as requests are started,
 * when fd.c grants them (never raising: the core calls in).
 */
static bool
curl_start(LpS3Transport *base, const LpS3HttpRequest *request,
		   LpS3HttpResponse *response, LpS3Transfer **transfer, LpError *err)
{
	CurlTransport *transport = (CurlTransport *) base;

	if (started_transfers + 1 > readahead_descriptors &&
		readahead_descriptors < LP_PG_S3_READAHEAD_CONNECTIONS && AcquireExternalFD())
	{
		readahead_descriptors++;
		lp_curl_set_max_connections(backend_curl, 1 + readahead_descriptors);
	}
	if (!lp_curl_start(backend_curl, transport->allow_http, request, response,
					   (LpCurlTransfer **) transfer, err))
		return false;
	started_transfers++;
	return true;
}

static void
curl_progress(LpS3Transport *transport)
{
	lp_curl_progress(backend_curl);
}

static bool
curl_finish(LpS3Transport *transport, LpS3Transfer *transfer, LpError *err)
{
	bool		done;

	started_transfers--;
	pgstat_report_wait_start(PG_WAIT_EXTENSION);
	done = lp_curl_finish(backend_curl, (LpCurlTransfer *) transfer, err);
	pgstat_report_wait_end();
	return done;
}

static void
curl_abort(LpS3Transport *transport, LpS3Transfer *transfer)
{
	started_transfers--;
	lp_curl_abort(backend_curl, (LpCurlTransfer *) transfer);
}
