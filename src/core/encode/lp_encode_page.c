/*
 * lp_encode_page.c - one page of a leaf column of a Lance 2.1+ file, laid
 * out and compressed as Lance's structural encoder chooses
 * (encodings/logical/primitive.rs do_flush, compression.rs
 * DefaultCompressionStrategy; byte formats in lance-format.md §4.4):
 *  - every value null: a constant page (2.1's AllNullLayout) without buffers;
 *  - from 2.2 on, every valid value equal: a constant page;
 *  - values narrower than 256 bytes: mini-block.  8/16/32/64-bit values are
 *    run-length encoded when there are fewer runs than half the values, else
 *    bit-packed in FastLanes blocks of 1024 with their width inline when
 *    that saves bits; other fixed widths, bools and fixed-size lists are
 *    stored flat in chunks of about 4 KiB; strings and binaries as offsets
 *    and bytes in chunks of about 4 KiB;
 *  - wider values: full-zip, each value after its control word (and its
 *    length when variable), with a repetition index for variable widths
 *    and lists;
 *    strings whose longest value exceeds 32 KiB, or of a field asking for
 *    lz4 or zstd, each zstd-compressed on its own (General);
 *  - low-cardinality pages (lp_encode_dictionary.c, checked first): a
 *    mini-block page of u32 indices, compressed as above, and the
 *    dictionary in page buffer 2.
 * Field metadata lance-encoding:compression "none" turns RLE, bit-packing
 * and FSST off, "fsst" forces FSST, and "lz4"/"zstd" store strings without
 * FSST and compress each mini-block chunk's values (Lance's
 * GeneralMiniBlockCompressor: when the values reach 4 KiB and shrink).
 * Definition levels go into every chunk or control word when the page has
 * nulls, one repdef layer for the leaf and one for each struct and list
 * above it (a null takes the level of its outermost null layer); with
 * lists, repetition levels and a repetition index go with them (in
 * full-zip pages an entry per row).  Levels are compressed as
 * Lance compresses levels: bit-packed at the width of the highest level,
 * run-length encoded from 2.2 on when nulls are rare, flat for tiny pages.
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

/*
 * A dictionary page: the indices, with the page's levels and the column's
 * compression, as a mini-block page of 32-bit values.
 */
static bool
encode_dictionary(LpFileVersion version, const LpLeafShape *shape, const LpPageValues *page,
				  const Levels *levels, const LpDictionary *dictionary, LpEncodedPage *out,
				  LpError *err)
{
	LpLeafShape index_shape = *shape;
	LpPageValues indices = *page;	/* shares the page's buffers, with the indices as values */
	LpDictionaryBlock block;
	Strings		no_strings;
	bool		ok;

	index_shape.kind = LP_LEAF_FIXED;
	index_shape.bits = 32;
	index_shape.dimension = 0;
	index_shape.offset_bits = 0;
	index_shape.utf8 = false;
	indices.values = dictionary->indices;
	memset(&no_strings, 0, sizeof(no_strings));
	if (!lp_dictionary_block_encode(version, shape, dictionary, &block))
		return lp_enc_no_memory(err);
	ok = lp_enc_miniblock(version, &index_shape, &indices, levels, &no_strings, &block,
						  dictionary->num_items, out, err);
	lp_buf_free(&block.buffer);
	return ok;
}

/* Lance's is_narrow: the longest value is under 256 bytes. */
static bool
is_narrow(const LpLeafShape *shape, const LpPageValues *page)
{
	if (shape->kind == LP_LEAF_VARIABLE)
		return page->max_length < MINIBLOCK_MAX_VALUE_BYTES;
	return shape->kind == LP_LEAF_BOOL || lp_enc_bytes_per_value(shape) < MINIBLOCK_MAX_VALUE_BYTES;
}

bool
lp_encode_leaf_page(LpFileVersion version, const LpLeafShape *shape, const LpPageValues *page,
					LpEncodedPage *out, LpError *err)
{
	bool		ok;
	uint64_t	first_valid;
	Levels		levels;

	memset(out, 0, sizeof(*out));
	if (version < LP_FILE_VERSION_2_1)
		return lp_fail(err, LP_ERR_INTERNAL, "structural pages requested for a %s file",
					   lp_file_version_name(version));
	if (shape->num_layers < 1 || shape->num_layers > LP_ENCODE_MAX_LAYERS)
		return lp_fail(err, LP_ERR_INTERNAL, "leaf column of %u repdef layers", shape->num_layers);
	if (!lp_enc_levels_build(shape, page, &levels))
	{
		lp_enc_levels_free(&levels);
		return lp_enc_no_memory(err);
	}
	if (page->null_count == page->num_values)
		ok = lp_enc_all_null(&levels, out, err);
	else if (shape->blob_descriptor)
	{
		/* lancedb stores descriptors full-zip whatever their width, uncompressed */
		Strings		strings;

		memset(&strings, 0, sizeof(strings));
		strings.offsets = (const uint64_t *) page->offsets.data;
		strings.data = page->data.data;
		strings.data_len = page->data.len;
		ok = lp_enc_fullzip(shape, page, &levels, &strings, out, err);
	}
	else if (version >= LP_FILE_VERSION_2_2 && shape->kind != LP_LEAF_FIXED_SIZE_LIST &&
			 levels.rep.v == NULL && lp_enc_valid_values_equal(shape, page, &first_valid))
		ok = lp_enc_constant(shape, page, &levels, first_valid, out, err);
	else
	{
		Strings		strings;
		LpDictionary dictionary;
		bool		use_dictionary;

		memset(&strings, 0, sizeof(strings));
		if (!lp_dictionary_plan(version, shape, page, &dictionary, &use_dictionary))
			ok = lp_enc_no_memory(err);
		else if (use_dictionary)
			ok = encode_dictionary(version, shape, page, &levels, &dictionary, out, err);
		else if (shape->kind == LP_LEAF_VARIABLE &&
				 !lp_enc_strings_prepare(shape, page, !is_narrow(shape, page), &strings))
			ok = lp_enc_no_memory(err);
		else if (is_narrow(shape, page))
			ok = lp_enc_miniblock(version, shape, page, &levels, &strings, NULL, 0, out, err);
		else
			ok = lp_enc_fullzip(shape, page, &levels, &strings, out, err);
		lp_dictionary_free(&dictionary);
		lp_enc_strings_free(&strings);
	}
	lp_enc_levels_free(&levels);
	if (!ok)
		lp_encoded_page_free(out);
	return ok;
}


