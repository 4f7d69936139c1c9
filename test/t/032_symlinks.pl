# Nothing below a dataset's root is reached through a symlink, for reading as
# for writing: a symlink planted at a committed sidecar or data file (read by
# lance_fdw for a role without file roles, through a granted table), at
# data/_parts, at a target's staging directory, at its blob_leases directory
# or at its sidecar directory is an ERROR (22023) naming the symlink, and
# nothing is read or written where it points.
use strict;
use warnings;

use File::Copy qw(copy);
use File::Path qw(make_path);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use LanceParts qw(reference_data directory_entries);

my ($data_dir, $index) = reference_data();
my ($blobs) = grep { $_->{name} eq 'blob_2_2' } @{ $index->{datasets} };

my $work = "$ENV{LP_SCRATCH}/032_symlinks";
make_path($work);

my $node = PostgreSQL::Test::Cluster->new('symlinks');
$node->init;
$node->start;
my $pgdata = $node->data_dir;
$node->safe_psql('postgres', <<'SQL');
CREATE EXTENSION lance_parts;
CREATE ROLE plain LOGIN;
CREATE SERVER lance_srv FOREIGN DATA WRAPPER lance_fdw;
CREATE TABLE targets (name text PRIMARY KEY, target jsonb);
CREATE FUNCTION outcome(statement text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE statement;
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END
$$;
SQL

# A server file only the server's operating-system user may read.
my $secret = "$pgdata/secret.bin";
open my $fh, '>:raw', $secret or die "cannot write $secret: $!";
print $fh 'SECRET-' x 1000;
close $fh;
chmod 0600, $secret or die "chmod: $!";

sub blob_dataset
{
	my ($name) = @_;
	my $path = "$work/$name.lance";
	system('cp', '-r', $blobs->{path}, $path) == 0 or die "could not copy to $path";
	return $path;
}

# A target of dataset stored under name; returns its directories.
sub make_target
{
	my ($name, $dataset) = @_;
	$node->safe_psql('postgres',
		"INSERT INTO targets SELECT '$name', lance_parts.create_target('$dataset')");
	my ($data, $file, $staging) = split /\|/, $node->safe_psql('postgres',
		"SELECT target->>'data_dir', target->>'file_name', lance_parts.staging_dir(target)
		 FROM targets WHERE name = '$name'");
	$staging =~ s{/$}{};
	(my $stem = $file) =~ s/\.lance$//;
	return { data_dir => $data, file => $file, staging => $staging, sidecars => "$data/$stem" };
}

sub target_sql { return "(SELECT target FROM targets WHERE name = '$_[0]')" }

# The outcome of statement run as role: 'ok' or "SQLSTATE: message".
sub outcome_as
{
	my ($role, $statement) = @_;
	my $quoted = $node->safe_psql('postgres', "SELECT quote_literal(\$s\$$statement\$s\$)");
	return $node->safe_psql('postgres', "SET ROLE $role; SELECT outcome($quoted)");
}

sub victim
{
	my ($name) = @_;
	my $path = "$work/victim-$name";
	make_path($path);
	return $path;
}

# ---- a committed sidecar replaced by a symlink to a server file ----------------
{
	my $dataset = blob_dataset('sidecar');
	my $sidecar = "$dataset/data/$blobs->{sidecars}[1]";
	unlink $sidecar or die "unlink: $!";
	symlink($secret, $sidecar) or die "symlink: $!";
	$node->safe_psql('postgres', qq{
		CREATE FOREIGN TABLE sidecar_blobs (id bigint, payload bytea OPTIONS (blob 'payload'))
			SERVER lance_srv OPTIONS (uri '$dataset');
		GRANT SELECT ON sidecar_blobs TO plain;
	});
	like(outcome_as('plain', q{SELECT count(*) FROM sidecar_blobs WHERE position('SECRET' in payload) > 0}),
		qr/^22023: "\Q$sidecar\E" is a symbolic link, not a regular file$/,
		'a symlinked sidecar is not read for a role without file roles');
	like(outcome_as('postgres', 'SELECT count(*) FROM sidecar_blobs WHERE payload IS NOT NULL'),
		qr/^22023: "\Q$sidecar\E" is a symbolic link/, 'nor for a superuser');
}

# ---- a data file of the manifest replaced by a symlink ---------------------------
{
	my $dataset = blob_dataset('datafile');
	my $file = "$dataset/data/$blobs->{data_files}[0]{file}";
	my $outside = "$pgdata/outside.lance";
	copy($file, $outside) or die "copy: $!";
	chmod 0600, $outside or die "chmod: $!";
	unlink $file or die "unlink: $!";
	symlink($outside, $file) or die "symlink: $!";
	$node->safe_psql('postgres', qq{
		CREATE FOREIGN TABLE datafile_rows (id bigint) SERVER lance_srv OPTIONS (uri '$dataset');
		GRANT SELECT ON datafile_rows TO plain;
	});
	like(outcome_as('plain', 'SELECT sum(id) FROM datafile_rows'),
		qr/^22023: "\Q$file\E" is a symbolic link, not a regular file$/,
		'a symlinked data file is not read');
}

# ---- data/_parts is a symlink to a server directory -------------------------------
{
	my $dataset = "$work/parts.lance";
	$node->safe_psql('postgres',
		"SELECT count(*) FROM lance_parts.write_dataset('$dataset', 'SELECT g::bigint AS id FROM generate_series(1, 10) g')");
	my $t = make_target('parts', $dataset);
	my @before = directory_entries("$pgdata/pg_stat_tmp");
	symlink("$pgdata/pg_stat_tmp", "$t->{data_dir}/_parts") or die "symlink: $!";
	like(outcome_as('postgres',
			"SELECT * FROM lance_parts.write_part(" . target_sql('parts') . ", 'SELECT 7::bigint AS id')"),
		qr/^22023: "\Q$t->{data_dir}\E\/_parts" is a symbolic link, not a directory$/,
		'write_part through a symlinked data/_parts fails');
	is_deeply([ directory_entries("$pgdata/pg_stat_tmp") ], \@before, 'nothing written into pg_stat_tmp');

	# ---- the staging directory data/_parts/<file> is a symlink -------------------
	unlink "$t->{data_dir}/_parts" or die "unlink: $!";
	make_path("$t->{data_dir}/_parts");
	my $victim = victim('staging');
	symlink($victim, $t->{staging}) or die "symlink: $!";
	like(outcome_as('postgres',
			"SELECT * FROM lance_parts.write_part(" . target_sql('parts') . ", 'SELECT 7::bigint AS id')"),
		qr/^22023: "\Q$t->{staging}\E" is a symbolic link, not a directory$/,
		'write_part through a symlinked staging directory fails');
	is_deeply([ directory_entries($victim) ], [], 'nothing written where the staging symlink points');
}

# ---- blob_leases is a symlink ------------------------------------------------------
{
	my $t = make_target('leases', blob_dataset('leases'));
	my $victim = victim('leases');
	make_path($t->{staging});
	symlink($victim, "$t->{staging}/blob_leases") or die "symlink: $!";
	like(outcome_as('postgres', "SELECT lance_parts.lease_blob_ids(" . target_sql('leases') . ", 5)"),
		qr/^22023: "\Q$t->{staging}\E\/blob_leases" is a symbolic link, not a directory$/,
		'lease_blob_ids through a symlinked blob_leases fails');
	is_deeply([ directory_entries($victim) ], [], 'no lease record written where it points');
}

# ---- the sidecar directory is a symlink ---------------------------------------------
{
	my $t = make_target('sidecars', blob_dataset('sidecars'));
	$node->safe_psql('postgres', "SELECT lance_parts.lease_blob_ids(" . target_sql('sidecars') . ", 2)");
	my $victim = victim('sidecars');
	symlink($victim, $t->{sidecars}) or die "symlink: $!";
	like(outcome_as('postgres',
			"SELECT lance_parts.write_dedicated_blob(" . target_sql('sidecars') . ", 1, '\\x0102'::bytea)"),
		qr/^22023: "\Q$t->{sidecars}\E" is a symbolic link, not a directory$/,
		'write_dedicated_blob through a symlinked sidecar directory fails');
	is_deeply([ directory_entries($victim) ], [], 'no sidecar written where it points');

	# the same target writes once the symlink is gone
	unlink $t->{sidecars} or die "unlink: $!";
	is($node->safe_psql('postgres',
			"SELECT lance_parts.write_dedicated_blob(" . target_sql('sidecars') . ", 1, '\\x0102'::bytea)->>'size'"),
		'2', 'with a real sidecar directory the sidecar is written');
}

$node->stop;
done_testing();
