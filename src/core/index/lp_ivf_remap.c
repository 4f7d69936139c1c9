/*
 * lp_ivf_remap.c - rewriting an IVF vector index's auxiliary file for moved
 * rows (lp_ivf_remap.h).
 */
#include <string.h>

#include "base/lp_alloc.h"
#include "base/lp_interrupt.h"
#include "base/lp_protobuf.h"
#include "encode/lp_file_writer.h"
#include "format/lp_values.h"
#include "index/lp_ivf_remap.h"
#include "index.pb-c.h"

/* The rows of one partition that stay, with their new row ids and vectors or codes. */
typedef struct KeptRows
{
	uint64_t	count;
	uint64_t   *row_ids;
	uint64_t   *old_rows;		/* their positions in the old partition */
	uint8_t    *values;			/* as stored: transposed again for transposed PQ codes */
} KeptRows;

static bool
no_memory(LpError *err)
{
	return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory remapping a vector index");
}

/* Map the row ids of part (of at most capacity rows) into kept, keeping the rows' order. */
static bool
keep_rows(const LpIvfModel *model, const LpIvfPartition *part, const LpRowAddressMap *map,
		  KeptRows *kept, LpError *err)
{
	uint64_t	n = lp_ivf_partition_num_rows(part);
	const uint64_t *ids = lp_ivf_partition_row_ids(part);
	const uint8_t *values = lp_ivf_partition_values(part);
	uint64_t	width = lp_ivf_model_row_width(model);

	kept->count = 0;
	for (uint64_t r = 0; r < n; r++)
	{
		bool		stays;

		if (!lp_row_address_map_apply(map, ids[r], &kept->row_ids[kept->count], &stays, err))
		{
			char		message[sizeof(err->message)];

			memcpy(message, err->message, sizeof(message));
			return lp_fail(err, LP_ERR_CORRUPT, "vector index file \"%s\" does not match the dataset: %s",
						   lp_ivf_model_auxiliary_file(model)->name, message);
		}
		if (stays)
			kept->old_rows[kept->count++] = r;
	}
	if (lp_ivf_model_pq_transposed(model))
	{
		/* code s of row r is at s * rows + r */
		for (uint64_t s = 0; s < width; s++)
			for (uint64_t k = 0; k < kept->count; k++)
				kept->values[s * kept->count + k] = values[s * n + kept->old_rows[k]];
	}
	else
		for (uint64_t k = 0; k < kept->count; k++)
			memcpy(kept->values + k * width, values + kept->old_rows[k] * width, (size_t) width);
	return true;
}

/* Write the kept rows as one batch: row ids and the vectors' fixed-size lists. */
static bool
write_rows(LpFileWriter *writer, const LpIvfModel *model, const LpType *id_type,
		   const LpType *vector_type, const KeptRows *kept, LpError *err)
{
	LpArray		ids = {0};
	LpArray		items = {0};
	LpArray		vectors = {0};
	LpArray    *children[1] = {&items};
	const LpArray *batch[2];
	uint64_t	width = lp_ivf_model_row_width(model);
	uint32_t	item_width = lp_type_byte_width(vector_type->children[0]);

	ids.type = id_type;
	ids.length = kept->count;
	ids.values = (uint8_t *) kept->row_ids;
	items.type = vector_type->children[0];
	items.length = kept->count * (width / item_width);
	items.values = kept->values;
	vectors.type = vector_type;
	vectors.length = kept->count;
	vectors.num_children = 1;
	vectors.children = children;
	batch[lp_ivf_model_row_id_field(model)] = &ids;
	batch[lp_ivf_model_vector_field(model)] = &vectors;
	return lp_file_writer_write(writer, batch, 2, err);
}

/*
 * The global buffers of the new auxiliary file but for the schema's: those
 * of the old one, the IVF message with the new partition offsets and
 * lengths.
 */
static bool
new_global_buffers(LpInput *auxiliary, const LpFile *file, uint64_t *offsets, uint32_t *lengths,
				   uint32_t num_partitions, LpBytes *buffers, LpError *err)
{
	uint64_t	ivf_buffer;

	if (!lp_ivf_message_buffer(file, &ivf_buffer, err))
		return false;
	for (uint32_t g = 1; g < file->num_global_buffers; g++)
	{
		LpBytes    *out = &buffers[g - 1];
		uint8_t    *bytes;
		size_t		len;
		Lance__Index__Pb__IVF *ivf;
		LpUnpackResult result;

		if (!lp_ivf_read_global_buffer(auxiliary, file, g, &bytes, &len, err))
			return false;
		out->data = bytes;
		out->len = len;
		if (g != ivf_buffer)
			continue;
		result = lp_protobuf_unpack(&lance__index__pb__ivf__descriptor, bytes, len,
									(ProtobufCMessage **) &ivf);
		if (result == LP_UNPACK_NO_MEMORY)
			return no_memory(err);
		if (result != LP_UNPACK_OK)
			return lp_fail(err, LP_ERR_CORRUPT, "the IVF message of vector index file \"%s\" %s",
						   file->name, lp_unpack_result_text(result));
		{
			/* the message's own arrays put back before it is freed */
			uint64_t   *old_offsets = ivf->offsets;
			uint32_t   *old_lengths = ivf->lengths;
			size_t		n_offsets = ivf->n_offsets;
			size_t		n_lengths = ivf->n_lengths;

			ivf->offsets = offsets;
			ivf->lengths = lengths;
			ivf->n_offsets = ivf->n_lengths = num_partitions;
			out->len = protobuf_c_message_get_packed_size((const ProtobufCMessage *) ivf);
			out->data = lp_alloc(out->len > 0 ? out->len : 1);
			if (out->data != NULL)
				protobuf_c_message_pack((const ProtobufCMessage *) ivf, out->data);
			ivf->offsets = old_offsets;
			ivf->lengths = old_lengths;
			ivf->n_offsets = n_offsets;
			ivf->n_lengths = n_lengths;
		}
		lp_protobuf_free((ProtobufCMessage *) ivf);
		lp_free(bytes);
		if (out->data == NULL)
			return no_memory(err);
	}
	return true;
}

