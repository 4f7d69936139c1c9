/*
 * lp_concat_parts.h - a concatenation plan as the parts of one multipart
 * upload, for server-side assembly on object storage.
 *
 * When the output and the inputs live on one S3 endpoint, the output is one
 * multipart upload.  A copy part (UploadPartCopy) takes one contiguous byte
 * range of one input without its bytes passing through the client; a send
 * part (UploadPart) carries bytes the client sends.  The store limits the
 * parts: every part but the last has at least min_part_bytes, every part at
 * most max_part_bytes, and there are at most max_parts
 * (LP_MULTIPART_S3_LIMITS: 5 MiB, 5 GiB, 10,000).
 *
 * What the parts write.  Concatenated, the parts are the plan's output
 * (lp_concat.h) byte for byte, except at the plan's padding bytes: the bytes
 * of [0, tail.start) that no copy range covers.  The plan writes 0x48
 * there; a copy part that spans padding writes the input's own bytes at the
 * same distance instead.  Nothing in the output refers to padding (page
 * buffers lie inside copy ranges, the tail starts at tail.start), and
 * readers do not check its contents, so these are the only "don't care"
 * bytes.  Send parts write exactly the plan's bytes (lp_concat_output_bytes),
 * padding included.  Every page buffer therefore keeps the output offset the
 * plan gave it (a multiple of 64: lp_concat_plan and lp_concat_plan_regions
 * both start every copy range on a 64-byte boundary, so no plan option is
 * needed; parts have no alignment of their own).
 *
 * The algorithm.
 *
 * 1. Segments.  The plan's ranges are grouped into segments: maximal runs
 *    of consecutive ranges of one input at one distance (dest - source), so
 *    that the padding between them lies, in the input, between the same
 *    bytes.  A segment may be copied as one source range; it extends over
 *    the padding that follows it (up to the next range or tail.start) as far
 *    as its input has bytes there: for a part's data region these are the
 *    part's own metadata, which is what keeps a copied region's successor
 *    64-byte aligned without uploaded padding.  Padding the input cannot
 *    cover is sent.  With lp_concat_plan_regions (alignment 64, the layout
 *    to use for object storage) every eligible part is one segment whose
 *    copy ends exactly where the next part's region starts; in a packed plan
 *    a part whose buffers are not 64-byte aligned in its file falls into
 *    several segments.
 *
 * 2. Layout, front to back.  A segment that may be copied (below: all of
 *    them, unless the part limit says otherwise) and has at least
 *    min_part_bytes is copied, split into the fewest copy parts of at most
 *    max_part_bytes (ceil(length / max), of nearly equal sizes, each at
 *    least max / 2 >= min).  Everything else (shorter segments, padding no
 *    input covers, the tail) accumulates into a pending send run.  When a
 *    copied segment follows a pending run shorter than min_part_bytes, the
 *    run takes the segment's first (min - run) bytes so it can stand as a
 *    part; if the segment's rest would then be shorter than
 *    min_part_bytes, the whole segment is sent instead.  A closed run is
 *    split into the fewest send parts of at most max_part_bytes, again of
 *    nearly equal sizes.  The last run (the tail and whatever precedes it)
 *    is the last part, exempt from the minimum; with a zero-length tail the
 *    last part may be a copy part, of any length.
 *
 * 3. Part limit.  Copying every segment that can be copied sends the
 *    least: the tail, segments shorter than min_part_bytes (merged with
 *    their neighbours into send parts), padding no input covers, and at
 *    most min_part_bytes per send run taken from the following copied
 *    segment.  If that needs more than max_parts parts, the segments are
 *    ranked longest first (earlier first among equals) and only the k
 *    top-ranked may be copied, for the largest k (binary search) whose
 *    layout fits: the shortest segments are sent, merged into send parts of
 *    up to max_part_bytes, and the longest still copied.  Sending
 *    everything needs ceil(output_size / max_part_bytes) parts; when even
 *    that exceeds max_parts, no layout fits and the result is
 *    LP_ERR_UNSUPPORTED.
 *
 * Time O(n log n) and memory O(n) for n copy ranges; nothing is read.
 */
#ifndef LP_CONCAT_PARTS_H
#define LP_CONCAT_PARTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/lp_error.h"
#include "concat/lp_concat.h"
#include "io/lp_storage.h"

/* A store's multipart rules: LpMultipartLimits of io/lp_storage.h. */

/* Amazon S3's rules (and those of servers that enforce them, e.g. Ceph RGW). */
#define LP_MULTIPART_S3_LIMITS \
	((LpMultipartLimits) {(uint64_t) 5 << 20, (uint64_t) 5 << 30, 10000})

