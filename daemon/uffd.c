// SPDX-License-Identifier: GPL-2.0-only
/*
 * uffd.c - the UFFDIO_* ioctls, each turned into 0 or -errno once (uffd.h
 * holds the contract).  Knows nothing of targets or the daemon.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include "comp.h"
#include "compat.h"
#include "uffd.h"

static int uffd_ioctl(int fd, unsigned long req, void *arg)
{
	return ioctl(fd, req, arg) < 0 ? -errno : 0;
}

int uffd_api(int fd, uint64_t features, uint64_t *ret_features)
{
	struct uffdio_api api = { .api = UFFD_API, .features = features };
	int r = uffd_ioctl(fd, UFFDIO_API, &api);

	if (r == 0 && ret_features)
		*ret_features = api.features;
	return r;
}

int uffd_register(int fd, uint64_t start, uint64_t len)
{
	struct uffdio_register reg = {
		.range = { .start = start, .len = len },
		.mode = UFFDIO_REGISTER_MODE_MISSING | UFFDIO_REGISTER_MODE_WP,
	};

	return uffd_ioctl(fd, UFFDIO_REGISTER, &reg);
}

int uffd_unregister(int fd, uint64_t start, uint64_t len)
{
	struct uffdio_range range = { .start = start, .len = len };

	return uffd_ioctl(fd, UFFDIO_UNREGISTER, &range);
}

int uffd_wake(int fd, uint64_t addr, uint64_t len)
{
	struct uffdio_range range = { .start = addr, .len = len };

	return uffd_ioctl(fd, UFFDIO_WAKE, &range);
}

int uffd_copy(int fd, uint64_t addr, const void *page, bool wake)
{
	struct uffdio_copy copy = {
		.dst = addr,
		.src = (uint64_t)(uintptr_t)page,
		.len = ZS_PAGE_SIZE,
		.mode = wake ? 0 : UFFDIO_COPY_MODE_DONTWAKE,
	};

	return uffd_ioctl(fd, UFFDIO_COPY, &copy);
}

int uffd_copy_run(int fd, uint64_t addr, const void *pages, uint64_t len, uint64_t *copied)
{
	struct uffdio_copy copy = {
		.dst = addr,
		.src = (uint64_t)(uintptr_t)pages,
		.len = len,
	};
	int r = uffd_ioctl(fd, UFFDIO_COPY, &copy);

	*copied = r == 0 ? len : copy.copy > 0 ? (uint64_t)copy.copy : 0;
	return r;
}

int uffd_zeropage(int fd, uint64_t addr)
{
	struct uffdio_zeropage zp = { .range = { .start = addr, .len = ZS_PAGE_SIZE }, .mode = 0 };

	return uffd_ioctl(fd, UFFDIO_ZEROPAGE, &zp);
}

int uffd_writeprotect(int fd, uint64_t addr, uint64_t len, bool protect)
{
	struct uffdio_writeprotect wp = {
		.range = { .start = addr, .len = len },
		.mode = protect ? UFFDIO_WRITEPROTECT_MODE_WP : 0,
	};

	return uffd_ioctl(fd, UFFDIO_WRITEPROTECT, &wp);
}

int uffd_poison(int fd, uint64_t addr)
{
	struct uffdio_poison p = { .range = { .start = addr, .len = ZS_PAGE_SIZE } };

	return uffd_ioctl(fd, UFFDIO_POISON, &p);
}

/*
 * The uffd is shared with the process it serves, which may clear
 * O_NONBLOCK on it (the flag is the open file's, and it holds a copy): a
 * plain read would then block the daemon, every served process with it.
 * RWF_NOWAIT asks for a read that never blocks, whatever the flag says.
 * A kernel whose userfaultfd does not take it (EOPNOTSUPP) gets the flag
 * set again before each read, which narrows the window to a race; such
 * kernels are named in zswapd(8).
 */
static bool uffd_nowait_unsupported;

static ssize_t uffd_read_nowait(int fd, void *buf, size_t len)
{
	struct iovec iov = { buf, len };
	ssize_t n;
	int fl;

	if (!__atomic_load_n(&uffd_nowait_unsupported, __ATOMIC_RELAXED)) {
		n = preadv2(fd, &iov, 1, -1, RWF_NOWAIT);
		if (n >= 0 || errno != EOPNOTSUPP)
			return n;
		__atomic_store_n(&uffd_nowait_unsupported, true, __ATOMIC_RELAXED);
	}
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || (!(fl & O_NONBLOCK) && fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0))
		return -1;
	return read(fd, buf, len);
}

ssize_t uffd_read_msgs(int fd, struct uffd_msg *msgs, size_t max)
{
	ssize_t n;

	do
		n = uffd_read_nowait(fd, msgs, max * sizeof(*msgs));
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EAGAIN ? 0 : -errno;
	if (n == 0 || n % (ssize_t)sizeof(*msgs))
		return -EIO;
	return n / (ssize_t)sizeof(*msgs);
}

int uffd_msgs_push(struct uffd_msg **msgs, uint32_t *n, uint32_t *cap, const struct uffd_msg *msg)
{
	if (*n == *cap) {
		uint32_t c = *cap ? *cap * 2 : 16;
		struct uffd_msg *m = realloc(*msgs, c * sizeof(*m));

		if (!m)
			return -ENOMEM;
		*msgs = m;
		*cap = c;
	}
	(*msgs)[(*n)++] = *msg;
	return 0;
}

void uffd_wake_all(int fd)
{
	/* The top of user space differs by paging mode: the widest the
	 * kernel accepts wins (it refuses a range past the mm's end).  From
	 * mmap_min_addr's default up. */
	static const uint64_t tops[] = { 1ull << 56, 1ull << 48, 1ull << 47, 1ull << 39 };
	const uint64_t low = 0x10000;

	for (size_t i = 0; i < sizeof(tops) / sizeof(tops[0]); i++)
		if (uffd_wake(fd, low, tops[i] - ZS_PAGE_SIZE - low) == 0)
			return;
}

/*
 * Whether fd is a userfaultfd: a process registering hands us one, and
 * anything else (a pipe, a socket, a FIFO whose read would block) is
 * refused before zswapd reads or ioctls it.
 */
bool uffd_is_uffd(int fd)
{
	char path[64], target[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, target, sizeof(target) - 1);
	if (n < 0)
		return false;
	target[n] = '\0';
	return strcmp(target, "anon_inode:[userfaultfd]") == 0;
}
