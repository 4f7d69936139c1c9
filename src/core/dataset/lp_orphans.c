/*
 * lp_orphans.c - which entries of a dataset directory no version references.
 *
 * The references are kept as sorted name sets: the data file paths of every
 * fragment (any base: a name is protected wherever it is referenced, so a
 * base that is this very directory under another path cannot lose files),
 * the directories those paths imply in data/ (a sidecar directory per
 * ".lance" name, the first segment of a path with a '/'), and the
 * transaction files.  The manifests already read are remembered by name so
 * that a refresh reads only new ones.
 */
#include <stdlib.h>
#include <string.h>

#include "base/lp_alloc.h"
#include "dataset/lp_dataset.h"
#include "base/lp_interrupt.h"
#include "dataset/lp_manifest_internal.h"
#include "dataset/lp_orphans.h"
#include "format/lp_deletion.h"
#include "base/lp_path.h"

#define DATA_FILE_SUFFIX ".lance"
#define TRANSACTION_SUFFIX ".txn"
#define MANIFEST_SUFFIX ".manifest"
#define TEMPORARY_SUFFIX ".tmp"
#define TEMPORARY_NONCE_DIGITS 16
#define MAX_PID_DIGITS 10
/* Branches keep their own _versions/ below tree/<branch>/. */
#define BRANCHES_DIR "tree"

typedef struct NameSet
{
	char	  **names;
	size_t		count;
	size_t		capacity;
	bool		sorted;
} NameSet;

struct LpDatasetReferences
{
	NameSet		manifests;		/* _versions entries read */
	NameSet		data_files;		/* DataFile.path values */
	NameSet		data_dirs;		/* directories of data/ those paths need */
	NameSet		transactions;	/* Manifest.transaction_file values */
	NameSet		deletions;		/* deletion files in the root's _deletions/ */
};

