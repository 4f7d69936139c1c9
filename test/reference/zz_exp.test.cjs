'use strict';
const test = require('node:test');
const arrow = require('apache-arrow');
const lancedb = require('@lancedb/lancedb');
const { startS3Server } = require('./s3_server.cjs');
const s3 = require('./s3_requests.cjs');
const { settings, storageOptions, root } = startS3Server('exp-server');
test('hint', async () => {
	for (const scheme of ['v1', 'v2']) {
		const db = await lancedb.connect(root('exp'), { storageOptions });
		const t = await db.createTable('t_' + scheme, arrow.tableFromArrays({ x: Float64Array.from([1, 2]) }),
			{ storageOptions: { new_table_enable_v2_manifest_paths: scheme === 'v2' ? 'true' : 'false' } });
		await t.add(arrow.tableFromArrays({ x: Float64Array.from([3]) }));
		console.log(scheme, await s3.listKeys(settings, 'exp/t_' + scheme + '.lance/_versions/'));
	}
	const local = await lancedb.connect(process.env.LP_SCRATCH + '/loc');
	const t = await local.createTable('l', arrow.tableFromArrays({ x: Float64Array.from([1, 2]) }));
	await t.add(arrow.tableFromArrays({ x: Float64Array.from([3]) }));
	console.log(require('fs').readdirSync(process.env.LP_SCRATCH + '/loc/l.lance/_versions'));
});
