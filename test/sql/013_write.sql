-- Writing Lance from SQL: write_file, write_dataset and write_part.  The
-- mapping of PostgreSQL types to Lance types (file_schema of a written file,
-- read back through lance_fdw), the errors and SQLSTATEs of every function,
-- errors about a column raised before anything is written, and no file left
-- behind by an error or a cancel.
\set VERBOSITY terse
\getenv testdata LP_TESTDATA
\getenv scratch LP_SCRATCH
\set work :scratch/013
SET lance_parts_test.scratch = :'scratch';
SET lance_parts_test.testdata = :'testdata';
SELECT lp_test.sh(format('rm -rf %1$s && mkdir -p %1$s && cp -r %2$s/types_2_2_v2.lance %1$s/ds.lance',
                         :'work', :'testdata'));
\set dataset :work/ds.lance

CREATE TYPE pg_temp.mood AS ENUM ('calm', 'busy');
CREATE TABLE write_source (
    id integer, small smallint, big bigint, f4 real, f8 double precision, flag boolean,
    txt text, vc varchar(8), ch char(4), bin bytea, day date, tod time, ts timestamp,
    tstz timestamptz, span interval, dec numeric(9,3), wide numeric(50,1), u uuid,
    doc jsonb, mood pg_temp.mood);
INSERT INTO write_source VALUES
    (1, -3, 9007199254740993, 1.5, -0.25, true, 'one', 'vc', 'ab', '\x00ff', '1969-12-31',
     '23:59:59.999999', '1900-01-01 00:00:00.000001', '2024-02-29 12:00:00+00', '-2 days 00:00:01.5',
     -123456.789, 12345678901234567890123456789012345678901234567.8,
     'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{"k": [1, null]}', 'busy'),
    (2, NULL, NULL, NULL, NULL, NULL, '', NULL, NULL, '', NULL, NULL, NULL, NULL, NULL, NULL,
     NULL, NULL, NULL, NULL),
    (3, 32767, -9223372036854775808, 'Infinity', 'NaN', false, NULL, '', '', NULL, '2262-04-11',
     '00:00', '2262-04-11 23:47:16.854775', '1677-09-21 00:12:44+00', '106751 days 23:47:16.854775',
     0.001, -0.1, '00000000-0000-0000-0000-000000000000', 'null', 'calm');

-- ---- write_file: every type of the mapping --------------------------------
SELECT path = :'work' || '/types.lance' AS path, num_rows, size_bytes > 0 AS has_bytes
FROM lance_parts.write_file(:'work' || '/types.lance', 'SELECT * FROM write_source ORDER BY id', '2.1');
SELECT version, num_rows, num_columns FROM lance_parts.file_info(:'work' || '/types.lance');
SELECT name, logical_type, nullable FROM lance_parts.file_schema(:'work' || '/types.lance') ORDER BY field_id;
-- read back through lance_fdw: the values that went in (durations come back as
-- intervals of hours, char(n) without its padding, uuid as 16 bytes)
\set types_file :work/types.lance
CREATE SERVER write_srv FOREIGN DATA WRAPPER lance_fdw;
CREATE FOREIGN TABLE written (
    id integer, small smallint, big bigint, f4 real, f8 double precision, flag boolean,
    txt text, vc text, ch text, bin bytea, day date, tod time, ts timestamp,
    tstz timestamptz, span interval, dec numeric, wide numeric, u bytea, doc jsonb, mood text)
    SERVER write_srv OPTIONS (uri :'types_file');
SET TimeZone = 'UTC';
SELECT * FROM written ORDER BY id;
SELECT count(*) AS same_rows FROM written w JOIN write_source s USING (id)
WHERE (w.small, w.big, w.f4, w.f8, w.flag, w.txt, w.vc, w.ch, w.bin, w.day, w.tod, w.ts, w.tstz, w.span,
       w.dec, w.wide, w.doc, w.mood)
      IS NOT DISTINCT FROM
      (s.small, s.big, s.f4, s.f8, s.flag, s.txt, s.vc::text, s.ch::text, s.bin, s.day, s.tod, s.ts, s.tstz, s.span,
       s.dec, s.wide, s.doc, s.mood::text)
  AND w.u IS NOT DISTINCT FROM decode(replace(s.u::text, '-', ''), 'hex');
