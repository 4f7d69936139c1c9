/*
 * lp_ivf_remap.c - rewriting an IVF vector index's auxiliary file for moved
 * rows (lp_ivf_remap.h).
 */
#include <stdio.h>
#include <string.h>

#include "base/lp_alloc.h"
#include "base/lp_interrupt.h"
#include "base/lp_protobuf.h"
#include "encode/lp_file_writer.h"
#include "format/lp_values.h"
#include "index/lp_hnsw_build.h"
#include "index/lp_index_json.h"
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

/* A partition's rebuilt HNSW graph and its "lance:hnsw" entry. */
typedef struct PartitionGraph
{
	LpHnswBuilt *built;			/* NULL for an empty partition */
	char	   *metadata;		/* JSON, lp_alloc'd */
	uint64_t	rows;			/* its rows of index.idx */
} PartitionGraph;

/* The unsigned integer member key of object, at least min and at most max. */
static bool
json_param(LpJsonSpan object, const char *key, uint32_t min, uint32_t max, uint32_t *out)
{
	LpJsonSpan	value;
	double		number;

	if (!lp_json_member(object, key, &value) || !lp_json_number(value, &number) ||
		number < min || number > max || number != (double) (uint32_t) number)
		return false;
	*out = (uint32_t) number;
	return true;
}

/*
 * The graph of partition p's kept rows into *graph, built with the
 * parameters of the partition's old "lance:hnsw" entry over the vectors
 * its stored values decode to.
 */
static bool
build_graph(const LpIvfModel *model, uint32_t p, const KeptRows *kept, PartitionGraph *graph,
			LpError *err)
{
	const char *file = lp_ivf_model_index_file(model)->name;
	uint32_t	dimension = lp_ivf_model_dimension(model);
	char	   *json;
	LpJsonSpan	params_span;
	LpHnswParams params;
	float	   *vectors = NULL;
	size_t		len;
	bool		ok;

	if (!lp_ivf_model_hnsw_metadata(model, p, &json, err))
		return false;
	{
		LpJsonSpan	object = {json, strlen(json)};

		ok = lp_json_member(object, "params", &params_span) &&
			json_param(params_span, "max_level", 1, LP_HNSW_MAX_LEVELS, &params.max_level) &&
			json_param(params_span, "m", 2, LP_HNSW_MAX_M, &params.m) &&
			json_param(params_span, "ef_construction", 1, LP_HNSW_MAX_EF, &params.ef_construction);
	}
	if (!ok)
	{
		lp_free(json);
		return lp_fail(err, LP_ERR_CORRUPT, "vector index file \"%s\" has invalid HNSW parameters for partition %u",
					   file, p);
	}
	if (kept->count > 0)
	{
		vectors = lp_alloc_array((size_t) kept->count, sizeof(float) * dimension);
		ok = vectors != NULL || no_memory(err);
		for (uint64_t r = 0; ok && r < kept->count; r++)
			lp_ivf_stored_vector(model, p, kept->values, kept->count, r, vectors + r * dimension);
		/* the levels drawn from the partition's number: the same rows give the same graph */
		ok = ok && lp_hnsw_build(vectors, (uint32_t) kept->count, dimension, lp_ivf_model_metric(model),
								 &params, p, &graph->built, err);
		lp_free(vectors);
	}
	/* Lance's HnswMetadata: the entry point, the parameters, each level's first row */
	len = params_span.len + 64 + (size_t) (params.max_level + 1) * 24;
	graph->metadata = ok ? lp_alloc(len) : NULL;
	if (ok && graph->metadata == NULL)
		ok = no_memory(err);
	if (ok)
	{
		size_t		at = (size_t) snprintf(graph->metadata, len, "{\"entry_point\":0,\"params\":%.*s,\"level_offsets\":[0",
										   (int) params_span.len, params_span.data);
		uint64_t	offset = 0;

		/* an empty partition's levels are empty, as Lance's builder leaves them */
		for (uint32_t l = 0; l < params.max_level; l++)
		{
			offset += graph->built != NULL ? lp_hnsw_built_level_nodes(graph->built, l) : 0;
			at += (size_t) snprintf(graph->metadata + at, len - at, ",%llu", (unsigned long long) offset);
		}
		snprintf(graph->metadata + at, len - at, "]}");
		graph->rows = offset;
	}
	lp_free(json);
	return ok;
}

