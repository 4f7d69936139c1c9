/*
 * test_reencode.c - re-encoding (reencode/lp_reencode.h): files written in
 * one version come out in every other with exactly the live rows, in order,
 * whatever the batch size; fields are matched by name; what cannot be
 * re-encoded (another type, a missing or extra field, nulls in a field the
 * target declares not nullable, legacy files) is refused; the cancel hook stops it; progress sees every batch; and a
 * re-encoded part joins parts written in the target's version by page copy.
 */
#include <stdlib.h>
#include <string.h>

#include "lp_test.h"

#include "base/lp_alloc.h"
#include "base/lp_interrupt.h"
#include "concat/lp_concat.h"
#include "decode/lp_decode.h"
#include "encode/lp_file_writer.h"
#include "reencode/lp_reencode.h"

#define NUM_FIELDS 3

static const LpFileVersion versions[] = {LP_FILE_VERSION_2_0, LP_FILE_VERSION_2_1,
LP_FILE_VERSION_2_2, LP_FILE_VERSION_2_3};

/* id int64 not null, name string (null when id % 11 == 5), score double (null when id % 13 == 0) */
static const char *const field_names[NUM_FIELDS] = {"id", "name", "score"};

static LpSchema
test_schema(const int *order, bool name_nullable)
{
	static const char *types[NUM_FIELDS] = {"int64", "string", "double"};
	LpSchema	schema;

	memset(&schema, 0, sizeof(schema));
	schema.num_fields = NUM_FIELDS;
	schema.fields = calloc(NUM_FIELDS, sizeof(LpField));
	for (int i = 0; i < NUM_FIELDS; i++)
	{
		int			f = order[i];

		schema.fields[i].id = i;
		schema.fields[i].parent_id = -1;
		schema.fields[i].name = (char *) field_names[f];
		schema.fields[i].logical_type = (char *) types[f];
		schema.fields[i].nullable = f != 0 && (f != 1 || name_nullable);
		schema.fields[i].legacy_encoding = f == 1 ? 2 : 1;
	}
	return schema;
}

static const int natural[NUM_FIELDS] = {0, 1, 2};

/* The value of field f at source row r, as an array of one field (rows [start, start + n)). */
static LpArray *
make_array(const LpType *type, int f, uint64_t start, uint64_t n)
{
	LpArray    *array = lp_array_new(type);

	array->length = n;
	if (f != 0)
	{
		array->validity = lp_alloc0(n / 8 + 1);
		for (uint64_t i = 0; i < n; i++)
		{
			uint64_t	r = start + i;
			bool		valid = f == 1 ? r % 11 != 5 : r % 13 != 0;

			lp_bit_set(array->validity, i, valid);
			array->null_count += !valid;
		}
	}
	if (f == 1)
	{
		array->offsets = lp_alloc((n + 1) * sizeof(uint64_t));
		array->data = lp_alloc(n * 24 + 1);
		array->offsets[0] = 0;
		for (uint64_t i = 0; i < n; i++)
		{
			int			len = lp_array_is_valid(array, i) ?
				snprintf((char *) array->data + array->offsets[i], 24, "n%llu",
						 (unsigned long long) (start + i)) : 0;

			array->offsets[i + 1] = array->offsets[i] + (uint64_t) len;
		}
		array->data_len = array->offsets[n];
	}
	else
	{
		array->values = lp_alloc0(n * 8 + 1);
		for (uint64_t i = 0; i < n; i++)
		{
			if (f == 0)
			{
				int64_t		v = (int64_t) (start + i) * 3 - 7;

				memcpy(array->values + i * 8, &v, 8);
			}
			else if (lp_array_is_valid(array, i))
			{
				double		v = (double) (start + i) * 0.5;

				memcpy(array->values + i * 8, &v, 8);
			}
		}
	}
	return array;
}

