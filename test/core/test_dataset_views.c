/*
 * test_dataset_views.c - the accessors the PostgreSQL layer reads manifests
 * through (lp_manifest.h, lp_fragment.h, lp_dataset.h), the schema
 * selections (lp_schema.h) and compaction planning (lp_compact_plan.h), on
 * the generated reference datasets.
 */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "base/lp_alloc.h"
#include "dataset/lp_compact_plan.h"
#include "dataset/lp_dataset.h"
#include "dataset/lp_fragment.h"
#include "format/lp_schema.h"
#include "lp_test.h"
#include "lp_test_store.h"
#include "lp_test_util.h"

static LpManifest *
read_reference(const char *dataset, char *root, size_t root_len)
{
	LpManifestNaming naming;
	LpManifest *manifest;
	LpError		err;

	LP_CHECK(lp_test_data_dir != NULL);
	if (lp_test_data_dir == NULL)
		return NULL;
	lp_test_dataset_path(dataset, root, root_len);
	manifest = lp_dataset_read_latest(lp_test_store(), root, &naming, &err);
	LP_CHECK_MSG(manifest != NULL, "%.100s: %.300s", dataset, err.message);
	return manifest;
}

LP_TEST(views_fragments_and_files)
{
	static const uint64_t rows[] = {300, 170, 45};
	char		root[1024];
	LpManifest *manifest = read_reference("types_2_2_v2", root, sizeof(root));
	LpFileVersion version;
	uint64_t	total = 0;
	char	   *tag;

	if (manifest == NULL)
		return;
	LP_CHECK_EQ_U64(lp_manifest_version(manifest), 3);
	LP_CHECK_STR(lp_manifest_data_format(manifest), "2.2");
	LP_CHECK(lp_manifest_data_version(manifest, &version) && version == LP_FILE_VERSION_2_2);
	LP_CHECK(!lp_manifest_is_legacy(manifest));
	LP_CHECK(!lp_manifest_stable_row_ids(manifest));
	LP_CHECK(lp_manifest_has_fragment(manifest, 2) && !lp_manifest_has_fragment(manifest, 3));
	tag = lp_manifest_tag(manifest);
	/* Lance records the transaction of each version: "<read version>-<uuid>.txn" */
	LP_CHECK(tag != NULL && strncmp(tag, "2-", 2) == 0 && strstr(tag, ".txn") != NULL);
	lp_free(tag);

	LP_CHECK_EQ_U64(lp_manifest_num_fragments(manifest), 3);
	for (size_t f = 0; f < lp_manifest_num_fragments(manifest); f++)
	{
		LpFragment	fragment;
		LpDataFileRef file;
		char		path[2048];
		struct stat st;

		lp_manifest_fragment(manifest, f, &fragment);
		LP_CHECK_EQ_U64(fragment.id, f);
		LP_CHECK_EQ_U64(fragment.physical_rows, rows[f]);
		LP_CHECK(!fragment.has_deletion_file);
		LP_CHECK_EQ_U64(fragment.num_files, 1);
		lp_fragment_data_file(manifest, &fragment, 0, &file);
		LP_CHECK(lp_data_file_in_base(&file, false, 0) && !lp_data_file_in_base(&file, true, 0));
		LP_CHECK(lp_data_file_has_version(&file, LP_FILE_VERSION_2_2) &&
				 !lp_data_file_has_version(&file, LP_FILE_VERSION_2_1));
		LP_CHECK_EQ_U64(file.n_fields, 29);
		LP_CHECK(lp_manifest_references_file(manifest, false, 0, file.path));
		LP_CHECK(!lp_manifest_references_file(manifest, true, 0, file.path));
		snprintf(path, sizeof(path), "%s/data/%s", root, file.path);
		LP_CHECK_MSG(stat(path, &st) == 0 && (uint64_t) st.st_size == file.size_bytes,
					 "%.300s has %llu bytes", path, (unsigned long long) file.size_bytes);
		total += fragment.physical_rows;
	}
	LP_CHECK_EQ_U64(total, 515);
	lp_manifest_free(manifest);
}

