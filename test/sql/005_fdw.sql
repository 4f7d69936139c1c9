-- lance_fdw: option validation, privileges, IMPORT FOREIGN SCHEMA (whole
-- directories, LIMIT TO / EXCEPT, one dataset or file, the server's root,
-- quotes in paths and names), scans with projection and quals, ReScan,
-- deletion files, dataset versions, type conversions and EXPLAIN.
\set VERBOSITY terse
\getenv testdata LP_TESTDATA
\getenv scratch LP_SCRATCH
SET lance_parts_test.scratch = :'scratch';
SET lance_parts_test.testdata = :'testdata';
\set types22 :testdata '/types_2_2_v2.lance'
\set types23 :testdata '/types_2_3_v1.lance'
\set deleted :testdata '/deleted_2_2.lance'
\set one_file :scratch '/005/one file.lance'
\set root :scratch '/005/o''root'

-- EXPLAIN with the data directories and random data file names made stable
CREATE FUNCTION pg_temp.explain(query text) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
    line text;
BEGIN
    FOR line IN EXECUTE 'EXPLAIN (COSTS OFF, VERBOSE) ' || query LOOP
        RETURN NEXT regexp_replace(
            replace(replace(line, current_setting('lance_parts_test.scratch'), '$SCRATCH'),
                    current_setting('lance_parts_test.testdata'), '$TESTDATA'),
            '[01]{24}[0-9a-f]{26}\.lance', '$NAME.lance', 'g');
    END LOOP;
END
$$;

SELECT fdwname, fdwhandler::regproc, fdwvalidator::regproc
FROM pg_foreign_data_wrapper WHERE fdwname = 'lance_fdw';

-- ---- options (with hints: the valid options of each context) ----------------
CREATE SERVER lance_srv FOREIGN DATA WRAPPER lance_fdw;
\set VERBOSITY default
CREATE SERVER bad_srv FOREIGN DATA WRAPPER lance_fdw OPTIONS (uri '/tmp');
CREATE SERVER bad_srv FOREIGN DATA WRAPPER lance_fdw OPTIONS (root '/a', root '/b');
ALTER FOREIGN DATA WRAPPER lance_fdw OPTIONS (ADD root '/tmp');
CREATE USER MAPPING FOR CURRENT_USER SERVER lance_srv OPTIONS (user 'x');
CREATE FOREIGN TABLE bad (id bigint) SERVER lance_srv;
CREATE FOREIGN TABLE bad (id bigint) SERVER lance_srv OPTIONS (uri '/tmp', root '/tmp');
CREATE FOREIGN TABLE bad (id bigint) SERVER lance_srv OPTIONS (uri '/tmp', version 'latest');
CREATE FOREIGN TABLE bad (id bigint) SERVER lance_srv OPTIONS (uri '/tmp', version '0');
CREATE FOREIGN TABLE bad (id bigint) SERVER lance_srv OPTIONS (uri 's3://bucket/x.lance');
CREATE FOREIGN TABLE bad (id bigint OPTIONS (name 'x')) SERVER lance_srv OPTIONS (uri '/tmp');
CREATE FOREIGN TABLE bad (id bigint OPTIONS (column_name '')) SERVER lance_srv OPTIONS (uri '/tmp');
-- duplicates that reach the validator directly
SELECT lance_parts.lance_fdw_validator(ARRAY['uri=/a', 'uri=/b'], 'pg_foreign_table'::regclass);
\set VERBOSITY terse

-- ---- privileges ------------------------------------------------------------
CREATE ROLE regress_lance_fdw_user;
GRANT USAGE ON FOREIGN DATA WRAPPER lance_fdw TO regress_lance_fdw_user;
GRANT USAGE ON FOREIGN SERVER lance_srv TO regress_lance_fdw_user;
GRANT CREATE ON SCHEMA public TO regress_lance_fdw_user;
SET ROLE regress_lance_fdw_user;
\set VERBOSITY default
CREATE FOREIGN TABLE public.not_mine (id bigint) SERVER lance_srv OPTIONS (uri '/etc');
IMPORT FOREIGN SCHEMA x FROM SERVER lance_srv INTO public OPTIONS (uri '/etc');
CREATE SERVER lance_user_srv FOREIGN DATA WRAPPER lance_fdw OPTIONS (root '/etc');
\set VERBOSITY terse
RESET ROLE;
-- a privileged role's table may be granted, as with file_fdw
CREATE FOREIGN TABLE granted (id bigint, s text) SERVER lance_srv
    OPTIONS (uri :'types22');
GRANT SELECT ON granted TO regress_lance_fdw_user;
SET ROLE regress_lance_fdw_user;
SELECT count(*), count(s) FROM granted;
RESET ROLE;
DROP FOREIGN TABLE granted;
REVOKE CREATE ON SCHEMA public FROM regress_lance_fdw_user;
REVOKE USAGE ON FOREIGN SERVER lance_srv FROM regress_lance_fdw_user;
REVOKE USAGE ON FOREIGN DATA WRAPPER lance_fdw FROM regress_lance_fdw_user;
DROP ROLE regress_lance_fdw_user;

