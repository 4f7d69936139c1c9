-- ANALYZE of lance_fdw foreign tables: row counts and pages in pg_class, the
-- statistics in pg_stats (exact where the sample holds every live row), rows
-- deleted by deletion files left out, a reservoir sample of a larger
-- dataset, plans before and after, privileges, and what cannot be read.
\set VERBOSITY terse
\getenv testdata LP_TESTDATA
\getenv scratch LP_SCRATCH
SET lance_parts_test.scratch = :'scratch';
SET lance_parts_test.testdata = :'testdata';
\set types22 :testdata '/types_2_2_v2.lance'
\set missing :scratch '/009/no_such.lance'
\set lost_file :scratch '/009/deleted_2_2.lance'

CREATE TEMP TABLE reference AS
SELECT d->>'name' AS dataset,
       (d->>'num_rows')::bigint AS live_rows,
       (SELECT ceil(sum((f->>'file_size_bytes')::bigint) / 8192.0)
        FROM jsonb_array_elements(d->'data_files') f) AS pages,
       jsonb_array_length(d->'data_files') AS data_files,
       d->>'rows_file' AS rows_file
FROM jsonb_array_elements(pg_read_file(:'testdata' || '/manifest.json')::jsonb->'datasets') d;

CREATE SERVER analyze_srv FOREIGN DATA WRAPPER lance_fdw;
CREATE SCHEMA ana;
IMPORT FOREIGN SCHEMA generated LIMIT TO (types_2_2_v2, deleted_2_2, multipage_2_2, types_legacy_v2)
    FROM SERVER analyze_srv INTO ana OPTIONS (uri :'testdata');

-- The planner's estimated rows of a query's top plan node.
CREATE FUNCTION pg_temp.plan_rows(query text) RETURNS float8
LANGUAGE plpgsql AS $$
DECLARE
    plan jsonb;
BEGIN
    EXECUTE 'EXPLAIN (FORMAT JSON) ' || query INTO plan;
    RETURN (plan->0->'Plan'->>'Plan Rows')::float8;
END
$$;

-- What ANALYZE computes from a sample of every row (analyze.c): the
-- fraction of NULLs, and the distinct values as a count or, when there are
-- more than a tenth of the rows or no value repeats, as minus their
-- fraction of the rows.
CREATE FUNCTION pg_temp.expected_stats(tbl regclass)
RETURNS TABLE (attname name, null_frac real, n_distinct real)
LANGUAGE plpgsql AS $$
DECLARE
    total bigint;
    nonnull bigint;
    distinct_values bigint;
BEGIN
    FOR attname IN SELECT a.attname FROM pg_attribute a
                   WHERE a.attrelid = tbl AND a.attnum > 0 AND NOT a.attisdropped
                   ORDER BY a.attnum LOOP
        EXECUTE format('SELECT count(*), count(%1$I), count(DISTINCT %1$I) FROM %2$s', attname, tbl)
            INTO total, nonnull, distinct_values;
        null_frac := (total - nonnull)::float8 / total;
        n_distinct := CASE WHEN distinct_values = 0 THEN 0
                           WHEN distinct_values = nonnull OR distinct_values > 0.1 * total
                               THEN -(distinct_values::float8 / total)
                           ELSE distinct_values END;
        RETURN NEXT;
    END LOOP;
END
$$;

-- before ANALYZE: estimates from the defaults (an equality matches 0.5 %)
CREATE TABLE colors AS SELECT * FROM (VALUES ('green'), ('red'), ('green'), ('red')) v(cat);
ANALYZE colors;
SELECT relname, reltuples, relpages FROM pg_class
WHERE relnamespace = 'ana'::regnamespace ORDER BY relname;
SELECT pg_temp.plan_rows($$SELECT * FROM ana.deleted_2_2 WHERE cat = 'green'$$) AS where_rows,
       pg_temp.plan_rows('SELECT * FROM colors JOIN ana.deleted_2_2 USING (cat)') AS join_rows;

