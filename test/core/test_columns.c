/*
 * test_columns.c - the one field-to-physical-column rule (lp_columns.h), on
 * schema shapes the reference data does not cover.
 */
#include "base/lp_alloc.h"
#include "format/lp_columns.h"
#include "lp_test.h"

static LpKeyValue blob_metadata[2] = {
	{"lance-encoding:blob", {(uint8_t *) "true", 4}},
	{"lance-encoding:packed", {(uint8_t *) "true", 4}},
};

static LpKeyValue packed_upper_case[1] = {
	{"packed", {(uint8_t *) "TRUE", 4}},
};

static LpField
field(int32_t id, int32_t parent_id, const char *name, const char *logical_type)
{
	LpField		f = {0};

	f.id = id;
	f.parent_id = parent_id;
	f.name = (char *) name;
	f.logical_type = (char *) logical_type;
	return f;
}

/* field_index of each physical column, -1 after the last; false on error. */
static bool
columns_of(LpFileVersion version, LpField *fields, uint32_t num_fields, int32_t *out,
		   uint32_t max)
{
	LpSchema	schema = {num_fields, fields, 0, NULL};
	LpPhysicalColumn *columns;
	uint32_t	n;
	LpError		err;

	if (!lp_schema_physical_columns(version, &schema, &columns, &n, &err))
		return false;
	for (uint32_t i = 0; i < max; i++)
		out[i] = i < n ? (int32_t) columns[i].field_index : -1;
	lp_free(columns);
	return n < max;
}

/*
 * lance-format.md §6.5: in a file footer a blob v2 field has no children and
 * is followed by pseudo-fields with id -1 and parent -1.  They own no column
 * and the next real field is top level again.
 */
LP_TEST(columns_blob_v2_footer_pseudo_fields)
{
	LpField		fields[8];
	int32_t		got[8];
	LpFile		file = {0};
	uint32_t	first = 0;
	LpError		err;

	fields[0] = field(0, -1, "id", "int64");
	fields[1] = field(1, -1, "payload", "struct");
	fields[1].num_metadata = 2;
	fields[1].metadata = blob_metadata;
	fields[2] = field(-1, -1, "kind", "uint8");
	fields[3] = field(-1, -1, "position", "uint64");
	fields[4] = field(-1, -1, "size", "uint64");
	fields[5] = field(-1, -1, "blob_id", "uint32");
	fields[6] = field(-1, -1, "blob_uri", "string");
	fields[7] = field(2, -1, "after", "int32");

	for (int v = LP_FILE_VERSION_2_0; v <= LP_FILE_VERSION_2_3; v++)
	{
		LP_CHECK(columns_of((LpFileVersion) v, fields, 8, got, 8));
		LP_CHECK_MSG(got[0] == 0 && got[1] == 1 && got[2] == 7 && got[3] == -1,
					 "%s: columns of fields %d %d %d %d, expected 0 1 7 -1",
					 lp_file_version_name((LpFileVersion) v), got[0], got[1], got[2], got[3]);
	}
	/* the blob as the last field */
	LP_CHECK(columns_of(LP_FILE_VERSION_2_2, fields, 7, got, 8));
	LP_CHECK_MSG(got[0] == 0 && got[1] == 1 && got[2] == -1,
				 "columns of fields %d %d %d, expected 0 1 -1", got[0], got[1], got[2]);

	file.name = "footer";
	file.version = LP_FILE_VERSION_2_2;
	file.schema.num_fields = 8;
	file.schema.fields = fields;
	LP_CHECK(lp_field_first_column(&file, 7, &first, &err));
	LP_CHECK_EQ_U64(first, 2);
	LP_CHECK(!lp_field_first_column(&file, 8, &first, &err));
	LP_CHECK(err.code == LP_ERR_INVALID_ARGUMENT);
}

/* "packed" is true in any case, as Lance reads it; the struct is then one column. */
LP_TEST(columns_packed_struct_any_case)
{
	LpField		fields[4];
	int32_t		got[4];

	fields[0] = field(0, -1, "p", "struct");
	fields[0].num_metadata = 1;
	fields[0].metadata = packed_upper_case;
	fields[1] = field(1, 0, "x", "int32");
	fields[2] = field(2, 0, "y", "int32");
	fields[3] = field(3, -1, "z", "int32");
	LP_CHECK(columns_of(LP_FILE_VERSION_2_1, fields, 4, got, 4));
	LP_CHECK_MSG(got[0] == 0 && got[1] == 3 && got[2] == -1,
				 "columns of fields %d %d %d, expected 0 3 -1", got[0], got[1], got[2]);
	LP_CHECK(columns_of(LP_FILE_VERSION_2_0, fields, 4, got, 4));
	LP_CHECK_MSG(got[0] == 0 && got[1] == 3 && got[2] == -1,
				 "2.0: columns of fields %d %d %d, expected 0 3 -1", got[0], got[1], got[2]);
}

