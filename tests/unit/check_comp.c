// SPDX-License-Identifier: GPL-2.0-only
/*
 * check_comp.c - the compressors and the same-filled test: every algorithm
 * round-trips the kinds of pages a process swaps out (zero, same-filled,
 * text, arrays of structs, incompressible), stays within COMP_BOUND, and
 * turns truncated, padded, corrupted or wrong-sized input into -EIO without
 * writing past the page.  Buffers are malloc'd at their exact size so the
 * sanitizers see any overrun.
 */
#include <check.h>
#include <errno.h>
#include <lz4.h>
#include <lzo/lzo1x.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "check_run.h"
#include "check_util.h"
#include "comp.h"

#define SAME_WORD UINT64_C(0xdeadbeefcafebabe)

enum page_kind {
	PAGE_ZERO,
	PAGE_SAME,
	PAGE_TEXT,
	PAGE_STRUCTS,
	PAGE_RANDOM,
	_PAGE_MAX,
};

static const char *const page_kind_name[] = { "zero", "same-filled", "text", "structs",
					      "random" };

static void fill_text(uint8_t *page)
{
	static const char *const words[] = {
		"the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog",
		"memory", "page", "kernel", "process", "swap", "and", "of", "to",
		"in", "is", "that", "for", "with", "as", "was", "on", "it", "by",
		"daemon", "when", "which", "their", "would", "there", "could",
		"between", "because", "under", "pressure", "reclaim", "cold",
		"anonymous", "fault", "compressed",
	};
	size_t pos = 0, nwords = sizeof(words) / sizeof(words[0]);

	while (pos < ZS_PAGE_SIZE) {
		const char *w = words[rng_next() % nwords];
		const char *sep = rng_next() % 11 == 0 ? ". " : " ";

		for (const char *s = w; *s && pos < ZS_PAGE_SIZE; s++)
			page[pos++] = (uint8_t)*s;
		for (const char *s = sep; *s && pos < ZS_PAGE_SIZE; s++)
			page[pos++] = (uint8_t)*s;
	}
}

struct sample_rec {
	uint32_t id;
	uint16_t flags;
	uint16_t kind;
	uint64_t counter;
	uint64_t next;
	char tag[8];
};

static void fill_structs(uint8_t *page)
{
	struct sample_rec r;

	for (size_t i = 0; i < ZS_PAGE_SIZE / sizeof(r); i++) {
		memset(&r, 0, sizeof(r));
		r.id = (uint32_t)(1000 + i);
		r.flags = (uint16_t)(i % 3 ? 0x11 : 0x80);
		r.kind = (uint16_t)(i % 5);
		r.counter = UINT64_C(0x100000000) + 7 * i;
		r.next = UINT64_C(0x7f0000001000) + (i + 1) * sizeof(r);
		snprintf(r.tag, sizeof(r.tag), "obj%zu", i % 100);
		memcpy(page + i * sizeof(r), &r, sizeof(r));
	}
}

static void fill_page(uint8_t *page, enum page_kind kind)
{
	rng_state = UINT64_C(0x9e3779b97f4a7c15) + (uint64_t)kind;
	switch (kind) {
	case PAGE_ZERO:
		memset(page, 0, ZS_PAGE_SIZE);
		break;
	case PAGE_SAME:
		comp_fill(page, SAME_WORD);
		break;
	case PAGE_TEXT:
		fill_text(page);
		break;
	case PAGE_STRUCTS:
		fill_structs(page);
		break;
	default:
		for (size_t i = 0; i < ZS_PAGE_SIZE; i += 8) {
			uint64_t w = rng_next();

			memcpy(page + i, &w, sizeof(w));
		}
		break;
	}
}

static struct comp *comp;
static uint8_t *src_page, *out_page, *cbuf;

static void setup_alg(enum comp_alg alg)
{
	ck_assert_int_eq(comp_new(alg, &comp), 0);
	ck_assert_int_eq(comp_alg(comp), alg);
	src_page = malloc(ZS_PAGE_SIZE);
	out_page = malloc(ZS_PAGE_SIZE);
	cbuf = malloc(COMP_BOUND);
	ck_assert(src_page && out_page && cbuf);
}

static void teardown_alg(void)
{
	comp_free(comp);
	free(src_page);
	free(out_page);
	free(cbuf);
	comp = NULL;
	src_page = out_page = cbuf = NULL;
}