-- ---- IMPORT FOREIGN SCHEMA ---------------------------------------------------
CREATE SCHEMA imp_all;
IMPORT FOREIGN SCHEMA generated FROM SERVER lance_srv INTO imp_all OPTIONS (uri :'testdata');
SELECT foreign_table_name FROM information_schema.foreign_tables
WHERE foreign_table_schema = 'imp_all' ORDER BY 1;
-- columns and types of the types datasets
SELECT attname, format_type(atttypid, atttypmod), attnotnull
FROM pg_attribute WHERE attrelid = 'imp_all.types_2_3_v1'::regclass AND attnum > 0 ORDER BY attnum;
SELECT lp_test.stable(array_to_string(ftoptions, ',')) FROM pg_foreign_table
WHERE ftrelid = 'imp_all.deleted_2_2'::regclass;

CREATE SCHEMA imp_limit;
IMPORT FOREIGN SCHEMA generated LIMIT TO (types_2_1_v1, deleted_2_2, no_such_dataset)
    FROM SERVER lance_srv INTO imp_limit OPTIONS (uri :'testdata');
SELECT foreign_table_name FROM information_schema.foreign_tables
WHERE foreign_table_schema = 'imp_limit' ORDER BY 1;

CREATE SCHEMA imp_except;
IMPORT FOREIGN SCHEMA generated EXCEPT (types_legacy_v1, types_legacy_v2, blob_2_2, multipage_2_0)
    FROM SERVER lance_srv INTO imp_except OPTIONS (uri :'testdata');
SELECT count(*) AS tables,
       bool_or(foreign_table_name IN ('types_legacy_v1', 'types_legacy_v2', 'blob_2_2', 'multipage_2_0')) AS any_excluded
FROM information_schema.foreign_tables WHERE foreign_table_schema = 'imp_except';

-- one dataset, and one data file (named after the file; the largest file of
-- types_2_3_v1 is its first fragment, rows 0-299)
CREATE SCHEMA imp_one;
IMPORT FOREIGN SCHEMA x FROM SERVER lance_srv INTO imp_one OPTIONS (uri :'deleted');
\! mkdir -p "$LP_SCRATCH/005/o'root/sub" && cp -r "$LP_TESTDATA/types_2_2_v2.lance" "$LP_SCRATCH/005/o'root/sub/o'brien.lance" && cp -r "$LP_TESTDATA/deleted_2_2.lance" "$LP_SCRATCH/005/o'root/sub/" && cp "$(ls -S "$LP_TESTDATA"/types_2_3_v1.lance/data/*.lance | head -n 1)" "$LP_SCRATCH/005/one file.lance"
IMPORT FOREIGN SCHEMA x FROM SERVER lance_srv INTO imp_one OPTIONS (uri :'one_file');
SELECT foreign_table_name FROM information_schema.foreign_tables
WHERE foreign_table_schema = 'imp_one' ORDER BY 1;
SELECT count(*) FROM imp_one."one file";

-- the server's root: the remote schema is a directory under it; a quote in
-- the path and in a dataset name survives the generated statements
CREATE SERVER lance_root FOREIGN DATA WRAPPER lance_fdw OPTIONS (root :'root');
CREATE SCHEMA imp_root;
IMPORT FOREIGN SCHEMA sub FROM SERVER lance_root INTO imp_root;
SELECT foreign_table_name FROM information_schema.foreign_tables
WHERE foreign_table_schema = 'imp_root' ORDER BY 1;
SELECT lp_test.stable(array_to_string(ftoptions, ',')) FROM pg_foreign_table
WHERE ftrelid = 'imp_root."o''brien"'::regclass;
SELECT count(*) FROM imp_root."o'brien";
-- a relative uri is taken under the root
CREATE FOREIGN TABLE relative_uri (id bigint) SERVER lance_root OPTIONS (uri 'sub/deleted_2_2.lance');
SELECT count(*) FROM relative_uri;

-- IMPORT errors
IMPORT FOREIGN SCHEMA sub FROM SERVER lance_srv INTO imp_root;
IMPORT FOREIGN SCHEMA ".." FROM SERVER lance_root INTO imp_root;
IMPORT FOREIGN SCHEMA x FROM SERVER lance_srv INTO imp_root OPTIONS (path '/tmp');
SELECT lp_test.outcome(format('IMPORT FOREIGN SCHEMA x FROM SERVER lance_srv INTO imp_root OPTIONS (uri %L)',
                              :'scratch' || '/005/missing'));

