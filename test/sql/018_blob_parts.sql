-- Parts with Blob v2 columns: register_part(..., blob_ids) and its refusals
-- (the lease's shape, a lease not claimed for the target, overlapping leases,
-- a blob part without a lease, non-empty Inline descriptors), assemble's
-- array form refusing blob columns; every refusal leaves nothing behind (no
-- registration, no output file, no change in the staging area).  Valid blob
-- parts come from the reference (test/reference/blob_parts.test.cjs), the
-- crafted descriptors from the core tests (test/core/test_blob_validate.c).
\getenv srcdir PG_ABS_SRCDIR
\set test 018
\i :srcdir/sql/setup/blob_datasets.sql

SELECT lance_parts.create_target(:'work' || '/blob.lance') AS t,
       lance_parts.create_target(:'work' || '/plain.lance') AS t_plain \gset
SELECT d->>'path' || '/data/' || (d->'data_files'->0->>'file') AS blob_part
FROM jsonb_array_elements(pg_read_file(:'testdata' || '/manifest.json')::jsonb->'datasets') d
WHERE d->>'name' = 'blob_2_2' \gset
SELECT d->>'path' || '/data/' || (d->'data_files'->2->>'file') AS plain_part,
       d->>'path' || '/data/' || (d->'data_files'->1->>'file') AS plain_part2
FROM jsonb_array_elements(pg_read_file(:'testdata' || '/manifest.json')::jsonb->'datasets') d
WHERE d->>'name' = 'types_2_2_v2' \gset

-- the state a refusal must leave unchanged: registrations, staging area, output
CREATE FUNCTION pg_temp.state(target jsonb) RETURNS jsonb
LANGUAGE sql AS $$
    SELECT jsonb_build_object(
        'registered', (SELECT count(*) FROM lance_parts.registered_parts(target)),
        'staging', lp_test.entries(rtrim(lance_parts.staging_dir(target), '/')),
        'leases', lp_test.entries(rtrim(lance_parts.staging_dir(target), '/') || '/blob_leases'),
        'output', (pg_stat_file((target->>'data_dir') || '/' || (target->>'file_name'), missing_ok => true)).size)
$$;
CREATE FUNCTION pg_temp.refused(target jsonb, statement text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    before jsonb := pg_temp.state(target);
    outcome text := regexp_replace(lp_test.outcome_detail(statement), '[01]{24}[0-9a-f]{26}', '$NAME', 'g');
BEGIN
    IF pg_temp.state(target) IS DISTINCT FROM before THEN
        RETURN 'left something behind: ' || outcome;
    END IF;
    RETURN outcome;
END
$$;

-- ---- the lease's shape -------------------------------------------------------

SELECT lance_parts.lease_blob_ids(:'t', 4) AS lease;
SELECT name, pg_temp.refused(:'t', format('SELECT lance_parts.register_part(%L, %L, NULL, %L)', :'t', :'blob_part', lease))
FROM (VALUES ('empty', 'empty'), ('from 0', '[0,3)'), ('negative', '[-5,3)'), ('unbounded', '[1,)'),
             ('past the ids', '[1,4294967296)')) x(name, lease)
ORDER BY 1;

-- ---- a lease not claimed for the target ----------------------------------------

-- [1, 5) is claimed; [3, 9) is not, and neither is any of another target's
SELECT pg_temp.refused(:'t', format('SELECT lance_parts.register_part(%L, %L, NULL, %L)', :'t', :'blob_part', '[3,9)'))
    AS beyond_the_claims,
       pg_temp.refused(:'t_plain', format('SELECT lance_parts.register_part(%L, %L, NULL, %L)', :'t_plain', :'plain_part', '[1,2)'))
    AS nothing_claimed;

-- ---- blob columns need a lease; non-empty Inline descriptors are refused ------------

SELECT pg_temp.refused(:'t', format('SELECT lance_parts.register_part(%L, %L)', :'t', :'blob_part')) AS without_lease;
-- the reference's own data file stores its small payloads inline
SELECT pg_temp.refused(:'t', format('SELECT lance_parts.register_part(%L, %L, NULL, %L)', :'t', :'blob_part', '[1,5)'))
    AS inline_payloads;

-- ---- leases of the registered parts are pairwise disjoint ------------------------

SELECT lance_parts.lease_blob_ids(:'t_plain', 10) AS plain_lease;
SELECT lance_parts.register_part(:'t_plain', :'plain_part', NULL, '[1,4)') AS first,
       lance_parts.register_part(:'t_plain', :'plain_part2', NULL, '[4,6)') AS adjacent;
SELECT pg_temp.refused(:'t_plain', format('SELECT lance_parts.register_part(%L, %L, NULL, %L)', :'t_plain', :'plain_part', '[5,8)'))
    AS overlapping;
-- a registration rolls back with its transaction
BEGIN;
SELECT lance_parts.register_part(:'t_plain', :'plain_part', NULL, '[6,11)') AS third;
ROLLBACK;
SELECT position, num_rows FROM lance_parts.registered_parts(:'t_plain') ORDER BY 1;
-- a rolled back registration frees its lease for another part
SELECT lance_parts.register_part(:'t_plain', :'plain_part', NULL, '[6,11)') AS third_again;
SELECT status, num_rows FROM lance_parts.assemble(:'t_plain');
SELECT lance_parts.cleanup_target(:'t_plain') IS NOT NULL AS cleaned;

-- ---- assemble's array form carries no leases ----------------------------------

SELECT pg_temp.state(:'t') AS before \gset
-- (the verdict's message, naming the leases, is checked by the core tests)
SET client_min_messages = warning;
SELECT status, reason FROM lance_parts.assemble(:'t', ARRAY[:'blob_part']);
SELECT pg_temp.state(:'t') = :'before'::jsonb AS nothing_changed;
SELECT pg_temp.refused(:'t', format('SELECT * FROM lance_parts.ingest(%L, ARRAY[%L])', :'work' || '/blob.lance', :'blob_part'))
    AS ingest;
RESET client_min_messages;

SELECT lp_test.sh(format('rm -rf %s', :'work'));
