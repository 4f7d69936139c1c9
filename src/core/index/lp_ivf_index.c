/*
 * lp_ivf_index.c - reading the IVF vector index files Lance writes and
 * scoring the rows of their partitions (lp_ivf_index.h).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/lp_alloc.h"
#include "base/lp_checked.h"
#include "base/lp_interrupt.h"
#include "base/lp_protobuf.h"
#include "decode/lp_decode.h"
#include "format/lp_file.h"
#include "format/lp_schema.h"
#include "format/lp_values.h"
#include "index/lp_hnsw_graph.h"
#include "index/lp_index_json.h"
#include "index/lp_ivf_index.h"
#include "index/lp_pq_score.h"
#include "index.pb-c.h"

/* Far above what Lance writes; bounds the centroid table and the query. */
#define MAX_DIMENSION 65536
#define MAX_PARTITIONS ((uint64_t) 1 << 20)
/* The most centroids of a PQ sub-vector: 8-bit codes (4-bit ones have 16). */
#define PQ_MAX_CENTROIDS 256

struct LpIvfModel
{
	char	   *type;
	LpVectorMetric metric;
	LpIvfStorage storage;
	uint32_t	dimension;
	uint32_t	num_partitions;
	float	   *centroids;		/* num_partitions x dimension */
	uint64_t   *offsets;		/* first auxiliary row of each partition */
	uint32_t   *lengths;
	LpFile	   *auxiliary;		/* the auxiliary file's metadata */
	uint32_t	row_id_field;
	uint32_t	vector_field;
	uint32_t	num_sub_vectors;	/* PQ */
	uint32_t	num_bits;		/* PQ: 8, or 4 (two sub-vectors' codes a byte, the even one low) */
	bool		transposed;		/* PQ: code bytes stored byte column by byte column */
	float	   *codebook;		/* PQ: num_sub_vectors x 2^num_bits x (dimension / num_sub_vectors) */
	float	   *codebook_by_dimension;	/* PQ: the same, dimension by dimension (lp_pq_score.h) */
	double		sq_start;		/* SQ: code 0 is sq_start, code 255 sq_end */
	double		sq_end;
	LpFile	   *index_file;		/* HNSW: index.idx's metadata (its rows are the graphs) */
	uint64_t   *graph_offsets;	/* HNSW: each partition's first row of index.idx */
	uint32_t   *graph_lengths;
	char	   *hnsw_metadata;	/* HNSW: "lance:hnsw", a JSON array of one JSON string a partition */
	size_t		hnsw_metadata_len;
	uint64_t	memory;
};

struct LpIvfPartition
{
	uint32_t	partition;
	uint64_t	num_rows;
	uint64_t   *row_ids;
	uint8_t    *values;			/* num_rows stored vectors (float32) or codes, as stored */
	LpHnswGraph *graph;			/* HNSW indexes */
	char	   *graph_unread;	/* HNSW indexes: why the graph is not read, or NULL */
	uint64_t	memory;
};

struct LpIvfScan
{
	const LpIvfModel *model;
	float	   *query;			/* normalized under cosine */
	float	   *residual;		/* PQ under l2 and cosine: query - centroid */
	float	   *table;			/* PQ: the distance of each sub-vector to each centroid */
	uint8_t    *codes;			/* SQ under l2 and cosine: the query's own codes */
	float		sq_scale;		/* SQ under l2 and cosine: from code distances to the vectors' */
	float		sq_values[256]; /* SQ under dot: the middle of each code's step */
};

/* ---- reading the model ----------------------------------------------------------- */

static const LpKeyValue *
schema_metadata(const LpFile *file, const char *key)
{
	return lp_metadata_find(file->schema.metadata, file->schema.num_metadata, key);
}

static LpJsonSpan
span_of(const LpKeyValue *entry)
{
	LpJsonSpan	span = {(const char *) entry->value.data, entry->value.len};

	return span;
}

/* Member key of object as a string (lp_alloc'd) or a number. */
static bool
json_string_member(LpJsonSpan object, const char *key, char **out)
{
	LpJsonSpan	value;

	*out = NULL;
	return lp_json_member(object, key, &value) && lp_json_string(value, out);
}

static bool
json_number_member(LpJsonSpan object, const char *key, double *out)
{
	LpJsonSpan	value;

	return lp_json_member(object, key, &value) && lp_json_number(value, out);
}

/* An unsigned integer member no larger than max. */
static bool
json_count_member(LpJsonSpan object, const char *key, uint64_t max, uint64_t *out)
{
	double		value;

	if (!json_number_member(object, key, &value) || value < 0 || value > (double) max ||
		value != floor(value))
		return false;
	*out = (uint64_t) value;
	return true;
}

/* A decimal number of schema metadata key (a global buffer's number). */
static bool
metadata_count(const LpFile *file, const char *key, uint64_t max, uint64_t *out, LpError *err)
{
	const LpKeyValue *entry = schema_metadata(file, key);
	LpJsonSpan	span;
	double		value;

	if (entry == NULL)
		return lp_fail(err, LP_ERR_UNSUPPORTED, "vector index file \"%s\" has no \"%s\" metadata",
					   file->name, key);
	span = span_of(entry);
	if (!lp_json_number(span, &value) || value < 0 || value > (double) max || value != floor(value))
		return lp_fail(err, LP_ERR_CORRUPT, "vector index file \"%s\" has an invalid \"%s\"",
					   file->name, key);
	*out = (uint64_t) value;
	return true;
}

