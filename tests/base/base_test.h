/* SPDX-License-Identifier: MIT */
/* The suites of test_base: host/src/base's services on their own (the INI
 * config, the JSON parser and tree, the ECMAScript matcher). */
#ifndef ANVIL_TEST_BASE_TEST_H
#define ANVIL_TEST_BASE_TEST_H

void base_add_config_tests(void);
void base_add_json_tests(void);
void base_add_ecma_tests(void);

#endif
