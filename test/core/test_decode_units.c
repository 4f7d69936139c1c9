/*
 * test_decode_units.c - the decoding primitives on hand-made inputs:
 * FastLanes unpacking, FSST, RLE (flat and General-compressed sides) and
 * bit-packed levels through the compressive decoders, 2.0 Bitpacked and
 * BitpackedForNonNeg pages, rep/def unravelling, and the value comparison
 * used by test_decode.c.
 */
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "lp_test.h"
#include "value_compare.h"

#include "base/lp_alloc.h"
#include "codec/lp_bitpack.h"
#include "decode/lp_decode_internal.h"
#include "codec/lp_fsst.h"

static const LpFile unit_file = {.name = "unit"};

/* Packs values into the FastLanes layout bit by bit, straight from its definition. */
static void
pack_by_definition(uint32_t type_bits, uint32_t width, const uint64_t *values, uint8_t *packed)
{
	static const uint32_t order[8] = {0, 4, 2, 6, 1, 5, 3, 7};
	uint32_t	lanes = 1024 / type_bits;

	memset(packed, 0, lp_fastlanes_packed_bytes(width));
	for (uint32_t lane = 0; lane < lanes; lane++)
		for (uint32_t row = 0; row < type_bits; row++)
		{
			uint64_t	value = values[order[row / 8] * 16 + (row % 8) * 128 + lane];

			for (uint32_t b = 0; b < width; b++)
			{
				uint64_t	lane_bit = (uint64_t) row * width + b;
				uint64_t	word = lane_bit / type_bits;
				uint64_t	bit = ((word * lanes + lane) * type_bits) + lane_bit % type_bits;

				if ((value >> b) & 1)
					packed[bit / 8] |= (uint8_t) (1 << (bit % 8));
			}
		}
}

LP_TEST(fastlanes_hand_made_positions)
{
	uint8_t		packed[256];
	uint8_t		out8[1024];
	uint16_t	out16[1024];

	/* u8, width 1: bit 1 of byte 0 is row 1 of lane 0 = value 128 */
	memset(packed, 0, sizeof(packed));
	packed[0] = 0x02;
	LP_CHECK(lp_fastlanes_unpack(8, 1, packed, out8));
	for (int i = 0; i < 1024; i++)
		LP_CHECK_MSG(out8[i] == (i == 128), "u8 value %d is %d", i, out8[i]);

	/* u16, width 1: bit 8 of word 0 is row 8 of lane 0 = value 4 * 16 = 64 */
	memset(packed, 0, sizeof(packed));
	packed[1] = 0x01;
	LP_CHECK(lp_fastlanes_unpack(16, 1, packed, (uint8_t *) out16));
	for (int i = 0; i < 1024; i++)
		LP_CHECK_MSG(out16[i] == (i == 64), "u16 value %d is %d", i, out16[i]);

	LP_CHECK(!lp_fastlanes_unpack(16, 17, packed, (uint8_t *) out16));
	LP_CHECK(!lp_fastlanes_unpack(12, 3, packed, (uint8_t *) out16));
}

LP_TEST(fastlanes_every_width_round_trips)
{
	static const uint32_t types[] = {8, 16, 32, 64};
	uint64_t   *values = malloc(1024 * sizeof(uint64_t));
	uint8_t    *packed = malloc(1024 * 8);
	uint8_t    *out = malloc(1024 * 8);

	for (int t = 0; t < 4; t++)
		for (uint32_t width = 0; width <= types[t]; width++)
		{
			uint32_t	bytes = types[t] / 8;
			uint64_t	mask = width == 64 ? UINT64_MAX : (((uint64_t) 1 << width) - 1);
			int			bad = 0;

			for (int i = 0; i < 1024; i++)
				values[i] = ((uint64_t) i * 0x9E3779B97F4A7C15ull + (uint64_t) width) & mask;
			pack_by_definition(types[t], width, values, packed);
			LP_CHECK(lp_fastlanes_unpack(types[t], width, packed, out));
			for (int i = 0; i < 1024; i++)
			{
				uint64_t	got = 0;

				for (uint32_t b = 0; b < bytes; b++)
					got |= (uint64_t) out[i * bytes + b] << (8 * b);
				bad += got != values[i];
			}
			LP_CHECK_MSG(bad == 0, "T=%u W=%u: %d values differ", types[t], width, bad);
		}
	free(values);
	free(packed);
	free(out);
}