bool
lp_ivf_read_global_buffer(LpInput *input, const LpFile *file, uint64_t number, uint8_t **out,
				   size_t *len, LpError *err)
{
	const LpBufferRef *ref;

	*out = NULL;
	if (number >= file->num_global_buffers)
		return lp_fail(err, LP_ERR_CORRUPT, "vector index file \"%s\" names global buffer %llu of %u",
					   file->name, (unsigned long long) number, file->num_global_buffers);
	ref = &file->global_buffers[number];
	if (!lp_range_within(ref->offset, ref->size, file->file_size) || ref->size > SIZE_MAX)
		return lp_fail(err, LP_ERR_CORRUPT, "vector index file \"%s\" has global buffer %llu beyond its end",
					   file->name, (unsigned long long) number);
	*out = lp_alloc(ref->size > 0 ? (size_t) ref->size : 1);
	if (*out == NULL)
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory reading vector index file \"%s\"",
					   file->name);
	*len = (size_t) ref->size;
	if (!lp_input_read(input, ref->offset, *out, *len, err))
	{
		lp_free(*out);
		*out = NULL;
		return false;
	}
	return true;
}

bool
lp_ivf_message_buffer(const LpFile *file, uint64_t *number, LpError *err)
{
	return metadata_count(file, "lance:ivf", UINT32_MAX, number, err);
}

/* The IVF message of the global buffer schema metadata "lance:ivf" names. */
static bool
read_ivf(LpInput *input, const LpFile *file, Lance__Index__Pb__IVF **ivf, LpError *err)
{
	uint64_t	number = 0;
	uint8_t    *bytes;
	size_t		len;
	LpUnpackResult result;

	*ivf = NULL;
	if (!lp_ivf_message_buffer(file, &number, err) ||
		!lp_ivf_read_global_buffer(input, file, number, &bytes, &len, err))
		return false;
	result = lp_protobuf_unpack(&lance__index__pb__ivf__descriptor, bytes, len,
								(ProtobufCMessage **) ivf);
	lp_free(bytes);
	if (result == LP_UNPACK_NO_MEMORY)
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory reading vector index file \"%s\"",
					   file->name);
	if (result != LP_UNPACK_OK)
		return lp_fail(err, LP_ERR_CORRUPT, "the IVF message of vector index file \"%s\" %s",
					   file->name, lp_unpack_result_text(result));
	return true;
}

/*
 * The float32 values of tensor, which must hold rows x columns of them
 * (rows * columns elements, whatever its shape's split), into *out.
 */
static bool
tensor_floats(const Lance__Index__Pb__Tensor *tensor, uint64_t elements, const char *what,
			  const char *file, float **out, LpError *err)
{
	uint64_t	shape_elements = 1;
	uint64_t	bytes;

	*out = NULL;
	if (tensor == NULL)
		return lp_fail(err, LP_ERR_UNSUPPORTED, "vector index file \"%s\" has no %s tensor",
					   file, what);
	if (tensor->data_type != LANCE__INDEX__PB__TENSOR__DATA_TYPE__FLOAT32)
		return lp_fail(err, LP_ERR_UNSUPPORTED, "vector index file \"%s\" has %s of data type %d, not float32",
					   file, what, (int) tensor->data_type);
	for (size_t i = 0; i < tensor->n_shape; i++)
		if (!lp_mul_u64(shape_elements, tensor->shape[i], &shape_elements))
			return lp_fail(err, LP_ERR_CORRUPT, "vector index file \"%s\" has a %s shape that overflows",
						   file, what);
	if (shape_elements != elements || !lp_mul_u64(elements, sizeof(float), &bytes) ||
		tensor->data.len != bytes)
		return lp_fail(err, LP_ERR_CORRUPT, "vector index file \"%s\" has %s of %llu elements in %zu bytes, expected %llu elements",
					   file, what, (unsigned long long) shape_elements, tensor->data.len,
					   (unsigned long long) elements);
	*out = lp_alloc(bytes > 0 ? (size_t) bytes : 1);
	if (*out == NULL)
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory reading vector index file \"%s\"", file);
	memcpy(*out, tensor->data.data, (size_t) bytes);
	return true;
}

/* Type and metric from index.idx's lance:index. */
static bool
read_index_kind(LpIvfModel *model, const LpFile *file, LpError *err)
{
	const LpKeyValue *entry = schema_metadata(file, "lance:index");
	static const char *const types[] = {
		"IVF_FLAT", "IVF_PQ", "IVF_SQ", "IVF_HNSW_FLAT", "IVF_HNSW_PQ", "IVF_HNSW_SQ"
	};
	char	   *metric = NULL;
	bool		known = false;

	if (entry == NULL)
		return lp_fail(err, LP_ERR_UNSUPPORTED, "vector index file \"%s\" has no \"lance:index\" metadata",
					   file->name);
	if (!json_string_member(span_of(entry), "type", &model->type) ||
		!json_string_member(span_of(entry), "distance_type", &metric))
	{
		lp_free(metric);
		return lp_fail(err, LP_ERR_CORRUPT, "vector index file \"%s\" has invalid \"lance:index\" metadata",
					   file->name);
	}
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		known |= strcmp(model->type, types[i]) == 0;
	if (strcmp(metric, "l2") == 0)
		model->metric = LP_VECTOR_L2;
	else if (strcmp(metric, "cosine") == 0)
		model->metric = LP_VECTOR_COSINE;
	else if (strcmp(metric, "dot") == 0)
		model->metric = LP_VECTOR_DOT;
	else
		known = false;
	lp_free(metric);
	if (!known)
		return lp_fail(err, LP_ERR_UNSUPPORTED, "vector index file \"%s\" is of type %s with a distance lance_parts does not read",
					   file->name, model->type);
	return true;
}

