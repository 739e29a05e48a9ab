/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * pagemix.h - the page mix of the benchmarks (micro.c, workload.c): zero,
 * same-filled, text, small structs and incompressible pages, one in eight
 * each (text and structs three and two), every page a function of its
 * index alone so that any run can verify any page.
 */
#ifndef ZSWAPD_BENCH_PAGEMIX_H
#define ZSWAPD_BENCH_PAGEMIX_H

#include <stdint.h>
#include <string.h>

#define PAGE 4096u

static inline uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x;
}

static inline void fill_page(uint8_t *p, uint64_t idx)
{
	static const char text[] = "the memory of a process that went cold comes back when touched ";
	uint64_t h = mix64(idx + 17);

	switch (h % 8) {
	case 0:
		memset(p, 0, PAGE);
		break;
	case 1:
		for (unsigned i = 0; i < PAGE / 8; i++)
			memcpy(p + i * 8, &h, 8);
		break;
	case 2:
	case 3:
	case 4:
		for (unsigned i = 0; i < PAGE; i++)
			p[i] = (uint8_t)text[(i + h % 7 * (i / 61)) % (sizeof(text) - 1)];
		memcpy(p + PAGE - 8, &idx, 8);
		break;
	case 5:
	case 6:
		for (unsigned i = 0; i < PAGE / 32; i++) {
			uint64_t rec[4] = { idx * 128 + i, h & 0xff, h + i, 0x6a626f };

			memcpy(p + i * 32, rec, 32);
		}
		break;
	default:
		for (unsigned i = 0; i < PAGE / 8; i++) {
			uint64_t v = mix64(h + i + 1);

			memcpy(p + i * 8, &v, 8);
		}
	}
}

#endif
