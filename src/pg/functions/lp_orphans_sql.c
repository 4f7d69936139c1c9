/*
 * lp_orphans_sql.c - cleanup_orphans: listing, and removing, what crashes
 * and lost races leave in a dataset directory.
 *
 * The core says which entries are orphans (lp_orphans.c); this file walks
 * the dataset's areas, measures each candidate's age (for a directory, the
 * newest mtime in its tree, so a staging directory a writer still fills is
 * young), and removes old ones through the store's removal operations,
 * which never follow a symlink and never leave the dataset root.  An entry
 * that is itself a symlink (or a FIFO, socket, device) is reported as
 * skipped, never followed or removed.  On a store whose outputs can leave
 * uploads behind (S3 multipart uploads: their writer failed to abort them,
 * or never learned their id), the uploads under the dataset begun before
 * the cutoff are aborted too.
 */
#include "postgres.h"

#include "funcapi.h"
#include "miscadmin.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "dataset/lp_orphans.h"
#include "base/lp_pg_error.h"
#include "store/lp_pg_storage.h"
#include "targets/lp_target.h"

PG_FUNCTION_INFO_V1(lp_cleanup_orphans);

/* Directories nested deeper than this inside a candidate are not measured. */
#define MEASURE_MAX_DEPTH 64

typedef struct OrphanScan
{
	LpStore    *store;
	const char *root;
	LpDatasetReferences *refs;
	TimestampTz cutoff;			/* entries modified before it are old */
	bool		dry_run;
	ReturnSetInfo *rsinfo;
} OrphanScan;

/* What a candidate holds: its newest modification and its regular files' bytes. */
typedef struct Measure
{
	TimestampTz newest;
	int64		bytes;
	bool		too_deep;
} Measure;

static void
measure_stat(Measure *measure, const LpStat *st)
{
	TimestampTz modified = time_t_to_timestamptz((pg_time_t) st->mtime);

	if (modified > measure->newest)
		measure->newest = modified;
	if (st->kind == LP_OBJECT_FILE)
		measure->bytes += (int64) st->size;
}

/* LpListCallback: collect every entry name. */
static bool
collect_name(void *arg, const char *entry_name, LpError *err)
{
	List	  **names = arg;

	*names = lappend(*names, pstrdup(entry_name));
	return true;
}

/* The names in a directory; ERROR if it cannot be listed. */
static List *
list_names(LpStore *store, const char *path)
{
	List	   *names = NIL;
	LpError		err;

	if (!store->ops->list(store, path, collect_name, &names, &err))
		lp_raise(&err);
	return names;
}

/* Measure the entries below a real directory, never following a symlink. */
static void
measure_tree(LpStore *store, const char *path, int depth, Measure *measure)
{
	ListCell   *cell;

	if (depth > MEASURE_MAX_DEPTH)
	{
		measure->too_deep = true;
		return;
	}
	foreach(cell, list_names(store, path))
	{
		char	   *child;
		LpStat		st;

		CHECK_FOR_INTERRUPTS();
		child = psprintf("%s/%s", path, (char *) lfirst(cell));
		lp_store_stat(store, child, false, &st);
		if (st.kind != LP_OBJECT_ABSENT)
		{
			measure_stat(measure, &st);
			if (st.kind == LP_OBJECT_DIRECTORY)
				measure_tree(store, child, depth + 1, measure);
		}
		pfree(child);
	}
}

static void
put_row(OrphanScan *scan, const char *relative, LpOrphanKind kind, int64 bytes,
		const char *action, const char *reason)
{
	Datum		values[5];
	bool		nulls[5] = {false, false, false, false, reason == NULL};

	values[0] = CStringGetTextDatum(psprintf("%s/%s", scan->root, relative));
	values[1] = CStringGetTextDatum(lp_orphan_kind_name(kind));
	values[2] = Int64GetDatum(bytes);
	values[3] = CStringGetTextDatum(action);
	values[4] = reason ? CStringGetTextDatum(reason) : (Datum) 0;
	tuplestore_putvalues(scan->rsinfo->setResult, scan->rsinfo->setDesc, values, nulls);
}

