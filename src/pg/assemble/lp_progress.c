/*
 * lp_progress.c - progress of running assemblies and commits, for the view
 * lance_parts.progress.
 *
 * Each backend that runs an operation keeps one small fixed-size record in
 * the file pg_stat_tmp/lance_parts.<pid>.progress and replaces it (write to
 * a temporary name, rename) when its phase changes and at most every
 * LP_PROGRESS_INTERVAL_MS while counters move.  The view reads every such
 * file and keeps the records whose backend is still running.
 *
 * Why files: the library is not preloaded, so there is no static shared
 * memory to put a progress array in, and a DSM segment per operation would
 * still need a place where other sessions find its handle.  A file per
 * backend needs neither: rename() makes every update atomic for readers,
 * pg_stat_tmp holds transient files that base backups skip, and ten small
 * writes a second cost nothing next to a copy.  A record left by a backend
 * that died without cleaning up (a crash, or any record before a restart)
 * is never shown: its pid and start time do not match a live backend.  The
 * view also removes the files of pids that no live process has, so such
 * records do not pile up across crashes and restarts.
 */
#include "postgres.h"

#include "catalog/pg_authid.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/ipc.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "utils/acl.h"
#include "utils/backend_status.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "base/lp_pg_compat.h"
#include "assemble/lp_progress.h"
#include "store/lp_pg_server_files.h"

PG_FUNCTION_INFO_V1(lp_progress);

#define PROGRESS_MAGIC 0x4C505047	/* "LPPG" */
#define PROGRESS_PREFIX "lance_parts."
#define PROGRESS_SUFFIX ".progress"

typedef struct ProgressRecord
{
	uint32		magic;
	uint32		record_size;
	int32		pid;
	Oid			userid;
	TimestampTz backend_start;
	TimestampTz started;
	TimestampTz updated;
	int32		phase;
	int32		workers;
	int64		parts_done;
	int64		parts_total;
	int64		bytes_done;
	int64		bytes_total;
	bool		has_dataset;
	char		dataset[MAXPGPATH];
	char		target_file[MAXPGPATH];
} ProgressRecord;

static const char *const phase_names[] = {
	[LP_PHASE_VALIDATING] = "validating",
	[LP_PHASE_COPYING] = "copying",
	[LP_PHASE_FINALIZING] = "finalizing",
	[LP_PHASE_COMMITTING] = "committing",
	[LP_PHASE_ENCODING] = "encoding",
	[LP_PHASE_REENCODING] = "reencoding"
};

static ProgressRecord current;
static bool active;
static uint64 generation;		/* of the operation being reported */
static bool exit_hook_registered;

static void
progress_path(int pid, bool temporary, char *path)
{
	snprintf(path, MAXPGPATH, "%s/" PROGRESS_PREFIX "%d" PROGRESS_SUFFIX "%s",
			 PG_STAT_TMP_DIR, pid, temporary ? ".tmp" : "");
}

/*
 * Progress is advisory: a record that cannot be written is skipped, and the
 * operation goes on.
 */
static void
write_record(void)
{
	char		temp[MAXPGPATH];
	char		path[MAXPGPATH];

	current.updated = GetCurrentTimestamp();
	progress_path(MyProcPid, true, temp);
	progress_path(MyProcPid, false, path);
	lp_server_file_replace_quietly(temp, path, &current, sizeof(current));
}

static void
remove_record(void)
{
	char		path[MAXPGPATH];

	if (!active)
		return;
	active = false;
	progress_path(MyProcPid, false, path);
	lp_server_file_remove(path);
}

static void
progress_exit_hook(int code, Datum arg)
{
	remove_record();
}

/* The operation's memory goes away: an ERROR, or the end of the call. */
static void
progress_context_reset(void *arg)
{
	if (*(uint64 *) arg == generation)
		remove_record();
}

void
lp_progress_begin(const char *dataset, const char *target_file,
				  LpProgressPhase phase, int64 parts_total)
{
	MemoryContextCallback *callback;
	uint64	   *callback_generation;

	if (!exit_hook_registered)
	{
		before_shmem_exit(progress_exit_hook, (Datum) 0);
		exit_hook_registered = true;
	}
	remove_record();
	generation++;
	callback_generation = palloc(sizeof(uint64));
	*callback_generation = generation;
	callback = palloc(sizeof(MemoryContextCallback));
	callback->func = progress_context_reset;
	callback->arg = callback_generation;
	MemoryContextRegisterResetCallback(CurrentMemoryContext, callback);

	memset(&current, 0, sizeof(current));
	current.magic = PROGRESS_MAGIC;
	current.record_size = sizeof(ProgressRecord);
	current.pid = MyProcPid;
	current.userid = GetUserId();
	current.backend_start = MyStartTimestamp;
	current.started = GetCurrentTimestamp();
	current.phase = phase;
	current.parts_total = parts_total;
	current.has_dataset = dataset != NULL;
	if (dataset != NULL)
		strlcpy(current.dataset, dataset, sizeof(current.dataset));
	strlcpy(current.target_file, target_file, sizeof(current.target_file));
	active = true;
	write_record();
}

