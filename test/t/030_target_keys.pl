# Targets across clusters: clusters A and B share the target key file (A's,
# moved into B's data directory while B runs), C has its own, and all three
# write one dataset on S3 (Ceph RGW, scripts/s3-server.sh, stopped by PID at
# the end).  A target made on A is used on B from write_part to commit, and
# the rows are read back on A; C refuses it with 22023 at every entry point
# tried.  Rotation on A (the file moved to B again): old and new targets
# verify on both, in sessions opened before the change too, and a target
# made to name the other key is refused; after the old key is retired,
# targets it signed are refused (22023) and new ones accepted.  Only
# superusers rotate and retire (42501 otherwise, even with EXECUTE granted).
# A leftover temporary key file is ignored, the key file stays mode 0600, and
# a damaged key file is an error (XX001) that leaves it as it is.
use strict;
use warnings;

use Digest::SHA qw(hmac_sha256_hex);
use File::Copy;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use LanceParts qw(slurp start_s3_server);

my %s3 = start_s3_server();
my $dataset = "s3://$s3{LP_S3_BUCKET}/keys/shared.lance";

sub new_cluster
{
	my ($name) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init;
	$node->start;
	$node->safe_psql('postgres', qq{
SET log_statement = none;
CREATE EXTENSION lance_parts;
CREATE SERVER rgw FOREIGN DATA WRAPPER lance_fdw
    OPTIONS (root 's3://$s3{LP_S3_BUCKET}', endpoint '$s3{LP_S3_ENDPOINT}', allow_http 'true',
             region '$s3{LP_S3_REGION}');
CREATE USER MAPPING FOR CURRENT_USER SERVER rgw
    OPTIONS (access_key_id '$s3{LP_S3_ACCESS_KEY_ID}', secret_access_key '$s3{LP_S3_SECRET_ACCESS_KEY}');
});
	return $node;
}

sub key_file { return $_[0]->data_dir . '/lance_parts.key'; }

# As README advises: copy beside the destination, then rename over it, so
# the running cluster reads either its old keys or the new ones.
sub share_keys
{
	my ($from, $to) = @_;
	my $copy = key_file($to) . '.copy';
	copy(key_file($from), $copy) or die "could not copy the key file: $!";
	chmod 0600, $copy;
	rename $copy, key_file($to) or die "could not rename the key file: $!";
}

# The outcome of a statement: its SQLSTATE and message, or its output.
sub outcome
{
	my ($node, $sql) = @_;
	my ($rc, $stdout, $stderr) = $node->psql('postgres', "\\set VERBOSITY verbose\n$sql");
	return $stdout if $rc == 0;
	return $stderr =~ /ERROR:  (\w{5}): ([^\n]*)/ ? "$1: $2" : $stderr;
}

sub keys_of
{
	my ($node) = @_;
	return $node->safe_psql('postgres',
		q{SELECT string_agg(key_id || CASE WHEN signs THEN '*' ELSE '' END, ' ' ORDER BY NOT signs, key_id)
		  FROM lance_parts.target_keys()});
}

# staging_dir checks the signature and the target's dataset: 'ok' or the error
sub verifies
{
	my ($node, $target) = @_;
	my $result = outcome($node, "SELECT lance_parts.staging_dir('$target') IS NOT NULL");
	return $result eq 't' ? 'ok' : $result;
}

my $a = new_cluster('keys_a');
my $b = new_cluster('keys_b');
my $c = new_cluster('keys_c');

$a->safe_psql('postgres', qq{
SELECT dataset_version FROM lance_parts.write_dataset('$dataset',
    \$\$SELECT i::bigint AS id, 'a' || i AS name FROM generate_series(1, 100) i\$\$)});
