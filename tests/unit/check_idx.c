// SPDX-License-Identifier: GPL-2.0-only
/*
 * check_idx.c - the page index: insert, replace, lookup and erase at node
 * boundaries and at the ends of the key space; walks that honour their
 * bounds and order, including walks whose callback erases as it goes; that
 * emptied nodes are freed (idx_mem_bytes() tracks exactly the nodes the
 * live keys need); and 100k random operations against a plain array.
 *
 * Values are fake pointers: the tree never dereferences them.
 */
#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check_run.h"
#include "check_util.h"
#include "idx.h"

#define VAL(x) ((void *)(uintptr_t)(((uint64_t)(x) << 4) | 8))

static struct idx *new_tree(void)
{
	struct idx *t;

	ck_assert_int_eq(idx_new(&t), 0);
	return t;
}

/* One entry needs a path of four nodes, so that is what a node costs. */
static uint64_t node_bytes(void)
{
	struct idx *t = new_tree();
	uint64_t bytes;

	ck_assert_int_eq(idx_insert(t, 12345, VAL(1), NULL), 0);
	bytes = idx_mem_bytes(t) / 4;
	ck_assert_uint_eq(idx_mem_bytes(t), 4 * bytes);
	ck_assert_uint_ge(bytes, 512 * sizeof(void *));
	idx_free(t, NULL, NULL);
	return bytes;
}

START_TEST(test_empty)
{
	struct idx *t = new_tree();

	ck_assert_uint_eq(idx_count(t), 0);
	ck_assert_uint_eq(idx_mem_bytes(t), 0);
	ck_assert_ptr_null(idx_lookup(t, 0));
	ck_assert_ptr_null(idx_lookup(t, IDX_PGNO_MAX - 1));
	ck_assert_ptr_null(idx_lookup(t, IDX_PGNO_MAX));
	ck_assert_ptr_null(idx_erase(t, 5));
	ck_assert_ptr_null(idx_erase(t, UINT64_MAX));
	idx_free(t, NULL, NULL);
	idx_free(NULL, NULL, NULL);
}
END_TEST

START_TEST(test_insert_lookup_erase)
{
	static const uint64_t keys[] = { 0, 1, 511, 512, 513, 262143, 262144, 1ull << 27,
					 (1ull << 27) - 1, IDX_PGNO_MAX - 1, 0x123456789ull };
	const size_t n = sizeof(keys) / sizeof(keys[0]);
	struct idx *t = new_tree();
	void *old = VAL(999);

	for (size_t i = 0; i < n; i++) {
		ck_assert_int_eq(idx_insert(t, keys[i], VAL(i), &old), 0);
		ck_assert_ptr_null(old);
		ck_assert_uint_eq(idx_count(t), i + 1);
	}
	for (size_t i = 0; i < n; i++) {
		ck_assert_ptr_eq(idx_lookup(t, keys[i]), VAL(i));
		/* Same low bits, other top-level subtree: none of these are in the set. */
		ck_assert_ptr_null(idx_lookup(t, keys[i] ^ (1ull << 35)));
	}
	ck_assert_ptr_null(idx_lookup(t, 2));
	ck_assert_ptr_null(idx_lookup(t, 510));
	ck_assert_ptr_null(idx_lookup(t, 514));
	ck_assert_ptr_null(idx_lookup(t, IDX_PGNO_MAX - 2));
	for (size_t i = 0; i < n; i++) {
		ck_assert_ptr_eq(idx_erase(t, keys[i]), VAL(i));
		ck_assert_ptr_null(idx_lookup(t, keys[i]));
		ck_assert_ptr_null(idx_erase(t, keys[i]));
		ck_assert_uint_eq(idx_count(t), n - i - 1);
		for (size_t j = i + 1; j < n; j++)
			ck_assert_ptr_eq(idx_lookup(t, keys[j]), VAL(j));
	}
	ck_assert_uint_eq(idx_mem_bytes(t), 0);
	idx_free(t, NULL, NULL);
}
END_TEST