/* A file of rows rows of schema (fields in the order given) in version, as bytes. */
static uint8_t *
write_source(LpFileVersion version, const int *order, uint64_t rows, uint64_t *size)
{
	LpSchema	schema = test_schema(order, true);
	LpOutput   *output = lp_memory_output_open("source.lance");
	LpType	   *types[NUM_FIELDS];
	LpFileWriter *writer;
	LpError		err;
	const uint8_t *data;
	uint8_t    *copy = NULL;
	uint64_t	len;

	for (int i = 0; i < NUM_FIELDS; i++)
		LP_CHECK(lp_type_parse(schema.fields[i].logical_type, "source.lance",
							   schema.fields[i].name, &types[i], &err));
	writer = lp_file_writer_open(output, &schema, version, &err);
	LP_CHECK_MSG(writer != NULL, "open: %.300s", err.message);
	for (uint64_t start = 0; writer != NULL && start < rows; start += 5000)
	{
		uint64_t	n = rows - start < 5000 ? rows - start : 5000;
		LpArray    *arrays[NUM_FIELDS];

		for (int i = 0; i < NUM_FIELDS; i++)
			arrays[i] = make_array(types[i], order[i], start, n);
		LP_CHECK_MSG(lp_file_writer_write(writer, (const LpArray *const *) arrays, NUM_FIELDS, &err),
					 "write: %.300s", err.message);
		for (int i = 0; i < NUM_FIELDS; i++)
			lp_array_free(arrays[i]);
	}
	if (writer != NULL)
	{
		LP_CHECK_MSG(lp_file_writer_finish(writer, size, &err), "finish: %.300s", err.message);
		lp_file_writer_free(writer);
		data = lp_memory_output_data(output, &len);
		copy = malloc(len);
		memcpy(copy, data, len);
		*size = len;
	}
	output->ops->abort(output);
	for (int i = 0; i < NUM_FIELDS; i++)
		lp_type_free(types[i]);
	free(schema.fields);
	return copy;
}

/* Deleted: every 4th row and the run [1000, 1300) */
static LpDeletions
make_deletions(uint64_t rows)
{
	LpDeletions deletions = {rows, 0, lp_alloc0(rows / 8 + 1)};

	for (uint64_t r = 0; r < rows; r++)
		if (r % 4 == 1 || (r >= 1000 && r < 1300))
		{
			lp_bit_set(deletions.deleted, r, true);
			deletions.num_deleted++;
		}
	return deletions;
}

typedef struct Progress
{
	uint64_t	calls;
	uint64_t	last;
	uint64_t	total;
	bool		monotonic;
} Progress;

static void
record_progress(void *arg, uint64_t done, uint64_t total)
{
	Progress   *progress = arg;

	progress->monotonic &= done > progress->last;
	progress->calls++;
	progress->last = done;
	progress->total = total;
}

/*
 * Re-encode bytes into version with schema; the result's bytes (NULL on
 * failure, *err says why).
 */
static uint8_t *
reencode_bytes(const uint8_t *bytes, uint64_t size, const LpDeletions *deletions,
			   const LpSchema *schema, LpFileVersion version, const LpReencodeOptions *options,
			   uint64_t *rows, uint64_t *out_size, LpError *err)
{
	LpInput    *input = lp_memory_input_open("source.lance", bytes, size);
	LpFile	   *file = lp_file_open(input, err);
	LpOutput   *output = lp_memory_output_open("target.lance");
	LpReencodeSource source = {input, file, deletions, 0};
	uint8_t    *copy = NULL;

	LP_CHECK_MSG(file != NULL, "open source: %.300s", err->message);
	if (file != NULL && lp_reencode_files(&source, 1, schema, version, output, options, rows, out_size, err))
	{
		uint64_t	len;
		const uint8_t *data = lp_memory_output_data(output, &len);

		LP_CHECK_EQ_U64(len, *out_size);
		copy = malloc(len);
		memcpy(copy, data, len);
	}
	output->ops->abort(output);
	lp_file_free(file);
	lp_input_close(input);
	return copy;
}