/* A field whose parent is not an enclosing field before it is a damaged schema. */
LP_TEST(columns_parent_not_enclosing)
{
	LpField		fields[3];
	LpFile		file = {0};
	uint32_t	first;
	LpError		err;

	fields[0] = field(0, -1, "a", "struct");
	fields[1] = field(1, -1, "b", "int32");
	fields[2] = field(2, 0, "c", "int32");
	file.name = "damaged";
	file.version = LP_FILE_VERSION_2_1;
	file.schema.num_fields = 3;
	file.schema.fields = fields;
	LP_CHECK(!lp_field_first_column(&file, 0, &first, &err));
	LP_CHECK(err.code == LP_ERR_CORRUPT);
}

/*
 * A 2.0 string or binary field whose column has List pages (Lance 0.13 and
 * earlier) owns that column and the next (its bytes); a string with Binary
 * pages, a list<int32> and the same string in 2.1 do not.
 */
LP_TEST(columns_v20_strings_as_lists_of_bytes)
{
	LpField		fields[5];
	LpPage		list_page = {0};
	LpPage		flat_page = {0};
	LpPage		binary_page = {0};
	LpColumn	columns[7] = {{0}};
	LpFile		file = {0};
	LpPhysicalColumn *got;
	uint32_t	n;
	uint32_t	first = 0;
	LpError		err;

	fields[0] = field(0, -1, "s", "string");
	fields[1] = field(1, -1, "bin", "binary");
	fields[2] = field(2, -1, "li", "list");
	fields[3] = field(3, 2, "item", "int32");
	fields[4] = field(4, -1, "after", "int32");
	list_page.layout = "list";
	flat_page.layout = "flat";
	binary_page.layout = "binary";
	/* s as a list of u8; bin as Binary; li (offsets, items); after */
	columns[0].num_pages = 1;
	columns[0].pages = &list_page;
	columns[1].num_pages = 1;
	columns[1].pages = &flat_page;
	columns[2].num_pages = 1;
	columns[2].pages = &binary_page;
	columns[3].num_pages = 1;
	columns[3].pages = &list_page;
	columns[4].num_pages = 1;
	columns[4].pages = &flat_page;
	columns[5].num_pages = 1;
	columns[5].pages = &flat_page;
	file.name = "early";
	file.version = LP_FILE_VERSION_2_0;
	file.schema.num_fields = 5;
	file.schema.fields = fields;
	file.num_columns = 6;
	file.columns = columns;

	LP_CHECK(lp_file_physical_columns(&file, &got, &n, &err));
	LP_CHECK_EQ_U64(n, 6);
	if (n == 6)
	{
		LP_CHECK(got[0].field_index == 0 && got[0].bytes_as_list && !got[0].bytes_items);
		LP_CHECK(got[1].field_index == 0 && got[1].bytes_items && got[1].counts_items);
		LP_CHECK(got[2].field_index == 1 && !got[2].bytes_as_list);
		LP_CHECK(got[3].field_index == 2 && !got[3].bytes_as_list);
		LP_CHECK(got[4].field_index == 3 && got[5].field_index == 4);
	}
	lp_free(got);
	LP_CHECK(lp_field_first_column(&file, 4, &first, &err));
	LP_CHECK_EQ_U64(first, 5);
	LP_CHECK(lp_file_column_stores_bytes_as_list(&file, 0));
	LP_CHECK(!lp_file_column_stores_bytes_as_list(&file, 2));

	/* the schema alone cannot tell */
	LP_CHECK(lp_schema_physical_columns(LP_FILE_VERSION_2_0, &file.schema, &got, &n, &err));
	LP_CHECK_EQ_U64(n, 5);
	lp_free(got);

	/* 2.1+ has no such layout */
	file.version = LP_FILE_VERSION_2_1;
	LP_CHECK(!lp_file_column_stores_bytes_as_list(&file, 0));
	LP_CHECK(lp_field_first_column(&file, 4, &first, &err));
	LP_CHECK_EQ_U64(first, 3);
}
