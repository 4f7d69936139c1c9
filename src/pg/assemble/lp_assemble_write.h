/*
 * lp_assemble_write.h - the last phase of an assembly: the plan of the
 * validated parts, and the output written by it and published.
 */
#ifndef LP_ASSEMBLE_WRITE_H
#define LP_ASSEMBLE_WRITE_H

#include "portability/instr_time.h"

#include "assemble/lp_assemble_validate.h"
#include "concat/lp_concat.h"
#include "io/lp_storage.h"

/*
 * The block size at which store can clone every part's data region into
 * place at output_path, or 0: the parts must be in that store, and a block
 * must keep the page buffers' alignment.
 */
extern uint64 lp_assemble_clone_alignment(LpStore *store, const LpAssembleInputs *inputs,
										  const char *output_path);

/*
 * The plan of inputs (regions at alignment, for clones; 0: packed) and its
 * verdict; ERROR when the parts cannot be read to make it.
 */
extern LpConcatPlan *lp_assemble_plan(const LpAssembleInputs *inputs, uint64 alignment,
									  LpConcatVerdict *verdict);

/*
 * Write the output of plan (a compatible one of inputs) at output_path of
 * store and publish it; its size in bytes.  The plan is freed.  Regions planned for clones are
 * planned packed again when the filesystem refuses the first clone.  The
 * output is written as the numbered parts its store lays it out in
 * (lp_copy_output_parts), or front to back where they cannot be.
 * started: when the assembly began, for the log.  ERROR on failure, with
 * the output aborted.
 */
extern uint64 lp_assemble_write(LpStore *store, const char *output_path,
								const LpAssembleInputs *inputs, LpConcatPlan *plan,
								instr_time started);

#endif							/* LP_ASSEMBLE_WRITE_H */
