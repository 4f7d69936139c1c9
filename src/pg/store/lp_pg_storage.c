/*
 * lp_pg_storage.c - URIs given to SQL functions and the store each names,
 * their privilege checks, and opening Lance files through the stores.
 */
#include "postgres.h"

#include "catalog/pg_authid.h"
#include "miscadmin.h"
#include "utils/acl.h"

#include "base/lp_alloc.h"
#include "base/lp_path.h"
#include "dataset/lp_dataset.h"
#include "dataset/lp_fragment.h"
#include "io/lp_s3_uri.h"
#include "base/lp_pg_error.h"
#include "store/lp_pg_local.h"
#include "store/lp_pg_s3.h"
#include "store/lp_pg_s3_config.h"
#include "store/lp_pg_storage.h"

/*
 * The local path of a file:// URI or a plain path; ERROR for anything else.
 * Applied to its own result it gives that result back.
 */
static char *
local_path_from_uri(const char *uri)
{
	const char *path;
	char	   *result;
	bool		bad;

	if (uri[0] == '\0')
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("file path must not be empty"));

	if (strncmp(uri, "file://", 7) != 0)
	{
		const char *colon = strstr(uri, "://");

		if (colon != NULL && strchr(uri, '/') > colon)
			ereport(ERROR,
					errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					errmsg("unsupported URI scheme in \"%s\"", uri),
					errhint("Use a local path or a file:// URI."));
		return pstrdup(uri);
	}

	path = uri + 7;
	if (strncmp(path, "localhost/", 10) == 0)
		path += 9;
	if (path[0] != '/')
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("file URI \"%s\" must name an absolute path on this server", uri));

	result = lp_percent_decoded(path, strlen(path), &bad);
	if (bad)
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("invalid percent-escape in file URI \"%s\"", uri));
	return lp_require_memory(result);
}

/*
 * Drop the trailing slashes of a key in place: "dir/" and "dir//" name
 * "dir", so that joining a name under them gives the same key as under
 * "dir".  The local root "/" stays "/"; "s3://bucket/" is "s3://bucket".
 */
static char *
without_trailing_slashes(char *key)
{
	size_t		len = strlen(key);
	size_t		keep = lp_is_s3_uri(key) ? strlen("s3://") + 1 : 1;

	while (len > keep && key[len - 1] == '/')
		key[--len] = '\0';
	return key;
}

LpStore *
lp_store_for_uri(const char *uri, char **key)
{
	return lp_store_for_uri_via(uri, InvalidOid, key);
}

LpStore *
lp_store_for_uri_via(const char *uri, Oid server, char **key)
{
	LpStore    *store;
	char	   *path;

	/* an S3 store's keys are its URIs */
	if (lp_is_s3_uri(uri))
	{
		/* the server is chosen for the key it will serve */
		path = without_trailing_slashes(pstrdup(uri));
		store = lp_pg_s3_store_for_uri(path, server);
	}
	else
	{
		path = without_trailing_slashes(local_path_from_uri(uri));
		store = lp_local_store();
	}
	if (key != NULL)
		*key = path;
	return store;
}

LpStore *
lp_store_below(const char *root)
{
	return lp_store_below_via(root, InvalidOid);
}

LpStore *
lp_store_below_via(const char *root, Oid server)
{
	if (lp_is_s3_uri(root))
		return lp_pg_s3_store_for_uri(root, server);
	return lp_local_store_below(local_path_from_uri(root));
}

LpStore *
lp_store_for_uri_below(const char *root, const char *uri, char **key)
{
	LpStore    *store = lp_store_for_uri(uri, key);

	if (root == NULL || lp_is_s3_uri(root) || !lp_is_local_store(store))
		return store;
	return lp_store_below(root);
}

char *
lp_key_for_uri(const char *uri)
{
	LpS3Location location;

	if (!lp_is_s3_uri(uri))
		return local_path_from_uri(uri);
	lp_s3_parse_location(uri, &location);
	return pstrdup(uri);
}

bool
lp_key_is_relative(const char *key)
{
	return !lp_is_s3_uri(key) && !is_absolute_path(key);
}

bool
lp_name_is_canonical(const char *name)
{
	char	   *canonical;

	if (lp_is_s3_uri(name))
		return lp_pg_s3_name_is_canonical(name);
	canonical = pstrdup(name);
	canonicalize_path(canonical);
	return is_absolute_path(name) && strcmp(canonical, name) == 0 &&
		!path_contains_parent_reference(name);
}

char *
lp_resolve_existing_path(LpStore *store, const char *key, const char *what)
{
	LpError		err;
	char	   *canonical = store->ops->canonical(store, key, what, &err);

	if (canonical == NULL)
		lp_raise(&err);
	return canonical;
}

