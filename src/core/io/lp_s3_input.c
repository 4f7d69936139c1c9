/*
 * lp_s3_input.c - inputs of the S3 store: ranged GETs read in aligned
 * blocks, and the pieces fetched ahead (LpInputOps.prefetch).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/lp_alloc.h"
#include "base/lp_interrupt.h"
#include "io/lp_s3_store_internal.h"
#include "io/lp_s3_uri.h"

static const LpInputOps s3_input_ops;

/* ---- inputs ---------------------------------------------------------------- */

static void
drop_block(S3Input *input)
{
	lp_free(input->block);
	input->block = NULL;
	input->block_len = 0;
	if (input->store->cached_input == input)
		input->store->cached_input = NULL;
}

/* ---- read-ahead ------------------------------------------------------------ */

static void
drop_piece(S3Input *input, size_t index)
{
	S3Piece    *piece = input->pieces[index];

	if (piece->pending)
		lp_s3_call_abort(input->store->client, piece->pending);
	input->piece_bytes -= piece->len;
	lp_free(piece->data);
	lp_free(piece);
	input->pieces[index] = input->pieces[--input->num_pieces];
}

/* Wait for a pending piece's answer: false with err, the piece dropped. */
static bool
finish_piece(S3Input *input, size_t index, LpError *err)
{
	S3Piece    *piece = input->pieces[index];
	LpS3Pending *pending = piece->pending;
	LpS3HttpResponse response;
	LpS3Call	call = {.method = "GET", .bucket = input->bucket, .key = input->key};

	piece->pending = NULL;
	if (!lp_s3_call_finish(input->store->client, pending, &response, err))
	{
		drop_piece(input, index);
		return false;
	}
	if (!lp_s3_succeeded(&call, &response))
	{
		lp_s3_fail(input->store->client, &call, &response, "read", err);
		lp_s3_http_response_clear(&response);
		lp_s3_explain_short_object(input->base.size, err);
		drop_piece(input, index);
		return false;
	}
	if (!lp_s3_check_range_answer(input->bucket, input->key, input->base.size, piece->offset,
							piece->len, &response, err))
	{
		drop_piece(input, index);
		return false;
	}
	return true;
}

/*
 * Serve a read from a piece that holds all of it: true with *served when
 * one did (false with err when its answer failed).
 */
static bool
read_from_pieces(S3Input *input, uint64_t offset, void *buffer, size_t len, bool *served,
				 LpError *err)
{
	*served = false;
	if (input->num_pieces == 0)
		return true;
	/* the started transfers move on between the decoder's reads */
	lp_s3_client_progress(input->store->client);
	for (size_t i = 0; i < input->num_pieces; i++)
	{
		S3Piece    *piece = input->pieces[i];

		if (offset < piece->offset || offset - piece->offset + len > piece->len)
			continue;
		if (piece->pending && !finish_piece(input, i, err))
			return false;
		memcpy(buffer, piece->data + (offset - piece->offset), len);
		*served = true;
		return true;
	}
	return true;
}

static int
compare_ranges(const void *a, const void *b)
{
	const LpByteRange *x = a;
	const LpByteRange *y = b;

	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/*
 * Is [offset, offset + len) inside a piece already?  Then that piece counts
 * as this prefetch's, so a page that several batches read is kept, not
 * fetched again.
 */
static bool
held_already(S3Input *input, uint64_t offset, uint64_t len)
{
	for (size_t i = 0; i < input->num_pieces; i++)
		if (offset >= input->pieces[i]->offset &&
			offset - input->pieces[i]->offset + len <= input->pieces[i]->len)
		{
			input->pieces[i]->generation = input->generation;
			return true;
		}
	return false;
}

/* Start a GET of len bytes at offset as a piece of this generation. */
static bool
start_piece(S3Input *input, uint64_t offset, size_t len, LpError *err)
{
	S3Piece    *piece;
	LpS3Call	call;

	if (input->num_pieces == input->pieces_capacity)
	{
		size_t		capacity = input->pieces_capacity ? input->pieces_capacity * 2 : 16;
		S3Piece   **longer = lp_alloc(capacity * sizeof(S3Piece *));

		if (longer == NULL)
			return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory for the read-ahead of \"%s\"",
						   input->base.name);
		if (input->num_pieces > 0)
			memcpy(longer, input->pieces, input->num_pieces * sizeof(S3Piece *));
		lp_free(input->pieces);
		input->pieces = longer;
		input->pieces_capacity = capacity;
	}
	piece = lp_alloc0(sizeof(S3Piece));
	if (piece == NULL || (piece->data = lp_alloc(len)) == NULL)
	{
		lp_free(piece);
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory for the read-ahead of \"%s\"",
					   input->base.name);
	}
	piece->offset = offset;
	piece->len = len;
	piece->generation = input->generation;
	lp_s3_format_range(piece->range, sizeof(piece->range), offset, len);
	piece->header = (LpS3Pair) {"range", piece->range};
	call = (LpS3Call) {.method = "GET", .bucket = input->bucket, .key = input->key,
		.headers = &piece->header, .header_count = 1,
	.response_buffer = piece->data, .response_capacity = len};
	if (!lp_s3_call_start(input->store->client, &call, &piece->pending, err))
	{
		lp_free(piece->data);
		lp_free(piece);
		return false;
	}
	input->pieces[input->num_pieces++] = piece;
	input->piece_bytes += len;
	return true;
}

