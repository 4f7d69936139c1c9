/*
 * lp_row_ids.c - stable row ids and row versions carried into rewritten
 * fragments (see lp_row_ids.h).
 */
#include "dataset/lp_row_ids.h"

#include <inttypes.h>
#include <string.h>

#include "base/lp_alloc.h"
#include "base/lp_bytes.h"
#include "base/lp_protobuf.h"
#include "base/lp_search.h"
#include "dataset/lp_manifest_internal.h"
#include "rowids.pb-c.h"

/* Where the values being read come from, for messages. */
typedef struct SequenceSource
{
	const char *manifest_name;
	uint64_t	fragment_id;
	const char *what;			/* "row ids", "created-at versions", ... */
} SequenceSource;

static bool
corrupt(const SequenceSource *source, LpError *err, const char *problem)
{
	return lp_fail(err, LP_ERR_CORRUPT,
				   "%s of fragment %" PRIu64 " in manifest file \"%s\" %s",
				   source->what, source->fragment_id, source->manifest_name, problem);
}

/*
 * Values of an EncodedU64Array into out[0..room) (out NULL: count only);
 * *count gets how many.
 */
static bool
read_array(const Lance__Table__EncodedU64Array *array, uint64_t *out, uint64_t room,
		   uint64_t *count, const SequenceSource *source, LpError *err)
{
	const uint8_t *data;
	size_t		len;
	size_t		width;
	uint64_t	base = 0;

	switch (array->array_case)
	{
		case LANCE__TABLE__ENCODED_U64_ARRAY__ARRAY_U16_ARRAY:
			data = array->u16_array->offsets.data;
			len = array->u16_array->offsets.len;
			base = array->u16_array->first;
			width = 2;
			break;
		case LANCE__TABLE__ENCODED_U64_ARRAY__ARRAY_U32_ARRAY:
			data = array->u32_array->offsets.data;
			len = array->u32_array->offsets.len;
			base = array->u32_array->first;
			width = 4;
			break;
		case LANCE__TABLE__ENCODED_U64_ARRAY__ARRAY_U64_ARRAY:
			data = array->u64_array->values.data;
			len = array->u64_array->values.len;
			width = 8;
			break;
		default:
			return corrupt(source, err, "have an array of no known form");
	}
	if (len % width != 0)
		return corrupt(source, err, "have an array whose size is not a multiple of its values");
	*count = len / width;
	if (*count > room)
		return corrupt(source, err, "hold more values than the fragment has rows");
	for (uint64_t i = 0; out != NULL && i < *count; i++)
	{
		uint64_t	offset = lp_le_uint(data + i * width, (uint32_t) width);

		if (offset > UINT64_MAX - base)
			return corrupt(source, err, "have a value past 2^64");
		out[i] = base + offset;
	}
	return true;
}

/* The values of a range (start, end) without its holes, in order. */
static bool
read_range_with_holes(const Lance__Table__U64Segment__RangeWithHoles *segment, uint64_t *out,
					  uint64_t room, uint64_t *count, const SequenceSource *source,
					  LpError *err)
{
	uint64_t	n_holes;
	uint64_t   *holes;
	uint64_t	next_hole = 0;

	if (segment->end < segment->start)
		return corrupt(source, err, "have a range that ends before it starts");
	if (segment->holes == NULL)
		return corrupt(source, err, "have a range with holes but no holes");
	if (!read_array(segment->holes, NULL, segment->end - segment->start, &n_holes, source, err))
		return false;
	*count = segment->end - segment->start - n_holes;
	if (*count > room)
		return corrupt(source, err, "hold more values than the fragment has rows");
	holes = lp_alloc_array(n_holes > 0 ? n_holes : 1, sizeof(uint64_t));
	if (holes == NULL)
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
	if (!read_array(segment->holes, holes, n_holes, &n_holes, source, err))
	{
		lp_free(holes);
		return false;
	}
	for (uint64_t i = 0; i < n_holes; i++)
		if (holes[i] < segment->start || holes[i] >= segment->end ||
			(i > 0 && holes[i] <= holes[i - 1]))
		{
			lp_free(holes);
			return corrupt(source, err, "have holes that are not ascending values of their range");
		}
	for (uint64_t value = segment->start, k = 0; out != NULL && value < segment->end; value++)
	{
		if (next_hole < n_holes && holes[next_hole] == value)
			next_hole++;
		else
			out[k++] = value;
	}
	lp_free(holes);
	return true;
}

