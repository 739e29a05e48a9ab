// SPDX-License-Identifier: GPL-2.0-only
/*
 * check_vmscan - which mappings zswapd may evict from, read from smaps text
 * (daemon/vmscan.c), and which it has registered.
 */
#include <check.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check_run.h"
#include "vmscan.h"

struct vma;
int vmscan_registered(const char *smaps, struct vma **ret_vmas, size_t *ret_n);

/* A trimmed /proc/PID/smaps: only header and VmFlags lines matter. */
static const char smaps[] =
	"55d0c0000000-55d0c0021000 rw-p 00000000 00:00 0                          [heap]\n"
	"Size:                132 kB\n"
	"Anonymous:            12 kB\n"
	"VmFlags: rd wr mr mw me ac sd \n"
	"7f0000000000-7f0000400000 rw-p 00000000 00:00 0 \n"
	"Size:               4096 kB\n"
	"AnonHugePages:         0 kB\n"
	"VmFlags: rd wr mr mw me ac sd um uw \n"
	"7f0000400000-7f0000500000 rw-p 00000000 00:00 0 \n"
	"VmFlags: rd wr mr mw me lo ac sd \n"     /* mlocked */
	"7f0000500000-7f0000600000 rw-p 00000000 00:00 0 \n"
	"VmFlags: rd wr mr mw me ac dc sd \n"     /* MADV_DONTFORK */
	"7f0000600000-7f0000700000 rw-p 00000000 00:00 0 \n"
	"VmFlags: rd wr mr mw me ac wf sd \n"     /* MADV_WIPEONFORK */
	"7f0000700000-7f0000800000 rw-s 00000000 00:05 1234                       /memfd:x (deleted)\n"
	"VmFlags: rd wr sh mr mw me ms sd \n"     /* shared */
	"7f0000800000-7f0000900000 r--p 00000000 00:00 0 \n"
	"VmFlags: rd mr mw me ac sd \n"           /* read-only */
	"7f0000900000-7f0000a00000 rw-p 00001000 fe:00 332835                     /usr/lib/libc.so.6\n"
	"VmFlags: rd wr mr mw me ac sd \n"        /* file-backed private */
	"7f0000a00000-7f0000b00000 rw-p 00000000 00:00 0 \n"
	"VmFlags: rd wr mr mw me ac sd ht \n"     /* hugetlb */
	"7ffc00000000-7ffc00021000 rw-p 00000000 00:00 0                          [stack]\n"
	"VmFlags: rd wr mr mw me gd ac \n";

START_TEST(test_parse_eligible)
{
	struct vma *v;
	size_t n;

	ck_assert_int_eq(vmscan_parse(smaps, NULL, 0, &v, &n), 0);
	ck_assert_uint_eq(n, 2); /* [heap] and the plain anonymous mapping */
	ck_assert_uint_eq(v[0].start, 0x55d0c0000000);
	ck_assert_uint_eq(v[0].end, 0x55d0c0021000);
	ck_assert_uint_eq(v[1].start, 0x7f0000000000);
	ck_assert_uint_eq(v[1].end, 0x7f0000400000);
	ck_assert_uint_eq(vmscan_total_pages(v, n), 0x21 + 0x400);
	free(v);
}
END_TEST

/* Shared pages count in the mappings eviction would take from, only. */
START_TEST(test_shared_kb)
{
	static const char shared[] =
		"55d0c0000000-55d0c0021000 rw-p 00000000 00:00 0                          [heap]\n"
		"Shared_Clean:          4 kB\n"
		"Shared_Dirty:          8 kB\n"
		"Private_Dirty:       120 kB\n"
		"VmFlags: rd wr mr mw me ac sd \n"
		"7f0000000000-7f0000400000 rw-p 00000000 00:00 0 \n"
		"Shared_Clean:          0 kB\n"
		"Shared_Dirty:       2048 kB\n"
		"VmFlags: rd wr mr mw me ac sd \n"
		"7f0000400000-7f0000500000 rw-p 00000000 00:00 0 \n"
		"Shared_Dirty:       1024 kB\n"
		"VmFlags: rd wr mr mw me lo ac sd \n"	/* mlocked: VmLck's */
		"7f0000700000-7f0000800000 rw-s 00000000 00:05 1234                       /memfd:x (deleted)\n"
		"Shared_Dirty:       1024 kB\n"
		"VmFlags: rd wr sh mr mw me ms sd \n"	/* a shared mapping */
		"7f0000900000-7f0000a00000 rw-p 00001000 fe:00 332835                     /usr/lib/libc.so.6\n"
		"Shared_Clean:        512 kB\n"
		"VmFlags: rd wr mr mw me ac sd \n"; /* file-backed */

	ck_assert_uint_eq(vmscan_shared_kb(shared), 4 + 8 + 2048);
	ck_assert_uint_eq(vmscan_shared_kb(smaps), 0);
	ck_assert_uint_eq(vmscan_shared_kb(""), 0);
	ck_assert_uint_eq(vmscan_shared_kb("Shared_Dirty: 5 kB\n"), 0); /* no mapping */
}
END_TEST

START_TEST(test_parse_excludes_shim)
{
	/* The agent's area and the beacon cut holes in a mapping. */
	const struct zs_range excl[] = { { 0x7f0000100000, 0x1000 }, { 0x7f00003ff000, 0x1000 } };
	struct vma *v;
	size_t n;

	ck_assert_int_eq(vmscan_parse(smaps, excl, 2, &v, &n), 0);
	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(v[1].start, 0x7f0000000000);
	ck_assert_uint_eq(v[1].end, 0x7f0000100000);
	ck_assert_uint_eq(v[2].start, 0x7f0000101000);
	ck_assert_uint_eq(v[2].end, 0x7f00003ff000);
	free(v);
}
END_TEST