static LpEntryType
entry_type(const LpStat *st)
{
	if (st->kind == LP_OBJECT_FILE)
		return LP_ENTRY_FILE;
	if (st->kind == LP_OBJECT_DIRECTORY)
		return LP_ENTRY_DIRECTORY;
	return LP_ENTRY_OTHER;
}

/*
 * Remove one old orphan, or say why not.  Returns the action; *reason is
 * set for "skipped" and "failed".
 */
static const char *
remove_orphan(OrphanScan *scan, LpDatasetArea area, const char *name,
			  const char *relative, LpEntryType type, LpOrphanKind kind, char **reason)
{
	LpError		err;
	int64_t		writer_pid;
	bool		ok;
	char	   *target_file = NULL;
	LOCKTAG		lock_tag;

	/*
	 * A data file and its directories belong to a target: a commit or
	 * cleanup_target of it under way finishes first (the target lock), and
	 * versions committed since the scan began may reference it now.
	 */
	if (kind == LP_ORPHAN_DATA_FILE || kind == LP_ORPHAN_SIDECAR_DIRECTORY ||
		kind == LP_ORPHAN_STAGING_DIRECTORY)
	{
		target_file = lp_require_memory(lp_orphan_target_file(kind, name));
		lp_target_file_lock_tag(psprintf("%s/%s/%s", scan->root, LP_DATA_DIR, target_file),
								&lock_tag);
		(void) LockAcquire(&lock_tag, ExclusiveLock, false, false);
	}
	if (!lp_references_refresh(scan->store, scan->root, scan->refs, &err))
		lp_raise(&err);
	if (!lp_orphan_classify(scan->refs, area, name, type, &kind, &writer_pid))
	{
		if (target_file != NULL)
			LockRelease(&lock_tag, ExclusiveLock, false);
		*reason = pstrdup("referenced by a version committed during the cleanup");
		return "skipped";
	}
	if (type == LP_ENTRY_DIRECTORY)
	{
		LpTreeRemoval removal;

		ok = scan->store->ops->remove_tree(scan->store, scan->root, relative,
										   &removal, &err);
	}
	else
	{
		bool		removed;

		ok = scan->store->ops->remove_file(scan->store, scan->root, relative, &removed, &err);
	}
	if (target_file != NULL)
		LockRelease(&lock_tag, ExclusiveLock, false);
	if (!ok)
	{
		if (err.code == LP_ERR_CANCELED)
			lp_raise(&err);
		*reason = pstrdup(err.message);
		return "failed";
	}
	return "removed";
}

static void
examine_entry(OrphanScan *scan, LpDatasetArea area, const char *name)
{
	char	   *relative = psprintf("%s/%s", lp_area_directory(area), name);
	char	   *path = psprintf("%s/%s", scan->root, relative);
	LpStat		st;
	LpEntryType type;
	LpOrphanKind kind;
	int64_t		writer_pid;
	Measure		measure = {0, 0, false};
	const char *action;
	char	   *reason = NULL;

	lp_store_stat(scan->store, path, false, &st);
	if (st.kind == LP_OBJECT_ABSENT)
		return;					/* gone meanwhile */
	type = entry_type(&st);
	if (!lp_orphan_classify(scan->refs, area, name, type, &kind, &writer_pid))
		return;
	measure_stat(&measure, &st);
	if (type == LP_ENTRY_DIRECTORY)
		measure_tree(scan->store, path, 1, &measure);
	if (measure.newest >= scan->cutoff)
		return;					/* young: possibly in use */

	if (type == LP_ENTRY_OTHER)
	{
		action = "skipped";
		reason = st.kind == LP_OBJECT_SYMLINK
			? "symbolic link (never followed or removed)"
			: "not a regular file or directory";
	}
	else if (measure.too_deep)
	{
		action = "skipped";
		reason = psprintf("nested deeper than %d directories", MEASURE_MAX_DEPTH);
	}
	else if ((kind == LP_ORPHAN_DATA_FILE || kind == LP_ORPHAN_SIDECAR_DIRECTORY) &&
			 lp_references_num_manifests(scan->refs) == 0)
	{
		/*
		 * Without a version nothing says these are a dead first write's
		 * rather than a dataset being copied in (data/ before _versions/,
		 * with their old times kept): only the temporary files are surely ours.
		 */
		action = "skipped";
		reason = "the dataset has no version yet (a first write that died, or a copy in progress)";
	}
	else if (kind == LP_ORPHAN_TEMPORARY_FILE && writer_pid <= INT_MAX &&
			 BackendPidGetProc((int) writer_pid) != NULL)
	{
		action = "skipped";
		reason = psprintf("its writer, backend %d, is running", (int) writer_pid);
	}
	else if (scan->dry_run)
		action = "would_remove";
	else
		action = remove_orphan(scan, area, name, relative, type, kind, &reason);
	put_row(scan, relative, kind, measure.bytes, action, reason);
}

