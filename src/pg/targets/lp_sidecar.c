/*
 * lp_sidecar.c - Blob v2 sidecars: thresholds, the checks before a target's
 * sidecar is written, and one sidecar output, published atomically without
 * replacing anything, or aborted.
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
#include "utils/typcache.h"

#include "base/lp_alloc.h"
#include "base/lp_path.h"
#include "dataset/lp_blob.h"
#include "dataset/lp_dataset.h"
#include "format/lp_columns.h"
#include "base/lp_pg_compat.h"
#include "base/lp_pg_error.h"
#include "base/lp_pg_random.h"
#include "targets/lp_sidecar.h"
#include "store/lp_pg_storage.h"

/* Bytes read and written at a time where a source cannot be copied within its store */
#define COPY_BATCH_BYTES (8 * 1024 * 1024)

uint64
lp_sidecar_field_threshold(const LpField *field, const char *key, uint64 fallback)
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

void
lp_sidecar_limits(const LpTarget *target, LpSidecarLimits *limits)
{
	bool		found = false;

	limits->dedicated_threshold = 0;
	limits->pack_file_threshold = 0;
	for (uint32 i = 0; i < target->schema.num_fields; i++)
	{
		const LpField *field = &target->schema.fields[i];

		if (!lp_field_is_blob(field) || strcmp(field->logical_type, "struct") != 0)
			continue;
		found = true;
		limits->dedicated_threshold = Max(limits->dedicated_threshold,
										  lp_sidecar_field_threshold(field, LP_BLOB_DEDICATED_THRESHOLD_KEY,
																	 LP_BLOB_DEFAULT_DEDICATED_THRESHOLD));
		limits->pack_file_threshold = Max(limits->pack_file_threshold,
										  lp_sidecar_field_threshold(field, LP_BLOB_PACK_FILE_THRESHOLD_KEY,
																	 LP_BLOB_DEFAULT_PACK_FILE_THRESHOLD));
	}
	if (!found)
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("target file \"%s\" has no Blob v2 column", target->file_name),
				errdetail("Sidecars hold payloads of Blob v2 columns of dataset \"%s\".",
						  target->dataset));
}

uint32
lp_sidecar_check_leased(const LpTarget *target, int64 blob_id)
{
	char	   *dir;
	LpBlobLease *leases;
	uint64_t	count;
	LpError		err;

	if (blob_id < 1 || blob_id >= (int64) LP_BLOB_ID_LIMIT)
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("blob id " INT64_FORMAT " is out of range", blob_id),
				errdetail("Blob ids are between 1 and %u.", LP_BLOB_ID_LIMIT - 1));
	dir = lp_blob_lease_dir(target);
	if (!lp_blob_leases_read(lp_store_below(target->base_path), dir, &leases, &count, &err))
		lp_raise(&err);
	if (!lp_blob_lease_holds(leases, count, (uint32) blob_id))
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("blob id " INT64_FORMAT " is not leased for target file \"%s\"",
					   blob_id, target->file_name),
				errhint("Lease ids with lance_parts.lease_blob_ids and write each id once."));
	lp_free(leases);
	pfree(dir);
	return (uint32) blob_id;
}

void
lp_sidecar_check_not_assembled(const LpTarget *target)
{
	char	   *path = lp_target_data_file_path(target);
	LpStat		stat;

	lp_store_stat(lp_store_below(target->base_path), path, false, &stat);
	if (stat.kind != LP_OBJECT_ABSENT)
		ereport(ERROR,
				errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				errmsg("target file \"%s\" already exists", path),
				errdetail("Blob ids are leased and sidecars written before a target is assembled."),
				errhint("Create a new target for new data."));
}

LpSidecar *
lp_sidecar_open(LpStore *store, const char *sidecar_dir, uint32 blob_id)
{
	LpSidecar  *sidecar = palloc0(sizeof(LpSidecar));
	char		name[LP_BLOB_FILE_NAME_SIZE];
	LpError		err;

	lp_blob_sidecar_file_name(blob_id, name);
	sidecar->blob_id = blob_id;
	sidecar->path = lp_require_memory(lp_path_join(sidecar_dir, name));
	sidecar->store = store;
	sidecar->output = sidecar->store->ops->create_output(sidecar->store, sidecar->path, &err);
	if (sidecar->output == NULL)
		lp_raise(&err);
	return sidecar;
}

