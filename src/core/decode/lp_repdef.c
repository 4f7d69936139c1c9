/*
 * lp_repdef.c - repetition and definition levels of Lance 2.1+ back into
 * validity bitmaps and list offsets, layer by layer from the innermost out.
 *
 * Definition level 0 means valid at every layer; a layer that can be null
 * (or an empty list) owns the next level numbers (a list that can be both
 * null and empty owns two: null first, then empty).  Repetition level k > 0
 * starts a new list at the k-th list layer counted from the inside, and ends
 * any list inside it; 0 continues the innermost list.  Only levels whose
 * definition level reaches no list (def <= max visible) carry a value.
 */
#include <string.h>

#include "base/lp_alloc.h"
#include "decode/lp_decode_internal.h"

typedef Lance__Encodings21__RepDefLayer Layer;

static bool
layer_is_list(Layer layer)
{
	return layer == LANCE__ENCODINGS21__REP_DEF_LAYER__REPDEF_ALL_VALID_LIST ||
		layer == LANCE__ENCODINGS21__REP_DEF_LAYER__REPDEF_NULLABLE_LIST ||
		layer == LANCE__ENCODINGS21__REP_DEF_LAYER__REPDEF_EMPTYABLE_LIST ||
		layer == LANCE__ENCODINGS21__REP_DEF_LAYER__REPDEF_NULL_AND_EMPTY_LIST;
}

static uint16_t
layer_def_levels(Layer layer)
{
	switch (layer)
	{
		case LANCE__ENCODINGS21__REP_DEF_LAYER__REPDEF_NULLABLE_ITEM:
		case LANCE__ENCODINGS21__REP_DEF_LAYER__REPDEF_NULLABLE_LIST:
		case LANCE__ENCODINGS21__REP_DEF_LAYER__REPDEF_EMPTYABLE_LIST:
			return 1;
		case LANCE__ENCODINGS21__REP_DEF_LAYER__REPDEF_NULL_AND_EMPTY_LIST:
			return 2;
		default:
			return 0;
	}
}

bool
lp_layers_have_list(const Layer *layers, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (layer_is_list(layers[i]))
			return true;
	return false;
}

uint16_t
lp_max_visible_def(const Layer *layers, size_t n)
{
	uint16_t	level = 0;

	for (size_t i = 0; i < n && !layer_is_list(layers[i]); i++)
		level += layer_def_levels(layers[i]);
	return level;
}

bool
lp_column_levels_init(LpColumnLevels *levels, uint32_t num_layers)
{
	memset(levels, 0, sizeof(*levels));
	levels->layers = lp_alloc_array(num_layers, sizeof(LpLayerValues));
	if (levels->layers == NULL)
		return false;
	levels->num_layers = num_layers;
	for (uint32_t i = 0; i < num_layers; i++)
		levels->layers[i].count = 0;
	return true;
}

void
lp_column_levels_free(LpColumnLevels *levels)
{
	for (uint32_t i = 0; i < levels->num_layers; i++)
	{
		lp_buf_free(&levels->layers[i].validity.buf);
		lp_buf_free(&levels->layers[i].offsets);
	}
	lp_free(levels->layers);
	lp_flat_values_free(&levels->values);
	memset(levels, 0, sizeof(*levels));
}

static bool
corrupt(const LpPageContext *ctx, const char *what)
{
	return lp_page_fail(ctx, LP_ERR_CORRUPT, "%s", what);
}

/*
 * One list layer: turn the levels that start a list into offsets (relative
 * to the items seen so far in acc) and validity, and keep one level per list
 * for the layers outside.
 */