/*
 * Remap partition p of model into writer and rebuild its graph into graph
 * (either NULL: not this time); its new row count into *length, whether it
 * lost rows into *lost.
 */
static bool
remap_partition(const LpIvfModel *model, LpInput *index, LpInput *auxiliary, uint32_t p,
				const LpRowAddressMap *map, LpFileWriter *writer, const LpType *id_type,
				const LpType *vector_type, PartitionGraph *graph, uint32_t *length, bool *lost,
				LpError *err)
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
	if (ok && kept.count > 0 && writer != NULL)
		ok = write_rows(writer, model, id_type, vector_type, &kept, err);
	if (ok && graph != NULL)
		ok = build_graph(model, p, &kept, graph, err);
	*length = (uint32_t) kept.count;
	*lost = ok && kept.count != n;
	kept_free(&kept);
	lp_ivf_partition_free(part);
	return ok;
}

/* Append text to out (of *len bytes, from *at), as a JSON string: quotes and backslashes escaped. */
static void
append_json_string(char *out, size_t *at, const char *text)
{
	out[(*at)++] = '"';
	for (const char *c = text; *c != '\0'; c++)
	{
		if (*c == '"' || *c == '\\')
			out[(*at)++] = '\\';
		out[(*at)++] = *c;
	}
	out[(*at)++] = '"';
}

/* index.idx's schema with "lance:hnsw" the array of the partitions' new entries (*metadata lp_alloc'd). */
static bool
graph_schema(const LpFile *file, const PartitionGraph *graphs, uint32_t num_partitions,
			 LpSchema *schema, LpKeyValue **metadata, char **hnsw, LpError *err)
{
	size_t		len = 3;
	size_t		at = 0;

	for (uint32_t p = 0; p < num_partitions; p++)
		len += 2 * strlen(graphs[p].metadata) + 3;
	*hnsw = lp_alloc(len);
	*metadata = lp_alloc_array(file->schema.num_metadata + 1, sizeof(LpKeyValue));
	if (*hnsw == NULL || *metadata == NULL)
		return no_memory(err);
	(*hnsw)[at++] = '[';
	for (uint32_t p = 0; p < num_partitions; p++)
	{
		if (p > 0)
			(*hnsw)[at++] = ',';
		append_json_string(*hnsw, &at, graphs[p].metadata);
	}
	(*hnsw)[at++] = ']';
	(*hnsw)[at] = '\0';
	*schema = file->schema;
	schema->metadata = *metadata;
	for (uint32_t k = 0; k < file->schema.num_metadata; k++)
	{
		(*metadata)[k] = file->schema.metadata[k];
		if (strcmp((*metadata)[k].key, "lance:hnsw") == 0)
		{
			(*metadata)[k].value.data = (uint8_t *) *hnsw;
			(*metadata)[k].value.len = at;
		}
	}
	return true;
}

/* The position among the top-level fields of index.idx of the one called name, and its type. */
static bool
graph_field(const LpFile *file, const char *name, int64_t *position, LpType **type, LpError *err)
{
	int64_t		field = lp_schema_top_field(&file->schema, name);

	if (field < 0)
		return lp_fail(err, LP_ERR_CORRUPT, "vector index file \"%s\" has no field \"%s\"", file->name, name);
	*position = 0;
	for (int64_t f = 0; f < field; f++)
		*position += file->schema.fields[f].parent_id == -1;
	return lp_type_from_field(file, (uint32_t) field, type, err);
}

