// SPDX-License-Identifier: GPL-2.0-only
/*
 * childhold.so - preloaded after the shim, it holds a forked child's shim
 * at one point of its registration until the test says go, for as long as
 * the test needs to stop or kill zswapd right there:
 *   CHILDHOLD_AT=connect  before it connects: zswapd has read the child's
 *                         UFFD_EVENT_FORK and holds the only copy of its uffd;
 *   CHILDHOLD_AT=beacon   before it empties its beacon page (MADV_DONTNEED of
 *                         one page), once zswapd has named it and sent its
 *                         uffd: that madvise is a REMOVE event, which waits
 *                         until someone reads it.
 * There, in a forked child, it says "childhold: waiting" on stderr, then
 * reads one byte from the fifo $CHILDHOLD_FIFO.  The process that loaded it
 * goes on as usual; but for
 *   CHILDHOLD_AT=staging  which holds that process itself, in its first
 *                         registration, once zswapd sent ZS_READY and before
 *                         the shim maps the staging memfd, and no forked
 *                         child.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

typedef int (*connect_fn)(int, const struct sockaddr *, socklen_t);
typedef int (*madvise_fn)(void *, size_t, int);
typedef void *(*mmap_fn)(void *, size_t, int, int, int, off_t);

static connect_fn real_connect;
static madvise_fn real_madvise;
static pid_t first_pid;

__attribute__((constructor)) static void childhold_init(void)
{
	real_connect = (connect_fn)dlsym(RTLD_NEXT, "connect");
	real_madvise = (madvise_fn)dlsym(RTLD_NEXT, "madvise");
	first_pid = getpid();
}

static void childhold_wait(const char *at)
{
	static const char said[] = "childhold: waiting\n";
	const char *fifo = getenv("CHILDHOLD_FIFO"), *want = getenv("CHILDHOLD_AT");
	int f;
	char c;

	if (!fifo || !want || strcmp(want, at) != 0)
		return;
	if ((getpid() == first_pid) != (strcmp(at, "staging") == 0))
		return;
	(void)!write(STDERR_FILENO, said, sizeof(said) - 1);
	f = open(fifo, O_RDONLY | O_CLOEXEC);
	if (f >= 0) {
		(void)!read(f, &c, 1);
		close(f);
	}
}

__attribute__((visibility("default"))) int connect(int fd, const struct sockaddr *sa,
						   socklen_t len)
{
	childhold_wait("connect");
	return real_connect(fd, sa, len);
}

__attribute__((visibility("default"))) int madvise(void *addr, size_t len, int advice)
{
	if (len == 4096 && advice == MADV_DONTNEED)
		childhold_wait("beacon");
	return real_madvise(addr, len, advice);
}

/* Whether fd is zswapd's staging memfd ("/memfd:zswapd-staging (deleted)"). */
static int childhold_is_staging(int fd)
{
	char path[64], target[128];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, target, sizeof(target) - 1);
	if (n <= 0)
		return 0;
	target[n] = '\0';
	return strstr(target, "zswapd-staging") != NULL;
}

/* The shim's constructor may run before ours: what we need is looked up here. */
__attribute__((visibility("default"))) void *mmap(void *addr, size_t len, int prot, int flags,
						  int fd, off_t off)
{
	static mmap_fn real_mmap;
	static int held;

	if (!real_mmap)
		real_mmap = (mmap_fn)dlsym(RTLD_NEXT, "mmap");
	if (!first_pid)
		first_pid = getpid();
	if ((flags & MAP_SHARED) && fd >= 0 && !held && childhold_is_staging(fd)) {
		held = 1;
		childhold_wait("staging");
	}
	return real_mmap(addr, len, prot, flags, fd, off);
}
