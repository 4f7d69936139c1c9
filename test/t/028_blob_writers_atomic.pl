# The sidecar writers are atomic: a sidecar that cannot be written whole (the
# filesystem fills up in the middle of it) leaves nothing under its name and
# no temporary file, and the id can be written once space is back.  The
# dataset lives on a small filesystem.
#
# LP_SMALL_FS_DIR must be a directory on a small filesystem (a few MB),
# writable by this user; test/run.sh mounts an 8 MB tmpfs.
use strict;
use warnings;

use File::Path ();
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use LanceParts qw(reference_data directory_entries);

my ($data_dir, $index) = reference_data();
my ($reference) = grep { $_->{name} eq 'blob_2_2' } @{ $index->{datasets} };

my $small = $ENV{LP_SMALL_FS_DIR};
unless ($small && -d $small && -w $small)
{
	fail('LP_SMALL_FS_DIR names a writable directory on a small filesystem');
	done_testing();
	exit;
}
my $work = "$small/028-" . time() . "-$$";
mkdir $work or die "cannot create $work: $!";
my $dataset = "$work/blob.lance";
system('cp', '-r', $reference->{path}, $dataset) == 0 or die "could not copy to $dataset";

# a source file bigger than the filesystem, elsewhere
my $source = "$ENV{LP_SCRATCH}/028-source.bin";
open my $fh, '>:raw', $source or die "cannot write $source: $!";
print $fh 'z' x (12 * 1024 * 1024);
close $fh;

my $node = PostgreSQL::Test::Cluster->new('blob_writers');
$node->init;
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION lance_parts');
$node->safe_psql('postgres', <<"SQL");
CREATE FUNCTION outcome(statement text) RETURNS text LANGUAGE plpgsql AS \$\$
BEGIN
    EXECUTE statement;
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END
\$\$;
CREATE TABLE targets AS SELECT lance_parts.create_target('$dataset') AS target;
SELECT lance_parts.lease_blob_ids(target, 10) FROM targets;
SQL
my $target = '(SELECT target FROM targets)';
my $sidecars = $node->safe_psql('postgres',
	"SELECT (target->>'data_dir') || '/' || replace(target->>'file_name', '.lance', '') FROM targets");
my $data = $node->safe_psql('postgres', "SELECT target->>'data_dir' FROM targets");
my @data_before = directory_entries($data);

my $sidecar_dir_name = substr($sidecars, length($data) + 1);

# Nothing in the sidecar directory (created as needed) and nothing else new in the data directory.
sub nothing_left
{
	my ($what) = @_;
	my @left = -d $sidecars ? directory_entries($sidecars) : ();
	is_deeply(\@left, [], "$what: no sidecar and no temporary file");
	is_deeply([ grep { $_ ne $sidecar_dir_name } directory_entries($data) ], \@data_before,
		"$what: nothing else in the data directory");
}

like(
	$node->safe_psql('postgres',
		"SELECT outcome(format('SELECT lance_parts.write_dedicated_blob(%L, 1, %L::bytea)', $target, repeat('x', 12 * 1024 * 1024)))"),
	qr/^53100: .*No space left on device/,
	'write_dedicated_blob: the full filesystem is reported as such');
nothing_left('write_dedicated_blob');

like(
	$node->safe_psql('postgres',
		"SELECT outcome(format('SELECT lance_parts.write_packed_blobs(%L, 2, %L::bytea[])', $target, "
		  . "(SELECT array_agg(repeat(chr(97 + i % 26), 1000)::bytea) FROM generate_series(1, 10000) i)))"),
	qr/^53100: .*No space left on device/,
	'write_packed_blobs: 10 MB of packed payloads, the full filesystem is reported as such');
nothing_left('write_packed_blobs');

like(
	$node->safe_psql('postgres',
		"SELECT outcome(format('SELECT lance_parts.write_dedicated_blob_from(%L, 3, %L)', $target, '$source'))"),
	qr/^53100: .*No space left on device/,
	'write_dedicated_blob_from: the full filesystem is reported as such');
nothing_left('write_dedicated_blob_from');

# the ids were never written: they can be written now
is($node->safe_psql('postgres',
		"SELECT lance_parts.write_dedicated_blob(target, 1, '\\x0102')->>'size' FROM targets"),
	'2', 'the id of the failed sidecar is written once space is back');
is_deeply([ directory_entries($sidecars) ], ['10000000000000000000000000000000.blob'], 'only that sidecar');

$node->stop;
File::Path::rmtree($work);
done_testing();