/* Every field of the file holds exactly the expected rows (source rows not deleted). */
static void
check_rows(const uint8_t *bytes, uint64_t size, LpFileVersion version, const int *order,
		   const LpDeletions *deletions, uint64_t source_rows)
{
	LpInput    *input = lp_memory_input_open("target.lance", bytes, size);
	LpError		err;
	LpFile	   *file = lp_file_open(input, &err);
	uint64_t	live = source_rows - (deletions ? deletions->num_deleted : 0);

	LP_CHECK_MSG(file != NULL, "open result: %.300s", err.message);
	if (file == NULL)
	{
		lp_input_close(input);
		return;
	}
	LP_CHECK(file->version == version);
	LP_CHECK_EQ_U64(file->num_rows, live);
	for (int i = 0; i < NUM_FIELDS; i++)
	{
		LpType	   *type;
		LpArray    *got;
		LpArray    *all;
		uint64_t	mismatches = 0;

		if (!lp_decode_field(input, file, (uint32_t) i, &type, &got, &err))
		{
			LP_CHECK_MSG(false, "decode field %d: %.300s", i, err.message);
			continue;
		}
		LP_CHECK_STR(file->schema.fields[i].name, field_names[order[i]]);
		all = make_array(type, order[i], 0, source_rows);
		for (uint64_t r = 0, k = 0; r < source_rows && k < got->length; r++)
		{
			if (deletions != NULL && lp_deletions_contains(deletions, r))
				continue;
			if (lp_array_is_valid(all, r) != lp_array_is_valid(got, k))
				mismatches++;
			else if (!lp_array_is_valid(all, r))
				;
			else if (order[i] == 1)
			{
				uint64_t	len = all->offsets[r + 1] - all->offsets[r];

				mismatches += got->offsets[k + 1] - got->offsets[k] != len ||
					memcmp(got->data + got->offsets[k], all->data + all->offsets[r], len) != 0;
			}
			else
				mismatches += memcmp(got->values + k * 8, all->values + r * 8, 8) != 0;
			k++;
		}
		LP_CHECK_EQ_U64(got->length, live);
		LP_CHECK_MSG(mismatches == 0, "field %d: %llu rows differ", i, (unsigned long long) mismatches);
		lp_array_free(all);
		lp_array_free(got);
		lp_type_free(type);
	}
	lp_file_free(file);
	lp_input_close(input);
}

LP_TEST(reencode_every_version_pair_keeps_live_rows_in_order)
{
	const uint64_t rows = 9000;
	LpDeletions deletions = make_deletions(rows);
	LpSchema	schema = test_schema(natural, true);

	for (size_t s = 0; s < 4; s++)
	{
		uint64_t	size = 0;
		uint8_t    *source = write_source(versions[s], natural, rows, &size);

		for (size_t t = 0; source != NULL && t < 4; t++)
		{
			for (int with_deletions = 0; with_deletions < 2; with_deletions++)
			{
				const LpDeletions *del = with_deletions ? &deletions : NULL;
				Progress	progress = {0, 0, 0, true};
				LpReencodeOptions options = {700, record_progress, &progress, false, 0};
				uint64_t	written = 0;
				uint64_t	out_size = 0;
				LpError		err;
				uint8_t    *result = reencode_bytes(source, size, del, &schema, versions[t], &options,
													&written, &out_size, &err);
				uint64_t	live = rows - (del ? del->num_deleted : 0);

				LP_CHECK_MSG(result != NULL, "%s -> %s: %.300s", lp_file_version_name(versions[s]),
							 lp_file_version_name(versions[t]), err.message);
				if (result == NULL)
					continue;
				LP_CHECK_EQ_U64(written, live);
				LP_CHECK_EQ_U64(progress.calls, (live + 699) / 700);
				LP_CHECK_EQ_U64(progress.last, live);
				LP_CHECK_EQ_U64(progress.total, live);
				LP_CHECK(progress.monotonic);
				check_rows(result, out_size, versions[t], natural, del, rows);
				free(result);
			}
		}
		free(source);
	}
	lp_deletions_free(&deletions);
	free(schema.fields);
}