my $target = $a->safe_psql('postgres', "SELECT lance_parts.create_target('$dataset')");
my ($key1) = $a->safe_psql('postgres', "SELECT '$target'::jsonb->>'key_id'");
is(keys_of($a), "$key1*", "A has one key, $key1, which signed the target");
is((stat key_file($a))[2] & 07777, 0600, 'the key file is mode 0600');

# B made a key of its own before it was given A's file: a session opened
# then sees the new file at its next use.
my $b_session = $b->background_psql('postgres', on_error_stop => 0);
my $b_own = $b_session->query_safe('SELECT key_id FROM lance_parts.target_keys()');
isnt($b_own, $key1, 'B had a key of its own');
share_keys($a, $b);
is($b_session->query_safe('SELECT string_agg(key_id, \' \') FROM lance_parts.target_keys()'),
	$key1, "a session of B opened before the file was moved in sees A's key");

# ---- A's target, written, assembled and committed on B -----------------------
is($b->safe_psql('postgres', qq{
SET client_min_messages = warning;
CREATE TEMP TABLE part AS SELECT * FROM lance_parts.write_part('$target',
    \$\$SELECT i::bigint AS id, 'b' || i AS name FROM generate_series(101, 130) i\$\$);
SELECT lance_parts.register_part('$target', uri, expected_rows => 30) FROM part;
SELECT status || ' ' || num_rows FROM lance_parts.assemble('$target');
SELECT dataset_version FROM lance_parts.commit('$target');
}), "1\nwritten 30\n2", "B accepts A's target: write_part, register_part, assemble, commit");
is($a->safe_psql('postgres', qq{
CREATE FOREIGN TABLE shared (id bigint, name text) SERVER rgw OPTIONS (uri '$dataset');
SELECT count(*) || ' ' || sum(id) || ' ' || count(*) FILTER (WHERE name = 'b' || id) FROM shared;
}), '130 8515 30', 'the rows written on B are read on A');

# ---- C has its own key ------------------------------------------------------------
my $target2 = $a->safe_psql('postgres', "SELECT lance_parts.create_target('$dataset')");
my $foreign = qr/^22023: lance_parts target for file "\w+\.lance" was signed with a key this cluster does not have$/;
like(verifies($c, $target2), $foreign, "C refuses A's target (staging_dir)");
like(outcome($c, "SELECT * FROM lance_parts.write_part('$target2', 'SELECT 1::bigint AS id, ''c'' AS name')"),
	$foreign, 'and write_part');
like(outcome($c, "SELECT * FROM lance_parts.assemble('$target2', ARRAY['$dataset/data/x.lance'])"),
	$foreign, 'and assemble');
like(outcome($c, "SELECT * FROM lance_parts.commit('$target2')"), $foreign, 'and commit');
like(outcome($c, "SELECT lance_parts.cleanup_target('$target2')"), $foreign, 'and cleanup_target');
my $target_c = $c->safe_psql('postgres', "SELECT lance_parts.create_target('$dataset')");
like(verifies($a, $target_c), $foreign, "A refuses C's target");

# ---- rotation ---------------------------------------------------------------------
my $a_session = $a->background_psql('postgres', on_error_stop => 0);
$a_session->query_safe("SELECT lance_parts.staging_dir('$target2')");
my $key2 = $a->safe_psql('postgres', 'SELECT lance_parts.rotate_target_key()');
like($key2, qr/^[0-9a-f]{16}$/, 'rotate_target_key returns the new key id');
is(keys_of($a), join(' ', "$key2*", $key1), 'A: the new key signs, the old one still verifies');
is(-s key_file($a), 64, 'the key file holds both keys');
is((stat key_file($a))[2] & 07777, 0600, 'and is still mode 0600');
is($a_session->query_safe("SELECT lance_parts.create_target('$dataset')->>'key_id'"), $key2,
	'a session opened before the rotation signs with the new key');