START_TEST(test_parse_empty_and_garbage)
{
	struct vma *v = NULL;
	size_t n = 7;

	ck_assert_int_eq(vmscan_parse("", NULL, 0, &v, &n), 0);
	ck_assert_uint_eq(n, 0);
	free(v);
	ck_assert_int_eq(vmscan_parse("nonsense\nVmFlags: rd wr\n\n", NULL, 0, &v, &n), 0);
	ck_assert_uint_eq(n, 0);
	free(v);
}
END_TEST

START_TEST(test_registered)
{
	struct vma *v;
	size_t n;

	ck_assert_int_eq(vmscan_registered(smaps, &v, &n), 0);
	ck_assert_uint_eq(n, 1); /* only the mapping flagged um/uw */
	ck_assert_uint_eq(v[0].start, 0x7f0000000000);
	free(v);
}
END_TEST

/*
 * Pages chosen one by one (the log of loads): only those inside a vma and
 * present are taken, neighbours merge into one run.  On our own pagemap.
 */
START_TEST(test_pick_pages)
{
	const long pg = sysconf(_SC_PAGESIZE);
	uint8_t *m = mmap(NULL, 8 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t base = (uint64_t)(uintptr_t)m / pg, pgnos[6];
	struct vma vma = { (uint64_t)(uintptr_t)m, (uint64_t)(uintptr_t)m + 6 * pg };
	struct vmscan_run runs[8];
	struct vmscan_result res = { 0 };
	int fd = open("/proc/self/pagemap", O_RDONLY);

	ck_assert_ptr_ne(m, MAP_FAILED);
	ck_assert_int_ge(fd, 0);
	m[1 * pg] = m[2 * pg] = m[4 * pg] = m[7 * pg] = 1; /* 0, 3, 5, 6 never touched */
	pgnos[0] = base + 1;
	pgnos[1] = base + 2; /* next to 1: one run */
	pgnos[2] = base + 3; /* not present */
	pgnos[3] = base + 4;
	pgnos[4] = base + 4; /* twice: once in the batch */
	pgnos[5] = base + 7; /* present, but outside the vma */
	ck_assert_int_eq(vmscan_pick_pages(fd, &vma, 1, pgnos, 6, runs, 8, &res), 0);
	ck_assert_uint_eq(res.npages, 3);
	ck_assert_uint_eq(res.nruns, 2);
	ck_assert_uint_eq(runs[0].addr, (uint64_t)(uintptr_t)(m + pg));
	ck_assert_uint_eq(runs[0].npages, 2);
	ck_assert_uint_eq(runs[1].addr, (uint64_t)(uintptr_t)(m + 4 * pg));
	ck_assert_uint_eq(runs[1].npages, 1);

	/* No room for a second run: it stops after the first. */
	res = (struct vmscan_result){ 0 };
	ck_assert_int_eq(vmscan_pick_pages(fd, &vma, 1, pgnos, 6, runs, 1, &res), 0);
	ck_assert_uint_eq(res.npages, 2);
	ck_assert_uint_eq(res.nruns, 1);
	close(fd);
	munmap(m, 8 * pg);
}
END_TEST

/* No page twice in a batch: overlaps trimmed or dropped, runs sorted. */
START_TEST(test_runs_dedup)
{
	const uint64_t P = 4096, A = 0x100000;
	struct vmscan_run runs[] = {
		{ .addr = A + 10 * P, .npages = 4 }, /* 10..13 */
		{ .addr = A, .npages = 4 },	     /* 0..3 */
		{ .addr = A + 2 * P, .npages = 4 },  /* 2..5: 4..5 left */
		{ .addr = A + 11 * P, .npages = 2 }, /* inside 10..13: gone */
		{ .addr = A + 6 * P, .npages = 1 },  /* 6: kept */
		{ .addr = A + 12 * P, .npages = 3 }, /* 12..14: 14 left */
	};
	size_t n = sizeof(runs) / sizeof(runs[0]);

	ck_assert_uint_eq(vmscan_runs_dedup(runs, &n), 2 + 2 + 2);
	ck_assert_uint_eq(n, 5);
	ck_assert_uint_eq(runs[0].addr, A);
	ck_assert_uint_eq(runs[0].npages, 4);
	ck_assert_uint_eq(runs[1].addr, A + 4 * P);
	ck_assert_uint_eq(runs[1].npages, 2);
	ck_assert_uint_eq(runs[2].addr, A + 6 * P);
	ck_assert_uint_eq(runs[3].addr, A + 10 * P);
	ck_assert_uint_eq(runs[3].npages, 4);
	ck_assert_uint_eq(runs[4].addr, A + 14 * P);
	ck_assert_uint_eq(runs[4].npages, 1);

	n = 0;
	ck_assert_uint_eq(vmscan_runs_dedup(runs, &n), 0);
	ck_assert_uint_eq(n, 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("vmscan");
	TCase *tc = tcase_create("parse");
	SRunner *sr;

	tcase_add_test(tc, test_parse_eligible);
	tcase_add_test(tc, test_parse_excludes_shim);
	tcase_add_test(tc, test_shared_kb);
	tcase_add_test(tc, test_parse_empty_and_garbage);
	tcase_add_test(tc, test_registered);
	tcase_add_test(tc, test_pick_pages);
	tcase_add_test(tc, test_runs_dedup);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	return check_run(sr);
}
