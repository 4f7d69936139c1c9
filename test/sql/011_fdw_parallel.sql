-- Parallel lance_fdw scans: the plan (Gather over a Parallel Foreign Scan,
-- workers launched), the same rows with 0 and 2 workers (aggregates and
-- EXCEPT ALL both ways, every column of every row) on datasets of several
-- fragments with deletion files, fragments split into row ranges
-- (lance_parts.fdw_unit_rows), workers reading without the leader, rescans
-- of the Gather, and the cases that stay serial.
\set VERBOSITY terse
\getenv testdata LP_TESTDATA
\getenv scratch LP_SCRATCH
SET lance_parts_test.scratch = :'scratch';
SET lance_parts_test.testdata = :'testdata';

CREATE TEMP TABLE reference AS
SELECT d->>'name' AS dataset, (d->>'num_rows')::bigint AS live_rows
FROM jsonb_array_elements(pg_read_file(:'testdata' || '/manifest.json')::jsonb->'datasets') d;

CREATE SERVER parallel_srv FOREIGN DATA WRAPPER lance_fdw;
CREATE SCHEMA par;
IMPORT FOREIGN SCHEMA generated LIMIT TO (types_2_2_v2, deleted_2_2, multipage_2_2)
    FROM SERVER parallel_srv INTO par OPTIONS (uri :'testdata');
-- the smallest data file of deleted_2_2 (its 90 rows, deleted or not)
DO $$
DECLARE
    data text := current_setting('lance_parts_test.testdata') || '/deleted_2_2.lance/data/';
BEGIN
    EXECUTE (SELECT format('CREATE FOREIGN TABLE par.one_file (id bigint) SERVER parallel_srv OPTIONS (uri %L)', data || f)
             FROM pg_ls_dir(data) f ORDER BY (pg_stat_file(data || f)).size LIMIT 1);
END
$$;

-- The plan of a query run with EXPLAIN ANALYZE: node names, workers planned
-- and launched, Lance units; paths, rows and pages (they vary by process)
-- left out
CREATE FUNCTION pg_temp.parallel_plan(query text) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
    line text;
BEGIN
    FOR line IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF) ' || query LOOP
        CONTINUE WHEN line ~ '^\s*(Lance Dataset|Lance File|Dataset Version|Data Files|Deleted Rows|Lance Fields|Rows Removed by [a-zA-Z ]+|Lance Pages [a-zA-Z]+|Sort Method|Worker \d):';
        RETURN NEXT regexp_replace(line, ' \(actual rows=.*\)$', '');
    END LOOP;
END
$$;

-- The rows of a table as text, in a table of their own: what a scan read
CREATE FUNCTION pg_temp.read_rows(tbl regclass, into_table text) RETURNS SETOF text
LANGUAGE plpgsql AS $$
BEGIN
    RETURN QUERY SELECT * FROM pg_temp.parallel_plan(
        format('CREATE TABLE %I AS SELECT t::text AS r FROM %s t', into_table, tbl));
END
$$;

-- What EXPLAIN ANALYZE counts for the foreign scan of a query, over all processes
CREATE FUNCTION pg_temp.lance_counts(query text, OUT workers_launched int,
                                     OUT rows_removed bigint, OUT pages_decoded bigint)
LANGUAGE plpgsql AS $$
DECLARE
    plan jsonb;
BEGIN
    EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, FORMAT JSON) ' || query INTO plan;
    workers_launched := jsonb_path_query_first(plan, '$.** ? (@."Node Type" == "Gather")."Workers Launched"');
    rows_removed := jsonb_path_query_first(plan, '$.** ? (@."Node Type" == "Foreign Scan")."Rows Removed by Lance Filter"');
    pages_decoded := jsonb_path_query_first(plan, '$.** ? (@."Node Type" == "Foreign Scan")."Lance Pages Decoded"');
END
$$;

