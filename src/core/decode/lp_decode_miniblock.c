/*
 * lp_decode_miniblock.c - mini-block pages of Lance 2.1+ (lance-format.md
 * §4.4): chunk metadata words, chunk layout, levels, values, dictionaries.
 *
 * Page buffers: 0 = chunk metadata words (u16 in 2.1; u32 with
 * has_large_chunk in 2.2+), 1 = chunks, 2 = dictionary when present, last =
 * repetition index when repetition_index_depth > 0 (not needed for a full
 * decode: chunks are read in order).
 */
#include <string.h>

#include "base/lp_alloc.h"
#include "base/lp_checked.h"
#include "decode/lp_decode_internal.h"

#define CHUNK_ALIGNMENT 8
#define MAX_CHUNK_BUFFERS 64

typedef struct MiniBlockState
{
	const LpPageContext *ctx;
	const Lance__Encodings21__MiniBlockLayout *layout;
	bool		has_rep;
	bool		has_def;
	LpBlock		values;
	LpBuf		rep;			/* u16 levels of all chunks */
	LpBuf		def;
	uint64_t	num_levels;
} MiniBlockState;

static uint64_t
align_up(uint64_t value)
{
	return (value + CHUNK_ALIGNMENT - 1) & ~(uint64_t) (CHUNK_ALIGNMENT - 1);
}

static bool
append_levels(MiniBlockState *state, const LpCompressive *encoding, const uint8_t *data,
			  uint64_t len, uint64_t num_levels, LpBuf *target)
{
	uint16_t   *levels;
	bool		ok;

	if (!lp_levels_decompress(state->ctx, encoding, data, len, num_levels, &levels))
		return false;
	ok = lp_buf_append(target, levels, num_levels * 2);
	lp_free(levels);
	return ok ? true : lp_page_no_memory(state->ctx);
}

/* Decode one chunk [data, data + len) holding num_values values. */
static bool
decode_chunk(MiniBlockState *state, const uint8_t *data, uint64_t len, uint64_t num_values)
{
	const LpPageContext *ctx = state->ctx;
	uint32_t	num_buffers = (uint32_t) state->layout->num_buffers;
	uint32_t	size_bytes = state->layout->has_large_chunk ? 4 : 2;
	uint64_t	header;
	uint64_t	pos;
	uint64_t	num_levels;
	uint64_t	rep_size = 0;
	uint64_t	def_size = 0;
	uint64_t	buffer_sizes[MAX_CHUNK_BUFFERS];
	LpSlice		buffers[MAX_CHUNK_BUFFERS];
	LpBlock		chunk_values;

	header = 2 + (state->has_rep ? 2 : 0) + (state->has_def ? 2 : 0) +
		(uint64_t) num_buffers * size_bytes;
	if (header > len)
		return lp_page_fail(ctx, LP_ERR_CORRUPT, "mini-block chunk is shorter than its header");
	num_levels = lp_le16(data);
	pos = 2;
	if (state->has_rep)
	{
		rep_size = lp_le16(data + pos);
		pos += 2;
	}
	if (state->has_def)
	{
		def_size = lp_le16(data + pos);
		pos += 2;
	}
	for (uint32_t i = 0; i < num_buffers; i++)
	{
		buffer_sizes[i] = lp_le_uint(data + pos, size_bytes);
		pos += size_bytes;
	}
	pos = align_up(pos);

	if (state->has_rep)
	{
		if (rep_size > len || pos > len - rep_size)
			return lp_page_fail(ctx, LP_ERR_CORRUPT, "repetition levels overrun their chunk");
		if (!append_levels(state, state->layout->rep_compression, data + pos, rep_size,
						   num_levels, &state->rep))
			return false;
		pos = align_up(pos + rep_size);
	}
	if (state->has_def)
	{
		if (pos > len || def_size > len - pos)
			return lp_page_fail(ctx, LP_ERR_CORRUPT, "definition levels overrun their chunk");
		if (!append_levels(state, state->layout->def_compression, data + pos, def_size,
						   num_levels, &state->def))
			return false;
		pos = align_up(pos + def_size);
	}
	for (uint32_t i = 0; i < num_buffers; i++)
	{
		if (pos > len || buffer_sizes[i] > len - pos)
			return lp_page_fail(ctx, LP_ERR_CORRUPT, "value buffer %u overruns its chunk", i);
		buffers[i].data = data + pos;
		buffers[i].len = buffer_sizes[i];
		pos = align_up(pos + buffer_sizes[i]);
	}
	state->num_levels += num_levels;

	if (!lp_miniblock_decompress(ctx, state->layout->value_compression, buffers, num_buffers,
								 num_values, &chunk_values))
		return false;
	if (chunk_values.num_values != num_values)
	{
		lp_block_free(&chunk_values);
		return lp_page_fail(ctx, LP_ERR_CORRUPT, "chunk decoded to the wrong number of values");
	}
	return lp_block_merge(ctx, &state->values, &chunk_values);
}

