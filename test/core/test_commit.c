/*
 * test_commit.c - commits into copies of the generated datasets, read back
 * with the reference implementation (test/reference/check_commit.cjs and,
 * for deletes and updates, read_offsets.cjs, run with node; they find @lancedb/lancedb
 * in test/reference/node_modules or through NODE_PATH).
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/lp_alloc.h"
#include "dataset/lp_commit.h"
#include "dataset/lp_dataset.h"
#include "dataset/lp_manifest_internal.h"
#include "base/lp_protobuf.h"
#include "format/lp_deletion.h"
#include "format/lp_roaring.h"
#include "json_reader.h"
#include "lp_test.h"
#include "lp_test_files.h"
#include "lp_test_store.h"
#include "lp_test_util.h"
#include "dataset/lp_transaction.h"
#include "rowids.pb-c.h"
#include "transaction.pb-c.h"
#include "transaction.pb-c.h"

#define CHECK_TEXT(a, b) \
	LP_CHECK_MSG(strcmp((a), (b)) == 0, "%s == \"%.150s\" (got \"%.150s\")", #a, (b), (a))

/* Run the reference check; true if it passed. */
static bool
reference_check(const char *root, uint64_t rows, const char *pairs, bool modify)
{
	char		command[8192];
	int			status;

	snprintf(command, sizeof(command),
			 "LANCEDB_LOG=error node test/reference/check_commit.cjs '%s' %llu %s %s",
			 root, (unsigned long long) rows, pairs, modify ? "--modify" : "");
	status = system(command);
	LP_CHECK_MSG(status == 0, "reference check failed: %.400s", command);
	return status == 0;
}

static uint64_t
file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? (uint64_t) st.st_size : 0;
}

static bool
copy_file(const char *from, const char *to)
{
	char		command[8192];

	snprintf(command, sizeof(command), "cp '%s' '%s'", from, to);
	return system(command) == 0;
}

/*
 * Copy the data file of fragment `source` of the dataset at root under a
 * fresh generated name, and describe it as a new data file.  The name and
 * the field arrays point into *manifest and name.
 */
static bool
stage_copy(const char *root, const LpManifest *manifest, uint64_t source,
		   uint64_t *seed, char name[LP_DATA_FILE_NAME_SIZE],
		   LpNewDataFile *file, uint64_t *rows)
{
	const Lance__Table__DataFragment *fragment = lp_manifest_find_fragment(manifest->proto, source);
	const Lance__Table__DataFile *data_file;
	char		from[2048];
	char		to[2048];
	LpError		err;

	LP_CHECK(fragment != NULL && fragment->n_files == 1);
	if (fragment == NULL || fragment->n_files != 1)
		return false;
	data_file = fragment->files[0];
	LP_CHECK(lp_generate_data_file_name(lp_test_random, seed, name, &err));
	snprintf(from, sizeof(from), "%s/data/%s", root, data_file->path);
	snprintf(to, sizeof(to), "%s/data/%s", root, name);
	LP_CHECK(copy_file(from, to));

	memset(file, 0, sizeof(*file));
	file->path = name;
	file->fields = data_file->fields;
	file->column_indices = data_file->column_indices;
	file->n_fields = data_file->n_fields;
	LP_CHECK(lp_file_version_parse(manifest->proto->data_format->version, &file->version));
	file->size_bytes = file_size(to);
	LP_CHECK_EQ_U64(file->size_bytes, data_file->file_size_bytes);
	*rows = fragment->physical_rows;
	return true;
}

static LpManifest *read_latest(const char *root, LpManifestNaming *naming);

/*
 * Copy a reference dataset into a new temporary directory work (root
 * receives the copy's path) and read its latest manifest; NULL (a failed
 * check) without reference data.
 */
static LpManifest *
copy_and_read_latest(const char *dataset, char *work, size_t work_len,
					 char *root, size_t root_len, LpManifestNaming *naming)
{
	LP_CHECK(lp_test_data_dir != NULL);
	if (lp_test_data_dir == NULL)
		return NULL;
	snprintf(work, work_len, "%s", lp_test_make_temp_dir());
	snprintf(root, root_len, "%s/%s.lance", work, dataset);
	lp_test_copy_dataset(dataset, root);
	return read_latest(root, naming);
}

static LpManifest *
read_latest(const char *root, LpManifestNaming *naming)
{
	LpError		err;
	LpManifest *manifest = lp_dataset_read_latest(lp_test_store(), root, naming, &err);

	LP_CHECK_MSG(manifest != NULL, "reading %.150s: %.150s", root, err.message);
	return manifest;
}

static uint64_t
total_rows(const LpManifest *manifest)
{
	uint64_t	rows = 0;

	for (size_t i = 0; i < manifest->proto->n_fragments; i++)
	{
		const Lance__Table__DataFragment *f = manifest->proto->fragments[i];

		rows += f->physical_rows;
		if (f->deletion_file != NULL)
			rows -= f->deletion_file->num_deleted_rows;
	}
	return rows;
}

/* The .txn file a version names holds the same bytes as its inline section. */
static void
check_transaction_file(const char *root, const LpManifest *manifest)
{
	char		path[2048];
	FILE	   *file;
	uint8_t    *data;
	size_t		len;

	LP_CHECK(manifest->transaction != NULL);
	snprintf(path, sizeof(path), "%s/_transactions/%s", root, manifest->proto->transaction_file);
	file = fopen(path, "rb");
	LP_CHECK_MSG(file != NULL, "missing %.400s", path);
	if (file == NULL || manifest->transaction == NULL)
		return;
	data = lp_alloc(manifest->transaction_len + 1);
	len = fread(data, 1, manifest->transaction_len + 1, file);
	fclose(file);
	LP_CHECK(len == manifest->transaction_len &&
			 memcmp(data, manifest->transaction, len) == 0);
	lp_free(data);
}

typedef struct AppendCase
{
	const char *dataset;
	uint64_t	source_fragment;
} AppendCase;

LP_TEST(commit_append_reference)
{
	static const AppendCase cases[] = {
		{"types_2_0_v1", 0}, {"types_2_0_v2", 0},
		{"types_2_1_v1", 0}, {"types_2_1_v2", 0},
		{"types_2_2_v1", 0}, {"types_2_2_v2", 0},
		{"types_2_3_v1", 0}, {"types_2_3_v2", 2},
		{"deleted_2_2", 1}, {"multipage_2_0", 1},
	};
	char		work[1024];
	uint64_t	seed = 0x9e3779b97f4a7c15ULL;

	LP_CHECK(lp_test_data_dir != NULL);
	if (lp_test_data_dir == NULL)
		return;
	snprintf(work, sizeof(work), "%s", lp_test_make_temp_dir());
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
	{
		char		root[1200];
		char		name[LP_DATA_FILE_NAME_SIZE];
		char		pairs[128];
		char		hint[2048];
		LpManifestNaming naming;
		LpManifestNaming after_naming;
		LpManifest *before;
		LpManifest *after;
		LpCommitRequest request;
		LpCommitOptions options = {3, lp_test_random, &seed, false};
		LpCommitResult result;
		LpError		err;
		FILE	   *hint_file;

		snprintf(root, sizeof(root), "%s/%s.lance", work, cases[c].dataset);
		lp_test_copy_dataset(cases[c].dataset, root);
		before = read_latest(root, &naming);
		if (before == NULL)
			continue;
		memset(&request, 0, sizeof(request));
		request.kind = LP_COMMIT_APPEND;
		request.read_version = before->proto->version;
		if (!stage_copy(root, before, cases[c].source_fragment, &seed, name,
						&request.file, &request.physical_rows))
		{
			lp_manifest_free(before);
			continue;
		}
		LP_CHECK_MSG(lp_commit(lp_test_store(), root, &request, &options, &result, &err),
					 "%.100s: %.300s", cases[c].dataset, err.message);
		LP_CHECK_EQ_U64(result.version, before->proto->version + 1);
		LP_CHECK_EQ_U64(result.fragment_id, before->proto->max_fragment_id + 1);
		LP_CHECK_EQ_U64(result.attempts, 1);
		LP_CHECK(result.naming == naming);

		after = read_latest(root, &after_naming);
		if (after != NULL)
		{
			const Lance__Table__DataFragment *added =
				lp_manifest_find_fragment(after->proto, result.fragment_id);

			LP_CHECK(after_naming == naming);
			LP_CHECK_EQ_U64(after->proto->version, result.version);
			LP_CHECK_EQ_U64(after->proto->n_fragments, before->proto->n_fragments + 1);
			LP_CHECK_EQ_U64(after->proto->max_fragment_id, result.fragment_id);
			LP_CHECK(after->proto->reader_feature_flags == before->proto->reader_feature_flags);
			LP_CHECK_STR(after->proto->writer_version->library, LP_WRITER_LIBRARY);
			LP_CHECK_STR(after->proto->data_format->version, before->proto->data_format->version);
			LP_CHECK(added != NULL && added->physical_rows == request.physical_rows &&
					 added->n_files == 1 && strcmp(added->files[0]->path, name) == 0 &&
					 added->files[0]->base_id_present_case ==
					 LANCE__TABLE__DATA_FILE__BASE_ID_PRESENT__NOT_SET);
			check_transaction_file(root, after);
			LP_CHECK(strncmp(after->proto->transaction_file, "3-", 2) == 0 ||
					 strncmp(after->proto->transaction_file, "4-", 2) == 0 ||
					 strncmp(after->proto->transaction_file, "2-", 2) == 0);

			snprintf(hint, sizeof(hint), "%s/_versions/latest_version_hint.json", root);
			hint_file = fopen(hint, "r");
			LP_CHECK(hint_file != NULL);
			if (hint_file != NULL)
			{
				char		text[64] = "";
				char		expected[64];

				LP_CHECK(fgets(text, sizeof(text), hint_file) != NULL);
				fclose(hint_file);
				snprintf(expected, sizeof(expected), "{\"version\":%llu}",
						 (unsigned long long) result.version);
				CHECK_TEXT(text, expected);
			}

			snprintf(pairs, sizeof(pairs), "%llu=%llu",
					 (unsigned long long) result.fragment_id,
					 (unsigned long long) cases[c].source_fragment);
			reference_check(root, total_rows(after), pairs, true);
			lp_manifest_free(after);
		}
		lp_manifest_free(before);
	}
	lp_test_remove_tree(work);
}

/*
 * A store that lets another writer win the race: the first time a manifest
 * is about to be created, it first runs a competing append, so our
 * put_if_absent finds the version taken.  With publish_competitor set, that
 * publishes the competing version instead (a newer Lance's, say).
 */
typedef struct RacingStore
{
	LpStore		base;
	LpStoreOps	ops;
	const char *root;
	LpCommitRequest competitor;
	void		(*publish_competitor) (struct RacingStore *store);
	uint32_t	competitor_operation_field; /* for publish_competitor */
	uint64_t	competitor_writer_flags;
	bool		raced;
	uint64_t	competitor_version;
	uint64_t	competitor_fragment;
} RacingStore;

static bool
racing_put_if_absent(LpStore *store, const char *path, const void *data,
					 size_t len, LpError *err)
{
	RacingStore *racing = (RacingStore *) store;

	if (!racing->raced && strstr(path, "/_versions/") != NULL)
	{
		uint64_t	seed = 42;
		LpCommitOptions options = {0, lp_test_random, &seed, false};
		LpCommitResult result;
		LpError		competitor_err;

		racing->raced = true;
		if (racing->publish_competitor != NULL)
		{
			racing->publish_competitor(racing);
			return lp_test_store()->ops->put_if_absent(lp_test_store(), path, data, len, err);
		}
		LP_CHECK_MSG(lp_commit(lp_test_store(), racing->root, &racing->competitor,
							   &options, &result, &competitor_err),
					 "competitor: %.300s", competitor_err.message);
		racing->competitor_version = result.version;
		racing->competitor_fragment = result.fragment_id;
		lp_free(result.new_fragment_ids);
	}
	return lp_test_store()->ops->put_if_absent(lp_test_store(), path, data, len, err);
}

static bool
racing_put(LpStore *store, const char *path, const void *data, size_t len, LpError *err)
{
	(void) store;
	return lp_test_store()->ops->put(lp_test_store(), path, data, len, err);
}

static LpInput *
racing_open_input(LpStore *store, const char *path, LpError *err)
{
	(void) store;
	return lp_test_store()->ops->open_input(lp_test_store(), path, err);
}

static bool
racing_list(LpStore *store, const char *directory, LpListCallback callback,
			void *arg, LpError *err)
{
	(void) store;
	return lp_test_store()->ops->list(lp_test_store(), directory, callback, arg, err);
}

static void
racing_store_init(RacingStore *store, const char *root)
{
	memset(store, 0, sizeof(*store));
	store->ops = *lp_test_store()->ops;
	store->ops.put_if_absent = racing_put_if_absent;
	store->ops.put = racing_put;
	store->ops.open_input = racing_open_input;
	store->ops.list = racing_list;
	store->base.ops = &store->ops;
	store->root = root;
}

/*
 * The set-up of the race tests: a copy of types_2_2_v2 (its latest manifest
 * returned, NULL if the copy failed), a racing store over it, and an append
 * of a staged copy of its first file (named name) read at the latest version.
 */
static LpManifest *
start_racing_append(char *work, size_t work_len, char *root, size_t root_len,
					uint64_t *seed, char *name, RacingStore *store,
					LpCommitRequest *request)
{
	LpManifestNaming naming;
	LpManifest *before = copy_and_read_latest("types_2_2_v2", work, work_len, root, root_len,
											  &naming);

	if (before == NULL)
		return NULL;
	racing_store_init(store, root);
	memset(request, 0, sizeof(*request));
	request->kind = LP_COMMIT_APPEND;
	request->read_version = before->proto->version;
	stage_copy(root, before, 0, seed, name, &request->file, &request->physical_rows);
	return before;
}

LP_TEST(commit_conflict_rebases)
{
	char		work[1024];
	char		root[1200];
	char		name_ours[LP_DATA_FILE_NAME_SIZE];
	char		name_theirs[LP_DATA_FILE_NAME_SIZE];
	char		pairs[128];
	uint64_t	seed = 7;
	LpManifestNaming naming;
	LpManifest *before;
	LpManifest *after;
	RacingStore store;
	LpCommitRequest request;
	/* as on object stores: no version hint (the competitor writes one) */
	LpCommitOptions options = {3, lp_test_random, &seed, true};
	LpCommitResult result;
	LpError		err;
	int			conflicts_before = lp_test_store_conflicts;
	char		hint[PATH_MAX];
	char		expected_hint[64];
	uint8_t    *hint_text = NULL;
	size_t		hint_len = 0;

	/* both read version 3 */
	before = start_racing_append(work, sizeof(work), root, sizeof(root), &seed, name_ours,
								 &store, &request);
	if (before == NULL)
		return;
	store.competitor = request;
	stage_copy(root, before, 2, &seed, name_theirs, &store.competitor.file,
			   &store.competitor.physical_rows);

	LP_CHECK_MSG(lp_commit(&store.base, root, &request, &options, &result, &err),
				 "%.300s", err.message);
	LP_CHECK(store.raced);
	LP_CHECK_EQ_U64(store.competitor_version, before->proto->version + 1);
	LP_CHECK_EQ_U64(result.version, before->proto->version + 2);
	LP_CHECK_EQ_U64(result.attempts, 2);
	LP_CHECK_EQ_U64(lp_test_store_conflicts, conflicts_before + 1);
	LP_CHECK_EQ_U64(result.fragment_id, store.competitor_fragment + 1);
	/* the hint names the competitor's version, not ours */
	snprintf(hint, sizeof(hint), "%s/_versions/latest_version_hint.json", root);
	snprintf(expected_hint, sizeof(expected_hint), "{\"version\":%llu}",
			 (unsigned long long) store.competitor_version);
	LP_CHECK(lp_test_file_read_all(hint, &hint_text, &hint_len));
	LP_CHECK_MSG(hint_len == strlen(expected_hint) && memcmp(hint_text, expected_hint, hint_len) == 0,
				 "version hint \"%.*s\", not \"%s\"", (int) hint_len, hint_text ? (char *) hint_text : "",
				 expected_hint);
	free(hint_text);

	after = read_latest(root, &naming);
	if (after != NULL)
	{
		LP_CHECK_EQ_U64(after->proto->n_fragments, 5);
		/* our transaction still says it was read at version 3 */
		LP_CHECK(strncmp(after->proto->transaction_file, "3-", 2) == 0);
		snprintf(pairs, sizeof(pairs), "%llu=2 %llu=0",
				 (unsigned long long) store.competitor_fragment,
				 (unsigned long long) result.fragment_id);
		reference_check(root, 515 + 45 + 300, pairs, false);
		lp_manifest_free(after);
	}
	lp_manifest_free(before);
	lp_test_remove_tree(work);
}

