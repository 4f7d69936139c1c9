/*
 * lp_target_key.c - the keys that sign and verify targets, in
 * $PGDATA/lance_parts.key.
 *
 * The file is one or more keys of 32 random bytes, concatenated: the first
 * signs new targets, every one verifies (a file of 0.2.0 is a single key).
 * A key is named by its id, the start of its SHA-256, which a target
 * carries.  Clusters whose files hold the same keys accept each other's
 * targets.
 *
 * The file is created with one key on first use (published with link(),
 * so racing backends agree on one key) and is otherwise only ever replaced
 * whole (temporary file, fsync, rename, fsync of the directory), so a
 * reader sees the old keys or the new ones, never a mix, and a crash leaves
 * at most a temporary file that nothing reads.  Every use reads the file
 * (a few hundred bytes) and compares its bytes with the copy loaded, so
 * each backend sees a rotation, or a file an administrator copied in, at
 * its next use, however quickly it was replaced.
 *
 * The file is the server's own, not dataset storage, so it is read and
 * written as a server file (store/lp_pg_server_files), not through a store.
 */
#include "postgres.h"

#include "common/cryptohash.h"
#include "common/sha2.h"
#include "miscadmin.h"
#include "storage/lock.h"

#include "store/lp_pg_server_files.h"
#include "targets/lp_target_key.h"

#define TARGET_KEY_FILE "lance_parts.key"
/* field4 of the advisory lock serializing rotations and retirements: one
 * that pg_advisory_lock (1, 2) and the target file lock (0x4c50) never use */
#define KEY_FILE_LOCK_FIELD4 0x4c4b	/* "LK" */

static LpTargetKey loaded_keys[LP_TARGET_MAX_KEYS];
static int	num_loaded_keys;	/* 0: nothing loaded */

static void
key_file_path(char *path)
{
	snprintf(path, MAXPGPATH, "%s/%s", DataDir, TARGET_KEY_FILE);
}

static void
set_key_id(LpTargetKey *key)
{
	pg_cryptohash_ctx *ctx = pg_cryptohash_create(PG_SHA256);
	uint8		digest[PG_SHA256_DIGEST_LENGTH];

	if (ctx == NULL ||
		pg_cryptohash_init(ctx) < 0 ||
		pg_cryptohash_update(ctx, key->bytes, LP_TARGET_KEY_LEN) < 0 ||
		pg_cryptohash_final(ctx, digest, sizeof(digest)) < 0)
	{
		pg_cryptohash_free(ctx);
		ereport(ERROR,
				errcode(ERRCODE_INTERNAL_ERROR),
				errmsg("could not compute the id of a target key"));
	}
	pg_cryptohash_free(ctx);
	for (int i = 0; i < LP_TARGET_KEY_ID_CHARS / 2; i++)
		sprintf(key->id + 2 * i, "%02x", digest[i]);
}

static void
damaged_key_file(const char *path)
{
	ereport(ERROR,
			errcode(ERRCODE_DATA_CORRUPTED),
			errmsg("target key file \"%s\" is damaged", path),
			errdetail("It must hold between 1 and %d keys of %d bytes each.",
					  LP_TARGET_MAX_KEYS, LP_TARGET_KEY_LEN),
			errhint("Restore it from a copy, or remove it to create a new key; targets signed with the old keys will then be refused."));
}

/* True if these bytes are the keys loaded, in the same order. */
static bool
same_keys(const uint8 *bytes, int count)
{
	if (count != num_loaded_keys)
		return false;
	for (int i = 0; i < count; i++)
		if (memcmp(bytes + i * LP_TARGET_KEY_LEN, loaded_keys[i].bytes, LP_TARGET_KEY_LEN) != 0)
			return false;
	return true;
}

/* Load the key file into loaded_keys; false if it does not exist. */
static bool
load_key_file(const char *path)
{
	uint8		bytes[LP_TARGET_MAX_KEYS * LP_TARGET_KEY_LEN];
	LpTargetKey keys[LP_TARGET_MAX_KEYS];
	size_t		size;
	size_t		got;
	int			count;

	if (!lp_server_file_read(path, bytes, sizeof(bytes), &size, &got))
		return false;
	if (size == 0 || size % LP_TARGET_KEY_LEN != 0 || size > sizeof(bytes))
		damaged_key_file(path);
	/* shorter than its size: cut while being read, which a rename never does */
	if (got != size)
		damaged_key_file(path);

	count = (int) (size / LP_TARGET_KEY_LEN);
	if (same_keys(bytes, count))
		return true;
	for (int i = 0; i < count; i++)
	{
		memcpy(keys[i].bytes, bytes + i * LP_TARGET_KEY_LEN, LP_TARGET_KEY_LEN);
		set_key_id(&keys[i]);
	}
	memcpy(loaded_keys, keys, sizeof(LpTargetKey) * count);
	num_loaded_keys = count;
	return true;
}

static void
generate_key(LpTargetKey *key)
{
	if (!pg_strong_random(key->bytes, LP_TARGET_KEY_LEN))
		ereport(ERROR,
				errcode(ERRCODE_INTERNAL_ERROR),
				errmsg("could not generate a target key"));
	set_key_id(key);
}