static void
kept_free(KeptRows *kept)
{
	lp_free(kept->row_ids);
	lp_free(kept->old_rows);
	lp_free(kept->values);
	memset(kept, 0, sizeof(*kept));
}

/* Remap partition p of model into writer; its new row count into *length. */
static bool
remap_partition(const LpIvfModel *model, LpInput *index, LpInput *auxiliary, uint32_t p,
				const LpRowAddressMap *map, LpFileWriter *writer, const LpType *id_type,
				const LpType *vector_type, uint32_t *length, LpError *err)
{
	LpIvfPartition *part;
	KeptRows	kept = {0};
	uint64_t	n;
	bool		ok;

	if (lp_check_cancel(err) ||
		!lp_ivf_partition_read(model, index, auxiliary, p, &part, err))
		return false;
	n = lp_ivf_partition_num_rows(part);
	kept.row_ids = lp_alloc_array((size_t) n + 1, sizeof(uint64_t));
	kept.old_rows = lp_alloc_array((size_t) n + 1, sizeof(uint64_t));
	kept.values = lp_alloc((size_t) (n * lp_ivf_model_row_width(model)) + 1);
	ok = (kept.row_ids != NULL && kept.old_rows != NULL && kept.values != NULL) || no_memory(err);
	ok = ok && keep_rows(model, part, map, &kept, err);
	if (ok && kept.count != n && lp_ivf_model_has_graph(model))
		ok = lp_fail(err, LP_ERR_UNSUPPORTED,
					 "the HNSW graph of partition %u of vector index file \"%s\" would have to be rebuilt, as %llu of its %llu rows were deleted",
					 p, lp_ivf_model_auxiliary_file(model)->name,
					 (unsigned long long) (n - kept.count), (unsigned long long) n);
	if (ok && kept.count > 0)
		ok = write_rows(writer, model, id_type, vector_type, &kept, err);
	*length = (uint32_t) kept.count;
	kept_free(&kept);
	lp_ivf_partition_free(part);
	return ok;
}

bool
lp_ivf_index_remap(LpInput *index, LpInput *auxiliary, const LpRowAddressMap *map,
				   LpOutput *auxiliary_out, LpError *err)
{
	LpIvfModel *model = NULL;
	const LpFile *file;
	LpType	   *id_type = NULL;
	LpType	   *vector_type = NULL;
	LpFileWriter *writer = NULL;
	uint64_t   *offsets = NULL;
	uint32_t   *lengths = NULL;
	LpBytes    *buffers = NULL;
	uint32_t	num_partitions;
	uint64_t	next = 0;
	uint64_t	size;
	bool		ok = false;

	if (!lp_ivf_model_read(index, auxiliary, &model, err))
		return false;
	file = lp_ivf_model_auxiliary_file(model);
	num_partitions = lp_ivf_model_num_partitions(model);
	if (file->schema.num_fields != 2)
	{
		lp_fail(err, LP_ERR_UNSUPPORTED, "vector index file \"%s\" has %u fields, not the row ids and vectors lance_parts remaps",
				file->name, file->schema.num_fields);
		goto done;
	}
	if (!lp_type_from_field(file, lp_ivf_model_row_id_field(model), &id_type, err) ||
		!lp_type_from_field(file, lp_ivf_model_vector_field(model), &vector_type, err))
		goto done;
	offsets = lp_alloc_array(num_partitions, sizeof(uint64_t));
	lengths = lp_alloc_array(num_partitions, sizeof(uint32_t));
	buffers = lp_alloc_array((size_t) file->num_global_buffers + 1, sizeof(LpBytes));
	if (offsets == NULL || lengths == NULL || buffers == NULL)
	{
		no_memory(err);
		goto done;
	}
	writer = lp_file_writer_open(auxiliary_out, &file->schema, file->version, err);
	if (writer == NULL)
		goto done;
	for (uint32_t p = 0; p < num_partitions; p++)
	{
		if (!remap_partition(model, index, auxiliary, p, map, writer, id_type, vector_type,
							 &lengths[p], err))
			goto done;
		offsets[p] = next;
		next += lengths[p];
	}
	if (!new_global_buffers(auxiliary, file, offsets, lengths, num_partitions, buffers, err) ||
		!lp_file_writer_finish_with_buffers(writer, buffers, file->num_global_buffers - 1, &size, err))
		goto done;
	ok = true;

done:
	for (uint32_t g = 0; buffers != NULL && g + 1 < file->num_global_buffers; g++)
		lp_free(buffers[g].data);
	lp_free(buffers);
	lp_free(offsets);
	lp_free(lengths);
	lp_file_writer_free(writer);
	if (id_type != NULL)
		lp_type_free(id_type);
	if (vector_type != NULL)
		lp_type_free(vector_type);
	lp_ivf_model_free(model);
	return ok;
}
