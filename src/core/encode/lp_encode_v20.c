/*
 * lp_encode_v20.c - one page of a leaf column of a Lance 2.0 file, as
 * Lance's 2.0 writer encodes it (previous/encoder.rs; lance-format.md §4.3):
 *  - fixed widths and bools: Nullable{no_nulls{Flat}}, or with nulls
 *    Nullable{some_nulls{validity: Flat(1) in buffer 0, values: Flat in
 *    buffer 1}}, or Nullable{all_nulls} without buffers;
 *  - fixed-size lists: the same Nullable around FixedSizeList{dimension,
 *    items: Nullable{no_nulls{Flat}}};
 *  - strings and binaries: Binary{indices: Nullable{no_nulls{Flat(64)}} in
 *    buffer 0 (the end offset of every value; a null row's is the previous
 *    end plus null_adjustment = total bytes + 1), bytes: Flat(8) in
 *    buffer 1};
 *  - a struct's header column: one SimpleStruct page of every row, without
 *    buffers.
 */
#include <string.h>

#include "base/lp_alloc.h"
#include "base/lp_bytes.h"
#include "encode/lp_encode_internal.h"
#include "format/lp_encodings.h"
#include "format/lp_values.h"

typedef Lance__Encodings__ArrayEncoding ArrayEncoding;

/* The messages of one page's encoding tree, on the stack. */
typedef struct Messages20
{
	ArrayEncoding arrays[6];
	Lance__Encodings__Flat flats[3];
	Lance__Encodings__Buffer buffers[3];
	Lance__Encodings__Nullable nullables[2];
	Lance__Encodings__Nullable__NoNull no_nulls[2];
	Lance__Encodings__Nullable__SomeNull some_nulls;
	Lance__Encodings__Nullable__AllNull all_nulls;
	Lance__Encodings__FixedSizeList fixed_size_list;
	Lance__Encodings__Binary binary;
	int			used_arrays;
	int			used_flats;
	int			used_nullables;
} Messages20;

static bool
no_memory(LpError *err)
{
	return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
}

static ArrayEncoding *
new_array(Messages20 *m)
{
	ArrayEncoding *array = &m->arrays[m->used_arrays++];

	lance__encodings__array_encoding__init(array);
	return array;
}

/* Flat values of bits each in page buffer index. */
static ArrayEncoding *
flat(Messages20 *m, uint64_t bits, uint32_t buffer_index)
{
	ArrayEncoding *array = new_array(m);
	Lance__Encodings__Flat *flat = &m->flats[m->used_flats];
	Lance__Encodings__Buffer *buffer = &m->buffers[m->used_flats++];

	lance__encodings__flat__init(flat);
	lance__encodings__buffer__init(buffer);
	buffer->buffer_index = buffer_index;
	buffer->buffer_type = LANCE__ENCODINGS__BUFFER__BUFFER_TYPE__PAGE;
	flat->bits_per_value = bits;
	flat->buffer = buffer;
	array->array_encoding_case = LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_FLAT;
	array->flat = flat;
	return array;
}

static ArrayEncoding *
nullable_no_nulls(Messages20 *m, ArrayEncoding *values)
{
	ArrayEncoding *array = new_array(m);
	Lance__Encodings__Nullable *nullable = &m->nullables[m->used_nullables];
	Lance__Encodings__Nullable__NoNull *no_nulls = &m->no_nulls[m->used_nullables++];

	lance__encodings__nullable__init(nullable);
	lance__encodings__nullable__no_null__init(no_nulls);
	no_nulls->values = values;
	nullable->nullability_case = LANCE__ENCODINGS__NULLABLE__NULLABILITY_NO_NULLS;
	nullable->no_nulls = no_nulls;
	array->array_encoding_case = LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_NULLABLE;
	array->nullable = nullable;
	return array;
}

/* Nullable around values: no_nulls, some_nulls (validity in buffer 0) or all_nulls. */
static ArrayEncoding *
nullable(Messages20 *m, const LpPageValues *page, ArrayEncoding *values)
{
	ArrayEncoding *array;
	Lance__Encodings__Nullable *nullable;

	if (page->null_count == 0)
		return nullable_no_nulls(m, values);
	array = new_array(m);
	nullable = &m->nullables[m->used_nullables++];
	lance__encodings__nullable__init(nullable);
	if (page->null_count == page->num_values)
	{
		lance__encodings__nullable__all_null__init(&m->all_nulls);
		nullable->nullability_case = LANCE__ENCODINGS__NULLABLE__NULLABILITY_ALL_NULLS;
		nullable->all_nulls = &m->all_nulls;
	}
	else
	{
		lance__encodings__nullable__some_null__init(&m->some_nulls);
		m->some_nulls.validity = flat(m, 1, 0);
		m->some_nulls.values = values;
		nullable->nullability_case = LANCE__ENCODINGS__NULLABLE__NULLABILITY_SOME_NULLS;
		nullable->some_nulls = &m->some_nulls;
	}
	array->array_encoding_case = LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_NULLABLE;
	array->nullable = nullable;
	return array;
}

