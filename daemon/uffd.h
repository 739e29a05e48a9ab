/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * uffd.h - the kernel interface: every UFFDIO_* ioctl zswapd makes, wrapped.
 *
 * Each takes the userfaultfd and returns 0 or -errno, nothing else: the
 * policy of what an error means lives above.  The contract of the kernel
 * (fs/userfaultfd.c, mm/userfaultfd.c), for the callers:
 *  - EAGAIN from COPY, ZEROPAGE, WRITEPROTECT: the mm is changing (an event
 *    the app is blocked on is unread, or mmap_changing): try again after
 *    reading the uffd.
 *  - EEXIST from COPY/ZEROPAGE: something is mapped there (or the PMD above
 *    is in flux: check pagemap before believing it); wake the waiter.
 *  - ENOENT, EFAULT: the range is no longer registered or mapped.
 *  - ESRCH: the mm is gone (exec or exit).
 * Like the uffd selftests' uffd-common.c and liburing's syscall layer, no
 * other file of the daemon calls ioctl() on a uffd.
 */
#ifndef ZSWAPD_UFFD_H
#define ZSWAPD_UFFD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/userfaultfd.h>

/* UFFDIO_API asking for features; what the kernel granted goes to *ret_features. */
int uffd_api(int fd, uint64_t features, uint64_t *ret_features);
/* UFFDIO_REGISTER in MISSING|WP mode: the only mode zswapd registers in. */
int uffd_register(int fd, uint64_t start, uint64_t len);
int uffd_unregister(int fd, uint64_t start, uint64_t len);
int uffd_wake(int fd, uint64_t addr, uint64_t len);
/* Wakes every thread waiting in a fault of this uffd: each faults again, into a fresh read. */
void uffd_wake_all(int fd);
/* Maps one page of contents `page` at addr; wake=false leaves the waiters asleep. */
int uffd_copy(int fd, uint64_t addr, const void *page, bool wake);
/* len bytes of pages from addr on, in one ioctl, waking whoever waits there.
 * *copied: the bytes mapped, also when it failed part way (-errno then). */
int uffd_copy_run(int fd, uint64_t addr, const void *pages, uint64_t len, uint64_t *copied);
/* Maps the zero page at addr (read faults: no memory until written) and wakes. */
int uffd_zeropage(int fd, uint64_t addr);
/* Sets (protect) or lifts the write-protect bit of [addr, addr+len); lifting wakes. */
int uffd_writeprotect(int fd, uint64_t addr, uint64_t len, bool protect);
/* Marks one page poisoned: its next access is SIGBUS, as for a memory error. */
int uffd_poison(int fd, uint64_t addr);
/* Whether fd is a userfaultfd at all (readlink of its /proc/self/fd entry). */
bool uffd_is_uffd(int fd);
/*
 * Reads up to max messages from a uffd, never blocking, whatever its
 * O_NONBLOCK flag (which the served process may clear).  Returns how many, 0
 * when there are none now (EAGAIN), -errno on failure, -EIO on a read that
 * is not a whole number of messages.
 */
ssize_t uffd_read_msgs(int fd, struct uffd_msg *msgs, size_t max);
/* Appends msg to a growing array of messages; -ENOMEM leaves it as it was. */
int uffd_msgs_push(struct uffd_msg **msgs, uint32_t *n, uint32_t *cap, const struct uffd_msg *msg);

#endif
