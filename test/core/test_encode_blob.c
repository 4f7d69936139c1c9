/*
 * test_encode_blob.c - the encoder's Blob v2 fields: every data file of
 * the blob_2_2 reference dataset written again from its decoded rows (its
 * Inline payloads through lp_file_writer_write_blob) is byte for byte the
 * file lancedb wrote (up to the order of the blob field's two metadata
 * keys, which varies between lancedb runs); descriptors of every kind,
 * nulls and empty payloads round-trip through our decoder; bad descriptor
 * arrays and blob fields the encoder cannot write are refused; two files of
 * descriptors re-encoded into one (compaction) keep every payload reachable,
 * and so do two files concatenated with their descriptor column replaced by
 * a donor file (compaction by page copy).
 */
#define _GNU_SOURCE				/* memmem */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/lp_alloc.h"
#include "concat/lp_concat.h"
#include "decode/lp_decode.h"
#include "encode/lp_file_writer.h"
#include "format/lp_file.h"
#include "lp_encode_round_trip.h"
#include "lp_test.h"
#include "lp_test_files.h"
#include "lp_test_util.h"
#include "reencode/lp_reencode.h"

/*
 * The manifest's schema of a table {id int64, payload blob} as the writer
 * is given it: the blob field a struct of data and uri with the extension
 * lance.blob.v2.  Static strings; free fields only.
 */
static LpSchema
blob_schema(void)
{
	LpSchema	schema = {0};

	schema.num_fields = 4;
	schema.fields = calloc(4, sizeof(LpField));
	schema.fields[0] = (LpField) {.id = 0, .parent_id = -1, .name = "id", .logical_type = "int64",
	.legacy_encoding = 1};
	schema.fields[1] = (LpField) {.id = 1, .parent_id = -1, .name = "payload",
		.logical_type = "struct", .nullable = true, .extension_name = "lance.blob.v2"};
	schema.fields[2] = (LpField) {.id = 2, .parent_id = 1, .name = "data",
	.logical_type = "large_binary", .nullable = true, .legacy_encoding = 2};
	schema.fields[3] = (LpField) {.id = 3, .parent_id = 1, .name = "uri", .logical_type = "string",
	.nullable = true, .legacy_encoding = 2};
	return schema;
}

/* The descriptor children of a decoded blob array. */
#define KIND(a, i) ((a)->children[0]->values[i])
#define POSITION(a, i) (((const uint64_t *) (a)->children[1]->values)[i])
#define SIZE(a, i) (((const uint64_t *) (a)->children[2]->values)[i])

/*
 * Lance keeps a field's metadata in a hash map, so lancedb writes the blob
 * field's two keys in either order from run to run; the encoder writes
 * "lance-encoding:packed" first.  Put the reference's two map entries (key
 * and value "true", each entry its tag, length, key and value) in that
 * order, so the comparison is byte for byte everywhere else.
 */
static void
order_blob_metadata_as_written(uint8_t *file, size_t len)
{
	static const char blob_key[] = "lance-encoding:blob";
	static const char packed_key[] = "lance-encoding:packed";
	const size_t blob_entry = 2 + 2 + strlen(blob_key) + 2 + 4;
	const size_t packed_entry = 2 + 2 + strlen(packed_key) + 2 + 4;
	uint8_t    *blob = memmem(file, len, blob_key, strlen(blob_key));
	uint8_t    *packed = memmem(file, len, packed_key, strlen(packed_key));
	uint8_t    *saved;

	if (blob == NULL || packed == NULL || packed - blob != (ptrdiff_t) blob_entry)
		return;
	/* blob's entry first: move packed's entry in front of it */
	saved = malloc(blob_entry);
	LP_CHECK(saved != NULL);
	if (saved == NULL)
		return;
	memcpy(saved, blob - 4, blob_entry);
	memmove(blob - 4, packed - 4, packed_entry);
	memcpy(blob - 4 + packed_entry, saved, blob_entry);
	free(saved);
}

