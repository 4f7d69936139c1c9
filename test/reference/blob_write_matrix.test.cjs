'use strict';
// Blob v2 columns through every write path, on every store, with every kind of payload, read
// back by the reference (npm lancedb 0.39: fetchBlobs of each blob column).
//
// Stores: a local directory and S3 (Ceph RGW, s3_server.cjs, started once for the file).  On each,
// two chains of writes to one dataset, one with lance_parts.write_workers = 0 (file version 2.2)
// and one with 2 (2.3): write_dataset create with blob_columns, write_dataset append, COPY ... TO
// with format lance and mode append, write_part + register_part + assemble + commit, and
// write_dataset overwrite with blob_columns.  (write_file has no blob columns: its bytea columns
// are plain binary.)  Every write has two Blob v2 columns: payload, from bytea, with a 1-byte and
// a 1000-byte payload (inline; in a part, packed), two of 70,000 bytes (packed), one of 5,000,000
// (dedicated), an empty one and a NULL; and ext, from jsonb, with External descriptors (a range
// of an object and the whole object, at an absolute path or an s3:// URI of the same server),
// empty Inline descriptors and NULLs.  After each write the reference reads every payload of
// every row of the dataset, the new and the old, exactly (sha256), and so does lance_fdw.  A 1-byte payload first in
// an S3 data file crashed the backend (issue 23): its part buffer was taken in the memory context
// of one row and used after that context was reset.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const lancedb = require('@lancedb/lancedb');
const { startS3Server } = require('./s3_server.cjs');
const { sha256 } = require('./blob_data.cjs');
const { psqlLines, literal } = require('./pg.cjs');
const h = require('./harness.cjs');
const s3 = require('./s3_requests.cjs');

const server = startS3Server('s3-blob-matrix');
const S3_SERVER = 'blob_matrix_s3';
const LOCAL_SERVER = 'blob_matrix_local';

const STORES = {
	local: {
		server: LOCAL_SERVER,
		root: h.scratchDir('blob-matrix'),
		connect: (root) => lancedb.connect(root),
		read: async (root, name) => fs.readFileSync(path.join(root, name)),
	},
	s3: {
		server: S3_SERVER,
		root: server.root('blob-matrix'),
		connect: (root) => lancedb.connect(root, { storageOptions: server.storageOptions }),
		read: async (root, name) => s3.getObject(server.settings,
			(root + '/' + name).slice(('s3://' + server.settings.LP_S3_BUCKET + '/').length)),
	},
};

// payload sizes of the rows of a write (null: NULL) and the ext descriptor of each
const PAYLOAD_SIZES = [1, 1000, 70000, 5000000, 0, null, 70000];
const EXT_KINDS = ['range', 'whole', 'empty', null, 'range', 'whole', null];
const EXT_RANGE = { position: 100, size: 2000 };
const ROWS_PER_WRITE = PAYLOAD_SIZES.length;

psqlLines(`CREATE EXTENSION IF NOT EXISTS lance_parts;
DROP SCHEMA IF EXISTS blob_matrix CASCADE;
DROP SERVER IF EXISTS ${S3_SERVER} CASCADE;
DROP SERVER IF EXISTS ${LOCAL_SERVER} CASCADE;
${server.fdwServerSql(S3_SERVER, STORES.s3.root)}
CREATE SERVER ${LOCAL_SERVER} FOREIGN DATA WRAPPER lance_fdw;
CREATE SCHEMA blob_matrix;
`);