static bool
read_range_with_bitmap(const Lance__Table__U64Segment__RangeWithBitmap *segment, uint64_t *out,
					   uint64_t room, uint64_t *count, const SequenceSource *source,
					   LpError *err)
{
	uint64_t	span;
	uint64_t	k = 0;

	if (segment->end < segment->start)
		return corrupt(source, err, "have a range that ends before it starts");
	span = segment->end - segment->start;
	if (segment->bitmap.len < span / 8 + (span % 8 != 0))
		return corrupt(source, err, "have a bitmap shorter than its range");
	for (uint64_t i = 0; i < span; i++)
		if (segment->bitmap.data[i / 8] & (1u << (i % 8)))
		{
			if (k == room)
				return corrupt(source, err, "hold more values than the fragment has rows");
			if (out != NULL)
				out[k] = segment->start + i;
			k++;
		}
	*count = k;
	return true;
}

/* The values of one segment into out[0..room) (out NULL: count only). */
static bool
read_segment(const Lance__Table__U64Segment *segment, uint64_t *out, uint64_t room,
			 uint64_t *count, const SequenceSource *source, LpError *err)
{
	switch (segment->segment_case)
	{
		case LANCE__TABLE__U64_SEGMENT__SEGMENT_RANGE:
			if (segment->range->end < segment->range->start)
				return corrupt(source, err, "have a range that ends before it starts");
			*count = segment->range->end - segment->range->start;
			if (*count > room)
				return corrupt(source, err, "hold more values than the fragment has rows");
			for (uint64_t i = 0; out != NULL && i < *count; i++)
				out[i] = segment->range->start + i;
			return true;
		case LANCE__TABLE__U64_SEGMENT__SEGMENT_RANGE_WITH_HOLES:
			return read_range_with_holes(segment->range_with_holes, out, room, count, source, err);
		case LANCE__TABLE__U64_SEGMENT__SEGMENT_RANGE_WITH_BITMAP:
			return read_range_with_bitmap(segment->range_with_bitmap, out, room, count, source, err);
		case LANCE__TABLE__U64_SEGMENT__SEGMENT_SORTED_ARRAY:
			return read_array(segment->sorted_array, out, room, count, source, err);
		case LANCE__TABLE__U64_SEGMENT__SEGMENT_ARRAY:
			return read_array(segment->array, out, room, count, source, err);
		default:
			return corrupt(source, err, "have a segment of no known form");
	}
}

static bool
unpack(const ProtobufCMessageDescriptor *descriptor, const ProtobufCBinaryData *data,
	   ProtobufCMessage **message, const SequenceSource *source, LpError *err)
{
	LpUnpackResult result = lp_protobuf_unpack(descriptor, data->data, data->len, message);

	if (result == LP_UNPACK_NO_MEMORY)
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
	if (result != LP_UNPACK_OK)
		return lp_fail(err, LP_ERR_CORRUPT,
					   "%s of fragment %" PRIu64 " in manifest file \"%s\": the message %s",
					   source->what, source->fragment_id, source->manifest_name,
					   lp_unpack_result_text(result));
	return true;
}

/*
 * Add count values from first to runs: with step 1 first, first + 1, ...
 * (merged into the last run when they continue it), with step 0 first
 * count times.  False when out of memory.
 */
static bool
runs_add(LpValueRuns *runs, uint64_t first, uint64_t count, uint64_t step)
{
	LpValueRun *last = runs->n > 0 ? &runs->runs[runs->n - 1] : NULL;

	if (count == 0)
		return true;
	if (last != NULL && (step == 0 ? first == last->first :
						 last->first + (last->count - 1) != UINT64_MAX &&
						 first == last->first + last->count))
	{
		last->count += count;
		return true;
	}
	if (runs->n == runs->allocated)
	{
		size_t		allocated = runs->allocated > 0 ? runs->allocated * 2 : 16;
		LpValueRun *grown;

		if (allocated > SIZE_MAX / sizeof(LpValueRun))
			return false;
		grown = lp_realloc(runs->runs, runs->n * sizeof(LpValueRun), allocated * sizeof(LpValueRun));
		if (grown == NULL)
			return false;
		runs->runs = grown;
		runs->allocated = allocated;
	}
	runs->runs[runs->n].first = first;
	runs->runs[runs->n].count = count;
	runs->n++;
	return true;
}