LP_TEST(encode_blob_reference_files_byte_for_byte)
{
	char	   *paths[4];
	int			n = lp_test_dataset_data_files("blob_2_2", paths, 4);
	LpSchema	schema = blob_schema();

	LP_CHECK_EQ_U64(n, 2);
	for (int f = 0; f < n; f++)
	{
		uint8_t    *reference = NULL;
		size_t		reference_len = 0;
		LpInput    *input;
		LpFile	   *file;
		LpType	   *types[2] = {NULL, NULL};
		LpArray    *arrays[2] = {NULL, NULL};
		LpOutput   *output;
		LpFileWriter *writer;
		LpError		err;
		uint64_t	size = 0;
		uint64_t	len = 0;
		uint32_t	inline_count = 0;

		LP_CHECK(lp_test_file_read_all(paths[f], &reference, &reference_len));
		input = lp_memory_input_open(paths[f], reference, reference_len);
		file = lp_file_open(input, &err);
		LP_CHECK_MSG(file != NULL, "%.200s: %.200s", paths[f], err.message);
		if (file == NULL)
			continue;
		LP_CHECK(lp_decode_field(input, file, 0, &types[0], &arrays[0], &err));
		LP_CHECK_MSG(lp_decode_field(input, file, 1, &types[1], &arrays[1], &err), "%.300s", err.message);
		output = lp_memory_output_open("memory.lance");
		writer = lp_file_writer_open(output, &schema, file->version, &err);
		LP_CHECK_MSG(writer != NULL, "open: %.300s", err.message);
		for (uint64_t i = 0; writer != NULL && arrays[1] != NULL && i < arrays[1]->length; i++)
		{
			uint64_t	position;

			if (!lp_array_is_valid(arrays[1], i) || KIND(arrays[1], i) != LP_BLOB_KIND_INLINE)
				continue;
			LP_CHECK(POSITION(arrays[1], i) + SIZE(arrays[1], i) <= reference_len);
			LP_CHECK(lp_file_writer_write_blob(writer, reference + POSITION(arrays[1], i),
											   SIZE(arrays[1], i), &position, &err));
			LP_CHECK_EQ_U64(position, POSITION(arrays[1], i));
			inline_count++;
		}
		/* the file has inline payloads, empty ones, nulls, packed and dedicated descriptors */
		LP_CHECK(inline_count >= 3);
		LP_CHECK(arrays[1] != NULL && arrays[1]->null_count > 0);
		if (writer != NULL && arrays[0] != NULL && arrays[1] != NULL)
		{
			LP_CHECK_MSG(lp_file_writer_write(writer, (const LpArray *const *) arrays, 2, &err),
						 "write: %.300s", err.message);
			LP_CHECK_MSG(lp_file_writer_finish(writer, &size, &err), "finish: %.300s", err.message);
			const uint8_t *written = lp_memory_output_data(output, &len);
			uint64_t	at = 0;

			LP_CHECK_EQ_U64(len, reference_len);
			order_blob_metadata_as_written(reference, reference_len);
			while (at < len && at < reference_len && written[at] == reference[at])
				at++;
			LP_CHECK_MSG(len == reference_len && at == len,
						 "%.300s differs from the file written again at byte %llu", paths[f],
						 (unsigned long long) at);
		}
		lp_file_writer_free(writer);
		output->ops->abort(output);
		for (int c = 0; c < 2; c++)
		{
			lp_array_free(arrays[c]);
			lp_type_free(types[c]);
		}
		lp_file_free(file);
		lp_input_close(input);
		free(reference);
		free(paths[f]);
	}
	free(schema.fields);
}

/* The type of a descriptor array: a struct of kind, position, size, blob_id and blob_uri. */
static LpType *
descriptor_type(void)
{
	static const char *const children[5] = {"uint8", "uint64", "uint64", "uint32", "string"};
	static const char *const names[5] = {"kind", "position", "size", "blob_id", "blob_uri"};
	LpType	   *type;
	LpError		err;

	LP_CHECK(lp_type_parse("struct", "memory.lance", "payload", &type, &err));
	type->num_children = 5;
	type->children = lp_alloc0(5 * sizeof(LpType *));
	for (int c = 0; c < 5; c++)
		LP_CHECK(lp_type_parse(children[c], "memory.lance", names[c], &type->children[c], &err));
	return type;
}

