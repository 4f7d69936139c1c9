/*
 * lp_decode_leaf.c - the shapes a leaf column decodes to, shared by the 2.0
 * and 2.1+ page decoders and the field assembly in lp_decode.c: how a leaf
 * type is stored, the LpArray made from a decoded block (packed structs
 * split into their children), validity handed over, and the unwrapping of
 * a page's encoding.
 *
 * Packed structs: page decoders (lp_decode_packed.c) bring every row into
 * one canonical form, which lp_packed_struct_array splits into the struct's
 * children: the children in order, a fixed-width child as its bytes, a
 * variable-width child as a u64 length and its bytes.  A packed struct with
 * only fixed-width children is a block of fixed-width rows; otherwise a
 * variable block whose null rows are empty.
 */
#include <string.h>

#include "base/lp_alloc.h"
#include "base/lp_checked.h"
#include "decode/lp_decode_internal.h"
#include "base/lp_protobuf.h"

bool
lp_decode_no_memory(LpError *err)
{
	return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory while decoding a Lance file");
}

/* ---- page encodings ----------------------------------------------------------- */

bool
lp_unpack_page_encoding(const LpPageContext *ctx, const LpPage *page,
						ProtobufCMessage **message)
{
	LpEncodingRole role = ctx->file->version == LP_FILE_VERSION_2_0 ?
		LP_ENCODING_PAGE_V2_0 : LP_ENCODING_PAGE_V2_1;
	LpUnwrapResult result;

	if (lp_encoding_unwrap(page->encoding.data, page->encoding.len, role, message, &result))
		return true;
	if (result.unpack == LP_UNPACK_NO_MEMORY)
		return lp_page_no_memory(ctx);
	return lp_page_fail(ctx, LP_ERR_CORRUPT, "page encoding %s",
						lp_unpack_result_text(result.unpack));
}

/* ---- leaves ------------------------------------------------------------------- */

bool
lp_leaf_storage(const LpType *type, bool *variable, uint32_t *bits)
{
	*variable = false;
	*bits = 0;
	if (type->packed)
		return lp_packed_struct_storage(type, variable, bits);
	if (lp_type_is_variable_width(type))
	{
		*variable = true;
		return true;
	}
	if (type->id == LP_TYPE_BOOL)
	{
		*bits = 1;
		return true;
	}
	if (type->id == LP_TYPE_FIXED_SIZE_LIST)
	{
		bool		inner_variable;
		uint32_t	inner_bits;
		uint64_t	total;

		/* Items are whole bytes, or bools packed n bits per list. */
		if (!lp_leaf_storage(type->children[0], &inner_variable, &inner_bits) ||
			inner_variable || (inner_bits % 8 != 0 && inner_bits != 1) || inner_bits == 0 ||
			!lp_mul_u64(inner_bits, (uint64_t) type->fixed_size, &total) || total > UINT32_MAX)
			return false;
		*bits = (uint32_t) total;
		return true;
	}
	*bits = lp_type_byte_width(type) * 8;
	return *bits > 0;
}

/* Move validity bits (all valid -> NULL) into array. */
void
lp_take_validity(LpArray *array, LpBits *bits)
{
	array->null_count = bits->num_unset;
	if (bits->num_unset == 0)
		lp_buf_free(&bits->buf);
	else
		array->validity = lp_buf_take(&bits->buf);
	bits->num_bits = 0;
	bits->num_unset = 0;
}