/*
 * Without retries, losing the race is a conflict the caller may retry
 * (LP_ERR_CONFLICT, not "file exists"); the winner's version stays latest.
 */
LP_TEST(commit_lost_race_is_conflict)
{
	char		work[1024];
	char		root[1200];
	char		name_ours[LP_DATA_FILE_NAME_SIZE];
	char		name_theirs[LP_DATA_FILE_NAME_SIZE];
	uint64_t	seed = 8;
	LpManifestNaming naming;
	LpManifest *before;
	LpManifest *after;
	RacingStore store;
	LpCommitRequest request;
	LpCommitOptions options = {0, lp_test_random, &seed, false};
	LpCommitResult result;
	LpError		err;

	before = start_racing_append(work, sizeof(work), root, sizeof(root), &seed, name_ours,
								 &store, &request);
	if (before == NULL)
		return;
	store.competitor = request;
	stage_copy(root, before, 2, &seed, name_theirs, &store.competitor.file,
			   &store.competitor.physical_rows);

	LP_CHECK(!lp_commit(&store.base, root, &request, &options, &result, &err));
	LP_CHECK(store.raced);
	LP_CHECK_MSG(err.code == LP_ERR_CONFLICT && strstr(err.message, "1 attempts") != NULL,
				 "%s: %.300s", lp_error_code_name(err.code), err.message);
	after = read_latest(root, &naming);
	LP_CHECK(after != NULL && after->proto->version == store.competitor_version);
	lp_manifest_free(after);
	lp_manifest_free(before);
	lp_test_remove_tree(work);
}

/*
 * A file is committed once, whether the base version already holds it or a
 * concurrent writer committed it while we rebuilt: LP_ERR_ALREADY_COMMITTED
 * both times.
 */
LP_TEST(commit_same_file_twice)
{
	char		work[1024];
	char		root[1200];
	char		name[LP_DATA_FILE_NAME_SIZE];
	uint64_t	seed = 9;
	LpManifestNaming naming;
	LpManifest *before;
	LpManifest *after;
	RacingStore store;
	LpCommitRequest request;
	LpCommitOptions options = {3, lp_test_random, &seed, false};
	LpCommitResult result;
	LpError		err;

	before = start_racing_append(work, sizeof(work), root, sizeof(root), &seed, name,
								 &store, &request);
	if (before == NULL)
		return;
	store.competitor = request;

	/* the competitor commits our very file first: found when rebuilding */
	LP_CHECK(!lp_commit(&store.base, root, &request, &options, &result, &err));
	LP_CHECK(store.raced);
	LP_CHECK_MSG(err.code == LP_ERR_ALREADY_COMMITTED, "%s: %.300s",
				 lp_error_code_name(err.code), err.message);
	/* and again, now in the latest version from the start */
	request.read_version = store.competitor_version;
	LP_CHECK(!lp_commit(lp_test_store(), root, &request, &options, &result, &err));
	LP_CHECK_MSG(err.code == LP_ERR_ALREADY_COMMITTED, "%s: %.300s",
				 lp_error_code_name(err.code), err.message);
	after = read_latest(root, &naming);
	LP_CHECK(after != NULL && after->proto->version == store.competitor_version);
	lp_manifest_free(after);
	lp_manifest_free(before);
	lp_test_remove_tree(work);
}

/* Two processes appending ten times each at the same time: every append lands. */
LP_TEST(commit_concurrent_processes)
{
	enum
	{
		WRITERS = 2, APPENDS = 10
	};
	char		work[1024];
	char		root[1200];
	LpManifestNaming naming;
	LpManifest *before;
	LpManifest *after;
	pid_t		children[WRITERS];

	before = copy_and_read_latest("types_2_1_v1", work, sizeof(work), root, sizeof(root), &naming);
	if (before == NULL)
		return;

	for (int w = 0; w < WRITERS; w++)
	{
		children[w] = fork();
		if (children[w] == 0)
		{
			uint64_t	seed = 1000 + (uint64_t) w;
			int			failures = 0;

			for (int i = 0; i < APPENDS; i++)
			{
				LpManifest *latest = lp_dataset_read_latest(lp_test_store(), root, &naming, NULL);
				char		name[LP_DATA_FILE_NAME_SIZE];
				LpCommitRequest request;
				LpCommitOptions options = {50, lp_test_random, &seed, false};
				LpCommitResult result;
				LpError		err;

				memset(&request, 0, sizeof(request));
				request.kind = LP_COMMIT_APPEND;
				request.read_version = latest ? latest->proto->version : 0;
				if (latest == NULL ||
					!stage_copy(root, latest, 1, &seed, name, &request.file,
								&request.physical_rows) ||
					!lp_commit(lp_test_store(), root, &request, &options, &result, &err))
					failures++;
				lp_manifest_free(latest);
			}
			_exit(failures == 0 ? 0 : 1);
		}
	}
	for (int w = 0; w < WRITERS; w++)
	{
		int			status = -1;

		waitpid(children[w], &status, 0);
		LP_CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "writer %d failed", w);
	}
	after = read_latest(root, &naming);
	if (after != NULL)
	{
		LP_CHECK_EQ_U64(after->proto->version, before->proto->version + WRITERS * APPENDS);
		LP_CHECK_EQ_U64(after->proto->n_fragments, 3 + WRITERS * APPENDS);
		reference_check(root, 515 + 170 * WRITERS * APPENDS, "", false);
		lp_manifest_free(after);
	}
	lp_manifest_free(before);
	lp_test_remove_tree(work);
}

/*
 * Publish version latest+1 as another writer would: latest's content with
 * feature flags added and the transaction txn, inline or, when txn_file is
 * given, only in _transactions/txn_file.
 */
static void
publish_version(const char *root, const LpManifest *latest, LpManifestNaming naming,
				const uint8_t *txn, size_t txn_len, const char *txn_file,
				uint64_t reader_flags, uint64_t writer_flags)
{
	Lance__Table__Manifest m = *latest->proto;
	uint8_t    *file;
	size_t		file_len;
	char		name[LP_MANIFEST_NAME_SIZE];
	char		path[2048];
	LpError		err;

	m.version = latest->proto->version + 1;
	m.reader_feature_flags |= reader_flags;
	m.writer_feature_flags |= writer_flags;
	m.transaction_file = (char *) (txn_file != NULL ? txn_file : protobuf_c_empty_string);
	if (txn_file != NULL)
	{
		snprintf(path, sizeof(path), "%s/_transactions/%s", root, txn_file);
		LP_CHECK(lp_test_store()->ops->put(lp_test_store(), path, txn, txn_len, &err));
	}
	LP_CHECK(lp_manifest_serialize(&m, NULL, 0, txn_file != NULL ? NULL : txn, txn_len,
								   &file, &file_len, &err));
	lp_manifest_name(naming, m.version, name);
	snprintf(path, sizeof(path), "%s/_versions/%s", root, name);
	LP_CHECK(lp_test_store()->ops->put_if_absent(lp_test_store(), path, file, file_len, &err));
	lp_free(file);
}

/* A Transaction read at version read_version with the given operation (NULL: none). */
static size_t
pack_transaction(uint64_t read_version, Lance__Table__Transaction__OperationCase operation,
				 void *message, uint8_t *out)
{
	Lance__Table__Transaction txn = LANCE__TABLE__TRANSACTION__INIT;

	txn.read_version = read_version;
	txn.uuid = "00000000-0000-4000-8000-000000000000";
	txn.operation_case = operation;
	if (operation == LANCE__TABLE__TRANSACTION__OPERATION_OVERWRITE)
		txn.overwrite = message;
	else if (operation == LANCE__TABLE__TRANSACTION__OPERATION_APPEND)
		txn.append = message;
	return protobuf_c_message_pack((const ProtobufCMessage *) &txn, out);
}

/* Publish version latest+1 with an Overwrite transaction, as another writer would. */
static void
publish_overwrite(const char *root, const LpManifest *latest, LpManifestNaming naming)
{
	Lance__Table__Transaction__Overwrite overwrite = LANCE__TABLE__TRANSACTION__OVERWRITE__INIT;
	uint8_t		txn[256];
	size_t		txn_len = pack_transaction(latest->proto->version,
										   LANCE__TABLE__TRANSACTION__OPERATION_OVERWRITE,
										   &overwrite, txn);

	publish_version(root, latest, naming, txn, txn_len, NULL, 0, 0);
}

LP_TEST(commit_conflicts_with_overwrite)
{
	char		work[1024];
	char		root[1200];
	char		name[LP_DATA_FILE_NAME_SIZE];
	uint64_t	seed = 11;
	LpManifestNaming naming;
	LpManifest *before;
	LpManifest *after;
	LpCommitRequest request;
	LpCommitOptions options = {3, lp_test_random, &seed, false};
	LpCommitResult result;
	LpError		err;

	before = copy_and_read_latest("types_2_2_v1", work, sizeof(work), root, sizeof(root), &naming);
	if (before == NULL)
		return;
	memset(&request, 0, sizeof(request));
	request.kind = LP_COMMIT_APPEND;
	request.read_version = before->proto->version;
	stage_copy(root, before, 0, &seed, name, &request.file, &request.physical_rows);
	publish_overwrite(root, before, naming);

	LP_CHECK(!lp_commit(lp_test_store(), root, &request, &options, &result, &err));
	LP_CHECK(err.code == LP_ERR_CONFLICT);
	LP_CHECK_MSG(strstr(err.message, "Overwrite") != NULL, "%.300s", err.message);
	after = read_latest(root, &naming);
	LP_CHECK(after != NULL && after->proto->version == before->proto->version + 1);
	lp_manifest_free(after);

	/* the Append committed by lancedb itself (version 2 -> 3) does not conflict */
	request.read_version = 2;
	lp_test_remove_tree(root);
	lp_test_copy_dataset("types_2_2_v1", root);
	LP_CHECK_MSG(lp_commit(lp_test_store(), root, &request, &options, &result, &err),
				 "%.300s", err.message);
	LP_CHECK_EQ_U64(result.version, 4);
	lp_manifest_free(before);
	lp_test_remove_tree(work);
}

/*
 * A Transaction read at read_version whose operation is field `field`, one
 * this build's transaction.proto lacks (a newer Lance's DataOverlay is 115,
 * CompositeOperation 116): protobuf-c keeps it as an unknown field.
 */
static size_t
pack_unknown_operation(uint64_t read_version, uint32_t field, uint8_t *out)
{
	size_t		len = pack_transaction(read_version, LANCE__TABLE__TRANSACTION__OPERATION__NOT_SET,
									   NULL, out);
	uint32_t	tag = field << 3 | PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED;

	for (; tag >= 0x80; tag >>= 7)
		out[len++] = (uint8_t) (tag | 0x80);
	out[len++] = (uint8_t) tag;
	/* the operation's message: field 1 = 1 */
	out[len++] = 2;
	out[len++] = 0x08;
	out[len++] = 0x01;
	return len;
}

static const struct
{
	uint32_t	field;
	const char *name;
}			unknown_operations[] = {
	{115, "DataOverlay"},
	{116, "CompositeOperation"},
	{117, "unknown operation (field 117)"},
	{300, "unknown operation (field 300)"},
};

/*
 * A concurrent operation lance_parts does not implement is a conflict for
 * every request, even an overwrite, named by the message.
 */
LP_TEST(transaction_unknown_operation_conflicts)
{
	static const LpCommitKind kinds[] = {
		LP_COMMIT_APPEND, LP_COMMIT_OVERWRITE, LP_COMMIT_DELETE, LP_COMMIT_REWRITE,
	};
	Lance__Table__Transaction__Append append = LANCE__TABLE__TRANSACTION__APPEND__INIT;
	LpCommitRequest request;
	uint8_t		txn[256];
	size_t		len;
	char		expected[256];
	LpError		err;

	memset(&request, 0, sizeof(request));
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
	{
		request.kind = kinds[k];
		for (size_t i = 0; i < sizeof(unknown_operations) / sizeof(unknown_operations[0]); i++)
		{
			len = pack_unknown_operation(6, unknown_operations[i].field, txn);
			LP_CHECK(!lp_transaction_check_conflict(&request, txn, len, 7, &err));
			LP_CHECK(err.code == LP_ERR_CONFLICT);
			snprintf(expected, sizeof(expected), "commit conflicts with the concurrent %s of version 7",
					 unknown_operations[i].name);
			CHECK_TEXT(err.message, expected);
			LP_CHECK(strstr(err.detail, "never rebases") != NULL);
		}
		/* no operation at all; a varint field in the operations' range is none */
		len = pack_transaction(6, LANCE__TABLE__TRANSACTION__OPERATION__NOT_SET, NULL, txn);
		LP_CHECK(!lp_transaction_check_conflict(&request, txn, len, 7, &err));
		CHECK_TEXT(err.message, "commit conflicts with the concurrent transaction without an operation of version 7");
		txn[len++] = 0xc0;		/* field 120, varint */
		txn[len++] = 0x07;
		txn[len++] = 0x01;
		LP_CHECK(!lp_transaction_check_conflict(&request, txn, len, 7, &err));
		CHECK_TEXT(err.message, "commit conflicts with the concurrent transaction without an operation of version 7");
	}
	/* the same bytes with a known operation: an Append conflicts with no append */
	request.kind = LP_COMMIT_APPEND;
	len = pack_transaction(6, LANCE__TABLE__TRANSACTION__OPERATION_APPEND, &append, txn);
	LP_CHECK_MSG(lp_transaction_check_conflict(&request, txn, len, 7, &err), "%.300s", err.message);
}

static uint64_t count_entries(const char *path);

/* The entries of a directory of root (_transactions, _versions), counted. */
static uint64_t
count_entries_in(const char *root, const char *directory)
{
	char		path[2048];

	snprintf(path, sizeof(path), "%s/%s", root, directory);
	return count_entries(path);
}

/*
 * A version committed since our read version whose operation lance_parts
 * does not implement, read from the inline transaction or from the
 * transaction file: our commit is a conflict and publishes nothing.
 */
