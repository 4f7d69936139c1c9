-- lance_fdw filter pushdown: for each pushed operator, the rows a foreign
-- table returns equal the rows PostgreSQL's own evaluation of the same clause
-- returns on a local copy of the table (EXCEPT ALL both ways: every column of
-- every row), over NULLs, NaN, infinities, dates, timestamps, timestamptz in
-- several time zones, text under several collations and bytea; in batches of
-- one size and of 7 rows, on datasets with deletion files and several pages;
-- what is pushed and what is not (EXPLAIN); parameters of generic plans; the
-- EXPLAIN ANALYZE counters, and a LIMIT decoding fewer pages than a full scan.
\set VERBOSITY terse
\getenv testdata LP_TESTDATA
\getenv scratch LP_SCRATCH
SET lance_parts_test.scratch = :'scratch';
SET lance_parts_test.testdata = :'testdata';
\set types22 :testdata '/types_2_2_v2.lance'

CREATE SERVER pushdown_srv FOREIGN DATA WRAPPER lance_fdw;
CREATE SCHEMA pd;
IMPORT FOREIGN SCHEMA generated LIMIT TO (types_2_2_v2, types_2_0_v1, deleted_2_2, multipage_2_2)
    FROM SERVER pushdown_srv INTO pd OPTIONS (uri :'testdata');
-- the same tables, as PostgreSQL's own tables
CREATE SCHEMA local;
CREATE TABLE local.types_2_2_v2 AS SELECT * FROM pd.types_2_2_v2;
CREATE TABLE local.types_2_0_v1 AS SELECT * FROM pd.types_2_0_v1;
CREATE TABLE local.deleted_2_2 AS SELECT * FROM pd.deleted_2_2;
CREATE TABLE local.multipage_2_2 AS SELECT * FROM pd.multipage_2_2;
CREATE COLLATION pg_temp.case_insensitive (provider = icu, locale = 'und-u-ks-level2', deterministic = false);

-- EXPLAIN with the test data directory and random data file names made stable
CREATE FUNCTION pg_temp.explain(options text, query text) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
    line text;
BEGIN
    FOR line IN EXECUTE format('EXPLAIN (%s) %s', options, query) LOOP
        -- PostgreSQL 18 prints actual rows per loop with two decimals
        RETURN NEXT regexp_replace(regexp_replace(regexp_replace(
                   replace(line, current_setting('lance_parts_test.testdata'), '$TESTDATA'),
                   '[01]{24}[0-9a-f]{26}\.lance', '$NAME.lance', 'g'),
               'Pages (Decoded|Skipped): \d+', 'Pages \1: N'),
               'actual rows=(\d+)\.00 ', 'actual rows=\1 ');
    END LOOP;
END
$$;

-- Whether the clause is pushed (yes, partly: a local Filter remains, no), how
-- many rows the foreign table returns, and the rows PostgreSQL's evaluation
-- on the local copy returns that the foreign table does not (missing) and
-- the other way round (extra).
CREATE FUNCTION pg_temp.check(tbl text, clause text)
RETURNS TABLE (pushed text, matches bigint, missing bigint, extra bigint)
LANGUAGE plpgsql AS $$
DECLARE
    plan jsonb;
BEGIN
    EXECUTE format('EXPLAIN (FORMAT JSON, COSTS OFF) SELECT * FROM pd.%I WHERE %s', tbl, clause) INTO plan;
    plan := plan->0->'Plan';
    pushed := CASE WHEN NOT plan ? 'Lance Filter' THEN 'no'
                   WHEN plan ? 'Filter' THEN 'partly' ELSE 'yes' END;
    EXECUTE format('SELECT count(*) FROM pd.%I WHERE %s', tbl, clause) INTO matches;
    EXECUTE format('SELECT count(*) FROM (SELECT * FROM local.%1$I WHERE %2$s EXCEPT ALL SELECT * FROM pd.%1$I WHERE %2$s) d',
                   tbl, clause) INTO missing;
    EXECUTE format('SELECT count(*) FROM (SELECT * FROM pd.%1$I WHERE %2$s EXCEPT ALL SELECT * FROM local.%1$I WHERE %2$s) d',
                   tbl, clause) INTO extra;
    RETURN NEXT;
END
$$;

