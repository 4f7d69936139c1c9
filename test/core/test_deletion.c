/*
 * test_deletion.c - the deletion files of the reference data set
 * deleted_2_2 (Arrow IPC form): the offsets they list are exactly the rows
 * of each fragment that the reference implementation no longer reads; and
 * damaged copies of them fail cleanly.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_reader.h"
#include "lp_test.h"

#include "base/lp_alloc.h"
#include "format/lp_deletion.h"
#include "lp_test_files.h"

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
