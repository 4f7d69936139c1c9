# commit and cleanup_target of one target are serialized: a cleanup_target
# that arrives after commit validated the assembled file waits for the commit
# to publish it, then refuses (the file is part of a version), so the
# published version never references a missing file.
#
# The race is made deterministic by stopping the committing backend with gdb
# at lp_commit, which runs after every check and before publication.
use strict;
use warnings;

use File::Path qw(make_path);
use IPC::Run ();
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use LanceParts qw(reference_data reference_read);

# scripts/setup.sh installs gdb: without it this test fails rather than skips.
die('gdb is needed to stop a backend between validation and publication')
  unless system('gdb --version >/dev/null 2>&1') == 0;

my ($data_dir, $index) = reference_data();
my ($reference) = grep { $_->{name} eq 'types_2_2_v2' } @{ $index->{datasets} };
my ($part_file) = sort { $b->{num_rows} <=> $a->{num_rows} } @{ $reference->{data_files} };
my $part = "$reference->{path}/data/$part_file->{file}";
my $rows = 0;
$rows += $_->{num_rows} for @{ $reference->{data_files} };

my $work = "$ENV{LP_SCRATCH}/014_commit_cleanup_race";
make_path($work);
my $dataset = "$work/race.lance";
system('cp', '-r', $reference->{path}, $dataset) == 0 or die "could not copy to $dataset";

my $node = PostgreSQL::Test::Cluster->new('race');
$node->init;
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION lance_parts');
$node->safe_psql('postgres',
	"CREATE TABLE targets AS SELECT lance_parts.create_target('$dataset') AS target");
my $target = '(SELECT target FROM targets)';
is($node->safe_psql('postgres', "SELECT status FROM lance_parts.assemble($target, ARRAY['$part'])"),
	'written', 'part assembled');
my $file = $node->safe_psql('postgres',
	"SELECT target->>'data_dir' || '/' || (target->>'file_name') FROM targets");

# Session A will commit; its backend has the module loaded before gdb attaches.
my $committer = $node->background_psql('postgres', on_error_stop => 0);
$committer->query_safe("SELECT lance_parts.staging_dir($target)");
my $committer_pid = $committer->query_safe('SELECT pg_backend_pid()');

my ($gdb_in, $gdb_out) = ('', '');
my $gdb_timer = IPC::Run::timer($PostgreSQL::Test::Utils::timeout_default);
my $gdb = IPC::Run::start(
	[ 'gdb', '-q', '-nx', '-p', $committer_pid ],
	'<', \$gdb_in, '>', \$gdb_out, '2>', \$gdb_out, $gdb_timer);

# Wait for gdb to print what matches; a gdb that does not is killed.
sub gdb_wait
{
	my ($pattern, $what) = @_;
	$gdb_timer->start($PostgreSQL::Test::Utils::timeout_default);
	$gdb->pump while $gdb_out !~ $pattern && !$gdb_timer->is_expired && $gdb->pumpable;
	return if $gdb_out =~ $pattern;
	$gdb->kill_kill;
	BAIL_OUT("gdb did not get to $what:\n$gdb_out");
}

$gdb_in .= "set pagination off\nset confirm off\nbreak lp_commit\ncontinue\n";
gdb_wait(qr/Continuing\./, 'resume the backend');

# A validates the target and stops at lp_commit, before publication.
$committer->{stdin} .= "SELECT dataset_version FROM lance_parts.commit($target);\n";
$committer->{run}->pump_nb();
gdb_wait(qr/Breakpoint 1, .*lp_commit/, 'the breakpoint before publication');
pass('the committing backend stopped before publication');

# B cleans up the same target meanwhile: it must wait for A.
my $cleaner = $node->background_psql('postgres', on_error_stop => 0);
my $cleaner_pid = $cleaner->query_safe('SELECT pg_backend_pid()');
$cleaner->{stdin} .= "SELECT lance_parts.cleanup_target($target);\n";
$cleaner->{run}->pump_nb();
$node->poll_query_until('postgres',
	"SELECT wait_event_type = 'Lock' OR state = 'idle' FROM pg_stat_activity WHERE pid = $cleaner_pid")
  or die 'cleanup_target neither waited nor finished';
is($node->safe_psql('postgres',
		"SELECT wait_event_type || '/' || wait_event FROM pg_stat_activity WHERE pid = $cleaner_pid"),
	'Lock/advisory', 'cleanup_target waits for the commit');
ok(-f $file, 'the assembled file is still there');

# A publishes; B then finds the file committed and refuses.
$gdb_in .= "detach\nquit\n";
$gdb->finish;
my $committed = $committer->query("SELECT 'committed'");
like($committed, qr/^\d+\ncommitted$/, 'the commit succeeded');
my $cleaned = $cleaner->query("SELECT 'cleaned'");
like($cleaner->{stderr}, qr/of the target is part of version \d+ of dataset/,
	'cleanup_target then refuses: the file is committed');
ok(-f $file, 'the committed file is still there');
$committer->quit;
$cleaner->quit;

my ($read, $stderr) = reference_read($dataset);
is($read ? $read->{num_rows} : "read failed: $stderr", $rows + $part_file->{num_rows},
	'the reference reads every row of the latest version');

$node->stop;
done_testing();
