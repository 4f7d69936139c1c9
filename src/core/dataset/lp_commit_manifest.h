/*
 * lp_commit_manifest.h - the manifest of the version a commit makes: the
 * base manifest with the request applied (lance-format.md section 5.8).
 */
#ifndef LP_COMMIT_MANIFEST_H
#define LP_COMMIT_MANIFEST_H

#include <stddef.h>
#include <stdint.h>

#include "base/lp_error.h"
#include "dataset/lp_commit_request.h"
#include "dataset/lp_manifest.h"

/*
 * The manifest file of version base + 1 for the request, with the given
 * transaction inline and recorded as transaction_file.  new_fragment_ids
 * receives the id of every new fragment (1 for append, n_groups for rewrite,
 * n_fragments for update, none for replace and delete; may be NULL).  Fails (LP_ERR_INVALID_ARGUMENT,
 * LP_ERR_UNSUPPORTED) when the request does not fit the base version.  The
 * base's feature flags are the caller's to check (lp_commit checks them).
 */
bool		lp_commit_build_manifest(const LpManifest *base,
									 const LpCommitRequest *request,
									 const uint8_t *transaction,
									 size_t transaction_len,
									 const char *transaction_file,
									 int64_t timestamp_nanos,
									 uint8_t **out, size_t *out_len,
									 uint64_t *new_fragment_ids, LpError *err);

/*
 * The parsed manifest of version base + 1 for the request (no transaction):
 * what a reader would see once it is published.  NULL with *err as above.
 */
LpManifest *lp_commit_preview_manifest(const LpManifest *base, const LpCommitRequest *request,
									   LpError *err);

#endif							/* LP_COMMIT_MANIFEST_H */
