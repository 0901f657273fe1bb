/* SPDX-License-Identifier: MIT */
/* The host's log sink: stderr, filtered by $ANVIL_LOG (error, warning (the
 * default), info, debug, quiet/off). Plugins log through it too (registry.c
 * hands it out as a host service). Imports nothing of the host. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "anvil/abi.h"
#include "log.h"

static int log_threshold;
static pthread_once_t log_once = PTHREAD_ONCE_INIT;

static void log_init(void) {
    const char *e = getenv("ANVIL_LOG");
    log_threshold = ANVIL_LOG_WARN;
    if (e != NULL) {
        if (strcasecmp(e, "error") == 0) log_threshold = ANVIL_LOG_ERROR;
        else if (strcasecmp(e, "info") == 0) log_threshold = ANVIL_LOG_INFO;
        else if (strcasecmp(e, "debug") == 0) log_threshold = ANVIL_LOG_DEBUG;
        else if (strcasecmp(e, "quiet") == 0 || strcasecmp(e, "off") == 0) log_threshold = -2;
    }
}

void anvil__log(int level, const char *who, const char *fmt, ...) {
    pthread_once(&log_once, log_init);
    if (level > log_threshold) return;
    static const char *const names[] = { "error", "warning", "info", "debug" };
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "anvil: %s: %s%s%s\n", names[level < 0 ? 0 : (level > 3 ? 3 : level)], who ? who : "",
            who ? ": " : "", msg);
}