void
lp_store_stat(LpStore *store, const char *key, bool follow_symlinks, LpStat *result)
{
	LpError		err;

	if (!store->ops->stat(store, key, follow_symlinks, result, &err))
		lp_raise(&err);
}

const char *
lp_absent_reason(void)
{
	return strerror(ENOENT);
}

/* Whether a path has a ".." name (path_contains_parent_reference expects canonical paths). */
static bool
has_parent_name(const char *path)
{
	const char *name = path;

	for (;;)
	{
		const char *slash = strchr(name, '/');
		size_t		len = slash != NULL ? (size_t) (slash - name) : strlen(name);

		if (len == 2 && strncmp(name, "..", 2) == 0)
			return true;
		if (slash == NULL)
			return false;
		name = slash + 1;
	}
}

/*
 * Refuse (XX001, naming the manifest and the base) a base path that does not
 * have the form of a dataset-like directory: locally an absolute path (or
 * file:// URI) without ".." names and with at least one name below "/"; on
 * S3 a bucket and a non-empty prefix without "." or ".." segments.  Other
 * schemes are refused when their store is asked for (0A000).
 */
static void
check_base_form(const LpManifest *manifest, uint32 id, const char *path)
{
	bool		valid;

	if (lp_is_s3_uri(path))
	{
		char	   *bucket;
		char	   *key;
		LpError		err;

		/* its message never prints a URI holding credentials */
		if (!lp_s3_split_uri(path, &bucket, &key, &err))
			ereport(ERROR,
					errcode(ERRCODE_DATA_CORRUPTED),
					errmsg("manifest file \"%s\" names an invalid s3:// URI as base path %u",
						   lp_manifest_file_name(manifest), id),
					errdetail_internal("%s", err.message));
		valid = key[0] != '\0';
		lp_free(bucket);
		lp_free(key);
	}
	else if (strstr(path, "://") != NULL && strncmp(path, "file://", 7) != 0)
		return;
	else
	{
		char	   *local = local_path_from_uri(path);
		bool		has_parent = has_parent_name(local);

		canonicalize_path(local);
		valid = is_absolute_path(local) && strcmp(local, "/") != 0 && !has_parent;
	}
	if (!valid)
		ereport(ERROR,
				errcode(ERRCODE_DATA_CORRUPTED),
				errmsg("manifest file \"%s\" names base path %u as \"%s\", which is not a dataset-like directory",
					   lp_manifest_file_name(manifest), id, path),
				errdetail("A base is an absolute path with at least one name below \"/\" and no \"..\", or an s3:// URI of a bucket and a prefix without \".\" or \"..\" segments."));
}

/*
 * Check every base a manifest names: its form (check_base_form), and that
 * the user may read it as if it were named directly (the USAGE and user
 * mapping of the server serving it on S3, with server as the chosen one;
 * pg_read_server_files for local paths).  A dataset is only as reachable
 * as the least reachable of its locations.
 */
static void
check_manifest_bases(const LpManifest *manifest, Oid server)
{
	size_t		num_bases = lp_manifest_num_bases(manifest);

	for (size_t i = 0; i < num_bases; i++)
	{
		LpBaseLocation base;
		uint32_t	id;
		char	   *key;

		lp_manifest_base_at(manifest, i, &id, &base);
		check_base_form(manifest, id, base.path);
		(void) lp_store_for_uri_via(base.path, server, &key);
		lp_check_read_privilege_for(key);
	}
}

/*
 * The checks of a manifest just read (NULL passes through): its reader
 * feature flags (NULL with *err: a newer Lance's feature may change what
 * every other field means), then its bases.
 */
static LpManifest *
checked_manifest(LpManifest *manifest, const char *root, Oid server, LpError *err)
{
	if (manifest == NULL)
		return NULL;
	if (!lp_manifest_check_readable(manifest, root, err))
	{
		lp_manifest_free(manifest);
		return NULL;
	}
	check_manifest_bases(manifest, server);
	return manifest;
}

LpManifest *
lp_read_latest_manifest(LpStore *store, const char *root, Oid server,
						LpManifestNaming *naming, LpError *err)
{
	return checked_manifest(lp_dataset_read_latest(store, root, naming, err), root, server,
							err);
}

LpManifest *
lp_read_manifest_version(LpStore *store, const char *root, Oid server,
						 LpManifestNaming naming, uint64 version, LpError *err)
{
	return checked_manifest(lp_dataset_read_manifest(store, root, naming, version, err), root,
							server, err);
}