// The query of one write: rows first .. first + ROWS_PER_WRITE - 1 (the 1-byte payload first,
// the one of issue 23's crash); payloads of 17-byte periods, so no misplaced 64-byte alignment
// reads the same bytes; ext descriptors of the object at source (size bytes).
function writeQuery(first, source, size)
{
	const payload = PAYLOAD_SIZES.map((n, k) => `WHEN ${k} THEN ` + (n === null ? 'NULL' : n === 1 ? `'a'::bytea` :
		`substring(decode(repeat(md5(id::text) || 'ab', ${Math.ceil(n / 17)}), 'hex') FROM 1 FOR ${n})`)).join(' ');
	const descriptor = (position, length) =>
		`jsonb_build_object('kind', 3, 'position', ${position}, 'size', ${length}, 'blob_id', 0, 'blob_uri', ${literal(source)})`;
	const ext = EXT_KINDS.map((kind, k) => `WHEN ${k} THEN ` + (kind === null ? 'NULL' :
		kind === 'empty' ? `'{"kind": 0, "position": 0, "size": 0, "blob_id": 0, "blob_uri": ""}'::jsonb` :
		kind === 'range' ? descriptor(EXT_RANGE.position, EXT_RANGE.size) : descriptor(0, size))).join(' ');

	return `SELECT id, CASE k ${payload} END AS payload, CASE k ${ext} END AS ext
  FROM (SELECT ${first} + k AS id, k FROM generate_series(0, ${ROWS_PER_WRITE - 1}) k) r ORDER BY id`;
}

// The sha256 of each row's payload and ext the write of writeQuery(first, ...) gives, by id.
function expectedRows(first, source, bytes)
{
	const query = writeQuery(first, source, bytes.length);
	const lines = psqlLines(`SELECT id || ' ' || coalesce(encode(sha256(payload), 'hex'), 'null') FROM (${query}) q;\n`);
	const ext = { range: sha256(bytes.subarray(EXT_RANGE.position, EXT_RANGE.position + EXT_RANGE.size)),
		whole: sha256(bytes), empty: sha256(Buffer.alloc(0)) };
	const rows = new Map();

	for (const line of lines)
	{
		const [id, hash] = line.split(' ');
		const kind = EXT_KINDS[Number(id) - first];

		rows.set(Number(id), { payload: hash === 'null' ? null : hash, ext: kind === null ? null : ext[kind] });
	}
	assert.equal(rows.size, ROWS_PER_WRITE);
	return rows;
}

// Every row of the dataset as the reference's blob API returns its payloads.
async function referenceRows(store, name)
{
	const table = await (await store.connect(store.root)).openTable(name);
	const rows = await table.query().select(['id']).withRowId().toArray();
	const rowIds = rows.map((r) => r._rowid);
	const fetched = {};

	for (const column of ['payload', 'ext'])
		fetched[column] = await table.fetchBlobs(column, rowIds);
	const out = new Map();

	rows.forEach((r, i) => out.set(Number(r.id), {
		payload: fetched.payload[i] === null ? null : sha256(Buffer.from(fetched.payload[i])),
		ext: fetched.ext[i] === null ? null : sha256(Buffer.from(fetched.ext[i])),
	}));
	return { rows: out, blobColumns: (await table.blobColumns()).sort() };
}