/* Row i of a round trip: null, empty, inline, packed, dedicated or external. */
#define ROW_SHAPES 6

/*
 * Descriptors of rows [first, first + count) into a new array; Inline rows
 * get their payload (i % 97 + 1 bytes of i) written into the file first.
 */
static LpArray *
descriptor_batch(const LpType *type, LpFileWriter *writer, uint64_t first, uint64_t count)
{
	LpArray    *array = lp_array_new(type);
	LpArray   **c;
	LpError		err;
	char		uri[64];

	array->length = count;
	array->validity = lp_alloc0(count / 8 + 1);
	array->num_children = 5;
	array->children = lp_alloc0(5 * sizeof(LpArray *));
	c = array->children;
	for (int k = 0; k < 5; k++)
	{
		c[k] = lp_array_new(type->children[k]);
		c[k]->length = count;
	}
	c[0]->values = lp_alloc0(count + 1);
	c[1]->values = lp_alloc0(count * 8 + 1);
	c[2]->values = lp_alloc0(count * 8 + 1);
	c[3]->values = lp_alloc0(count * 4 + 1);
	c[4]->offsets = lp_alloc0((count + 1) * sizeof(uint64_t));
	c[4]->data = lp_alloc0(count * sizeof(uri) + 1);
	for (uint64_t j = 0; j < count; j++)
	{
		uint64_t	i = first + j;
		uint64_t   *position = (uint64_t *) c[1]->values + j;
		uint64_t   *size = (uint64_t *) c[2]->values + j;
		uint32_t   *blob_id = (uint32_t *) c[3]->values + j;
		uint8_t		payload[97];

		c[4]->offsets[j + 1] = c[4]->offsets[j];
		if (i % ROW_SHAPES == 0)
		{
			array->null_count++;
			continue;
		}
		lp_bit_set(array->validity, j, true);
		switch (i % ROW_SHAPES)
		{
			case 1:
			case 2:
				c[0]->values[j] = LP_BLOB_KIND_INLINE;
				*size = i % ROW_SHAPES == 1 ? 0 : i % 97 + 1;
				memset(payload, (int) (i & 0xff), sizeof(payload));
				LP_CHECK(lp_file_writer_write_blob(writer, payload, *size, position, &err));
				LP_CHECK(*position % 64 == 0);
				break;
			case 3:
			case 4:
				c[0]->values[j] = i % ROW_SHAPES == 3 ? LP_BLOB_KIND_PACKED : LP_BLOB_KIND_DEDICATED;
				*position = i % ROW_SHAPES == 3 ? i * 1000 : 0;
				*size = i + 1;
				*blob_id = (uint32_t) (i / 10 + 1);
				break;
			default:
				c[0]->values[j] = LP_BLOB_KIND_EXTERNAL;
				*position = i;
				*size = i * 3;
				snprintf(uri, sizeof(uri), "s3://bucket/objects/%llu.bin", (unsigned long long) i);
				memcpy(c[4]->data + c[4]->offsets[j], uri, strlen(uri));
				c[4]->offsets[j + 1] += strlen(uri);
				break;
		}
	}
	c[4]->data_len = c[4]->offsets[count];
	return array;
}

static LpArray *
id_batch(const LpType *type, uint64_t first, uint64_t count)
{
	LpArray    *array = lp_array_new(type);

	array->length = count;
	array->values = lp_alloc0(count * 8 + 1);
	for (uint64_t j = 0; j < count; j++)
		((int64_t *) array->values)[j] = (int64_t) (first + j);
	return array;
}

/*
 * Write rows [0, rows) in batches of batch_rows into a file of version (in
 * memory, lp_alloc'd); NULL with *err when the writer refuses.
 */
