/*
 * test_orphans.c - lp_orphans: the references of every version of a
 * dataset (both manifest naming schemes), and which entries of its areas
 * are orphans.
 */
#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/lp_alloc.h"
#include "dataset/lp_dataset.h"
#include "dataset/lp_manifest_internal.h"
#include "dataset/lp_orphans.h"
#include "lp_test.h"
#include "lp_test_files.h"
#include "lp_test_store.h"
#include "lp_test_util.h"

LP_TEST(orphans_temporary_file_names)
{
	static const struct
	{
		const char *name;
		bool		ours;
		int64_t		pid;
	}			cases[] = {
		/* today's names, and shortened copies of the final name (or none) */
		{".0101100100110111111111004f155542eb909d201ec1d1a6d8.lance.12345.0123456789abcdef.tmp", true, 12345},
		{".18446744073709551613.manifest.7.fedcba9876543210.tmp", true, 7},
		{".0101.12.0123456789abcdef.tmp", true, 12},
		{"..4194304.0123456789abcdef.tmp", true, 4194304},
		/* not ours */
		{"0101.lance.12345.0123456789abcdef.tmp", false, 0},
		{".x.12345.0123456789ABCDEF.tmp", false, 0},
		{".x.12345.0123456789abcde.tmp", false, 0},
		{".x.0123456789abcdef.tmp", false, 0},
		{".x.12345678901.0123456789abcdef.tmp", false, 0},
		{".x.123a.0123456789abcdef.tmp", false, 0},
		{".x.12345.0123456789abcdef.tmp.lance", false, 0},
		{"x.lance.tmp-123-4", false, 0},
		{".tmp", false, 0},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		int64_t		pid = -2;
		bool		ours = lp_temporary_file_name_parse(cases[i].name, &pid);

		LP_CHECK_MSG(ours == cases[i].ours, "%s: %d", cases[i].name, ours);
		if (ours && cases[i].ours)
			LP_CHECK_EQ_U64(pid, cases[i].pid);
	}
}

static LpDatasetReferences *
read_references(const char *root, LpError *err)
{
	return lp_references_read(lp_test_store(), root, err);
}

static bool
is_orphan(const LpDatasetReferences *refs, LpDatasetArea area, const char *name,
		  LpEntryType type, LpOrphanKind expected_kind)
{
	LpOrphanKind kind;
	int64_t		pid;
	bool		orphan = lp_orphan_classify(refs, area, name, type, &kind, &pid);

	LP_CHECK_MSG(!orphan || kind == expected_kind, "%s: kind %s", name, lp_orphan_kind_name(kind));
	return orphan;
}

/* Check every entry of the copy of a reference dataset: nothing is an orphan. */
typedef struct EntryCheck
{
	const LpDatasetReferences *refs;
	LpDatasetArea area;
	size_t		seen;
} EntryCheck;

static bool
check_not_orphan(void *arg, const char *entry_name, LpError *err)
{
	EntryCheck *check = arg;
	LpOrphanKind kind;
	int64_t		pid;

	(void) err;
	check->seen++;
	LP_CHECK_MSG(!lp_orphan_classify(check->refs, check->area, entry_name, LP_ENTRY_FILE, &kind, &pid),
				 "%s of a reference dataset is called an orphan (%s)", entry_name,
				 lp_orphan_kind_name(kind));
	return true;
}

static size_t
check_area(const char *root, const LpDatasetReferences *refs, LpDatasetArea area)
{
	char		path[2048];
	EntryCheck	check = {refs, area, 0};
	LpError		err;
	LpStore    *store = lp_test_store();

	snprintf(path, sizeof(path), "%s/%s", root, lp_area_directory(area));
	LP_CHECK_MSG(store->ops->list(store, path, check_not_orphan, &check, &err), "%s", err.message);
	return check.seen;
}