for (const [storeName, store] of Object.entries(STORES))
	for (const workers of [0, 2])
	{
		const version = workers === 0 ? '2.2' : '2.3';
		const name = 'w' + workers;
		const dataset = store.root + '/' + name + '.lance';
		const sourceName = 'external-' + name + '.lance';
		const source = store.root + '/' + sourceName;
		const label = `${storeName}, write_workers ${workers}, ${version}: `;
		const setWorkers = `SET lance_parts.write_workers = ${workers};\n`;
		const state = { expected: null, source: null, next: 0 };

		// The next write's query and rows, added to what the dataset should hold.
		const nextWrite = (replace) => {
			const first = state.next;
			const rows = expectedRows(first, source, state.source);

			state.next += 1000;
			if (replace)
				state.expected = new Map();
			for (const [id, row] of rows)
				state.expected.set(id, row);
			return writeQuery(first, source, state.source.length);
		};

		const table = `blob_matrix.${storeName}_${name}`;
		const check = async () => {
			const { rows, blobColumns } = await referenceRows(store, name);

			assert.deepEqual(blobColumns, ['ext', 'payload'], 'the reference sees both blob columns');
			assert.equal(rows.size, state.expected.size, 'rows of the dataset');
			for (const [id, row] of state.expected)
				assert.deepEqual(rows.get(id), row, 'payloads of row ' + id);
			// lance_fdw reads them as the reference does
			const hash = (column) => `coalesce(encode(sha256(${column}), 'hex'), 'null')`;
			const fdw = psqlLines(`SELECT id || ' ' || ${hash('payload')} || ' ' || ${hash('ext')} FROM ${table} ORDER BY id;\n`);

			assert.deepEqual(fdw, [...state.expected.keys()].sort((a, b) => a - b).map((id) => {
				const row = state.expected.get(id);

				return id + ' ' + (row.payload ?? 'null') + ' ' + (row.ext ?? 'null');
			}), 'lance_fdw reads every payload');
		};

		test(label + 'write_dataset create with blob_columns', async () => {
			// the object of the External descriptors
			psqlLines(`SELECT lance_parts.write_file(${literal(source)}, 'SELECT g::bigint AS v FROM generate_series(1, 4000) g') IS NOT NULL;\n`);
			state.source = await store.read(store.root, sourceName);
			state.expected = new Map();
			const query = nextWrite(false);

			assert.deepEqual(psqlLines(setWorkers + `SELECT dataset_version || ' ' || num_rows FROM lance_parts.write_dataset(${literal(dataset)},
  $q$${query}$q$, 'create', '${version}', blob_columns => ARRAY['payload', 'ext']);
`), ['1 ' + ROWS_PER_WRITE]);
			psqlLines(`CREATE FOREIGN TABLE ${table} (
    id bigint,
    payload bytea OPTIONS (blob 'payload'),
    ext bytea OPTIONS (blob 'payload'))
  SERVER ${store.server} OPTIONS (uri ${literal(dataset)});
`);
			await check();
		});

		test(label + 'write_dataset append', async () => {
			const query = nextWrite(false);

			assert.deepEqual(psqlLines(setWorkers + `SELECT dataset_version || ' ' || num_rows FROM lance_parts.write_dataset(${literal(dataset)},
  $q$${query}$q$, 'append');
`), ['2 ' + ROWS_PER_WRITE]);
			await check();
		});

		test(label + 'COPY ... TO with format lance, mode append', async () => {
			const query = nextWrite(false);

			psqlLines(setWorkers + `COPY (${query}) TO ${literal(dataset)} WITH (format 'lance', mode 'append');\n`);
			await check();
		});

		test(label + 'write_part, register_part, assemble, commit', async () => {
			const query = nextWrite(false);
			const [target] = psqlLines(`SELECT lance_parts.create_target(${literal(dataset)});\n`);
			const [part] = psqlLines(`SELECT uri || ' ' || num_rows || ' ' || blob_ids FROM lance_parts.write_part(${literal(target)},
  $q$${query}$q$, ${ROWS_PER_WRITE});
`);
			const [uri, rows, blobIds] = part.split(' ');

			assert.equal(Number(rows), ROWS_PER_WRITE);
			assert.deepEqual(psqlLines(`SELECT lance_parts.register_part(${literal(target)}, ${literal(uri)}, ${rows}, ${literal(blobIds)});
SELECT status FROM lance_parts.assemble(${literal(target)});
SELECT dataset_version FROM lance_parts.commit(${literal(target)});
`), ['1', 'written', '4']);
			await check();
		});

		test(label + 'write_dataset overwrite with blob_columns', async () => {
			const query = nextWrite(true);

			assert.deepEqual(psqlLines(setWorkers + `SELECT dataset_version || ' ' || num_rows FROM lance_parts.write_dataset(${literal(dataset)},
  $q$${query}$q$, 'overwrite', '${version}', blob_columns => ARRAY['payload', 'ext']);
`), ['5 ' + ROWS_PER_WRITE]);
			await check();
		});
	}

// Issue 23's reproducer as given: one row, one 1-byte payload, nothing else, on S3.
test('s3: write_dataset create of one 1-byte payload', async () => {
	const dataset = STORES.s3.root + '/one.lance';

	assert.deepEqual(psqlLines(`SELECT num_rows FROM lance_parts.write_dataset(${literal(dataset)},
  $$SELECT 1::bigint AS id, 'a'::bytea AS payload$$, blob_columns => ARRAY['payload']);
`), ['1']);
	const table = await (await STORES.s3.connect(STORES.s3.root)).openTable('one');
	const [row] = await table.query().select(['id']).withRowId().toArray();

	assert.deepEqual(Buffer.from((await table.fetchBlobs('payload', [row._rowid]))[0]), Buffer.from('a'));
});
