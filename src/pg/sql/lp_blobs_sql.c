/*
 * lp_blobs_sql.c - Blob v2 from SQL: lease_blob_ids and the sidecar writers
 * write_packed_blobs, write_dedicated_blob and write_dedicated_blob_from.
 *
 * Sidecars go straight into the target's sidecar directory
 * (<data_dir>/<file stem>/<reversed-bit id>.blob), under an id of a lease
 * claimed for that target, written under a temporary name and published
 * without replacing anything, so that nothing is visible under a sidecar's
 * name after an error or a cancel.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/rangetypes.h"
#include "utils/typcache.h"

#include "base/lp_alloc.h"
#include "base/lp_path.h"
#include "dataset/lp_blob.h"
#include "dataset/lp_dataset.h"
#include "format/lp_columns.h"
#include "lp_pg_error.h"
#include "sql/lp_commit_sql.h"
#include "lp_sql_args.h"
#include "sql/lp_blobs_sql.h"
#include "storage/lp_pg_storage.h"
#include "target/lp_target.h"

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

char *
lp_blob_lease_dir(const LpTarget *target)
{
	return lp_require_memory(lp_path_join(lp_target_staging_dir(target), LP_BLOB_LEASE_DIR));
}

LpBlobLease
lp_blob_claim_lease(const LpTarget *target, uint32 count)
{
	char	   *dir = lp_blob_lease_dir(target);
	LpBlobLease lease;
	LpError		err;
	uint8		random[LP_BLOB_CLAIMER_LEN / 2];
	char		claimer[LP_BLOB_CLAIMER_LEN + 1];

	if (!lp_random_bytes(NULL, random, sizeof(random), &err))
		lp_raise(&err);
	for (size_t i = 0; i < sizeof(random); i++)
		snprintf(claimer + 2 * i, 3, "%02x", random[i]);
	if (!lp_blob_lease_claim(lp_store_for_uri(dir, NULL), dir, count, claimer, &lease, &err))
		lp_raise(&err);
	pfree(dir);
	return lease;
}

/*
 * ERROR once the target's file exists: it was assembled (its sidecars are
 * read from now on) or committed (its staging area, and with it the lease
 * records, may be gone, so ids could be handed out twice).
 */
static void
check_not_assembled(const LpTarget *target)
{
	char	   *path = lp_target_data_file_path(target);
	LpStat		stat;

	lp_store_stat(lp_store_for_uri(path, NULL), path, false, &stat);
	if (stat.kind != LP_OBJECT_ABSENT)
		ereport(ERROR,
				errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				errmsg("target file \"%s\" already exists", path),
				errdetail("Blob ids are leased and sidecars written before a target is assembled."),
				errhint("Create a new target for new data."));
}

/*
 * The target's Blob v2 columns decide the writers' limits: a payload above
 * the dedicated threshold of every blob column would be Dedicated in each of
 * them, and a pack file may grow to the largest pack-file threshold.  ERROR
 * if the target has no Blob v2 column.
 */
uint64
lp_blob_field_threshold(const LpField *field, const char *key, uint64 fallback)
{
	const LpKeyValue *entry = lp_field_metadata(field, key);
	char	   *text;
	char	   *end;
	unsigned long long value;

	if (entry == NULL)
		return fallback;
	text = pnstrdup((const char *) entry->value.data, entry->value.len);
	errno = 0;
	value = strtoull(text, &end, 10);
	if (errno != 0 || end == text || *end != '\0' || value == 0)
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("blob column \"%s\" has invalid %s \"%s\"", field->name, key, text));
	return (uint64) value;
}

static void
blob_limits(const LpTarget *target, uint64 *dedicated_threshold, uint64 *pack_file_threshold)
{
	bool		found = false;

	*dedicated_threshold = 0;
	*pack_file_threshold = 0;
	for (uint32 i = 0; i < target->schema.num_fields; i++)
	{
		const LpField *field = &target->schema.fields[i];

		if (!lp_field_is_blob(field) || strcmp(field->logical_type, "struct") != 0)
			continue;
		found = true;
		*dedicated_threshold = Max(*dedicated_threshold,
								   lp_blob_field_threshold(field, LP_BLOB_DEDICATED_THRESHOLD_KEY,
												   LP_BLOB_DEFAULT_DEDICATED_THRESHOLD));
		*pack_file_threshold = Max(*pack_file_threshold,
								   lp_blob_field_threshold(field, LP_BLOB_PACK_FILE_THRESHOLD_KEY,
												   LP_BLOB_DEFAULT_PACK_FILE_THRESHOLD));
	}
	if (!found)
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("target file \"%s\" has no Blob v2 column", target->file_name),
				errdetail("Sidecars hold payloads of Blob v2 columns of dataset \"%s\".",
						  target->dataset));
}