/* An array of the leaf type from a decoded block of count values. */
bool
lp_leaf_array(const LpType *type, LpFlatValues *block, uint64_t count, LpArray **out,
			  const LpFile *file, uint32_t column, LpError *err)
{
	bool		variable;
	uint32_t	bits;
	LpArray    *array;

	*out = NULL;
	if (!lp_leaf_storage(type, &variable, &bits))
		return lp_fail(err, LP_ERR_UNSUPPORTED,
					   "values of type \"%s\" in column %u of file \"%s\" are not supported",
					   lp_type_id_name(type->id), column, file->name);
	if (block->num_values != count ||
		(count > 0 && (block->variable != variable ||
					   (!variable && block->bits_per_value != bits))))
		return lp_fail(err, LP_ERR_CORRUPT,
					   "column %u of file \"%s\" decodes to %llu values of the wrong shape for type \"%s\"",
					   column, file->name, (unsigned long long) block->num_values,
					   lp_type_id_name(type->id));
	if (type->packed)
		return lp_packed_struct_array(type, block, count, out, file, column, err);
	array = lp_array_new(type);
	if (array == NULL)
		return lp_decode_no_memory(err);
	array->length = count;
	if (variable)
	{
		if (count == 0)
		{
			lp_flat_values_free(block);
			if (!lp_flat_values_init_variable(block))
			{
				lp_array_free(array);
				return lp_decode_no_memory(err);
			}
		}
		array->data_len = block->data.len;
		array->data = lp_buf_take(&block->data);
		array->offsets = (uint64_t *) lp_buf_take(&block->offsets);
	}
	else if (type->id == LP_TYPE_FIXED_SIZE_LIST)
	{
		LpArray    *child = lp_array_new(type->children[0]);

		array->children = lp_alloc(sizeof(LpArray *));
		if (child == NULL || array->children == NULL)
		{
			lp_array_free(child);
			lp_array_free(array);
			return lp_decode_no_memory(err);
		}
		array->children[0] = child;
		array->num_children = 1;
		child->length = count * (uint64_t) type->fixed_size;
		child->values = lp_buf_take(&block->data);
		if (block->has_item_validity)
		{
			if (block->item_validity.num_bits != child->length)
			{
				lp_flat_values_free(block);
				lp_array_free(array);
				return lp_fail(err, LP_ERR_CORRUPT,
							   "column %u of file \"%s\" has item validity of the wrong length",
							   column, file->name);
			}
			lp_take_validity(child, &block->item_validity);
		}
	}
	else if (type->id != LP_TYPE_NULL)
		array->values = lp_buf_take(&block->data);
	lp_flat_values_free(block);
	*out = array;
	return true;
}

/* ---- packed structs ------------------------------------------------------------ */

/* Bytes of a fixed-width child, 0 for a variable-width one; false if neither. */
static bool
child_width(const LpType *child, bool *variable, uint32_t *bytes)
{
	uint32_t	bits;

	if (!lp_leaf_storage(child, variable, &bits) || child->id == LP_TYPE_FIXED_SIZE_LIST ||
		child->id == LP_TYPE_STRUCT || (!*variable && bits % 8 != 0))
		return false;
	*bytes = bits / 8;
	return true;
}

bool
lp_packed_struct_storage(const LpType *type, bool *variable, uint32_t *bits)
{
	uint64_t	total = 0;

	*variable = false;
	*bits = 0;
	if (type->num_children == 0)
		return false;
	for (uint32_t i = 0; i < type->num_children; i++)
	{
		bool		child_variable;
		uint32_t	bytes;

		if (!child_width(type->children[i], &child_variable, &bytes))
			return false;
		if (child_variable)
			*variable = true;
		total += bytes;
	}
	if (*variable)
		return true;
	if (total * 8 > UINT32_MAX)
		return false;
	*bits = (uint32_t) total * 8;
	return true;
}

/* Empty children of the struct's type, count rows long. */
static bool
new_children(const LpType *type, uint64_t count, LpArray *array, LpBuf *buffers, LpBuf *offsets)
{
	array->children = lp_alloc_array(type->num_children, sizeof(LpArray *));
	if (array->children == NULL)
		return false;
	for (uint32_t i = 0; i < type->num_children; i++)
	{
		array->children[i] = lp_array_new(type->children[i]);
		if (array->children[i] == NULL)
			return false;
		array->num_children++;
		array->children[i]->length = count;
		memset(&buffers[i], 0, sizeof(LpBuf));
		memset(&offsets[i], 0, sizeof(LpBuf));
		if (lp_type_is_variable_width(type->children[i]) && !lp_buf_append_u64(&offsets[i], 0))
			return false;
	}
	return true;
}