-- Two tables of rows holding the same multiset: counts, an ordered digest,
-- and EXCEPT ALL both ways
CREATE FUNCTION pg_temp.same_rows(a text, b text)
RETURNS TABLE (rows_a bigint, rows_b bigint, same_digest boolean, a_not_b bigint, b_not_a bigint)
LANGUAGE plpgsql AS $$
BEGIN
    RETURN QUERY EXECUTE format(
        'SELECT (SELECT count(*) FROM %1$I), (SELECT count(*) FROM %2$I),
                (SELECT md5(string_agg(r, E''\n'' ORDER BY r)) FROM %1$I) =
                (SELECT md5(string_agg(r, E''\n'' ORDER BY r)) FROM %2$I),
                (SELECT count(*) FROM (SELECT r FROM %1$I EXCEPT ALL SELECT r FROM %2$I) x),
                (SELECT count(*) FROM (SELECT r FROM %2$I EXCEPT ALL SELECT r FROM %1$I) x)', a, b);
END
$$;

-- ---- serially: no Gather without workers, whatever the costs -----------------
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 0;
SELECT * FROM pg_temp.parallel_plan('SELECT count(*) FROM par.deleted_2_2');
SELECT * FROM pg_temp.read_rows('par.types_2_2_v2', 'types_serial');
SELECT * FROM pg_temp.read_rows('par.deleted_2_2', 'deleted_serial');
SELECT * FROM pg_temp.read_rows('par.multipage_2_2', 'multipage_serial');
CREATE TEMP TABLE counts_serial AS
SELECT * FROM pg_temp.lance_counts('SELECT count(*), sum(i32), count(s) FROM par.types_2_2_v2 WHERE id >= 100');
SELECT * FROM counts_serial;

-- ---- 2 workers, a unit per fragment -------------------------------------------
SET max_parallel_workers_per_gather = 2;
SELECT * FROM pg_temp.parallel_plan('SELECT count(*), sum(id) FROM par.deleted_2_2');
SELECT count(*), sum(id), count(DISTINCT id) FROM par.deleted_2_2;
SELECT * FROM pg_temp.read_rows('par.types_2_2_v2', 'types_parallel');
SELECT * FROM pg_temp.same_rows('types_serial', 'types_parallel');
SELECT * FROM pg_temp.read_rows('par.deleted_2_2', 'deleted_parallel');
SELECT * FROM pg_temp.same_rows('deleted_serial', 'deleted_parallel');
SELECT * FROM pg_temp.read_rows('par.multipage_2_2', 'multipage_parallel');
SELECT * FROM pg_temp.same_rows('multipage_serial', 'multipage_parallel');
-- the pushed filter's removed rows and the pages decoded, the workers' included
SELECT c.*, c.rows_removed = s.rows_removed AS same_removed, c.pages_decoded = s.pages_decoded AS same_pages
FROM pg_temp.lance_counts('SELECT count(*), sum(i32), count(s) FROM par.types_2_2_v2 WHERE id >= 100') c, counts_serial s;
-- the reference's live rows
SELECT r.dataset, r.live_rows, x.n = r.live_rows AS same
FROM (VALUES ('types_2_2_v2', (SELECT count(*) FROM types_parallel)),
             ('deleted_2_2', (SELECT count(*) FROM deleted_parallel)),
             ('multipage_2_2', (SELECT count(*) FROM multipage_parallel))) x(dataset, n)
     JOIN reference r USING (dataset) ORDER BY 1;

-- ---- fragments split into row ranges, the workers alone ----------------------
-- deleted_2_2's fragments of 120, 150 and 90 rows in ranges of 50 rows (the
-- deleted rows fall inside ranges and fill one whole range); multipage_2_2's
-- 8000 rows in ranges of 1000
SET parallel_leader_participation = off;
SET lance_parts.fdw_unit_rows = 50;
SELECT * FROM pg_temp.read_rows('par.deleted_2_2', 'deleted_ranges');
SELECT * FROM pg_temp.same_rows('deleted_serial', 'deleted_ranges');
SELECT * FROM pg_temp.read_rows('par.types_2_2_v2', 'types_ranges');
SELECT * FROM pg_temp.same_rows('types_serial', 'types_ranges');
SELECT c.workers_launched, c.rows_removed = s.rows_removed AS same_removed
FROM pg_temp.lance_counts('SELECT count(*), sum(i32), count(s) FROM par.types_2_2_v2 WHERE id >= 100') c, counts_serial s;
SET lance_parts.fdw_unit_rows = 1000;
SELECT * FROM pg_temp.read_rows('par.multipage_2_2', 'multipage_ranges');
SELECT * FROM pg_temp.same_rows('multipage_serial', 'multipage_ranges');
-- one row per unit
SET lance_parts.fdw_unit_rows = 1;
SELECT * FROM pg_temp.read_rows('par.deleted_2_2', 'deleted_single_rows');
SELECT * FROM pg_temp.same_rows('deleted_serial', 'deleted_single_rows');
RESET lance_parts.fdw_unit_rows;
RESET parallel_leader_participation;

-- ---- rescans: a Gather on the inner side of a nested loop runs once per outer
-- row (the temporary table keeps the join in the leader)
SET lance_parts.fdw_unit_rows = 50;
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET enable_material = off;
CREATE TEMP TABLE outer_rows AS SELECT generate_series(0, 2) AS n;
ANALYZE outer_rows;
SELECT * FROM pg_temp.parallel_plan(
    'SELECT n, count(*) FROM outer_rows JOIN par.deleted_2_2 d ON d.id % 3 = n GROUP BY n');
CREATE TEMP TABLE rescan_parallel AS
SELECT n, count(*) AS c FROM outer_rows JOIN par.deleted_2_2 d ON d.id % 3 = n GROUP BY n;
SELECT r.n, r.c,
       r.c = (SELECT count(*) FROM deleted_serial s
              WHERE split_part(trim('(' FROM s.r), ',', 1)::bigint % 3 = r.n) AS same
FROM rescan_parallel r ORDER BY 1;
RESET enable_hashjoin;
RESET enable_mergejoin;
RESET enable_material;
RESET lance_parts.fdw_unit_rows;

-- ---- what stays serial -----------------------------------------------------------
-- a single data file is one unit
SELECT * FROM pg_temp.parallel_plan('SELECT count(*) FROM par.one_file');
SELECT count(*) FROM par.one_file;
-- with the default costs, a table this small
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
SELECT * FROM pg_temp.parallel_plan('SELECT count(*) FROM par.multipage_2_2');
RESET max_parallel_workers_per_gather;

DROP TABLE types_serial, deleted_serial, multipage_serial, types_parallel, deleted_parallel,
    multipage_parallel, deleted_ranges, types_ranges, multipage_ranges, deleted_single_rows;
DROP SCHEMA par CASCADE;
DROP SERVER parallel_srv;