is(verifies($b, $target2), 'ok', 'B, not given the new file yet, still accepts targets of the old key');
my $target3 = $a->safe_psql('postgres', "SELECT lance_parts.create_target('$dataset')");
like(verifies($b, $target3), $foreign, 'but not those of the new key');
share_keys($a, $b);
is(keys_of($b), keys_of($a), 'B given the new file has the same keys');

# The key id is signed: a target of the new key made to name the old one,
# signed again with the new key, is refused (the control, signed again with
# its own key id, is accepted, so the signature is computed as lp_target.c
# does).
sub resigned
{
	my ($node, $target, $key_id) = @_;
	my $unsigned = $node->safe_psql('postgres',
		"SELECT (jsonb_set(\$j\$$target\$j\$::jsonb, '{key_id}', to_jsonb('$key_id'::text)) - 'signature')::text");
	my $signature = hmac_sha256_hex($unsigned, substr(slurp(key_file($node)), 0, 32));
	return $node->safe_psql('postgres',
		"SELECT (\$j\$$unsigned\$j\$::jsonb || jsonb_build_object('signature', '$signature'))::text");
}
is(verifies($a, resigned($a, $target3, $key2)), 'ok', 'a target signed again with its own key id is accepted');
like(verifies($a, resigned($a, $target3, $key1)),
	qr/^22023: lance_parts target for file "\w+\.lance" has been modified or was made by another cluster$/,
	'one naming the other key of the cluster, signed with the signing key, is refused');
for my $case ([ $a, $target2, 'A accepts its target of the old key' ],
	[ $b, $target2, 'B accepts it' ],
	[ $a, $target3, 'A accepts its target of the new key' ],
	[ $b, $target3, 'B accepts it' ])
{
	is(verifies($case->[0], $case->[1]), 'ok', $case->[2]);
}
is($b_session->query_safe("SELECT lance_parts.staging_dir('$target3') IS NOT NULL"), 't',
	'so does the session of B opened before');
my $target_b = $b->safe_psql('postgres', "SELECT lance_parts.create_target('$dataset')");
is($b->safe_psql('postgres', "SELECT '$target_b'::jsonb->>'key_id'"), $key2, 'B signs with the new key');
is(verifies($a, $target_b), 'ok', "A accepts B's target");

# ---- retirement -------------------------------------------------------------------
like(outcome($a, "SELECT lance_parts.retire_target_keys(ARRAY['$key2'])"),
	qr/^22023: target key "$key2" is the signing key and cannot be retired$/, 'the signing key cannot be retired');
like(outcome($a, "SELECT lance_parts.retire_target_keys(ARRAY['0123456789abcdef'])"),
	qr/^22023: target key "0123456789abcdef" does not exist$/, 'nor a key the cluster does not have');
like(outcome($a, "SELECT lance_parts.retire_target_keys(ARRAY[]::text[])"),
	qr/^22023: list of key ids must not be empty$/, 'an empty list is refused');
is(keys_of($a), join(' ', "$key2*", $key1), 'refusals change nothing');
is($a->safe_psql('postgres', 'SELECT lance_parts.retire_target_keys()'), "{$key1}",
	'retire_target_keys() retires every key but the signing key');
is($a->safe_psql('postgres', 'SELECT lance_parts.retire_target_keys()'), '{}', 'then there is nothing to retire');
is(keys_of($a), "$key2*", 'A has the new key only');
share_keys($a, $b);
my $retired = qr/^22023: lance_parts target for file "\w+\.lance" was signed with a key this cluster does not have$/;
like(verifies($a, $target2), $retired, 'A refuses the target of the retired key');
like(verifies($b, $target2), $retired, 'B refuses it');
$b_session->query("SELECT lance_parts.staging_dir('$target2')");
like($b_session->{stderr}, qr/was signed with a key this cluster does not have/,
	'so does the session of B opened before');
is(verifies($a, $target3), 'ok', 'A accepts the target of the new key');
is(verifies($b, $target3), 'ok', 'B accepts it');
is(verifies($a, $target_b), 'ok', "A accepts B's target of the new key");
$a_session->quit;
$b_session->quit;