/* Add values[0..count) to runs, step as runs_add's. */
static bool
runs_append(LpValueRuns *runs, const uint64_t *values, uint64_t count, uint64_t step)
{
	for (uint64_t i = 0; i < count; i++)
		if (!runs_add(runs, values[i], 1, step))
			return false;
	return true;
}

/* Add every run of from to runs (merging at the seam). */
static bool
runs_concat(LpValueRuns *runs, const LpValueRuns *from, uint64_t step)
{
	for (size_t r = 0; r < from->n; r++)
		if (!runs_add(runs, from->runs[r].first, from->runs[r].count, step))
			return false;
	return true;
}

/* The values of runs into out, step as runs_add's. */
static void
runs_expand(const LpValueRuns *runs, uint64_t step, uint64_t *out)
{
	for (size_t r = 0; r < runs->n; r++)
		for (uint64_t k = 0; k < runs->runs[r].count; k++)
			*out++ = runs->runs[r].first + k * step;
}

static void
runs_free(LpValueRuns *runs)
{
	lp_free(runs->runs);
	memset(runs, 0, sizeof(*runs));
}

/*
 * The row ids of a fragment, exactly rows of them, added to out as runs:
 * ranges as they are, other segments expanded.
 */
static bool
read_row_ids(const ProtobufCBinaryData *data, uint64_t rows, LpValueRuns *out,
			 const SequenceSource *source, LpError *err)
{
	Lance__Table__RowIdSequence *sequence;
	uint64_t	filled = 0;
	bool		ok = true;

	if (!unpack(&lance__table__row_id_sequence__descriptor, data,
				(ProtobufCMessage **) &sequence, source, err))
		return false;
	for (size_t i = 0; ok && i < sequence->n_segments; i++)
	{
		const Lance__Table__U64Segment *segment = sequence->segments[i];
		uint64_t	count;
		uint64_t   *values;

		ok = read_segment(segment, NULL, rows - filled, &count, source, err);
		if (!ok || count == 0)
			continue;
		if (segment->segment_case == LANCE__TABLE__U64_SEGMENT__SEGMENT_RANGE)
			ok = runs_add(out, segment->range->start, count, 1) ||
				lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
		else
		{
			values = lp_alloc_array((size_t) count, sizeof(uint64_t));
			ok = values != NULL ? read_segment(segment, values, count, &count, source, err) &&
				(runs_append(out, values, count, 1) || lp_fail(err, LP_ERR_NO_MEMORY, "out of memory")) :
				lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
			lp_free(values);
		}
		filled += ok ? count : 0;
	}
	if (ok && filled != rows)
		ok = corrupt(source, err, "do not count the rows of the fragment");
	lp_protobuf_free((ProtobufCMessage *) sequence);
	return ok;
}

/*
 * The versions of a fragment's rows, exactly rows of them, added to out as
 * runs.  A run stands for as many rows as its span has values, in order;
 * Lance reads spans by their length alone
 * (RowDatasetVersionSequence::version_at).
 */
static bool
read_versions(const ProtobufCBinaryData *data, uint64_t rows, LpValueRuns *out,
			  const SequenceSource *source, LpError *err)
{
	Lance__Table__RowVersionSequence *sequence;
	uint64_t	filled = 0;
	bool		ok = true;

	if (!unpack(&lance__table__row_version_sequence__descriptor, data,
				(ProtobufCMessage **) &sequence, source, err))
		return false;
	for (size_t i = 0; ok && i < sequence->n_runs; i++)
	{
		const Lance__Table__RowVersionRun *run = sequence->runs[i];
		uint64_t	count = 0;

		if (run->span == NULL)
			ok = corrupt(source, err, "have a run without a span");
		else
			ok = read_segment(run->span, NULL, rows - filled, &count, source, err) &&
				(runs_add(out, run->version, count, 0) || lp_fail(err, LP_ERR_NO_MEMORY, "out of memory"));
		filled += ok ? count : 0;
	}
	if (ok && filled != rows)
		ok = corrupt(source, err, "do not count the rows of the fragment");
	lp_protobuf_free((ProtobufCMessage *) sequence);
	return ok;
}

void
lp_row_meta_init(LpRowMeta *meta, uint64_t capacity)
{
	memset(meta, 0, sizeof(*meta));
	meta->capacity = capacity;
}