static void
make_fsst_table(uint8_t *table)
{
	uint64_t	header = ((uint64_t) 0x46535354 << 32) | 2;

	memset(table, 0, LP_FSST_SYMBOL_TABLE_LEN);
	memcpy(table, &header, 8);
	memcpy(table + 8, "ab\0\0\0\0\0\0", 8);
	memcpy(table + 16, "hello\0\0\0", 8);
	table[24] = 2;
	table[25] = 5;
}

LP_TEST(fsst_decodes_symbols_and_escapes)
{
	uint8_t		raw[LP_FSST_SYMBOL_TABLE_LEN];
	LpFsstTable table;
	const uint8_t codes[] = {0, 255, 'x', 1, 0};
	const uint8_t bad_escape[] = {0, 255};
	const uint8_t bad_code[] = {2};
	uint64_t	len;
	uint8_t		out[LP_FSST_DECODE_ROOM(sizeof(codes))];

	make_fsst_table(raw);
	LP_CHECK(lp_fsst_table_parse(raw, sizeof(raw), &table));
	LP_CHECK(lp_fsst_decode(&table, codes, sizeof(codes), out, &len));
	LP_CHECK_EQ_U64(len, 10);
	LP_CHECK(memcmp(out, "abxhelloab", 10) == 0);
	LP_CHECK(!lp_fsst_decode(&table, bad_escape, sizeof(bad_escape), out, &len));
	LP_CHECK(!lp_fsst_decode(&table, bad_code, sizeof(bad_code), out, &len));
	raw[7] = 0;					/* magic damaged */
	LP_CHECK(!lp_fsst_table_parse(raw, sizeof(raw), &table));
	LP_CHECK(!lp_fsst_table_parse(raw, 100, &table));
}

LP_TEST(rle_chunk_and_block_expand)
{
	Lance__Encodings21__Flat values_flat = LANCE__ENCODINGS21__FLAT__INIT;
	Lance__Encodings21__Flat lengths_flat = LANCE__ENCODINGS21__FLAT__INIT;
	Lance__Encodings21__CompressiveEncoding values_enc = LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__INIT;
	Lance__Encodings21__CompressiveEncoding lengths_enc = LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__INIT;
	Lance__Encodings21__Rle rle = LANCE__ENCODINGS21__RLE__INIT;
	Lance__Encodings21__CompressiveEncoding enc = LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__INIT;
	const uint32_t run_values[] = {7, 9};
	const uint8_t run_lengths[] = {3, 2};
	uint8_t		block[8 + 8 + 2];
	LpSlice		buffers[2] = {{(const uint8_t *) run_values, 8}, {run_lengths, 2}};
	LpError		err;
	LpPageContext ctx = {&unit_file, 0, 0, &err};
	LpFlatValues		out;
	const uint32_t expected[] = {7, 7, 7, 9, 9};

	values_flat.bits_per_value = 32;
	lengths_flat.bits_per_value = 8;
	values_enc.compression_case = LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_FLAT;
	values_enc.flat = &values_flat;
	lengths_enc.compression_case = LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_FLAT;
	lengths_enc.flat = &lengths_flat;
	rle.values = &values_enc;
	rle.run_lengths = &lengths_enc;
	enc.compression_case = LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_RLE;
	enc.rle = &rle;

	LP_CHECK(lp_miniblock_decompress(&ctx, &enc, buffers, 2, 5, &out));
	LP_CHECK_EQ_U64(out.num_values, 5);
	LP_CHECK(out.data.len == sizeof(expected) && memcmp(out.data.data, expected, sizeof(expected)) == 0);
	lp_flat_values_free(&out);

	/* Runs that cover too few values are damage, not zeros. */
	LP_CHECK(!lp_miniblock_decompress(&ctx, &enc, buffers, 2, 6, &out));
	LP_CHECK_EQ_U64(err.code, LP_ERR_CORRUPT);

	/* Block form: u64 size of the values, the values, the run lengths. */
	memset(block, 0, sizeof(block));
	block[0] = 8;
	memcpy(block + 8, run_values, 8);
	memcpy(block + 16, run_lengths, 2);
	LP_CHECK(lp_flat_values_decompress(&ctx, &enc, block, sizeof(block), 5, &out));
	LP_CHECK(out.data.len == sizeof(expected) && memcmp(out.data.data, expected, sizeof(expected)) == 0);
	lp_flat_values_free(&out);
	block[0] = 200;
	LP_CHECK(!lp_flat_values_decompress(&ctx, &enc, block, sizeof(block), 5, &out));
}