-- The clauses that are pushed, on every type that takes them
CREATE TEMP TABLE pushed_clauses (clause text);
INSERT INTO pushed_clauses VALUES
    ('i8 = 127'), ('i16 <> 0'), ('i32 < 0'), ('i64 <= -1'), ('i32 > 1000'), ('i16 >= 100'),
    ('i32 BETWEEN -1000 AND 1000'),
    ('i8 = 127::bigint'), ('i32 < 3000000000'), ('i64 = 5::smallint'), ('100 < i16'),
    ('u8 > 100'), ('u32 >= 2147483648'), ('u16 = 65535'),
    ('f32 = ''NaN'''), ('f32 > 0'), ('f32 < ''Infinity'''), ('f32 = ''-Infinity'''), ('f32 <> ''NaN'''),
    ('f64 >= ''NaN'''), ('f64 > ''Infinity'''), ('f64 = 0.1'), ('f32 = 0.1'), ('f32 = 0.1::real'), ('f64 < -1e300'),
    ('f32 < 1e39::float8'), ('f64 = ''-0'''),
    ('f64 IN (0, ''Infinity'', ''NaN'')'), ('f32 = ANY (''{NaN,0,-Infinity}''::real[])'),
    ('b'), ('NOT b'), ('b = false'), ('b <> true'), ('b IS TRUE'), ('b IS NOT TRUE'), ('b IS FALSE'),
    ('b IS NOT FALSE'), ('b IS UNKNOWN'), ('b IS NOT UNKNOWN'), ('b < true'),
    ('d < ''1970-01-01'''), ('d = ''2000-02-29'''), ('d BETWEEN ''1900-01-01'' AND ''2000-01-01'''),
    ('d > ''-infinity'''), ('d < ''infinity''::date'), ('d < to_date(''2000-01-01'', ''YYYY-MM-DD'')'), ('d >= ''1970-01-01 12:00''::timestamp'),
    ('d IN (''0001-01-01'', ''9999-12-31'')'),
    ('ts > ''2000-01-01'''), ('ts = ''1970-01-01'''), ('ts < ''infinity'''), ('ts >= ''2000-02-29''::date'),
    ('ts <= ''9999-12-31 23:59:59.999999'''),
    ('s = '''''), ('s IN ('''', ''héllo wörld'')'), ('s = ''日本語のテキスト'' COLLATE "C"'),
    ('s = ''emoji 🎉🚀'' COLLATE "POSIX"'), ('cat = ''red'' COLLATE "en-x-icu"'),
    ('bin = ''\x00'''), ('bin IN (''\x'', ''\xfffe005c'')'), ('lbin = ''\x'''),
    ('s IS NULL'), ('s IS NOT NULL'), ('vec IS NULL'), ('st IS NOT NULL'), ('li IS NULL'),
    ('all_null IS NULL'), ('dec IS NOT NULL'), ('u64 IS NULL'),
    ('i32 IN (NULL, 1, 2147483647)'), ('i32 <> ALL (''{1,2}'')'), ('i32 <> ALL (''{1,NULL}'')'),
    ('i32 = ANY (''{}''::int[])'), ('i32 <> ALL (''{}''::int[])'), ('i32 = ANY (NULL::int[])'),
    -- ANY/ALL: the column is the operator's left argument, each element its right one
    ('i32 < ANY (''{0,1000}'')'), ('i32 < ALL (''{0,1000}'')'), ('i32 >= ALL (''{-5,NULL}'')'),
    ('i64 = ANY (ARRAY[-1])'), ('i64 = ANY (ARRAY[0])'), ('i64 >= ALL (ARRAY[1, 1])'), ('i16 < ANY (ARRAY[32767])'),
    ('i16 > ALL (''{-1}''::bigint[])'), ('b >= ALL (ARRAY[true])'), ('f32 < ANY (ARRAY[0.1::float8])'),
    ('d = ANY (ARRAY[''2000-02-29''::timestamp])'), ('d IN (date ''2000-02-29'', timestamp ''1970-01-01 00:00'')'),
    ('ts > ALL (ARRAY[date ''1970-01-01''])'), ('i32 NOT IN (1, 2, 3::bigint)'),
    ('i32 > 0 AND i16 < 0 AND s IS NOT NULL'), ('id = 7');

SELECT c.clause, r.* FROM pushed_clauses c, pg_temp.check('types_2_2_v2', c.clause) r;

-- timestamptz, and dates against timestamptz, depend on the time zone
CREATE TEMP TABLE zone_clauses (clause text);
INSERT INTO zone_clauses VALUES
    ('tstz < ''2000-01-01 00:00:00'''), ('tstz = ''1970-01-01 00:00:01+00'''), ('tstz >= ''1970-01-01''::date'),
    ('tstz IN (''1970-01-01 00:00:00'', ''1999-12-31 23:59:59.999999'')'), ('tstz > ''1970-01-01 05:30'''),
    ('d < ''1970-01-01 00:00''::timestamptz'), ('d = ANY (ARRAY[''1970-01-01''::timestamptz])'), ('tstz < ''infinity'''), ('tstz > ''1970-01-01 00:00:00''::timestamptz + interval ''1 day''');