void
lp_row_meta_free(LpRowMeta *meta)
{
	runs_free(&meta->row_ids);
	runs_free(&meta->created_at);
	runs_free(&meta->last_updated_at);
	memset(meta, 0, sizeof(*meta));
}

/* The fragment at index of manifest, which must have inline row ids and versions. */
static bool
sequences_fragment(const LpManifest *manifest, size_t index,
				   const Lance__Table__DataFragment **out, SequenceSource *source, LpError *err)
{
	const Lance__Table__DataFragment *fragment;

	if (index >= manifest->proto->n_fragments)
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT, "manifest file \"%s\" has no fragment at %zu",
					   manifest->name, index);
	fragment = manifest->proto->fragments[index];
	source->manifest_name = manifest->name;
	source->fragment_id = fragment->id;
	source->what = "row ids";
	if (fragment->row_id_sequence_case != LANCE__TABLE__DATA_FRAGMENT__ROW_ID_SEQUENCE_INLINE_ROW_IDS)
		return fragment->row_id_sequence_case == LANCE__TABLE__DATA_FRAGMENT__ROW_ID_SEQUENCE_EXTERNAL_ROW_IDS ?
			lp_fail(err, LP_ERR_UNSUPPORTED,
					"row ids of fragment %" PRIu64 " in manifest file \"%s\" are in an external file, which lance_parts does not read",
					fragment->id, manifest->name) :
			corrupt(source, err, "are missing in a dataset with stable row ids");
	if (fragment->created_at_version_sequence_case ==
		LANCE__TABLE__DATA_FRAGMENT__CREATED_AT_VERSION_SEQUENCE_EXTERNAL_CREATED_AT_VERSIONS ||
		fragment->last_updated_at_version_sequence_case ==
		LANCE__TABLE__DATA_FRAGMENT__LAST_UPDATED_AT_VERSION_SEQUENCE_EXTERNAL_LAST_UPDATED_AT_VERSIONS)
		return lp_fail(err, LP_ERR_UNSUPPORTED,
					   "row versions of fragment %" PRIu64 " in manifest file \"%s\" are in an external file, which lance_parts does not read",
					   fragment->id, manifest->name);
	*out = fragment;
	return true;
}

/*
 * The row ids and versions of the manifest's fragment at index as runs of
 * their own (freed by the caller, on failure too); missing version
 * sequences mean version 1, as in Lance.
 */
static bool
fragment_runs(const LpManifest *manifest, size_t index, LpRowMeta *out, LpError *err)
{
	const Lance__Table__DataFragment *fragment = NULL;
	SequenceSource source;
	uint64_t	rows;

	if (!sequences_fragment(manifest, index, &fragment, &source, err))
		return false;
	rows = fragment->physical_rows;
	out->rows = rows;
	if (!read_row_ids(&fragment->inline_row_ids, rows, &out->row_ids, &source, err))
		return false;
	source.what = "created-at versions";
	if (fragment->created_at_version_sequence_case ==
		LANCE__TABLE__DATA_FRAGMENT__CREATED_AT_VERSION_SEQUENCE_INLINE_CREATED_AT_VERSIONS)
	{
		if (!read_versions(&fragment->inline_created_at_versions, rows, &out->created_at, &source, err))
			return false;
	}
	else if (!runs_add(&out->created_at, 1, rows, 0))
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
	source.what = "last-updated-at versions";
	if (fragment->last_updated_at_version_sequence_case ==
		LANCE__TABLE__DATA_FRAGMENT__LAST_UPDATED_AT_VERSION_SEQUENCE_INLINE_LAST_UPDATED_AT_VERSIONS)
		return read_versions(&fragment->inline_last_updated_at_versions, rows, &out->last_updated_at,
							 &source, err);
	return runs_concat(&out->last_updated_at, &out->created_at, 0) ||
		lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
}

bool
lp_row_meta_read(const LpManifest *manifest, size_t index, uint64_t *ids,
				 uint64_t *created_at, uint64_t *last_updated_at, LpError *err)
{
	LpRowMeta	fragment;
	bool		ok;

	lp_row_meta_init(&fragment, 0);
	ok = fragment_runs(manifest, index, &fragment, err);
	if (ok)
	{
		runs_expand(&fragment.row_ids, 1, ids);
		runs_expand(&fragment.created_at, 0, created_at);
		runs_expand(&fragment.last_updated_at, 0, last_updated_at);
	}
	lp_row_meta_free(&fragment);
	return ok;
}