static uint8_t *
write_descriptors(LpFileVersion version, uint64_t rows, uint64_t batch_rows, LpType *types[2],
				  uint64_t *size, LpError *err)
{
	LpSchema	schema = blob_schema();
	LpOutput   *output = lp_memory_output_open("memory.lance");
	LpFileWriter *writer = lp_file_writer_open(output, &schema, version, err);
	uint8_t    *bytes = NULL;
	bool		ok = writer != NULL;

	for (uint64_t start = 0; ok && start < rows; start += batch_rows)
	{
		uint64_t	count = rows - start < batch_rows ? rows - start : batch_rows;
		LpArray    *batch[2] = {id_batch(types[0], start, count),
		descriptor_batch(types[1], writer, start, count)};

		ok = lp_file_writer_write(writer, (const LpArray *const *) batch, 2, err);
		lp_array_free(batch[0]);
		lp_array_free(batch[1]);
	}
	if (ok && lp_file_writer_finish(writer, size, err))
	{
		uint64_t	len;

		bytes = lp_memdup(lp_memory_output_data(output, &len), *size);
	}
	lp_file_writer_free(writer);
	output->ops->abort(output);
	free(schema.fields);
	return bytes;
}

/*
 * The descriptor field (1) of a file write_descriptors wrote, decoded; its
 * first page's layout is checked when layout is not NULL.  NULL, after a
 * failed check, when the file does not open or decode.
 */
static LpArray *
decode_descriptors(const uint8_t *bytes, uint64_t size, const char *layout,
				   LpType **decoded_type)
{
	LpInput    *input = lp_memory_input_open("memory.lance", bytes, size);
	LpFile	   *file;
	LpArray    *decoded = NULL;
	LpError		err;

	file = lp_file_open(input, &err);
	LP_CHECK_MSG(file != NULL, "reopen: %.300s", err.message);
	if (file != NULL)
	{
		if (layout != NULL)
			LP_CHECK_STR(file->columns[1].pages[0].layout, layout);
		LP_CHECK_MSG(lp_decode_field(input, file, 1, decoded_type, &decoded, &err),
					 "decode: %.300s", err.message);
	}
	lp_file_free(file);
	lp_input_close(input);
	return decoded;
}

LP_TEST(encode_blob_descriptors_round_trip)
{
	static const LpFileVersion versions[] = {LP_FILE_VERSION_2_2, LP_FILE_VERSION_2_3};
	LpType	   *types[2] = {NULL, descriptor_type()};
	LpError		err;

	LP_CHECK(lp_type_parse("int64", "memory.lance", "id", &types[0], &err));
	for (size_t v = 0; v < sizeof(versions) / sizeof(versions[0]); v++)
	{
		uint64_t	size = 0;
		uint64_t	rows = 3000;
		uint8_t    *bytes = write_descriptors(versions[v], rows, 700, types, &size, &err);
		LpType	   *decoded_type = NULL;
		LpArray    *decoded;

		LP_CHECK_MSG(bytes != NULL, "%s: %.300s", lp_file_version_name(versions[v]), err.message);
		if (bytes == NULL)
			continue;
		decoded = decode_descriptors(bytes, size, "full_zip", &decoded_type);
		if (decoded != NULL)
		{
			LP_CHECK_EQ_U64(decoded->length, rows);
			for (uint64_t i = 0; i < rows && i < decoded->length; i++)
			{
				bool		valid = lp_array_is_valid(decoded, i);

				LP_CHECK_MSG(valid == (i % ROW_SHAPES != 0), "row %llu validity", (unsigned long long) i);
				if (!valid)
					continue;
				switch (i % ROW_SHAPES)
				{
					case 1:
					case 2:
						LP_CHECK_EQ_U64(KIND(decoded, i), LP_BLOB_KIND_INLINE);
						LP_CHECK_EQ_U64(SIZE(decoded, i), i % ROW_SHAPES == 1 ? 0 : i % 97 + 1);
						LP_CHECK(POSITION(decoded, i) + SIZE(decoded, i) <= size);
						for (uint64_t b = 0; b < SIZE(decoded, i) && POSITION(decoded, i) + b < size; b++)
							if (bytes[POSITION(decoded, i) + b] != (i & 0xff))
							{
								LP_CHECK_MSG(false, "inline payload of row %llu", (unsigned long long) i);
								break;
							}
						break;
					case 3:
					case 4:
						LP_CHECK_EQ_U64(KIND(decoded, i), i % ROW_SHAPES == 3 ? 1 : 2);
						LP_CHECK_EQ_U64(POSITION(decoded, i), i % ROW_SHAPES == 3 ? i * 1000 : 0);
						LP_CHECK_EQ_U64(SIZE(decoded, i), i + 1);
						LP_CHECK_EQ_U64(((const uint32_t *) decoded->children[3]->values)[i], i / 10 + 1);
						break;
					default:
						{
							char		uri[64];
							const LpArray *uris = decoded->children[4];

							snprintf(uri, sizeof(uri), "s3://bucket/objects/%llu.bin", (unsigned long long) i);
							LP_CHECK_EQ_U64(KIND(decoded, i), LP_BLOB_KIND_EXTERNAL);
							LP_CHECK_EQ_U64(POSITION(decoded, i), i);
							LP_CHECK_EQ_U64(SIZE(decoded, i), i * 3);
							LP_CHECK(uris->offsets[i + 1] - uris->offsets[i] == strlen(uri) &&
									 memcmp(uris->data + uris->offsets[i], uri, strlen(uri)) == 0);
						}
				}
			}
		}
		lp_array_free(decoded);
		lp_type_free(decoded_type);
		lp_free(bytes);
	}
	lp_type_free(types[0]);
	lp_type_free(types[1]);
}

