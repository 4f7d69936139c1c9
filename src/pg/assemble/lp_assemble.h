/*
 * lp_assemble.h - writing one Lance data file from complete part files.
 */
#ifndef LP_ASSEMBLE_H
#define LP_ASSEMBLE_H

#include "fmgr.h"
#include "nodes/pg_list.h"
#include "utils/array.h"

#include "assemble/lp_assemble_request.h"
#include "format/lp_file.h"

/* The outcome of an assembly, as the SQL functions return it. */
typedef struct LpAssembleResult
{
	const char *status;			/* "written", "reused" or "unsupported" */
	const char *reason;			/* verdict name when unsupported, else NULL */
	char	   *message;		/* verdict message when unsupported, else NULL */
	const char *path;
	LpFileVersion version;
	uint64_t	num_rows;		/* written and reused only */
	uint64_t	size_bytes;
	List	   *reencoded;		/* 1-based positions of the parts re-encoded (int) */
} LpAssembleResult;

/*
 * Concatenate parts (a List of LpAssemblePart *) into output_path.  Parts
 * that cannot be concatenated give status "unsupported" and write nothing.
 * allow_reuse: a single compatible part that is the output itself is
 * "reused".
 */
extern void lp_assemble_file(const char *output_path, List *parts,
							 const LpAssembleTarget *target, bool allow_reuse,
							 LpAssembleResult *result);

/*
 * The on_unsupported argument of the SQL functions: true for 'reencode',
 * false for 'refuse'; anything else is an ERROR.
 */
extern bool lp_parse_on_unsupported(const char *value);

/*
 * Emit result as the one row of an assembly function (materialized SRF);
 * functions with a seventh column get the re-encoded parts' positions there.
 */
extern void lp_assemble_emit(FunctionCallInfo fcinfo, const LpAssembleResult *result);

/* Parts from a text[] of URIs and an optional bigint[] of expected rows. */
extern List *lp_parts_from_arrays(ArrayType *uris, ArrayType *expected_rows);

#endif							/* LP_ASSEMBLE_H */
