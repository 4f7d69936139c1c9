/*
 * test_row_ids.c - stable row ids and row versions carried into a
 * rewritten fragment: every segment form Lance writes is read, deleted rows
 * are left out, and what is written back reads as the same values.
 */
#include <string.h>

#include "lp_test.h"

#include "base/lp_alloc.h"
#include "base/lp_bytes.h"
#include "base/lp_protobuf.h"
#include "dataset/lp_manifest_internal.h"
#include "dataset/lp_row_ids.h"
#include "rowids.pb-c.h"

/* One segment of each form, built by hand, and the values each stands for. */
typedef struct Segments
{
	Lance__Table__U64Segment segment[5];
	Lance__Table__U64Segment *pointers[5];
	Lance__Table__U64Segment__Range range;
	Lance__Table__U64Segment__RangeWithHoles holes;
	Lance__Table__EncodedU64Array holes_array;
	Lance__Table__EncodedU64Array__U16Array holes_u16;
	uint8_t		holes_bytes[4];
	Lance__Table__U64Segment__RangeWithBitmap bitmap;
	uint8_t		bitmap_bytes[2];
	Lance__Table__EncodedU64Array sorted;
	Lance__Table__EncodedU64Array__U32Array sorted_u32;
	uint8_t		sorted_bytes[8];
	Lance__Table__EncodedU64Array array;
	Lance__Table__EncodedU64Array__U64Array array_u64;
	uint8_t		array_bytes[16];
} Segments;

/* The values the segments of make_segments stand for, in order. */
static const uint64_t expected_ids[] = {
	100, 101, 102,				/* range 100..103 */
	200, 202, 204,				/* 200..205 without 201 and 203 */
	300, 302, 303,				/* bitmap 0b1101 over 300..304 */
	1000, 1007,					/* u32 offsets 0 and 7 from 1000 */
	9, 5						/* plain u64 values */
};

static void
make_segments(Segments *s)
{
	memset(s, 0, sizeof(*s));
	for (int i = 0; i < 5; i++)
	{
		lance__table__u64_segment__init(&s->segment[i]);
		s->pointers[i] = &s->segment[i];
	}
	lance__table__u64_segment__range__init(&s->range);
	s->range.start = 100;
	s->range.end = 103;
	s->segment[0].segment_case = LANCE__TABLE__U64_SEGMENT__SEGMENT_RANGE;
	s->segment[0].range = &s->range;

	lance__table__encoded_u64_array__u16_array__init(&s->holes_u16);
	s->holes_u16.first = 200;
	lp_put_le16(s->holes_bytes, 1);
	lp_put_le16(s->holes_bytes + 2, 3);
	s->holes_u16.offsets.data = s->holes_bytes;
	s->holes_u16.offsets.len = 4;
	lance__table__encoded_u64_array__init(&s->holes_array);
	s->holes_array.array_case = LANCE__TABLE__ENCODED_U64_ARRAY__ARRAY_U16_ARRAY;
	s->holes_array.u16_array = &s->holes_u16;
	lance__table__u64_segment__range_with_holes__init(&s->holes);
	s->holes.start = 200;
	s->holes.end = 205;
	s->holes.holes = &s->holes_array;
	s->segment[1].segment_case = LANCE__TABLE__U64_SEGMENT__SEGMENT_RANGE_WITH_HOLES;
	s->segment[1].range_with_holes = &s->holes;

	lance__table__u64_segment__range_with_bitmap__init(&s->bitmap);
	s->bitmap.start = 300;
	s->bitmap.end = 304;
	s->bitmap_bytes[0] = 0x0d;
	s->bitmap.bitmap.data = s->bitmap_bytes;
	s->bitmap.bitmap.len = 1;
	s->segment[2].segment_case = LANCE__TABLE__U64_SEGMENT__SEGMENT_RANGE_WITH_BITMAP;
	s->segment[2].range_with_bitmap = &s->bitmap;

	lance__table__encoded_u64_array__u32_array__init(&s->sorted_u32);
	s->sorted_u32.first = 1000;
	lp_put_le32(s->sorted_bytes, 0);
	lp_put_le32(s->sorted_bytes + 4, 7);
	s->sorted_u32.offsets.data = s->sorted_bytes;
	s->sorted_u32.offsets.len = 8;
	lance__table__encoded_u64_array__init(&s->sorted);
	s->sorted.array_case = LANCE__TABLE__ENCODED_U64_ARRAY__ARRAY_U32_ARRAY;
	s->sorted.u32_array = &s->sorted_u32;
	s->segment[3].segment_case = LANCE__TABLE__U64_SEGMENT__SEGMENT_SORTED_ARRAY;
	s->segment[3].sorted_array = &s->sorted;

	lance__table__encoded_u64_array__u64_array__init(&s->array_u64);
	lp_put_le64(s->array_bytes, 9);
	lp_put_le64(s->array_bytes + 8, 5);
	s->array_u64.values.data = s->array_bytes;
	s->array_u64.values.len = 16;
	lance__table__encoded_u64_array__init(&s->array);
	s->array.array_case = LANCE__TABLE__ENCODED_U64_ARRAY__ARRAY_U64_ARRAY;
	s->array.u64_array = &s->array_u64;
	s->segment[4].segment_case = LANCE__TABLE__U64_SEGMENT__SEGMENT_ARRAY;
	s->segment[4].array = &s->array;
}

