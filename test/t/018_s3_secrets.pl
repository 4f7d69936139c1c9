# S3 credentials never reach the server log: with log_min_messages = debug1,
# log_statement = all and the default log_min_error_statement (error).  The
# statements that carry secrets run, as the README advises, after SET
# log_statement = none; those that fail the lance_fdw validator over a user
# mapping's secrets, or over credentials written into an endpoint, a root or
# a URI, then log their error without the statement.  A mapping that is
# accepted, and lookups through it (s3_settings_for, 42501 without a
# mapping, logged statements and all), log no secret either.  The log must
# hold the errors themselves, so a log that captured nothing cannot pass.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

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

$node->stop;
my $log = slurp_file($node->logfile);
for my $case (@failing)
{
	like($log, qr/\Q$case->[1]\E/, "the log holds the error: $case->[1]");
}
like($log, qr/no user mapping for role "regress_s3_stranger"/, 'the log holds the lookup error');
my @leaks = grep { /TAP[- ]SECRET/ } split /\n/, $log;
is(scalar(@leaks), 0, 'no secret in the server log') or diag(join("\n", @leaks));

done_testing();
