/*
 * lp_blob_validate.c - the validator of a part's Blob v2 columns
 * (blob-v2.md §4, plus the sidecar check Lance does not make).
 */
#include "dataset/lp_blob_validate.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/lp_alloc.h"
#include "base/lp_bytes.h"
#include "base/lp_checked.h"
#include "base/lp_path.h"
#include "dataset/lp_dataset.h"
#include "format/lp_columns.h"

void
lp_blob_check_init(LpBlobCheck *check, const char *file_name, const LpBlobLease *lease)
{
	memset(check, 0, sizeof(*check));
	check->file_name = file_name;
	check->lease = lease;
}

void
lp_blob_check_init_data_file(LpBlobCheck *check, const char *file_name, uint64_t file_size)
{
	lp_blob_check_init(check, file_name, NULL);
	check->file_size = file_size;
}

void
lp_blob_check_free(LpBlobCheck *check)
{
	lp_free(check->uses);
	check->uses = NULL;
	check->num_uses = check->capacity = 0;
}

bool
lp_blob_lease_validate(const LpBlobLease *lease, const char *file_name, LpError *err)
{
	if (lease->start < 1 || lease->end <= lease->start)
	{
		lp_fail(err, LP_ERR_INVALID_ARGUMENT,
				"blob id lease [%" PRIu32 ", %" PRIu32 ") of part \"%s\" is not a non-empty range starting at 1 or above",
				lease->start, lease->end, file_name);
		lp_error_detail(err, "Blob id 0 is reserved; lease ids with lance_parts.lease_blob_ids.");
		return false;
	}
	return true;
}

bool
lp_blob_lease_claimed(const LpBlobLease *claimed, uint64_t num_claimed, const LpBlobLease *lease)
{
	/* ids [lease.start, covered) are claimed; extend while a claim continues the run */
	uint64_t	covered = lease->start;
	bool		extended = true;

	if (lease->end <= lease->start)
		return false;
	while (covered < lease->end && extended)
	{
		extended = false;
		for (uint64_t i = 0; i < num_claimed; i++)
		{
			if (claimed[i].start <= covered && claimed[i].end > covered)
			{
				covered = claimed[i].end;
				extended = true;
			}
		}
	}
	return covered >= lease->end;
}

bool
lp_blob_leases_overlap(const LpBlobLease *a, const LpBlobLease *b)
{
	return a->start < b->end && b->start < a->end;
}

bool
lp_blob_schema_check(const LpSchema *schema, const char *file_name, uint32_t *num_v2,
					 LpError *err)
{
	*num_v2 = 0;
	for (uint32_t i = 0; i < schema->num_fields; i++)
	{
		const LpField *field = &schema->fields[i];

		if (!lp_field_is_blob(field))
			continue;
		if (!lp_field_is_blob_v2(field))
		{
			lp_fail(err, LP_ERR_UNSUPPORTED,
					"column \"%s\" of part \"%s\" is a legacy (v1) blob column", field->name, file_name);
			lp_error_detail(err, "Legacy blob payloads lie at offsets of the part file itself, which concatenation moves; only Blob v2 columns can be assembled.");
			return false;
		}
		(*num_v2)++;
	}
	return true;
}

/* What a check's file is, for messages. */
static const char *
blob_file_noun(const LpBlobCheck *check)
{
	return check->file_size > 0 ? "data file" : "part";
}

static const LpArray *
descriptor_child(const LpBlobCheck *check, const LpArray *descriptors, const char *name,
				 LpTypeId id, LpError *err)
{
	for (uint32_t c = 0; c < descriptors->num_children; c++)
	{
		const LpType *type = descriptors->type->children[c];

		if (strcmp(type->name, name) == 0 && type->id == id &&
			descriptors->children[c]->length >= descriptors->length)
			return descriptors->children[c];
	}
	lp_fail(err, LP_ERR_CORRUPT, "blob descriptors of column \"%s\" of %s \"%s\" have no %s field \"%s\"",
			descriptors->type->name, blob_file_noun(check), check->file_name, lp_type_id_name(id), name);
	return NULL;
}

