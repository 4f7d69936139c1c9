/*
 * lp_publication.c - publishing dataset versions at the commit of the
 * PostgreSQL transaction (lance_parts.publish_at), or at once.
 *
 * A queued publication owns a memory context under TopMemoryContext holding
 * a deep copy of its commit request and the store it is published through,
 * made when it was queued (an S3 store's credentials come from the catalog,
 * which an aborting transaction can no longer read).  Publications remember
 * the subtransaction that queued them, as the part registry does: the
 * rollback of a savepoint drops its own, its commit hands them to the
 * parent.
 *
 * Lance has no two-phase protocol, so a version is published in the
 * pre-commit phase, the last moment a transaction can still fail: a
 * conflict found there is an ERROR that aborts the transaction.  A
 * transaction that publishes to several datasets is not atomic across them:
 * the publications before a failing one stay published (the ERROR says
 * which).  A backend killed while publishing leaves either the whole new
 * version or none, and what nothing references for cleanup_orphans.
 */
#include "postgres.h"

#include "access/xact.h"
#include "utils/guc.h"
#include "utils/memutils.h"

#include "assemble/lp_assemble.h"
#include "assemble/lp_progress.h"
#include "base/lp_alloc.h"
#include "dataset/lp_dataset.h"
#include "base/lp_pg_error.h"
#include "base/lp_pg_random.h"
#include "fdw/lp_fdw.h"
#include "format/lp_deletion.h"
#include "write/lp_publication.h"
#include "store/lp_pg_s3_config.h"
#include "store/lp_pg_storage.h"

typedef enum PublishAt
{
	PUBLISH_AT_COMMIT,
	PUBLISH_AT_CALL
} PublishAt;

static const struct config_enum_entry publish_at_options[] = {
	{"commit", PUBLISH_AT_COMMIT, false},
	{"call", PUBLISH_AT_CALL, false},
	{NULL, 0, false}
};

static int	publish_at = PUBLISH_AT_COMMIT;
static int	commit_retries = 20;

/* A publication queued for the pre-commit. */
typedef struct Publication
{
	MemoryContext context;		/* holds this and everything below */
	SubTransactionId subid;		/* the subtransaction that queued it */
	char	   *root;
	Oid			server;
	LpStore    *store;
	LpCommitRequest request;	/* read_manifest NULL: rebased on the latest version */
	bool		create;
	LpManifestNaming create_naming;
	char	   *claimed_file;
	List	   *written;
	List	   *after_publication;
	bool		published;
} Publication;

/* Publications queued by the current transaction, in statement order. */
static List *pending = NIL;

/*
 * Commit options for the dataset at uri from the settings: retries, strong
 * random bytes, and the version hint where Lance writes one (not on S3).
 */
static void
commit_options(LpCommitOptions *options, const char *uri)
{
	options->max_retries = commit_retries;
	options->random = lp_random_bytes;
	options->random_arg = NULL;
	options->no_version_hint = lp_is_s3_uri(uri);
}

/* ---- copies into a publication's context --------------------------------- */

static void *
copy_array(const void *data, size_t count, size_t size)
{
	void	   *copy;

	if (data == NULL || count == 0)
		return NULL;
	copy = palloc_extended(count * size, MCXT_ALLOC_HUGE);
	memcpy(copy, data, count * size);
	return copy;
}

static void
copy_data_file(LpNewDataFile *to, const LpNewDataFile *from)
{
	*to = *from;
	to->path = pstrdup(from->path);
	to->fields = copy_array(from->fields, from->n_fields, sizeof(int32_t));
	to->column_indices = copy_array(from->column_indices, from->n_fields, sizeof(int32_t));
}

static void
copy_key_values(LpKeyValue **to, const LpKeyValue *from, uint32_t n)
{
	*to = copy_array(from, n, sizeof(LpKeyValue));
	for (uint32_t i = 0; i < n; i++)
	{
		(*to)[i].key = pstrdup(from[i].key);
		(*to)[i].value.data = copy_array(from[i].value.data, from[i].value.len, 1);
	}
}

static LpSchema *
copy_schema(const LpSchema *from)
{
	LpSchema   *to = palloc(sizeof(LpSchema));

	*to = *from;
	to->fields = copy_array(from->fields, from->num_fields, sizeof(LpField));
	for (uint32_t i = 0; i < from->num_fields; i++)
	{
		LpField    *field = &to->fields[i];

		field->name = pstrdup(from->fields[i].name);
		field->logical_type = pstrdup(from->fields[i].logical_type);
		field->extension_name = from->fields[i].extension_name ?
			pstrdup(from->fields[i].extension_name) : NULL;
		copy_key_values(&field->metadata, from->fields[i].metadata, from->fields[i].num_metadata);
	}
	copy_key_values(&to->metadata, from->metadata, from->num_metadata);
	return to;
}

