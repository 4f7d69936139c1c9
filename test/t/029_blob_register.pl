# register_part with blob_ids under concurrency: four sessions lease blob ids
# of one target and register parts under them, all at once (pgbench); the
# leases never overlap, every registration under a session's own lease
# succeeds, and registering under a range that overlaps a lease the session
# has registered is refused every time.
use strict;
use warnings;

use File::Path qw(make_path);
use IPC::Run ();
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use LanceParts qw(reference_data);

my ($data_dir, $index) = reference_data();
my ($reference) = grep { $_->{name} eq 'types_2_2_v2' } @{ $index->{datasets} };
my ($file) = map { $_->{file} } grep { $_->{fragment_id} == 2 } @{ $reference->{data_files} };
my $part = "$reference->{path}/data/$file";

my $work = "$ENV{LP_SCRATCH}/029_blob_register";
File::Path::rmtree($work);
make_path($work);
my $dataset = "$work/plain.lance";
system('cp', '-r', $reference->{path}, $dataset) == 0 or die "could not copy to $dataset";

my $node = PostgreSQL::Test::Cluster->new('blob_register');
$node->init;
$node->append_conf('postgresql.conf', 'max_connections = 20');
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION lance_parts');
my $target = $node->safe_psql('postgres', "SELECT lance_parts.create_target('$dataset')");
$node->safe_psql(
	'postgres', qq{
CREATE TABLE targets AS SELECT '$target'::jsonb AS target, '$part'::text AS part;
CREATE TABLE leases (ids int8range, registered text, overlapping text);
CREATE FUNCTION try_register(t jsonb, part text, ids int8range) RETURNS text
LANGUAGE plpgsql AS \$\$
BEGIN
    PERFORM lance_parts.register_part(t, part, NULL, ids);
    RETURN 'registered';
EXCEPTION WHEN invalid_parameter_value THEN
    RETURN SQLERRM;
END
\$\$;
});

my $script = "$work/register.sql";
open my $fh, '>', $script or die "could not write $script: $!";
print $fh <<'SQL';
SELECT lance_parts.lease_blob_ids(target, 1 + (random() * 5)::int) AS ids FROM targets \gset
INSERT INTO leases
SELECT ':ids'::int8range,
       try_register(target, part, ':ids'),
       try_register(target, part, int8range(upper(':ids'::int8range) - 1, upper(':ids'::int8range)))
FROM targets;
SQL
close $fh;

# 4 clients x 50 transactions, each a lease and two registrations in its own session
my ($out, $err) = ('', '');
my $ok = IPC::Run::run(
	[
		$node->installed_command('pgbench'), '-n', '-c', '4', '-j', '4', '-t', '50',
		'-f', $script, '-h', $node->host, '-p', $node->port, 'postgres'
	],
	'>', \$out, '2>', \$err);
ok($ok, 'pgbench ran its registrations') or diag($out . $err);

my @leases = map { /^\[(\d+),(\d+)\)$/ ? [ $1, $2 ] : die "bad range $_" }
  split /\n/, $node->safe_psql('postgres', 'SELECT ids FROM leases ORDER BY lower(ids)');
is(scalar @leases, 200, 'every transaction got a lease');
my $next = 1;
my $disjoint = 1;
for my $lease (@leases)
{
	if ($lease->[0] != $next || $lease->[1] <= $lease->[0])
	{
		diag("lease [$lease->[0],$lease->[1]) does not start at $next");
		$disjoint = 0;
		last;
	}
	$next = $lease->[1];
}
ok($disjoint, 'the leases are disjoint and cover the ids from 1');
is($node->safe_psql('postgres', "SELECT count(*) FROM leases WHERE registered = 'registered'"),
	'200', 'every part registered under its own lease');
is( $node->safe_psql(
		'postgres',
		"SELECT count(*) FROM leases WHERE overlapping ~ '^blob id lease \\[\\d+, \\d+\\) of part .* overlaps lease \\[\\d+, \\d+\\) of registered part '"
	),
	'200',
	'every registration under an overlapping range was refused')
  or diag($node->safe_psql('postgres', 'SELECT overlapping FROM leases LIMIT 3'));

$node->stop;
done_testing();
