-- lance_parts 0.1.0
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