typedef enum LpUploadPartKind
{
	LP_UPLOAD_PART_COPY,		/* UploadPartCopy of input bytes */
	LP_UPLOAD_PART_SEND			/* UploadPart of the plan's bytes */
} LpUploadPartKind;

/*
 * One part of the upload: output bytes [dest_offset, dest_offset + length).
 * A copy part takes them from input `input` at source_offset (within the
 * size the plan assumes for it); a send part's bytes are the plan's
 * (lp_concat_output_bytes), input and source_offset are 0.
 */
typedef struct LpUploadPart
{
	LpUploadPartKind kind;
	uint32_t	input;
	uint64_t	source_offset;
	uint64_t	dest_offset;
	uint64_t	length;			/* > 0 */
} LpUploadPart;

/* Parts in output order: part k is part number k + 1 of the upload. */
typedef struct LpUploadParts
{
	size_t		num_parts;
	LpUploadPart *parts;
	uint64_t	copied_bytes;	/* sum over copy parts */
	uint64_t	sent_bytes;		/* sum over send parts */
} LpUploadParts;

/*
 * The upload parts of plan under limits (see above).  False with
 * LP_ERR_INVALID_ARGUMENT for unusable limits, LP_ERR_UNSUPPORTED when no
 * layout fits in max_parts parts (the message says how many the output
 * needs at least), LP_ERR_NO_MEMORY.  Free with lp_concat_upload_parts_free.
 */
bool		lp_concat_upload_parts(const LpConcatPlan *plan,
								   const LpMultipartLimits *limits,
								   LpUploadParts **parts, LpError *err);
void		lp_concat_upload_parts_free(LpUploadParts *parts);

/*
 * The numbered parts output is written in: the upload parts above for an
 * output with multipart limits, else the data region in spans of
 * span_bytes (lp_concat_span_bytes) and the tail, each a part of the plan's
 * bytes (LP_UPLOAD_PART_SEND) that a copier writes with its kernel copies
 * (lp_concat_write_part).  Errors as lp_concat_upload_parts; free with
 * lp_concat_upload_parts_free.
 */
bool		lp_concat_output_parts(const LpConcatPlan *plan, const LpOutput *output,
								   uint64_t span_bytes, LpUploadParts **parts, LpError *err);

/*
 * Whether output can be written as parts by number through its store's part
 * writers (LpOutputOps.start_parts, LpStoreOps.open_part): every copy
 * part's input is one they copy (copies_part_from), and on an output with
 * multipart limits, whose part writers hold a part in memory, every other
 * part has at most read_batch_bytes or twice the minimum part size, and
 * some part is copied (else the output written front to back sends the same
 * bytes, as one PUT when it is small).  *num_copies: the copy parts among
 * them.
 */
bool		lp_concat_parts_by_number(const LpUploadParts *parts, LpInput *const *inputs,
									  LpOutput *output, size_t read_batch_bytes,
									  uint64_t *num_copies);

/*
 * Write one part into copier->output (a part writer, or any output): a
 * copy part in one copy_from (refused, LP_ERR_UNSUPPORTED: the plan's bytes
 * instead), a send part's data region bytes as lp_concat_copy_span writes
 * them and its tail bytes.  Parts may be written in any order and by any
 * process.
 */
bool		lp_concat_write_part(LpConcatCopier *copier, const LpUploadPart *part,
								 LpError *err);

/*
 * The plan's output bytes [offset, offset + len) into buffer: input bytes
 * of the copy ranges, padding and tail, exactly as lp_concat_execute writes
 * them (it is the same copier).  For the bytes of send parts, in pieces of
 * any size; inputs as for lp_concat_execute.
 */
bool		lp_concat_output_bytes(const LpConcatPlan *plan, LpInput *const *inputs,
								   uint64_t offset, void *buffer, size_t len,
								   LpError *err);

/*
 * Write the plan's whole output (data region and tail) to output front to
 * back, one upload part after another: a copy part through copy_from (an
 * input the output refuses to copy from, LP_ERR_UNSUPPORTED, is read and
 * written instead), a send part as lp_concat_output_bytes written in pieces
 * of at most batch_bytes.  On an output whose multipart limits the parts
 * were laid out by, the output's parts are these parts' bytes, so no copied
 * byte passes through the writer.  Does not publish.
 */
bool		lp_concat_write_upload_parts(const LpConcatPlan *plan,
										 const LpUploadParts *parts,
										 LpInput *const *inputs, LpOutput *output,
										 size_t batch_bytes, LpError *err);

#endif							/* LP_CONCAT_PARTS_H */
