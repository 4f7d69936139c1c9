# What commit and cleanup_target remove: the staging and sidecar directories
# of their target, walked without following any symlink.  A symlink planted
# at the staging directory, at the sidecar directory or at a component on
# the way to them (data/_parts) removes nothing of the dataset it points to,
# which the reference implementation still reads completely.  Once a commit
# has published its version, a staging directory that cannot be removed is a
# WARNING, never an ERROR: the version is there exactly once.
use strict;
use warnings;

use File::Path qw(make_path);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use LanceParts qw(reference_data directory_entries reference_read);

my ($data_dir, $index) = reference_data();
my ($reference) = grep { $_->{name} eq 'types_2_2_v2' } @{ $index->{datasets} };
my ($part_file) = sort { $b->{num_rows} <=> $a->{num_rows} } @{ $reference->{data_files} };
my $part = "$reference->{path}/data/$part_file->{file}";
my $rows = 0;
$rows += $_->{num_rows} for @{ $reference->{data_files} };

my $work = "$ENV{LP_SCRATCH}/013_removal";
make_path($work);

my $node = PostgreSQL::Test::Cluster->new('removal');
$node->init;
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION lance_parts');
$node->safe_psql('postgres', 'CREATE TABLE targets (name text PRIMARY KEY, target jsonb)');

# A fresh copy of the reference dataset.
sub dataset_copy
{
	my ($name) = @_;
	my $path = "$work/$name.lance";
	system('cp', '-r', $reference->{path}, $path) == 0 or die "could not copy to $path";
	return $path;
}

# A target for dataset, stored under name; returns its fields.
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

sub assemble
{
	my ($name) = @_;
	is($node->safe_psql('postgres',
		"SELECT status FROM lance_parts.assemble(" . target_sql($name) . ", ARRAY['$part'])"),
		'written', "$name: part assembled");
}

# Run sql; returns (exit code, stdout, stderr).
sub run_sql
{
	my ($sql) = @_;
	my ($ret, $stdout, $stderr) = $node->psql('postgres', $sql);
	return ($ret, $stdout, $stderr);
}

# The victim is untouched: the same files, and read completely.
sub victim_intact
{
	my ($victim, $files_before, $what) = @_;
	is_deeply([ directory_entries("$victim/data") ], $files_before, "$what: no file of the victim removed");
	my ($read, $stderr) = reference_read($victim);
	is($read ? $read->{num_rows} : "read failed: $stderr", $rows, "$what: the reference reads the whole victim");
}

sub dataset_rows
{
	my ($dataset) = @_;
	my ($read, $stderr) = reference_read($dataset);
	return $read ? $read->{num_rows} : "read failed: $stderr";
}

# ---- commit through a symlinked staging directory ---------------------------
{
	my $attack = dataset_copy('attack');
	my $victim = dataset_copy('victim');
	my @victim_files = directory_entries("$victim/data");
	my $t = make_target('staging_link', $attack);
	assemble('staging_link');
	make_path("$t->{data_dir}/_parts");
	symlink("$victim/data", $t->{staging}) or die "symlink: $!";

	my ($ret, $stdout, $stderr) = run_sql(
		"SELECT dataset_version FROM lance_parts.commit(" . target_sql('staging_link') . ")");
	is($ret, 0, 'commit through a symlinked staging directory succeeds');
	like($stderr, qr/WARNING:  "\Q$t->{staging}\E" is a symbolic link, not a directory/,
		'a WARNING names the staging directory that was left alone');
	ok(-l $t->{staging}, 'the symlink itself is left in place');
	victim_intact($victim, \@victim_files, 'staging symlink');
	is(dataset_rows($attack), $rows + $part_file->{num_rows}, 'the commit landed in the attacking dataset');
}

# ---- cleanup_target through a symlinked sidecar directory ---------------------
{
	my $attack = dataset_copy('attack_sidecar');
	my $victim = dataset_copy('victim_sidecar');
	my @victim_files = directory_entries("$victim/data");
	my $t = make_target('sidecar_link', $attack);
	assemble('sidecar_link');
	symlink("$victim/data", $t->{sidecars}) or die "symlink: $!";

	my ($ret, $stdout, $stderr) = run_sql(
		"SELECT lance_parts.cleanup_target(" . target_sql('sidecar_link') . ")");
	is($ret, 0, 'cleanup_target with a symlinked sidecar directory succeeds');
	is($stdout, 't', 'it removed the assembled file');
	ok(!-e "$t->{data_dir}/$t->{file}", 'the assembled file is gone');
	like($stderr, qr/WARNING:  "\Q$t->{sidecars}\E" is a symbolic link, not a directory/,
		'a WARNING names the sidecar directory that was left alone');
	victim_intact($victim, \@victim_files, 'sidecar symlink');
}

# ---- a symlink at a component on the way: data/_parts ------------------------
{
	my $attack = dataset_copy('attack_parts');
	my $victim = dataset_copy('victim_parts');
	my @victim_files = directory_entries("$victim/data");
	my $t = make_target('parts_link', $attack);
	assemble('parts_link');
	# data/_parts -> evil/, where evil/<file name> -> the victim's data
	make_path("$work/evil");
	symlink("$victim/data", "$work/evil/$t->{file}") or die "symlink: $!";
	symlink("$work/evil", "$t->{data_dir}/_parts") or die "symlink: $!";

	my ($ret, $stdout, $stderr) = run_sql(
		"SELECT dataset_version FROM lance_parts.commit(" . target_sql('parts_link') . ")");
	is($ret, 0, 'commit with a symlinked data/_parts succeeds');
	like($stderr, qr/WARNING:  "\Q$t->{data_dir}\E\/_parts" is a symbolic link, not a directory/,
		'a WARNING names the symlinked component');
	victim_intact($victim, \@victim_files, '_parts symlink');
}