/* A page of only null descriptors decodes as nulls. */
LP_TEST(encode_blob_all_null_page)
{
	LpType	   *types[2] = {NULL, descriptor_type()};
	LpError		err;
	uint64_t	size = 0;
	uint8_t    *bytes;

	LP_CHECK(lp_type_parse("int64", "memory.lance", "id", &types[0], &err));
	/* rows 0, 6, 12, ...: one a batch, every one null */
	bytes = write_descriptors(LP_FILE_VERSION_2_2, 1, 1, types, &size, &err);
	LP_CHECK_MSG(bytes != NULL, "%.300s", err.message);
	if (bytes != NULL)
	{
		LpType	   *decoded_type = NULL;
		LpArray    *decoded = decode_descriptors(bytes, size, NULL, &decoded_type);

		LP_CHECK(decoded != NULL && decoded->length == 1 && !lp_array_is_valid(decoded, 0));
		lp_array_free(decoded);
		lp_type_free(decoded_type);
		lp_free(bytes);
	}
	lp_type_free(types[0]);
	lp_type_free(types[1]);
}

/* Blob fields before 2.2, unknown kinds and incomplete descriptors are refused. */
LP_TEST(encode_blob_refusals)
{
	LpType	   *types[2] = {NULL, descriptor_type()};
	LpSchema	schema = blob_schema();
	LpError		err;
	uint64_t	size;
	LpOutput   *output = lp_memory_output_open("memory.lance");
	LpFileWriter *writer;

	LP_CHECK(lp_type_parse("int64", "memory.lance", "id", &types[0], &err));
	LP_CHECK(write_descriptors(LP_FILE_VERSION_2_1, 10, 10, types, &size, &err) == NULL);
	LP_CHECK_EQ_U64(err.code, LP_ERR_UNSUPPORTED);

	for (int damage = 0; damage < 3; damage++)
	{
		LpArray    *batch[2] = {id_batch(types[0], 0, 6), NULL};

		writer = lp_file_writer_open(output, &schema, LP_FILE_VERSION_2_3, &err);
		LP_CHECK(writer != NULL);
		if (writer == NULL)
			break;
		batch[1] = descriptor_batch(types[1], writer, 0, 6);
		if (damage == 0)
			batch[1]->children[0]->values[3] = 4;	/* Managed, which lance_parts never writes */
		else if (damage == 1)
		{
			/* a valid row whose size is null */
			batch[1]->children[2]->validity = lp_alloc0(1);
			batch[1]->children[2]->validity[0] = 0xfb;
		}
		else
			batch[1]->num_children = 4;
		LP_CHECK(!lp_file_writer_write(writer, (const LpArray *const *) batch, 2, &err));
		LP_CHECK_EQ_U64(err.code, LP_ERR_INVALID_ARGUMENT);
		LP_CHECK_MSG(strstr(err.message, "payload") != NULL, "%.300s", err.message);
		if (damage == 2)
			batch[1]->num_children = 5;
		lp_array_free(batch[0]);
		lp_array_free(batch[1]);
		lp_file_writer_free(writer);
	}
	output->ops->abort(output);
	free(schema.fields);
	lp_type_free(types[0]);
	lp_type_free(types[1]);
}

