/*
 * lp_fdw_blob.c - payloads of Blob v2 columns read by lance_fdw (column
 * option blob 'payload'): a row's descriptor says where its bytes are, and
 * only those bytes are read: Inline from the data file itself, Packed and
 * Dedicated from the data file's sidecars
 * (<data dir>/<file stem>/<reversed-bit blob id>.blob), External from the
 * file or object its URI names once the name is checked (lp_blob_external)
 * and the current role may read there.
 */
#include "postgres.h"

#include "utils/builtins.h"
#include "utils/memutils.h"

#include "base/lp_alloc.h"
#include "base/lp_path.h"
#include "dataset/lp_blob_external.h"
#include "dataset/lp_dataset.h"
#include "fdw/lp_fdw.h"
#include "base/lp_pg_error.h"
#include "store/lp_pg_storage.h"

enum
{
	BLOB_INLINE = 0,
	BLOB_PACKED = 1,
	BLOB_DEDICATED = 2,
	BLOB_EXTERNAL = 3
};

static const LpArray *
descriptor_child(const LpArray *descriptors, const char *name, LpTypeId id,
				 const char *data_file)
{
	for (uint32 c = 0; c < descriptors->num_children; c++)
	{
		const LpArray *child = descriptors->children[c];

		if (strcmp(descriptors->type->children[c]->name, name) == 0 && child->type->id == id)
			return child;
	}
	ereport(ERROR,
			errcode(ERRCODE_DATA_CORRUPTED),
			errmsg("blob descriptors of file \"%s\" have no %s field \"%s\"",
				   data_file, lp_type_id_name(id), name));
	return NULL;				/* keep the compiler quiet */
}

static uint64
fixed_value(const LpArray *array, uint64 row)
{
	switch (array->type->id)
	{
		case LP_TYPE_UINT8:
			return array->values[row];
		case LP_TYPE_UINT32:
			{
				uint32		v;

				memcpy(&v, array->values + row * 4, 4);
				return v;
			}
		default:
			{
				uint64		v;

				memcpy(&v, array->values + row * 8, 8);
				return v;
			}
	}
}

/*
 * The input of path, kept open for the next payloads: a sidecar in the
 * store of its data file (no symlink below its base followed), an external
 * payload in the store its URI names after check.
 */
static LpInput *
payload_input(LpFdwBlobReader *reader, char *path, void (*check) (const char *path))
{
	MemoryContext old;

	if (reader->payload_input != NULL && strcmp(reader->payload_path, path) == 0)
	{
		pfree(path);
		return reader->payload_input;
	}
	lp_fdw_blob_reader_close(reader);
	if (check != NULL)
		check(path);
	old = MemoryContextSwitchTo(reader->context);
	reader->payload_input = check == NULL ? lp_open_input_in(reader->data_store, path) :
		lp_open_input_via(path, reader->source->server);
	reader->payload_path = pstrdup(path);
	MemoryContextSwitchTo(old);
	pfree(path);
	return reader->payload_input;
}

/* The sidecar of blob_id next to the reader's data file. */
static LpInput *
sidecar_input(LpFdwBlobReader *reader, uint32 blob_id)
{
	char		name[LP_BLOB_FILE_NAME_SIZE];
	const char *slash = strrchr(reader->data_file, '/');
	char	   *stem = slash == NULL ? NULL : lp_blob_sidecar_dir(slash + 1);
	char	   *path;

	if (stem == NULL)
		ereport(ERROR,
				errcode(ERRCODE_DATA_CORRUPTED),
				errmsg("data file \"%s\" with blob sidecars is not named \"<stem>.lance\"",
					   reader->data_file));
	lp_blob_sidecar_file_name(blob_id, name);
	/* the sidecar directory lies beside the data file */
	path = psprintf("%.*s/%s/%s", (int) (slash - reader->data_file), reader->data_file, stem, name);
	lp_free(stem);
	return payload_input(reader, path, NULL);
}

/*
 * The file or object of an External descriptor: blob_uri checked by the
 * core, joined to the manifest's base path blob_id when relative, and read
 * only by a role that may read there (pg_read_server_files for a local
 * path; for s3:// the store's lookup requires USAGE on the lance_fdw server
 * covering the URI and a user mapping, as for datasets).
 */
