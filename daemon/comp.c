// SPDX-License-Identifier: GPL-2.0-only
/*
 * comp.c - the three page compressors and the same-filled test (see comp.h).
 *
 * Owns the per-algorithm state.  Everything an algorithm needs between calls
 * is allocated once in comp_new(): the lzo1x-1 dictionary (64K on 64-bit),
 * and zstd's compression and decompression contexts, which otherwise cost a
 * malloc/free of several hundred kilobytes per page.  lz4 keeps its state on
 * the stack and needs nothing.  A struct comp is therefore cheap to use and
 * expensive to create: one per worker thread, made at start-up.
 *
 * Decompression is the daemon's trust boundary for its own memory: the bytes
 * come out of the pool, and a stray write there must cost one page (-EIO,
 * the faulting process gets SIGBUS) rather than the daemon.  So only the
 * bounds-checked decoders are used, the output buffer is always exactly one
 * page, and anything that does not decode to exactly one page is refused.
 *
 * The same-filled test runs on every page before compression, so it is made
 * to fail fast: word 0 against the last word rejects most pages after two
 * loads, and only pages that pass that go through the full loop.
 */
#include <errno.h>
#include <limits.h>
#include <lz4.h>
#include <lzo/lzo1x.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "comp.h"

#define COMP_ZSTD_LEVEL 1
#define COMP_LZO_BOUND(n) ((n) + (n) / 16 + 64 + 3)
#define COMP_PAGE_WORDS (ZS_PAGE_SIZE / sizeof(uint64_t))

_Static_assert(COMP_LZO_BOUND(ZS_PAGE_SIZE) <= COMP_BOUND, "COMP_BOUND too small for lzo");
_Static_assert(LZ4_COMPRESSBOUND(ZS_PAGE_SIZE) <= COMP_BOUND, "COMP_BOUND too small for lz4");
_Static_assert(ZSTD_COMPRESSBOUND(ZS_PAGE_SIZE) <= COMP_BOUND, "COMP_BOUND too small for zstd");
_Static_assert(COMP_BOUND <= INT_MAX, "compressed lengths are returned as int");

struct comp {
	enum comp_alg alg;
	void *lzo_wrkmem;
	ZSTD_CCtx *zcctx;
	ZSTD_DCtx *zdctx;
};

static const struct {
	const char *name;
	enum comp_alg alg;
} comp_names[] = {
	{ "lzo", COMP_LZO },
	{ "lzo1x", COMP_LZO },
	{ "lz4", COMP_LZ4 },
	{ "zstd", COMP_ZSTD },
};

static pthread_once_t comp_lzo_once = PTHREAD_ONCE_INIT;
static int comp_lzo_status = LZO_E_ERROR;

int comp_parse(const char *name, enum comp_alg *ret_alg)
{
	if (!name)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(comp_names) / sizeof(comp_names[0]); i++) {
		if (strcmp(name, comp_names[i].name) == 0) {
			*ret_alg = comp_names[i].alg;
			return 0;
		}
	}
	return -EINVAL;
}

/* The first spelling in comp_names is the canonical one. */
const char *comp_name(enum comp_alg alg)
{
	for (size_t i = 0; i < sizeof(comp_names) / sizeof(comp_names[0]); i++)
		if (comp_names[i].alg == alg)
			return comp_names[i].name;
	return NULL;
}

/* lzo_init() checks the library was built for this ABI; its answer never changes. */
static void comp_lzo_init_once(void)
{
	comp_lzo_status = lzo_init();
}

static int comp_setup_lzo(struct comp *c)
{
	pthread_once(&comp_lzo_once, comp_lzo_init_once);
	if (comp_lzo_status != LZO_E_OK)
		return -ELIBBAD;
	c->lzo_wrkmem = malloc(LZO1X_1_MEM_COMPRESS);
	return c->lzo_wrkmem ? 0 : -ENOMEM;
}

static int comp_setup_zstd(struct comp *c)
{
	c->zcctx = ZSTD_createCCtx();
	c->zdctx = ZSTD_createDCtx();
	return c->zcctx && c->zdctx ? 0 : -ENOMEM;
}

int comp_new(enum comp_alg alg, struct comp **ret_comp)
{
	struct comp *c;
	int r = 0;

	if ((unsigned)alg >= _COMP_MAX)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->alg = alg;
	if (alg == COMP_LZO)
		r = comp_setup_lzo(c);
	else if (alg == COMP_ZSTD)
		r = comp_setup_zstd(c);
	if (r < 0)
		goto fail_setup;
	*ret_comp = c;
	return 0;

fail_setup:
	comp_free(c);
	return r;
}

