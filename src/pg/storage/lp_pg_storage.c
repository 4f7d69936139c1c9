/*
 * lp_pg_storage.c - URIs given to SQL functions, their privilege checks, and
 * opening Lance files through the storage backends.
 */
#include "postgres.h"

#include "catalog/pg_authid.h"
#include "miscadmin.h"
#include "utils/acl.h"

#include "dataset/lp_dataset.h"
#include "dataset/lp_fragment.h"
#include "lp_pg_error.h"
#include "storage/lp_pg_storage.h"

static int
hex_digit_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * file:///abs/path (or file://localhost/abs/path) with %XX escapes, or a plain
 * path.  Relative plain paths are taken relative to the data directory, as
 * COPY FROM takes them; paths that are written or removed go through
 * lp_local_write_path_from_uri.
 */
char *
lp_local_path_from_uri(const char *uri)
{
	const char *path;
	char	   *result;
	char	   *out;

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

	result = palloc(strlen(path) + 1);
	out = result;
	while (*path)
	{
		if (path[0] == '%')
		{
			int			high = hex_digit_value(path[1]);
			int			low = high < 0 ? -1 : hex_digit_value(path[2]);

			if (low < 0 || (high == 0 && low == 0))
				ereport(ERROR,
						errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("invalid percent-escape in file URI \"%s\"", uri));
			*out++ = (char) (high * 16 + low);
			path += 3;
		}
		else
			*out++ = *path++;
	}
	*out = '\0';
	return result;
}

char *
lp_resolve_existing_path(const char *path, const char *what)
{
	char	   *resolved = realpath(path, NULL);
	char	   *result;

	if (resolved == NULL)
	{
		int			code = errno == ENOENT ? ERRCODE_UNDEFINED_FILE : ERRCODE_IO_ERROR;

		ereport(ERROR,
				errcode(code),
				errmsg("could not resolve %s \"%s\": %m", what, path));
	}
	result = pstrdup(resolved);
	free(resolved);
	return result;
}

void
lp_resolve_base(const LpManifest *manifest, bool has_base_id, int32 base_id,
				const char *dataset_root, char **base_path, char **data_dir)
{
	LpBaseLocation base;
	LpError		err;

	if (!lp_manifest_base(manifest, has_base_id, (uint32) base_id, dataset_root, &base, &err))
		lp_raise(&err);
	*base_path = base.path == NULL ? pstrdup(dataset_root)
		: lp_resolve_existing_path(lp_local_path_from_uri(base.path), "base path");
	*data_dir = lp_require_memory(lp_base_data_dir(*base_path, base.is_dataset_root));
}

/*
 * Like COPY TO, refuse relative paths for anything written or removed
 * (42602): the server's working directory is the data directory, where a
 * relative output would land.
 */
char *
lp_local_write_path_from_uri(const char *uri, const char *what)
{
	char	   *path = lp_local_path_from_uri(uri);

	if (!is_absolute_path(path))
		ereport(ERROR,
				errcode(ERRCODE_INVALID_NAME),
				errmsg("relative path not allowed for %s", what),
				errdetail("The path is \"%s\".", path),
				errhint("Give an absolute path or a file:// URI."));
	return path;
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

LpFile *
lp_open_lance_file(const char *uri)
{
	lp_check_read_privilege();
	return lp_read_lance_file(lp_local_path_from_uri(uri));
}

LpFile *
lp_read_lance_file(const char *path)
{
	LpInput    *input;
	LpFile	   *file;
	LpError		err;

	input = lp_local_input_open(path, &err);
	if (input == NULL)
		lp_raise(&err);
	file = lp_file_open(input, &err);
	lp_input_close(input);
	if (file == NULL)
		lp_raise(&err);
	return file;
}
