# pg_upgrade of a cluster that uses lance_parts, as a user runs it: from the
# PostgreSQL the tests run on (15; or the installation whose bin directory
# LP_PG_UPGRADE_OLD_BINDIR names, as pg_upgrade needs a release of the new
# major at least as recent as the old one's) to each major test/run.sh names
# in LP_PG_UPGRADE_BINDIRS (bin directories separated by ':', each
# installation with lance_parts installed).  For each, an old cluster holds lance_fdw
# servers (a local one and one on an S3 server, scripts/s3-server.sh), user
# mappings with S3 credentials (for PUBLIC and for one role), foreign tables
# over the reference datasets, a target made before the upgrade and, where
# the new installation has pg_cron (pg_upgrade needs every library of the
# old cluster in the new one), a pg_cron job that reads a foreign table
# every minute.  After the upgrade the servers, mappings and tables are the
# same and read the same rows, the extension is the same version, the job
# is still scheduled and runs on the new server, an ingest writes a new
# dataset version that lancedb reads, and the target made before commits
# once the key file is copied, as the README says: pg_upgrade does not
# carry $PGDATA/lance_parts.key over, and without it the target is refused
# (22023).
use strict;
use warnings;

use Cwd ();
use File::Basename qw(dirname);
use File::Copy ();
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use LanceParts qw(reference_data reference_read start_s3_server upload_dataset);

# test/run.sh always says which majors to upgrade to (possibly none, as an
# empty value); only outside it may the variable be missing.
if (!defined $ENV{LP_PG_UPGRADE_BINDIRS})
{
	plan skip_all => 'LP_PG_UPGRADE_BINDIRS names no newer PostgreSQL installation to upgrade to'
	  unless $ENV{LP_SCRATCH};
	fail('test/run.sh sets LP_PG_UPGRADE_BINDIRS, the bin directories of the majors to upgrade to');
	done_testing();
	exit;
}
my @new_bindirs = grep { $_ ne '' } split /:/, $ENV{LP_PG_UPGRADE_BINDIRS};
plan skip_all => 'test/run.sh upgrades to no other major in this run (LP_PG_UPGRADE_BINDIRS is empty)'
  unless @new_bindirs;

my ($testdata, $index) = reference_data();
my ($types) = grep { $_->{name} eq 'types_2_2_v2' } @{ $index->{datasets} };
my @files = sort { $a->{fragment_id} <=> $b->{fragment_id} } @{ $types->{data_files} };
# the parts of each ingest: the 300-row and the 45-row file
my $parts_sql = 'ARRAY[' . join(', ', map { "'$types->{path}/data/$_->{file}'" } @files[ 0, 2 ]) . ']';
my $part_rows = $files[0]->{num_rows} + $files[2]->{num_rows};

my %s3 = start_s3_server();
my $bucket = "s3://$s3{LP_S3_BUCKET}";
upload_dataset(\%s3, "$testdata/types_2_1_v2.lance", 'upgrade/types_2_1_v2.lance');

# Absolute: the server resolves paths from its data directory.
my $work = $ENV{LP_SCRATCH}
  ? "$ENV{LP_SCRATCH}/036_pg_upgrade"
  : Cwd::abs_path(PostgreSQL::Test::Utils::tempdir());
mkdir $work unless -d $work;