START_TEST(test_replace)
{
	struct idx *t = new_tree();
	uint64_t mem;
	void *old = NULL;

	ck_assert_int_eq(idx_insert(t, 777, VAL(1), &old), 0);
	ck_assert_ptr_null(old);
	mem = idx_mem_bytes(t);
	ck_assert_int_eq(idx_insert(t, 777, VAL(2), &old), 0);
	ck_assert_ptr_eq(old, VAL(1));
	ck_assert_uint_eq(idx_count(t), 1);
	ck_assert_uint_eq(idx_mem_bytes(t), mem);
	ck_assert_ptr_eq(idx_lookup(t, 777), VAL(2));
	ck_assert_int_eq(idx_insert(t, 777, VAL(3), &old), 0);
	ck_assert_ptr_eq(old, VAL(2));
	ck_assert_ptr_eq(idx_erase(t, 777), VAL(3));
	ck_assert_uint_eq(idx_count(t), 0);
	idx_free(t, NULL, NULL);
}
END_TEST

START_TEST(test_bad_args)
{
	struct idx *t = new_tree();
	void *old = VAL(5);

	ck_assert_int_eq(idx_insert(t, IDX_PGNO_MAX, VAL(1), &old), -ERANGE);
	ck_assert_int_eq(idx_insert(t, IDX_PGNO_MAX + 512, VAL(1), &old), -ERANGE);
	ck_assert_int_eq(idx_insert(t, UINT64_MAX, VAL(1), &old), -ERANGE);
	ck_assert_ptr_eq(old, VAL(5));
	ck_assert_uint_eq(idx_count(t), 0);
	ck_assert_uint_eq(idx_mem_bytes(t), 0);
	/* A key that aliases a valid one in its low 36 bits must not reach it. */
	ck_assert_int_eq(idx_insert(t, 42, VAL(42), NULL), 0);
	ck_assert_int_eq(idx_insert(t, IDX_PGNO_MAX + 42, VAL(1), &old), -ERANGE);
	ck_assert_ptr_null(idx_lookup(t, IDX_PGNO_MAX + 42));
	ck_assert_ptr_null(idx_erase(t, IDX_PGNO_MAX + 42));
	ck_assert_ptr_eq(idx_lookup(t, 42), VAL(42));
	ck_assert_int_eq(idx_insert(t, 43, NULL, &old), -EINVAL);
	ck_assert_uint_eq(idx_count(t), 1);
	ck_assert_int_eq(idx_insert(t, IDX_PGNO_MAX - 1, VAL(2), &old), 0);
	ck_assert_ptr_eq(idx_lookup(t, IDX_PGNO_MAX - 1), VAL(2));
	idx_free(t, NULL, NULL);
}
END_TEST

struct walk_log {
	uint64_t pgno[64];
	size_t n;
	struct idx *erase_from; /* erase each pgno as it is seen */
	size_t stop_after;	/* return -EINTR on this call (1-based), 0: never */
};

static int log_cb(uint64_t pgno, void *val, void *arg)
{
	struct walk_log *l = arg;

	ck_assert_ptr_eq(val, VAL(pgno));
	ck_assert_uint_lt(l->n, 64);
	l->pgno[l->n++] = pgno;
	if (l->erase_from)
		ck_assert_ptr_eq(idx_erase(l->erase_from, pgno), val);
	if (l->stop_after && l->n == l->stop_after)
		return -EINTR;
	return l->n % 2; /* positive values do not stop the walk */
}

static const uint64_t walk_keys[] = { 0, 511, 512, 262143, 262144, 1ull << 27,
				      (1ull << 27) + 1, IDX_PGNO_MAX - 1 };
#define NR_WALK_KEYS (sizeof(walk_keys) / sizeof(walk_keys[0]))

static struct idx *walk_tree(void)
{
	struct idx *t = new_tree();

	for (size_t i = 0; i < NR_WALK_KEYS; i++)
		ck_assert_int_eq(idx_insert(t, walk_keys[i], VAL(walk_keys[i]), NULL), 0);
	return t;
}

