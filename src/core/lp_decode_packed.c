/*
 * lp_decode_packed.c - structs stored as one column: packed structs (2.0
 * PackedStruct, 2.1+ PackedStruct in mini-blocks) and variable packed
 * structs (2.2+ full-zip VariablePackedStruct, also blob v2 descriptors).
 *
 * Page decoders bring every row into one canonical form, which
 * lp_packed_struct_array then splits into the struct's children: the
 * children in order, a fixed-width child as its bytes, a variable-width
 * child as a u64 length and its bytes.  A packed struct with only
 * fixed-width children is a block of fixed-width rows; otherwise a
 * variable block whose null rows are empty.
 */
#include <string.h>

#include "lp_alloc.h"
#include "lp_checked.h"
#include "lp_decode_internal.h"

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

bool
lp_packed_struct_check(const LpPageContext *ctx, const Lance__Encodings21__PackedStruct *packed,
					   const LpBlock *rows)
{
	uint64_t	total = 0;

	for (size_t i = 0; i < packed->n_bits_per_value; i++)
	{
		if (packed->bits_per_value[i] == 0 || packed->bits_per_value[i] % 8 != 0)
			return lp_page_unsupported(ctx, "packed_struct with bit-packed children");
		total += packed->bits_per_value[i];
	}
	if (rows->variable || rows->bits_per_value != total)
		return lp_page_fail(ctx, LP_ERR_CORRUPT,
							"packed struct rows are not as wide as their children");
	return true;
}

/* One child of a variable packed struct row, appended to out in canonical form. */
static bool
canonical_field(const LpPageContext *ctx,
				const Lance__Encodings21__VariablePackedStruct__FieldEncoding *field,
				const uint8_t *row, uint64_t row_len, uint64_t *pos, LpBuf *out)
{
	const LpCompressive *value = field->value;
	uint64_t	len;

	if (value == NULL)
		return lp_page_fail(ctx, LP_ERR_CORRUPT, "variable packed struct field lacks its encoding");
	if (field->layout_case ==
		LANCE__ENCODINGS21__VARIABLE_PACKED_STRUCT__FIELD_ENCODING__LAYOUT_BITS_PER_VALUE)
	{
		if (field->bits_per_value == 0 || field->bits_per_value % 8 != 0 ||
			value->compression_case != LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_FLAT)
			return lp_page_unsupported(ctx, "variable_packed_struct field that is not whole bytes");
		len = field->bits_per_value / 8;
		if (len > row_len - *pos)
			return lp_page_fail(ctx, LP_ERR_CORRUPT, "variable packed struct row is too short");
		if (!lp_buf_append(out, row + *pos, len))
			return lp_page_no_memory(ctx);
		*pos += len;
		return true;
	}
	if (field->layout_case !=
		LANCE__ENCODINGS21__VARIABLE_PACKED_STRUCT__FIELD_ENCODING__LAYOUT_BITS_PER_LENGTH ||
		(field->bits_per_length != 32 && field->bits_per_length != 64))
		return lp_page_fail(ctx, LP_ERR_CORRUPT, "variable packed struct field has no layout");
	if (field->bits_per_length / 8 > row_len - *pos)
		return lp_page_fail(ctx, LP_ERR_CORRUPT, "variable packed struct row is too short");
	len = lp_le_uint(row + *pos, (uint32_t) field->bits_per_length / 8);
	*pos += field->bits_per_length / 8;
	if (len > row_len - *pos)
		return lp_page_fail(ctx, LP_ERR_CORRUPT, "variable packed struct value overruns its row");
	switch (value->compression_case)
	{
		case LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_VARIABLE:
			if (!lp_buf_append_u64(out, len) || !lp_buf_append(out, row + *pos, len))
				return lp_page_no_memory(ctx);
			break;
		case LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_FSST:
			{
				LpBlock		one;
				bool		ok;

				if (!lp_block_init_variable(&one) ||
					!lp_block_append_repeated(&one, row + *pos, len, 1))
				{
					lp_block_free(&one);
					return lp_page_no_memory(ctx);
				}
				ok = lp_fsst_expand_block(ctx, value->fsst->symbol_table.data,
										  value->fsst->symbol_table.len, &one);
				if (ok && (!lp_buf_append_u64(out, one.data.len) ||
						   !lp_buf_append(out, one.data.data, one.data.len)))
					ok = lp_page_no_memory(ctx);
				lp_block_free(&one);
				if (!ok)
					return false;
				break;
			}
		default:
			return lp_page_unsupported(ctx, lp_compressive_name(value));
	}
	*pos += len;
	return true;
}

bool
lp_variable_packed_canonical(const LpPageContext *ctx,
							 const Lance__Encodings21__VariablePackedStruct *vps, LpBlock *block)
{
	LpBlock		result;
	const uint64_t *offsets = lp_block_offsets(block);

	if (!block->variable)
		return lp_page_fail(ctx, LP_ERR_CORRUPT, "variable packed struct rows are fixed width");
	if (vps->n_fields == 0)
		return lp_page_fail(ctx, LP_ERR_CORRUPT, "variable packed struct has no fields");
	if (!lp_block_init_variable(&result))
		return lp_page_no_memory(ctx);
	for (uint64_t i = 0; i < block->num_values; i++)
	{
		uint64_t	row_len = offsets[i + 1] - offsets[i];
		const uint8_t *row = row_len > 0 ? block->data.data + offsets[i] : NULL;
		uint64_t	pos = 0;

		/* Null rows have no bytes. */
		for (size_t f = 0; f < vps->n_fields && row_len > 0; f++)
			if (!canonical_field(ctx, vps->fields[f], row, row_len, &pos, &result.data))
			{
				lp_block_free(&result);
				return false;
			}
		if (pos != row_len)
		{
			lp_block_free(&result);
			return lp_page_fail(ctx, LP_ERR_CORRUPT,
								"variable packed struct row has %llu bytes left over",
								(unsigned long long) (row_len - pos));
		}
		if (!lp_buf_append_u64(&result.offsets, result.data.len))
		{
			lp_block_free(&result);
			return lp_page_no_memory(ctx);
		}
	}
	result.num_values = block->num_values;
	lp_block_free(block);
	*block = result;
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
split_rows(const LpType *type, const LpBlock *block, uint64_t count, LpBuf *buffers,
		   LpBuf *offsets, bool *corrupt)
{
	const uint64_t *row_offsets = block->variable ? lp_block_offsets(block) : NULL;
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
lp_packed_struct_array(const LpType *type, LpBlock *block, uint64_t count, LpArray **out,
					   LpError *err, const LpFile *file, uint32_t column)
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
	lp_block_free(block);
	if (!ok)
	{
		lp_array_free(array);
		if (corrupt)
			return lp_fail(err, LP_ERR_CORRUPT,
						   "packed struct rows of column %u of file \"%s\" do not match its children",
						   column, file->name);
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory while decoding a Lance file");
	}
	array->length = count;
	*out = array;
	return true;
}
