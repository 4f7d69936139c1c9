-- Bad input: every case is an ERROR with a precise SQLSTATE that names the
-- file.  Damaged files are written into LP_SCRATCH with lo_export.
\set VERBOSITY terse
\getenv testdata LP_TESTDATA
\getenv scratch LP_SCRATCH
SET lance_parts_test.scratch = :'scratch';

-- a real 2.2 file to damage
SELECT d->>'path' || '/data/' || (f->>'file') AS good
FROM jsonb_array_elements(pg_read_file(:'testdata' || '/manifest.json')::jsonb->'datasets') d,
     jsonb_array_elements(d->'data_files') f
WHERE d->>'name' = 'types_2_2_v2' AND (f->>'num_rows')::int = 45 \gset
SELECT pg_read_binary_file(:'good') AS bytes \gset
SELECT length(:'bytes'::bytea) AS size \gset

CREATE TEMP TABLE damaged (name text, bytes bytea);
INSERT INTO damaged VALUES
  ('empty', ''::bytea),
  ('three_bytes', '\x4c414e'::bytea),
  ('truncated_footer', substring(:'bytes'::bytea FROM 1 FOR :size - 20)),
  ('truncated_half', substring(:'bytes'::bytea FROM 1 FOR :size / 2)),
  ('wrong_magic', overlay(:'bytes'::bytea PLACING 'LANX'::bytea FROM :size - 3)),
  ('unknown_version', overlay(:'bytes'::bytea PLACING '\x02000900'::bytea FROM :size - 7)),
  ('column_meta_start_beyond_eof', overlay(:'bytes'::bytea PLACING lp_test.le64(:size + 1000) FROM :size - 39)),
  ('cmo_offset_overflows', overlay(:'bytes'::bytea PLACING '\xffffffffffffffff'::bytea FROM :size - 31)),
  ('gbo_offset_overflows', overlay(:'bytes'::bytea PLACING '\xf0ffffffffffffff'::bytea FROM :size - 23)),
  ('zero_global_buffers', overlay(:'bytes'::bytea PLACING lp_test.le32(0) FROM :size - 15)),
  ('huge_global_buffer_count', overlay(:'bytes'::bytea PLACING lp_test.le32(4000000000) FROM :size - 15)),
  ('huge_column_count', overlay(:'bytes'::bytea PLACING lp_test.le32(4000000000) FROM :size - 11)),
  -- global buffer 0 (the schema) starts at the first entry of the GBO table
  ('garbage_schema', overlay(:'bytes'::bytea PLACING '\xffffffffffffffffffffffffffffffff'::bytea
                             FROM (lp_test.u64_at(:'bytes'::bytea, lp_test.u64_at(:'bytes'::bytea, :size - 24)) + 1)::int));

SELECT name,
       lp_test.outcome(format('SELECT * FROM lance_parts.file_info(%L)', lp_test.put(:'scratch' || '/' || name || '.lance', bytes))) AS file_info
FROM damaged ORDER BY name;

-- the same damage through file_schema and file_pages
SELECT name,
       lp_test.outcome(format('SELECT * FROM lance_parts.file_schema(%L)', :'scratch' || '/' || name || '.lance')) = 
       lp_test.outcome(format('SELECT * FROM lance_parts.file_info(%L)', :'scratch' || '/' || name || '.lance')) AS same_error_schema,
       lp_test.outcome(format('SELECT * FROM lance_parts.file_pages(%L)', :'scratch' || '/' || name || '.lance')) = 
       lp_test.outcome(format('SELECT * FROM lance_parts.file_info(%L)', :'scratch' || '/' || name || '.lance')) AS same_error_pages
FROM damaged ORDER BY name;

-- missing files, directories and bad arguments
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.file_info(%L)', :'scratch' || '/no_such_file.lance'));
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.file_info(%L)', :'scratch'));
SELECT lp_test.outcome($$SELECT * FROM lance_parts.file_info('')$$);
SELECT lp_test.outcome($$SELECT * FROM lance_parts.file_info('s3://bucket/key.lance')$$);
SELECT lp_test.outcome($$SELECT * FROM lance_parts.file_info('file://server/share/x.lance')$$);
SELECT lp_test.outcome($$SELECT * FROM lance_parts.file_info('file:///bad%zzescape')$$);
SELECT * FROM lance_parts.file_info(NULL);

-- legacy files: the footer and schema are read, the v2 facts are NULL, and
-- there are no v2 pages
SELECT d->>'path' || '/data/' || (d->'data_files'->0->>'file') AS legacy
FROM jsonb_array_elements(pg_read_file(:'testdata' || '/manifest.json')::jsonb->'datasets') d
WHERE d->>'name' = 'types_legacy_v2' \gset
SELECT version, num_rows, num_columns, num_global_buffers FROM lance_parts.file_info(:'legacy');
SELECT count(*) AS legacy_fields FROM lance_parts.file_schema(:'legacy');
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.file_pages(%L)', :'legacy')) LIKE '0A000: file "%" uses the legacy Lance format' AS pages_refused;

-- reading server files needs pg_read_server_files, as COPY FROM a file does
CREATE ROLE lance_parts_reader;
CREATE ROLE lance_parts_nobody;
GRANT pg_read_server_files TO lance_parts_reader;
SET ROLE lance_parts_nobody;
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.file_info(%L)', :'good'));
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.file_pages(%L)', :'good'));
RESET ROLE;
SET ROLE lance_parts_reader;
SELECT num_rows FROM lance_parts.file_info(:'good');
RESET ROLE;
DROP ROLE lance_parts_reader;
DROP ROLE lance_parts_nobody;