/* Walks [first, last) and checks it saw exactly the walk_keys in that range, in order. */
static void check_walk(struct idx *t, uint64_t first, uint64_t last)
{
	struct walk_log l = { .n = 0 };
	size_t want = 0;

	ck_assert_int_eq(idx_walk(t, first, last, log_cb, &l), 0);
	for (size_t i = 0; i < NR_WALK_KEYS; i++) {
		if (walk_keys[i] < first || walk_keys[i] >= last)
			continue;
		ck_assert_msg(want < l.n && l.pgno[want] == walk_keys[i],
			      "walk [%#llx, %#llx): missed %#llx", (unsigned long long)first,
			      (unsigned long long)last, (unsigned long long)walk_keys[i]);
		want++;
	}
	ck_assert_msg(l.n == want, "walk [%#llx, %#llx): %zu calls, want %zu",
		      (unsigned long long)first, (unsigned long long)last, l.n, want);
}

START_TEST(test_walk_bounds)
{
	struct idx *t = walk_tree();

	check_walk(t, 0, IDX_PGNO_MAX);
	check_walk(t, 0, UINT64_MAX);
	check_walk(t, 0, 0);
	check_walk(t, 0, 1);
	check_walk(t, 1, 511);
	check_walk(t, 1, 512);
	check_walk(t, 511, 512);
	check_walk(t, 511, 513);
	check_walk(t, 512, 262143);
	check_walk(t, 512, 262144);
	check_walk(t, 262143, 262145);
	check_walk(t, 262144, 1ull << 27);
	check_walk(t, 262145, (1ull << 27) + 1);
	check_walk(t, 1ull << 27, (1ull << 27) + 2);
	check_walk(t, (1ull << 27) + 1, IDX_PGNO_MAX - 1);
	check_walk(t, (1ull << 27) + 2, IDX_PGNO_MAX);
	check_walk(t, IDX_PGNO_MAX - 1, IDX_PGNO_MAX);
	check_walk(t, IDX_PGNO_MAX, UINT64_MAX);
	check_walk(t, 1000, 10);
	/* Every boundary against every other. */
	for (size_t i = 0; i < NR_WALK_KEYS; i++)
		for (size_t j = 0; j < NR_WALK_KEYS; j++)
			for (int d = -1; d <= 1; d++)
				check_walk(t, walk_keys[i], walk_keys[j] + (uint64_t)d);
	idx_free(t, NULL, NULL);
}
END_TEST

START_TEST(test_walk_stop)
{
	struct idx *t = walk_tree();
	struct walk_log l = { .stop_after = 3 };

	ck_assert_int_eq(idx_walk(t, 0, IDX_PGNO_MAX, log_cb, &l), -EINTR);
	ck_assert_uint_eq(l.n, 3);
	ck_assert_uint_eq(l.pgno[2], walk_keys[2]);
	idx_free(t, NULL, NULL);
}
END_TEST

START_TEST(test_walk_erase_small)
{
	struct idx *t = walk_tree();
	struct walk_log l = { .erase_from = t };

	/* Erase a middle range: exactly those go, the rest stay. */
	ck_assert_int_eq(idx_walk(t, 512, (1ull << 27) + 1, log_cb, &l), 0);
	ck_assert_uint_eq(l.n, 4);
	ck_assert_uint_eq(idx_count(t), NR_WALK_KEYS - 4);
	ck_assert_ptr_eq(idx_lookup(t, 511), VAL(511));
	ck_assert_ptr_eq(idx_lookup(t, (1ull << 27) + 1), VAL((1ull << 27) + 1));
	ck_assert_ptr_null(idx_lookup(t, 262144));
	l.n = 0;
	ck_assert_int_eq(idx_walk(t, 0, IDX_PGNO_MAX, log_cb, &l), 0);
	ck_assert_uint_eq(l.n, NR_WALK_KEYS - 4);
	ck_assert_uint_eq(idx_count(t), 0);
	ck_assert_uint_eq(idx_mem_bytes(t), 0);
	idx_free(t, NULL, NULL);
}
END_TEST

