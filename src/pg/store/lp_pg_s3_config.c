/*
 * lp_pg_s3_config.c - S3 settings from lance_fdw servers and credentials
 * from their user mappings: the validator's checks of those options, and the
 * lookup of the server and mapping that serve an s3:// URI.
 *
 * The server and the mapping are the grant: whoever has USAGE on the server
 * that serves a URI (server_covering: only servers the role trusts, or names)
 * and a user mapping of it may reach the URI with the mapping's credentials.
 * Because an endpoint makes the database server connect to a host of the
 * option-setter's choosing, only superusers and members of
 * LP_S3_ENDPOINT_ADMIN_ROLE may create or alter a server that has one.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/reloptions.h"
#include "access/table.h"
#include "catalog/pg_foreign_server.h"
#include "catalog/pg_user_mapping.h"
#include "commands/defrem.h"
#include "foreign/foreign.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/syscache.h"

#include "io/lp_s3_uri.h"
#include "base/lp_pg_compat.h"
#include "store/lp_pg_s3_config.h"

#define S3_REGION_MAX 63		/* LP_S3_SCOPE_NAME_MAX of the signer */
#define S3_DEFAULT_REGION "us-east-1"

static int	lp_s3_connect_timeout_ms = 10 * 1000;
static int	lp_s3_request_timeout_ms = 5 * 60 * 1000;
static int	lp_s3_max_retries = 5;
static int	lp_s3_retry_base_delay_ms = 100;
static int	lp_s3_retry_max_delay_ms = 10 * 1000;
static char *lp_s3_server_name = NULL;

