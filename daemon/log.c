// SPDX-License-Identifier: GPL-2.0-only
/*
 * log.c - see log.h.  Kept free of daemon state so unit tests link it.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "log.h"

static int log_max_level = LOG_LVL_INFO;

void log_set_level(int level)
{
	log_max_level = level;
}

int log_get_level(void)
{
	return log_max_level;
}

int log_level_parse(const char *s, int *ret_level)
{
	static const struct {
		const char *name;
		int level;
	} names[] = {
		{ "error", LOG_LVL_ERR },
		{ "warning", LOG_LVL_WARNING },
		{ "info", LOG_LVL_INFO },
		{ "debug", LOG_LVL_DEBUG },
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (strcmp(s, names[i].name) == 0) {
			*ret_level = names[i].level;
			return 0;
		}
	}
	return -EINVAL;
}

int log_internal(int level, int err, const char *fmt, ...)
{
	int saved_errno = errno;
	va_list ap;

	if (level > log_max_level)
		return err;
	if (err)
		errno = err < 0 ? -err : err;
	fprintf(stderr, "<%d>", level);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	errno = saved_errno;
	return err;
}