/* A rewrite group's deletions, with the deleted rows they carry. */
static LpRewriteDeletions *
copy_deletions(const LpRewriteDeletions *from, size_t n)
{
	LpRewriteDeletions *to = copy_array(from, n, sizeof(LpRewriteDeletions));

	for (size_t i = 0; to != NULL && i < n; i++)
		if (from[i].deleted != NULL)
		{
			LpDeletions *deleted = palloc(sizeof(LpDeletions));

			*deleted = *from[i].deleted;
			deleted->deleted = copy_array(from[i].deleted->deleted,
										  (size_t) (deleted->num_rows / 8 + 1), 1);
			to[i].deleted = deleted;
		}
	return to;
}

/*
 * The request without the manifest it was read from, an append of one
 * file made an append of one fragment (so that appends merge).
 */
static void
copy_request(LpCommitRequest *to, const LpCommitRequest *from)
{
	*to = *from;
	to->read_manifest = NULL;
	if (from->kind == LP_COMMIT_APPEND && from->n_fragments == 0)
	{
		LpNewFragment *fragment = palloc0(sizeof(LpNewFragment));

		copy_data_file(&fragment->file, &from->file);
		fragment->physical_rows = from->physical_rows;
		to->fragments = fragment;
		to->n_fragments = 1;
		memset(&to->file, 0, sizeof(to->file));
		to->physical_rows = 0;
		return;
	}
	if (from->file.path != NULL)
		copy_data_file(&to->file, &from->file);
	if (from->n_fragments > 0)
	{
		LpNewFragment *fragments = palloc0(sizeof(LpNewFragment) * from->n_fragments);

		for (size_t i = 0; i < from->n_fragments; i++)
		{
			fragments[i] = from->fragments[i];
			copy_data_file(&fragments[i].file, &from->fragments[i].file);
			fragments[i].moved_row_ids = copy_array(from->fragments[i].moved_row_ids,
													(size_t) from->fragments[i].physical_rows,
													sizeof(uint64_t));
			fragments[i].moved_created_at = copy_array(from->fragments[i].moved_created_at,
													   (size_t) from->fragments[i].physical_rows,
													   sizeof(uint64_t));
		}
		to->fragments = fragments;
	}
	if (from->n_groups > 0)
	{
		LpRewriteGroup *groups = palloc0(sizeof(LpRewriteGroup) * from->n_groups);

		for (size_t g = 0; g < from->n_groups; g++)
		{
			groups[g] = from->groups[g];
			groups[g].old_fragment_ids = copy_array(from->groups[g].old_fragment_ids,
													from->groups[g].n_old, sizeof(uint64_t));
			groups[g].deletions = copy_deletions(from->groups[g].deletions, from->groups[g].n_old);
			copy_data_file(&groups[g].file, &from->groups[g].file);
		}
		to->groups = groups;
	}
	if (from->schema != NULL)
		to->schema = copy_schema(from->schema);
	to->rewritten_indices = copy_array(from->rewritten_indices, from->n_rewritten_indices,
									   sizeof(LpRewrittenIndex));
	to->deletes = copy_array(from->deletes, from->n_deletes, sizeof(LpDeleteFragment));
	if (from->predicate != NULL)
		to->predicate = pstrdup(from->predicate);
}

/* Copies of the paths, with their stores made now, for the pre-commit or the abort. */
static List *
copy_paths(List *paths, Oid server)
{
	List	   *copy = NIL;
	ListCell   *cell;

	foreach(cell, paths)
	{
		LpPublicationPath *path = lfirst(cell);
		LpPublicationPath *path_copy = lp_publication_path(path->base, path->relative,
														   path->directory, path->what);

		path_copy->store = lp_store_below_via(path->base, server);
		copy = lappend(copy, path_copy);
	}
	return copy;
}

LpPublicationPath *
lp_publication_path(const char *base, const char *relative, bool directory, const char *what)
{
	LpPublicationPath *path = palloc(sizeof(LpPublicationPath));

	path->base = pstrdup(base);
	path->relative = pstrdup(relative);
	path->directory = directory;
	path->what = pstrdup(what);
	path->store = NULL;
	return path;
}

