/*
 * lp_decode_packed.c - pages of structs stored as one column: packed
 * structs (2.0 PackedStruct, 2.1+ PackedStruct in mini-blocks) and variable
 * packed structs (2.2+ full-zip VariablePackedStruct, also blob v2
 * descriptors).  The rows are brought into the canonical form that
 * lp_packed_struct_array (lp_decode_leaf.c) splits into the children.
 */
#include "decode/lp_decode_internal.h"

bool
lp_packed_struct_check(const LpPageContext *ctx, const Lance__Encodings21__PackedStruct *packed,
					   const LpFlatValues *rows)
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
				LpFlatValues		one;
				bool		ok;

				if (!lp_flat_values_init_variable(&one) ||
					!lp_flat_values_append_repeated(&one, row + *pos, len, 1))
				{
					lp_flat_values_free(&one);
					return lp_page_no_memory(ctx);
				}
				ok = lp_fsst_expand_values(ctx, value->fsst->symbol_table.data,
										  value->fsst->symbol_table.len, NULL, &one);
				if (ok && (!lp_buf_append_u64(out, one.data.len) ||
						   !lp_buf_append(out, one.data.data, one.data.len)))
					ok = lp_page_no_memory(ctx);
				lp_flat_values_free(&one);
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
							 const Lance__Encodings21__VariablePackedStruct *vps, LpFlatValues *block)
{
	LpFlatValues		result;
	const uint64_t *offsets = lp_flat_values_offsets(block);

	if (!block->variable)
		return lp_page_fail(ctx, LP_ERR_CORRUPT, "variable packed struct rows are fixed width");
	if (vps->n_fields == 0)
		return lp_page_fail(ctx, LP_ERR_CORRUPT, "variable packed struct has no fields");
	if (!lp_flat_values_init_variable(&result))
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
				lp_flat_values_free(&result);
				return false;
			}
		if (pos != row_len)
		{
			lp_flat_values_free(&result);
			return lp_page_fail(ctx, LP_ERR_CORRUPT,
								"variable packed struct row has %llu bytes left over",
								(unsigned long long) (row_len - pos));
		}
		if (!lp_buf_append_u64(&result.offsets, result.data.len))
		{
			lp_flat_values_free(&result);
			return lp_page_no_memory(ctx);
		}
	}
	result.num_values = block->num_values;
	lp_flat_values_free(block);
	*block = result;
	return true;
}