static bool
unravel_list(const LpPageContext *ctx, const Layer *layers, size_t n_layers, size_t index,
			 LpPageLevels *levels, uint16_t *def_cmp, uint64_t *count, LpLayerValues *out)
{
	Layer		layer = layers[index];
	uint16_t	valid_level = *def_cmp;
	uint16_t	null_level = 0;
	uint16_t	empty_level = 0;
	uint16_t	upper_null;
	uint16_t	max_level;
	uint64_t	item_base;
	uint64_t	items = 0;
	uint64_t	write = 0;
	uint64_t	lists = 0;
	bool		ok = true;

	switch (layer)
	{
		case LANCE__ENCODINGS21__REP_DEF_LAYER__REPDEF_NULLABLE_LIST:
			null_level = valid_level + 1;
			break;
		case LANCE__ENCODINGS21__REP_DEF_LAYER__REPDEF_EMPTYABLE_LIST:
			empty_level = valid_level + 1;
			break;
		case LANCE__ENCODINGS21__REP_DEF_LAYER__REPDEF_NULL_AND_EMPTY_LIST:
			null_level = valid_level + 1;
			empty_level = valid_level + 2;
			break;
		default:
			break;
	}
	*def_cmp += layer_def_levels(layer);
	if (levels->rep == NULL)
		return corrupt(ctx, "list layer without repetition levels");

	/*
	 * The highest level at which a list of this layer is itself seen: its
	 * null or empty level, or, for a layer never null nor empty, that of a
	 * null first item (a valid list).  Levels above it up to max_level are
	 * null structs just outside the list, which also hide it: they read as
	 * null lists.
	 */
	upper_null = *def_cmp;
	max_level = upper_null;
	for (size_t i = index + 1; i < n_layers && !layer_is_list(layers[i]); i++)
		max_level += layer_def_levels(layers[i]);

	/* The first offset of a column is 0; later pages continue from the last. */
	if (out->offsets.len == 0 && !lp_buf_append_u64(&out->offsets, 0))
		return lp_page_no_memory(ctx);
	item_base = ((uint64_t *) out->offsets.data)[out->offsets.len / 8 - 1];

	for (uint64_t i = 0; i < levels->num_levels && ok; i++)
	{
		uint16_t	rep = levels->rep[i];
		uint16_t	def = levels->def ? levels->def[i] : 0;

		if (rep == 0)
		{
			items++;
			continue;
		}
		levels->rep[write] = rep - 1;
		if (levels->def)
			levels->def[write] = def;
		write++;
		if (def > max_level && levels->def)
			continue;			/* a list further out is null or empty */
		/* Close the previous list of this layer, open this one. */
		if (lists > 0)
			ok = lp_buf_append_u64(&out->offsets, item_base + items);
		lists++;
		if (def == 0)
		{
			ok = ok && lp_bits_append(&out->validity, true);
			items++;
		}
		else if (def == null_level || def > upper_null)
			ok = ok && lp_bits_append(&out->validity, false);
		else if (def == empty_level)
			ok = ok && lp_bits_append(&out->validity, true);
		else
		{
			/* a valid list whose first item is null */
			ok = ok && lp_bits_append(&out->validity, true);
			items++;
		}
	}
	if (lists > 0 && ok)
		ok = lp_buf_append_u64(&out->offsets, item_base + items);
	if (!ok)
		return lp_page_no_memory(ctx);
	if (items != *count)
		return lp_page_fail(ctx, LP_ERR_CORRUPT,
							"repetition levels hold %llu items where %llu were decoded",
							(unsigned long long) items, (unsigned long long) *count);
	levels->num_levels = write;
	*count = lists;
	out->count += lists;
	return true;
}

