/*
 * lp_write_blobs.c - Blob v2 payloads of the data files write_dataset
 * writes and of the parts write_part writes.  A dataset's data file has
 * them placed as Lance places them (blob.rs): up to the inline threshold
 * (default 64 KiB) in the data file itself, above the dedicated threshold
 * (default 4 MiB) in a sidecar of their own, the rest appended to a pack
 * file, a new one (a new blob id) whenever the pack-file threshold (default
 * 1 GiB) would be exceeded; per-field overrides in the field's metadata.
 * Sidecars are written under temporary names and published without
 * replacing anything (target/lp_sidecar.h), a pack file when it is full or
 * its data file ends, so payloads are streamed and never all kept.  A
 * part cannot carry Inline payloads (their offsets would not survive
 * assembly): every non-empty one goes Packed or Dedicated into the final
 * target's sidecar directory, under blob ids of a lease write_part claims
 * (contiguous chunks, sized from the expected rows when given).
 */
#include "postgres.h"

#include "nodes/pg_list.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/numeric.h"

#include "dataset/lp_blob.h"
#include "dataset/lp_dataset.h"
#include "base/lp_pg_error.h"
#include "targets/lp_sidecar.h"
#include "store/lp_pg_storage.h"
#include "targets/lp_target.h"
#include "write/lp_write_blobs.h"

/* Ids leased at a time for a part: at most, and when its rows are not known. */
#define PART_LEASE_CHUNK_MAX 65536
#define PART_LEASE_CHUNK_UNKNOWN 1024

struct LpBlobWriter
{
	LpStore    *store;
	const char *what;
	LpFileWriter *file;			/* the current data file's */
	char	   *sidecar_dir;	/* its sidecar directory */
	uint32		next_blob_id;
	/* the open pack file, if any */
	LpSidecar  *pack;
	/* the sidecar directories of the data files begun, "data/<stem>" */
	List	   *sidecar_dirs;
	MemoryContext context;

	/* parts: the target, the lease its ids come from, the sidecars published */
	const LpTarget *target;
	uint32		lease_chunk;	/* ids claimed at a time */
	LpBlobLease lease;			/* end 0: none yet */
	LpBlobLease *target_leases; /* the target's, read for checking jsonb ids */
	uint64_t	num_target_leases;
	bool		target_leases_read;
	List	   *published;		/* file names in the sidecar directory */
};

LpBlobWriter *
lp_blob_writer_create(LpStore *store, const char *what)
{
	LpBlobWriter *writer = palloc0(sizeof(LpBlobWriter));

	writer->store = store;
	writer->what = what;
	writer->context = CurrentMemoryContext;
	return writer;
}

LpBlobWriter *
lp_blob_writer_create_for_part(LpStore *store, const char *what, const LpTarget *target,
							   uint64 expected_ids)
{
	LpBlobWriter *writer = lp_blob_writer_create(store, what);

	writer->target = target;
	writer->sidecar_dir = lp_target_sidecar_dir(target);
	writer->lease_chunk = expected_ids == 0 ? PART_LEASE_CHUNK_UNKNOWN :
		(uint32) Min(expected_ids, (uint64) PART_LEASE_CHUNK_MAX);
	return writer;
}

void
lp_blob_writer_begin_file(LpBlobWriter *writer, LpFileWriter *file, const char *data_file_path)
{
	MemoryContext old;
	size_t		len = strlen(data_file_path);
	const char *name = strrchr(data_file_path, '/');

	if (writer->target != NULL)
	{
		/* a part's sidecars are the target's, its ids the lease's */
		writer->file = file;
		return;
	}
	old = MemoryContextSwitchTo(writer->context);

	Assert(len > 6 && strcmp(data_file_path + len - 6, ".lance") == 0);
	Assert(writer->pack == NULL);
	writer->file = file;
	writer->sidecar_dir = pnstrdup(data_file_path, len - 6);
	writer->next_blob_id = 1;
	name = name == NULL ? data_file_path : name + 1;
	writer->sidecar_dirs = lappend(writer->sidecar_dirs,
								   psprintf("%s/%.*s", LP_DATA_DIR, (int) (strlen(name) - 6), name));
	MemoryContextSwitchTo(old);
}

/*
 * A part's next id: the lease's, extended by a chunk claimed right after it
 * when used up (a part's lease is one range).
 */
static uint32
new_part_blob_id(LpBlobWriter *writer)
{
	LpBlobLease more;

	if (writer->lease.end != 0 && writer->next_blob_id < writer->lease.end)
		return writer->next_blob_id++;
	more = lp_blob_claim_lease(writer->target, writer->lease_chunk);
	if (writer->lease.end == 0)
		writer->lease = more;
	else if (more.start == writer->lease.end)
		writer->lease.end = more.end;
	else
		ereport(ERROR,
				errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				errmsg("the part of %s needs more than the %u blob ids of its lease",
					   writer->what, writer->lease.end - writer->lease.start),
				errdetail("Another writer leased the ids after them."),
				errhint("Give expected_rows, so that write_part leases enough ids at once."));
	writer->next_blob_id = more.start + 1;
	return more.start;
}