static int
compare_names(const ListCell *a, const ListCell *b)
{
	return strcmp(lfirst(a), lfirst(b));
}

/* Examine every entry of one area, in name order. */
static void
examine_area(OrphanScan *scan, LpDatasetArea area)
{
	const char *relative = lp_area_directory(area);
	char	   *path = psprintf("%s/%s", scan->root, relative);
	LpStat		st;
	LpError		err;
	List	   *names;
	ListCell   *cell;

	/* data/_parts is examined only below a real data/ (which warned otherwise) */
	if (area == LP_AREA_STAGING)
	{
		char	   *data = psprintf("%s/%s", scan->root, lp_area_directory(LP_AREA_DATA));

		if (!scan->store->ops->stat(scan->store, data, false, &st, &err) ||
			st.kind != LP_OBJECT_DIRECTORY)
			return;
	}
	lp_store_stat(scan->store, path, false, &st);
	if (st.kind == LP_OBJECT_ABSENT)
		return;
	if (st.kind != LP_OBJECT_DIRECTORY)
	{
		ereport(WARNING,
				errcode(ERRCODE_WRONG_OBJECT_TYPE),
				errmsg("\"%s\" is not a directory, its entries are not examined", path),
				errdetail("Removal never follows a symbolic link."));
		return;
	}

	/* names first: removal must not run while the directory is being read */
	names = list_names(scan->store, path);
	list_sort(names, compare_names);
	foreach(cell, names)
	{
		CHECK_FOR_INTERRUPTS();
		examine_entry(scan, area, lfirst(cell));
	}
}

/* An upload begun under the dataset and neither completed nor aborted. */
typedef struct PendingUpload
{
	char	   *path;
	char	   *upload_id;
	TimestampTz initiated;
} PendingUpload;

/* LpUploadCallback: collect every upload. */
static bool
collect_upload(void *arg, const char *path, const char *upload_id, int64_t initiated,
			   LpError *err)
{
	List	  **uploads = arg;
	PendingUpload *upload = palloc(sizeof(PendingUpload));

	upload->path = pstrdup(path);
	upload->upload_id = pstrdup(upload_id);
	upload->initiated = time_t_to_timestamptz((pg_time_t) initiated);
	*uploads = lappend(*uploads, upload);
	return true;
}

static int
compare_uploads(const ListCell *a, const ListCell *b)
{
	const PendingUpload *x = lfirst(a);
	const PendingUpload *y = lfirst(b);
	int			by_path = strcmp(x->path, y->path);

	return by_path != 0 ? by_path : strcmp(x->upload_id, y->upload_id);
}

/*
 * Abort the uploads under the dataset begun before the cutoff, in path
 * order; a row for each, with the bytes its parts held (listed before the
 * abort; 0 for one skipped).  An upload is young
 * while an assembly may still be writing it, which is why older_than must
 * exceed the longest assembly.
 */
