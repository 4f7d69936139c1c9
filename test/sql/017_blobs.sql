-- Blob v2 from SQL: blob-id leases claimed durably in a target's staging
-- area, and the sidecar writers (packed, dedicated, dedicated from a file)
-- with their rules; every refusal leaves nothing behind.
\getenv srcdir PG_ABS_SRCDIR
\set test 017
\i :srcdir/sql/setup/blob_datasets.sql

SELECT lance_parts.create_target(:'work' || '/blob.lance') AS t,
       lance_parts.create_target(:'work' || '/blob.lance') AS t2,
       lance_parts.create_target(:'work' || '/plain.lance') AS t_plain \gset
SELECT rtrim(lance_parts.staging_dir(:'t'), '/') || '/blob_leases' AS leases,
       (:'t'::jsonb->>'data_dir') || '/' || replace(:'t'::jsonb->>'file_name', '.lance', '') AS sidecars
\gset
-- outcomes with the (random) sidecar directory name made stable
CREATE FUNCTION pg_temp.outcome(statement text) RETURNS text
LANGUAGE sql AS $$
    SELECT regexp_replace(lp_test.outcome(statement), '/[01]{24}[0-9a-f]{26}/', '/$STEM/', 'g')
$$;

-- ---- leases ----------------------------------------------------------------

-- consecutive, half-open, from 1; another target of the same dataset has its own
SELECT lance_parts.lease_blob_ids(:'t', 3) AS first,
       lance_parts.lease_blob_ids(:'t', 2) AS second,
       lance_parts.lease_blob_ids(:'t', 1000) AS third,
       lance_parts.lease_blob_ids(:'t2', 1) AS other_target;
-- one durable record per lease
SELECT lp_test.entries(:'leases') AS records;
-- "<start> <end> <claimer>": the claimer is random, one per claim
SELECT f, substring(r FROM '^\d+ \d+') AS lease, r ~ '^\d+ \d+ [0-9a-f]{32}\n$' AS claimer_ok
FROM unnest(lp_test.entries(:'leases')) f, pg_read_file(:'leases' || '/' || f) r ORDER BY f;
SELECT count(DISTINCT substring(pg_read_file(:'leases' || '/' || f) FROM '[0-9a-f]{32}')) AS claimers
FROM unnest(lp_test.entries(:'leases')) f;
-- refused: no ids, NULL count or target, a forged target
SELECT pg_temp.outcome(format('SELECT lance_parts.lease_blob_ids(%L, 0)', :'t')) AS zero,
       pg_temp.outcome(format('SELECT lance_parts.lease_blob_ids(%L, -5)', :'t')) AS negative,
       pg_temp.outcome(format('SELECT lance_parts.lease_blob_ids(%L, NULL)', :'t')) AS null_count,
       pg_temp.outcome('SELECT lance_parts.lease_blob_ids(NULL, 1)') AS null_target;
SELECT pg_temp.outcome(format('SELECT lance_parts.lease_blob_ids(%L, 1)',
                              jsonb_set(:'t'::jsonb, '{file_name}',
                                        to_jsonb('0000000000000000000000000000000000000000000000000.lance'::text)))) AS forged;
SELECT array_length(lp_test.entries(:'leases'), 1) AS records_after_refusals;

-- ---- write_packed_blobs ----------------------------------------------------

-- one pack file under id 1: NULL gives a NULL descriptor, '' a zero-length Packed one
SELECT d FROM unnest(lance_parts.write_packed_blobs(:'t', 1,
           ARRAY['\x0102'::bytea, NULL, '', '\x030405', repeat('x', 1024)::bytea])) d;
SELECT lp_test.entries(:'sidecars') AS sidecar_files;
SELECT length(b) AS bytes, substring(b FROM 1 FOR 5) AS head
FROM pg_read_binary_file(:'sidecars' || '/10000000000000000000000000000000.blob') b;

-- refused, nothing written: the id written already, ids outside every lease,
-- a payload over the column's dedicated threshold (1024), no payloads, a
-- two-dimensional array, a target without Blob v2 columns
SELECT pg_temp.outcome(format('SELECT lance_parts.write_packed_blobs(%L, 1, ARRAY[''\x01''::bytea])', :'t')) AS written_id,
       pg_temp.outcome(format('SELECT lance_parts.write_packed_blobs(%L, 1006, ARRAY[''\x01''::bytea])', :'t')) AS unleased,
       pg_temp.outcome(format('SELECT lance_parts.write_packed_blobs(%L, 0, ARRAY[''\x01''::bytea])', :'t')) AS id_zero,
       pg_temp.outcome(format('SELECT lance_parts.write_packed_blobs(%L, 4294967295, ARRAY[''\x01''::bytea])', :'t')) AS id_max;
