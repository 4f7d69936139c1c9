# S3 requests of a backend against an endpoint that never answers (a socket
# that listens but never accepts: connections complete, requests wait): a
# statement_timeout and pg_cancel_backend end the call with 57014 within a
# second, since the libcurl transport polls the cancel hook every 100 ms; the
# backend shows the request as an Extension wait meanwhile; and
# lance_parts.s3_request_timeout with s3_max_retries bound the call, ending
# it with 08006 naming the URL.
use strict;
use warnings;

use IO::Socket::INET;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);

my $silent = IO::Socket::INET->new(
	LocalAddr => '127.0.0.1',
	LocalPort => 0,
	Listen => 64,
	Proto => 'tcp') or die "could not listen: $!";
my $port = $silent->sockport;
my $uri = 's3://lp-bucket/data/part.lance';

my $node = PostgreSQL::Test::Cluster->new('s3_cancel');
$node->init;
$node->start;
$node->safe_psql('postgres', qq{
CREATE EXTENSION lance_parts;
CREATE SERVER silent FOREIGN DATA WRAPPER lance_fdw
    OPTIONS (root 's3://lp-bucket', endpoint 'http://127.0.0.1:$port', allow_http 'true');
CREATE USER MAPPING FOR PUBLIC SERVER silent OPTIONS (access_key_id 'AKID', secret_access_key 'SECRET');
});

# statement_timeout
my $start = time;
my ($rc, $stdout, $stderr) = $node->psql('postgres', qq{
\\set VERBOSITY verbose
SET statement_timeout = '300ms';
SELECT * FROM lance_parts.file_info('$uri');
});
my $elapsed = time - $start;
like($stderr, qr/ERROR:  57014: canceling statement due to statement timeout/,
	'statement_timeout ends a request that gets no answer');
cmp_ok($elapsed, '<', 1.3, sprintf('within a second of the timeout (%.2f s)', $elapsed));

# pg_cancel_backend while the request waits, shown as an Extension wait
my $session = $node->background_psql('postgres', on_error_stop => 0);
my $pid = $session->query_safe('SELECT pg_backend_pid()');
$session->query_until(qr/started/,
	"\\set VERBOSITY verbose\n\\echo started\nSELECT * FROM lance_parts.file_info('$uri');\n");
my $wait = '';
for (my $i = 0; $i < 500 && $wait ne 'Extension'; $i++)
{
	$wait = $node->safe_psql('postgres',
		"SELECT coalesce(wait_event_type, '') FROM pg_stat_activity WHERE pid = $pid");
	usleep(10_000) if $wait ne 'Extension';
}
is($wait, 'Extension', 'the waiting request is an Extension wait in pg_stat_activity');
$start = time;
is($node->safe_psql('postgres', "SELECT pg_cancel_backend($pid)"), 't', 'pg_cancel_backend');
$session->query('SELECT 1');
$elapsed = time - $start;
like($session->{stderr}, qr/ERROR:  57014: canceling statement due to user request/,
	'pg_cancel_backend ends the request with 57014');
cmp_ok($elapsed, '<', 1.0, sprintf('within a second (%.2f s)', $elapsed));
$session->quit;

# the request timeout and the retries bound a call
$start = time;
($rc, $stdout, $stderr) = $node->psql('postgres', qq{
\\set VERBOSITY verbose
SET lance_parts.s3_request_timeout = '200ms';
SET lance_parts.s3_max_retries = 2;
SET lance_parts.s3_retry_base_delay = '10ms';
SELECT * FROM lance_parts.file_info('$uri');
});
$elapsed = time - $start;
like($stderr, qr/ERROR:  08006: .*127\.0\.0\.1:$port/, 'a request timed out after its retries is 08006 naming the URL');
cmp_ok($elapsed, '>=', 0.6, sprintf('three attempts of 200 ms (%.2f s)', $elapsed));
cmp_ok($elapsed, '<', 2.5, 'and not much more');
unlike($stderr, qr/SECRET/, 'the error holds no secret');

$node->stop;
done_testing();
