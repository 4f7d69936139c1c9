/*
 * lp_orphans.h - what crashes and lost races leave in a Lance dataset
 * directory, and which of it no version references.
 *
 * The references are read from every manifest in _versions/ (both naming
 * schemes, detached versions too): the data files and deletion files of
 * every fragment and the transaction file of every version.  An entry of one of the dataset's
 * areas is then classified by its name and type alone; ages, locks and the
 * removal itself are the caller's (the file system is the caller's).
 */
#ifndef LP_ORPHANS_H
#define LP_ORPHANS_H

#include <stdbool.h>
#include <stdint.h>

#include "base/lp_error.h"
#include "io/lp_storage.h"

/* The directories of a dataset that can hold orphans. */
typedef enum LpDatasetArea
{
	LP_AREA_DATA,				/* data/: data files, sidecar directories, temporary files */
	LP_AREA_STAGING,			/* data/_parts/: staging directories of targets */
	LP_AREA_VERSIONS,			/* _versions/: temporary files */
	LP_AREA_TRANSACTIONS,		/* _transactions/: transaction files, temporary files */
	LP_AREA_DELETIONS			/* _deletions/: deletion files, temporary files */
} LpDatasetArea;

#define LP_NUM_AREAS 5

typedef enum LpEntryType
{
	LP_ENTRY_FILE,				/* a regular file */
	LP_ENTRY_DIRECTORY,			/* a real directory (not a symlink to one) */
	LP_ENTRY_OTHER				/* a symlink, FIFO, socket or device */
} LpEntryType;

typedef enum LpOrphanKind
{
	LP_ORPHAN_TEMPORARY_FILE,
	LP_ORPHAN_TRANSACTION_FILE,
	LP_ORPHAN_DATA_FILE,
	LP_ORPHAN_SIDECAR_DIRECTORY,
	LP_ORPHAN_STAGING_DIRECTORY,
	LP_ORPHAN_DELETION_FILE,
	LP_ORPHAN_MULTIPART_UPLOAD	/* an upload of a store's list_uploads, not an entry */
} LpOrphanKind;

/* The staging root below the data directory, one directory per target. */
#define LP_STAGING_DIR "_parts"

/* The area's directory, relative to the dataset root ("data/_parts"). */
const char *lp_area_directory(LpDatasetArea area);

/* "temporary_file", "transaction_file", ... (the SQL kind names). */
const char *lp_orphan_kind_name(LpOrphanKind kind);

/*
 * Whether an entry name is a temporary file of lance_parts'
 * local store: ".<final name, possibly shortened>.<pid>.<16 hex digits>.tmp".
 * *pid receives the pid of the backend that created it.
 */
bool		lp_temporary_file_name_parse(const char *entry_name, int64_t *pid);

typedef struct LpDatasetReferences LpDatasetReferences;

/*
 * Read every manifest of the dataset at root.  Fails when there is none
 * (LP_ERR_NOT_FOUND: not a dataset, so nothing in it may be called an
 * orphan), unless the root holds only what a first write that died before
 * its commit leaves (data/, and at most _versions/ and _transactions/): a
 * dataset with no version, whose every file is an orphan.  Fails too when
 * a manifest cannot be read (its references are unknown), and
 * for datasets with branches (LP_ERR_UNSUPPORTED: their manifests live
 * elsewhere and may reference the root's files).
 */
LpDatasetReferences *lp_references_read(LpStore *store, const char *root,
										LpError *err);

/*
 * Read the manifests that appeared since the references were read (new
 * versions committed meanwhile), adding their references.
 */
bool		lp_references_refresh(LpStore *store, const char *root,
								  LpDatasetReferences *refs, LpError *err);

/* Number of manifests read so far. */
uint64_t	lp_references_num_manifests(const LpDatasetReferences *refs);

void		lp_references_free(LpDatasetReferences *refs);

/*
 * Classify one entry (a name, not a path) of an area.  True when it is
 * something lance_parts or Lance writes there that no version references;
 * *kind says what, and for temporary files *writer_pid the process that
 * created it (-1 otherwise).  An entry of type LP_ENTRY_OTHER is classified
 * by its name, so that the caller can report it rather than remove it.
 * Everything else (referenced entries, names nobody of ours writes, the
 * staging root itself) is false.
 */
bool		lp_orphan_classify(const LpDatasetReferences *refs, LpDatasetArea area,
							   const char *entry_name, LpEntryType type,
							   LpOrphanKind *kind, int64_t *writer_pid);

/*
 * The data file name an orphan belongs to, for taking that target's lock:
 * the data file itself, "<sidecar directory>.lance", the staging
 * directory's name.  NULL for other kinds; allocated with lp_alloc
 * otherwise (NULL also when out of memory: check the kind).
 */
char	   *lp_orphan_target_file(LpOrphanKind kind, const char *entry_name);

#endif							/* LP_ORPHANS_H */
