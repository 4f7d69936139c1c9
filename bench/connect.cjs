'use strict';
// The reference implementation's connection to a benchmark's datasets: a local directory,
// or an s3:// URI with the storage options bench/s3.sh puts in LP_BENCH_STORAGE_OPTIONS
// (JSON: endpoint, credentials, region).
const lancedb = require('@lancedb/lancedb');

function connect(dir)
{
	const options = process.env.LP_BENCH_STORAGE_OPTIONS;

	return lancedb.connect(dir, options ? { storageOptions: JSON.parse(options) } : {});
}

module.exports = { connect };