LP_TEST(reencode_matches_fields_by_name)
{
	static const int reordered[NUM_FIELDS] = {2, 0, 1};
	LpSchema	target = test_schema(reordered, true);
	uint64_t	size = 0;
	uint8_t    *source = write_source(LP_FILE_VERSION_2_1, natural, 3000, &size);
	uint64_t	written;
	uint64_t	out_size;
	LpError		err;
	uint8_t    *result = reencode_bytes(source, size, NULL, &target, LP_FILE_VERSION_2_2, NULL,
										&written, &out_size, &err);

	LP_CHECK_MSG(result != NULL, "%.300s", err.message);
	if (result != NULL)
		check_rows(result, out_size, LP_FILE_VERSION_2_2, reordered, NULL, 3000);
	free(result);
	free(source);
	free(target.fields);
}

/* Refusals: err's code and a part of its message. */
static void
check_refused(const LpSchema *target, const LpDeletions *deletions, LpErrorCode code,
			  const char *message)
{
	uint64_t	size = 0;
	uint8_t    *source = write_source(LP_FILE_VERSION_2_1, natural, 500, &size);
	uint64_t	written;
	uint64_t	out_size;
	LpError		err;
	uint8_t    *result = reencode_bytes(source, size, deletions, target, LP_FILE_VERSION_2_2, NULL,
										&written, &out_size, &err);

	LP_CHECK(result == NULL);
	LP_CHECK_EQ_U64(err.code, code);
	LP_CHECK_MSG(strstr(err.message, message) != NULL, "\"%.100s\" in \"%.300s\"", message, err.message);
	free(result);
	free(source);
}

LP_TEST(reencode_refuses_what_it_cannot_write)
{
	LpSchema	target = test_schema(natural, true);
	LpSchema	not_nullable = test_schema(natural, false);
	LpDeletions wrong_rows = {499, 0, lp_alloc0(499 / 8 + 1)};
	LpInput    *input;
	LpFile	   *file;
	uint64_t	size;
	uint8_t    *source;
	LpError		err;

	/* another type */
	target.fields[2].logical_type = "float";
	check_refused(&target, NULL, LP_ERR_UNSUPPORTED, "field \"score\" of file \"source.lance\" has type \"double\"");
	target.fields[2].logical_type = "double";

	/* a field the source lacks, and one the target lacks */
	target.fields[2].name = "points";
	check_refused(&target, NULL, LP_ERR_UNSUPPORTED, "has no field \"points\"");
	target.fields[2].name = "score";
	target.num_fields = 2;
	check_refused(&target, NULL, LP_ERR_UNSUPPORTED, "has 3 top-level fields, but the target has 2");
	target.num_fields = NUM_FIELDS;

	/* nulls where the target allows none (row 5 of name is null) */
	check_refused(&not_nullable, NULL, LP_ERR_INVALID_ARGUMENT,
				  "has nulls in field \"name\", which the target declares not nullable");

	/* deletions of another row count */
	check_refused(&target, &wrong_rows, LP_ERR_INVALID_ARGUMENT, "cover 499 rows, but it has 500");

	/* legacy files are never re-encoded; a matching file passes the check */
	LP_CHECK(!lp_reencode_check(&(LpFile) {.name = "legacy.lance", .version = LP_FILE_VERSION_LEGACY},
								&target, &err));
	LP_CHECK(strstr(err.message, "legacy Lance v1") != NULL);

	source = write_source(LP_FILE_VERSION_2_1, natural, 500, &size);
	input = lp_memory_input_open("source.lance", source, size);
	file = lp_file_open(input, &err);
	LP_CHECK(file != NULL && lp_reencode_check(file, &target, &err));
	lp_file_free(file);
	lp_input_close(input);
	free(source);

	lp_deletions_free(&wrong_rows);
	free(target.fields);
	free(not_nullable.fields);
}

static int	polls_left;

static bool
cancel_after_polls(void)
{
	return --polls_left < 0;
}