LP_TEST(commit_unknown_operation_is_conflict)
{
	char		work[1024];
	char		root[1200];
	char		name[LP_DATA_FILE_NAME_SIZE];
	uint64_t	seed = 12;
	LpManifestNaming naming;
	LpManifest *before;
	LpCommitOptions options = {3, lp_test_random, &seed, false};

	before = copy_and_read_latest("types_2_2_v1", work, sizeof(work), root, sizeof(root), &naming);
	if (before == NULL)
		return;
	for (size_t i = 0; i < sizeof(unknown_operations) / sizeof(unknown_operations[0]); i++)
	{
		for (int in_file = 0; in_file <= 1; in_file++)
		{
			LpCommitRequest request;
			LpCommitResult result;
			LpManifest *after;
			uint8_t		txn[256];
			size_t		len = pack_unknown_operation(before->proto->version,
													 unknown_operations[i].field, txn);
			uint64_t	transactions;
			LpError		err;

			lp_test_remove_tree(root);
			lp_test_copy_dataset("types_2_2_v1", root);
			memset(&request, 0, sizeof(request));
			request.kind = LP_COMMIT_APPEND;
			request.read_version = before->proto->version;
			stage_copy(root, before, 0, &seed, name, &request.file, &request.physical_rows);
			publish_version(root, before, naming, txn, len, in_file ? "theirs.txn" : NULL, 0, 0);
			transactions = count_entries_in(root, "_transactions");

			LP_CHECK(!lp_commit(lp_test_store(), root, &request, &options, &result, &err));
			LP_CHECK_MSG(err.code == LP_ERR_CONFLICT &&
						 strstr(err.message, unknown_operations[i].name) != NULL,
						 "%s: %.300s", lp_error_code_name(err.code), err.message);
			after = read_latest(root, &naming);
			LP_CHECK(after != NULL && after->proto->version == before->proto->version + 1);
			lp_manifest_free(after);
			LP_CHECK_EQ_U64(count_entries_in(root, "_transactions"), transactions);
		}
	}
	lp_manifest_free(before);
	lp_test_remove_tree(work);
}

/* The competitor of a race: a version of latest + 1 as a newer Lance writes it. */
static void
publish_newer_lance_version(RacingStore *store)
{
	LpManifestNaming naming;
	LpManifest *latest = read_latest(store->root, &naming);
	Lance__Table__Transaction__Append append = LANCE__TABLE__TRANSACTION__APPEND__INIT;
	uint8_t		txn[256];
	size_t		len;

	if (latest == NULL)
		return;
	if (store->competitor_operation_field != 0)
		len = pack_unknown_operation(latest->proto->version, store->competitor_operation_field, txn);
	else
		len = pack_transaction(latest->proto->version, LANCE__TABLE__TRANSACTION__OPERATION_APPEND,
							   &append, txn);
	publish_version(store->root, latest, naming, txn, len, NULL, 0, store->competitor_writer_flags);
	store->competitor_version = latest->proto->version + 1;
	lp_manifest_free(latest);
}

/*
 * The rebase after a lost race applies the same rules as the first attempt:
 * the winner's unknown operation is a conflict, its writer flag lance_parts
 * does not implement a refusal; nothing of ours is published.
 */
LP_TEST(commit_rebase_refuses_newer_lance_versions)
{
	for (int flags = 0; flags <= 1; flags++)
	{
		char		work[1024];
		char		root[1200];
		char		name[LP_DATA_FILE_NAME_SIZE];
		uint64_t	seed = 13;
		LpManifestNaming naming;
		LpManifest *before;
		LpManifest *after;
		RacingStore store;
		LpCommitRequest request;
		LpCommitOptions options = {3, lp_test_random, &seed, false};
		LpCommitResult result;
		LpError		err;

		before = start_racing_append(work, sizeof(work), root, sizeof(root), &seed, name,
									 &store, &request);
		if (before == NULL)
			return;
		store.publish_competitor = publish_newer_lance_version;
		store.competitor_operation_field = flags ? 0 : 116;
		store.competitor_writer_flags = flags ? LP_FLAG_OVERLAYS : 0;

		LP_CHECK(!lp_commit(&store.base, root, &request, &options, &result, &err));
		LP_CHECK(store.raced);
		if (flags)
			LP_CHECK_MSG(err.code == LP_ERR_UNSUPPORTED &&
						 strstr(err.message, "writer feature \"overlays\" (flag 64)") != NULL,
						 "%s: %.300s", lp_error_code_name(err.code), err.message);
		else
			LP_CHECK_MSG(err.code == LP_ERR_CONFLICT &&
						 strstr(err.message, "CompositeOperation") != NULL,
						 "%s: %.300s", lp_error_code_name(err.code), err.message);
		after = read_latest(root, &naming);
		LP_CHECK(after != NULL && after->proto->version == store.competitor_version);
		lp_manifest_free(after);
		lp_manifest_free(before);
		lp_test_remove_tree(work);
	}
}

/*
 * A latest version whose reader or writer flags lance_parts does not
 * implement: the commit is refused, naming the flag, before it writes
 * anything.
 */
LP_TEST(commit_refuses_unimplemented_flags)
{
	static const struct
	{
		uint64_t	reader;
		uint64_t	writer;
		const char *named;
	}			cases[] = {
		{0, LP_FLAG_MANAGED_BLOBS, "writer feature \"managed blobs\" (flag 2048)"},
		{0, 4096, "writer feature flag 4096"},
		{LP_FLAG_FRAGMENT_REUSE_INDEX, 0, "reader feature \"fragment reuse index\" (flag 1024)"},
		{LP_FLAG_OVERLAYS, LP_FLAG_OVERLAYS, "reader feature \"overlays\" (flag 64)"},
	};
	char		work[1024];
	char		root[1200];
	char		name[LP_DATA_FILE_NAME_SIZE];
	uint64_t	seed = 14;
	LpManifestNaming naming;
	LpManifest *before;
	LpCommitOptions options = {3, lp_test_random, &seed, false};

	before = copy_and_read_latest("types_2_2_v1", work, sizeof(work), root, sizeof(root), &naming);
	if (before == NULL)
		return;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		Lance__Table__Transaction__Append append = LANCE__TABLE__TRANSACTION__APPEND__INIT;
		LpCommitRequest request;
		LpCommitResult result;
		uint8_t		txn[256];
		size_t		len = pack_transaction(before->proto->version,
										   LANCE__TABLE__TRANSACTION__OPERATION_APPEND,
										   &append, txn);
		uint64_t	transactions;
		uint64_t	versions;
		char		expected[1600];
		LpError		err;

		lp_test_remove_tree(root);
		lp_test_copy_dataset("types_2_2_v1", root);
		memset(&request, 0, sizeof(request));
		request.kind = LP_COMMIT_APPEND;
		request.read_version = before->proto->version;
		stage_copy(root, before, 0, &seed, name, &request.file, &request.physical_rows);
		publish_version(root, before, naming, txn, len, NULL, cases[i].reader, cases[i].writer);
		transactions = count_entries_in(root, "_transactions");
		versions = count_entries_in(root, "_versions");

		LP_CHECK(!lp_commit(lp_test_store(), root, &request, &options, &result, &err));
		snprintf(expected, sizeof(expected),
				 "dataset \"%s\" needs %s, which lance_parts does not implement", root, cases[i].named);
		LP_CHECK(err.code == LP_ERR_UNSUPPORTED);
		CHECK_TEXT(err.message, expected);
		LP_CHECK_EQ_U64(count_entries_in(root, "_transactions"), transactions);
		LP_CHECK_EQ_U64(count_entries_in(root, "_versions"), versions);
	}
	lp_manifest_free(before);
	lp_test_remove_tree(work);
}

LP_TEST(commit_replace_reference)
{
	char		work[1024];
	char		root[1200];
	char		name[LP_DATA_FILE_NAME_SIZE];
	char		old_path[2048];
	char		pairs[4096];
	char		original[1024];
	uint64_t	seed = 99;
	LpManifestNaming naming;
	LpManifest *before;
	LpManifest *after;
	LpCommitRequest request;
	LpCommitOptions options = {3, lp_test_random, &seed, false};
	LpCommitResult result;
	LpError		err;
	int32_t		partial_fields[2];
	int32_t		partial_columns[2] = {0, 1};

	before = copy_and_read_latest("types_2_2_v1", work, sizeof(work), root, sizeof(root), &naming);
	if (before == NULL)
		return;
	memset(&request, 0, sizeof(request));
	request.kind = LP_COMMIT_REPLACE;
	request.read_version = before->proto->version;
	request.fragment_id = 1;
	stage_copy(root, before, 1, &seed, name, &request.file, &request.physical_rows);

	/* refusals first: wrong row count, a file holding only some of the fields */
	request.physical_rows += 1;
	LP_CHECK(!lp_commit(lp_test_store(), root, &request, &options, &result, &err));
	LP_CHECK(err.code == LP_ERR_INVALID_ARGUMENT && strstr(err.message, "rows") != NULL);
	request.physical_rows -= 1;
	{
		LpCommitRequest partial = request;

		partial_fields[0] = request.file.fields[0];
		partial_fields[1] = request.file.fields[1];
		partial.file.fields = partial_fields;
		partial.file.column_indices = partial_columns;
		partial.file.n_fields = 2;
		LP_CHECK(!lp_commit(lp_test_store(), root, &partial, &options, &result, &err));
		LP_CHECK(err.code == LP_ERR_UNSUPPORTED);
	}

	LP_CHECK_MSG(lp_commit(lp_test_store(), root, &request, &options, &result, &err),
				 "%.300s", err.message);
	LP_CHECK_EQ_U64(result.version, before->proto->version + 1);
	LP_CHECK_EQ_U64(result.fragment_id, 1);
	after = read_latest(root, &naming);
	if (after != NULL)
	{
		const Lance__Table__DataFragment *replaced = lp_manifest_find_fragment(after->proto, 1);
		Lance__Table__Transaction *txn = NULL;

		LP_CHECK_EQ_U64(after->proto->n_fragments, 3);
		LP_CHECK(replaced != NULL && replaced->n_files == 1 &&
				 strcmp(replaced->files[0]->path, name) == 0);
		/* max_fragment_id is unchanged */
		LP_CHECK_EQ_U64(after->proto->max_fragment_id, before->proto->max_fragment_id);
		LP_CHECK(lp_protobuf_unpack(&lance__table__transaction__descriptor, after->transaction,
									after->transaction_len,
									(ProtobufCMessage **) &txn) == LP_UNPACK_OK);
		LP_CHECK(txn != NULL && txn->operation_case ==
				 LANCE__TABLE__TRANSACTION__OPERATION_DATA_REPLACEMENT &&
				 txn->data_replacement->n_replacements == 1 &&
				 txn->data_replacement->replacements[0]->fragment_id == 1);
		lp_protobuf_free((ProtobufCMessage *) txn);

		/* the old file is gone: the rows can only come from the new one */
		snprintf(old_path, sizeof(old_path), "%s/data/%s", root,
				 lp_manifest_find_fragment(before->proto, 1)->files[0]->path);
		LP_CHECK(unlink(old_path) == 0);
		lp_test_dataset_path("types_2_2_v1", original, sizeof(original));
		snprintf(pairs, sizeof(pairs), "1=%s:1 0=%s:0", original, original);
		reference_check(root, 515, pairs, true);
		lp_manifest_free(after);
	}
	lp_manifest_free(before);
	lp_test_remove_tree(work);
}

LP_TEST(commit_rewrite_reference)
{
	char		work[1024];
	char		root[1200];
	char		names[2][LP_DATA_FILE_NAME_SIZE];
	char		pairs[4096];
	char		original[1024];
	uint64_t	seed = 1234;
	LpManifestNaming naming;
	LpManifest *before;
	LpManifest *after;
	LpRewriteGroup groups[2];
	uint64_t	old_first[1] = {0};
	uint64_t	old_last[1] = {2};
	uint64_t	old_bad[2] = {0, 2};
	LpCommitRequest request;
	LpCommitOptions options = {3, lp_test_random, &seed, false};
	LpCommitResult result;
	LpError		err;

	before = copy_and_read_latest("types_2_3_v2", work, sizeof(work), root, sizeof(root), &naming);
	if (before == NULL)
		return;
	memset(groups, 0, sizeof(groups));
	groups[0].old_fragment_ids = old_first;
	groups[0].n_old = 1;
	stage_copy(root, before, 0, &seed, names[0], &groups[0].file, &groups[0].physical_rows);
	groups[1].old_fragment_ids = old_last;
	groups[1].n_old = 1;
	stage_copy(root, before, 2, &seed, names[1], &groups[1].file, &groups[1].physical_rows);
	memset(&request, 0, sizeof(request));
	request.kind = LP_COMMIT_REWRITE;
	request.read_version = before->proto->version;
	request.groups = groups;
	request.n_groups = 2;

	/* fragments 0 and 2 are not adjacent: one group cannot hold both */
	groups[0].old_fragment_ids = old_bad;
	groups[0].n_old = 2;
	LP_CHECK(!lp_commit(lp_test_store(), root, &request, &options, &result, &err));
	LP_CHECK(err.code == LP_ERR_INVALID_ARGUMENT);
	groups[0].old_fragment_ids = old_first;
	groups[0].n_old = 1;

	LP_CHECK_MSG(lp_commit(lp_test_store(), root, &request, &options, &result, &err),
				 "%.300s", err.message);
	LP_CHECK(result.new_fragment_ids != NULL);
	after = read_latest(root, &naming);
	if (after != NULL && result.new_fragment_ids != NULL)
	{
		/* new fragments take the places of the old ones */
		LP_CHECK_EQ_U64(after->proto->n_fragments, 3);
		LP_CHECK_EQ_U64(after->proto->fragments[0]->id, 3);
		LP_CHECK_EQ_U64(after->proto->fragments[1]->id, 1);
		LP_CHECK_EQ_U64(after->proto->fragments[2]->id, 4);
		LP_CHECK_EQ_U64(result.new_fragment_ids[0], 3);
		LP_CHECK_EQ_U64(result.new_fragment_ids[1], 4);
		LP_CHECK_EQ_U64(after->proto->max_fragment_id, 4);
		lp_test_dataset_path("types_2_3_v2", original, sizeof(original));
		snprintf(pairs, sizeof(pairs), "3=%s:0 1=%s:1 4=%s:2", original, original, original);
		reference_check(root, 515, pairs, true);
	}
	lp_free(result.new_fragment_ids);
	lp_manifest_free(after);
	lp_manifest_free(before);
	lp_test_remove_tree(work);
}

/*
 * A rewrite that materializes deletions: the group names the deletion file
 * its live rows were read through; another deletion file is a conflict, and
 * without one the fragment is refused as before.  The new fragment has no
 * deletion file and the live rows as its physical rows.
 */