/* Validity of each visible value from the definition levels (NULL: all valid). */
static bool
value_validity(const LpPageContext *ctx, const MiniBlockState *state, uint16_t max_visible,
			   uint64_t num_values, uint8_t **valid)
{
	const uint16_t *def = (const uint16_t *) state->def.data;
	uint64_t	v = 0;

	*valid = NULL;
	if (!state->has_def)
		return true;
	*valid = lp_alloc0((size_t) (num_values / 8 + 1));
	if (*valid == NULL)
		return lp_page_no_memory(ctx);
	for (uint64_t i = 0; i < state->num_levels && v < num_values; i++)
	{
		if (def[i] > max_visible)
			continue;
		if (def[i] == 0)
			lp_bit_set(*valid, v, true);
		v++;
	}
	return true;
}

static bool
apply_dictionary(const LpPageContext *ctx, LpInput *input, const LpPage *page,
				 MiniBlockState *state, uint16_t max_visible)
{
	const Lance__Encodings21__MiniBlockLayout *layout = state->layout;
	uint8_t    *dictionary_data;
	uint64_t	dictionary_len;
	LpBlock		dictionary;
	LpBlock		gathered;
	uint8_t    *valid;
	bool		ok;

	if (layout->num_dictionary_items > ((uint64_t) 1 << 32))
		return lp_page_fail(ctx, LP_ERR_CORRUPT, "dictionary claims %llu items",
							(unsigned long long) layout->num_dictionary_items);
	if (!lp_read_page_buffer(ctx, input, page, 2, &dictionary_data, &dictionary_len))
		return false;
	ok = lp_block_decompress(ctx, layout->dictionary, dictionary_data, dictionary_len,
							 layout->num_dictionary_items, &dictionary);
	lp_free(dictionary_data);
	if (!ok)
		return false;
	if (!value_validity(ctx, state, max_visible, state->values.num_values, &valid))
	{
		lp_block_free(&dictionary);
		return false;
	}
	ok = lp_dictionary_gather(ctx, &state->values, &dictionary, valid, &gathered);
	lp_free(valid);
	lp_block_free(&dictionary);
	if (!ok)
		return false;
	lp_block_free(&state->values);
	state->values = gathered;
	return true;
}