# What the upgrade must keep: the extension, the wrapper's servers, user
# mappings (options included: the credentials) and foreign tables, and the
# role the extension made.  Options in name order, as pg_dump writes them;
# table privileges one by one, but for MAINTAIN, which 17 added and gives
# owners.
my $objects = q{
CREATE FUNCTION pg_temp.options(options text[]) RETURNS text LANGUAGE sql
	RETURN (SELECT string_agg(o, ',' ORDER BY o) FROM unnest(options) o);
SELECT string_agg(x, E'\n' ORDER BY x) FROM (
	SELECT 'extension ' || extname || ' ' || extversion || ' ' || extnamespace::regnamespace
	FROM pg_extension WHERE extname = 'lance_parts'
	UNION ALL
	SELECT 'server ' || srvname || ' ' || pg_temp.options(srvoptions) ||
		' owner=' || srvowner::regrole || ' acl=' || coalesce(srvacl::text, 'default')
	FROM pg_foreign_server
	UNION ALL
	SELECT 'user mapping ' || srvname || ' ' || usename || ' ' || pg_temp.options(umoptions)
	FROM pg_user_mappings
	UNION ALL
	SELECT 'foreign table ' || ftrelid::regclass || ' ' || pg_temp.options(ftoptions) ||
		' columns=' || (SELECT string_agg(attname || ':' || format_type(atttypid, atttypmod), ',' ORDER BY attnum)
						FROM pg_attribute WHERE attrelid = ftrelid AND attnum > 0) ||
		' acl=' || coalesce((SELECT string_agg(grantee::regrole || '=' || privilege_type || '/' || grantor::regrole,
											   ',' ORDER BY grantee::regrole::text, privilege_type)
							 FROM pg_class, aclexplode(relacl)
							 WHERE oid = ftrelid AND privilege_type <> 'MAINTAIN'), 'default')
	FROM pg_foreign_table
	UNION ALL
	SELECT 'role ' || rolname || ' ' || coalesce(shobj_description(oid, 'pg_authid'), '')
	FROM pg_roles WHERE rolname = 'lance_parts_endpoint_admin'
) o(x)};

# Every row of each foreign table, summed up: count and a digest of the rows
# in id order.
my @tables = ('lake.types_2_2_v2', 'lake.deleted_2_2', 'lake.types_v1', 'lake.types_2_1_v2');
sub rows_of
{
	my ($node, $table, $role) = @_;
	my $set_role = $role ? "SET ROLE $role;" : '';
	return $node->safe_psql('postgres',
		"$set_role SELECT count(*) || ' ' || md5(string_agg(t::text, E'\\n' ORDER BY id)) FROM $table t");
}

my $job = q{SELECT jobname || ' ' || schedule || ' ' || command || ' ' || database || ' ' || username || ' ' || active
	FROM cron.job};

# The first read of the job on the node's server since it started; pg_cron
# starts jobs at the next minute boundary.
sub wait_for_read
{
	my ($node, $major) = @_;
	my $read = "SELECT rows FROM cron_reads WHERE major = $major AND read_at > pg_postmaster_start_time()
		ORDER BY read_at LIMIT 1";
	for (1 .. 150)
	{
		my $rows = $node->safe_psql('postgres', $read);
		return $rows if $rows ne '';
		sleep 1;
	}
	return '(no run within 150 s)';
}