/* Abort the sidecar and raise err. */
static void
abort_and_raise(LpSidecar *sidecar, LpError *err)
{
	lp_sidecar_abort(sidecar);
	lp_raise(err);
}

void
lp_sidecar_write(LpSidecar *sidecar, const void *data, size_t len)
{
	LpError		err;

	Assert(sidecar->output != NULL);
	if (len > 0 &&
		!sidecar->output->ops->write_at(sidecar->output, sidecar->written, data, len, &err))
		abort_and_raise(sidecar, &err);
	sidecar->written += len;
}

void
lp_sidecar_copy(LpSidecar *sidecar, LpInput *input)
{
	LpOutput   *output = sidecar->output;
	char	   *buffer = NULL;
	uint64		pos = 0;
	bool		direct = output->ops->copy_from != NULL;
	LpError		err;

	while (pos < input->size)
	{
		uint64		len = Min(input->size - pos, (uint64) COPY_BATCH_BYTES);

		CHECK_FOR_INTERRUPTS();
		if (direct)
		{
			if (output->ops->copy_from(output, sidecar->written, input, pos, len, &err))
			{
				pos += len;
				sidecar->written += len;
				continue;
			}
			if (err.code != LP_ERR_UNSUPPORTED)
				abort_and_raise(sidecar, &err);
			/* another store, or an object S3 cannot copy on the server: the bytes pass through */
			direct = false;
		}
		if (buffer == NULL)
			buffer = palloc(COPY_BATCH_BYTES);
		if (!lp_input_read(input, pos, buffer, (size_t) len, &err))
			abort_and_raise(sidecar, &err);
		lp_sidecar_write(sidecar, buffer, (size_t) len);
		pos += len;
	}
	/* a file may hold more than its size said (a /proc file says 0 bytes): copy it to its end */
	while (input->ops->read_some != NULL)
	{
		size_t		got;

		CHECK_FOR_INTERRUPTS();
		if (buffer == NULL)
			buffer = palloc(COPY_BATCH_BYTES);
		if (!input->ops->read_some(input, pos, buffer, COPY_BATCH_BYTES, &got, &err))
			abort_and_raise(sidecar, &err);
		if (got == 0)
			break;
		lp_sidecar_write(sidecar, buffer, got);
		pos += got;
	}
	if (buffer != NULL)
		pfree(buffer);
}

void
lp_sidecar_publish(LpSidecar *sidecar)
{
	LpOutput   *output = sidecar->output;
	LpStat		stat;
	LpError		err;

	/* publish ends the output whatever it returns */
	sidecar->output = NULL;
	if (!output->ops->publish(output, &err))
	{
		if (err.code == LP_ERR_ALREADY_EXISTS)
			ereport(ERROR,
					errcode(ERRCODE_DUPLICATE_FILE),
					errmsg("blob sidecar \"%s\" already exists", sidecar->path),
					errdetail("Each leased blob id names one sidecar, written once."));
		lp_raise(&err);
	}
	lp_store_stat(sidecar->store, sidecar->path, false, &stat);
	if (stat.kind != LP_OBJECT_FILE || stat.size != sidecar->written)
		ereport(ERROR,
				errcode(ERRCODE_DATA_CORRUPTED),
				errmsg("blob sidecar \"%s\" holds " UINT64_FORMAT " bytes after " UINT64_FORMAT " were written",
					   sidecar->path, stat.size, sidecar->written));
}

void
lp_sidecar_abort(LpSidecar *sidecar)
{
	if (sidecar->output != NULL)
		sidecar->output->ops->abort(sidecar->output);
	sidecar->output = NULL;
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
	if (!lp_blob_lease_claim(lp_store_below(target->base_path), dir, count, claimer, &lease, &err))
		lp_raise(&err);
	pfree(dir);
	return lease;
}

/* The lease as the int8range [start, end) SQL shows it. */
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
	return make_range(typcache, &lower, &upper, false, NULL);
}
