# cleanup_orphans after crashes and abandoned work: a backend killed in the
# middle of a copy (its temporary file, its progress record), an assembled
# file never committed (with its staging and sidecar directories), a
# transaction file no manifest names, temporary files of dead and of running
# backends, and symlinks planted where orphans would be.  The dry run lists
# exactly the orphans, a larger older_than removes nothing, the real run
# removes exactly them and nothing else (no victim behind a symlink), and
# lancedb still reads every version of the dataset.
use strict;
use warnings;

use Cwd ();
use File::Find ();
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use JSON::PP qw(decode_json);
use Test::More;
use Time::HiRes qw(usleep);

use LanceParts qw(reference_data directory_entries);


my ($data_dir, $index) = reference_data();
my ($source) = grep { $_->{name} eq 'types_2_2_v2' } @{ $index->{datasets} };
my @source_files = sort { $a->{fragment_id} <=> $b->{fragment_id} } @{ $source->{data_files} };
my @parts = map { "$source->{path}/data/$_->{file}" } @source_files[ 0, 2 ];
my ($multipage) = grep { $_->{name} eq 'multipage_2_2' } @{ $index->{datasets} };
my ($big_source) = sort { $b->{num_rows} <=> $a->{num_rows} } @{ $multipage->{data_files} };

my $work = $ENV{LP_SCRATCH}
  ? "$ENV{LP_SCRATCH}/016_orphans"
  : Cwd::abs_path(PostgreSQL::Test::Utils::tempdir());
mkdir $work unless -d $work;
my $ds = "$work/dataset.lance";
my $victim = "$work/victim.lance";
for my $copy ($ds, $victim)
{
	system('cp', '-r', $source->{path}, $copy) == 0 or die "could not copy $source->{path}";
}

my $node = PostgreSQL::Test::Cluster->new('orphans');
$node->init;
$node->append_conf('postgresql.conf', "restart_after_crash = on\nlance_parts.max_copy_workers = 0");
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION lance_parts');
my $pgdata = $node->data_dir;

# Version 4: a committed ingest, whose file must survive.
my $parts_sql = 'ARRAY[' . join(', ', map { "'$_'" } @parts) . ']';
my ($version, $fragment, $rows, $committed_path) = split /\|/,
  $node->safe_psql('postgres', "SELECT * FROM lance_parts.ingest('$ds', $parts_sql)");
is($version, 4, 'ingest committed version 4');
(my $committed = $committed_path) =~ s{.*/}{};
(my $committed_stem = $committed) =~ s/\.lance$//;

# ---- the states to clean up --------------------------------------------------

# 1. kill -9 in the middle of a copy into data/: a temporary file stays, and
#    the backend's progress record in pg_stat_tmp
my $stage = "$work/stage.lance";
$node->safe_psql('postgres',
	"SELECT * FROM lance_parts.concat_files('$stage', array_fill('$multipage->{path}/data/$big_source->{file}'::text, ARRAY[64]))");
my $session = $node->background_psql('postgres', on_error_stop => 0);
my $killed_pid = $session->query_safe('SELECT pg_backend_pid()');
$session->query_until(qr/started/,
	"SET lance_parts.read_batch_bytes = '64kB';\n\\echo started\n"
	  . "SELECT * FROM lance_parts.concat_files('$ds/data/killed.lance', array_fill('$stage'::text, ARRAY[30]));\n");
my $killed_temp;
for (my $i = 0; $i < 6000 && !defined $killed_temp; $i++)
{
	($killed_temp) = grep { /^\.killed\.lance\.$killed_pid\.[0-9a-f]{16}\.tmp$/ } directory_entries("$ds/data");
	usleep(5_000) unless defined $killed_temp;
}
ok(defined $killed_temp, 'the copy to be killed has its temporary file');
kill 'KILL', $killed_pid;
eval { $session->quit };
$node->poll_query_until('postgres', 'SELECT 1', '1')
  or die 'the server did not come back after the crash';
unlink $stage;
ok(-e "$ds/data/$killed_temp", 'the temporary file of the killed copy remains after the crash');
my $stale_progress = "$pgdata/pg_stat_tmp/lance_parts.$killed_pid.progress";
ok(-e $stale_progress, 'the killed backend\'s progress record remains after the crash');

