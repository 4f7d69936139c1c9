/*
 * test_s3_xml.c - the XML of S3: response bodies as AWS and Ceph RGW send
 * them, Error bodies for every code the object-storage work meets, malformed
 * and oversized documents, and the CompleteMultipartUpload request written
 * and read back.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/lp_alloc.h"
#include "io/lp_s3_xml.h"
#include "lp_test.h"

#define AWS_DECLARATION "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
#define AWS_NS " xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\""

static LpS3Document *
parse(const char *body, LpS3DocumentKind expected)
{
	LpS3Document *doc = NULL;
	LpError		err;

	lp_error_clear(&err);
	if (!lp_s3_xml_parse(body, strlen(body), expected, &doc, &err))
		LP_CHECK_MSG(false, "parse failed: %.150s", err.message);
	return doc;
}

/* body (len bytes) must be refused as corrupt with a message containing what */
static void
check_refused_len(const char *body, size_t len, LpS3DocumentKind expected, const char *what)
{
	LpS3Document *doc = (LpS3Document *) 1;
	LpError		err;

	lp_error_clear(&err);
	LP_CHECK_MSG(!lp_s3_xml_parse(body, len, expected, &doc, &err), "accepted: %.200s", body);
	LP_CHECK(doc == NULL);
	LP_CHECK_MSG(err.code == LP_ERR_CORRUPT, "code %.150s for %.200s", lp_error_code_name(err.code), body);
	LP_CHECK_MSG(strstr(err.message, what) != NULL, "message \"%.150s\" lacks \"%.150s\"", err.message, what);
}

static void
check_refused(const char *body, LpS3DocumentKind expected, const char *what)
{
	check_refused_len(body, strlen(body), expected, what);
}

LP_TEST(s3_xml_list_objects_aws)
{
	const char *body = AWS_DECLARATION
		"<ListBucketResult" AWS_NS "><Name>bucket</Name><Prefix>ds/_versions/</Prefix>"
		"<NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken>"
		"<KeyCount>2</KeyCount><MaxKeys>2</MaxKeys><Delimiter>/</Delimiter><IsTruncated>true</IsTruncated>"
		"<Contents><Key>ds/_versions/18446744073709551614.manifest</Key>"
		"<LastModified>2024-05-01T12:34:56.789Z</LastModified>"
		"<ETag>&quot;d41d8cd98f00b204e9800998ecf8427e&quot;</ETag><ChecksumAlgorithm>CRC32</ChecksumAlgorithm>"
		"<Size>1234</Size><StorageClass>STANDARD</StorageClass></Contents>"
		"<Contents><Key>ds/_versions/18446744073709551615.manifest</Key>"
		"<LastModified>2026-12-01T20:00:00.000Z</LastModified><ETag>\"abc-2\"</ETag>"
		"<Size>18446744073709551615</Size><StorageClass>STANDARD</StorageClass></Contents>"
		"</ListBucketResult>";
	LpS3Document *doc = parse(body, LP_S3_LIST_OBJECTS);
	LpS3ListObjects *list;

	if (doc == NULL)
		return;
	LP_CHECK(doc->kind == LP_S3_LIST_OBJECTS);
	list = &doc->list_objects;
	LP_CHECK(list->is_truncated);
	LP_CHECK_STR(list->next_continuation_token, "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=");
	LP_CHECK(list->has_key_count);
	LP_CHECK_EQ_U64(list->key_count, 2);
	LP_CHECK_EQ_U64(list->num_objects, 2);
	LP_CHECK_EQ_U64(list->num_common_prefixes, 0);
	LP_CHECK_STR(list->objects[0].key, "ds/_versions/18446744073709551614.manifest");
	LP_CHECK_EQ_U64(list->objects[0].size, 1234);
	LP_CHECK_EQ_U64(list->objects[0].last_modified.seconds, 1714566896);
	LP_CHECK_EQ_U64(list->objects[0].last_modified.microseconds, 789000);
	LP_CHECK_STR(list->objects[0].etag, "\"d41d8cd98f00b204e9800998ecf8427e\"");
	LP_CHECK_EQ_U64(list->objects[1].size, UINT64_MAX);
	LP_CHECK_EQ_U64(list->objects[1].last_modified.seconds, 1796155200);
	LP_CHECK_EQ_U64(list->objects[1].last_modified.microseconds, 0);
	LP_CHECK_STR(list->objects[1].etag, "\"abc-2\"");
	lp_s3_xml_free(doc);
}

/* Ceph RGW 16: Owner and Type in every entry, KeyCount last, escaped and unicode keys */
LP_TEST(s3_xml_list_objects_rgw)
{
	const char *body = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>"
		"<ListBucketResult" AWS_NS "><Name>lance</Name><Prefix>ds/</Prefix><MaxKeys>1000</MaxKeys>"
		"<Delimiter>/</Delimiter><IsTruncated>false</IsTruncated>"
		"<Contents><Key>ds/a&amp;b &lt;c&gt; &apos;d&apos;.lance</Key>"
		"<LastModified>2026-12-01T20:00:00.123Z</LastModified>"
		"<ETag>&quot;9b2cf535f27731c974343645a3985328&quot;</ETag><Size>42</Size>"
		"<StorageClass>STANDARD</StorageClass><Owner><ID>tester</ID><DisplayName>Tester</DisplayName></Owner>"
		"<Type>Normal</Type></Contents>"
		"<Contents><Key>ds/\xc3\xa9t\xc3\xa9-&#x1F600;-&#233;-&#20013;.lance</Key>"
		"<LastModified>2024-02-29T00:00:00.000Z</LastModified><ETag>&quot;x&quot;</ETag><Size>0</Size>"
		"<StorageClass>STANDARD</StorageClass><Owner><ID>tester</ID><DisplayName>Tester</DisplayName></Owner>"
		"<Type>Normal</Type></Contents>"
		"<CommonPrefixes><Prefix>ds/_transactions/</Prefix></CommonPrefixes>"
		"<CommonPrefixes><Prefix>ds/_versions/</Prefix></CommonPrefixes>"
		"<KeyCount>4</KeyCount></ListBucketResult>";
	LpS3Document *doc = parse(body, LP_S3_LIST_OBJECTS);
	LpS3ListObjects *list;

	if (doc == NULL)
		return;
	list = &doc->list_objects;
	LP_CHECK(!list->is_truncated);
	LP_CHECK(list->next_continuation_token == NULL);
	LP_CHECK_EQ_U64(list->key_count, 4);
	LP_CHECK_EQ_U64(list->num_objects, 2);
	LP_CHECK_STR(list->objects[0].key, "ds/a&b <c> 'd'.lance");
	LP_CHECK_EQ_U64(list->objects[0].last_modified.microseconds, 123000);
	LP_CHECK_STR(list->objects[1].key, "ds/\xc3\xa9t\xc3\xa9-\xf0\x9f\x98\x80-\xc3\xa9-\xe4\xb8\xad.lance");
	LP_CHECK_EQ_U64(list->objects[1].size, 0);
	LP_CHECK_EQ_U64(list->objects[1].last_modified.seconds, 1709164800);
	LP_CHECK_EQ_U64(list->num_common_prefixes, 2);
	LP_CHECK_STR(list->common_prefixes[0], "ds/_transactions/");
	LP_CHECK_STR(list->common_prefixes[1], "ds/_versions/");
	lp_s3_xml_free(doc);
}

