'use strict';
// A transaction reads its own pending writes to a lance_fdw table as PostgreSQL reads its own
// writes to a heap table: a randomized differential (fixed seeds).
//
// lancedb writes a dataset of three fragments (one variant with stable row ids, one of file
// version 2.0 with deletion files lancedb wrote, one with a BTREE and a BITMAP index the scans
// search, EXPLAIN ANALYZE shows, with and without pending writes); a heap table holds the same
// rows.  One session
// runs random transactions (lance_parts.publish_at = 'commit') that make each change to both
// tables in the same transaction: INSERT of one row and of several, INSERT ... SELECT (from
// generate_series and from the table itself), UPDATE and DELETE with random WHERE clauses,
// with RETURNING; SAVEPOINT, ROLLBACK TO SAVEPOINT and RELEASE; COMMIT or ROLLBACK.
//  - Every statement returns the same rows on both sides, and after each one random SELECTs
//    (pushed filters, aggregates, ORDER BY and LIMIT) give the same results on both, with
//    parallel plans allowed (a plan made while writes are pending is serial) or not, and through
//    generic parallel plans prepared before the transaction (their leader reads the pending
//    writes alone).
//  - A statement lance_fdw refuses (0A000: an UPDATE or DELETE of rows this transaction wrote,
//    one in a savepoint after one outside it) is rolled back on both sides, by the savepoint some
//    statements are wrapped in, or with the whole transaction; the refusal must be one of those
//    two and its case must hold (the heap's statement touched a row the transaction wrote; a
//    savepoint is open after an earlier UPDATE or DELETE); any other error fails the test.
//    Hundreds of statements must be accepted.
//  - After each COMMIT or ROLLBACK, lancedb reads the heap's rows from the dataset.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const arrow = require('apache-arrow');
const h = require('./harness.cjs');
const { prng } = require('./prng.cjs');
const { psqlLines, literal } = require('./pg.cjs');
const { withPsqlSession } = require('./psql_session.cjs');
const { encodeRows } = require('./values.cjs');

// publications at COMMIT, not the node layer's 'call'
delete process.env.PGOPTIONS;

const dir = h.scratchDir('fdw-own-writes-differential');
const TRANSACTIONS = 100;
const INITIAL_ROWS = 60;

const VARIANTS = [
	{ name: 'plain', seed: 20270425, options: {} },
	{ name: 'stable', seed: 20270426, options: { storageOptions: { newTableEnableStableRowIds: 'true' } } },
	{ name: 'deleted', seed: 20270427, options: { storageOptions: { newTableDataStorageVersion: '2.0' } }, deleted: 'id % 7 = 3' },
	// scalar indexes the scans search for pushed clauses: a BTREE on id, a BITMAP on grp
	{ name: 'indexed', seed: 20270428, options: {}, deleted: 'id % 8 = 5', indexed: true },
];

const schema = new arrow.Schema([
	new arrow.Field('id', new arrow.Int64(), false),
	new arrow.Field('grp', new arrow.Int32(), true),
	new arrow.Field('val', new arrow.Float64(), true),
	new arrow.Field('name', new arrow.Utf8(), true),
	new arrow.Field('flag', new arrow.Bool(), true),
]);

// values are exact in binary (multiples of 0.25), so that sums do not depend on the order
function initialRow(i)
{
	return {
		id: i,
		grp: i % 11 === 4 ? null : i % 5,
		val: i % 13 === 6 ? null : (i % 17) * 0.25 - 2,
		name: i % 9 === 2 ? null : 'n' + (i % 23),
		flag: i % 10 === 7 ? null : i % 3 === 0,
	};
}

function rowsTable(rows)
{
	return new arrow.Table({
		id: arrow.vectorFromArray(rows.map((r) => BigInt(r.id)), schema.fields[0].type),
		grp: arrow.vectorFromArray(rows.map((r) => r.grp), schema.fields[1].type),
		val: arrow.vectorFromArray(rows.map((r) => r.val), schema.fields[2].type),
		name: arrow.vectorFromArray(rows.map((r) => r.name), schema.fields[3].type),
		flag: arrow.vectorFromArray(rows.map((r) => r.flag), schema.fields[4].type),
	});
}