/* Centroids of index.idx's IVF message. */
static bool
read_centroids(LpIvfModel *model, LpInput *input, const LpFile *file, LpError *err)
{
	Lance__Index__Pb__IVF *ivf;
	const Lance__Index__Pb__Tensor *tensor;
	bool		ok;

	if (!read_ivf(input, file, &ivf, err))
		return false;
	tensor = ivf->centroids_tensor;
	if (tensor == NULL || tensor->n_shape != 2 || tensor->shape[0] == 0 ||
		tensor->shape[0] > MAX_PARTITIONS || tensor->shape[1] == 0 ||
		tensor->shape[1] > MAX_DIMENSION)
	{
		lp_protobuf_free((ProtobufCMessage *) ivf);
		return lp_fail(err, tensor == NULL ? LP_ERR_UNSUPPORTED : LP_ERR_CORRUPT,
					   "vector index file \"%s\" has no centroid tensor of [partitions, dimension]",
					   file->name);
	}
	model->num_partitions = tensor->shape[0];
	model->dimension = tensor->shape[1];
	ok = tensor_floats(tensor, (uint64_t) model->num_partitions * model->dimension, "centroids",
					   file->name, &model->centroids, err);
	lp_protobuf_free((ProtobufCMessage *) ivf);
	return ok;
}

/* Each partition's first row and row count in file, checked against its rows, into *offsets and *lengths. */
static bool
read_partitions(const LpIvfModel *model, LpInput *input, const LpFile *file, uint64_t **offsets,
				uint32_t **lengths, LpError *err)
{
	Lance__Index__Pb__IVF *ivf;

	if (!read_ivf(input, file, &ivf, err))
		return false;
	if (ivf->n_offsets != model->num_partitions || ivf->n_lengths != model->num_partitions)
	{
		lp_fail(err, LP_ERR_CORRUPT, "vector index file \"%s\" has %zu partition offsets and %zu lengths for %u partitions",
				file->name, ivf->n_offsets, ivf->n_lengths, model->num_partitions);
		lp_protobuf_free((ProtobufCMessage *) ivf);
		return false;
	}
	*offsets = lp_alloc(sizeof(uint64_t) * model->num_partitions);
	*lengths = lp_alloc(sizeof(uint32_t) * model->num_partitions);
	if (*offsets == NULL || *lengths == NULL)
	{
		lp_protobuf_free((ProtobufCMessage *) ivf);
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory reading vector index file \"%s\"",
					   file->name);
	}
	for (uint32_t p = 0; p < model->num_partitions; p++)
	{
		if (!lp_range_within(ivf->offsets[p], ivf->lengths[p], file->num_rows))
		{
			lp_fail(err, LP_ERR_CORRUPT, "vector index file \"%s\" has partition %u at rows %llu + %u of %llu",
					file->name, p, (unsigned long long) ivf->offsets[p], ivf->lengths[p],
					(unsigned long long) file->num_rows);
			lp_protobuf_free((ProtobufCMessage *) ivf);
			return false;
		}
		(*offsets)[p] = ivf->offsets[p];
		(*lengths)[p] = ivf->lengths[p];
	}
	lp_protobuf_free((ProtobufCMessage *) ivf);
	return true;
}

/*
 * An HNSW sub-index (schema metadata "lance:hnsw"): the partitions' rows of
 * index.idx, and the metadata.  Other sub-indexes (FLAT) have no rows.
 */
static bool
read_graphs(LpIvfModel *model, LpInput *input, LpFile *file, LpError *err)
{
	const LpKeyValue *entry = schema_metadata(file, "lance:hnsw");

	if (entry == NULL)
		return true;
	model->hnsw_metadata = lp_alloc(entry->value.len + 1);
	if (model->hnsw_metadata == NULL)
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory reading vector index file \"%s\"", file->name);
	memcpy(model->hnsw_metadata, entry->value.data, entry->value.len);
	model->hnsw_metadata[entry->value.len] = '\0';
	model->hnsw_metadata_len = entry->value.len;
	if (!read_partitions(model, input, file, &model->graph_offsets, &model->graph_lengths, err))
		return false;
	model->index_file = file;
	return true;
}

/* Whether top-level field of file is a fixed_size_list of size items of item_type. */
static bool
is_fixed_list(const LpFile *file, uint32_t field, LpTypeId item_type, uint64_t size)
{
	LpType	   *type = NULL;
	LpError		ignored;
	bool		result;

	if (!lp_type_parse(file->schema.fields[field].logical_type, file->name,
					   file->schema.fields[field].name, &type, &ignored))
		return false;
	result = type->id == LP_TYPE_FIXED_SIZE_LIST && (uint64_t) type->fixed_size == size &&
		type->num_children == 1 && type->children[0]->id == item_type;
	lp_type_free(type);
	return result;
}

/* storage_metadata: a JSON array whose first element is a string of JSON. */
static bool
storage_metadata(const LpFile *file, char **json, LpError *err)
{
	const LpKeyValue *entry = schema_metadata(file, "storage_metadata");
	LpJsonSpan	first;

	*json = NULL;
	if (entry == NULL || !lp_json_element(span_of(entry), 0, &first) ||
		!lp_json_string(first, json))
		return lp_fail(err, LP_ERR_CORRUPT, "vector index file \"%s\" has no valid \"storage_metadata\"",
					   file->name);
	return true;
}

uint64_t
lp_ivf_model_row_width(const LpIvfModel *model)
{
	if (model->storage == LP_IVF_STORAGE_PQ)
		return (uint64_t) model->num_sub_vectors * model->num_bits / 8;
	if (model->storage == LP_IVF_STORAGE_SQ)
		return model->dimension;
	return (uint64_t) model->dimension * sizeof(float);
}

/* Centroids of each PQ sub-vector. */
static uint64_t
pq_centroids(const LpIvfModel *model)
{
	return (uint64_t) 1 << model->num_bits;
}

