# lance_fdw scans in bounded memory: a dataset of one fragment of 4,194,304
# rows (id int64, value float64, a 16-character label and an 8-float32
# vector), read whole through a foreign table, raises the backend's peak
# resident memory (VmHWM) by less than 64 MB over the same backend's peak
# before the scan, and the scan's aggregates equal the reference's.
#
# npm lancedb writes at most about 1M rows per data file, so it writes four
# fragments (bench/generate.cjs), lance_parts.compact concatenates their
# pages into one fragment, and the reference implementation reads that
# dataset for the expected aggregates (test/reference/aggregate.cjs).
use strict;
use warnings;

use Cwd;
use JSON::PP qw(decode_json);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $src = $ENV{LP_SRCDIR} // '.';
my $tmp = Cwd::abs_path(PostgreSQL::Test::Utils::tempdir);
my $rows_per_fragment = 1048576;
local $ENV{NODE_PATH} = "$src/test/reference/node_modules";
local $ENV{LANCEDB_LOG} = 'error';

# bench/generate.cjs sizes fragments in bytes: 72 bytes a row with 8 dimensions
system('node', "$src/bench/generate.cjs", 'dataset', $tmp, 'big', 4, $rows_per_fragment * 72, 8) == 0
  or BAIL_OUT('npm lancedb could not write the dataset');

my $node = PostgreSQL::Test::Cluster->new('fdw_memory');
$node->init;
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION lance_parts');
is( $node->safe_psql(
		'postgres',
		"SELECT count(DISTINCT new_fragment_id) FROM lance_parts.compact('$tmp/big.lance', "
		  . 'target_rows_per_fragment => 4294967295)'),
	'1',
	'the four fragments are compacted into one');

my $reference = `node '$src/test/reference/aggregate.cjs' '$tmp' big`;
is($?, 0, 'the reference reads the compacted dataset');
$reference = decode_json($reference);
is($reference->{rows}, 4 * $rows_per_fragment, 'the reference reads every row');

# One session: warm the catalog caches on the table without reading data,
# take the peak, scan every column of every row three times (aggregates over
# the converted values; count(t.*) forms each whole row; SELECT * with
# pushed NULL tests), take the peak again.  JIT is off: LLVM's compiler
# takes about 57 MB of its own for these plans, whatever the data.
my $hwm = q{SELECT substring(pg_read_file('/proc/self/status') from 'VmHWM:\s+(\d+)')};
my $output = $node->safe_psql(
	'postgres', qq{
	SET jit = off;
	CREATE SERVER lance_srv FOREIGN DATA WRAPPER lance_fdw;
	CREATE FOREIGN TABLE big (id bigint, value double precision, label text, emb real[])
	    SERVER lance_srv OPTIONS (uri '$tmp/big.lance');
	EXPLAIN SELECT * FROM big \\g /dev/null
	$hwm;
	SELECT count(*) = $reference->{rows}
	       AND sum(id) = $reference->{sum_id}
	       AND sum(octet_length(label)) = $reference->{label_bytes}
	       AND min(value) = '$reference->{min_value}'::float8
	       AND max(value) = '$reference->{max_value}'::float8
	       AND max(emb[8]) = '$reference->{max_emb_last}'::real
	FROM big;
	SELECT count(t.*) FROM big t;
	SELECT count(*) FROM (SELECT * FROM big) s WHERE s.emb IS NOT NULL AND s.label IS NOT NULL;
	$hwm;});
my ($before, $aggregates_match, $whole_rows, $every_row, $after) = split /\n/, $output;
is($aggregates_match, 't', 'count, sum(id), label bytes, min and max value and max(emb[8]) equal the reference\'s');
is($whole_rows, $reference->{rows}, 'count(t.*) reads every row');
is($every_row, $reference->{rows}, 'SELECT * returns every row');
my $growth_kb = $after - $before;
note("VmHWM before $before kB, after $after kB");
cmp_ok($growth_kb, '<', 64 * 1024, "the scans raise the backend's peak memory by less than 64 MB ($growth_kb kB)");

$node->stop;
done_testing();
