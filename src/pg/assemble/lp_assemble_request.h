/*
 * lp_assemble_request.h - what an assembly is asked for: its parts and what
 * the output must be, as every phase of it reads them.
 */
#ifndef LP_ASSEMBLE_REQUEST_H
#define LP_ASSEMBLE_REQUEST_H

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

#endif							/* LP_ASSEMBLE_REQUEST_H */
