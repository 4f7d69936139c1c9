/*
 * lp_target_key.h - the key that signs targets (lp_target_key.c).
 */
#ifndef LP_TARGET_KEY_H
#define LP_TARGET_KEY_H

#define LP_TARGET_KEY_LEN 32

/*
 * The cluster's signing key, LP_TARGET_KEY_LEN bytes, loaded (and created
 * atomically on first use) from the data directory; ERROR if the file
 * cannot be read or is damaged.
 */
extern const uint8 *lp_target_signing_key(void);

#endif							/* LP_TARGET_KEY_H */