/* A Flat of bits, optionally wrapped in General zstd. */
typedef struct RleSide
{
	Lance__Encodings21__Flat flat;
	Lance__Encodings21__CompressiveEncoding flat_enc;
	Lance__Encodings21__BufferCompression compression;
	Lance__Encodings21__General general;
	Lance__Encodings21__CompressiveEncoding general_enc;
} RleSide;

static const LpCompressive *
rle_side(RleSide *side, uint64_t bits, bool zstd)
{
	lance__encodings21__flat__init(&side->flat);
	lance__encodings21__compressive_encoding__init(&side->flat_enc);
	lance__encodings21__buffer_compression__init(&side->compression);
	lance__encodings21__general__init(&side->general);
	lance__encodings21__compressive_encoding__init(&side->general_enc);
	side->flat.bits_per_value = bits;
	side->flat_enc.compression_case = LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_FLAT;
	side->flat_enc.flat = &side->flat;
	if (!zstd)
		return &side->flat_enc;
	side->compression.scheme = LANCE__ENCODINGS21__COMPRESSION_SCHEME__COMPRESSION_ALGORITHM_ZSTD;
	side->general.compression = &side->compression;
	side->general.values = &side->flat_enc;
	side->general_enc.compression_case = LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_GENERAL;
	side->general_enc.general = &side->general;
	return &side->general_enc;
}

/* A bare zstd frame of len bytes (malloc'd). */
static LpSlice
zstd_frame(const void *data, size_t len)
{
	size_t		bound = ZSTD_compressBound(len);
	uint8_t    *frame = malloc(bound);
	LpSlice		slice = {frame, ZSTD_compress(frame, bound, data, len, 3)};

	LP_CHECK(!ZSTD_isError(slice.len));
	return slice;
}

/*
 * Lance 12 (2.3) compresses the run values and the run lengths of an RLE
 * each with General; the number of runs comes from the inflated lengths.
 */
