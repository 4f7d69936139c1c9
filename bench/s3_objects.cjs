'use strict';
// The S3 requests bench/s3.sh makes itself, on the server of the LP_S3_* settings
// (scripts/s3-server.sh), through test/reference/s3_requests.cjs:
//
//   node s3_objects.cjs list PREFIX            every key under PREFIX, one a line
//   node s3_objects.cjs copy PREFIX DEST N     CopyObject of every key under PREFIX to
//                                              DEST + its name, N requests at a time;
//                                              prints {"seconds": S, "objects": K}
//   node s3_objects.cjs delete PREFIX          DeleteObject of every key under PREFIX
const s3 = require('../test/reference/s3_requests.cjs');

const settings = process.env;

async function main()
{
	const [command, prefix, dest, concurrencyArg] = process.argv.slice(2);
	const keys = await s3.listKeys(settings, prefix);

	if (command === 'list')
		process.stdout.write(keys.map((k) => k + '\n').join(''));
	else if (command === 'copy')
	{
		const pending = [...keys];
		const started = process.hrtime.bigint();
		const copier = async () => {
			for (let key = pending.shift(); key !== undefined; key = pending.shift())
				await s3.copyKey(settings, key, dest + key.slice(key.lastIndexOf('/') + 1));
		};

		await Promise.all(Array.from({ length: Number(concurrencyArg) }, copier));
		process.stdout.write(JSON.stringify({ seconds: Number(process.hrtime.bigint() - started) / 1e9,
			objects: keys.length }) + '\n');
	}
	else if (command === 'delete')
		for (const key of keys)
			await s3.deleteKey(settings, key);
	else
		throw new Error('usage: node s3_objects.cjs list PREFIX | copy PREFIX DEST N | delete PREFIX');
}

main().catch((e) => {
	process.stderr.write(String(e.stack || e) + '\n');
	process.exit(1);
});