const COLUMNS = 'id, grp, val, name, flag';

// The rows as psql prints them (extra_float_digits 3, NULL as nothing), sorted.
const rowText = (r) => [r.id, r.grp ?? '', r.val ?? '', r.name ?? '', r.flag === null ? '' : (r.flag ? 't' : 'f')].join('|');

async function setUp(variant)
{
	const db = await h.lancedb.connect(dir);
	const all = Array.from({ length: INITIAL_ROWS }, (_, i) => initialRow(i));
	const third = INITIAL_ROWS / 3;
	const table = await db.createTable(variant.name, rowsTable(all.slice(0, third)), variant.options);

	await table.add(rowsTable(all.slice(third, 2 * third)));
	await table.add(rowsTable(all.slice(2 * third)));
	if (variant.indexed)
	{
		await table.createIndex('id', { config: h.lancedb.Index.btree() });
		await table.createIndex('grp', { config: h.lancedb.Index.bitmap() });
	}
	if (variant.deleted)
		await table.delete(variant.deleted);
	const rows = encodeRows(await table.query().toArrow());
	const text = (v) => (v === null ? '\\N' : String(v));

	psqlLines(`DROP FOREIGN TABLE IF EXISTS ownd.t_${variant.name};
DROP TABLE IF EXISTS ownd.h_${variant.name};
CREATE FOREIGN TABLE ownd.t_${variant.name} (id bigint, grp int, val double precision, name text, flag boolean)
SERVER ownd_server OPTIONS (uri ${literal(path.join(dir, variant.name + '.lance'))});
CREATE TABLE ownd.h_${variant.name} (id bigint, grp int, val double precision, name text, flag boolean);
COPY ownd.h_${variant.name} FROM STDIN;
${rows.map((r) => [r.id, text(r.grp), text(r.val), text(r.name), r.flag === null ? '\\N' : (r.flag ? 't' : 'f')].join('\t')).join('\n')}
\\.
`);
	return table;
}

test.before(() => {
	psqlLines(`DROP SCHEMA IF EXISTS ownd CASCADE;
DROP SERVER IF EXISTS ownd_server CASCADE;
CREATE SERVER ownd_server FOREIGN DATA WRAPPER lance_fdw;
CREATE SCHEMA ownd;
`);
});

// ---- random statements ------------------------------------------------------------------