/* Keep, in place, the values of the rows deleted does not name. */
static uint64_t
drop_deleted(uint64_t *values, uint64_t rows, const LpDeletions *deleted)
{
	uint64_t	kept = 0;

	for (uint64_t i = 0; i < rows; i++)
		if (!(deleted->deleted[i / 8] & (1u << (i % 8))))
			values[kept++] = values[i];
	return kept;
}

/* Add the values of one sequence of fragment, without its deleted rows, to runs. */
static bool
append_live(LpValueRuns *runs, const LpValueRuns *fragment, uint64_t rows, uint64_t step,
			const LpDeletions *deleted, uint64_t *scratch)
{
	runs_expand(fragment, step, scratch);
	return runs_append(runs, scratch, drop_deleted(scratch, rows, deleted), step);
}

bool
lp_row_meta_append(LpRowMeta *meta, const LpManifest *manifest, size_t index,
				   const LpDeletions *deleted, LpError *err)
{
	LpRowMeta	fragment;
	uint64_t	rows;
	uint64_t	live;
	uint64_t   *scratch = NULL;
	bool		ok;

	lp_row_meta_init(&fragment, 0);
	if (!fragment_runs(manifest, index, &fragment, err))
	{
		lp_row_meta_free(&fragment);
		return false;
	}
	rows = fragment.rows;
	if (deleted != NULL && (deleted->num_rows != rows || deleted->num_deleted > rows))
	{
		lp_row_meta_free(&fragment);
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
					   "the deleted rows given for fragment %" PRIu64 " do not match its %" PRIu64 " rows",
					   manifest->proto->fragments[index]->id, rows);
	}
	live = deleted != NULL ? rows - deleted->num_deleted : rows;
	if (live > meta->capacity - meta->rows)
	{
		lp_row_meta_free(&fragment);
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
					   "the rewritten fragments hold more rows than the new fragment");
	}
	if (deleted == NULL)
		ok = runs_concat(&meta->row_ids, &fragment.row_ids, 1) &&
			runs_concat(&meta->created_at, &fragment.created_at, 0) &&
			runs_concat(&meta->last_updated_at, &fragment.last_updated_at, 0);
	else
	{
		/* the rows' values expanded, the deleted ones dropped */
		scratch = lp_alloc_array((size_t) (rows > 0 ? rows : 1), sizeof(uint64_t));
		ok = scratch != NULL &&
			append_live(&meta->row_ids, &fragment.row_ids, rows, 1, deleted, scratch) &&
			append_live(&meta->created_at, &fragment.created_at, rows, 0, deleted, scratch) &&
			append_live(&meta->last_updated_at, &fragment.last_updated_at, rows, 0, deleted, scratch);
		lp_free(scratch);
	}
	lp_row_meta_free(&fragment);
	if (!ok)
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
	meta->rows += live;
	return true;
}

/* ---- finding rows by id ------------------------------------------------------ */

static bool
among_whole(const uint32_t *whole, size_t num_whole, uint64_t id)
{
	size_t		low = 0;
	size_t		high = num_whole;
	uint32_t	wanted = (uint32_t) (id >> 32);

	if (id >> 32 > UINT32_MAX)
		return false;
	while (low < high)
	{
		size_t		middle = low + (high - low) / 2;

		if (whole[middle] < wanted)
			low = middle + 1;
		else
			high = middle;
	}
	return low < num_whole && whole[low] == wanted;
}

/* Append offset to offsets[0..*n) (room for capacity); more offsets than ids means an id repeats. */
static bool
take_offset(uint64_t *offsets, uint64_t *n, uint64_t capacity, uint64_t offset,
			const SequenceSource *source, LpError *err)
{
	if (*n == capacity)
		return corrupt(source, err, "repeat an id");
	offsets[(*n)++] = offset;
	return true;
}