-- three fragments; three fragments, two of them with a deletion file
-- (their rows are counted as dead, not live); two fragments, 8000 rows.
-- ANALYZE VERBOSE runs in a session of its own, whose output keeps the lines
-- lance_parts adds: PostgreSQL 18 follows them with I/O and WAL counts that
-- vary by run.
\setenv LP_ANALYZE_DB :DBNAME
\! psql -X -d "$LP_ANALYZE_DB" -c 'ANALYZE VERBOSE ana.types_2_2_v2, ana.deleted_2_2, ana.multipage_2_2' 2>&1 | grep -E '^INFO:  (analyzing|"[a-z0-9_]+": Lance)'

-- reltuples is the live row count of the reference; relpages the data files' size
SELECT c.relname, c.reltuples = r.live_rows AS rows_ok, c.reltuples,
       c.relpages = r.pages AS pages_ok
FROM pg_class c JOIN reference r ON r.dataset = c.relname
WHERE c.relnamespace = 'ana'::regnamespace AND c.relname <> 'types_legacy_v2' ORDER BY 1;

-- every declared column has statistics, and they are what the rows give
SELECT s.tablename, count(*) AS columns,
       count(*) FILTER (WHERE s.null_frac = e.null_frac) AS null_frac_ok,
       count(*) FILTER (WHERE s.n_distinct = e.n_distinct) AS n_distinct_ok
FROM (VALUES ('ana.types_2_2_v2'::regclass), ('ana.deleted_2_2'), ('ana.multipage_2_2')) t(tbl),
     pg_temp.expected_stats(t.tbl) e
     LEFT JOIN pg_stats s ON s.schemaname = 'ana' AND s.attname = e.attname
WHERE s.tablename = (SELECT relname FROM pg_class WHERE oid = t.tbl)
GROUP BY 1 ORDER BY 1;
SELECT tablename, count(*) FROM pg_stats WHERE schemaname = 'ana' GROUP BY 1 ORDER BY 1;
-- a few by value
SELECT tablename, attname, null_frac, n_distinct, most_common_vals
FROM pg_stats WHERE schemaname = 'ana' AND attname IN ('id', 'cat', 'b', 'all_null', 'const_i')
ORDER BY 1, 2;

-- the sample of deleted_2_2 is exactly its live rows: with 1000 histogram
-- bins every id of the sample is a bound, and they are the reference's ids
-- (none the delete predicate matched)
ALTER FOREIGN TABLE ana.deleted_2_2 ALTER COLUMN id SET STATISTICS 1000;
ANALYZE ana.deleted_2_2;
SELECT array_length(s.histogram_bounds::text::bigint[], 1) AS bounds,
       s.histogram_bounds::text::bigint[] =
           (SELECT array_agg((row->>'id')::bigint ORDER BY (row->>'id')::bigint)
            FROM reference r, jsonb_array_elements(pg_read_file(r.rows_file)::jsonb) row
            WHERE r.dataset = 'deleted_2_2') AS reference_ids,
       (SELECT count(*) FROM unnest(s.histogram_bounds::text::bigint[]) id
        WHERE (id < 120 AND id % 10 = 3) OR (id >= 270 AND id < 300)) AS deleted_ids
FROM pg_stats s WHERE s.schemaname = 'ana' AND s.tablename = 'deleted_2_2' AND s.attname = 'id';

-- after ANALYZE: the estimates are the exact counts (most common values)
SELECT pg_temp.plan_rows($$SELECT * FROM ana.deleted_2_2 WHERE cat = 'green'$$) AS where_rows,
       (SELECT count(*) FROM ana.deleted_2_2 WHERE cat = 'green') AS where_actual,
       pg_temp.plan_rows('SELECT * FROM colors JOIN ana.deleted_2_2 USING (cat)') AS join_rows,
       (SELECT count(*) FROM colors JOIN ana.deleted_2_2 USING (cat)) AS join_actual;

