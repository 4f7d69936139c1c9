/*
 * lp_assemble_validate.h - the first phase of an assembly: every part opened
 * and checked, and the target it must fit, before anything is written.
 */
#ifndef LP_ASSEMBLE_VALIDATE_H
#define LP_ASSEMBLE_VALIDATE_H

#include "nodes/pg_list.h"

#include "assemble/lp_assemble_request.h"
#include "concat/lp_concat.h"
#include "format/lp_file.h"

/*
 * The parts of an assembly as the later phases join them: paths has
 * num_parts + 1 entries, each part's (a re-encoded part's new file once it
 * is re-encoded) and the donor's (or NULL); parts their files and expected
 * rows; target what the output must be.
 */
typedef struct LpAssembleInputs
{
	int			num_parts;
	LpConcatPart *parts;
	const char **paths;
	LpConcatTarget target;
	const char *root;			/* as in LpAssembleTarget */
} LpAssembleInputs;

/*
 * Open and validate every part of parts (a List of LpAssemblePart *) and
 * the donor of target, reporting each to lp_progress; the target's version
 * and schema, or part 0's.  ERROR when a part cannot be read.
 */
extern void lp_assemble_validate(List *parts, const LpAssembleTarget *target,
								 LpAssembleInputs *inputs);

/*
 * Why file cannot become (part of) a file of the given version and schema, as
 * a detail sentence, or NULL if it can; *reason receives the verdict
 * (blob_ids_leased as in LpAssembleTarget).  A
 * damaged file, or one without the expected rows, is an ERROR.
 */
extern char *lp_file_incompatibility(LpFileVersion version, const LpSchema *schema,
									 bool blob_ids_leased, const LpFile *file,
									 bool has_expected_rows, uint64_t expected_rows,
									 int *reason);

#endif							/* LP_ASSEMBLE_VALIDATE_H */