/*
 * Write the keys into a new temporary file beside the key file, mode 0600
 * whatever the cluster's group access, and fsync it; its path in temp.
 */
static void
write_temporary_key_file(const char *path, const LpTargetKey *keys, int count, char *temp)
{
	uint8		bytes[LP_TARGET_MAX_KEYS * LP_TARGET_KEY_LEN];

	for (int i = 0; i < count; i++)
		memcpy(bytes + i * LP_TARGET_KEY_LEN, keys[i].bytes, LP_TARGET_KEY_LEN);
	/* one left by a crashed backend that had this pid is not reused */
	snprintf(temp, MAXPGPATH, "%s.%d.tmp", path, MyProcPid);
	lp_server_file_write_synced(temp, bytes, (size_t) count * LP_TARGET_KEY_LEN);
}

/* Create the key file with one new key, unless another backend just did. */
static void
create_key_file(const char *path)
{
	LpTargetKey key;
	char		temp[MAXPGPATH];

	generate_key(&key);
	write_temporary_key_file(path, &key, 1, temp);
	/* the loser of a race keeps the winner's key */
	lp_server_file_link_unless_present(temp, path, DataDir);
}

const LpTargetKey *
lp_target_keys(int *count)
{
	char		path[MAXPGPATH];

	key_file_path(path);
	if (!load_key_file(path))
	{
		create_key_file(path);
		if (!load_key_file(path))
			ereport(ERROR,
					errcode_for_file_access(),
					errmsg("could not read file \"%s\": %m", path));
	}
	*count = num_loaded_keys;
	return loaded_keys;
}

const LpTargetKey *
lp_target_find_key(const char *key_id)
{
	int			count;
	const LpTargetKey *keys = lp_target_keys(&count);

	for (int i = 0; i < count; i++)
		if (strcmp(keys[i].id, key_id) == 0)
			return &keys[i];
	return NULL;
}

/*
 * Rotations and retirements of the cluster's backends are serialized, so
 * none of them replaces the file from keys another has just changed.
 * Writers in other clusters sharing the keys are not: the file is copied
 * there by the administrator.
 */
static void
key_file_lock_tag(LOCKTAG *tag)
{
	SET_LOCKTAG_ADVISORY(*tag, InvalidOid, 0, 0, KEY_FILE_LOCK_FIELD4);
}

/* Replace the key file with these keys, and load them. */
static void
replace_key_file(const LpTargetKey *keys, int count)
{
	char		path[MAXPGPATH];
	char		temp[MAXPGPATH];

	key_file_path(path);
	write_temporary_key_file(path, keys, count, temp);
	lp_server_file_rename(temp, path, DataDir);
	if (!load_key_file(path))
		ereport(ERROR,
				errcode_for_file_access(),
				errmsg("could not read file \"%s\": %m", path));
}

char *
lp_target_rotate_key(void)
{
	LpTargetKey keys[LP_TARGET_MAX_KEYS];
	const LpTargetKey *current;
	LOCKTAG		tag;
	int			count;

	key_file_lock_tag(&tag);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
	current = lp_target_keys(&count);
	if (count >= LP_TARGET_MAX_KEYS)
		ereport(ERROR,
				errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				errmsg("too many target keys"),
				errdetail("The cluster has %d target keys, the most it can have.", count),
				errhint("Retire the keys no longer needed with lance_parts.retire_target_keys first."));
	generate_key(&keys[0]);
	memcpy(&keys[1], current, sizeof(LpTargetKey) * count);
	replace_key_file(keys, count + 1);
	LockRelease(&tag, ExclusiveLock, false);
	return pstrdup(keys[0].id);
}

List *
lp_target_retire_keys(List *key_ids)
{
	LpTargetKey kept[LP_TARGET_MAX_KEYS];
	bool		retire[LP_TARGET_MAX_KEYS] = {false};
	const LpTargetKey *current;
	List	   *retired = NIL;
	ListCell   *cell;
	LOCKTAG		tag;
	int			count;
	int			num_kept = 0;

	key_file_lock_tag(&tag);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
	current = lp_target_keys(&count);
	for (int i = 1; i < count; i++)
		retire[i] = key_ids == NIL;
	foreach(cell, key_ids)
	{
		const char *id = lfirst(cell);
		int			i = 0;

		while (i < count && strcmp(current[i].id, id) != 0)
			i++;
		if (i == count)
			ereport(ERROR,
					errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					errmsg("target key \"%s\" does not exist", id),
					errhint("lance_parts.target_keys() lists the keys of the cluster."));
		if (i == 0)
			ereport(ERROR,
					errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					errmsg("target key \"%s\" is the signing key and cannot be retired", id),
					errhint("Make a new signing key with lance_parts.rotate_target_key() first."));
		retire[i] = true;
	}
	for (int i = 0; i < count; i++)
	{
		if (retire[i])
			retired = lappend(retired, pstrdup(current[i].id));
		else
			kept[num_kept++] = current[i];
	}
	if (retired != NIL)
		replace_key_file(kept, num_kept);
	LockRelease(&tag, ExclusiveLock, false);
	return retired;
}