LP_TEST(rle_general_children_expand)
{
	RleSide		values_side;
	RleSide		lengths_side;
	Lance__Encodings21__Rle rle = LANCE__ENCODINGS21__RLE__INIT;
	Lance__Encodings21__CompressiveEncoding enc = LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__INIT;
	const uint32_t run_values[] = {7, 9, 4};
	const uint8_t run_lengths[] = {3, 2, 1};
	const uint8_t zero_run[] = {3, 0, 3};
	const uint32_t expected[] = {7, 7, 7, 9, 9, 4};
	LpSlice		values = zstd_frame(run_values, sizeof(run_values));
	LpSlice		lengths = zstd_frame(run_lengths, sizeof(run_lengths));
	LpSlice		short_lengths = zstd_frame(run_lengths, 2);
	LpSlice		ragged_values = zstd_frame(run_values, 10);
	LpSlice		zero_lengths = zstd_frame(zero_run, sizeof(zero_run));
	LpSlice		buffers[2];
	uint8_t		block[256];
	LpError		err;
	LpPageContext ctx = {&unit_file, 0, 0, &err};
	LpFlatValues		out;

	rle.values = (LpCompressive *) rle_side(&values_side, 32, true);
	rle.run_lengths = (LpCompressive *) rle_side(&lengths_side, 8, true);
	enc.compression_case = LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_RLE;
	enc.rle = &rle;

	buffers[0] = values;
	buffers[1] = lengths;
	LP_CHECK(lp_miniblock_decompress(&ctx, &enc, buffers, 2, 6, &out));
	LP_CHECK(out.data.len == sizeof(expected) && memcmp(out.data.data, expected, sizeof(expected)) == 0);
	lp_flat_values_free(&out);

	/* block form: u64 size of the values, the values, the run lengths */
	memset(block, 0, 8);
	block[0] = (uint8_t) values.len;
	memcpy(block + 8, values.data, values.len);
	memcpy(block + 8 + values.len, lengths.data, lengths.len);
	LP_CHECK(lp_flat_values_decompress(&ctx, &enc, block, 8 + values.len + lengths.len, 6, &out));
	LP_CHECK(out.data.len == sizeof(expected) && memcmp(out.data.data, expected, sizeof(expected)) == 0);
	lp_flat_values_free(&out);

	/* flat run lengths next to compressed values */
	rle.run_lengths = (LpCompressive *) rle_side(&lengths_side, 8, false);
	buffers[1].data = run_lengths;
	buffers[1].len = sizeof(run_lengths);
	LP_CHECK(lp_miniblock_decompress(&ctx, &enc, buffers, 2, 6, &out));
	LP_CHECK(out.data.len == sizeof(expected) && memcmp(out.data.data, expected, sizeof(expected)) == 0);
	lp_flat_values_free(&out);

	/* damage: fewer run lengths than values, values not whole, a run of 0 */
	rle.run_lengths = (LpCompressive *) rle_side(&lengths_side, 8, true);
	buffers[1] = short_lengths;
	LP_CHECK(!lp_miniblock_decompress(&ctx, &enc, buffers, 2, 6, &out));
	LP_CHECK_EQ_U64(err.code, LP_ERR_CORRUPT);
	buffers[0] = ragged_values;
	buffers[1] = lengths;
	LP_CHECK(!lp_miniblock_decompress(&ctx, &enc, buffers, 2, 6, &out));
	LP_CHECK_EQ_U64(err.code, LP_ERR_CORRUPT);
	buffers[0] = values;
	buffers[1] = zero_lengths;
	LP_CHECK(!lp_miniblock_decompress(&ctx, &enc, buffers, 2, 6, &out));
	LP_CHECK_EQ_U64(err.code, LP_ERR_CORRUPT);
	free((void *) values.data);
	free((void *) lengths.data);
	free((void *) short_lengths.data);
	free((void *) ragged_values.data);
	free((void *) zero_lengths.data);
}

/* Neither side of an RLE can say how many runs there are: damage. */
LP_TEST(rle_without_a_counting_side_is_refused)
{
	Lance__Encodings21__Flat flat = LANCE__ENCODINGS21__FLAT__INIT;
	Lance__Encodings21__CompressiveEncoding inner = LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__INIT;
	Lance__Encodings21__OutOfLineBitpacking oolb = LANCE__ENCODINGS21__OUT_OF_LINE_BITPACKING__INIT;
	Lance__Encodings21__CompressiveEncoding side = LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__INIT;
	Lance__Encodings21__Rle rle = LANCE__ENCODINGS21__RLE__INIT;
	Lance__Encodings21__CompressiveEncoding enc = LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__INIT;
	uint8_t		zeros[64] = {0};
	LpSlice		buffers[2] = {{zeros, sizeof(zeros)}, {zeros, sizeof(zeros)}};
	LpError		err;
	LpPageContext ctx = {&unit_file, 0, 0, &err};
	LpFlatValues		out;

	flat.bits_per_value = 2;
	inner.compression_case = LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_FLAT;
	inner.flat = &flat;
	oolb.uncompressed_bits_per_value = 8;
	oolb.values = &inner;
	side.compression_case = LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_OUT_OF_LINE_BITPACKING;
	side.out_of_line_bitpacking = &oolb;
	rle.values = &side;
	rle.run_lengths = &side;
	enc.compression_case = LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_RLE;
	enc.rle = &rle;
	LP_CHECK(!lp_miniblock_decompress(&ctx, &enc, buffers, 2, 4, &out));
	LP_CHECK_EQ_U64(err.code, LP_ERR_CORRUPT);
	LP_CHECK_MSG(strstr(err.message, "number of runs") != NULL, "%.200s", err.message);
}

/* The bits of values[i] (width bits each) as one stream, LSB first. */
static void
pack_bit_stream(const int64_t *values, int count, uint32_t width, uint8_t *packed, size_t size)
{
	memset(packed, 0, size);
	for (int i = 0; i < count; i++)
		for (uint32_t b = 0; b < width; b++)
			if (((uint64_t) values[i] >> b) & 1)
			{
				uint64_t	bit = (uint64_t) i * width + b;

				packed[bit / 8] |= (uint8_t) (1 << (bit % 8));
			}
}