static uint32
new_blob_id(LpBlobWriter *writer)
{
	if (writer->target != NULL)
		return new_part_blob_id(writer);
	if (writer->next_blob_id == LP_BLOB_ID_LIMIT)
		ereport(ERROR,
				errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				errmsg("data file \"%s\" of %s needs more than %u sidecars",
					   writer->sidecar_dir, writer->what, LP_BLOB_ID_LIMIT - 1),
				errhint("Lower max_rows_per_file."));
	return writer->next_blob_id++;
}

/* A part's sidecar was published: removed again if the write fails. */
static void
note_published(LpBlobWriter *writer, uint32 blob_id)
{
	MemoryContext old;
	char		name[LP_BLOB_FILE_NAME_SIZE];

	if (writer->target == NULL)
		return;
	lp_blob_sidecar_file_name(blob_id, name);
	old = MemoryContextSwitchTo(writer->context);
	writer->published = lappend(writer->published, pstrdup(name));
	MemoryContextSwitchTo(old);
}

static void
publish_pack(LpBlobWriter *writer)
{
	LpSidecar  *pack = writer->pack;

	/* publishing consumes the output, whatever its outcome */
	writer->pack = NULL;
	lp_sidecar_publish(pack);
	note_published(writer, pack->blob_id);
}

void
lp_blob_writer_end_file(LpBlobWriter *writer)
{
	if (writer->pack != NULL)
		publish_pack(writer);
	writer->file = NULL;
}

void
lp_blob_writer_store(LpBlobWriter *writer, const LpField *field, const uint8 *data, uint64 len,
					 LpBlobDescriptor *out)
{
	uint64		inline_threshold = lp_sidecar_field_threshold(field, LP_BLOB_INLINE_THRESHOLD_KEY,
														   LP_BLOB_DEFAULT_INLINE_THRESHOLD);
	uint64		dedicated_threshold = lp_sidecar_field_threshold(field, LP_BLOB_DEDICATED_THRESHOLD_KEY,
															  LP_BLOB_DEFAULT_DEDICATED_THRESHOLD);
	LpError		err;

	Assert(writer->file != NULL);
	memset(out, 0, sizeof(*out));
	out->size = len;
	out->uri = "";
	/* a part keeps only empty payloads inline: an Inline descriptor of size 0 */
	if (writer->target != NULL)
		inline_threshold = 0;
	if (len <= inline_threshold)
	{
		out->kind = LP_BLOB_KIND_INLINE;
		if (!lp_file_writer_write_blob(writer->file, data, len, &out->position, &err))
			lp_raise(&err);
		return;
	}
	if (len > dedicated_threshold)
	{
		LpSidecar  *sidecar;

		out->kind = LP_BLOB_KIND_DEDICATED;
		out->blob_id = new_blob_id(writer);
		sidecar = lp_sidecar_open(writer->store, writer->sidecar_dir, out->blob_id);
		lp_sidecar_write(sidecar, data, (size_t) len);
		lp_sidecar_publish(sidecar);
		note_published(writer, out->blob_id);
		return;
	}
	if (writer->pack != NULL &&
		writer->pack->written + len > lp_sidecar_field_threshold(field, LP_BLOB_PACK_FILE_THRESHOLD_KEY,
														   LP_BLOB_DEFAULT_PACK_FILE_THRESHOLD))
		publish_pack(writer);
	if (writer->pack == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(writer->context);

		writer->pack = lp_sidecar_open(writer->store, writer->sidecar_dir, new_blob_id(writer));
		MemoryContextSwitchTo(old);
	}
	out->kind = LP_BLOB_KIND_PACKED;
	out->blob_id = writer->pack->blob_id;
	out->position = writer->pack->written;
	lp_sidecar_write(writer->pack, data, (size_t) len);
}

/*
 * A part's Packed or Dedicated descriptor: its id inside a lease of the
 * target, the lease of every such id of the part.
 */
static void
check_part_descriptor(LpBlobWriter *writer, const LpField *field, const LpBlobDescriptor *descriptor)
{
	const LpBlobLease *holding = NULL;

	if (descriptor->kind == LP_BLOB_KIND_DEDICATED && descriptor->position != 0)
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("Dedicated descriptor of blob column \"%s\" of %s has position " UINT64_FORMAT,
					   field->name, writer->what, descriptor->position),
				errdetail("A dedicated sidecar holds one payload, from position 0."));
	if (!writer->target_leases_read)
	{
		char	   *dir = lp_blob_lease_dir(writer->target);
		LpError		err;
		MemoryContext old = MemoryContextSwitchTo(writer->context);
		bool		ok = lp_blob_leases_read(writer->store, dir, &writer->target_leases,
											 &writer->num_target_leases, &err);

		MemoryContextSwitchTo(old);
		if (!ok)
			lp_raise(&err);
		writer->target_leases_read = true;
	}
	for (uint64_t i = 0; i < writer->num_target_leases; i++)
		if (lp_blob_lease_holds(&writer->target_leases[i], 1, descriptor->blob_id))
			holding = &writer->target_leases[i];
	if (holding == NULL)
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("blob id %u of blob column \"%s\" is not leased for %s",
					   descriptor->blob_id, field->name, writer->what),
				errhint("Write the sidecars with ids of lance_parts.lease_blob_ids for this target."));
	if (writer->lease.end == 0)
	{
		writer->lease = *holding;
		/* bytea payloads of the part take no ids of another writer's lease */
		writer->next_blob_id = holding->end;
	}
	else if (holding->start != writer->lease.start)
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("the descriptors of the part of %s use blob ids of more than one lease",
					   writer->what),
				errdetail("A part is registered with one lease (blob_ids)."));
}

