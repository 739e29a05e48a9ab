/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * compat.h - kernel uapi that Debian 12's linux-libc-dev (6.1) lacks.
 *
 * Values are the kernel's (include/uapi/linux/userfaultfd.h, fs.h).  Whether
 * the running kernel has them is decided at run time from the features and
 * ioctls UFFDIO_API / UFFDIO_REGISTER return, never from these macros.
 */
#ifndef ZSWAPD_COMPAT_H
#define ZSWAPD_COMPAT_H

#include <linux/types.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>

#ifndef USERFAULTFD_IOC_NEW
#define USERFAULTFD_IOC USERFAULTFD_IOC
#define USERFAULTFD_IOC_NEW _IO(0xAA, 0x00)
#endif

#ifndef UFFD_FEATURE_WP_UNPOPULATED
#define UFFD_FEATURE_WP_UNPOPULATED (1 << 13)
#endif
#ifndef UFFD_FEATURE_POISON
#define UFFD_FEATURE_POISON (1 << 14)
#endif
#ifndef UFFD_FEATURE_WP_ASYNC
#define UFFD_FEATURE_WP_ASYNC (1 << 15)
#endif
#ifndef UFFD_FEATURE_MOVE
#define UFFD_FEATURE_MOVE (1 << 16)
#endif

/* The peer's pidfd, from a unix socket (Linux 6.5; include/uapi/asm-generic/socket.h). */
#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif

#ifndef UFFDIO_MOVE
struct uffdio_move {
	__u64 dst;
	__u64 src;
	__u64 len;
	__u64 mode;
	__s64 move;
};
#define UFFDIO_MOVE_MODE_DONTWAKE ((__u64)1 << 0)
#define UFFDIO_MOVE_MODE_ALLOW_SRC_HOLES ((__u64)1 << 1)
#define UFFDIO_MOVE _IOWR(UFFDIO, 0x05, struct uffdio_move)
#endif
#ifndef _UFFDIO_MOVE
#define _UFFDIO_MOVE (0x05)
#endif

#ifndef UFFDIO_POISON
struct uffdio_poison {
	struct uffdio_range range;
	__u64 mode;
	__s64 updated;
};
#define UFFDIO_POISON _IOWR(UFFDIO, 0x08, struct uffdio_poison)
#endif

#ifndef PAGEMAP_SCAN
struct page_region {
	__u64 start;
	__u64 end;
	__u64 categories;
};
struct pm_scan_arg {
	__u64 size;
	__u64 flags;
	__u64 start;
	__u64 end;
	__u64 walk_end;
	__u64 vec;
	__u64 vec_len;
	__u64 max_pages;
	__u64 category_inverted;
	__u64 category_mask;
	__u64 category_anyof_mask;
	__u64 return_mask;
};
#define PAGE_IS_WPALLOWED (1 << 0)
#define PAGE_IS_WRITTEN (1 << 1)
#define PAGE_IS_FILE (1 << 2)
#define PAGE_IS_PRESENT (1 << 3)
#define PAGE_IS_SWAPPED (1 << 4)
#define PAGE_IS_PFNZERO (1 << 5)
#define PAGE_IS_HUGE (1 << 6)
#define PM_SCAN_WP_MATCHING (1 << 0)
#define PM_SCAN_CHECK_WPASYNC (1 << 1)
#define PAGEMAP_SCAN _IOWR('f', 16, struct pm_scan_arg)
#endif

/* /proc/PID/pagemap entry bits (Documentation/admin-guide/mm/pagemap.rst). */
#define PM_PRESENT (1ull << 63)
#define PM_SWAP (1ull << 62)
#define PM_FILE (1ull << 61)
#define PM_MMAP_EXCLUSIVE (1ull << 56)

#endif
