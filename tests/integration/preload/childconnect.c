// SPDX-License-Identifier: GPL-2.0-only
/*
 * childconnect.so - preloaded after the shim, it holds a forked child's
 * connect() until the test says go: the child of a fork is then between
 * the fork (zswapd has read its UFFD_EVENT_FORK and holds the only copy of
 * its uffd) and the shim's claim of it, for as long as the test needs to
 * stop or kill zswapd right there.  In a forked child, connect() says
 * "childconnect: waiting" on stderr, then reads one byte from the fifo
 * $CHILDCONNECT_FIFO.  The process that loaded it connects as usual.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

typedef int (*connect_fn)(int, const struct sockaddr *, socklen_t);

static connect_fn real_connect;
static pid_t first_pid;

__attribute__((constructor)) static void childconnect_init(void)
{
	real_connect = (connect_fn)dlsym(RTLD_NEXT, "connect");
	first_pid = getpid();
}

__attribute__((visibility("default"))) int connect(int fd, const struct sockaddr *sa,
						   socklen_t len)
{
	static const char said[] = "childconnect: waiting\n";
	const char *fifo = getenv("CHILDCONNECT_FIFO");

	if (getpid() != first_pid && fifo) {
		int f;
		char c;

		(void)!write(STDERR_FILENO, said, sizeof(said) - 1);
		f = open(fifo, O_RDONLY | O_CLOEXEC);
		if (f >= 0) {
			(void)!read(f, &c, 1);
			close(f);
		}
	}
	return real_connect(fd, sa, len);
}