# ---- superusers only -------------------------------------------------------------
$a->safe_psql('postgres', q{
CREATE ROLE regress_keys_user;
GRANT USAGE ON SCHEMA lance_parts TO regress_keys_user;
});
for my $call ('SELECT lance_parts.rotate_target_key()', 'SELECT lance_parts.retire_target_keys()',
	'SELECT * FROM lance_parts.target_keys()')
{
	like(outcome($a, "SET ROLE regress_keys_user; $call"), qr/^42501: permission denied for function/,
		"$call: not granted to PUBLIC");
}
$a->safe_psql('postgres', q{
GRANT EXECUTE ON FUNCTION lance_parts.rotate_target_key(), lance_parts.retire_target_keys(text[]),
    lance_parts.target_keys() TO regress_keys_user;
});
like(outcome($a, 'SET ROLE regress_keys_user; SELECT lance_parts.rotate_target_key()'),
	qr/^42501: must be superuser to rotate the target signing key$/, 'rotate_target_key granted: still superusers only');
like(outcome($a, 'SET ROLE regress_keys_user; SELECT lance_parts.retire_target_keys()'),
	qr/^42501: must be superuser to retire target keys$/, 'retire_target_keys granted: still superusers only');
is($a->safe_psql('postgres', 'SET ROLE regress_keys_user; SELECT count(*) FROM lance_parts.target_keys()'), '1',
	'target_keys, which shows only ids, may be granted');
is(keys_of($a), "$key2*", 'the keys are unchanged');

# ---- the key file on disk ----------------------------------------------------------
# A temporary file left by a rotation that crashed before its rename
my $leftover = key_file($a) . '.99999.tmp';
open my $fh, '>:raw', $leftover or die "could not write $leftover: $!";
print $fh "\x01" x 10;
close $fh;
is(keys_of($a), "$key2*", 'a partly written temporary key file is ignored');
is(verifies($a, $target3), 'ok', 'targets still verify beside it');
my $key3 = $a->safe_psql('postgres', 'SELECT lance_parts.rotate_target_key()');
is(keys_of($a), join(' ', "$key3*", $key2), 'and a rotation still works');
ok(-e $leftover, 'the leftover is not taken for a key file');
is($a->safe_psql('postgres', "SELECT lance_parts.retire_target_keys(ARRAY['$key2'])"), "{$key2}",
	'a key retired by its id');
is(keys_of($a), "$key3*", 'leaves the others');
unlink $leftover;

# A damaged key file (not a whole number of keys) is refused and kept as it is
my $c_keys = slurp(key_file($c));
open $fh, '>:raw', key_file($c) or die 'could not write the key file of C';
print $fh substr($c_keys, 0, 20);
close $fh;
like(verifies($c, $target_c), qr/^XX001: target key file ".*lance_parts\.key" is damaged$/,
	'a damaged key file is XX001');
like(outcome($c, 'SELECT lance_parts.rotate_target_key()'), qr/^XX001: /, 'rotation refuses it too');
is(-s key_file($c), 20, 'and leaves it as it was');
open $fh, '>:raw', key_file($c) or die 'could not write the key file of C';
print $fh $c_keys;
close $fh;
is(verifies($c, $target_c), 'ok', "restored, C accepts its target again");

# At most 16 keys: a rotation beyond them is refused and changes nothing
$c->safe_psql('postgres', 'SELECT lance_parts.rotate_target_key() FROM generate_series(1, 15)');
is(-s key_file($c), 16 * 32, 'C rotated up to 16 keys');
like(outcome($c, 'SELECT lance_parts.rotate_target_key()'), qr/^54000: too many target keys$/,
	'a 17th key is refused (54000)');
is(-s key_file($c), 16 * 32, 'and the key file is unchanged');

$a->stop;
$b->stop;
$c->stop;
done_testing();