/* ---- removals ---------------------------------------------------------------- */

/*
 * Remove a path below its base without following a symlink; false with
 * *err when it could not be removed (a missing path is removed).
 */
static bool
remove_path(const LpPublicationPath *path, Oid server, LpError *err)
{
	LpStore    *store = path->store ? path->store : lp_store_below_via(path->base, server);

	if (path->directory)
	{
		LpTreeRemoval removal;

		return store->ops->remove_tree(store, path->base, path->relative, &removal, err);
	}
	else
	{
		bool		removed;

		return store->ops->remove_file(store, path->base, path->relative, &removed, err);
	}
}

/*
 * Remove what an unpublished publication wrote.  Called while a
 * transaction aborts, where an ERROR must not escape: each failure becomes
 * a WARNING naming what cleanup_orphans will find.
 */
static void
remove_written(const Publication *publication)
{
	lp_publication_discard(publication->root, publication->server, publication->written);
}

void
lp_publication_discard(const char *root, Oid server, List *written)
{
	ListCell   *cell;

	foreach(cell, written)
	{
		LpPublicationPath *path = lfirst(cell);
		MemoryContext context = CurrentMemoryContext;

		PG_TRY();
		{
			LpError		err;

			if (!remove_path(path, server, &err))
				ereport(WARNING,
						errcode(ERRCODE_IO_ERROR),
						errmsg_internal("%s", err.message),
						errdetail("%s was not removed; nothing references it, since its publication to dataset \"%s\" was not made.",
								  path->what, root),
						errhint("cleanup_orphans removes it later."));
		}
		PG_CATCH();
		{
			ErrorData  *edata;

			MemoryContextSwitchTo(context);
			edata = CopyErrorData();
			FlushErrorState();
			ereport(WARNING,
					errcode(edata->sqlerrcode),
					errmsg_internal("%s", edata->message),
					errdetail("%s was not removed; nothing references it, since its publication to dataset \"%s\" was not made.",
							  path->what, root),
					errhint("cleanup_orphans removes it later."));
			FreeErrorData(edata);
		}
		PG_END_TRY();
	}
}

/* Remove what a published version no longer needs; failures are WARNINGs. */
static void
remove_after_publication(List *paths, const char *root, Oid server, uint64_t version)
{
	ListCell   *cell;

	foreach(cell, paths)
	{
		LpPublicationPath *path = lfirst(cell);
		LpError		err;

		if (!remove_path(path, server, &err))
			ereport(WARNING,
					errcode(ERRCODE_IO_ERROR),
					errmsg_internal("%s", err.message),
					errdetail("%s was not removed completely.", path->what),
					errhint("Version " UINT64_FORMAT " of dataset \"%s\" is published; what is left can be removed once the cause is fixed.",
							version, root));
	}
}

/* ---- publishing ------------------------------------------------------------- */

/*
 * Publish one request through store; on failure remove written and raise
 * (a conflict is 40001).
 */
static void
publish(LpStore *store, const char *root, Oid server, const LpCommitRequest *request, bool create,
		LpManifestNaming create_naming, List *written, LpCommitResult *result)
{
	LpCommitOptions options;
	LpError		err;
	bool		ok;

	commit_options(&options, root);
	if (create)
		ok = lp_commit_create(store, root, request, create_naming, &options, result, &err);
	else
		ok = lp_commit(store, root, request, &options, result, &err);
	if (!ok)
	{
		Publication failed = {.root = (char *) root, .server = server, .written = written};

		remove_written(&failed);
		if (err.code == LP_ERR_ALREADY_EXISTS && create)
			ereport(ERROR,
					errcode(ERRCODE_DUPLICATE_OBJECT),
					errmsg("dataset \"%s\" already exists", root),
					errdetail("Another writer created it first; the files written were removed."));
		lp_raise(&err);
	}
}

static bool
replaces_dataset(const Publication *publication)
{
	return publication->create || publication->request.kind == LP_COMMIT_OVERWRITE;
}

void
lp_publication_refuse_after_replacement(const char *root)
{
	ereport(ERROR,
			errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			errmsg("dataset \"%s\" is created or overwritten by this transaction", root),
			errdetail("Its new version is published when the transaction commits; a write made before then would be built on the version it replaces."),
			errhint("Commit first, or set lance_parts.publish_at to \"call\"."));
}

/* ---- small appends concatenated ---------------------------------------------- */