/*
 * LpInputOps.prefetch: the ranges widened to LP_S3_READ_BLOCK boundaries,
 * sorted and merged where they touch, each not held already started as one
 * GET while the pieces stay within LP_S3_READAHEAD_BYTES (one that does
 * not fit is left to the reads).  Pieces of the prefetches before the
 * previous one that this one does not ask for again are dropped first: a
 * scan prefetches the next batch before it decodes the current one, so those
 * served a batch that is done.
 */
static bool
s3_prefetch(LpInput *base, const LpByteRange *ranges, size_t num_ranges, LpError *err)
{
	S3Input    *input = (S3Input *) base;
	LpByteRange *blocks;
	size_t		num_blocks = 0;
	size_t		num_merged;
	bool		ok = true;

	input->generation++;
	blocks = lp_alloc(num_ranges * sizeof(LpByteRange));
	if (blocks == NULL)
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory for the read-ahead of \"%s\"",
					   base->name);
	for (size_t i = 0; i < num_ranges; i++)
	{
		uint64_t	start = ranges[i].offset;
		uint64_t	end;

		if (ranges[i].len == 0 || start >= base->size)
			continue;
		end = ranges[i].len > base->size - start ? base->size : start + ranges[i].len;
		start -= start % LP_S3_READ_BLOCK;
		end += (LP_S3_READ_BLOCK - end % LP_S3_READ_BLOCK) % LP_S3_READ_BLOCK;
		if (end > base->size)
			end = base->size;
		blocks[num_blocks++] = (LpByteRange) {start, end - start};
	}
	qsort(blocks, num_blocks, sizeof(LpByteRange), compare_ranges);
	/* merged, then the pieces held already marked; then the old ones dropped */
	num_merged = 0;
	for (size_t i = 0; i < num_blocks;)
	{
		uint64_t	start = blocks[i].offset;
		uint64_t	end = start + blocks[i].len;

		for (i++; i < num_blocks && blocks[i].offset <= end; i++)
			if (blocks[i].offset + blocks[i].len > end)
				end = blocks[i].offset + blocks[i].len;
		if (!held_already(input, start, end - start))
			blocks[num_merged++] = (LpByteRange) {start, end - start};
	}
	for (size_t i = input->num_pieces; i-- > 0;)
		if (input->pieces[i]->generation + 1 < input->generation)
			drop_piece(input, i);
	for (size_t i = 0; i < num_merged && ok; i++)
		if (blocks[i].len <= LP_S3_READAHEAD_BYTES - input->piece_bytes)
			ok = start_piece(input, blocks[i].offset, (size_t) blocks[i].len, err);
	lp_free(blocks);
	return ok;
}

