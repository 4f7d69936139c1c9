// lancedb's side of bench/vector.sh: the clustered vectors and queries (a fixed seed), the
// datasets with their indexes, and lancedb's own searches timed inside node.
//
//   node vector.cjs generate DIR ROWS DIM QUERIES
//       DIR/pq.lance (IVF_PQ, l2) and DIR/hnsw_sq.lance (IVF_HNSW_SQ, l2): the same ROWS rows
//       (id int64, emb fixed_size_list<float32>[DIM]) in 8 fragments; DIR/queries.json
//   node vector.cjs search DIR NAME NPROBES REFINE K
//       every query of DIR/queries.json against DIR/NAME.lance, once untimed (warm-up), then
//       timed: prints {"ms": [...], "ids": [[...]...]} (REFINE 0: no refine factor)
//   node vector.cjs sql DIR TABLE K
//       a psql script of every query of DIR/queries.json on TABLE, with \timing on
//   node vector.cjs parse FILE
//       that script's output (psql -Atq) as {"ms": [...], "ids": [[...]...]}
//   node vector.cjs summary EXACT RESULT
//       "RECALL P50 P99 QPS" of RESULT (JSON as above) against EXACT's ids: recall@K, latencies
//       in ms, queries per second of one client

'use strict';

const fs = require('fs');
const path = require('path');
const arrow = require('apache-arrow');
const lancedb = require('@lancedb/lancedb');
const { connect } = require('./connect.cjs');
const { prng } = require('../test/reference/prng.cjs');

const SEED = 27005;
const CLUSTERS = 1000;
const LATENT = 16;
const FRAGMENTS = 8;


// Points around CLUSTERS centres in [-1, 1)^dim that vary along LATENT directions shared by
// every cluster (real embeddings have a low intrinsic dimension, so that nearest neighbours
// stand out), with a little noise in every dimension.
function clusteredPoints(random, centers, directions, count, dim)
{
	const values = new Float32Array(count * dim);

	for (let i = 0; i < count; i++)
	{
		const c = centers[Math.floor(random() * centers.length)];
		const z = directions.map(() => random() * 2 - 1);

		for (let d = 0; d < dim; d++)
		{
			let v = c[d] + (random() - 0.5) * 0.02;

			for (let l = 0; l < directions.length; l++)
				v += directions[l][d] * z[l];
			values[i * dim + d] = v;
		}
	}
	return values;
}

function table(first, values, dim)
{
	const count = values.length / dim;
	const type = new arrow.FixedSizeList(dim, new arrow.Field('item', new arrow.Float32(), true));
	const emb = arrow.makeData({
		type, length: count, nullCount: 0,
		child: arrow.makeData({ type: new arrow.Float32(), length: values.length, nullCount: 0, data: values }),
	});

	return new arrow.Table({
		id: arrow.vectorFromArray(Array.from({ length: count }, (_, i) => BigInt(first + i)), new arrow.Int64()),
		emb: arrow.makeVector(emb),
	});
}

