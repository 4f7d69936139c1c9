/*
 * lp_concat.h - concatenation of complete encoded Lance files.
 *
 * Complete, compatible Lance v2 files ("parts") are joined into one ordinary
 * Lance file without decoding anything: page buffers are copied byte for
 * byte in input order, each to a 64-byte boundary (padding byte 0x48), page
 * offsets and priorities are relocated, and a new metadata tail is written
 * (lance-format.md §3.7, §3.8).  Three steps:
 *
 * 1. lp_concat_check: compatibility of the opened parts with a target
 *    (exact version and schema).  Parts that cannot be concatenated give a
 *    verdict, so the caller can fall back; damaged parts give an error.
 * 2. lp_concat_plan: runs the check, then computes every byte of the output
 *    before anything is written: the copy ranges, the padding (every byte
 *    of [0, tail.start) not covered by a range is 0x48) and the metadata
 *    tail.
 * 3. lp_concat_execute: runs a plan serially into an LpOutput, in bounded
 *    memory, and polls lp_check_cancel() between batches.  It neither
 *    publishes nor aborts the output; the caller does, so it controls the
 *    temporary file.  Parallel executors write disjoint spans of the data
 *    region with lp_concat_copy_span (any order, any process) and the tail
 *    last with lp_concat_write_tail; the bytes are the same.
 *
 * On filesystems that share extents between files (reflink: XFS, btrfs),
 * lp_concat_plan_regions keeps each part's data region whole at a block
 * boundary of the output, so that a kernel-side copy clones it instead of
 * copying bytes.
 *
 * Reuse ("a single compatible input is the requested output") is decided by
 * the caller: with one part whose path is the output path, a compatible
 * verdict means nothing needs to be written.  Paths are the storage layer's
 * business, so the core does not compare them.
 */
#ifndef LP_CONCAT_H
#define LP_CONCAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/lp_error.h"
#include "format/lp_file.h"
#include "format/lp_file_tail.h"
#include "io/lp_storage.h"

#define LP_CONCAT_DEFAULT_READ_BATCH_BYTES ((size_t) 16 * 1024 * 1024)

/* verdict.input / verdict.column when the reason names none */
#define LP_CONCAT_NONE UINT32_MAX

typedef enum LpConcatReason
{
	LP_CONCAT_COMPATIBLE = 0,
	LP_CONCAT_LEGACY_VERSION,
	LP_CONCAT_VERSION_MISMATCH,
	LP_CONCAT_SCHEMA_MISMATCH,
	LP_CONCAT_COLUMN_LAYOUT_MISMATCH,
	LP_CONCAT_COLUMN_ENCODING_MISMATCH,
	LP_CONCAT_COLUMN_BUFFERS,
	LP_CONCAT_EXTRA_GLOBAL_BUFFERS,
	LP_CONCAT_BLOB_COLUMNS,
	LP_CONCAT_BYTES_AS_LISTS
} LpConcatReason;

typedef struct LpConcatVerdict
{
	LpConcatReason reason;
	uint32_t	input;			/* part index, or LP_CONCAT_NONE */
	uint32_t	column;			/* physical column, or LP_CONCAT_NONE */
	uint64_t	count;			/* buffers found; columns found for a layout mismatch */
	uint64_t	expected_count; /* columns expected, for a layout mismatch */
	LpFileVersion actual;		/* version mismatch: the part's version */
	LpFileVersion expected;		/* version mismatch: the target's version */
	const char *field_name;		/* blob columns: a blob field of the target;
								 * bytes as lists: the part's field */
	bool		blob_v2;		/* blob columns: field_name is a Blob v2 field,
								 * which parts with leases could fill */
} LpConcatVerdict;

/*
 * What the output must be.  For a raw concatenation the target is part 0's
 * version and schema.  The output's schema buffer is taken from part 0
 * (with the row count replaced): it is semantically equal to the target's.
 * A target schema from a manifest describes a Blob v2 field with its
 * logical children (data, uri) where a file footer has the childless
 * struct and the descriptor's pseudo-fields (lance-format.md §6.5); parts
 * are compared in that footer form, which the output keeps.
 */
