/*
 * lp_target.h - targets: the final data file of a dataset, as a durable
 * jsonb value.
 *
 * A target records everything needed to use it later (in another session or
 * after a restart): the resolved dataset root and the dataset version it was
 * made at, the base and its resolved path, the data file's name and exact
 * file version, and the target schema.  It is signed with a key kept in the
 * data directory, so a modified value is refused, and every entry point
 * checks that it still resolves to the same dataset and base.
 */
#ifndef LP_TARGET_H
#define LP_TARGET_H

#include "nodes/pg_list.h"
#include "storage/lock.h"
#include "utils/jsonb.h"

#include "dataset/lp_dataset.h"
#include "format/lp_file.h"

#define LP_TARGET_FORMAT 1

typedef struct LpTarget
{
	char	   *dataset;		/* resolved dataset root */
	int64		dataset_version;	/* latest version when the target was made */
	char	   *dataset_tag;	/* identifies that version of that dataset */
	bool		has_base_id;	/* false: the dataset root */
	int32		base_id;
	char	   *base_path;		/* resolved path of the base */
	char	   *data_dir;		/* where the data file goes (<base>/data for roots) */
	char	   *file_name;		/* "<50 chars>.lance" */
	LpFileVersion file_version;
	List	   *columns;		/* requested top-level names (char *), NIL = all */
	LpSchema	schema;			/* the target's fields, pre-order */
} LpTarget;

/* Serialize and sign. */
extern Jsonb *lp_target_to_jsonb(const LpTarget *target);

/*
 * Parse, check well-formedness, signature and that every name and path is
 * one create_target would have given; ERROR (22023) otherwise.
 */
extern LpTarget *lp_target_from_jsonb(Jsonb *value);

/* <data_dir>/<file name> */
extern char *lp_target_data_file_path(const LpTarget *target);

/* <data_dir>/_parts/<file name>: where part writers may put their files */
extern char *lp_target_staging_dir(const LpTarget *target);

/* <data_dir>/<file name without .lance>: the data file's blob sidecars */
extern char *lp_target_sidecar_dir(const LpTarget *target);

/*
 * The same two directories relative to the target's base (base_path), for
 * removals that walk down from the base without following a symlink.
 */
extern char *lp_target_staging_dir_in_base(const LpTarget *target);
extern char *lp_target_sidecar_dir_in_base(const LpTarget *target);

/* The data directory relative to the base: "data" for a dataset root, else "". */
extern const char *lp_target_data_dir_in_base(const LpTarget *target);

/*
 * Check that the target still resolves to the dataset and base it was made
 * for; ERROR otherwise.  Returns the dataset's latest manifest (an
 * LpManifest *) and its naming scheme.
 */
/*
 * ERROR (42501) unless the user may read (and with write, write) the
 * target's dataset and base: lp_check_read_privilege_for and
 * lp_check_write_privilege_for of both.
 */
extern void lp_target_check_privileges(const LpTarget *target, bool write);

extern LpManifest *lp_target_check_binding(const LpTarget *target,
										   LpManifestNaming *naming);

/*
 * The lock that serializes commit, cleanup_target and cleanup_orphans on
 * one data file (its resolved path, as lp_target_data_file_path gives it).
 */
extern void lp_target_file_lock_tag(const char *data_file_path, LOCKTAG *tag);

/* Key of the target in the session registry. */
extern const char *lp_target_key(const LpTarget *target);

#endif							/* LP_TARGET_H */
