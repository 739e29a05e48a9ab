// SPDX-License-Identifier: GPL-2.0-only
/*
 * size.c - byte sizes as operators write them (see size.h).
 *
 * Owns the one grammar for sizes that zswapd.conf and zswapctl share:
 *
 *	[spaces] digits [spaces] [K|M|G|T [B|iB] | B] [spaces]
 *
 * with binary multiples and case-insensitive suffixes.  The whole string is
 * checked for shape before any arithmetic, so "99999999999999999999x" is a
 * syntax error (-EINVAL) and only a well-formed size that does not fit in
 * 64 bits is -ERANGE.  Signs, fractions and hex are refused rather than
 * guessed at: strtoull() would take "-1" as 2^64 - 1 and "0x10" as 16, and
 * a pool limit is the wrong place for surprises.
 *
 * size_format() is for people (logs, zswapctl): one decimal below ten units
 * ("1.5G", "4.0K"), whole units above ("192M"), always rounded down so a
 * limit is never shown larger than it is.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>

#include "size.h"

static const struct {
	char suffix;
	unsigned shift;
} size_units[] = {
	{ 'K', 10 },
	{ 'M', 20 },
	{ 'G', 30 },
	{ 'T', 40 },
};

#define SIZE_NUNITS (sizeof(size_units) / sizeof(size_units[0]))

static bool size_is_space(char c)
{
	return c == ' ' || c == '\t';
}

static bool size_is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static char size_upper(char c)
{
	return c >= 'a' && c <= 'z' ? (char)(c - 'a' + 'A') : c;
}

static const char *size_skip_spaces(const char *p)
{
	while (size_is_space(*p))
		p++;
	return p;
}

/*
 * Parses the optional suffix at *p into a shift (0 for none or "B") and
 * returns where it ends, or NULL if what follows the digits is not a suffix.
 */
static const char *size_parse_suffix(const char *p, unsigned *ret_shift)
{
	char c = size_upper(*p);

	if (c == '\0' || size_is_space(c)) {
		*ret_shift = 0;
		return p;
	}
	if (c == 'B') {
		*ret_shift = 0;
		return p + 1;
	}
	for (size_t i = 0; i < SIZE_NUNITS; i++) {
		if (c != size_units[i].suffix)
			continue;
		p++;
		if (size_upper(p[0]) == 'I' && size_upper(p[1]) == 'B')
			p += 2;
		else if (size_upper(p[0]) == 'B')
			p++;
		*ret_shift = size_units[i].shift;
		return p;
	}
	return NULL;
}

/* Accumulates the digits [p, end) into *ret; -ERANGE past 64 bits. */
static int size_parse_digits(const char *p, const char *end, uint64_t *ret)
{
	uint64_t v = 0;

	for (; p < end; p++) {
		unsigned d = (unsigned)(*p - '0');

		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	*ret = v;
	return 0;
}

int size_parse(const char *s, uint64_t *ret)
{
	const char *digits, *end, *p;
	unsigned shift;
	uint64_t v;
	int r;

	if (!s)
		return -EINVAL;
	digits = size_skip_spaces(s);
	for (end = digits; size_is_digit(*end); end++)
		;
	if (end == digits)
		return -EINVAL;
	p = size_parse_suffix(size_skip_spaces(end), &shift);
	if (!p || *size_skip_spaces(p) != '\0')
		return -EINVAL;

	r = size_parse_digits(digits, end, &v);
	if (r < 0)
		return r;
	if (shift && v > UINT64_MAX >> shift)
		return -ERANGE;
	*ret = v << shift;
	return 0;
}

void size_format(uint64_t bytes, char *buf, size_t len)
{
	size_t i;
	uint64_t unit, whole, tenths;

	if (!buf || len == 0)
		return;
	if (bytes < (UINT64_C(1) << size_units[0].shift)) {
		snprintf(buf, len, "%" PRIu64 "B", bytes);
		return;
	}
	for (i = SIZE_NUNITS - 1; bytes < (UINT64_C(1) << size_units[i].shift); i--)
		;
	unit = UINT64_C(1) << size_units[i].shift;
	whole = bytes / unit;
	if (whole >= 10) {
		snprintf(buf, len, "%" PRIu64 "%c", whole, size_units[i].suffix);
		return;
	}
	/* bytes % unit < 2^40, so the product cannot overflow */
	tenths = (bytes % unit) * 10 / unit;
	snprintf(buf, len, "%" PRIu64 ".%" PRIu64 "%c", whole, tenths, size_units[i].suffix);
}
