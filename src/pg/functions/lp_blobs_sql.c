/*
 * lp_blobs_sql.c - Blob v2 from SQL: lease_blob_ids and the sidecar writers
 * write_packed_blobs, write_dedicated_blob and write_dedicated_blob_from,
 * over the sidecar outputs of lp_sidecar.c.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/rangetypes.h"

#include "base/lp_alloc.h"
#include "base/lp_path.h"
#include "dataset/lp_blob.h"
#include "dataset/lp_dataset.h"
#include "base/lp_pg_error.h"
#include "targets/lp_sidecar.h"
#include "base/lp_sql_args.h"
#include "store/lp_pg_storage.h"
#include "targets/lp_target.h"

PG_FUNCTION_INFO_V1(lp_lease_blob_ids);
PG_FUNCTION_INFO_V1(lp_write_packed_blobs);
PG_FUNCTION_INFO_V1(lp_write_dedicated_blob);
PG_FUNCTION_INFO_V1(lp_write_dedicated_blob_from);

/* Parse, verify, check write privileges and bind the target argument. */
static LpTarget *
writable_target(FunctionCallInfo fcinfo)
{
	LpTarget   *target;
	LpManifestNaming naming;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("target must not be NULL"));
	target = lp_target_from_jsonb(PG_GETARG_JSONB_P(0));
	lp_target_check_privileges(target, true);
	lp_manifest_free(lp_target_check_binding(target, &naming));
	return target;
}

/*
 * What every sidecar writer checks first: the target has Blob v2 columns
 * (their limits), the blob_id argument lies in a lease of the target, and
 * the target is not assembled yet.
 */
static uint32
checked_blob_id(FunctionCallInfo fcinfo, const LpTarget *target, LpSidecarLimits *limits)
{
	uint32		blob_id;

	lp_sidecar_limits(target, limits);
	if (PG_ARGISNULL(1))
		ereport(ERROR,
				errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("blob id must not be NULL"));
	blob_id = lp_sidecar_check_leased(target, PG_GETARG_INT64(1));
	lp_sidecar_check_not_assembled(target);
	return blob_id;
}

/* Descriptor kinds as stored (and as lance_fdw shows descriptors) */
#define BLOB_KIND_PACKED 1
#define BLOB_KIND_DEDICATED 2

static Jsonb *
descriptor(int kind, uint64 position, uint64 size, uint32 blob_id)
{
	char	   *text = psprintf("{\"kind\": %d, \"position\": " UINT64_FORMAT
								", \"size\": " UINT64_FORMAT ", \"blob_id\": %u, \"blob_uri\": \"\"}",
								kind, position, size, blob_id);

	return DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(text)));
}

/* The output of blob_id's sidecar in the target's sidecar directory. */
static LpSidecar *
open_sidecar(const LpTarget *target, uint32 blob_id)
{
	char	   *dir = lp_target_sidecar_dir(target);

	return lp_sidecar_open(lp_store_below(target->base_path), dir, blob_id);
}

Datum
lp_lease_blob_ids(PG_FUNCTION_ARGS)
{
	LpTarget   *target = writable_target(fcinfo);
	LpBlobLease lease;
	int32		count;

	if (PG_ARGISNULL(1))
		ereport(ERROR,
				errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("blob id count must not be NULL"));
	count = PG_GETARG_INT32(1);
	if (count < 1)
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("blob id count must be at least 1"));
	lp_sidecar_check_not_assembled(target);
	lease = lp_blob_claim_lease(target, (uint32) count);
	PG_RETURN_RANGE_P(lp_blob_lease_range(&lease));
}