/* A 2.0 ArrayEncoding in page buffer 0. */
typedef struct V20Bitpacked
{
	Lance__Encodings__Buffer buffer;
	Lance__Encodings__Bitpacked bitpacked;
	Lance__Encodings__BitpackedForNonNeg for_non_neg;
	Lance__Encodings__ArrayEncoding enc;
} V20Bitpacked;

static const Lance__Encodings__ArrayEncoding *
v20_bitpacked(V20Bitpacked *e, bool non_neg, uint64_t width, uint64_t type_bits, bool is_signed)
{
	lance__encodings__buffer__init(&e->buffer);
	lance__encodings__bitpacked__init(&e->bitpacked);
	lance__encodings__bitpacked_for_non_neg__init(&e->for_non_neg);
	lance__encodings__array_encoding__init(&e->enc);
	if (non_neg)
	{
		e->for_non_neg.compressed_bits_per_value = width;
		e->for_non_neg.uncompressed_bits_per_value = type_bits;
		e->for_non_neg.buffer = &e->buffer;
		e->enc.array_encoding_case = LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_BITPACKED_FOR_NON_NEG;
		e->enc.bitpacked_for_non_neg = &e->for_non_neg;
	}
	else
	{
		e->bitpacked.compressed_bits_per_value = width;
		e->bitpacked.uncompressed_bits_per_value = type_bits;
		e->bitpacked.is_signed = is_signed;
		e->bitpacked.buffer = &e->buffer;
		e->enc.array_encoding_case = LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_BITPACKED;
		e->enc.bitpacked = &e->bitpacked;
	}
	return &e->enc;
}

/* Decode a 2.0 page of one buffer; on success check the values (bytes wide each). */
static bool
decode_v20_ints(const Lance__Encodings__ArrayEncoding *enc, const uint8_t *data, uint64_t len,
				uint64_t n, const int64_t *expected, uint32_t bytes, LpError *err)
{
	LpPageContext ctx = {&unit_file, 0, 0, err};
	LpSlice		buffer = {data, len};
	LpFlatValues		values;
	LpBits		validity = {0};
	int			bad = 0;

	if (!lp_decode_v20_page(&ctx, enc, &buffer, 1, n, false, bytes * 8, &values, &validity))
	{
		lp_buf_free(&validity.buf);
		return false;
	}
	LP_CHECK_EQ_U64(values.num_values, n);
	LP_CHECK_EQ_U64(values.bits_per_value, bytes * 8);
	LP_CHECK(validity.num_bits == n && validity.num_unset == 0);
	for (uint64_t i = 0; i < n && values.num_values == n; i++)
		bad += lp_le_uint(values.data.data + i * bytes, bytes) !=
			((uint64_t) expected[i] & (bytes == 8 ? UINT64_MAX : (((uint64_t) 1 << (bytes * 8)) - 1)));
	LP_CHECK_MSG(bad == 0, "%d of %llu values differ", bad, (unsigned long long) n);
	lp_flat_values_free(&values);
	lp_buf_free(&validity.buf);
	return true;
}