for my $i (0 .. $#new_bindirs)
{
	my $bindir = $new_bindirs[$i];
	my $new = PostgreSQL::Test::Cluster->new("new_$i", install_path => dirname($bindir));
	my $major = $new->pg_version->major;
	# pg_upgrade loads every library the old cluster's functions name in the
	# new installation: the old cluster has pg_cron only where the new has it
	my $cron = -f $new->config_data('--sharedir') . '/extension/pg_cron.control';
	my $conf = $cron
	  ? "shared_preload_libraries = 'pg_cron, lance_parts'\ncron.database_name = 'postgres'\n"
	  . "cron.use_background_workers = on\nmax_worker_processes = 16\n"
	  : "shared_preload_libraries = 'lance_parts'\n";
	my $dataset = "$work/ingest_$i.lance";
	system('cp', '-r', $types->{path}, $dataset) == 0 or die "could not copy $types->{path}";

	my $old = PostgreSQL::Test::Cluster->new("old_$i",
		$ENV{LP_PG_UPGRADE_OLD_BINDIR} ? (install_path => dirname($ENV{LP_PG_UPGRADE_OLD_BINDIR})) : ());
	$old->init;
	$old->append_conf('postgresql.conf', $conf);
	$old->start;
	my $old_major = $old->pg_version->major;
	$old->safe_psql('postgres', qq{
SET log_statement = none;
CREATE EXTENSION lance_parts;
CREATE SERVER files FOREIGN DATA WRAPPER lance_fdw OPTIONS (root '$testdata');
CREATE SERVER scratch FOREIGN DATA WRAPPER lance_fdw OPTIONS (root '$work');
CREATE SERVER rgw FOREIGN DATA WRAPPER lance_fdw
    OPTIONS (root '$bucket', endpoint '$s3{LP_S3_ENDPOINT}', allow_http 'true', region '$s3{LP_S3_REGION}');
CREATE USER MAPPING FOR PUBLIC SERVER rgw
    OPTIONS (access_key_id '$s3{LP_S3_ACCESS_KEY_ID}', secret_access_key '$s3{LP_S3_SECRET_ACCESS_KEY}');
CREATE ROLE app_reader LOGIN;
CREATE USER MAPPING FOR app_reader SERVER rgw
    OPTIONS (access_key_id '$s3{LP_S3_ACCESS_KEY_ID}', secret_access_key '$s3{LP_S3_SECRET_ACCESS_KEY}');
CREATE SCHEMA lake;
IMPORT FOREIGN SCHEMA generated LIMIT TO (types_2_2_v2, deleted_2_2) FROM SERVER files INTO lake
    OPTIONS (uri '$testdata');
CREATE FOREIGN TABLE lake.types_v1 (id bigint, s text) SERVER files
    OPTIONS (uri 'types_2_2_v2.lance', version '1');
IMPORT FOREIGN SCHEMA upgrade FROM SERVER rgw INTO lake OPTIONS (uri '$bucket/upgrade/types_2_1_v2.lance');
IMPORT FOREIGN SCHEMA x FROM SERVER scratch INTO lake OPTIONS (uri '$dataset');
GRANT USAGE ON SCHEMA lake TO app_reader;
GRANT SELECT ON lake.types_2_1_v2 TO app_reader;
GRANT USAGE ON FOREIGN SERVER rgw TO app_reader;
-- a target made before the upgrade, waiting to be used
CREATE TABLE pending_targets (target jsonb NOT NULL);
INSERT INTO pending_targets VALUES (lance_parts.create_target('$dataset'));
});

	my %before = (objects => $old->safe_psql('postgres', $objects));
	$before{$_} = rows_of($old, $_) for @tables;
	like($before{'lake.types_2_2_v2'}, qr/^$types->{num_rows} /,
		"$old_major: lake.types_2_2_v2 reads the $types->{num_rows} rows");
	like($before{'lake.types_2_1_v2'}, qr/^515 /, "$old_major: the foreign table on the S3 server reads its rows");
	is(rows_of($old, 'lake.types_2_1_v2', 'app_reader'), $before{'lake.types_2_1_v2'},
		"$old_major: app_reader reads them through its own user mapping");
	like($before{'lake.deleted_2_2'}, qr/^318 /, "$old_major: deleted rows are left out");

	# The job: what it read, and on which major, as a row of a local table.
	if ($cron)
	{
		$old->safe_psql('postgres', q{
CREATE EXTENSION pg_cron;
CREATE TABLE cron_reads (
	major integer DEFAULT current_setting('server_version_num')::integer / 10000,
	read_at timestamptz DEFAULT clock_timestamp(),
	rows bigint);
SELECT cron.schedule('lake_read', '* * * * *',
	'INSERT INTO cron_reads (rows) SELECT count(*) FROM lake.types_2_2_v2');
});
		$before{job} = $old->safe_psql('postgres', $job);
		is(wait_for_read($old, $old_major), $types->{num_rows}, "$old_major: the job reads the foreign table");
	}
	$old->stop;

	$new->init(extra => $major >= 18 ? ['--no-data-checksums'] : []);
	$new->append_conf('postgresql.conf', $conf);

	# pg_upgrade writes its scripts and reports into its working directory
	my $cwd = Cwd::getcwd();
	my $upgrade_dir = PostgreSQL::Test::Utils::tempdir();
	chdir $upgrade_dir or die "could not enter $upgrade_dir: $!";
	$new->command_ok(
		[ "$bindir/pg_upgrade", '--no-sync',
		  '-b', $old->config_data('--bindir'), '-B', $bindir,
		  '-d', $old->data_dir, '-D', $new->data_dir,
		  '-p', $old->port, '-P', $new->port, '-s', $new->host ],
		"pg_upgrade from $old_major to $major");
	chdir $cwd or die "could not enter $cwd: $!";
	# pg_upgrade keeps its logs only when it failed: show their errors, and
	# leave the half-restored cluster alone
	my @logs = glob($new->data_dir . '/pg_upgrade_output.d/*/log/*.log');
	if (@logs)
	{
		diag(grep { /(?:error|ERROR|FATAL):/ } map { split /^/m, PostgreSQL::Test::Utils::slurp_file($_) } @logs);
		next;
	}

	$new->start;
	# what pg_upgrade tells the user to run: ALTER EXTENSION ... UPDATE for
	# extensions whose new installation has a later version (pg_cron)
	if (-f "$upgrade_dir/update_extensions.sql")
	{
		$new->command_ok([ $new->installed_command('psql'), '-X', '-v', 'ON_ERROR_STOP=1', '-d', 'postgres',
				'-f', "$upgrade_dir/update_extensions.sql" ],
			"$major: update_extensions.sql runs");
	}
	is($new->safe_psql('postgres', $objects), $before{objects},
		"$major: the extension, servers, user mappings, foreign tables and role are those of $old_major");
	for my $table (@tables)
	{
		is(rows_of($new, $table), $before{$table}, "$major: $table reads the same rows");
	}
	is(rows_of($new, 'lake.types_2_1_v2', 'app_reader'), $before{'lake.types_2_1_v2'},
		"$major: app_reader reads them through its user mapping");

	# the job: still scheduled as it was, and it runs on the new server
  SKIP:
	{
		skip "the PostgreSQL $major installation has no pg_cron", 3 unless $cron;
		is($new->safe_psql('postgres', $job), $before{job}, "$major: the job is still scheduled");
		is(wait_for_read($new, $major), $types->{num_rows}, "$major: the job runs and reads the foreign table");
		is($new->safe_psql('postgres', q{
			SELECT string_agg(DISTINCT status, ',') FROM cron.job_run_details
			WHERE start_time > pg_postmaster_start_time()}),
			'succeeded', "$major: its runs succeeded");
	}

	# the target made before the upgrade: refused until the key file is there
	my $target = '(SELECT target FROM pending_targets)';
	my ($rc, $stdout, $stderr) = $new->psql('postgres',
		"\\set VERBOSITY verbose\nSELECT status FROM lance_parts.assemble($target, $parts_sql)");
	like($stderr, qr/ERROR:  22023: .*signed with a key this cluster does not have/,
		"$major: without lance_parts.key a target made before the upgrade is refused");
	File::Copy::copy($old->data_dir . '/lance_parts.key', $new->data_dir . '/lance_parts.key.new')
	  or die "could not copy lance_parts.key: $!";
	chmod 0600, $new->data_dir . '/lance_parts.key.new';
	rename($new->data_dir . '/lance_parts.key.new', $new->data_dir . '/lance_parts.key')
	  or die "could not rename lance_parts.key.new: $!";
	is($new->safe_psql('postgres', "SELECT status FROM lance_parts.assemble($target, $parts_sql)"),
		'written', "$major: with the old cluster's key file, the target made before assembles");
	is($new->safe_psql('postgres', "SELECT dataset_version FROM lance_parts.commit($target)"),
		'4', "$major: and commits version 4");

	# an ingest, and what every reader sees of it
	is($new->safe_psql('postgres',
			"SELECT dataset_version || ' ' || num_rows FROM lance_parts.ingest('$dataset', $parts_sql)"),
		"5 $part_rows", "$major: an ingest commits version 5");
	my $total = $types->{num_rows} + 2 * $part_rows;
	like(rows_of($new, "lake.ingest_$i"), qr/^$total /, "$major: the foreign table over the dataset reads $total rows");
	my ($read, $read_stderr) = reference_read($dataset);
	is($read ? $read->{num_rows} : $read_stderr, $total, "$major: so does lancedb");

	$new->stop;
}

system('rm', '-rf', $work) if $ENV{LP_SCRATCH};
done_testing();