static bool
read_pq(LpIvfModel *model, LpInput *input, const LpFile *file, uint32_t field, LpError *err)
{
	char	   *json;
	LpJsonSpan	span;
	uint64_t	nbits;
	uint64_t	num_sub_vectors;
	uint64_t	dimension;
	uint64_t	position;
	LpJsonSpan	transposed;
	uint8_t    *bytes;
	size_t		len;
	Lance__Index__Pb__Tensor *tensor;
	LpUnpackResult result;
	bool		ok;

	if (!storage_metadata(file, &json, err))
		return false;
	span.data = json;
	span.len = strlen(json);
	ok = json_count_member(span, "nbits", 64, &nbits) &&
		json_count_member(span, "num_sub_vectors", MAX_DIMENSION, &num_sub_vectors) &&
		json_count_member(span, "dimension", MAX_DIMENSION, &dimension) &&
		json_count_member(span, "codebook_position", UINT32_MAX, &position) &&
		lp_json_member(span, "transposed", &transposed);
	if (ok)
		model->transposed = transposed.len == 4 && memcmp(transposed.data, "true", 4) == 0;
	lp_free(json);
	if (!ok)
		return lp_fail(err, LP_ERR_CORRUPT, "vector index file \"%s\" has invalid PQ metadata",
					   file->name);
	if (nbits != 8 && nbits != 4)
		return lp_fail(err, LP_ERR_UNSUPPORTED, "vector index file \"%s\" has %llu-bit PQ codes; lance_parts reads 8-bit and 4-bit ones",
					   file->name, (unsigned long long) nbits);
	model->num_bits = (uint32_t) nbits;
	model->num_sub_vectors = (uint32_t) num_sub_vectors;
	if (dimension != model->dimension || num_sub_vectors == 0 || dimension % num_sub_vectors != 0 ||
		(nbits == 4 && num_sub_vectors % 2 != 0) ||
		!is_fixed_list(file, field, LP_TYPE_UINT8, lp_ivf_model_row_width(model)))
		return lp_fail(err, LP_ERR_CORRUPT, "vector index file \"%s\" has %llu-bit PQ codes of %llu sub-vectors that do not fit dimension %u",
					   file->name, (unsigned long long) nbits, (unsigned long long) num_sub_vectors,
					   model->dimension);
	if (!lp_ivf_read_global_buffer(input, file, position, &bytes, &len, err))
		return false;
	result = lp_protobuf_unpack(&lance__index__pb__tensor__descriptor, bytes, len,
								(ProtobufCMessage **) &tensor);
	lp_free(bytes);
	if (result == LP_UNPACK_NO_MEMORY)
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory reading vector index file \"%s\"",
					   file->name);
	if (result != LP_UNPACK_OK)
		return lp_fail(err, LP_ERR_CORRUPT, "the PQ codebook of vector index file \"%s\" %s",
					   file->name, lp_unpack_result_text(result));
	ok = tensor_floats(tensor, pq_centroids(model) * model->dimension, "a PQ codebook",
					   file->name, &model->codebook, err);
	lp_protobuf_free((ProtobufCMessage *) tensor);
	if (!ok)
		return false;
	model->codebook_by_dimension = lp_alloc(sizeof(float) * pq_centroids(model) * model->dimension);
	if (model->codebook_by_dimension == NULL)
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
	lp_pq_codebook_by_dimension(model->codebook, model->num_sub_vectors,
								model->dimension / model->num_sub_vectors,
								(uint32_t) pq_centroids(model), model->codebook_by_dimension);
	return true;
}

static bool
read_sq(LpIvfModel *model, const LpFile *file, uint32_t field, LpError *err)
{
	char	   *json;
	LpJsonSpan	span;
	LpJsonSpan	bounds;
	uint64_t	num_bits;
	uint64_t	dimension;
	bool		ok;

	if (!storage_metadata(file, &json, err))
		return false;
	span.data = json;
	span.len = strlen(json);
	ok = json_count_member(span, "num_bits", 64, &num_bits) &&
		json_count_member(span, "dim", MAX_DIMENSION, &dimension) &&
		lp_json_member(span, "bounds", &bounds) &&
		json_number_member(bounds, "start", &model->sq_start) &&
		json_number_member(bounds, "end", &model->sq_end);
	lp_free(json);
	if (!ok || model->sq_start > model->sq_end)
		return lp_fail(err, LP_ERR_CORRUPT, "vector index file \"%s\" has invalid SQ metadata",
					   file->name);
	if (num_bits != 8)
		return lp_fail(err, LP_ERR_UNSUPPORTED, "vector index file \"%s\" has %llu-bit SQ codes; lance_parts reads 8-bit ones",
					   file->name, (unsigned long long) num_bits);
	if (dimension != model->dimension || !is_fixed_list(file, field, LP_TYPE_UINT8, dimension))
		return lp_fail(err, LP_ERR_CORRUPT, "vector index file \"%s\" has SQ codes that do not fit dimension %u",
					   file->name, model->dimension);
	return true;
}

/* The stored vectors' column and its storage's parameters. */
static bool
read_storage(LpIvfModel *model, LpInput *input, const LpFile *file, LpError *err)
{
	int64_t		row_ids = lp_schema_top_field(&file->schema, "_rowid");
	int64_t		flat = lp_schema_top_field(&file->schema, "flat");
	int64_t		pq = lp_schema_top_field(&file->schema, "__pq_code");
	int64_t		sq = lp_schema_top_field(&file->schema, "__sq_code");

	if (row_ids < 0 || strcmp(file->schema.fields[row_ids].logical_type, "uint64") != 0)
		return lp_fail(err, LP_ERR_CORRUPT, "vector index file \"%s\" has no uint64 field \"_rowid\"",
					   file->name);
	model->row_id_field = (uint32_t) row_ids;
	if (flat >= 0)
	{
		model->storage = LP_IVF_STORAGE_FLAT;
		model->vector_field = (uint32_t) flat;
		if (!is_fixed_list(file, (uint32_t) flat, LP_TYPE_FLOAT, model->dimension))
			return lp_fail(err, LP_ERR_UNSUPPORTED, "vector index file \"%s\" stores vectors that are not %u float32 items",
						   file->name, model->dimension);
		return true;
	}
	if (pq >= 0)
	{
		model->storage = LP_IVF_STORAGE_PQ;
		model->vector_field = (uint32_t) pq;
		return read_pq(model, input, file, (uint32_t) pq, err);
	}
	if (sq >= 0)
	{
		model->storage = LP_IVF_STORAGE_SQ;
		model->vector_field = (uint32_t) sq;
		return read_sq(model, file, (uint32_t) sq, err);
	}
	return lp_fail(err, LP_ERR_UNSUPPORTED, "vector index file \"%s\" stores its vectors in a form lance_parts does not read",
				   file->name);
}

