# Releases upgrade: an installation of each earlier release (0.1.0, 0.2.0)
# brought to the current version by ALTER EXTENSION ... UPDATE has exactly
# the objects of a fresh install of the current version: the same members
# with the same definitions, comments, privileges and options, and the same
# schema dump (pg_dump --binary-upgrade writes every member out, with its
# initial privileges, the extension's row and whatever else pg_upgrade
# would carry over).
use strict;
use warnings;

use IPC::Run ();
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('upgrade');
$node->init;
$node->start;

my $current = $node->safe_psql('postgres',
	"SELECT default_version FROM pg_available_extensions WHERE name = 'lance_parts'");
my @releases = ('0.1.0', '0.2.0');
ok(!grep({ $_ eq $current } @releases), "the current release ($current) is not an earlier one");

# The role that may set endpoints belongs to the cluster, not to the
# extension: 0.1.0 has none, the update from it creates it, later installs
# find it.  So 0.1.0 is installed and updated first, in a cluster that has
# never had a later release.
my $role = "SELECT CASE WHEN rolcanlogin THEN 'LOGIN' ELSE 'NOLOGIN' END || ' ' || coalesce(shobj_description(oid, 'pg_authid'), '(no comment)')
	FROM pg_roles WHERE rolname = 'lance_parts_endpoint_admin'";
for my $release (@releases)
{
	my $db = "updated_$release" =~ s/\./_/gr;
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db, "CREATE EXTENSION lance_parts VERSION '$release'");
	is($node->safe_psql($db, "SELECT extversion FROM pg_extension WHERE extname = 'lance_parts'"),
		$release, "$release installs");
	is($node->safe_psql($db, $role), '', '0.1.0 has no role lance_parts_endpoint_admin')
	  if $release eq '0.1.0';
	$node->safe_psql($db, 'ALTER EXTENSION lance_parts UPDATE');
	is($node->safe_psql($db, "SELECT extversion FROM pg_extension WHERE extname = 'lance_parts'"),
		$current, "ALTER EXTENSION UPDATE from $release reaches $current");
	like($node->safe_psql($db, $role), qr/^NOLOGIN Members may set the endpoint option/,
		'the update creates the role lance_parts_endpoint_admin (NOLOGIN, with its comment)')
	  if $release eq '0.1.0';
}
$node->safe_psql('postgres', 'CREATE DATABASE fresh');
$node->safe_psql('fresh', 'CREATE EXTENSION lance_parts');

# One line per member of the extension, with everything that defines it.
# Object identities (pg_identify_object) rather than OIDs, so that the two
# databases compare.
my $describe = <<'SQL';
WITH member AS (
	SELECT d.classid, d.objid, d.objsubid
	FROM pg_depend d JOIN pg_extension e ON d.refobjid = e.oid
	WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
	  AND e.extname = 'lance_parts'
)
SELECT i.type || ' ' || i.identity, E'\n  ' ||
	coalesce(CASE m.classid
		WHEN 'pg_proc'::regclass THEN
			(SELECT pg_get_functiondef(p.oid) || ' acl=' || coalesce(p.proacl::text, 'default')
			 FROM pg_proc p WHERE p.oid = m.objid)
		WHEN 'pg_class'::regclass THEN
			(SELECT c.relkind::text || ' acl=' || coalesce(c.relacl::text, 'default') ||
				coalesce(' view=' || pg_get_viewdef(c.oid), '') ||
				' columns=' || (SELECT string_agg(a.attname || ':' || format_type(a.atttypid, a.atttypmod),
												  ',' ORDER BY a.attnum)
								FROM pg_attribute a
								WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped)
			 FROM pg_class c WHERE c.oid = m.objid)
		WHEN 'pg_type'::regclass THEN
			(SELECT t.typtype::text || ' acl=' || coalesce(t.typacl::text, 'default')
			 FROM pg_type t WHERE t.oid = m.objid)
		WHEN 'pg_foreign_data_wrapper'::regclass THEN
			(SELECT 'handler=' || w.fdwhandler::regproc || ' validator=' || w.fdwvalidator::regproc ||
				' options=' || coalesce(w.fdwoptions::text, '') || ' acl=' || coalesce(w.fdwacl::text, 'default')
			 FROM pg_foreign_data_wrapper w WHERE w.oid = m.objid)
		WHEN 'pg_namespace'::regclass THEN
			(SELECT 'acl=' || coalesce(n.nspacl::text, 'default')
			 FROM pg_namespace n WHERE n.oid = m.objid)
	END, '') ||
	coalesce(E'\n  comment=' || obj_description(m.objid, m.classid::regclass::name), '')
