/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * log.h - the daemon's one logging path.
 *
 * Messages go to stderr with a level prefix sd-daemon understands ("<3>"),
 * so journald files them at the right priority whether we run under systemd
 * or in the foreground.  log_*_errno() set errno from r first, so "%m" in the
 * format prints the failure, and return r: "return log_error_errno(r, ...)".
 */
#ifndef ZSWAPD_LOG_H
#define ZSWAPD_LOG_H

#include <errno.h>

enum log_level { LOG_LVL_ERR = 3, LOG_LVL_WARNING = 4, LOG_LVL_INFO = 6, LOG_LVL_DEBUG = 7 };

void log_set_level(int level);
int log_get_level(void);
/* Parses "error", "warning", "info", "debug"; -EINVAL otherwise. */
int log_level_parse(const char *s, int *ret_level);

__attribute__((format(printf, 3, 4))) int log_internal(int level, int err, const char *fmt, ...);

#define log_error(...) log_internal(LOG_LVL_ERR, 0, __VA_ARGS__)
#define log_warning(...) log_internal(LOG_LVL_WARNING, 0, __VA_ARGS__)
#define log_info(...) log_internal(LOG_LVL_INFO, 0, __VA_ARGS__)
#define log_debug(...) log_internal(LOG_LVL_DEBUG, 0, __VA_ARGS__)
#define log_error_errno(r, ...) log_internal(LOG_LVL_ERR, (r), __VA_ARGS__)
#define log_warning_errno(r, ...) log_internal(LOG_LVL_WARNING, (r), __VA_ARGS__)
#define log_debug_errno(r, ...) log_internal(LOG_LVL_DEBUG, (r), __VA_ARGS__)

#endif