bool
lp_ivf_model_read(LpInput *index, LpInput *auxiliary, LpIvfModel **out, LpError *err)
{
	LpIvfModel *model = lp_alloc0(sizeof(LpIvfModel));
	LpFile	   *index_file = NULL;

	*out = NULL;
	if (model == NULL)
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
	index_file = lp_file_open(index, err);
	if (index_file == NULL)
		goto fail;
	if (!read_index_kind(model, index_file, err) ||
		!read_centroids(model, index, index_file, err) ||
		!read_graphs(model, index, index_file, err))
		goto fail;
	if (model->index_file == NULL)
		lp_file_free(index_file);
	index_file = NULL;
	model->auxiliary = lp_file_open(auxiliary, err);
	if (model->auxiliary == NULL ||
		!read_partitions(model, auxiliary, model->auxiliary, &model->offsets, &model->lengths, err) ||
		!read_storage(model, auxiliary, model->auxiliary, err))
		goto fail;
	/* the arrays, and the auxiliary file's metadata about as large in memory as on disk */
	model->memory = sizeof(LpIvfModel) +
		(uint64_t) model->num_partitions * (model->dimension * sizeof(float) + 12) +
		(model->codebook != NULL ? 2 * pq_centroids(model) * model->dimension * sizeof(float) : 0) +
		(model->auxiliary->file_size - model->auxiliary->column_meta_start) +
		(model->index_file != NULL ? model->hnsw_metadata_len + (uint64_t) model->num_partitions * 12 +
		 model->index_file->file_size - model->index_file->column_meta_start : 0);
	*out = model;
	return true;

fail:
	if (index_file != model->index_file)
		lp_file_free(index_file);
	lp_ivf_model_free(model);
	return false;
}

void
lp_ivf_model_free(LpIvfModel *model)
{
	if (model == NULL)
		return;
	lp_free(model->type);
	lp_free(model->centroids);
	lp_free(model->offsets);
	lp_free(model->lengths);
	lp_free(model->codebook);
	lp_free(model->codebook_by_dimension);
	lp_file_free(model->auxiliary);
	lp_file_free(model->index_file);
	lp_free(model->graph_offsets);
	lp_free(model->graph_lengths);
	lp_free(model->hnsw_metadata);
	lp_free(model);
}

const char *
lp_ivf_model_type(const LpIvfModel *model)
{
	return model->type;
}

LpVectorMetric
lp_ivf_model_metric(const LpIvfModel *model)
{
	return model->metric;
}

LpIvfStorage
lp_ivf_model_storage(const LpIvfModel *model)
{
	return model->storage;
}

uint32_t
lp_ivf_model_dimension(const LpIvfModel *model)
{
	return model->dimension;
}

uint32_t
lp_ivf_model_num_partitions(const LpIvfModel *model)
{
	return model->num_partitions;
}

uint64_t
lp_ivf_model_memory(const LpIvfModel *model)
{
	return model->memory;
}

const LpFile *
lp_ivf_model_auxiliary_file(const LpIvfModel *model)
{
	return model->auxiliary;
}

uint32_t
lp_ivf_model_row_id_field(const LpIvfModel *model)
{
	return model->row_id_field;
}

uint32_t
lp_ivf_model_vector_field(const LpIvfModel *model)
{
	return model->vector_field;
}

bool
lp_ivf_model_pq_transposed(const LpIvfModel *model)
{
	return model->storage == LP_IVF_STORAGE_PQ && model->transposed;
}

/* ---- searching -------------------------------------------------------------------- */

static float
squared_l2(const float *a, const float *b, uint32_t n)
{
	float		sum = 0;

	for (uint32_t i = 0; i < n; i++)
	{
		float		d = a[i] - b[i];

		sum += d * d;
	}
	return sum;
}

static float
dot(const float *a, const float *b, uint32_t n)
{
	float		sum = 0;

	for (uint32_t i = 0; i < n; i++)
		sum += a[i] * b[i];
	return sum;
}

/* query normalized under cosine into out; false for a zero query. */
static bool
prepare_query(const LpIvfModel *model, const float *query, float *out)
{
	float		norm;

	memcpy(out, query, sizeof(float) * model->dimension);
	if (model->metric != LP_VECTOR_COSINE)
		return true;
	norm = sqrtf(dot(query, query, model->dimension));
	if (!(norm > 0) || !isfinite(norm))
		return false;
	for (uint32_t i = 0; i < model->dimension; i++)
		out[i] /= norm;
	return true;
}

typedef struct PartitionDistance
{
	float		distance;
	uint32_t	partition;
} PartitionDistance;

static int
compare_partition_distances(const void *a, const void *b)
{
	const PartitionDistance *x = a;
	const PartitionDistance *y = b;
	bool		x_nan = isnan(x->distance);
	bool		y_nan = isnan(y->distance);

	if (x_nan != y_nan)
		return x_nan ? 1 : -1;
	if (!x_nan && x->distance != y->distance)
		return x->distance < y->distance ? -1 : 1;
	return x->partition < y->partition ? -1 : x->partition > y->partition;
}

