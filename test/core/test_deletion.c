/*
 * test_deletion.c - the deletion files of the reference data set
 * deleted_2_2 (Arrow IPC form): the offsets they list are exactly the rows
 * of each fragment that the reference implementation no longer reads; and
 * damaged copies of them fail cleanly.  Deletion files written here (Roaring
 * form) read back as the union of the old and new offsets.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_reader.h"
#include "lp_test.h"

#include "base/lp_alloc.h"
#include "base/lp_bytes.h"
#include "format/lp_deletion.h"
#include "lp_test_files.h"
#include "lp_test_store.h"
#include "lp_test_util.h"

static const JsonValue *
find_dataset(const JsonValue *manifest, const char *name)
{
	const JsonValue *datasets = json_get(manifest, "datasets");

	for (size_t i = 0; datasets && i < datasets->count; i++)
		if (strcmp(json_get(&datasets->items[i], "name")->text, name) == 0)
			return &datasets->items[i];
	return NULL;
}

/* Rows of fragment_id that rows.json still has, as a bitmap over num_rows. */
static uint8_t *
surviving_rows(const JsonValue *rows, uint64_t fragment_id, uint64_t num_rows)
{
	uint8_t    *bits = calloc((size_t) num_rows / 8 + 1, 1);

	for (size_t r = 0; r < rows->count; r++)
	{
		uint64_t	rowid = strtoull(json_get(&rows->items[r], "_rowid")->text, NULL, 10);

		if (rowid >> 32 == fragment_id && (rowid & 0xFFFFFFFF) < num_rows)
			bits[(rowid & 0xFFFFFFFF) / 8] |= (uint8_t) (1 << ((rowid & 0xFFFFFFFF) % 8));
	}
	return bits;
}

/* Every truncation and a sweep of byte changes: no crash, no read outside the buffer. */
static void
damage_file(const uint8_t *bytes, uint64_t size, uint64_t num_rows)
{
	uint8_t    *copy = malloc((size_t) size);
	LpDeletions deletions;
	LpError		err;

	for (uint64_t len = 0; len < size; len++)
	{
		LpInput    *input;

		memcpy(copy, bytes, (size_t) len);
		input = lp_memory_input_open("truncated", copy, len);
		LP_CHECK_MSG(!lp_deletions_read(input, LP_DELETION_ARROW, num_rows, &deletions, &err),
					 "truncation to %llu bytes accepted", (unsigned long long) len);
		lp_input_close(input);
	}
	for (uint64_t pos = 0; pos < size; pos++)
	{
		LpInput    *input;

		memcpy(copy, bytes, (size_t) size);
		copy[pos] ^= 0xA5;
		input = lp_memory_input_open("changed", copy, size);
		if (lp_deletions_read(input, LP_DELETION_ARROW, num_rows, &deletions, &err))
			lp_deletions_free(&deletions);
		else
			LP_CHECK_MSG(err.code == LP_ERR_CORRUPT || err.code == LP_ERR_UNSUPPORTED,
						 "byte %llu: %.200s", (unsigned long long) pos, err.message);
		lp_input_close(input);
	}
	free(copy);
}

