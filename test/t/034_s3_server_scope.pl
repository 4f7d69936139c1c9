# A role's S3 requests are only served by servers it trusts (issue 23,
# defect 5), on a real S3 server (Ceph RGW, scripts/s3-server.sh, stopped by
# PID at the end).  A role with USAGE on lance_fdw (and the endpoint role)
# creates a server whose root lies inside the scope of the superuser's
# server, with a PUBLIC user mapping of keys RGW does not know: the
# superuser's and another role's requests for those URIs are still served
# by the superuser's server (s3_settings_for names it, and reads succeed,
# where the intruder's keys would be refused with 28000), while the
# intruder's own requests go to its server.  SET lance_parts.s3_server names
# a server explicitly, whoever owns it; a foreign table reads through
# exactly its own server even when a trusted server with a longer root
# covers its dataset; two trusted servers with the same root are a conflict
# (42710), an untrusted one is not; a URI only an untrusted server covers is
# refused (42704) naming that server.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use LanceParts qw(reference_data start_s3_server upload_dataset);

my ($testdata) = reference_data();
my %s3 = start_s3_server();
my $bucket = "s3://$s3{LP_S3_BUCKET}";


upload_dataset(\%s3, "$testdata/types_2_1_v2.lance", 'scope/ds.lance');
my $dataset = "$bucket/scope/ds.lance";
my $server_options = "endpoint '$s3{LP_S3_ENDPOINT}', allow_http 'true', region '$s3{LP_S3_REGION}'";

my $node = PostgreSQL::Test::Cluster->new('s3_server_scope');
$node->init;
$node->start;
$node->safe_psql('postgres', qq{
SET log_statement = none;
CREATE EXTENSION lance_parts;
CREATE SERVER rgw FOREIGN DATA WRAPPER lance_fdw OPTIONS (root '$bucket', $server_options);
CREATE USER MAPPING FOR PUBLIC SERVER rgw
    OPTIONS (access_key_id '$s3{LP_S3_ACCESS_KEY_ID}', secret_access_key '$s3{LP_S3_SECRET_ACCESS_KEY}');
CREATE ROLE regress_intruder IN ROLE lance_parts_endpoint_admin;
CREATE ROLE regress_other;
GRANT USAGE ON FOREIGN DATA WRAPPER lance_fdw TO regress_intruder;
GRANT USAGE ON SCHEMA lance_parts TO regress_intruder, regress_other;
GRANT USAGE ON FOREIGN SERVER rgw TO regress_intruder, regress_other;
SET ROLE regress_intruder;
CREATE SERVER sneaky FOREIGN DATA WRAPPER lance_fdw OPTIONS (root '$bucket/scope', $server_options);
CREATE USER MAPPING FOR PUBLIC SERVER sneaky
    OPTIONS (access_key_id 'INTRUDERKEY', secret_access_key 'intruder-secret');
GRANT USAGE ON FOREIGN SERVER sneaky TO PUBLIC;
});

# Which server serves the dataset for role, and what reading its manifest gives.
sub served
{
	my ($role, $setting) = @_;
	my $set = $setting ? "SET lance_parts.s3_server = '$setting';" : '';
	return $node->safe_psql('postgres', qq{SET ROLE $role; $set
SELECT server FROM lance_parts.s3_settings_for('$dataset')});
}

sub reads
{
	my ($role, $setting) = @_;
	my $set = $setting ? "SET lance_parts.s3_server = '$setting';" : '';
	my ($rc, $stdout, $stderr) = $node->psql('postgres', qq{\\set VERBOSITY verbose
SET ROLE $role; $set
SELECT (lance_parts.create_target('$dataset')->>'dataset_version') IS NOT NULL;});
	return $rc == 0 ? $stdout : ($stderr =~ /ERROR:  (\w{5}):/)[0];
}

is(served('postgres'), 'rgw', "the intruder's longer root does not serve the superuser");
is(reads('postgres'), 't', "the superuser's reads are signed with its server's keys");
is(served('regress_other'), 'rgw', 'nor another role');
is(reads('regress_other'), 't', "whose reads succeed");
is(served('regress_intruder'), 'sneaky', "the intruder's own requests go to its server");
is(reads('regress_intruder'), '28000', 'where RGW refuses its keys');