/*
 * Small data files of the plain appends one (sub)transaction queues to one
 * dataset (an INSERT of a few rows each) are concatenated by page copy once
 * COALESCE_FRAGMENTS of them are pending, into files of at most Lance's
 * default of rows per file, so that many small statements make few
 * fragments.  Files with sidecars or in another base are left as they are.
 */
#define COALESCE_FRAGMENTS 16
#define COALESCED_FILE_ROWS 1048576

static bool is_plain_append(const Publication *publication);

/* Can the fragments of this publication be concatenated with others? */
static bool
coalescible(const Publication *publication, const Publication *latest)
{
	ListCell   *cell;

	if (!is_plain_append(publication) || publication->subid != latest->subid ||
		strcmp(publication->root, latest->root) != 0 || publication->after_publication != NIL)
		return false;
	foreach(cell, publication->written)
		if (((LpPublicationPath *) lfirst(cell))->directory)
			return false;
	for (size_t i = 0; i < publication->request.n_fragments; i++)
	{
		const LpNewFragment *fragment = &publication->request.fragments[i];

		if (fragment->file.has_base_id || fragment->physical_rows >= COALESCED_FILE_ROWS ||
			fragment->file.version != latest->request.fragments[0].file.version)
			return false;
	}
	return true;
}

/* Concatenate the count fragments into one new data file of the dataset. */
static LpNewFragment
concatenate(const Publication *into, const LpNewFragment *fragments, size_t count)
{
	char		name[LP_DATA_FILE_NAME_SIZE];
	char	   *data_dir = psprintf("%s/%s", into->root, LP_DATA_DIR);
	LpAssembleTarget target = {fragments[0].file.version, NULL, into->root, NULL, false, false, into->root};
	LpAssembleResult result;
	LpNewFragment merged = fragments[0];
	List	   *parts = NIL;
	LpError		err;

	for (size_t i = 0; i < count; i++)
	{
		LpAssemblePart *part = palloc0(sizeof(LpAssemblePart));

		part->path = psprintf("%s/%s", data_dir, fragments[i].file.path);
		part->has_expected_rows = true;
		part->expected_rows = (int64) fragments[i].physical_rows;
		parts = lappend(parts, part);
	}
	if (!lp_generate_data_file_name(lp_random_bytes, NULL, name, &err))
		lp_raise(&err);
	lp_assemble_file(psprintf("%s/%s", data_dir, name), parts, &target, false, &result);
	if (strcmp(result.status, "written") != 0)
		elog(ERROR, "data files written by this transaction cannot be concatenated: %s",
			 result.message ? result.message : result.reason);
	copy_data_file(&merged.file, &fragments[0].file);
	merged.file.path = pstrdup(name);
	merged.file.size_bytes = result.size_bytes;
	merged.physical_rows = result.num_rows;
	return merged;
}

static bool
is_replaced(List *replaced, const char *relative)
{
	ListCell   *cell;

	foreach(cell, replaced)
		if (strcmp(lfirst(cell), relative) == 0)
			return true;
	return false;
}

