/* SPDX-License-Identifier: MIT */
/*
 * Internal: may code and configuration be taken from a path? (sshd's
 * StrictModes, applied to plugins and configs.)
 *
 * A config file or plugin file is trusted when it is a regular file owned by
 * root or by the user running anvil and writable by nobody else (no other
 * write bit, no group write bit unless the group is the owner's private
 * group -- the umask 002 convention); its folder the same; and every folder
 * above it not writable by group or others unless sticky (like /tmp, where
 * others cannot rename what is ours). A config's own folder may be sticky;
 * a plugin folder may not: anyone able to create a file in it could plant a
 * plugin.
 *
 * Ownership of the folders above is not checked: a checkout owned by a CI
 * user and built by root is common, and those folders cannot be swapped
 * without their owner's write permission, which the mode check covers.
 *
 * Opt-outs, for development: ANVIL_ALLOW_INSECURE=1 in the environment (all
 * checks, config included), or `[plugins] allow_insecure = yes` (plugins
 * only: a config cannot vouch for itself). Both are shown by `anvil plugins`.
 */
#ifndef ANVIL_HOST_TRUST_H
#define ANVIL_HOST_TRUST_H

#include <stddef.h>

#define ANVIL_INSECURE_ENV "ANVIL_ALLOW_INSECURE"

/* 0 when path (a config or plugin file) may be trusted; -1 with the reason
 * (naming the offending path and its mode or owner) in why. */
int trust_check_file(const char *path, int strict_folder, char *why, size_t why_size);
/* The same for a plugin folder (strict: no sticky exception). */
int trust_check_folder(const char *dir, char *why, size_t why_size);
/* 1 when ANVIL_ALLOW_INSECURE is set to something other than "" or "0". */
int trust_insecure_env(void);

#endif