typedef struct LpConcatTarget
{
	LpFileVersion version;
	const LpSchema *schema;

	/*
	 * Every part carries a blob id lease its descriptors were validated
	 * against (dataset/lp_blob_validate.h) and wrote its sidecars into the
	 * output's own sidecar directory: Blob v2 columns are then copied page
	 * by page like any other column.  Otherwise they give the verdict
	 * LP_CONCAT_BLOB_COLUMNS; legacy (v1) blob columns always do.
	 */
	bool		blob_ids_leased;

	/*
	 * Columns whose pages come from a donor file instead of the parts
	 * (compaction rewrites Blob v2 descriptor columns): replaced[c] for
	 * each column, or NULL for none.  The donor holds the replaced columns,
	 * in order, for the rows of all parts; it is placed after the parts and
	 * copied whole from offset 0 to the end of its last page buffer, since
	 * its data region also holds bytes no page names (Inline payloads).
	 * Without a donor the plan lays out the parts alone, and its tail.start
	 * is where the donor's region will begin.  The donor is input
	 * num_parts of the plan.
	 */
	const bool *replaced;
	const LpFile *donor;
} LpConcatTarget;

typedef struct LpConcatPart
{
	const LpFile *file;			/* from lp_file_open; borrowed */
	bool		has_expected_rows;
	uint64_t	expected_rows;
} LpConcatPart;

/*
 * Check parts against the target, in order, and report the first reason
 * they cannot be concatenated (verdict->reason == LP_CONCAT_COMPATIBLE if
 * none).  Returns false with an error (not a verdict) for: no parts, a part
 * whose row count is not its expected count, metadata that does not
 * describe a complete rectangular file (column count not the one the schema
 * implies, page rows that do not add up to the file's rows, a 2.0 struct
 * header column without exactly one page), a buffer outside its file, zero
 * columns, arithmetic overflow.
 *
 * Row rule: every column's page rows add up to the file's rows, except in
 * 2.0 for columns under a list, whose pages count list items; those are not
 * checked (the item count is only known by decoding the list offsets).
 */
bool		lp_concat_check(const LpConcatTarget *target,
							const LpConcatPart *parts, uint32_t num_parts,
							LpConcatVerdict *verdict, LpError *err);

/*
 * Whether decoding the part a verdict names and encoding its rows again as
 * a file of the target's version and schema (reencode/lp_reencode.h) can
 * resolve the verdict: version, schema (fields matched by name), column
 * layout and encoding mismatches, column and extra global buffers, and
 * strings stored as lists of bytes.  Legacy v1 files (the decoder reads
 * none) and blob columns (their values live outside the page buffers) are
 * not; neither is a verdict that names no part.
 */
bool		lp_concat_reason_reencodable(const LpConcatVerdict *verdict);

/* "compatible", "legacy_version", "version_mismatch", ... */
const char *lp_concat_reason_name(LpConcatReason reason);

/*
 * A PostgreSQL-style message for the verdict, e.g.
 * input 2 ("a.lance") has file version 2.1, expected 2.2
 * parts must be the array the verdict was computed from.
 */
void		lp_concat_verdict_message(const LpConcatVerdict *verdict,
									  const LpConcatPart *parts,
									  char *buffer, size_t buffer_len);

/* One contiguous byte range copied from a part into the output. */
typedef struct LpCopyRange
{
	uint32_t	input;			/* part index */
	uint64_t	source_offset;
	uint64_t	dest_offset;
	uint64_t	length;			/* > 0 */
} LpCopyRange;

typedef struct LpConcatPlan
{
	LpFileVersion version;
	uint64_t	num_rows;
	uint32_t	num_inputs;
	uint64_t   *input_sizes;	/* per part: the file size the plan assumes */

	/*
	 * The output's columns: pages with output buffer positions, relocated
	 * priorities and the parts' encoding bytes (borrowed from the parts'
	 * LpFile, which must outlive the plan).
	 */
	uint32_t	num_columns;
	LpColumn   *columns;
	LpPage	   *page_storage;	/* behind columns[].pages */
	LpBufferRef *buffer_storage;	/* behind pages[].buffers */

	/*
	 * Copy ranges in output order, not overlapping.  Parts follow each other
	 * in order; within a part, buffers keep the order they have in its file
	 * (so both the part and the output are accessed front to back), each
	 * moved to a 64-byte boundary.  Ranges that are contiguous both in a
	 * part and in the output are merged.  Parallel executors may split them
	 * freely.
	 */
	size_t		num_ranges;
	LpCopyRange *ranges;

	/*
	 * 0 for the packed layout.  Otherwise lp_concat_plan_regions' alignment:
	 * num_region_parts parts were placed as whole regions (one range each,
	 * from source offset 0, at a multiple of region_alignment).
	 */
	uint64_t	region_alignment;
	uint32_t	num_region_parts;

	/* Global buffer 0 onwards, starting at tail.start (64-aligned). */
	LpFileTail	tail;
	uint64_t	output_size;	/* == tail.end */
} LpConcatPlan;