LP_TEST(commit_rewrite_materializes_deletions)
{
	char		work[1024];
	char		root[1200];
	char		name[LP_DATA_FILE_NAME_SIZE];
	uint64_t	seed = 77;
	LpManifestNaming naming;
	LpManifest *before;
	LpManifest *after;
	LpFragment	fragment;
	LpRewriteGroup group;
	LpRewriteDeletions deletions;
	uint64_t	old[1] = {0};
	uint64_t	physical;
	LpCommitRequest request;
	LpCommitOptions options = {3, lp_test_random, &seed, false};
	LpCommitResult result;
	LpError		err;

	before = copy_and_read_latest("deleted_2_2", work, sizeof(work), root, sizeof(root), &naming);
	if (before == NULL)
		return;
	lp_manifest_fragment(before, 0, &fragment);
	LP_CHECK(fragment.has_deletion_file);
	memset(&group, 0, sizeof(group));
	group.old_fragment_ids = old;
	group.n_old = 1;
	stage_copy(root, before, 0, &seed, name, &group.file, &physical);
	/* ids 3, 13, ..., 113 of the first 120 were deleted */
	deletions.has_deletion_file = true;
	deletions.read_version = fragment.deletion_file.read_version;
	deletions.id = fragment.deletion_file.id + 1;
	deletions.live_rows = physical - 12;
	group.physical_rows = physical - 12;
	memset(&request, 0, sizeof(request));
	request.kind = LP_COMMIT_REWRITE;
	request.read_version = before->proto->version;
	request.groups = &group;
	request.n_groups = 1;

	LP_CHECK(!lp_commit(lp_test_store(), root, &request, &options, &result, &err));
	LP_CHECK(err.code == LP_ERR_INVALID_ARGUMENT && strstr(err.message, "has deleted rows") != NULL);
	group.deletions = &deletions;
	LP_CHECK(!lp_commit(lp_test_store(), root, &request, &options, &result, &err));
	LP_CHECK(err.code == LP_ERR_CONFLICT && strstr(err.message, "deletion file of fragment 0 changed") != NULL);
	deletions.id = fragment.deletion_file.id;
	deletions.live_rows = physical;
	LP_CHECK(!lp_commit(lp_test_store(), root, &request, &options, &result, &err));
	LP_CHECK(err.code == LP_ERR_INVALID_ARGUMENT && strstr(err.message, "replaces") != NULL);
	deletions.live_rows = physical - 12;

	LP_CHECK_MSG(lp_commit(lp_test_store(), root, &request, &options, &result, &err),
				 "%.300s", err.message);
	after = read_latest(root, &naming);
	if (after != NULL && result.new_fragment_ids != NULL)
	{
		LP_CHECK_EQ_U64(after->proto->n_fragments, 3);
		LP_CHECK_EQ_U64(after->proto->fragments[0]->id, result.new_fragment_ids[0]);
		LP_CHECK(after->proto->fragments[0]->deletion_file == NULL);
		LP_CHECK_EQ_U64(after->proto->fragments[0]->physical_rows, physical - 12);
		LP_CHECK(after->proto->fragments[2]->deletion_file != NULL);
	}
	lp_free(result.new_fragment_ids);
	lp_manifest_free(after);
	lp_manifest_free(before);
	lp_test_remove_tree(work);
}

/* Entries of a directory (0 if it cannot be opened). */
static uint64_t
count_entries(const char *path)
{
	DIR		   *dir = opendir(path);
	struct dirent *entry;
	uint64_t	count = 0;

	if (dir == NULL)
		return 0;
	while ((entry = readdir(dir)) != NULL)
		if (entry->d_name[0] != '.')
			count++;
	closedir(dir);
	return count;
}

LP_TEST(commit_refusals)
{
	char		work[1024];
	char		root[1200];
	char		name[LP_DATA_FILE_NAME_SIZE];
	uint64_t	seed = 5;
	LpManifestNaming naming;
	LpManifest *base;
	LpCommitRequest request;
	LpCommitRequest bad;
	LpCommitOptions options = {3, lp_test_random, &seed, false};
	LpCommitResult result;
	LpError		err;
	uint8_t    *out;
	size_t		out_len;
	int32_t		unknown_field[1] = {9999};
	int32_t		column_zero[1] = {0};

	base = copy_and_read_latest("types_2_1_v2", work, sizeof(work), root, sizeof(root), &naming);
	if (base == NULL)
		return;
	memset(&request, 0, sizeof(request));
	request.kind = LP_COMMIT_APPEND;
	request.read_version = base->proto->version;
	stage_copy(root, base, 0, &seed, name, &request.file, &request.physical_rows);

	/* a file of another format version than the dataset's */
	bad = request;
	bad.file.version = LP_FILE_VERSION_2_2;
	LP_CHECK(!lp_commit(lp_test_store(), root, &bad, &options, &result, &err));
	LP_CHECK(err.code == LP_ERR_INVALID_ARGUMENT && strstr(err.message, "2.1") != NULL);
	/* a legacy file */
	bad.file.version = LP_FILE_VERSION_LEGACY;
	LP_CHECK(!lp_commit(lp_test_store(), root, &bad, &options, &result, &err));
	LP_CHECK(err.code == LP_ERR_UNSUPPORTED);
	/* a field the schema does not have */
	bad = request;
	bad.file.fields = unknown_field;
	bad.file.column_indices = column_zero;
	bad.file.n_fields = 1;
	LP_CHECK(!lp_commit(lp_test_store(), root, &bad, &options, &result, &err));
	LP_CHECK(err.code == LP_ERR_INVALID_ARGUMENT && strstr(err.message, "9999") != NULL);
	/* no rows, too many rows */
	bad = request;
	bad.physical_rows = 0;
	LP_CHECK(!lp_commit(lp_test_store(), root, &bad, &options, &result, &err));
	bad.physical_rows = (uint64_t) UINT32_MAX + 1;
	LP_CHECK(!lp_commit(lp_test_store(), root, &bad, &options, &result, &err));
	/* a base path the dataset does not have */
	bad = request;
	bad.file.has_base_id = true;
	bad.file.base_id = 1;
	LP_CHECK(!lp_commit(lp_test_store(), root, &bad, &options, &result, &err));
	/* a path with a directory */
	bad = request;
	bad.file.path = "../x.lance";
	LP_CHECK(!lp_commit(lp_test_store(), root, &bad, &options, &result, &err));
	/* a read version from the future */
	bad = request;
	bad.read_version = 99;
	LP_CHECK(!lp_commit(lp_test_store(), root, &bad, &options, &result, &err));
	LP_CHECK(err.code == LP_ERR_INVALID_ARGUMENT);
	/* nothing was published by any of these, not even a transaction file */
	{
		LpManifest *latest = read_latest(root, &naming);
		char		transactions[1300];

		LP_CHECK(latest != NULL && latest->proto->version == base->proto->version);
		lp_manifest_free(latest);
		snprintf(transactions, sizeof(transactions), "%s/_transactions", root);
		LP_CHECK_EQ_U64(count_entries(transactions), base->proto->version);
	}

	/* legacy datasets */
	{
		char		legacy_root[1200];
		LpManifest *legacy;

		lp_test_dataset_path("types_legacy_v1", legacy_root, sizeof(legacy_root));
		legacy = read_latest(legacy_root, &naming);
		if (legacy != NULL)
		{
			LP_CHECK(!lp_commit_build_manifest(legacy, &request, (const uint8_t *) "", 0,
											   "x.txn", 0, &out, &out_len, NULL, &err));
			LP_CHECK(err.code == LP_ERR_INVALID_ARGUMENT);
		}
		lp_manifest_free(legacy);
	}
	lp_manifest_free(base);
	lp_test_remove_tree(work);
}

/* A RowIdSequence of one range, serialized (lp_alloc). */
static uint8_t *
range_row_ids(uint64_t start, uint64_t end, size_t *len)
{
	Lance__Table__RowIdSequence sequence;
	Lance__Table__U64Segment segment;
	Lance__Table__U64Segment *segments[1] = {&segment};
	Lance__Table__U64Segment__Range range;
	uint8_t    *data;

	lance__table__u64_segment__range__init(&range);
	range.start = start;
	range.end = end;
	lance__table__u64_segment__init(&segment);
	segment.segment_case = LANCE__TABLE__U64_SEGMENT__SEGMENT_RANGE;
	segment.range = &range;
	lance__table__row_id_sequence__init(&sequence);
	sequence.n_segments = 1;
	sequence.segments = segments;
	*len = protobuf_c_message_get_packed_size((const ProtobufCMessage *) &sequence);
	data = lp_alloc(*len);
	protobuf_c_message_pack((const ProtobufCMessage *) &sequence, data);
	return data;
}

/* The UUID of the index index_section_covering makes. */
static const uint8_t INDEX_UUID[16] = {1, 2, 3, 4, 5, 6, 0x47, 8, 0x89, 10, 11, 12, 13, 14, 15, 16};

/* An index section of one index ("idx" on field 0, INDEX_UUID) covering fragments ids. */
static uint8_t *
index_section_covering(const uint64_t *ids, size_t n, size_t *len)
{
	Lance__Table__IndexSection section;
	Lance__Table__IndexMetadata index;
	Lance__Table__IndexMetadata *indices[1] = {&index};
	Lance__Table__UUID uuid;
	int32_t		fields[1] = {0};
	uint32_t	members[8];
	uint8_t    *bitmap;
	size_t		bitmap_len;
	uint8_t    *data;
	LpError		err;

	for (size_t i = 0; i < n; i++)
		members[i] = (uint32_t) ids[i];
	LP_CHECK(lp_roaring32_serialize(members, n, &bitmap, &bitmap_len, &err));
	lance__table__index_metadata__init(&index);
	lance__table__uuid__init(&uuid);
	uuid.uuid.data = (uint8_t *) INDEX_UUID;
	uuid.uuid.len = 16;
	index.uuid = &uuid;
	index.name = (char *) "idx";
	index.n_fields = 1;
	index.fields = fields;
	index.fragment_bitmap.data = bitmap;
	index.fragment_bitmap.len = bitmap_len;
	lance__table__index_section__init(&section);
	section.n_indices = 1;
	section.indices = indices;
	*len = protobuf_c_message_get_packed_size((const ProtobufCMessage *) &section);
	data = lp_alloc(*len);
	protobuf_c_message_pack((const ProtobufCMessage *) &section, data);
	lp_free(bitmap);
	return data;
}

/*
 * A rewrite without stable row ids that remapped the index covering its
 * group: the new version lists the index under the new UUID, covering the
 * new fragment, and the transaction records it with the reserved fragment
 * id; a taken fragment id or an index gone since is LP_ERR_CONFLICT.
 */
static void
check_rewritten_index(const LpManifest *base, LpCommitRequest *request, uint64_t old_fragment)
{
	LpRewrittenIndex rewritten;
	uint8_t    *out = NULL;
	size_t		out_len;
	uint64_t	new_id;
	uint64_t	next_id;
	LpManifest *built;
	Lance__Table__Transaction *txn = NULL;
	LpError		err;

	memcpy(rewritten.old_uuid, INDEX_UUID, 16);
	memset(rewritten.new_uuid, 0x5a, 16);
	LP_CHECK(lp_manifest_next_fragment_id(base, &next_id, &err));
	request->rewritten_indices = &rewritten;
	request->n_rewritten_indices = 1;
	request->first_new_fragment_id = next_id;
	LP_CHECK_MSG(lp_commit_build_manifest(base, request, (const uint8_t *) "", 0, "3-x.txn",
										  0, &out, &out_len, &new_id, &err), "%s", err.message);
	LP_CHECK_EQ_U64(new_id, next_id);
	built = out != NULL ? lp_manifest_parse("built", out, out_len, &err) : NULL;
	LP_CHECK(built != NULL);
	if (built != NULL)
	{
		LpIndexEntry *entries = NULL;
		size_t		n_entries = 0;
		bool		covered;

		LP_CHECK(lp_manifest_index_entries(built, &entries, &n_entries, &err) && n_entries == 1);
		LP_CHECK(n_entries == 1 && memcmp(entries[0].uuid, rewritten.new_uuid, 16) == 0);
		LP_CHECK(lp_manifest_fragment_indexed(built, new_id, NULL, 0, &covered, &err) && covered);
		LP_CHECK(lp_manifest_fragment_indexed(built, old_fragment, NULL, 0, &covered, &err) && !covered);
		lp_manifest_index_entries_free(entries, n_entries);
		lp_manifest_free(built);
	}
	lp_free(out);
	out = NULL;

	/* the transaction: the index remapped, the new fragment with its reserved id */
	LP_CHECK_MSG(lp_transaction_build(request, base, "uuid", &out, &out_len, &err), "%s", err.message);
	LP_CHECK(out != NULL && lp_protobuf_unpack(&lance__table__transaction__descriptor, out, out_len,
											   (ProtobufCMessage **) &txn) == LP_UNPACK_OK);
	LP_CHECK(txn != NULL && txn->rewrite != NULL && txn->rewrite->n_rewritten_indices == 1 &&
			 memcmp(txn->rewrite->rewritten_indices[0]->new_id->uuid.data, rewritten.new_uuid, 16) == 0 &&
			 memcmp(txn->rewrite->rewritten_indices[0]->old_id->uuid.data, INDEX_UUID, 16) == 0 &&
			 txn->rewrite->groups[0]->new_fragments[0]->id == next_id);
	if (txn != NULL)
		lp_protobuf_free((ProtobufCMessage *) txn);
	lp_free(out);
	out = NULL;

	/* an append took the fragment id the remapped index names */
	request->first_new_fragment_id = next_id + 1;
	LP_CHECK(!lp_commit_build_manifest(base, request, (const uint8_t *) "", 0, "3-x.txn",
									   0, &out, &out_len, NULL, &err));
	LP_CHECK_MSG(err.code == LP_ERR_CONFLICT && strstr(err.message, "fragment ids") != NULL, "%s", err.message);

	/* the remapped index is gone: another index covers the group */
	request->first_new_fragment_id = next_id;
	rewritten.old_uuid[0] ^= 0xff;
	LP_CHECK(!lp_commit_build_manifest(base, request, (const uint8_t *) "", 0, "3-x.txn",
									   0, &out, &out_len, NULL, &err));
	LP_CHECK_MSG(err.code == LP_ERR_CONFLICT, "%s", err.message);
	request->rewritten_indices = NULL;
	request->n_rewritten_indices = 0;
	request->first_new_fragment_id = 0;
}

/*
 * Stable row ids: the appended fragment gets the next row ids as one range
 * and the new version as created-at / last-updated-at, as lancedb writes them
 * (observed: inline_row_ids = {segments [{range {start, end}}]}, version
 * sequences = {runs [{span {range {0, rows}}, version}]}).
 */