static uint64_t
fixed_value(const LpArray *array, uint64_t index, uint32_t width)
{
	return lp_le_bytes(array->values + index * width, width);
}

static bool
add_use(LpBlobCheck *check, uint32_t blob_id, uint64_t needed, uint64_t row,
		const char *column, LpError *err)
{
	if (check->num_uses == check->capacity)
	{
		size_t		capacity = check->capacity == 0 ? 64 : check->capacity * 2;
		LpBlobSidecarUse *uses = lp_alloc_array(capacity, sizeof(LpBlobSidecarUse));

		if (uses == NULL)
			return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
		if (check->num_uses > 0)
			memcpy(uses, check->uses, check->num_uses * sizeof(LpBlobSidecarUse));
		lp_free(check->uses);
		check->uses = uses;
		check->capacity = capacity;
	}
	check->uses[check->num_uses].blob_id = blob_id;
	check->uses[check->num_uses].needed = needed;
	check->uses[check->num_uses].row = row;
	check->uses[check->num_uses].column = column;
	check->num_uses++;
	return true;
}

/* Descriptor index of a blob column, top-level row row. */
static bool
check_descriptor(LpBlobCheck *check, const LpArray *descriptors, const char *column,
				 uint64_t index, uint64_t row, LpError *err)
{
	const LpArray *kind = descriptor_child(check, descriptors, "kind", LP_TYPE_UINT8, err);
	const LpArray *position = kind ? descriptor_child(check, descriptors, "position", LP_TYPE_UINT64, err) : NULL;
	const LpArray *size = position ? descriptor_child(check, descriptors, "size", LP_TYPE_UINT64, err) : NULL;
	const LpArray *blob_id = size ? descriptor_child(check, descriptors, "blob_id", LP_TYPE_UINT32, err) : NULL;
	uint64_t	kind_value;
	uint64_t	offset;
	uint64_t	length;
	uint64_t	id;
	uint64_t	needed;

	if (blob_id == NULL)
		return false;
	/* null on the outer struct (current writers) or on kind */
	if (!lp_array_is_valid(descriptors, index) || !lp_array_is_valid(kind, index))
		return true;
	kind_value = kind->values[index];
	offset = fixed_value(position, index, 8);
	length = fixed_value(size, index, 8);
	id = fixed_value(blob_id, index, 4);
	switch (kind_value)
	{
		case LP_BLOB_INLINE:
			if (length == 0)
				return true;
			if (check->file_size > 0)
			{
				if (offset <= check->file_size && length <= check->file_size - offset)
					return true;
				return lp_fail(err, LP_ERR_CORRUPT,
							   "inline blob of row %" PRIu64 " of column \"%s\" of %s \"%s\" lies at [%" PRIu64 ", %" PRIu64 "), outside the file's %" PRIu64 " bytes",
							   row, column, blob_file_noun(check), check->file_name, offset,
							   offset + length, check->file_size);
			}
			lp_fail(err, LP_ERR_INVALID_ARGUMENT,
					"blob descriptor of row %" PRIu64 " of column \"%s\" of %s \"%s\" stores %" PRIu64 " bytes inline",
					row, column, blob_file_noun(check), check->file_name, length);
			lp_error_detail(err, "Inline payloads lie at offsets of the part file itself, which assembly moves; a part requires Packed or Dedicated storage for every non-empty payload.");
			return false;
		case LP_BLOB_EXTERNAL:
			return true;
		case LP_BLOB_PACKED:
		case LP_BLOB_DEDICATED:
			break;
		case LP_BLOB_MANAGED:
			return lp_fail(err, LP_ERR_UNSUPPORTED,
						   "blob descriptor of row %" PRIu64 " of column \"%s\" of %s \"%s\" is a Managed descriptor (kind 4), which lance_parts does not assemble",
						   row, column, blob_file_noun(check), check->file_name);
		default:
			return lp_fail(err, LP_ERR_CORRUPT,
						   "blob descriptor of row %" PRIu64 " of column \"%s\" of %s \"%s\" has unknown kind %" PRIu64,
						   row, column, blob_file_noun(check), check->file_name, kind_value);
	}
	if (kind_value == LP_BLOB_DEDICATED && offset != 0)
	{
		lp_fail(err, LP_ERR_CORRUPT,
				"dedicated blob descriptor of row %" PRIu64 " of column \"%s\" of %s \"%s\" has position %" PRIu64,
				row, column, blob_file_noun(check), check->file_name, offset);
		lp_error_detail(err, "A dedicated sidecar holds one payload from position 0.");
		return false;
	}
	if (id == 0)
		return lp_fail(err, LP_ERR_CORRUPT,
					   "blob descriptor of row %" PRIu64 " of column \"%s\" of %s \"%s\" names sidecar id 0",
					   row, column, blob_file_noun(check), check->file_name);
	if (check->lease != NULL && (id < check->lease->start || id >= check->lease->end))
	{
		lp_fail(err, LP_ERR_INVALID_ARGUMENT,
				"blob descriptor of row %" PRIu64 " of column \"%s\" of %s \"%s\" names blob id %" PRIu64 ", outside the part's lease [%" PRIu32 ", %" PRIu32 ")",
				row, column, blob_file_noun(check), check->file_name, id, check->lease->start, check->lease->end);
		lp_error_detail(err, "A part writes its sidecars under the blob ids of its own lease only.");
		return false;
	}
	if (!lp_add_u64(offset, length, &needed))
		return lp_fail(err, LP_ERR_CORRUPT,
					   "blob descriptor of row %" PRIu64 " of column \"%s\" of %s \"%s\" has a range past 2^64",
					   row, column, blob_file_noun(check), check->file_name);
	return add_use(check, (uint32_t) id, needed, row, column, err);
}