bool
lp_decode_miniblock_page(const LpPageContext *ctx, LpInput *input, const LpPage *page,
						 const Lance__Encodings21__MiniBlockLayout *layout,
						 LpColumnLevels *acc)
{
	MiniBlockState state;
	uint8_t    *meta = NULL;
	uint8_t    *chunks = NULL;
	uint64_t	meta_len;
	uint64_t	chunks_len;
	uint32_t	word_bytes = layout->has_large_chunk ? 4 : 2;
	uint64_t	num_chunks;
	uint64_t	pos = 0;
	uint64_t	values_seen = 0;
	uint16_t	max_visible;
	LpPageLevels levels;
	bool		ok = false;

	memset(&state, 0, sizeof(state));
	state.ctx = ctx;
	state.layout = layout;
	state.has_rep = layout->rep_compression != NULL;
	state.has_def = layout->def_compression != NULL;
	max_visible = lp_max_visible_def(layout->layers, layout->n_layers);

	if (ctx->file->version >= LP_FILE_VERSION_2_2 && !layout->has_large_chunk)
		return lp_page_fail(ctx, LP_ERR_CORRUPT, "mini-block page of a 2.2+ file lacks large chunks");
	if (layout->num_buffers == 0 || layout->num_buffers > MAX_CHUNK_BUFFERS)
		return lp_page_fail(ctx, LP_ERR_CORRUPT, "mini-block page declares %llu value buffers",
							(unsigned long long) layout->num_buffers);
	if (layout->dictionary != NULL && page->num_buffers < 3)
		return lp_page_fail(ctx, LP_ERR_CORRUPT, "dictionary page has no dictionary buffer");

	if (!lp_read_page_buffer(ctx, input, page, 0, &meta, &meta_len) ||
		!lp_read_page_buffer(ctx, input, page, 1, &chunks, &chunks_len))
		goto done;
	if (meta_len % word_bytes != 0)
	{
		lp_page_fail(ctx, LP_ERR_CORRUPT, "chunk metadata is not whole words");
		goto done;
	}
	num_chunks = meta_len / word_bytes;
	lp_block_init_fixed(&state.values, 0);

	for (uint64_t c = 0; c < num_chunks; c++)
	{
		uint64_t	word = lp_le_uint(meta + c * word_bytes, word_bytes);
		uint64_t	log_values = word & 0xf;
		uint64_t	chunk_bytes = ((word >> 4) + 1) * CHUNK_ALIGNMENT;
		uint64_t	chunk_values;

		if (c + 1 < num_chunks)
		{
			chunk_values = (uint64_t) 1 << log_values;
			if (log_values == 0 || chunk_values > layout->num_items - values_seen)
			{
				lp_page_fail(ctx, LP_ERR_CORRUPT, "chunk %llu claims too many values",
							 (unsigned long long) c);
				goto done;
			}
		}
		else
		{
			chunk_values = layout->num_items - values_seen;
			if (log_values != 0 && ((uint64_t) 1 << log_values) != chunk_values)
			{
				lp_page_fail(ctx, LP_ERR_CORRUPT, "last chunk disagrees with the item count");
				goto done;
			}
		}
		if (chunk_bytes > chunks_len - pos)
		{
			lp_page_fail(ctx, LP_ERR_CORRUPT, "chunk %llu overruns the chunk buffer",
						 (unsigned long long) c);
			goto done;
		}
		if (!decode_chunk(&state, chunks + pos, chunk_bytes, chunk_values))
			goto done;
		pos += chunk_bytes;
		values_seen += chunk_values;
	}
	if (values_seen != layout->num_items)
	{
		lp_page_fail(ctx, LP_ERR_CORRUPT, "chunks hold %llu of %llu items",
					 (unsigned long long) values_seen, (unsigned long long) layout->num_items);
		goto done;
	}
	if (layout->dictionary != NULL && state.values.num_values > 0 &&
		!apply_dictionary(ctx, input, page, &state, max_visible))
		goto done;

	levels.num_levels = state.num_levels;
	levels.rep = state.has_rep ? (uint16_t *) state.rep.data : NULL;
	levels.def = state.has_def ? (uint16_t *) state.def.data : NULL;
	if ((state.has_rep || state.has_def) && state.num_levels == 0 && layout->num_items == 0 &&
		page->num_rows > 0)
	{
		lp_page_fail(ctx, LP_ERR_CORRUPT, "page has rows but no levels");
		goto done;
	}
	if (!lp_repdef_unravel(ctx, layout->layers, layout->n_layers, &levels,
						   state.values.num_values, page->num_rows, acc))
		goto done;
	if (!lp_block_merge(ctx, &acc->values, &state.values))
		goto done;
	ok = true;

done:
	lp_free(meta);
	lp_free(chunks);
	lp_block_free(&state.values);
	lp_buf_free(&state.rep);
	lp_buf_free(&state.def);
	return ok;
}
