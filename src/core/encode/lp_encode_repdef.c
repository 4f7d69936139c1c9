/*
 * lp_encode_repdef.c - the definition and repetition levels of a 2.1+ page, built from
 * its values as Lance's RepDefBuilder builds them, and compressed as Lance
 * compresses levels (lp_encode_page_internal.h).
 */
#include <math.h>
#include <string.h>

#include "base/lp_alloc.h"
#include "base/lp_bytes.h"
#include "base/lp_checked.h"
#include "codec/lp_bitpack.h"
#include "codec/lp_fsst.h"
#include "encode/lp_encode_page_internal.h"
#include "format/lp_encodings.h"
#include "format/lp_values.h"

/* Whether the n bytes are all 0, read a word at a time. */
static bool
all_zero(const uint8_t *bytes, uint64_t n)
{
	uint64_t	all = 0;
	uint64_t	i = 0;

	for (; i + 8 <= n; i += 8)
	{
		uint64_t	word;

		memcpy(&word, bytes + i, 8);
		all |= word;
	}
	for (; i < n; i++)
		all |= bytes[i];
	return all == 0;
}

/* The null or empty layer of level i (see null_layers), 0 when it is valid. */
static uint32_t
level_code(const LpLeafShape *shape, const LpPageValues *page, uint64_t i)
{
	if (shape->num_layers > 1)
		return page->null_layers.data[i];
	return lp_enc_is_null(page, i) ? 1 : 0;
}

static uint32_t
bits_of(uint16_t max)
{
	return max == 0 ? 0 : 32 - (uint32_t) __builtin_clz(max);
}

static Layer
layer_kind(bool list, bool nullable, bool emptyable)
{
	if (!list)
		return nullable ? LANCE__ENCODINGS21__REP_DEF_LAYER__REPDEF_NULLABLE_ITEM :
			LANCE__ENCODINGS21__REP_DEF_LAYER__REPDEF_ALL_VALID_ITEM;
	if (nullable && emptyable)
		return LANCE__ENCODINGS21__REP_DEF_LAYER__REPDEF_NULL_AND_EMPTY_LIST;
	if (nullable)
		return LANCE__ENCODINGS21__REP_DEF_LAYER__REPDEF_NULLABLE_LIST;
	if (emptyable)
		return LANCE__ENCODINGS21__REP_DEF_LAYER__REPDEF_EMPTYABLE_LIST;
	return LANCE__ENCODINGS21__REP_DEF_LAYER__REPDEF_ALL_VALID_LIST;
}

bool
lp_enc_levels_build(const LpLeafShape *shape, const LpPageValues *page, Levels *levels)
{
	bool		nullable[LP_ENCODE_MAX_LAYERS] = {false};
	bool		emptyable[LP_ENCODE_MAX_LAYERS] = {false};
	uint16_t	null_level[LP_ENCODE_MAX_LAYERS];
	uint16_t	empty_level[LP_ENCODE_MAX_LAYERS];
	uint64_t	n = shape->num_lists > 0 ? page->num_levels : page->num_values;
	bool		inside_lists = false;
	bool		any_null;

	memset(levels, 0, sizeof(*levels));
	levels->num_layers = shape->num_layers;
	levels->num_levels = n;
	/* the layers with nulls or empty lists, where some level has one (mostly none does) */
	any_null = shape->num_layers > 1 ? !all_zero(page->null_layers.data, n) : page->null_count > 0;
	for (uint64_t i = 0; any_null && i < n; i++)
	{
		uint32_t	code = level_code(shape, page, i);

		if (code & LP_LEVEL_EMPTY)
			emptyable[(code & ~LP_LEVEL_EMPTY) - 1] = true;
		else if (code > 0)
			nullable[code - 1] = true;
	}
	for (uint32_t k = 0; k < levels->num_layers; k++)
	{
		levels->layers[k] = layer_kind(shape->list_layer[k], nullable[k], emptyable[k]);
		null_level[k] = nullable[k] ? ++levels->def.max : 0;
		empty_level[k] = emptyable[k] ? ++levels->def.max : 0;
		inside_lists = inside_lists || shape->list_layer[k];
		if (!inside_lists)
			levels->max_visible = levels->def.max;
	}
	levels->def.width = bits_of(levels->def.max);
	if (levels->def.max > 0)
	{
		levels->def_values = lp_alloc_array(n + 1, sizeof(uint16_t));
		if (levels->def_values == NULL)
			return false;
		for (uint64_t i = 0; i < n; i++)
		{
			uint32_t	code = level_code(shape, page, i);

			levels->def_values[i] = code == 0 ? 0 : (code & LP_LEVEL_EMPTY) ?
				empty_level[(code & ~LP_LEVEL_EMPTY) - 1] : null_level[code - 1];
		}
		levels->def.v = levels->def_values;
	}
	if (shape->num_lists > 0)
	{
		levels->rep.max = (uint16_t) shape->num_lists;
		levels->rep.width = bits_of(levels->rep.max);
		/* read where the file writer put them (native u16, as every reader of v takes them) */
		levels->rep.v = (const uint16_t *) page->rep.data;
	}
	return true;
}

void
lp_enc_levels_free(Levels *levels)
{
	lp_free(levels->def_values);
}

/* ---- definition levels ---------------------------------------------------- */