FROM member m, pg_identify_object(m.classid, m.objid, m.objsubid) i
SQL

# member identity => its definition; is_deeply names the first member that
# differs.  Members are joined with control characters no definition holds.
sub members
{
	my ($dbname) = @_;
	my $all = $node->safe_psql($dbname,
		"SELECT string_agg(identity || chr(31) || definition, chr(30)) FROM ($describe) AS m(identity, definition)");
	return { map { split /\x1f/, $_, 2 } split /\x1e/, $all };
}

my $fresh = members('fresh');
cmp_ok(scalar(grep { /^function / } keys %$fresh), '>', 10, 'the description lists the functions');
# The schema's own privileges are not an extension member; compare them too.
my $schema_acl = "SELECT nspacl FROM pg_namespace WHERE nspname = 'lance_parts'";
for my $release (@releases)
{
	my $db = "updated_$release" =~ s/\./_/gr;
	is_deeply(members($db), $fresh, "$release updated to $current has the objects of a fresh $current install");
	is($node->safe_psql($db, $schema_acl), $node->safe_psql('fresh', $schema_acl),
		"$release updated: the schema has the same privileges");
}

# The dump pg_upgrade restores: in binary-upgrade mode pg_dump writes each
# member of the extension (and its initial privileges, pg_init_privs) rather
# than CREATE EXTENSION, so it covers what the description above does not
# name: defaults, constraints, indexes, triggers, casts, operators, the
# extension's row.  Only what differs between any two databases is left
# out: the OIDs and LSNs pg_upgrade preserves, the \restrict key.
my $scratch = PostgreSQL::Test::Utils::tempdir();
sub schema_dump
{
	my ($dbname) = @_;
	my $file = "$scratch/$dbname.sql";
	my $stderr;
	IPC::Run::run([ 'pg_dump', '--schema-only', '--binary-upgrade', '-d', $node->connstr($dbname) ],
		'>', \my $dump, '2>', \$stderr)
	  or die "pg_dump of $dbname failed: $stderr";
	$dump =~ s/^SELECT pg_catalog\.binary_upgrade_set_next_\w+\(.*\);\n//mg;
	$dump =~ s/^(\\(?:un)?restrict) \w+$/$1/mg;
	# the OIDs of the extension's configuration tables, compared by name below
	$dump =~ s/'\{[0-9,]+\}'::pg_catalog\.oid\[\]/CONFIGURATION_OIDS/g;
	open my $fh, '>', $file or die "could not write $file: $!";
	print $fh $dump;
	close $fh;
	return $file;
}

my $configuration = "SELECT extconfig::regclass[]::text || ' ' || coalesce(extcondition::text, '')
	FROM pg_extension WHERE extname = 'lance_parts'";
my $fresh_dump = schema_dump('fresh');
like(PostgreSQL::Test::Utils::slurp_file($fresh_dump),
	qr/^ALTER EXTENSION lance_parts ADD FOREIGN DATA WRAPPER lance_fdw;$/m,
	'the binary-upgrade dump lists the members');
for my $release (@releases)
{
	my $db = "updated_$release" =~ s/\./_/gr;
	my ($diff) = PostgreSQL::Test::Utils::run_command([ 'diff', '-u', $fresh_dump, schema_dump($db) ]);
	is($diff, '', "$release updated to $current: pg_dump --binary-upgrade --schema-only as of a fresh install");
	is($node->safe_psql($db, $configuration), $node->safe_psql('fresh', $configuration),
		"$release updated: the same configuration tables (pg_extension_config_dump)");
}

$node->stop;
done_testing();