bool
lp_ivf_nearest_partitions(const LpIvfModel *model, const float *query, uint32_t nprobes,
						  uint32_t *partitions, uint32_t *num, LpError *err)
{
	float	   *q = lp_alloc(sizeof(float) * model->dimension);
	PartitionDistance *all = lp_alloc(sizeof(PartitionDistance) * model->num_partitions);

	*num = 0;
	if (q == NULL || all == NULL)
	{
		lp_free(q);
		lp_free(all);
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
	}
	if (!prepare_query(model, query, q))
	{
		lp_free(q);
		lp_free(all);
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT, "a zero query vector has no cosine distance");
	}
	for (uint32_t p = 0; p < model->num_partitions; p++)
	{
		const float *centroid = model->centroids + (uint64_t) p * model->dimension;

		all[p].partition = p;
		all[p].distance = model->metric == LP_VECTOR_DOT ? 1 - dot(q, centroid, model->dimension)
			: squared_l2(q, centroid, model->dimension);
	}
	qsort(all, model->num_partitions, sizeof(PartitionDistance), compare_partition_distances);
	*num = nprobes < model->num_partitions ? nprobes : model->num_partitions;
	for (uint32_t i = 0; i < *num; i++)
		partitions[i] = all[i].partition;
	lp_free(q);
	lp_free(all);
	return true;
}

/*
 * What SQ scores need of the query, as Lance 12 (lancedb 0.39) scores: under
 * l2 and cosine the distance of the query's own codes to a row's (so the
 * query is quantized: a value outside the bounds takes the nearest code, NaN
 * code 0, as a saturating cast does), under dot the query's dot product with
 * the middle of each code's step.  Scored otherwise, near-equal rows rank in
 * another order than lancedb's and a walk of its graphs takes other paths.
 */
static void
prepare_sq(LpIvfScan *scan)
{
	const LpIvfModel *model = scan->model;
	double		range = model->sq_end - model->sq_start;

	for (uint32_t c = 0; c < 256; c++)
		scan->sq_values[c] = (float) (model->sq_start + (c + 0.5) * range / 255.0);
	for (uint32_t d = 0; d < model->dimension; d++)
	{
		double		code = range > 0 ? (scan->query[d] - model->sq_start) * 255.0 / range : 0;

		scan->codes[d] = !(code > 0) ? 0 : code >= 255 ? 255 : (uint8_t) code;
	}
	scan->sq_scale = (float) (range * range / (255.0 * 255.0));
}

bool
lp_ivf_scan_open(const LpIvfModel *model, const float *query, LpIvfScan **out, LpError *err)
{
	LpIvfScan  *scan = lp_alloc0(sizeof(LpIvfScan));

	*out = NULL;
	if (scan == NULL)
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
	scan->model = model;
	scan->query = lp_alloc(sizeof(float) * model->dimension);
	if (model->storage == LP_IVF_STORAGE_PQ)
	{
		scan->residual = lp_alloc(sizeof(float) * model->dimension);
		scan->table = lp_alloc(sizeof(float) * pq_centroids(model) * model->num_sub_vectors);
	}
	if (model->storage == LP_IVF_STORAGE_SQ)
		scan->codes = lp_alloc(model->dimension);
	if (scan->query == NULL ||
		(model->storage == LP_IVF_STORAGE_PQ && (scan->residual == NULL || scan->table == NULL)) ||
		(model->storage == LP_IVF_STORAGE_SQ && scan->codes == NULL))
	{
		lp_ivf_scan_close(scan);
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
	}
	if (!prepare_query(model, query, scan->query))
	{
		lp_ivf_scan_close(scan);
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT, "a zero query vector has no cosine distance");
	}
	if (model->storage == LP_IVF_STORAGE_SQ)
		prepare_sq(scan);
	*out = scan;
	return true;
}

/* Lance's flat distance of one stored vector. */
static float
flat_score(const LpIvfModel *model, const float *query, const float *vector)
{
	uint32_t	n = model->dimension;

	switch (model->metric)
	{
		case LP_VECTOR_L2:
			return squared_l2(query, vector, n);
		case LP_VECTOR_COSINE:
			/* the query is normalized; a zero stored vector gives NaN */
			return 1 - dot(query, vector, n) / sqrtf(dot(vector, vector, n));
		default:
			return 1 - dot(query, vector, n);
	}
}

/*
 * The PQ distance table of partition: for each sub-vector s and centroid c,
 * the distance of the query's sub-vector s (its residual from the
 * partition's centroid under l2 and cosine, as Lance encodes residuals
 * there) to centroid c of sub-vector s.
 */
static void
build_pq_table(LpIvfScan *scan, uint32_t partition)
{
	const LpIvfModel *model = scan->model;
	LpPqCodebook codebook = {model->codebook_by_dimension, model->num_sub_vectors,
		model->dimension / model->num_sub_vectors, (uint32_t) pq_centroids(model),
	model->metric == LP_VECTOR_DOT};
	const float *q = scan->query;

	if (model->metric != LP_VECTOR_DOT)
	{
		const float *centroid = model->centroids + (uint64_t) partition * model->dimension;

		for (uint32_t i = 0; i < model->dimension; i++)
			scan->residual[i] = scan->query[i] - centroid[i];
		q = scan->residual;
	}
	lp_pq_table(lp_pq_best_kernel(), &codebook, q, scan->table);
}

/*
 * The score of row r of the n rows of PQ codes of a partition, as stored
 * (row by row, or transposed): the sum of its sub-vectors' table entries.
 */
static float
pq_score(const LpIvfScan *scan, const uint8_t *codes, uint64_t n, uint64_t r)
{
	const LpIvfModel *model = scan->model;
	uint64_t	width = lp_ivf_model_row_width(model);
	const uint8_t *row = model->transposed ? codes + r : codes + r * width;
	uint64_t	stride = model->transposed ? n : 1;
	const float *table = scan->table;
	float		sum = model->metric == LP_VECTOR_DOT ? 1 : 0;

	if (model->num_bits == 8)
		for (uint64_t b = 0; b < width; b++)
			sum += table[b * PQ_MAX_CENTROIDS + row[b * stride]];
	else
		for (uint64_t b = 0; b < width; b++)
		{
			/* in Lance's order, so that the sums are lancedb's to the bit */
			sum += table[b * 32 + (row[b * stride] & 0x0f)];
			sum += table[b * 32 + 16 + (row[b * stride] >> 4)];
		}
	return sum;
}