/* The blob_id argument, checked to lie inside a lease claimed for the target. */
static uint32
leased_blob_id(FunctionCallInfo fcinfo, const LpTarget *target)
{
	int64		id;
	char	   *dir;
	LpBlobLease *leases;
	uint64_t	count;
	LpError		err;

	if (PG_ARGISNULL(1))
		ereport(ERROR,
				errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("blob id must not be NULL"));
	id = PG_GETARG_INT64(1);
	if (id < 1 || id >= (int64) LP_BLOB_ID_LIMIT)
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("blob id " INT64_FORMAT " is out of range", id),
				errdetail("Blob ids are between 1 and %u.", LP_BLOB_ID_LIMIT - 1));
	dir = lp_blob_lease_dir(target);
	if (!lp_blob_leases_read(lp_store_for_uri(dir, NULL), dir, &leases, &count, &err))
		lp_raise(&err);
	if (!lp_blob_lease_holds(leases, count, (uint32) id))
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("blob id " INT64_FORMAT " is not leased for target file \"%s\"",
					   id, target->file_name),
				errhint("Lease ids with lance_parts.lease_blob_ids and write each id once."));
	lp_free(leases);
	return (uint32) id;
}

static char *
sidecar_path(const LpTarget *target, uint32 blob_id)
{
	char		name[LP_BLOB_FILE_NAME_SIZE];

	lp_blob_sidecar_file_name(blob_id, name);
	return lp_require_memory(lp_path_join(lp_target_sidecar_dir(target), name));
}

/*
 * Publish the sidecar and check that the store holds what was written (the
 * seeds' finish: the object is at least, for a dedicated one exactly, as
 * long as the bytes written).
 */
void
lp_blob_sidecar_publish(LpStore *store, LpOutput *output, const char *path, uint64 written)
{
	LpStat		stat;
	LpError		err;

	if (!output->ops->publish(output, &err))
	{
		if (err.code == LP_ERR_ALREADY_EXISTS)
			ereport(ERROR,
					errcode(ERRCODE_DUPLICATE_FILE),
					errmsg("blob sidecar \"%s\" already exists", path),
					errdetail("Each leased blob id names one sidecar, written once."));
		lp_raise(&err);
	}
	lp_store_stat(store, path, false, &stat);
	if (stat.kind != LP_OBJECT_FILE || stat.size != written)
		ereport(ERROR,
				errcode(ERRCODE_DATA_CORRUPTED),
				errmsg("blob sidecar \"%s\" holds " UINT64_FORMAT " bytes after " UINT64_FORMAT " were written",
					   path, stat.size, written));
}

LpOutput *
lp_blob_sidecar_create(LpStore *store, const char *path)
{
	LpError		err;
	LpOutput   *output = store->ops->create_output(store, path, &err);

	if (output == NULL)
		lp_raise(&err);
	return output;
}

void
lp_blob_sidecar_write(LpOutput *output, uint64 offset, const void *data, size_t len)
{
	LpError		err;

	if (len > 0 && !output->ops->write_at(output, offset, data, len, &err))
	{
		output->ops->abort(output);
		lp_raise(&err);
	}
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
	check_not_assembled(target);
	lease = lp_blob_claim_lease(target, (uint32) count);
	PG_RETURN_RANGE_P(lp_blob_lease_range(&lease));
}

RangeType *
lp_blob_lease_range(const LpBlobLease *lease)
{
	TypeCacheEntry *typcache = lookup_type_cache(INT8RANGEOID, TYPECACHE_RANGE_INFO);
	RangeBound	lower;
	RangeBound	upper;

	lower.val = Int64GetDatum((int64) lease->start);
	lower.infinite = false;
	lower.inclusive = true;
	lower.lower = true;
	upper.val = Int64GetDatum((int64) lease->end);
	upper.infinite = false;
	upper.inclusive = false;
	upper.lower = false;
	return make_range(typcache, &lower, &upper, false);
}

Datum
lp_write_packed_blobs(PG_FUNCTION_ARGS)
{
	LpTarget   *target = writable_target(fcinfo);
	uint32		blob_id;
	uint64		dedicated_threshold;
	uint64		pack_file_threshold;
	ArrayType  *payloads;
	Datum	   *values;
	bool	   *nulls;
	int			count;
	Datum	   *descriptors;
	bool	   *descriptor_nulls;
	uint64		offset = 0;
	char	   *path;
	LpStore    *store;
	LpOutput   *output;
	int			dims[1];
	int			lbs[1] = {1};

	blob_limits(target, &dedicated_threshold, &pack_file_threshold);
	blob_id = leased_blob_id(fcinfo, target);
	check_not_assembled(target);
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

		if (size > dedicated_threshold)
			ereport(ERROR,
					errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					errmsg("payload %d has " UINT64_FORMAT " bytes, more than the dedicated threshold of " UINT64_FORMAT " bytes",
						   i + 1, size, dedicated_threshold),
					errhint("Write it with lance_parts.write_dedicated_blob."));
		offset += size;
	}
	if (offset > pack_file_threshold)
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("payloads of " UINT64_FORMAT " bytes exceed the pack-file threshold of " UINT64_FORMAT " bytes",
					   offset, pack_file_threshold),
				errhint("Write them into several packed sidecars, one blob id each."));

	path = sidecar_path(target, blob_id);
	store = lp_store_for_uri(path, NULL);
	output = lp_blob_sidecar_create(store, path);
	descriptors = palloc(sizeof(Datum) * count);
	descriptor_nulls = palloc(sizeof(bool) * count);
	offset = 0;
	for (int i = 0; i < count; i++)
	{
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
		lp_blob_sidecar_write(output, offset, VARDATA_ANY(DatumGetPointer(values[i])), (size_t) size);
		descriptors[i] = JsonbPGetDatum(descriptor(BLOB_KIND_PACKED, offset, size, blob_id));
		offset += size;
	}
	lp_blob_sidecar_publish(store, output, path, offset);

	dims[0] = count;
	PG_RETURN_ARRAYTYPE_P(construct_md_array(descriptors, descriptor_nulls, 1, dims, lbs,
											 JSONBOID, -1, false, TYPALIGN_INT));
}

