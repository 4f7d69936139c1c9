/*
 * lp_pg_storage.h - from user-supplied URIs to stores and keys, with the
 * privilege checks of COPY FROM/TO a server file.
 *
 * Nothing above this folder names a storage backend or touches a file
 * directly: every caller asks lp_store_for_uri for the store of a URI and
 * goes through its LpStoreOps (test/tools/check_layers.sh, check "storage").
 */
#ifndef LP_PG_STORAGE_H
#define LP_PG_STORAGE_H

#include "format/lp_file.h"
#include "dataset/lp_manifest.h"
#include "io/lp_storage.h"

/*
 * The store a URI names, and the key of the object in that store (*key,
 * unless key is NULL): a file:// URI (file:///abs/path or
 * file://localhost/abs/path, with %XX escapes) or a plain path (a relative
 * one is relative to the data directory, as COPY FROM takes it) chooses the
 * local store, whose keys are local paths; an s3://bucket/key URI the S3
 * store of the lance_fdw server covering it (lp_pg_s3), whose keys are the
 * URIs; any other scheme is an ERROR (0A000).  A key has no trailing slash
 * ("dir/" is "dir").  A key is a URI of its own store: lp_store_for_uri(key) gives the
 * same store and key back, so a key (a canonical name, a path joined under
 * one) travels alone, in a target or to a parallel worker.
 */
extern LpStore *lp_store_for_uri(const char *uri, char **key);

/*
 * The store of the files below root, a resolved dataset root or base path
 * (a key of its store), for everything read or written inside that tree:
 * locally no symlink below root is followed (lp_local_store_below), so
 * nothing a manifest, a target or a writer names inside it can lead out of
 * it; on S3 the store of root.
 */
extern LpStore *lp_store_below(const char *root);

/*
 * lp_store_for_uri, but below root (NULL: none) when uri and root are both
 * local: the store of uri confined to root as lp_store_below confines it.
 */
extern LpStore *lp_store_for_uri_below(const char *root, const char *uri, char **key);

/*
 * The same for something to be written or removed (what it is, for the
 * message): absolute only (42602), as COPY TO takes it.
 */
extern LpStore *lp_store_for_write_uri(const char *uri, const char *what, char **key);

/*
 * The canonical name of the existing file or directory key of store
 * (LpStoreOps.canonical; what names it in the message); ERROR (58P01) if
 * nothing is there.
 */
extern char *lp_resolve_existing_path(LpStore *store, const char *key, const char *what);

/*
 * Whether a key lp_store_for_uri gave is a relative local path (S3 keys
 * never are).
 */
extern bool lp_key_is_relative(const char *key);

/*
 * Whether name has the form of a canonical name of its store, without
 * looking at what is there: locally an absolute path with no ".", ".." or
 * empty names and no trailing slash; on S3 see lp_pg_s3_name_is_canonical.
 */
extern bool lp_name_is_canonical(const char *name);

/* What is at key (LpStoreOps.stat); ERROR if it cannot be examined. */
extern void lp_store_stat(LpStore *store, const char *key, bool follow_symlinks,
						  LpStat *result);

/* How messages word "nothing is at that path" (strerror(ENOENT), as %m gives it). */
extern const char *lp_absent_reason(void);

/*
 * The canonical path of a base of the manifest and the directory its data
 * files go to (lp_base_data_dir): the dataset root as given, a registered
 * base path resolved (lp_resolve_existing_path in its own store); ERROR for
 * an unknown base id.
 */
extern void lp_resolve_base(const LpManifest *manifest, bool has_base_id,
							int32 base_id, const char *dataset_root,
							char **base_path, char **data_dir);

/* ERROR (42501) unless the user may read, or write, server files. */
extern void lp_check_read_privilege(void);
extern void lp_check_write_privilege(void);

/*
 * The same for what a URI or key names: nothing for s3:// (the USAGE and
 * user mapping of its lance_fdw server, checked when its store is made, are
 * the grant), the role checks above for local files.
 */
extern void lp_check_read_privilege_for(const char *uri);
extern void lp_check_write_privilege_for(const char *uri);

/* Open the file a URI or key names, in its store, for reading; ERROR on failure. */
extern LpInput *lp_open_input_for_uri(const char *uri);

/* The same in lp_store_for_uri_below(root, uri). */
extern LpInput *lp_open_input_below(const char *root, const char *uri);

/* Open key of store for reading; ERROR on failure. */
extern LpInput *lp_open_input_in(LpStore *store, const char *key);

/* Check privileges, open uri and read its Lance metadata; ERROR on failure. */
extern LpFile *lp_open_lance_file(const char *uri);

/* Read the Lance metadata of a key (privileges already checked); ERROR on failure. */
extern LpFile *lp_read_lance_file(const char *key);

/* The same in lp_store_for_uri_below(root, key). */
extern LpFile *lp_read_lance_file_below(const char *root, const char *key);

#endif							/* LP_PG_STORAGE_H */