struct erase_ctx {
	struct idx *t;
	uint64_t prev;
	size_t seen;
	bool only_odd;
};

static int erase_cb(uint64_t pgno, void *val, void *arg)
{
	struct erase_ctx *c = arg;

	if (c->seen && pgno <= c->prev)
		return -EILSEQ;
	if (val != VAL(pgno))
		return -EBADMSG;
	c->prev = pgno;
	c->seen++;
	if (!c->only_odd || pgno % 2)
		if (idx_erase(c->t, pgno) != val)
			return -ENOENT;
	return 0;
}

/* Dense runs, lone pages and node boundaries; erasing them frees every node. */
START_TEST(test_walk_erase_all)
{
	struct idx *t = new_tree();
	struct erase_ctx c = { .t = t };
	size_t n = 0, n_even = 0;

	rng_state = 77;
	for (uint64_t k = 0; k < 3000; k++) {
		ck_assert_int_eq(idx_insert(t, k, VAL(k), NULL), 0);
		n++;
		n_even += k % 2 == 0;
	}
	for (int i = 0; i < 5000; i++) {
		uint64_t k = 3000 + rng_next() % (IDX_PGNO_MAX - 3000);
		void *old = NULL;

		ck_assert_int_eq(idx_insert(t, k, VAL(k), &old), 0);
		n += old == NULL;
		n_even += old == NULL && k % 2 == 0;
	}
	ck_assert_uint_eq(idx_count(t), n);

	c.only_odd = true;
	ck_assert_int_eq(idx_walk(t, 0, IDX_PGNO_MAX, erase_cb, &c), 0);
	ck_assert_uint_eq(c.seen, n);
	ck_assert_uint_eq(idx_count(t), n_even);
	for (uint64_t k = 0; k < 3000; k++)
		ck_assert_ptr_eq(idx_lookup(t, k), k % 2 ? NULL : VAL(k));

	c.only_odd = false;
	c.seen = 0;
	n = idx_count(t);
	ck_assert_int_eq(idx_walk(t, 0, IDX_PGNO_MAX, erase_cb, &c), 0);
	ck_assert_uint_eq(c.seen, n);
	ck_assert_uint_eq(idx_count(t), 0);
	ck_assert_uint_eq(idx_mem_bytes(t), 0);
	idx_free(t, NULL, NULL);
}
END_TEST

static int count_cb(uint64_t pgno, void *val, void *arg)
{
	(void)pgno;
	(void)val;
	(*(size_t *)arg)++;
	return 0;
}

/* A walk over the whole key space of a sparse tree must skip the holes whole. */
START_TEST(test_walk_sparse_is_cheap)
{
	static const uint64_t keys[] = { 5, 1ull << 30, IDX_PGNO_MAX - 1 };
	struct idx *t = new_tree();
	size_t calls = 0;

	for (size_t i = 0; i < 3; i++)
		ck_assert_int_eq(idx_insert(t, keys[i], VAL(keys[i]), NULL), 0);
	for (int i = 0; i < 2000; i++)
		ck_assert_int_eq(idx_walk(t, 0, IDX_PGNO_MAX, count_cb, &calls), 0);
	ck_assert_uint_eq(calls, 3 * 2000);
	idx_free(t, NULL, NULL);
}
END_TEST

/*
 * idx_mem_bytes() against the nodes the live keys need: one leaf per
 * distinct pgno >> 9, one node above it per pgno >> 18, per pgno >> 27, and
 * the root.
 */
static uint64_t nodes_needed(const uint64_t *keys, const bool *live, size_t n)
{
	uint64_t nodes = 0;

	for (unsigned shift = 9; shift <= 36; shift += 9) {
		uint64_t last = UINT64_MAX;

		for (size_t i = 0; i < n; i++) {
			if (!live[i] || keys[i] >> shift == last)
				continue;
			last = keys[i] >> shift;
			nodes++;
		}
	}
	return nodes;
}

#define NR_KEYS 8192
#define NR_OPS 100000

static uint64_t *ref_keys;
static void **ref_val;
static bool *ref_live;

