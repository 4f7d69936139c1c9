# Blob-id leases never overlap, whoever asks: sessions of two clusters that
# share the dataset's storage (and the key that signs targets) claim leases
# of one target at the same time with pgbench, and every lease claimed
# before a restart stays claimed after it.
use strict;
use warnings;

use File::Copy qw(copy);
use File::Path qw(make_path);
use IPC::Run ();
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use LanceParts qw(reference_data directory_entries);

my ($data_dir, $index) = reference_data();
my ($reference) = grep { $_->{name} eq 'blob_2_2' } @{ $index->{datasets} };

my $work = "$ENV{LP_SCRATCH}/027_blob_leases";
File::Path::rmtree($work);
make_path($work);
my $dataset = "$work/blob.lance";
system('cp', '-r', $reference->{path}, $dataset) == 0 or die "could not copy to $dataset";

my $first = PostgreSQL::Test::Cluster->new('leases_a');
$first->init;
$first->append_conf('postgresql.conf', 'max_connections = 20');
$first->start;
$first->safe_psql('postgres', 'CREATE EXTENSION lance_parts');
my $target = $first->safe_psql('postgres', "SELECT lance_parts.create_target('$dataset')");

# The second cluster signs with the first one's key, so it accepts its target.
my $second = PostgreSQL::Test::Cluster->new('leases_b');
$second->init;
$second->append_conf('postgresql.conf', 'max_connections = 20');
copy($first->data_dir . '/lance_parts.key', $second->data_dir . '/lance_parts.key')
  or die "could not copy the target key: $!";
$second->start;
$second->safe_psql('postgres', 'CREATE EXTENSION lance_parts');

my $script = "$work/lease.sql";
open my $fh, '>', $script or die "could not write $script: $!";
print $fh "INSERT INTO leases SELECT lance_parts.lease_blob_ids(target, 1 + (random() * 6)::int) FROM targets;\n";
close $fh;

for my $node ($first, $second)
{
	$node->safe_psql('postgres',
		"CREATE TABLE targets AS SELECT '$target'::jsonb AS target; CREATE TABLE leases (ids int8range)");
}

# 2 x 4 clients x 40 leases, all at once
my @runs;
for my $node ($first, $second)
{
	my ($out, $err) = ('', '');
	push @runs,
	  [
		IPC::Run::start(
			[
				$node->installed_command('pgbench'), '-n', '-c', '4', '-j', '4', '-t', '40',
				'-f', $script, '-h', $node->host, '-p', $node->port, 'postgres'
			],
			'>', \$out, '2>', \$err),
		\$out, \$err
	  ];
}
for my $run (@runs)
{
	my ($handle, $out, $err) = @$run;
	ok($handle->finish, 'pgbench ran its leases') or diag($$out . $$err);
}

sub all_leases
{
	my @leases;
	for my $node ($first, $second)
	{
		push @leases, map { /^\[(\d+),(\d+)\)$/ ? [ $1, $2 ] : die "bad range $_" }
		  split /\n/, $node->safe_psql('postgres', 'SELECT ids FROM leases ORDER BY lower(ids)');
	}
	return sort { $a->[0] <=> $b->[0] } @leases;
}

# Sorted by start, disjoint ranges follow each other; claims leave no gaps.
sub check_leases
{
	my ($what, @leases) = @_;
	my $next = 1;
	my $ok = 1;
	for my $lease (@leases)
	{
		if ($lease->[0] != $next || $lease->[1] <= $lease->[0])
		{
			diag("$what: lease [$lease->[0],$lease->[1]) does not start at $next");
			$ok = 0;
			last;
		}
		$next = $lease->[1];
	}
	ok($ok, "$what: the leases are disjoint and cover the ids from 1");
	return $next;
}

my @leases = all_leases();
is(scalar @leases, 320, 'every transaction got a lease');
my $end = check_leases('two clusters, eight sessions', @leases);

my $staging = $first->safe_psql('postgres', "SELECT lance_parts.staging_dir('$target')");
my @records = directory_entries("${staging}blob_leases");
is(scalar(grep { /^\d{20}$/ } @records), 320, 'one durable record per lease');
is(scalar(grep { !/^\d{20}$/ } @records), 0, 'no temporary files left in the lease directory');

# After a restart the ids handed out stay taken.
$first->restart;
is($first->safe_psql('postgres', "SELECT lance_parts.lease_blob_ids('$target', 2)"),
	'[' . $end . ',' . ($end + 2) . ')', 'a lease after a restart follows the last one');

$first->stop;
$second->stop;
done_testing();