void
LpS3ConfigInit(void)
{
	DefineCustomIntVariable("lance_parts.s3_connect_timeout",
							gettext_noop("Longest wait for a connection to an S3 endpoint."),
							gettext_noop("A connection not established in time is a network failure, which is retried."),
							&lp_s3_connect_timeout_ms,
							10 * 1000, 100, 60 * 60 * 1000,
							PGC_USERSET, GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomIntVariable("lance_parts.s3_request_timeout",
							gettext_noop("Longest time one S3 request may take, transfer included."),
							gettext_noop("0 means no limit. A request that takes longer is a network failure, which is retried."),
							&lp_s3_request_timeout_ms,
							5 * 60 * 1000, 0, INT_MAX,
							PGC_USERSET, GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomIntVariable("lance_parts.s3_max_retries",
							gettext_noop("Retries of an S3 request after network failures and 5xx or 429 answers."),
							NULL,
							&lp_s3_max_retries,
							5, 0, 100,
							PGC_USERSET, 0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("lance_parts.s3_retry_base_delay",
							gettext_noop("Wait before the first retry of an S3 request."),
							gettext_noop("Each further wait doubles, up to lance_parts.s3_retry_max_delay; each is drawn at random between half and all of that bound."),
							&lp_s3_retry_base_delay_ms,
							100, 1, 60 * 1000,
							PGC_USERSET, GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomIntVariable("lance_parts.s3_retry_max_delay",
							gettext_noop("Longest wait between two attempts of an S3 request."),
							NULL,
							&lp_s3_retry_max_delay_ms,
							10 * 1000, 1, 10 * 60 * 1000,
							PGC_USERSET, GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomStringVariable("lance_parts.s3_server",
							   gettext_noop("The lance_fdw server that serves the s3:// URIs its root contains, whoever owns it."),
							   gettext_noop("Empty: each URI is served by the server with the longest root containing it among those owned by the current role, a role it is a member of, or a superuser."),
							   &lp_s3_server_name,
							   "",
							   PGC_USERSET, 0,
							   NULL, NULL, NULL);
}

bool
lp_is_s3_uri(const char *uri)
{
	return strncmp(uri, LP_S3_URI_SCHEME, LP_S3_URI_SCHEME_LEN) == 0;
}

static bool
is_lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/*
 * Split an s3:// URI of form into bucket and key with io/lp_s3_uri, the one
 * parser of them; the problem it found otherwise.
 */
static LpS3UriProblem
split_s3_uri(const char *uri, LpS3UriForm form, LpS3Location *location, const char **detail)
{
	LpS3UriParts parts;
	LpS3UriProblem problem = lp_s3_uri_check(uri, form, &parts);

	*detail = parts.detail;
	if (problem == LP_S3_URI_VALID)
	{
		location->bucket = pnstrdup(parts.bucket, parts.bucket_len);
		location->key = pnstrdup(parts.key, parts.key_len);
	}
	return problem;
}

void
lp_s3_parse_location(const char *uri, LpS3Location *location)
{
	const char *detail;

	switch (split_s3_uri(uri, LP_S3_URI_OBJECT, location, &detail))
	{
		case LP_S3_URI_VALID:
			break;
		case LP_S3_URI_NOT_S3:
			ereport(ERROR,
					errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					errmsg("\"%s\" is not an s3:// URI", uri));
			break;
		case LP_S3_URI_CREDENTIALS:
			ereport(ERROR,
					errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					errmsg("an s3:// URI must not contain credentials"),
					errhint("Put credentials in a user mapping of the lance_fdw server whose root covers the URI."),
					errhidestmt(true));
			break;
		case LP_S3_URI_INVALID:
			ereport(ERROR,
					errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					errmsg("invalid s3:// URI \"%s\"", uri),
					errdetail_internal("%s", detail));
			break;
	}
}

/* ---- the validator's checks --------------------------------------------------- */

pg_noreturn static void
invalid_value(const char *option, const char *value, const char *detail)
{
	ereport(ERROR,
			errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			errmsg("invalid value for option \"%s\": \"%s\"", option, value),
			errdetail_internal("%s", detail));
}

static bool
is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool
is_host_char(char c)
{
	return is_lower_alnum(c) || (c >= 'A' && c <= 'Z') || c == '.' || c == '-';
}

/*
 * An endpoint: http:// or https://, a host name or a bracketed IPv6 address,
 * an optional port, nothing after but an optional '/'.  Requests are formed
 * from scheme, host and port alone, so a path, a query or a fragment would be
 * silently dropped: they are refused.  Sets *is_http for plain HTTP.
 */
static void
check_endpoint(const char *value, bool *is_http)
{
	const char *host;
	const char *port = NULL;
	const char *end;

	/* before anything that prints the value: it could hold a password */
	if (strchr(value, '@') != NULL)
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("option \"%s\" must not contain credentials", "endpoint"),
				errhint("Put credentials in a user mapping (options access_key_id and secret_access_key)."),
				errhidestmt(true));
	if (strncmp(value, "https://", 8) == 0)
	{
		*is_http = false;
		host = value + 8;
	}
	else if (strncmp(value, "http://", 7) == 0)
	{
		*is_http = true;
		host = value + 7;
	}
	else
		invalid_value("endpoint", value, "An endpoint is an http:// or https:// URL.");
	if (strpbrk(host, "?#") != NULL)
		invalid_value("endpoint", value, "An endpoint has no query and no fragment.");
	end = host + strcspn(host, "/");
	if (!(end[0] == '\0' || (end[0] == '/' && end[1] == '\0')))
		invalid_value("endpoint", value, "An endpoint has no path: requests name the bucket in the path or in the host name.");
	if (host[0] == '[')
	{
		const char *close = memchr(host, ']', end - host);

		if (close == NULL || close == host + 1)
			invalid_value("endpoint", value, "An IPv6 address is written in brackets.");
		for (const char *p = host + 1; p < close; p++)
			if (!isxdigit((unsigned char) *p) && *p != ':' && *p != '.')
				invalid_value("endpoint", value, "An IPv6 address consists of hexadecimal digits, colons and dots.");
		if (close + 1 < end && close[1] != ':')
			invalid_value("endpoint", value, "Only a port may follow the host.");
		port = close + 1 < end ? close + 2 : NULL;
	}
	else
	{
		const char *p = host;

		while (p < end && is_host_char(*p))
			p++;
		if (p == host)
			invalid_value("endpoint", value, "An endpoint names a host.");
		if (p < end && *p != ':')
			invalid_value("endpoint", value, "A host name consists of letters, digits, dots and hyphens.");
		port = p < end ? p + 1 : NULL;
	}
	if (port != NULL)
	{
		long		number = 0;

		if (port == end)
			invalid_value("endpoint", value, "A port is a number from 1 to 65535.");
		for (const char *p = port; p < end; p++)
		{
			if (!is_digit(*p) || p - port >= 5)
				invalid_value("endpoint", value, "A port is a number from 1 to 65535.");
			number = number * 10 + (*p - '0');
		}
		if (number < 1 || number > 65535)
			invalid_value("endpoint", value, "A port is a number from 1 to 65535.");
	}
}

/*
 * Region names go into the credential scope of every signature and, without
 * an endpoint, into the AWS host name: no dots, slashes or spaces.
 */
static void
check_region(const char *value)
{
	size_t		len = strlen(value);

	if (len == 0 || len > S3_REGION_MAX)
		invalid_value("region", value, "A region name has 1 to 63 characters.");
	for (const char *p = value; *p; p++)
		if (!is_host_char(*p) && *p != '_')
			invalid_value("region", value, "A region name consists of letters, digits, hyphens and underscores.");
	if (strchr(value, '.') != NULL)
		invalid_value("region", value, "A region name has no dots.");
}

static LpS3UrlStyle
parse_url_style(const char *value)
{
	if (strcmp(value, "path") == 0)
		return LP_S3_URL_PATH;
	if (strcmp(value, "virtual") == 0)
		return LP_S3_URL_VIRTUAL;
	invalid_value("url_style", value, "The URL style is \"path\" (https://endpoint/bucket/key) or \"virtual\" (https://bucket.endpoint/key).");
}

static bool
may_set_endpoint(void)
{
	Oid			admin = get_role_oid(LP_S3_ENDPOINT_ADMIN_ROLE, true);

	return superuser() || (OidIsValid(admin) && has_privs_of_role(GetUserId(), admin));
}

void
lp_s3_check_server_options(List *options)
{
	const char *root = NULL;
	const char *endpoint = NULL;
	const char *s3_option = NULL;
	bool		allow_http = false;
	ListCell   *cell;

	foreach(cell, options)
	{
		DefElem    *def = (DefElem *) lfirst(cell);

		if (strcmp(def->defname, "root") == 0)
			root = defGetString(def);
		else if (strcmp(def->defname, "endpoint") == 0)
			endpoint = defGetString(def);
		else if (strcmp(def->defname, "region") == 0)
			check_region(defGetString(def));
		else if (strcmp(def->defname, "url_style") == 0)
			(void) parse_url_style(defGetString(def));
		else if (strcmp(def->defname, "allow_http") == 0)
			allow_http = defGetBoolean(def);
		else
			continue;
		if (strcmp(def->defname, "root") != 0 && s3_option == NULL)
			s3_option = def->defname;
	}
	if (root != NULL && lp_is_s3_uri(root))
	{
		LpS3Location location;
		const char *detail;
		LpS3UriProblem problem = split_s3_uri(root, LP_S3_URI_ROOT, &location, &detail);

		if (problem == LP_S3_URI_CREDENTIALS)
			ereport(ERROR,
					errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					errmsg("option \"%s\" must not contain credentials", "root"),
					errhint("Put credentials in a user mapping (options access_key_id and secret_access_key)."),
					errhidestmt(true));
		if (problem != LP_S3_URI_VALID)
			invalid_value("root", root, detail);
	}
	else if (s3_option != NULL)
		ereport(ERROR,
				errcode(ERRCODE_FDW_DYNAMIC_PARAMETER_VALUE_NEEDED),
				errmsg("option \"%s\" needs an s3:// root", s3_option),
				errhint("The options endpoint, region, url_style and allow_http apply to servers whose root is s3://bucket or s3://bucket/prefix."));
	if (endpoint != NULL)
	{
		bool		is_http;

		if (!may_set_endpoint())
			ereport(ERROR,
					errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					errmsg("permission denied to set option \"%s\"", "endpoint"),
					errdetail("A server's endpoint is the host the database server connects to for its S3 requests."),
					errhint("Only superusers and members of the \"%s\" role may create or alter a lance_fdw server with an endpoint.",
							LP_S3_ENDPOINT_ADMIN_ROLE));
		check_endpoint(endpoint, &is_http);
		if (is_http && !allow_http)
			ereport(ERROR,
					errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					errmsg("endpoint \"%s\" uses plain HTTP", endpoint),
					errhint("Set option allow_http 'true' to allow unencrypted connections, where credentials and data travel readable."));
	}
}

/*
 * Credentials go into request headers (x-amz-security-token, the
 * Authorization header's credential): printable ASCII without spaces, so no
 * header can be split or added through them.  The value is never printed.
 */
static void
check_credential(const char *name, const char *value)
{
	if (value[0] == '\0')
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("option \"%s\" must not be empty", name),
				errhidestmt(true));
	for (const char *p = value; *p; p++)
		if (*p <= ' ' || *p > '~')
			ereport(ERROR,
					errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					errmsg("invalid value for option \"%s\"", name),
					errdetail("The value must consist of printable ASCII characters other than spaces."),
					errhidestmt(true));
}

void
lp_s3_check_mapping_options(List *options)
{
	bool		has_key_id = false;
	bool		has_secret = false;
	bool		has_token = false;
	ListCell   *cell;

	foreach(cell, options)
	{
		DefElem    *def = (DefElem *) lfirst(cell);

		check_credential(def->defname, defGetString(def));
		if (strcmp(def->defname, "access_key_id") == 0)
			has_key_id = true;
		else if (strcmp(def->defname, "secret_access_key") == 0)
			has_secret = true;
		else if (strcmp(def->defname, "session_token") == 0)
			has_token = true;
	}
	if (has_key_id != has_secret)
		ereport(ERROR,
				errcode(ERRCODE_FDW_DYNAMIC_PARAMETER_VALUE_NEEDED),
				errmsg("option \"%s\" needs option \"%s\"",
					   has_key_id ? "access_key_id" : "secret_access_key",
					   has_key_id ? "secret_access_key" : "access_key_id"),
				errhint("A user mapping has both an access key id and a secret access key, or neither (anonymous requests)."),
				errhidestmt(true));
	if (has_token && !has_key_id)
		ereport(ERROR,
				errcode(ERRCODE_FDW_DYNAMIC_PARAMETER_VALUE_NEEDED),
				errmsg("option \"%s\" needs options \"%s\" and \"%s\"",
					   "session_token", "access_key_id", "secret_access_key"),
				errhidestmt(true));
}

/* ---- the lookup --------------------------------------------------------------- */

static DefElem *
find_option(List *options, const char *name)
{
	ListCell   *cell;

	foreach(cell, options)
	{
		DefElem    *def = (DefElem *) lfirst(cell);

		if (strcmp(def->defname, name) == 0)
			return def;
	}
	return NULL;
}

static char *
option_value(List *options, const char *name)
{
	DefElem    *def = find_option(options, name);

	return def ? defGetString(def) : NULL;
}

/* Does root (bucket and prefix) contain location, on a segment boundary? */
static bool
root_covers(const LpS3Location *root, const LpS3Location *location)
{
	size_t		prefix_len = strlen(root->key);

	if (strcmp(root->bucket, location->bucket) != 0)
		return false;
	if (prefix_len == 0)
		return true;
	return strncmp(location->key, root->key, prefix_len) == 0 &&
		(location->key[prefix_len] == '\0' || location->key[prefix_len] == '/');
}

/* The root of a lance_fdw server, split, or false when it has no valid s3:// root. */
static bool
server_root(ForeignServer *server, LpS3Location *root_location)
{
	const char *root = option_value(server->options, "root");
	const char *detail;

	/* roots are checked when set; one that is not valid covers nothing */
	return root != NULL && lp_is_s3_uri(root) &&
		split_s3_uri(root, LP_S3_URI_ROOT, root_location, &detail) == LP_S3_URI_VALID;
}

/*
 * Whether the current role trusts the servers owner creates: its own, those
 * of a role it is a member of, and those of superusers.  Membership is
 * checked without the superuser shortcut, so that a superuser does not trust
 * every role's servers.
 */
static bool
trusts_owner(Oid owner)
{
	Oid			user = GetUserId();

	return owner == user || superuser_arg(owner) || is_member_of_role_nosuper(user, owner);
}

/* The lance_fdw server lance_parts.s3_server names, or NULL when it is empty. */
static ForeignServer *
named_server(void)
{
	ForeignServer *server;

	if (lp_s3_server_name == NULL || lp_s3_server_name[0] == '\0')
		return NULL;
	server = GetForeignServerByName(lp_s3_server_name, false);
	if (server->fdwid != GetForeignDataWrapperByName("lance_fdw", false)->fdwid)
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("server \"%s\" named by lance_parts.s3_server is not a lance_fdw server",
					   server->servername));
	return server;
}

/*
 * The lance_fdw server that serves location: the chosen server (a foreign
 * table's, else lance_parts.s3_server's) when its root covers it; otherwise
 * the trusted server (trusts_owner) whose s3 root is its longest prefix.
 * Servers of roles the user does not trust are never considered, so nobody
 * can take over the requests of others by creating a server with a longer
 * root.
 */
static ForeignServer *
server_covering(const char *uri, const LpS3Location *location, Oid chosen)
{
	ForeignDataWrapper *fdw = GetForeignDataWrapperByName("lance_fdw", false);
	ForeignServer *preferred = OidIsValid(chosen) ? GetForeignServer(chosen) : named_server();
	Relation	catalog;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	LpS3Location root_location;
	ForeignServer *best = NULL;
	ForeignServer *tie = NULL;
	ForeignServer *untrusted = NULL;
	size_t		best_len = 0;

	if (preferred != NULL && server_root(preferred, &root_location) &&
		root_covers(&root_location, location))
		return preferred;

	catalog = table_open(ForeignServerRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_foreign_server_srvfdw, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(fdw->fdwid));
	scan = systable_beginscan(catalog, InvalidOid, false, NULL, 1, &key);
	while (HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		ForeignServer *server = GetForeignServer(((Form_pg_foreign_server) GETSTRUCT(tuple))->oid);
		size_t		len;

		if (!server_root(server, &root_location) || !root_covers(&root_location, location))
			continue;
		if (!trusts_owner(server->owner))
		{
			untrusted = server;
			continue;
		}
		len = strlen(root_location.key);
		if (best == NULL || len > best_len)
		{
			best = server;
			best_len = len;
			tie = NULL;
		}
		else if (len == best_len)
			tie = server;
	}
	systable_endscan(scan);
	table_close(catalog, AccessShareLock);

	if (best == NULL && untrusted != NULL)
		ereport(ERROR,
				errcode(ERRCODE_UNDEFINED_OBJECT),
				errmsg("no lance_fdw server of a trusted owner has a root containing \"%s\"", uri),
				errdetail("Server \"%s\" contains it, but its owner \"%s\" is neither the current role, a role it is a member of, nor a superuser.",
						  untrusted->servername, GetUserNameFromId(untrusted->owner, false)),
				errhint("Name the server to use with SET lance_parts.s3_server."));
	if (best == NULL)
		ereport(ERROR,
				errcode(ERRCODE_UNDEFINED_OBJECT),
				errmsg("no lance_fdw server has a root containing \"%s\"", uri),
				errhint("Create a server with CREATE SERVER ... FOREIGN DATA WRAPPER lance_fdw OPTIONS (root 's3://%s') and a user mapping for it.",
						location->bucket));
	if (tie != NULL)
		ereport(ERROR,
				errcode(ERRCODE_DUPLICATE_OBJECT),
				errmsg("lance_fdw servers \"%s\" and \"%s\" have the same root, which contains \"%s\"",
					   best->servername, tie->servername, uri),
				errhint("Change or drop the root of one of them, or name the one to use with SET lance_parts.s3_server."));
	return best;
}

void
lp_s3_settings_for_uri(const char *uri, Oid server_id, LpS3Settings *settings)
{
	LpS3Location location;
	ForeignServer *server;
	HeapTuple	mapping;
	List	   *credentials = NIL;
	DefElem    *allow_http;
	const char *value;

	lp_s3_parse_location(uri, &location);
	server = server_covering(uri, &location, server_id);
	if (object_aclcheck(ForeignServerRelationId, server->serverid, GetUserId(), ACL_USAGE) != ACLCHECK_OK)
		ereport(ERROR,
				errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				errmsg("permission denied for foreign server \"%s\"", server->servername),
				errdetail("The server serves \"%s\".", uri),
				errhint("A role needs USAGE on the server and a user mapping of it to reach the URI."));

	settings->public_mapping = false;
	mapping = SearchSysCache2(USERMAPPINGUSERSERVER, ObjectIdGetDatum(GetUserId()),
							  ObjectIdGetDatum(server->serverid));
	if (!HeapTupleIsValid(mapping))
	{
		settings->public_mapping = true;
		mapping = SearchSysCache2(USERMAPPINGUSERSERVER, ObjectIdGetDatum(InvalidOid),
								  ObjectIdGetDatum(server->serverid));
	}
	if (!HeapTupleIsValid(mapping))
		ereport(ERROR,
				errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				errmsg("no user mapping for role \"%s\" or PUBLIC on foreign server \"%s\"",
					   GetUserNameFromId(GetUserId(), false), server->servername),
				errdetail("The server serves \"%s\".", uri),
				errhint("Create one with CREATE USER MAPPING ... SERVER %s OPTIONS (access_key_id '...', secret_access_key '...'), without options for anonymous requests.",
						quote_identifier(server->servername)));
	else
	{
		bool		isnull;
		Datum		datum = SysCacheGetAttr(USERMAPPINGUSERSERVER, mapping,
											Anum_pg_user_mapping_umoptions, &isnull);

		if (!isnull)
			credentials = untransformRelOptions(datum);
		ReleaseSysCache(mapping);
	}

	memset(&settings->config, 0, sizeof(settings->config));
	settings->server_name = pstrdup(server->servername);
	settings->root = pstrdup(option_value(server->options, "root"));
	value = option_value(server->options, "endpoint");
	settings->config.endpoint = value ? pnstrdup(value, strlen(value) - (value[strlen(value) - 1] == '/')) : NULL;
	value = option_value(server->options, "region");
	settings->config.region = pstrdup(value ? value : S3_DEFAULT_REGION);
	value = option_value(server->options, "url_style");
	settings->config.url_style = value ? parse_url_style(value)
		: settings->config.endpoint ? LP_S3_URL_PATH : LP_S3_URL_VIRTUAL;
	allow_http = find_option(server->options, "allow_http");
	settings->config.allow_http = allow_http ? defGetBoolean(allow_http) : false;
	settings->config.credentials.access_key_id = option_value(credentials, "access_key_id");
	settings->config.credentials.secret_access_key = option_value(credentials, "secret_access_key");
	settings->config.credentials.session_token = option_value(credentials, "session_token");
	settings->config.max_retries = (uint32) lp_s3_max_retries;
	settings->config.retry_base_delay_ms = (uint32) lp_s3_retry_base_delay_ms;
	settings->config.retry_max_delay_ms = (uint32) lp_s3_retry_max_delay_ms;
	settings->config.connect_timeout_ms = (uint32) lp_s3_connect_timeout_ms;
	settings->config.request_timeout_ms = (uint32) lp_s3_request_timeout_ms;
}