/* Bytes of the levels [first, first + count) as RLE runs (u16 values, u8 lengths). */
static uint64_t
level_rle_bytes(const LevelSeq *levels, uint64_t first, uint64_t count)
{
	uint64_t	bytes = 0;

	for (uint64_t i = first; i < first + count;)
	{
		uint64_t	run = 1;

		while (i + run < first + count && levels->v[i + run] == levels->v[i])
			run++;
		bytes += (run + 254) / 255 * 3;
		i += run;
	}
	return bytes;
}

/*
 * Lance 12 picks the levels' compression from the whole page: flat when the
 * page is so small that one packed block outweighs it; from 2.2 on RLE
 * when its runs take fewer bytes than bit-packing (rare nulls); else
 * bit-packing at the width of the highest level, inline for at most 1024
 * levels and out of line (one width) beyond.
 */
LevelCompression
lp_enc_choose_level_compression(LpFileVersion version, const LevelSeq *levels, uint64_t n)
{
	uint64_t	block_bytes = lp_fastlanes_packed_bytes(levels->width);

	if (n <= LP_FASTLANES_BLOCK && block_bytes >= n * 2)
		return LEVELS_FLAT;
	if (version >= LP_FILE_VERSION_2_2 &&
		level_rle_bytes(levels, 0, n) <
		(n + LP_FASTLANES_BLOCK - 1) / LP_FASTLANES_BLOCK * block_bytes)
		return LEVELS_RLE;
	return n <= LP_FASTLANES_BLOCK ? LEVELS_INLINE : LEVELS_OUT_OF_LINE;
}

/* Pack 1024 u16 levels (zero-padded) of [first, first + count) at width. */
static bool
pack_level_block(const LevelSeq *levels, uint64_t first, uint64_t count, uint32_t width,
				 LpBuf *out)
{
	uint16_t	block[LP_FASTLANES_BLOCK];
	uint8_t		packed[LP_FASTLANES_BLOCK * 2];

	memset(block, 0, sizeof(block));
	for (uint64_t i = 0; i < count; i++)
		lp_put_le16((uint8_t *) &block[i], levels->v[first + i]);
	lp_fastlanes_pack(LEVEL_BITS, width, (const uint8_t *) block, packed);
	return lp_buf_append(out, packed, lp_fastlanes_packed_bytes(width));
}

/* The definition levels of chunk [first, first + count), compressed, appended to out. */
bool
lp_enc_compress_levels(const LevelSeq *levels, LevelCompression compression, uint64_t first,
				uint64_t count, LpBuf *out)
{
	switch (compression)
	{
		case LEVELS_RLE:
			{
				/* A block: u64 size of the run values, the values (u16), the lengths (u8). */
				uint64_t	runs_bytes = level_rle_bytes(levels, first, count);
				uint64_t	start = out->len;
				uint8_t		word[8];

				lp_put_le64(word, runs_bytes / 3 * 2);
				if (!lp_buf_append(out, word, 8) || !lp_buf_append_zeros(out, runs_bytes))
					return false;
				for (uint64_t i = first, r = 0, n_runs = runs_bytes / 3; i < first + count;)
				{
					uint64_t	run = 1;

					while (i + run < first + count && levels->v[i + run] == levels->v[i])
						run++;
					for (uint64_t left = run; left > 0; r++)
					{
						uint8_t		length = (uint8_t) (left > 255 ? 255 : left);

						lp_put_le16(out->data + start + 8 + r * 2, levels->v[i]);
						out->data[start + 8 + n_runs * 2 + r] = length;
						left -= length;
					}
					i += run;
				}
				return true;
			}
		case LEVELS_FLAT:
			for (uint64_t i = 0; i < count; i++)
			{
				uint8_t		level[2];

				lp_put_le16(level, levels->v[first + i]);
				if (!lp_buf_append(out, level, 2))
					return false;
			}
			return true;
		case LEVELS_INLINE:
			{
				uint8_t		width[2];

				/* At the width of the page's widest level, which every chunk can take. */
				lp_put_le16(width, (uint16_t) levels->width);
				return lp_buf_append(out, width, 2) &&
					pack_level_block(levels, first, count, levels->width, out);
			}
		case LEVELS_OUT_OF_LINE:
			{
				uint64_t	whole = count / LP_FASTLANES_BLOCK;
				uint64_t	tail = count % LP_FASTLANES_BLOCK;

				for (uint64_t b = 0; b < whole; b++)
					if (!pack_level_block(levels, first + b * LP_FASTLANES_BLOCK,
										  LP_FASTLANES_BLOCK, levels->width, out))
						return false;
				if (tail == 0)
					return true;
				/* Pad and pack the tail only when that is smaller than raw levels. */
				if (levels->width * (LP_FASTLANES_BLOCK - tail) < (LEVEL_BITS - levels->width) * tail)
					return pack_level_block(levels, first + whole * LP_FASTLANES_BLOCK, tail,
											levels->width, out);
				return lp_enc_compress_levels(levels, LEVELS_FLAT, first + whole * LP_FASTLANES_BLOCK,
									   tail, out);
			}
	}
	return false;
}

CE *
lp_enc_level_encoding(Messages *m, LevelCompression compression, uint32_t width)
{
	switch (compression)
	{
		case LEVELS_RLE:
			return lp_enc_rle(m, LEVEL_BITS);
		case LEVELS_INLINE:
			return lp_enc_inline_bitpacking(m, LEVEL_BITS);
		case LEVELS_OUT_OF_LINE:
			return lp_enc_out_of_line(m, LEVEL_BITS, width);
		default:
			return lp_enc_flat(m, LEVEL_BITS);
	}
}