static void
coalesce_small_appends(Publication *latest)
{
	List	   *run = NIL;
	size_t		n_fragments = 0;
	Publication *into;
	LpNewFragment *fragments;
	LpNewFragment *coalesced;
	size_t		n_coalesced = 0;
	List	   *replaced = NIL;
	List	   *written;
	MemoryContext old;
	ListCell   *cell;

	if (!coalescible(latest, latest))
		return;
	/* the run of such appends ending with latest: nothing else of the dataset in between */
	for (int i = list_length(pending) - 1; i >= 0; i--)
	{
		Publication *publication = list_nth(pending, i);

		if (strcmp(publication->root, latest->root) != 0)
			continue;
		if (!coalescible(publication, latest))
			break;
		run = lcons(publication, run);
		n_fragments += publication->request.n_fragments;
	}
	if (n_fragments < COALESCE_FRAGMENTS)
		return;

	/* the fragments in statement order, concatenated in groups of at most COALESCED_FILE_ROWS rows */
	fragments = palloc(sizeof(LpNewFragment) * n_fragments);
	n_fragments = 0;
	foreach(cell, run)
	{
		Publication *publication = lfirst(cell);

		memcpy(&fragments[n_fragments], publication->request.fragments,
			   sizeof(LpNewFragment) * publication->request.n_fragments);
		n_fragments += publication->request.n_fragments;
	}
	into = linitial(run);
	old = MemoryContextSwitchTo(into->context);
	coalesced = palloc(sizeof(LpNewFragment) * n_fragments);
	for (size_t first = 0; first < n_fragments;)
	{
		size_t		count = 0;
		uint64		rows = 0;

		while (first + count < n_fragments &&
			   rows + fragments[first + count].physical_rows <= COALESCED_FILE_ROWS)
			rows += fragments[first + (count++)].physical_rows;
		if (count <= 1)
		{
			coalesced[n_coalesced] = fragments[first];
			copy_data_file(&coalesced[n_coalesced++].file, &fragments[first].file);
		}
		else
		{
			coalesced[n_coalesced] = concatenate(into, &fragments[first], count);
			into->written = lappend(into->written,
									lp_publication_path(into->root,
														psprintf("%s/%s", LP_DATA_DIR, coalesced[n_coalesced].file.path),
														false,
														psprintf("The data file \"%s/%s/%s\"", into->root, LP_DATA_DIR,
																 coalesced[n_coalesced].file.path)));
			llast_node(LpPublicationPath, into->written)->store = into->store;
			for (size_t i = first; i < first + count; i++)
				replaced = lappend(replaced, psprintf("%s/%s", LP_DATA_DIR, fragments[i].file.path));
			n_coalesced++;
		}
		first += Max(count, 1);
	}
	into->request.fragments = coalesced;
	into->request.n_fragments = n_coalesced;
	MemoryContextSwitchTo(old);

	/* the replaced files go now; the later appends of the run live on in the first */
	foreach(cell, replaced)
	{
		LpPublicationPath path = {.base = into->root, .relative = lfirst(cell), .store = into->store,
		.what = "A data file concatenated into another"};
		LpError		err;

		if (!remove_path(&path, into->server, &err))
			ereport(WARNING,
					errcode(ERRCODE_IO_ERROR),
					errmsg_internal("%s", err.message),
					errhint("cleanup_orphans removes it later."));
	}
	old = MemoryContextSwitchTo(into->context);
	written = NIL;
	foreach(cell, run)
	{
		Publication *publication = lfirst(cell);
		ListCell   *path_cell;

		foreach(path_cell, publication->written)
		{
			LpPublicationPath *path = lfirst(path_cell);
			LpPublicationPath *copy;

			if (is_replaced(replaced, path->relative))
				continue;
			copy = lp_publication_path(path->base, path->relative, path->directory, path->what);
			copy->store = into->store;
			written = lappend(written, copy);
		}
	}
	into->written = written;
	MemoryContextSwitchTo(old);
	for_each_from(cell, run, 1)
	{
		Publication *publication = lfirst(cell);

		pending = list_delete_ptr(pending, publication);
		MemoryContextDelete(publication->context);
	}
}

/*
 * A request that does not fit the version it was made on (a fragment that
 * is not there, rows that do not match) is refused by the call, not at
 * COMMIT: build its manifest on that version once, as publishing will.
 */
static void
check_fits_read_version(const LpPublicationRequest *request)
{
	const LpManifest *read = request->commit->read_manifest;
	uint64_t   *new_fragment_ids;
	uint8_t    *manifest;
	size_t		manifest_len;
	LpError		err;

	if (read == NULL)
		return;
	new_fragment_ids = palloc0(sizeof(uint64_t) * (Max(request->commit->n_fragments,
													   request->commit->n_groups) + 1));
	if (!lp_commit_build_manifest(read, request->commit, NULL, 0, "", 0, &manifest,
								  &manifest_len, new_fragment_ids, &err))
		lp_raise(&err);
	lp_free(manifest);
	pfree(new_fragment_ids);
}

static bool deletes_rows(const Publication *publication);

/* The pending publication deleting rows of the dataset at root, or NULL. */
static Publication *
pending_deletion(const char *root)
{
	ListCell   *cell;

	foreach(cell, pending)
	{
		Publication *publication = lfirst(cell);

		if (!publication->published && strcmp(publication->root, root) == 0 &&
			deletes_rows(publication))
			return publication;
	}
	return NULL;
}

/*
 * Remove the deletion file a merged delete replaces (written by the same
 * transaction, referenced by nothing) and forget it.
 */