/* Compresses src_page into cbuf and checks the length contract. */
static int compress_src(enum page_kind kind)
{
	int len = comp_compress(comp, src_page, cbuf, COMP_BOUND);

	ck_assert_msg(len > 0 && (unsigned)len <= COMP_BOUND, "%s/%s page: length %d",
		      comp_name(comp_alg(comp)), page_kind_name[kind], len);
	return len;
}

static void check_round_trip(enum page_kind kind)
{
	int len;

	fill_page(src_page, kind);
	len = compress_src(kind);
	memset(out_page, 0xa5, ZS_PAGE_SIZE);
	ck_assert_int_eq(comp_decompress(comp, cbuf, (size_t)len, out_page), 0);
	ck_assert_msg(memcmp(src_page, out_page, ZS_PAGE_SIZE) == 0, "%s/%s page differs",
		      comp_name(comp_alg(comp)), page_kind_name[kind]);
	if (kind != PAGE_RANDOM)
		ck_assert_msg((unsigned)len < ZS_PAGE_SIZE * 3 / 4, "%s/%s page: %d bytes",
			      comp_name(comp_alg(comp)), page_kind_name[kind], len);
}

START_TEST(test_round_trip)
{
	setup_alg((enum comp_alg)_i);
	for (int kind = 0; kind < _PAGE_MAX; kind++)
		check_round_trip((enum page_kind)kind);
	/* Again, in reverse: contexts are reused and must not carry state over. */
	for (int kind = _PAGE_MAX; kind-- > 0;)
		check_round_trip((enum page_kind)kind);
	teardown_alg();
}
END_TEST

START_TEST(test_small_dst_refused)
{
	setup_alg((enum comp_alg)_i);
	fill_page(src_page, PAGE_TEXT);
	ck_assert_int_eq(comp_compress(comp, src_page, cbuf, COMP_BOUND - 1), -EINVAL);
	ck_assert_int_eq(comp_compress(comp, src_page, cbuf, 0), -EINVAL);
	teardown_alg();
}
END_TEST

START_TEST(test_truncated)
{
	int len;

	setup_alg((enum comp_alg)_i);
	for (int kind = 0; kind < _PAGE_MAX; kind++) {
		fill_page(src_page, (enum page_kind)kind);
		len = compress_src((enum page_kind)kind);
		ck_assert_int_eq(comp_decompress(comp, cbuf, 0, out_page), -EIO);
		for (int cut = 1; cut < len; cut += cut < 16 ? 1 : 37) {
			/* An exact-size copy, so reading past the end is caught. */
			uint8_t *tr = malloc((size_t)cut);

			memcpy(tr, cbuf, (size_t)cut);
			ck_assert_msg(comp_decompress(comp, tr, (size_t)cut, out_page) == -EIO,
				      "%s/%s page cut to %d of %d bytes decoded",
				      comp_name((enum comp_alg)_i), page_kind_name[kind], cut, len);
			free(tr);
		}
		ck_assert_int_eq(comp_decompress(comp, cbuf, (size_t)len - 1, out_page), -EIO);
	}
	teardown_alg();
}
END_TEST

START_TEST(test_trailing_garbage)
{
	int len;
	uint8_t *padded;

	setup_alg((enum comp_alg)_i);
	fill_page(src_page, PAGE_TEXT);
	len = compress_src(PAGE_TEXT);
	padded = malloc((size_t)len + 16);
	memcpy(padded, cbuf, (size_t)len);
	memset(padded + len, 0x5a, 16);
	ck_assert_int_eq(comp_decompress(comp, padded, (size_t)len + 1, out_page), -EIO);
	ck_assert_int_eq(comp_decompress(comp, padded, (size_t)len + 16, out_page), -EIO);
	free(padded);
	teardown_alg();
}
END_TEST