LP_TEST(reencode_stops_when_cancelled)
{
	LpSchema	target = test_schema(natural, true);
	uint64_t	size = 0;
	uint8_t    *source = write_source(LP_FILE_VERSION_2_2, natural, 5000, &size);
	Progress	progress = {0, 0, 0, true};
	LpReencodeOptions options = {1000, record_progress, &progress, false, 0};
	uint64_t	written;
	uint64_t	out_size;
	LpError		err;
	uint8_t    *result;

	polls_left = 2;
	lp_set_cancel_check(cancel_after_polls);
	result = reencode_bytes(source, size, NULL, &target, LP_FILE_VERSION_2_3, &options,
							&written, &out_size, &err);
	lp_set_cancel_check(NULL);
	LP_CHECK(result == NULL);
	LP_CHECK_EQ_U64(err.code, LP_ERR_CANCELED);
	/* the decoder polls per page too: at most the first batch was written */
	LP_CHECK(progress.calls <= 1);
	free(result);
	free(source);
	free(target.fields);
}

/* A 2.1 part re-encoded as 2.3 joins 2.3 parts by page copy. */
LP_TEST(reencoded_part_concatenates_with_target_parts)
{
	LpSchema	target = test_schema(natural, true);
	uint64_t	size_a = 0;
	uint64_t	size_b = 0;
	uint8_t    *a = write_source(LP_FILE_VERSION_2_3, natural, 2500, &size_a);
	uint8_t    *b = write_source(LP_FILE_VERSION_2_1, natural, 4000, &size_b);
	LpInput    *input_a = lp_memory_input_open("a.lance", a, size_a);
	LpInput    *input_b = lp_memory_input_open("b.lance", b, size_b);
	LpError		err;
	LpFile	   *file_a = lp_file_open(input_a, &err);
	LpFile	   *file_b = lp_file_open(input_b, &err);
	LpConcatTarget concat_target = {LP_FILE_VERSION_2_3, &target, false, NULL, NULL};
	LpConcatPart parts[2] = {{file_a, false, 0}, {file_b, false, 0}};
	LpConcatVerdict verdict;
	uint64_t	written;
	uint64_t	size_c = 0;
	uint8_t    *c;
	LpInput    *input_c;
	LpFile	   *file_c;

	LP_CHECK(file_a != NULL && file_b != NULL);
	LP_CHECK(lp_concat_check(&concat_target, parts, 2, &verdict, &err));
	LP_CHECK(verdict.reason == LP_CONCAT_VERSION_MISMATCH && verdict.input == 1);
	LP_CHECK(lp_concat_reason_reencodable(&verdict));

	c = reencode_bytes(b, size_b, NULL, &target, LP_FILE_VERSION_2_3, NULL, &written, &size_c, &err);
	LP_CHECK(c != NULL);
	input_c = lp_memory_input_open("c.lance", c, size_c);
	file_c = lp_file_open(input_c, &err);
	LP_CHECK(file_c != NULL);
	parts[1].file = file_c;
	LP_CHECK(lp_concat_check(&concat_target, parts, 2, &verdict, &err));
	LP_CHECK_STR(lp_concat_reason_name(verdict.reason), "compatible");

	lp_file_free(file_a);
	lp_file_free(file_b);
	lp_file_free(file_c);
	lp_input_close(input_a);
	lp_input_close(input_b);
	lp_input_close(input_c);
	free(a);
	free(b);
	free(c);
	free(target.fields);
}

LP_TEST(concat_verdicts_that_reencoding_resolves)
{
	static const struct
	{
		LpConcatReason reason;
		bool		reencodable;
	}			cases[] = {
		{LP_CONCAT_VERSION_MISMATCH, true},
		{LP_CONCAT_SCHEMA_MISMATCH, true},
		{LP_CONCAT_COLUMN_LAYOUT_MISMATCH, true},
		{LP_CONCAT_COLUMN_ENCODING_MISMATCH, true},
		{LP_CONCAT_COLUMN_BUFFERS, true},
		{LP_CONCAT_EXTRA_GLOBAL_BUFFERS, true},
		{LP_CONCAT_BYTES_AS_LISTS, true},
		{LP_CONCAT_LEGACY_VERSION, false},
		{LP_CONCAT_BLOB_COLUMNS, false},
		{LP_CONCAT_COMPATIBLE, false},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		LpConcatVerdict verdict;

		memset(&verdict, 0, sizeof(verdict));
		verdict.reason = cases[i].reason;
		verdict.column = LP_CONCAT_NONE;

		LP_CHECK_MSG(lp_concat_reason_reencodable(&verdict) == cases[i].reencodable, "%s",
					 lp_concat_reason_name(cases[i].reason));
		verdict.input = LP_CONCAT_NONE;
		LP_CHECK(!lp_concat_reason_reencodable(&verdict));
	}
}