LP_TEST(commit_stable_row_ids)
{
	LpManifestNaming naming;
	LpManifest *base;
	LpManifest *built;
	char		root[1024];
	LpCommitRequest request;
	LpNewDataFile file;
	uint8_t    *out;
	size_t		out_len;
	uint64_t	new_id;
	LpError		err;

	LP_CHECK(lp_test_data_dir != NULL);
	if (lp_test_data_dir == NULL)
		return;
	lp_test_dataset_path("types_2_2_v2", root, sizeof(root));
	base = read_latest(root, &naming);
	if (base == NULL)
		return;
	base->proto->reader_feature_flags |= LP_FLAG_STABLE_ROW_IDS;
	base->proto->writer_feature_flags |= LP_FLAG_STABLE_ROW_IDS;
	base->proto->next_row_id = 515;

	memset(&file, 0, sizeof(file));
	file.path = "0101100100110111111111004f155542eb909d201ec1d1a6d8.lance";
	file.fields = base->proto->fragments[0]->files[0]->fields;
	file.column_indices = base->proto->fragments[0]->files[0]->column_indices;
	file.n_fields = base->proto->fragments[0]->files[0]->n_fields;
	file.version = LP_FILE_VERSION_2_2;
	file.size_bytes = 1000;
	memset(&request, 0, sizeof(request));
	request.kind = LP_COMMIT_APPEND;
	request.read_version = 3;
	request.file = file;
	request.physical_rows = 300;
	LP_CHECK(lp_commit_build_manifest(base, &request, (const uint8_t *) "", 0, "3-x.txn",
									  1000000007, &out, &out_len, &new_id, &err));
	built = lp_manifest_parse("built", out, out_len, &err);
	LP_CHECK(built != NULL);
	if (built != NULL)
	{
		const Lance__Table__DataFragment *added = lp_manifest_find_fragment(built->proto, new_id);
		Lance__Table__RowIdSequence *ids = NULL;
		Lance__Table__RowVersionSequence *versions = NULL;

		LP_CHECK_EQ_U64(built->proto->next_row_id, 815);
		LP_CHECK_EQ_U64(built->proto->reader_feature_flags, LP_FLAG_STABLE_ROW_IDS);
		LP_CHECK_EQ_U64(built->proto->timestamp->seconds, 1);
		LP_CHECK_EQ_U64(built->proto->timestamp->nanos, 7);
		LP_CHECK(added != NULL && added->row_id_sequence_case ==
				 LANCE__TABLE__DATA_FRAGMENT__ROW_ID_SEQUENCE_INLINE_ROW_IDS);
		if (added != NULL)
		{
			LP_CHECK(lp_protobuf_unpack(&lance__table__row_id_sequence__descriptor,
										added->inline_row_ids.data, added->inline_row_ids.len,
										(ProtobufCMessage **) &ids) == LP_UNPACK_OK);
			LP_CHECK(ids != NULL && ids->n_segments == 1 &&
					 ids->segments[0]->segment_case == LANCE__TABLE__U64_SEGMENT__SEGMENT_RANGE &&
					 ids->segments[0]->range->start == 515 &&
					 ids->segments[0]->range->end == 815);
			LP_CHECK(lp_protobuf_unpack(&lance__table__row_version_sequence__descriptor,
										added->inline_created_at_versions.data,
										added->inline_created_at_versions.len,
										(ProtobufCMessage **) &versions) == LP_UNPACK_OK);
			LP_CHECK(versions != NULL && versions->n_runs == 1 &&
					 versions->runs[0]->version == 4 &&
					 versions->runs[0]->span->range->start == 0 &&
					 versions->runs[0]->span->range->end == 300);
			LP_CHECK(added->last_updated_at_version_sequence_case ==
					 LANCE__TABLE__DATA_FRAGMENT__LAST_UPDATED_AT_VERSION_SEQUENCE_INLINE_LAST_UPDATED_AT_VERSIONS);
			lp_protobuf_free((ProtobufCMessage *) ids);
			lp_protobuf_free((ProtobufCMessage *) versions);
		}
		lp_manifest_free(built);
	}
	lp_free(out);

	/*
	 * A rewrite of fragments 0 and 1 carries their row ids (ranges 40..
	 * and 7..) into the new fragment, in order, and the bitmap of an index
	 * covering both names the new fragment instead.
	 */
	{
		Lance__Table__DataFragment *old0 = base->proto->fragments[0];
		Lance__Table__DataFragment *old1 = base->proto->fragments[1];
		uint64_t	rows0 = old0->physical_rows;
		uint64_t	rows1 = old1->physical_rows;
		uint64_t	old[2] = {old0->id, old1->id};
		LpRewriteGroup group = {old, 2, file, rows0 + rows1, NULL};
		uint8_t    *ids0 = range_row_ids(40, 40 + rows0, &old0->inline_row_ids.len);
		uint8_t    *ids1 = range_row_ids(7, 7 + rows1, &old1->inline_row_ids.len);
		uint8_t    *section_both;
		uint8_t    *section_first;
		size_t		section_both_len;
		size_t		section_first_len;

		old0->inline_row_ids.data = ids0;
		old0->row_id_sequence_case = LANCE__TABLE__DATA_FRAGMENT__ROW_ID_SEQUENCE_INLINE_ROW_IDS;
		old1->inline_row_ids.data = ids1;
		old1->row_id_sequence_case = LANCE__TABLE__DATA_FRAGMENT__ROW_ID_SEQUENCE_INLINE_ROW_IDS;
		section_both = index_section_covering(old, 2, &section_both_len);
		section_first = index_section_covering(old, 1, &section_first_len);
		base->index_section = section_both;
		base->index_section_len = section_both_len;

		request.kind = LP_COMMIT_REWRITE;
		request.groups = &group;
		request.n_groups = 1;
		LP_CHECK_MSG(lp_commit_build_manifest(base, &request, (const uint8_t *) "", 0, "3-x.txn",
											  0, &out, &out_len, &new_id, &err),
					 "%s", err.message);
		built = lp_manifest_parse("built", out, out_len, &err);
		LP_CHECK(built != NULL);
		if (built != NULL)
		{
			const Lance__Table__DataFragment *merged = lp_manifest_find_fragment(built->proto, new_id);
			Lance__Table__RowIdSequence *ids = NULL;
			bool		covered;

			LP_CHECK_EQ_U64(built->proto->next_row_id, 515);
			LP_CHECK(merged != NULL && lp_protobuf_unpack(&lance__table__row_id_sequence__descriptor,
														  merged->inline_row_ids.data,
														  merged->inline_row_ids.len,
														  (ProtobufCMessage **) &ids) == LP_UNPACK_OK);
			LP_CHECK(ids != NULL && ids->n_segments == 2 &&
					 ids->segments[0]->range->start == 40 &&
					 ids->segments[0]->range->end == 40 + rows0 &&
					 ids->segments[1]->range->start == 7 &&
					 ids->segments[1]->range->end == 7 + rows1);
			lp_protobuf_free((ProtobufCMessage *) ids);
			LP_CHECK(lp_manifest_fragment_indexed(built, new_id, NULL, 0, &covered, &err) && covered);
			LP_CHECK(lp_manifest_fragment_indexed(built, old[0], NULL, 0, &covered, &err) && !covered);
			lp_manifest_free(built);
		}
		lp_free(out);

		/* an index covering part of the group: refused, as Lance refuses it */
		base->index_section = section_first;
		base->index_section_len = section_first_len;
		LP_CHECK(!lp_commit_build_manifest(base, &request, (const uint8_t *) "", 0, "3-x.txn",
										   0, &out, &out_len, NULL, &err));
		LP_CHECK_MSG(err.code == LP_ERR_INVALID_ARGUMENT && strstr(err.message, "mixes") != NULL,
					 "%s", err.message);

		/* without stable row ids, a covered fragment would need its index remapped */
		base->proto->reader_feature_flags &= ~LP_FLAG_STABLE_ROW_IDS;
		base->proto->writer_feature_flags &= ~LP_FLAG_STABLE_ROW_IDS;
		base->index_section = section_both;
		base->index_section_len = section_both_len;
		LP_CHECK(!lp_commit_build_manifest(base, &request, (const uint8_t *) "", 0, "3-x.txn",
										   0, &out, &out_len, NULL, &err));
		LP_CHECK_MSG(err.code == LP_ERR_UNSUPPORTED && strstr(err.message, "remapped") != NULL,
					 "%s", err.message);
		check_rewritten_index(base, &request, old[0]);
		base->index_section = NULL;
		base->index_section_len = 0;
		old0->row_id_sequence_case = LANCE__TABLE__DATA_FRAGMENT__ROW_ID_SEQUENCE__NOT_SET;
		old1->row_id_sequence_case = LANCE__TABLE__DATA_FRAGMENT__ROW_ID_SEQUENCE__NOT_SET;
		old0->inline_row_ids.data = old1->inline_row_ids.data = NULL;
		old0->inline_row_ids.len = old1->inline_row_ids.len = 0;
		lp_free(ids0);
		lp_free(ids1);
		lp_free(section_both);
		lp_free(section_first);
	}
	lp_manifest_free(base);
}

/*
 * commit's first attempt builds on the manifest the caller read: no listing
 * of _versions/ and no read at all; a retry after a lost race does read.
 */
LP_TEST(commit_reuses_read_manifest)
{
	char		work[1024];
	char		root[1200];
	char		name_first[LP_DATA_FILE_NAME_SIZE];
	char		name_second[LP_DATA_FILE_NAME_SIZE];
	char		name_third[LP_DATA_FILE_NAME_SIZE];
	uint64_t	seed = 1234;
	LpManifestNaming naming;
	LpManifest *before;
	LpCommitRequest request;
	LpCommitOptions options = {3, lp_test_random, &seed, false};
	LpCommitResult result;
	LpError		err;
	int			lists;
	int			opens;

	before = copy_and_read_latest("types_2_2_v2", work, sizeof(work), root, sizeof(root), &naming);
	if (before == NULL)
		return;

	/* version 3 as read: the first attempt lands on it without a read */
	memset(&request, 0, sizeof(request));
	request.kind = LP_COMMIT_APPEND;
	request.read_version = lp_manifest_version(before);
	request.read_manifest = before;
	request.read_naming = naming;
	stage_copy(root, before, 0, &seed, name_first, &request.file, &request.physical_rows);
	lists = lp_test_store_lists;
	opens = lp_test_store_opens;
	LP_CHECK_MSG(lp_commit(lp_test_store(), root, &request, &options, &result, &err),
				 "%.300s", err.message);
	LP_CHECK_EQ_U64(result.version, 4);
	LP_CHECK_EQ_U64(result.attempts, 1);
	LP_CHECK_EQ_U64(lp_test_store_lists - lists, 0);
	LP_CHECK_EQ_U64(lp_test_store_opens - opens, 0);

	/* version 3 again, now stale: version 4 is taken, the retry reads */
	stage_copy(root, before, 1, &seed, name_second, &request.file, &request.physical_rows);
	lists = lp_test_store_lists;
	opens = lp_test_store_opens;
	LP_CHECK_MSG(lp_commit(lp_test_store(), root, &request, &options, &result, &err),
				 "%.300s", err.message);
	LP_CHECK_EQ_U64(result.version, 5);
	LP_CHECK_EQ_U64(result.attempts, 2);
	LP_CHECK(lp_test_store_lists - lists >= 1);
	LP_CHECK(lp_test_store_opens - opens >= 1);

	/* without a manifest the first attempt lists and reads */
	request.read_manifest = NULL;
	request.read_version = 5;
	stage_copy(root, before, 2, &seed, name_third, &request.file, &request.physical_rows);
	lists = lp_test_store_lists;
	opens = lp_test_store_opens;
	LP_CHECK_MSG(lp_commit(lp_test_store(), root, &request, &options, &result, &err),
				 "%.300s", err.message);
	LP_CHECK_EQ_U64(result.version, 6);
	LP_CHECK_EQ_U64(result.attempts, 1);
	LP_CHECK_EQ_U64(lp_test_store_lists - lists, 1);
	LP_CHECK_EQ_U64(lp_test_store_opens - opens, 1);

	/* a manifest that is not the read version's is refused */
	request.read_manifest = before;
	request.read_version = 6;
	LP_CHECK(!lp_commit(lp_test_store(), root, &request, &options, &result, &err));
	LP_CHECK(err.code == LP_ERR_INVALID_ARGUMENT);

	lp_manifest_free(before);
	reference_check(root, 515 + 300 + 170 + 45, "", false);
	lp_test_remove_tree(work);
}

/*
 * Whether a file was committed since a version reads only the versions
 * after it (the latest one from memory).
 */
LP_TEST(commit_referenced_since_reads_newer_versions)
{
	char		work[1024];
	char		root[1200];
	char		appended[LP_DATA_FILE_NAME_SIZE];
	char		replacement[LP_DATA_FILE_NAME_SIZE];
	uint64_t	seed = 4321;
	uint64_t	found;
	LpManifestNaming naming;
	LpManifest *before;
	LpManifest *latest;
	LpCommitRequest request;
	LpCommitOptions options = {3, lp_test_random, &seed, false};
	LpCommitResult result;
	LpError		err;
	int			opens;

	before = copy_and_read_latest("types_2_2_v2", work, sizeof(work), root, sizeof(root), &naming);
	if (before == NULL)
		return;
	/* version 4 appends a file, version 5 replaces it in its fragment */
	memset(&request, 0, sizeof(request));
	request.kind = LP_COMMIT_APPEND;
	request.read_version = 3;
	stage_copy(root, before, 2, &seed, appended, &request.file, &request.physical_rows);
	LP_CHECK_MSG(lp_commit(lp_test_store(), root, &request, &options, &result, &err),
				 "%.300s", err.message);
	request.kind = LP_COMMIT_REPLACE;
	request.read_version = 4;
	request.fragment_id = result.fragment_id;
	stage_copy(root, before, 2, &seed, replacement, &request.file, &request.physical_rows);
	LP_CHECK_MSG(lp_commit(lp_test_store(), root, &request, &options, &result, &err),
				 "%.300s", err.message);
	LP_CHECK_EQ_U64(result.version, 5);

	latest = read_latest(root, &naming);
	if (latest != NULL)
	{
		/* in the latest version: found without a read */
		opens = lp_test_store_opens;
		LP_CHECK(lp_dataset_file_referenced_since(lp_test_store(), root, naming, latest, 3,
												  false, 0, replacement, &found, &err));
		LP_CHECK_EQ_U64(found, 5);
		LP_CHECK_EQ_U64(lp_test_store_opens - opens, 0);

		/* only in version 4: one read */
		opens = lp_test_store_opens;
		LP_CHECK(lp_dataset_file_referenced_since(lp_test_store(), root, naming, latest, 3,
												  false, 0, appended, &found, &err));
		LP_CHECK_EQ_U64(found, 4);
		LP_CHECK_EQ_U64(lp_test_store_opens - opens, 1);

		/* since version 4: version 4 is not read */
		opens = lp_test_store_opens;
		LP_CHECK(lp_dataset_file_referenced_since(lp_test_store(), root, naming, latest, 4,
												  false, 0, appended, &found, &err));
		LP_CHECK_EQ_U64(found, 0);
		LP_CHECK_EQ_U64(lp_test_store_opens - opens, 0);

		/* in another base it is another file */
		LP_CHECK(lp_dataset_file_referenced_since(lp_test_store(), root, naming, latest, 0,
												  true, 1, replacement, &found, &err));
		LP_CHECK_EQ_U64(found, 0);

		/* a name in no version: every version after 1 is read, newest first */
		opens = lp_test_store_opens;
		LP_CHECK(lp_dataset_file_referenced_since(lp_test_store(), root, naming, latest, 1,
												  false, 0, "absent.lance", &found, &err));
		LP_CHECK_EQ_U64(found, 0);
		LP_CHECK_EQ_U64(lp_test_store_opens - opens, 3);
		lp_manifest_free(latest);
	}
	lp_manifest_free(before);
	lp_test_remove_tree(work);
}

/*
 * Overwrite (Lance's Overwrite transaction) on top of a dataset, an append of
 * two fragments in one version, and lp_commit_create making version 1 of a
 * new dataset under each naming scheme; the reference reads them all, then
 * appends, indexes and compacts on top.
 */