SELECT pg_temp.outcome(format('SELECT lance_parts.write_packed_blobs(%L, 2, ARRAY[repeat(''x'', 1025)::bytea])', :'t')) AS over_threshold,
       pg_temp.outcome(format('SELECT lance_parts.write_packed_blobs(%L, 2, ''{}''::bytea[])', :'t')) AS empty,
       pg_temp.outcome(format('SELECT lance_parts.write_packed_blobs(%L, 2, ARRAY[[''\x01''::bytea], [''\x02''::bytea]])', :'t')) AS two_dims,
       pg_temp.outcome(format('SELECT lance_parts.write_packed_blobs(%L, 2, NULL)', :'t')) AS null_payloads;
SELECT pg_temp.outcome(format('SELECT lance_parts.write_packed_blobs(%L, 1, ARRAY[''\x01''::bytea])', :'t_plain')) AS no_blob_column;
-- the ids of another target's lease are not this target's
SELECT pg_temp.outcome(format('SELECT lance_parts.write_packed_blobs(%L, 2, ARRAY[''\x01''::bytea])', :'t2')) AS t2_id_2;
SELECT lp_test.entries(:'sidecars') AS sidecar_files_after_refusals,
       lp_test.entries(:'t2'::jsonb->>'data_dir') @> ARRAY[replace(:'t2'::jsonb->>'file_name', '.lance', '')] AS t2_has_sidecars;

-- ---- write_dedicated_blob and write_dedicated_blob_from ---------------------

SELECT lance_parts.write_dedicated_blob(:'t', 2, repeat('y', 5000)::bytea) AS dedicated;
SELECT lance_parts.write_dedicated_blob(:'t', 3, '') AS dedicated_empty;
SELECT pg_temp.part AS part_file FROM (SELECT (:'t'::jsonb->>'dataset') || '/data/' || f AS part
    FROM pg_ls_dir((:'t'::jsonb->>'dataset') || '/data') f WHERE f LIKE '%.lance' ORDER BY f LIMIT 1) pg_temp \gset
SELECT lance_parts.write_dedicated_blob_from(:'t', 4, :'part_file') - 'size' AS copied,
       (lance_parts.write_dedicated_blob_from(:'t', 5, :'part_file')->>'size')::bigint
           = (pg_stat_file(:'part_file')).size AS size_ok;
SELECT md5(pg_read_binary_file(:'sidecars' || '/00100000000000000000000000000000.blob'))
           = md5(pg_read_binary_file(:'part_file')) AS copy_equal,
       length(pg_read_binary_file(:'sidecars' || '/01000000000000000000000000000000.blob')) AS dedicated_bytes;
-- a file holding more than its size says (/proc files say 0 bytes) is copied to its end
SELECT (pg_stat_file('/proc/version')).size AS proc_stat_size,
       (lance_parts.write_dedicated_blob_from(:'t', 7, '/proc/version')->>'size')::bigint
           = length(pg_read_binary_file('/proc/version')) AS proc_size_ok;
SELECT pg_read_binary_file(:'sidecars' || '/11100000000000000000000000000000.blob')
           = pg_read_binary_file('/proc/version') AS proc_copy_equal;
-- refused, nothing written
SELECT pg_temp.outcome(format('SELECT lance_parts.write_dedicated_blob(%L, 2, ''\x01'')', :'t')) AS written_id,
       pg_temp.outcome(format('SELECT lance_parts.write_dedicated_blob(%L, 6, NULL)', :'t')) AS null_payload,
       pg_temp.outcome(format('SELECT lance_parts.write_dedicated_blob(%L, 5000, ''\x01'')', :'t')) AS unleased;
SELECT pg_temp.outcome(format('SELECT lance_parts.write_dedicated_blob_from(%L, 6, %L)', :'t', :'work' || '/missing')) AS missing_source,
       pg_temp.outcome(format('SELECT lance_parts.write_dedicated_blob_from(%L, 6, %L)', :'t', :'work')) AS directory_source,
       pg_temp.outcome(format('SELECT lance_parts.write_dedicated_blob_from(%L, 6, NULL)', :'t')) AS null_source;
SELECT lp_test.entries(:'sidecars') AS sidecar_files_at_end;

-- ---- once the target's file exists -----------------------------------------

SELECT lp_test.put((:'t'::jsonb->>'data_dir') || '/' || (:'t'::jsonb->>'file_name'), '\x00') IS NOT NULL AS placed;
SELECT pg_temp.outcome(format('SELECT lance_parts.lease_blob_ids(%L, 1)', :'t')) AS lease_after_file,
       pg_temp.outcome(format('SELECT lance_parts.write_dedicated_blob(%L, 6, ''\x01'')', :'t')) AS write_after_file;

