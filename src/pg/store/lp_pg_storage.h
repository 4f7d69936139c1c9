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
#include "dataset/lp_dataset.h"
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
 * lp_store_for_uri with a chosen lance_fdw server (a foreign table's own; InvalidOid:
 * none), which serves the s3:// URIs its root contains (lp_pg_s3_config.h).
 */
extern LpStore *lp_store_for_uri_via(const char *uri, Oid server, char **key);

/*
 * The key lp_store_for_uri gives for uri, without asking for its store (no
 * server is looked up): the form of an s3:// URI is checked (22023).
 */
extern char *lp_key_for_uri(const char *uri);

/*
 * The store of the files below root, a resolved dataset root or base path
 * (a key of its store), for everything read or written inside that tree:
 * locally no symlink below root is followed (lp_local_store_below), so
 * nothing a manifest, a target or a writer names inside it can lead out of
 * it; on S3 the store of root.
 */
extern LpStore *lp_store_below(const char *root);

/* The same, S3 roots served by a chosen server as lp_store_for_uri_via does. */
extern LpStore *lp_store_below_via(const char *root, Oid server);

/*
 * lp_store_for_uri, but below root (NULL: none) when uri and root are both
 * local: the store of uri confined to root as lp_store_below confines it.
 */
extern LpStore *lp_store_for_uri_below(const char *root, const char *uri, char **key);

/*
 * lp_store_for_uri for something to be written or removed (what it is, for
 * the message): absolute only (42602), as COPY TO takes it.
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
 * A dataset's latest manifest, or the one of a version, read as
 * lp_dataset_read_latest and lp_dataset_read_manifest do (NULL with *err),
 * refused (NULL with *err, LP_ERR_UNSUPPORTED) when its reader feature flags
 * have a bit lance_parts does not implement (lp_manifest_check_readable),
 * after which every base it names is checked (ERROR): that it has the form
 * of a dataset-like directory (XX001: locally an absolute path with at least
 * one name below "/" and no "..", on S3 a bucket and a prefix), and that
 * the user may read it as if it had named it directly (42501: the server's
 * USAGE and a user mapping on S3, with server as the chosen one;
 * pg_read_server_files locally).  The PostgreSQL layer reads manifests only
 * through these (test/tools/check_layers.sh, check "manifests"), so every
 * entry point (lance_fdw, IMPORT, targets, writers, compact, cleanup) makes
 * these checks.  Writers check the writer flags themselves
 * (lp_manifest_check_writable).
 */
extern LpManifest *lp_read_latest_manifest(LpStore *store, const char *root, Oid server,
										   LpManifestNaming *naming, LpError *err);
extern LpManifest *lp_read_manifest_version(LpStore *store, const char *root, Oid server,
											LpManifestNaming naming, uint64 version,
											LpError *err);

/*
 * The canonical path of a base of a manifest read by the above and the
 * directory its data files go to (lp_base_data_dir): the dataset root as
 * given, a registered base path resolved (lp_resolve_existing_path in its own
 * store, server chosen as above), which must be a directory (XX001); ERROR
 * for an unknown base id.
 */
extern void lp_resolve_base(const LpManifest *manifest, bool has_base_id,
							int32 base_id, const char *dataset_root, Oid server,
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
extern LpInput *lp_open_input_via(const char *uri, Oid server);

/* The same in lp_store_for_uri_below(root, uri). */
extern LpInput *lp_open_input_below(const char *root, const char *uri);

/* Open key of store for reading; ERROR on failure. */
extern LpInput *lp_open_input_in(LpStore *store, const char *key);

/* Check privileges, open uri and read its Lance metadata; ERROR on failure. */
extern LpFile *lp_open_lance_file(const char *uri);

/* Read the Lance metadata of a key (privileges already checked); ERROR on failure. */
extern LpFile *lp_read_lance_file(const char *key);
extern LpFile *lp_read_lance_file_via(const char *key, Oid server);

/* The same in lp_store_for_uri_below(root, key). */
extern LpFile *lp_read_lance_file_below(const char *root, const char *key);

#endif							/* LP_PG_STORAGE_H */
