/*
 * lp_write_deletions.c - deleting rows of a dataset from the executor
 * (DELETE on lance_fdw tables).
 *
 * The rows are collected per fragment as their offsets; at the end each
 * touched fragment gets a new deletion file holding its old deletions and
 * the new ones (core/format/lp_deletion.c), or, when no row is left, goes
 * from the dataset, and all of it is published as one Lance Delete on the
 * version the scan read (lp_publish: a delete that got to a fragment first
 * makes it a conflict, 40001).  An UPDATE publishes the deletion of its old
 * rows and the fragments of its new ones as one Lance Update; on a dataset
 * with stable row ids each new row keeps the row id and created-at version
 * of the row it replaces (core/dataset/lp_row_ids.h), as in Lance's Update.
 */
#include "postgres.h"

#include "storage/shmem.h"
#include "utils/hsearch.h"

#include "base/lp_alloc.h"
#include "dataset/lp_commit.h"
#include "dataset/lp_fragment.h"
#include "dataset/lp_row_ids.h"
#include "fdw/lp_fdw.h"
#include "format/lp_deletion.h"
#include "base/lp_pg_error.h"
#include "base/lp_pg_random.h"
#include "write/lp_publication.h"
#include "store/lp_pg_storage.h"
#include "write/lp_write_deletions.h"
#include "write/lp_write_sql.h"

/* The rows deleted from one fragment. */
typedef struct FragmentRows
{
	uint64		fragment_id;	/* hash key */
	LpFragment	fragment;
	size_t		index;			/* in the manifest, dataset order */
	uint32	   *rows;			/* offsets, in the order deleted */
	size_t		num_rows;
	size_t		capacity;
} FragmentRows;

/* A row an UPDATE moves: where it was. */
typedef struct MovedRow
{
	uint64		fragment_id;
	uint64		row;
	uint64		position;		/* among the rows deleted, in order */
} MovedRow;

struct LpDatasetDeletion
{
	const LpFdwSource *source;	/* the version the rows were read in */
	HTAB	   *fragments;		/* FragmentRows by fragment id */
	/* an UPDATE keeping row ids: the rows deleted, in order */
	bool		record_moves;
	MovedRow   *moved;
	size_t		num_moved;
	size_t		moved_capacity;
};