/* no declaration, no namespace, empty elements in both forms, no KeyCount */
LP_TEST(s3_xml_list_objects_empty)
{
	LpS3Document *doc = parse("<ListBucketResult><Name>b</Name><Prefix/><MaxKeys>1000</MaxKeys>"
							  "<StartAfter></StartAfter><IsTruncated>false</IsTruncated></ListBucketResult>",
							  LP_S3_LIST_OBJECTS);

	if (doc == NULL)
		return;
	LP_CHECK_EQ_U64(doc->list_objects.num_objects, 0);
	LP_CHECK(doc->list_objects.objects == NULL);
	LP_CHECK_EQ_U64(doc->list_objects.num_common_prefixes, 0);
	LP_CHECK(!doc->list_objects.has_key_count);
	LP_CHECK(!doc->list_objects.is_truncated);
	lp_s3_xml_free(doc);

	/* an object without ETag is read, the ETag NULL */
	doc = parse("<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key>k</Key><Size>1</Size>"
				"<LastModified>1970-01-01T00:00:00Z</LastModified></Contents></ListBucketResult>",
				LP_S3_LIST_OBJECTS);
	if (doc == NULL)
		return;
	LP_CHECK(doc->list_objects.objects[0].etag == NULL);
	LP_CHECK_EQ_U64(doc->list_objects.objects[0].last_modified.seconds, 0);
	lp_s3_xml_free(doc);
}

LP_TEST(s3_xml_list_objects_refused)
{
	/* a truncated listing must say where to go on */
	check_refused("<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>",
				  LP_S3_LIST_OBJECTS, "<NextContinuationToken> in <ListBucketResult> at byte 0 is missing");
	check_refused("<ListBucketResult><IsTruncated>true</IsTruncated><NextContinuationToken/>"
				  "</ListBucketResult>", LP_S3_LIST_OBJECTS, "NextContinuationToken");
	check_refused("<ListBucketResult><Name>b</Name></ListBucketResult>", LP_S3_LIST_OBJECTS,
				  "<IsTruncated> in <ListBucketResult> at byte 0 is missing");
	check_refused("<ListBucketResult><IsTruncated>yes</IsTruncated></ListBucketResult>",
				  LP_S3_LIST_OBJECTS, "neither \"true\" nor \"false\"");
	check_refused("<ListBucketResult><IsTruncated>false</IsTruncated><IsTruncated>false</IsTruncated>"
				  "</ListBucketResult>", LP_S3_LIST_OBJECTS, "<IsTruncated> in <ListBucketResult> at byte 0 appears more than once");
	check_refused("<ListBucketResult><IsTruncated>false</IsTruncated><KeyCount>x</KeyCount></ListBucketResult>",
				  LP_S3_LIST_OBJECTS, "<KeyCount> in <ListBucketResult> at byte 0 is not a number");
	check_refused("<ListBucketResult><IsTruncated>false</IsTruncated><CommonPrefixes/></ListBucketResult>",
				  LP_S3_LIST_OBJECTS, "<Prefix> in <CommonPrefixes> at byte 50 is missing");
}

/* URL-encoded keys would name other objects: such listings are refused, not misread */
LP_TEST(s3_xml_encoded_keys_refused)
{
	static const char *const bodies[] = {
		"<ListBucketResult><EncodingType>url</EncodingType><IsTruncated>false</IsTruncated>"
		"<Contents><Key>a%26b</Key><Size>1</Size><LastModified>2024-05-01T12:34:56Z</LastModified></Contents>"
		"</ListBucketResult>",
		"<ListMultipartUploadsResult><EncodingType>url</EncodingType><IsTruncated>false</IsTruncated>"
		"</ListMultipartUploadsResult>",
	};
	static const LpS3DocumentKind kinds[] = {LP_S3_LIST_OBJECTS, LP_S3_LIST_MULTIPART_UPLOADS};

	for (int i = 0; i < 2; i++)
	{
		LpS3Document *doc = NULL;
		LpError		err;

		LP_CHECK(!lp_s3_xml_parse(bodies[i], strlen(bodies[i]), kinds[i], &doc, &err));
		LP_CHECK(doc == NULL);
		LP_CHECK(err.code == LP_ERR_UNSUPPORTED);
		LP_CHECK(strstr(err.message, "with keys in encoding \"url\" is not supported") != NULL);
	}
}

/* One Contents entry with the given inner elements, to test each field. */
static void
check_entry_refused(const char *inner, const char *what)
{
	char		body[1024];

	snprintf(body, sizeof(body),
			 "<ListBucketResult><IsTruncated>false</IsTruncated><Contents>%s</Contents></ListBucketResult>",
			 inner);
	check_refused(body, LP_S3_LIST_OBJECTS, what);
}

static uint64_t
entry_size(const char *size_text)
{
	char		body[1024];
	LpS3Document *doc;
	uint64_t	size;

	snprintf(body, sizeof(body),
			 "<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key>k</Key><Size>%s</Size>"
			 "<LastModified>2024-05-01T12:34:56Z</LastModified></Contents></ListBucketResult>", size_text);
	doc = parse(body, LP_S3_LIST_OBJECTS);
	if (doc == NULL)
		return 0;
	size = doc->list_objects.objects[0].size;
	lp_s3_xml_free(doc);
	return size;
}

LP_TEST(s3_xml_object_fields)
{
	const char *time = "<LastModified>2024-05-01T12:34:56Z</LastModified>";
	char		inner[512];

	LP_CHECK_EQ_U64(entry_size("18446744073709551615"), UINT64_MAX);
	LP_CHECK_EQ_U64(entry_size("0007"), 7);
	LP_CHECK_EQ_U64(entry_size(" 7\n"), 7);

	snprintf(inner, sizeof(inner), "<Key>k</Key><Size>18446744073709551616</Size>%s", time);
	check_entry_refused(inner, "<Size> in <Contents> at byte 50 is a number beyond 2^64-1");
	snprintf(inner, sizeof(inner), "<Key>k</Key><Size>99999999999999999999999</Size>%s", time);
	check_entry_refused(inner, "beyond 2^64-1");
	snprintf(inner, sizeof(inner), "<Key>k</Key><Size>12a</Size>%s", time);
	check_entry_refused(inner, "<Size> in <Contents> at byte 50 is not a number");
	snprintf(inner, sizeof(inner), "<Key>k</Key><Size>-1</Size>%s", time);
	check_entry_refused(inner, "is not a number");
	snprintf(inner, sizeof(inner), "<Key>k</Key><Size>+1</Size>%s", time);
	check_entry_refused(inner, "is not a number");
	snprintf(inner, sizeof(inner), "<Key>k</Key><Size></Size>%s", time);
	check_entry_refused(inner, "is not a number");
	snprintf(inner, sizeof(inner), "<Key>k</Key><Size>1 2</Size>%s", time);
	check_entry_refused(inner, "is not a number");
	snprintf(inner, sizeof(inner), "<Key>k</Key>%s", time);
	check_entry_refused(inner, "<Size> in <Contents> at byte 50 is missing");
	snprintf(inner, sizeof(inner), "<Size>1</Size>%s", time);
	check_entry_refused(inner, "<Key> in <Contents> at byte 50 is missing");
	snprintf(inner, sizeof(inner), "<Key></Key><Size>1</Size>%s", time);
	check_entry_refused(inner, "<Key> in <Contents> at byte 50 is empty");
	snprintf(inner, sizeof(inner), "<Key>a</Key><Key>b</Key><Size>1</Size>%s", time);
	check_entry_refused(inner, "<Key> in <Contents> at byte 50 appears more than once");
	snprintf(inner, sizeof(inner), "<Key><Part>a</Part></Key><Size>1</Size>%s", time);
	check_entry_refused(inner, "<Key> in <Contents> at byte 50 holds elements instead of text");
	check_entry_refused("<Key>k</Key><Size>1</Size>", "<LastModified> in <Contents> at byte 50 is missing");
}

