/*
 * lp_encode_round_trip.c - encode → decode round trips shared by the unit
 * tests and the fuzzer (lp_encode_round_trip.h).
 */
#include <string.h>

#include "lp_encode_round_trip.h"

#include "base/lp_alloc.h"
#include "decode/lp_decode.h"
#include "encode/lp_file_writer.h"

static bool
is_list(const LpType *type)
{
	return type->id == LP_TYPE_LIST || type->id == LP_TYPE_LARGE_LIST;
}

/*
 * The offsets of rows [start, start + count) of whole into slice, shifted
 * so that they start at up to 7 past 0 (the earlier rows' bytes or items
 * kept before them); returns the first byte or item the slice keeps.
 */
static uint64_t
slice_offsets(const LpArray *whole, uint64_t start, uint64_t count, LpArray *slice)
{
	uint64_t	lead = whole->offsets[start] < 7 ? whole->offsets[start] : 7;
	uint64_t	base = whole->offsets[start] - lead;

	slice->offsets = lp_alloc((count + 1) * sizeof(uint64_t));
	for (uint64_t i = 0; i <= count; i++)
		slice->offsets[i] = whole->offsets[start + i] - base;
	return base;
}

LpArray *
lp_round_trip_slice(const LpType *type, const LpArray *whole, uint64_t start, uint64_t count)
{
	LpArray    *slice = lp_array_new(type);
	uint32_t	width = lp_type_byte_width(type);

	slice->length = count;
	if (whole->validity)
	{
		slice->validity = lp_alloc0(count / 8 + 1);
		for (uint64_t i = 0; i < count; i++)
		{
			bool		valid = lp_bit_get(whole->validity, start + i);

			lp_bit_set(slice->validity, i, valid);
			slice->null_count += !valid;
		}
	}
	if (type->id == LP_TYPE_BOOL)
	{
		slice->values = lp_alloc0(count / 8 + 1);
		for (uint64_t i = 0; i < count; i++)
			lp_bit_set(slice->values, i, lp_bit_get(whole->values, start + i));
	}
	else if (lp_type_is_variable_width(type))
	{
		uint64_t	base = slice_offsets(whole, start, count, slice);

		slice->data_len = whole->offsets[start + count] - base;
		slice->data = lp_memdup(whole->data + base, slice->data_len + 1);
	}
	else if (type->id == LP_TYPE_FIXED_SIZE_LIST)
	{
		uint64_t	dim = (uint64_t) type->fixed_size;

		slice->num_children = 1;
		slice->children = lp_alloc(sizeof(LpArray *));
		slice->children[0] = lp_round_trip_slice(type->children[0], whole->children[0],
												 start * dim, count * dim);
	}
	else if (is_list(type))
	{
		const LpArray *items = whole->children[0];

		uint64_t	base = slice_offsets(whole, start, count, slice);

		slice->num_children = 1;
		slice->children = lp_alloc(sizeof(LpArray *));
		slice->children[0] = lp_round_trip_slice(type->children[0], items, base,
												 whole->offsets[start + count] - base);
	}
	else if (type->id == LP_TYPE_STRUCT)
	{
		slice->num_children = whole->num_children;
		slice->children = lp_alloc0((whole->num_children + 1) * sizeof(LpArray *));
		for (uint32_t c = 0; c < whole->num_children; c++)
			slice->children[c] = lp_round_trip_slice(type->children[c], whole->children[c],
													 start, count);
	}
	else
		slice->values = lp_memdup(whole->values + start * width, count * width);
	return slice;
}

