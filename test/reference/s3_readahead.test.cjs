'use strict';
// lance_fdw over S3 fetches the next batch's bytes while it decodes the current one
// (lance_parts.fdw_readahead): on a real S3 server (Ceph RGW, test/reference/s3_server.cjs)
// the reference writes a dataset of an int64 and three vector columns, and the scan reads
// the first and the last vector column (pages apart in the file: GETs of their own); a lance_fdw server
// reaches it through test/tools/s3_fault_proxy.py, which delays every GET of a data file by
// 150 ms and logs how many GETs were in their delay at once.  With read-ahead on and off every
// value is the reference's; on, GETs overlap (at most one is in flight off) and the scan is
// clearly faster.  A statement cancelled while GETs it started are in flight leaves the
// session working (they are aborted when the scan's memory goes).
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const arrow = require('apache-arrow');
const lancedb = require('@lancedb/lancedb');
const { psqlLines, psqlAsync, literal } = require('./pg.cjs');
const { startS3Server } = require('./s3_server.cjs');
const { startFaultProxy } = require('./s3_proxy.cjs');

const scratch = path.join(process.env.LP_SCRATCH, 's3-readahead');
fs.mkdirSync(scratch, { recursive: true });
const server = startS3Server('s3-readahead-server');
const ROWS = 3000;
const DIM = 128;
let proxy = null;			// the delaying proxy (s3_proxy.cjs), from the first test on

test.after(() => {
	if (proxy !== null)
		proxy.stop();
});

const vectorField = (name) => new arrow.Field(name,
	new arrow.FixedSizeList(DIM, new arrow.Field('item', new arrow.Float32(), true)), true);
const schema = new arrow.Schema([new arrow.Field('id', new arrow.Int64(), false),
	vectorField('a'), vectorField('b'), vectorField('c')]);

function rows(count)
{
	const vectors = () => arrow.makeData({
		type: schema.fields[1].type, length: count, nullCount: 0,
		child: arrow.makeData({ type: new arrow.Float32(), length: count * DIM, nullCount: 0,
			data: new Float32Array(count * DIM).map(() => Math.random()) }),
	});
	const children = [arrow.makeData({ type: schema.fields[0].type, length: count, nullCount: 0,
		data: BigInt64Array.from({ length: count }, (_, i) => BigInt(i)) }), vectors(), vectors(), vectors()];

	return new arrow.Table([new arrow.RecordBatch(schema,
		arrow.makeData({ type: new arrow.Struct(schema.fields), length: count, nullCount: 0, children }))]);
}

// A row as "id|a|c", each vector as its float32 bytes in base64.
const floatsDigest = (floats) => Buffer.from(Float32Array.from(floats).buffer).toString('base64');

async function referenceRows(table)
{
	const digests = [];

	for (const batch of (await table.query().toArrow()).batches)
		for (let i = 0; i < batch.numRows; i++)
			digests.push([batch.getChild('id').get(i), ...['a', 'c'].map((name) =>
				floatsDigest(batch.getChild(name).get(i).toArray()))].join('|'));
	return digests.sort();
}

function fdwRows(output)
{
	return output.split('\n').filter((l) => l.length > 0).map((line) => {
		const [id, ...vectors] = line.split('|');

		return [id, ...vectors.map((v) => floatsDigest(v.slice(1, -1).split(',').map(Number)))].join('|');
	}).sort();
}

// The rows of a full scan with read-ahead on or off, its seconds, and the largest number of
// data-file GETs the proxy handled at once.
function scan(readahead)
{
	const outFile = path.join(scratch, 'scan-' + readahead + '.out');
	const mark = proxy.mark();
	const start = process.hrtime.bigint();

	psqlLines(`SET lance_parts.fdw_readahead = ${readahead};
SET lance_parts.fdw_batch_rows = 250;
\\o ${outFile}
SELECT id, a, c FROM s3_readahead;
\\o
`);
	const ms = Number(process.hrtime.bigint() - start) / 1e6;
	const gets = proxy.log(mark).filter((entry) => entry.method === 'GET' && /\/data\/.*\.lance/.test(entry.target));

	return {
		rows: fdwRows(fs.readFileSync(outFile, 'utf8')),
		seconds: ms / 1000,
		gets: gets.length,
		inFlight: Math.max(0, ...gets.map((entry) => entry.delayed)),
	};
}

test('a scan with read-ahead returns the reference\'s values with its GETs in flight together, faster than without', async (t) => {
	const root = server.root('readahead');
	const db = await lancedb.connect(root, { storageOptions: server.storageOptions });
	const table = await db.createTable('vectors', rows(ROWS), { schema, mode: 'overwrite' });
	const expected = await referenceRows(table);

	proxy = await startFaultProxy(server.settings.LP_S3_ENDPOINT, scratch,
		[{ method: 'GET', path: '/data/.*\\.lance', skip: 0, faults: [], then: 'delay-150' }]);
	psqlLines(`CREATE EXTENSION IF NOT EXISTS lance_parts;
DROP SERVER IF EXISTS s3_readahead_server CASCADE;
${server.fdwServerSql('s3_readahead_server', root, proxy.endpoint)}
CREATE FOREIGN TABLE s3_readahead (id bigint, a real[], b real[], c real[]) SERVER s3_readahead_server
  OPTIONS (uri ${literal(root + '/vectors.lance')});
`);
	const off = scan('off');
	const on = scan('on');

	t.diagnostic(`read-ahead off: ${off.seconds} s, ${off.gets} GETs, at most ${off.inFlight} at once; ` +
		`on: ${on.seconds} s, ${on.gets} GETs, at most ${on.inFlight} at once`);
	assert.equal(expected.length, ROWS);
	assert.deepEqual(off.rows, expected);
	assert.deepEqual(on.rows, expected);
	assert.equal(off.inFlight, 1, 'without read-ahead the GETs go one after another');
	assert.ok(on.inFlight >= 2, 'with read-ahead GETs overlap: at most ' + on.inFlight + ' at once');
	assert.ok(on.seconds < off.seconds * 0.75, `read-ahead on took ${on.seconds} s, off ${off.seconds} s`);
});

test('a scan cancelled while its GETs are in flight leaves the session working', async () => {
	const { out, err } = await psqlAsync(`SET lance_parts.fdw_readahead = on;
SET lance_parts.fdw_batch_rows = 250;
SET statement_timeout = '250ms';
SELECT sum(array_length(a, 1) + array_length(c, 1)) FROM s3_readahead;
RESET statement_timeout;
SELECT count(*), sum(id), sum(array_length(a, 1) + array_length(c, 1)) FROM s3_readahead;
`, true);

	assert.ok(err.some((line) => /canceling statement due to statement timeout/.test(line)), err.join('\n'));
	assert.deepEqual(out, [ROWS + '|' + (ROWS * (ROWS - 1)) / 2 + '|' + 2 * DIM * ROWS]);
});