/* One item layer (a leaf's or a struct's validity). */
static bool
unravel_item(const LpPageContext *ctx, Layer layer, const uint16_t *levels_to_rep,
			 uint16_t num_def_values, const LpPageLevels *levels, uint16_t rep_cmp,
			 uint16_t *def_cmp, uint64_t count, LpLayerValues *out)
{
	uint64_t	seen = 0;

	if (layer != LANCE__ENCODINGS21__REP_DEF_LAYER__REPDEF_NULLABLE_ITEM || levels->def == NULL)
	{
		if (layer == LANCE__ENCODINGS21__REP_DEF_LAYER__REPDEF_NULLABLE_ITEM)
			(*def_cmp)++;
		out->count += count;
		return lp_bits_append_n(&out->validity, true, count) ? true : lp_page_no_memory(ctx);
	}
	for (uint64_t i = 0; i < levels->num_levels; i++)
	{
		uint16_t	def = levels->def[i];

		if (def >= num_def_values)
			return lp_page_fail(ctx, LP_ERR_CORRUPT, "definition level %u is out of range", def);
		if (levels_to_rep[def] > rep_cmp)
			continue;
		if (!lp_bits_append(&out->validity, def <= *def_cmp))
			return lp_page_no_memory(ctx);
		seen++;
	}
	(*def_cmp)++;
	if (seen != count)
		return lp_page_fail(ctx, LP_ERR_CORRUPT,
							"definition levels hold %llu entries where %llu were expected",
							(unsigned long long) seen, (unsigned long long) count);
	out->count += count;
	return true;
}

bool
lp_repdef_unravel(const LpPageContext *ctx, const Layer *layers, size_t n_layers,
				  LpPageLevels *levels, uint64_t num_values, uint64_t num_rows,
				  LpColumnLevels *acc)
{
	uint16_t	levels_to_rep[2 * 64 + 1];
	uint16_t	num_def_values = 1;
	uint16_t	rep_counter = 0;
	uint16_t	def_cmp = 0;
	uint16_t	rep_cmp = 0;
	uint64_t	count = num_values;

	if (n_layers != acc->num_layers)
		return lp_page_fail(ctx, LP_ERR_CORRUPT,
							"page has %zu repetition/definition layers where the schema has %u",
							n_layers, acc->num_layers);
	if (n_layers > 64)
		return corrupt(ctx, "too many repetition/definition layers");

	/* levels_to_rep[d]: how many lists out a definition level d is seen. */
	levels_to_rep[0] = 0;
	for (size_t i = 0; i < n_layers; i++)
	{
		if (layer_is_list(layers[i]))
			rep_counter++;
		for (uint16_t k = 0; k < layer_def_levels(layers[i]); k++)
			levels_to_rep[num_def_values++] = rep_counter;
		if (layers[i] == LANCE__ENCODINGS21__REP_DEF_LAYER__REPDEF_UNSPECIFIED ||
			(int) layers[i] > LANCE__ENCODINGS21__REP_DEF_LAYER__REPDEF_NULL_AND_EMPTY_LIST)
			return corrupt(ctx, "repetition/definition layer of unknown meaning");
	}
	if (levels->rep == NULL && levels->def == NULL)
		levels->num_levels = 0;
	else if (levels->num_levels < num_values)
		return corrupt(ctx, "fewer levels than values");
	if (levels->rep == NULL && levels->def != NULL && levels->num_levels != num_values)
		return corrupt(ctx, "definition levels and values disagree in number");

	for (size_t i = 0; i < n_layers; i++)
	{
		LpLayerValues *out = &acc->layers[i];
		bool		is_list = layer_is_list(layers[i]);

		if (out->count > 0 && out->is_list != is_list)
			return corrupt(ctx, "layer changes between list and item across pages");
		out->is_list = is_list;
		if (is_list)
		{
			if (!unravel_list(ctx, layers, n_layers, i, levels, &def_cmp, &count, out))
				return false;
			rep_cmp++;
		}
		else if (!unravel_item(ctx, layers[i], levels_to_rep, num_def_values, levels, rep_cmp,
							   &def_cmp, count, out))
			return false;
	}
	if (count != num_rows)
		return lp_page_fail(ctx, LP_ERR_CORRUPT,
							"levels describe %llu rows but the page has %llu",
							(unsigned long long) count, (unsigned long long) num_rows);
	acc->num_rows += num_rows;
	return true;
}
