/*
 * lp_target_key.h - the keys that sign and verify targets (lp_target_key.c).
 */
#ifndef LP_TARGET_KEY_H
#define LP_TARGET_KEY_H

#include "nodes/pg_list.h"

#define LP_TARGET_KEY_LEN 32
/* a key id is the first 8 bytes of the key's SHA-256, in lower-case hex */
#define LP_TARGET_KEY_ID_CHARS 16
/* rotations beyond this many keys must retire some first */
#define LP_TARGET_MAX_KEYS 16

typedef struct LpTargetKey
{
	uint8		bytes[LP_TARGET_KEY_LEN];
	char		id[LP_TARGET_KEY_ID_CHARS + 1];
} LpTargetKey;

/*
 * The cluster's keys, the signing key first, as the key file holds them now
 * (created atomically with one key on first use, re-read whenever the file
 * was replaced); ERROR if the file cannot be read or is damaged.  Valid
 * until the next call of a function of this module.
 */
extern const LpTargetKey *lp_target_keys(int *count);

/* The key with this id, or NULL if the cluster has none. */
extern const LpTargetKey *lp_target_find_key(const char *key_id);

/*
 * Make a new random key the signing key, keeping the others for
 * verification; the new key's id.  Callers check the privilege.
 */
extern char *lp_target_rotate_key(void);

/*
 * Remove the keys with these ids (char *), or with NIL every key but the
 * signing key; ERROR (22023) naming an id the cluster does not have or the
 * signing key's, before anything changes.  The removed ids, in file order.
 * Callers check the privilege.
 */
extern List *lp_target_retire_keys(List *key_ids);

#endif							/* LP_TARGET_KEY_H */