static void
forget_replaced_deletion_file(Publication *into, const LpDeleteFragment *replaced)
{
	char	   *relative;
	ListCell   *cell;

	if (replaced->all_deleted)
		return;
	relative = lp_require_memory(lp_deletion_file_path(replaced->fragment_id, replaced->read_version,
														replaced->id, LP_DELETION_BITMAP));
	foreach(cell, into->written)
	{
		LpPublicationPath *path = lfirst(cell);
		LpError		err;

		if (path->directory || strcmp(path->relative, relative) != 0)
			continue;
		if (!remove_path(path, into->server, &err))
			ereport(WARNING,
					errcode(ERRCODE_IO_ERROR),
					errmsg_internal("%s", err.message),
					errdetail("%s was replaced by a later deletion file of the same transaction.", path->what),
					errhint("cleanup_orphans removes it later."));
		into->written = foreach_delete_current(into->written, cell);
		break;
	}
	lp_free(relative);
}

void
lp_publication_check_deletion(const char *root)
{
	Publication *into = pending_deletion(root);

	if (into != NULL && into->subid != GetCurrentSubTransactionId())
		ereport(ERROR,
				errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				errmsg("dataset \"%s\" is already deleted from outside the current savepoint", root),
				errdetail("The deletions of one transaction are published as one Lance version, which the rollback of a savepoint could not take apart."),
				errhint("Change the rows outside the savepoint, or set lance_parts.publish_at to \"call\"."));
}

/*
 * A DELETE or UPDATE of a dataset this transaction already deletes rows of
 * read them through the pending deletion files (lp_fdw_pending_view_hook):
 * its deletion files hold the earlier statements' rows too.  It joins the
 * pending publication, its files replacing those of the fragments both
 * touch, so that the transaction publishes one Delete (an Update when
 * either statement was an UPDATE) built on the version first read.  A
 * savepoint's rollback could not take a merged statement back, so the
 * statement's subtransaction must be the pending one's
 * (lp_publication_check_deletion, before it wrote anything).
 */
static bool
merge_pending_deletion(const LpPublicationRequest *request)
{
	const LpCommitRequest *later = request->commit;
	Publication *into;
	LpCommitRequest *merged;
	LpDeleteFragment *deletes;
	LpNewFragment *fragments;
	size_t		n_deletes;
	MemoryContext old;

	if (later->kind != LP_COMMIT_DELETE && later->kind != LP_COMMIT_UPDATE)
		return false;
	into = pending_deletion(request->root);
	if (into == NULL)
		return false;
	lp_publication_check_deletion(request->root);

	old = MemoryContextSwitchTo(into->context);
	merged = &into->request;
	deletes = palloc(sizeof(LpDeleteFragment) * (merged->n_deletes + later->n_deletes));
	memcpy(deletes, merged->deletes, sizeof(LpDeleteFragment) * merged->n_deletes);
	n_deletes = merged->n_deletes;
	for (size_t i = 0; i < later->n_deletes; i++)
	{
		LpDeleteFragment next = later->deletes[i];
		size_t		k;

		for (k = 0; k < n_deletes && deletes[k].fragment_id != next.fragment_id; k++)
			;
		if (k < n_deletes)
		{
			/* the fragment as published: what the commit checks is still there */
			next.had_deletion_file = deletes[k].had_deletion_file;
			next.old_read_version = deletes[k].old_read_version;
			next.old_id = deletes[k].old_id;
			forget_replaced_deletion_file(into, &deletes[k]);
			deletes[k] = next;
		}
		else
			deletes[n_deletes++] = next;
	}
	merged->deletes = deletes;
	merged->n_deletes = n_deletes;

	if (later->n_fragments > 0)
	{
		LpCommitRequest copy;

		copy_request(&copy, later);
		fragments = palloc(sizeof(LpNewFragment) * (merged->n_fragments + copy.n_fragments));
		if (merged->n_fragments > 0)
			memcpy(fragments, merged->fragments, sizeof(LpNewFragment) * merged->n_fragments);
		memcpy(&fragments[merged->n_fragments], copy.fragments, sizeof(LpNewFragment) * copy.n_fragments);
		merged->fragments = fragments;
		merged->n_fragments += copy.n_fragments;
	}
	if (later->kind == LP_COMMIT_UPDATE)
		merged->kind = LP_COMMIT_UPDATE;
	/* Lance's Update records no predicate */
	if (merged->kind == LP_COMMIT_UPDATE)
		merged->predicate = NULL;
	else if (merged->predicate != NULL && later->predicate != NULL)
		merged->predicate = psprintf("(%s) OR (%s)", merged->predicate, later->predicate);
	else
		merged->predicate = NULL;
	into->written = list_concat(into->written, copy_paths(request->written, request->server));
	into->after_publication = list_concat(into->after_publication,
										  copy_paths(request->after_publication, request->server));
	MemoryContextSwitchTo(old);
	return true;
}