/*
 * Element index of values (whose elements belong to top-level row row),
 * the blob columns inside it.
 */
static bool
check_element(LpBlobCheck *check, const LpSchema *schema, const LpArray *values,
			  uint64_t index, uint64_t row, LpError *err)
{
	const LpType *type = values->type;

	if (index >= values->length)
		return lp_fail(err, LP_ERR_CORRUPT, "decoded values of column \"%s\" of %s \"%s\" are shorter than their parent",
					   type->name, blob_file_noun(check), check->file_name);
	if (!lp_array_is_valid(values, index))
		return true;
	switch (type->id)
	{
		case LP_TYPE_STRUCT:
			{
				int64_t		field = type->field_id >= 0 ? lp_schema_find_field(schema, type->field_id) : -1;

				if (field >= 0 && lp_field_is_blob_v2(&schema->fields[field]))
					/* the schema's name: the decoded arrays are freed before the sidecars are checked */
					return check_descriptor(check, values, schema->fields[field].name, index, row,
											err);
				for (uint32_t c = 0; c < values->num_children; c++)
				{
					if (!check_element(check, schema, values->children[c], index, row, err))
						return false;
				}
				return true;
			}
		case LP_TYPE_LIST:
		case LP_TYPE_LARGE_LIST:
			if (values->num_children != 1 || values->offsets == NULL ||
				values->offsets[index] > values->offsets[index + 1])
				return lp_fail(err, LP_ERR_CORRUPT, "decoded list of column \"%s\" of %s \"%s\" has bad offsets",
							   type->name, blob_file_noun(check), check->file_name);
			for (uint64_t i = values->offsets[index]; i < values->offsets[index + 1]; i++)
			{
				if (!check_element(check, schema, values->children[0], i, row, err))
					return false;
			}
			return true;
		case LP_TYPE_FIXED_SIZE_LIST:
			{
				uint64_t	first;

				if (values->num_children != 1 || type->fixed_size < 0 ||
					!lp_mul_u64(index, (uint64_t) type->fixed_size, &first))
					return lp_fail(err, LP_ERR_CORRUPT, "decoded list of column \"%s\" of %s \"%s\" is malformed",
								   type->name, blob_file_noun(check), check->file_name);
				for (uint64_t i = 0; i < (uint64_t) type->fixed_size; i++)
				{
					if (!check_element(check, schema, values->children[0], first + i, row, err))
						return false;
				}
				return true;
			}
		default:
			return true;
	}
}