bool
lp_row_ids_find(const LpManifest *manifest, size_t index, const uint64_t *ids, uint64_t num_ids,
				const uint32_t *whole, size_t num_whole, uint64_t **offsets,
				uint64_t *num_offsets, LpError *err)
{
	const Lance__Table__DataFragment *fragment;
	Lance__Table__RowIdSequence *sequence;
	SequenceSource source;
	uint64_t	rows;
	uint64_t	capacity;
	uint64_t	at = 0;
	uint64_t   *values = NULL;
	bool		ok = true;

	*offsets = NULL;
	*num_offsets = 0;
	if (index >= manifest->proto->n_fragments)
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT, "manifest file \"%s\" has no fragment at %zu",
					   manifest->name, index);
	fragment = manifest->proto->fragments[index];
	rows = fragment->physical_rows;
	source.manifest_name = manifest->name;
	source.fragment_id = fragment->id;
	source.what = "row ids";
	if (fragment->row_id_sequence_case != LANCE__TABLE__DATA_FRAGMENT__ROW_ID_SEQUENCE_INLINE_ROW_IDS)
		return fragment->row_id_sequence_case == LANCE__TABLE__DATA_FRAGMENT__ROW_ID_SEQUENCE_EXTERNAL_ROW_IDS ?
			lp_fail(err, LP_ERR_UNSUPPORTED,
					"row ids of fragment %" PRIu64 " in manifest file \"%s\" are in an external file, which lance_parts does not read",
					fragment->id, manifest->name) :
			corrupt(&source, err, "are missing in a dataset with stable row ids");
	if (!unpack(&lance__table__row_id_sequence__descriptor, &fragment->inline_row_ids,
				(ProtobufCMessage **) &sequence, &source, err))
		return false;
	/* each offset is taken once: at most rows of them, and one per id unless whole ones are asked for */
	capacity = num_whole > 0 || num_ids > rows ? rows : num_ids;
	*offsets = lp_alloc_array((size_t) capacity + 1, sizeof(uint64_t));
	if (*offsets == NULL)
	{
		lp_protobuf_free((ProtobufCMessage *) sequence);
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
	}
	for (size_t i = 0; ok && i < sequence->n_segments; i++)
	{
		const Lance__Table__U64Segment *segment = sequence->segments[i];
		uint64_t	count;

		/* a plain range maps ids to offsets by arithmetic: no need to expand it */
		if (segment->segment_case == LANCE__TABLE__U64_SEGMENT__SEGMENT_RANGE && num_whole == 0)
		{
			ok = read_segment(segment, NULL, rows - at, &count, &source, err);
			for (uint64_t k = lp_lower_bound_u64(ids, num_ids, segment->range->start);
				 ok && k < num_ids && ids[k] < segment->range->end; k++)
				ok = take_offset(*offsets, num_offsets, capacity, at + (ids[k] - segment->range->start),
								 &source, err);
		}
		else
		{
			/* another form: its ids expanded, each looked up */
			ok = read_segment(segment, NULL, rows - at, &count, &source, err);
			if (ok && count > 0)
			{
				values = lp_alloc_array((size_t) count, sizeof(uint64_t));
				ok = values != NULL ? read_segment(segment, values, count, &count, &source, err)
					: lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
			}
			for (uint64_t k = 0; ok && k < count; k++)
			{
				uint64_t	found = lp_lower_bound_u64(ids, num_ids, values[k]);

				if ((found < num_ids && ids[found] == values[k]) ||
					among_whole(whole, num_whole, values[k]))
					ok = take_offset(*offsets, num_offsets, capacity, at + k, &source, err);
			}
			lp_free(values);
			values = NULL;
		}
		at += ok ? count : 0;
	}
	if (ok && at != rows)
		ok = corrupt(&source, err, "do not count the rows of the fragment");
	lp_protobuf_free((ProtobufCMessage *) sequence);
	if (!ok)
	{
		lp_free(*offsets);
		*offsets = NULL;
		*num_offsets = 0;
	}
	return ok;
}

/* ---- writing ------------------------------------------------------------- */

/* Runs of consecutive values this long or longer become ranges; others an array. */
#define RANGE_MIN_RUN 4

typedef struct SegmentList
{
	Lance__Table__U64Segment *segments;
	Lance__Table__U64Segment **pointers;
	Lance__Table__U64Segment__Range *ranges;
	Lance__Table__EncodedU64Array *arrays;
	Lance__Table__EncodedU64Array__U64Array *u64_arrays;
	uint8_t    *array_bytes;	/* every array's values, little-endian */
	size_t		n;
} SegmentList;