void
lp_resolve_base(const LpManifest *manifest, bool has_base_id, int32 base_id,
				const char *dataset_root, Oid server, char **base_path, char **data_dir)
{
	LpBaseLocation base;
	LpError		err;

	if (!lp_manifest_base(manifest, has_base_id, (uint32) base_id, dataset_root, &base, &err))
		lp_raise(&err);
	if (base.path == NULL)
		*base_path = pstrdup(dataset_root);
	else
	{
		char	   *key;
		LpStore    *store = lp_store_for_uri_via(base.path, server, &key);
		LpStat		st;

		*base_path = lp_resolve_existing_path(store, key, "base path");
		lp_store_stat(store, *base_path, true, &st);
		if (st.kind != LP_OBJECT_DIRECTORY)
			ereport(ERROR,
					errcode(ERRCODE_DATA_CORRUPTED),
					errmsg("base path %d of dataset \"%s\" is \"%s\", which is not a directory",
						   base_id, dataset_root, *base_path),
					errdetail("Data files of a base are in its directory (or in its data directory)."));
	}
	*data_dir = lp_require_memory(lp_base_data_dir(*base_path, base.is_dataset_root));
}

/*
 * Like COPY TO, refuse relative paths for anything written or removed
 * (42602): the server's working directory is the data directory, where a
 * relative output would land.
 */
LpStore *
lp_store_for_write_uri(const char *uri, const char *what, char **key)
{
	char	   *path;
	LpStore    *store = lp_store_for_uri(uri, &path);

	if (lp_key_is_relative(path))
		ereport(ERROR,
				errcode(ERRCODE_INVALID_NAME),
				errmsg("relative path not allowed for %s", what),
				errdetail("The path is \"%s\".", path),
				errhint("Give an absolute path or a file:// URI."));
	*key = path;
	return store;
}

void
lp_check_read_privilege(void)
{
	if (!has_privs_of_role(GetUserId(), ROLE_PG_READ_SERVER_FILES))
		ereport(ERROR,
				errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				errmsg("permission denied to read Lance files"),
				errhint("Only roles with privileges of the \"%s\" role may read files on the server.",
						"pg_read_server_files"));
}

void
lp_check_write_privilege(void)
{
	if (!has_privs_of_role(GetUserId(), ROLE_PG_WRITE_SERVER_FILES))
		ereport(ERROR,
				errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				errmsg("permission denied to write Lance files"),
				errhint("Only roles with privileges of the \"%s\" role may write files on the server.",
						"pg_write_server_files"));
}

/* for s3:// the covering server's USAGE and user mapping are the grant */
void
lp_check_read_privilege_for(const char *uri)
{
	if (!lp_is_s3_uri(uri))
		lp_check_read_privilege();
}

void
lp_check_write_privilege_for(const char *uri)
{
	if (!lp_is_s3_uri(uri))
		lp_check_write_privilege();
}

LpFile *
lp_open_lance_file(const char *uri)
{
	lp_check_read_privilege_for(uri);
	return lp_read_lance_file(uri);
}

LpInput *
lp_open_input_for_uri(const char *uri)
{
	return lp_open_input_via(uri, InvalidOid);
}

LpInput *
lp_open_input_via(const char *uri, Oid server)
{
	char	   *key;
	LpStore    *store = lp_store_for_uri_via(uri, server, &key);

	return lp_open_input_in(store, key);
}

LpInput *
lp_open_input_below(const char *root, const char *uri)
{
	char	   *key;
	LpStore    *store = lp_store_for_uri_below(root, uri, &key);

	return lp_open_input_in(store, key);
}

LpInput *
lp_open_input_in(LpStore *store, const char *key)
{
	LpError		err;
	LpInput    *input = store->ops->open_input(store, key, &err);

	if (input == NULL)
		lp_raise(&err);
	return input;
}

/* Read input's Lance metadata and close it; ERROR on failure. */
static LpFile *
read_lance_file(LpInput *input)
{
	LpFile	   *file;
	LpError		err;

	file = lp_file_open(input, &err);
	lp_input_close(input);
	if (file == NULL)
		lp_raise(&err);
	return file;
}

LpFile *
lp_read_lance_file(const char *key)
{
	return lp_read_lance_file_below(NULL, key);
}

LpFile *
lp_read_lance_file_via(const char *key, Oid server)
{
	return read_lance_file(lp_open_input_via(key, server));
}

LpFile *
lp_read_lance_file_below(const char *root, const char *key)
{
	char	   *store_key;
	LpStore    *store = lp_store_for_uri_below(root, key, &store_key);

	return read_lance_file(lp_open_input_in(store, store_key));
}
