/*
 * fuzz_blob_descriptor.c - libFuzzer target for Blob v2 descriptors
 * (blob-v2.md §1): a (damaged) part file's descriptor columns decoded and
 * judged as registering a part judges them (src/pg/targets/lp_part_blobs.c:
 * lp_blob_schema_check, the field reader's takes in batches,
 * lp_blob_check_values under a lease, lp_blob_check_sidecars over a
 * sidecar directory whose files have sizes made up from their ids), and
 * every External descriptor's URI and range resolved as the foreign-data
 * wrapper resolves them before opening anything (lp_blob_external_location,
 * lp_blob_external_range).  An input that does not end with "LANC" is one
 * External descriptor instead: blob_id (u32), position, size and the
 * object's size (u64 each), then the URI.  A location given back has no
 * empty, "." or ".." segment and is of the form it is said to be; a range
 * given back lies inside the object.  Seeds: blob files of fuzz_decode and
 * the reference data, and descriptors in
 * test/fuzz/corpus/fuzz_blob_descriptor.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lp_fuzz.h"
#include "base/lp_alloc.h"
#include "dataset/lp_blob_external.h"
#include "dataset/lp_blob_validate.h"
#include "decode/lp_decode.h"
#include "format/lp_columns.h"
#include "format/lp_file.h"

#define BATCH_ROWS 64
#define EXTERNAL_HEADER 28

/* No empty, "." or ".." segment in path[0..) (segments separated by '/'). */
static void
check_segments(const char *path)
{
	const char *segment = path;

	for (;;)
	{
		const char *end = strchr(segment, '/');
		size_t		len = end ? (size_t) (end - segment) : strlen(segment);

		if (len == 0 || (len == 1 && segment[0] == '.') ||
			(len == 2 && segment[0] == '.' && segment[1] == '.'))
			abort();
		if (end == NULL)
			return;
		segment = end + 1;
	}
}

/* An External descriptor resolved as the foreign-data wrapper resolves it. */
static void
resolve_external(const char *uri, size_t len, uint32_t blob_id, uint64_t position, uint64_t size,
				 uint64_t object_size)
{
	LpBlobExternalForm form;
	char	   *location;
	uint64_t	offset;
	uint64_t	length;
	LpError		err;

	if (lp_blob_external_location(uri, len, blob_id, &form, &location, &err))
	{
		if (form == LP_BLOB_EXTERNAL_RELATIVE)
		{
			if (blob_id == 0 || location[0] == '/')
				abort();
			check_segments(location);
		}
		else if (form == LP_BLOB_EXTERNAL_LOCAL)
		{
			if (blob_id != 0 || location[0] != '/')
				abort();
			check_segments(location + 1);
		}
		else
		{
			if (blob_id != 0 || strncmp(location, "s3://", 5) != 0)
				abort();
			check_segments(location + 5);
		}
		lp_free(location);
	}
	else if (err.code != LP_ERR_CORRUPT && err.code != LP_ERR_UNSUPPORTED && err.code != LP_ERR_NO_MEMORY)
		abort();
	if (lp_blob_external_range(position, size, object_size, "fuzz object", &offset, &length, &err) &&
		(offset > object_size || length > object_size - offset || (size != 0 && length != size)))
		abort();
}

static uint64_t
fixed_value(const LpArray *array, uint64_t index, uint32_t width)
{
	uint64_t	value = 0;

	for (uint32_t b = 0; b < width; b++)
		value |= (uint64_t) array->values[index * width + b] << (8 * b);
	return value;
}

static const LpArray *
child(const LpArray *descriptors, const char *name, LpTypeId id)
{
	for (uint32_t c = 0; c < descriptors->num_children; c++)
		if (strcmp(descriptors->type->children[c]->name, name) == 0 &&
			descriptors->type->children[c]->id == id &&
			descriptors->children[c]->length >= descriptors->length)
			return descriptors->children[c];
	return NULL;
}