/*
 * Lance's score of one row of SQ codes (prepare_sq): the squared l2
 * distance of the codes (of normalized vectors under cosine) scaled back to
 * the vectors' range, or one less the dot product.
 */
static float
sq_score(const LpIvfScan *scan, const uint8_t *codes)
{
	const LpIvfModel *model = scan->model;
	uint64_t	sum = 0;

	if (model->metric == LP_VECTOR_DOT)
	{
		float		product = 0;

		for (uint32_t i = 0; i < model->dimension; i++)
			product += scan->query[i] * scan->sq_values[codes[i]];
		return 1 - product;
	}
	for (uint32_t i = 0; i < model->dimension; i++)
	{
		int32_t		diff = (int32_t) scan->codes[i] - codes[i];

		sum += (uint64_t) (diff * diff);
	}
	return (float) sum * scan->sq_scale;
}


bool
lp_ivf_model_hnsw_metadata(const LpIvfModel *model, uint32_t partition, char **json, LpError *err)
{
	LpJsonSpan	array = {model->hnsw_metadata, model->hnsw_metadata_len};
	LpJsonSpan	element;

	*json = NULL;
	if (model->index_file == NULL || !lp_json_element(array, partition, &element) ||
		!lp_json_string(element, json))
		return lp_fail(err, LP_ERR_CORRUPT, "vector index file \"%s\" has no HNSW metadata for partition %u",
					   model->index_file != NULL ? model->index_file->name : "", partition);
	return true;
}

const LpFile *
lp_ivf_model_index_file(const LpIvfModel *model)
{
	return model->index_file;
}

void
lp_ivf_stored_vector(const LpIvfModel *model, uint32_t partition, const uint8_t *values,
					 uint64_t num_rows, uint64_t row, float *out)
{
	uint64_t	width = lp_ivf_model_row_width(model);
	uint32_t	sub_width = model->num_sub_vectors > 0 ? model->dimension / model->num_sub_vectors : 0;
	double		step = (model->sq_end - model->sq_start) / 255.0;

	switch (model->storage)
	{
		case LP_IVF_STORAGE_FLAT:
			memcpy(out, values + row * width, sizeof(float) * model->dimension);
			break;
		case LP_IVF_STORAGE_SQ:
			for (uint32_t d = 0; d < model->dimension; d++)
				out[d] = (float) (model->sq_start + (values[row * width + d] + 0.5) * step);
			break;
		case LP_IVF_STORAGE_PQ:
			for (uint32_t s = 0; s < model->num_sub_vectors; s++)
			{
				/* 4-bit codes: two a byte, the even sub-vector's in the low nibble */
				uint64_t	b = model->num_bits == 8 ? s : s / 2;
				uint8_t		code = model->transposed ? values[b * num_rows + row] : values[row * width + b];

				if (model->num_bits == 4)
					code = s % 2 == 0 ? code & 0x0f : code >> 4;
				memcpy(out + (uint64_t) s * sub_width,
					   model->codebook + ((uint64_t) s * pq_centroids(model) + code) * sub_width,
					   sizeof(float) * sub_width);
			}
			/* residuals from the partition's centroid under l2 and cosine */
			if (model->metric != LP_VECTOR_DOT)
				for (uint32_t d = 0; d < model->dimension; d++)
					out[d] += model->centroids[(uint64_t) partition * model->dimension + d];
			break;
	}
}

/* The HNSW graph of partition part (its number and rows set), through index. */
static bool
read_graph(const LpIvfModel *model, LpInput *index, LpIvfPartition *part, LpError *err)
{
	char	   *metadata;
	bool		ok;

	if (index == NULL)
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT, "the graph of an HNSW index needs its index.idx");
	if (!lp_ivf_model_hnsw_metadata(model, part->partition, &metadata, err))
		return false;
	ok = lp_hnsw_graph_read(index, model->index_file, model->graph_offsets[part->partition],
							model->graph_lengths[part->partition], metadata,
							model->lengths[part->partition], &part->graph, err);
	lp_free(metadata);
	if (ok)
		part->memory += lp_hnsw_graph_memory(part->graph);
	return ok;
}

bool
lp_ivf_partition_read(const LpIvfModel *model, LpInput *index, LpInput *auxiliary,
					  uint32_t partition, LpIvfPartition **out, LpError *err)
{
	LpIvfPartition *part;
	LpFieldReader *id_reader = NULL;
	LpFieldReader *vector_reader = NULL;
	uint64_t   *rows = NULL;
	LpArray    *ids = NULL;
	LpArray    *vectors = NULL;
	const LpArray *items;
	uint64_t	count;
	uint64_t	width = lp_ivf_model_row_width(model);

	*out = NULL;
	if (partition >= model->num_partitions)
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT, "partition %u of %u", partition,
					   model->num_partitions);
	count = model->lengths[partition];
	part = lp_alloc0(sizeof(LpIvfPartition));
	if (part == NULL)
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
	part->partition = partition;
	part->memory = sizeof(LpIvfPartition) + count * (sizeof(uint64_t) + width);
	if (count == 0)
	{
		*out = part;
		return true;
	}
	/* a graph in an encoding the core does not read leaves the rows to be scored */
	if (model->index_file != NULL && !read_graph(model, index, part, err) &&
		(err->code != LP_ERR_UNSUPPORTED || (part->graph_unread = lp_strdup(err->message)) == NULL))
	{
		if (err->code == LP_ERR_UNSUPPORTED)
			lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
		lp_ivf_partition_free(part);
		return false;
	}
	rows = lp_alloc(sizeof(uint64_t) * count);
	part->row_ids = lp_alloc(sizeof(uint64_t) * count);
	part->values = lp_alloc((size_t) (count * width));
	if (rows == NULL || part->row_ids == NULL || part->values == NULL)
	{
		lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
		goto fail;
	}
	for (uint64_t i = 0; i < count; i++)
		rows[i] = model->offsets[partition] + i;
	if (lp_check_cancel(err) ||
		!lp_field_reader_open(auxiliary, model->auxiliary, model->row_id_field, &id_reader, err) ||
		!lp_field_reader_open(auxiliary, model->auxiliary, model->vector_field, &vector_reader, err) ||
		!lp_field_reader_take(id_reader, rows, count, &ids, err) ||
		!lp_field_reader_take(vector_reader, rows, count, &vectors, err))
		goto fail;
	items = vectors->num_children == 1 ? vectors->children[0] : NULL;
	if (ids->length != count || ids->null_count != 0 || vectors->length != count ||
		vectors->null_count != 0 || items == NULL ||
		items->length != count * (model->storage == LP_IVF_STORAGE_FLAT ? model->dimension : width) ||
		items->null_count != 0)
	{
		lp_fail(err, LP_ERR_CORRUPT, "vector index file \"%s\" has null or missing rows in partition %u",
				model->auxiliary->name, partition);
		goto fail;
	}
	memcpy(part->row_ids, ids->values, sizeof(uint64_t) * count);
	memcpy(part->values, items->values, (size_t) (count * width));
	part->num_rows = count;
	lp_free(rows);
	lp_array_free(ids);
	lp_array_free(vectors);
	lp_field_reader_close(id_reader);
	lp_field_reader_close(vector_reader);
	*out = part;
	return true;

