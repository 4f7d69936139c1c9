# A whole ingest (target, assembly of the given parts, commit) as one SQL
# statement run by pg_cron in a background worker: the dataset gets a new
# version holding the assembled file.  Two forms: lance_parts.ingest(), as
# the README schedules it, and the same steps as one WITH statement.  Then
# the README's recipe of write_part jobs, one a part, and one job that
# assembles and commits them.  And the README's recipe of a job whose
# failure publishes nothing: it writes a dataset, then fails.
use strict;
use warnings;

use Cwd ();
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use JSON::PP qw(decode_json);
use Test::More;

use LanceParts qw(reference_data directory_entries);

# Debian's pg_cron for 15; scripts/pg-majors.sh builds it for another major
# where Debian's mirror serves its source.  Where its stamp file records why
# it could not (test/run.sh passes that in LP_PG_ADDONS_MISSING), the test
# is skipped with that reason; a pg_cron missing for no recorded reason is a
# failure, once, instead of stopping every TAP test after it (a server that
# cannot start makes PostgreSQL::Test::Cluster bail out).
my $pkglibdir = `pg_config --pkglibdir`;
chomp $pkglibdir;
if (!-f "$pkglibdir/pg_cron.so")
{
	plan skip_all => "no pg_cron for this PostgreSQL: $1"
	  if ($ENV{LP_PG_ADDONS_MISSING} // '') =~ /^pg-cron: (.*)$/m;
	fail("pg_cron is installed in $pkglibdir");
	done_testing();
	exit;
}


my ($data_dir, $index) = reference_data();
my ($source) = grep { $_->{name} eq 'types_2_2_v2' } @{ $index->{datasets} };
my @files = sort { $a->{fragment_id} <=> $b->{fragment_id} } @{ $source->{data_files} };
# parts: the 300-row and the 45-row file, in this order
my @parts = map { "$source->{path}/data/$_->{file}" } @files[ 0, 2 ];
my $part_rows = $files[0]->{num_rows} + $files[2]->{num_rows};
my $parts_sql = 'ARRAY[' . join(', ', map { "'$_'" } @parts) . ']';



# absolute: the server resolves paths from its data directory
my $work = $ENV{LP_SCRATCH}
  ? "$ENV{LP_SCRATCH}/003_pg_cron"
  : Cwd::abs_path(PostgreSQL::Test::Utils::tempdir());
mkdir $work unless -d $work;
my %dataset = (
	lp_ingest => "$work/by_ingest.lance",
	lp_with => "$work/by_with.lance");
for my $path (values %dataset)
{
	system('cp', '-r', $source->{path}, $path) == 0 or die "could not copy $source->{path}";
}
my @original_files = directory_entries("$source->{path}/data");

my $node = PostgreSQL::Test::Cluster->new('cron');
$node->init;
$node->append_conf(
	'postgresql.conf', q{
shared_preload_libraries = 'pg_cron'
cron.database_name = 'postgres'
cron.use_background_workers = on
max_worker_processes = 16
});
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION pg_cron; CREATE EXTENSION lance_parts');

# The one-statement forms.  In the WITH form, the commit takes its mode from
# the assembly's row, so it cannot run before the assembly: without that
# dependency the planner may join the commit to "t" before scanning "a".
my %job_sql = (
	lp_ingest => "SELECT * FROM lance_parts.ingest('$dataset{lp_ingest}', $parts_sql)",
	lp_with => "WITH t AS MATERIALIZED (SELECT lance_parts.create_target('$dataset{lp_with}') AS t),
     a AS MATERIALIZED (SELECT a.* FROM t, lance_parts.assemble(t.t, $parts_sql) a)
SELECT c.* FROM t, a, lance_parts.commit(t.t, CASE WHEN a.status = 'written' THEN 'append' END) c");

for my $job (sort keys %job_sql)
{
	$node->safe_psql('postgres',
		"SELECT cron.schedule('$job', '* * * * *', \$job\$$job_sql{$job}\$job\$)");
}
# a job runs its command in one transaction: its write is published at its
# COMMIT, which the failure prevents
my $failing = "$work/by_failing_job.lance";
my $failing_sql = "SELECT * FROM lance_parts.write_dataset('$failing', 'SELECT 1::bigint AS id');
SELECT 1 / 0;";
$node->safe_psql('postgres', "SELECT cron.schedule('lp_fails', '* * * * *', \$job\$$failing_sql\$job\$)");
is($node->safe_psql('postgres', 'SELECT count(*) FROM cron.job'), '3', 'three jobs scheduled every minute');

# pg_cron starts jobs at the next minute boundary
my $finished = q{
	SELECT count(DISTINCT j.jobname) FROM cron.job_run_details d JOIN cron.job j USING (jobid)
	WHERE d.status IN ('succeeded', 'failed')};
my $waited = 0;
while ($node->safe_psql('postgres', $finished) ne '3' && $waited < 90)
{
	sleep 1;
	$waited++;
}
note "waited $waited s for the jobs";
# stop further runs before checking anything
for my $job (sort(keys %job_sql), 'lp_fails')
{
	is($node->safe_psql('postgres', "SELECT cron.unschedule('$job')"), 't', "$job unscheduled");
}
is($node->safe_psql('postgres', 'SELECT count(*) FROM cron.job'), '0', 'no job left');

like($node->safe_psql('postgres', qq{
		SELECT string_agg(status || ': ' || coalesce(return_message, ''), E'\\n' ORDER BY runid)
		FROM cron.job_run_details WHERE command = \$job\$$failing_sql\$job\$}),
	qr/^failed: .*division by zero$/, 'lp_fails: one run, failed');
ok(!-e "$failing/_versions", 'lp_fails: the failed job published no version');
is(join(' ', -d "$failing/data" ? directory_entries("$failing/data") : ()), '',
	'lp_fails: and left no data file');

for my $job (sort keys %job_sql)
{
	my $path = $dataset{$job};
	# the job is gone after unschedule; its run details stay
	my $runs = $node->safe_psql('postgres', qq{
		SELECT string_agg(status || ': ' || coalesce(return_message, ''), E'\\n' ORDER BY runid)
		FROM cron.job_run_details WHERE command = \$job\$$job_sql{$job}\$job\$});
	is($runs, 'succeeded: SELECT 1', "$job: one run, succeeded");

	# a new version: a target made now reads version 4
	my $target = decode_json($node->safe_psql('postgres',
		"SELECT lance_parts.create_target('$path')"));
	is($target->{dataset_version}, 4, "$job: the dataset is at version 4");

	# exactly one new data file, holding the parts' rows
	my %original = map { $_ => 1 } @original_files;
	my @new = grep { /\.lance$/ && !$original{$_} } directory_entries("$path/data");
	is(scalar(@new), 1, "$job: one new data file");
	is( $node->safe_psql(
			'postgres',
			"SELECT version || ' ' || num_rows || ' ' || num_columns || ' ' || num_global_buffers
			 FROM lance_parts.file_info('$path/data/$new[0]')"),
		"2.2 $part_rows $source->{expected_num_columns} 1",
		"$job: file_info of the new file");
	is(join(',', grep { /^\./ } directory_entries("$path/data")), '', "$job: no temporary file");

  SKIP:
	{
		my $reader = ($ENV{LP_SRCDIR} // Cwd::getcwd()) . '/test/reference/read.cjs';
		skip 'the reference implementation is not installed', 2
		  unless -d (($ENV{LP_SRCDIR} // Cwd::getcwd()) . '/test/reference/node_modules')
		  && system('node --version >/dev/null 2>&1') == 0;
		my $json = `LANCEDB_LOG=error node '$reader' '$path'`;
		my $read = decode_json($json);
		is($read->{num_rows}, $source->{num_rows} + $part_rows,
			"$job: lancedb reads every row of the new version");
		is(join(',', map { $read->{fragments}{$_} } sort { $a <=> $b } keys %{ $read->{fragments} }),
			join(',', (map { $_->{num_rows} } @files), $part_rows),
			"$job: lancedb sees the new fragment");
	}
}

# ---- the pg_cron recipe: one job per part, then one job that commits -------------
my $cron_dataset = "$work/cron.lance";
$node->safe_psql('postgres', qq{
	CREATE SERVER lance FOREIGN DATA WRAPPER lance_fdw;
	SELECT * FROM lance_parts.write_dataset('$cron_dataset', 'SELECT 0::bigint AS id');
	CREATE TABLE ingest (target jsonb);
	INSERT INTO ingest SELECT lance_parts.create_target('$cron_dataset');
	CREATE TABLE ingest_parts (slice int PRIMARY KEY, uri text, num_rows bigint);
	SELECT cron.schedule('part-' || s, '* * * * *', format(
		\$job\$INSERT INTO ingest_parts SELECT %s, uri, num_rows
		       FROM ingest, lance_parts.write_part(target, 'SELECT g::bigint AS id FROM generate_series(%s, %s) g')
		       ON CONFLICT DO NOTHING\$job\$, s, s * 1000 + 1, s * 1000 + 1000))
	FROM generate_series(1, 2) s;
});
$waited = 0;
while ($node->safe_psql('postgres', 'SELECT count(*) FROM ingest_parts') ne '2' && $waited < 150)
{
	sleep 1;
	$waited++;
}
$node->safe_psql('postgres', "SELECT cron.unschedule('part-' || s) FROM generate_series(1, 2) s");
is($node->safe_psql('postgres', 'SELECT count(*) FROM ingest_parts'), '2', "two part jobs ran (after $waited s)");
$node->safe_psql('postgres', q{
	SELECT cron.schedule('commit', '* * * * *', $job$
		SELECT c.* FROM ingest,
		     LATERAL lance_parts.assemble(target, (SELECT array_agg(uri ORDER BY slice) FROM ingest_parts)) a,
		     LATERAL lance_parts.commit(target, CASE WHEN a.status = 'written' THEN 'append' END) c$job$);
});
$finished = q{SELECT count(*) FROM cron.job_run_details d JOIN cron.job j USING (jobid)
	WHERE j.jobname = 'commit' AND d.status IN ('succeeded', 'failed')};
$waited = 0;
while ($node->safe_psql('postgres', $finished) eq '0' && $waited < 90)
{
	sleep 1;
	$waited++;
}
$node->safe_psql('postgres', "SELECT cron.unschedule('commit')");
is( $node->safe_psql('postgres', q{
		SELECT string_agg(status || ': ' || coalesce(return_message, ''), ',') FROM cron.job_run_details
		WHERE command LIKE '%ingest_parts%lance_parts.commit%'}),
	'succeeded: SELECT 1', 'the commit job succeeded');
$node->safe_psql('postgres',
	"CREATE FOREIGN TABLE cron_ds (id bigint) SERVER lance OPTIONS (uri '$cron_dataset')");
is($node->safe_psql('postgres', 'SELECT string_agg(id::text, \',\') FROM cron_ds'),
	join(',', 0, 1001 .. 3000), 'the dataset holds the parts in slice order');

$node->stop;
system('rm', '-rf', $work) if $ENV{LP_SCRATCH};
done_testing();