function generator(seed)
{
	const random = prng(seed);
	const intBelow = (n) => Math.floor(random() * n);
	const pick = (items) => items[intBelow(items.length)];
	const quarter = () => (intBelow(81) - 40) * 0.25;
	let nextId = 1000;

	function atom()
	{
		const a = intBelow(70);

		return pick([
			`id < ${a}`, `id >= ${a}`, `id BETWEEN ${a} AND ${a + intBelow(30)}`, `id >= 1000`, `id < 1000`,
			`grp = ${intBelow(5)}`, `grp <> ${intBelow(5)}`, 'grp IS NULL', `grp IN (${intBelow(5)}, ${intBelow(5)})`,
			`val > ${quarter()}`, `val <= ${quarter()}`, 'val IS NULL', 'val IS NOT NULL',
			`name = 'n${intBelow(23)}'`, 'name IS NULL', `name >= 'n${intBelow(23)}'`,
			'flag', 'NOT flag', 'flag IS NULL',
		]);
	}

	function where()
	{
		const r = random();

		if (r < 0.15)
			return '';
		if (r < 0.6)
			return `WHERE ${atom()}`;
		return `WHERE (${atom()}) ${random() < 0.6 ? 'AND' : 'OR'} (${atom()})`;
	}

	const value = {
		grp: () => (random() < 0.15 ? 'NULL' : String(intBelow(5))),
		val: () => (random() < 0.15 ? 'NULL' : String(quarter())),
		name: () => (random() < 0.15 ? 'NULL' : `'n${intBelow(23)}'`),
		flag: () => (random() < 0.15 ? 'NULL' : pick(['true', 'false'])),
	};
	const newRow = () => `(${nextId++}, ${value.grp()}, ${value.val()}, ${value.name()}, ${value.flag()})`;

	// A statement over table T (the lance side's or the heap's name replaces it), returning the
	// id of each row it writes first.
	function change()
	{
		const r = random();

		if (r < 0.14)
			return `INSERT INTO T VALUES ${newRow()} RETURNING id`;
		if (r < 0.24)
			return `INSERT INTO T VALUES ${Array.from({ length: 2 + intBelow(4) }, newRow).join(', ')} RETURNING ${COLUMNS}`;
		if (r < 0.32)
		{
			const n = 3 + intBelow(25);
			const first = nextId;

			nextId += n;
			return `INSERT INTO T SELECT g, g % 5, (g % 9) * 0.25, 'g' || (g % 7), g % 2 = 0 FROM generate_series(${first}, ${first + n - 1}) g RETURNING id`;
		}
		if (r < 0.38)
		{
			const offset = nextId * 1000;

			nextId += 1;
			return `INSERT INTO T SELECT id + ${offset}, grp, val, name, flag FROM T ${where()} RETURNING id`;
		}
		if (r < 0.68)
		{
			const sets = ['grp = ' + value.grp(), 'val = ' + value.val(), 'val = val + 0.25', "name = 'u' || id",
				'flag = NOT flag', 'name = ' + value.name(), 'grp = grp + 1'];
			// at most one assignment to a column
			const chosen = sets.filter(() => random() < 0.35)
				.filter((set, i, all) => all.findIndex((other) => other.split(' ')[0] === set.split(' ')[0]) === i);

			return `UPDATE T SET ${(chosen.length > 0 ? chosen : [pick(sets)]).join(', ')} ${where()} RETURNING ${pick(['id', COLUMNS])}`;
		}
		return `DELETE FROM T ${where()} RETURNING ${pick(['id', COLUMNS])}`;
	}

	function select()
	{
		const w = where();

		return pick([
			`SELECT count(*), sum(id), sum(val), count(name), min(name), max(grp), count(flag) FROM T ${w}`,
			`SELECT ${COLUMNS} FROM T ${w} ORDER BY ${COLUMNS}`,
			`SELECT ${COLUMNS} FROM T ${w} ORDER BY val DESC NULLS FIRST, id, grp, name, flag LIMIT ${1 + intBelow(8)}`,
			`SELECT grp, count(*), sum(val), bool_or(flag) FROM T ${w} GROUP BY grp ORDER BY grp`,
			`SELECT name, count(*) FROM T ${w} GROUP BY name ORDER BY name NULLS FIRST LIMIT 5`,
			`SELECT id FROM T ${w} ORDER BY id DESC LIMIT 3`,
		]);
	}

	return { random, intBelow, pick, change, select };
}

const PARALLEL = `SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; SET min_parallel_table_scan_size = 0;
SET lance_parts.fdw_unit_rows = 8`;
// generic parallel plans, prepared before any write: their leader reads the pending writes
const PREPARED = [
	['counted', 'int', `SELECT count(*), sum(id), sum(val), count(name) FROM T WHERE grp IS DISTINCT FROM $1`],
	['listed', 'bigint', `SELECT ${COLUMNS} FROM T WHERE id >= $1 ORDER BY ${COLUMNS}`],
];