-- ---- scans -----------------------------------------------------------------
SELECT count(*) FROM imp_all.types_2_2_v2;
-- projection and quals on foreign columns: only the needed fields are read
SELECT * FROM pg_temp.explain('SELECT id, s FROM imp_all.types_2_3_v2 WHERE i8 = 127');
SELECT id, s FROM imp_all.types_2_3_v2 WHERE i8 = 127 ORDER BY id;
SELECT cat, count(*) FROM imp_all.types_2_1_v2 WHERE const_i = 42 GROUP BY cat ORDER BY cat;
SELECT id, li, lstr, st, vec[1:2] FROM imp_all.types_2_2_v1 WHERE id < 4 ORDER BY id;
-- count(*) reads no field at all
SELECT * FROM pg_temp.explain('SELECT count(*) FROM imp_all.deleted_2_2');

-- deleted rows are skipped: ids as the reference reads them
SELECT count(*) AS rows,
       (SELECT array_agg(id ORDER BY id) FROM imp_all.deleted_2_2) =
       (SELECT array_agg((r->>'id')::bigint ORDER BY (r->>'id')::bigint)
        FROM jsonb_array_elements(pg_read_file(:'testdata' || '/deleted_2_2.rows.json')::jsonb) r) AS same_ids
FROM imp_all.deleted_2_2;
SELECT count(*) FROM imp_all.deleted_2_2 WHERE (id < 120 AND id % 10 = 3) OR (id >= 270 AND id < 300);

-- ReScan: the inner foreign scan of a nested loop runs once per outer row
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET enable_material = off;
SELECT * FROM pg_temp.explain('SELECT a.id, b.s FROM imp_all.types_2_1_v1 a JOIN imp_all.deleted_2_2 b ON a.id = b.id WHERE a.id < 5');
SELECT a.id, b.s IS NOT DISTINCT FROM a.s AS same_s
FROM imp_all.types_2_1_v1 a JOIN imp_all.deleted_2_2 b ON a.id = b.id WHERE a.id < 5 ORDER BY a.id;
SELECT a.id, (SELECT count(*) FROM imp_all.deleted_2_2 d WHERE d.id <= a.id) AS at_most
FROM imp_all.types_2_2_v2 a WHERE a.id IN (0, 3, 13, 200, 400) ORDER BY a.id;
RESET enable_hashjoin;
RESET enable_mergejoin;
RESET enable_material;

-- dataset versions
CREATE FOREIGN TABLE deleted_v2 (id bigint) SERVER lance_srv
    OPTIONS (uri :'deleted', version '2');
CREATE FOREIGN TABLE deleted_v3 (id bigint) SERVER lance_srv
    OPTIONS (uri :'deleted', version '3');
SELECT (SELECT count(*) FROM deleted_v2) AS v2, (SELECT count(*) FROM deleted_v3) AS v3;
SELECT * FROM pg_temp.explain('SELECT * FROM deleted_v2');
ALTER FOREIGN TABLE deleted_v2 OPTIONS (SET version '99');
SELECT lp_test.outcome('SELECT count(*) FROM deleted_v2');

-- a single data file; version does not apply to it
CREATE FOREIGN TABLE one_file (id bigint, s text) SERVER lance_srv
    OPTIONS (uri :'one_file');
SELECT count(*), min(id), max(id) FROM one_file;
SELECT * FROM pg_temp.explain('SELECT s FROM one_file');
ALTER FOREIGN TABLE one_file OPTIONS (ADD version '1');
SELECT lp_test.outcome('SELECT count(*) FROM one_file');

-- column_name, missing fields, declared types other than the mapped ones
CREATE FOREIGN TABLE renamed (ident bigint OPTIONS (column_name 'id'), label text OPTIONS (column_name 's'))
    SERVER lance_srv OPTIONS (uri :'types23');
SELECT ident, label FROM renamed WHERE ident IN (2, 5) ORDER BY ident;
CREATE FOREIGN TABLE missing_field (id bigint, nosuch int) SERVER lance_srv
    OPTIONS (uri :'types23');
SELECT lp_test.outcome('SELECT nosuch FROM missing_field');
SELECT count(id) FROM missing_field;
CREATE FOREIGN TABLE other_types (id text, i8 bigint, d text, cat varchar(3), vec jsonb, li text,
                                  dec numeric(40, 2), i64 smallint)
    SERVER lance_srv OPTIONS (uri :'types22');
SELECT id, i8, d, vec -> 1 AS vec1, li, dec FROM other_types WHERE id::int IN (1, 2) ORDER BY id;
SELECT lp_test.outcome('SELECT cat FROM other_types');
SELECT lp_test.outcome('SELECT i64 FROM other_types');

-- what cannot be read is refused with a clear error
SELECT lp_test.outcome('SELECT count(*) FROM imp_all.types_legacy_v1');

-- blob v2 columns read as their descriptors (where each payload is stored)
SELECT id, payload FROM imp_all.blob_2_2 WHERE id IN (0, 2, 5) ORDER BY id;

DROP SCHEMA imp_all, imp_limit, imp_except, imp_one, imp_root CASCADE;
DROP SERVER lance_srv, lance_root CASCADE;
