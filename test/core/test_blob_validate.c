/*
 * test_blob_validate.c - lp_blob_validate: every rule of the part validator
 * on descriptor arrays built in memory (leases, legacy blob columns, Inline,
 * Packed, Dedicated, External, Managed and unknown kinds, validity through
 * structs and lists), and the sidecar check against files on disk.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/lp_alloc.h"
#include "base/lp_path.h"
#include "dataset/lp_blob_validate.h"
#include "dataset/lp_dataset.h"
#include "lp_test.h"
#include "lp_test_files.h"
#include "lp_test_store.h"

#define PART "part.lance"

/* One descriptor: kind, position, size, blob id; valid false for a null descriptor. */
typedef struct Desc
{
	uint8_t		kind;
	uint64_t	position;
	uint64_t	size;
	uint32_t	blob_id;
	bool		valid;
	bool		kind_valid;
} Desc;

#define D(k, p, s, id) {k, p, s, id, true, true}

static LpType kind_type = {.id = LP_TYPE_UINT8, .name = "kind", .field_id = -1};
static LpType position_type = {.id = LP_TYPE_UINT64, .name = "position", .field_id = -1};
static LpType size_type = {.id = LP_TYPE_UINT64, .name = "size", .field_id = -1};
static LpType blob_id_type = {.id = LP_TYPE_UINT32, .name = "blob_id", .field_id = -1};
static LpType *descriptor_children[] = {&kind_type, &position_type, &size_type, &blob_id_type};
/* field id 1: the blob column of the schemas below */
static LpType descriptor_type = {.id = LP_TYPE_STRUCT, .name = "payload", .packed = true,
.field_id = 1, .num_children = 4, .children = descriptor_children};

static uint8_t *
bitmap(size_t n, const bool *valid)
{
	uint8_t    *bits = lp_alloc0((n + 7) / 8 + 1);

	for (size_t i = 0; i < n; i++)
		if (valid[i])
			bits[i / 8] |= (uint8_t) (1 << (i % 8));
	return bits;
}

static LpArray *
fixed_array(const LpType *type, size_t n, uint32_t width, const uint64_t *values)
{
	LpArray    *array = lp_alloc0(sizeof(LpArray));

	array->type = type;
	array->length = n;
	array->values = lp_alloc0(n * width + 1);
	for (size_t i = 0; i < n; i++)
		for (uint32_t b = 0; b < width; b++)
			array->values[i * width + b] = (uint8_t) (values[i] >> (8 * b));
	return array;
}

static LpArray *
descriptors(const Desc *d, size_t n)
{
	LpArray    *array = lp_alloc0(sizeof(LpArray));
	uint64_t	values[4][16];
	bool		valid[16];
	bool		kind_valid[16];

	for (size_t i = 0; i < n; i++)
	{
		values[0][i] = d[i].kind;
		values[1][i] = d[i].position;
		values[2][i] = d[i].size;
		values[3][i] = d[i].blob_id;
		valid[i] = d[i].valid;
		kind_valid[i] = d[i].kind_valid;
	}
	array->type = &descriptor_type;
	array->length = n;
	array->validity = bitmap(n, valid);
	array->num_children = 4;
	array->children = lp_alloc_array(4, sizeof(LpArray *));
	array->children[0] = fixed_array(&kind_type, n, 1, values[0]);
	array->children[0]->validity = bitmap(n, kind_valid);
	array->children[1] = fixed_array(&position_type, n, 8, values[1]);
	array->children[2] = fixed_array(&size_type, n, 8, values[2]);
	array->children[3] = fixed_array(&blob_id_type, n, 4, values[3]);
	return array;
}

static LpKeyValue blob_metadata[] = {
	{"lance-encoding:blob", {(uint8_t *) "true", 4}},
	{"lance-encoding:packed", {(uint8_t *) "true", 4}},
};

/* the footer form of lance-format.md §6.5: list<payload> at id 0, payload at id 1 */
static LpField footer_fields[] = {
	{.id = 0, .parent_id = -1, .name = "items", .logical_type = "list", .nullable = true},
	{.id = 1, .parent_id = 0, .name = "payload", .logical_type = "struct", .nullable = true,
	.num_metadata = 2, .metadata = blob_metadata},
};
static const LpSchema footer_schema = {.num_fields = 2, .fields = footer_fields};

static bool
check_one(const Desc *d, size_t n, const LpBlobLease *lease, LpError *err)
{
	LpBlobCheck check;
	LpArray    *array = descriptors(d, n);
	bool		ok;

	lp_blob_check_init(&check, PART, lease);
	ok = lp_blob_check_values(&check, &footer_schema, array, 0, err);
	lp_blob_check_free(&check);
	lp_array_free(array);
	return ok;
}