LP_TEST(deletion_files_of_reference_data)
{
	char		path[1024];
	const char *error = NULL;
	JsonValue  *manifest;
	JsonValue  *rows;
	const JsonValue *dataset;
	const JsonValue *data_files;
	int			files_checked = 0;

	LP_CHECK_MSG(lp_test_data_dir != NULL, "no test data directory given");
	if (lp_test_data_dir == NULL)
		return;
	snprintf(path, sizeof(path), "%.900s/manifest.json", lp_test_data_dir);
	manifest = json_parse_file(path, &error);
	LP_CHECK_MSG(manifest != NULL, "%.100s: %.100s", path, error);
	if (manifest == NULL)
		return;
	dataset = find_dataset(manifest, "deleted_2_2");
	LP_CHECK(dataset != NULL);
	snprintf(path, sizeof(path), "%.900s/deleted_2_2.rows.json", lp_test_data_dir);
	rows = json_parse_file(path, &error);
	LP_CHECK_MSG(rows != NULL, "%.100s: %.100s", path, error);
	if (dataset == NULL || rows == NULL)
	{
		json_free(manifest);
		json_free(rows);
		return;
	}
	data_files = json_get(dataset, "data_files");
	for (size_t i = 0; i < data_files->count; i++)
	{
		const JsonValue *df = &data_files->items[i];
		uint64_t	fragment_id = strtoull(json_get(df, "fragment_id")->text, NULL, 10);
		uint64_t	num_rows = strtoull(json_get(df, "num_rows")->text, NULL, 10);
		char		prefix[64];
		char		command[1200];
		char		name[256];
		FILE	   *listing;
		uint8_t    *bytes;
		size_t		size;
		uint8_t    *surviving;
		LpInput    *input;
		LpDeletions deletions;
		LpError		err;
		uint64_t	expected_deleted = 0;
		uint64_t	highest = 0;

		if (!json_get(df, "has_deletion_file")->boolean)
			continue;
		snprintf(prefix, sizeof(prefix), "%llu-", (unsigned long long) fragment_id);
		snprintf(command, sizeof(command), "ls '%.900s/_deletions'",
				 json_get(dataset, "path")->text);
		listing = popen(command, "r");
		name[0] = '\0';
		while (listing && fgets(name, sizeof(name), listing))
		{
			name[strcspn(name, "\n")] = '\0';
			if (strncmp(name, prefix, strlen(prefix)) == 0)
				break;
			name[0] = '\0';
		}
		if (listing)
			pclose(listing);
		LP_CHECK_MSG(name[0] != '\0', "no deletion file for fragment %llu",
					 (unsigned long long) fragment_id);
		if (name[0] == '\0')
			continue;
		snprintf(path, sizeof(path), "%.700s/_deletions/%.200s", json_get(dataset, "path")->text,
				 name);
		lp_test_file_read_all(path, &bytes, &size);
		LP_CHECK(bytes != NULL);
		if (bytes == NULL)
			continue;
		input = lp_memory_input_open(path, bytes, size);
		LP_CHECK_MSG(lp_deletions_read(input, LP_DELETION_ARROW, num_rows, &deletions, &err),
					 "%.200s: %.200s", path, err.message);
		surviving = surviving_rows(rows, fragment_id, num_rows);
		for (uint64_t r = 0; r < num_rows && deletions.deleted; r++)
		{
			bool		survives = (surviving[r / 8] >> (r % 8)) & 1;

			expected_deleted += !survives;
			LP_CHECK_MSG(lp_deletions_contains(&deletions, r) == !survives,
						 "fragment %llu row %llu", (unsigned long long) fragment_id,
						 (unsigned long long) r);
		}
		LP_CHECK_EQ_U64(deletions.num_deleted, expected_deleted);
		LP_CHECK(expected_deleted > 0);

		/* a fragment that ends at the highest deleted offset refuses it */
		for (uint64_t r = 0; r < num_rows; r++)
			if (lp_deletions_contains(&deletions, r))
				highest = r;
		lp_deletions_free(&deletions);
		LP_CHECK(!lp_deletions_read(input, LP_DELETION_ARROW, highest, &deletions, &err));
		LP_CHECK_MSG(err.code == LP_ERR_CORRUPT, "%.200s", err.message);

		damage_file(bytes, size, num_rows);
		lp_input_close(input);
		free(surviving);
		free(bytes);
		files_checked++;
	}
	LP_CHECK_MSG(files_checked == 2, "%d deletion files checked", files_checked);
	json_free(rows);
	json_free(manifest);
}