/* The instant of timestamp text, read through a CopyPartResult. */
static bool
timestamp_of(const char *text, LpS3Timestamp *result)
{
	char		body[512];
	LpS3Document *doc = NULL;
	LpError		err;
	bool		ok;

	snprintf(body, sizeof(body), "<CopyPartResult><ETag>e</ETag><LastModified>%s</LastModified></CopyPartResult>",
			 text);
	ok = lp_s3_xml_parse(body, strlen(body), LP_S3_COPY_PART, &doc, &err);
	if (ok)
	{
		LP_CHECK(doc->copy.has_last_modified);
		*result = doc->copy.last_modified;
		lp_s3_xml_free(doc);
	}
	else
		LP_CHECK_MSG(err.code == LP_ERR_CORRUPT && strstr(err.message, "is not an ISO-8601 timestamp") != NULL,
					 "%.150s: %.150s", text, err.message);
	return ok;
}

LP_TEST(s3_xml_timestamps)
{
	static const struct
	{
		const char *text;
		int64_t		seconds;
		int32_t		microseconds;
	}			good[] = {
		{"1970-01-01T00:00:00Z", 0, 0},
		{"1970-01-01T00:00:00.000Z", 0, 0},
		{"2011-04-11T20:34:56.000Z", 1302554096, 0},
		{"2010-11-10T20:48:33.123456789Z", 1289422113, 123456},
		{"2010-11-10T20:48:33.5Z", 1289422113, 500000},
		{"2024-02-29T00:00:00Z", 1709164800, 0},
		{"2000-02-29T00:00:00Z", 951868800 - 86400, 0},
		{"9999-12-31T23:59:59Z", 253402300799, 0},
		{"1969-12-31T23:59:59Z", -1, 0},
		{"2024-05-01T14:34:56+02:00", 1714566896, 0},
		{"2024-05-01T07:04:56-05:30", 1714566896, 0},
		{" 2024-05-01T12:34:56Z\n", 1714566896, 0},
	};
	static const char *const bad[] = {
		"", "2024-05-01", "2024-05-01T12:34:56", "2024-05-01 12:34:56Z", "2024-13-01T00:00:00Z",
		"2024-00-01T00:00:00Z", "2024-02-30T00:00:00Z", "2023-02-29T00:00:00Z", "1900-02-29T00:00:00Z",
		"2024-04-31T00:00:00Z", "2024-05-00T00:00:00Z", "2024-05-01T24:00:00Z", "2024-05-01T12:60:00Z",
		"2024-05-01T12:34:60Z", "2024-05-01T12:34:56.Z", "2024-05-01T12:34:56.1", "2024-05-01T12:34:56ZZ",
		"2024-05-01T12:34:56+2:00", "2024-05-01T12:34:56+24:00", "2024-05-01T12:34:56+02:60",
		"2024-05-01T12:34:56z", "2024-5-01T12:34:56Z", "20a4-05-01T12:34:56Z", "Tue, 01 Dec 2026 20:44:14 GMT",
	};
	LpS3Timestamp t;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
	{
		memset(&t, 0xEE, sizeof(t));
		LP_CHECK_MSG(timestamp_of(good[i].text, &t), "refused %.150s", good[i].text);
		LP_CHECK_MSG(t.seconds == good[i].seconds && t.microseconds == good[i].microseconds,
					 "%.150s: %lld.%06d", good[i].text, (long long) t.seconds, (int) t.microseconds);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		LP_CHECK_MSG(!timestamp_of(bad[i], &t), "accepted \"%.150s\"", bad[i]);
}

LP_TEST(s3_xml_multipart_results)
{
	LpS3Document *doc;

	doc = parse(AWS_DECLARATION "<InitiateMultipartUploadResult" AWS_NS "><Bucket>lance</Bucket>"
				"<Key>ds/data/a&amp;b.lance</Key>"
				"<UploadId>VXBsb2FkIElEIGZvciA2aWWpbmcncyBteS1tb3ZpZS5tMnRzIHVwbG9hZA</UploadId>"
				"</InitiateMultipartUploadResult>", LP_S3_INITIATE_MULTIPART);
	if (doc != NULL)
	{
		LP_CHECK(doc->kind == LP_S3_INITIATE_MULTIPART);
		LP_CHECK_STR(doc->initiate.bucket, "lance");
		LP_CHECK_STR(doc->initiate.key, "ds/data/a&b.lance");
		LP_CHECK_STR(doc->initiate.upload_id, "VXBsb2FkIElEIGZvciA2aWWpbmcncyBteS1tb3ZpZS5tMnRzIHVwbG9hZA");
		lp_s3_xml_free(doc);
	}
	/* RGW's upload ids */
	doc = parse("<?xml version=\"1.0\" encoding=\"UTF-8\"?><InitiateMultipartUploadResult" AWS_NS
				"><Tenant></Tenant><Bucket>lance</Bucket><Key>k</Key>"
				"<UploadId>2~vVkvBjkEMP7-yS4LWgQXgwHs1nGk_tS</UploadId></InitiateMultipartUploadResult>",
				LP_S3_INITIATE_MULTIPART);
	if (doc != NULL)
	{
		LP_CHECK_STR(doc->initiate.upload_id, "2~vVkvBjkEMP7-yS4LWgQXgwHs1nGk_tS");
		lp_s3_xml_free(doc);
	}
	check_refused("<InitiateMultipartUploadResult><Bucket>b</Bucket><Key>k</Key><UploadId/>"
				  "</InitiateMultipartUploadResult>", LP_S3_INITIATE_MULTIPART,
				  "<UploadId> in <InitiateMultipartUploadResult> at byte 0 is empty");

	doc = parse(AWS_DECLARATION "<CompleteMultipartUploadResult" AWS_NS
				"><Location>http://127.0.0.1:7480/lance/ds/data/x.lance</Location><Bucket>lance</Bucket>"
				"<Key>ds/data/x.lance</Key><ETag>&quot;3858f62230ac3c915f300c664312c11f-9&quot;</ETag>"
				"</CompleteMultipartUploadResult>", LP_S3_COMPLETE_MULTIPART);
	if (doc != NULL)
	{
		LP_CHECK(doc->kind == LP_S3_COMPLETE_MULTIPART);
		LP_CHECK_STR(doc->complete.location, "http://127.0.0.1:7480/lance/ds/data/x.lance");
		LP_CHECK_STR(doc->complete.bucket, "lance");
		LP_CHECK_STR(doc->complete.key, "ds/data/x.lance");
		LP_CHECK_STR(doc->complete.etag, "\"3858f62230ac3c915f300c664312c11f-9\"");
		lp_s3_xml_free(doc);
	}
	doc = parse("<CompleteMultipartUploadResult><Bucket>b</Bucket><Key>k</Key><ETag>e</ETag>"
				"</CompleteMultipartUploadResult>", LP_S3_COMPLETE_MULTIPART);
	if (doc != NULL)
	{
		LP_CHECK(doc->complete.location == NULL);
		lp_s3_xml_free(doc);
	}
	check_refused("<CompleteMultipartUploadResult><Bucket>b</Bucket><Key>k</Key></CompleteMultipartUploadResult>",
				  LP_S3_COMPLETE_MULTIPART, "<ETag> in <CompleteMultipartUploadResult> at byte 0 is missing");

	/* status 200, and yet an error: the whitespace AWS sends while it works is skipped */
	doc = parse(AWS_DECLARATION "\n\n\n\n<Error><Code>InternalError</Code>"
				"<Message>We encountered an internal error. Please try again.</Message>"
				"<RequestId>656c76696e6727732072657175657374</RequestId>"
				"<HostId>Uuag1LuByRx9e6j5Onimru9pO4ZVKnJ2Qz7/C1NPcfTWAtRPfTaOFg==</HostId></Error>",
				LP_S3_COMPLETE_MULTIPART);
	if (doc != NULL)
	{
		LP_CHECK(doc->kind == LP_S3_ERROR);
		LP_CHECK_STR(doc->error.code, "InternalError");
		LP_CHECK_STR(doc->error.message, "We encountered an internal error. Please try again.");
		LP_CHECK_STR(doc->error.request_id, "656c76696e6727732072657175657374");
		LP_CHECK_STR(doc->error.host_id, "Uuag1LuByRx9e6j5Onimru9pO4ZVKnJ2Qz7/C1NPcfTWAtRPfTaOFg==");
		LP_CHECK(doc->error.key == NULL && doc->error.bucket_name == NULL && doc->error.resource == NULL);
		lp_s3_xml_free(doc);
	}
}

LP_TEST(s3_xml_copy_results)
{
	LpS3Document *doc;

	doc = parse(AWS_DECLARATION "<CopyPartResult" AWS_NS "><LastModified>2011-04-11T20:34:56.000Z</LastModified>"
				"<ETag>\"9b2cf535f27731c974343645a3985328\"</ETag></CopyPartResult>", LP_S3_COPY_PART);
	if (doc != NULL)
	{
		LP_CHECK(doc->kind == LP_S3_COPY_PART);
		LP_CHECK_STR(doc->copy.etag, "\"9b2cf535f27731c974343645a3985328\"");
		LP_CHECK(doc->copy.has_last_modified);
		LP_CHECK_EQ_U64(doc->copy.last_modified.seconds, 1302554096);
		lp_s3_xml_free(doc);
	}
	doc = parse("<CopyObjectResult><ETag>&quot;e&quot;</ETag></CopyObjectResult>", LP_S3_COPY_OBJECT);
	if (doc != NULL)
	{
		LP_CHECK(doc->kind == LP_S3_COPY_OBJECT);
		LP_CHECK_STR(doc->copy.etag, "\"e\"");
		LP_CHECK(!doc->copy.has_last_modified);
		lp_s3_xml_free(doc);
	}
	/* the two copy results are different documents */
	check_refused("<CopyObjectResult><ETag>e</ETag></CopyObjectResult>", LP_S3_COPY_PART,
				  "malformed S3 CopyPartResult document: the root element is <CopyObjectResult>");
	check_refused("<CopyPartResult><LastModified>2011-04-11T20:34:56.000Z</LastModified></CopyPartResult>",
				  LP_S3_COPY_PART, "<ETag> in <CopyPartResult> at byte 0 is missing");
	/* UploadPartCopy can fail after its 200 status line too */
	doc = parse("<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>",
				LP_S3_COPY_PART);
	if (doc != NULL)
	{
		LP_CHECK(doc->kind == LP_S3_ERROR);
		LP_CHECK_STR(doc->error.code, "SlowDown");
		lp_s3_xml_free(doc);
	}
}

LP_TEST(s3_xml_list_multipart_uploads)
{
	const char *aws = AWS_DECLARATION "<ListMultipartUploadsResult" AWS_NS "><Bucket>lance</Bucket>"
		"<KeyMarker></KeyMarker><UploadIdMarker></UploadIdMarker><NextKeyMarker>ds/data/b.lance</NextKeyMarker>"
		"<NextUploadIdMarker>YW55IGlkZWEgd2h5IGVsdmluZydzIHVwbG9hZCBmYWlsZWQ</NextUploadIdMarker>"
		"<Prefix>ds/</Prefix><MaxUploads>2</MaxUploads><IsTruncated>true</IsTruncated>"
		"<Upload><Key>ds/data/a.lance</Key><UploadId>VXBsb2FkIElEIGZvciBlbHZpbmcncyBteS1tb3ZpZS5tMnRzIHVwbG9hZA</UploadId>"
		"<Initiator><ID>arn:aws:iam::111122223333:user/user1-11111a31-17b5-4fb7-9df5-b111111f13de</ID>"
		"<DisplayName>user1-11111a31-17b5-4fb7-9df5-b111111f13de</DisplayName></Initiator>"
		"<Owner><ID>75aa57f09aa0c8caeab4f8c24e99d10f8e7faeebf76c078efc7c6caea54ba06a</ID>"
		"<DisplayName>OwnerDisplayName</DisplayName></Owner><StorageClass>STANDARD</StorageClass>"
		"<Initiated>2010-11-10T20:48:33.000Z</Initiated></Upload>"
		"<Upload><Key>ds/data/b.lance</Key><UploadId>YW55IGlkZWEgd2h5IGVsdmluZydzIHVwbG9hZCBmYWlsZWQ</UploadId>"
		"<StorageClass>STANDARD</StorageClass><Initiated>2024-05-01T12:34:56.000Z</Initiated></Upload>"
		"</ListMultipartUploadsResult>";
	LpS3Document *doc = parse(aws, LP_S3_LIST_MULTIPART_UPLOADS);

	if (doc != NULL)
	{
		LpS3ListUploads *list = &doc->list_uploads;

		LP_CHECK(list->is_truncated);
		LP_CHECK_STR(list->next_key_marker, "ds/data/b.lance");
		LP_CHECK_STR(list->next_upload_id_marker, "YW55IGlkZWEgd2h5IGVsdmluZydzIHVwbG9hZCBmYWlsZWQ");
		LP_CHECK_EQ_U64(list->num_uploads, 2);
		LP_CHECK_STR(list->uploads[0].key, "ds/data/a.lance");
		LP_CHECK_STR(list->uploads[0].upload_id, "VXBsb2FkIElEIGZvciBlbHZpbmcncyBteS1tb3ZpZS5tMnRzIHVwbG9hZA");
		LP_CHECK_EQ_U64(list->uploads[0].initiated.seconds, 1289422113);
		LP_CHECK_EQ_U64(list->uploads[1].initiated.seconds, 1714566896);
		lp_s3_xml_free(doc);
	}
	/* RGW with nothing in progress */
	doc = parse("<?xml version=\"1.0\" encoding=\"UTF-8\"?><ListMultipartUploadsResult" AWS_NS
				"><Bucket>lance</Bucket><NextKeyMarker></NextKeyMarker><NextUploadIdMarker></NextUploadIdMarker>"
				"<MaxUploads>1000</MaxUploads><IsTruncated>false</IsTruncated></ListMultipartUploadsResult>",
				LP_S3_LIST_MULTIPART_UPLOADS);
	if (doc != NULL)
	{
		LP_CHECK_EQ_U64(doc->list_uploads.num_uploads, 0);
		LP_CHECK(!doc->list_uploads.is_truncated);
		LP_CHECK_STR(doc->list_uploads.next_key_marker, "");
		lp_s3_xml_free(doc);
	}
	check_refused("<ListMultipartUploadsResult><IsTruncated>true</IsTruncated><NextKeyMarker/>"
				  "</ListMultipartUploadsResult>", LP_S3_LIST_MULTIPART_UPLOADS,
				  "<NextKeyMarker> in <ListMultipartUploadsResult> at byte 0 is missing or empty in a truncated listing");
	check_refused("<ListMultipartUploadsResult><IsTruncated>false</IsTruncated><Upload><Key>k</Key>"
				  "<UploadId>u</UploadId></Upload></ListMultipartUploadsResult>", LP_S3_LIST_MULTIPART_UPLOADS,
				  "<Initiated> in <Upload> at byte 60 is missing");
	check_refused("<ListMultipartUploadsResult><IsTruncated>false</IsTruncated><Upload><Key>k</Key>"
				  "<UploadId></UploadId><Initiated>2024-05-01T12:34:56Z</Initiated></Upload>"
				  "</ListMultipartUploadsResult>", LP_S3_LIST_MULTIPART_UPLOADS,
				  "<UploadId> in <Upload> at byte 60 is empty");
}

/* ListParts, as AWS writes it, and what a listing of parts must hold. */
LP_TEST(s3_xml_list_parts)
{
	const char *aws = AWS_DECLARATION "<ListPartsResult" AWS_NS "><Bucket>lance</Bucket>"
		"<Key>ds/data/a.lance</Key><UploadId>XXBsb2FkIElEIGZvciBlbHZpbmcncyBteS1tb3ZpZS5tMnRzIHVwbG9hZA</UploadId>"
		"<PartNumberMarker>1</PartNumberMarker><NextPartNumberMarker>3</NextPartNumberMarker>"
		"<MaxParts>2</MaxParts><IsTruncated>true</IsTruncated>"
		"<Part><PartNumber>2</PartNumber><LastModified>2010-11-10T20:48:34.000Z</LastModified>"
		"<ETag>\"7778aef83f66abc1fa1e8477f296d394\"</ETag><Size>10485760</Size></Part>"
		"<Part><PartNumber>3</PartNumber><LastModified>2010-11-10T20:48:33.000Z</LastModified>"
		"<ETag>\"aaaa18db4cc2f85cedef654fccc4a4x8\"</ETag><Size> 10485761 </Size></Part>"
		"<StorageClass>STANDARD</StorageClass></ListPartsResult>";
	static const LpS3ListedPart listed[] = {{2, 10485760}, {3, 10485761}};
	LpS3Document *doc = parse(aws, LP_S3_LIST_PARTS);

	if (doc != NULL)
	{
		LP_CHECK(doc->list_parts.is_truncated && doc->list_parts.next_part_number_marker == 3);
		LP_CHECK_EQ_U64(doc->list_parts.num_parts, sizeof(listed) / sizeof(listed[0]));
		for (size_t i = 0; i < doc->list_parts.num_parts && i < sizeof(listed) / sizeof(listed[0]); i++)
			LP_CHECK_MSG(doc->list_parts.parts[i].part_number == listed[i].part_number &&
						 doc->list_parts.parts[i].size == listed[i].size, "part %zu", i);
		lp_s3_xml_free(doc);
	}
	/* an upload without parts */
	doc = parse("<ListPartsResult><IsTruncated>false</IsTruncated></ListPartsResult>", LP_S3_LIST_PARTS);
	if (doc != NULL)
	{
		LP_CHECK_EQ_U64(doc->list_parts.num_parts, 0);
		LP_CHECK(!doc->list_parts.is_truncated);
		lp_s3_xml_free(doc);
	}
	check_refused("<ListPartsResult><IsTruncated>true</IsTruncated></ListPartsResult>", LP_S3_LIST_PARTS,
				  "<NextPartNumberMarker> in <ListPartsResult> at byte 0 is missing or not between 1 and 10000 in a truncated listing");
	check_refused("<ListPartsResult><IsTruncated>false</IsTruncated><Part><PartNumber>1</PartNumber></Part>"
				  "</ListPartsResult>", LP_S3_LIST_PARTS, "<Size> in <Part> at byte 49 is missing");
	check_refused("<ListPartsResult><IsTruncated>false</IsTruncated><Part><PartNumber>1</PartNumber>"
				  "<Size>-1</Size></Part></ListPartsResult>", LP_S3_LIST_PARTS,
				  "<Size> in <Part> at byte 49 is not a number");
	check_refused("<ListPartsResult><IsTruncated>false</IsTruncated><Part><PartNumber>2</PartNumber>"
				  "<Size>1</Size></Part><Part><PartNumber>2</PartNumber><Size>1</Size></Part></ListPartsResult>",
				  LP_S3_LIST_PARTS, "<PartNumber> in <Part> at byte 102 is not above the previous part's");
	check_refused("<ListPartsResult><IsTruncated>false</IsTruncated><Part><PartNumber>0</PartNumber>"
				  "<Size>1</Size></Part></ListPartsResult>", LP_S3_LIST_PARTS,
				  "<PartNumber> in <Part> at byte 49 is not between 1 and 10000");
}

/* Every code the object-storage work meets, as AWS and as RGW write them. */
LP_TEST(s3_xml_error_codes)
{
	static const char *const codes[] = {
		"AccessDenied", "SignatureDoesNotMatch", "InvalidAccessKeyId", "RequestTimeTooSkewed",
		"XAmzContentSHA256Mismatch", "PreconditionFailed", "EntityTooSmall", "EntityTooLarge",
		"InvalidPart", "InvalidPartOrder", "NoSuchUpload", "NoSuchKey", "NoSuchBucket", "SlowDown",
		"InternalError", "ServiceUnavailable", "InvalidRange", "MissingContentLength", "InvalidArgument",
		"InvalidRequest", "ExpiredToken", "InvalidToken", "BucketAlreadyExists", "ConditionalRequestConflict",
	};

	for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
	{
		char		body[1024];
		LpS3Document *doc;

		snprintf(body, sizeof(body), AWS_DECLARATION "<Error><Code>%s</Code><Message>The message of %s.</Message>"
				 "<Key>ds/_versions/1.manifest</Key><BucketName>lance</BucketName>"
				 "<Resource>/lance/ds/_versions/1.manifest</Resource>"
				 "<RequestId>4442587FB7D0A2F9</RequestId><HostId>host id</HostId></Error>", codes[i], codes[i]);
		doc = parse(body, LP_S3_ERROR);
		if (doc != NULL)
		{
			LP_CHECK(doc->kind == LP_S3_ERROR);
			LP_CHECK_STR(doc->error.code, codes[i]);
			LP_CHECK(strstr(doc->error.message, codes[i]) != NULL);
			LP_CHECK_STR(doc->error.key, "ds/_versions/1.manifest");
			LP_CHECK_STR(doc->error.bucket_name, "lance");
			LP_CHECK_STR(doc->error.resource, "/lance/ds/_versions/1.manifest");
			LP_CHECK_STR(doc->error.request_id, "4442587FB7D0A2F9");
			LP_CHECK_STR(doc->error.host_id, "host id");
			lp_s3_xml_free(doc);
		}
		/* RGW: no declaration break, an empty Message, its request id form */
		snprintf(body, sizeof(body), "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>%s</Code>"
				 "<Message></Message><BucketName>lance</BucketName>"
				 "<RequestId>tx00000a1b2c3d4e5f60718-0065f0a1b2-1234-default</RequestId>"
				 "<HostId>1234-default-default</HostId></Error>", codes[i]);
		doc = parse(body, LP_S3_LIST_OBJECTS);
		if (doc != NULL)
		{
			LP_CHECK(doc->kind == LP_S3_ERROR);
			LP_CHECK_STR(doc->error.code, codes[i]);
			LP_CHECK_STR(doc->error.message, "");
			LP_CHECK(doc->error.key == NULL);
			LP_CHECK_STR(doc->error.request_id, "tx00000a1b2c3d4e5f60718-0065f0a1b2-1234-default");
			lp_s3_xml_free(doc);
		}
	}
	check_refused("<Error><Message>m</Message></Error>", LP_S3_ERROR, "<Code> in <Error> at byte 0 is missing");
	check_refused("<Error><Code> </Code><Code>x</Code></Error>", LP_S3_ERROR, "appears more than once");
	check_refused("<Error><Code></Code></Error>", LP_S3_ERROR, "<Code> in <Error> at byte 0 is empty");
	/* an Error is expected for a failed status: nothing else will do */
	check_refused("<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>", LP_S3_ERROR,
				  "malformed S3 Error document: the root element is <ListBucketResult>");
	check_refused("<html><body>502 Bad Gateway</body></html>", LP_S3_LIST_OBJECTS,
				  "malformed S3 ListBucketResult document: the root element is <html>");
}

/* What the reader accepts and ignores: prefixes, comments, PIs, CDATA, BOM, attributes. */
LP_TEST(s3_xml_syntax_accepted)
{
	static const struct
	{
		const char *body;
		const char *code;
	}			cases[] = {
		{"<s3:Error xmlns:s3=\"http://s3.amazonaws.com/doc/2006-03-01/\"><s3:Code>NoSuchKey</s3:Code></s3:Error>",
		"NoSuchKey"},
		{"\xEF\xBB\xBF<?xml version='1.0' encoding='UTF-8' standalone='yes'?><Error><Code>A</Code></Error>", "A"},
		{"<!-- before --><?pi data?><Error a = 'x' b=\"&lt;&amp;\"\n><!-- in - side --><Code>A<!-- c --><?p?>B"
		"</Code ></Error>\n<!-- after -->\n", "AB"},
		{"<Error><Code><![CDATA[Slow<Down>&amp;]]></Code></Error>", "Slow<Down>&amp;"},
		{"<Error><Code>a<![CDATA[]]>b<![CDATA[c]]></Code></Error>", "abc"},
		{"<Error><Code>a\r\nb\rc\nd&#13;&#xD;&#9;</Code></Error>", "a\nb\nc\nd\r\r\t"},
		{"<Error><Code> padded &#32;</Code></Error>", " padded  "},
		{"<Error>\r\n\t<Code>x</Code>\r\n\t<Extra><Deep><Deeper/></Deep></Extra>\n</Error>", "x"},
		{"<Error><Code>&#65;&#x42;&#0000067;&#x0044;&#x00000045;</Code></Error>", "ABCDE"},
		{"<Error><Code>\xF4\x8F\xBF\xBD&#x10FFFD;\xEE\x80\x80\x7F</Code></Error>",
		"\xF4\x8F\xBF\xBD\xF4\x8F\xBF\xBD\xEE\x80\x80\x7F"},
		{"<Error><Code>x</Code><Error><Code>inner</Code></Error></Error>", "x"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		LpS3Document *doc = parse(cases[i].body, LP_S3_ERROR);

		if (doc == NULL)
			continue;
		LP_CHECK_MSG(strcmp(doc->error.code, cases[i].code) == 0, "case %zu: \"%.150s\"", i, doc->error.code);
		lp_s3_xml_free(doc);
	}
}

LP_TEST(s3_xml_syntax_refused)
{
	static const struct
	{
		const char *body;
		const char *what;
	}			cases[] = {
		{"<Error><Code>X</Code>", "element <Error> at byte 0 is not closed"},
		{"<Error><Code>X", "element <Code> at byte 7 is not closed"},
		{"<Error><Code>X</Cod></Error>", "end tag </Cod> closes <Code> at byte 14"},
		{"<Error><Code>X</Error></Code>", "end tag </Error> closes <Code>"},
		{"<Error><Code>X</Code></Error", "expected \">\" to end an end tag"},
		{"<Error><Code>X</Code></Error>></Error>", "text outside the root element"},
		{"</Error>", "end tag without a start tag at byte 0"},
		{"<Error><Code>A&foo;B</Code></Error>", "unknown entity reference"},
		{"<Error><Code>A&AMP;B</Code></Error>", "unknown entity reference"},
		{"<Error><Code>A & B</Code></Error>", "unterminated or unknown entity reference"},
		{"<Error><Code>A&amp</Code></Error>", "unterminated or unknown entity reference"},
		{"<Error><Code>&#0;</Code></Error>", "character reference to a character XML does not allow"},
		{"<Error><Code>&#1;</Code></Error>", "does not allow"},
		{"<Error><Code>&#xD800;</Code></Error>", "does not allow"},
		{"<Error><Code>&#xFFFE;</Code></Error>", "does not allow"},
		{"<Error><Code>&#x110000;</Code></Error>", "character reference beyond U+10FFFF"},
		{"<Error><Code>&#99999999999;</Code></Error>", "unterminated or unknown entity reference"},
		{"<Error><Code>&#4294967361;</Code></Error>", "beyond U+10FFFF"},
		{"<Error><Code>&#;</Code></Error>", "character reference without digits"},
		{"<Error><Code>&#x;</Code></Error>", "character reference without digits"},
		{"<Error><Code>&#12a;</Code></Error>", "invalid digit in character reference"},
		{"<Error><Code>&#xG;</Code></Error>", "invalid digit in character reference"},
		{"<Error><Code>&#X41;</Code></Error>", "invalid digit in character reference"},
		{"<Error><Code>A\xC3\x28</Code></Error>", "invalid UTF-8 at byte 14"},
		{"<Error><Code>\xC0\xAF</Code></Error>", "invalid UTF-8 at byte 13"},
		{"<Error><Code>\xE0\x80\xAF</Code></Error>", "invalid UTF-8"},
		{"<Error><Code>\xED\xA0\x80</Code></Error>", "invalid UTF-8"},
		{"<Error><Code>\xF4\x90\x80\x80</Code></Error>", "invalid UTF-8"},
		{"<Error><Code>\xF5\x80\x80\x80</Code></Error>", "invalid UTF-8"},
		{"<Error><Code>\x80</Code></Error>", "invalid UTF-8"},
		{"<Error><Code>\xE4\xB8</Code></Error>", "invalid UTF-8"},
		{"<Error><Code>\xE4\xB8", "invalid UTF-8"},
		{"<Error><Code>\x01</Code></Error>", "character U+0001 at byte 13 is not allowed in XML"},
		{"<Error><Code>\x1B[31m</Code></Error>", "character U+001B"},
		{"<Error><Code>\xEF\xBF\xBE</Code></Error>", "character U+FFFE"},
		{"", "the body is empty"},
		{" \n\t", "no root element"},
		{"<?xml version=\"1.0\"?>", "no root element"},
		{"<Error><Code>A</Code></Error><Error/>", "a second root element"},
		{"junk<Error><Code>A</Code></Error>", "text outside the root element"},
		{"<Error><Code>A</Code></Error>junk", "text outside the root element"},
		{"<Error>x<Code>A</Code></Error>", "child element beside text"},
		{"<Error><Code>A</Code>junk</Error>", "text beside child elements"},
		{"<Error><Code>A</Code>&amp;</Error>", "text beside child elements"},
		{"<Error><Code>A</Code><![CDATA[x]]></Error>", "text beside child elements"},
		{"<![CDATA[x]]><Error/>", "CDATA section outside the root element"},
		{"<Error><Code><![CDATA[x]></Code></Error>", "unterminated CDATA section"},
		{"<!DOCTYPE Error [<!ENTITY x \"y\">]><Error><Code>&x;</Code></Error>",
		"document type declarations are not accepted"},
		{"<Error><!ELEMENT x ANY><Code>A</Code></Error>", "unknown markup declaration"},
		{"<Error><!-- a -- b --><Code>A</Code></Error>", "\"--\" inside a comment"},
		{"<Error><!-- a ---><Code>A</Code></Error>", "\"--\" inside a comment"},
		{"<Error><!-- open <Code>A</Code></Error>", "unterminated comment"},
		{"<Error><?pi open <Code>A</Code></Error>", "unterminated processing instruction"},
		{"<Error><? pi?><Code>A</Code></Error>", "expected a processing instruction target"},
		{"<Error><?pi+?><Code>A</Code></Error>", "expected whitespace after the processing instruction target"},
		{"<Error><?xml version=\"1.0\"?><Code>A</Code></Error>", "XML declaration not at the start of the document"},
		{" <?xml version=\"1.0\"?><Error><Code>A</Code></Error>", "XML declaration not at the start"},
		{"<?XML version=\"1.0\"?><?xml version=\"1.0\"?><Error><Code>A</Code></Error>", "XML declaration not at the start"},
		{"<Error a=b><Code>A</Code></Error>", "expected a quoted attribute value"},
		{"<Error a><Code>A</Code></Error>", "expected \"=\" after an attribute name"},
		{"<Error a='<'><Code>A</Code></Error>", "\"<\" in an attribute value"},
		{"<Error a='&bad;'><Code>A</Code></Error>", "unknown entity reference"},
		{"<Error a='x", "unterminated attribute value"},
		{"<Error a='x'b='y'><Code>A</Code></Error>", "expected whitespace, \">\" or \"/>\" in a start tag"},
		{"<Error =''><Code>A</Code></Error>", "expected an attribute name"},
		{"<Error", "unterminated start tag"},
		{"<Error/", "expected whitespace, \">\" or \"/>\" in a start tag"},
		{"<Error><1Code>A</1Code></Error>", "expected an element name after \"<\" at byte 8"},
		{"<Error>< Code>A</Code></Error>", "expected an element name after \"<\""},
		{"<Error><Code>A</ Code></Error>", "expected an element name after \"</\""},
		{"<Error><Code>A<</Code></Error>", "expected an element name after \"<\""},
		{"<Error><s3:>A</s3:></Error>", "element name with an empty local part"},
		{"<Error><Code>A</Code><x:Code>B</x:Code></Error>", "<Code> in <Error> at byte 0 appears more than once"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		check_refused(cases[i].body, LP_S3_ERROR, cases[i].what);
	/* a NUL byte inside the body, not at its end */
	check_refused_len("<Error><Code>A\0B</Code></Error>", sizeof("<Error><Code>A\0B</Code></Error>") - 1,
					  LP_S3_ERROR, "character U+0000 at byte 14");
}

LP_TEST(s3_xml_name_limit)
{
	char		body[1024];
	char		name[300];
	LpS3Document *doc;

	memset(name, 'N', sizeof(name));
	name[256] = '\0';
	snprintf(body, sizeof(body), "<Error><%s/><Code>A</Code></Error>", name);
	doc = parse(body, LP_S3_ERROR);
	lp_s3_xml_free(doc);
	name[256] = 'N';
	name[257] = '\0';
	snprintf(body, sizeof(body), "<Error><%s/><Code>A</Code></Error>", name);
	check_refused(body, LP_S3_ERROR, "name longer than 256 bytes at byte 8");
}

/* An Error document whose Code sits depth elements deep. */
static char *
nested_document(int depth)
{
	char	   *body = malloc(64 + (size_t) depth * 16);
	char	   *p = body;

	p += sprintf(p, "<Error><Code>A</Code>");
	for (int i = 1; i < depth; i++)
		p += sprintf(p, "<E%d>", i);
	for (int i = depth - 1; i >= 1; i--)
		p += sprintf(p, "</E%d>", i);
	sprintf(p, "</Error>");
	return body;
}

LP_TEST(s3_xml_depth_limit)
{
	char	   *body = nested_document(LP_S3_XML_MAX_DEPTH);
	LpS3Document *doc = parse(body, LP_S3_ERROR);

	LP_CHECK(doc != NULL);
	lp_s3_xml_free(doc);
	free(body);
	body = nested_document(LP_S3_XML_MAX_DEPTH + 1);
	check_refused(body, LP_S3_ERROR, "elements nested deeper than 16 levels at byte");
	free(body);
	/* an empty element counts as one level too */
	body = nested_document(LP_S3_XML_MAX_DEPTH);
	{
		char	   *deeper = malloc(strlen(body) + 8);
		char	   *inner = strstr(body, "</E15>");

		memcpy(deeper, body, (size_t) (inner - body));
		strcpy(deeper + (inner - body), "<x/>");
		strcat(deeper, inner);
		check_refused(deeper, LP_S3_ERROR, "elements nested deeper than 16 levels");
		free(deeper);
	}
	free(body);
}

/* An Error document of exactly count elements. */
static char *
wide_document(size_t count)
{
	char	   *body = malloc(64 + count * 4);
	char	   *p = body;

	p += sprintf(p, "<Error><Code>A</Code>");
	for (size_t i = 2; i < count; i++)
	{
		memcpy(p, "<a/>", 4);
		p += 4;
	}
	sprintf(p, "</Error>");
	return body;
}

LP_TEST(s3_xml_element_and_size_limits)
{
	char	   *body = wide_document(LP_S3_XML_MAX_ELEMENTS);
	LpS3Document *doc = parse(body, LP_S3_ERROR);
	const char *small = "<Error><Code>A</Code></Error>";
	size_t		small_len = strlen(small);

	LP_CHECK(doc != NULL);
	lp_s3_xml_free(doc);
	free(body);
	body = wide_document(LP_S3_XML_MAX_ELEMENTS + 1);
	check_refused(body, LP_S3_ERROR, "more than 100000 elements at byte");
	free(body);

	/* the largest body is read, one byte more is not (whitespace after the root) */
	body = malloc(LP_S3_XML_MAX_BODY + 1);
	memcpy(body, small, small_len);
	memset(body + small_len, ' ', LP_S3_XML_MAX_BODY + 1 - small_len);
	{
		LpError		err;

		doc = NULL;
		LP_CHECK(lp_s3_xml_parse(body, LP_S3_XML_MAX_BODY, LP_S3_ERROR, &doc, &err));
		lp_s3_xml_free(doc);
	}
	check_refused_len(body, LP_S3_XML_MAX_BODY + 1, LP_S3_ERROR,
					  "S3 XML document of 16777217 bytes exceeds the limit of 16777216 bytes");
	free(body);
}

/* An allocator that refuses every request from the nth on. */
static int	allocations_left;

static void *
failing_alloc(size_t size, void *context)
{
	(void) context;
	return allocations_left-- > 0 ? malloc(size) : NULL;
}

static void
failing_free(void *pointer, void *context)
{
	(void) context;
	free(pointer);
}

LP_TEST(s3_xml_out_of_memory)
{
	static const LpAllocator allocator = {failing_alloc, failing_free, NULL, NULL};
	const char *body = "<ListBucketResult><IsTruncated>false</IsTruncated>"
		"<Contents><Key>k</Key><Size>1</Size><LastModified>2024-05-01T12:34:56Z</LastModified></Contents>"
		"<CommonPrefixes><Prefix>p/</Prefix></CommonPrefixes></ListBucketResult>";
	bool		succeeded = false;

	/* every allocation in turn fails; each failure is an error, never a crash or leak */
	for (int n = 0; n < 10 && !succeeded; n++)
	{
		LpS3Document *doc = NULL;
		LpError		err;

		allocations_left = n;
		lp_set_allocator(&allocator);
		succeeded = lp_s3_xml_parse(body, strlen(body), LP_S3_LIST_OBJECTS, &doc, &err);
		lp_set_allocator(NULL);
		if (succeeded)
			LP_CHECK_EQ_U64(doc->list_objects.num_objects, 1);
		else
			LP_CHECK_MSG(err.code == LP_ERR_NO_MEMORY, "allocation %d: %.150s", n, err.message);
		lp_s3_xml_free(doc);
	}
	LP_CHECK(succeeded);
}

LP_TEST(s3_xml_complete_request_written)
{
	LpS3Part	parts[] = {{1, "\"a54357aff0632cce46d942af68356b38\""}, {3, "\"0c78aef83f66abc1fa1e8477f296d394\""}};
	char	   *body;
	size_t		len;
	LpError		err;

	LP_CHECK(lp_s3_xml_complete_request(parts, 2, &body, &len, &err));
	LP_CHECK_STR(body, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
				 "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
				 "<Part><PartNumber>1</PartNumber><ETag>&quot;a54357aff0632cce46d942af68356b38&quot;</ETag></Part>"
				 "<Part><PartNumber>3</PartNumber><ETag>&quot;0c78aef83f66abc1fa1e8477f296d394&quot;</ETag></Part>"
				 "</CompleteMultipartUpload>");
	LP_CHECK_EQ_U64(len, strlen(body));
	lp_free(body);
}

LP_TEST(s3_xml_complete_request_round_trip)
{
	static const char *const etags[] = {
		"\"3858f62230ac3c915f300c664312c11f\"", "a&b<c>d'e\"f", "\xc3\xa9\xf0\x9f\x98\x80", "cr\rlf\r\ntab\t",
		"&amp;", "]]>",
	};
	LpS3Part   *parts = malloc(LP_S3_MAX_PARTS * sizeof(LpS3Part));
	char	   *body;
	size_t		len;
	LpError		err;
	LpS3Document *doc = NULL;

	for (uint32_t i = 0; i < LP_S3_MAX_PARTS; i++)
	{
		parts[i].part_number = i + 1;
		parts[i].etag = etags[i % (sizeof(etags) / sizeof(etags[0]))];
	}
	LP_CHECK(lp_s3_xml_complete_request(parts, LP_S3_MAX_PARTS, &body, &len, &err));
	LP_CHECK(lp_s3_xml_parse(body, len, LP_S3_COMPLETE_MULTIPART_REQUEST, &doc, &err));
	if (doc != NULL)
	{
		LP_CHECK(doc->kind == LP_S3_COMPLETE_MULTIPART_REQUEST);
		LP_CHECK_EQ_U64(doc->complete_request.num_parts, LP_S3_MAX_PARTS);
		for (uint32_t i = 0; i < LP_S3_MAX_PARTS && i < doc->complete_request.num_parts; i++)
		{
			LP_CHECK_EQ_U64(doc->complete_request.parts[i].part_number, parts[i].part_number);
			if (strcmp(doc->complete_request.parts[i].etag, parts[i].etag) != 0)
			{
				LP_CHECK_MSG(false, "part %u: \"%.150s\"", i + 1, doc->complete_request.parts[i].etag);
				break;
			}
		}
		lp_s3_xml_free(doc);
	}
	lp_free(body);

	/* part numbers with gaps */
	parts[0].part_number = 7;
	parts[1].part_number = 10000;
	LP_CHECK(lp_s3_xml_complete_request(parts, 2, &body, &len, &err));
	doc = NULL;
	LP_CHECK(lp_s3_xml_parse(body, len, LP_S3_COMPLETE_MULTIPART_REQUEST, &doc, &err));
	if (doc != NULL)
	{
		LP_CHECK_EQ_U64(doc->complete_request.parts[0].part_number, 7);
		LP_CHECK_EQ_U64(doc->complete_request.parts[1].part_number, 10000);
		lp_s3_xml_free(doc);
	}
	lp_free(body);
	free(parts);
}

static void
check_request_refused(const LpS3Part *parts, size_t num_parts, const char *what)
{
	char	   *body = (char *) 1;
	size_t		len = 1;
	LpError		err;

	LP_CHECK(!lp_s3_xml_complete_request(parts, num_parts, &body, &len, &err));
	LP_CHECK(body == NULL && len == 0);
	LP_CHECK_MSG(err.code == LP_ERR_INVALID_ARGUMENT && strstr(err.message, what) != NULL,
				 "%.150s: %.150s", what, err.message);
}

LP_TEST(s3_xml_complete_request_refused)
{
	LpS3Part	parts[3] = {{1, "a"}, {2, "b"}, {3, "c"}};
	LpS3Part	bad;

	check_request_refused(parts, 0, "a multipart upload has 1 to 10000 parts, not 0");
	check_request_refused(parts, LP_S3_MAX_PARTS + 1, "1 to 10000 parts, not 10001");
	parts[1].part_number = 1;
	check_request_refused(parts, 3, "part number 1 follows part number 1: parts must be in ascending order");
	parts[1].part_number = 4;
	check_request_refused(parts, 3, "part number 3 follows part number 4");
	parts[1].part_number = 2;
	bad = (LpS3Part) {0, "a"};
	check_request_refused(&bad, 1, "part number 0 is not between 1 and 10000");
	bad = (LpS3Part) {10001, "a"};
	check_request_refused(&bad, 1, "part number 10001 is not between 1 and 10000");
	bad = (LpS3Part) {1, ""};
	check_request_refused(&bad, 1, "part number 1 has no ETag");
	bad = (LpS3Part) {1, NULL};
	check_request_refused(&bad, 1, "part number 1 has no ETag");
	bad = (LpS3Part) {1, "a\x01"};
	check_request_refused(&bad, 1, "the ETag of part number 1 is not UTF-8 text XML can carry");
	bad = (LpS3Part) {1, "a\xC3"};
	check_request_refused(&bad, 1, "is not UTF-8 text XML can carry");

	/* the reader of the request is as strict */
	check_refused("<CompleteMultipartUpload></CompleteMultipartUpload>", LP_S3_COMPLETE_MULTIPART_REQUEST,
				  "<Part> in <CompleteMultipartUpload> at byte 0 is missing");
	check_refused("<CompleteMultipartUpload><Part><PartNumber>2</PartNumber><ETag>a</ETag></Part>"
				  "<Part><PartNumber>2</PartNumber><ETag>b</ETag></Part></CompleteMultipartUpload>",
				  LP_S3_COMPLETE_MULTIPART_REQUEST, "<PartNumber> in <Part> at byte 78 is not above the previous part's");
	check_refused("<CompleteMultipartUpload><Part><PartNumber>0</PartNumber><ETag>a</ETag></Part>"
				  "</CompleteMultipartUpload>", LP_S3_COMPLETE_MULTIPART_REQUEST,
				  "<PartNumber> in <Part> at byte 25 is not between 1 and 10000");
	check_refused("<CompleteMultipartUpload><Part><PartNumber>1</PartNumber></Part></CompleteMultipartUpload>",
				  LP_S3_COMPLETE_MULTIPART_REQUEST, "<ETag> in <Part> at byte 25 is missing");
}