async function generate(dir, rows, dim, queries)
{
	const random = prng(SEED);
	const centers = Array.from({ length: CLUSTERS }, () => Array.from({ length: dim }, () => random() * 2 - 1));
	const directions = Array.from({ length: LATENT }, () => Array.from({ length: dim }, () => (random() * 2 - 1) * 0.1));
	const values = clusteredPoints(random, centers, directions, rows, dim);
	const db = await connect(dir);
	const perFragment = Math.ceil(rows / FRAGMENTS);

	for (const [name, config] of [
		['pq', lancedb.Index.ivfPq({ distanceType: 'l2' })],
		['hnsw_sq', lancedb.Index.hnswSq({ distanceType: 'l2' })]])
	{
		let t = null;

		for (let first = 0; first < rows; first += perFragment)
		{
			const part = table(first, values.subarray(first * dim, Math.min(rows, first + perFragment) * dim), dim);

			t = t === null ? await db.createTable(name, part, { mode: 'overwrite' }) : (await t.add(part), t);
		}
		const started = Date.now();

		await t.createIndex('emb', { config });
		process.stderr.write(`vector.cjs: ${name} index built in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
	}
	const q = clusteredPoints(random, centers, directions, queries, dim);

	fs.writeFileSync(path.join(dir, 'queries.json'),
		JSON.stringify(Array.from({ length: queries }, (_, i) => Array.from(q.subarray(i * dim, (i + 1) * dim)))));
}

async function search(dir, name, nprobes, refine, k)
{
	const queries = JSON.parse(fs.readFileSync(path.join(dir, 'queries.json'), 'utf8'));
	const t = await (await connect(dir)).openTable(name);
	const run = async (q) => {
		let s = t.vectorSearch(q).nprobes(nprobes).limit(k).select(['id', '_distance']);

		if (refine > 0)
			s = s.refineFactor(refine);
		return (await s.toArray()).map((r) => String(r.id));
	};
	const ms = [];
	const ids = [];

	for (const q of queries)
		await run(q);
	for (const q of queries)
	{
		const started = process.hrtime.bigint();

		ids.push(await run(q));
		ms.push(Number(process.hrtime.bigint() - started) / 1e6);
	}
	process.stdout.write(JSON.stringify({ ms, ids }) + '\n');
}

function sql(dir, table, k)
{
	const queries = JSON.parse(fs.readFileSync(path.join(dir, 'queries.json'), 'utf8'));
	let script = '\\timing on\n';

	for (const q of queries)
	{
		const v = "'[" + q.join(',') + "]'::vector";

		script += `SELECT id FROM ${table} ORDER BY emb <-> ${v} LIMIT ${k};\n`;
	}
	process.stdout.write(script);
}

function parse(file)
{
	const ms = [];
	const ids = [[]];

	for (const line of fs.readFileSync(file, 'utf8').split('\n'))
	{
		const time = /^Time: ([0-9.]+) ms/.exec(line);

		if (time)
		{
			ms.push(Number(time[1]));
			ids.push([]);
		}
		else if (/^[0-9]+$/.test(line))
			ids[ids.length - 1].push(line);
	}
	ids.pop();
	process.stdout.write(JSON.stringify({ ms, ids }) + '\n');
}

function summary(exactFile, resultFile)
{
	const exact = JSON.parse(fs.readFileSync(exactFile, 'utf8'));
	const result = JSON.parse(fs.readFileSync(resultFile, 'utf8'));
	const sorted = [...result.ms].sort((a, b) => a - b);
	const at = (p) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
	let found = 0;
	let total = 0;

	if (result.ids.length !== exact.ids.length)
		throw new Error(`${resultFile}: ${result.ids.length} queries, ${exact.ids.length} exact`);
	result.ids.forEach((ids, q) => {
		found += ids.filter((id) => exact.ids[q].includes(id)).length;
		total += exact.ids[q].length;
	});
	const seconds = result.ms.reduce((a, b) => a + b, 0) / 1000;

	process.stdout.write(`${(found / total).toFixed(3)} ${at(0.5).toFixed(2)} ${at(0.99).toFixed(2)} ${(result.ms.length / seconds).toFixed(0)}\n`);
}

async function main()
{
	const [mode, dir, ...args] = process.argv.slice(2);

	if (mode === 'sql')
		sql(dir, args[0], Number(args[1]));
	else if (mode === 'parse')
		parse(dir);
	else if (mode === 'summary')
		summary(dir, args[0]);
	else if (mode === 'generate')
		await generate(dir, Number(args[0]), Number(args[1]), Number(args[2]));
	else if (mode === 'search')
		await search(dir, args[0], Number(args[1]), Number(args[2]), Number(args[3]));
	else
		throw new Error('usage: node vector.cjs generate DIR ROWS DIM QUERIES | search DIR NAME NPROBES REFINE K'
			+ ' | sql DIR TABLE K | parse FILE | summary EXACT RESULT');
}

main().catch((e) => {
	process.stderr.write(String(e.stack || e) + '\n');
	process.exit(1);
});