/* The External descriptors of a top-level blob column's rows. */
static void
resolve_column(const LpArray *descriptors)
{
	const LpArray *kind = child(descriptors, "kind", LP_TYPE_UINT8);
	const LpArray *position = child(descriptors, "position", LP_TYPE_UINT64);
	const LpArray *size = child(descriptors, "size", LP_TYPE_UINT64);
	const LpArray *blob_id = child(descriptors, "blob_id", LP_TYPE_UINT32);
	const LpArray *uri = child(descriptors, "blob_uri", LP_TYPE_STRING);

	if (descriptors->type->id != LP_TYPE_STRUCT || kind == NULL || position == NULL ||
		size == NULL || blob_id == NULL || uri == NULL)
		return;
	for (uint64_t i = 0; i < descriptors->length; i++)
	{
		/* no string bytes at all (every URI empty): no buffer either */
		const char *text = uri->data == NULL ? "" : (const char *) uri->data + uri->offsets[i];

		if (lp_array_is_valid(descriptors, i) && lp_array_is_valid(kind, i) &&
			kind->values[i] == LP_BLOB_EXTERNAL && lp_array_is_valid(uri, i))
			resolve_external(text, (size_t) (uri->offsets[i + 1] - uri->offsets[i]),
							 (uint32_t) fixed_value(blob_id, i, 4), fixed_value(position, i, 8),
							 fixed_value(size, i, 8), (uint64_t) 1 << 20);
	}
}

/* Sidecars of blob id n have n * 4099 % 2^20 bytes; every seventh is missing. */
static bool
sidecar_stat(LpStore *store, const char *path, bool follow_symlinks, LpStat *result, LpError *err)
{
	const char *name = strrchr(path, '/');
	uint64_t	id = 0;

	(void) store;
	(void) follow_symlinks;
	(void) err;
	for (const char *p = name ? name + 1 : path; *p >= '0' && *p <= '9'; p++)
		id = id * 10 + (uint64_t) (*p - '0');
	memset(result, 0, sizeof(*result));
	result->kind = id % 7 == 0 ? LP_OBJECT_ABSENT : LP_OBJECT_FILE;
	result->size = result->kind == LP_OBJECT_FILE ? id * 4099 % ((uint64_t) 1 << 20) : 0;
	return true;
}

static void
check_part(const uint8_t *data, size_t size)
{
	static const LpStoreOps sidecar_ops = {.stat = sidecar_stat};
	LpStore		sidecars = {&sidecar_ops};
	LpBlobLease lease = {1, 1 + (uint32_t) (size % 1000)};
	LpInput    *input = lp_memory_input_open("part.lance", data, size);
	LpFile	   *file;
	LpBlobCheck check;
	uint64_t	rows[BATCH_ROWS];
	uint32_t	num_v2;
	bool		ok = true;
	LpError		err;

	if (input == NULL)
		return;
	file = lp_file_open(input, &err);
	if (file == NULL || !lp_blob_schema_check(&file->schema, "part.lance", &num_v2, &err))
	{
		lp_file_free(file);
		lp_input_close(input);
		return;
	}
	lp_blob_check_init(&check, "part.lance", &lease);
	for (uint32_t f = 0; ok && f < file->schema.num_fields; f++)
	{
		LpFieldReader *reader;

		if (file->schema.fields[f].parent_id != -1 || file->schema.fields[f].id < 0 ||
			!lp_field_reader_open(input, file, f, &reader, &err))
			continue;
		for (uint64_t first = 0; ok && first < file->num_rows; first += BATCH_ROWS)
		{
			uint64_t	n = file->num_rows - first < BATCH_ROWS ? file->num_rows - first : BATCH_ROWS;
			LpArray    *values;

			for (uint64_t r = 0; r < n; r++)
				rows[r] = first + r;
			if (!lp_field_reader_take(reader, rows, n, &values, &err))
				break;
			ok = lp_blob_check_values(&check, &file->schema, values, first, &err);
			if (lp_field_is_blob_v2(&file->schema.fields[f]))
				resolve_column(values);
			lp_array_free(values);
		}
		lp_field_reader_close(reader);
	}
	if (ok)
		ok = lp_blob_check_sidecars(&check, &sidecars, "/t/data/x.lance.blobs", &err);
	if (ok)
		for (size_t i = 0; i < check.num_uses; i++)
			if (check.uses[i].blob_id < lease.start || check.uses[i].blob_id >= lease.end ||
				check.uses[i].needed > (uint64_t) check.uses[i].blob_id * 4099 % ((uint64_t) 1 << 20))
				abort();
	lp_blob_check_free(&check);
	lp_file_free(file);
	lp_input_close(input);
}

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	lp_fuzz_use_bounded_allocator();
	if (size >= 4 && memcmp(data + size - 4, "LANC", 4) == 0)
		check_part(data, size);
	else if (size >= EXTERNAL_HEADER)
		resolve_external((const char *) data + EXTERNAL_HEADER, size - EXTERNAL_HEADER,
						 lp_fuzz_u32(data), lp_fuzz_u64(data + 4), lp_fuzz_u64(data + 12),
						 lp_fuzz_u64(data + 20));
	return 0;
}