void
lp_progress_phase(LpProgressPhase phase, int64 parts_done, int64 bytes_done,
				  int64 bytes_total, int workers)
{
	if (!active)
		return;
	current.phase = phase;
	current.parts_done = parts_done;
	current.bytes_done = bytes_done;
	current.bytes_total = bytes_total;
	current.workers = workers;
	write_record();
}

void
lp_progress_update(int64 parts_done, int64 bytes_done)
{
	if (!active)
		return;
	current.parts_done = parts_done;
	current.bytes_done = bytes_done;
	if (TimestampDifferenceExceeds(current.updated, GetCurrentTimestamp(),
								   LP_PROGRESS_INTERVAL_MS))
		write_record();
}

void
lp_progress_end(void)
{
	remove_record();
}

/* ---- the view --------------------------------------------------------------- */

/* Is pid a running backend that started at start? */
static bool
backend_running(int pid, TimestampTz start)
{
	int			count = pgstat_fetch_stat_numbackends();

	for (int i = 1; i <= count; i++)
	{
		LocalPgBackendStatus *entry = pgstat_get_local_beentry_by_index(i);

		if (entry != NULL && entry->backendStatus.st_procpid == pid)
			return entry->backendStatus.st_proc_start_timestamp == start;
	}
	return false;
}

/*
 * "lance_parts.<pid>.progress" gives pid; so does its temporary file
 * "lance_parts.<pid>.progress.tmp" (*temporary), which a crash between
 * writing and renaming leaves behind.
 */
static bool
progress_file_pid(const char *name, int *pid, bool *temporary)
{
	size_t		len = strlen(name);
	size_t		prefix = strlen(PROGRESS_PREFIX);
	size_t		suffix = strlen(PROGRESS_SUFFIX);
	size_t		end;
	long		value = 0;

	*temporary = len > strlen(".tmp") && strcmp(name + len - strlen(".tmp"), ".tmp") == 0;
	end = *temporary ? len - strlen(".tmp") : len;
	if (end <= prefix + suffix || strncmp(name, PROGRESS_PREFIX, prefix) != 0 ||
		strncmp(name + end - suffix, PROGRESS_SUFFIX, suffix) != 0 ||
		end - prefix - suffix > 9)
		return false;
	for (size_t i = prefix; i < end - suffix; i++)
	{
		if (name[i] < '0' || name[i] > '9')
			return false;
		value = value * 10 + (name[i] - '0');
	}
	*pid = (int) value;
	return true;
}

static bool
read_record(const char *path, int pid, ProgressRecord *record)
{
	/* a missing file: the operation ended meanwhile */
	return lp_server_file_read_exactly(path, record, sizeof(*record)) &&
		record->magic == PROGRESS_MAGIC &&
		record->record_size == sizeof(ProgressRecord) && record->pid == pid &&
		record->phase >= LP_PHASE_VALIDATING && record->phase <= LP_PHASE_REENCODING;
}

/* Add the record of a progress file to the view's rows (one directory entry). */
static void
add_progress_row(const char *name, void *arg)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) arg;
	ProgressRecord record;
	char		path[MAXPGPATH];
	int			pid;
	bool		temporary;
	Datum		values[11];
	bool		nulls[11];

	if (!progress_file_pid(name, &pid, &temporary))
		return;
	progress_path(pid, temporary, path);

	/*
	 * No live process has the pid, so none can write the file again: it is
	 * what a crash or a restart left.  A backend that starts with the pid
	 * later writes a new record.
	 */
	if (BackendPidGetProc(pid) == NULL)
	{
		lp_server_file_remove(path);
		return;
	}
	if (temporary)
		return;
	if (!read_record(path, pid, &record) ||
		!backend_running(pid, record.backend_start))
		return;
	if (!has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS) &&
		!has_privs_of_role(GetUserId(), record.userid))
		return;
	record.dataset[MAXPGPATH - 1] = '\0';
	record.target_file[MAXPGPATH - 1] = '\0';

	memset(nulls, false, sizeof(nulls));
	values[0] = Int32GetDatum(record.pid);
	values[1] = record.has_dataset ? CStringGetTextDatum(record.dataset) : (Datum) 0;
	nulls[1] = !record.has_dataset;
	values[2] = CStringGetTextDatum(record.target_file);
	values[3] = CStringGetTextDatum(phase_names[record.phase]);
	values[4] = Int64GetDatum(record.parts_done);
	values[5] = Int64GetDatum(record.parts_total);
	values[6] = Int64GetDatum(record.bytes_done);
	values[7] = Int64GetDatum(record.bytes_total);
	values[8] = Int32GetDatum(record.workers);
	values[9] = TimestampTzGetDatum(record.started);
	values[10] = TimestampTzGetDatum(record.updated);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

Datum
lp_progress(PG_FUNCTION_ARGS)
{
	InitMaterializedSRF(fcinfo, 0);
	lp_server_files_each(PG_STAT_TMP_DIR, add_progress_row, fcinfo->resultinfo);
	return (Datum) 0;
}
