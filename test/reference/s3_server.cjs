'use strict';
// s3_server.cjs - the S3 server of a node test file: a real one (Ceph RGW through
// scripts/s3-server.sh, on the ports LP_S3_PORT, LP_S3_MON_PORT and LP_S3_OSD_PORTS give)
// started in a directory of the test's scratch space and stopped by PID once its tests (or
// the one test that started it) end; its settings, the reference's storage options for it,
// and the SQL of a lance_fdw server on it.
const test = require('node:test');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const { literal } = require('./pg.cjs');

const SCRIPT = path.join(process.env.LP_SRCDIR, 'scripts', 's3-server.sh');

// Start a server whose state lives in LP_SCRATCH/<name>, stopped after the file's tests, or
// after one test's when scope is its context; { settings, storageOptions, root(prefix),
// fdwServerSql(server, rootUri, endpoint) }.
function startS3Server(name, scope = test)
{
	const dir = path.join(process.env.LP_SCRATCH, name);
	const run = (command) => execFileSync('bash', [SCRIPT, command], {
		env: { ...process.env, LP_S3_DIR: dir },
		encoding: 'utf8',
	});
	const settings = Object.fromEntries(run('start').trim().split('\n').map((line) => line.split('=')));

	scope.after(() => run('stop'));
	return {
		settings,
		storageOptions: {
			aws_endpoint: settings.LP_S3_ENDPOINT,
			aws_access_key_id: settings.LP_S3_ACCESS_KEY_ID,
			aws_secret_access_key: settings.LP_S3_SECRET_ACCESS_KEY,
			aws_region: settings.LP_S3_REGION,
			allow_http: 'true',
			aws_virtual_hosted_style_request: 'false',
		},
		// the s3:// URI of a prefix of the test bucket
		root: (prefix) => 's3://' + settings.LP_S3_BUCKET + '/' + prefix,
		// CREATE SERVER of lance_fdw at rootUri and the current user's mapping with the
		// server's keys (two statements, no newline after the last); endpoint replaces the
		// server's own (a proxy in front of it)
		fdwServerSql: (server, rootUri, endpoint = settings.LP_S3_ENDPOINT) => `CREATE SERVER ${server} FOREIGN DATA WRAPPER lance_fdw
  OPTIONS (root ${literal(rootUri)}, endpoint ${literal(endpoint)},
           region ${literal(settings.LP_S3_REGION)}, allow_http 'true');
CREATE USER MAPPING FOR CURRENT_USER SERVER ${server}
  OPTIONS (access_key_id ${literal(settings.LP_S3_ACCESS_KEY_ID)},
           secret_access_key ${literal(settings.LP_S3_SECRET_ACCESS_KEY)});`,
	};
}

module.exports = { startS3Server };