LP_TEST(orphans_reference_datasets_have_none)
{
	/* both naming schemes; a dataset with deletions */
	static const char *const datasets[] = {"types_2_1_v1", "types_2_2_v2", "deleted_2_2"};
	char		work[1024];

	LP_CHECK(lp_test_data_dir != NULL);
	if (lp_test_data_dir == NULL)
		return;
	snprintf(work, sizeof(work), "%s", lp_test_make_temp_dir());
	for (size_t i = 0; i < sizeof(datasets) / sizeof(datasets[0]); i++)
	{
		char		root[1200];
		LpError		err;
		LpDatasetReferences *refs;

		snprintf(root, sizeof(root), "%s/%s.lance", work, datasets[i]);
		lp_test_copy_dataset(datasets[i], root);
		refs = read_references(root, &err);
		LP_CHECK_MSG(refs != NULL, "%s: %.400s", datasets[i], err.message);
		if (refs == NULL)
			continue;
		LP_CHECK(lp_references_num_manifests(refs) >= 2);
		LP_CHECK(check_area(root, refs, LP_AREA_DATA) >= 2);
		LP_CHECK(check_area(root, refs, LP_AREA_TRANSACTIONS) >= 2);
		LP_CHECK(check_area(root, refs, LP_AREA_VERSIONS) >= 2);
		/* lancedb's deletion files are referenced */
		if (strcmp(datasets[i], "deleted_2_2") == 0)
			LP_CHECK(check_area(root, refs, LP_AREA_DELETIONS) >= 1);
		lp_references_free(refs);
	}
	lp_test_remove_tree(work);
}

/* The data file only the latest version references, and that version's manifest. */
static void
latest_only(const char *root, char *data_file, size_t data_file_size,
			char *manifest_path, size_t manifest_path_size,
			char *transaction, size_t transaction_size)
{
	LpManifestNaming naming;
	LpError		err;
	LpManifest *latest = lp_dataset_read_latest(lp_test_store(), root, &naming, &err);
	const Lance__Table__DataFragment *last;
	char		name[LP_MANIFEST_NAME_SIZE];

	LP_CHECK_MSG(latest != NULL, "%s", err.message);
	if (latest == NULL)
		return;
	last = latest->proto->fragments[latest->proto->n_fragments - 1];
	snprintf(data_file, data_file_size, "%s", last->files[0]->path);
	snprintf(transaction, transaction_size, "%s", latest->proto->transaction_file);
	lp_manifest_name(naming, latest->proto->version, name);
	snprintf(manifest_path, manifest_path_size, "%s/_versions/%s", root, name);
	lp_manifest_free(latest);
}