# 2. an assembled file never committed, its staging directory (with the part
#    a worker put there) and a sidecar directory for it
my $target = $node->safe_psql('postgres', "SELECT lance_parts.create_target('$ds')");
my $abandoned = decode_json($target)->{file_name};
(my $abandoned_stem = $abandoned) =~ s/\.lance$//;
my $staging = $node->safe_psql('postgres', "SELECT lance_parts.staging_dir('$target')");
$staging =~ s{/$}{};
system('mkdir', '-p', $staging) == 0 or die;
system('cp', $parts[0], "$staging/part-1.lance") == 0 or die;
is($node->safe_psql('postgres',
		"SELECT status FROM lance_parts.assemble('$target', ARRAY['$staging/part-1.lance'])"),
	'written', 'the abandoned target is assembled');
mkdir "$ds/data/$abandoned_stem" or die;
system('cp', $parts[1], "$ds/data/$abandoned_stem/10000000000000000000000000000000.blob") == 0 or die;

# 3. a transaction file that no manifest names (a commit that lost every retry)
my ($some_txn) = grep { /\.txn$/ } directory_entries("$ds/_transactions");
my $lost_txn = '3-00000000-0000-4000-8000-000000000000.txn';
system('cp', "$ds/_transactions/$some_txn", "$ds/_transactions/$lost_txn") == 0 or die;

# 4. temporary files of the dead backend in _versions/ and _transactions/, and
#    one of a running backend (still being written: never removed)
my $versions_temp = ".18446744073709551610.manifest.$killed_pid.0123456789abcdef.tmp";
my $txn_temp = ".4-x.txn.$killed_pid.fedcba9876543210.tmp";
my $live = $node->background_psql('postgres');
my $live_pid = $live->query_safe('SELECT pg_backend_pid()');
my $live_temp = ".0101.lance.$live_pid.00000000deadbeef.tmp";
for my $file ("$ds/_versions/$versions_temp", "$ds/_transactions/$txn_temp", "$ds/data/$live_temp")
{
	open my $fh, '>', $file or die "could not create $file: $!";
	print $fh 'partial';
	close $fh;
}

# 5. what must stay: the committed file's sidecar directory, a staging
#    directory a writer still fills (old directory, fresh part), files that
#    are not ours
mkdir "$ds/data/$committed_stem" or die;
system('cp', $parts[1], "$ds/data/$committed_stem/10000000000000000000000000000000.blob") == 0 or die;
my $active = "$ds/data/_parts/" . ('1' x 24) . ('a' x 26) . '.lance';
mkdir $active or die;
system('cp', $parts[1], "$active/part-1.lance") == 0 or die;
open my $notes, '>', "$ds/data/NOTES.txt" or die;
close $notes;

# 6. symlinks where orphans would be, into the victim dataset
symlink("$victim/data", "$ds/data/_parts/" . ('0' x 24) . ('b' x 26) . '.lance') or die;
symlink("$victim/data", "$ds/data/" . ('0' x 24) . ('c' x 26)) or die;
my ($victim_file) = grep { /\.lance$/ } directory_entries("$victim/data");
symlink("$victim/data/$victim_file", "$ds/data/" . ('0' x 24) . ('d' x 26) . '.lance') or die;

# Everything is two days old, except the active writer's part.
system('find', $ds, '-exec', 'touch', '-h', '-d', '2 days ago', '{}', '+') == 0 or die;
system('touch', "$active/part-1.lance") == 0 or die;

# Every entry below a directory, never following a symlink: "path type size".
sub tree_listing
{
	my ($dir) = @_;
	my @entries;
	File::Find::find(
		{
			no_chdir => 1,
			wanted => sub {
				my @st = lstat $_;
				my $type = -l _ ? 'link' : -d _ ? 'dir' : 'file';
				(my $rel = $_) =~ s{^\Q$dir\E/?}{};
				push @entries, "$rel $type " . ($type eq 'file' ? $st[7] : 0) if $rel ne '';
			}
		},
		$dir);
	return sort @entries;
}
my @victim_before = tree_listing($victim);
my @before = tree_listing($ds);

