-- lance_parts 0.1.0 -> 0.2.0
\echo Use "ALTER EXTENSION lance_parts UPDATE TO '0.2.0'" to load this file. \quit

-- Every change to lance_parts--0.2.0.sql is made here too, so that an updated
-- 0.1.0 installation has exactly the objects of a fresh 0.2.0 one.

-- What crashes and lost races leave in a dataset: temporary files,
-- unreferenced transaction and data files, sidecar and staging directories.
-- Lists them (dry_run) or removes those older than older_than.

CREATE FUNCTION @extschema@.cleanup_orphans(
    dataset_uri text,
    older_than interval DEFAULT '1 day',
    dry_run boolean DEFAULT true)
RETURNS TABLE(path text, kind text, bytes bigint, action text, reason text)
AS 'MODULE_PATHNAME', 'lp_cleanup_orphans'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE ROWS 10;

COMMENT ON FUNCTION @extschema@.cleanup_orphans(text, interval, boolean) IS
'List (dry_run) or remove the entries of a dataset that no version references and that are older than older_than: temporary files, transaction files, data files, sidecar and staging directories';

-- Object storage: a lance_fdw server whose root is s3://bucket[/prefix] holds
-- the endpoint, region, URL style and whether plain HTTP is allowed; its user
-- mappings hold the credentials.  Only superusers and members of
-- lance_parts_endpoint_admin may create or alter a server with an endpoint
-- (checked by the validator).  Roles belong to the cluster, not to a
-- database: the role is created by the first installation and left in place
-- by DROP EXTENSION.

DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = 'lance_parts_endpoint_admin') THEN
        CREATE ROLE lance_parts_endpoint_admin NOLOGIN;
        COMMENT ON ROLE lance_parts_endpoint_admin IS
        'Members may set the endpoint option of lance_fdw servers (the host the database server connects to for S3 requests)';
    END IF;
END
$$;

CREATE FUNCTION @extschema@.s3_settings_for(
    uri text,
    OUT server text,
    OUT root text,
    OUT endpoint text,
    OUT region text,
    OUT url_style text,
    OUT allow_http boolean,
    OUT user_mapping text,
    OUT has_credentials boolean,
    OUT has_session_token boolean)
RETURNS record
AS 'MODULE_PATHNAME', 'lp_s3_settings_for'
LANGUAGE C STRICT STABLE PARALLEL SAFE;

COMMENT ON FUNCTION @extschema@.s3_settings_for(text) IS
'The lance_fdw server and user mapping an s3:// URI uses, and its non-secret settings (never a credential)';

-- Blob v2 sidecars written from SQL: payloads go straight into the target's
-- sidecar directory, named by blob ids of leases claimed for the target.

CREATE FUNCTION @extschema@.lease_blob_ids(target jsonb, count integer)
RETURNS int8range
AS 'MODULE_PATHNAME', 'lp_lease_blob_ids'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.lease_blob_ids(jsonb, integer) IS
'Claim count blob ids of the target, durably in its staging area: a range no other lease of the target overlaps, whoever asks';

CREATE FUNCTION @extschema@.write_packed_blobs(target jsonb, blob_id bigint, payloads bytea[])
RETURNS jsonb[]
AS 'MODULE_PATHNAME', 'lp_write_packed_blobs'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.write_packed_blobs(jsonb, bigint, bytea[]) IS
'Write the payloads into one packed sidecar of the target under a leased blob id; one Packed descriptor per payload (NULL for NULL)';

CREATE FUNCTION @extschema@.write_dedicated_blob(target jsonb, blob_id bigint, payload bytea)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'lp_write_dedicated_blob'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.write_dedicated_blob(jsonb, bigint, bytea) IS
'Write the payload as a dedicated sidecar of the target under a leased blob id; its Dedicated descriptor';

CREATE FUNCTION @extschema@.write_dedicated_blob_from(target jsonb, blob_id bigint, source_uri text)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'lp_write_dedicated_blob_from'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.write_dedicated_blob_from(jsonb, bigint, text) IS
'Copy an existing file or object into a dedicated sidecar of the target under a leased blob id (server-side where the store can); its Dedicated descriptor';