/* 2.0 Bitpacked: a plain bit stream; signed values sign-extend from their top bit. */
LP_TEST(v20_bitpacked_bit_stream)
{
	static const int64_t unsigned_values[] = {1, 7, 0, 5, 2, 6, 3};
	static const int64_t signed_values[] = {-3, 2, -8, 7, 0, -1};
	static const int64_t wide_values[] = {(int64_t) 0x123456789ull, 0, 0x7ffffffffll};
	V20Bitpacked e;
	uint8_t		packed[64];
	LpError		err;

	pack_bit_stream(unsigned_values, 7, 3, packed, sizeof(packed));
	LP_CHECK(decode_v20_ints(v20_bitpacked(&e, false, 3, 16, false), packed, 3, 7,
							 unsigned_values, 2, &err));
	pack_bit_stream(signed_values, 6, 4, packed, sizeof(packed));
	LP_CHECK(decode_v20_ints(v20_bitpacked(&e, false, 4, 32, true), packed, 3, 6,
							 signed_values, 4, &err));
	pack_bit_stream(wide_values, 3, 35, packed, sizeof(packed));
	LP_CHECK(decode_v20_ints(v20_bitpacked(&e, false, 35, 64, false), packed, 14, 3,
							 wide_values, 8, &err));

	/* damage: a buffer one byte short, a width wider than the type, no width */
	LP_CHECK(!decode_v20_ints(v20_bitpacked(&e, false, 35, 64, false), packed, 13, 3,
							  wide_values, 8, &err));
	LP_CHECK_EQ_U64(err.code, LP_ERR_CORRUPT);
	LP_CHECK(!decode_v20_ints(v20_bitpacked(&e, false, 17, 16, false), packed, 64, 3,
							  wide_values, 2, &err));
	LP_CHECK_EQ_U64(err.code, LP_ERR_CORRUPT);
	LP_CHECK(!decode_v20_ints(v20_bitpacked(&e, false, 0, 16, false), packed, 64, 3,
							  wide_values, 2, &err));
	LP_CHECK_EQ_U64(err.code, LP_ERR_CORRUPT);
	/* a buffer index the page does not have */
	v20_bitpacked(&e, false, 3, 16, false);
	e.buffer.buffer_index = 1;
	LP_CHECK(!decode_v20_ints(&e.enc, packed, 64, 7, unsigned_values, 2, &err));
	LP_CHECK_EQ_U64(err.code, LP_ERR_CORRUPT);
}

/* 2.0 BitpackedForNonNeg: whole FastLanes blocks, the last one padded. */
LP_TEST(v20_bitpacked_for_non_neg_blocks)
{
	enum {N = 1500, WIDTH = 11};
	uint64_t   *block_values = calloc(1024, sizeof(uint64_t));
	int64_t    *expected = malloc(N * sizeof(int64_t));
	uint8_t    *packed = malloc(2 * 1024 * WIDTH / 8);
	V20Bitpacked e;
	LpError		err;

	for (int i = 0; i < N; i++)
		expected[i] = (i * 37 + 5) % (1 << WIDTH);
	for (int b = 0; b < 2; b++)
	{
		memset(block_values, 0, 1024 * sizeof(uint64_t));
		for (int i = 0; i < 1024 && b * 1024 + i < N; i++)
			block_values[i] = (uint64_t) expected[b * 1024 + i];
		pack_by_definition(32, WIDTH, block_values, packed + b * (1024 * WIDTH / 8));
	}
	LP_CHECK(decode_v20_ints(v20_bitpacked(&e, true, WIDTH, 32, false), packed,
							 2 * 1024 * WIDTH / 8, N, expected, 4, &err));
	/* the padded last block is missing */
	LP_CHECK(!decode_v20_ints(v20_bitpacked(&e, true, WIDTH, 32, false), packed,
							  2 * 1024 * WIDTH / 8 - 1, N, expected, 4, &err));
	LP_CHECK_EQ_U64(err.code, LP_ERR_CORRUPT);
	LP_CHECK(!decode_v20_ints(v20_bitpacked(&e, true, WIDTH, 12, false), packed,
							  2 * 1024 * WIDTH / 8, N, expected, 4, &err));
	LP_CHECK_EQ_U64(err.code, LP_ERR_CORRUPT);
	free(block_values);
	free(expected);
	free(packed);
}

/*
 * A List page is not a leaf page: strings of Lance 0.13 and earlier stored
 * as lists of u8 are decoded from their two columns (test_decode.c), never
 * from the offsets page alone.
 */
LP_TEST(v20_list_pages_are_not_leaf_pages)
{
	Lance__Encodings__List list = LANCE__ENCODINGS__LIST__INIT;
	Lance__Encodings__ArrayEncoding enc = LANCE__ENCODINGS__ARRAY_ENCODING__INIT;
	LpError		err;
	LpPageContext ctx = {&unit_file, 0, 0, &err};
	LpFlatValues		values;
	LpBits		validity = {0};

	enc.array_encoding_case = LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_LIST;
	enc.list = &list;
	LP_CHECK(!lp_decode_v20_page(&ctx, &enc, NULL, 0, 3, true, 0, &values, &validity));
	LP_CHECK_EQ_U64(err.code, LP_ERR_UNSUPPORTED);
	LP_CHECK_MSG(strstr(err.message, "\"list\"") != NULL, "%.200s", err.message);
	LP_CHECK(!lp_decode_v20_page(&ctx, &enc, NULL, 0, 3, false, 32, &values, &validity));
	LP_CHECK_MSG(strstr(err.message, "\"list\"") != NULL, "%.200s", err.message);
	lp_buf_free(&validity.buf);
}

