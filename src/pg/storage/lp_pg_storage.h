/*
 * lp_storage.h (PostgreSQL layer) - from user-supplied URIs to core storage
 * objects, with the privilege checks of COPY FROM/TO a server file.
 */
#ifndef LP_PG_STORAGE_H
#define LP_PG_STORAGE_H

#include "format/lp_file.h"
#include "dataset/lp_manifest.h"
#include "io/lp_storage.h"

/* Local path for a plain path or a file:// URI; ERROR for anything else. */
extern char *lp_local_path_from_uri(const char *uri);
/* The same for a path to be written or removed (what it is, for the message): absolute only. */
extern char *lp_local_write_path_from_uri(const char *uri, const char *what);

/* Resolve a path to its canonical absolute form; ERROR if it does not exist. */
extern char *lp_resolve_existing_path(const char *path, const char *what);

/*
 * The path of a base of the manifest and the directory its data files go to
 * (lp_base_data_dir): the dataset root as given, a registered base path
 * resolved to its canonical local path; ERROR for an unknown base id.
 */
extern void lp_resolve_base(const LpManifest *manifest, bool has_base_id,
							int32 base_id, const char *dataset_root,
							char **base_path, char **data_dir);

/* ERROR (42501) unless the user may read, or write, server files. */
extern void lp_check_read_privilege(void);
extern void lp_check_write_privilege(void);

/* Open a file for reading through fd.c; NULL with err filled on failure. */
extern LpInput *lp_local_input_open(const char *path, LpError *err);

/*
 * An input of a file already validated at this size, opened on first read
 * and closed when another such input is read; it fails if the size changed.
 */
extern LpInput *lp_local_input_reopenable(const char *path, uint64_t size);

/*
 * The block size at which an output at output_path could share extents with
 * every part (XFS or btrfs, all on the same filesystem), or 0.  Whether the
 * filesystem really clones is only known by trying: lp_local_output_clone.
 */
extern uint64 lp_local_clone_alignment(const char *output_path,
									   const char *const *part_paths, int num_parts);

/* Clone a block-aligned range of input into output (FICLONERANGE); false if refused. */
extern bool lp_local_output_clone(LpOutput *output, uint64 output_offset,
								  LpInput *input, uint64 input_offset, uint64 len);

/* The local filesystem as a core store (fd.c underneath). */
extern LpStore *lp_local_store(void);

/* Check privileges, open uri and read its Lance metadata; ERROR on failure. */
extern LpFile *lp_open_lance_file(const char *uri);

/* Read the Lance metadata of a local path (privileges already checked). */
extern LpFile *lp_read_lance_file(const char *path);

#endif							/* LP_PG_STORAGE_H */