# Rows read back from every version, before anything is removed.
my $reader = ($ENV{LP_SRCDIR} // Cwd::getcwd()) . '/test/reference/read.cjs';
my $have_node = -d (($ENV{LP_SRCDIR} // Cwd::getcwd()) . '/test/reference/node_modules')
  && system('node --version >/dev/null 2>&1') == 0;
sub rows_of_every_version
{
	my ($path, $latest) = @_;
	return join(',', map {
		my $json = `LANCEDB_LOG=error node '$reader' '$path' --version $_`;
		$? == 0 ? decode_json($json)->{num_rows} : 'unreadable'
	} 1 .. $latest);
}
my $rows_before = $have_node ? rows_of_every_version($ds, 4) : '';

# ---- the progress view drops the dead backend's record -----------------------

is($node->safe_psql('postgres', 'SELECT count(*) FROM lance_parts.progress'), '0',
	'the killed backend\'s operation is not shown');
ok(!-e $stale_progress, 'reading the view removed the killed backend\'s progress record');

# ---- cleanup_orphans -------------------------------------------------------------

my %expected = (
	"data/$killed_temp" => 'temporary_file',
	"data/$live_temp" => 'temporary_file skipped',
	"data/$abandoned" => 'data_file',
	"data/$abandoned_stem" => 'sidecar_directory',
	"data/_parts/$abandoned" => 'staging_directory',
	"data/" . ('0' x 24) . ('c' x 26) => 'sidecar_directory skipped',
	"data/" . ('0' x 24) . ('d' x 26) . '.lance' => 'data_file skipped',
	"data/_parts/" . ('0' x 24) . ('b' x 26) . '.lance' => 'staging_directory skipped',
	"_transactions/$lost_txn" => 'transaction_file',
	"_transactions/$txn_temp" => 'temporary_file',
	"_versions/$versions_temp" => 'temporary_file');

# "path kind action" per row, with the dataset prefix removed
sub cleanup
{
	my ($args) = @_;
	my $out = $node->safe_psql('postgres',
		"SELECT path || ' ' || kind || ' ' || action || coalesce(' (' || reason || ')', '')
		 FROM lance_parts.cleanup_orphans('$ds'$args) ORDER BY path");
	return map { s{^\Q$ds\E/}{}r } grep { $_ ne '' } split /\n/, $out;
}
sub expected_rows
{
	my ($action) = @_;
	return map {
		my ($kind, $skipped) = split / /, $expected{$_};
		"$_ $kind " . ($skipped ? 'skipped' : $action)
	} sort keys %expected;
}
sub without_reasons { return map { s/ \(.*\)$//r } @_ }

my @dry = cleanup('');
is_deeply([ without_reasons(@dry) ], [ expected_rows('would_remove') ],
	'the dry run lists exactly the orphans');
like(join("\n", @dry), qr/\Q$live_temp\E temporary_file skipped \(its writer, backend $live_pid, is running\)/,
	'a running backend\'s temporary file is skipped');
like(join("\n", @dry), qr/staging_directory skipped \(symbolic link/, 'a symlinked staging directory is skipped');
is_deeply([ tree_listing($ds) ], \@before, 'the dry run changed nothing');

is(join("\n", cleanup(", older_than => '3 days', dry_run => false")), '',
	'with older_than larger than their age nothing is listed');
is_deeply([ tree_listing($ds) ], \@before, 'and nothing is removed');

my @removed = cleanup(", dry_run => false");
is_deeply([ without_reasons(@removed) ], [ expected_rows('removed') ], 'the real run removes exactly the orphans');
my %gone = map { $_ => 1 } grep { $expected{$_} !~ /skipped/ } keys %expected;
my @left = grep {
	my ($rel) = split / /;
	!grep { $rel eq $_ || index($rel, "$_/") == 0 } keys %gone
} @before;
is_deeply([ tree_listing($ds) ], \@left, 'everything else is still there');
ok(-e "$ds/data/$committed", 'the committed file is untouched');
ok(-e "$ds/data/$committed_stem/10000000000000000000000000000000.blob",
	'the committed file\'s sidecar directory is untouched');
ok(-e "$active/part-1.lance", 'the staging directory in use is untouched');
is_deeply([ tree_listing($victim) ], \@victim_before, 'nothing behind a symlink was touched');

is_deeply([ without_reasons(cleanup(", dry_run => false")) ],
	[ grep { / skipped$/ } expected_rows('removed') ], 'a second run finds only what it skips');

# privileges: reading and writing server files
$node->safe_psql('postgres', 'CREATE ROLE reader LOGIN; GRANT pg_read_server_files TO reader');
my ($ret, $stdout, $stderr) = $node->psql('postgres',
	"\\set VERBOSITY verbose\nSELECT * FROM lance_parts.cleanup_orphans('$ds')",
	extra_params => [ '-U', 'reader' ]);
like($stderr, qr/42501: permission denied to write Lance files/, 'cleanup_orphans needs pg_write_server_files');

SKIP:
{
	skip 'the reference implementation is not installed', 2 unless $have_node;
	is(rows_of_every_version($ds, 4), $rows_before, "lancedb reads every version as before ($rows_before rows)");
	is(rows_of_every_version($victim, 3), '300,470,515', 'lancedb reads every version of the victim');
}

$live->quit;
$node->stop;
system('rm', '-rf', $work) if $ENV{LP_SCRATCH};
done_testing();