static void
free_segments(SegmentList *list)
{
	lp_free(list->segments);
	lp_free(list->pointers);
	lp_free(list->ranges);
	lp_free(list->arrays);
	lp_free(list->u64_arrays);
	lp_free(list->array_bytes);
}

static bool
alloc_segments(SegmentList *list, uint64_t max_segments, uint64_t max_values, LpError *err)
{
	size_t		n = (size_t) (max_segments > 0 ? max_segments : 1);

	memset(list, 0, sizeof(*list));
	list->segments = lp_alloc_array(n, sizeof(*list->segments));
	list->pointers = lp_alloc_array(n, sizeof(*list->pointers));
	list->ranges = lp_alloc_array(n, sizeof(*list->ranges));
	list->arrays = lp_alloc_array(n, sizeof(*list->arrays));
	list->u64_arrays = lp_alloc_array(n, sizeof(*list->u64_arrays));
	list->array_bytes = lp_alloc_array(max_values > 0 ? (size_t) max_values : 1, 8);
	if (list->segments == NULL || list->pointers == NULL || list->ranges == NULL ||
		list->arrays == NULL || list->u64_arrays == NULL || list->array_bytes == NULL)
	{
		free_segments(list);
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
	}
	return true;
}

static void
add_range(SegmentList *list, uint64_t start, uint64_t end)
{
	Lance__Table__U64Segment *segment = &list->segments[list->n];

	lance__table__u64_segment__range__init(&list->ranges[list->n]);
	list->ranges[list->n].start = start;
	list->ranges[list->n].end = end;
	lance__table__u64_segment__init(segment);
	segment->segment_case = LANCE__TABLE__U64_SEGMENT__SEGMENT_RANGE;
	segment->range = &list->ranges[list->n];
	list->pointers[list->n] = segment;
	list->n++;
}

/* An array segment of n values already written little-endian at bytes. */
static void
add_array(SegmentList *list, uint8_t *bytes, size_t n)
{
	Lance__Table__U64Segment *segment = &list->segments[list->n];

	lance__table__encoded_u64_array__u64_array__init(&list->u64_arrays[list->n]);
	list->u64_arrays[list->n].values.data = bytes;
	list->u64_arrays[list->n].values.len = n * 8;
	lance__table__encoded_u64_array__init(&list->arrays[list->n]);
	list->arrays[list->n].array_case = LANCE__TABLE__ENCODED_U64_ARRAY__ARRAY_U64_ARRAY;
	list->arrays[list->n].u64_array = &list->u64_arrays[list->n];
	lance__table__u64_segment__init(segment);
	segment->segment_case = LANCE__TABLE__U64_SEGMENT__SEGMENT_ARRAY;
	segment->array = &list->arrays[list->n];
	list->pointers[list->n] = segment;
	list->n++;
}

/*
 * Row ids as segments: runs of consecutive ids of RANGE_MIN_RUN or more as
 * ranges, the ids between them as plain arrays.  With list NULL, only
 * counts the segments and the ids that go into arrays.
 */
static void
walk_row_ids(const LpValueRuns *ids, SegmentList *list, uint64_t *n_segments, uint64_t *n_loose)
{
	size_t		bytes_used = 0;	/* by the arrays before the loose ids */
	uint64_t	loose_count = 0;

	*n_segments = *n_loose = 0;
	for (size_t r = 0; r <= ids->n; r++)
	{
		const LpValueRun *run = r < ids->n ? &ids->runs[r] : NULL;

		if (run != NULL && run->count < RANGE_MIN_RUN)
		{
			for (uint64_t k = 0; list != NULL && k < run->count; k++)
				lp_put_le64(list->array_bytes + bytes_used + (loose_count + k) * 8, run->first + k);
			loose_count += run->count;
			continue;
		}
		if (loose_count > 0)
		{
			if (list != NULL)
				add_array(list, list->array_bytes + bytes_used, (size_t) loose_count);
			(*n_segments)++;
			*n_loose += loose_count;
			bytes_used += loose_count * 8;
			loose_count = 0;
		}
		if (run != NULL)
		{
			if (list != NULL)
				add_range(list, run->first, run->first + run->count);
			(*n_segments)++;
		}
	}
}

static uint8_t *
pack(const ProtobufCMessage *message, size_t *len, LpError *err)
{
	uint8_t    *data;

	*len = protobuf_c_message_get_packed_size(message);
	data = lp_alloc(*len > 0 ? *len : 1);
	if (data == NULL)
		lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
	else
		protobuf_c_message_pack(message, data);
	return data;
}

