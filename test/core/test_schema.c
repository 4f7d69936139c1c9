/*
 * test_schema.c - schema equality (lp_schema_equal).
 */
#include "format/lp_schema.h"
#include "lp_test.h"

#define NUM_FIELDS 2

/* Two fields and a schema metadata map, writable so each test can change one thing. */
typedef struct TestSchema
{
	LpKeyValue	field_metadata[2];
	LpKeyValue	schema_metadata[1];
	LpField		fields[NUM_FIELDS];
	LpSchema	schema;
} TestSchema;

static LpBytes
text_bytes(const char *text)
{
	LpBytes		bytes = {(uint8_t *) text, strlen(text)};

	return bytes;
}

static void
test_schema_init(TestSchema *t)
{
	memset(t, 0, sizeof(*t));
	t->field_metadata[0].key = "lance-encoding:compression";
	t->field_metadata[0].value = text_bytes("zstd");
	t->field_metadata[1].key = "lance-encoding:packed";
	t->field_metadata[1].value = text_bytes("true");
	t->schema_metadata[0].key = "origin";
	t->schema_metadata[0].value = text_bytes("test");

	t->fields[0].id = 0;
	t->fields[0].parent_id = -1;
	t->fields[0].name = "point";
	t->fields[0].logical_type = "struct";
	t->fields[0].nullable = true;
	t->fields[0].num_metadata = 2;
	t->fields[0].metadata = t->field_metadata;

	t->fields[1].id = 1;
	t->fields[1].parent_id = 0;
	t->fields[1].name = "x";
	t->fields[1].logical_type = "double";
	t->fields[1].extension_name = "";

	t->schema.num_fields = NUM_FIELDS;
	t->schema.fields = t->fields;
	t->schema.num_metadata = 1;
	t->schema.metadata = t->schema_metadata;
}

LP_TEST(schema_equal_same_content)
{
	TestSchema	a;
	TestSchema	b;

	test_schema_init(&a);
	test_schema_init(&b);
	LP_CHECK(lp_schema_equal(&a.schema, &a.schema));
	LP_CHECK(lp_schema_equal(&a.schema, &b.schema));
	/* equal bytes in other memory */
	b.fields[0].name = (char[]) {"point"};
	LP_CHECK(lp_schema_equal(&a.schema, &b.schema));
	/* an absent string is the empty string (proto3) */
	b.fields[1].extension_name = NULL;
	LP_CHECK(lp_schema_equal(&a.schema, &b.schema));
	LP_CHECK(lp_schema_equal(&b.schema, &a.schema));
}

/* Each property of a field, of the schema, or their order makes schemas differ. */
LP_TEST(schema_equal_each_difference)
{
	TestSchema	a;
	TestSchema	b;
	LpField		swapped;

	test_schema_init(&a);

#define CHECK_DIFFERS(change) \
	do { test_schema_init(&b); change; \
		LP_CHECK_MSG(!lp_schema_equal(&a.schema, &b.schema) && \
					 !lp_schema_equal(&b.schema, &a.schema), \
					 "schemas still equal after %s", #change); } while (0)

	CHECK_DIFFERS(b.fields[1].id = 2);
	CHECK_DIFFERS(b.fields[1].parent_id = -1);
	CHECK_DIFFERS(b.fields[1].name = "y");
	CHECK_DIFFERS(b.fields[1].logical_type = "float");
	CHECK_DIFFERS(b.fields[1].nullable = true);
	CHECK_DIFFERS(b.fields[1].legacy_encoding = 1);
	CHECK_DIFFERS(b.fields[1].extension_name = "arrow.uuid");
	CHECK_DIFFERS(b.fields[1].unenforced_primary_key = true);
	CHECK_DIFFERS(b.field_metadata[1].value = text_bytes("false"));
	CHECK_DIFFERS(b.field_metadata[1].value = text_bytes("tru"));
	CHECK_DIFFERS(b.field_metadata[1].key = "lance-encoding:blob");
	CHECK_DIFFERS(b.fields[0].num_metadata = 1);
	CHECK_DIFFERS(b.schema_metadata[0].value = text_bytes("other"));
	CHECK_DIFFERS(b.schema.num_metadata = 0);
	CHECK_DIFFERS(b.schema.num_fields = 1);
	CHECK_DIFFERS(swapped = b.fields[0]; b.fields[0] = b.fields[1]; b.fields[1] = swapped);
#undef CHECK_DIFFERS
}