/* The rows of one partition's graph: each level's nodes, their neighbours and distances. */
static bool
write_graph(LpFileWriter *writer, const LpHnswBuilt *graph, uint64_t rows, const int64_t *fields,
			LpType *const *types, LpError *err)
{
	uint32_t   *ids = lp_alloc_array((size_t) rows + 1, sizeof(uint32_t));
	uint64_t   *offsets = lp_alloc_array((size_t) rows + 1, sizeof(uint64_t));
	uint64_t	edges = 0;
	uint32_t   *neighbors = NULL;
	float	   *distances = NULL;
	uint64_t	row = 0;
	bool		ok = ids != NULL && offsets != NULL;

	for (uint32_t l = 0; ok && l < lp_hnsw_built_levels(graph); l++)
		for (uint32_t node = 0; node < lp_hnsw_built_level_nodes(graph, 0); node++)
		{
			const uint32_t *n_ids;
			const float *n_dists;
			uint32_t	count;

			if (lp_hnsw_built_neighbors(graph, node, l, &n_ids, &n_dists, &count))
				edges += count;
		}
	neighbors = lp_alloc_array((size_t) edges + 1, sizeof(uint32_t));
	distances = lp_alloc_array((size_t) edges + 1, sizeof(float));
	ok = ok && neighbors != NULL && distances != NULL;
	edges = 0;
	for (uint32_t l = 0; ok && l < lp_hnsw_built_levels(graph); l++)
		for (uint32_t node = 0; node < lp_hnsw_built_level_nodes(graph, 0); node++)
		{
			const uint32_t *n_ids;
			const float *n_dists;
			uint32_t	count;

			if (!lp_hnsw_built_neighbors(graph, node, l, &n_ids, &n_dists, &count))
				continue;
			ids[row] = node;
			offsets[row] = edges;
			memcpy(neighbors + edges, n_ids, sizeof(uint32_t) * count);
			memcpy(distances + edges, n_dists, sizeof(float) * count);
			edges += count;
			row++;
		}
	if (!ok)
		ok = no_memory(err);
	else
	{
		LpArray		id_array = {0};
		LpArray		neighbor_items = {0};
		LpArray		neighbor_lists = {0};
		LpArray		distance_items = {0};
		LpArray		distance_lists = {0};
		LpArray    *neighbor_children[1] = {&neighbor_items};
		LpArray    *distance_children[1] = {&distance_items};
		const LpArray *batch[3];

		offsets[row] = edges;
		id_array.type = types[0];
		id_array.length = row;
		id_array.values = (uint8_t *) ids;
		neighbor_items.type = types[1]->children[0];
		neighbor_items.length = edges;
		neighbor_items.values = (uint8_t *) neighbors;
		neighbor_lists.type = types[1];
		neighbor_lists.length = row;
		neighbor_lists.offsets = offsets;
		neighbor_lists.num_children = 1;
		neighbor_lists.children = neighbor_children;
		distance_items.type = types[2]->children[0];
		distance_items.length = edges;
		distance_items.values = (uint8_t *) distances;
		distance_lists = neighbor_lists;
		distance_lists.type = types[2];
		distance_lists.children = distance_children;
		batch[fields[0]] = &id_array;
		batch[fields[1]] = &neighbor_lists;
		batch[fields[2]] = &distance_lists;
		ok = row == rows ? lp_file_writer_write(writer, batch, 3, err) :
			lp_fail(err, LP_ERR_INTERNAL, "an HNSW graph of %llu rows wrote %llu",
					(unsigned long long) rows, (unsigned long long) row);
	}
	lp_free(ids);
	lp_free(offsets);
	lp_free(neighbors);
	lp_free(distances);
	return ok;
}

/*
 * index.idx anew, as Lance's remap writes it for HNSW sub-indexes: every
 * partition's graph rebuilt over its kept rows (graphs[p]), the IVF
 * message's offsets and lengths those of the graphs' rows.
 */
