/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * interpose.h - what the tests' syscall() interposers share: the real
 * syscall(), found before any agent runs (the agent must not be the one to
 * look it up), and the unpacking of its six arguments.
 */
#ifndef ZSWAPD_TEST_INTERPOSE_H
#define ZSWAPD_TEST_INTERPOSE_H

#include <dlfcn.h>
#include <stdarg.h>

typedef long (*syscall_fn)(long, ...);

static syscall_fn real_syscall;

__attribute__((constructor)) static void interpose_init(void)
{
	real_syscall = (syscall_fn)dlsym(RTLD_NEXT, "syscall");
}

/* In a variadic function whose last named argument is nr: its six longs into a[]. */
#define INTERPOSE_ARGS(nr, a)                            \
	do {                                             \
		va_list ap_;                             \
		va_start(ap_, nr);                       \
		for (int i_ = 0; i_ < 6; i_++)           \
			(a)[i_] = va_arg(ap_, long);     \
		va_end(ap_);                             \
	} while (0)

#endif
