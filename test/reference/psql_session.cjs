'use strict';
// psql_session.cjs - one long-lived psql session (the cluster of test/run.sh, through PGHOST and
// the rest of the environment) for tests whose transactions span many statements and whose
// statements may fail: psql goes on after an error (ON_ERROR_STOP=0), and each statement run
// through step() reports its output lines and its error (SQLSTATE and message) or null.
const { spawn } = require('node:child_process');

const END = '@@lp-session: end of script@@';
const STEP = '@@lp-session: end of step@@';
const ERROR = '@@lp-session: error@@';

// What follows a statement in a script: its error, if any, then the end of its step.  psql sets
// ERROR after every query it sends (meta-commands leave it alone).
const stepEnd = `\\if :ERROR
\\echo '${ERROR}' :LAST_ERROR_SQLSTATE :'LAST_ERROR_MESSAGE'
\\endif
\\echo '${STEP}'
`;

class PsqlSession
{
	constructor()
	{
		this.child = spawn('psql', ['-X', '-q', '-A', '-t', '-v', 'ON_ERROR_STOP=0', '-f', '-'],
			{ stdio: ['pipe', 'pipe', 'pipe'] });
		this.output = '';
		this.stderr = '';
		this.waiting = null;
		this.child.stdout.setEncoding('utf8');
		this.child.stdout.on('data', (d) => {
			this.output += d;
			this.deliver();
		});
		this.child.stderr.on('data', (d) => {
			// keep the tail only: refused statements are expected
			this.stderr = (this.stderr + d).slice(-20000);
		});
		this.closed = new Promise((resolve) => this.child.on('close', resolve));
		this.child.on('close', (code) => {
			if (this.waiting !== null)
				this.waiting.reject(new Error(`psql exited with ${code}: ${this.stderr}`));
			this.waiting = null;
		});
	}

	deliver()
	{
		const at = this.output.indexOf(END + '\n');

		if (at < 0 || this.waiting === null)
			return;
		const text = this.output.slice(0, at);

		this.output = this.output.slice(at + END.length + 1);
		const { resolve } = this.waiting;

		this.waiting = null;
		resolve(text.split('\n').filter((l) => l.length > 0));
	}

	// Run statements (each one SQL statement, or several of which the last one's error counts);
	// resolve with one { rows, error } per statement: its output lines and null or
	// { sqlstate, message }.
	steps(statements)
	{
		const script = statements.map((s) => s.replace(/;?\s*$/, ';\n') + stepEnd).join('') + `\\echo '${END}'\n`;

		return new Promise((resolve, reject) => {
			this.waiting = {
				resolve: (lines) => {
					const results = [{ rows: [], error: null }];

					for (const line of lines)
					{
						const current = results[results.length - 1];

						if (line === STEP)
							results.push({ rows: [], error: null });
						else if (line.startsWith(ERROR + ' '))
						{
							const rest = line.slice(ERROR.length + 1);
							const space = rest.indexOf(' ');

							current.error = { sqlstate: rest.slice(0, space), message: rest.slice(space + 1).replace(/^'|'$/g, '').replace(/''/g, "'") };
						}
						else
							current.rows.push(line);
					}
					results.pop();
					if (results.length !== statements.length)
						reject(new Error(`${results.length} results for ${statements.length} statements`));
					else
						resolve(results);
				},
				reject,
			};
			this.child.stdin.write(script);
		});
	}

	async step(statement)
	{
		return (await this.steps([statement]))[0];
	}

	// Run statements that must not fail; resolve with their output lines.
	async run(...statements)
	{
		const results = await this.steps(statements);
		const failed = results.findIndex((r) => r.error !== null);

		if (failed >= 0)
			throw new Error(`${statements[failed]}: ${results[failed].error.sqlstate} ${results[failed].error.message}`);
		return results.flatMap((r) => r.rows);
	}

	close()
	{
		this.child.stdin.end();
		return this.closed;
	}
}

// Run body with a new session; close it however body ends (a failed assertion too), so that no
// psql is left waiting on its input.
async function withPsqlSession(body)
{
	const session = new PsqlSession();

	try
	{
		return await body(session);
	}
	finally
	{
		await session.close();
	}
}

module.exports = { withPsqlSession };