LP_TEST(commit_overwrite_append_fragments_create)
{
	char		work[1024];
	char		root[1200];
	char		original[1200];
	char		names[4][LP_DATA_FILE_NAME_SIZE];
	char		pairs[6000];
	uint64_t	seed = 0x5eed;
	LpManifestNaming naming;
	LpManifest *before;
	LpManifest *after;
	LpManifest *appended;
	LpSchema	schema;
	LpNewFragment fragments[2] = {0};
	LpCommitRequest request;
	LpCommitOptions options = {3, lp_test_random, &seed, false};
	LpCommitResult result;
	LpError		err;
	uint64_t	rows;
	uint8_t    *transaction;
	size_t		transaction_len;
	ProtobufCMessage *message = NULL;

	before = copy_and_read_latest("types_2_2_v1", work, sizeof(work), root, sizeof(root), &naming);
	if (before == NULL)
		return;
	snprintf(original, sizeof(original), "%s/types_2_2_v1.lance", lp_test_data_dir);
	LP_CHECK(lp_manifest_schema(before, &schema, &err));

	/* overwrite: two copies of fragment 0 replace everything */
	memset(&request, 0, sizeof(request));
	for (int i = 0; i < 2; i++)
	{
		LP_CHECK(stage_copy(root, before, 0, &seed, names[i], &fragments[i].file, &rows));
		fragments[i].physical_rows = rows;
	}
	request.kind = LP_COMMIT_OVERWRITE;
	request.read_version = before->proto->version;
	request.fragments = fragments;
	request.n_fragments = 2;
	request.schema = &schema;
	request.data_version = fragments[0].file.version;
	LP_CHECK_MSG(lp_commit(lp_test_store(), root, &request, &options, &result, &err), "%.300s", err.message);
	LP_CHECK_EQ_U64(result.version, before->proto->version + 1);
	LP_CHECK(result.new_fragment_ids != NULL && result.new_fragment_ids[0] == 0 &&
			 result.new_fragment_ids[1] == 1);
	lp_free(result.new_fragment_ids);
	after = read_latest(root, &naming);
	if (after != NULL)
	{
		LP_CHECK_EQ_U64(after->proto->n_fragments, 2);
		LP_CHECK_EQ_U64(after->proto->fragments[1]->id, 1);
		LP_CHECK_EQ_U64(after->proto->max_fragment_id, 1);
		LP_CHECK(after->index_section == NULL);
		LP_CHECK_EQ_U64(after->proto->n_fields, before->proto->n_fields);
		check_transaction_file(root, after);
		LP_CHECK(lp_dataset_read_transaction(lp_test_store(), root, after, &transaction,
											 &transaction_len, &err));
		LP_CHECK(lp_protobuf_unpack(&lance__table__transaction__descriptor, transaction,
									transaction_len, &message) == LP_UNPACK_OK);
		LP_CHECK(message != NULL &&
				 ((Lance__Table__Transaction *) message)->operation_case ==
				 LANCE__TABLE__TRANSACTION__OPERATION_OVERWRITE &&
				 ((Lance__Table__Transaction *) message)->overwrite->n_fragments == 2 &&
				 ((Lance__Table__Transaction *) message)->overwrite->n_schema == before->proto->n_fields);
		lp_protobuf_free(message);
		lp_free(transaction);
		lp_manifest_free(after);
	}

	/* two more copies appended as two fragments of one version */
	appended = read_latest(root, &naming);
	if (appended == NULL)
		return;
	for (int i = 0; i < 2; i++)
		LP_CHECK(stage_copy(root, appended, 0, &seed, names[2 + i], &fragments[i].file,
							&fragments[i].physical_rows));
	memset(&request, 0, sizeof(request));
	request.kind = LP_COMMIT_APPEND;
	request.read_version = appended->proto->version;
	request.fragments = fragments;
	request.n_fragments = 2;
	LP_CHECK_MSG(lp_commit(lp_test_store(), root, &request, &options, &result, &err), "%.300s", err.message);
	LP_CHECK_EQ_U64(result.version, appended->proto->version + 1);
	LP_CHECK(result.new_fragment_ids != NULL && result.new_fragment_ids[0] == 2 &&
			 result.new_fragment_ids[1] == 3);
	lp_free(result.new_fragment_ids);
	snprintf(pairs, sizeof(pairs), "0=%s:0 1=%s:0 2=%s:0 3=%s:0", original, original, original, original);
	reference_check(root, 4 * rows, pairs, true);

	/* version 1 of new datasets, one per naming scheme, from a copy of the same file (its fields are appended's) */
	for (int scheme = LP_NAMING_V1; scheme <= LP_NAMING_V2; scheme++)
	{
		char		created[1300];
		char		from[1400];
		char		to[1400];
		char		manifest_name[LP_MANIFEST_NAME_SIZE];
		char		manifest_path[1400];

		snprintf(created, sizeof(created), "%s/created_v%d.lance", work, scheme);
		LP_CHECK(lp_generate_data_file_name(lp_test_random, &seed, names[0], &err));
		snprintf(from, sizeof(from), "%s/data/%s", root, names[2]);
		snprintf(to, sizeof(to), "%s/data/%s", created, names[0]);
		LP_CHECK(mkdir(created, 0700) == 0);
		snprintf(manifest_path, sizeof(manifest_path), "%s/data", created);
		LP_CHECK(mkdir(manifest_path, 0700) == 0);
		snprintf(manifest_path, sizeof(manifest_path), "%s/_versions", created);
		LP_CHECK(mkdir(manifest_path, 0700) == 0);
		snprintf(manifest_path, sizeof(manifest_path), "%s/_transactions", created);
		LP_CHECK(mkdir(manifest_path, 0700) == 0);
		LP_CHECK(copy_file(from, to));
		fragments[0].file.path = names[0];
		memset(&request, 0, sizeof(request));
		request.kind = LP_COMMIT_OVERWRITE;
		request.fragments = fragments;
		request.n_fragments = 1;
		request.schema = &schema;
		request.data_version = fragments[0].file.version;
		LP_CHECK_MSG(lp_commit_create(lp_test_store(), created, &request, (LpManifestNaming) scheme,
									  &options, &result, &err), "%.300s", err.message);
		LP_CHECK_EQ_U64(result.version, 1);
		lp_free(result.new_fragment_ids);
		lp_manifest_name((LpManifestNaming) scheme, 1, manifest_name);
		snprintf(manifest_path, sizeof(manifest_path), "%s/_versions/%s", created, manifest_name);
		LP_CHECK_MSG(file_size(manifest_path) > 0, "%.300s", manifest_path);
		snprintf(pairs, sizeof(pairs), "0=%s:0", original);
		reference_check(created, rows, pairs, true);
		/* a second creation finds version 1 */
		LP_CHECK(!lp_commit_create(lp_test_store(), created, &request, (LpManifestNaming) scheme,
								   &options, &result, &err));
		LP_CHECK(err.code == LP_ERR_ALREADY_EXISTS);
	}
	lp_schema_free(&schema);
	lp_manifest_free(appended);
	lp_manifest_free(before);
	lp_test_remove_tree(work);
}

/* ---- deletes ---------------------------------------------------------------- */

/*
 * Delete rows (ascending offsets) of a fragment of the dataset at root as
 * read in manifest, as a SQL DELETE does: the fragment's deletions read, the
 * union written as a new deletion file, or none when every row goes.
 * *deletions receives the union (free with lp_deletions_free).
 */
static bool
stage_delete(const char *root, const LpManifest *manifest, uint64_t fragment_id,
			 const uint32_t *rows, size_t n, uint64_t *seed, LpDeleteFragment *entry,
			 LpDeletions *deletions)
{
	const Lance__Table__DataFragment *fragment = lp_manifest_find_fragment(manifest->proto, fragment_id);
	LpError		err;

	memset(entry, 0, sizeof(*entry));
	memset(deletions, 0, sizeof(*deletions));
	LP_CHECK(fragment != NULL);
	if (fragment == NULL)
		return false;
	entry->fragment_id = fragment_id;
	if (fragment->deletion_file != NULL)
	{
		const Lance__Table__DeletionFile *old = fragment->deletion_file;
		LpDeletionForm form = old->file_type == LANCE__TABLE__DELETION_FILE__DELETION_FILE_TYPE__BITMAP ?
			LP_DELETION_BITMAP : LP_DELETION_ARROW;
		char	   *relative = lp_deletion_file_path(fragment_id, old->read_version, old->id, form);
		char		path[2048];
		LpInput    *input;
		bool		ok;

		snprintf(path, sizeof(path), "%s/%s", root, relative);
		lp_free(relative);
		input = lp_test_store()->ops->open_input(lp_test_store(), path, &err);
		LP_CHECK_MSG(input != NULL, "%.300s", err.message);
		if (input == NULL)
			return false;
		ok = lp_deletions_read(input, form, fragment->physical_rows, deletions, &err);
		lp_input_close(input);
		LP_CHECK_MSG(ok, "%.300s", err.message);
		if (!ok)
			return false;
		entry->had_deletion_file = true;
		entry->old_read_version = old->read_version;
		entry->old_id = old->id;
	}
	LP_CHECK_MSG(lp_deletions_add(deletions, fragment->physical_rows, rows, n, &err),
				 "%.300s", err.message);
	if (deletions->num_deleted == fragment->physical_rows)
	{
		entry->all_deleted = true;
		return true;
	}
	entry->read_version = manifest->proto->version;
	entry->num_deleted_rows = deletions->num_deleted;
	LP_CHECK_MSG(lp_deletion_file_write(lp_test_store(), root, fragment_id, entry->read_version,
										deletions, lp_test_random, seed, &entry->id, &err),
				 "%.300s", err.message);
	return err.code == LP_OK;
}

static void
init_delete_request(LpCommitRequest *request, const LpManifest *read,
					const LpDeleteFragment *deletes, size_t n)
{
	memset(request, 0, sizeof(*request));
	request->kind = LP_COMMIT_DELETE;
	request->read_version = read->proto->version;
	request->deletes = deletes;
	request->n_deletes = n;
	request->predicate = "id < 0";
}

/* What lancedb reads of the latest version (read_offsets.cjs); NULL when it fails. */
static JsonValue *
reference_offsets(const char *root)
{
	char		command[4096];
	char	   *text = malloc(1 << 20);
	size_t		len = 0;
	size_t		got;
	FILE	   *output;
	int			status;
	const char *error = NULL;
	JsonValue  *value = NULL;

	snprintf(command, sizeof(command),
			 "LANCEDB_LOG=error node test/reference/read_offsets.cjs '%s'", root);
	output = popen(command, "r");
	LP_CHECK(output != NULL);
	if (output == NULL)
	{
		free(text);
		return NULL;
	}
	while (len < (1 << 20) && (got = fread(text + len, 1, (1 << 20) - len, output)) > 0)
		len += got;
	status = pclose(output);
	LP_CHECK_MSG(status == 0, "%.400s: %.300s", command, len > 0 ? text : "");
	if (status == 0)
	{
		value = json_parse(text, len, &error);
		LP_CHECK_MSG(value != NULL, "%.100s: %.300s", error, text);
	}
	free(text);
	return value;
}

/*
 * lancedb reads of fragment fragment_id exactly its num_rows offsets that
 * deletions does not hold; deletions NULL: it reads nothing of it.
 */
static void
check_reference_fragment(const JsonValue *read, uint64_t fragment_id, uint64_t num_rows,
						 const LpDeletions *deletions)
{
	char		key[32];
	const JsonValue *offsets;
	size_t		next = 0;

	snprintf(key, sizeof(key), "%llu", (unsigned long long) fragment_id);
	offsets = json_get(json_get(read, "fragments"), key);
	if (deletions == NULL)
	{
		LP_CHECK_MSG(offsets == NULL, "lancedb reads rows of fragment %s", key);
		return;
	}
	LP_CHECK_MSG(offsets != NULL, "lancedb reads no row of fragment %s", key);
	if (offsets == NULL)
		return;
	for (uint64_t r = 0; r < num_rows; r++)
	{
		bool		read_back = next < offsets->count &&
			strtoull(offsets->items[next].text, NULL, 10) == r;

		if (read_back)
			next++;
		if (read_back == lp_deletions_contains(deletions, r))
		{
			LP_CHECK_MSG(false, "fragment %s row %llu is %s by lancedb", key,
						 (unsigned long long) r, read_back ? "read" : "not read");
			return;
		}
	}
	LP_CHECK_MSG(next == offsets->count, "lancedb reads offsets beyond fragment %s", key);
}

static uint64_t
reference_count(const JsonValue *read, const char *which)
{
	const JsonValue *count = read ? json_get(read, which) : NULL;

	return count != NULL ? strtoull(count->text, NULL, 10) : UINT64_MAX;
}

/*
 * A delete that leaves 500 of the 5000 rows of fragment 0 (a bitmap
 * container) and every row of fragment 1: fragment 0 gets a Roaring deletion
 * file, fragment 1 goes, lancedb reads exactly the rows left and can still
 * append, index and compact.
 */
LP_TEST(commit_delete_reference)
{
	char		work[1024];
	char		root[1200];
	uint64_t	seed = 101;
	uint32_t   *rows = malloc(5000 * sizeof(uint32_t));
	LpManifestNaming naming;
	LpManifest *before;
	LpManifest *after = NULL;
	LpDeleteFragment deletes[2];
	LpDeletions deletions[2];
	LpCommitRequest request;
	LpCommitOptions options = {3, lp_test_random, &seed, false};
	LpCommitResult result;
	LpError		err;
	JsonValue  *read;

	before = copy_and_read_latest("multipage_2_2", work, sizeof(work), root, sizeof(root), &naming);
	if (before == NULL)
	{
		free(rows);
		return;
	}
	for (uint32_t i = 0; i < 5000; i++)
		rows[i] = i < 4500 ? i : 4999 - (i - 4500) * 2;
	LP_CHECK(stage_delete(root, before, 0, rows, 4500, &seed, &deletes[0], &deletions[0]));
	for (uint32_t i = 0; i < 3000; i++)
		rows[i] = i;
	LP_CHECK(stage_delete(root, before, 1, rows, 3000, &seed, &deletes[1], &deletions[1]));
	LP_CHECK(!deletes[0].all_deleted && deletes[0].num_deleted_rows == 4500);
	LP_CHECK(deletes[1].all_deleted);
	init_delete_request(&request, before, deletes, 2);

	LP_CHECK_MSG(lp_commit(lp_test_store(), root, &request, &options, &result, &err),
				 "%.300s", err.message);
	LP_CHECK_EQ_U64(result.version, before->proto->version + 1);
	LP_CHECK(result.new_fragment_ids == NULL);
	after = read_latest(root, &naming);
	if (after != NULL)
	{
		const Lance__Table__DataFragment *kept = after->proto->fragments[0];
		Lance__Table__Transaction *txn = NULL;

		LP_CHECK_EQ_U64(after->proto->n_fragments, 1);
		LP_CHECK(kept->id == 0 && kept->deletion_file != NULL &&
				 kept->deletion_file->file_type == LANCE__TABLE__DELETION_FILE__DELETION_FILE_TYPE__BITMAP &&
				 kept->deletion_file->read_version == before->proto->version &&
				 kept->deletion_file->id == deletes[0].id &&
				 kept->deletion_file->num_deleted_rows == 4500);
		LP_CHECK(kept->n_files == before->proto->fragments[0]->n_files &&
				 strcmp(kept->files[0]->path, before->proto->fragments[0]->files[0]->path) == 0);
		LP_CHECK((after->proto->reader_feature_flags & 1) && (after->proto->writer_feature_flags & 1));
		LP_CHECK(!(before->proto->writer_feature_flags & 1));
		/* the id of the removed fragment is never given again */
		LP_CHECK(after->proto->max_fragment_id_present_case ==
				 LANCE__TABLE__MANIFEST__MAX_FRAGMENT_ID_PRESENT_MAX_FRAGMENT_ID &&
				 after->proto->max_fragment_id == 1);
		check_transaction_file(root, after);
		LP_CHECK(lp_protobuf_unpack(&lance__table__transaction__descriptor, after->transaction,
									after->transaction_len,
									(ProtobufCMessage **) &txn) == LP_UNPACK_OK);
		LP_CHECK(txn != NULL && txn->operation_case == LANCE__TABLE__TRANSACTION__OPERATION_DELETE &&
				 txn->read_version == before->proto->version &&
				 txn->delete_->n_updated_fragments == 1 &&
				 txn->delete_->updated_fragments[0]->id == 0 &&
				 txn->delete_->updated_fragments[0]->deletion_file != NULL &&
				 txn->delete_->updated_fragments[0]->deletion_file->id == deletes[0].id &&
				 txn->delete_->n_deleted_fragment_ids == 1 &&
				 txn->delete_->deleted_fragment_ids[0] == 1 &&
				 strcmp(txn->delete_->predicate, "id < 0") == 0);
		lp_protobuf_free((ProtobufCMessage *) txn);
	}
	read = reference_offsets(root);
	if (read != NULL)
	{
		LP_CHECK_EQ_U64(reference_count(read, "count"), 500);
		LP_CHECK_EQ_U64(reference_count(read, "filtered"), 500);
		check_reference_fragment(read, 0, 5000, &deletions[0]);
		check_reference_fragment(read, 1, 3000, NULL);
		json_free(read);
		reference_check(root, 500, "", true);
	}
	lp_deletions_free(&deletions[0]);
	lp_deletions_free(&deletions[1]);
	lp_manifest_free(after);
	lp_manifest_free(before);
	free(rows);
	lp_test_remove_tree(work);
}

