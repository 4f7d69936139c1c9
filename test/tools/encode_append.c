/*
 * encode_append.c - encode rows given as JSON into one Lance data file with
 * the core's encoder and commit it as a new fragment of a dataset, so the
 * reference implementation can read what the encoder wrote
 * (test/reference/encode.test.cjs).
 *
 * Usage: encode_append DATASET_DIR ROWS.json [BATCH_ROWS]
 *
 * The file takes the dataset's schema and file version (its latest
 * manifest); ROWS.json is {"rows": N, "columns": [[v0, v1, ...], ...]}
 * with one array per top-level field in schema order, each value null or
 * the hex of its bytes: little-endian for fixed widths, the items of a
 * fixed-size list one after the other (or an array of items, each hex or
 * null, when items may be null), the bytes of a string, "00"/"01" for a
 * bool, an array of one such value per member for a struct, an array of
 * its items for a list.  Rows are written in batches of BATCH_ROWS (default 1000).
 * Prints the data file name, its size and the new version.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "json_reader.h"
#include "lp_encode_round_trip.h"
#include "lp_test_files.h"
#include "lp_test_store.h"

#include "base/lp_alloc.h"
#include "base/lp_path.h"
#include "dataset/lp_commit.h"
#include "dataset/lp_dataset.h"
#include "dataset/lp_manifest.h"
#include "encode/lp_file_writer.h"

static void
die(const char *what, const LpError *err)
{
	fprintf(stderr, "encode_append: %s: %s%s%s\n", what, err ? err->message : "",
			err && err->detail[0] ? " - " : "", err ? err->detail : "");
	exit(1);
}

static bool
urandom(void *arg, uint8_t *buffer, size_t len, LpError *err)
{
	int			fd = open("/dev/urandom", O_RDONLY);
	bool		ok = fd >= 0 && read(fd, buffer, len) == (ssize_t) len;

	(void) arg;
	if (fd >= 0)
		close(fd);
	return ok ? true : lp_fail(err, LP_ERR_IO, "could not read /dev/urandom");
}

static int
hex_digit(char c)
{
	int			value = lp_hex_digit_value(c);

	if (value < 0)
		die("bad hex digit in a value", NULL);
	return value;
}

/* Bytes of a hex value into out (out_len = len / 2). */
static void
unhex(const JsonValue *value, uint8_t *out)
{
	for (size_t i = 0; i + 1 < value->len; i += 2)
		out[i / 2] = (uint8_t) (hex_digit(value->text[i]) << 4 | hex_digit(value->text[i + 1]));
}

/*
 * The type of schema field index with its members (structs) or item
 * (lists), NULL when it cannot be parsed.
 */
static LpType *
field_type(const LpSchema *schema, uint32_t index, const char *where, LpError *err)
{
	LpType	   *type;

	if (!lp_type_parse(schema->fields[index].logical_type, where, schema->fields[index].name,
					   &type, err))
		return NULL;
	if (type->id != LP_TYPE_STRUCT && type->id != LP_TYPE_LIST && type->id != LP_TYPE_LARGE_LIST)
		return type;
	type->children = lp_alloc0((schema->num_fields + 1) * sizeof(LpType *));
	for (uint32_t i = index + 1; i < schema->num_fields; i++)
		if (schema->fields[i].parent_id == schema->fields[index].id)
		{
			LpType	   *member = field_type(schema, i, where, err);

			if (member == NULL)
			{
				lp_type_free(type);
				return NULL;
			}
			type->children[type->num_children++] = member;
		}
	return type;
}

/*
 * The column of values as an array of the type; a struct's values are
 * arrays of one value per member (or null).
 */