static bool
s3_read_at(LpInput *base, uint64_t offset, void *buffer, size_t len, LpError *err)
{
	S3Input    *input = (S3Input *) base;
	uint64_t	start;
	uint64_t	end;
	bool		served;

	if (len == 0)
		return true;
	if (!read_from_pieces(input, offset, buffer, len, &served, err))
		return false;
	if (served)
		return true;
	if (input->block && offset >= input->block_offset &&
		offset - input->block_offset + len <= input->block_len)
	{
		memcpy(buffer, input->block + (offset - input->block_offset), len);
		return true;
	}
	if (len >= LP_S3_READ_BLOCK)
		return lp_s3_get_range(input->store, input->bucket, input->key, base->size, offset,
						 buffer, len, err);
	/* the aligned blocks around the read: at most two, since len < one */
	start = offset - offset % LP_S3_READ_BLOCK;
	end = offset + len;
	end += (LP_S3_READ_BLOCK - end % LP_S3_READ_BLOCK) % LP_S3_READ_BLOCK;
	if (end > base->size)
		end = base->size;
	if (input->store->cached_input && input->store->cached_input != input)
		drop_block(input->store->cached_input);
	if (input->block == NULL)
	{
		input->block = lp_alloc(2 * LP_S3_READ_BLOCK);
		if (input->block == NULL)
			return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory for a read block of \"%s\"",
						   base->name);
	}
	input->block_len = 0;
	input->store->cached_input = input;
	if (!lp_s3_get_range(input->store, input->bucket, input->key, base->size, start,
				   input->block, (size_t) (end - start), err))
		return false;
	input->block_offset = start;
	input->block_len = (size_t) (end - start);
	memcpy(buffer, input->block + (offset - start), len);
	return true;
}

static void
s3_input_close(LpInput *base)
{
	S3Input    *input = (S3Input *) base;

	drop_block(input);
	while (input->num_pieces > 0)
		drop_piece(input, input->num_pieces - 1);
	lp_free(input->pieces);
	lp_free(input->bucket);
	lp_free(input->key);
	lp_free(input->name);
	lp_free(input);
}

static const LpInputOps s3_input_ops = {
	.read_at = s3_read_at,
	.close = s3_input_close,
	.prefetch = s3_prefetch,
};

static LpInput *
make_input(S3Store *store, const char *path, char *bucket, char *key, uint64_t size,
		   LpError *err)
{
	S3Input    *input = lp_alloc0(sizeof(*input));

	if (input == NULL || (input->name = lp_strdup(path)) == NULL)
	{
		lp_free(input);
		lp_free(bucket);
		lp_free(key);
		lp_fail(err, LP_ERR_NO_MEMORY, "out of memory for an input of \"%s\"", path);
		return NULL;
	}
	input->base.ops = &s3_input_ops;
	input->base.name = input->name;
	input->base.size = size;
	input->store = store;
	input->bucket = bucket;
	input->key = key;
	return &input->base;
}

LpInput *
lp_s3_open_input(LpStore *store, const char *path, LpError *err)
{
	S3Store    *s3 = (S3Store *) store;
	char	   *bucket;
	char	   *key;
	LpStat		stat;

	if (!lp_s3_split_uri(path, &bucket, &key, err))
		return NULL;
	if (!lp_s3_stat_parsed(s3, bucket, key, &stat, err))
	{
		lp_free(bucket);
		lp_free(key);
		return NULL;
	}
	if (stat.kind != LP_OBJECT_FILE)
	{
		if (stat.kind == LP_OBJECT_DIRECTORY)
			lp_fail(err, LP_ERR_INVALID_ARGUMENT, "\"%s\" is a directory", path);
		else
			lp_fail(err, LP_ERR_NOT_FOUND, "file \"%s\" does not exist", path);
		lp_free(bucket);
		lp_free(key);
		return NULL;
	}
	return make_input(s3, path, bucket, key, stat.size, err);
}

LpInput *
lp_s3_open_input_lazily(LpStore *store, const char *path, uint64_t size, LpError *err)
{
	char	   *bucket;
	char	   *key;

	if (!lp_s3_split_uri(path, &bucket, &key, err))
		return NULL;
	return make_input((S3Store *) store, path, bucket, key, size, err);
}

/* Stores made per lookup of one endpoint and account may copy from each other. */
S3Input *
lp_s3_input_copyable(S3Store *store, LpInput *input)
{
	S3Input    *s3_input;

	if (input->ops != &s3_input_ops)
		return NULL;
	s3_input = (S3Input *) input;
	return s3_input->store == store ||
		lp_s3_client_same_account(s3_input->store->client, store->client) ? s3_input : NULL;
}