/*
 * Deletes from fragments lancedb already deleted from (Arrow deletion
 * files): the old deletions stay deleted; a fragment whose last rows are
 * deleted goes.
 */
LP_TEST(commit_delete_keeps_old_deletions)
{
	static const uint32_t from_first[] = {0, 1, 13, 119};	/* 13 was deleted by lancedb */
	uint32_t	rest_of_last[60];
	char		work[1024];
	char		root[1200];
	uint64_t	seed = 102;
	LpManifestNaming naming;
	LpManifest *before;
	LpManifest *after = NULL;
	LpDeleteFragment deletes[2];
	LpDeletions deletions[2];
	LpCommitRequest request;
	LpCommitOptions options = {3, lp_test_random, &seed, false};
	LpCommitResult result;
	LpError		err;
	JsonValue  *read;

	before = copy_and_read_latest("deleted_2_2", work, sizeof(work), root, sizeof(root), &naming);
	if (before == NULL)
		return;
	/* lancedb deleted offsets 3, 13, ..., 113 of fragment 0 and 0 - 29 of fragment 2 */
	for (uint32_t i = 0; i < 60; i++)
		rest_of_last[i] = 30 + i;
	LP_CHECK(stage_delete(root, before, 0, from_first, 4, &seed, &deletes[0], &deletions[0]));
	LP_CHECK(stage_delete(root, before, 2, rest_of_last, 60, &seed, &deletes[1], &deletions[1]));
	LP_CHECK(deletes[0].had_deletion_file && deletes[0].num_deleted_rows == 12 + 3);
	LP_CHECK(deletes[1].had_deletion_file && deletes[1].all_deleted);
	init_delete_request(&request, before, deletes, 2);

	LP_CHECK_MSG(lp_commit(lp_test_store(), root, &request, &options, &result, &err),
				 "%.300s", err.message);
	after = read_latest(root, &naming);
	if (after != NULL)
	{
		LP_CHECK_EQ_U64(after->proto->n_fragments, 2);
		LP_CHECK_EQ_U64(total_rows(after), 360 - 15 - 90);
		LP_CHECK(after->proto->writer_feature_flags & 1);
	}
	read = reference_offsets(root);
	if (read != NULL)
	{
		LP_CHECK_EQ_U64(reference_count(read, "count"), 255);
		check_reference_fragment(read, 0, 120, &deletions[0]);
		LP_CHECK(json_get(json_get(read, "fragments"), "1") != NULL &&
				 json_get(json_get(read, "fragments"), "1")->count == 150);
		check_reference_fragment(read, 2, 90, NULL);
		json_free(read);
		reference_check(root, 255, "", true);
	}
	lp_deletions_free(&deletions[0]);
	lp_deletions_free(&deletions[1]);
	lp_manifest_free(after);
	lp_manifest_free(before);
	lp_test_remove_tree(work);
}

/*
 * Two deletes of one fragment read at the same version: the one that lands
 * second is a conflict, whether it learns of the first from its transaction
 * or (read at the newer version but built on the deletion file it read
 * before) from the fragment's deletion file.
 */
LP_TEST(commit_delete_race_same_fragment)
{
	static const uint32_t ours_rows[] = {1, 2};
	static const uint32_t theirs_rows[] = {3};
	char		work[1024];
	char		root[1200];
	uint64_t	seed = 103;
	LpManifestNaming naming;
	LpManifest *before;
	LpManifest *after;
	RacingStore store;
	LpDeleteFragment ours;
	LpDeleteFragment theirs;
	LpDeletions ours_deletions;
	LpDeletions theirs_deletions;
	LpCommitRequest request;
	LpCommitOptions options = {3, lp_test_random, &seed, false};
	LpCommitResult result;
	LpError		err;

	before = copy_and_read_latest("types_2_2_v2", work, sizeof(work), root, sizeof(root), &naming);
	if (before == NULL)
		return;
	racing_store_init(&store, root);
	LP_CHECK(stage_delete(root, before, 0, ours_rows, 2, &seed, &ours, &ours_deletions));
	LP_CHECK(stage_delete(root, before, 0, theirs_rows, 1, &seed, &theirs, &theirs_deletions));
	init_delete_request(&request, before, &ours, 1);
	init_delete_request(&store.competitor, before, &theirs, 1);

	LP_CHECK(!lp_commit(&store.base, root, &request, &options, &result, &err));
	LP_CHECK(store.raced);
	LP_CHECK_MSG(err.code == LP_ERR_CONFLICT && strstr(err.message, "Delete") != NULL,
				 "%s: %.300s", lp_error_code_name(err.code), err.message);

	/* read at the competitor's version, but still with the deletions read before it */
	request.read_version = store.competitor_version;
	LP_CHECK(!lp_commit(lp_test_store(), root, &request, &options, &result, &err));
	LP_CHECK_MSG(err.code == LP_ERR_CONFLICT &&
				 strstr(err.message, "deletion file of fragment 0 changed") != NULL,
				 "%s: %.300s", lp_error_code_name(err.code), err.message);

	after = read_latest(root, &naming);
	LP_CHECK(after != NULL && after->proto->version == store.competitor_version &&
			 after->proto->fragments[0]->deletion_file != NULL &&
			 after->proto->fragments[0]->deletion_file->id == theirs.id);
	LP_CHECK_EQ_U64(after ? total_rows(after) : 0, 514);
	lp_deletions_free(&ours_deletions);
	lp_deletions_free(&theirs_deletions);
	lp_manifest_free(after);
	lp_manifest_free(before);
	lp_test_remove_tree(work);
}