SET TimeZone = 'UTC';
SELECT 'UTC' AS zone, c.clause, r.* FROM zone_clauses c, pg_temp.check('types_2_2_v2', c.clause) r;
SET TimeZone = 'America/New_York';
SELECT 'America/New_York' AS zone, c.clause, r.* FROM zone_clauses c, pg_temp.check('types_2_2_v2', c.clause) r;
SET TimeZone = 'Asia/Kolkata';
SELECT 'Asia/Kolkata' AS zone, c.clause, r.* FROM zone_clauses c, pg_temp.check('types_2_2_v2', c.clause) r;
RESET TimeZone;

-- batches of 7 rows: a 2.0 dataset, deletion files and several pages per column
SET lance_parts.fdw_batch_rows = 7;
SELECT 'types_2_0_v1' AS tbl, c.clause, r.*
FROM (VALUES ('i32 < 0'), ('f64 >= ''NaN'''), ('b IS NOT TRUE'), ('s = '''''), ('d = ''2000-02-29''')) c(clause),
     pg_temp.check('types_2_0_v1', c.clause) r;
SELECT 'deleted_2_2' AS tbl, c.clause, r.*
FROM (VALUES ('id < 150'), ('id % 10 = 3'), ('cat = ''green'''), ('f32 <> ''NaN'''), ('id IN (3, 4, 13, 290, 300)'),
             ('b')) c(clause),
     pg_temp.check('deleted_2_2', c.clause) r;
SELECT 'multipage_2_2' AS tbl, c.clause, r.*
FROM (VALUES ('x < 10'), ('x IS NULL'), ('id BETWEEN 4990 AND 5010'), ('s IS NULL'), ('li IS NULL AND x > 500')) c(clause),
     pg_temp.check('multipage_2_2', c.clause) r;
RESET lance_parts.fdw_batch_rows;

-- ---- what is not pushed, and why -------------------------------------------
CREATE FOREIGN TABLE pd.retyped (id bigint, i32 text, s varchar, f64 numeric) SERVER pushdown_srv
    OPTIONS (uri :'types22');