static LpInput *
external_input(LpFdwBlobReader *reader, const LpArray *uris, uint64 row, uint64 blob_id)
{
	uint64		start = uris->offsets[row];
	uint64		len = uris->offsets[row + 1] - start;
	LpBlobExternalForm form;
	char	   *location;
	char	   *path;
	LpError		err;

	if (!lp_blob_external_location((const char *) uris->data + start, (size_t) len, (uint32) blob_id,
								   &form, &location, &err))
	{
		lp_error_detail(&err, "The descriptor of row " UINT64_FORMAT " of file \"%s\" names it.",
						row, reader->data_file);
		lp_raise(&err);
	}
	if (form == LP_BLOB_EXTERNAL_RELATIVE)
	{
		char	   *base_path;
		char	   *data_dir;

		/* base ids are what lp_resolve_base looks up; a larger one names no base */
		if (blob_id > PG_INT32_MAX)
			ereport(ERROR,
					errcode(ERRCODE_DATA_CORRUPTED),
					errmsg("external blob descriptor of row " UINT64_FORMAT " of file \"%s\" names base " UINT64_FORMAT ", which the manifest does not have",
						   row, reader->data_file, blob_id));
		if (reader->source->single_file)
			ereport(ERROR,
					errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					errmsg("external blob of row " UINT64_FORMAT " of file \"%s\" is relative to base " UINT64_FORMAT ", but a single file has no manifest",
						   row, reader->data_file, blob_id),
					errhint("Read the file through its dataset."));
		lp_resolve_base(reader->source->manifest, true, (int32) blob_id, reader->source->path,
						reader->source->server, &base_path, &data_dir);
		path = lp_require_memory(lp_path_join(base_path, location));
	}
	else
		path = pstrdup(location);
	lp_free(location);
	return payload_input(reader, path, lp_check_read_privilege_for);
}

bool
lp_fdw_blob_payload(LpFdwBlobReader *reader, const LpArray *descriptors, uint64 row,
					Datum *payload)
{
	const LpArray *kind = descriptor_child(descriptors, "kind", LP_TYPE_UINT8, reader->data_file);
	const LpArray *position = descriptor_child(descriptors, "position", LP_TYPE_UINT64,
											   reader->data_file);
	const LpArray *size = descriptor_child(descriptors, "size", LP_TYPE_UINT64, reader->data_file);
	const LpArray *blob_id = descriptor_child(descriptors, "blob_id", LP_TYPE_UINT32,
											  reader->data_file);
	uint64		kind_value;
	uint64		offset;
	uint64		length;
	uint64		id;
	LpInput    *input;
	bytea	   *result;
	LpError		err;

	/* null on the outer struct (current writers) or on kind */
	if (!lp_array_is_valid(descriptors, row) || !lp_array_is_valid(kind, row))
		return false;
	kind_value = fixed_value(kind, row);
	offset = fixed_value(position, row);
	length = fixed_value(size, row);
	id = fixed_value(blob_id, row);
	switch (kind_value)
	{
		case BLOB_INLINE:
			/* size 0 is empty whatever the position */
			input = length == 0 ? NULL : reader->data_input;
			break;
		case BLOB_PACKED:
		case BLOB_DEDICATED:
			if (id == 0)
				ereport(ERROR,
						errcode(ERRCODE_DATA_CORRUPTED),
						errmsg("blob descriptor of row " UINT64_FORMAT " of file \"%s\" names sidecar id 0",
							   row, reader->data_file));
			if (kind_value == BLOB_DEDICATED && offset != 0)
				ereport(ERROR,
						errcode(ERRCODE_DATA_CORRUPTED),
						errmsg("dedicated blob descriptor of row " UINT64_FORMAT " of file \"%s\" has position " UINT64_FORMAT,
							   row, reader->data_file, offset),
						errdetail("A dedicated sidecar holds one payload from position 0."));
			input = sidecar_input(reader, (uint32) id);
			break;
		case BLOB_EXTERNAL:
			input = external_input(reader,
								   descriptor_child(descriptors, "blob_uri", LP_TYPE_STRING,
													reader->data_file),
								   row, id);
			if (!lp_blob_external_range(offset, length, input->size, reader->payload_path,
										&offset, &length, &err))
				lp_raise(&err);
			break;
		default:
			ereport(ERROR,
					errcode(ERRCODE_DATA_CORRUPTED),
					errmsg("blob descriptor of row " UINT64_FORMAT " of file \"%s\" has unknown kind " UINT64_FORMAT,
						   row, reader->data_file, kind_value));
			return false;
	}
	if (length > MaxAllocSize - VARHDRSZ)
		ereport(ERROR,
				errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				errmsg("blob payload of row " UINT64_FORMAT " of file \"%s\" has " UINT64_FORMAT " bytes, more than a bytea value holds",
					   row, reader->data_file, length));
	result = palloc(VARHDRSZ + length);
	SET_VARSIZE(result, VARHDRSZ + length);
	/* lp_input_read checks the range against the file's size */
	if (input != NULL && !lp_input_read(input, offset, VARDATA(result), (size_t) length, &err))
		lp_raise(&err);
	*payload = PointerGetDatum(result);
	return true;
}

void
lp_fdw_blob_reader_close(LpFdwBlobReader *reader)
{
	if (reader->payload_input != NULL)
		lp_input_close(reader->payload_input);
	reader->payload_input = NULL;
	if (reader->payload_path != NULL)
		pfree(reader->payload_path);
	reader->payload_path = NULL;
}
