/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * size.h - byte sizes as operators write them: "192M", "1G", "4096", "64KiB".
 * Binary multiples (K = 1024).  Shared by the daemon's config and zswapctl.
 */
#ifndef ZSWAPD_SIZE_H
#define ZSWAPD_SIZE_H

#include <stddef.h>
#include <stdint.h>

/*
 * Accepts digits, optional spaces, then an optional suffix K, M, G, T
 * (case-insensitive, optionally followed by "B" or "iB"), or "B" alone.
 * -EINVAL for anything else (empty, sign, fraction, junk), -ERANGE on
 * overflow of 64 bits.  *ret is untouched on failure.
 */
int size_parse(const char *s, uint64_t *ret);
/* "1.5G", "192M", "4.0K", "512B"; always NUL-terminates buf. */
void size_format(uint64_t bytes, char *buf, size_t len);

#endif
