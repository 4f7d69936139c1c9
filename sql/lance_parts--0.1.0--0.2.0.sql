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
'List (dry_run) or remove the entries of a dataset that no version references and that are older than older_than: temporary files, transaction files, data files, sidecar and staging directories, and on S3 multipart uploads in progress';

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
'Write the rows of a query as a new dataset (create), new fragments (append) or new contents (overwrite); committed when the call returns';

-- The re-encode fallback: assemble and ingest take on_unsupported and say
-- which parts were re-encoded; compact can rewrite fragments with deletion
-- files.  New signatures, so the 0.1.0 functions are replaced.

DROP FUNCTION @extschema@.ingest(text, text[], bigint[]);
DROP FUNCTION @extschema@.assemble(jsonb, text[], bigint[]);
DROP FUNCTION @extschema@.compact(text, bigint[], bigint);

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

COMMENT ON FUNCTION @extschema@.progress_entries() IS
'One row per running assembly, commit or write: phase (validating, reencoding, copying, finalizing, committing, encoding), parts and bytes done, workers';
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

-- Parts with Blob v2 columns are registered with their blob id lease.

DROP FUNCTION @extschema@.register_part(jsonb, text, bigint);

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
