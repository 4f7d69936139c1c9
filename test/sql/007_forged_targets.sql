-- Targets re-signed with the cluster's own key ($PGDATA/lance_parts.key):
-- a correct signature does not make a target's names and paths acceptable.
-- Every field is checked when the target is read, so every entry point
-- refuses a forged file name, dataset, base path or data directory with
-- 22023, and nothing is written or removed anywhere.
\set VERBOSITY terse
\getenv testdata LP_TESTDATA
\getenv scratch LP_SCRATCH
\set work :scratch/007
SET lance_parts_test.scratch = :'scratch';
SET lance_parts_test.testdata = :'testdata';

-- HMAC-SHA256 (RFC 2104) with the built-in sha256, and the signature as
-- lp_target.c computes it: over the jsonb text of the target without its
-- "signature" key, with the signing key (the key file's first 32 bytes)
CREATE FUNCTION pg_temp.xor_each(b bytea, x int) RETURNS bytea
LANGUAGE sql AS $$
    SELECT string_agg(set_byte('\x00'::bytea, 0, get_byte(b, i) # x), ''::bytea ORDER BY i)
    FROM generate_series(0, length(b) - 1) i
$$;
CREATE FUNCTION pg_temp.hmac_sha256(key bytea, message bytea) RETURNS bytea
LANGUAGE sql AS $$
    SELECT sha256(pg_temp.xor_each(k, 92) || sha256(pg_temp.xor_each(k, 54) || message))
    FROM (SELECT key || decode(repeat('00', 64 - length(key)), 'hex') AS k) padded
$$;
CREATE FUNCTION pg_temp.resign(target jsonb) RETURNS jsonb
LANGUAGE sql AS $$
    SELECT (target - 'signature')
        || jsonb_build_object('signature',
                              encode(pg_temp.hmac_sha256(substring(pg_read_binary_file('lance_parts.key') FROM 1 FOR 32),
                                                         convert_to((target - 'signature')::text, 'UTF8')), 'hex'))
$$;
-- every file and directory under the work directory, with sizes
CREATE FUNCTION pg_temp.tree() RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    work text := current_setting('lance_parts_test.scratch') || '/007';
BEGIN
    PERFORM lp_test.sh(format('cd %s && find . -path ./tree.txt -prune -o -printf "%%y %%p %%s\n" | sort > tree.txt', work));
    RETURN pg_read_file(work || '/tree.txt');
END
$$;

SELECT lp_test.sh(format('rm -rf %1$s && mkdir -p %1$s && cp -r %2$s/types_2_2_v2.lance %1$s/ds.lance '
                         '&& cp -r %2$s/types_2_2_v2.lance %1$s/other.lance',
                         :'work', :'testdata'));
SELECT d->>'path' || '/data/' || (f->>'file') AS p45
FROM jsonb_array_elements(pg_read_file(:'testdata' || '/manifest.json')::jsonb->'datasets') d,
     jsonb_array_elements(d->'data_files') f
WHERE d->>'name' = 'types_2_2_v2' AND (f->>'fragment_id')::int = 2 \gset

SELECT lance_parts.create_target(:'work' || '/ds.lance') AS t \gset
-- the signer is right: re-signing a target unchanged gives the same value
SELECT pg_temp.resign(:'t') = :'t'::jsonb AS resign_reproduces;

-- What the forged targets would reach: a directory beside the dataset named
-- like the sidecar directory of "../../x.lance" (cleanup_target removed it),
-- and one that the staging directory of a data_dir outside the base would be.
SELECT lp_test.sh(format('mkdir -p %1$s/x %1$s/elsewhere/_parts/%2$s && touch %1$s/x/keep %1$s/elsewhere/_parts/%2$s/keep',
                         :'work', :'t'::jsonb->>'file_name'));

CREATE TEMP TABLE forged (edit text, target jsonb);
INSERT INTO forged
SELECT edit, pg_temp.resign(:'t'::jsonb || change) FROM (VALUES
  ('file_name ../../x.lance', jsonb_build_object('file_name', '../../x.lance')),
  ('file_name x.lance', jsonb_build_object('file_name', 'x.lance')),
  ('file_name with a slash', jsonb_build_object('file_name', overlay(:'t'::jsonb->>'file_name' PLACING '/' FROM 30))),
  ('file_name uppercase', jsonb_build_object('file_name', upper(:'t'::jsonb->>'file_name'))),
  ('data_dir outside the base', jsonb_build_object('data_dir', :'work' || '/elsewhere')),
  ('data_dir the base itself', jsonb_build_object('data_dir', :'work' || '/ds.lance')),
  ('data_dir through ..', jsonb_build_object('data_dir', :'work' || '/ds.lance/data/../../elsewhere')),
  ('base_path another dataset', jsonb_build_object('base_path', :'work' || '/other.lance',
                                                   'data_dir', :'work' || '/other.lance/data')),
  ('base_path changed', jsonb_build_object('base_path', :'work')),
  ('dataset not canonical', jsonb_build_object('dataset', :'work' || '/./ds.lance',
                                               'base_path', :'work' || '/./ds.lance',
                                               'data_dir', :'work' || '/./ds.lance/data')),
  ('dataset relative', jsonb_build_object('dataset', 'ds.lance', 'base_path', 'ds.lance',
                                          'data_dir', 'ds.lance/data')),
  ('base_path relative with a base_id', jsonb_build_object('base_id', 1, 'base_path', 'elsewhere',
                                                           'data_dir', 'elsewhere')),
  ('base_id the dataset does not have', jsonb_build_object('base_id', 1, 'base_path', :'work' || '/elsewhere',
                                                           'data_dir', :'work' || '/elsewhere'))) x(edit, change);
-- each carries a signature of its own, made with the key (the errors below are
-- about fields, never "has been modified")
SELECT edit, target->>'signature' <> :'t'::jsonb->>'signature' AS resigned FROM forged ORDER BY 1;

SELECT pg_temp.tree() AS tree_before \gset
SELECT f.edit, lp_test.outcome_detail(format('SELECT lance_parts.staging_dir(%L)', f.target)) AS staging_dir
FROM forged f ORDER BY 1;
-- every other entry point gives the same error
SELECT f.edit, c.fn
FROM forged f,
     (VALUES ('register_part', 'SELECT lance_parts.register_part(%L, %L)'),
             ('registered_parts', 'SELECT * FROM lance_parts.registered_parts(%L)'),
             ('clear_parts', 'SELECT lance_parts.clear_parts(%L)'),
             ('assemble', 'SELECT * FROM lance_parts.assemble(%L)'),
             ('assemble parts', 'SELECT * FROM lance_parts.assemble(%L, ARRAY[%L])'),
             ('commit', 'SELECT * FROM lance_parts.commit(%L)'),
             ('cleanup_target', 'SELECT lance_parts.cleanup_target(%L)')) c(fn, call)
WHERE lp_test.outcome_detail(format(c.call, f.target, :'p45'))
      IS DISTINCT FROM lp_test.outcome_detail(format('SELECT lance_parts.staging_dir(%L)', f.target))
ORDER BY 1, 2;
-- nothing was written or removed anywhere
SELECT pg_temp.tree() = :'tree_before' AS tree_unchanged;

-- A target of 0.2.0 has no key_id and is verified against each key: one
-- signed with the key is accepted.  One naming a key id the cluster does not
-- have is refused whatever its signature (a key_id naming another key of the
-- cluster: 030_target_keys).
SELECT lance_parts.staging_dir(pg_temp.resign(:'t'::jsonb - 'key_id')) = lance_parts.staging_dir(:'t')
       AS without_key_id_accepted;
SELECT lp_test.outcome_detail(format('SELECT lance_parts.staging_dir(%L)',
                                     pg_temp.resign(:'t'::jsonb || '{"key_id": "0123456789abcdef"}'))) AS other_key_id;

-- the original target still works
SELECT status, num_rows FROM lance_parts.assemble(:'t', ARRAY[:'p45']);
SELECT lance_parts.cleanup_target(:'t') AS removed;

SELECT format('rm -rf %s', :'work') AS cleanup \gset
COPY (SELECT 1 WHERE false) TO PROGRAM :'cleanup';
