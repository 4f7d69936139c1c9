'use strict';
// lance_fdw on the early 2.0 files of old lancedb releases (legacy/generate_legacy.cjs):
// strings and binaries stored as lists of u8 (lancedb 0.5.2) and Bitpacked pages (lancedb
// 0.8.0). Every value of every column is compared with the rows the old release read back
// (the pinned lancedb 0.39.0 cannot read the list-of-u8 files); a take of scattered rows
// goes through the same field readers as the scan.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { psqlLines, literal } = require('./pg.cjs');
const { readForeignTable, firstDifference, sortById } = require('./fdw_values.cjs');

const LEGACY = path.join(process.env.LP_TESTDATA, 'legacy');
const legacy = JSON.parse(fs.readFileSync(path.join(LEGACY, 'legacy.json'), 'utf8'));

psqlLines(`CREATE EXTENSION IF NOT EXISTS lance_parts;
DROP SCHEMA IF EXISTS fdw_legacy CASCADE;
DROP SERVER IF EXISTS fdw_legacy_server CASCADE;
CREATE SERVER fdw_legacy_server FOREIGN DATA WRAPPER lance_fdw;
CREATE SCHEMA fdw_legacy;
IMPORT FOREIGN SCHEMA legacy FROM SERVER fdw_legacy_server INTO fdw_legacy
  OPTIONS (uri ${literal(LEGACY)});
`);

for (const dataset of legacy.datasets)
{
	const fields = dataset.expected_fields.filter((f) => f.parent_id === -1);
	const expected = sortById(JSON.parse(fs.readFileSync(dataset.rows_file, 'utf8')));

	test(dataset.name + ' (lancedb ' + dataset.lancedb + '): every value as the writer reads it', () => {
		const actual = readForeignTable('fdw_legacy.' + dataset.name, fields);
		const counter = { compared: 0 };
		const difference = firstDifference(dataset.name, fields, actual, expected, counter);

		if (difference !== null)
			assert.fail(difference);
		assert.equal(actual.length, dataset.num_rows);
		assert.equal(counter.compared, expected.length * fields.length);
	});

	test(dataset.name + ': rows picked by a pushed filter across both files', () => {
		const ids = expected.filter((r) => Number(r.id) % 97 === 5).map((r) => r.id);
		const query = 'fdw_legacy.' + dataset.name + ' WHERE id IN (' + ids.join(', ') + ')';
		const actual = readForeignTable('(SELECT * FROM ' + query + ')', fields);
		const picked = expected.filter((r) => ids.includes(r.id));
		const difference = firstDifference(dataset.name, fields, actual, picked, { compared: 0 });

		assert.ok(ids.length > 5 && ids.some((id) => Number(id) >= 700), 'rows of both data files');
		if (difference !== null)
			assert.fail(difference);
	});
}