LP_TEST(blob_validate_lease_is_nonempty_from_one)
{
	LpBlobLease zero = {0, 5};
	LpBlobLease empty = {3, 3};
	LpBlobLease backwards = {5, 3};
	LpBlobLease good = {1, 2};
	LpError		err;

	LP_CHECK(!lp_blob_lease_validate(&zero, PART, &err));
	LP_CHECK_EQ_U64(err.code, LP_ERR_INVALID_ARGUMENT);
	LP_CHECK(strstr(err.message, PART) != NULL);
	LP_CHECK(!lp_blob_lease_validate(&empty, PART, &err));
	LP_CHECK(!lp_blob_lease_validate(&backwards, PART, &err));
	LP_CHECK(lp_blob_lease_validate(&good, PART, &err));
}

LP_TEST(blob_validate_lease_lies_in_claimed_leases)
{
	LpBlobLease claimed[] = {{3, 10}, {1, 3}, {20, 30}};
	LpBlobLease spanning = {2, 8};
	LpBlobLease past = {5, 12};
	LpBlobLease in_gap = {10, 20};
	LpBlobLease later = {21, 30};

	LP_CHECK(lp_blob_lease_claimed(claimed, 3, &spanning));
	LP_CHECK(!lp_blob_lease_claimed(claimed, 3, &past));
	LP_CHECK(!lp_blob_lease_claimed(claimed, 3, &in_gap));
	LP_CHECK(lp_blob_lease_claimed(claimed, 3, &later));
	LP_CHECK(!lp_blob_lease_claimed(claimed, 0, &spanning));
}

LP_TEST(blob_validate_leases_overlap)
{
	LpBlobLease a = {1, 5};
	LpBlobLease b = {5, 9};
	LpBlobLease c = {4, 6};

	LP_CHECK(!lp_blob_leases_overlap(&a, &b));
	LP_CHECK(lp_blob_leases_overlap(&a, &c));
	LP_CHECK(lp_blob_leases_overlap(&c, &b));
}

LP_TEST(blob_validate_legacy_blob_columns_refused)
{
	LpField		legacy[] = {
		{.id = 0, .parent_id = -1, .name = "old", .logical_type = "large_binary",
		.num_metadata = 1, .metadata = blob_metadata},
	};
	LpField		manifest[] = {
		{.id = 0, .parent_id = -1, .name = "payload", .logical_type = "struct",
		.extension_name = "lance.blob.v2"},
	};
	LpSchema	legacy_schema = {.num_fields = 1, .fields = legacy};
	LpSchema	manifest_schema = {.num_fields = 1, .fields = manifest};
	uint32_t	num_v2;
	LpError		err;

	LP_CHECK(!lp_blob_schema_check(&legacy_schema, PART, &num_v2, &err));
	LP_CHECK_EQ_U64(err.code, LP_ERR_UNSUPPORTED);
	LP_CHECK(strstr(err.message, "\"old\"") != NULL);
	LP_CHECK(lp_blob_schema_check(&footer_schema, PART, &num_v2, &err));
	LP_CHECK_EQ_U64(num_v2, 1);
	LP_CHECK(lp_blob_schema_check(&manifest_schema, PART, &num_v2, &err));
	LP_CHECK_EQ_U64(num_v2, 1);
}

LP_TEST(blob_validate_inline_only_when_empty)
{
	LpBlobLease lease = {1, 10};
	Desc		empty[] = {D(LP_BLOB_INLINE, 4096, 0, 0), D(LP_BLOB_EXTERNAL, 7, 100, 0)};
	Desc		full[] = {D(LP_BLOB_INLINE, 0, 0, 0), D(LP_BLOB_INLINE, 0, 12, 0)};
	LpError		err;

	LP_CHECK(check_one(empty, 2, &lease, &err));
	LP_CHECK(!check_one(full, 2, &lease, &err));
	LP_CHECK_EQ_U64(err.code, LP_ERR_INVALID_ARGUMENT);
	LP_CHECK(strstr(err.message, "row 1 of column \"payload\" of part \"" PART "\"") != NULL);
}