/* Split canonical rows into the children's buffers. */
static bool
split_rows(const LpType *type, const LpFlatValues *block, uint64_t count, LpBuf *buffers,
		   LpBuf *offsets, bool *corrupt)
{
	const uint64_t *row_offsets = block->variable ? lp_flat_values_offsets(block) : NULL;
	uint64_t	row_bytes = block->variable ? 0 : block->bits_per_value / 8;

	*corrupt = true;
	for (uint64_t r = 0; r < count; r++)
	{
		uint64_t	len = block->variable ? row_offsets[r + 1] - row_offsets[r] : row_bytes;
		const uint8_t *row = len == 0 ? NULL :
			block->data.data + (block->variable ? row_offsets[r] : r * row_bytes);
		uint64_t	pos = 0;

		for (uint32_t i = 0; i < type->num_children; i++)
		{
			bool		variable;
			uint32_t	bytes;

			if (!child_width(type->children[i], &variable, &bytes))
				return false;
			if (len == 0)
			{
				/* a null row: zero or empty children */
				if (variable ? !lp_buf_append_u64(&offsets[i], buffers[i].len) :
					!lp_buf_append_zeros(&buffers[i], bytes))
					goto no_memory;
				continue;
			}
			if (variable)
			{
				uint64_t	value_len;

				if (len - pos < 8)
					return false;
				value_len = lp_le64(row + pos);
				pos += 8;
				if (value_len > len - pos)
					return false;
				if (!lp_buf_append(&buffers[i], row + pos, value_len) ||
					!lp_buf_append_u64(&offsets[i], buffers[i].len))
					goto no_memory;
				pos += value_len;
			}
			else
			{
				if (bytes > len - pos)
					return false;
				if (!lp_buf_append(&buffers[i], row + pos, bytes))
					goto no_memory;
				pos += bytes;
			}
		}
		if (len != 0 && pos != len)
			return false;
	}
	return true;

no_memory:
	*corrupt = false;
	return false;
}

bool
lp_packed_struct_array(const LpType *type, LpFlatValues *block, uint64_t count, LpArray **out,
					   const LpFile *file, uint32_t column, LpError *err)
{
	LpArray    *array = lp_array_new(type);
	LpBuf	   *buffers = lp_alloc_array(type->num_children + 1, sizeof(LpBuf));
	LpBuf	   *offsets = lp_alloc_array(type->num_children + 1, sizeof(LpBuf));
	bool		corrupt = false;
	bool		ok;

	*out = NULL;
	ok = array != NULL && buffers != NULL && offsets != NULL &&
		new_children(type, count, array, buffers, offsets);
	if (ok)
		ok = split_rows(type, block, count, buffers, offsets, &corrupt);
	for (uint32_t i = 0; array != NULL && i < array->num_children; i++)
	{
		LpArray    *child = array->children[i];

		if (ok && lp_type_is_variable_width(child->type))
		{
			child->data_len = buffers[i].len;
			child->data = lp_buf_take(&buffers[i]);
			child->offsets = (uint64_t *) lp_buf_take(&offsets[i]);
		}
		else if (ok)
			child->values = lp_buf_take(&buffers[i]);
		lp_buf_free(&buffers[i]);
		lp_buf_free(&offsets[i]);
	}
	lp_free(buffers);
	lp_free(offsets);
	lp_flat_values_free(block);
	if (!ok)
	{
		lp_array_free(array);
		if (corrupt)
			return lp_fail(err, LP_ERR_CORRUPT,
						   "packed struct rows of column %u of file \"%s\" do not match its children",
						   column, file->name);
		return lp_decode_no_memory(err);
	}
	array->length = count;
	*out = array;
	return true;
}