static uint8_t *
pack(const ProtobufCMessage *message, size_t *len)
{
	uint8_t    *data;

	*len = protobuf_c_message_get_packed_size(message);
	data = lp_alloc(*len + 1);
	protobuf_c_message_pack(message, data);
	return data;
}

/* Versions 7 for the first three rows, 8 for the rest, spans as Lance writes them. */
static uint8_t *
pack_versions(uint64_t rows, size_t *len)
{
	Lance__Table__RowVersionSequence sequence;
	Lance__Table__RowVersionRun run[2];
	Lance__Table__RowVersionRun *runs[2] = {&run[0], &run[1]};
	Lance__Table__U64Segment span[2];
	Lance__Table__U64Segment__Range range[2];

	for (int i = 0; i < 2; i++)
	{
		lance__table__u64_segment__range__init(&range[i]);
		lance__table__u64_segment__init(&span[i]);
		span[i].segment_case = LANCE__TABLE__U64_SEGMENT__SEGMENT_RANGE;
		span[i].range = &range[i];
		lance__table__row_version_run__init(&run[i]);
		run[i].span = &span[i];
		run[i].version = 7 + i;
	}
	range[0].end = 3;
	range[1].start = 3;
	range[1].end = rows;
	lance__table__row_version_sequence__init(&sequence);
	sequence.n_runs = 2;
	sequence.runs = runs;
	return pack((const ProtobufCMessage *) &sequence, len);
}

/* A fragment of rows rows with the segments as its row ids. */
static void
make_fragment(Lance__Table__DataFragment *fragment, uint64_t id, uint64_t rows,
			  Segments *segments, size_t n_segments, bool versions)
{
	Lance__Table__RowIdSequence sequence;

	lance__table__data_fragment__init(fragment);
	fragment->id = id;
	fragment->physical_rows = rows;
	lance__table__row_id_sequence__init(&sequence);
	sequence.n_segments = n_segments;
	sequence.segments = segments->pointers;
	fragment->row_id_sequence_case = LANCE__TABLE__DATA_FRAGMENT__ROW_ID_SEQUENCE_INLINE_ROW_IDS;
	fragment->inline_row_ids.data = pack((const ProtobufCMessage *) &sequence,
										 &fragment->inline_row_ids.len);
	if (versions)
	{
		fragment->created_at_version_sequence_case =
			LANCE__TABLE__DATA_FRAGMENT__CREATED_AT_VERSION_SEQUENCE_INLINE_CREATED_AT_VERSIONS;
		fragment->inline_created_at_versions.data =
			pack_versions(rows, &fragment->inline_created_at_versions.len);
	}
}

static void
free_fragment(Lance__Table__DataFragment *fragment)
{
	lp_free(fragment->inline_row_ids.data);
	if (fragment->created_at_version_sequence_case ==
		LANCE__TABLE__DATA_FRAGMENT__CREATED_AT_VERSION_SEQUENCE_INLINE_CREATED_AT_VERSIONS)
		lp_free(fragment->inline_created_at_versions.data);
}

/* A manifest named name holding the fragments, for lp_row_meta_append. */
typedef struct TestManifest
{
	Lance__Table__Manifest proto;
	Lance__Table__DataFragment *fragments[2];
	LpManifest	manifest;
} TestManifest;

static LpManifest *
wrap(TestManifest *t, const char *name, Lance__Table__DataFragment *first,
	 Lance__Table__DataFragment *second)
{
	memset(t, 0, sizeof(*t));
	lance__table__manifest__init(&t->proto);
	t->fragments[0] = first;
	t->fragments[1] = second;
	t->proto.fragments = t->fragments;
	t->proto.n_fragments = second != NULL ? 2 : 1;
	t->manifest.name = (char *) name;
	t->manifest.proto = &t->proto;
	return &t->manifest;
}

