/*
 * lp_write_blobs.c - Blob v2 payloads of the data files write_dataset
 * writes, placed as Lance places them (blob.rs): up to the inline threshold
 * (default 64 KiB) in the data file itself, above the dedicated threshold
 * (default 4 MiB) in a sidecar of their own, the rest appended to a pack
 * file, a new one (a new blob id) whenever the pack-file threshold (default
 * 1 GiB) would be exceeded; per-field overrides in the field's metadata.
 * Sidecars are written under temporary names and published without
 * replacing anything (sql/lp_sidecar.h), a pack file when it is full or
 * its data file ends, so payloads are streamed and never all kept.
 */
#include "postgres.h"

#include "nodes/pg_list.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/numeric.h"

#include "dataset/lp_blob.h"
#include "dataset/lp_dataset.h"
#include "lp_pg_error.h"
#include "sql/lp_sidecar.h"
#include "storage/lp_pg_storage.h"
#include "write/lp_write_blobs.h"

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

void
lp_blob_writer_begin_file(LpBlobWriter *writer, LpFileWriter *file, const char *data_file_path)
{
	MemoryContext old = MemoryContextSwitchTo(writer->context);
	size_t		len = strlen(data_file_path);
	const char *name = strrchr(data_file_path, '/');

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

static uint32
new_blob_id(LpBlobWriter *writer)
{
	if (writer->next_blob_id == LP_BLOB_ID_LIMIT)
		ereport(ERROR,
				errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				errmsg("data file \"%s\" of %s needs more than %u sidecars",
					   writer->sidecar_dir, writer->what, LP_BLOB_ID_LIMIT - 1),
				errhint("Lower max_rows_per_file."));
	return writer->next_blob_id++;
}

static void
publish_pack(LpBlobWriter *writer)
{
	LpSidecar  *pack = writer->pack;

	/* publishing consumes the output, whatever its outcome */
	writer->pack = NULL;
	lp_sidecar_publish(pack);
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

void
lp_blob_writer_check(const LpBlobWriter *writer, const LpField *field,
					 const LpBlobDescriptor *descriptor)
{
	const char *uri = descriptor->uri;

	if (descriptor->kind == LP_BLOB_KIND_INLINE && descriptor->size == 0)
		return;
	if (descriptor->kind == LP_BLOB_KIND_EXTERNAL && descriptor->blob_id == 0 &&
		(uri[0] == '/' || strstr(uri, "://") != NULL))
		return;
	ereport(ERROR,
			errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			errmsg("descriptor of kind %u cannot be written to blob column \"%s\" of %s",
				   descriptor->kind, field->name, writer->what),
			descriptor->kind == LP_BLOB_KIND_EXTERNAL ?
			errdetail("An External descriptor written by write_dataset has blob_id 0 and an absolute blob_uri.") :
			errdetail("A new data file's sidecars and inline payloads do not exist yet: give the payload as bytea, or an External descriptor."));
}

void
lp_blob_writer_remove_sidecars(const LpBlobWriter *writer, const char *root)
{
	ListCell   *cell;

	foreach(cell, writer->sidecar_dirs)
	{
		LpTreeRemoval removal;
		LpError		err;

		(void) writer->store->ops->remove_tree(writer->store, root, lfirst(cell), &removal, &err);
	}
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
