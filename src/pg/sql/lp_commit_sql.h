/*
 * lp_commit_sql.h - what commit shares with the other functions that
 * publish dataset versions (compact).
 */
#ifndef LP_COMMIT_SQL_H
#define LP_COMMIT_SQL_H

#include "dataset/lp_commit.h"

/* Define the GUC lance_parts.commit_retries (from _PG_init). */
extern void LpCommitInit(void);

/*
 * Strong random bytes for the core (an LpRandomFunction): transaction UUIDs
 * and data file names.
 */
extern bool lp_random_bytes(void *arg, uint8_t *buffer, size_t len, LpError *err);

/*
 * Commit options for the dataset at uri from the settings: retries, strong
 * random bytes, and the version hint where Lance writes one (not on S3).
 */
extern void lp_commit_options(LpCommitOptions *options, const char *uri);

#endif							/* LP_COMMIT_SQL_H */
