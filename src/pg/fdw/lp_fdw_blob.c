/*
 * lp_fdw_blob.c - payloads of Blob v2 columns read by lance_fdw (column
 * option blob 'payload'): a row's descriptor says where its bytes are, and
 * only those bytes are read: Inline from the data file itself, Packed and
 * Dedicated from the data file's sidecars
 * (<data dir>/<file stem>/<reversed-bit blob id>.blob).
 */
#include "postgres.h"

#include "utils/builtins.h"
#include "utils/memutils.h"

#include "base/lp_alloc.h"
#include "dataset/lp_dataset.h"
#include "fdw/lp_fdw.h"
#include "lp_pg_error.h"
#include "storage/lp_pg_storage.h"

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

/* The sidecar of blob_id next to the reader's data file, kept open for the next payloads. */
static LpInput *
sidecar_input(LpFdwBlobReader *reader, uint32 blob_id)
{
	char		name[LP_BLOB_FILE_NAME_SIZE];
	const char *slash = strrchr(reader->data_file, '/');
	char	   *stem = slash == NULL ? NULL : lp_blob_sidecar_dir(slash + 1);
	char	   *dir;
	char	   *path;
	MemoryContext old;

	if (stem == NULL)
		ereport(ERROR,
				errcode(ERRCODE_DATA_CORRUPTED),
				errmsg("data file \"%s\" with blob sidecars is not named \"<stem>.lance\"",
					   reader->data_file));
	lp_blob_sidecar_file_name(blob_id, name);
	/* the sidecar directory lies beside the data file */
	dir = psprintf("%.*s/%s", (int) (slash - reader->data_file), reader->data_file, stem);
	lp_free(stem);
	path = psprintf("%s/%s", dir, name);
	pfree(dir);
	if (reader->sidecar != NULL && strcmp(reader->sidecar_path, path) == 0)
	{
		pfree(path);
		return reader->sidecar;
	}
	lp_fdw_blob_reader_close(reader);
	old = MemoryContextSwitchTo(reader->context);
	reader->sidecar = lp_open_input_for_uri(path);
	reader->sidecar_path = pstrdup(path);
	MemoryContextSwitchTo(old);
	pfree(path);
	return reader->sidecar;
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
			ereport(ERROR,
					errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					errmsg("blob payload of row " UINT64_FORMAT " of file \"%s\" is stored outside the dataset, which lance_fdw does not read",
						   row, reader->data_file),
					errhint("Read the column's descriptors (column option blob 'descriptor') for its URI."));
			return false;
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
	if (reader->sidecar != NULL)
		lp_input_close(reader->sidecar);
	reader->sidecar = NULL;
	if (reader->sidecar_path != NULL)
		pfree(reader->sidecar_path);
	reader->sidecar_path = NULL;
}