LP_TEST(orphans_classification)
{
	static const char *const datasets[] = {"types_2_1_v1", "types_2_2_v2"};
	char		work[1024];

	LP_CHECK(lp_test_data_dir != NULL);
	if (lp_test_data_dir == NULL)
		return;
	snprintf(work, sizeof(work), "%s", lp_test_make_temp_dir());
	for (size_t i = 0; i < sizeof(datasets) / sizeof(datasets[0]); i++)
	{
		char		root[1200];
		char		newest_file[256];
		char		newest_stem[256];
		char		manifest[1500];
		char		aside[1600];
		char		transaction[256];
		LpError		err;
		LpDatasetReferences *refs;
		LpOrphanKind kind;
		int64_t		pid;

		snprintf(root, sizeof(root), "%s/%s.lance", work, datasets[i]);
		lp_test_copy_dataset(datasets[i], root);
		latest_only(root, newest_file, sizeof(newest_file), manifest, sizeof(manifest),
					transaction, sizeof(transaction));
		snprintf(newest_stem, sizeof(newest_stem), "%.*s",
				 (int) (strlen(newest_file) - strlen(".lance")), newest_file);

		/* without the latest manifest, what only it references is an orphan */
		snprintf(aside, sizeof(aside), "%s.aside", manifest);
		LP_CHECK(rename(manifest, aside) == 0);
		refs = read_references(root, &err);
		LP_CHECK_MSG(refs != NULL, "%s", err.message);
		if (refs == NULL)
			continue;
		LP_CHECK(is_orphan(refs, LP_AREA_DATA, newest_file, LP_ENTRY_FILE, LP_ORPHAN_DATA_FILE));
		LP_CHECK(is_orphan(refs, LP_AREA_DATA, newest_stem, LP_ENTRY_DIRECTORY, LP_ORPHAN_SIDECAR_DIRECTORY));
		LP_CHECK(is_orphan(refs, LP_AREA_TRANSACTIONS, transaction, LP_ENTRY_FILE, LP_ORPHAN_TRANSACTION_FILE));
		/* a symlink is classified by its name, for the caller to report */
		LP_CHECK(is_orphan(refs, LP_AREA_DATA, newest_file, LP_ENTRY_OTHER, LP_ORPHAN_DATA_FILE));

		/* it comes back: a refresh reads it, and its references count again */
		LP_CHECK(rename(aside, manifest) == 0);
		LP_CHECK_MSG(lp_references_refresh(lp_test_store(), root, refs, &err), "%s", err.message);
		LP_CHECK(!is_orphan(refs, LP_AREA_DATA, newest_file, LP_ENTRY_FILE, LP_ORPHAN_DATA_FILE));
		LP_CHECK(!is_orphan(refs, LP_AREA_DATA, newest_stem, LP_ENTRY_DIRECTORY, LP_ORPHAN_SIDECAR_DIRECTORY));
		LP_CHECK(!is_orphan(refs, LP_AREA_TRANSACTIONS, transaction, LP_ENTRY_FILE, LP_ORPHAN_TRANSACTION_FILE));

		/* names nobody references */
		LP_CHECK(is_orphan(refs, LP_AREA_DATA, "new.lance", LP_ENTRY_FILE, LP_ORPHAN_DATA_FILE));
		LP_CHECK(is_orphan(refs, LP_AREA_DATA, "new", LP_ENTRY_DIRECTORY, LP_ORPHAN_SIDECAR_DIRECTORY));
		LP_CHECK(is_orphan(refs, LP_AREA_TRANSACTIONS, "3-abc.txn", LP_ENTRY_FILE, LP_ORPHAN_TRANSACTION_FILE));
		LP_CHECK(is_orphan(refs, LP_AREA_STAGING, "new.lance", LP_ENTRY_DIRECTORY, LP_ORPHAN_STAGING_DIRECTORY));
		LP_CHECK(is_orphan(refs, LP_AREA_STAGING, newest_file, LP_ENTRY_DIRECTORY, LP_ORPHAN_STAGING_DIRECTORY));
		LP_CHECK(is_orphan(refs, LP_AREA_VERSIONS, ".x.manifest.99.0123456789abcdef.tmp",
						   LP_ENTRY_FILE, LP_ORPHAN_TEMPORARY_FILE));
		LP_CHECK(lp_orphan_classify(refs, LP_AREA_DATA, ".new.lance.42.0123456789abcdef.tmp",
									LP_ENTRY_FILE, &kind, &pid));
		LP_CHECK(kind == LP_ORPHAN_TEMPORARY_FILE && pid == 42);
		LP_CHECK(is_orphan(refs, LP_AREA_DELETIONS, "3-2-12345.bin", LP_ENTRY_FILE, LP_ORPHAN_DELETION_FILE));
		LP_CHECK(is_orphan(refs, LP_AREA_DELETIONS, "3-2-12345.arrow", LP_ENTRY_FILE, LP_ORPHAN_DELETION_FILE));
		LP_CHECK(lp_orphan_classify(refs, LP_AREA_DELETIONS, ".3-2-12345.bin.42.0123456789abcdef.tmp",
									LP_ENTRY_FILE, &kind, &pid));
		LP_CHECK(kind == LP_ORPHAN_TEMPORARY_FILE && pid == 42);

		/* what is not ours, or not of that type, is never an orphan */
		LP_CHECK(!is_orphan(refs, LP_AREA_DATA, "_parts", LP_ENTRY_DIRECTORY, LP_ORPHAN_SIDECAR_DIRECTORY));
		LP_CHECK(!is_orphan(refs, LP_AREA_DATA, ".hidden", LP_ENTRY_DIRECTORY, LP_ORPHAN_SIDECAR_DIRECTORY));
		LP_CHECK(!is_orphan(refs, LP_AREA_DATA, "notes.txt", LP_ENTRY_FILE, LP_ORPHAN_DATA_FILE));
		LP_CHECK(!is_orphan(refs, LP_AREA_STAGING, "part.lance", LP_ENTRY_FILE, LP_ORPHAN_STAGING_DIRECTORY));
		LP_CHECK(!is_orphan(refs, LP_AREA_TRANSACTIONS, "3-abc.txn", LP_ENTRY_DIRECTORY, LP_ORPHAN_TRANSACTION_FILE));
		LP_CHECK(!is_orphan(refs, LP_AREA_VERSIONS, "99.manifest", LP_ENTRY_FILE, LP_ORPHAN_TEMPORARY_FILE));
		LP_CHECK(!is_orphan(refs, LP_AREA_DELETIONS, "3-2-12345.bin", LP_ENTRY_DIRECTORY, LP_ORPHAN_DELETION_FILE));
		LP_CHECK(!is_orphan(refs, LP_AREA_DELETIONS, "notes.txt", LP_ENTRY_FILE, LP_ORPHAN_DELETION_FILE));
		LP_CHECK(!is_orphan(refs, LP_AREA_STAGING, ".x.lance.1.0123456789abcdef.tmp", LP_ENTRY_FILE,
							LP_ORPHAN_TEMPORARY_FILE));

		/* owners of the per-target locks */
		{
			char	   *owner = lp_orphan_target_file(LP_ORPHAN_SIDECAR_DIRECTORY, "abc");

			LP_CHECK_STR(owner, "abc.lance");
			lp_free(owner);
			owner = lp_orphan_target_file(LP_ORPHAN_STAGING_DIRECTORY, "abc.lance");
			LP_CHECK_STR(owner, "abc.lance");
			lp_free(owner);
			LP_CHECK(lp_orphan_target_file(LP_ORPHAN_TRANSACTION_FILE, "3-abc.txn") == NULL);
		}
		lp_references_free(refs);
	}
	lp_test_remove_tree(work);
}

