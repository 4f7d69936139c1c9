/*
 * lp_pg_s3_config.h - where an s3:// URI is served from, and with which
 * credentials: lance_fdw servers and user mappings.
 *
 * A lance_fdw server whose root is s3://bucket[/prefix] is the scope of its
 * settings (endpoint, region, url_style, allow_http); a user mapping of it
 * holds the credentials (access_key_id, secret_access_key, session_token).
 * A URI uses the server chosen for it (a foreign table's own server, else
 * the one setting lance_parts.s3_server names) when that server's root
 * contains it; otherwise, among the servers the current role trusts (owned
 * by itself, by a role it is a member of, or by a superuser), the one whose
 * root is its longest prefix, on segment boundaries.  A server of another
 * role thus never serves a role's requests unless the role names it.  USAGE
 * on that server and a user mapping (the user's own or PUBLIC) are the
 * grant, no pg_*_server_files role is needed.  The option
 * checks of the validator live here, beside the lookup that relies on them.
 *
 * Secrets never appear in a message raised here: the values of user mapping
 * options are never printed, and errors about them leave the statement
 * that holds them out of the server log.
 */
#ifndef LP_PG_S3_CONFIG_H
#define LP_PG_S3_CONFIG_H

#include "nodes/pg_list.h"

#include "io/lp_s3_transport.h"

/* The role whose members, besides superusers, may set a server's endpoint. */
#define LP_S3_ENDPOINT_ADMIN_ROLE "lance_parts_endpoint_admin"

/* An s3://bucket/key URI, split. */
typedef struct LpS3Location
{
	char	   *bucket;
	char	   *key;			/* "" for the bucket itself; no trailing '/' in a root */
} LpS3Location;

typedef struct LpS3Settings
{
	char	   *server_name;
	char	   *root;			/* the server's root option, as given */
	bool		public_mapping; /* the mapping used is PUBLIC's, not the user's own */

	/*
	 * For the S3 client, its strings palloc'd: endpoint without a trailing
	 * '/' (NULL: AWS), region "us-east-1" unless set, URL style path with an
	 * endpoint and virtual without unless set; credentials NULL when the
	 * mapping has none (anonymous requests); retries and timeouts from the
	 * lance_parts.s3_* settings.
	 */
	LpS3Config	config;
} LpS3Settings;

/* Define the lance_parts.s3_* settings (retries and timeouts). */
extern void LpS3ConfigInit(void);

/* Is uri an s3:// URI (whatever its validity)? */
extern bool lp_is_s3_uri(const char *uri);

/*
 * Split an s3://bucket[/key] URI (io/lp_s3_uri, the one parser of them) for
 * the lookup of its server; ERROR (22023) naming it and the rule it breaks
 * when it is not valid, without naming it when it holds credentials.
 */
extern void lp_s3_parse_location(const char *uri, LpS3Location *location);

/*
 * The settings and credentials for uri, from the lance_fdw server that
 * serves it (see above; server: the chosen one, InvalidOid for none but
 * lance_parts.s3_server): ERROR 42704 when no server's root covers it,
 * 42710 when two trusted servers have that root, 42501 naming the server
 * without USAGE on it or without a user mapping for the current user or
 * PUBLIC.
 */
extern void lp_s3_settings_for_uri(const char *uri, Oid server, LpS3Settings *settings);

/*
 * Validator checks: of a server's S3 options (root when it is an s3:// URI,
 * endpoint, region, url_style, allow_http, as one list since they depend on
 * each other; endpoint only for superusers and members of
 * LP_S3_ENDPOINT_ADMIN_ROLE), and of a user mapping's credentials.  ERROR on
 * the first problem.
 */
extern void lp_s3_check_server_options(List *options);
extern void lp_s3_check_mapping_options(List *options);

#endif							/* LP_PG_S3_CONFIG_H */
