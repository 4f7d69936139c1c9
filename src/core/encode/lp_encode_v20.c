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
 *    buffer 1}, the bytes lz4- or zstd-compressed as a whole when the field
 *    asks for it (Flat.compression names the scheme, also "none");
 *  - low-cardinality Utf8 (lp_encode_dictionary.c):
 *    Dictionary{indices: Nullable{no_nulls{Flat(8)}} in buffer 0 (0 for a
 *    null row, else 1 + the item), items: Binary of the distinct values in
 *    buffers 1 and 2 (a single null item when every row is null)};
 *  - a struct's header column: one SimpleStruct page of every row (every
 *    item under a list), without buffers;
 *  - a list's own column: List{offsets: Nullable{no_nulls{Flat(64)}} in
 *    buffer 0 (the page-relative end of every list, a null one's plus
 *    null_offset_adjustment = num_items + 1), num_items}, whatever the nulls
 *    (previous/encodings/logical/list.rs); its items are the next columns.
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
	ArrayEncoding arrays[8];
	Lance__Encodings__Flat flats[3];
	Lance__Encodings__Buffer buffers[3];
	Lance__Encodings__Nullable nullables[2];
	Lance__Encodings__Nullable__NoNull no_nulls[2];
	Lance__Encodings__Nullable__SomeNull some_nulls;
	Lance__Encodings__Nullable__AllNull all_nulls;
	Lance__Encodings__FixedSizeList fixed_size_list;
	Lance__Encodings__Binary binary;
	Lance__Encodings__Compression compression;
	Lance__Encodings__Dictionary dictionary;
	Lance__Encodings__List list;
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

/*
 * Binary of n values (end offsets[i + 1] over data, the first offset 0;
 * validity NULL when every value is valid) in buffers first_buffer and
 * first_buffer + 1, the bytes compressed when compression asks for it.
 */
static ArrayEncoding *
binary(Messages20 *m, const uint64_t *offsets, const uint8_t *data, uint64_t data_len, uint64_t n,
	   const uint8_t *validity, const LpColumnCompression *compression, uint32_t first_buffer,
	   LpEncodedPage *out)
{
	uint64_t	null_adjustment = data_len + 1;
	ArrayEncoding *array = new_array(m);
	LpBuf	   *bytes = &out->buffers[first_buffer + 1];
	ArrayEncoding *bytes_encoding;

	for (uint64_t i = 0; i < n; i++)
	{
		uint8_t		end[8];
		bool		null = validity != NULL && !lp_bit_get(validity, i);

		lp_put_le64(end, offsets[i + 1] + (null ? null_adjustment : 0));
		if (!lp_buf_append(&out->buffers[first_buffer], end, 8))
			return NULL;
	}
	if (lp_compression_is_general(compression) ?
		!lp_column_compress(compression, data, data_len, bytes) :
		!lp_buf_append(bytes, data, data_len))
		return NULL;
	lance__encodings__binary__init(&m->binary);
	m->binary.indices = nullable_no_nulls(m, flat(m, 64, first_buffer));
	bytes_encoding = flat(m, 8, first_buffer + 1);
	/* Lance names "none" too, leaving the bytes as they are. */
	if (lp_compression_is_general(compression) || compression->request == LP_COMPRESSION_NONE)
	{
		lance__encodings__compression__init(&m->compression);
		m->compression.scheme = compression->request == LP_COMPRESSION_LZ4 ? "lz4" :
			compression->request == LP_COMPRESSION_ZSTD ? "zstd" : "none";
		if (compression->has_level)
		{
			m->compression.level_presence_case = LANCE__ENCODINGS__COMPRESSION__LEVEL_PRESENCE_LEVEL;
			m->compression.level = compression->level;
		}
		bytes_encoding->flat->compression = &m->compression;
	}
	m->binary.bytes = bytes_encoding;
	m->binary.null_adjustment = null_adjustment;
	array->array_encoding_case = LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_BINARY;
	array->binary = &m->binary;
	return array;
}

