/*
 * lp_decode_miniblock.c - mini-block pages of Lance 2.1+ (lance-format.md
 * §4.4): chunk metadata words, chunk layout, levels, values, dictionaries.
 *
 * Page buffers: 0 = chunk metadata words (u16 in 2.1; u32 with
 * has_large_chunk in 2.2+), 1 = chunks, 2 = dictionary when present, last =
 * repetition index when repetition_index_depth > 0.
 *
 * A take reads the chunks from the first to the last holding requested rows
 * in one piece and decodes only those holding them, one chunk at a time:
 * without lists a chunk's value count is its row count (and FSST expands
 * only the strings kept); with lists the repetition index says which rows
 * start in each chunk, and a row that spans chunks (the trailer of one, the
 * preamble of the next) takes the chunks up to where it finishes.  A page
 * with lists but no repetition index is decoded whole by the caller.
 */
#include <string.h>

#include "base/lp_alloc.h"
#include "base/lp_checked.h"
#include "decode/lp_decode_internal.h"

#define CHUNK_ALIGNMENT 8
#define MAX_CHUNK_BUFFERS 64

/*
 * A take reads the chunks it needs in one span from the first to the last,
 * unless the span is larger than this and SPARSE_SPAN_FACTOR times the
 * chunks' own bytes: then each run of chunks is read alone (a few rows of a
 * page of millions would otherwise read the whole page).
 */
#define SPARSE_SPAN_MIN_BYTES (1024 * 1024)
#define SPARSE_SPAN_FACTOR 4

