-- S3 configuration in SQL: the validator's rules for lance_fdw server options
-- (root 's3://bucket[/prefix]', endpoint, region, url_style, allow_http) and
-- user mapping credentials; who may set an endpoint; which server an s3://
-- URI uses (the longest root on segment boundaries); USAGE and a user
-- mapping as the grant (42501 otherwise, naming the server); the PUBLIC
-- mapping as fallback; secrets in no message and no view a non-owner reads.
\set VERBOSITY terse

-- The outcome of a statement, with its error's detail, always rolled back:
-- probes that succeed leave nothing behind.
CREATE FUNCTION lp_test.attempt(statement text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    detail text;
BEGIN
    EXECUTE statement;
    RAISE EXCEPTION USING ERRCODE = 'LPTST';
EXCEPTION
    WHEN SQLSTATE 'LPTST' THEN
        RETURN 'ok';
    WHEN OTHERS THEN
        GET STACKED DIAGNOSTICS detail = PG_EXCEPTION_DETAIL;
        RETURN SQLSTATE || ': ' || SQLERRM || CASE WHEN detail <> '' THEN E'\n  ' || detail ELSE '' END;
END
$$;

SELECT rolname, rolcanlogin FROM pg_roles WHERE rolname = 'lance_parts_endpoint_admin';

-- ---- root ---------------------------------------------------------------------
CREATE TEMP TABLE root_case (label text, root text);
INSERT INTO root_case VALUES
    ('bucket', 's3://lp-bucket'),
    ('bucket and slash', 's3://lp-bucket/'),
    ('prefix', 's3://lp-bucket/data/events'),
    ('prefix and slash', 's3://lp-bucket/data/'),
    ('dots and digits', 's3://lp.bucket-01'),
    ('short', 's3://ab'),
    ('long', 's3://' || repeat('b', 64)),
    ('uppercase', 's3://LP-bucket'),
    ('underscore', 's3://lp_bucket'),
    ('leading hyphen', 's3://-lp-bucket'),
    ('trailing dot', 's3://lp-bucket.'),
    ('adjacent dots', 's3://lp..bucket'),
    ('ip address', 's3://192.168.10.20'),
    ('no bucket', 's3:///data'),
    ('empty segment', 's3://lp-bucket/a//b'),
    ('two slashes', 's3://lp-bucket//'),
    ('dot segment', 's3://lp-bucket/a/./b'),
    ('dot-dot segment', 's3://lp-bucket/a/../b'),
    ('long prefix', 's3://lp-bucket/' || repeat('k', 1025)),
    ('credentials', 's3://AKIDEXAMPLE:wJalrXUtnFEMI@lp-bucket/data');
SELECT label, regexp_replace(lp_test.attempt(format(
    'CREATE SERVER root_probe FOREIGN DATA WRAPPER lance_fdw OPTIONS (root %L)', root)),
    '(.)\1{9,}', '\1...', 'g') AS outcome  -- long runs shortened
FROM root_case;
DROP TABLE root_case;

-- ---- endpoint, region, url_style, allow_http ----------------------------------
CREATE TEMP TABLE server_case (label text, options text);
INSERT INTO server_case VALUES
    ('https host', $$endpoint 'https://s3.example.com'$$),
    ('https host, port, slash', $$endpoint 'https://s3.example.com:8443/'$$),
    ('ipv6', $$endpoint 'https://[::1]:9000'$$),
    ('http allowed', $$endpoint 'http://127.0.0.1:7480', allow_http 'true'$$),
    ('http not allowed', $$endpoint 'http://127.0.0.1:7480'$$),
    ('http, allow_http off', $$endpoint 'http://127.0.0.1:7480', allow_http 'off'$$),
    ('other scheme', $$endpoint 'ftp://s3.example.com'$$),
    ('no scheme', $$endpoint 's3.example.com'$$),
    ('no host', $$endpoint 'https://'$$),
    ('path', $$endpoint 'https://s3.example.com/s3'$$),
    ('query', $$endpoint 'https://s3.example.com/?x=1'$$),
    ('fragment', $$endpoint 'https://s3.example.com#f'$$),
    ('port 0', $$endpoint 'https://s3.example.com:0'$$),
    ('port too large', $$endpoint 'https://s3.example.com:65536'$$),
    ('port not a number', $$endpoint 'https://s3.example.com:https'$$),
    ('empty port', $$endpoint 'https://s3.example.com:'$$),
    ('bad host', $$endpoint 'https://s3_example.com'$$),
    ('unclosed ipv6', $$endpoint 'https://[::1:9000'$$),
    ('credentials', $$endpoint 'https://AKIDEXAMPLE:wJalrXUtnFEMI@s3.example.com'$$),
    ('region', $$region 'eu-west-1'$$),
    ('region with dot', $$region 'eu.west-1'$$),
    ('empty region', $$region ''$$),
    ('region with space', $$region 'eu west'$$),
    ('long region', format('region %L', repeat('r', 64))),
    ('path style', $$url_style 'path'$$),
    ('virtual style', $$url_style 'virtual'$$),
    ('other style', $$url_style 'vhost'$$),
    ('allow_http not boolean', $$allow_http 'maybe'$$),
    ('unknown option', $$bucket 'lp-bucket'$$);
SELECT label, regexp_replace(lp_test.attempt(format(
    'CREATE SERVER option_probe FOREIGN DATA WRAPPER lance_fdw OPTIONS (root %L, %s)',
    's3://lp-bucket', options)),
    '(.)\1{9,}', '\1...', 'g') AS outcome
FROM server_case;
DROP TABLE server_case;
-- S3 options need an s3:// root
SELECT lp_test.attempt($$CREATE SERVER option_probe FOREIGN DATA WRAPPER lance_fdw OPTIONS (region 'eu-west-1')$$);
SELECT lp_test.attempt($$CREATE SERVER option_probe FOREIGN DATA WRAPPER lance_fdw OPTIONS (root '/tmp', url_style 'path')$$);
SELECT lp_test.attempt($$CREATE SERVER option_probe FOREIGN DATA WRAPPER lance_fdw OPTIONS (root '/tmp', endpoint 'https://s3.example.com')$$);
-- the rules hold for ALTER too: the validator sees the options as they would be
CREATE SERVER alter_probe FOREIGN DATA WRAPPER lance_fdw
    OPTIONS (root 's3://lp-bucket', endpoint 'http://127.0.0.1:7480', allow_http 'true');
SELECT lp_test.attempt($$ALTER SERVER alter_probe OPTIONS (SET allow_http 'false')$$);
SELECT lp_test.attempt($$ALTER SERVER alter_probe OPTIONS (SET root '/tmp')$$);
SELECT lp_test.attempt($$ALTER SERVER alter_probe OPTIONS (DROP endpoint, SET allow_http 'false')$$);
SELECT srvoptions FROM pg_foreign_server WHERE srvname = 'alter_probe';
DROP SERVER alter_probe;

-- ---- user mappings --------------------------------------------------------------
CREATE SERVER mapping_probe FOREIGN DATA WRAPPER lance_fdw OPTIONS (root 's3://lp-bucket');
CREATE TEMP TABLE mapping_case (label text, options text);
INSERT INTO mapping_case VALUES
    ('keys', $$access_key_id 'AKIDEXAMPLE', secret_access_key 'MAPPING-SECRET-1'$$),
    ('keys and token', $$access_key_id 'AKIDEXAMPLE', secret_access_key 'MAPPING-SECRET-1', session_token 'MAPPING-TOKEN-1'$$),
    ('key id alone', $$access_key_id 'AKIDEXAMPLE'$$),
    ('secret alone', $$secret_access_key 'MAPPING-SECRET-1'$$),
    ('token alone', $$session_token 'MAPPING-TOKEN-1'$$),
    ('empty key id', $$access_key_id '', secret_access_key 'MAPPING-SECRET-1'$$),
    ('secret with space', $$access_key_id 'AKIDEXAMPLE', secret_access_key 'MAPPING SECRET-2'$$),
    ('token with line break', format('access_key_id %L, secret_access_key %L, session_token %L',
                                     'AKIDEXAMPLE', 'MAPPING-SECRET-1', E'MAPPING-TOKEN-3\r\nx-injected: 1')),
    ('non-ASCII secret', $$access_key_id 'AKIDEXAMPLE', secret_access_key 'MAPPING-SECRET-ä'$$),
    ('unknown option', $$password 'MAPPING-SECRET-4'$$);
SELECT label, lp_test.attempt(format(
    'CREATE USER MAPPING FOR CURRENT_USER SERVER mapping_probe OPTIONS (%s)', options)) AS outcome
FROM mapping_case;
-- no message names a secret
SELECT count(*) AS messages_with_secrets
FROM mapping_case,
     LATERAL lp_test.attempt(format(
         'CREATE USER MAPPING FOR CURRENT_USER SERVER mapping_probe OPTIONS (%s)', options)) AS o
WHERE o ~ 'MAPPING[- ]SECRET|MAPPING-TOKEN|x-injected';
DROP TABLE mapping_case;
-- ALTER is checked on the options as they would be
CREATE USER MAPPING FOR CURRENT_USER SERVER mapping_probe
    OPTIONS (access_key_id 'AKIDEXAMPLE', secret_access_key 'MAPPING-SECRET-5');
SELECT lp_test.attempt($$ALTER USER MAPPING FOR CURRENT_USER SERVER mapping_probe OPTIONS (DROP secret_access_key)$$);
SELECT lp_test.attempt($$ALTER USER MAPPING FOR CURRENT_USER SERVER mapping_probe OPTIONS (DROP access_key_id, DROP secret_access_key)$$);
DROP SERVER mapping_probe CASCADE;

-- ---- who may set an endpoint ---------------------------------------------------------
CREATE ROLE regress_s3_owner;
GRANT USAGE ON FOREIGN DATA WRAPPER lance_fdw TO regress_s3_owner;
SET ROLE regress_s3_owner;
-- an s3:// root names no server file: no pg_read_server_files needed
CREATE SERVER owned FOREIGN DATA WRAPPER lance_fdw OPTIONS (root 's3://owned-bucket', region 'eu-west-1');
-- a local root still does
CREATE SERVER owned_local FOREIGN DATA WRAPPER lance_fdw OPTIONS (root '/tmp');
-- an endpoint needs superuser or the role, at CREATE and at ALTER
CREATE SERVER owned_endpoint FOREIGN DATA WRAPPER lance_fdw OPTIONS (root 's3://owned-bucket/other', endpoint 'https://s3.example.com');
ALTER SERVER owned OPTIONS (ADD endpoint 'https://s3.example.com');
RESET ROLE;
GRANT lance_parts_endpoint_admin TO regress_s3_owner;
SET ROLE regress_s3_owner;
CREATE SERVER owned_endpoint FOREIGN DATA WRAPPER lance_fdw OPTIONS (root 's3://owned-bucket/other', endpoint 'https://s3.example.com');
ALTER SERVER owned OPTIONS (ADD endpoint 'https://s3.example.com');
RESET ROLE;
REVOKE lance_parts_endpoint_admin FROM regress_s3_owner;
SET ROLE regress_s3_owner;
-- the validator sees the resulting options, not what changed: a server with an
-- endpoint is altered by superusers and the role's members only ...
ALTER SERVER owned OPTIONS (SET region 'eu-west-2');
-- ... but its owner may drop the endpoint
ALTER SERVER owned OPTIONS (DROP endpoint);
ALTER SERVER owned OPTIONS (SET region 'eu-west-2');
RESET ROLE;
SELECT srvname, srvoptions FROM pg_foreign_server WHERE srvname LIKE 'owned%' ORDER BY srvname;
DROP SERVER owned;
DROP SERVER owned_endpoint;
REVOKE USAGE ON FOREIGN DATA WRAPPER lance_fdw FROM regress_s3_owner;
DROP ROLE regress_s3_owner;

-- ---- which server a URI uses ------------------------------------------------------------
CREATE SERVER s3_bucket FOREIGN DATA WRAPPER lance_fdw OPTIONS (root 's3://lp-bucket');
CREATE SERVER s3_data FOREIGN DATA WRAPPER lance_fdw
    OPTIONS (root 's3://lp-bucket/data/', endpoint 'http://127.0.0.1:7480/', allow_http 'true', region 'lab');
CREATE SERVER s3_deep FOREIGN DATA WRAPPER lance_fdw
    OPTIONS (root 's3://lp-bucket/data/deep', endpoint 'https://s3.example.com', url_style 'virtual');
CREATE SERVER s3_other FOREIGN DATA WRAPPER lance_fdw OPTIONS (root 's3://other-bucket/data');
CREATE SERVER local_root FOREIGN DATA WRAPPER lance_fdw OPTIONS (root '/tmp');
CREATE USER MAPPING FOR PUBLIC SERVER s3_bucket;
CREATE USER MAPPING FOR PUBLIC SERVER s3_data
    OPTIONS (access_key_id 'AKIDEXAMPLE', secret_access_key 'LOOKUP-SECRET-PUBLIC');
CREATE USER MAPPING FOR PUBLIC SERVER s3_deep
    OPTIONS (access_key_id 'AKIDEXAMPLE', secret_access_key 'LOOKUP-SECRET-PUBLIC', session_token 'LOOKUP-TOKEN');
CREATE USER MAPPING FOR PUBLIC SERVER s3_other;

CREATE TEMP TABLE uri_case (uri text);
INSERT INTO uri_case VALUES
    ('s3://lp-bucket/data/deep/events.lance'),
    ('s3://lp-bucket/data/deep'),
    ('s3://lp-bucket/data/deeper/events.lance'),
    ('s3://lp-bucket/data/x.lance'),
    ('s3://lp-bucket/data'),
    ('s3://lp-bucket/data/'),
    ('s3://lp-bucket/dat'),
    ('s3://lp-bucket/'),
    ('s3://lp-bucket'),
    ('s3://lp-bucket/other//key'),
    ('s3://other-bucket/data/t.lance'),
    ('s3://other-bucket/elsewhere'),
    ('s3://no-such-bucket/data');
SELECT u.uri, s.*
FROM uri_case u, LATERAL (SELECT * FROM lance_parts.s3_settings_for(u.uri)) s
WHERE lp_test.attempt(format('SELECT lance_parts.s3_settings_for(%L)', u.uri)) = 'ok';
SELECT uri, lp_test.attempt(format('SELECT lance_parts.s3_settings_for(%L)', uri))
FROM uri_case
WHERE lp_test.attempt(format('SELECT lance_parts.s3_settings_for(%L)', uri)) <> 'ok';
DROP TABLE uri_case;
-- URIs that are not valid, and no credentials echoed from one
SELECT lp_test.attempt($$SELECT lance_parts.s3_settings_for('s3://LP-bucket/data')$$);
SELECT lp_test.attempt($$SELECT lance_parts.s3_settings_for('s3://lp-bucket/data/../secret')$$);
SELECT lp_test.attempt($$SELECT lance_parts.s3_settings_for('s3://AKIDEXAMPLE:wJalrXUtnFEMI@lp-bucket/data')$$);
SELECT lp_test.attempt($$SELECT lance_parts.s3_settings_for('/tmp/data')$$);
-- two servers with one root: ambiguous, both named
CREATE SERVER s3_data_again FOREIGN DATA WRAPPER lance_fdw OPTIONS (root 's3://lp-bucket/data');
SELECT lp_test.attempt($$SELECT lance_parts.s3_settings_for('s3://lp-bucket/data/x.lance')$$);
DROP SERVER s3_data_again;

-- ---- USAGE and user mappings are the grant --------------------------------------------
CREATE ROLE regress_s3_user;
CREATE ROLE regress_s3_other;
SET ROLE regress_s3_user;
SELECT lp_test.attempt($$SELECT lance_parts.s3_settings_for('s3://lp-bucket/data/x.lance')$$);
RESET ROLE;
GRANT USAGE ON FOREIGN SERVER s3_data, s3_deep TO regress_s3_user, regress_s3_other;
DROP USER MAPPING FOR PUBLIC SERVER s3_data;
SET ROLE regress_s3_user;
SELECT lp_test.attempt($$SELECT lance_parts.s3_settings_for('s3://lp-bucket/data/x.lance')$$);
RESET ROLE;
-- the PUBLIC mapping serves roles without their own ...
SELECT pg_has_role('regress_s3_user', 'pg_read_server_files', 'USAGE') AS reads_server_files;
SET ROLE regress_s3_user;
SELECT server, user_mapping, has_credentials, has_session_token
FROM lance_parts.s3_settings_for('s3://lp-bucket/data/deep/t.lance');
RESET ROLE;
-- ... and a role's own mapping comes first
CREATE USER MAPPING FOR regress_s3_user SERVER s3_deep
    OPTIONS (access_key_id 'AKIDUSER', secret_access_key 'LOOKUP-SECRET-USER');
CREATE USER MAPPING FOR regress_s3_user SERVER s3_data
    OPTIONS (access_key_id 'AKIDUSER', secret_access_key 'LOOKUP-SECRET-USER');
SET ROLE regress_s3_user;
SELECT server, user_mapping, has_credentials, has_session_token
FROM lance_parts.s3_settings_for('s3://lp-bucket/data/deep/t.lance');
SELECT server, user_mapping, has_credentials FROM lance_parts.s3_settings_for('s3://lp-bucket/data/x.lance');
-- a role sees its own mapping's options
SELECT srvname, umoptions FROM pg_user_mappings WHERE usename = 'regress_s3_user' ORDER BY srvname;
RESET ROLE;
-- no secret in the diagnostic's output
SELECT count(*) AS rows_with_secrets
FROM (SELECT s::text AS line FROM lance_parts.s3_settings_for('s3://lp-bucket/data/deep/t.lance') s) r
WHERE line ~ 'LOOKUP-SECRET|LOOKUP-TOKEN';
-- another role with USAGE sees neither that mapping's options nor PUBLIC's
SET ROLE regress_s3_other;
SELECT srvname, usename, umoptions FROM pg_user_mappings
WHERE srvname IN ('s3_data', 's3_deep') ORDER BY srvname, usename;
SELECT lp_test.attempt($$SELECT umoptions FROM pg_user_mapping$$);
RESET ROLE;

DROP SERVER s3_bucket, s3_data, s3_deep, s3_other, local_root CASCADE;
DROP ROLE regress_s3_user;
DROP ROLE regress_s3_other;
DROP FUNCTION lp_test.attempt(text);