/* Garbage must be refused; a corrupted stream may decode, but only into the page. */
START_TEST(test_corrupted)
{
	uint8_t *bad = malloc(COMP_BOUND);
	int len, r, refused = 0, tries = 0;

	setup_alg((enum comp_alg)_i);
	memset(bad, 0xff, 64);
	ck_assert_int_eq(comp_decompress(comp, bad, 64, out_page), -EIO);
	rng_state = 42;
	for (size_t i = 0; i < COMP_BOUND; i++)
		bad[i] = (uint8_t)rng_next();
	ck_assert_int_eq(comp_decompress(comp, bad, 300, out_page), -EIO);
	ck_assert_int_eq(comp_decompress(comp, bad, COMP_BOUND, out_page), -EIO);

	for (int kind = PAGE_TEXT; kind < _PAGE_MAX; kind++) {
		fill_page(src_page, (enum page_kind)kind);
		len = compress_src((enum page_kind)kind);
		rng_state = 7 + (uint64_t)kind;
		for (int n = 0; n < 2000; n++) {
			memcpy(bad, cbuf, (size_t)len);
			for (int flips = 1 + n % 4; flips > 0; flips--)
				bad[rng_next() % (uint64_t)len] ^= (uint8_t)(1 << rng_next() % 8);
			r = comp_decompress(comp, bad, (size_t)len, out_page);
			ck_assert_msg(r == 0 || r == -EIO, "corrupt input gave %d", r);
			refused += r == -EIO;
			tries++;
		}
	}
	ck_assert_msg(refused > 0, "%s: none of %d corruptions detected", comp_name(comp_alg(comp)),
		      tries);
	free(bad);
	teardown_alg();
}
END_TEST

/*
 * Streams that are valid but decode to other than one page: built with the
 * libraries directly, since comp_compress() only makes whole pages.
 */
static size_t raw_compress(enum comp_alg alg, const uint8_t *in, size_t n, uint8_t *out,
			   size_t cap)
{
	static _Alignas(16) uint8_t wrk[LZO1X_1_MEM_COMPRESS];
	lzo_uint lzo_len = 0;
	size_t len = 0;
	int r;

	switch (alg) {
	case COMP_LZO:
		ck_assert_int_eq(lzo_init(), LZO_E_OK);
		ck_assert_int_eq(lzo1x_1_compress(in, n, out, &lzo_len, wrk), LZO_E_OK);
		len = lzo_len;
		break;
	case COMP_LZ4:
		r = LZ4_compress_default((const char *)in, (char *)out, (int)n, (int)cap);
		ck_assert_int_gt(r, 0);
		len = (size_t)r;
		break;
	default:
		len = ZSTD_compress(out, cap, in, n, 1);
		ck_assert(!ZSTD_isError(len));
		break;
	}
	return len;
}

START_TEST(test_wrong_size)
{
	static const size_t sizes[] = { 1, 2048, ZS_PAGE_SIZE - 1, ZS_PAGE_SIZE + 1, 8192 };
	enum comp_alg alg = (enum comp_alg)_i;
	uint8_t *in = malloc(8192), *out = malloc(COMP_BOUND * 2);
	size_t len;

	setup_alg(alg);
	fill_page(in, PAGE_TEXT);
	fill_page(in + ZS_PAGE_SIZE, PAGE_STRUCTS);
	/* The control: a raw page stream is accepted. */
	len = raw_compress(alg, in, ZS_PAGE_SIZE, out, COMP_BOUND * 2);
	ck_assert_int_eq(comp_decompress(comp, out, len, out_page), 0);
	ck_assert_int_eq(memcmp(in, out_page, ZS_PAGE_SIZE), 0);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		len = raw_compress(alg, in, sizes[i], out, COMP_BOUND * 2);
		ck_assert_msg(comp_decompress(comp, out, len, out_page) == -EIO,
			      "%s: a %zu-byte stream was taken for a page", comp_name(alg),
			      sizes[i]);
	}
	free(in);
	free(out);
	teardown_alg();
}
END_TEST

START_TEST(test_same_filled)
{
	uint8_t *page = malloc(ZS_PAGE_SIZE + 1);
	uint64_t word = 77;

	fill_page(page, PAGE_ZERO);
	ck_assert(comp_same_filled(page, &word));
	ck_assert_uint_eq(word, 0);
	ck_assert(comp_same_filled(page, NULL));

	fill_page(page, PAGE_SAME);
	ck_assert(comp_same_filled(page, &word));
	ck_assert_uint_eq(word, SAME_WORD);

	/* Callers need not align the page. */
	comp_fill(page + 1, SAME_WORD);
	word = 77;
	ck_assert(comp_same_filled(page + 1, &word));
	ck_assert_uint_eq(word, SAME_WORD);

	for (enum page_kind k = PAGE_TEXT; k < _PAGE_MAX; k++) {
		fill_page(page, k);
		word = 77;
		ck_assert_msg(!comp_same_filled(page, &word), "%s page", page_kind_name[k]);
		ck_assert_uint_eq(word, 77);
	}
	free(page);
}
END_TEST