/*
 * Items under null fixed-size-list rows carry no value: a 2.1 file whose
 * null rows have null items becomes a 2.0 file (which cannot store null
 * items inside valid rows), with the valid rows' items intact.
 */
LP_TEST(reencode_null_fixed_size_list_rows_into_2_0)
{
	const uint64_t rows = 1000;
	LpField		field = {.id = 0, .parent_id = -1, .name = "vec",
	.logical_type = "fixed_size_list:float:2", .nullable = true, .legacy_encoding = 1};
	LpSchema	schema = {.num_fields = 1, .fields = &field};
	LpOutput   *output = lp_memory_output_open("vec.lance");
	LpType	   *type;
	LpArray    *array;
	LpArray    *items;
	LpFileWriter *writer;
	LpError		err;
	uint64_t	size = 0;
	uint64_t	len;
	uint8_t    *source;
	uint8_t    *result;
	uint64_t	written;
	uint64_t	out_size;

	LP_CHECK(lp_type_parse(field.logical_type, "vec.lance", "vec", &type, &err));
	array = lp_array_new(type);
	items = lp_array_new(type->children[0]);
	array->length = rows;
	array->validity = lp_alloc0(rows / 8 + 1);
	items->length = rows * 2;
	items->values = lp_alloc0(rows * 2 * sizeof(float));
	items->validity = lp_alloc0(rows * 2 / 8 + 1);
	for (uint64_t r = 0; r < rows; r++)
	{
		bool		valid = r % 5 != 2;

		lp_bit_set(array->validity, r, valid);
		array->null_count += !valid;
		for (uint64_t i = 2 * r; i < 2 * r + 2; i++)
		{
			((float *) items->values)[i] = valid ? (float) i : 0.0f;
			lp_bit_set(items->validity, i, valid);
			items->null_count += !valid;
		}
	}
	array->num_children = 1;
	array->children = lp_alloc(sizeof(LpArray *));
	array->children[0] = items;
	writer = lp_file_writer_open(output, &schema, LP_FILE_VERSION_2_1, &err);
	LP_CHECK(writer != NULL);
	LP_CHECK(writer != NULL && lp_file_writer_write(writer, (const LpArray *const *) &array, 1, &err));
	LP_CHECK(writer != NULL && lp_file_writer_finish(writer, &size, &err));
	lp_file_writer_free(writer);
	source = malloc(size);
	memcpy(source, lp_memory_output_data(output, &len), size);
	output->ops->abort(output);

	result = reencode_bytes(source, size, NULL, &schema, LP_FILE_VERSION_2_0, NULL, &written,
							&out_size, &err);
	LP_CHECK_MSG(result != NULL, "%.300s", err.message);
	if (result != NULL)
	{
		LpInput    *input = lp_memory_input_open("target.lance", result, out_size);
		LpFile	   *file = lp_file_open(input, &err);
		LpType	   *got_type;
		LpArray    *got;
		uint64_t	mismatches = 0;

		LP_CHECK(file != NULL && file->version == LP_FILE_VERSION_2_0);
		if (file != NULL && lp_decode_field(input, file, 0, &got_type, &got, &err))
		{
			LP_CHECK_EQ_U64(got->length, rows);
			for (uint64_t r = 0; r < rows && got->length == rows; r++)
			{
				bool		valid = r % 5 != 2;

				mismatches += lp_array_is_valid(got, r) != valid;
				if (valid)
					mismatches += memcmp(got->children[0]->values + 2 * r * sizeof(float),
										 items->values + 2 * r * sizeof(float), 2 * sizeof(float)) != 0;
			}
			LP_CHECK_EQ_U64(mismatches, 0);
			lp_array_free(got);
			lp_type_free(got_type);
		}
		lp_file_free(file);
		lp_input_close(input);
	}
	free(result);
	free(source);
	lp_array_free(array);
	lp_type_free(type);
}