LP_TEST(orphans_refused_where_references_are_unknown)
{
	char		work[1024];
	char		path[1500];
	LpError		err;
	FILE	   *file;

	LP_CHECK(lp_test_data_dir != NULL);
	if (lp_test_data_dir == NULL)
		return;
	snprintf(work, sizeof(work), "%s", lp_test_make_temp_dir());

	/* no manifest at all: not a dataset */
	snprintf(path, sizeof(path), "%s/empty", work);
	LP_CHECK(mkdir(path, 0777) == 0);
	snprintf(path, sizeof(path), "%s/empty/_versions", work);
	LP_CHECK(mkdir(path, 0777) == 0);
	snprintf(path, sizeof(path), "%s/empty", work);
	LP_CHECK(read_references(path, &err) == NULL && err.code == LP_ERR_NOT_FOUND);
	snprintf(path, sizeof(path), "%s/missing", work);
	LP_CHECK(read_references(path, &err) == NULL && err.code == LP_ERR_NOT_FOUND);

	/* a damaged manifest (a detached one: every *.manifest counts) */
	snprintf(path, sizeof(path), "%s/damaged.lance", work);
	lp_test_copy_dataset("types_2_2_v2", path);
	snprintf(path, sizeof(path), "%s/damaged.lance/_versions/d123.manifest", work);
	file = fopen(path, "w");
	LP_CHECK(file != NULL);
	if (file != NULL)
	{
		fputs("not a manifest", file);
		fclose(file);
	}
	snprintf(path, sizeof(path), "%s/damaged.lance", work);
	LP_CHECK(read_references(path, &err) == NULL && err.code == LP_ERR_CORRUPT);

	/* branches keep manifests elsewhere */
	snprintf(path, sizeof(path), "%s/branched.lance", work);
	lp_test_copy_dataset("types_2_2_v2", path);
	snprintf(path, sizeof(path), "%s/branched.lance/tree", work);
	LP_CHECK(mkdir(path, 0777) == 0);
	snprintf(path, sizeof(path), "%s/branched.lance", work);
	{
		LpDatasetReferences *refs = read_references(path, &err);

		/* an empty tree/ holds no branch */
		LP_CHECK_MSG(refs != NULL, "%s", err.message);
		lp_references_free(refs);
	}
	snprintf(path, sizeof(path), "%s/branched.lance/tree/dev", work);
	LP_CHECK(mkdir(path, 0777) == 0);
	snprintf(path, sizeof(path), "%s/branched.lance", work);
	LP_CHECK(read_references(path, &err) == NULL && err.code == LP_ERR_UNSUPPORTED);
	lp_test_remove_tree(work);
}