LP_TEST(out_of_line_bitpacking_raw_tail)
{
	/* 3 u16 levels at width 1: a partial block stored as raw u16 words */
	Lance__Encodings21__Flat flat = LANCE__ENCODINGS21__FLAT__INIT;
	Lance__Encodings21__CompressiveEncoding inner = LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__INIT;
	Lance__Encodings21__OutOfLineBitpacking oolb = LANCE__ENCODINGS21__OUT_OF_LINE_BITPACKING__INIT;
	Lance__Encodings21__CompressiveEncoding enc = LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__INIT;
	const uint16_t raw[] = {1, 0, 1};
	uint16_t   *levels;
	LpError		err;
	LpPageContext ctx = {&unit_file, 0, 0, &err};

	flat.bits_per_value = 1;
	inner.compression_case = LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_FLAT;
	inner.flat = &flat;
	oolb.uncompressed_bits_per_value = 16;
	oolb.values = &inner;
	enc.compression_case = LANCE__ENCODINGS21__COMPRESSIVE_ENCODING__COMPRESSION_OUT_OF_LINE_BITPACKING;
	enc.out_of_line_bitpacking = &oolb;
	LP_CHECK(lp_levels_decompress(&ctx, &enc, (const uint8_t *) raw, sizeof(raw), 3, &levels));
	if (levels)
		LP_CHECK(levels[0] == 1 && levels[1] == 0 && levels[2] == 1);
	lp_free(levels);
	/* neither raw nor a whole packed block */
	LP_CHECK(!lp_levels_decompress(&ctx, &enc, (const uint8_t *) raw, 4, 3, &levels));
}

LP_TEST(repdef_list_with_null_and_empty_lists)
{
	/* list<int32> rows: [1, null, 3], null, [], [4] */
	const Lance__Encodings21__RepDefLayer layers[] = {
		LANCE__ENCODINGS21__REP_DEF_LAYER__REPDEF_NULLABLE_ITEM,
		LANCE__ENCODINGS21__REP_DEF_LAYER__REPDEF_NULL_AND_EMPTY_LIST
	};
	uint16_t	rep[] = {1, 0, 0, 1, 1, 1};
	uint16_t	def[] = {0, 1, 0, 2, 3, 0};
	LpPageLevels levels = {6, rep, def};
	LpColumnLevels acc;
	LpError		err;
	LpPageContext ctx = {&unit_file, 0, 0, &err};
	const uint64_t offsets[] = {0, 3, 3, 3, 4};
	const uint8_t item_valid[] = {1, 0, 1, 1};
	const uint8_t list_valid[] = {1, 0, 1, 1};

	LP_CHECK(lp_column_levels_init(&acc, 2));
	LP_CHECK(lp_repdef_unravel(&ctx, layers, 2, &levels, 4, 4, &acc));
	LP_CHECK_EQ_U64(acc.layers[0].count, 4);
	LP_CHECK_EQ_U64(acc.layers[1].count, 4);
	LP_CHECK(acc.layers[1].is_list);
	LP_CHECK(acc.layers[1].offsets.len == sizeof(offsets) &&
			 memcmp(acc.layers[1].offsets.data, offsets, sizeof(offsets)) == 0);
	for (int i = 0; i < 4; i++)
	{
		LP_CHECK_MSG(lp_bit_get(acc.layers[0].validity.buf.data, i) == item_valid[i], "item %d", i);
		LP_CHECK_MSG(lp_bit_get(acc.layers[1].validity.buf.data, i) == list_valid[i], "list %d", i);
	}
	lp_column_levels_free(&acc);

	/* A page claiming more rows than its levels describe is damaged. */
	{
		uint16_t	rep2[] = {1, 0, 0, 1, 1, 1};
		uint16_t	def2[] = {0, 1, 0, 2, 3, 0};
		LpPageLevels levels2 = {6, rep2, def2};

		LP_CHECK(lp_column_levels_init(&acc, 2));
		LP_CHECK(!lp_repdef_unravel(&ctx, layers, 2, &levels2, 4, 5, &acc));
		LP_CHECK_EQ_U64(err.code, LP_ERR_CORRUPT);
		lp_column_levels_free(&acc);
	}
}

