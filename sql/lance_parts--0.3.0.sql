-- lance_parts 0.3.0
\echo Use "CREATE EXTENSION lance_parts" to load this file. \quit

REVOKE ALL ON SCHEMA @extschema@ FROM PUBLIC;
GRANT USAGE ON SCHEMA @extschema@ TO PUBLIC;

-- Inspection of single Lance data files.  Reading a server file needs the
-- privileges of pg_read_server_files (checked in C), as COPY FROM a file does.

CREATE FUNCTION @extschema@.file_info(
    uri text,
    OUT version text,
    OUT num_rows bigint,
    OUT num_columns integer,
    OUT num_global_buffers integer,
    OUT size_bytes bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'lp_file_info'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.file_info(text) IS
'Footer facts of a Lance data file: format version, rows, columns, global buffers and size';

CREATE FUNCTION @extschema@.file_schema(
    uri text,
    OUT field_id integer,
    OUT parent_id integer,
    OUT name text,
    OUT logical_type text,
    OUT nullable boolean,
    OUT metadata jsonb)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'lp_file_schema'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE ROWS 20;

COMMENT ON FUNCTION @extschema@.file_schema(text) IS
'Fields of the schema stored in a Lance data file, in pre-order';

CREATE FUNCTION @extschema@.file_pages(
    uri text,
    OUT column_index integer,
    OUT page_index integer,
    OUT num_rows bigint,
    OUT priority bigint,
    OUT buffer_count integer,
    OUT buffer_bytes bigint,
    OUT layout text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'lp_file_pages'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE ROWS 100;

COMMENT ON FUNCTION @extschema@.file_pages(text) IS
'Pages of every physical column of a Lance data file, with their buffers and encoding layout';

-- Targets: the final data file of a dataset, as a signed jsonb value.

CREATE FUNCTION @extschema@.create_target(
    dataset_uri text,
    columns text[] DEFAULT NULL,
    file_version text DEFAULT NULL,
    base_id integer DEFAULT NULL)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'lp_create_target'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.create_target(text, text[], text, integer) IS
'A new data file name for the dataset''s latest version, with its schema and base, as a durable target value';

CREATE FUNCTION @extschema@.staging_dir(target jsonb)
RETURNS text
AS 'MODULE_PATHNAME', 'lp_staging_dir'
LANGUAGE C STRICT STABLE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.staging_dir(jsonb) IS
'Directory under the target''s base where part writers put their files';

-- Target keys ($PGDATA/lance_parts.key): the first signs new targets, every
-- one verifies them, so clusters given the same file accept each other's
-- targets.  Rotating and retiring take effect at once, not at commit, and
-- are for superusers only (checked in C as well).

CREATE FUNCTION @extschema@.target_keys(OUT key_id text, OUT signs boolean)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'lp_target_keys_sql'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE ROWS 2;

COMMENT ON FUNCTION @extschema@.target_keys() IS
'The ids of the cluster''s target keys and which one signs new targets';

REVOKE ALL ON FUNCTION @extschema@.target_keys() FROM PUBLIC;

CREATE FUNCTION @extschema@.rotate_target_key()
RETURNS text
AS 'MODULE_PATHNAME', 'lp_rotate_target_key'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.rotate_target_key() IS
'Makes a new key the signing key of targets, keeping the others for verification; returns its id';

REVOKE ALL ON FUNCTION @extschema@.rotate_target_key() FROM PUBLIC;

CREATE FUNCTION @extschema@.retire_target_keys(key_ids text[] DEFAULT NULL)
RETURNS text[]
AS 'MODULE_PATHNAME', 'lp_retire_target_keys'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.retire_target_keys(text[]) IS
'Removes the named target keys (NULL: all but the signing key); targets they signed are refused from then on';

REVOKE ALL ON FUNCTION @extschema@.retire_target_keys(text[]) FROM PUBLIC;

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

-- The session registry of parts, per target.  Registrations roll back with
-- the transaction that made them.

CREATE FUNCTION @extschema@.register_part(
    target jsonb,
    part_uri text,
    expected_rows bigint DEFAULT NULL,
    blob_ids int8range DEFAULT NULL)
RETURNS integer
AS 'MODULE_PATHNAME', 'lp_register_part'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.register_part(jsonb, text, bigint, int8range) IS
'Validate a part file against the target (and its Blob v2 descriptors against blob_ids, a lease of the target, and the target''s sidecars) and append it to this session''s registry; returns its position';

CREATE FUNCTION @extschema@.registered_parts(
    target jsonb,
    OUT "position" integer,
    OUT uri text,
    OUT num_rows bigint,
    OUT size_bytes bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'lp_registered_parts'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION @extschema@.clear_parts(target jsonb)
RETURNS integer
AS 'MODULE_PATHNAME', 'lp_clear_parts'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE;

-- Assembly.  Each returns one row: status 'written', 'reused' or
-- 'unsupported' (with the reason, and nothing written).

CREATE FUNCTION @extschema@.assemble(
    target jsonb,
    OUT status text,
    OUT reason text,
    OUT path text,
    OUT version text,
    OUT num_rows bigint,
    OUT size_bytes bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'lp_assemble_registered'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE ROWS 1;

COMMENT ON FUNCTION @extschema@.assemble(jsonb) IS
'Write the target''s data file from the parts registered in this session';

-- on_unsupported => 'reencode': parts that cannot be joined by page copy are
-- decoded and encoded again in the target's version and schema first;
-- reencoded_parts lists their positions (1-based).

CREATE FUNCTION @extschema@.assemble(
    target jsonb,
    parts text[],
    expected_rows bigint[] DEFAULT NULL,
    on_unsupported text DEFAULT 'refuse',
    OUT status text,
    OUT reason text,
    OUT path text,
    OUT version text,
    OUT num_rows bigint,
    OUT size_bytes bigint,
    OUT reencoded_parts integer[])
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'lp_assemble_parts'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL UNSAFE ROWS 1;

COMMENT ON FUNCTION @extschema@.assemble(jsonb, text[], bigint[], text) IS
'Write the target''s data file from the given parts, in order (for pg_cron jobs and pooled connections); on_unsupported => ''reencode'' re-encodes parts that cannot be joined by page copy';

CREATE FUNCTION @extschema@.concat_files(
    output_uri text,
    inputs text[],
    expected_rows bigint[] DEFAULT NULL,
    OUT status text,
    OUT reason text,
    OUT path text,
    OUT version text,
    OUT num_rows bigint,
    OUT size_bytes bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'lp_concat_files'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL UNSAFE ROWS 1;

COMMENT ON FUNCTION @extschema@.concat_files(text, text[], bigint[]) IS
'Concatenate complete Lance files into a new file without decoding; the version and schema are those of input 0';

-- Progress of running assemblies and commits, readable from any session.
-- Other users' operations are shown to members of pg_read_all_stats only.

CREATE FUNCTION @extschema@.progress_entries(
    OUT pid integer,
    OUT dataset text,
    OUT target_file text,
    OUT phase text,
    OUT parts_done bigint,
    OUT parts_total bigint,
    OUT bytes_done bigint,
    OUT bytes_total bigint,
    OUT workers integer,
    OUT started_at timestamptz,
    OUT updated_at timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'lp_progress'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE ROWS 10;

COMMENT ON FUNCTION @extschema@.progress_entries() IS
'One row per running assembly, commit or write: phase (validating, reencoding, copying, finalizing, committing, encoding), parts and bytes done, workers';

CREATE VIEW @extschema@.progress AS
    SELECT * FROM @extschema@.progress_entries();

GRANT SELECT ON @extschema@.progress TO PUBLIC;

COMMENT ON VIEW @extschema@.progress IS
'Running assemblies and commits of lance_parts, one row per backend';

-- Commit: the assembled file becomes a new version of the dataset when the
-- transaction commits (lance_parts.publish_at = 'commit', the default) or
-- when the call returns ('call').

CREATE FUNCTION @extschema@.commit(
    target jsonb,
    mode text DEFAULT 'append',
    fragment_id bigint DEFAULT NULL)
RETURNS TABLE(dataset_version bigint, fragment_id bigint)
AS 'MODULE_PATHNAME', 'lp_commit_target'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL UNSAFE ROWS 1;

COMMENT ON FUNCTION @extschema@.commit(jsonb, text, bigint) IS
'Publish the target''s assembled file as a new dataset version: append a fragment, or replace the file of fragment_id';

CREATE FUNCTION @extschema@.cleanup_target(target jsonb)
RETURNS boolean
AS 'MODULE_PATHNAME', 'lp_cleanup_target'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.cleanup_target(jsonb) IS
'Remove an uncommitted assembled file, its staging directory and its blob sidecars; refuses committed files';

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
'List (dry_run) or remove the entries of a dataset that no version references and that are older than older_than: temporary files, transaction files, data files, sidecar and staging directories, and on S3 multipart uploads in progress';

-- Compaction by page copy: adjacent small fragments are concatenated without
-- decoding and committed as one Lance Rewrite.  One row per fragment.

-- rewrite_deletions => true: fragments with deletion files take part too;
-- their live rows are decoded and encoded into the new fragment.

CREATE FUNCTION @extschema@.compact(
    dataset_uri text,
    fragment_ids bigint[] DEFAULT NULL,
    target_rows_per_fragment bigint DEFAULT 1048576,
    rewrite_deletions boolean DEFAULT false)
RETURNS TABLE(fragment_id bigint, action text, reason text,
              new_fragment_id bigint, dataset_version bigint)
AS 'MODULE_PATHNAME', 'lp_compact'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.compact(text, bigint[], bigint, boolean) IS
'Merge adjacent small fragments by copying their encoded pages, committed as a Lance Rewrite; rewrite_deletions => true re-encodes the live rows of fragments with deletion files';

-- A whole ingest in one call (for pg_cron jobs and one-statement ETL
-- clients): target, assembly of the given parts in order, commit.  If the
-- commit call fails, the assembled file is removed again.

CREATE FUNCTION @extschema@.ingest(
    dataset_uri text,
    parts text[],
    expected_rows bigint[] DEFAULT NULL,
    on_unsupported text DEFAULT 'refuse')
RETURNS TABLE(dataset_version bigint, fragment_id bigint, num_rows bigint, path text,
              reencoded_parts integer[])
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    target jsonb := @extschema@.create_target(dataset_uri);
    assembled record;
BEGIN
    SELECT * INTO assembled
        FROM @extschema@.assemble(target, parts, expected_rows, on_unsupported);
    IF assembled.status <> 'written' THEN
        RAISE EXCEPTION 'parts cannot be assembled into dataset "%"', dataset_uri
            USING ERRCODE = 'feature_not_supported',
                  DETAIL = format('The compatibility check answered %s.', assembled.reason),
                  HINT = 'Parts must be complete Lance files of the dataset''s schema and file version, or re-encodable with on_unsupported => ''reencode''.';
    END IF;
    BEGIN
        RETURN QUERY
            SELECT c.dataset_version, c.fragment_id, assembled.num_rows, assembled.path,
                   assembled.reencoded_parts
            FROM @extschema@.commit(target) c;
    EXCEPTION WHEN OTHERS THEN
        PERFORM @extschema@.cleanup_target(target);
        RAISE;
    END;
END
$$;

COMMENT ON FUNCTION @extschema@.ingest(text, text[], bigint[], text) IS
'Create a target, assemble the given parts into it (re-encoding those that need it with on_unsupported => ''reencode'') and commit it as a new fragment, in one call';

-- lance_fdw: foreign tables over Lance datasets and data files.  The wrapper
-- is created by the extension; servers, user mappings and tables are the
-- user's.  Options naming server paths need pg_read_server_files (checked by
-- the validator); an s3:// root names no server path.

CREATE FUNCTION @extschema@.lance_fdw_handler()
RETURNS fdw_handler
AS 'MODULE_PATHNAME', 'lance_fdw_handler'
LANGUAGE C STRICT;

CREATE FUNCTION @extschema@.lance_fdw_validator(text[], oid)
RETURNS void
AS 'MODULE_PATHNAME', 'lance_fdw_validator'
LANGUAGE C STRICT;

CREATE FOREIGN DATA WRAPPER lance_fdw
  HANDLER @extschema@.lance_fdw_handler
  VALIDATOR @extschema@.lance_fdw_validator;

COMMENT ON FOREIGN DATA WRAPPER lance_fdw IS
'Foreign tables over Lance datasets (a version of a dataset directory) and single .lance data files';

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

-- Writing Lance from SQL: a raw file, a part of a target, a whole dataset.
-- Rows are read from a query; files are published only once complete.

CREATE FUNCTION @extschema@.write_file(
    uri text,
    query text,
    file_version text DEFAULT '2.2',
    OUT path text,
    OUT num_rows bigint,
    OUT size_bytes bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'lp_write_file'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL UNSAFE ROWS 1;

COMMENT ON FUNCTION @extschema@.write_file(text, text, text) IS
'Write the rows of a query as one Lance file (never replacing a file)';

CREATE FUNCTION @extschema@.write_part(
    target jsonb,
    query text,
    expected_rows bigint DEFAULT NULL,
    OUT uri text,
    OUT num_rows bigint,
    OUT size_bytes bigint,
    OUT blob_ids int8range)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'lp_write_part'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL UNSAFE ROWS 1;

COMMENT ON FUNCTION @extschema@.write_part(jsonb, text, bigint) IS
'Write the rows of a query as one part of the target (its version and schema) in its staging directory, for register_part; Blob v2 payloads go to the target''s sidecars under the lease blob_ids';

CREATE FUNCTION @extschema@.write_dataset(
    dataset_uri text,
    query text,
    mode text DEFAULT 'create',
    file_version text DEFAULT '2.2',
    max_rows_per_file bigint DEFAULT 1048576,
    blob_columns text[] DEFAULT NULL,
    OUT dataset_version bigint,
    OUT fragments integer,
    OUT num_rows bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'lp_write_dataset'
LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL UNSAFE ROWS 1;

COMMENT ON FUNCTION @extschema@.write_dataset(text, text, text, text, bigint, text[]) IS
'Write the rows of a query as a new dataset (create), new fragments (append) or new contents (overwrite); published with the transaction (lance_parts.publish_at)';
