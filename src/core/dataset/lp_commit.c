/*
 * lp_commit.c - publishing new versions of a Lance dataset (lp_commit.h):
 * the transaction file, then the manifest of the next version created only
 * if absent, rebuilt on top of a newer version after a lost race.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/lp_alloc.h"
#include "base/lp_path.h"
#include "dataset/lp_commit.h"
#include "dataset/lp_commit_internal.h"

static int64_t
now_nanos(void)
{
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	return (int64_t) now.tv_sec * 1000000000 + now.tv_nsec;
}

/* Check every version in (from, to] for a conflicting transaction. */
static bool
check_versions_since(LpStore *store, const char *root, LpManifestNaming naming,
					 const LpCommitRequest *request, uint64_t from, uint64_t to,
					 LpError *err)
{
	for (uint64_t version = from + 1; version <= to; version++)
	{
		LpManifest *manifest = lp_dataset_read_manifest(store, root, naming, version, err);
		uint8_t    *transaction;
		size_t		len;
		bool		ok;

		if (manifest == NULL)
			return false;
		ok = lp_dataset_read_transaction(store, root, manifest, &transaction, &len, err);
		lp_manifest_free(manifest);
		if (!ok)
			return false;
		ok = lp_transaction_check_conflict(request, transaction, len, version, err);
		lp_free(transaction);
		if (!ok)
			return false;
	}
	return true;
}

static bool
write_transaction(LpStore *store, const char *root, const char *file_name,
				  const uint8_t *data, size_t len, LpError *err)
{
	char	   *directory = lp_path_join(root, LP_TRANSACTIONS_DIR);
	char	   *path = directory ? lp_path_join(directory, file_name) : NULL;
	bool		ok;

	lp_free(directory);
	if (path == NULL)
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
	ok = store->ops->put(store, path, data, len, err);
	lp_free(path);
	return ok;
}

/*
 * Create the manifest of a version; LP_ERR_ALREADY_EXISTS if another writer
 * did, LP_ERR_CONFLICT while another writer's was being written.
 */
static bool
publish_manifest(LpStore *store, const char *root, LpManifestNaming naming,
				 uint64_t version, const uint8_t *data, size_t len, LpError *err)
{
	char		name[LP_MANIFEST_NAME_SIZE];
	char	   *directory = lp_path_join(root, LP_VERSIONS_DIR);
	char	   *path;
	bool		ok;

	lp_manifest_name(naming, version, name);
	path = directory ? lp_path_join(directory, name) : NULL;
	lp_free(directory);
	if (path == NULL)
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
	ok = store->ops->put_if_absent(store, path, data, len, err);
	lp_free(path);
	return ok;
}

/*
 * Readers only use the hint to start their search, so failures are ignored;
 * none is written where the options say Lance writes none (object stores).
 */
static void
write_version_hint(LpStore *store, const char *root, const LpCommitOptions *options,
				   uint64_t version)
{
	char		text[64];
	char	   *directory;
	char	   *path;
	LpError		ignored;
	int			len;

	if (options->no_version_hint)
		return;
	directory = lp_path_join(root, LP_VERSIONS_DIR);
	path = directory ? lp_path_join(directory, LP_VERSION_HINT_FILE) : NULL;
	lp_free(directory);
	if (path == NULL)
		return;
	len = snprintf(text, sizeof(text), "{\"version\":%" PRIu64 "}", version);
	store->ops->put(store, path, text, (size_t) len, &ignored);
	lp_free(path);
}

