/* SPDX-License-Identifier: MIT */
/* What lifetime_plugin.c exports besides its entry point, for
 * test_lifetime.c to look up with dlsym. */
#ifndef ANVIL_TEST_LIFETIME_PLUGIN_H
#define ANVIL_TEST_LIFETIME_PLUGIN_H

/* The plugin's init and deinit calls so far, and the calls it served after
 * deinit (each a use of torn-down state). */
void lifetime_plugin_counts(int *n_init, int *n_deinit, int *n_violations);
typedef void (*lifetime_plugin_counts_fn)(int *n_init, int *n_deinit, int *n_violations);

#endif