async function runVariant(t, variant, session)
{
	const table = await setUp(variant);
	const lance = `ownd.t_${variant.name}`;
	const heap = `ownd.h_${variant.name}`;
	const on = (sql, name) => sql.replace(/\bT\b/g, name);
	const g = generator(variant.seed);
	const counts = { statements: 0, accepted: 0, refused: 0, refusedInSavepoint: 0, selects: 0, commits: 0, rollbacks: 0, prepared: 0 };
	const fullRows = `SELECT ${COLUMNS} FROM T ORDER BY ${COLUMNS}`;

	// The same query on both sides: the same lines.
	async function compare(sql, what)
	{
		const [ours, theirs] = await session.steps([on(sql, lance), on(sql, heap)]);

		assert.equal(ours.error, null, `${what}: ${on(sql, lance)}`);
		assert.equal(theirs.error, null, `${what}: ${on(sql, heap)}`);
		assert.deepEqual(ours.rows, theirs.rows, `${what}: ${sql}`);
		counts.selects++;
	}

	async function compareSelects(what)
	{
		for (let i = 0; i < 1 + g.intBelow(2); i++)
		{
			await session.run(`SET max_parallel_workers_per_gather = ${g.pick([0, 2])}`);
			await compare(g.select(), what);
		}
		if (g.random() < 0.3)
		{
			const [name, type] = g.pick(PREPARED);
			const argument = type === 'int' ? g.intBelow(5) : g.pick([0, 30, 1000]);
			const [ours, theirs] = await session.steps([`EXECUTE ${name}_lance(${argument})`, `EXECUTE ${name}_heap(${argument})`]);

			assert.equal(ours.error, null, `${what}: EXECUTE ${name}_lance`);
			assert.deepEqual(ours.rows, theirs.rows, `${what}: prepared ${name}(${argument})`);
			counts.prepared++;
		}
	}

	// After a transaction: the foreign table (parallel plans allowed) and lancedb read the heap's rows.
	async function compareCommitted(what)
	{
		await session.run('SET max_parallel_workers_per_gather = 2');
		await compare(fullRows, what);
		await table.checkoutLatest();
		const read = encodeRows(await table.query().toArrow()).map(rowText).sort();
		const expected = (await session.run(on(fullRows, heap))).slice().sort();

		assert.deepEqual(read, expected, `${what}: lancedb's rows`);
	}

	await session.run('SET extra_float_digits = 3', PARALLEL, 'SET max_parallel_workers_per_gather = 2',
		'SET plan_cache_mode = force_generic_plan',
		...PREPARED.flatMap(([name, type, sql]) => [`PREPARE ${name}_lance(${type}) AS ${on(sql, lance)}`,
			`PREPARE ${name}_heap(${type}) AS ${on(sql, heap)}`]));
	for (const [name] of PREPARED)
		assert.match((await session.run(`EXPLAIN (COSTS OFF) EXECUTE ${name}_lance(1)`)).join('\n'), /Gather/, `${name} is a parallel plan`);
	await compareCommitted(`${variant.name}: before`);
	if (variant.indexed)
	{
		// the scans search the indexes, with pending writes too (so that the comparisons cannot
		// pass without them)
		const explain = (where) => `EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT * FROM ${lance} WHERE ${where}`;

		for (const pending of [false, true])
		{
			const results = await session.steps(['BEGIN', ...(pending ? [on(`INSERT INTO T VALUES (999, 1, 0, 'p', true)`, lance)] : []),
				explain('id BETWEEN 10 AND 20'), explain('grp = 2'), 'ROLLBACK']);
			const [idPlan, grpPlan] = results.slice(-3, -1).map((r) => r.rows.join('\n'));

			assert.deepEqual(results.filter((r) => r.error !== null), [], 'EXPLAIN of the indexed table');
			assert.match(idPlan, /Lance Index: id_idx \(BTREE\)/, idPlan);
			assert.match(grpPlan, /Lance Index: grp_idx \(BITMAP\)/, grpPlan);
			if (pending)
				assert.match(idPlan, /Pending Writes Read: true/, idPlan);
		}
	}

	for (let x = 0; x < TRANSACTIONS; x++)
	{
		const savepoints = [];
		const length = 3 + g.intBelow(10);
		let open = true;

		// the ids of rows this transaction wrote (inserted or updated; kept after a rollback to a
		// savepoint, so a superset), and whether it deleted or updated rows
		const written = new Set();
		let deleted = false;

		await session.run('BEGIN');
		for (let s = 0; s < length && open; s++)
		{
			const what = `${variant.name} transaction ${x} statement ${s}`;
			const r = g.random();

			if (r < 0.1)
			{
				savepoints.push(`s${s}`);
				await session.run(`SAVEPOINT s${s}`);
				continue;
			}
			if (r < 0.17 && savepoints.length > 0)
			{
				const at = g.intBelow(savepoints.length);
				const name = savepoints[at];

				if (g.random() < 0.5)
				{
					await session.run(`ROLLBACK TO SAVEPOINT ${name}`);
					savepoints.length = at + 1;
				}
				else
				{
					await session.run(`RELEASE SAVEPOINT ${name}`);
					savepoints.length = at;
				}
				await compareSelects(what + ` (after ${name})`);
				continue;
			}
			const sql = g.change();
			const guarded = g.random() < 0.5;

			counts.statements++;
			if (guarded)
				await session.run('SAVEPOINT guard');
			const [theirs, ours] = await session.steps([on(sql, heap), on(sql, lance)]);

			assert.equal(theirs.error, null, `${what}: ${on(sql, heap)}`);
			if (ours.error !== null)
			{
				const refusal = `${what}: ${on(sql, lance)}: ${ours.error.sqlstate} ${ours.error.message}`;
				const ids = theirs.rows.map((l) => l.split('|')[0]);

				// refused only for what lance_fdw documents, and only when that is the case
				assert.equal(ours.error.sqlstate, '0A000', refusal);
				if (/that this transaction wrote$/.test(ours.error.message))
					assert.ok(ids.some((id) => written.has(id)), `${refusal}: none of the rows ${ids} was written by the transaction`);
				else
				{
					assert.match(ours.error.message, /is already deleted from outside the current savepoint$/, refusal);
					assert.ok(deleted && (guarded || savepoints.length > 0) && !sql.startsWith('INSERT'), refusal);
				}
				counts.refused++;
				if (guarded)
				{
					await session.run('ROLLBACK TO SAVEPOINT guard', 'RELEASE SAVEPOINT guard');
					counts.refusedInSavepoint++;
				}
				else
				{
					await session.run('ROLLBACK');
					open = false;
					counts.rollbacks++;
					await compareCommitted(what + ' (refused, rolled back)');
				}
				continue;
			}
			assert.deepEqual(ours.rows.slice().sort(), theirs.rows.slice().sort(), `${what}: rows of ${sql}`);
			counts.accepted++;
			if (sql.startsWith('DELETE'))
				deleted = deleted || theirs.rows.length > 0;
			else
			{
				theirs.rows.forEach((l) => written.add(l.split('|')[0]));
				deleted = deleted || (sql.startsWith('UPDATE') && theirs.rows.length > 0);
			}
			if (guarded)
				await session.run('RELEASE SAVEPOINT guard');
			await compareSelects(`${what}: after ${sql}`);
		}
		if (!open)
			continue;
		const commit = g.random() < 0.7;

		await session.run(commit ? 'COMMIT' : 'ROLLBACK');
		counts[commit ? 'commits' : 'rollbacks']++;
		await compareCommitted(`${variant.name} transaction ${x} (${commit ? 'COMMIT' : 'ROLLBACK'})`);
	}
	t.diagnostic(`${variant.name}: ${JSON.stringify(counts)}`);
	return counts;
}

test('random transactions read their own writes as the heap does; lancedb reads what they commit', async (t) => {
	const total = { statements: 0, accepted: 0, refused: 0, refusedInSavepoint: 0 };

	for (const variant of VARIANTS)
	{
		const counts = await withPsqlSession((session) => runVariant(t, variant, session));

		for (const key of Object.keys(total))
			total[key] += counts[key];
	}
	t.diagnostic(JSON.stringify(total));
	assert.ok(total.accepted >= 800, `${total.accepted} statements accepted`);
	assert.ok(total.refused >= 100 && total.refusedInSavepoint >= 50, JSON.stringify(total));
});