CREATE TABLE local.retyped AS SELECT * FROM pd.retyped;
SELECT c.clause, r.*
FROM (VALUES
    ('s LIKE ''h%'''),                              -- pattern matching
    ('s ~ ''^q'''),                                 -- regular expressions
    ('s < ''m'''),                                  -- text ordering (collation rules)
    ('cat = ''RED'' COLLATE pg_temp.case_insensitive'),  -- a nondeterministic collation
    ('length(s) = 0'),                              -- a function of the column
    ('i32 = i16'),                                  -- two columns
    ('i32 / 2 = 5'),                                -- an expression of the column
    ('i32 > floor(random())'),                      -- a volatile value (always 0 here)
    ('i32 > (SELECT 1000)'),                        -- a value computed by the executor (an initplan)
    ('dec = 0'),                                    -- numeric is not among the pushed types
    ('u64 > 5'),                                    -- nor is uint64 (numeric)
    ('bin < ''\x01'''),                             -- bytea ordering
    ('cat <> ALL (ARRAY[''red'', ''blue''])'),      -- text inequality (equality and IN only)
    ('i32 NOT BETWEEN -1000 AND 1000'),             -- OR of two clauses
    ('i32 = 1 OR i16 = 1'),
    ('i32 > 0 AND s LIKE ''h%''')                   -- one of the two
) c(clause), pg_temp.check('types_2_2_v2', c.clause) r;
-- columns converted through text (declared with another type than the mapped one)
SELECT c.clause, r.*
FROM (VALUES ('i32 = ''5'''), ('s = ''''::varchar'), ('f64 > 0'), ('i32 IS NULL')) c(clause),
     pg_temp.check('retyped', c.clause) r;

SELECT pg_temp.explain('COSTS OFF', $$SELECT id FROM pd.types_2_2_v2 WHERE i32 > 0 AND s LIKE 'h%' AND f64 IN (1, 2)$$);
SELECT pg_temp.explain('COSTS OFF', $$SELECT id FROM pd.types_2_2_v2 WHERE b AND d BETWEEN '2000-01-01' AND '2001-01-01'$$);
SELECT pg_temp.explain('COSTS OFF, VERBOSE', $$SELECT id FROM pd.types_2_2_v2 WHERE cat = 'red' AND cat = 'RED' COLLATE pg_temp.case_insensitive$$);
SELECT pg_temp.explain('COSTS OFF', $$SELECT id FROM pd.retyped WHERE i32 = '5'$$);
-- with pushdown off, the same clauses are local
SET lance_parts.fdw_pushdown = off;
SELECT pg_temp.explain('COSTS OFF', $$SELECT id FROM pd.types_2_2_v2 WHERE i32 > 0 AND f64 IN (0, 'Infinity')$$);
SELECT count(*) FROM pd.types_2_2_v2 WHERE i32 > 0 AND f64 IN (0, 'Infinity');
RESET lance_parts.fdw_pushdown;
SELECT count(*) FROM pd.types_2_2_v2 WHERE i32 > 0 AND f64 IN (0, 'Infinity');

-- ---- parameters: custom and generic plans ----------------------------------
PREPARE by_i32(int, text) AS SELECT count(*), sum(id) FROM pd.types_2_2_v2 WHERE i32 > $1 AND cat = $2;
SET plan_cache_mode = force_generic_plan;
SELECT pg_temp.explain('COSTS OFF', $$EXECUTE by_i32(0, 'red')$$);
EXECUTE by_i32(0, 'red');
EXECUTE by_i32(-1000000, 'blue');
SET plan_cache_mode = force_custom_plan;
EXECUTE by_i32(0, 'red');
RESET plan_cache_mode;
SELECT count(*), sum(id) FROM local.types_2_2_v2 WHERE i32 > 0 AND cat = 'red';
SELECT count(*), sum(id) FROM local.types_2_2_v2 WHERE i32 > -1000000 AND cat = 'blue';
-- a rescan with another outer value (the pushed clause is the constant one)
SELECT a.id, (SELECT count(*) FROM pd.deleted_2_2 d WHERE d.id <= a.id AND d.i32 > 0) AS pushed_count,
       (SELECT count(*) FROM local.deleted_2_2 d WHERE d.id <= a.id AND d.i32 > 0) AS local_count
FROM local.types_2_2_v2 a WHERE a.id IN (0, 3, 13, 200, 400) ORDER BY a.id;

-- ---- EXPLAIN ANALYZE: rows removed by the pushed clauses, pages -------------
CREATE FUNCTION pg_temp.counters(query text)
RETURNS TABLE (actual_rows bigint, removed_by_lance_filter bigint, removed_by_filter bigint,
               pages_decoded bigint, pages_skipped bigint)
LANGUAGE plpgsql AS $$
DECLARE
    plan jsonb;
BEGIN
    EXECUTE 'EXPLAIN (ANALYZE, FORMAT JSON, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || query INTO plan;
    plan := jsonb_path_query_first(plan, 'strict $.**?(@."Node Type" == "Foreign Scan")');
    -- a number with two decimals from PostgreSQL 18 on
    actual_rows := (plan->>'Actual Rows')::numeric;
    removed_by_lance_filter := plan->'Rows Removed by Lance Filter';
    removed_by_filter := plan->'Rows Removed by Filter';
    pages_decoded := plan->'Lance Pages Decoded';
    pages_skipped := plan->'Lance Pages Skipped';
    RETURN NEXT;
END
$$;
SELECT actual_rows, removed_by_lance_filter, removed_by_filter
FROM pg_temp.counters($$SELECT * FROM pd.types_2_2_v2 WHERE f32 = 'NaN' AND s LIKE 'h%'$$);
SELECT actual_rows, removed_by_lance_filter
FROM pg_temp.counters($$SELECT * FROM pd.deleted_2_2 WHERE id < 150$$);
-- the lines (the numbers of pages depend on the files' page sizes)
SELECT pg_temp.explain('ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF',
                       $$SELECT id FROM pd.types_2_2_v2 WHERE i8 = 127 AND s LIKE 'h%'$$);

-- A LIMIT without ordering stops decoding: fewer pages than a full scan; a
-- batch whose rows all fail the pushed clauses decodes no other column.
SET lance_parts.fdw_batch_rows = 100;
SELECT l.pages_decoded < f.pages_decoded AS limit_decodes_fewer_pages,
       n.pages_decoded < f.pages_decoded AS no_match_decodes_fewer_pages,
       l.pages_decoded > 0 AS limit_decodes_pages
FROM pg_temp.counters('SELECT * FROM pd.multipage_2_2 LIMIT 5') l,
     pg_temp.counters('SELECT * FROM pd.multipage_2_2') f,
     pg_temp.counters('SELECT * FROM pd.multipage_2_2 WHERE id < 0') n;
RESET lance_parts.fdw_batch_rows;