# naming a server: a caller's own choice, whoever owns it
is(served('regress_other', 'sneaky'), 'sneaky', 'lance_parts.s3_server names the server to use');
is(reads('regress_other', 'sneaky'), '28000', 'and its keys are then used');
is(served('regress_intruder', 'rgw'), 'rgw', 'for the intruder too');
my ($rc, $stdout, $stderr) = $node->psql('postgres',
	"SET lance_parts.s3_server = 'no_such_server'; SELECT * FROM lance_parts.s3_settings_for('$dataset')");
like($stderr, qr/server "no_such_server" does not exist/, 'a server that does not exist is an error');

# a URI only an untrusted server covers: refused, naming that server, unless named
$node->safe_psql('postgres', q{SET ROLE regress_intruder;
CREATE SERVER elsewhere FOREIGN DATA WRAPPER lance_fdw OPTIONS (root 's3://intruder-bucket');
GRANT USAGE ON FOREIGN SERVER elsewhere TO PUBLIC;
CREATE USER MAPPING FOR PUBLIC SERVER elsewhere;});
($rc, $stdout, $stderr) = $node->psql('postgres',
	"SET ROLE regress_other; SELECT * FROM lance_parts.s3_settings_for('s3://intruder-bucket/x')");
like($stderr, qr/no lance_fdw server of a trusted owner has a root containing "s3:\/\/intruder-bucket\/x".*\n.*Server "elsewhere" contains it, but its owner "regress_intruder"/,
	'a URI only an untrusted server covers is refused, naming that server');
is($node->safe_psql('postgres', q{SET ROLE regress_other; SET lance_parts.s3_server = 'elsewhere';
SELECT server FROM lance_parts.s3_settings_for('s3://intruder-bucket/x')}), 'elsewhere',
	'unless the caller names it');

# an untrusted server with the same root is no conflict; a trusted one is
$node->safe_psql('postgres', qq{SET ROLE regress_intruder;
CREATE SERVER twin FOREIGN DATA WRAPPER lance_fdw OPTIONS (root '$bucket');});
is(served('postgres'), 'rgw', "an intruder's server with the same root is no conflict");
$node->safe_psql('postgres', qq{CREATE SERVER admin_twin FOREIGN DATA WRAPPER lance_fdw OPTIONS (root '$bucket');});
($rc, $stdout, $stderr) = $node->psql('postgres', "SELECT * FROM lance_parts.s3_settings_for('$dataset')");
like($stderr, qr/lance_fdw servers "(rgw|admin_twin)" and "(rgw|admin_twin)" have the same root/,
	'two trusted servers with the same root are a conflict');
is(served('postgres', 'rgw'), 'rgw', 'which naming one of them settles');
$node->safe_psql('postgres', 'DROP SERVER admin_twin');

# a foreign table reads through exactly its server, even when a trusted server has a longer root
$node->safe_psql('postgres', qq{
CREATE SERVER inner_scope FOREIGN DATA WRAPPER lance_fdw OPTIONS (root '$bucket/scope', $server_options);
CREATE USER MAPPING FOR PUBLIC SERVER inner_scope
    OPTIONS (access_key_id 'INNERKEY', secret_access_key 'inner-secret');
CREATE FOREIGN TABLE through_rgw (id bigint) SERVER rgw OPTIONS (uri 'scope/ds.lance');
CREATE FOREIGN TABLE through_inner (id bigint) SERVER inner_scope OPTIONS (uri 'ds.lance');
});
is(served('postgres'), 'inner_scope', 'the longest trusted root serves a URI');
is($node->safe_psql('postgres', 'SELECT count(*) FROM through_rgw'), '515',
	"a foreign table of server rgw reads with rgw's keys");
($rc, $stdout, $stderr) = $node->psql('postgres', "\\set VERBOSITY verbose\nSELECT count(*) FROM through_inner");
like($stderr, qr/ERROR:  28000:/, "and one of server inner_scope with inner_scope's");

$node->stop;
done_testing();