/*
 * Two files of descriptors re-encoded into one (compaction): the second's
 * Inline payloads are copied into the new file at the offsets its
 * descriptors then name, its Packed and Dedicated ids moved by its offset,
 * External descriptors and nulls kept; an offset past 32-bit ids is
 * refused.
 */
LP_TEST(reencode_blob_files_into_one)
{
	LpType	   *types[2] = {NULL, descriptor_type()};
	LpSchema	schema = blob_schema();
	LpError		err;
	uint64_t	sizes[2] = {0, 0};
	uint8_t    *files[2];
	LpInput    *inputs[2];
	LpReencodeSource sources[2];
	const uint64_t rows = 40;

	LP_CHECK(lp_type_parse("int64", "memory.lance", "id", &types[0], &err));
	for (int k = 0; k < 2; k++)
	{
		files[k] = write_descriptors(LP_FILE_VERSION_2_3, rows, 16, types, &sizes[k], &err);
		LP_CHECK_MSG(files[k] != NULL, "%.300s", err.message);
		if (files[k] == NULL)
			return;
		inputs[k] = lp_memory_input_open(k == 0 ? "a.lance" : "b.lance", files[k], sizes[k]);
		sources[k] = (LpReencodeSource) {inputs[k], lp_file_open(inputs[k], &err), NULL, k == 0 ? 0 : 100};
		LP_CHECK(sources[k].file != NULL);
	}
	for (int overflow = 0; overflow < 2; overflow++)
	{
		LpOutput   *output = lp_memory_output_open("merged.lance");
		uint64_t	written = 0;
		uint64_t	size = 0;
		bool		ok;

		sources[1].blob_id_offset = overflow ? UINT32_MAX - 3 : 100;
		ok = lp_reencode_files(sources, 2, &schema, LP_FILE_VERSION_2_3, output, NULL, &written,
							   &size, &err);
		if (overflow)
		{
			LP_CHECK(!ok);
			LP_CHECK_EQ_U64(err.code, LP_ERR_UNSUPPORTED);
			LP_CHECK_MSG(strstr(err.message, "blob ids are 32-bit") != NULL, "%.300s", err.message);
		}
		else
		{
			uint64_t	len;
			uint8_t    *bytes;
			LpType	   *decoded_type = NULL;
			LpArray    *decoded;

			LP_CHECK_MSG(ok, "%.300s", err.message);
			LP_CHECK_EQ_U64(written, 2 * rows);
			bytes = ok ? lp_memdup(lp_memory_output_data(output, &len), size) : NULL;
			decoded = bytes != NULL ? decode_descriptors(bytes, size, NULL, &decoded_type) : NULL;
			for (uint64_t j = 0; decoded != NULL && j < decoded->length; j++)
			{
				uint64_t	i = j % rows;
				uint32_t	moved = j < rows ? 0 : 100;

				LP_CHECK_EQ_U64(lp_array_is_valid(decoded, j), i % ROW_SHAPES != 0);
				if (i % ROW_SHAPES == 0)
					continue;
				LP_CHECK_EQ_U64(KIND(decoded, j), (i % ROW_SHAPES) < 3 ? LP_BLOB_KIND_INLINE :
								(i % ROW_SHAPES) == 3 ? LP_BLOB_KIND_PACKED :
								(i % ROW_SHAPES) == 4 ? LP_BLOB_KIND_DEDICATED : LP_BLOB_KIND_EXTERNAL);
				if (i % ROW_SHAPES == 2)
				{
					LP_CHECK_EQ_U64(SIZE(decoded, j), i % 97 + 1);
					LP_CHECK(POSITION(decoded, j) + SIZE(decoded, j) <= size);
					for (uint64_t b = 0; b < SIZE(decoded, j) && POSITION(decoded, j) + b < size; b++)
						if (bytes[POSITION(decoded, j) + b] != (i & 0xff))
						{
							LP_CHECK_MSG(false, "inline payload of row %llu", (unsigned long long) j);
							break;
						}
				}
				else if (i % ROW_SHAPES == 3 || i % ROW_SHAPES == 4)
				{
					LP_CHECK_EQ_U64(POSITION(decoded, j), i % ROW_SHAPES == 3 ? i * 1000 : 0);
					LP_CHECK_EQ_U64(((const uint32_t *) decoded->children[3]->values)[j], i / 10 + 1 + moved);
				}
				else if (i % ROW_SHAPES == 5)
					LP_CHECK_EQ_U64(POSITION(decoded, j), i);
			}
			LP_CHECK(decoded != NULL && decoded->length == 2 * rows);
			lp_array_free(decoded);
			lp_type_free(decoded_type);
			lp_free(bytes);
		}
		output->ops->abort(output);
	}
	for (int k = 0; k < 2; k++)
	{
		lp_file_free((LpFile *) sources[k].file);
		lp_input_close(inputs[k]);
		lp_free(files[k]);
	}
	free(schema.fields);
	lp_type_free(types[0]);
	lp_type_free(types[1]);
}

