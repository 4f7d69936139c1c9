/*
 * lp_assemble.h - writing one Lance data file from complete part files.
 */
#ifndef LP_ASSEMBLE_H
#define LP_ASSEMBLE_H

#include "fmgr.h"
#include "nodes/pg_list.h"

#include "lp_file.h"

/* One input of an assembly. */
typedef struct LpAssemblePart
{
	char	   *path;
	bool		has_expected_rows;
	int64		expected_rows;
} LpAssemblePart;

/*
 * What the output must be; NULL schema: part 0's version and schema.
 * dataset (or NULL) is what progress reports show.
 */
typedef struct LpAssembleTarget
{
	LpFileVersion version;
	const LpSchema *schema;
	const char *dataset;
} LpAssembleTarget;

/*
 * Concatenate parts (a List of LpAssemblePart *) into output_path and emit
 * the one-row result (status, reason, path, version, num_rows, size_bytes)
 * into the function's materialized result.  allow_reuse: a single compatible
 * part that is the output itself is "reused".
 */
extern void lp_assemble_into(FunctionCallInfo fcinfo, const char *output_path,
							 List *parts, const LpAssembleTarget *target,
							 bool allow_reuse);

/* Parts from a text[] of URIs and an optional bigint[] of expected rows. */
extern List *lp_parts_from_arrays(ArrayType *uris, ArrayType *expected_rows);

#endif							/* LP_ASSEMBLE_H */