static LpArray *
column_array(const LpType *type, const JsonValue *values, uint64_t rows)
{
	LpArray    *array = lp_array_new(type);
	uint32_t	width = lp_type_byte_width(type);

	if (values->kind != JSON_ARRAY || values->count != rows)
		die("a column does not have one value per row", NULL);
	array->length = rows;
	array->validity = lp_alloc0(rows / 8 + 1);
	for (uint64_t i = 0; i < rows; i++)
	{
		bool		valid = values->items[i].kind != JSON_NULL;

		lp_bit_set(array->validity, i, valid);
		array->null_count += !valid;
		if (valid && values->items[i].kind != JSON_STRING &&
			!((type->id == LP_TYPE_FIXED_SIZE_LIST || type->id == LP_TYPE_STRUCT ||
			   type->id == LP_TYPE_LIST || type->id == LP_TYPE_LARGE_LIST) &&
			  values->items[i].kind == JSON_ARRAY))
			die("a value is neither null nor a hex string", NULL);
	}
	if (type->id == LP_TYPE_STRUCT)
	{
		/* Each member's column: its value in every valid row, null where the struct is. */
		JsonValue	member;
		JsonValue	null_value;

		memset(&null_value, 0, sizeof(null_value));
		null_value.kind = JSON_NULL;
		array->num_children = type->num_children;
		array->children = lp_alloc0((type->num_children + 1) * sizeof(LpArray *));
		for (uint32_t c = 0; c < type->num_children; c++)
		{
			memset(&member, 0, sizeof(member));
			member.kind = JSON_ARRAY;
			member.count = rows;
			member.items = calloc(rows + 1, sizeof(JsonValue));
			for (uint64_t i = 0; i < rows; i++)
			{
				const JsonValue *value = &values->items[i];

				if (value->kind == JSON_ARRAY && value->count != type->num_children)
					die("a struct value does not have one value per member", NULL);
				member.items[i] = value->kind == JSON_ARRAY ? value->items[c] : null_value;
			}
			array->children[c] = column_array(type->children[c], &member, rows);
			free(member.items);
		}
	}
	else if (type->id == LP_TYPE_LIST || type->id == LP_TYPE_LARGE_LIST)
	{
		/* The items of every valid row, one after the other, as the item column. */
		JsonValue	items;
		size_t		total = 0;

		array->offsets = lp_alloc((rows + 1) * sizeof(uint64_t));
		array->offsets[0] = 0;
		for (uint64_t i = 0; i < rows; i++)
		{
			if (lp_array_is_valid(array, i))
				total += values->items[i].count;
			array->offsets[i + 1] = total;
		}
		memset(&items, 0, sizeof(items));
		items.kind = JSON_ARRAY;
		items.count = total;
		items.items = calloc(total + 1, sizeof(JsonValue));
		for (uint64_t i = 0; i < rows; i++)
			for (size_t j = 0; lp_array_is_valid(array, i) && j < values->items[i].count; j++)
				items.items[array->offsets[i] + j] = values->items[i].items[j];
		array->num_children = 1;
		array->children = lp_alloc(sizeof(LpArray *));
		array->children[0] = column_array(type->children[0], &items, total);
		free(items.items);
	}
	else if (type->id == LP_TYPE_FIXED_SIZE_LIST)
	{
		LpArray    *items = lp_array_new(type->children[0]);
		uint64_t	row = (uint64_t) type->fixed_size * lp_type_byte_width(type->children[0]);

		items->length = rows * type->fixed_size;
		items->values = lp_alloc0(rows * row + 1);
		uint32_t	item = lp_type_byte_width(type->children[0]);

		for (uint64_t i = 0; i < rows; i++)
		{
			const JsonValue *value = &values->items[i];

			if (value->kind == JSON_ARRAY)
			{
				/* items one by one, each hex or null */
				if (value->count != (size_t) type->fixed_size)
					die("a fixed-size list value has the wrong number of items", NULL);
				if (items->validity == NULL)
				{
					items->validity = lp_alloc(rows * type->fixed_size / 8 + 1);
					memset(items->validity, 0xff, rows * type->fixed_size / 8 + 1);
				}
				for (size_t j = 0; j < value->count; j++)
				{
					uint64_t	index = i * type->fixed_size + j;

					if (value->items[j].kind == JSON_NULL)
					{
						lp_bit_set(items->validity, index, false);
						items->null_count++;
					}
					else if (value->items[j].len != 2 * (size_t) item)
						die("a fixed-size list item has the wrong length", NULL);
					else
						unhex(&value->items[j], items->values + index * item);
				}
			}
			else if (lp_array_is_valid(array, i))
			{
				if (value->len != 2 * row)
					die("a fixed-size list value has the wrong length", NULL);
				unhex(value, items->values + i * row);
			}
		}
		array->num_children = 1;
		array->children = lp_alloc(sizeof(LpArray *));
		array->children[0] = items;
	}
	else if (lp_type_is_variable_width(type))
	{
		uint64_t	total = 0;

		for (uint64_t i = 0; i < rows; i++)
			if (lp_array_is_valid(array, i))
				total += values->items[i].len / 2;
		array->offsets = lp_alloc((rows + 1) * sizeof(uint64_t));
		array->data = lp_alloc(total + 1);
		array->offsets[0] = 0;
		for (uint64_t i = 0; i < rows; i++)
		{
			uint64_t	len = lp_array_is_valid(array, i) ? values->items[i].len / 2 : 0;

			if (len > 0)
				unhex(&values->items[i], array->data + array->offsets[i]);
			array->offsets[i + 1] = array->offsets[i] + len;
		}
		array->data_len = total;
	}
	else if (type->id == LP_TYPE_BOOL)
	{
		array->values = lp_alloc0(rows / 8 + 1);
		for (uint64_t i = 0; i < rows; i++)
			if (lp_array_is_valid(array, i))
				lp_bit_set(array->values, i, strcmp(values->items[i].text, "01") == 0);
	}
	else
	{
		array->values = lp_alloc0(rows * width + 1);
		for (uint64_t i = 0; i < rows; i++)
			if (lp_array_is_valid(array, i))
			{
				if (values->items[i].len != 2 * (size_t) width)
					die("a fixed-width value has the wrong length", NULL);
				unhex(&values->items[i], array->values + i * width);
			}
	}
	return array;
}

