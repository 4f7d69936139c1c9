/*
 * lp_assemble.h - writing one Lance data file from complete part files.
 */
#ifndef LP_ASSEMBLE_H
#define LP_ASSEMBLE_H

#include "fmgr.h"
#include "nodes/pg_list.h"

#include "format/lp_deletion.h"
#include "format/lp_file.h"

/*
 * One input of an assembly.  A part with deletions (compaction of a
 * fragment with a deletion file) contributes its live rows only, so it is
 * always re-encoded; expected_rows then counts its physical rows.
 */
typedef struct LpAssemblePart
{
	char	   *path;
	bool		has_expected_rows;
	int64		expected_rows;
	const LpDeletions *deletions;	/* NULL: every row */
} LpAssemblePart;

/*
 * What the output must be; NULL schema: part 0's version and schema.
 * dataset (or NULL) is what progress reports show.  reencode_dir (or NULL:
 * refuse, the default of the SQL functions) is the directory where parts
 * that cannot be joined by page copy are re-encoded before they are joined
 * (lp_concat_reason_reencodable); those files are removed again when the
 * assembly ends (also after an ERROR), with the directory itself when
 * reencode_dir_owned, and lie where cleanup_target or cleanup_orphans finds
 * them after a crash.  blob_ids_leased: the parts' Blob v2 columns are
 * copied (LpConcatTarget.blob_ids_leased), which the caller vouches for.
 * root (or NULL): the dataset root or base the output and the parts lie
 * below; every file below it is reached without following a symlink
 * (lp_store_for_uri_below).
 */
typedef struct LpAssembleTarget
{
	LpFileVersion version;
	const LpSchema *schema;
	const char *dataset;
	const char *reencode_dir;
	bool		reencode_dir_owned;
	bool		blob_ids_leased;	/* every part has a validated blob id lease */
	const char *root;

	/*
	 * Compaction of Blob v2 columns: the columns whose pages come from the
	 * file at donor_path instead of the parts (LpConcatTarget.replaced and
	 * donor), or NULL.  The output is then laid out packed, never cloned,
	 * so that the donor lands where its Inline offsets say.
	 */
	const bool *replaced_columns;
	const char *donor_path;
} LpAssembleTarget;

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

/* Parts from a text[] of URIs and an optional bigint[] of expected rows. */
extern List *lp_parts_from_arrays(ArrayType *uris, ArrayType *expected_rows);

#endif							/* LP_ASSEMBLE_H */