RESET TimeZone;
-- an empty query makes a file of no rows, in every version
SELECT v AS version, (SELECT num_rows FROM lance_parts.write_file(:'work' || '/empty_' || v || '.lance',
                                                                  'SELECT 1 AS x WHERE false', v))
FROM unnest(ARRAY['2.0', '2.1', '2.2', '2.3']) v;

-- composite types are structs of their attributes, with nulls at every level
CREATE TYPE pg_temp.pair AS (a integer, b text);
CREATE TYPE pg_temp.nest AS (p pg_temp.pair, v varchar(4));
\set structs_file :work/structs.lance
SELECT num_rows FROM lance_parts.write_file(:'structs_file',
    $$SELECT 1 AS id, ROW(ROW(1, 'x')::pg_temp.pair, 'v')::pg_temp.nest AS n
      UNION ALL SELECT 2, NULL
      UNION ALL SELECT 3, ROW(NULL, NULL)::pg_temp.nest
      UNION ALL SELECT 4, ROW(ROW(NULL, '')::pg_temp.pair, '')::pg_temp.nest$$, '2.1');
SELECT field_id, parent_id, name, logical_type FROM lance_parts.file_schema(:'structs_file') ORDER BY field_id;
CREATE FOREIGN TABLE written_structs (id integer, n jsonb) SERVER write_srv OPTIONS (uri :'structs_file');
SELECT * FROM written_structs ORDER BY id;

-- arrays are lists of their elements, nulls and empty lists included
\set lists_file :work/lists.lance
SELECT num_rows FROM lance_parts.write_file(:'lists_file',
    $$SELECT id, ints, texts, decs::numeric(4,1)[] AS decs FROM (
          SELECT 1 AS id, ARRAY[1, NULL, 3] AS ints, ARRAY['a', '', NULL]::varchar[] AS texts, ARRAY[1.5, NULL] AS decs
          UNION ALL SELECT 2, '{}', '{}', '{}'
          UNION ALL SELECT 3, NULL, NULL, NULL) q$$, '2.2');
SELECT field_id, parent_id, name, logical_type FROM lance_parts.file_schema(:'lists_file') ORDER BY field_id;
CREATE FOREIGN TABLE written_lists (id integer, ints integer[], texts text[], decs numeric[])
    SERVER write_srv OPTIONS (uri :'lists_file');
