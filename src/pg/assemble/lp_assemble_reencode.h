/*
 * lp_assemble_reencode.h - the re-encoding phase of an assembly: parts that
 * cannot be joined by page copy, or that have deletions, decoded and written
 * again as files of the target's version and schema, which the assembly
 * joins instead.
 */
#ifndef LP_ASSEMBLE_REENCODE_H
#define LP_ASSEMBLE_REENCODE_H

#include "nodes/pg_list.h"

#include "assemble/lp_assemble_request.h"
#include "assemble/lp_assemble_validate.h"
#include "format/lp_deletion.h"

typedef struct LpAssembleReencoder LpAssembleReencoder;

/*
 * The re-encoder of an assembly of num_parts parts into target's
 * reencode_dir (none: nothing can be re-encoded).  Its files are removed
 * by lp_assemble_reencoder_end or, after an ERROR, when the current memory
 * context goes, with the directory when target->reencode_dir_owned.
 */
extern LpAssembleReencoder *lp_assemble_reencoder_start(const LpAssembleTarget *target,
														int num_parts);

/* Whether the assembly has a re-encode directory. */
extern bool lp_assemble_can_reencode(const LpAssembleReencoder *reencoder);

/* Parts first .. first + count - 1 of the inputs, re-encoded together. */
typedef struct LpAssembleRun
{
	int			first;
	int			count;
} LpAssembleRun;

/*
 * Re-encode each of the runs of inputs (in order and disjoint; only the
 * live rows of the parts where deletions, NULL or an entry per part of
 * inputs, has an entry) as files of inputs->target in the re-encode
 * directory: one per run, or per piece of a long run re-encoded in
 * parallel (lance_parts.max_copy_workers).  The first part of each file's
 * parts takes its path and file in inputs, and the others are taken out of
 * inputs (their positions are still reported re-encoded).  Reports the
 * re-encoding phase to lp_progress.  ERROR, naming the parts, when they
 * cannot be re-encoded.
 */
extern void lp_assemble_reencode_runs(LpAssembleReencoder *reencoder, LpAssembleInputs *inputs,
									  const LpAssembleRun *runs, int num_runs,
									  const LpDeletions *const *deletions);

/*
 * The part to re-encode for a verdict: the part it names, or when that one
 * was re-encoded already, the first part not re-encoded yet; -1 when every
 * part was.
 */
extern int	lp_assemble_part_to_reencode(const LpAssembleReencoder *reencoder,
										 const LpConcatVerdict *verdict);

/* The 1-based position among the parts given of part index of the inputs. */
extern int	lp_assemble_reencoder_position(const LpAssembleReencoder *reencoder, int index);

/* Whether part index of the inputs was re-encoded. */
extern bool lp_assemble_reencoded(const LpAssembleReencoder *reencoder, int index);

/* The 1-based positions of the parts re-encoded, in the order they were (int). */
extern List *lp_assemble_reencoded_positions(const LpAssembleReencoder *reencoder);

/* Remove the re-encoded files (and an owned directory) now. */
extern void lp_assemble_reencoder_end(LpAssembleReencoder *reencoder);

#endif							/* LP_ASSEMBLE_REENCODE_H */
