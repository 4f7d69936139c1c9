/*
 * test_blob_external.c - lp_blob_external: the blob_uri of External
 * descriptors checked and classified (absolute local paths and file URIs,
 * s3:// URIs, paths relative to a base), names that could lead elsewhere
 * refused, and payload ranges checked against the object's size.
 */
#include <string.h>

#include "base/lp_alloc.h"
#include "dataset/lp_blob_external.h"
#include "lp_test.h"

/* Whether uri with blob_id gives form and location. */
static bool
located(const char *uri, uint32_t blob_id, LpBlobExternalForm form, const char *location)
{
	LpBlobExternalForm got;
	char	   *path;
	LpError		err;
	bool		ok;

	if (!lp_blob_external_location(uri, strlen(uri), blob_id, &got, &path, &err))
		return false;
	ok = got == form && strcmp(path, location) == 0;
	lp_free(path);
	return ok;
}

/* Whether uri with blob_id is refused with code, giving no location. */
static bool
refused(const char *uri, size_t len, uint32_t blob_id, LpErrorCode code)
{
	LpBlobExternalForm form;
	char	   *path = (char *) "untouched";
	LpError		err;

	return !lp_blob_external_location(uri, len, blob_id, &form, &path, &err) &&
		err.code == code && path == NULL;
}

#define REFUSED(uri, blob_id, code) refused(uri, strlen(uri), blob_id, code)

LP_TEST(blob_external_locations)
{
	LP_CHECK(located("/srv/media/clip.mp4", 0, LP_BLOB_EXTERNAL_LOCAL, "/srv/media/clip.mp4"));
	LP_CHECK(located("file:///srv/media/clip.mp4", 0, LP_BLOB_EXTERNAL_LOCAL, "/srv/media/clip.mp4"));
	LP_CHECK(located("file:///srv/my%20media/a%2Bb.mp4", 0, LP_BLOB_EXTERNAL_LOCAL, "/srv/my media/a+b.mp4"));
	LP_CHECK(located("s3://bucket/media/clip.mp4", 0, LP_BLOB_EXTERNAL_S3, "s3://bucket/media/clip.mp4"));
	LP_CHECK(located("media/clip.mp4", 2, LP_BLOB_EXTERNAL_RELATIVE, "media/clip.mp4"));
	LP_CHECK(located("clip..mp4", 1, LP_BLOB_EXTERNAL_RELATIVE, "clip..mp4"));
}

LP_TEST(blob_external_refuses_names_that_lead_elsewhere)
{
	/* no way up or around */
	LP_CHECK(REFUSED("/srv/media/../../etc/passwd", 0, LP_ERR_CORRUPT));
	LP_CHECK(REFUSED("/srv/./media", 0, LP_ERR_CORRUPT));
	LP_CHECK(REFUSED("//srv/media", 0, LP_ERR_CORRUPT));
	LP_CHECK(REFUSED("/srv/media/", 0, LP_ERR_CORRUPT));
	LP_CHECK(REFUSED("/", 0, LP_ERR_CORRUPT));
	LP_CHECK(REFUSED("file:///srv/%2e%2e/etc/passwd", 0, LP_ERR_CORRUPT));
	LP_CHECK(REFUSED("file:///srv/a%2F..%2Fb", 0, LP_ERR_CORRUPT));
	LP_CHECK(REFUSED("s3://bucket/media/../other", 0, LP_ERR_CORRUPT));
	LP_CHECK(REFUSED("s3://", 0, LP_ERR_CORRUPT));
	LP_CHECK(REFUSED("../other.lance/data/x.blob", 1, LP_ERR_CORRUPT));
	LP_CHECK(REFUSED("media/../../x", 1, LP_ERR_CORRUPT));
	LP_CHECK(REFUSED("media//x", 1, LP_ERR_CORRUPT));
	/* relative where absolute belongs, and the reverse */
	LP_CHECK(REFUSED("media/clip.mp4", 0, LP_ERR_CORRUPT));
	LP_CHECK(REFUSED("/srv/media/clip.mp4", 1, LP_ERR_CORRUPT));
	LP_CHECK(REFUSED("s3://bucket/clip.mp4", 1, LP_ERR_CORRUPT));
	/* other machines, schemes, bytes */
	LP_CHECK(REFUSED("file://host/srv/clip.mp4", 0, LP_ERR_CORRUPT));
	LP_CHECK(REFUSED("file://", 0, LP_ERR_CORRUPT));
	LP_CHECK(REFUSED("file:///srv/clip%00.mp4", 0, LP_ERR_CORRUPT));
	LP_CHECK(REFUSED("file:///srv/clip%4", 0, LP_ERR_CORRUPT));
	LP_CHECK(REFUSED("file:///srv/clip%zz", 0, LP_ERR_CORRUPT));
	LP_CHECK(REFUSED("http://example.com/clip.mp4", 0, LP_ERR_UNSUPPORTED));
	LP_CHECK(REFUSED("gs://bucket/clip.mp4", 0, LP_ERR_UNSUPPORTED));
	LP_CHECK(REFUSED("", 0, LP_ERR_CORRUPT));
	LP_CHECK(refused("/srv/clip.mp4\0/etc/passwd", 25, 0, LP_ERR_CORRUPT));
}

LP_TEST(blob_external_ranges)
{
	uint64_t	offset;
	uint64_t	length;
	LpError		err;

	LP_CHECK(lp_blob_external_range(10, 20, 100, "x", &offset, &length, &err));
	LP_CHECK(offset == 10 && length == 20);
	LP_CHECK(lp_blob_external_range(80, 20, 100, "x", &offset, &length, &err));
	LP_CHECK(offset == 80 && length == 20);
	/* size 0: the whole object */
	LP_CHECK(lp_blob_external_range(0, 0, 100, "x", &offset, &length, &err));
	LP_CHECK(offset == 0 && length == 100);
	LP_CHECK(lp_blob_external_range(0, 0, 0, "x", &offset, &length, &err));
	LP_CHECK(offset == 0 && length == 0);
	LP_CHECK(!lp_blob_external_range(5, 0, 100, "x", &offset, &length, &err) && err.code == LP_ERR_CORRUPT);
	/* beyond the end, overflow included */
	LP_CHECK(!lp_blob_external_range(81, 20, 100, "x", &offset, &length, &err) && err.code == LP_ERR_CORRUPT);
	LP_CHECK(!lp_blob_external_range(101, 1, 100, "x", &offset, &length, &err) && err.code == LP_ERR_CORRUPT);
	LP_CHECK(!lp_blob_external_range(UINT64_MAX, 2, 100, "x", &offset, &length, &err) && err.code == LP_ERR_CORRUPT);
	LP_CHECK(!lp_blob_external_range(1, UINT64_MAX, 100, "x", &offset, &length, &err) && err.code == LP_ERR_CORRUPT);
}