/* Clustered keys (heaps, stacks) with lone pages and node edges among them. */
static void make_keys(void)
{
	size_t n = 0;

	ref_keys = calloc(NR_KEYS, sizeof(*ref_keys));
	ref_val = calloc(NR_KEYS, sizeof(*ref_val));
	ref_live = calloc(NR_KEYS, sizeof(*ref_live));
	while (n < NR_KEYS) {
		uint64_t r = rng_next(), k;

		switch (r % 4) {
		case 0:
			k = 0x55550000ull + (r >> 8) % 2048;
			break;
		case 1:
			k = (IDX_PGNO_MAX - 1) - (r >> 8) % 1024;
			break;
		case 2:
			k = ((r >> 8) % 64) * 262144 + (r >> 20) % 3 - 1;
			break;
		default:
			k = (r >> 8) % IDX_PGNO_MAX;
			break;
		}
		if (k >= IDX_PGNO_MAX)
			continue;
		ref_keys[n++] = k;
	}
	qsort(ref_keys, NR_KEYS, sizeof(*ref_keys), cmp_u64);
	n = 0;
	for (size_t i = 0; i < NR_KEYS; i++)
		if (i == 0 || ref_keys[i] != ref_keys[n - 1])
			ref_keys[n++] = ref_keys[i];
	while (n < NR_KEYS) /* pad with keys no one will look for: they stay dead */
		ref_keys[n++] = UINT64_MAX;
}

static void free_keys(void)
{
	free(ref_keys);
	free(ref_val);
	free(ref_live);
}

/* What the tree should hold at key i. */
static void *ref_expect(size_t i)
{
	return ref_live[i] ? ref_val[i] : NULL;
}

static size_t lower_bound(uint64_t k)
{
	size_t lo = 0, hi = NR_KEYS;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ref_keys[mid] < k)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

struct ref_walk {
	size_t next; /* index into ref_keys expected next */
	uint64_t last;
	bool bad;
};

static int ref_walk_cb(uint64_t pgno, void *val, void *arg)
{
	struct ref_walk *w = arg;

	while (w->next < NR_KEYS && !ref_live[w->next])
		w->next++;
	if (pgno >= w->last || w->next >= NR_KEYS || ref_keys[w->next] != pgno ||
	    ref_val[w->next] != val) {
		w->bad = true;
		return -EBADMSG;
	}
	w->next++;
	return 0;
}

static void check_ref_walk(struct idx *t, uint64_t first, uint64_t last)
{
	struct ref_walk w = { .next = lower_bound(first), .last = last };
	size_t end = lower_bound(last);

	ck_assert_msg(idx_walk(t, first, last, ref_walk_cb, &w) == 0 && !w.bad,
		      "walk [%#llx, %#llx) disagrees at key index %zu", (unsigned long long)first,
		      (unsigned long long)last, w.next);
	while (w.next < end && !ref_live[w.next])
		w.next++;
	ck_assert_msg(w.next >= end, "walk [%#llx, %#llx) stopped early",
		      (unsigned long long)first, (unsigned long long)last);
}

static size_t ref_live_count;

static void ref_insert(struct idx *t, size_t i, void *v)
{
	void *old = VAL(0);

	ck_assert_int_eq(idx_insert(t, ref_keys[i], v, &old), 0);
	ck_assert_ptr_eq(old, ref_expect(i));
	ref_live_count += !ref_live[i];
	ref_live[i] = true;
	ref_val[i] = v;
}

static void ref_erase(struct idx *t, size_t i)
{
	ck_assert_ptr_eq(idx_erase(t, ref_keys[i]), ref_expect(i));
	ref_live_count -= ref_live[i];
	ref_live[i] = false;
}

/* Key i, and the page after it when that is no key at all. */
static void ref_lookup(struct idx *t, size_t i, size_t nkeys)
{
	size_t j = lower_bound(ref_keys[i] + 1);

	ck_assert_ptr_eq(idx_lookup(t, ref_keys[i]), ref_expect(i));
	if (j < nkeys && ref_keys[j] != ref_keys[i] + 1)
		ck_assert_ptr_null(idx_lookup(t, ref_keys[i] + 1));
}