/*
 * The manifest this transaction's reads see for the dataset at root: the
 * published one with the pending publications to it applied in statement
 * order, as the pre-commit publishes them; NULL when none is pending.
 */
static LpManifest *
pending_view(const char *path, const LpManifest *published)
{
	LpManifest *view = NULL;
	ListCell   *cell;

	foreach(cell, pending)
	{
		Publication *publication = lfirst(cell);
		LpManifest *next;
		LpError		err;

		if (publication->published || publication->create || strcmp(publication->root, path) != 0)
			continue;
		next = lp_commit_preview_manifest(view != NULL ? view : published, &publication->request, &err);
		if (next == NULL)
			lp_raise(&err);
		if (view != NULL)
			lp_manifest_free(view);
		view = next;
	}
	return view;
}

bool
lp_publish(const LpPublicationRequest *request, LpCommitResult *result)
{
	Publication *publication;
	MemoryContext context;
	MemoryContext old;
	ListCell   *cell;

	memset(result, 0, sizeof(*result));
	foreach(cell, pending)
	{
		Publication *queued = lfirst(cell);

		if (request->claimed_file != NULL && queued->claimed_file != NULL &&
			strcmp(request->claimed_file, queued->claimed_file) == 0)
			ereport(ERROR,
					errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					errmsg("file \"%s\" is already committed by this transaction", request->claimed_file),
					errdetail("Its publication is pending until the transaction commits."),
					errhint("Create a new target for new data."));
		if (strcmp(request->root, queued->root) == 0 && replaces_dataset(queued))
			lp_publication_refuse_after_replacement(request->root);
	}

	if (publish_at == PUBLISH_AT_CALL)
	{
		publish(lp_store_below_via(request->root, request->server), request->root, request->server,
				request->commit, request->create, request->create_naming, request->written, result);
		remove_after_publication(request->after_publication, request->root, request->server,
								 result->version);
		return true;
	}

	check_fits_read_version(request);
	if (merge_pending_deletion(request))
		return false;
	context = AllocSetContextCreate(TopMemoryContext, "lance_parts publication",
									ALLOCSET_SMALL_SIZES);
	old = MemoryContextSwitchTo(context);
	publication = palloc0(sizeof(Publication));
	publication->context = context;
	publication->subid = GetCurrentSubTransactionId();
	publication->root = pstrdup(request->root);
	publication->server = request->server;
	publication->store = lp_store_below_via(request->root, request->server);
	copy_request(&publication->request, request->commit);
	publication->create = request->create;
	publication->create_naming = request->create_naming;
	publication->claimed_file = request->claimed_file ? pstrdup(request->claimed_file) : NULL;
	publication->written = copy_paths(request->written, request->server);
	publication->after_publication = copy_paths(request->after_publication, request->server);
	MemoryContextSwitchTo(TopMemoryContext);
	pending = lappend(pending, publication);
	MemoryContextSwitchTo(old);
	coalesce_small_appends(publication);
	return false;
}

static bool
deletes_rows(const Publication *publication)
{
	return publication->request.kind == LP_COMMIT_DELETE ||
		publication->request.kind == LP_COMMIT_UPDATE;
}

/* Whether a pending publication to the dataset at root satisfies matches. */
static bool
pending_for(const char *root, bool (*matches) (const Publication *))
{
	ListCell   *cell;

	foreach(cell, pending)
	{
		Publication *publication = lfirst(cell);

		if (strcmp(publication->root, root) == 0 && matches(publication))
			return true;
	}
	return false;
}

bool
lp_publication_replaces(const char *root)
{
	return pending_for(root, replaces_dataset);
}

static bool
is_plain_append(const Publication *publication)
{
	return publication->request.kind == LP_COMMIT_APPEND && !publication->create;
}

/*
 * Publish the pending publication at index first, with the plain appends to
 * its dataset queued after it and before any other publication to it
 * merged into one Append.
 */