/* Row ia of a and row ib of b hold the same value (list items sit at different rows). */
bool
lp_round_trip_rows_equal(const LpType *type, const LpArray *a, uint64_t ia, const LpArray *b, uint64_t ib)
{
	uint32_t	width = lp_type_byte_width(type);

	if (lp_array_is_valid(a, ia) != lp_array_is_valid(b, ib))
		return false;
	if (!lp_array_is_valid(a, ia))
		return true;
	if (type->id == LP_TYPE_FIXED_SIZE_LIST)
	{
		uint64_t	dim = (uint64_t) type->fixed_size;

		if (b->num_children != 1)
			return false;
		for (uint64_t k = 0; k < dim; k++)
			if (!lp_round_trip_rows_equal(type->children[0], a->children[0], ia * dim + k,
										  b->children[0], ib * dim + k))
				return false;
		return true;
	}
	if (is_list(type))
	{
		uint64_t	len = a->offsets[ia + 1] - a->offsets[ia];

		if (b->num_children != 1 || b->offsets[ib + 1] - b->offsets[ib] != len)
			return false;
		for (uint64_t k = 0; k < len; k++)
			if (!lp_round_trip_rows_equal(type->children[0], a->children[0], a->offsets[ia] + k,
										  b->children[0], b->offsets[ib] + k))
				return false;
		return true;
	}
	if (type->id == LP_TYPE_STRUCT)
	{
		if (b->num_children != a->num_children || a->num_children != type->num_children)
			return false;
		for (uint32_t c = 0; c < a->num_children; c++)
			if (!lp_round_trip_rows_equal(type->children[c], a->children[c], ia, b->children[c], ib))
				return false;
		return true;
	}
	if (lp_type_is_variable_width(type))
	{
		uint64_t	len = a->offsets[ia + 1] - a->offsets[ia];

		return b->offsets[ib + 1] - b->offsets[ib] == len &&
			(len == 0 || memcmp(a->data + a->offsets[ia], b->data + b->offsets[ib], len) == 0);
	}
	if (type->id == LP_TYPE_BOOL)
		return lp_bit_get(a->values, ia) == lp_bit_get(b->values, ib);
	return memcmp(a->values + ia * width, b->values + ib * width, width) == 0;
}

bool
lp_round_trip_encode(const LpSchema *schema, LpFileVersion version, LpType *const *types,
					 LpArray *const *arrays, uint32_t num_arrays, uint64_t rows,
					 uint64_t batch_rows, uint64_t flush_bytes, uint8_t **bytes, uint64_t *size,
					 LpError *err)
{
	LpOutput   *output = lp_memory_output_open("memory.lance");
	LpArray   **slices = lp_alloc0((num_arrays + 1) * sizeof(LpArray *));
	LpFileWriter *writer = NULL;
	uint64_t	len;
	bool		ok = output != NULL && slices != NULL;

	*bytes = NULL;
	*size = 0;
	if (!ok)
		lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
	else
		ok = (writer = lp_file_writer_open(output, schema, version, err)) != NULL;
	if (ok && flush_bytes > 0)
		lp_file_writer_set_page_bytes(writer, flush_bytes, 2 * flush_bytes);
	for (uint64_t start = 0; ok && start < rows; start += batch_rows)
	{
		uint64_t	count = rows - start < batch_rows ? rows - start : batch_rows;

		for (uint32_t c = 0; c < num_arrays; c++)
			slices[c] = lp_round_trip_slice(types[c], arrays[c], start, count);
		ok = lp_file_writer_write(writer, (const LpArray *const *) slices, num_arrays, err);
		for (uint32_t c = 0; c < num_arrays; c++)
			lp_array_free(slices[c]);
	}
	if (ok)
		ok = lp_file_writer_finish(writer, size, err);
	if (ok)
	{
		*bytes = lp_memdup(lp_memory_output_data(output, &len), *size);
		if (len != *size)
			ok = lp_fail(err, LP_ERR_INTERNAL, "the writer reported %llu bytes of %llu written",
						 (unsigned long long) *size, (unsigned long long) len);
	}
	lp_file_writer_free(writer);
	if (output != NULL)
		output->ops->abort(output);
	lp_free(slices);
	return ok;
}

bool
lp_round_trip_compare(LpInput *input, const LpFile *file, uint32_t field_index,
					  const LpType *type, const LpArray *expected, uint64_t *first_difference,
					  LpError *err)
{
	LpType	   *decoded_type;
	LpArray    *decoded;

	*first_difference = UINT64_MAX;
	if (!lp_decode_field(input, file, field_index, &decoded_type, &decoded, err))
		return false;
	if (decoded->length != expected->length)
		*first_difference = decoded->length;
	for (uint64_t i = 0; i < expected->length && *first_difference == UINT64_MAX; i++)
		if (!lp_round_trip_rows_equal(type, expected, i, decoded, i))
			*first_difference = i;
	lp_array_free(decoded);
	lp_type_free(decoded_type);
	return true;
}