/* The dictionary page: u8 indices (0 = null) in buffer 0, the items as Binary in buffers 1 and 2. */
static ArrayEncoding *
dictionary(Messages20 *m, const LpPageValues *page, const LpDictionary *dict, LpEncodedPage *out)
{
	static const LpColumnCompression uncompressed = {LP_COMPRESSION_DEFAULT, false, 0};
	static const uint64_t null_item_offsets[2] = {0, 0};
	static const uint8_t null_item_validity = 0;
	ArrayEncoding *array;
	ArrayEncoding *items;
	bool		all_null = dict->num_items == 0;

	if (!lp_buf_reserve(&out->buffers[0], page->num_values))
		return NULL;
	for (uint64_t i = 0; i < page->num_values; i++)
	{
		uint32_t	index = lp_le32(dict->indices.data + i * 4);

		out->buffers[0].data[i] = index == UINT32_MAX ? 0 : (uint8_t) (index + 1);
	}
	out->buffers[0].len = page->num_values;
	/* Lance stores the dictionary of an all-null page as one null item. */
	items = all_null ?
		binary(m, null_item_offsets, NULL, 0, 1, &null_item_validity, &uncompressed, 1, out) :
		binary(m, (const uint64_t *) dict->item_offsets.data, dict->items.data, dict->items.len,
			   dict->num_items, NULL, &uncompressed, 1, out);
	if (items == NULL)
		return NULL;
	array = new_array(m);
	lance__encodings__dictionary__init(&m->dictionary);
	m->dictionary.indices = nullable_no_nulls(m, flat(m, 8, 0));
	m->dictionary.items = items;
	m->dictionary.num_dictionary_items = all_null ? 1 : (uint32_t) dict->num_items;
	array->array_encoding_case = LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_DICTIONARY;
	array->dictionary = &m->dictionary;
	out->num_buffers = 3;
	return array;
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

	memset(out, 0, sizeof(*out));
	memset(&m, 0, sizeof(m));
	if (shape->kind == LP_LEAF_VARIABLE)
	{
		LpDictionary dict;
		bool		use_dictionary;

		if (!lp_dictionary_plan_v20(shape, page, &dict, &use_dictionary))
			return no_memory(err);
		if (use_dictionary)
			root = dictionary(&m, page, &dict, out);
		else
		{
			root = binary(&m, (const uint64_t *) page->offsets.data, page->data.data, page->data.len,
						  page->num_values, page->null_count > 0 ? page->validity.buf.data : NULL,
						  &shape->compression, 0, out);
			out->num_buffers = 2;
		}
		lp_dictionary_free(&dict);
		if (root == NULL)
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

	if (!lp_encoded_page_wrap(&root->base, LP_ARRAY_ENCODING_URL, out, err))
	{
		lp_encoded_page_free(out);
		return false;
	}
	out->layout = lp_array_encoding_name(root);
	return true;
}

bool
lp_encode_v20_struct_header(LpEncodedPage *out, LpError *err)
{
	ArrayEncoding root = LANCE__ENCODINGS__ARRAY_ENCODING__INIT;
	Lance__Encodings__SimpleStruct header = LANCE__ENCODINGS__SIMPLE_STRUCT__INIT;

	memset(out, 0, sizeof(*out));
	root.array_encoding_case = LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_SIMPLE_STRUCT;
	root.simple_struct = &header;
	if (!lp_encoded_page_wrap(&root.base, LP_ARRAY_ENCODING_URL, out, err))
		return false;
	out->layout = lp_array_encoding_name(&root);
	return true;
}

bool
lp_encode_v20_list_page(const LpPageValues *page, LpEncodedPage *out, LpError *err)
{
	Messages20	m;
	ArrayEncoding *root;
	const uint64_t *ends = (const uint64_t *) page->offsets.data;
	uint64_t	num_items = page->num_values > 0 ? ends[page->num_values - 1] : 0;
	uint64_t	null_offset_adjustment = num_items + 1;

	memset(out, 0, sizeof(*out));
	memset(&m, 0, sizeof(m));
	if (!lp_buf_reserve(&out->buffers[0], page->num_values * 8))
		return no_memory(err);
	for (uint64_t i = 0; i < page->num_values; i++)
		lp_put_le64(out->buffers[0].data + i * 8,
					ends[i] + (lp_bit_get(page->validity.buf.data, i) ? 0 : null_offset_adjustment));
	out->buffers[0].len = page->num_values * 8;
	out->num_buffers = 1;
	root = new_array(&m);
	lance__encodings__list__init(&m.list);
	m.list.offsets = nullable_no_nulls(&m, flat(&m, 64, 0));
	m.list.null_offset_adjustment = null_offset_adjustment;
	m.list.num_items = num_items;
	root->array_encoding_case = LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_LIST;
	root->list = &m.list;
	if (!lp_encoded_page_wrap(&root->base, LP_ARRAY_ENCODING_URL, out, err))
	{
		lp_encoded_page_free(out);
		return false;
	}
	out->layout = lp_array_encoding_name(root);
	return true;
}
