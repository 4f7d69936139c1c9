'use strict';
// concat_files, the raw file-level form of assembly: status written / reused / unsupported
// from SQL and the footer of what it writes (file_info, file_schema, file_pages).  Its output
// is byte-identical to what assemble writes from the same parts, and that file, committed
// into a copy of the dataset, reads back in lancedb as the inputs' rows.  Refusals and errors
// leave no file in the output directory.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const h = require('./harness.cjs');

const dir = h.scratchDir('concat-files');

function concatFiles(output, inputs, expectedRows)
{
	return h.sqlRows('SELECT * FROM lance_parts.concat_files(' + h.literal(output) + ', ' +
		h.sqlTextArray(inputs) + (expectedRows ? ', ' + h.sqlBigintArray(expectedRows) : '') + ')')[0];
}

function fileInfo(file)
{
	return h.sqlRows('SELECT * FROM lance_parts.file_info(' + h.literal(file) + ')')[0];
}

function fileSchema(file)
{
	return h.sqlRows('SELECT * FROM lance_parts.file_schema(' + h.literal(file) + ')');
}

// Values per physical column (the sum of its page lengths).
function columnRows(file)
{
	return h.sqlRows('SELECT column_index, sum(num_rows)::bigint AS n FROM lance_parts.file_pages(' +
		h.literal(file) + ') GROUP BY 1 ORDER BY 1').map((r) => Number(r.n));
}

function inputsOf(name, dataset)
{
	return h.dataFiles(name).map((f) => ({ path: path.join(dataset, 'data', f.file), rows: f.num_rows, fragment: f.fragment_id }));
}

for (const version of ['2_0', '2_1', '2_2', '2_3'])
{
	const name = 'types_' + version + '_v2';

	test(name + ': concat_files writes the file assemble writes, and lancedb reads it', async () => {
		const info = h.datasetInfo(name);
		const dataset = h.copyDataset(name, dir);
		const inputs = inputsOf(name, dataset).reverse();
		const output = path.join(dir, 'concat_' + version + '.lance');
		const result = concatFiles(output, inputs.map((p) => p.path), inputs.map((p) => p.rows));

		assert.deepEqual({ ...result, num_rows: Number(result.num_rows), size_bytes: Number(result.size_bytes) }, {
			status: 'written', reason: null, path: output, version: info.file_version,
			num_rows: info.num_rows, size_bytes: fs.statSync(output).size,
		});
		const first = fileInfo(inputs[0].path);
		const out = fileInfo(output);

		assert.deepEqual(out, { ...first, num_rows: info.num_rows, size_bytes: fs.statSync(output).size });
		assert.deepEqual(fileSchema(output), fileSchema(inputs[0].path));
		// Each column holds the values of all inputs (rows; items for 2.0 list item columns).
		const perInput = inputs.map((p) => columnRows(p.path));

		assert.deepEqual(columnRows(output), perInput[0].map((_, c) => perInput.reduce((n, rows) => n + rows[c], 0)),
			'values of every column');
		assert.equal(columnRows(output)[0], info.num_rows);

		// assemble writes the same bytes; committed, lancedb reads them as the inputs' rows.
		const target = h.createTarget(dataset);
		const assembled = h.sqlRows('SELECT * FROM lance_parts.assemble(' + h.sqlJsonb(target) + ', ' +
			h.sqlTextArray(inputs.map((p) => p.path)) + ')')[0];

		assert.equal(assembled.status, 'written');
		assert.ok(fs.readFileSync(assembled.path).equals(fs.readFileSync(output)), 'concat_files output = assembled file');
		const committed = h.sqlRows('SELECT * FROM lance_parts.commit(' + h.sqlJsonb(target) + ')')[0];
		const table = await h.openTable(dataset);
		const { schema, fragments } = await h.readFragments(table);
		const expected = h.expectedFragments(name);

		h.assertRowsEqual(schema, fragments.get(Number(committed.fragment_id)),
			inputs.flatMap((p) => expected.get(p.fragment)), 'committed concatenation');
	});
}

test('concat_files of one input onto itself is reused: nothing copied or created', () => {
	const name = 'types_2_2_v2';
	const input = path.join(h.copyDataset(name, path.join(dir, 'reused')), 'data', h.dataFiles(name)[1].file);
	const before = fs.statSync(input);
	const listing = fs.readdirSync(path.dirname(input)).sort();
	const result = concatFiles(input, [input], [h.dataFiles(name)[1].num_rows]);
	const after = fs.statSync(input);

	assert.equal(result.status, 'reused');
	assert.equal(result.path, input);
	assert.equal(Number(result.num_rows), h.dataFiles(name)[1].num_rows);
	assert.deepEqual([after.ino, after.size, after.mtimeMs], [before.ino, before.size, before.mtimeMs]);
	assert.deepEqual(fs.readdirSync(path.dirname(input)).sort(), listing, 'no file created');
});

test('concat_files refusals (unsupported) write nothing', () => {
	const file = (name, i) => path.join(h.TESTDATA, name + '.lance', 'data', h.dataFiles(name)[i].file);
	const outDir = fs.mkdtempSync(path.join(dir, 'refused-'));
	const cases = [
		['version_mismatch', [file('types_2_2_v2', 0), file('types_2_1_v2', 1)]],
		['version_mismatch', [file('types_2_0_v1', 0), file('types_2_3_v1', 0)]],
		['schema_mismatch', [file('types_2_2_v2', 0), file('multipage_2_2', 0)]],
		['legacy_version', [file('types_legacy_v2', 0), file('types_legacy_v2', 1)]],
	];

	for (const [reason, inputs] of cases)
	{
		const output = path.join(outDir, reason + '.lance');
		const result = concatFiles(output, inputs);

		assert.equal(result.status, 'unsupported', reason);
		assert.equal(result.reason, reason);
		assert.equal(result.num_rows, null);
		assert.deepEqual(fs.readdirSync(outDir), [], 'no output or temporary file after ' + reason);
	}
});

test('concat_files errors (existing output, wrong expected rows) write nothing', () => {
	const name = 'types_2_3_v2';
	const inputs = h.dataFiles(name).map((f) => path.join(h.TESTDATA, name + '.lance', 'data', f.file));
	const outDir = fs.mkdtempSync(path.join(dir, 'errors-'));
	const existing = path.join(outDir, 'existing.lance');

	fs.writeFileSync(existing, 'not replaced');
	assert.throws(() => concatFiles(existing, inputs), /already exists/);
	assert.equal(fs.readFileSync(existing, 'utf8'), 'not replaced');
	fs.unlinkSync(existing);

	assert.throws(() => concatFiles(path.join(outDir, 'rows.lance'), inputs, [300, 171, 45]), /170|171/);
	assert.deepEqual(fs.readdirSync(outDir), [], 'no output or temporary file');
});