Datum
lp_write_packed_blobs(PG_FUNCTION_ARGS)
{
	LpTarget   *target = writable_target(fcinfo);
	LpSidecarLimits limits;
	uint32		blob_id = checked_blob_id(fcinfo, target, &limits);
	ArrayType  *payloads;
	Datum	   *values;
	bool	   *nulls;
	int			count;
	Datum	   *descriptors;
	bool	   *descriptor_nulls;
	uint64		total = 0;
	LpSidecar  *sidecar;
	int			dims[1];
	int			lbs[1] = {1};

	if (PG_ARGISNULL(2))
		ereport(ERROR,
				errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("payload array must not be NULL"));
	payloads = PG_GETARG_ARRAYTYPE_P(2);
	lp_check_one_dimensional(payloads, "payload array");
	deconstruct_array(payloads, BYTEAOID, -1, false, TYPALIGN_INT, &values, &nulls, &count);
	if (count == 0)
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("payload array must not be empty"));

	/* every check before the sidecar is created */
	for (int i = 0; i < count; i++)
	{
		uint64		size = nulls[i] ? 0 : VARSIZE_ANY_EXHDR(DatumGetPointer(values[i]));

		if (size > limits.dedicated_threshold)
			ereport(ERROR,
					errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					errmsg("payload %d has " UINT64_FORMAT " bytes, more than the dedicated threshold of " UINT64_FORMAT " bytes",
						   i + 1, size, limits.dedicated_threshold),
					errhint("Write it with lance_parts.write_dedicated_blob."));
		total += size;
	}
	if (total > limits.pack_file_threshold)
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("payloads of " UINT64_FORMAT " bytes exceed the pack-file threshold of " UINT64_FORMAT " bytes",
					   total, limits.pack_file_threshold),
				errhint("Write them into several packed sidecars, one blob id each."));

	sidecar = open_sidecar(target, blob_id);
	descriptors = palloc(sizeof(Datum) * count);
	descriptor_nulls = palloc(sizeof(bool) * count);
	for (int i = 0; i < count; i++)
	{
		uint64		offset = sidecar->written;
		uint64		size;

		/* an ERROR here aborts the output: nothing appears under the sidecar's name */
		CHECK_FOR_INTERRUPTS();
		descriptor_nulls[i] = nulls[i];
		if (nulls[i])
		{
			descriptors[i] = (Datum) 0;
			continue;
		}
		size = VARSIZE_ANY_EXHDR(DatumGetPointer(values[i]));
		lp_sidecar_write(sidecar, VARDATA_ANY(DatumGetPointer(values[i])), (size_t) size);
		descriptors[i] = JsonbPGetDatum(descriptor(BLOB_KIND_PACKED, offset, size, blob_id));
	}
	lp_sidecar_publish(sidecar);

	dims[0] = count;
	PG_RETURN_ARRAYTYPE_P(construct_md_array(descriptors, descriptor_nulls, 1, dims, lbs,
											 JSONBOID, -1, false, TYPALIGN_INT));
}

/* Where a dedicated sidecar's payload comes from: argument 3 */
typedef enum DedicatedSource
{
	SOURCE_BYTES,				/* a bytea payload */
	SOURCE_URI					/* a file or object, copied within its store where it can be */
} DedicatedSource;

/* write_dedicated_blob and write_dedicated_blob_from: one payload, one sidecar */
static Datum
write_dedicated(FunctionCallInfo fcinfo, DedicatedSource source)
{
	LpTarget   *target = writable_target(fcinfo);
	LpSidecarLimits limits;

	/* a dedicated sidecar holds a payload of any size; the target needs a Blob v2 column */
	uint32		blob_id = checked_blob_id(fcinfo, target, &limits);
	LpSidecar  *sidecar;

	if (PG_ARGISNULL(2))
	{
		if (source == SOURCE_BYTES)
			ereport(ERROR,
					errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					errmsg("payload must not be NULL"),
					errhint("A NULL blob has a NULL descriptor and no sidecar."));
		ereport(ERROR,
				errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("source URI must not be NULL"));
	}
	if (source == SOURCE_BYTES)
	{
		bytea	   *payload = PG_GETARG_BYTEA_PP(2);

		sidecar = open_sidecar(target, blob_id);
		lp_sidecar_write(sidecar, VARDATA_ANY(payload), VARSIZE_ANY_EXHDR(payload));
	}
	else
	{
		char	   *source_uri = text_to_cstring(PG_GETARG_TEXT_PP(2));
		LpInput    *input;

		lp_check_read_privilege_for(source_uri);
		input = lp_open_input_for_uri(source_uri);
		sidecar = open_sidecar(target, blob_id);
		lp_sidecar_copy(sidecar, input);
		lp_input_close(input);
	}
	lp_sidecar_publish(sidecar);
	PG_RETURN_JSONB_P(descriptor(BLOB_KIND_DEDICATED, 0, sidecar->written, blob_id));
}

Datum
lp_write_dedicated_blob(PG_FUNCTION_ARGS)
{
	return write_dedicated(fcinfo, SOURCE_BYTES);
}

Datum
lp_write_dedicated_blob_from(PG_FUNCTION_ARGS)
{
	return write_dedicated(fcinfo, SOURCE_URI);
}