LP_TEST(deletion_file_path)
{
	char	   *path = lp_deletion_file_path(2, 3, 3405922824395190196ULL, LP_DELETION_ARROW);

	LP_CHECK_STR(path, "_deletions/2-3-3405922824395190196.arrow");
	lp_free(path);
	path = lp_deletion_file_path(0, 7, 1, LP_DELETION_BITMAP);
	LP_CHECK_STR(path, "_deletions/0-7-1.bin");
	lp_free(path);
}

/* Read the Roaring deletion file of a fragment of num_rows rows back (zeroed when it cannot be). */
static LpDeletions
read_written(const char *root, uint64_t fragment_id, uint64_t read_version, uint64_t id,
			 uint64_t num_rows)
{
	char	   *relative = lp_deletion_file_path(fragment_id, read_version, id, LP_DELETION_BITMAP);
	char		path[2048];
	LpInput    *input;
	LpDeletions deletions;
	LpError		err;

	memset(&deletions, 0, sizeof(deletions));
	snprintf(path, sizeof(path), "%s/%s", root, relative);
	lp_free(relative);
	input = lp_test_file_input_open(path, &err);
	LP_CHECK_MSG(input != NULL, "%.300s", err.message);
	if (input == NULL)
		return deletions;
	LP_CHECK_MSG(lp_deletions_read(input, LP_DELETION_BITMAP, num_rows, &deletions, &err),
				 "%.300s", err.message);
	lp_input_close(input);
	return deletions;
}

LP_TEST(deletion_file_write_merges)
{
	static const uint32_t first[] = {1, 5, 99};
	static const uint32_t second[] = {0, 5, 50};
	char		root[1024];
	uint64_t	seed = 11;
	uint64_t	id;
	uint64_t	second_id;
	uint8_t		id_bytes[8];
	LpDeletions deletions;
	LpDeletions read;
	LpError		err;

	snprintf(root, sizeof(root), "%s/dataset.lance", lp_test_make_temp_dir());
	memset(&deletions, 0, sizeof(deletions));
	LP_CHECK(lp_deletions_add(&deletions, 100, first, 3, &err));
	LP_CHECK_EQ_U64(deletions.num_deleted, 3);
	LP_CHECK_MSG(lp_deletion_file_write(lp_test_store(), root, 7, 3, &deletions,
										lp_test_random, &seed, &id, &err), "%.300s", err.message);
	read = read_written(root, 7, 3, id, 100);
	LP_CHECK_EQ_U64(read.num_deleted, 3);
	for (uint64_t r = 0; r < 100; r++)
		LP_CHECK_MSG(lp_deletions_contains(&read, r) == (r == 1 || r == 5 || r == 99),
					 "row %llu", (unsigned long long) r);
	lp_deletions_free(&read);

	/* 5 was deleted already: five rows in all, in a file of a new id */
	LP_CHECK(lp_deletions_add(&deletions, 100, second, 3, &err));
	LP_CHECK_EQ_U64(deletions.num_deleted, 5);
	LP_CHECK(lp_deletion_file_write(lp_test_store(), root, 7, 4, &deletions,
									lp_test_random, &seed, &second_id, &err));
	LP_CHECK(second_id != id);
	read = read_written(root, 7, 4, second_id, 100);
	LP_CHECK_EQ_U64(read.num_deleted, 5);
	for (uint64_t r = 0; r < 100; r++)
		LP_CHECK_MSG(lp_deletions_contains(&read, r) == (r <= 1 || r == 5 || r == 50 || r == 99),
					 "row %llu", (unsigned long long) r);
	lp_deletions_free(&read);

	/* the same id again (the same random bytes): the first file stays */
	seed = 11;
	LP_CHECK(!lp_deletion_file_write(lp_test_store(), root, 7, 3, &deletions,
									 lp_test_random, &seed, &id, &err));
	LP_CHECK_MSG(err.code == LP_ERR_ALREADY_EXISTS, "%s", lp_error_code_name(err.code));
	seed = 11;
	LP_CHECK(lp_test_random(&seed, id_bytes, sizeof(id_bytes), &err));
	read = read_written(root, 7, 3, lp_le64(id_bytes), 100);
	LP_CHECK_EQ_U64(read.num_deleted, 3);
	lp_deletions_free(&read);

	lp_deletions_free(&deletions);
	lp_test_remove_tree(root);
}