SELECT * FROM written_lists ORDER BY id;
-- lists of composite types are lists of structs (Lance's list.struct)
\set pairs_file :work/pairs.lance
SELECT num_rows FROM lance_parts.write_file(:'pairs_file',
    $$SELECT ARRAY[ROW(1, 'x')::pg_temp.pair, NULL, ROW(NULL, '')::pg_temp.pair] AS pairs
      UNION ALL SELECT '{}' UNION ALL SELECT NULL$$, '2.1');
SELECT field_id, parent_id, name, logical_type FROM lance_parts.file_schema(:'pairs_file') ORDER BY field_id;
CREATE FOREIGN TABLE written_pairs (pairs jsonb) SERVER write_srv OPTIONS (uri :'pairs_file');
SELECT * FROM written_pairs;
-- 2.0 files hold lists too: a column of offsets per list, then the columns of its items
\set lists20_file :work/lists20.lance
SELECT num_rows FROM lance_parts.write_file(:'lists20_file',
    $$SELECT 1 AS id, ARRAY[1, NULL, 3] AS ints, ARRAY['a', NULL, ''] AS texts,
             ARRAY[ROW(1, 'x')::pg_temp.pair, ROW(NULL, '')::pg_temp.pair] AS pairs
      UNION ALL SELECT 2, '{}', '{}', '{}'
      UNION ALL SELECT 3, NULL, NULL, NULL$$, '2.0');
SELECT column_index, num_rows, layout FROM lance_parts.file_pages(:'lists20_file') ORDER BY column_index;
CREATE FOREIGN TABLE written_lists20 (id integer, ints integer[], texts text[], pairs jsonb)
    SERVER write_srv OPTIONS (uri :'lists20_file');
SELECT * FROM written_lists20 ORDER BY id;

-- ---- write_file: errors ----------------------------------------------------
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.write_file(%L, %L)', :'work' || '/types.lance', 'SELECT 1 AS x'));
SELECT lp_test.outcome($$SELECT * FROM lance_parts.write_file('relative.lance', 'SELECT 1 AS x')$$);
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.write_file(%L, %L, %L)', :'work' || '/v.lance', 'SELECT 1 AS x', '0.1'));
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.write_file(%L, %L, %L)', :'work' || '/v.lance', 'SELECT 1 AS x', 'legacy'));
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.write_file(%L, NULL)', :'work' || '/v.lance'));
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.write_file(NULL, %L)', 'SELECT 1'));
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.write_file(%L, %L)', :'work' || '/v.lance', 'SELEC 1'));
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.write_file(%L, %L)', :'work' || '/v.lance', 'CREATE TABLE t ()'));
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.write_file(%L, %L)', :'work' || '/v.lance', 'SELECT'));
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.write_file(%L, %L)', :'work' || '/v.lance', 'SELECT 1 AS a, 2 AS a'));
-- types without a Lance type: refused naming the column, with a hint
SELECT lp_test.outcome_detail(format('SELECT * FROM lance_parts.write_file(%L, %L)', :'work' || '/v.lance', 'SELECT 1.5 AS amount'));
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.write_file(%L, %L)', :'work' || '/v.lance', 'SELECT 1::numeric(80,2) AS amount'));
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.write_file(%L, %L)', :'work' || '/v.lance', 'SELECT 1::numeric(5,-2) AS amount'));
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.write_file(%L, %L, %L)', :'work' || '/v.lance', 'SELECT ARRAY[ROW(1, ''x'')::pg_temp.pair, NULL] AS pairs', '2.0'));
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.write_file(%L, %L)', :'work' || '/v.lance', 'SELECT ARRAY[[1, 2], [3, 4]] AS items'));
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.write_file(%L, %L)', :'work' || '/v.lance', 'SELECT ROW(1, 2) AS pair'));
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.write_file(%L, %L)', :'work' || '/v.lance', 'SELECT point(1, 2) AS p'));
-- values that do not fit exactly: refused, and no file is left
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.write_file(%L, %L)', :'work' || '/v.lance', $$SELECT interval '1 month' AS span$$));
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.write_file(%L, %L)', :'work' || '/v.lance', $$SELECT 'infinity'::date AS day$$));
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.write_file(%L, %L)', :'work' || '/v.lance', $$SELECT 'NaN'::numeric(5,2) AS n$$));
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.write_file(%L, %L)', :'work' || '/v.lance', $$SELECT 'infinity'::timestamp AS ts$$));
SELECT lp_test.entries(:'work') AS work_entries;

-- ---- write_dataset ---------------------------------------------------------
\set new :work/new.lance
SELECT * FROM lance_parts.write_dataset(:'new', 'SELECT id, txt FROM write_source', 'create', '2.2', 2);
SELECT name, logical_type FROM lance_parts.file_schema(:'new' || '/data/' ||
    (SELECT min(f) FROM pg_ls_dir(:'new' || '/data') f)) ORDER BY field_id;
SELECT * FROM lance_parts.write_dataset(:'new', 'SELECT txt, id FROM write_source WHERE id = 1', 'append');
-- an append of no rows makes no version
SELECT * FROM lance_parts.write_dataset(:'new', 'SELECT txt, id FROM write_source WHERE false', 'append');
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.write_dataset(%L, %L)', :'new', 'SELECT 1 AS id'));
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.write_dataset(%L, %L, %L)', :'work' || '/missing.lance', 'SELECT 1 AS id', 'append'));
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.write_dataset(%L, %L, %L)', :'new', 'SELECT 1 AS id', 'upsert'));
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.write_dataset(%L, %L, %L, %L, 0)', :'new', 'SELECT 1 AS id', 'append', '2.2'));
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.write_dataset(%L, %L, %L, %L, NULL)', :'new', 'SELECT 1 AS id', 'append', '2.2'));
-- append: columns by name, castable to the dataset's types; errors name the column
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.write_dataset(%L, %L, %L)', :'new', 'SELECT 1 AS id', 'append'));
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.write_dataset(%L, %L, %L)', :'new', $$SELECT 1 AS id, 'x' AS txt, 2 AS extra$$, 'append'));
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.write_dataset(%L, %L, %L)', :'new', $$SELECT current_date AS id, 'x' AS txt$$, 'append'));
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.write_dataset(%L, %L, %L)', :'new', $$SELECT 'abc'::text AS id, 'x' AS txt$$, 'append'));
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.write_dataset(%L, %L, %L)', :'new', $$SELECT 5000000000 AS id, 'x' AS txt$$, 'append'));
-- castable columns are cast: bigint to the int32 id, a number to text
SELECT * FROM lance_parts.write_dataset(:'new', 'SELECT 7::bigint AS id, 8 AS txt', 'append');
SELECT lp_test.entries(:'new' || '/_versions') AS versions;
-- the files of the failed appends are gone: 2 + 1 + 1 committed data files, nothing else
SELECT array_length(lp_test.entries(:'new' || '/data'), 1) AS data_files;
-- overwrite: new schema and rows in the next version
SELECT * FROM lance_parts.write_dataset(:'new', 'SELECT id::bigint AS key FROM write_source', 'overwrite', '2.1');
SELECT i.version, count(*) AS files, sum(i.num_rows) AS num_rows
FROM pg_ls_dir(:'new' || '/data') f, lance_parts.file_info(:'new' || '/data/' || f) i
GROUP BY i.version ORDER BY i.version;

-- ---- write_part --------------------------------------------------------------
SELECT lance_parts.create_target(:'dataset') AS target \gset
SELECT lance_parts.staging_dir(:'target') AS staging \gset
-- a column missing, one too many, one of a type that cannot be cast: refused before anything is written
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.write_part(%L, %L)', :'target', 'SELECT 1 AS id'));
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.write_part(%L, NULL)', :'target'));
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.write_part(NULL, %L)', 'SELECT 1'));
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.write_part(%L, %L, -1)', :'target', 'SELECT 1'));
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.write_part(%L, %L)',
                              jsonb_set(:'target'::jsonb, '{file_name}', '"x.lance"'), 'SELECT 1'));