static bool
write_graphs(const LpIvfModel *model, LpInput *index, const PartitionGraph *graphs,
			 LpOutput *index_out, LpError *err)
{
	const LpFile *file = lp_ivf_model_index_file(model);
	uint32_t	num_partitions = lp_ivf_model_num_partitions(model);
	static const char *const names[3] = {"__vector_id", "__neighbors", "_distance"};
	int64_t		fields[3];
	LpType	   *types[3] = {NULL, NULL, NULL};
	LpSchema	schema;
	LpKeyValue *metadata = NULL;
	char	   *hnsw = NULL;
	LpFileWriter *writer = NULL;
	uint64_t   *offsets = lp_alloc_array(num_partitions, sizeof(uint64_t));
	uint32_t   *lengths = lp_alloc_array(num_partitions, sizeof(uint32_t));
	LpBytes    *buffers = lp_alloc_array((size_t) file->num_global_buffers + 1, sizeof(LpBytes));
	uint64_t	next = 0;
	uint64_t	size;
	bool		ok = offsets != NULL && lengths != NULL && buffers != NULL;

	if (!ok)
		ok = no_memory(err);
	for (int f = 0; ok && f < 3; f++)
		ok = graph_field(file, names[f], &fields[f], &types[f], err);
	/* Lance's graph schema: uint32 ids, lists of uint32 neighbours and of float distances */
	if (ok && (file->schema.num_fields != 5 || types[0]->id != LP_TYPE_UINT32 ||
			   types[1]->id != LP_TYPE_LIST || types[1]->num_children != 1 ||
			   types[1]->children[0]->id != LP_TYPE_UINT32 || types[2]->id != LP_TYPE_LIST ||
			   types[2]->num_children != 1 || types[2]->children[0]->id != LP_TYPE_FLOAT))
		ok = lp_fail(err, LP_ERR_UNSUPPORTED, "vector index file \"%s\" has HNSW graphs of a form lance_parts does not write",
					 file->name);
	ok = ok && graph_schema(file, graphs, num_partitions, &schema, &metadata, &hnsw, err);
	if (ok && (writer = lp_file_writer_open(index_out, &schema, file->version, err)) == NULL)
		ok = false;
	for (uint32_t p = 0; ok && p < num_partitions; p++)
	{
		if (graphs[p].built != NULL)
			ok = write_graph(writer, graphs[p].built, graphs[p].rows, fields, types, err);
		offsets[p] = next;
		lengths[p] = (uint32_t) graphs[p].rows;
		next += graphs[p].rows;
	}
	ok = ok && new_global_buffers(index, file, offsets, lengths, num_partitions, buffers, err) &&
		lp_file_writer_finish_with_buffers(writer, buffers, file->num_global_buffers - 1, &size, err);
	for (uint32_t g = 0; buffers != NULL && g + 1 < file->num_global_buffers; g++)
		lp_free(buffers[g].data);
	lp_free(buffers);
	lp_file_writer_free(writer);
	for (int f = 0; f < 3; f++)
		if (types[f] != NULL)
			lp_type_free(types[f]);
	lp_free(metadata);
	lp_free(hnsw);
	lp_free(offsets);
	lp_free(lengths);
	return ok;
}

bool
lp_ivf_index_remap(LpInput *index, LpInput *auxiliary, const LpRowAddressMap *map,
				   LpOutput *auxiliary_out, LpOutput *index_out, bool *index_written,
				   LpError *err)
{
	PartitionGraph *graphs = NULL;
	bool		rows_lost = false;
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

	*index_written = false;
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
		bool		lost;

		if (!remap_partition(model, index, auxiliary, p, map, writer, id_type, vector_type,
							 NULL, &lengths[p], &lost, err))
			goto done;
		offsets[p] = next;
		next += lengths[p];
		rows_lost |= lost;
	}
	/* a graph numbers its partition's rows: Lance rebuilds them all when rows go */
	if (lp_ivf_model_has_graph(model) && rows_lost)
	{
		graphs = lp_alloc_array(num_partitions, sizeof(PartitionGraph));
		if (graphs == NULL)
		{
			no_memory(err);
			goto done;
		}
		for (uint32_t p = 0; p < num_partitions; p++)
		{
			uint32_t	length;
			bool		lost;

			if (!remap_partition(model, index, auxiliary, p, map, NULL, id_type, vector_type,
								 &graphs[p], &length, &lost, err))
				goto done;
		}
		if (!write_graphs(model, index, graphs, index_out, err))
			goto done;
		*index_written = true;
	}
	if (!new_global_buffers(auxiliary, file, offsets, lengths, num_partitions, buffers, err) ||
		!lp_file_writer_finish_with_buffers(writer, buffers, file->num_global_buffers - 1, &size, err))
		goto done;
	ok = true;

done:
	for (uint32_t p = 0; graphs != NULL && p < num_partitions; p++)
	{
		lp_hnsw_built_free(graphs[p].built);
		lp_free(graphs[p].metadata);
	}
	lp_free(graphs);
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