void comp_free(struct comp *c)
{
	if (!c)
		return;
	free(c->lzo_wrkmem);
	ZSTD_freeCCtx(c->zcctx);
	ZSTD_freeDCtx(c->zdctx);
	free(c);
}

enum comp_alg comp_alg(const struct comp *c)
{
	return c->alg;
}

static int comp_compress_lzo(struct comp *c, const void *page, void *dst)
{
	lzo_uint len = 0;

	if (lzo1x_1_compress(page, ZS_PAGE_SIZE, dst, &len, c->lzo_wrkmem) != LZO_E_OK)
		return -EIO;
	return (int)len;
}

static int comp_compress_lz4(const void *page, void *dst, size_t dst_cap)
{
	int len = LZ4_compress_default(page, dst, (int)ZS_PAGE_SIZE, (int)dst_cap);

	return len > 0 ? len : -EIO;
}

static int comp_compress_zstd(struct comp *c, const void *page, void *dst, size_t dst_cap)
{
	size_t len = ZSTD_compressCCtx(c->zcctx, dst, dst_cap, page, ZS_PAGE_SIZE,
				       COMP_ZSTD_LEVEL);

	return ZSTD_isError(len) || len == 0 ? -EIO : (int)len;
}

int comp_compress(struct comp *c, const void *page, void *dst, size_t dst_cap)
{
	/* lzo1x_1_compress() has no output limit: the bound is all that keeps it in dst. */
	if (dst_cap < COMP_BOUND)
		return -EINVAL;
	/* Every length below must fit the int we return. */
	dst_cap = COMP_BOUND;
	switch (c->alg) {
	case COMP_LZO:
		return comp_compress_lzo(c, page, dst);
	case COMP_LZ4:
		return comp_compress_lz4(page, dst, dst_cap);
	case COMP_ZSTD:
		return comp_compress_zstd(c, page, dst, dst_cap);
	default:
		return -EINVAL;
	}
}

static int comp_decompress_lzo(const void *src, size_t len, void *page)
{
	lzo_uint out = ZS_PAGE_SIZE;
	int r;

	r = lzo1x_decompress_safe(src, len, page, &out, NULL);
	return r == LZO_E_OK && out == ZS_PAGE_SIZE ? 0 : -EIO;
}

static int comp_decompress_lz4(const void *src, size_t len, void *page)
{
	int out = LZ4_decompress_safe(src, page, (int)len, (int)ZS_PAGE_SIZE);

	return out == (int)ZS_PAGE_SIZE ? 0 : -EIO;
}

static int comp_decompress_zstd(struct comp *c, const void *src, size_t len, void *page)
{
	size_t out = ZSTD_decompressDCtx(c->zdctx, page, ZS_PAGE_SIZE, src, len);

	return !ZSTD_isError(out) && out == ZS_PAGE_SIZE ? 0 : -EIO;
}

int comp_decompress(struct comp *c, const void *src, size_t len, void *page)
{
	/* Nothing we store is empty or larger than the bound: such a length is corruption. */
	if (len == 0 || len > COMP_BOUND)
		return -EIO;
	switch (c->alg) {
	case COMP_LZO:
		return comp_decompress_lzo(src, len, page);
	case COMP_LZ4:
		return comp_decompress_lz4(src, len, page);
	case COMP_ZSTD:
		return comp_decompress_zstd(c, src, len, page);
	default:
		return -EINVAL;
	}
}

/* memcpy() so callers need not align the page; it compiles to one load. */
static uint64_t comp_word(const void *page, size_t i)
{
	uint64_t w;

	memcpy(&w, (const uint8_t *)page + i * sizeof(w), sizeof(w));
	return w;
}

bool comp_same_filled(const void *page, uint64_t *ret_word)
{
	uint64_t w = comp_word(page, 0);

	if (comp_word(page, COMP_PAGE_WORDS - 1) != w)
		return false;
	for (size_t i = 1; i < COMP_PAGE_WORDS - 1; i++)
		if (comp_word(page, i) != w)
			return false;
	if (ret_word)
		*ret_word = w;
	return true;
}

void comp_fill(void *page, uint64_t word)
{
	uint8_t *p = page;

	for (size_t i = 0; i < COMP_PAGE_WORDS; i++)
		memcpy(p + i * sizeof(word), &word, sizeof(word));
}