void
lp_blob_writer_check(LpBlobWriter *writer, const LpField *field,
					 const LpBlobDescriptor *descriptor)
{
	const char *uri = descriptor->uri;

	if (descriptor->kind == LP_BLOB_KIND_INLINE && descriptor->size == 0)
		return;
	if (writer->target != NULL &&
		(descriptor->kind == LP_BLOB_KIND_PACKED || descriptor->kind == LP_BLOB_KIND_DEDICATED))
	{
		check_part_descriptor(writer, field, descriptor);
		return;
	}
	if (descriptor->kind == LP_BLOB_KIND_EXTERNAL && descriptor->blob_id == 0 &&
		(uri[0] == '/' || strstr(uri, "://") != NULL))
		return;
	ereport(ERROR,
			errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			errmsg("descriptor of kind %u cannot be written to blob column \"%s\" of %s",
				   descriptor->kind, field->name, writer->what),
			descriptor->kind == LP_BLOB_KIND_EXTERNAL ?
			errdetail("An External descriptor written by write_dataset has blob_id 0 and an absolute blob_uri.") :
			writer->target != NULL ?
			errdetail("A part takes Packed and Dedicated descriptors with leased ids, External ones and empty Inline ones.") :
			errdetail("A new data file's sidecars and inline payloads do not exist yet: give the payload as bytea, or an External descriptor."));
}

LpBlobLease
lp_blob_writer_part_lease(LpBlobWriter *writer)
{
	/* a part with blob columns is registered with a non-empty lease, even without sidecars */
	if (writer->lease.end == 0)
		writer->lease = lp_blob_claim_lease(writer->target, 1);
	return writer->lease;
}

void
lp_blob_writer_remove_sidecars(const LpBlobWriter *writer, const char *root)
{
	ListCell   *cell;

	foreach(cell, writer->published)
	{
		bool		removed;
		LpError		err;

		(void) writer->store->ops->remove_file(writer->store, writer->sidecar_dir, lfirst(cell),
											   &removed, &err);
	}

	foreach(cell, writer->sidecar_dirs)
	{
		LpTreeRemoval removal;
		LpError		err;

		(void) writer->store->ops->remove_tree(writer->store, root, lfirst(cell), &removal, &err);
	}
}

List *
lp_blob_writer_sidecar_dirs(const LpBlobWriter *writer)
{
	return writer->sidecar_dirs;
}

/* Key of a descriptor as an unsigned integer of at most max. */
static uint64
descriptor_number(Jsonb *jsonb, const char *key, uint64 max, const char *column)
{
	JsonbValue	value;
	char	   *text;
	char	   *end;
	unsigned long long number;

	if (getKeyJsonValueFromContainer(&jsonb->root, key, strlen(key), &value) == NULL ||
		value.type != jbvNumeric)
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("blob descriptor of column \"%s\" has no number \"%s\"", column, key),
				errdetail("A descriptor has the keys kind, position, size, blob_id and blob_uri, as write_packed_blobs returns them."));
	text = DatumGetCString(DirectFunctionCall1(numeric_out, NumericGetDatum(value.val.numeric)));
	errno = 0;
	number = strtoull(text, &end, 10);
	if (text[0] == '-' || errno != 0 || end == text || *end != '\0' || number > max)
		ereport(ERROR,
				errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				errmsg("blob descriptor of column \"%s\" has %s %s, out of range", column, key, text),
				errdetail("%s is an integer between 0 and " UINT64_FORMAT ".", key, max));
	return (uint64) number;
}

void
lp_blob_descriptor_from_jsonb(Jsonb *jsonb, const char *column, LpBlobDescriptor *out)
{
	JsonbValue	value;

	if (!JB_ROOT_IS_OBJECT(jsonb))
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("blob descriptor of column \"%s\" is not a JSON object", column));
	out->kind = (uint8) descriptor_number(jsonb, "kind", LP_BLOB_KIND_EXTERNAL, column);
	out->position = descriptor_number(jsonb, "position", PG_UINT64_MAX, column);
	out->size = descriptor_number(jsonb, "size", PG_UINT64_MAX, column);
	out->blob_id = (uint32) descriptor_number(jsonb, "blob_id", PG_UINT32_MAX, column);
	if (getKeyJsonValueFromContainer(&jsonb->root, "blob_uri", 8, &value) == NULL ||
		value.type != jbvString)
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("blob descriptor of column \"%s\" has no string \"blob_uri\"", column));
	out->uri = pnstrdup(value.val.string.val, value.val.string.len);
}