/* A delete and an append read at the same version both land, whichever wins. */
LP_TEST(commit_delete_and_append_race)
{
	static const uint32_t rows[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
	char		work[1024];
	char		root[1200];
	char		name[LP_DATA_FILE_NAME_SIZE];
	uint64_t	seed = 104;
	LpManifest *before;
	LpManifest *after;
	LpManifestNaming naming;
	RacingStore store;
	LpDeleteFragment entry;
	LpDeletions deletions;
	LpCommitRequest append;
	LpCommitRequest delete;
	LpCommitOptions options = {3, lp_test_random, &seed, false};
	LpCommitResult result;
	LpError		err;
	JsonValue  *read;

	for (int delete_first = 0; delete_first < 2; delete_first++)
	{
		before = start_racing_append(work, sizeof(work), root, sizeof(root), &seed, name,
									 &store, &append);
		if (before == NULL)
			return;
		LP_CHECK(stage_delete(root, before, 1, rows, 10, &seed, &entry, &deletions));
		init_delete_request(&delete, before, &entry, 1);
		store.competitor = delete_first ? delete : append;

		LP_CHECK_MSG(lp_commit(&store.base, root, delete_first ? &append : &delete, &options,
							   &result, &err), "%.300s", err.message);
		LP_CHECK(store.raced);
		LP_CHECK_EQ_U64(result.version, before->proto->version + 2);
		LP_CHECK_EQ_U64(result.attempts, 2);
		after = read_latest(root, &naming);
		LP_CHECK(after != NULL && after->proto->n_fragments == 4 &&
				 after->proto->fragments[1]->deletion_file != NULL &&
				 after->proto->fragments[1]->deletion_file->num_deleted_rows == 10);
		read = reference_offsets(root);
		if (read != NULL)
		{
			LP_CHECK_EQ_U64(reference_count(read, "count"), 515 - 10 + 300);
			check_reference_fragment(read, 1, 170, &deletions);
			json_free(read);
		}
		lp_deletions_free(&deletions);
		lp_manifest_free(after);
		lp_manifest_free(before);
		lp_test_remove_tree(work);
	}
}

/* Deletes that do not fit the version they are applied to change nothing. */
LP_TEST(commit_delete_refusals)
{
	char		work[1024];
	char		root[1200];
	uint64_t	seed = 105;
	LpManifestNaming naming;
	LpManifest *before;
	LpManifest *after;
	LpDeleteFragment deletes[2];
	LpCommitRequest request;
	LpCommitOptions options = {3, lp_test_random, &seed, false};
	LpCommitResult result;
	LpError		err;

	before = copy_and_read_latest("types_2_2_v2", work, sizeof(work), root, sizeof(root), &naming);
	if (before == NULL)
		return;
	memset(deletes, 0, sizeof(deletes));
	deletes[0].fragment_id = 1;
	deletes[0].read_version = before->proto->version;
	deletes[0].id = 5;
	deletes[0].num_deleted_rows = 3;
	deletes[1] = deletes[0];
	init_delete_request(&request, before, deletes, 0);
	LP_CHECK(!lp_commit(lp_test_store(), root, &request, &options, &result, &err));
	LP_CHECK(err.code == LP_ERR_INVALID_ARGUMENT && strstr(err.message, "needs a fragment") != NULL);
	/* the same fragment twice */
	request.n_deletes = 2;
	LP_CHECK(!lp_commit(lp_test_store(), root, &request, &options, &result, &err));
	LP_CHECK(err.code == LP_ERR_INVALID_ARGUMENT && strstr(err.message, "twice") != NULL);
	/* a fragment that is not there */
	deletes[1].fragment_id = 9;
	LP_CHECK(!lp_commit(lp_test_store(), root, &request, &options, &result, &err));
	LP_CHECK(err.code == LP_ERR_INVALID_ARGUMENT && strstr(err.message, "does not exist") != NULL);
	/* a deletion file of all 170 rows, or none */
	request.n_deletes = 1;
	deletes[0].num_deleted_rows = 170;
	LP_CHECK(!lp_commit(lp_test_store(), root, &request, &options, &result, &err));
	LP_CHECK(err.code == LP_ERR_INVALID_ARGUMENT && strstr(err.message, "cannot delete 170") != NULL);
	deletes[0].num_deleted_rows = 0;
	LP_CHECK(!lp_commit(lp_test_store(), root, &request, &options, &result, &err));
	LP_CHECK(err.code == LP_ERR_INVALID_ARGUMENT);
	/* a deletion file the fragment never had */
	deletes[0].num_deleted_rows = 3;
	deletes[0].had_deletion_file = true;
	LP_CHECK(!lp_commit(lp_test_store(), root, &request, &options, &result, &err));
	LP_CHECK(err.code == LP_ERR_CONFLICT);

	after = read_latest(root, &naming);
	LP_CHECK(after != NULL && after->proto->version == before->proto->version);
	LP_CHECK(after != NULL && after->proto->n_fragments == 3);
	lp_manifest_free(after);
	lp_manifest_free(before);
	lp_test_remove_tree(work);
}

/* ---- updates ---------------------------------------------------------------- */

/* An update of the rows staged in deletes, its new rows in fragments. */
static void
init_update_request(LpCommitRequest *request, const LpManifest *read,
					const LpDeleteFragment *deletes, size_t n_deletes,
					const LpNewFragment *fragments, size_t n_fragments)
{
	init_delete_request(request, read, deletes, n_deletes);
	request->kind = LP_COMMIT_UPDATE;
	request->predicate = NULL;
	request->fragments = fragments;
	request->n_fragments = n_fragments;
}

/*
 * An update of 10 rows of fragment 1 and every row of fragment 2 of
 * types_2_2_v2 whose new rows are two new fragments (copies of the data
 * files of fragments 2 and 1): in one version fragment 1 gets a deletion
 * file, fragment 2 goes, the new fragments get ids 3 and 4; the transaction
 * is Lance's Update, and lancedb reads exactly the rows left and the new
 * ones, and can still append, index and compact.
 */
LP_TEST(commit_update_reference)
{
	static const uint32_t updated_rows[] = {0, 7, 8, 9, 60, 61, 100, 150, 168, 169};
	uint32_t	every_row[45];
	char		work[1024];
	char		root[1200];
	char		versions[1300];
	char		original[1024];
	char		pairs[3300];
	char		names[2][LP_DATA_FILE_NAME_SIZE];
	uint64_t	seed = 111;
	uint64_t	manifests_before;
	LpManifestNaming naming;
	LpManifest *before;
	LpManifest *after = NULL;
	LpDeleteFragment deletes[2];
	LpDeletions deletions[2];
	LpNewFragment fragments[2] = {0};
	LpCommitRequest request;
	LpCommitOptions options = {3, lp_test_random, &seed, false};
	LpCommitResult result;
	LpError		err;
	JsonValue  *read;

	before = copy_and_read_latest("types_2_2_v2", work, sizeof(work), root, sizeof(root), &naming);
	if (before == NULL)
		return;
	for (uint32_t i = 0; i < 45; i++)
		every_row[i] = i;
	LP_CHECK(stage_delete(root, before, 1, updated_rows, 10, &seed, &deletes[0], &deletions[0]));
	LP_CHECK(stage_delete(root, before, 2, every_row, 45, &seed, &deletes[1], &deletions[1]));
	LP_CHECK(!deletes[0].all_deleted && deletes[1].all_deleted);
	LP_CHECK(stage_copy(root, before, 2, &seed, names[0], &fragments[0].file,
						&fragments[0].physical_rows));
	LP_CHECK(stage_copy(root, before, 1, &seed, names[1], &fragments[1].file,
						&fragments[1].physical_rows));
	init_update_request(&request, before, deletes, 2, fragments, 2);
	snprintf(versions, sizeof(versions), "%s/_versions", root);
	manifests_before = count_entries(versions);

	LP_CHECK_MSG(lp_commit(lp_test_store(), root, &request, &options, &result, &err),
				 "%.300s", err.message);
	LP_CHECK_EQ_U64(result.version, before->proto->version + 1);
	LP_CHECK_EQ_U64(count_entries(versions), manifests_before + 1);
	LP_CHECK(result.new_fragment_ids != NULL &&
			 result.new_fragment_ids[0] == 3 && result.new_fragment_ids[1] == 4);
	lp_free(result.new_fragment_ids);
	after = read_latest(root, &naming);
	if (after != NULL)
	{
		const Lance__Table__Manifest *m = after->proto;
		Lance__Table__Transaction *txn = NULL;

		LP_CHECK_EQ_U64(m->version, result.version);
		LP_CHECK(m->n_fragments == 4);
		if (m->n_fragments == 4)
		{
			LP_CHECK(m->fragments[0]->id == 0 && m->fragments[0]->deletion_file == NULL);
			LP_CHECK(m->fragments[1]->id == 1 && m->fragments[1]->deletion_file != NULL &&
					 m->fragments[1]->deletion_file->id == deletes[0].id &&
					 m->fragments[1]->deletion_file->num_deleted_rows == 10);
			LP_CHECK(m->fragments[2]->id == 3 && m->fragments[2]->physical_rows == 45 &&
					 m->fragments[2]->n_files == 1 &&
					 strcmp(m->fragments[2]->files[0]->path, names[0]) == 0 &&
					 m->fragments[2]->deletion_file == NULL);
			LP_CHECK(m->fragments[3]->id == 4 && m->fragments[3]->physical_rows == 170 &&
					 m->fragments[3]->n_files == 1 &&
					 strcmp(m->fragments[3]->files[0]->path, names[1]) == 0);
		}
		LP_CHECK(m->max_fragment_id_present_case ==
				 LANCE__TABLE__MANIFEST__MAX_FRAGMENT_ID_PRESENT_MAX_FRAGMENT_ID &&
				 m->max_fragment_id == 4);
		check_transaction_file(root, after);
		LP_CHECK(lp_protobuf_unpack(&lance__table__transaction__descriptor, after->transaction,
									after->transaction_len,
									(ProtobufCMessage **) &txn) == LP_UNPACK_OK);
		LP_CHECK(txn != NULL && txn->operation_case == LANCE__TABLE__TRANSACTION__OPERATION_UPDATE &&
				 txn->read_version == before->proto->version);
		if (txn != NULL && txn->operation_case == LANCE__TABLE__TRANSACTION__OPERATION_UPDATE)
		{
			const Lance__Table__Transaction__Update *update = txn->update;

			LP_CHECK(update->n_removed_fragment_ids == 1 && update->removed_fragment_ids[0] == 2);
			LP_CHECK(update->n_updated_fragments == 1 && update->updated_fragments[0]->id == 1 &&
					 update->updated_fragments[0]->deletion_file != NULL &&
					 update->updated_fragments[0]->deletion_file->id == deletes[0].id &&
					 update->updated_fragments[0]->n_files == 1);
			/* ids are given when Lance applies the transaction */
			LP_CHECK(update->n_new_fragments == 2 &&
					 update->new_fragments[0]->id == 0 && update->new_fragments[1]->id == 0 &&
					 update->new_fragments[0]->physical_rows == 45 &&
					 update->new_fragments[1]->physical_rows == 170 &&
					 strcmp(update->new_fragments[0]->files[0]->path, names[0]) == 0 &&
					 strcmp(update->new_fragments[1]->files[0]->path, names[1]) == 0);
		}
		lp_protobuf_free((ProtobufCMessage *) txn);
	}
	read = reference_offsets(root);
	if (read != NULL)
	{
		const JsonValue *read_fragments = json_get(read, "fragments");

		LP_CHECK_EQ_U64(reference_count(read, "count"), 300 + 160 + 45 + 170);
		LP_CHECK_EQ_U64(reference_count(read, "filtered"), 300 + 160 + 45 + 170);
		check_reference_fragment(read, 1, 170, &deletions[0]);
		check_reference_fragment(read, 2, 45, NULL);
		LP_CHECK(json_get(read_fragments, "3") != NULL &&
				 json_get(read_fragments, "3")->count == 45);
		LP_CHECK(json_get(read_fragments, "4") != NULL &&
				 json_get(read_fragments, "4")->count == 170);
		json_free(read);
		lp_test_dataset_path("types_2_2_v2", original, sizeof(original));
		snprintf(pairs, sizeof(pairs), "0=%s:0 3=%s:2 4=%s:1", original, original, original);
		reference_check(root, 300 + 160 + 45 + 170, pairs, true);
	}
	lp_deletions_free(&deletions[0]);
	lp_deletions_free(&deletions[1]);
	lp_manifest_free(after);
	lp_manifest_free(before);
	lp_test_remove_tree(work);
}

/*
 * An update and a delete of one fragment read at the same version: the one
 * that lands second is a conflict, whichever it is; an update read at the
 * delete's version but built on the deletion file read before is one too.
 */
LP_TEST(commit_update_and_delete_race)
{
	static const uint32_t updated_rows[] = {1, 2};
	static const uint32_t deleted_rows[] = {3};
	char		work[1024];
	char		root[1200];
	char		name[LP_DATA_FILE_NAME_SIZE];
	uint64_t	seed = 112;
	LpManifestNaming naming;
	LpManifest *before;
	LpManifest *after;
	RacingStore store;
	LpDeleteFragment updated;
	LpDeleteFragment deleted;
	LpDeletions updated_deletions;
	LpDeletions deleted_deletions;
	LpNewFragment fragment = {0};
	LpCommitRequest update;
	LpCommitRequest delete;
	LpCommitOptions options = {3, lp_test_random, &seed, false};
	LpCommitResult result;
	LpError		err;

	for (int update_first = 0; update_first < 2; update_first++)
	{
		before = copy_and_read_latest("types_2_2_v2", work, sizeof(work), root, sizeof(root),
									  &naming);
		if (before == NULL)
			return;
		racing_store_init(&store, root);
		LP_CHECK(stage_delete(root, before, 0, updated_rows, 2, &seed, &updated,
							  &updated_deletions));
		LP_CHECK(stage_delete(root, before, 0, deleted_rows, 1, &seed, &deleted,
							  &deleted_deletions));
		LP_CHECK(stage_copy(root, before, 2, &seed, name, &fragment.file, &fragment.physical_rows));
		init_update_request(&update, before, &updated, 1, &fragment, 1);
		init_delete_request(&delete, before, &deleted, 1);
		store.competitor = update_first ? update : delete;

		LP_CHECK(!lp_commit(&store.base, root, update_first ? &delete : &update, &options,
							&result, &err));
		LP_CHECK(store.raced);
		LP_CHECK_MSG(err.code == LP_ERR_CONFLICT &&
					 strstr(err.message, update_first ? "Update" : "Delete") != NULL,
					 "%s: %.300s", lp_error_code_name(err.code), err.message);
		if (!update_first)
		{
			update.read_version = store.competitor_version;
			LP_CHECK(!lp_commit(lp_test_store(), root, &update, &options, &result, &err));
			LP_CHECK_MSG(err.code == LP_ERR_CONFLICT &&
						 strstr(err.message, "deletion file of fragment 0 changed") != NULL,
						 "%s: %.300s", lp_error_code_name(err.code), err.message);
		}

		after = read_latest(root, &naming);
		LP_CHECK(after != NULL && after->proto->version == store.competitor_version &&
				 after->proto->n_fragments == (update_first ? 4 : 3));
		LP_CHECK_EQ_U64(after ? total_rows(after) : 0, update_first ? 515 - 2 + 45 : 515 - 1);
		lp_deletions_free(&updated_deletions);
		lp_deletions_free(&deleted_deletions);
		lp_manifest_free(after);
		lp_manifest_free(before);
		lp_test_remove_tree(work);
	}
}

/*
 * An update and an append read at the same version both land, whichever
 * wins; the one that lands second takes the next fragment id.
 */
LP_TEST(commit_update_and_append_race)
{
	static const uint32_t rows[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
	char		work[1024];
	char		root[1200];
	char		append_name[LP_DATA_FILE_NAME_SIZE];
	char		update_name[LP_DATA_FILE_NAME_SIZE];
	char		update_id[32];
	uint64_t	seed = 113;
	LpManifest *before;
	LpManifest *after;
	LpManifestNaming naming;
	RacingStore store;
	LpDeleteFragment entry;
	LpDeletions deletions;
	LpNewFragment fragment = {0};
	LpCommitRequest append;
	LpCommitRequest update;
	LpCommitOptions options = {3, lp_test_random, &seed, false};
	LpCommitResult result;
	LpError		err;
	JsonValue  *read;

	for (int update_first = 0; update_first < 2; update_first++)
	{
		before = start_racing_append(work, sizeof(work), root, sizeof(root), &seed, append_name,
									 &store, &append);
		if (before == NULL)
			return;
		LP_CHECK(stage_delete(root, before, 1, rows, 10, &seed, &entry, &deletions));
		LP_CHECK(stage_copy(root, before, 2, &seed, update_name, &fragment.file,
							&fragment.physical_rows));
		init_update_request(&update, before, &entry, 1, &fragment, 1);
		store.competitor = update_first ? update : append;

		LP_CHECK_MSG(lp_commit(&store.base, root, update_first ? &append : &update, &options,
							   &result, &err), "%.300s", err.message);
		LP_CHECK(store.raced);
		LP_CHECK_EQ_U64(result.version, before->proto->version + 2);
		LP_CHECK_EQ_U64(result.attempts, 2);
		if (update_first)
			LP_CHECK_EQ_U64(result.fragment_id, 4);
		else
			LP_CHECK(result.new_fragment_ids != NULL && result.new_fragment_ids[0] == 4);
		lp_free(result.new_fragment_ids);
		after = read_latest(root, &naming);
		LP_CHECK(after != NULL && after->proto->n_fragments == 5 &&
				 after->proto->max_fragment_id == 4 &&
				 after->proto->fragments[1]->deletion_file != NULL &&
				 after->proto->fragments[1]->deletion_file->num_deleted_rows == 10);
		read = reference_offsets(root);
		if (read != NULL)
		{
			const JsonValue *updated_rows;

			snprintf(update_id, sizeof(update_id), "%d", update_first ? 3 : 4);
			updated_rows = json_get(json_get(read, "fragments"), update_id);
			LP_CHECK_EQ_U64(reference_count(read, "count"), 515 - 10 + 300 + 45);
			check_reference_fragment(read, 1, 170, &deletions);
			LP_CHECK_MSG(updated_rows != NULL && updated_rows->count == 45,
						 "fragment %s of the update", update_id);
			json_free(read);
		}
		lp_deletions_free(&deletions);
		lp_manifest_free(after);
		lp_manifest_free(before);
		lp_test_remove_tree(work);
	}
}

/*
 * Updates that do not fit the version they are applied to publish nothing:
 * no new rows, nothing deleted, a new file the dataset already holds, and,
 * on a dataset with stable row ids, rows moved with their row ids but
 * without the versions they were created in.
 */
LP_TEST(commit_update_refusals)
{
	static const uint32_t rows[] = {4, 5, 6};
	char		work[1024];
	char		root[1200];
	char		transactions[1300];
	char		name[LP_DATA_FILE_NAME_SIZE];
	uint64_t	seed = 114;
	uint64_t	transactions_before;
	LpManifestNaming naming;
	LpManifest *before;
	LpManifest *after;
	LpDeleteFragment entry;
	LpDeletions deletions;
	LpNewFragment fragment = {0};
	LpNewFragment committed = {0};
	static const uint64_t moved_ids[1024];
	LpCommitRequest request;
	LpCommitOptions options = {3, lp_test_random, &seed, false};
	LpCommitResult result;
	LpError		err;

	before = copy_and_read_latest("types_2_2_v2", work, sizeof(work), root, sizeof(root), &naming);
	if (before == NULL)
		return;
	LP_CHECK(stage_delete(root, before, 1, rows, 3, &seed, &entry, &deletions));
	LP_CHECK(stage_copy(root, before, 2, &seed, name, &fragment.file, &fragment.physical_rows));
	init_update_request(&request, before, &entry, 1, &fragment, 1);
	snprintf(transactions, sizeof(transactions), "%s/_transactions", root);
	transactions_before = count_entries(transactions);

	request.n_fragments = 0;
	LP_CHECK(!lp_commit(lp_test_store(), root, &request, &options, &result, &err));
	LP_CHECK_MSG(err.code == LP_ERR_INVALID_ARGUMENT && strstr(err.message, "an update adds") != NULL,
				 "%.300s", err.message);
	request.n_fragments = 1;
	request.n_deletes = 0;
	LP_CHECK(!lp_commit(lp_test_store(), root, &request, &options, &result, &err));
	LP_CHECK_MSG(err.code == LP_ERR_INVALID_ARGUMENT &&
				 strstr(err.message, "an update needs a fragment to delete from") != NULL,
				 "%.300s", err.message);
	request.n_deletes = 1;
	/* the data file of fragment 2, already committed */
	committed = fragment;
	committed.file.path = before->proto->fragments[2]->files[0]->path;
	request.fragments = &committed;
	LP_CHECK(!lp_commit(lp_test_store(), root, &request, &options, &result, &err));
	LP_CHECK_MSG(err.code == LP_ERR_ALREADY_COMMITTED, "%.300s", err.message);
	request.fragments = &fragment;
	/* the version read as if the dataset had stable row ids: moved rows without their versions */
	before->proto->reader_feature_flags |= LP_FLAG_STABLE_ROW_IDS;
	before->proto->writer_feature_flags |= LP_FLAG_STABLE_ROW_IDS;
	request.read_manifest = before;
	request.read_naming = naming;
	fragment.moved_row_ids = moved_ids;
	LP_CHECK(fragment.physical_rows <= sizeof(moved_ids) / sizeof(moved_ids[0]));
	LP_CHECK(!lp_commit(lp_test_store(), root, &request, &options, &result, &err));
	LP_CHECK_MSG(err.code == LP_ERR_INVALID_ARGUMENT && strstr(err.message, "moved rows") != NULL,
				 "%s: %.300s", lp_error_code_name(err.code), err.message);

	after = read_latest(root, &naming);
	LP_CHECK(after != NULL && after->proto->version == before->proto->version &&
			 after->proto->n_fragments == 3);
	LP_CHECK_EQ_U64(count_entries(transactions), transactions_before);
	lp_deletions_free(&deletions);
	lp_manifest_free(after);
	lp_manifest_free(before);
	lp_test_remove_tree(work);
}

/*
 * The preview of a request is the manifest its commit would publish: the
 * next version, with the appended fragment at the next fragment id; a
 * request that does not fit the base fails as the commit would.
 */
LP_TEST(commit_preview_manifest)
{
	char		root[4096];
	LpManifestNaming naming;
	LpManifest *base;
	LpManifest *preview;
	LpCommitRequest request;
	LpDeleteFragment missing = {.fragment_id = 999999, .all_deleted = true};
	LpError		err;

	LP_CHECK(lp_test_data_dir != NULL);
	if (lp_test_data_dir == NULL)
		return;
	lp_test_dataset_path("types_2_2_v2", root, sizeof(root));
	base = read_latest(root, &naming);
	if (base == NULL)
		return;

	memset(&request, 0, sizeof(request));
	request.kind = LP_COMMIT_APPEND;
	request.read_version = base->proto->version;
	request.file.path = "0101100100110111111111004f155542eb909d201ec1d1a6d8.lance";
	request.file.fields = base->proto->fragments[0]->files[0]->fields;
	request.file.column_indices = base->proto->fragments[0]->files[0]->column_indices;
	request.file.n_fields = base->proto->fragments[0]->files[0]->n_fields;
	request.file.version = LP_FILE_VERSION_2_2;
	request.file.size_bytes = 1000;
	request.physical_rows = 300;
	preview = lp_commit_preview_manifest(base, &request, &err);
	LP_CHECK_MSG(preview != NULL, "%s", err.message);
	if (preview != NULL)
	{
		LP_CHECK_EQ_U64(lp_manifest_version(preview), base->proto->version + 1);
		LP_CHECK_EQ_U64(lp_manifest_num_fragments(preview), base->proto->n_fragments + 1);
		LP_CHECK(lp_manifest_has_fragment(preview, base->proto->max_fragment_id + 1));
		lp_manifest_free(preview);
	}

	memset(&request, 0, sizeof(request));
	request.kind = LP_COMMIT_DELETE;
	request.read_version = base->proto->version;
	request.deletes = &missing;
	request.n_deletes = 1;
	LP_CHECK(lp_commit_preview_manifest(base, &request, &err) == NULL);
	lp_manifest_free(base);
}