bool
lp_commit(LpStore *store, const char *root, const LpCommitRequest *request,
		  const LpCommitOptions *options, LpCommitResult *result, LpError *err)
{
	LpError		local_err;
	uint8_t		uuid_bytes[16];
	char		uuid[LP_UUID_STRING_SIZE];
	char		transaction_file[64];
	bool		transaction_written = false;
	uint8_t    *transaction = NULL;
	size_t		transaction_len = 0;
	uint64_t	checked = request->read_version;
	uint64_t   *new_ids;
	size_t		n_new_ids;
	bool		ok = false;

	/* The retry loop needs to see the code of a failed publication. */
	if (err == NULL)
		err = &local_err;
	memset(result, 0, sizeof(*result));
	if (options->max_retries < 0)
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT, "max_retries must not be negative");
	if (request->read_manifest != NULL &&
		request->read_manifest->proto->version != request->read_version)
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
					   "the manifest given for read version %llu holds version %llu",
					   (unsigned long long) request->read_version,
					   (unsigned long long) request->read_manifest->proto->version);
	if (!lp_commit_count_new_fragments(request, &n_new_ids, err))
		return false;
	if (!options->random(options->random_arg, uuid_bytes, sizeof(uuid_bytes), err))
		return false;
	lp_uuid_v4(uuid_bytes);
	lp_uuid_format(uuid_bytes, uuid);
	snprintf(transaction_file, sizeof(transaction_file), "%" PRIu64 "-%s.txn",
			 request->read_version, uuid);
	new_ids = lp_alloc_array(n_new_ids + 1, sizeof(uint64_t));
	if (new_ids == NULL)
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");

	for (int attempt = 1; attempt <= options->max_retries + 1; attempt++)
	{
		LpManifestNaming naming = request->read_naming;
		const LpManifest *latest = request->read_manifest;
		LpManifest *read = NULL;
		uint8_t    *manifest_data;
		size_t		manifest_len;
		uint64_t	new_version;
		bool		built;

		/* after a lost race the latest version is a newer one */
		if (latest == NULL || attempt > 1)
		{
			latest = read = lp_dataset_read_latest(store, root, &naming, err);
			if (latest == NULL)
				goto done;
		}
		/* a concurrent writer of a newer Lance may have set them */
		if (!lp_manifest_check_readable(latest, root, err) ||
			!lp_manifest_check_writable(latest, root, err))
		{
			lp_manifest_free(read);
			goto done;
		}
		if (latest->proto->version < request->read_version)
		{
			lp_fail(err, LP_ERR_INVALID_ARGUMENT,
					"read version %llu is newer than the latest version %llu of dataset \"%s\"",
					(unsigned long long) request->read_version,
					(unsigned long long) latest->proto->version, root);
			lp_manifest_free(read);
			goto done;
		}
		if (!check_versions_since(store, root, naming, request, checked,
								  latest->proto->version, err))
		{
			lp_manifest_free(read);
			goto done;
		}
		checked = latest->proto->version;

		/* The transaction does not depend on the version it lands on. */
		if (transaction == NULL &&
			!lp_transaction_build(request, latest, uuid, &transaction,
								  &transaction_len, err))
		{
			lp_manifest_free(read);
			goto done;
		}

		built = lp_commit_build_manifest(latest, request, transaction, transaction_len,
										 transaction_file, now_nanos(),
										 &manifest_data, &manifest_len, new_ids, err);
		new_version = latest->proto->version + 1;
		lp_manifest_free(read);
		if (!built)
			goto done;

		/* written once, and only for a request the dataset accepts */
		if (!transaction_written)
		{
			if (!write_transaction(store, root, transaction_file, transaction,
								   transaction_len, err))
			{
				lp_free(manifest_data);
				goto done;
			}
			transaction_written = true;
		}
		ok = publish_manifest(store, root, naming, new_version, manifest_data,
							  manifest_len, err);
		lp_free(manifest_data);
		if (ok)
		{
			result->version = new_version;
			result->naming = naming;
			result->attempts = attempt;
			if (request->kind == LP_COMMIT_APPEND)
				result->fragment_id = new_ids[0];
			if (request->kind == LP_COMMIT_REPLACE)
				result->fragment_id = request->fragment_id;
			else if (request->kind == LP_COMMIT_REWRITE || request->kind == LP_COMMIT_OVERWRITE ||
					 request->kind == LP_COMMIT_UPDATE ||
					 (request->kind == LP_COMMIT_APPEND && request->n_fragments > 0))
			{
				result->new_fragment_ids = new_ids;
				new_ids = NULL;
			}
			write_version_hint(store, root, options, new_version);
			goto done;
		}
		/* another writer's manifest won, or was being written at once: rebase */
		if (err->code != LP_ERR_ALREADY_EXISTS && err->code != LP_ERR_CONFLICT)
			goto done;
	}
	lp_fail(err, LP_ERR_CONFLICT,
			"could not commit to dataset \"%s\": other writers won %d attempts in a row",
			root, options->max_retries + 1);

done:
	lp_free(transaction);
	lp_free(new_ids);
	return ok;
}

bool
lp_commit_create(LpStore *store, const char *root, const LpCommitRequest *request,
				 LpManifestNaming naming, const LpCommitOptions *options,
				 LpCommitResult *result, LpError *err)
{
	Lance__Table__Manifest empty;
	LpManifest	base;
	uint8_t		uuid_bytes[16];
	char		uuid[LP_UUID_STRING_SIZE];
	char		transaction_file[64];
	uint8_t    *transaction = NULL;
	size_t		transaction_len = 0;
	uint8_t    *manifest_data = NULL;
	size_t		manifest_len = 0;
	size_t		n_new;
	uint64_t   *new_ids = NULL;
	bool		ok = false;

	memset(result, 0, sizeof(*result));
	if (request->kind != LP_COMMIT_OVERWRITE || request->read_version != 0)
		return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
					   "a new dataset is created by an overwrite of version 0");
	if (!lp_commit_count_new_fragments(request, &n_new, err))
		return false;
	/* version 0: nothing, Lance's base for the Overwrite that creates a dataset */
	lance__table__manifest__init(&empty);
	memset(&base, 0, sizeof(base));
	base.name = (char *) root;
	base.proto = &empty;
	if (!options->random(options->random_arg, uuid_bytes, sizeof(uuid_bytes), err))
		return false;
	lp_uuid_v4(uuid_bytes);
	lp_uuid_format(uuid_bytes, uuid);
	snprintf(transaction_file, sizeof(transaction_file), "0-%s.txn", uuid);
	new_ids = lp_alloc_array(n_new + 1, sizeof(uint64_t));
	if (new_ids == NULL)
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
	if (!lp_transaction_build(request, &base, uuid, &transaction, &transaction_len, err) ||
		!lp_commit_build_manifest(&base, request, transaction, transaction_len,
								  transaction_file, now_nanos(), &manifest_data,
								  &manifest_len, new_ids, err) ||
		!write_transaction(store, root, transaction_file, transaction, transaction_len, err))
		goto done;
	if (!publish_manifest(store, root, naming, 1, manifest_data, manifest_len, err))
	{
		if (err != NULL && err->code == LP_ERR_ALREADY_EXISTS)
			lp_fail(err, LP_ERR_ALREADY_EXISTS, "dataset \"%s\" already exists", root);
		goto done;
	}
	result->version = 1;
	result->naming = naming;
	result->attempts = 1;
	result->new_fragment_ids = new_ids;
	new_ids = NULL;
	write_version_hint(store, root, options, 1);
	ok = true;

done:
	lp_free(transaction);
	lp_free(manifest_data);
	lp_free(new_ids);
	return ok;
}