/*
 * Check the parts (as lp_concat_check) and, when they are compatible, plan
 * the output: *plan is set and verdict->reason is LP_CONCAT_COMPATIBLE.
 * When they are not, *plan is NULL and the verdict says why.  False on a
 * hard error (as lp_concat_check), and when the parts hold no rows at all.
 */
bool		lp_concat_plan(const LpConcatTarget *target,
						   const LpConcatPart *parts, uint32_t num_parts,
						   LpConcatVerdict *verdict, LpConcatPlan **plan,
						   LpError *err);
void		lp_concat_plan_free(LpConcatPlan *plan);

/*
 * As lp_concat_plan, but each part's data region (the bytes before its
 * schema buffer, holding all its page buffers) is copied whole to an output
 * offset that is a multiple of alignment (a power of two, at least 64, e.g.
 * the filesystem block size); its buffers keep their offsets relative to
 * that base.  The region is extended to the next multiple of alignment when
 * the part is that long, so it starts and ends on block boundaries of both
 * files.  The bytes between buffers that this copies along are never read
 * by a Lance reader.  A part with a page buffer at or after its schema
 * buffer is laid out packed, as lp_concat_plan does.
 */
bool		lp_concat_plan_regions(const LpConcatTarget *target,
								   const LpConcatPart *parts, uint32_t num_parts,
								   uint64_t alignment, LpConcatVerdict *verdict,
								   LpConcatPlan **plan, LpError *err);

/*
 * Write the plan's output: copy every range (output->ops->copy_from when
 * the output has it, otherwise reads of at most read_batch_bytes into one
 * reusable buffer and write_at), write the padding and the tail.  inputs[i]
 * is the LpInput of part i, of the size the plan assumes.  write_at is
 * called at increasing offsets within each batch, but not in output order
 * overall; every byte of [0, output_size) is written exactly once.
 */
bool		lp_concat_execute(const LpConcatPlan *plan, LpInput *const *inputs,
							  LpOutput *output, size_t read_batch_bytes,
							  LpError *err);

#define LP_CONCAT_PAD_CHUNK 4096

/*
 * The state of one process writing spans of a plan's data region: its
 * inputs (the sizes the plan assumes), its output (which may be another
 * process's file opened for writing) and one read buffer of at most
 * read_batch_bytes, allocated when first needed.
 */
typedef struct LpConcatCopier
{
	const LpConcatPlan *plan;
	LpInput    *const *inputs;
	LpOutput   *output;
	size_t		batch;			/* largest read, write or kernel copy */
	uint8_t    *buffer;
	size_t		buffer_len;
	uint8_t		padding[LP_CONCAT_PAD_CHUNK];
} LpConcatCopier;

/* Check the inputs against the plan and set up a copier; no allocation. */
bool		lp_concat_copier_init(LpConcatCopier *copier, const LpConcatPlan *plan,
								  LpInput *const *inputs, LpOutput *output,
								  size_t read_batch_bytes, LpError *err);
void		lp_concat_copier_free(LpConcatCopier *copier);

/*
 * Write output bytes [start, end) of the data region (end is clipped to
 * tail.start): the parts of copy ranges that fall into it and the padding
 * between them.  Spans may be written in any order and by different
 * copiers; together they must cover [0, tail.start) once.
 */
bool		lp_concat_copy_span(LpConcatCopier *copier, uint64_t start,
								uint64_t end, LpError *err);

/* Write the tail (global buffer 0 to the footer) at tail.start. */
bool		lp_concat_write_tail(const LpConcatPlan *plan, LpOutput *output,
								 LpError *err);

/*
 * A span size for parallel executors: about read_batch_bytes, and a
 * multiple of the plan's region alignment, so that every span of a region
 * starts on a block boundary in both files.
 */
uint64_t	lp_concat_span_bytes(const LpConcatPlan *plan, size_t read_batch_bytes);

#endif							/* LP_CONCAT_H */
