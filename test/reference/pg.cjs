// pg.cjs - run SQL against the test cluster through psql (PGHOST, PGPORT,
// PGUSER and PGDATABASE come from the environment set by test/run.sh).
'use strict';
const { execFileSync, spawn } = require('node:child_process');

// Run a psql script; return its unaligned, tuples-only output lines.
function psqlLines(script) {
  const out = execFileSync('psql', ['-X', '-q', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-f', '-'], {
    input: script,
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
  });
  return out.split('\n').filter((line) => line.length > 0);
}

// Run a psql script in a child process; resolve with its output lines.  With
// continueOnError, failed statements do not stop the script: resolve with
// { out, err }, the lines of standard output and of standard error.
function psqlAsync(script, continueOnError = false) {
  return new Promise((resolve, reject) => {
    const child = spawn('psql', ['-X', '-q', '-A', '-t', '-v',
      'ON_ERROR_STOP=' + (continueOnError ? '0' : '1'), '-f', '-'],
    { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    const lines = (text) => text.split('\n').filter((l) => l.length > 0);

    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { err += d; });
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) reject(new Error('psql exited with ' + code + ': ' + err));
      else resolve(continueOnError ? { out: lines(out), err: lines(err) } : lines(out));
    });
    child.stdin.end(script);
  });
}

// SQL string literal.
function literal(text) {
  return "'" + String(text).replace(/'/g, "''") + "'";
}

// Run one query per item, each returning a single json value; return the
// parsed values in order.
function queryJsonEach(items, queryFor) {
  if (items.length === 0) return [];
  const lines = psqlLines(items.map((item) => queryFor(item) + ';\n').join(''));
  if (lines.length !== items.length) {
    throw new Error(`expected ${items.length} result lines from psql, got ${lines.length}`);
  }
  return lines.map((line) => JSON.parse(line));
}

module.exports = { psqlLines, psqlAsync, literal, queryJsonEach };