int
main(int argc, char **argv)
{
	LpStore    *store = lp_test_store();
	LpManifestNaming naming;
	LpManifest *manifest;
	LpSchema	schema;
	LpFileVersion version;
	LpError		err;
	JsonValue  *json;
	const JsonValue *columns;
	const char *json_error = NULL;
	uint64_t	rows;
	uint64_t	batch = argc > 3 ? strtoull(argv[3], NULL, 10) : 1000;
	uint32_t	n = 0;
	LpType	   *types[64];
	LpArray    *arrays[64];
	LpArray    *parts[64];
	int32_t		selected[64];
	char		name[LP_DATA_FILE_NAME_SIZE];
	char		path[4096];
	LpOutput   *output;
	LpFileWriter *writer;
	uint64_t	size;
	int32_t    *field_ids;
	int32_t    *column_indices;
	size_t		n_columns;
	LpCommitRequest request;
	LpCommitOptions options = {3, urandom, NULL, false};
	LpCommitResult result;

	if (argc < 3 || batch == 0)
	{
		fprintf(stderr, "usage: encode_append DATASET_DIR ROWS.json [BATCH_ROWS]\n");
		return 2;
	}
	manifest = lp_dataset_read_latest(store, argv[1], &naming, &err);
	if (manifest == NULL)
		die("reading the dataset", &err);
	if (!lp_manifest_schema(manifest, &schema, &err))
		die("reading the schema", &err);
	if (!lp_manifest_data_version(manifest, &version))
		die("the dataset's data format is unknown", NULL);
	json = json_parse_file(argv[2], &json_error);
	if (json == NULL || json_get(json, "rows") == NULL ||
		(columns = json_get(json, "columns")) == NULL || columns->kind != JSON_ARRAY)
		die(json_error ? json_error : "ROWS.json lacks rows or columns", NULL);
	rows = strtoull(json_get(json, "rows")->text, NULL, 10);

	for (uint32_t i = 0; i < schema.num_fields; i++)
	{
		if (schema.fields[i].parent_id != -1)
			continue;
		if (n == 64 || n >= columns->count)
			die("ROWS.json does not have a column per top-level field", NULL);
		if ((types[n] = field_type(&schema, i, argv[1], &err)) == NULL)
			die("a field's type", &err);
		arrays[n] = column_array(types[n], &columns->items[n], rows);
		selected[n] = schema.fields[i].id;
		n++;
	}

	if (!lp_generate_data_file_name(urandom, NULL, name, &err))
		die("naming the data file", &err);
	snprintf(path, sizeof(path), "%s/data/%s", argv[1], name);
	output = store->ops->create_output(store, path, &err);
	if (output == NULL)
		die("creating the data file", &err);
	writer = lp_file_writer_open(output, &schema, version, &err);
	if (writer == NULL)
		die("opening the writer", &err);
	for (uint64_t start = 0; start < rows; start += batch)
	{
		uint64_t	count = rows - start < batch ? rows - start : batch;

		for (uint32_t c = 0; c < n; c++)
			parts[c] = lp_round_trip_slice(types[c], arrays[c], start, count);
		if (!lp_file_writer_write(writer, (const LpArray *const *) parts, n, &err))
			die("writing a batch", &err);
		for (uint32_t c = 0; c < n; c++)
			lp_array_free(parts[c]);
	}
	if (!lp_file_writer_finish(writer, &size, &err))
		die("finishing the file", &err);
	lp_file_writer_free(writer);
	if (!output->ops->publish(output, &err))
		die("publishing the data file", &err);

	if (!lp_data_file_columns(&schema, selected, n, version, &field_ids, &column_indices,
							  &n_columns, &err))
		die("the data file's columns", &err);
	memset(&request, 0, sizeof(request));
	request.kind = LP_COMMIT_APPEND;
	request.read_version = lp_manifest_version(manifest);
	request.file.path = name;
	request.file.fields = field_ids;
	request.file.column_indices = column_indices;
	request.file.n_fields = n_columns;
	request.file.version = version;
	request.file.size_bytes = size;
	request.physical_rows = rows;
	request.read_manifest = manifest;
	request.read_naming = naming;
	if (!lp_commit(store, argv[1], &request, &options, &result, &err))
		die("committing", &err);
	printf("%s %llu %llu\n", name, (unsigned long long) size, (unsigned long long) result.version);

	lp_free(result.new_fragment_ids);
	lp_free(field_ids);
	lp_free(column_indices);
	for (uint32_t c = 0; c < n; c++)
	{
		lp_array_free(arrays[c]);
		lp_type_free(types[c]);
	}
	json_free(json);
	lp_schema_free(&schema);
	lp_manifest_free(manifest);
	return 0;
}
