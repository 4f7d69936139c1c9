/*
 * test_concat_blob.c - concatenation of parts with Blob v2 columns: refused
 * without leases, compatible with them against the manifest's schema (the
 * blob field's logical form) and part 0's footer schema alike; the output
 * keeps the footer form lancedb writes (lance-format.md §6.5); a legacy blob
 * column stays refused.
 */
#include <stdlib.h>
#include <string.h>

#include "base/lp_alloc.h"
#include "concat/lp_concat.h"
#include "dataset/lp_dataset.h"
#include "dataset/lp_manifest.h"
#include "lp_test.h"
#include "lp_test_files.h"
#include "lp_test_store.h"
#include "lp_test_util.h"

typedef struct BlobParts
{
	int			count;
	LpInput    *inputs[4];
	LpFile	   *files[4];
	LpConcatPart parts[4];
	LpSchema	manifest_schema;
	LpManifest *manifest;
} BlobParts;

static bool
open_blob_parts(BlobParts *bp)
{
	char	   *paths[4];
	char		root[4096];
	LpManifestNaming naming;
	LpError		err;
	int			n = lp_test_dataset_data_files("blob_2_2", paths, 4);

	memset(bp, 0, sizeof(*bp));
	if (n < 2)
		return false;
	for (int i = 0; i < n; i++)
	{
		bp->inputs[i] = lp_test_file_input_open(paths[i], &err);
		LP_CHECK(bp->inputs[i] != NULL);
		bp->files[i] = bp->inputs[i] ? lp_file_open(bp->inputs[i], &err) : NULL;
		LP_CHECK(bp->files[i] != NULL);
		bp->parts[i].file = bp->files[i];
		free(paths[i]);
	}
	bp->count = n;
	snprintf(root, sizeof(root), "%s/blob_2_2.lance", lp_test_data_dir);
	bp->manifest = lp_dataset_read_latest(lp_test_store(), root, &naming, &err);
	LP_CHECK(bp->manifest != NULL);
	LP_CHECK(bp->manifest != NULL && lp_manifest_schema(bp->manifest, &bp->manifest_schema, &err));
	return bp->manifest != NULL && bp->files[0] != NULL && bp->files[1] != NULL;
}

static void
close_blob_parts(BlobParts *bp)
{
	for (int i = 0; i < bp->count; i++)
	{
		lp_file_free(bp->files[i]);
		lp_input_close(bp->inputs[i]);
	}
	lp_schema_free(&bp->manifest_schema);
	lp_manifest_free(bp->manifest);
}

static LpConcatReason
verdict_for(const BlobParts *bp, const LpSchema *schema, bool leased)
{
	LpConcatTarget target = {bp->files[0]->version, schema, leased, NULL, NULL};
	LpConcatVerdict verdict;
	LpError		err;

	LP_CHECK_MSG(lp_concat_check(&target, bp->parts, (uint32_t) bp->count, &verdict, &err),
				 "unexpected error: %.300s", err.message);
	return verdict.reason;
}

LP_TEST(concat_blob_v2_needs_leases)
{
	BlobParts	bp;

	if (!open_blob_parts(&bp))
		return;
	LP_CHECK_EQ_U64(verdict_for(&bp, &bp.manifest_schema, false), LP_CONCAT_BLOB_COLUMNS);
	LP_CHECK_EQ_U64(verdict_for(&bp, &bp.files[0]->schema, false), LP_CONCAT_BLOB_COLUMNS);
	LP_CHECK_EQ_U64(verdict_for(&bp, &bp.manifest_schema, true), LP_CONCAT_COMPATIBLE);
	LP_CHECK_EQ_U64(verdict_for(&bp, &bp.files[0]->schema, true), LP_CONCAT_COMPATIBLE);
	close_blob_parts(&bp);
}

LP_TEST(concat_blob_v2_output_keeps_the_footer_form)
{
	BlobParts	bp;
	LpConcatTarget target = {0};
	LpConcatVerdict verdict;
	LpConcatPlan *plan = NULL;
	LpOutput   *output;
	LpInput    *written;
	LpFile	   *file;
	const uint8_t *bytes;
	uint64_t	len;
	LpError		err;

	if (!open_blob_parts(&bp))
		return;
	target.version = bp.files[0]->version;
	target.schema = &bp.manifest_schema;
	target.blob_ids_leased = true;
	LP_CHECK(lp_concat_plan(&target, bp.parts, (uint32_t) bp.count, &verdict, &plan, &err));
	LP_CHECK(plan != NULL);
	if (plan != NULL)
	{
		output = lp_memory_output_open("out.lance");
		LP_CHECK(lp_concat_execute(plan, bp.inputs, output, LP_CONCAT_DEFAULT_READ_BATCH_BYTES, &err));
		bytes = lp_memory_output_data(output, &len);
		written = lp_memory_input_open("out.lance", bytes, len);
		file = lp_file_open(written, &err);
		LP_CHECK(file != NULL);
		if (file != NULL)
		{
			LP_CHECK(lp_schema_equal(&file->schema, &bp.files[0]->schema));
			LP_CHECK_EQ_U64(file->num_rows, bp.files[0]->num_rows + bp.files[1]->num_rows);
			lp_file_free(file);
		}
		lp_input_close(written);
		output->ops->abort(output);
		lp_concat_plan_free(plan);
	}
	close_blob_parts(&bp);
}

/* A part whose footer lacks the descriptor's pseudo-fields does not match the manifest's blob field. */
LP_TEST(concat_blob_v2_footer_form_is_checked)
{
	BlobParts	bp;
	LpSchema   *schema;
	uint32_t	saved;

	if (!open_blob_parts(&bp))
		return;
	schema = &bp.files[1]->schema;
	saved = schema->num_fields;
	schema->num_fields = saved - 1;
	LP_CHECK_EQ_U64(verdict_for(&bp, &bp.manifest_schema, true), LP_CONCAT_SCHEMA_MISMATCH);
	schema->num_fields = saved;
	schema->fields[saved - 1].name[0] = 'X';
	LP_CHECK_EQ_U64(verdict_for(&bp, &bp.manifest_schema, true), LP_CONCAT_SCHEMA_MISMATCH);
	close_blob_parts(&bp);
}

/* Leases make Blob v2 columns concatenable, never legacy ones. */
LP_TEST(concat_blob_legacy_refused_with_leases)
{
	BlobParts	bp;
	LpField    *field;
	char	   *saved_type;

	if (!open_blob_parts(&bp))
		return;
	/* the footer's blob field as a legacy one: large_binary marked lance-encoding:blob */
	field = &bp.files[0]->schema.fields[1];
	LP_CHECK_STR(field->name, "payload");
	saved_type = field->logical_type;
	field->logical_type = "large_binary";
	LP_CHECK_EQ_U64(verdict_for(&bp, &bp.files[0]->schema, true), LP_CONCAT_BLOB_COLUMNS);
	field->logical_type = saved_type;
	close_blob_parts(&bp);
}
