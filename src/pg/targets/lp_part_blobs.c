/*
 * lp_part_blobs.c - blob id leases of a target's parts and the validation
 * of their Blob v2 descriptors (the core's dataset/lp_blob_validate).
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/rangetypes.h"
#include "utils/typcache.h"

#include "base/lp_alloc.h"
#include "base/lp_path.h"
#include "dataset/lp_blob_validate.h"
#include "decode/lp_decode.h"
#include "format/lp_columns.h"
#include "base/lp_pg_error.h"
#include "store/lp_pg_storage.h"
#include "targets/lp_part_blobs.h"
#include "targets/lp_registry.h"

/* Rows of a blob column decoded at a time. */
#define BLOB_CHECK_BATCH_ROWS 65536

LpBlobLease
lp_part_lease_from_range(Datum range, const char *uri)
{
	RangeType  *value = DatumGetRangeTypeP(range);
	TypeCacheEntry *typcache = lookup_type_cache(RangeTypeGetOid(value), TYPECACHE_RANGE_INFO);
	RangeBound	lower;
	RangeBound	upper;
	bool		empty;
	int64		start;
	int64		end;
	LpBlobLease lease;
	LpError		err;

	range_deserialize(typcache, value, &lower, &upper, &empty);
	if (empty || lower.infinite || upper.infinite)
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("blob id lease of part \"%s\" must be a finite, non-empty range", uri),
				errhint("Pass the range lance_parts.lease_blob_ids returned for the part's writer."));
	/* int8range is canonical: [lower, upper) */
	start = DatumGetInt64(lower.val);
	end = DatumGetInt64(upper.val);
	if (start < 1 || end > (int64) LP_BLOB_ID_LIMIT)
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("blob id lease [" INT64_FORMAT ", " INT64_FORMAT ") of part \"%s\" is outside the blob ids [1, %u)",
					   start, end, uri, (unsigned) LP_BLOB_ID_LIMIT),
				errdetail("Blob id 0 is reserved and blob ids are 32-bit."));
	lease.start = (uint32) start;
	lease.end = (uint32) end;
	if (!lp_blob_lease_validate(&lease, uri, &err))
		lp_raise(&err);
	return lease;
}

void
lp_part_lease_check(const LpTarget *target, const LpBlobLease *lease, const char *uri)
{
	char	   *dir = lp_require_memory(lp_path_join(lp_target_staging_dir(target), LP_BLOB_LEASE_DIR));
	LpBlobLease *claimed;
	uint64		num_claimed;
	ListCell   *cell;
	LpError		err;

	if (!lp_blob_leases_read(lp_store_below(target->base_path), dir, &claimed, &num_claimed, &err))
		lp_raise(&err);
	if (!lp_blob_lease_claimed(claimed, num_claimed, lease))
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("blob id lease [%u, %u) of part \"%s\" was not claimed for target file \"%s\"",
					   lease->start, lease->end, uri, target->file_name),
				errdetail("%s of the target's ids are claimed.",
						  num_claimed == 0 ? "None" : psprintf("[1, %u)", claimed[num_claimed - 1].end)),
				errhint("Lease the part's ids with lance_parts.lease_blob_ids for this target before writing its sidecars."));
	lp_free(claimed);

	foreach(cell, lp_registry_parts(lp_target_key(target)))
	{
		LpRegisteredPart *part = lfirst(cell);

		if (part->has_lease && lp_blob_leases_overlap(&part->lease, lease))
			ereport(ERROR,
					errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					errmsg("blob id lease [%u, %u) of part \"%s\" overlaps lease [%u, %u) of registered part \"%s\"",
						   lease->start, lease->end, uri, part->lease.start, part->lease.end, part->uri),
					errdetail("The parts of one target write their sidecars under disjoint blob ids."));
	}
}

void
lp_part_leases_check_disjoint(List *parts, const char *target_file)
{
	for (int i = 0; i < list_length(parts); i++)
	{
		LpRegisteredPart *a = list_nth(parts, i);

		for (int j = i + 1; a->has_lease && j < list_length(parts); j++)
		{
			LpRegisteredPart *b = list_nth(parts, j);

			if (b->has_lease && lp_blob_leases_overlap(&a->lease, &b->lease))
				ereport(ERROR,
						errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("blob id leases of parts \"%s\" and \"%s\" of target file \"%s\" overlap",
							   a->uri, b->uri, target_file),
						errdetail("Leases [%u, %u) and [%u, %u) share blob ids.",
								  a->lease.start, a->lease.end, b->lease.start, b->lease.end));
		}
	}
}

bool
lp_part_has_blob_columns(const LpFile *file, const char *uri)
{
	uint32		num_v2;
	LpError		err;

	if (!lp_blob_schema_check(&file->schema, uri, &num_v2, &err))
		lp_raise(&err);
	return num_v2 > 0;
}

/* Whether top-level field index of schema is, or holds, a Blob v2 field. */
static bool
holds_blob_v2(const LpSchema *schema, uint32 index)
{
	for (uint32 i = 0; i < schema->num_fields; i++)
	{
		int64		ancestor = i;

		if (!lp_field_is_blob_v2(&schema->fields[i]))
			continue;
		/* climb to the top-level field (parents come first: bounded by i) */
		for (uint32 steps = 0; ancestor >= 0 && schema->fields[ancestor].parent_id != -1 &&
			 steps <= i; steps++)
			ancestor = lp_schema_find_field(schema, schema->fields[ancestor].parent_id);
		if (ancestor == (int64) index)
			return true;
	}
	return false;
}

void
lp_blob_check_file(LpBlobCheck *check, const char *base, const char *uri, const LpFile *file,
				   const char *sidecar_dir)
{
	LpInput    *input = NULL;
	uint64	   *rows = palloc(sizeof(uint64) * BLOB_CHECK_BATCH_ROWS);
	LpError		err;

	for (uint32 f = 0; f < file->schema.num_fields; f++)
	{
		LpFieldReader *reader;

		if (file->schema.fields[f].parent_id != -1 || file->schema.fields[f].id == -1 ||
			!holds_blob_v2(&file->schema, f))
			continue;
		if (input == NULL)
			input = lp_open_input_below(base, uri);
		if (!lp_field_reader_open(input, file, f, &reader, &err))
			lp_raise(&err);
		for (uint64 first = 0; first < file->num_rows; first += BLOB_CHECK_BATCH_ROWS)
		{
			uint64		n = Min((uint64) BLOB_CHECK_BATCH_ROWS, file->num_rows - first);
			LpArray    *values;
			bool		ok;

			CHECK_FOR_INTERRUPTS();
			for (uint64 r = 0; r < n; r++)
				rows[r] = first + r;
			if (!lp_field_reader_take(reader, rows, n, &values, &err))
				lp_raise(&err);
			ok = lp_blob_check_values(check, &file->schema, values, first, &err);
			lp_array_free(values);
			if (!ok)
				lp_raise(&err);
		}
		lp_field_reader_close(reader);
	}
	if (!lp_blob_check_sidecars(check, lp_store_below(base), sidecar_dir, &err))
		lp_raise(&err);
	if (input != NULL)
		lp_input_close(input);
	pfree(rows);
}

void
lp_part_check_blobs(const LpTarget *target, const char *uri, const LpFile *file,
					const LpBlobLease *lease)
{
	LpBlobCheck check;

	lp_blob_check_init(&check, uri, lease);
	lp_blob_check_file(&check, target->base_path, uri, file, lp_target_sidecar_dir(target));
	lp_blob_check_free(&check);
}
