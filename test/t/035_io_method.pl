# lance_parts under each of PostgreSQL 18's I/O methods: worker (18's
# default), io_uring (when the server was built with liburing) and sync.
# With shared buffers smaller than the table, a heap table read through 18's
# read streams is written with COPY ... TO format lance by parallel write
# workers, read back through lance_fdw by a parallel scan and ANALYZEd; the
# rows equal the table's.  Majors before 18 have no io_method: skipped there.
use strict;
use warnings;

use Cwd ();
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $probe = PostgreSQL::Test::Cluster->new('probe');
plan skip_all => 'io_method came with PostgreSQL 18' if $probe->pg_version < 18;

my @methods = ('worker', 'sync');
my $configure = `pg_config --configure`;
push @methods, 'io_uring' if $configure =~ /--with-liburing/;

my $rows = 200000;
my $same_rows = q{SELECT count(*), sum(id), sum(value), md5(string_agg(label, ',' ORDER BY id))};

for my $method (@methods)
{
	my $node = PostgreSQL::Test::Cluster->new("io_$method");
	# absolute: the server resolves paths from its data directory
	my $dir = Cwd::abs_path(PostgreSQL::Test::Utils::tempdir);
	$node->init;
	$node->append_conf(
		'postgresql.conf', qq{
io_method = $method
shared_buffers = 1MB
shared_preload_libraries = 'lance_parts'
max_worker_processes = 16
max_parallel_workers = 8
});
	$node->start;
	is($node->safe_psql('postgres', 'SHOW io_method'), $method, "$method: the server runs with io_method $method");

	$node->safe_psql(
		'postgres', qq{
		CREATE EXTENSION lance_parts;
		CREATE TABLE t AS
		    SELECT g::bigint AS id, g * 0.5::float8 AS value, md5(g::text) AS label
		    FROM generate_series(1, $rows) g;
		SET lance_parts.write_workers = 2;
		COPY t TO '$dir/t.lance' WITH (format 'lance', max_rows_per_file 50000);
		CREATE SERVER lance_srv FOREIGN DATA WRAPPER lance_fdw;
		CREATE FOREIGN TABLE f (id bigint, value float8, label text)
		    SERVER lance_srv OPTIONS (uri '$dir/t.lance');});

	my $parallel = q{
		SET parallel_setup_cost = 0;
		SET parallel_tuple_cost = 0;
		SET min_parallel_table_scan_size = 0;
		SET max_parallel_workers_per_gather = 2;};
	my $plan = $node->safe_psql('postgres',
		"$parallel EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF) $same_rows FROM f");
	like($plan, qr/Parallel Foreign Scan on f/, "$method: the foreign table is scanned in parallel");
	like($plan, qr/Workers Launched: [12]/, "$method: parallel workers read the dataset");
	is( $node->safe_psql('postgres', "$parallel $same_rows FROM f"),
		$node->safe_psql('postgres', "$same_rows FROM t"),
		"$method: the dataset written by COPY reads back as the table's rows");

	$node->safe_psql('postgres', 'ANALYZE f');
	is( $node->safe_psql(
			'postgres', q{SELECT reltuples, (SELECT count(*) FROM pg_stats WHERE tablename = 'f')
			FROM pg_class WHERE relname = 'f'}),
		"$rows|3",
		"$method: ANALYZE counts every row and gathers statistics of every column");
	$node->stop;
}

done_testing();
