/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * comp.h - page compressors (lzo1x-1, lz4, zstd) behind one interface, and
 * the same-filled page test that runs before any of them.
 *
 * Pages are always ZS_PAGE_SIZE bytes.  A struct comp owns the workspace of
 * one algorithm and is used by one thread at a time.
 */
#ifndef ZSWAPD_COMP_H
#define ZSWAPD_COMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ZS_PAGE_SIZE 4096u
#define ZS_PAGE_SHIFT 12

/* Enough room for the worst case of every algorithm on one page. */
#define COMP_BOUND (ZS_PAGE_SIZE + ZS_PAGE_SIZE / 16 + 64 + 3)

enum comp_alg {
	COMP_LZO,
	COMP_LZ4,
	COMP_ZSTD,
	_COMP_MAX,
};

/* "lzo" (or "lzo1x"), "lz4", "zstd"; -EINVAL otherwise. */
int comp_parse(const char *name, enum comp_alg *ret_alg);
const char *comp_name(enum comp_alg alg);

struct comp;

int comp_new(enum comp_alg alg, struct comp **ret_comp);
void comp_free(struct comp *c);
enum comp_alg comp_alg(const struct comp *c);

/*
 * Compresses one page into dst (dst_cap >= COMP_BOUND).  Returns the
 * compressed length (> 0) or -errno.  The caller decides whether the result
 * is worth keeping.
 */
int comp_compress(struct comp *c, const void *page, void *dst, size_t dst_cap);

/* Decompresses len bytes into one page.  -EIO unless exactly a page comes out. */
int comp_decompress(struct comp *c, const void *src, size_t len, void *page);

/* True if the page is one 64-bit word repeated; the word goes to *ret_word. */
bool comp_same_filled(const void *page, uint64_t *ret_word);
void comp_fill(void *page, uint64_t word);

#endif