static void
examine_uploads(OrphanScan *scan)
{
	List	   *uploads = NIL;
	ListCell   *cell;
	LpError		err;
	size_t		root_len = strlen(scan->root);

	if (scan->store->ops->list_uploads == NULL)
		return;
	if (!scan->store->ops->list_uploads(scan->store, scan->root, collect_upload, &uploads, &err))
		lp_raise(&err);
	list_sort(uploads, compare_uploads);
	foreach(cell, uploads)
	{
		PendingUpload *upload = lfirst(cell);
		const char *relative;
		const char *action;
		char	   *reason = NULL;
		uint64_t	bytes = 0;

		CHECK_FOR_INTERRUPTS();
		/* listed under the root, so its path is the root, "/" and more */
		if (strncmp(upload->path, scan->root, root_len) != 0 || upload->path[root_len] != '/' ||
			upload->initiated >= scan->cutoff)
			continue;
		relative = upload->path + root_len + 1;
		/* an abort names the key by its URI, which must say exactly that key */
		if (!lp_name_is_canonical(upload->path))
		{
			action = "skipped";
			reason = pstrdup("its key has empty, \".\" or \"..\" segments or a trailing '/', which an s3:// URI cannot name exactly");
		}
		else if (!scan->store->ops->upload_size(scan->store, upload->path, upload->upload_id,
												&bytes, &err))
			action = NULL;
		else if (scan->dry_run)
			action = "would_remove";
		else if (scan->store->ops->abort_upload(scan->store, upload->path, upload->upload_id, &err))
			action = "removed";
		else
			action = NULL;
		if (action == NULL)
		{
			if (err.code == LP_ERR_CANCELED)
				lp_raise(&err);
			action = "failed";
			reason = pstrdup(err.message);
		}
		put_row(scan, relative, LP_ORPHAN_MULTIPART_UPLOAD, (int64) bytes, action, reason);
	}
}

/*
 * Read the latest manifest only for the checks every entry point makes
 * (lp_read_latest_manifest): cleaning up is reaching the dataset.  Cleaning
 * up is also writing: a newer Lance's writer feature may reference files in
 * ways the walk cannot see.  A dataset whose first write died has no
 * version, so no bases either (lp_references_read took it for one).
 */
static void
check_dataset_reachable(LpStore *store, const char *root)
{
	LpManifestNaming naming;
	LpError		err;
	LpManifest *latest = lp_read_latest_manifest(store, root, InvalidOid, &naming, &err);

	if (latest == NULL)
	{
		if (err.code == LP_ERR_NOT_FOUND)
			return;
		lp_raise(&err);
	}
	if (!lp_manifest_check_writable(latest, root, &err))
		lp_raise(&err);
	lp_manifest_free(latest);
}

Datum
lp_cleanup_orphans(PG_FUNCTION_ARGS)
{
	char	   *uri = text_to_cstring(PG_GETARG_TEXT_PP(0));
	Interval   *older_than = PG_GETARG_INTERVAL_P(1);
	Interval	zero;
	OrphanScan	scan;
	LpError		err;
	char	   *path;
	LpStore    *store;
	static const LpDatasetArea areas[LP_NUM_AREAS] = {
		LP_AREA_DATA, LP_AREA_STAGING, LP_AREA_TRANSACTIONS, LP_AREA_DELETIONS, LP_AREA_VERSIONS
	};

	InitMaterializedSRF(fcinfo, 0);
	lp_check_read_privilege_for(uri);
	lp_check_write_privilege_for(uri);
	memset(&zero, 0, sizeof(zero));
	if (DatumGetInt32(DirectFunctionCall2(interval_cmp, IntervalPGetDatum(older_than),
										  IntervalPGetDatum(&zero))) < 0)
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("older_than must not be negative"));
	store = lp_store_for_uri(uri, &path);
	if (lp_key_is_relative(path))
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("relative path not allowed for dataset \"%s\"", uri),
				errhint("Give the dataset's absolute path or a file:// URI."));

	memset(&scan, 0, sizeof(scan));
	scan.root = lp_resolve_existing_path(store, path, "dataset");
	scan.store = lp_store_below(scan.root);
	scan.dry_run = PG_GETARG_BOOL(2);
	scan.rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	scan.cutoff = DatumGetTimestampTz(DirectFunctionCall2(timestamptz_mi_interval,
														  TimestampTzGetDatum(GetCurrentTimestamp()),
														  IntervalPGetDatum(older_than)));
	scan.refs = lp_references_read(scan.store, scan.root, &err);
	if (scan.refs == NULL)
		lp_raise(&err);
	check_dataset_reachable(scan.store, scan.root);

	for (int i = 0; i < LP_NUM_AREAS; i++)
		examine_area(&scan, areas[i]);
	examine_uploads(&scan);
	lp_references_free(scan.refs);
	return (Datum) 0;
}