LP_TEST(views_deletion_files)
{
	static const uint64_t deleted[] = {12, 0, 30};
	char		root[1024];
	LpManifest *manifest = read_reference("deleted_2_2", root, sizeof(root));

	if (manifest == NULL)
		return;
	LP_CHECK_EQ_U64(lp_manifest_num_fragments(manifest), 3);
	for (size_t f = 0; f < lp_manifest_num_fragments(manifest) && f < 3; f++)
	{
		LpFragment	fragment;
		char	   *relative;
		char		path[2048];
		struct stat st;

		lp_manifest_fragment(manifest, f, &fragment);
		LP_CHECK(fragment.has_deletion_file == (deleted[f] != 0));
		if (!fragment.has_deletion_file)
			continue;
		LP_CHECK_EQ_U64(fragment.deletion_file.num_deleted_rows, deleted[f]);
		LP_CHECK(!fragment.deletion_file.has_base_id);
		relative = lp_deletion_file_path(fragment.id, fragment.deletion_file.read_version,
										 fragment.deletion_file.id, fragment.deletion_file.form);
		LP_CHECK(relative != NULL);
		if (relative == NULL)
			continue;
		snprintf(path, sizeof(path), "%s/%s", root, relative);
		LP_CHECK_MSG(stat(path, &st) == 0, "missing %.300s", path);
		lp_free(relative);
	}
	lp_manifest_free(manifest);
}

LP_TEST(views_legacy_dataset)
{
	char		root[1024];
	LpManifest *manifest = read_reference("types_legacy_v2", root, sizeof(root));
	LpFileVersion version;

	if (manifest == NULL)
		return;
	/* Lance names the legacy storage format "0.1", which no file version is */
	LP_CHECK_STR(lp_manifest_data_format(manifest), "0.1");
	LP_CHECK(!lp_manifest_data_version(manifest, &version));
	LP_CHECK(lp_manifest_is_legacy(manifest));
	lp_manifest_free(manifest);
}

LP_TEST(views_bases_and_paths)
{
	char		root[1024];
	LpManifest *manifest = read_reference("types_2_2_v1", root, sizeof(root));
	LpBaseLocation base;
	LpError		err;
	char	   *path;

	if (manifest != NULL)
	{
		LP_CHECK(lp_manifest_base(manifest, false, 0, root, &base, &err));
		LP_CHECK(base.path == NULL && base.is_dataset_root);
		LP_CHECK(!lp_manifest_base(manifest, true, 7, root, &base, &err));
		LP_CHECK(err.code == LP_ERR_INVALID_ARGUMENT && strstr(err.message, "id 7") != NULL);
		lp_manifest_free(manifest);
	}
	path = lp_base_data_dir("/d/x.lance", true);
	LP_CHECK_STR(path, "/d/x.lance/data");
	lp_free(path);
	path = lp_base_data_dir("/b", false);
	LP_CHECK_STR(path, "/b");
	lp_free(path);
	path = lp_data_file_staging_dir("/d/x.lance/data", "f.lance");
	LP_CHECK_STR(path, "/d/x.lance/data/_parts/f.lance");
	lp_free(path);
	path = lp_data_file_sidecar_dir("/d/x.lance/data", "f.lance");
	LP_CHECK_STR(path, "/d/x.lance/data/f");
	lp_free(path);
	LP_CHECK(lp_data_file_sidecar_dir("/d", "f.txt") == NULL);
}