static bool
encode_binary(const LpPageValues *page, Messages20 *m, ArrayEncoding **root, LpEncodedPage *out)
{
	const uint64_t *offsets = (const uint64_t *) page->offsets.data;
	uint64_t	null_adjustment = page->data.len + 1;
	ArrayEncoding *array = new_array(m);

	for (uint64_t i = 0; i < page->num_values; i++)
	{
		uint8_t		end[8];
		bool		null = page->null_count > 0 && !lp_bit_get(page->validity.buf.data, i);

		lp_put_le64(end, offsets[i + 1] + (null ? null_adjustment : 0));
		if (!lp_buf_append(&out->buffers[0], end, 8))
			return false;
	}
	if (!lp_buf_append(&out->buffers[1], page->data.data, page->data.len))
		return false;
	lance__encodings__binary__init(&m->binary);
	m->binary.indices = nullable_no_nulls(m, flat(m, 64, 0));
	m->binary.bytes = flat(m, 8, 1);
	m->binary.null_adjustment = null_adjustment;
	array->array_encoding_case = LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_BINARY;
	array->binary = &m->binary;
	*root = array;
	out->num_buffers = 2;
	return true;
}

bool
lp_encode_v20_page(const LpLeafShape *shape, const LpPageValues *page, LpEncodedPage *out,
				   LpError *err)
{
	Messages20	m;
	ArrayEncoding *root;
	bool		all_null = page->null_count == page->num_values;
	bool		some_nulls = page->null_count > 0 && !all_null;
	uint32_t	values_buffer = some_nulls ? 1 : 0;
	size_t		size;
	uint8_t    *bytes;
	bool		ok;

	memset(out, 0, sizeof(*out));
	memset(&m, 0, sizeof(m));
	if (shape->kind == LP_LEAF_VARIABLE)
	{
		if (!encode_binary(page, &m, &root, out))
		{
			lp_encoded_page_free(out);
			return no_memory(err);
		}
	}
	else
	{
		ArrayEncoding *values;

		if (shape->kind == LP_LEAF_FIXED_SIZE_LIST)
		{
			values = new_array(&m);
			lance__encodings__fixed_size_list__init(&m.fixed_size_list);
			m.fixed_size_list.dimension = shape->dimension;
			m.fixed_size_list.items = nullable_no_nulls(&m, flat(&m, shape->bits, values_buffer));
			values->array_encoding_case = LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_FIXED_SIZE_LIST;
			values->fixed_size_list = &m.fixed_size_list;
		}
		else
			values = flat(&m, shape->bits, values_buffer);
		root = nullable(&m, page, values);
		if (some_nulls &&
			!lp_buf_append(&out->buffers[0], page->validity.buf.data, (page->num_values + 7) / 8))
		{
			lp_encoded_page_free(out);
			return no_memory(err);
		}
		if (!all_null)
		{
			LpBuf	   *target = &out->buffers[values_buffer];
			bool		appended = shape->kind == LP_LEAF_BOOL ?
				lp_buf_append(target, page->bits.buf.data, (page->num_values + 7) / 8) :
				lp_buf_append(target, page->values.data, page->values.len);

			if (!appended)
			{
				lp_encoded_page_free(out);
				return no_memory(err);
			}
		}
		out->num_buffers = all_null ? 0 : values_buffer + 1;
	}

	size = lance__encodings__array_encoding__get_packed_size(root);
	bytes = lp_alloc(size + 1);
	if (bytes == NULL)
	{
		lp_encoded_page_free(out);
		return no_memory(err);
	}
	lance__encodings__array_encoding__pack(root, bytes);
	ok = lp_encoding_wrap(LP_ARRAY_ENCODING_URL, bytes, size, &out->encoding);
	lp_free(bytes);
	if (!ok)
	{
		lp_encoded_page_free(out);
		return no_memory(err);
	}
	out->layout = lp_array_encoding_name(root);
	return true;
}

bool
lp_encode_v20_struct_header(LpEncodedPage *out, LpError *err)
{
	ArrayEncoding root = LANCE__ENCODINGS__ARRAY_ENCODING__INIT;
	Lance__Encodings__SimpleStruct header = LANCE__ENCODINGS__SIMPLE_STRUCT__INIT;
	uint8_t		bytes[16];
	size_t		size;

	memset(out, 0, sizeof(*out));
	root.array_encoding_case = LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_SIMPLE_STRUCT;
	root.simple_struct = &header;
	size = lance__encodings__array_encoding__pack(&root, bytes);
	if (!lp_encoding_wrap(LP_ARRAY_ENCODING_URL, bytes, size, &out->encoding))
		return no_memory(err);
	out->layout = lp_array_encoding_name(&root);
	return true;
}
