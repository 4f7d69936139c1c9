# S3 credentials never reach the server log: with log_min_messages = debug1,
# log_statement = all and the default log_min_error_statement (error), for
# the options' validation and for reads and writes on a real S3 server (Ceph
# RGW, scripts/s3-server.sh, stopped by PID at the end): create_target,
# staging_dir, register_part, assemble, concat_files, commit, ingest,
# compact, cleanup_target and cleanup_orphans, some of them failing, and a
# mapping with a wrong secret (28000).  The
# statements that carry secrets run, as the README advises, after SET
# log_statement = none; those that fail the lance_fdw validator over a user
# mapping's secrets, or over credentials written into an endpoint, a root or
# a URI, then log their error without the statement.  A mapping that is
# accepted, and lookups through it (s3_settings_for, 42501 without a
# mapping, logged statements and all), log no secret either.  The log must
# hold the errors themselves, so a log that captured nothing cannot pass.
use strict;
use warnings;

use File::Find;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use LanceParts qw(reference_data start_s3_server);

my ($testdata) = reference_data();
my %s3 = start_s3_server();
my $secret = $s3{LP_S3_SECRET_ACCESS_KEY};
my $bucket = "s3://$s3{LP_S3_BUCKET}";

# Copy a local dataset to key (a dataset directory), file by file, with curl's own signer.
sub upload_dataset
{
	my ($local, $key) = @_;
	my @files;
	find({ wanted => sub { push @files, $File::Find::name if -f $_ }, no_chdir => 1 }, $local);
	for my $file (@files)
	{
		my $relative = substr($file, length($local) + 1);
		system('curl', '-sS', '-f', '-o', '/dev/null', '--max-time', '30', '-T', $file,
			'--aws-sigv4', "aws:amz:$s3{LP_S3_REGION}:s3",
			'--user', "$s3{LP_S3_ACCESS_KEY_ID}:$secret",
			'-H', 'x-amz-content-sha256: UNSIGNED-PAYLOAD',
			"$s3{LP_S3_ENDPOINT}/$s3{LP_S3_BUCKET}/$key/$relative") == 0
		  or die "could not upload $file";
	}
}

my $node = PostgreSQL::Test::Cluster->new('s3_secrets');
$node->init;
$node->append_conf('postgresql.conf', qq{
log_min_messages = debug1
log_statement = all
log_min_error_statement = error
log_error_verbosity = verbose
});
$node->start;

$node->safe_psql('postgres', q{
CREATE EXTENSION lance_parts;
CREATE SERVER rgw FOREIGN DATA WRAPPER lance_fdw
    OPTIONS (root 's3://lp-bucket', endpoint 'http://127.0.0.1:7480', allow_http 'true');
CREATE ROLE regress_s3_reader;
CREATE ROLE regress_s3_stranger;
GRANT USAGE ON FOREIGN SERVER rgw TO regress_s3_reader, regress_s3_stranger;
});

# statement => the error it must log
my @failing = (
	[ q{CREATE USER MAPPING FOR regress_s3_reader SERVER rgw OPTIONS (access_key_id 'AKID', secret_access_key 'TAP SECRET 1')},
	  'invalid value for option "secret_access_key"' ],
	[ q{CREATE USER MAPPING FOR regress_s3_reader SERVER rgw OPTIONS (access_key_id 'TAP-SECRET-2')},
	  'needs option "secret_access_key"' ],
	[ q{CREATE USER MAPPING FOR regress_s3_reader SERVER rgw OPTIONS (session_token 'TAP-SECRET-3')},
	  'needs options "access_key_id" and "secret_access_key"' ],
	[ q{CREATE USER MAPPING FOR regress_s3_reader SERVER rgw OPTIONS (password 'TAP-SECRET-4')},
	  'invalid option "password"' ],
	[ q{CREATE USER MAPPING FOR regress_s3_reader SERVER rgw OPTIONS (access_key_id 'AKID', secret_access_key '')},
	  'must not be empty' ],
	[ q{CREATE SERVER leaky FOREIGN DATA WRAPPER lance_fdw OPTIONS (root 's3://lp-bucket/x', endpoint 'https://AKID:TAP-SECRET-5@s3.example.com')},
	  'option "endpoint" must not contain credentials' ],
	[ q{CREATE SERVER leaky FOREIGN DATA WRAPPER lance_fdw OPTIONS (root 's3://AKID:TAP-SECRET-6@lp-bucket/x')},
	  'option "root" must not contain credentials' ],
	[ q{SELECT lance_parts.s3_settings_for('s3://AKID:TAP-SECRET-7@lp-bucket/x')},
	  'an s3:// URI must not contain credentials' ],
);
for my $case (@failing)
{
	my ($statement, $error) = @$case;
	my ($rc, $stdout, $stderr) = $node->psql('postgres', "SET log_statement = none; $statement",
		on_error_stop => 1);
	isnt($rc, 0, "refused: $error");
	like($stderr, qr/\Q$error\E/, "the client is told: $error");
}