LP_TEST(schema_select_and_subtree)
{
	char		root[1024];
	LpManifest *manifest = read_reference("types_2_2_v2", root, sizeof(root));
	const char *const names[] = {"st", "i8"};
	const char *const twice[] = {"i8", "st", "i8"};
	const char *const unknown[] = {"i8", "nope"};
	LpSchema	schema;
	LpSchema	selected;
	LpError		err;
	size_t		bad = 99;
	int32_t    *ids;
	size_t		n_ids;

	if (manifest == NULL)
		return;
	LP_CHECK(lp_manifest_schema(manifest, &schema, &err));
	/* in schema order, with the children of st */
	LP_CHECK(lp_schema_select(&schema, names, 2, &selected, &bad) == LP_SCHEMA_SELECT_OK);
	LP_CHECK_EQ_U64(selected.num_fields, 4);
	if (selected.num_fields == 4)
	{
		LP_CHECK_STR(selected.fields[0].name, "i8");
		LP_CHECK_STR(selected.fields[1].name, "st");
		LP_CHECK_STR(selected.fields[2].name, "a");
		LP_CHECK_STR(selected.fields[3].name, "b");
	}
	lp_free(selected.fields);
	LP_CHECK(lp_schema_select(&schema, twice, 3, &selected, &bad) == LP_SCHEMA_SELECT_DUPLICATE);
	LP_CHECK_EQ_U64(bad, 2);
	LP_CHECK(lp_schema_select(&schema, unknown, 2, &selected, &bad) == LP_SCHEMA_SELECT_UNKNOWN);
	LP_CHECK_EQ_U64(bad, 1);
	/* "a" is not a top-level field */
	LP_CHECK(lp_schema_select(&schema, (const char *const[]) {"a"}, 1, &selected, &bad) ==
			 LP_SCHEMA_SELECT_UNKNOWN);

	LP_CHECK(lp_schema_subtree(&schema, (uint32_t) lp_schema_find_field(&schema, 25), &ids, &n_ids));
	LP_CHECK_EQ_U64(n_ids, 3);
	if (n_ids == 3)
		LP_CHECK(ids[0] == 25 && ids[1] == 26 && ids[2] == 27);
	lp_free(ids);
	LP_CHECK(lp_schema_subtree(&schema, (uint32_t) lp_schema_find_field(&schema, 3), &ids, &n_ids));
	LP_CHECK(n_ids == 1 && ids[0] == 3);
	lp_free(ids);
	lp_schema_free(&schema);
	lp_manifest_free(manifest);
}

/* Skip reasons of a plan, one letter per candidate: R(ewritten) or the reason. */
static void
check_plan(const LpCompactPlan *plan, const char *const *expected, size_t n)
{
	LP_CHECK_EQ_U64(plan->n_candidates, n);
	for (size_t i = 0; i < plan->n_candidates && i < n; i++)
	{
		const char *got = plan->candidates[i].group >= 0 ? "rewritten"
			: plan->candidates[i].skip_reason;

		LP_CHECK_MSG(got != NULL && strcmp(got, expected[i]) == 0,
					 "candidate %zu: %s, expected %s", i, got ? got : "(null)", expected[i]);
	}
}