-- cleanup_target removes the sidecars and the lease records with the staging area
SELECT lance_parts.cleanup_target(:'t') AS removed;
SELECT lp_test.entries(:'sidecars') AS sidecars_after_cleanup,
       lp_test.entries(:'leases') AS leases_after_cleanup;

-- cleanup_orphans removes the sidecars and leases of a target never assembled
SELECT lance_parts.create_target(:'work' || '/blob.lance') AS t3 \gset
SELECT lance_parts.lease_blob_ids(:'t3', 2) AS t3_lease,
       lance_parts.write_dedicated_blob(:'t3', 1, '\x0102') IS NOT NULL AS t3_written;
SELECT pg_sleep(1.1);
SELECT kind, action, replace(replace(replace(path, :'work', '$WORK'), :'t3'::jsonb->>'file_name', 'T3.lance'),
                             replace(:'t3'::jsonb->>'file_name', '.lance', ''), 'T3') AS path_of_t3
FROM lance_parts.cleanup_orphans(:'work' || '/blob.lance', older_than => '1 second', dry_run => false)
WHERE path LIKE '%' || replace(:'t3'::jsonb->>'file_name', '.lance', '') || '%'
ORDER BY kind;
SELECT lp_test.entries((:'t3'::jsonb->>'data_dir') || '/' || replace(:'t3'::jsonb->>'file_name', '.lance', '')) AS t3_sidecars,
       lp_test.entries(rtrim(lance_parts.staging_dir(:'t3'), '/')) AS t3_staging;

-- ---- lance_fdw: payloads instead of descriptors ------------------------------

CREATE SERVER blob_srv FOREIGN DATA WRAPPER lance_fdw;
SELECT pg_temp.outcome(format('CREATE FOREIGN TABLE pg_temp.blobs (id bigint, payload bytea OPTIONS (blob %L), '
                              'descriptor jsonb OPTIONS (column_name %L)) SERVER blob_srv OPTIONS (uri %L)',
                              'payload', 'payload', :'work' || '/blob.lance')) AS created;
-- inline, packed and dedicated payloads as the reference's blob API returned them
-- when the test data was generated (manifest.json: sha256 of fetchBlobs per row)
SELECT b.descriptor->>'kind' AS kind, count(*) AS rows,
       bool_and(encode(sha256(b.payload), 'hex') IS NOT DISTINCT FROM e->>'sha256') AS equal
FROM pg_temp.blobs b
JOIN jsonb_array_elements((SELECT d->'blob_payloads'
                           FROM jsonb_array_elements(pg_read_file(:'testdata' || '/manifest.json')::jsonb->'datasets') d
                           WHERE d->>'name' = 'blob_2_2')) e ON (e->>'row')::bigint = b.id
GROUP BY 1 ORDER BY 1;
-- refused: an unknown option value, payloads of a field that is not Blob v2,
-- payloads into a column that is not bytea
SELECT pg_temp.outcome(format('CREATE FOREIGN TABLE pg_temp.bad (payload bytea OPTIONS (blob %L)) SERVER blob_srv OPTIONS (uri %L)',
                              'bytes', :'work' || '/blob.lance')) AS bad_value;
SELECT pg_temp.outcome(format('CREATE FOREIGN TABLE pg_temp.not_blob (id bytea OPTIONS (blob %L)) SERVER blob_srv OPTIONS (uri %L)',
                              'payload', :'work' || '/blob.lance')) AS created_not_blob,
       pg_temp.outcome(format('CREATE FOREIGN TABLE pg_temp.not_bytea (payload text OPTIONS (blob %L)) SERVER blob_srv OPTIONS (uri %L)',
                              'payload', :'work' || '/blob.lance')) AS created_not_bytea;
SELECT pg_temp.outcome('SELECT * FROM pg_temp.not_blob') AS not_blob,
       pg_temp.outcome('SELECT * FROM pg_temp.not_bytea') AS not_bytea;
-- damaged sidecars: a packed one cut short, a dedicated one missing
SELECT lp_test.sh(format('cd %s/blob.lance/data && for d in [01]*/; do truncate -s 300 "$d/10000000000000000000000000000000.blob"; '
                         'rm "$d/01000000000000000000000000000000.blob"; done', :'work'));
SELECT pg_temp.outcome('SELECT length(payload) FROM pg_temp.blobs WHERE id = 4') AS packed_cut_short,
       pg_temp.outcome('SELECT length(payload) FROM pg_temp.blobs WHERE id = 5') AS dedicated_missing,
       pg_temp.outcome('SELECT length(payload) FROM pg_temp.blobs WHERE id = 3') AS packed_within;
DROP SERVER blob_srv CASCADE;