static int
compare_names(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

static bool
name_set_add_len(NameSet *set, const char *name, size_t len, LpError *err)
{
	char	   *copy;

	if (set->count == set->capacity)
	{
		size_t		capacity = set->capacity > 0 ? set->capacity * 2 : 64;
		char	  **names = lp_alloc_array(capacity, sizeof(char *));

		if (names == NULL)
			return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
		if (set->count > 0)
			memcpy(names, set->names, set->count * sizeof(char *));
		lp_free(set->names);
		set->names = names;
		set->capacity = capacity;
	}
	copy = lp_alloc(len + 1);
	if (copy == NULL)
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
	memcpy(copy, name, len);
	copy[len] = '\0';
	set->names[set->count++] = copy;
	set->sorted = false;
	return true;
}

static bool
name_set_add(NameSet *set, const char *name, LpError *err)
{
	return name_set_add_len(set, name, strlen(name), err);
}

static void
name_set_sort(NameSet *set)
{
	if (!set->sorted && set->count > 1)
		qsort(set->names, set->count, sizeof(char *), compare_names);
	set->sorted = true;
}

/* Is name among the first n names (which are sorted)? */
static bool
name_set_contains_first(const NameSet *set, size_t n, const char *name)
{
	if (n == 0)
		return false;
	return bsearch(&name, set->names, n, sizeof(char *), compare_names) != NULL;
}

static bool
name_set_contains(const NameSet *set, const char *name)
{
	return name_set_contains_first(set, set->sorted ? set->count : 0, name);
}

static void
name_set_free(NameSet *set)
{
	for (size_t i = 0; i < set->count; i++)
		lp_free(set->names[i]);
	lp_free(set->names);
}

static bool
has_suffix(const char *name, const char *suffix)
{
	size_t		len = strlen(name);
	size_t		suffix_len = strlen(suffix);

	return len > suffix_len && strcmp(name + len - suffix_len, suffix) == 0;
}

const char *
lp_area_directory(LpDatasetArea area)
{
	switch (area)
	{
		case LP_AREA_DATA:
			return LP_DATA_DIR;
		case LP_AREA_STAGING:
			return LP_DATA_DIR "/" LP_STAGING_DIR;
		case LP_AREA_VERSIONS:
			return LP_VERSIONS_DIR;
		case LP_AREA_TRANSACTIONS:
			return LP_TRANSACTIONS_DIR;
		case LP_AREA_DELETIONS:
			return LP_DELETIONS_DIR;
	}
	return NULL;
}

const char *
lp_orphan_kind_name(LpOrphanKind kind)
{
	switch (kind)
	{
		case LP_ORPHAN_TEMPORARY_FILE:
			return "temporary_file";
		case LP_ORPHAN_TRANSACTION_FILE:
			return "transaction_file";
		case LP_ORPHAN_DATA_FILE:
			return "data_file";
		case LP_ORPHAN_SIDECAR_DIRECTORY:
			return "sidecar_directory";
		case LP_ORPHAN_STAGING_DIRECTORY:
			return "staging_directory";
		case LP_ORPHAN_DELETION_FILE:
			return "deletion_file";
		case LP_ORPHAN_MULTIPART_UPLOAD:
			return "multipart_upload";
	}
	return "unknown";
}

bool
lp_temporary_file_name_parse(const char *entry_name, int64_t *pid)
{
	size_t		len = strlen(entry_name);
	size_t		suffix_len = strlen(TEMPORARY_SUFFIX);
	size_t		end;
	size_t		start;
	int64_t		value = 0;

	/* ".", then at least ".<pid>.<nonce>.tmp" */
	if (entry_name[0] != '.' || len < 1 + 3 + TEMPORARY_NONCE_DIGITS + suffix_len + 1 ||
		strcmp(entry_name + len - suffix_len, TEMPORARY_SUFFIX) != 0)
		return false;
	end = len - suffix_len;
	start = end - TEMPORARY_NONCE_DIGITS;
	if (entry_name[start - 1] != '.')
		return false;
	for (size_t i = start; i < end; i++)
		if (!((entry_name[i] >= '0' && entry_name[i] <= '9') ||
			  (entry_name[i] >= 'a' && entry_name[i] <= 'f')))
			return false;

	end = start - 1;
	start = end;
	while (start > 1 && entry_name[start - 1] >= '0' && entry_name[start - 1] <= '9')
		start--;
	/* the pid's digits follow a dot; the copied final name may be empty */
	if (start == end || end - start > MAX_PID_DIGITS || entry_name[start - 1] != '.')
		return false;
	for (size_t i = start; i < end; i++)
		value = value * 10 + (entry_name[i] - '0');
	*pid = value;
	return true;
}

/* Add the references of one manifest. */
static bool
add_manifest_references(LpDatasetReferences *refs, const LpManifest *manifest,
						LpError *err)
{
	const Lance__Table__Manifest *m = manifest->proto;

	if (m->transaction_file != NULL && m->transaction_file[0] != '\0' &&
		!name_set_add(&refs->transactions, m->transaction_file, err))
		return false;
	for (size_t f = 0; f < m->n_fragments; f++)
	{
		const Lance__Table__DataFragment *fragment = m->fragments[f];
		const Lance__Table__DeletionFile *deletion = fragment->deletion_file;

		/* those of other bases are not in the root's _deletions/ */
		if (deletion != NULL &&
			deletion->base_id_present_case != LANCE__TABLE__DELETION_FILE__BASE_ID_PRESENT_BASE_ID)
		{
			char	   *path = lp_deletion_file_path(fragment->id, deletion->read_version, deletion->id,
													 deletion->file_type == LANCE__TABLE__DELETION_FILE__DELETION_FILE_TYPE__BITMAP ?
													 LP_DELETION_BITMAP : LP_DELETION_ARROW);
			bool		added;

			if (path == NULL)
				return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
			added = name_set_add(&refs->deletions, path + strlen(LP_DELETIONS_DIR "/"), err);
			lp_free(path);
			if (!added)
				return false;
		}
		for (size_t d = 0; d < fragment->n_files; d++)
		{
			const char *path = fragment->files[d]->path;
			const char *slash;

			if (path == NULL || path[0] == '\0')
				continue;
			if (!name_set_add(&refs->data_files, path, err))
				return false;
			slash = strchr(path, '/');
			if (slash != NULL)
			{
				if (!name_set_add_len(&refs->data_dirs, path, (size_t) (slash - path), err))
					return false;
			}
			else if (has_suffix(path, DATA_FILE_SUFFIX))
			{
				char	   *sidecars = lp_blob_sidecar_dir(path);
				bool		added;

				if (sidecars == NULL)
					return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
				added = name_set_add(&refs->data_dirs, sidecars, err);
				lp_free(sidecars);
				if (!added)
					return false;
			}
		}
	}
	return true;
}

typedef struct ManifestScan
{
	LpStore    *store;
	const char *directory;
	LpDatasetReferences *refs;
	size_t		known;			/* manifests read before this scan, sorted */
} ManifestScan;

static bool
read_manifest_entry(void *arg, const char *entry_name, LpError *err)
{
	ManifestScan *scan = arg;
	LpInput    *input;
	LpManifest *manifest;
	char	   *path;
	bool		ok;

	/* every "*.manifest" counts: either scheme, detached versions too */
	if (entry_name[0] == '.' || !has_suffix(entry_name, MANIFEST_SUFFIX) ||
		name_set_contains_first(&scan->refs->manifests, scan->known, entry_name))
		return true;
	if (lp_check_cancel(err))
		return false;
	path = lp_path_join(scan->directory, entry_name);
	if (path == NULL)
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
	input = scan->store->ops->open_input(scan->store, path, err);
	lp_free(path);
	if (input == NULL)
	{
		/* Lance's own cleanup removed an old version meanwhile: nothing to protect */
		if (err->code == LP_ERR_NOT_FOUND)
		{
			lp_error_clear(err);
			return true;
		}
		return false;
	}
	manifest = lp_manifest_read(input, err);
	lp_input_close(input);
	if (manifest == NULL)
		return false;
	ok = add_manifest_references(scan->refs, manifest, err);
	lp_manifest_free(manifest);
	/* a manifest is remembered only once its references are in */
	return ok && name_set_add(&scan->refs->manifests, entry_name, err);
}

static bool
refuse_branches_entry(void *arg, const char *entry_name, LpError *err)
{
	return lp_fail(err, LP_ERR_UNSUPPORTED,
				   "dataset \"%s\" has branches (\"%s/%s\")",
				   (const char *) arg, BRANCHES_DIR, entry_name);
}

bool
lp_references_refresh(LpStore *store, const char *root,
					  LpDatasetReferences *refs, LpError *err)
{
	ManifestScan scan;
	char	   *directory;
	bool		ok;

	/* membership tests during the scan need the set sorted */
	name_set_sort(&refs->manifests);
	directory = lp_path_join(root, LP_VERSIONS_DIR);
	if (directory == NULL)
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
	scan.store = store;
	scan.directory = directory;
	scan.refs = refs;
	scan.known = refs->manifests.count;
	ok = store->ops->list(store, directory, read_manifest_entry, &scan, err);
	/* no _versions: no version was ever committed, no manifest to read */
	if (!ok && err->code == LP_ERR_NOT_FOUND && refs->manifests.count == 0)
	{
		lp_error_clear(err);
		ok = true;
	}
	lp_free(directory);
	name_set_sort(&refs->manifests);
	name_set_sort(&refs->data_files);
	name_set_sort(&refs->data_dirs);
	name_set_sort(&refs->transactions);
	name_set_sort(&refs->deletions);
	return ok;
}

/* LpListCallback: note data/, fail on a name no Lance writer puts in a dataset's root. */
static bool
check_first_write_entry(void *arg, const char *entry_name, LpError *err)
{
	bool	   *has_data = arg;

	if (strcmp(entry_name, LP_DATA_DIR) == 0)
		*has_data = true;
	else if (strcmp(entry_name, LP_VERSIONS_DIR) != 0 &&
			 strcmp(entry_name, LP_TRANSACTIONS_DIR) != 0)
		return lp_fail(err, LP_ERR_NOT_FOUND, "\"%s\" is no Lance dataset", entry_name);
	return true;
}

/*
 * Whether a root without manifests is what the first write of a dataset
 * leaves when it dies before its commit: data/ and at most _versions/ and
 * _transactions/ beside it, so that everything of ours in it is an orphan
 * of a dataset with no version.  Anything else there is no dataset, and
 * nothing in it may be called an orphan (LP_ERR_NOT_FOUND).
 */
static bool
first_write_remains(LpStore *store, const char *root, LpError *err)
{
	bool		has_data = false;

	if (!store->ops->list(store, root, check_first_write_entry, &has_data, err))
	{
		if (err->code != LP_ERR_NOT_FOUND)
			return false;
	}
	else if (has_data)
		return true;
	return lp_fail(err, LP_ERR_NOT_FOUND, "no Lance manifest found in \"%s/%s\"",
				   root, LP_VERSIONS_DIR);
}

LpDatasetReferences *
lp_references_read(LpStore *store, const char *root, LpError *err)
{
	LpDatasetReferences *refs;
	char	   *branches = lp_path_join(root, BRANCHES_DIR);
	bool		ok;

	if (branches == NULL)
	{
		lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
		return NULL;
	}
	ok = store->ops->list(store, branches, refuse_branches_entry, (void *) root, err);
	lp_free(branches);
	if (!ok)
	{
		if (err->code != LP_ERR_NOT_FOUND)
		{
			if (err->code == LP_ERR_UNSUPPORTED)
				lp_error_detail(err, "The versions of its branches may reference its files, and they are not read.");
			return NULL;
		}
		lp_error_clear(err);
	}

	refs = lp_alloc0(sizeof(LpDatasetReferences));
	if (refs == NULL)
	{
		lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
		return NULL;
	}
	ok = lp_references_refresh(store, root, refs, err);
	if (ok && refs->manifests.count == 0)
		ok = first_write_remains(store, root, err);
	if (!ok)
	{
		lp_references_free(refs);
		return NULL;
	}
	return refs;
}

uint64_t
lp_references_num_manifests(const LpDatasetReferences *refs)
{
	return refs->manifests.count;
}

void
lp_references_free(LpDatasetReferences *refs)
{
	if (refs == NULL)
		return;
	name_set_free(&refs->manifests);
	name_set_free(&refs->data_files);
	name_set_free(&refs->data_dirs);
	name_set_free(&refs->transactions);
	name_set_free(&refs->deletions);
	lp_free(refs);
}

bool
lp_orphan_classify(const LpDatasetReferences *refs, LpDatasetArea area,
				   const char *entry_name, LpEntryType type,
				   LpOrphanKind *kind, int64_t *writer_pid)
{
	bool		as_file = type != LP_ENTRY_DIRECTORY;
	bool		as_directory = type != LP_ENTRY_FILE;

	*writer_pid = -1;
	if (area != LP_AREA_STAGING && as_file &&
		lp_temporary_file_name_parse(entry_name, writer_pid))
	{
		*kind = LP_ORPHAN_TEMPORARY_FILE;
		return true;
	}
	if (entry_name[0] == '.')
		return false;
	switch (area)
	{
		case LP_AREA_DATA:
			if (as_file && has_suffix(entry_name, DATA_FILE_SUFFIX))
			{
				*kind = LP_ORPHAN_DATA_FILE;
				return !name_set_contains(&refs->data_files, entry_name);
			}
			if (as_directory && strcmp(entry_name, LP_STAGING_DIR) != 0)
			{
				*kind = LP_ORPHAN_SIDECAR_DIRECTORY;
				return !name_set_contains(&refs->data_dirs, entry_name);
			}
			return false;
		case LP_AREA_STAGING:
			/* a committed target's staging directory is garbage too */
			*kind = LP_ORPHAN_STAGING_DIRECTORY;
			return as_directory;
		case LP_AREA_TRANSACTIONS:
			*kind = LP_ORPHAN_TRANSACTION_FILE;
			return as_file && has_suffix(entry_name, TRANSACTION_SUFFIX) &&
				!name_set_contains(&refs->transactions, entry_name);
		case LP_AREA_DELETIONS:
			*kind = LP_ORPHAN_DELETION_FILE;
			return as_file && (has_suffix(entry_name, ".arrow") || has_suffix(entry_name, ".bin")) &&
				!name_set_contains(&refs->deletions, entry_name);
		case LP_AREA_VERSIONS:
			return false;
	}
	return false;
}

char *
lp_orphan_target_file(LpOrphanKind kind, const char *entry_name)
{
	switch (kind)
	{
		case LP_ORPHAN_DATA_FILE:
		case LP_ORPHAN_STAGING_DIRECTORY:
			return lp_strdup(entry_name);
		case LP_ORPHAN_SIDECAR_DIRECTORY:
			{
				size_t		len = strlen(entry_name);
				char	   *name = lp_alloc(len + strlen(DATA_FILE_SUFFIX) + 1);

				if (name != NULL)
				{
					memcpy(name, entry_name, len);
					memcpy(name + len, DATA_FILE_SUFFIX, strlen(DATA_FILE_SUFFIX) + 1);
				}
				return name;
			}
		case LP_ORPHAN_TEMPORARY_FILE:
		case LP_ORPHAN_TRANSACTION_FILE:
		case LP_ORPHAN_DELETION_FILE:
		case LP_ORPHAN_MULTIPART_UPLOAD:
			break;
	}
	return NULL;
}