# a mapping that is accepted, read by its user, refused to another role
$node->safe_psql('postgres', q{
SET log_statement = none;
CREATE USER MAPPING FOR regress_s3_reader SERVER rgw
    OPTIONS (access_key_id 'AKID', secret_access_key 'TAP-SECRET-8', session_token 'TAP-SECRET-9');
});
is($node->safe_psql('postgres', q{
SET ROLE regress_s3_reader;
SELECT server || ' ' || user_mapping || ' ' || has_credentials || ' ' || has_session_token
FROM lance_parts.s3_settings_for('s3://lp-bucket/data/t.lance');
}), 'rgw regress_s3_reader true true', 'the mapping is found');
my ($rc, $stdout, $stderr) = $node->psql('postgres', q{
SET ROLE regress_s3_stranger;
SELECT * FROM lance_parts.s3_settings_for('s3://lp-bucket/data/t.lance');
});
like($stderr, qr/no user mapping for role "regress_s3_stranger" or PUBLIC on foreign server "rgw"/,
	'another role has no mapping');

# writes on S3, every statement logged; the mapping is made without logging
$node->safe_psql('postgres', qq{
SET log_statement = none;
CREATE SERVER lab FOREIGN DATA WRAPPER lance_fdw
    OPTIONS (root '$bucket/tap', endpoint '$s3{LP_S3_ENDPOINT}', allow_http 'true', region '$s3{LP_S3_REGION}');
CREATE USER MAPPING FOR CURRENT_USER SERVER lab
    OPTIONS (access_key_id '$s3{LP_S3_ACCESS_KEY_ID}', secret_access_key '$secret');
CREATE ROLE regress_s3_wrong;
GRANT USAGE ON SCHEMA lance_parts TO regress_s3_wrong;
GRANT USAGE ON FOREIGN SERVER lab TO regress_s3_wrong;
CREATE USER MAPPING FOR regress_s3_wrong SERVER lab
    OPTIONS (access_key_id '$s3{LP_S3_ACCESS_KEY_ID}', secret_access_key 'TAP-SECRET-10');
});
upload_dataset("$testdata/types_2_1_v2.lance", 'tap/s3.lance');
my $dataset = "$bucket/tap/s3.lance";
my ($local_part) = glob("$testdata/types_2_1_v2.lance/data/*.lance");
my $s3_part = "$dataset/data/" . (split m{/}, $local_part)[-1];
my $writes = $node->safe_psql('postgres', qq{
SET client_min_messages = warning;
CREATE TEMP TABLE t AS SELECT lance_parts.create_target('$dataset') AS target;
SELECT lance_parts.staging_dir(target) IS NOT NULL FROM t;
SELECT status FROM t, lance_parts.assemble(t.target, ARRAY['$s3_part', '$local_part']);
SELECT dataset_version FROM t, lance_parts.commit(t.target);
SELECT lance_parts.register_part(target, '$s3_part', NULL) FROM (SELECT lance_parts.create_target('$dataset') AS target) r;
CREATE TEMP TABLE u AS SELECT lance_parts.create_target('$dataset') AS target;
SELECT lance_parts.register_part(target, '$s3_part', NULL) FROM u;
SELECT status FROM u, lance_parts.assemble(u.target);
SELECT lance_parts.cleanup_target(target) FROM u;
SELECT status FROM lance_parts.concat_files('$bucket/tap/concat.lance', ARRAY['$s3_part', '$s3_part']);
SELECT dataset_version FROM lance_parts.ingest('$dataset', ARRAY['$s3_part']);
SELECT count(*) FROM lance_parts.compact('$dataset');
SELECT count(*) >= 0 FROM lance_parts.cleanup_orphans('$dataset', '0 s', true);
SELECT count(*) >= 0 FROM lance_parts.cleanup_orphans('$dataset', '0 s', false);
});
is($writes, join("\n", 't', 'written', '4', '1', '1', 'written', 't', 'written', '5', '5', 't', 't'),
	'the writes on S3 succeed');
my @failing_writes = (
	[ "SELECT * FROM lance_parts.ingest('$dataset', ARRAY['$dataset/data/missing.lance'])", '58P01' ],
	[ "SELECT * FROM lance_parts.concat_files('$bucket/tap/concat.lance', ARRAY['$s3_part'])", '58P02' ],
	[ "SET ROLE regress_s3_wrong; SELECT * FROM lance_parts.ingest('$dataset', ARRAY['$s3_part'])", '28000' ],
	[ "SET ROLE regress_s3_wrong; SELECT * FROM lance_parts.cleanup_orphans('$dataset', '0 s', false)", '28000' ],
);
for my $case (@failing_writes)
{
	my ($statement, $state) = @$case;
	my ($rc, $stdout, $stderr) = $node->psql('postgres', "\\set VERBOSITY verbose\n$statement;");
	like($stderr, qr/ERROR:  $state: /, "a failing write on S3: $state");
	unlike($stderr, qr/\Q$secret\E|TAP-SECRET/, "its error holds no secret ($state)");
}

$node->stop;
my $log = slurp_file($node->logfile);
like($log, qr/statement: SELECT dataset_version FROM lance_parts\.ingest/, 'the log holds the writes');
like($log, qr/ERROR:  28000: /, 'and the rejected signature');
for my $case (@failing)
{
	like($log, qr/\Q$case->[1]\E/, "the log holds the error: $case->[1]");
}
like($log, qr/no user mapping for role "regress_s3_stranger"/, 'the log holds the lookup error');
my @leaks = grep { /TAP[- ]SECRET|\Q$secret\E/ } split /\n/, $log;
is(scalar(@leaks), 0, 'no secret in the server log') or diag(join("\n", @leaks));

done_testing();