/* The values of a sequence written by lp_row_meta_pack (ranges and u64 arrays). */
static size_t
expand_written(const uint8_t *data, size_t len, uint64_t *out, size_t room)
{
	Lance__Table__RowIdSequence *sequence = NULL;
	size_t		n = 0;

	LP_CHECK(lp_protobuf_unpack(&lance__table__row_id_sequence__descriptor, data, len,
								(ProtobufCMessage **) &sequence) == LP_UNPACK_OK);
	for (size_t i = 0; sequence != NULL && i < sequence->n_segments; i++)
	{
		const Lance__Table__U64Segment *segment = sequence->segments[i];

		if (segment->segment_case == LANCE__TABLE__U64_SEGMENT__SEGMENT_RANGE)
			for (uint64_t v = segment->range->start; v < segment->range->end && n < room; v++)
				out[n++] = v;
		else if (segment->segment_case == LANCE__TABLE__U64_SEGMENT__SEGMENT_ARRAY &&
				 segment->array->array_case == LANCE__TABLE__ENCODED_U64_ARRAY__ARRAY_U64_ARRAY)
			for (size_t k = 0; k < segment->array->u64_array->values.len / 8 && n < room; k++)
				out[n++] = lp_le64(segment->array->u64_array->values.data + k * 8);
		else
			LP_CHECK_MSG(false, "unexpected segment form %d", (int) segment->segment_case);
	}
	lp_protobuf_free((ProtobufCMessage *) sequence);
	return n;
}

/* Every form read, two fragments concatenated, deleted rows left out. */
LP_TEST(row_ids_carried_through_rewrite)
{
	const size_t n_ids = sizeof(expected_ids) / sizeof(expected_ids[0]);
	Segments	segments;
	Lance__Table__DataFragment first;
	Lance__Table__DataFragment second;
	LpDeletions deleted;
	uint8_t		deleted_bits[2] = {0x05, 0x00};	/* rows 0 and 2 of the second */
	LpRowMeta	meta;
	TestManifest wrapped;
	LpManifest *manifest;
	uint8_t    *ids;
	uint8_t    *created;
	uint8_t    *updated;
	size_t		ids_len;
	size_t		created_len;
	size_t		updated_len;
	uint64_t	values[64];
	LpError		err;

	make_segments(&segments);
	make_fragment(&first, 4, n_ids, &segments, 5, true);
	/* the second fragment: the first two segments again, no version sequences */
	make_fragment(&second, 9, 6, &segments, 2, false);
	deleted.num_rows = 6;
	deleted.num_deleted = 2;
	deleted.deleted = deleted_bits;

	manifest = wrap(&wrapped, "m", &first, &second);
	lp_row_meta_init(&meta, n_ids + 4);
	LP_CHECK_MSG(lp_row_meta_append(&meta, manifest, 0, NULL, &err), "%s", err.message);
	LP_CHECK_MSG(lp_row_meta_append(&meta, manifest, 1, &deleted, &err), "%s", err.message);
	LP_CHECK_EQ_U64(meta.rows, n_ids + 4);
	LP_CHECK(lp_row_meta_pack(&meta, &ids, &ids_len, &created, &created_len, &updated,
							  &updated_len, &err));
	LP_CHECK_EQ_U64(expand_written(ids, ids_len, values, 64), n_ids + 4);
	for (size_t i = 0; i < n_ids; i++)
		LP_CHECK_EQ_U64(values[i], expected_ids[i]);
	/* the second fragment's rows 1, 3, 4, 5: 101, 200, 202, 204 */
	LP_CHECK_EQ_U64(values[n_ids], 101);
	LP_CHECK_EQ_U64(values[n_ids + 1], 200);
	LP_CHECK_EQ_U64(values[n_ids + 3], 204);
	/* versions: 7, 7, 7, 8 ... for the first; version 1 (Lance's default) for the second */
	LP_CHECK_EQ_U64(meta.created_at.n, 3);
	LP_CHECK_EQ_U64(meta.last_updated_at.n, 3);
	for (size_t r = 0; r < 3 && r < meta.created_at.n && r < meta.last_updated_at.n; r++)
	{
		LP_CHECK_EQ_U64(meta.created_at.runs[r].first, r == 0 ? 7 : r == 1 ? 8 : 1);
		LP_CHECK_EQ_U64(meta.created_at.runs[r].count, r == 0 ? 3 : r == 1 ? n_ids - 3 : 4);
		LP_CHECK_EQ_U64(meta.last_updated_at.runs[r].first, meta.created_at.runs[r].first);
		LP_CHECK_EQ_U64(meta.last_updated_at.runs[r].count, meta.created_at.runs[r].count);
	}
	{
		Lance__Table__RowVersionSequence *versions = NULL;

		LP_CHECK(lp_protobuf_unpack(&lance__table__row_version_sequence__descriptor, created,
									created_len, (ProtobufCMessage **) &versions) == LP_UNPACK_OK);
		LP_CHECK(versions != NULL && versions->n_runs == 3);
		if (versions != NULL && versions->n_runs == 3)
		{
			LP_CHECK_EQ_U64(versions->runs[1]->version, 8);
			LP_CHECK_EQ_U64(versions->runs[1]->span->range->start, 3);
			LP_CHECK_EQ_U64(versions->runs[1]->span->range->end, n_ids);
			LP_CHECK_EQ_U64(versions->runs[2]->span->range->end, n_ids + 4);
		}
		lp_protobuf_free((ProtobufCMessage *) versions);
	}
	lp_free(ids);
	lp_free(created);
	lp_free(updated);
	lp_row_meta_free(&meta);
	free_fragment(&first);
	free_fragment(&second);
}

