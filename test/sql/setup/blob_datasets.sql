-- Set-up of the tests of Blob v2 parts (017_blobs, 018_blob_parts), run with
-- \i after \set test NNN: terse errors, the test's scratch directory :work,
-- and in it copies of the reference datasets blob_2_2 (blob.lance) and
-- types_2_2_v2 (plain.lance).
\set VERBOSITY terse
\getenv testdata LP_TESTDATA
\getenv scratch LP_SCRATCH
\set work :scratch/:test
SET lance_parts_test.scratch = :'scratch';
SET lance_parts_test.testdata = :'testdata';

SELECT lp_test.sh(format('rm -rf %1$s && mkdir -p %1$s && cd %2$s && cp -r blob_2_2.lance %1$s/blob.lance '
                         '&& cp -r types_2_2_v2.lance %1$s/plain.lance',
                         :'work', :'testdata'));
