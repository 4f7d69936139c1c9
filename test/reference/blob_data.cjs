'use strict';
// blob_data.cjs - what the blob node tests share: a dataset with a Blob v2 column written by
// the reference with its thresholds set so that inline, packed and dedicated payloads (and
// empty payloads and nulls) all occur, in two fragments, and the payloads its blob API
// (fetchBlobs) returns for each row.
const crypto = require('node:crypto');
const arrow = require('apache-arrow');
const lancedb = require('@lancedb/lancedb');
const C = require('./columns.cjs');

const INLINE_MAX = 64;
const DEDICATED_MIN = 1024;
// around both thresholds, empty and null
const SIZES = [0, 10, INLINE_MAX, INLINE_MAX + 1, 300, DEDICATED_MIN, DEDICATED_MIN + 1, 5000, null, 40];
const APPENDS = [13, 9];

// The payload of row g, or null.
function payload(g)
{
	const size = SIZES[g % SIZES.length];

	return size === null ? null : Buffer.from(Array.from({ length: size }, (_, i) => (g * 131 + i * 17) & 0xff));
}

function sha256(bytes)
{
	return bytes === null ? null : crypto.createHash('sha256').update(bytes).digest('hex');
}

// Write table `name` of db (a lancedb connection) in Lance `version`; returns the sha256 of
// each row's payload (null for null) by id, as the reference's blob API returns them.
// options: inlineSizeThreshold (default INLINE_MAX), first (the first row's id, default 0),
// appends (the rows of each fragment, default APPENDS) and naming ('v1', the default, or 'v2'
// manifest paths), stableRowIds and append (add the rows to the existing table `name`).
async function writeBlobDataset(db, name, version, options = {})
{
	const blobField = lancedb.blob('payload', {
		inlineSizeThreshold: options.inlineSizeThreshold ?? INLINE_MAX,
		dedicatedSizeThreshold: DEDICATED_MIN,
	});
	const columns = [
		{
			field: new arrow.Field('id', new arrow.Int64(), false),
			value: (g) => BigInt(g),
			build: (values) => C.fixedData(new arrow.Int64(), BigInt64Array, values, 0n),
		},
		{
			field: blobField,
			value: payload,
			build: (values) => C.structData(blobField.type, values, (rows) => [
				C.varData(new arrow.LargeBinary(), rows, true),
				C.varData(new arrow.Utf8(), rows.map(() => null), false),
			]),
		},
	];
	let first = options.first ?? 0;
	let table = options.append ? await db.openTable(name) : null;

	for (const count of options.appends ?? APPENDS)
	{
		const data = C.makeTable(columns, first, count);

		first += count;
		if (table === null)
			table = await db.createTable(name, data, {
				storageOptions: {
					newTableDataStorageVersion: version,
					newTableEnableV2ManifestPaths: options.naming === 'v2' ? 'true' : 'false',
					...(options.stableRowIds ? { newTableEnableStableRowIds: 'true' } : {}),
				},
			});
		else
			await table.add(data);
	}
	const rows = await table.query().select(['id']).withRowId().toArray();
	const fetched = await table.fetchBlobs('payload', rows.map((r) => r._rowid));
	const expected = new Map();

	rows.forEach((r, i) => expected.set(Number(r.id), sha256(fetched[i] === null ? null : Buffer.from(fetched[i]))));
	return expected;
}

module.exports = { APPENDS, DEDICATED_MIN, payload, sha256, writeBlobDataset };