fail:
	lp_free(rows);
	lp_array_free(ids);
	lp_array_free(vectors);
	if (id_reader != NULL)
		lp_field_reader_close(id_reader);
	if (vector_reader != NULL)
		lp_field_reader_close(vector_reader);
	lp_ivf_partition_free(part);
	return false;
}

uint64_t
lp_ivf_partition_num_rows(const LpIvfPartition *partition)
{
	return partition->num_rows;
}

const uint64_t *
lp_ivf_partition_row_ids(const LpIvfPartition *partition)
{
	return partition->row_ids;
}

const uint8_t *
lp_ivf_partition_values(const LpIvfPartition *partition)
{
	return partition->values;
}

uint64_t
lp_ivf_partition_memory(const LpIvfPartition *partition)
{
	return partition->memory;
}

void
lp_ivf_partition_free(LpIvfPartition *partition)
{
	if (partition == NULL)
		return;
	lp_free(partition->row_ids);
	lp_free(partition->values);
	lp_hnsw_graph_free(partition->graph);
	lp_free(partition->graph_unread);
	lp_free(partition);
}

const char *
lp_ivf_partition_graph_unread(const LpIvfPartition *partition)
{
	return partition->graph_unread;
}

void
lp_ivf_scan_score(LpIvfScan *scan, const LpIvfPartition *partition, float *scores)
{
	const LpIvfModel *model = scan->model;
	uint64_t	count = partition->num_rows;
	uint64_t	width = lp_ivf_model_row_width(model);

	switch (model->storage)
	{
		case LP_IVF_STORAGE_FLAT:
			for (uint64_t r = 0; r < count; r++)
				scores[r] = flat_score(model, scan->query,
									   (const float *) (partition->values + r * width));
			break;
		case LP_IVF_STORAGE_PQ:
			build_pq_table(scan, partition->partition);
			if (model->transposed)
			{
				LpPqCodes	codes = {scan->table, partition->values, width, count, model->num_bits,
					model->metric == LP_VECTOR_DOT ? 1 : 0};

				lp_pq_scores(lp_pq_best_kernel(), &codes, scores);
			}
			else
				for (uint64_t r = 0; r < count; r++)
					scores[r] = pq_score(scan, partition->values, count, r);
			break;
		case LP_IVF_STORAGE_SQ:
			for (uint64_t r = 0; r < count; r++)
				scores[r] = sq_score(scan, partition->values + r * width);
			break;
	}
}

bool
lp_ivf_model_has_graph(const LpIvfModel *model)
{
	return model->index_file != NULL;
}

/* A node of a partition, as the graph search scores it. */
typedef struct NodeScorer
{
	LpIvfScan  *scan;
	const LpIvfPartition *partition;
} NodeScorer;

static float
node_score(void *context, uint32_t node)
{
	const NodeScorer *scorer = context;
	const LpIvfScan *scan = scorer->scan;
	const LpIvfModel *model = scan->model;
	const LpIvfPartition *partition = scorer->partition;
	uint64_t	width = lp_ivf_model_row_width(model);

	switch (model->storage)
	{
		case LP_IVF_STORAGE_FLAT:
			return flat_score(model, scan->query, (const float *) (partition->values + node * width));
		case LP_IVF_STORAGE_SQ:
			return sq_score(scan, partition->values + node * width);
		default:
			return pq_score(scan, partition->values, partition->num_rows, node);
	}
}

bool
lp_ivf_scan_search(LpIvfScan *scan, const LpIvfPartition *partition, uint32_t ef,
				   uint32_t *rows, float *scores, uint32_t *found, LpError *err)
{
	NodeScorer	scorer = {scan, partition};

	*found = 0;
	if (partition->num_rows == 0)
		return true;
	if (partition->graph == NULL)
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT, "partition %u has no graph", partition->partition);
	if (scan->model->storage == LP_IVF_STORAGE_PQ)
		build_pq_table(scan, partition->partition);
	return lp_hnsw_graph_search(partition->graph, ef, node_score, &scorer, rows, scores, found, err);
}

uint64_t
lp_ivf_default_beam(uint64_t candidates)
{
	uint64_t	beam = candidates + candidates / 2;

	return beam > LP_IVF_MIN_DEFAULT_BEAM ? beam : LP_IVF_MIN_DEFAULT_BEAM;
}

void
lp_ivf_scan_close(LpIvfScan *scan)
{
	if (scan == NULL)
		return;
	lp_free(scan->query);
	lp_free(scan->residual);
	lp_free(scan->table);
	lp_free(scan->codes);
	lp_free(scan);
}