/* Whether a type holds a struct (perhaps a blob column) anywhere. */
static bool
holds_struct(const LpType *type)
{
	if (type->id == LP_TYPE_STRUCT)
		return true;
	for (uint32_t c = 0; c < type->num_children; c++)
	{
		if (holds_struct(type->children[c]))
			return true;
	}
	return false;
}

bool
lp_blob_check_values(LpBlobCheck *check, const LpSchema *schema, const LpArray *values,
					 uint64_t first_row, LpError *err)
{
	if (!holds_struct(values->type))
		return true;
	for (uint64_t i = 0; i < values->length; i++)
	{
		if (!check_element(check, schema, values, i, first_row + i, err))
			return false;
	}
	return true;
}

static int
compare_uses(const void *a, const void *b)
{
	const LpBlobSidecarUse *x = a;
	const LpBlobSidecarUse *y = b;

	if (x->blob_id != y->blob_id)
		return x->blob_id < y->blob_id ? -1 : 1;
	/* the largest need of an id first, so merging keeps its row */
	return x->needed > y->needed ? -1 : x->needed < y->needed;
}

bool
lp_blob_check_sidecars(LpBlobCheck *check, LpStore *store, const char *sidecar_dir,
					   LpError *err)
{
	size_t		merged = 0;

	if (check->num_uses == 0)
		return true;
	qsort(check->uses, check->num_uses, sizeof(LpBlobSidecarUse), compare_uses);
	for (size_t i = 0; i < check->num_uses; i++)
	{
		if (merged > 0 && check->uses[merged - 1].blob_id == check->uses[i].blob_id)
			continue;
		check->uses[merged++] = check->uses[i];
	}
	check->num_uses = merged;

	for (size_t i = 0; i < check->num_uses; i++)
	{
		const LpBlobSidecarUse *use = &check->uses[i];
		char		name[LP_BLOB_FILE_NAME_SIZE];
		char	   *path;
		LpStat		stat;
		bool		ok;

		lp_blob_sidecar_file_name(use->blob_id, name);
		path = lp_path_join(sidecar_dir, name);
		if (path == NULL)
			return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
		/* a symlink is not a sidecar: readers of the dataset must find the file itself */
		ok = store->ops->stat(store, path, false, &stat, err);
		if (ok && stat.kind != LP_OBJECT_FILE)
		{
			lp_fail(err, LP_ERR_NOT_FOUND,
					"sidecar \"%s\" of blob id %" PRIu32 ", named by row %" PRIu64 " of column \"%s\" of %s \"%s\", is not a file in the %s sidecar directory",
					path, use->blob_id, use->row, use->column, blob_file_noun(check), check->file_name,
					check->file_size > 0 ? "data file's" : "target's");
			if (check->file_size == 0)
				lp_error_detail(err, "Write the part's payloads with lance_parts.write_packed_blobs or write_dedicated_blob for the same target before registering it.");
			ok = false;
		}
		else if (ok && stat.size < use->needed)
		{
			lp_fail(err, LP_ERR_CORRUPT,
					"sidecar \"%s\" of blob id %" PRIu32 " has %" PRIu64 " bytes, but row %" PRIu64 " of column \"%s\" of %s \"%s\" reads up to byte %" PRIu64,
					path, use->blob_id, stat.size, use->row, use->column, blob_file_noun(check), check->file_name, use->needed);
			ok = false;
		}
		lp_free(path);
		if (!ok)
			return false;
	}
	return true;
}