/* A complete data file (compaction): Inline payloads inside the file pass, outside it are corrupt. */
LP_TEST(blob_validate_data_file_inline_inside_the_file)
{
	Desc		inside[] = {D(LP_BLOB_INLINE, 0, 12, 0), D(LP_BLOB_INLINE, 988, 12, 0),
	D(LP_BLOB_PACKED, 5, 10, 7)};
	Desc		outside[] = {D(LP_BLOB_INLINE, 0, 12, 0), D(LP_BLOB_INLINE, 989, 12, 0)};
	LpBlobCheck check;
	LpArray    *array;
	LpError		err;

	lp_blob_check_init_data_file(&check, PART, 1000);
	array = descriptors(inside, 3);
	LP_CHECK_MSG(lp_blob_check_values(&check, &footer_schema, array, 0, &err), "%.300s", err.message);
	LP_CHECK_EQ_U64(check.num_uses, 1);
	lp_array_free(array);
	array = descriptors(outside, 2);
	LP_CHECK(!lp_blob_check_values(&check, &footer_schema, array, 0, &err));
	LP_CHECK_EQ_U64(err.code, LP_ERR_CORRUPT);
	LP_CHECK_MSG(strstr(err.message, "row 1 of column \"payload\" of data file \"" PART "\" lies at [989, 1001)") != NULL,
				 "%.300s", err.message);
	lp_array_free(array);
	lp_blob_check_free(&check);
}

LP_TEST(blob_validate_ids_inside_the_lease)
{
	LpBlobLease lease = {3, 5};
	Desc		inside[] = {D(LP_BLOB_PACKED, 0, 10, 3), D(LP_BLOB_PACKED, 10, 5, 3), D(LP_BLOB_DEDICATED, 0, 9, 4)};
	Desc		packed_below[] = {D(LP_BLOB_PACKED, 0, 10, 2)};
	Desc		dedicated_at_end[] = {D(LP_BLOB_DEDICATED, 0, 10, 5)};
	Desc		zero[] = {D(LP_BLOB_PACKED, 0, 10, 0)};
	LpError		err;

	LP_CHECK(check_one(inside, 3, &lease, &err));
	LP_CHECK(!check_one(packed_below, 1, &lease, &err));
	LP_CHECK_EQ_U64(err.code, LP_ERR_INVALID_ARGUMENT);
	LP_CHECK(strstr(err.message, "blob id 2, outside the part's lease [3, 5)") != NULL);
	LP_CHECK(!check_one(dedicated_at_end, 1, &lease, &err));
	LP_CHECK_EQ_U64(err.code, LP_ERR_INVALID_ARGUMENT);
	LP_CHECK(!check_one(zero, 1, &lease, &err));
	LP_CHECK_EQ_U64(err.code, LP_ERR_CORRUPT);
	/* without a lease (an assembled file) ids are not checked against one */
	LP_CHECK(check_one(packed_below, 1, NULL, &err));
}

LP_TEST(blob_validate_dedicated_at_position_zero)
{
	LpBlobLease lease = {1, 10};
	Desc		moved[] = {D(LP_BLOB_DEDICATED, 0, 5, 1), D(LP_BLOB_DEDICATED, 8, 5, 2)};
	LpError		err;

	LP_CHECK(!check_one(moved, 2, &lease, &err));
	LP_CHECK_EQ_U64(err.code, LP_ERR_CORRUPT);
	LP_CHECK(strstr(err.message, "row 1") != NULL && strstr(err.message, "position 8") != NULL);
}

LP_TEST(blob_validate_unknown_kinds_refused)
{
	LpBlobLease lease = {1, 10};
	Desc		managed[] = {D(LP_BLOB_MANAGED, 0, 5, 1)};
	Desc		unknown[] = {D(7, 0, 5, 1)};
	LpError		err;

	LP_CHECK(!check_one(managed, 1, &lease, &err));
	LP_CHECK_EQ_U64(err.code, LP_ERR_UNSUPPORTED);
	LP_CHECK(strstr(err.message, "Managed") != NULL);
	LP_CHECK(!check_one(unknown, 1, &lease, &err));
	LP_CHECK_EQ_U64(err.code, LP_ERR_CORRUPT);
	LP_CHECK(strstr(err.message, "unknown kind 7") != NULL);
}

LP_TEST(blob_validate_nulls_carry_no_payload)
{
	LpBlobLease lease = {1, 10};
	/* whatever a null descriptor or a null kind holds is not a payload */
	Desc		nulls[] = {{LP_BLOB_INLINE, 0, 99, 0, false, true}, {7, 0, 99, 50, true, false},
	D(LP_BLOB_PACKED, 0, 1, 1)};
	LpError		err;

	LP_CHECK(check_one(nulls, 3, &lease, &err));
}