Datum
lp_write_dedicated_blob(PG_FUNCTION_ARGS)
{
	LpTarget   *target = writable_target(fcinfo);
	uint32		blob_id;
	uint64		dedicated_threshold;
	uint64		pack_file_threshold;
	bytea	   *payload;
	uint64		size;
	char	   *path;
	LpStore    *store;
	LpOutput   *output;

	/* a dedicated sidecar holds a payload of any size; the target needs a Blob v2 column */
	blob_limits(target, &dedicated_threshold, &pack_file_threshold);
	blob_id = leased_blob_id(fcinfo, target);
	check_not_assembled(target);
	if (PG_ARGISNULL(2))
		ereport(ERROR,
				errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("payload must not be NULL"),
				errhint("A NULL blob has a NULL descriptor and no sidecar."));
	payload = PG_GETARG_BYTEA_PP(2);
	size = VARSIZE_ANY_EXHDR(payload);

	path = sidecar_path(target, blob_id);
	store = lp_store_for_uri(path, NULL);
	output = lp_blob_sidecar_create(store, path);
	lp_blob_sidecar_write(output, 0, VARDATA_ANY(payload), (size_t) size);
	lp_blob_sidecar_publish(store, output, path, size);
	PG_RETURN_JSONB_P(descriptor(BLOB_KIND_DEDICATED, 0, size, blob_id));
}

/*
 * Copy source into the output: copy_from where the store can (copy_file_range
 * locally, UploadPartCopy on S3), else through a bounded buffer.
 */
static void
copy_source(LpOutput *output, LpInput *input)
{
	const size_t batch = 8 * 1024 * 1024;
	char	   *buffer = NULL;
	uint64		pos = 0;
	bool		direct = output->ops->copy_from != NULL;
	LpError		err;

	while (pos < input->size)
	{
		uint64		len = Min(input->size - pos, (uint64) batch);

		CHECK_FOR_INTERRUPTS();
		if (direct)
		{
			if (output->ops->copy_from(output, pos, input, pos, len, &err))
			{
				pos += len;
				continue;
			}
			if (err.code != LP_ERR_UNSUPPORTED)
			{
				output->ops->abort(output);
				lp_raise(&err);
			}
			direct = false;
		}
		if (buffer == NULL)
			buffer = palloc(batch);
		if (!lp_input_read(input, pos, buffer, (size_t) len, &err))
		{
			output->ops->abort(output);
			lp_raise(&err);
		}
		lp_blob_sidecar_write(output, pos, buffer, (size_t) len);
		pos += len;
	}
	if (buffer != NULL)
		pfree(buffer);
}

Datum
lp_write_dedicated_blob_from(PG_FUNCTION_ARGS)
{
	LpTarget   *target = writable_target(fcinfo);
	uint32		blob_id;
	uint64		dedicated_threshold;
	uint64		pack_file_threshold;
	char	   *source_uri;
	LpInput    *input;
	uint64		size;
	char	   *path;
	LpStore    *store;
	LpOutput   *output;

	/* a dedicated sidecar holds a payload of any size; the target needs a Blob v2 column */
	blob_limits(target, &dedicated_threshold, &pack_file_threshold);
	blob_id = leased_blob_id(fcinfo, target);
	check_not_assembled(target);
	if (PG_ARGISNULL(2))
		ereport(ERROR,
				errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("source URI must not be NULL"));
	source_uri = text_to_cstring(PG_GETARG_TEXT_PP(2));
	lp_check_read_privilege_for(source_uri);
	input = lp_open_input_for_uri(source_uri);
	size = input->size;

	path = sidecar_path(target, blob_id);
	store = lp_store_for_uri(path, NULL);
	output = lp_blob_sidecar_create(store, path);
	copy_source(output, input);
	lp_input_close(input);
	lp_blob_sidecar_publish(store, output, path, size);
	PG_RETURN_JSONB_P(descriptor(BLOB_KIND_DEDICATED, 0, size, blob_id));
}
