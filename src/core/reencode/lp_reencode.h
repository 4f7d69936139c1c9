/*
 * lp_reencode.h - re-encoding the rows of a Lance data file into a new file
 * of a given version and schema: the fallback for parts that cannot be
 * joined by page copy (concat/lp_concat.h verdicts that decoding resolves,
 * lp_concat_reason_reencodable) and for compaction that drops deleted rows.
 *
 * Every row of the source, or only those a deletion bitmap leaves live, is
 * decoded in batches of top-level rows (decode/lp_decode.h takes) and
 * written through the file writer (encode/lp_file_writer.h), so memory is
 * bounded by one batch plus the writer's pages, whatever the number of rows.
 * Fields are matched by name: every top-level field of the target schema
 * must be a top-level field of the source with the same types in its whole
 * subtree (field ids and the order of top-level fields may differ); source
 * fields the target lacks are an error, not dropped.  The cancel hook is
 * polled between batches; a progress callback sees the rows written.
 *
 * Several sources can be written into one file, in order (compaction of a
 * group with Blob v2 columns).  A top-level Blob v2 field of the target
 * (2.2 and later) is written from the source's descriptors: Inline payloads
 * are read from the source (their range checked against its size) and
 * written into the new file, whose offsets the descriptors then name;
 * Packed and Dedicated blob ids are moved by the source's blob_id_offset
 * (the caller moves their sidecars alike); External descriptors are kept.
 */
#ifndef LP_REENCODE_H
#define LP_REENCODE_H

#include <stdbool.h>
#include <stdint.h>

#include "base/lp_error.h"
#include "format/lp_deletion.h"
#include "format/lp_file.h"
#include "format/lp_schema.h"
#include "io/lp_storage.h"

/* Top-level rows decoded and written per batch, unless the caller sets one. */
#define LP_REENCODE_DEFAULT_BATCH_ROWS 8192

/* Called after every batch with the rows written so far and the total. */
typedef void (*LpReencodeProgress) (void *arg, uint64_t rows_done, uint64_t rows_total);

typedef struct LpReencodeOptions
{
	uint64_t	batch_rows;		/* 0: LP_REENCODE_DEFAULT_BATCH_ROWS */
	LpReencodeProgress progress;	/* may be NULL */
	void	   *progress_arg;

	/*
	 * Compaction by page copy writes the Blob v2 descriptor columns of the
	 * sources as a file of its own, copied whole into the compacted file:
	 * with only_schema_fields the source fields the schema lacks are left
	 * out, and inline_offset is added to the offsets of Inline payloads
	 * (where this file's bytes will lie in the compacted one).
	 */
	bool		only_schema_fields;
	uint64_t	inline_offset;
} LpReencodeOptions;

/* The file to re-encode, all borrowed. */
typedef struct LpReencodeSource
{
	LpInput    *input;
	const LpFile *file;			/* from lp_file_open over input */
	const LpDeletions *deletions;	/* rows left out; NULL: every row */
	uint32_t	blob_id_offset; /* added to its Packed and Dedicated blob ids */
} LpReencodeSource;

/*
 * Whether the rows of file can become rows of a file of schema: the field
 * match described above.  False with LP_ERR_UNSUPPORTED naming the file and
 * the field when they cannot; legacy files are refused the same way.
 */
bool		lp_reencode_check(const LpFile *file, const LpSchema *schema, LpError *err);

/*
 * Write the live rows of num_sources sources, one after the other and each in
 * order, as one complete file of schema and version into output (from offset
 * 0).  *rows and *file_size receive the rows and bytes written.  The output
 * stays the caller's: publish or abort it.  Fails with the checks of
 * lp_reencode_check, the decoder's and the writer's errors
 * (LP_ERR_UNSUPPORTED for what the encoder cannot write, such as lists in a
 * 2.0 file, or a blob id moved past 2^32 - 1), LP_ERR_CORRUPT for an Inline
 * range outside its source, LP_ERR_INVALID_ARGUMENT for a null in a field the
 * target declares non-nullable, and LP_ERR_CANCELED.
 */
bool		lp_reencode_files(const LpReencodeSource *sources, uint32_t num_sources,
							  const LpSchema *schema, LpFileVersion version, LpOutput *output,
							  const LpReencodeOptions *options, uint64_t *rows,
							  uint64_t *file_size, LpError *err);

#endif							/* LP_REENCODE_H */