typedef struct MiniBlockState
{
	const LpPageContext *ctx;
	const Lance__Encodings21__MiniBlockLayout *layout;
	bool		has_rep;
	bool		has_def;
	LpFlatValues		values;
	LpBuf		rep;			/* u16 levels of all chunks */
	LpBuf		def;
	uint64_t	num_levels;
	const uint8_t *selected;	/* a take of one chunk: its values taken (NULL: all) */
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
	LpFlatValues		chunk_values;

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

	if (!lp_miniblock_decompress_selected(ctx, state->layout->value_compression, buffers,
										  num_buffers, num_values, state->selected, &chunk_values))
		return false;
	if (chunk_values.num_values != num_values)
	{
		lp_flat_values_free(&chunk_values);
		return lp_page_fail(ctx, LP_ERR_CORRUPT, "chunk decoded to the wrong number of values");
	}
	return lp_flat_values_merge(ctx, &state->values, &chunk_values);
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

/* The page's dictionary, decompressed. */
static bool
read_dictionary(const LpPageContext *ctx, LpInput *input, const LpPage *page,
				const Lance__Encodings21__MiniBlockLayout *layout, LpFlatValues *dictionary)
{
	uint8_t    *dictionary_data;
	uint64_t	dictionary_len;
	bool		ok;

	if (layout->num_dictionary_items > ((uint64_t) 1 << 32))
		return lp_page_fail(ctx, LP_ERR_CORRUPT, "dictionary claims %llu items",
							(unsigned long long) layout->num_dictionary_items);
	if (!lp_read_page_buffer(ctx, input, page, 2, &dictionary_data, &dictionary_len))
		return false;
	ok = lp_flat_values_decompress(ctx, layout->dictionary, dictionary_data, dictionary_len,
							 layout->num_dictionary_items, dictionary);
	lp_free(dictionary_data);
	return ok;
}

static bool
apply_dictionary(const LpPageContext *ctx, MiniBlockState *state, const LpFlatValues *dictionary,
				 uint16_t max_visible)
{
	LpFlatValues		gathered;
	uint8_t    *valid;
	bool		ok;

	if (!value_validity(ctx, state, max_visible, state->values.num_values, &valid))
		return false;
	ok = lp_dictionary_gather(ctx, &state->values, dictionary, valid, &gathered);
	lp_free(valid);
	if (!ok)
		return false;
	lp_flat_values_free(&state->values);
	state->values = gathered;
	return true;
}

/* Where each chunk of a page lies, from its metadata words. */
typedef struct ChunkTable
{
	uint64_t	num_chunks;
	uint64_t   *first_values;	/* num_chunks + 1: the first value of each, then num_items */
	uint64_t   *offsets;		/* num_chunks + 1: the first byte of each in buffer 1, then its end */
} ChunkTable;

static void
chunk_table_free(ChunkTable *table)
{
	lp_free(table->first_values);
	lp_free(table->offsets);
	memset(table, 0, sizeof(*table));
}

static bool
check_layout(const LpPageContext *ctx, const LpPage *page,
			 const Lance__Encodings21__MiniBlockLayout *layout)
{
	if (ctx->file->version >= LP_FILE_VERSION_2_2 && !layout->has_large_chunk)
		return lp_page_fail(ctx, LP_ERR_CORRUPT, "mini-block page of a 2.2+ file lacks large chunks");
	if (layout->num_buffers == 0 || layout->num_buffers > MAX_CHUNK_BUFFERS)
		return lp_page_fail(ctx, LP_ERR_CORRUPT, "mini-block page declares %llu value buffers",
							(unsigned long long) layout->num_buffers);
	if (layout->dictionary != NULL && page->num_buffers < 3)
		return lp_page_fail(ctx, LP_ERR_CORRUPT, "dictionary page has no dictionary buffer");
	if (page->num_buffers < 2)
		return lp_page_fail(ctx, LP_ERR_CORRUPT, "buffer 1 is missing");
	return true;
}

/* Read and check the chunk metadata words (buffer 0) against the chunk buffer. */
static bool
read_chunk_table(const LpPageContext *ctx, LpInput *input, const LpPage *page,
				 const Lance__Encodings21__MiniBlockLayout *layout, ChunkTable *table)
{
	uint32_t	word_bytes = layout->has_large_chunk ? 4 : 2;
	uint64_t	chunks_len = page->buffers[1].size;
	uint8_t    *meta;
	uint64_t	meta_len;
	uint64_t	pos = 0;
	uint64_t	values_seen = 0;

	memset(table, 0, sizeof(*table));
	if (!lp_read_page_buffer(ctx, input, page, 0, &meta, &meta_len))
		return false;
	if (meta_len % word_bytes != 0)
	{
		lp_free(meta);
		return lp_page_fail(ctx, LP_ERR_CORRUPT, "chunk metadata is not whole words");
	}
	table->num_chunks = meta_len / word_bytes;
	table->first_values = lp_alloc_array(table->num_chunks + 1, sizeof(uint64_t));
	table->offsets = lp_alloc_array(table->num_chunks + 1, sizeof(uint64_t));
	if (table->first_values == NULL || table->offsets == NULL)
	{
		lp_free(meta);
		chunk_table_free(table);
		return lp_page_no_memory(ctx);
	}
	for (uint64_t c = 0; c < table->num_chunks; c++)
	{
		uint64_t	word = lp_le_uint(meta + c * word_bytes, word_bytes);
		uint64_t	log_values = word & 0xf;
		uint64_t	chunk_bytes = ((word >> 4) + 1) * CHUNK_ALIGNMENT;
		uint64_t	chunk_values;
		const char *problem = NULL;

		if (c + 1 < table->num_chunks)
		{
			chunk_values = (uint64_t) 1 << log_values;
			if (log_values == 0 || chunk_values > layout->num_items - values_seen)
				problem = "claims too many values";
		}
		else
		{
			chunk_values = layout->num_items - values_seen;
			if (log_values != 0 && ((uint64_t) 1 << log_values) != chunk_values)
				problem = "(the last) disagrees with the item count";
		}
		if (problem == NULL && chunk_bytes > chunks_len - pos)
			problem = "overruns the chunk buffer";
		if (problem != NULL)
		{
			lp_free(meta);
			chunk_table_free(table);
			return lp_page_fail(ctx, LP_ERR_CORRUPT, "chunk %llu %s", (unsigned long long) c,
								problem);
		}
		table->first_values[c] = values_seen;
		table->offsets[c] = pos;
		pos += chunk_bytes;
		values_seen += chunk_values;
	}
	lp_free(meta);
	table->first_values[table->num_chunks] = values_seen;
	table->offsets[table->num_chunks] = pos;
	if (values_seen != layout->num_items)
	{
		chunk_table_free(table);
		return lp_page_fail(ctx, LP_ERR_CORRUPT, "chunks hold %llu of %llu items",
							(unsigned long long) values_seen,
							(unsigned long long) layout->num_items);
	}
	return true;
}

/* Parts of a chunk run that belong to rows outside it (ends NULL: none). */
typedef struct RunEnds
{
	bool		preamble;		/* the first chunk begins inside a row of an earlier chunk */
	bool		trailer;		/* the last chunk ends inside a row of a later chunk */
} RunEnds;

/*
 * Drop the levels (and their values) of the preamble and trailer of a run:
 * a row starts at a level whose repetition level is the number of list
 * layers.
 */
static bool
trim_run(const LpPageContext *ctx, const Lance__Encodings21__MiniBlockLayout *layout,
		 const RunEnds *ends, MiniBlockState *state, LpPageLevels *levels)
{
	uint16_t	row_start = 0;
	uint16_t	max_visible = lp_max_visible_def(layout->layers, layout->n_layers);
	uint64_t	first = 0;
	uint64_t	last = levels->num_levels;
	uint64_t	values_before = 0;
	uint64_t	values_after = 0;
	LpRowRange	kept;
	LpFlatValues		values;

	for (size_t i = 0; i < layout->n_layers; i++)
		row_start += lp_layers_have_list(&layout->layers[i], 1);
	if (levels->rep == NULL)
		return lp_page_fail(ctx, LP_ERR_CORRUPT, "list page has no repetition levels");
	if (ends->preamble)
		while (first < last && levels->rep[first] != row_start)
			first++;
	if (ends->trailer && last > first)
	{
		last--;
		while (last > first && levels->rep[last] != row_start)
			last--;
	}
	if (first >= levels->num_levels || (ends->trailer && levels->rep[last] != row_start))
		return lp_page_fail(ctx, LP_ERR_CORRUPT, "chunks of rows that span them hold no row start");
	for (uint64_t i = 0; i < levels->num_levels; i++)
	{
		bool		visible = levels->def == NULL || levels->def[i] <= max_visible;

		if (visible && i < first)
			values_before++;
		else if (visible && i >= last)
			values_after++;
	}
	if (values_before + values_after > state->values.num_values)
		return lp_page_fail(ctx, LP_ERR_CORRUPT, "chunks hold fewer values than their levels");
	kept.start = values_before;
	kept.count = state->values.num_values - values_before - values_after;
	memset(&values, 0, sizeof(values));
	if (!lp_flat_values_take(ctx, &state->values, &kept, 1, &values))
		return false;
	lp_flat_values_free(&state->values);
	state->values = values;
	levels->rep += first;
	if (levels->def != NULL)
		levels->def += first;
	levels->num_levels = last - first;
	return true;
}

/*
 * Decode chunks [first, end) - their bytes in chunks, from the first's
 * offset on - into out, holding num_rows top-level rows: values, dictionary
 * applied, levels unravelled, the parts of rows outside the run (ends; NULL:
 * none) dropped.  selected (NULL: all values) is for a take of one chunk of
 * a page without lists: a bitmap of the rows it keeps, whose values are the
 * only ones that must be right (lp_miniblock_decompress_selected).
 */
static bool
decode_chunk_run(const LpPageContext *ctx, const Lance__Encodings21__MiniBlockLayout *layout,
				 const ChunkTable *table, uint64_t first, uint64_t end, const uint8_t *chunks,
				 const LpFlatValues *dictionary, const RunEnds *ends, uint64_t num_rows,
				 const uint8_t *selected, LpColumnLevels *out)
{
	MiniBlockState state;
	uint64_t	base = table->offsets[first];
	uint16_t	max_visible = lp_max_visible_def(layout->layers, layout->n_layers);
	LpPageLevels levels;
	bool		ok = false;

	memset(&state, 0, sizeof(state));
	state.ctx = ctx;
	state.layout = layout;
	state.has_rep = layout->rep_compression != NULL;
	state.has_def = layout->def_compression != NULL;
	state.selected = selected;
	lp_flat_values_init_fixed(&state.values, 0);
	for (uint64_t c = first; c < end; c++)
		if (!decode_chunk(&state, chunks + (table->offsets[c] - base),
						  table->offsets[c + 1] - table->offsets[c],
						  table->first_values[c + 1] - table->first_values[c]))
			goto done;
	if (dictionary != NULL && state.values.num_values > 0 &&
		!apply_dictionary(ctx, &state, dictionary, max_visible))
		goto done;

	levels.num_levels = state.num_levels;
	levels.rep = state.has_rep ? (uint16_t *) state.rep.data : NULL;
	levels.def = state.has_def ? (uint16_t *) state.def.data : NULL;
	if ((state.has_rep || state.has_def) && state.num_levels == 0 &&
		table->first_values[end] == table->first_values[first] && num_rows > 0)
	{
		lp_page_fail(ctx, LP_ERR_CORRUPT, "page has rows but no levels");
		goto done;
	}
	if (ends != NULL && (ends->preamble || ends->trailer) &&
		!trim_run(ctx, layout, ends, &state, &levels))
		goto done;
	if (!lp_repdef_unravel(ctx, layout->layers, layout->n_layers, &levels,
						   state.values.num_values, num_rows, out))
		goto done;
	if (!lp_flat_values_merge(ctx, &out->values, &state.values))
		goto done;
	ok = true;

done:
	lp_flat_values_free(&state.values);
	lp_buf_free(&state.rep);
	lp_buf_free(&state.def);
	return ok;
}

bool
lp_decode_miniblock_page(const LpPageContext *ctx, LpInput *input, const LpPage *page,
						 const Lance__Encodings21__MiniBlockLayout *layout,
						 LpColumnLevels *acc)
{
	ChunkTable	table;
	LpFlatValues		dictionary;
	bool		has_dictionary = false;
	uint8_t    *chunks = NULL;
	bool		ok;

	memset(&dictionary, 0, sizeof(dictionary));
	if (!check_layout(ctx, page, layout) || !read_chunk_table(ctx, input, page, layout, &table))
		return false;
	ok = true;
	if (layout->dictionary != NULL && layout->num_items > 0)
		ok = has_dictionary = read_dictionary(ctx, input, page, layout, &dictionary);
	ok = ok && lp_read_page_buffer_range(ctx, input, page, 1, table.offsets[0],
										 table.offsets[table.num_chunks] - table.offsets[0], &chunks);
	ok = ok && decode_chunk_run(ctx, layout, &table, 0, table.num_chunks, chunks,
								has_dictionary ? &dictionary : NULL, NULL, page->num_rows, NULL,
								acc);
	lp_free(chunks);
	lp_flat_values_free(&dictionary);
	chunk_table_free(&table);
	return ok;
}

/*
 * The rows of a page with lists, per chunk, from the repetition index
 * (depth + 1 u64 per chunk: the lists finishing in the chunk, then the items
 * left over after the last of them).  A chunk with left-over items ends in
 * a row (its trailer) that the next chunks continue (their preamble).
 */
typedef struct RowIndex
{
	uint64_t   *row_starts;		/* num_chunks + 1: the first row starting in each, then the rows */
	uint64_t   *finished;		/* lists finishing in each chunk */
	bool	   *trailer;
} RowIndex;

static void
row_index_free(RowIndex *index)
{
	lp_free(index->row_starts);
	lp_free(index->finished);
	lp_free(index->trailer);
	memset(index, 0, sizeof(*index));
}

static bool
read_row_index(const LpPageContext *ctx, LpInput *input, const LpPage *page,
			   const Lance__Encodings21__MiniBlockLayout *layout, const ChunkTable *table,
			   RowIndex *index)
{
	uint64_t	stride = (uint64_t) layout->repetition_index_depth + 1;
	uint32_t	buffer = page->num_buffers - 1;
	uint8_t    *data;
	uint64_t	len;
	bool		preamble = false;

	memset(index, 0, sizeof(*index));
	if (layout->repetition_index_depth == 0 ||
		page->num_buffers < (layout->dictionary != NULL ? 4u : 3u))
		return lp_page_fail(ctx, LP_ERR_CORRUPT, "list page has no repetition index buffer");
	if (!lp_read_page_buffer(ctx, input, page, buffer, &data, &len))
		return false;
	if (len / 8 / stride != table->num_chunks || len % (8 * stride) != 0)
	{
		lp_free(data);
		return lp_page_fail(ctx, LP_ERR_CORRUPT,
							"repetition index of %llu bytes does not fit %llu chunks",
							(unsigned long long) len, (unsigned long long) table->num_chunks);
	}
	index->row_starts = lp_alloc_array(table->num_chunks + 1, sizeof(uint64_t));
	index->finished = lp_alloc_array(table->num_chunks + 1, sizeof(uint64_t));
	index->trailer = lp_alloc_array(table->num_chunks + 1, sizeof(bool));
	if (index->row_starts == NULL || index->finished == NULL || index->trailer == NULL)
	{
		lp_free(data);
		row_index_free(index);
		return lp_page_no_memory(ctx);
	}
	for (uint64_t c = 0; c < table->num_chunks; c++)
	{
		uint64_t	finished = lp_le64(data + c * stride * 8);
		bool		trailer = lp_le64(data + c * stride * 8 + 8) > 0;
		uint64_t	starting;

		/* rows starting here: those finishing here, and the trailer, but not the preamble */
		if (finished > page->num_rows || finished + trailer < preamble ||
			(starting = finished + trailer - preamble) > page->num_rows - index->row_starts[c])
		{
			lp_free(data);
			row_index_free(index);
			return lp_page_fail(ctx, LP_ERR_CORRUPT, "repetition index entry of chunk %llu is out of range",
								(unsigned long long) c);
		}
		index->finished[c] = finished;
		index->trailer[c] = trailer;
		index->row_starts[c + 1] = index->row_starts[c] + starting;
		preamble = trailer;
	}
	lp_free(data);
	if (index->row_starts[table->num_chunks] != page->num_rows || preamble)
	{
		/* the message before the free: it reads the index */
		lp_page_fail(ctx, LP_ERR_CORRUPT, "repetition index holds %llu of the page's %llu rows",
					 (unsigned long long) index->row_starts[table->num_chunks],
					 (unsigned long long) page->num_rows);
		row_index_free(index);
		return false;
	}
	return true;
}

/*
 * A take from a mini-block page: the chunks from the first to the last
 * holding requested rows (with lists, up to where the last of those rows
 * finishes) are read in one piece (one read rather than one per chunk; at
 * most the page's chunks, which a whole decode reads too), then decoded one
 * run at a time, those without requested rows skipped.
 */
typedef struct ChunkTake
{
	const LpPageContext *ctx;
	LpInput    *input;
	const LpPage *page;
	const Lance__Encodings21__MiniBlockLayout *layout;
	const ChunkTable *table;
	const RowIndex *rows;		/* pages with lists; NULL without */
	bool		has_dictionary;
	LpFlatValues		dictionary;		/* read with the first chunk that needs it */
	bool		any_chunk;		/* the first and the end of the chunks holding requested rows */
	uint64_t	first_chunk;
	uint64_t	end_chunk;
	uint64_t	run_bytes;		/* the bytes of the chunk runs decoded */
	uint8_t    *span;			/* their bytes, from the first chunk's offset on; or NULL: */
	bool		sparse;			/* each run read alone */
	LpColumnLevels *dst;
	uint64_t	rows_decoded;
} ChunkTake;

/*
 * The chunks [chunk, *end) to decode for the rows starting in chunk, the
 * parts of rows outside them (*ends) and the rows they hold (*rows): the
 * chunk itself without lists; with lists, for a trailer the chunks up to
 * where that row finishes.
 */
static bool
chunk_run(const ChunkTake *take, uint64_t chunk, uint64_t *end, RunEnds *ends, uint64_t *rows)
{
	const ChunkTable *table = take->table;
	const RowIndex *index = take->rows;

	*end = chunk + 1;
	ends->preamble = false;
	ends->trailer = false;
	*rows = table->first_values[chunk + 1] - table->first_values[chunk];
	if (index == NULL)
		return true;
	if (index->trailer[chunk])
	{
		/* on to the first chunk where a list finishes */
		*end = chunk + 2;
		while (*end <= table->num_chunks && index->finished[*end - 1] == 0)
			(*end)++;
		if (*end > table->num_chunks)
			return lp_page_fail(take->ctx, LP_ERR_CORRUPT,
								"the last row of chunk %llu never finishes",
								(unsigned long long) chunk);
	}
	ends->preamble = chunk > 0 && index->trailer[chunk - 1];
	ends->trailer = index->trailer[*end - 1];
	*rows = index->row_starts[*end] - index->row_starts[chunk] - ends->trailer;
	return true;
}

/* The visitor of the first pass: notes the span of chunks the take reads. */
static bool
note_chunk(void *arg, uint64_t chunk, const LpRowRange *ranges, size_t num_ranges)
{
	ChunkTake  *take = arg;
	uint64_t	end;
	uint64_t	rows;
	RunEnds		ends;

	(void) ranges;
	(void) num_ranges;
	if (!chunk_run(take, chunk, &end, &ends, &rows))
		return false;
	if (!take->any_chunk)
		take->first_chunk = chunk;
	take->end_chunk = end;
	take->any_chunk = true;
	take->run_bytes += take->table->offsets[end] - take->table->offsets[chunk];
	return true;
}

/*
 * The visitor of the chunk in which the rows of ranges start: decodes its
 * run from the span read.  Without lists, value i of the chunk is its row i
 * (lp_take_miniblock_page), so FSST expands only the rows kept.
 */
static bool
take_from_chunk(void *arg, uint64_t chunk, const LpRowRange *ranges, size_t num_ranges)
{
	ChunkTake  *take = arg;
	const ChunkTable *table = take->table;
	uint64_t	end;
	uint64_t	rows;
	RunEnds		ends;
	LpColumnLevels chunk_levels;
	uint8_t    *selected = NULL;
	uint8_t    *run = NULL;
	bool		ok;

	if (!chunk_run(take, chunk, &end, &ends, &rows))
		return false;
	if (take->sparse &&
		!lp_read_page_buffer_range(take->ctx, take->input, take->page, 1, table->offsets[chunk],
								   table->offsets[end] - table->offsets[chunk], &run))
		return false;
	if (take->layout->dictionary != NULL && !take->has_dictionary)
	{
		if (!read_dictionary(take->ctx, take->input, take->page, take->layout, &take->dictionary))
			return false;
		take->has_dictionary = true;
	}
	if (take->rows == NULL)
	{
		selected = lp_alloc0((size_t) ((rows + 7) / 8));
		if (selected == NULL)
			return lp_page_no_memory(take->ctx);
		for (size_t r = 0; r < num_ranges; r++)
			for (uint64_t row = ranges[r].start; row < ranges[r].start + ranges[r].count; row++)
				selected[row / 8] |= (uint8_t) (1 << (row % 8));
	}
	if (!lp_column_levels_init(&chunk_levels, take->dst->num_layers))
	{
		lp_free(selected);
		lp_free(run);
		return lp_page_no_memory(take->ctx);
	}
	ok = decode_chunk_run(take->ctx, take->layout, table, chunk, end,
						  take->sparse ? run
						  : take->span + (table->offsets[chunk] - table->offsets[take->first_chunk]),
						  take->has_dictionary ? &take->dictionary : NULL, &ends, rows, selected,
						  &chunk_levels) &&
		lp_column_levels_take(take->ctx, &chunk_levels, ranges, num_ranges, take->dst);
	lp_column_levels_free(&chunk_levels);
	lp_free(selected);
	lp_free(run);
	take->rows_decoded += rows;
	return ok;
}

/*
 * Split ranges over the page's chunks (by the rows starting in each: starts)
 * for visit; false (error set) if that failed.
 */
static bool
split_over_chunks(const LpPageContext *ctx, const uint64_t *starts, uint64_t num_chunks,
				  const LpRowRange *ranges, size_t num_ranges, LpUnitVisitor visit,
				  ChunkTake *take)
{
	switch (lp_split_ranges(starts, num_chunks, ranges, num_ranges, visit, take))
	{
		case LP_SPLIT_OK:
			return true;
		case LP_SPLIT_VISIT_FAILED:
			return false;
		case LP_SPLIT_NO_MEMORY:
			return lp_page_no_memory(ctx);
		case LP_SPLIT_BEYOND:
			return lp_page_fail(ctx, LP_ERR_CORRUPT, "rows lie beyond the page's chunks");
	}
	return false;
}

bool
lp_take_miniblock_page(const LpPageContext *ctx, LpInput *input, const LpPage *page,
					   const Lance__Encodings21__MiniBlockLayout *layout,
					   const LpRowRange *ranges, size_t num_ranges, LpColumnLevels *dst,
					   uint64_t *rows_decoded)
{
	bool		lists = lp_layers_have_list(layout->layers, layout->n_layers);
	ChunkTable	table;
	RowIndex	index;
	ChunkTake	take;
	const uint64_t *starts;
	bool		ok;

	/* Without lists every item is a row: chunk value counts are row counts. */
	if (!lists && layout->num_items != page->num_rows)
		return lp_page_fail(ctx, LP_ERR_CORRUPT, "page of %llu rows holds %llu items",
							(unsigned long long) page->num_rows,
							(unsigned long long) layout->num_items);
	if (!check_layout(ctx, page, layout) || !read_chunk_table(ctx, input, page, layout, &table))
		return false;
	if (lists && !read_row_index(ctx, input, page, layout, &table, &index))
	{
		chunk_table_free(&table);
		return false;
	}
	memset(&take, 0, sizeof(take));
	take.rows = lists ? &index : NULL;
	take.ctx = ctx;
	take.input = input;
	take.page = page;
	take.layout = layout;
	take.table = &table;
	take.dst = dst;
	starts = lists ? index.row_starts : table.first_values;
	ok = split_over_chunks(ctx, starts, table.num_chunks, ranges, num_ranges, note_chunk, &take);
	if (ok && take.any_chunk)
	{
		uint64_t	span_bytes = table.offsets[take.end_chunk] - table.offsets[take.first_chunk];

		take.sparse = span_bytes > SPARSE_SPAN_MIN_BYTES &&
			span_bytes / SPARSE_SPAN_FACTOR > take.run_bytes;
		ok = (take.sparse ||
			  lp_read_page_buffer_range(ctx, input, page, 1, table.offsets[take.first_chunk],
										span_bytes, &take.span)) &&
			split_over_chunks(ctx, starts, table.num_chunks, ranges, num_ranges,
							  take_from_chunk, &take);
	}
	*rows_decoded += take.rows_decoded;
	lp_free(take.span);
	lp_flat_values_free(&take.dictionary);
	if (lists)
		row_index_free(&index);
	chunk_table_free(&table);
	return ok;
}