/* Rows of a Roaring file past 4096 in one container: a bitmap container. */
LP_TEST(deletion_file_write_dense)
{
	uint32_t   *rows = malloc(5000 * sizeof(uint32_t));
	char		root[1024];
	uint64_t	seed = 12;
	uint64_t	id;
	LpDeletions deletions;
	LpDeletions read;
	LpError		err;

	for (uint32_t i = 0; i < 5000; i++)
		rows[i] = i * 2 + 1;
	snprintf(root, sizeof(root), "%s/dataset.lance", lp_test_make_temp_dir());
	memset(&deletions, 0, sizeof(deletions));
	LP_CHECK(lp_deletions_add(&deletions, 100000, rows, 5000, &err));
	LP_CHECK(lp_deletion_file_write(lp_test_store(), root, 0, 1, &deletions,
									lp_test_random, &seed, &id, &err));
	read = read_written(root, 0, 1, id, 100000);
	LP_CHECK_EQ_U64(read.num_deleted, 5000);
	for (uint64_t r = 0; r < 100000 && read.deleted != NULL; r++)
		if (lp_deletions_contains(&read, r) != (r % 2 == 1 && r < 10000))
		{
			LP_CHECK_MSG(false, "row %llu", (unsigned long long) r);
			break;
		}
	lp_deletions_free(&read);
	lp_deletions_free(&deletions);
	free(rows);
	lp_test_remove_tree(root);
}

LP_TEST(deletion_file_write_refusals)
{
	static const uint32_t unsorted[] = {4, 2};
	static const uint32_t beyond[] = {1, 10};
	static const uint32_t all[] = {0, 1, 2, 3};
	char		root[1024];
	uint64_t	seed = 13;
	uint64_t	id = 99;
	LpDeletions deletions;
	LpError		err;

	snprintf(root, sizeof(root), "%s/dataset.lance", lp_test_make_temp_dir());
	memset(&deletions, 0, sizeof(deletions));
	/* nothing to write */
	LP_CHECK(!lp_deletion_file_write(lp_test_store(), root, 0, 1, &deletions,
									 lp_test_random, &seed, &id, &err));
	LP_CHECK(err.code == LP_ERR_INVALID_ARGUMENT && id == 0);
	/* refused offsets leave the deletions as they were */
	LP_CHECK(!lp_deletions_add(&deletions, 10, unsorted, 2, &err));
	LP_CHECK(err.code == LP_ERR_INVALID_ARGUMENT && deletions.deleted == NULL);
	LP_CHECK(!lp_deletions_add(&deletions, 10, beyond, 2, &err));
	LP_CHECK(err.code == LP_ERR_INVALID_ARGUMENT && deletions.deleted == NULL);
	LP_CHECK(lp_deletions_add(&deletions, 4, all, 2, &err));
	LP_CHECK(!lp_deletions_add(&deletions, 10, beyond, 1, &err));
	LP_CHECK(err.code == LP_ERR_INVALID_ARGUMENT && deletions.num_deleted == 2);
	/* every row deleted: the fragment goes instead */
	LP_CHECK(lp_deletions_add(&deletions, 4, all, 4, &err));
	LP_CHECK_EQ_U64(deletions.num_deleted, 4);
	LP_CHECK(!lp_deletion_file_write(lp_test_store(), root, 0, 1, &deletions,
									 lp_test_random, &seed, &id, &err));
	LP_CHECK(err.code == LP_ERR_INVALID_ARGUMENT && strstr(err.message, "every row") != NULL);
	LP_CHECK(!lp_test_file_exists(root));
	lp_deletions_free(&deletions);
}