SELECT lp_test.entries(:'staging') AS staging_entries;
-- a list field takes an array, cast item by item
SELECT lance_parts.create_target(:'dataset', columns => ARRAY['id', 'li', 'lstr']) AS with_list \gset
SELECT num_rows, lance_parts.register_part(:'with_list', uri) AS registered
FROM lance_parts.write_part(:'with_list', $$SELECT g AS id, ARRAY[g::smallint, NULL] AS li, ARRAY[g, g + 1] AS lstr FROM generate_series(1, 10) g$$);
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.write_part(%L, %L)', :'with_list', 'SELECT 1 AS id, 1 AS li, ARRAY[''x''] AS lstr'));
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.write_part(%L, %L)', :'with_list', 'SELECT 1 AS id, ARRAY[now()] AS li, ARRAY[''x''] AS lstr'));
SELECT * FROM lance_parts.clear_parts(:'with_list');

-- a struct field takes a composite value with its members, by name
SELECT lance_parts.create_target(:'dataset', columns => ARRAY['id', 'st']) AS with_struct \gset
SELECT num_rows, lance_parts.register_part(:'with_struct', uri) AS registered
FROM lance_parts.write_part(:'with_struct', 'SELECT g AS id, ROW(g, ''s'' || g)::pg_temp.pair AS st FROM generate_series(1, 10) g');
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.write_part(%L, %L)', :'with_struct', 'SELECT 1 AS id, 1 AS st'));
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.write_part(%L, %L)', :'with_struct',
                              'SELECT 1 AS id, ROW(ROW(1, ''x'')::pg_temp.pair, ''v'')::pg_temp.nest AS st'));
SELECT * FROM lance_parts.clear_parts(:'with_struct');