LpDatasetDeletion *
lp_dataset_deletion_begin(const LpFdwSource *source, bool moves)
{
	LpDatasetDeletion *deletion = palloc0(sizeof(LpDatasetDeletion));
	HASHCTL		ctl = {0};
	LpError		err;

	if (!lp_manifest_check_writable(source->manifest, source->path, &err))
		lp_raise(&err);
	ctl.keysize = sizeof(uint64);
	ctl.entrysize = sizeof(FragmentRows);
	ctl.hcxt = CurrentMemoryContext;
	deletion->source = source;
	deletion->record_moves = moves && lp_manifest_stable_row_ids(source->manifest);
	deletion->fragments = hash_create("lance_parts deleted rows", 16, &ctl,
									  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	return deletion;
}

/* The fragment fragment_id of the version read and its index, or ERROR: the scan gave it. */
static size_t
find_fragment(const LpFdwSource *source, uint64 fragment_id, LpFragment *fragment)
{
	for (size_t i = 0; i < source->num_fragments; i++)
	{
		lp_manifest_fragment(source->manifest, i, fragment);
		if (fragment->id == fragment_id)
			return i;
	}
	elog(ERROR, "fragment " UINT64_FORMAT " is not in version " UINT64_FORMAT " of dataset \"%s\"",
		 fragment_id, source->version, source->path);
}

void
lp_dataset_deletion_add(LpDatasetDeletion *deletion, uint64 fragment_id, uint64 row)
{
	bool		found;
	FragmentRows *entry = hash_search(deletion->fragments, &fragment_id, HASH_ENTER, &found);

	if (!found)
	{
		if (lp_fdw_source_fragment_pending(deletion->source, fragment_id))
			ereport(ERROR,
					errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					errmsg("cannot delete or update rows of dataset \"%s\" that this transaction wrote",
						   deletion->source->path),
					errdetail("Fragment " UINT64_FORMAT " is published when the transaction commits; until then its rows can be read but not changed.",
							  fragment_id),
					errhint("Commit first, or set lance_parts.publish_at to \"call\"."));
		entry->index = find_fragment(deletion->source, fragment_id, &entry->fragment);
		entry->rows = NULL;
		entry->num_rows = 0;
		entry->capacity = 0;
	}
	if (row >= entry->fragment.physical_rows)
		elog(ERROR, "row " UINT64_FORMAT " is beyond the " UINT64_FORMAT " rows of fragment " UINT64_FORMAT,
			 row, (uint64) entry->fragment.physical_rows, fragment_id);
	if (entry->num_rows == entry->capacity)
	{
		entry->capacity = Max(entry->capacity * 2, 1024);
		entry->rows = entry->rows == NULL ? palloc(sizeof(uint32) * entry->capacity) :
			repalloc(entry->rows, sizeof(uint32) * entry->capacity);
	}
	entry->rows[entry->num_rows++] = (uint32) row;
	if (deletion->record_moves)
	{
		if (deletion->num_moved == deletion->moved_capacity)
		{
			deletion->moved_capacity = Max(deletion->moved_capacity * 2, 1024);
			deletion->moved = deletion->moved == NULL ?
				palloc_extended(sizeof(MovedRow) * deletion->moved_capacity, MCXT_ALLOC_HUGE) :
				repalloc_huge(deletion->moved, sizeof(MovedRow) * deletion->moved_capacity);
		}
		deletion->moved[deletion->num_moved].fragment_id = fragment_id;
		deletion->moved[deletion->num_moved].row = row;
		deletion->moved[deletion->num_moved].position = deletion->num_moved;
		deletion->num_moved++;
	}
}

static int
compare_rows(const void *a, const void *b)
{
	uint32		x = *(const uint32 *) a;
	uint32		y = *(const uint32 *) b;

	return x < y ? -1 : x > y;
}

/* The fragment's deletions as read, or none (zeroed). */
static void
read_old_deletions(const LpFdwSource *source, const LpFragment *fragment, LpDeletions *deletions)
{
	LpStore    *store;
	char	   *path;
	LpInput    *input;
	LpError		err;

	memset(deletions, 0, sizeof(*deletions));
	if (!fragment->has_deletion_file)
		return;
	path = lp_fdw_deletion_file_path(source, fragment, &store);
	input = lp_open_input_in(store, path);
	if (!lp_deletions_read(input, fragment->deletion_file.form, fragment->physical_rows,
						   deletions, &err))
		lp_raise(&err);
	lp_input_close(input);
}

/*
 * The new state of one fragment: its deletions with rows added, written as
 * a new deletion file unless no row is left; the rows newly deleted.
 */
static uint64
delete_rows(const LpFdwSource *source, FragmentRows *entry, LpDeleteFragment *out,
			List **written)
{
	const LpFragment *fragment = &entry->fragment;
	LpStore    *store = lp_store_below_via(source->path, source->server);
	LpDeletions deletions;
	uint64		before;
	size_t		n = 0;
	LpError		err;

	if (fragment->has_deletion_file && fragment->deletion_file.has_base_id)
		ereport(ERROR,
				errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				errmsg("cannot delete from fragment " UINT64_FORMAT " of dataset \"%s\": its deletion file is in another base",
					   (uint64) fragment->id, source->path));
	/* in order, each once */
	qsort(entry->rows, entry->num_rows, sizeof(uint32), compare_rows);
	for (size_t i = 0; i < entry->num_rows; i++)
		if (n == 0 || entry->rows[i] != entry->rows[n - 1])
			entry->rows[n++] = entry->rows[i];

	read_old_deletions(source, fragment, &deletions);
	before = deletions.num_deleted;
	if (!lp_deletions_add(&deletions, fragment->physical_rows, entry->rows, n, &err))
		lp_raise(&err);

	memset(out, 0, sizeof(*out));
	out->fragment_id = fragment->id;
	out->had_deletion_file = fragment->has_deletion_file;
	out->old_read_version = fragment->deletion_file.read_version;
	out->old_id = fragment->deletion_file.id;
	out->all_deleted = deletions.num_deleted == fragment->physical_rows;
	if (!out->all_deleted)
	{
		out->read_version = source->published_version;
		out->num_deleted_rows = deletions.num_deleted;
		if (!lp_deletion_file_write(store, source->path, fragment->id, source->published_version,
									&deletions, lp_random_bytes, NULL, &out->id, &err))
			lp_raise(&err);
		*written = lappend(*written,
						   lp_publication_path(source->path,
											   lp_require_memory(lp_deletion_file_path(fragment->id, source->published_version,
																					   out->id, LP_DELETION_BITMAP)),
											   false,
											   psprintf("The deletion file of fragment " UINT64_FORMAT " of dataset \"%s\"",
														(uint64) fragment->id, source->path)));
	}
	before = deletions.num_deleted - before;
	lp_deletions_free(&deletions);
	return before;
}

/*
 * Write the touched fragments' deletion files: the fragments' new states
 * (*deletes, *n_deletes), the paths to remove if the publication is not
 * made; the rows newly deleted.
 */
static uint64
deletion_end(LpDatasetDeletion *deletion, LpDeleteFragment **deletes, size_t *n_deletes,
			 List **written)
{
	const LpFdwSource *source = deletion->source;
	HASH_SEQ_STATUS status;
	FragmentRows *entry;
	uint64		deleted = 0;
	size_t		i = 0;

	*n_deletes = hash_get_num_entries(deletion->fragments);
	*deletes = palloc0(sizeof(LpDeleteFragment) * Max(*n_deletes, 1));
	*written = NIL;
	if (*n_deletes == 0)
		return 0;
	lp_publication_check_deletion(source->path);
	hash_seq_init(&status, deletion->fragments);
	while ((entry = hash_seq_search(&status)) != NULL)
		deleted += delete_rows(source, entry, &(*deletes)[i++], written);
	return deleted;
}

/* Publish request (its kind, deletes and fragments set) on the version the rows were read in. */
static void
publish_on_read_version(const LpDatasetDeletion *deletion, LpCommitRequest *request, List *written)
{
	LpPublicationRequest publication = {0};
	LpCommitResult result;

	request->read_version = deletion->source->published_version;
	publication.root = deletion->source->path;
	publication.server = deletion->source->server;
	publication.commit = request;
	publication.written = written;
	(void) lp_publish(&publication, &result);
	lp_free(result.new_fragment_ids);
}

uint64
lp_dataset_deletion_finish(LpDatasetDeletion *deletion)
{
	LpCommitRequest request = {0};
	LpDeleteFragment *deletes;
	List	   *written;
	uint64		deleted;

	deleted = deletion_end(deletion, &deletes, &request.n_deletes, &written);
	request.kind = LP_COMMIT_DELETE;
	request.deletes = deletes;
	if (request.n_deletes > 0)
		publish_on_read_version(deletion, &request, written);
	return deleted;
}

static int
compare_moved(const void *a, const void *b)
{
	const MovedRow *x = a;
	const MovedRow *y = b;

	if (x->fragment_id != y->fragment_id)
		return x->fragment_id < y->fragment_id ? -1 : 1;
	return x->row < y->row ? -1 : x->row > y->row;
}

/*
 * Each new fragment's rows keep the row ids and created-at versions of the
 * rows they replace: the i-th row written replaces the i-th row deleted.
 */
static void
keep_moved_row_ids(const LpDatasetDeletion *deletion, LpNewFragment *fragments, size_t n_fragments)
{
	const LpFdwSource *source = deletion->source;
	uint64	   *row_ids = palloc_extended(sizeof(uint64) * Max(deletion->num_moved, 1), MCXT_ALLOC_HUGE);
	uint64	   *created_at = palloc_extended(sizeof(uint64) * Max(deletion->num_moved, 1), MCXT_ALLOC_HUGE);
	MovedRow   *sorted = palloc_extended(sizeof(MovedRow) * Max(deletion->num_moved, 1), MCXT_ALLOC_HUGE);
	uint64		given = 0;

	/* a row given twice (UPDATE ... FROM matching it twice) would make two rows of one row id */
	memcpy(sorted, deletion->moved, sizeof(MovedRow) * deletion->num_moved);
	qsort(sorted, deletion->num_moved, sizeof(MovedRow), compare_moved);
	for (size_t i = 1; i < deletion->num_moved; i++)
		if (compare_moved(&sorted[i - 1], &sorted[i]) == 0)
			ereport(ERROR,
					errcode(ERRCODE_CARDINALITY_VIOLATION),
					errmsg("UPDATE would change a row of dataset \"%s\" a second time", source->path),
					errdetail("Its rows keep their stable row ids, so each row can be updated only once in one statement."),
					errhint("Ensure that no row is matched by more than one source row."));
	/* each fragment's row ids read once, for its rows in a run of the sorted moves */
	for (size_t first = 0, next; first < deletion->num_moved; first = next)
	{
		FragmentRows *entry = hash_search(deletion->fragments, &sorted[first].fragment_id,
										  HASH_FIND, NULL);
		uint64_t	rows;
		uint64_t   *fragment_values;
		LpError		err;

		CHECK_FOR_INTERRUPTS();
		Assert(entry != NULL);
		rows = entry->fragment.physical_rows;
		/* its row ids, created-at and last-updated-at versions */
		fragment_values = palloc_extended(mul_size(add_size(mul_size(rows, 3), 1), sizeof(uint64)),
										  MCXT_ALLOC_HUGE);
		if (!lp_row_meta_read(source->manifest, entry->index, fragment_values,
							  fragment_values + rows, fragment_values + 2 * rows, &err))
			lp_raise(&err);
		for (next = first; next < deletion->num_moved &&
			 sorted[next].fragment_id == sorted[first].fragment_id; next++)
		{
			row_ids[sorted[next].position] = fragment_values[sorted[next].row];
			created_at[sorted[next].position] = fragment_values[rows + sorted[next].row];
		}
		pfree(fragment_values);
	}
	pfree(sorted);
	for (size_t k = 0; k < n_fragments; k++)
	{
		if (fragments[k].physical_rows > deletion->num_moved - given)
			break;
		fragments[k].moved_row_ids = row_ids + given;
		fragments[k].moved_created_at = created_at + given;
		given += fragments[k].physical_rows;
	}
	if (given != deletion->num_moved)
		elog(ERROR, "an UPDATE of dataset \"%s\" wrote " UINT64_FORMAT " rows for %zu rows deleted",
			 source->path, given, deletion->num_moved);
}

uint64
lp_dataset_update_finish(LpDatasetDeletion *deletion, LpDatasetAppend *append)
{
	LpCommitRequest request = {0};
	LpDeleteFragment *deletes;
	LpNewFragment *fragments;
	List	   *deletion_files;
	List	   *data_files;
	uint64		updated;

	/* until it ends, an ERROR removes what the append wrote */
	updated = deletion_end(deletion, &deletes, &request.n_deletes, &deletion_files);
	lp_dataset_append_end(append, &fragments, &request.n_fragments, &data_files);
	if (deletion->record_moves)
		keep_moved_row_ids(deletion, fragments, request.n_fragments);
	request.kind = LP_COMMIT_UPDATE;
	request.deletes = deletes;
	request.fragments = fragments;
	if (request.n_deletes > 0)
		publish_on_read_version(deletion, &request, list_concat(data_files, deletion_files));
	return updated;
}
