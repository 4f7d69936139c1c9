'use strict';
// fdw_writes.cjs - what the tests of writes through lance_fdw tables (fdw_insert, fdw_delete,
// fdw_update) share: a scratch directory and a lance_fdw server named after the test, foreign
// tables over copies of the generated datasets or over small datasets lancedb makes, and the
// rows lancedb reads.
const fs = require('node:fs');
const path = require('node:path');
const arrow = require('apache-arrow');
const lancedb = require('@lancedb/lancedb');
const h = require('./harness.cjs');
const { encodeRows } = require('./values.cjs');
const { psqlLines, literal } = require('./pg.cjs');

// The rows lancedb reads in the latest version of a dataset (values.cjs encoding).
async function lancedbRows(datasetPath)
{
	const table = await h.openTable(datasetPath);

	return encodeRows(await table.query().toArrow());
}

// The same as sorted JSON strings, to compare as sets.
async function lancedbRowStrings(datasetPath)
{
	return (await lancedbRows(datasetPath)).map((r) => JSON.stringify(r)).sort();
}

const range = (from, to) => Array.from({ length: to - from }, (_, i) => from + i);

// The fixture of test `label` (fdw_insert, ...): its scratch directory, its server
// `${label}_server`, and
//  - importCopy(name): a schema `${label}_${name}` holding one foreign table, named as its
//    dataset, over a copy of generated dataset `name`: { datasetPath, table };
//  - threeFragments(name, options): a dataset of 3 fragments of 10 rows (id bigint 0..29, s
//    text 'value <id>') made by lancedb with createTable options, and the foreign table
//    `${label}_${name}` over it: the dataset's path.
function fdwWriteFixture(label)
{
	const dir = h.scratchDir(label.replace(/_/g, '-'));
	const server = `${label}_server`;

	psqlLines(`DROP SERVER IF EXISTS ${server} CASCADE;
CREATE SERVER ${server} FOREIGN DATA WRAPPER lance_fdw;
`);

	function importCopy(name)
	{
		const copyDir = path.join(dir, name);

		fs.mkdirSync(copyDir);
		const datasetPath = h.copyDataset(name, copyDir);

		psqlLines(`DROP SCHEMA IF EXISTS ${label}_${name} CASCADE;
CREATE SCHEMA ${label}_${name};
IMPORT FOREIGN SCHEMA copy FROM SERVER ${server} INTO ${label}_${name}
  OPTIONS (uri ${literal(copyDir)});
`);
		return { datasetPath, table: `${label}_${name}.${name}` };
	}

	async function threeFragments(name, options = {})
	{
		const db = await lancedb.connect(dir);
		const rowsOf = (first) => new arrow.Table({
			id: arrow.vectorFromArray(BigInt64Array.from({ length: 10 }, (_, i) => BigInt(first + i))),
			s: arrow.vectorFromArray(Array.from({ length: 10 }, (_, i) => 'value ' + (first + i)), new arrow.Utf8()),
		});
		const table = await db.createTable(name, rowsOf(0), options);

		await table.add(rowsOf(10));
		await table.add(rowsOf(20));
		psqlLines(`DROP FOREIGN TABLE IF EXISTS ${label}_${name};
CREATE FOREIGN TABLE ${label}_${name} (id bigint, s text) SERVER ${server}
  OPTIONS (uri ${literal(path.join(dir, name + '.lance'))});
`);
		return path.join(dir, name + '.lance');
	}

	return { dir, server, importCopy, threeFragments };
}

module.exports = { fdwWriteFixture, lancedbRows, lancedbRowStrings, range };
