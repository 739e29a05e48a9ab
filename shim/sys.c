// SPDX-License-Identifier: GPL-2.0-only
/*
 * sys.c - what the shim's three threads (the app's, in the constructor and
 * the atfork handlers; the agent; the watcher) all use: the debug log, the
 * start of a thread with every signal blocked, the clock and the wait at
 * the fork gate.  The clock and the wait are raw system calls: the agent
 * and the watcher use them where libc might touch a page zswapd holds.
 * A leaf: it calls nothing else of the shim.
 */
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "proto.h"
#include "shim.h"

void shim_log(const char *fmt, ...)
{
	va_list ap;

	if (!shim.debug)
		return;
	fprintf(stderr, "libzswap[%d]: ", (int)getpid());
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int shim_thread_start(void *stack, size_t size, void *(*fn)(void *))
{
	pthread_attr_t attr;
	sigset_t all, old;
	pthread_t tid;
	int r;

	pthread_attr_init(&attr);
	pthread_attr_setstack(&attr, stack, size);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	/* Created with every signal blocked, so none is ever delivered to it. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	r = -pthread_create(&tid, &attr, fn, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	return r;
}

uint64_t shim_now_usec(void)
{
	struct timespec ts = { 0, 0 };

	syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/*
 * Waits while *word is set, 20 us at a time, until ZS_FORK_GATE_MAX_USEC
 * after start; false if it gave up.  The sleep is a system call, not
 * libc's nanosleep: no cancellation point, nothing interposed.
 */
bool shim_gate_wait(const volatile uint32_t *word, uint64_t start)
{
	struct timespec ts = { 0, 20000 };

	while (__atomic_load_n(word, __ATOMIC_SEQ_CST)) {
		if (shim_now_usec() - start >= ZS_FORK_GATE_MAX_USEC)
			return false;
		syscall(SYS_nanosleep, &ts, NULL);
	}
	return true;
}
