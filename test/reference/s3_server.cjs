'use strict';
// s3_server.cjs - the S3 server of a node test file: a real one (Ceph RGW through
// scripts/s3-server.sh, on the ports LP_S3_PORT, LP_S3_MON_PORT and LP_S3_OSD_PORTS give)
// started in a directory of the test's scratch space when the file loads and stopped by
// PID once its tests end; its settings, and the reference's storage options for it.
const test = require('node:test');
const path = require('node:path');
const { execFileSync } = require('node:child_process');

const SCRIPT = path.join(process.env.LP_SRCDIR, 'scripts', 's3-server.sh');

// Start a server whose state lives in LP_SCRATCH/<name>; { settings, storageOptions, root(prefix) }.
function startS3Server(name)
{
	const dir = path.join(process.env.LP_SCRATCH, name);
	const run = (command) => execFileSync('bash', [SCRIPT, command], {
		env: { ...process.env, LP_S3_DIR: dir },
		encoding: 'utf8',
	});
	const settings = Object.fromEntries(run('start').trim().split('\n').map((line) => line.split('=')));

	test.after(() => run('stop'));
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
	};
}

module.exports = { startS3Server };