static uint8_t *
pack_row_id_runs(const LpValueRuns *ids, size_t *len, LpError *err)
{
	Lance__Table__RowIdSequence sequence;
	SegmentList list;
	uint64_t	n_segments;
	uint64_t	n_loose;
	uint8_t    *data;

	walk_row_ids(ids, NULL, &n_segments, &n_loose);
	if (!alloc_segments(&list, n_segments, n_loose, err))
		return NULL;
	walk_row_ids(ids, &list, &n_segments, &n_loose);
	lance__table__row_id_sequence__init(&sequence);
	sequence.n_segments = list.n;
	sequence.segments = list.pointers;
	data = pack((const ProtobufCMessage *) &sequence, len, err);
	free_segments(&list);
	return data;
}

/* Versions as runs of equal versions, each spanning its row offsets. */
static uint8_t *
pack_version_runs(const LpValueRuns *versions, size_t *len, LpError *err)
{
	Lance__Table__RowVersionSequence sequence;
	Lance__Table__RowVersionRun *runs;
	Lance__Table__RowVersionRun **pointers;
	SegmentList spans;
	uint8_t    *data = NULL;
	size_t		n = versions->n;
	uint64_t	start = 0;

	if (!alloc_segments(&spans, n, 0, err))
		return NULL;
	runs = lp_alloc_array(n > 0 ? n : 1, sizeof(*runs));
	pointers = lp_alloc_array(n > 0 ? n : 1, sizeof(*pointers));
	if (runs == NULL || pointers == NULL)
	{
		lp_free(runs);
		lp_free(pointers);
		free_segments(&spans);
		lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
		return NULL;
	}
	for (size_t r = 0; r < n; r++)
	{
		add_range(&spans, start, start + versions->runs[r].count);
		start += versions->runs[r].count;
		lance__table__row_version_run__init(&runs[r]);
		runs[r].span = spans.pointers[r];
		runs[r].version = versions->runs[r].first;
		pointers[r] = &runs[r];
	}
	lance__table__row_version_sequence__init(&sequence);
	sequence.n_runs = n;
	sequence.runs = pointers;
	data = pack((const ProtobufCMessage *) &sequence, len, err);
	free_segments(&spans);
	lp_free(runs);
	lp_free(pointers);
	return data;
}

/* values[0..n) as runs (step as runs_append's) packed by pack_runs. */
static uint8_t *
pack_values(const uint64_t *values, uint64_t n, uint64_t step,
			uint8_t *(*pack_runs) (const LpValueRuns *, size_t *, LpError *),
			size_t *len, LpError *err)
{
	LpValueRuns runs = {0};
	uint8_t    *data;

	if (!runs_append(&runs, values, n, step))
	{
		runs_free(&runs);
		lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
		return NULL;
	}
	data = pack_runs(&runs, len, err);
	runs_free(&runs);
	return data;
}

uint8_t *
lp_row_ids_pack(const uint64_t *ids, uint64_t n, size_t *len, LpError *err)
{
	return pack_values(ids, n, 1, pack_row_id_runs, len, err);
}

uint8_t *
lp_row_versions_pack(const uint64_t *versions, uint64_t n, size_t *len, LpError *err)
{
	return pack_values(versions, n, 0, pack_version_runs, len, err);
}

bool
lp_row_meta_pack(const LpRowMeta *meta, uint8_t **row_ids, size_t *row_ids_len,
				 uint8_t **created_at, size_t *created_at_len,
				 uint8_t **last_updated_at, size_t *last_updated_at_len, LpError *err)
{
	if (meta->rows != meta->capacity)
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
					   "the rewritten fragments hold %" PRIu64 " rows, the new fragment %" PRIu64,
					   meta->rows, meta->capacity);
	*row_ids = pack_row_id_runs(&meta->row_ids, row_ids_len, err);
	*created_at = *row_ids ? pack_version_runs(&meta->created_at, created_at_len, err) : NULL;
	*last_updated_at = *created_at ?
		pack_version_runs(&meta->last_updated_at, last_updated_at_len, err) : NULL;
	if (*last_updated_at == NULL)
	{
		lp_free(*row_ids);
		lp_free(*created_at);
		*row_ids = *created_at = NULL;
		return false;
	}
	return true;
}