/*
 * Compaction by page copy: two files of descriptors concatenated with the
 * descriptor column replaced by a donor file written for where the plan of
 * the parts alone ends; the output's ids are both files' rows (copied
 * pages), its Inline payloads lie where its descriptors say (in the donor's
 * region) and the second file's ids are moved.
 */
LP_TEST(concat_blob_descriptors_from_a_donor)
{
	LpType	   *types[2] = {NULL, descriptor_type()};
	LpSchema	schema = blob_schema();
	LpSchema	blobs = {3, &schema.fields[1], 0, NULL};
	LpError		err;
	uint64_t	sizes[3] = {0, 0, 0};
	uint8_t    *files[3] = {NULL, NULL, NULL};
	LpInput    *inputs[3];
	LpReencodeSource sources[2];
	LpConcatPart parts[2];
	const bool	replaced[2] = {false, true};
	LpConcatTarget target;
	LpConcatVerdict verdict;
	LpConcatPlan *plan = NULL;
	LpReencodeOptions options = {0};
	LpOutput   *output;
	const uint64_t rows = 40;
	uint64_t	written;
	uint64_t	len;

	LP_CHECK(lp_type_parse("int64", "memory.lance", "id", &types[0], &err));
	for (int k = 0; k < 2; k++)
	{
		files[k] = write_descriptors(LP_FILE_VERSION_2_3, rows, 16, types, &sizes[k], &err);
		LP_CHECK_MSG(files[k] != NULL, "%.300s", err.message);
		if (files[k] == NULL)
			return;
		inputs[k] = lp_memory_input_open(k == 0 ? "a.lance" : "b.lance", files[k], sizes[k]);
		sources[k] = (LpReencodeSource) {inputs[k], lp_file_open(inputs[k], &err), NULL, k == 0 ? 0 : 100};
		parts[k] = (LpConcatPart) {sources[k].file, true, rows};
	}
	target = (LpConcatTarget) {LP_FILE_VERSION_2_3, &sources[0].file->schema, true, replaced, NULL};
	LP_CHECK_MSG(lp_concat_plan(&target, parts, 2, &verdict, &plan, &err), "%.300s", err.message);
	LP_CHECK(plan != NULL && verdict.reason == LP_CONCAT_COMPATIBLE);
	if (plan == NULL)
		return;

	/* the donor: the descriptors of both files, Inline offsets from where the parts end */
	options.only_schema_fields = true;
	options.inline_offset = plan->tail.start;
	lp_concat_plan_free(plan);
	output = lp_memory_output_open("donor.lance");
	LP_CHECK_MSG(lp_reencode_files(sources, 2, &blobs, LP_FILE_VERSION_2_3, output, &options,
								   &written, &sizes[2], &err), "%.300s", err.message);
	files[2] = lp_memdup(lp_memory_output_data(output, &len), sizes[2]);
	output->ops->abort(output);
	inputs[2] = lp_memory_input_open("donor.lance", files[2], sizes[2]);
	target.donor = lp_file_open(inputs[2], &err);
	LP_CHECK_MSG(target.donor != NULL, "%.300s", err.message);
	LP_CHECK_MSG(lp_concat_plan(&target, parts, 2, &verdict, &plan, &err), "%.300s", err.message);
	output = lp_memory_output_open("merged.lance");
	LP_CHECK_MSG(plan != NULL && lp_concat_execute(plan, inputs, output, 1 << 16, &err), "%.300s", err.message);
	if (plan != NULL)
	{
		const uint8_t *bytes = lp_memory_output_data(output, &len);
		LpInput    *merged = lp_memory_input_open("merged.lance", bytes, plan->output_size);
		LpFile	   *file = lp_file_open(merged, &err);
		LpType	   *decoded_types[2] = {NULL, NULL};
		LpArray    *ids = NULL;
		LpArray    *decoded = NULL;

		LP_CHECK_MSG(file != NULL, "%.300s", err.message);
		LP_CHECK(file != NULL && lp_decode_field(merged, file, 0, &decoded_types[0], &ids, &err));
		LP_CHECK(file != NULL && lp_decode_field(merged, file, 1, &decoded_types[1], &decoded, &err));
		for (uint64_t j = 0; ids != NULL && decoded != NULL && j < 2 * rows; j++)
		{
			uint64_t	i = j % rows;

			LP_CHECK_EQ_U64(((const int64_t *) ids->values)[j], i);
			LP_CHECK_EQ_U64(lp_array_is_valid(decoded, j), i % ROW_SHAPES != 0);
			if (i % ROW_SHAPES == 2)
			{
				LP_CHECK(POSITION(decoded, j) >= plan->ranges[plan->num_ranges - 1].dest_offset);
				LP_CHECK(POSITION(decoded, j) + SIZE(decoded, j) <= plan->output_size);
				for (uint64_t b = 0; b < SIZE(decoded, j) && POSITION(decoded, j) + b < plan->output_size; b++)
					if (bytes[POSITION(decoded, j) + b] != (i & 0xff))
					{
						LP_CHECK_MSG(false, "inline payload of row %llu", (unsigned long long) j);
						break;
					}
			}
			else if (i % ROW_SHAPES == 3 || i % ROW_SHAPES == 4)
				LP_CHECK_EQ_U64(((const uint32_t *) decoded->children[3]->values)[j],
								i / 10 + 1 + (j < rows ? 0 : 100));
		}
		LP_CHECK(ids != NULL && ids->length == 2 * rows && decoded != NULL && decoded->length == 2 * rows);
		lp_array_free(ids);
		lp_array_free(decoded);
		lp_type_free(decoded_types[0]);
		lp_type_free(decoded_types[1]);
		lp_file_free(file);
		lp_input_close(merged);
	}
	output->ops->abort(output);
	lp_concat_plan_free(plan);
	lp_file_free((LpFile *) target.donor);
	for (int k = 0; k < 3; k++)
	{
		if (k < 2)
			lp_file_free((LpFile *) sources[k].file);
		lp_input_close(inputs[k]);
		lp_free(files[k]);
	}
	free(schema.fields);
	lp_type_free(types[0]);
	lp_type_free(types[1]);
}