# ---- cleanup_target with a symlinked data directory -----------------------------
{
	my $attack = dataset_copy('attack_data');
	my $victim = dataset_copy('victim_data');
	my $t = make_target('data_link', $attack);
	assemble('data_link');
	# the victim happens to hold a file of the target's name
	system('cp', "$t->{data_dir}/$t->{file}", "$victim/data/$t->{file}") == 0 or die 'cp failed';
	my @victim_files = directory_entries("$victim/data");
	rename($t->{data_dir}, "$attack/data.real") or die "rename: $!";
	symlink("$victim/data", $t->{data_dir}) or die "symlink: $!";

	my ($ret, $stdout, $stderr) = run_sql(
		"SELECT lance_parts.cleanup_target(" . target_sql('data_link') . ")");
	is($ret, 0, 'cleanup_target with a symlinked data directory succeeds');
	is($stdout, 'f', 'it removed nothing');
	like($stderr, qr/WARNING:  "\Q$t->{data_dir}\E" is a symbolic link, not a directory/,
		'a WARNING names the data directory');
	is_deeply([ directory_entries("$victim/data") ], \@victim_files,
		'symlinked data directory: no file of the victim removed');
}

# ---- a symlink inside a real staging directory -------------------------------
{
	my $attack = dataset_copy('attack_inside');
	my $victim = dataset_copy('victim_inside');
	my @victim_files = directory_entries("$victim/data");
	my $t = make_target('inside_link', $attack);
	assemble('inside_link');
	make_path("$t->{staging}/nested");
	symlink("$victim/data", "$t->{staging}/to-victim") or die "symlink: $!";
	symlink("$victim/data", "$t->{staging}/nested/to-victim") or die "symlink: $!";

	my ($ret, $stdout, $stderr) = run_sql(
		"SELECT dataset_version FROM lance_parts.commit(" . target_sql('inside_link') . ")");
	is($ret, 0, 'commit with symlinks inside the staging directory succeeds');
	unlike($stderr, qr/WARNING/, 'without a WARNING');
	ok(!-e $t->{staging} && !-l $t->{staging}, 'the staging directory and its symlinks are gone');
	victim_intact($victim, \@victim_files, 'symlinks inside the staging directory');
}

# ---- after publication, nothing fails ---------------------------------------

# Commit; the version is returned once, with a WARNING matching warning.
sub commit_published_once
{
	my ($name, $dataset, $warning, $what) = @_;
	my $before = $node->safe_psql('postgres',
		"SELECT target->>'dataset_version' FROM targets WHERE name = '$name'");
	my ($ret, $stdout, $stderr) = run_sql(
		"SELECT dataset_version FROM lance_parts.commit(" . target_sql($name) . ")");
	is($ret, 0, "$what: commit succeeds");
	is($stdout, $before + 1, "$what: commit returns the new version");
	like($stderr, $warning, "$what: a WARNING says what was left");
	my ($again_ret, $again_stdout, $again_stderr) = run_sql(
		"SELECT dataset_version FROM lance_parts.commit(" . target_sql($name) . ")");
	like($again_stderr, qr/was already committed in version \Q@{[ $before + 1 ]}\E/,
		"$what: committing again is refused");
	is(dataset_rows($dataset), $rows + $part_file->{num_rows}, "$what: the rows are there once");
}

{
	my $dataset = dataset_copy('staging_file');
	my $t = make_target('staging_file', $dataset);
	assemble('staging_file');
	make_path("$t->{data_dir}/_parts");
	open my $fh, '>', $t->{staging} or die "$t->{staging}: $!";
	print $fh "not a directory\n";
	close $fh;
	commit_published_once('staging_file', $dataset,
		qr/WARNING:  "\Q$t->{staging}\E" is a regular file, not a directory/,
		'staging directory that is a file');
	ok(-f $t->{staging}, 'the file is left in place');
}

{
	my $dataset = dataset_copy('staging_stuck');
	my $t = make_target('staging_stuck', $dataset);
	assemble('staging_stuck');
	make_path("$t->{staging}/locked");
	open my $fh, '>', "$t->{staging}/locked/stuck" or die "$t->{staging}/locked/stuck: $!";
	close $fh;
	open $fh, '>', "$t->{staging}/removable" or die "$t->{staging}/removable: $!";
	close $fh;
	chmod 0555, "$t->{staging}/locked" or die "chmod: $!";
	commit_published_once('staging_stuck', $dataset,
		qr/WARNING:  could not remove "\Q$t->{staging}\E\/locked\/stuck": Permission denied\n.*DETAIL:  The staging directory "\Q$t->{staging}\E" of target file "\Q$t->{file}\E" was not removed completely/s,
		'staging directory with an entry the server may not remove');
	ok(-e "$t->{staging}/locked/stuck", 'the entry stays');
	ok(!-e "$t->{staging}/removable", 'everything else is removed');
	chmod 0755, "$t->{staging}/locked";
}

$node->stop;
done_testing();