LP_TEST(compact_plan_reference)
{
	char		root[1024];
	LpManifest *manifest = read_reference("types_2_2_v2", root, sizeof(root));
	LpCompactPlan plan;
	LpError		err;

	if (manifest == NULL)
		return;
	/* 300 + 170 + 45 rows fit one fragment of 1000 */
	LP_CHECK(lp_compact_plan(manifest, root, NULL, 0, 1000, false, &plan, &err));
	check_plan(&plan, (const char *const[]) {"rewritten", "rewritten", "rewritten"}, 3);
	LP_CHECK_EQ_U64(plan.read_version, 3);
	LP_CHECK(plan.version == LP_FILE_VERSION_2_2);
	LP_CHECK_EQ_U64(plan.n_groups, 1);
	if (plan.n_groups == 1)
	{
		LP_CHECK(plan.groups[0].first == 0 && plan.groups[0].count == 3);
		LP_CHECK_EQ_U64(plan.groups[0].rows, 515);
		LP_CHECK(plan.groups[0].fragment_ids[0] == 0 && plan.groups[0].fragment_ids[2] == 2);
		/* a group whose file could not be written is skipped with the verdict */
		lp_compact_plan_skip_group(&plan, 0, "schema_mismatch");
		check_plan(&plan, (const char *const[]) {"schema_mismatch", "schema_mismatch",
					   "schema_mismatch"}, 3);
		LP_CHECK(plan.groups[0].skipped);
	}
	lp_compact_plan_free(&plan);

	/* 300 + 170 > 400: fragment 0 has no partner, 1 and 2 do */
	LP_CHECK(lp_compact_plan(manifest, root, NULL, 0, 400, false, &plan, &err));
	check_plan(&plan, (const char *const[]) {LP_COMPACT_NO_ADJACENT, "rewritten", "rewritten"}, 3);
	LP_CHECK_EQ_U64(plan.n_groups, 1);
	lp_compact_plan_free(&plan);

	/* at 100 rows, 300 and 170 are large enough and 45 is alone */
	LP_CHECK(lp_compact_plan(manifest, root, NULL, 0, 100, false, &plan, &err));
	check_plan(&plan, (const char *const[]) {LP_COMPACT_LARGE_ENOUGH, LP_COMPACT_LARGE_ENOUGH,
				   LP_COMPACT_NO_ADJACENT}, 3);
	LP_CHECK_EQ_U64(plan.n_groups, 0);
	lp_compact_plan_free(&plan);

	/* only the selected fragments */
	LP_CHECK(lp_compact_plan(manifest, root, (const uint64_t[]) {0, 1}, 2, 1000, false, &plan, &err));
	check_plan(&plan, (const char *const[]) {"rewritten", "rewritten", LP_COMPACT_NOT_SELECTED}, 3);
	lp_compact_plan_free(&plan);
	LP_CHECK(lp_compact_plan(manifest, root, (const uint64_t[]) {0}, 0, 1000, false, &plan, &err));
	check_plan(&plan, (const char *const[]) {LP_COMPACT_NOT_SELECTED, LP_COMPACT_NOT_SELECTED,
				   LP_COMPACT_NOT_SELECTED}, 3);
	lp_compact_plan_free(&plan);
	lp_manifest_free(manifest);

	/* fragments with deletion files keep them: never rewritten */
	manifest = read_reference("deleted_2_2", root, sizeof(root));
	if (manifest != NULL)
	{
		LP_CHECK(lp_compact_plan(manifest, root, NULL, 0, 1000, false, &plan, &err));
		check_plan(&plan, (const char *const[]) {LP_COMPACT_DELETION_FILE, LP_COMPACT_NO_ADJACENT,
					   LP_COMPACT_DELETION_FILE}, 3);
		lp_compact_plan_free(&plan);

		/* rewrite_deletions: all three in one group, counted by their live rows */
		LP_CHECK(lp_compact_plan(manifest, root, NULL, 0, 1000, true, &plan, &err));
		check_plan(&plan, (const char *const[]) {"rewritten", "rewritten", "rewritten"}, 3);
		LP_CHECK_EQ_U64(plan.n_groups, 1);
		LP_CHECK(plan.candidates[0].has_deletion_file && !plan.candidates[1].has_deletion_file &&
				 plan.candidates[2].has_deletion_file);
		lp_compact_plan_free(&plan);

		/* at 2 rows a target, each fragment with deletions is rewritten alone */
		LP_CHECK(lp_compact_plan(manifest, root, NULL, 0, 2, true, &plan, &err));
		check_plan(&plan, (const char *const[]) {"rewritten", LP_COMPACT_LARGE_ENOUGH,
					   "rewritten"}, 3);
		LP_CHECK_EQ_U64(plan.n_groups, 2);
		lp_compact_plan_free(&plan);
		lp_manifest_free(manifest);
	}

	/* legacy datasets cannot be compacted by page copy */
	manifest = read_reference("types_legacy_v2", root, sizeof(root));
	if (manifest != NULL)
	{
		LP_CHECK(!lp_compact_plan(manifest, root, NULL, 0, 1000, false, &plan, &err));
		LP_CHECK(err.code == LP_ERR_UNSUPPORTED && strstr(err.message, "\"0.1\"") != NULL);
		lp_manifest_free(manifest);
	}
}