-- a sample smaller than the table (300 rows of 8000): a reservoir sample,
-- so it reaches both fragments (ids 0-4999 and 5000-7999) and never holds a
-- row twice; the row count stays exact
\! psql -X -d "$LP_ANALYZE_DB" -c 'SET default_statistics_target = 1' -c 'ANALYZE VERBOSE ana.multipage_2_2' 2>&1 | grep -E '^INFO:  (analyzing|"[a-z0-9_]+": Lance)'
SELECT c.reltuples, s.null_frac, s.n_distinct,
       (s.histogram_bounds::text::bigint[])[1] < 1000 AS low_id,
       (s.histogram_bounds::text::bigint[])[2] > 7000 AS high_id
FROM pg_class c, pg_stats s
WHERE c.oid = 'ana.multipage_2_2'::regclass
  AND s.schemaname = 'ana' AND s.tablename = 'multipage_2_2' AND s.attname = 'id';

-- a single data file: pages from its size in the store
SELECT d->>'path' || '/data/' || (f->>'file') AS one_file,
       ceil((f->>'file_size_bytes')::bigint / 8192.0) AS one_file_pages,
       (f->>'num_rows')::bigint AS one_file_rows
FROM jsonb_array_elements(pg_read_file(:'testdata' || '/manifest.json')::jsonb->'datasets') d,
     jsonb_array_elements(d->'data_files') f
WHERE d->>'name' = 'types_2_3_v1' ORDER BY (f->>'num_rows')::bigint DESC LIMIT 1 \gset
CREATE FOREIGN TABLE ana.one_file (id bigint, s text) SERVER analyze_srv OPTIONS (uri :'one_file');
ANALYZE ana.one_file;
SELECT reltuples = :one_file_rows AS rows_ok, relpages = :one_file_pages AS pages_ok
FROM pg_class WHERE oid = 'ana.one_file'::regclass;

-- only the owner may ANALYZE (a role that may only SELECT is skipped, as
-- for every table); an owner without pg_read_server_files may, as it may scan
CREATE ROLE regress_lance_analyze;
GRANT USAGE ON SCHEMA ana TO regress_lance_analyze;
CREATE FOREIGN TABLE ana.granted (id bigint) SERVER analyze_srv
    OPTIONS (uri :'types22');
GRANT SELECT ON ana.granted TO regress_lance_analyze;
-- (its WARNING, whose wording changed in 16, is not shown; reltuples stays)
SET ROLE regress_lance_analyze;
SET client_min_messages = error;
ANALYZE ana.granted;
RESET client_min_messages;
RESET ROLE;
SELECT reltuples FROM pg_class WHERE oid = 'ana.granted'::regclass;
ALTER FOREIGN TABLE ana.granted OWNER TO regress_lance_analyze;
SET ROLE regress_lance_analyze;
ANALYZE ana.granted;
RESET ROLE;
SELECT reltuples FROM pg_class WHERE oid = 'ana.granted'::regclass;
DROP FOREIGN TABLE ana.granted;
REVOKE USAGE ON SCHEMA ana FROM regress_lance_analyze;
DROP ROLE regress_lance_analyze;

-- what cannot be read fails ANALYZE with the error a scan gives
CREATE FOREIGN TABLE ana.missing (id bigint) SERVER analyze_srv
    OPTIONS (uri :'missing');
CREATE FOREIGN TABLE ana.no_field (id bigint, nosuch int) SERVER analyze_srv
    OPTIONS (uri :'types22');
\! mkdir -p "$LP_SCRATCH/009" && cp -r "$LP_TESTDATA/deleted_2_2.lance" "$LP_SCRATCH/009/" && rm "$(ls "$LP_SCRATCH"/009/deleted_2_2.lance/data/*.lance | head -n 1)"
CREATE FOREIGN TABLE ana.lost_file (id bigint) SERVER analyze_srv
    OPTIONS (uri :'lost_file');
SELECT t, lp_test.outcome('ANALYZE ana.' || t)
FROM unnest(ARRAY['missing', 'no_field', 'lost_file', 'types_legacy_v2']) t;
SELECT relname, reltuples FROM pg_class
WHERE oid IN ('ana.missing'::regclass, 'ana.no_field'::regclass, 'ana.lost_file'::regclass,
              'ana.types_legacy_v2'::regclass)
ORDER BY 1;

DROP TABLE colors;
DROP SCHEMA ana CASCADE;
DROP SERVER analyze_srv CASCADE;