/* Each position that can differ: first byte, a middle word, the last byte. */
START_TEST(test_same_filled_one_byte_off)
{
	static const size_t where[] = { 0, 7, 8, 2048, 2055, ZS_PAGE_SIZE - 8, ZS_PAGE_SIZE - 1 };
	uint8_t *page = malloc(ZS_PAGE_SIZE);
	uint64_t word = 77;

	for (size_t i = 0; i < sizeof(where) / sizeof(where[0]); i++) {
		comp_fill(page, SAME_WORD);
		page[where[i]] ^= 1;
		ck_assert_msg(!comp_same_filled(page, &word), "byte %zu differs", where[i]);
		ck_assert_uint_eq(word, 77);
		memset(page, 0, ZS_PAGE_SIZE);
		page[where[i]] = 1;
		ck_assert_msg(!comp_same_filled(page, &word), "byte %zu set", where[i]);
	}
	free(page);
}
END_TEST

START_TEST(test_fill)
{
	uint8_t *page = malloc(ZS_PAGE_SIZE);
	uint64_t w;

	comp_fill(page, SAME_WORD);
	for (size_t i = 0; i < ZS_PAGE_SIZE; i += 8) {
		memcpy(&w, page + i, sizeof(w));
		ck_assert_uint_eq(w, SAME_WORD);
	}
	comp_fill(page, 0);
	for (size_t i = 0; i < ZS_PAGE_SIZE; i++)
		ck_assert_uint_eq(page[i], 0);
	free(page);
}
END_TEST

START_TEST(test_parse)
{
	static const struct {
		const char *s;
		enum comp_alg alg;
	} good[] = {
		{ "lzo", COMP_LZO },
		{ "lzo1x", COMP_LZO },
		{ "lz4", COMP_LZ4 },
		{ "zstd", COMP_ZSTD },
	};
	static const char *const bad[] = { "", "lz", "lzo1", "lz4hc", "zstd ", " lz4", "deflate",
					   "zlib", "842" };
	enum comp_alg alg;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		alg = _COMP_MAX;
		ck_assert_int_eq(comp_parse(good[i].s, &alg), 0);
		ck_assert_int_eq(alg, good[i].alg);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		alg = _COMP_MAX;
		ck_assert_msg(comp_parse(bad[i], &alg) == -EINVAL, "'%s' accepted", bad[i]);
		ck_assert_int_eq(alg, _COMP_MAX);
	}
	ck_assert_int_eq(comp_parse(NULL, &alg), -EINVAL);
}
END_TEST

START_TEST(test_names)
{
	enum comp_alg back;

	ck_assert_str_eq(comp_name(COMP_LZO), "lzo");
	ck_assert_str_eq(comp_name(COMP_LZ4), "lz4");
	ck_assert_str_eq(comp_name(COMP_ZSTD), "zstd");
	ck_assert_ptr_null(comp_name(_COMP_MAX));
	for (int a = 0; a < _COMP_MAX; a++) {
		ck_assert_int_eq(comp_parse(comp_name((enum comp_alg)a), &back), 0);
		ck_assert_int_eq(back, a);
	}
}
END_TEST

START_TEST(test_new_bad_alg)
{
	static int sentinel;
	struct comp *c = (struct comp *)&sentinel;

	ck_assert_int_eq(comp_new(_COMP_MAX, &c), -EINVAL);
	ck_assert_ptr_eq(c, (struct comp *)&sentinel);
	comp_free(NULL);
}
END_TEST

static Suite *comp_suite(void)
{
	Suite *s = suite_create("comp");
	TCase *tc = tcase_create("codec");

	tcase_add_loop_test(tc, test_round_trip, 0, _COMP_MAX);
	tcase_add_loop_test(tc, test_small_dst_refused, 0, _COMP_MAX);
	tcase_add_loop_test(tc, test_truncated, 0, _COMP_MAX);
	tcase_add_loop_test(tc, test_trailing_garbage, 0, _COMP_MAX);
	tcase_add_loop_test(tc, test_corrupted, 0, _COMP_MAX);
	tcase_add_loop_test(tc, test_wrong_size, 0, _COMP_MAX);
	tcase_set_timeout(tc, 30);
	suite_add_tcase(s, tc);

	tc = tcase_create("same-filled");
	tcase_add_test(tc, test_same_filled);
	tcase_add_test(tc, test_same_filled_one_byte_off);
	tcase_add_test(tc, test_fill);
	suite_add_tcase(s, tc);

	tc = tcase_create("names");
	tcase_add_test(tc, test_parse);
	tcase_add_test(tc, test_names);
	tcase_add_test(tc, test_new_bad_alg);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(comp_suite());

	return check_run(sr);
}