/* list<payload>: rows 0 (two items, the bad one under a null list in row 1), 1 (null), 2 (bad) */
LP_TEST(blob_validate_through_lists_honouring_validity)
{
	LpBlobLease lease = {1, 10};
	Desc		items[] = {D(LP_BLOB_PACKED, 0, 3, 1), D(LP_BLOB_PACKED, 3, 3, 1),
	D(LP_BLOB_MANAGED, 0, 1, 1), D(LP_BLOB_DEDICATED, 4, 1, 2)};
	LpType	   *list_children[] = {&descriptor_type};
	LpType		list_type = {.id = LP_TYPE_LIST, .name = "items", .field_id = 0,
	.num_children = 1, .children = list_children};
	LpArray    *list = lp_alloc0(sizeof(LpArray));
	bool		valid[] = {true, false, true};
	uint64_t	offsets[] = {0, 2, 3, 4};
	LpBlobCheck check;
	LpError		err;

	list->type = &list_type;
	list->length = 3;
	list->validity = bitmap(3, valid);
	list->offsets = lp_memdup(offsets, sizeof(offsets));
	list->num_children = 1;
	list->children = lp_alloc_array(1, sizeof(LpArray *));
	list->children[0] = descriptors(items, 4);

	lp_blob_check_init(&check, PART, &lease);
	LP_CHECK(!lp_blob_check_values(&check, &footer_schema, list, 100, &err));
	LP_CHECK_EQ_U64(err.code, LP_ERR_CORRUPT);
	/* the top-level row, counted from first_row */
	LP_CHECK(strstr(err.message, "row 102 ") != NULL);
	LP_CHECK_EQ_U64(check.num_uses, 2);
	lp_blob_check_free(&check);

	/* without the last row every descriptor the lists show passes */
	list->length = 2;
	lp_blob_check_init(&check, PART, &lease);
	LP_CHECK(lp_blob_check_values(&check, &footer_schema, list, 0, &err));
	LP_CHECK_EQ_U64(check.num_uses, 2);
	lp_blob_check_free(&check);
	lp_array_free(list);
}

static void
write_sidecar(const char *dir, uint32_t blob_id, size_t size)
{
	char		name[LP_BLOB_FILE_NAME_SIZE];
	char	   *path;
	FILE	   *f;

	lp_blob_sidecar_file_name(blob_id, name);
	path = lp_path_join(dir, name);
	f = fopen(path, "wb");
	LP_CHECK(f != NULL);
	for (size_t i = 0; f != NULL && i < size; i++)
		fputc('x', f);
	if (f != NULL)
		fclose(f);
	lp_free(path);
}

static bool
check_sidecars(const char *dir, const Desc *d, size_t n, LpError *err)
{
	LpBlobLease lease = {1, 10};
	LpBlobCheck check;
	LpArray    *array = descriptors(d, n);
	bool		ok;

	lp_blob_check_init(&check, PART, &lease);
	ok = lp_blob_check_values(&check, &footer_schema, array, 0, err) &&
		lp_blob_check_sidecars(&check, lp_test_store(), dir, err);
	lp_blob_check_free(&check);
	lp_array_free(array);
	return ok;
}

LP_TEST(blob_validate_sidecars_exist_and_are_long_enough)
{
	const char *dir = lp_test_make_temp_dir();
	Desc		fits[] = {D(LP_BLOB_PACKED, 0, 10, 1), D(LP_BLOB_PACKED, 10, 20, 1), D(LP_BLOB_DEDICATED, 0, 7, 2)};
	Desc		past_end[] = {D(LP_BLOB_PACKED, 10, 20, 1), D(LP_BLOB_PACKED, 25, 6, 1)};
	Desc		missing[] = {D(LP_BLOB_DEDICATED, 0, 1, 3)};
	Desc		linked[] = {D(LP_BLOB_DEDICATED, 0, 1, 4)};
	char		name[LP_BLOB_FILE_NAME_SIZE];
	char		target[LP_BLOB_FILE_NAME_SIZE];
	char	   *link_path;
	char	   *target_path;
	LpError		err;

	write_sidecar(dir, 1, 30);
	write_sidecar(dir, 2, 7);
	LP_CHECK(check_sidecars(dir, fits, 3, &err));
	LP_CHECK(!check_sidecars(dir, past_end, 2, &err));
	LP_CHECK_EQ_U64(err.code, LP_ERR_CORRUPT);
	LP_CHECK(strstr(err.message, "has 30 bytes") != NULL && strstr(err.message, "row 1 ") != NULL &&
			 strstr(err.message, "up to byte 31") != NULL);
	LP_CHECK(!check_sidecars(dir, missing, 1, &err));
	LP_CHECK_EQ_U64(err.code, LP_ERR_NOT_FOUND);

	/* a symlink to a long enough sidecar is not the sidecar */
	lp_blob_sidecar_file_name(4, name);
	lp_blob_sidecar_file_name(1, target);
	link_path = lp_path_join(dir, name);
	target_path = lp_path_join(dir, target);
	LP_CHECK(symlink(target_path, link_path) == 0);
	LP_CHECK(!check_sidecars(dir, linked, 1, &err));
	LP_CHECK_EQ_U64(err.code, LP_ERR_NOT_FOUND);
	lp_free(link_path);
	lp_free(target_path);
}