START_TEST(test_random_vs_reference)
{
	struct idx *t = new_tree();
	uint64_t node = node_bytes();
	size_t nkeys;

	rng_state = 0xabcdef12345ull;
	make_keys();
	nkeys = lower_bound(UINT64_MAX);
	ref_live_count = 0;
	for (int op = 0; op < NR_OPS; op++) {
		uint64_t r = rng_next();
		size_t i = (size_t)((r >> 16) % nkeys);
		unsigned kind = (unsigned)(r % 8);

		if (kind < 4)
			ref_insert(t, i, VAL(op + 1));
		else if (kind < 6)
			ref_erase(t, i);
		else if (kind == 6)
			ref_lookup(t, i, nkeys);
		else
			check_ref_walk(t, ref_keys[i] - (r >> 40) % 3,
				       ref_keys[(i + (r >> 24) % 600) % nkeys] + 1);
		ck_assert_uint_eq(idx_count(t), ref_live_count);
		if (op % 5000 == 0)
			ck_assert_uint_eq(idx_mem_bytes(t),
					  node * nodes_needed(ref_keys, ref_live, nkeys));
	}
	check_ref_walk(t, 0, IDX_PGNO_MAX);
	ck_assert_uint_eq(idx_mem_bytes(t), node * nodes_needed(ref_keys, ref_live, nkeys));
	for (size_t i = 0; i < nkeys; i++)
		if (ref_live[i])
			ref_erase(t, i);
	ck_assert_uint_eq(idx_count(t), 0);
	ck_assert_uint_eq(idx_mem_bytes(t), 0);
	free_keys();
	idx_free(t, NULL, NULL);
}
END_TEST

#define NR_DROP 3000

struct drop_ctx {
	unsigned seen[NR_DROP];
	size_t calls;
};

static void drop_cb(void *val, void *arg)
{
	struct drop_ctx *c = arg;
	unsigned *p = val;

	ck_assert(p >= c->seen && p < c->seen + NR_DROP);
	(*p)++;
	c->calls++;
}

START_TEST(test_free_drops_each_once)
{
	static struct drop_ctx c;
	struct idx *t = new_tree();
	size_t n = 0;

	rng_state = 31337;
	for (size_t i = 0; i < NR_DROP; i++) {
		uint64_t k = i < NR_DROP / 2 ? 1000 + i : rng_next() % IDX_PGNO_MAX;
		void *old = NULL;

		ck_assert_int_eq(idx_insert(t, k, &c.seen[i], &old), 0);
		if (old) /* a random key repeated: the old value leaves the tree */
			*(unsigned *)old = 1;
		else
			n++;
	}
	idx_free(t, drop_cb, &c);
	ck_assert_uint_eq(c.calls, n);
	for (size_t i = 0; i < NR_DROP; i++)
		ck_assert_msg(c.seen[i] == 1, "value %zu dropped %u times", i, c.seen[i]);
}
END_TEST

static Suite *idx_suite(void)
{
	Suite *s = suite_create("idx");
	TCase *tc = tcase_create("basic");

	tcase_add_test(tc, test_empty);
	tcase_add_test(tc, test_insert_lookup_erase);
	tcase_add_test(tc, test_replace);
	tcase_add_test(tc, test_bad_args);
	tcase_add_test(tc, test_free_drops_each_once);
	suite_add_tcase(s, tc);

	tc = tcase_create("walk");
	tcase_add_test(tc, test_walk_bounds);
	tcase_add_test(tc, test_walk_stop);
	tcase_add_test(tc, test_walk_erase_small);
	tcase_add_test(tc, test_walk_erase_all);
	tcase_add_test(tc, test_walk_sparse_is_cheap);
	tcase_set_timeout(tc, 30);
	suite_add_tcase(s, tc);

	tc = tcase_create("random");
	tcase_add_test(tc, test_random_vs_reference);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(idx_suite());

	return check_run(sr);
}