LP_TEST(repdef_all_valid_list_with_null_items)
{
	/*
	 * struct<l: list<int32>> rows: {[null, 1]}, null, {[2]}, {[null]}: the
	 * list is never null nor empty (no definition level of its own), so a
	 * null item's level 1 starts a valid list, and only the struct's level 2
	 * hides one (a null list).
	 */
	const Lance__Encodings21__RepDefLayer layers[] = {
		LANCE__ENCODINGS21__REP_DEF_LAYER__REPDEF_NULLABLE_ITEM,
		LANCE__ENCODINGS21__REP_DEF_LAYER__REPDEF_ALL_VALID_LIST,
		LANCE__ENCODINGS21__REP_DEF_LAYER__REPDEF_NULLABLE_ITEM
	};
	uint16_t	rep[] = {1, 0, 1, 1, 1};
	uint16_t	def[] = {1, 0, 2, 0, 1};
	LpPageLevels levels = {5, rep, def};
	LpColumnLevels acc;
	LpError		err;
	LpPageContext ctx = {&unit_file, 0, 0, &err};
	const uint64_t offsets[] = {0, 2, 2, 3, 4};
	const uint8_t item_valid[] = {0, 1, 1, 0};
	const uint8_t list_valid[] = {1, 0, 1, 1};
	const uint8_t struct_valid[] = {1, 0, 1, 1};

	LP_CHECK(lp_column_levels_init(&acc, 3));
	LP_CHECK_MSG(lp_repdef_unravel(&ctx, layers, 3, &levels, 4, 4, &acc), "%s", err.message);
	LP_CHECK_EQ_U64(acc.layers[0].count, 4);
	LP_CHECK_EQ_U64(acc.layers[1].count, 4);
	LP_CHECK_EQ_U64(acc.layers[2].count, 4);
	LP_CHECK(acc.layers[1].offsets.len == sizeof(offsets) &&
			 memcmp(acc.layers[1].offsets.data, offsets, sizeof(offsets)) == 0);
	for (int i = 0; i < 4 && acc.layers[2].count == 4; i++)
	{
		LP_CHECK_MSG(lp_bit_get(acc.layers[0].validity.buf.data, i) == item_valid[i], "item %d", i);
		LP_CHECK_MSG(lp_bit_get(acc.layers[1].validity.buf.data, i) == list_valid[i], "list %d", i);
		LP_CHECK_MSG(lp_bit_get(acc.layers[2].validity.buf.data, i) == struct_valid[i], "struct %d", i);
	}
	lp_column_levels_free(&acc);
}

LP_TEST(value_comparison_detects_differences)
{
	LpType		type = {.id = LP_TYPE_INT32, .name = "i"};
	int32_t		values[] = {5, -7};
	uint8_t		validity = 0x01;
	LpArray		array = {.type = &type, .length = 2, .values = (uint8_t *) values,
	.validity = &validity};
	const char *error;
	JsonValue  *five = json_parse("5", 1, &error);
	JsonValue  *six = json_parse("6", 1, &error);
	JsonValue  *null = json_parse("null", 4, &error);
	char		what[256];
	char		text[64];
	uint8_t		decimal[16];

	LP_CHECK(value_matches(&array, 0, five, what, sizeof(what)));
	LP_CHECK(!value_matches(&array, 0, six, what, sizeof(what)));
	LP_CHECK(value_matches(&array, 1, null, what, sizeof(what)));
	LP_CHECK(!value_matches(&array, 1, five, what, sizeof(what)));
	json_free(five);
	json_free(six);
	json_free(null);

	format_date(-719162, text, sizeof(text));
	LP_CHECK_MSG(strcmp(text, "0001-01-01") == 0, "got %s", text);
	format_micros(-1, text, sizeof(text));
	LP_CHECK_MSG(strcmp(text, "1969-12-31 23:59:59.999999") == 0, "got %s", text);
	memset(decimal, 0xff, sizeof(decimal));	/* -1 */
	format_decimal128(decimal, 3, text, sizeof(text));
	LP_CHECK_MSG(strcmp(text, "-0.001") == 0, "got %s", text);
}
