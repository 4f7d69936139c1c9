/*
 * lp_s3_store_internal.h - what the files of the S3 store share
 * (core-internal): the store, its inputs and outputs, and the requests on
 * objects.  lp_s3_objects.c makes the requests (HEAD, listings, PUTs,
 * ranged GETs), lp_s3_input.c is the inputs (blocks, read-ahead),
 * lp_s3_output.c the outputs (one PUT, multipart uploads, parts by number)
 * and lp_s3_store.c the store's ops over them (and removal, uploads in
 * progress); each file calls only those before it.
 */
#ifndef LP_S3_STORE_INTERNAL_H
#define LP_S3_STORE_INTERNAL_H

#include "base/lp_error.h"
#include "io/lp_s3_client.h"
#include "io/lp_s3_multipart.h"
#include "io/lp_s3_sizes.h"
#include "io/lp_s3_xml.h"
#include "io/lp_storage.h"

typedef struct S3Input S3Input;

/*
 * Bytes an input fetched ahead (LpInputOps.prefetch): one ranged GET,
 * pending until its answer came.  The range header it was started with
 * stays here until then.
 */
typedef struct S3Piece
{
	uint64_t	offset;
	size_t		len;
	uint8_t    *data;
	LpS3Pending *pending;		/* NULL once answered */
	unsigned	generation;		/* of the prefetch that started it */
	char		range[64];
	LpS3Pair	header;
} S3Piece;

typedef struct S3Store
{
	LpStore		base;
	LpS3Client *client;
	S3Input    *cached_input;	/* the one input holding a read block */
} S3Store;

struct S3Input
{
	LpInput		base;
	S3Store    *store;
	char	   *bucket;
	char	   *key;
	char	   *name;
	uint8_t    *block;			/* LP_S3_READ_BLOCK * 2 bytes once read */
	uint64_t	block_offset;
	size_t		block_len;
	S3Piece   **pieces;			/* fetched ahead, LP_S3_READAHEAD_BYTES at most */
	size_t		num_pieces;
	size_t		pieces_capacity;
	size_t		piece_bytes;	/* their lengths summed */
	unsigned	generation;		/* prefetch calls so far */
};

typedef struct S3Output
{
	LpOutput	base;
	S3Store    *store;
	char	   *bucket;
	char	   *key;
	char	   *name;
	uint64_t	written;		/* the next output offset */
	uint8_t    *buffer;			/* BUFFER_CAPACITY bytes once written */
	size_t		buffer_len;
	LpS3Multipart *upload;
	/* the pending copy run: its source and range, len 0 for none */
	char	   *copy_bucket;
	char	   *copy_key;
	uint64_t	copy_source_size;
	uint64_t	copy_offset;
	uint64_t	copy_len;
	bool		numbered;		/* parts go by number (lp_s3_output_start_parts) */
} S3Output;

/* ---- lp_s3_objects.c ---- */

/* key + "/": the prefix of what lies under key (lp_alloc'd) */
char	   *lp_s3_prefix_of(const char *key);

/* Called with each page of a listing. */
typedef bool (*LpS3ListPageCallback) (void *arg, const LpS3ListObjects *page, LpError *err);

/*
 * ListObjectsV2 of prefix, page by page (with delimiter "/" when given);
 * max_keys NULL for the server's default.  A missing bucket is
 * LP_ERR_NOT_FOUND.
 */
bool		lp_s3_list_pages(S3Store *store, const char *bucket, const char *prefix,
							 const char *delimiter, const char *max_keys,
							 LpS3ListPageCallback callback, void *arg, LpError *err);

/* Whether any object lies under key + "/" (the whole bucket for key ""). */
bool		lp_s3_prefix_exists(S3Store *store, const char *bucket, const char *key, bool *exists,
								LpError *err);

/*
 * HEAD bucket/key: *found, and when found its size and time in *stat;
 * false with err when the request failed.
 */
bool		lp_s3_head_object(S3Store *store, const char *bucket, const char *key, bool *found,
							  LpStat *stat, LpError *err);

/* LpStoreOps.stat of bucket/key (a prefix with objects under it is a directory). */
bool		lp_s3_stat_parsed(S3Store *store, const char *bucket, const char *key,
							  LpStat *result, LpError *err);

/*
 * PUT data as bucket/key (name for messages), with "If-None-Match: *" when
 * if_absent.
 */
bool		lp_s3_put_object(S3Store *store, const char *bucket, const char *key, const char *name,
							 const void *data, size_t len, bool if_absent, LpError *err);

/* Exactly len bytes at offset of the object bucket/key of size bytes, by a ranged GET. */
bool		lp_s3_get_range(S3Store *store, const char *bucket, const char *key, uint64_t size,
							uint64_t offset, void *buffer, size_t len, LpError *err);

/* The Range header of a GET of len bytes at offset. */
void		lp_s3_format_range(char *range, size_t size, uint64_t offset, size_t len);

/*
 * Whether response (of a successful ranged GET) is exactly len bytes at
 * offset of an object of size bytes; else err, and the response cleared.
 */
bool		lp_s3_check_range_answer(const char *bucket, const char *key, uint64_t size,
									 uint64_t offset, size_t len, LpS3HttpResponse *response,
									 LpError *err);

/* A failed ranged GET's message says when the object became shorter. */
void		lp_s3_explain_short_object(uint64_t size, LpError *err);

/* ---- lp_s3_input.c ---- */

/*
 * input as an S3 input whose bytes store copies on the server (an input of
 * store, or of another store of the same endpoint and account), or NULL.
 */
S3Input    *lp_s3_input_copyable(S3Store *store, LpInput *input);

/* LpStoreOps.open_input and open_input_lazily of the S3 store. */
LpInput    *lp_s3_open_input(LpStore *store, const char *path, LpError *err);
LpInput    *lp_s3_open_input_lazily(LpStore *store, const char *path, uint64_t size,
									LpError *err);

/* ---- lp_s3_output.c ---- */

/* LpStoreOps.create_output of the S3 store. */
LpOutput   *lp_s3_create_output(LpStore *store, const char *path, LpError *err);

#endif							/* LP_S3_STORE_INTERNAL_H */