-- a part of some columns: cast to the target's types, accepted by register_part
SELECT lance_parts.create_target(:'dataset', columns => ARRAY['id', 'i8', 'u64', 's', 'dec', 'vec', 'ts']) AS sub \gset
SELECT lance_parts.staging_dir(:'sub') AS sub_staging \gset
\set part_query 'SELECT g AS id, (g % 100)::smallint AS i8, g::numeric * 1e15 AS u64, ''p'' || g AS s, g / 3.0 AS dec, ARRAY[g, 1, 2, 3, 4, 5, 6, NULL]::real[] AS vec, timestamp ''2020-01-01'' + g * interval ''1 ms'' AS ts FROM generate_series(1, 100) g'
SELECT starts_with(uri, :'sub_staging') AS in_staging_dir, num_rows, size_bytes > 0 AS has_bytes, uri AS part
FROM lance_parts.write_part(:'sub', :'part_query', 100) \gset
SELECT :'in_staging_dir' AS in_staging_dir, :'num_rows' AS num_rows;
SELECT lance_parts.register_part(:'sub', :'part');
SELECT name, logical_type, nullable FROM lance_parts.file_schema(:'part') ORDER BY field_id;
-- values that do not fit the target's types, nulls in a non-nullable field
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.write_part(%L, %L)', :'sub',
    replace(:'part_query', '(g % 100)::smallint AS i8', '(g + 100)::smallint AS i8')));
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.write_part(%L, %L)', :'sub',
    replace(:'part_query', 'g::numeric * 1e15 AS u64', '-g AS u64')));
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.write_part(%L, %L)', :'sub',
    replace(:'part_query', 'g::numeric * 1e15 AS u64', '1e20 AS u64')));
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.write_part(%L, %L)', :'sub',
    replace(:'part_query', 'g / 3.0 AS dec', 'g * 1e30 AS dec')));
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.write_part(%L, %L)', :'sub',
    replace(:'part_query', '6, NULL]', '6]')));
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.write_part(%L, %L)', :'sub',
    replace(:'part_query', 'g AS id', 'CASE WHEN g = 50 THEN NULL ELSE g END AS id')));
SELECT lp_test.outcome(format('SELECT * FROM lance_parts.write_part(%L, %L)', :'sub',
    replace(:'part_query', 'g AS id', 'now() AS id')));
-- a wrong row count, a cancel: nothing is left in the staging directory
SELECT lp_test.outcome_detail(format('SELECT * FROM lance_parts.write_part(%L, %L, 99)', :'sub', :'part_query'));
SET statement_timeout = '300ms';
SELECT * FROM lance_parts.write_part(:'sub',
    replace(:'part_query', 'generate_series(1, 100) g', 'generate_series(1, 100000) g WHERE pg_sleep(0.001) IS NOT NULL'));
RESET statement_timeout;
SELECT array_length(lp_test.entries(:'sub_staging'), 1) AS staging_files;
SELECT lp_test.entries(:'staging') AS full_target_staging;
SELECT * FROM lance_parts.clear_parts(:'sub');

-- ---- privileges: writing files on the server is pg_write_server_files' ------
-- (reading the dataset first is pg_read_server_files'); nothing is written
CREATE ROLE lance_parts_nobody_013;
CREATE ROLE lance_parts_reader_013;
GRANT pg_read_server_files TO lance_parts_reader_013;
CREATE TEMP TABLE privileged_write (ord int, fn text, call text);
INSERT INTO privileged_write VALUES
  (1, 'write_file', format('SELECT * FROM lance_parts.write_file(%L, %L)', :'work' || '/denied.lance', 'SELECT 1 AS id')),
  (2, 'write_dataset create', format('SELECT * FROM lance_parts.write_dataset(%L, %L)', :'work' || '/denied_ds.lance', 'SELECT 1::bigint AS id')),
  (3, 'write_dataset append', format('SELECT * FROM lance_parts.write_dataset(%L, %L, %L)', :'dataset', :'part_query', 'append')),
  (4, 'write_part', format('SELECT * FROM lance_parts.write_part(%L, %L)', :'sub', :'part_query'));
GRANT SELECT ON privileged_write TO PUBLIC;
SET ROLE lance_parts_nobody_013;
SELECT fn, lp_test.outcome_detail(call) AS nobody FROM privileged_write ORDER BY ord;
RESET ROLE;
SET ROLE lance_parts_reader_013;
SELECT fn, lp_test.outcome_detail(call) AS reader FROM privileged_write ORDER BY ord;
RESET ROLE;
SELECT lp_test.entries(:'work') @> ARRAY['denied.lance'] AS file_written,
       lp_test.entries(:'work') @> ARRAY['denied_ds.lance'] AS dataset_written,
       array_length(lp_test.entries(:'sub_staging'), 1) AS staging_files;
DROP TABLE privileged_write;
DROP ROLE lance_parts_nobody_013, lance_parts_reader_013;

DROP SERVER write_srv CASCADE;
DROP TABLE write_source;