static void
publish_pending(int first)
{
	Publication *publication = list_nth(pending, first);
	LpCommitRequest request = publication->request;
	List	   *merged = list_make1(publication);
	List	   *written = list_copy(publication->written);
	List	   *after = list_copy(publication->after_publication);
	LpCommitResult result;
	ListCell   *cell;

	if (is_plain_append(publication))
	{
		size_t		n = 0;
		LpNewFragment *fragments;

		for_each_from(cell, pending, first + 1)
		{
			Publication *later = lfirst(cell);

			if (strcmp(later->root, publication->root) != 0)
				continue;
			if (!is_plain_append(later))
				break;
			merged = lappend(merged, later);
			written = list_concat(written, later->written);
			after = list_concat(after, later->after_publication);
		}
		foreach(cell, merged)
			n += ((Publication *) lfirst(cell))->request.n_fragments;
		fragments = palloc(sizeof(LpNewFragment) * n);
		n = 0;
		foreach(cell, merged)
		{
			Publication *part = lfirst(cell);

			memcpy(&fragments[n], part->request.fragments,
				   sizeof(LpNewFragment) * part->request.n_fragments);
			n += part->request.n_fragments;
			/* the oldest version read: every commit since then is checked */
			request.read_version = Min(request.read_version, part->request.read_version);
		}
		request.fragments = fragments;
		request.n_fragments = n;
	}

	lp_progress_begin(publication->root, publication->root, LP_PHASE_COMMITTING, 0);
	publish(publication->store, publication->root, publication->server, &request,
			publication->create, publication->create_naming, written, &result);
	foreach(cell, merged)
		((Publication *) lfirst(cell))->published = true;
	lp_progress_end();
	lp_free(result.new_fragment_ids);
	remove_after_publication(after, publication->root, publication->server, result.version);
}

static void
publish_all_pending(void)
{
	MemoryContext context = AllocSetContextCreate(CurrentMemoryContext,
												  "lance_parts publishing",
												  ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(context);

	for (int i = 0; i < list_length(pending); i++)
		if (!((Publication *) list_nth(pending, i))->published)
			publish_pending(i);
	MemoryContextSwitchTo(old);
	MemoryContextDelete(context);
}

/* Drop the publications keep refuses, removing what the unpublished ones wrote. */
static void
drop_pending(bool (*keep) (const Publication *publication, SubTransactionId subid),
			 SubTransactionId subid)
{
	ListCell   *cell;

	foreach(cell, pending)
	{
		Publication *publication = lfirst(cell);

		if (keep(publication, subid))
			continue;
		if (!publication->published)
			remove_written(publication);
		pending = foreach_delete_current(pending, cell);
		MemoryContextDelete(publication->context);
	}
}

static bool
keep_none(const Publication *publication, SubTransactionId subid)
{
	return false;
}

static bool
keep_unless_from(const Publication *publication, SubTransactionId subid)
{
	return publication->subid != subid;
}

static void
publication_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
			publish_all_pending();
			break;
		case XACT_EVENT_PRE_PREPARE:
			if (pending != NIL)
				ereport(ERROR,
						errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						errmsg("cannot PREPARE a transaction that has pending Lance publications"),
						errdetail("Lance versions are published when the transaction commits, which a prepared transaction cannot do."),
						errhint("Set lance_parts.publish_at to \"call\" to publish before PREPARE TRANSACTION."));
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_ABORT:
			drop_pending(keep_none, InvalidSubTransactionId);
			break;
		default:
			break;
	}
}

static void
publication_subxact_callback(SubXactEvent event, SubTransactionId my_subid,
							 SubTransactionId parent_subid, void *arg)
{
	ListCell   *cell;

	if (event == SUBXACT_EVENT_ABORT_SUB)
		drop_pending(keep_unless_from, my_subid);
	else if (event == SUBXACT_EVENT_COMMIT_SUB)
		foreach(cell, pending)
		{
			Publication *publication = lfirst(cell);

			if (publication->subid == my_subid)
				publication->subid = parent_subid;
		}
}

void
LpPublicationInit(void)
{
	DefineCustomEnumVariable("lance_parts.publish_at",
							 gettext_noop("When the dataset versions a transaction writes are published."),
							 gettext_noop("commit: when the transaction commits, nothing at rollback; call: when the function returns, as in 0.2.0."),
							 &publish_at,
							 PUBLISH_AT_COMMIT, publish_at_options,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);
	DefineCustomIntVariable("lance_parts.commit_retries",
							gettext_noop("How often a commit that lost the race for a dataset version is rebuilt on the newer version."),
							NULL,
							&commit_retries,
							20, 0, 1000,
							PGC_USERSET, 0,
							NULL, NULL, NULL);
	lp_fdw_pending_view_hook = pending_view;
	RegisterXactCallback(publication_xact_callback, NULL);
	RegisterSubXactCallback(publication_subxact_callback, NULL);
}
