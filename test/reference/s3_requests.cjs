'use strict';
// s3_requests.cjs - the few S3 requests the tests make themselves, to see what lance_parts
// left on the server and to change it under its feet: ListObjectsV2 and ListMultipartUploads
// of a prefix, CreateMultipartUpload, DeleteObject, GetObject (its bytes or a digest), CopyObject (benchmarks), signed with SigV4 here (node's crypto and fetch), independently
// of the extension's own signer.
const crypto = require('node:crypto');

function hmac(key, text)
{
	return crypto.createHmac('sha256', key).update(text, 'utf8').digest();
}

function sha256Hex(text)
{
	return crypto.createHash('sha256').update(text, 'utf8').digest('hex');
}

// RFC 3986 encoding, as SigV4 wants it (encodeURIComponent leaves !'()* alone).
function encode(text)
{
	return encodeURIComponent(text).replace(/[!'()*]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase());
}

// A request on the bucket (key '') or on one of its keys, with the query (an object of
// strings; '' for a valueless one) and extra headers (signed; lowercase names), path style;
// the answer's body, as text or (binary) a Buffer.
async function request(settings, method, key, query, binary = false, extraHeaders = {})
{
	const url = new URL(settings.LP_S3_ENDPOINT);
	const now = new Date().toISOString().replace(/[:-]|\.\d{3}/g, '');
	const day = now.slice(0, 8);
	const canonicalQuery = Object.keys(query).sort().map((k) => encode(k) + '=' + encode(query[k])).join('&');
	const payloadHash = sha256Hex('');
	const canonicalPath = '/' + settings.LP_S3_BUCKET + (key === '' ? '' : '/' + key.split('/').map(encode).join('/'));
	const headers = { ...extraHeaders, host: url.host, 'x-amz-content-sha256': payloadHash, 'x-amz-date': now };
	const signedHeaders = Object.keys(headers).sort().join(';');
	const canonicalRequest = [method, canonicalPath, canonicalQuery,
		Object.keys(headers).sort().map((k) => k + ':' + headers[k] + '\n').join(''),
		signedHeaders, payloadHash].join('\n');
	const scope = day + '/' + settings.LP_S3_REGION + '/s3/aws4_request';
	const toSign = ['AWS4-HMAC-SHA256', now, scope, sha256Hex(canonicalRequest)].join('\n');
	let signingKey = hmac('AWS4' + settings.LP_S3_SECRET_ACCESS_KEY, day);

	for (const part of [settings.LP_S3_REGION, 's3', 'aws4_request'])
		signingKey = hmac(signingKey, part);
	const signature = crypto.createHmac('sha256', signingKey).update(toSign, 'utf8').digest('hex');
	const response = await fetch(url.origin + canonicalPath + '?' + canonicalQuery, {
		method,
		headers: {
			...extraHeaders,
			'x-amz-content-sha256': payloadHash,
			'x-amz-date': now,
			authorization: 'AWS4-HMAC-SHA256 Credential=' + settings.LP_S3_ACCESS_KEY_ID + '/' + scope +
				', SignedHeaders=' + signedHeaders + ', Signature=' + signature,
		},
	});
	const body = Buffer.from(await response.arrayBuffer());

	if (!response.ok)
		throw new Error('S3 ' + method + ' ' + canonicalPath + '?' + canonicalQuery + ': ' + response.status + ' ' + body.toString('utf8'));
	return binary ? body : body.toString('utf8');
}

function tagValues(xml, tag)
{
	return [...xml.matchAll(new RegExp('<' + tag + '>([^<]*)</' + tag + '>', 'g'))].map((m) => m[1]
		.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&apos;/g, "'")
		.replace(/&amp;/g, '&'));
}

// Keys of every object under prefix (a key of the bucket, without s3://bucket/).
async function listKeys(settings, prefix)
{
	const keys = [];
	let token = null;

	for (;;)
	{
		const query = { 'list-type': '2', prefix };

		if (token !== null)
			query['continuation-token'] = token;
		const xml = await request(settings, 'GET', '', query);

		keys.push(...tagValues(xml, 'Key'));
		const next = tagValues(xml, 'NextContinuationToken');

		if (next.length === 0)
			return keys;
		token = next[0];
	}
}

// Keys of the multipart uploads in progress under prefix.
async function listUploads(settings, prefix)
{
	return tagValues(await request(settings, 'GET', '', { uploads: '', prefix }), 'Key');
}

// The bytes the parts of each multipart upload in progress under prefix hold
// (ListParts, one page: the tests' uploads have few parts), by key.
async function uploadedBytes(settings, prefix)
{
	const xml = await request(settings, 'GET', '', { uploads: '', prefix });
	const keys = tagValues(xml, 'Key');
	const ids = tagValues(xml, 'UploadId');
	const bytes = {};

	for (let i = 0; i < keys.length; i++)
	{
		const parts = await request(settings, 'GET', keys[i], { uploadId: ids[i] });

		bytes[keys[i]] = (bytes[keys[i]] ?? 0) + tagValues(parts, 'Size').reduce((sum, size) => sum + Number(size), 0);
	}
	return bytes;
}

// Start a multipart upload at key (CreateMultipartUpload), left for the test to find.
async function startUpload(settings, key)
{
	await request(settings, 'POST', key, { uploads: '' });
}

// Remove the object at key.
async function deleteKey(settings, key)
{
	await request(settings, 'DELETE', key, {});
}

// The bytes of the object at key.
async function getObject(settings, key)
{
	return request(settings, 'GET', key, {}, true);
}

// The SHA-256 (hex) of the object at key.
async function objectSha256(settings, key)
{
	return crypto.createHash('sha256').update(await getObject(settings, key)).digest('hex');
}

// CopyObject of the object at sourceKey to destKey, on the server.
async function copyKey(settings, sourceKey, destKey)
{
	await request(settings, 'PUT', destKey, {}, false, {
		'x-amz-copy-source': '/' + settings.LP_S3_BUCKET + '/' + sourceKey.split('/').map(encode).join('/'),
	});
}

// SQL that adds to the temporary table io (label text, sent bigint, received bigint) the bytes
// the backend running it has sent to and received from the S3 server on port, over its TCP
// connections there, measured by the backend itself (ss, run by COPY FROM PROGRAM, whose
// shell's parent is the backend). The difference of two such rows is what the statements
// between them exchanged, when they kept their connections open.
function backendTrafficSql(label, port)
{
	const awk = 'index($0, pid) { own = 1; next } ' +
		'own { for (i = 1; i <= NF; i++) { split($i, kv, ":"); if (kv[1] == "bytes_sent") s += kv[2]; if (kv[1] == "bytes_received") r += kv[2] } own = 0 } ' +
		'END { print label "\\t" s + 0 "\\t" r + 0 }';

	return 'COPY io FROM PROGRAM $cmd$ss -tinpH state established "( dport = :' + port + ' )" | awk -v pid="pid=$PPID," -v label=' +
		label + " '" + awk + "'$cmd$;\n";
}

module.exports = { listKeys, listUploads, uploadedBytes, startUpload, deleteKey, getObject, objectSha256, copyKey, backendTrafficSql };