/* A sequence that does not fit its fragment is refused, naming it. */
LP_TEST(row_ids_refuse_bad_sequences)
{
	Segments	segments;
	Lance__Table__DataFragment fragment;
	TestManifest wrapped;
	LpRowMeta	meta;
	LpError		err;

	make_segments(&segments);
	/* 13 ids for 12 rows, then for 14 rows */
	for (uint64_t rows = 12; rows <= 14; rows += 2)
	{
		make_fragment(&fragment, 3, rows, &segments, 5, false);
		lp_row_meta_init(&meta, rows);
		LP_CHECK(!lp_row_meta_append(&meta, wrap(&wrapped, "bad.manifest", &fragment, NULL), 0,
									 NULL, &err));
		LP_CHECK_MSG(err.code == LP_ERR_CORRUPT && strstr(err.message, "fragment 3") != NULL &&
					 strstr(err.message, "bad.manifest") != NULL, "%s", err.message);
		lp_row_meta_free(&meta);
		free_fragment(&fragment);
	}

	/* holes outside their range; a range ending before its start; odd array bytes */
	lp_put_le16(segments.holes_bytes + 2, 9);
	make_fragment(&fragment, 3, 13, &segments, 5, false);
	lp_row_meta_init(&meta, 13);
	LP_CHECK(!lp_row_meta_append(&meta, wrap(&wrapped, "m", &fragment, NULL), 0, NULL, &err));
	LP_CHECK_MSG(err.code == LP_ERR_CORRUPT && strstr(err.message, "holes") != NULL, "%s", err.message);
	lp_row_meta_free(&meta);
	free_fragment(&fragment);

	make_segments(&segments);
	segments.range.end = 10;
	make_fragment(&fragment, 3, 13, &segments, 5, false);
	lp_row_meta_init(&meta, 13);
	LP_CHECK(!lp_row_meta_append(&meta, wrap(&wrapped, "m", &fragment, NULL), 0, NULL, &err));
	LP_CHECK_MSG(err.code == LP_ERR_CORRUPT && strstr(err.message, "ends before") != NULL, "%s", err.message);
	lp_row_meta_free(&meta);
	free_fragment(&fragment);

	make_segments(&segments);
	segments.array_u64.values.len = 15;
	make_fragment(&fragment, 3, 13, &segments, 5, false);
	lp_row_meta_init(&meta, 13);
	LP_CHECK(!lp_row_meta_append(&meta, wrap(&wrapped, "m", &fragment, NULL), 0, NULL, &err));
	LP_CHECK_MSG(err.code == LP_ERR_CORRUPT && strstr(err.message, "multiple") != NULL, "%s", err.message);
	lp_row_meta_free(&meta);
	free_fragment(&fragment);

	/* a range far longer than the fragment is refused before anything is expanded */
	make_segments(&segments);
	segments.range.end = UINT64_MAX;
	make_fragment(&fragment, 3, 13, &segments, 5, false);
	lp_row_meta_init(&meta, 13);
	LP_CHECK(!lp_row_meta_append(&meta, wrap(&wrapped, "m", &fragment, NULL), 0, NULL, &err));
	LP_CHECK_MSG(err.code == LP_ERR_CORRUPT && strstr(err.message, "more values") != NULL, "%s", err.message);
	lp_row_meta_free(&meta);
	free_fragment(&fragment);

	/* no row ids at all in a dataset that has them */
	lance__table__data_fragment__init(&fragment);
	fragment.physical_rows = 5;
	lp_row_meta_init(&meta, 5);
	LP_CHECK(!lp_row_meta_append(&meta, wrap(&wrapped, "m", &fragment, NULL), 0, NULL, &err));
	LP_CHECK_MSG(err.code == LP_ERR_CORRUPT && strstr(err.message, "missing") != NULL, "%s", err.message);
	lp_row_meta_free(&meta);
}
