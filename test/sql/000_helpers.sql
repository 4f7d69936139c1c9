-- Helpers shared by the regression tests that follow (they run in order, in
-- one database).  Each test sets lance_parts_test.scratch and, when it reads
-- the reference data, lance_parts_test.testdata.
\set VERBOSITY terse
CREATE SCHEMA lp_test;
GRANT USAGE ON SCHEMA lp_test TO PUBLIC;

-- A message made stable: the scratch and test data directories, data file
-- names (random), temporary file names and transaction file names replaced
CREATE FUNCTION lp_test.stable(message text) RETURNS text
LANGUAGE sql AS $$
    SELECT regexp_replace(regexp_replace(regexp_replace(
               replace(replace(message,
                               coalesce(current_setting('lance_parts_test.scratch', true), '$SCRATCH'), '$SCRATCH'),
                       coalesce(current_setting('lance_parts_test.testdata', true), '$TESTDATA'), '$TESTDATA'),
               '[01]{24}[0-9a-f]{26}\.lance', '$NAME.lance', 'g'),
           '\.[0-9]+\.[0-9a-f]{16}\.tmp', '.$PID.$NONCE.tmp', 'g'),
       '[0-9]+-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.txn', '$TXN.txn', 'g')
$$;

-- SQLSTATE and stable message of a statement, or 'ok'
CREATE FUNCTION lp_test.outcome(statement text) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE statement;
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || lp_test.stable(SQLERRM);
END
$$;

-- The same with the error's detail on a second line
CREATE FUNCTION lp_test.outcome_detail(statement text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    detail text;
BEGIN
    EXECUTE statement;
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS detail = PG_EXCEPTION_DETAIL;
    RETURN SQLSTATE || ': ' || lp_test.stable(SQLERRM)
        || CASE WHEN detail <> '' THEN E'\n  ' || lp_test.stable(detail) ELSE '' END;
END
$$;

-- Run a shell command as the server's OS user
CREATE FUNCTION lp_test.sh(command text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    -- no rows: nothing is written to the program, so one that exits without
    -- reading its standard input cannot make the pipe's close fail (EPIPE)
    EXECUTE format('COPY (SELECT 1 WHERE false) TO PROGRAM %L', command);
END
$$;

-- Write bytes to a file; returns its path
CREATE FUNCTION lp_test.put(path text, bytes bytea) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    lo oid := lo_from_bytea(0, bytes);
BEGIN
    PERFORM lo_export(lo, path);
    PERFORM lo_unlink(lo);
    RETURN path;
END
$$;

-- The names in a directory, sorted; NULL if there is no such directory
CREATE FUNCTION lp_test.entries(dir text) RETURNS text[]
LANGUAGE sql AS $$
    SELECT CASE WHEN (pg_stat_file(dir, missing_ok => true)).size IS NULL THEN NULL
                ELSE (SELECT coalesce(array_agg(f ORDER BY f), '{}') FROM pg_ls_dir(dir) f) END
$$;

-- Little-endian integers, for editing footers and offset tables
CREATE FUNCTION lp_test.le64(v numeric) RETURNS bytea
LANGUAGE sql AS $$
    SELECT string_agg(set_byte('\x00'::bytea, 0, (floor(v / 256::numeric ^ i) % 256)::int), ''::bytea ORDER BY i)
    FROM generate_series(0, 7) i
$$;
CREATE FUNCTION lp_test.le32(v bigint) RETURNS bytea
LANGUAGE sql AS $$
    SELECT substring(lp_test.le64(v) FROM 1 FOR 4)
$$;
-- the u64 and u32 at a 0-based offset
CREATE FUNCTION lp_test.u64_at(b bytea, pos bigint) RETURNS bigint
LANGUAGE sql AS $$
    SELECT sum(get_byte(b, (pos + i)::int)::numeric * 256::numeric ^ i)::bigint
    FROM generate_series(0, 7) i
$$;
CREATE FUNCTION lp_test.u32_at(b bytea, pos bigint) RETURNS bigint
LANGUAGE sql AS $$
    SELECT sum(get_byte(b, (pos + i)::int)::numeric * 256::numeric ^ i)::bigint
    FROM generate_series(0, 3) i
$$;
