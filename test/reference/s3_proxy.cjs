'use strict';
// s3_proxy.cjs - test/tools/s3_fault_proxy.py in front of a test file's S3 server: started
// with its rules and log in a scratch directory, stopped by its PID (stop());
// the one reader of its log ("METHOD PATH-AND-QUERY ACTION DELAYED" per request), which the
// S3 tests use to count requests, retries and concurrent GETs.
const fs = require('node:fs');
const path = require('node:path');
const { spawn } = require('node:child_process');

// Start the proxy for the server at endpoint (the S3 settings' LP_S3_ENDPOINT) with rules (an
// array, [] passes every request); { port, endpoint, stop, setRules, mark, log, actionsOn }.
async function startFaultProxy(endpoint, scratch, rules = [])
{
	const rulesFile = path.join(scratch, 'proxy-rules.json');
	const logFile = path.join(scratch, 'proxy.log');
	const portFile = path.join(scratch, 'proxy.port');
	// replace the rules atomically: the proxy rereads the file when it changes
	const setRules = (next) => {
		fs.writeFileSync(rulesFile + '.tmp', JSON.stringify(next));
		fs.renameSync(rulesFile + '.tmp', rulesFile);
	};
	// every request logged since mark (a count of requests), as { method, target, action, delayed }
	const log = (mark = 0) => (fs.existsSync(logFile) ? fs.readFileSync(logFile, 'utf8').split('\n') : [])
		.filter((line) => line).slice(mark).map((line) => {
			const [method, target, action, delayed] = line.split(' ');

			return { method, target, action, delayed: Number(delayed) };
		});

	fs.mkdirSync(scratch, { recursive: true });
	setRules(rules);
	const child = spawn('python3', [path.join(process.env.LP_SRCDIR, 'test', 'tools', 's3_fault_proxy.py'),
		'--upstream', new URL(endpoint).host, '--rules', rulesFile, '--log', logFile,
		'--port-file', portFile], { stdio: ['ignore', 'inherit', 'inherit'] });

	for (let i = 0; i < 500 && !fs.existsSync(portFile); i++)
		await new Promise((resolve) => setTimeout(resolve, 10));
	const port = Number(fs.readFileSync(portFile, 'utf8'));

	return {
		port,
		endpoint: 'http://127.0.0.1:' + port,
		stop: () => process.kill(child.pid, 'SIGTERM'),
		setRules,
		// the number of requests logged so far, for log(mark) and actionsOn(mark, ...)
		mark: () => log().length,
		log,
		// the actions taken on requests of method whose target matches pattern since mark
		actionsOn: (mark, method, pattern) => log(mark)
			.filter((entry) => entry.method === method && pattern.test(entry.target)).map((entry) => entry.action),
	};
}

module.exports = { startFaultProxy };
