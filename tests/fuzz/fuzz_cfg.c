// SPDX-License-Identifier: GPL-2.0-only
/*
 * fuzz_cfg.c - libFuzzer target for cfg_parse_text(), which reads
 * zswapd.conf at start and again at every SIGHUP (daemon/cfg.c).
 *
 * Besides memory errors, it checks the promises main.c relies on:
 *
 *  - on error the caller's struct is exactly as it was (a SIGHUP with a
 *    broken file must leave the running configuration alone), and err is a
 *    NUL-terminated "file:line: ..." naming the file, even when err is too
 *    small for the whole message;
 *  - on success every field is inside the range cfg.c documents, since the
 *    daemon uses them unchecked (a percentage over 100, a batch of 0 pages or
 *    a socket path without its NUL would each be a bug downstream).
 *
 * cfg_parse_file() refuses files with a NUL byte before calling
 * cfg_parse_text(), so such inputs are rejected here (-1 keeps them out of
 * the corpus) rather than parsed as their first line.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg.h"
#include "log.h"

#define FUZZ_NAME "fuzz.conf"
#define ERR_FILL 0x5a /* anything but NUL: err must be terminated by the parser */

#define FUZZ_ASSERT(cond)                                                                  \
	do {                                                                               \
		if (!(cond)) {                                                             \
			fprintf(stderr, "fuzz_cfg: %s:%d: %s\n", __FILE__, __LINE__, #cond); \
			abort();                                                           \
		}                                                                          \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * The keys whose ranges cfg.c promises.  A key added to cfg_keys[] is still
 * fuzzed (memory errors, the error contract, the verdict) without a line
 * here; add one to hold its parser to its range too.
 */
static void check_ranges(const struct cfg *c)
{
	FUZZ_ASSERT(memchr(c->socket, '\0', sizeof(c->socket)) != NULL);
	FUZZ_ASSERT(c->socket[0] == '/');
	FUZZ_ASSERT(c->pool.compressor >= 0 && c->pool.compressor < _COMP_MAX);
	FUZZ_ASSERT(c->pool.max_pool_percent <= 100);
	FUZZ_ASSERT(c->pool.accept_threshold_percent <= 100);
	FUZZ_ASSERT(c->pool.max_compressed_percent >= 1 && c->pool.max_compressed_percent <= 100);
	FUZZ_ASSERT(c->agent.evict_batch_pages >= 1 && c->agent.evict_batch_pages <= 1024);
	FUZZ_ASSERT(c->fault.fault_spin_usec <= 10000);
	FUZZ_ASSERT(c->log_level == LOG_LVL_ERR || c->log_level == LOG_LVL_WARNING ||
		    c->log_level == LOG_LVL_INFO || c->log_level == LOG_LVL_DEBUG);
	/* "" is "none" */
	FUZZ_ASSERT(memchr(c->swap.swap_file, '\0', sizeof(c->swap.swap_file)) != NULL);
	FUZZ_ASSERT(c->swap.swap_file[0] == '\0' || c->swap.swap_file[0] == '/');
}

/* Parses text over the defaults with an err buffer of errlen bytes. */
static int parse(const char *text, size_t errlen, struct cfg *ret)
{
	struct cfg c, before;
	char err[512];
	size_t n;
	int r;

	cfg_defaults(&c);
	memcpy(&before, &c, sizeof(c)); /* bytes, padding included, for memcmp below */
	memset(err, ERR_FILL, sizeof(err));
	r = cfg_parse_text(&c, text, FUZZ_NAME, err, errlen);
	if (r == 0) {
		check_ranges(&c);
		/*
		 * Bytes, for memcmp() in the caller: both results come from the same
		 * defaults (zeroed by cfg_defaults(), padding included) through the
		 * same code, so even their padding agrees.  Comparing every byte
		 * covers keys added after this file was written.
		 */
		memcpy(ret, &c, sizeof(c));
		return 0;
	}
	FUZZ_ASSERT(r == -EINVAL || r == -ERANGE || r == -ENAMETOOLONG);
	/* on error cfg_parse_text() must not have written *c at all */
	FUZZ_ASSERT(memcmp(&c, &before, sizeof(c)) == 0);
	FUZZ_ASSERT(memchr(err, '\0', errlen) != NULL);
	/* nothing written past what the parser was given */
	for (size_t i = errlen; i < sizeof(err); i++)
		FUZZ_ASSERT(err[i] == (char)ERR_FILL);
	/* "fuzz.conf:LINE: ...", or as much of the name as fits */
	n = strlen(FUZZ_NAME) < errlen - 1 ? strlen(FUZZ_NAME) : errlen - 1;
	FUZZ_ASSERT(strncmp(err, FUZZ_NAME, n) == 0);
	if (errlen > strlen(FUZZ_NAME) + 1)
		FUZZ_ASSERT(err[n] == ':');
	return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cfg full, small;
	char *text;
	int r, r_small;

	if (memchr(data, '\0', size))
		return -1;
	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';

	r = parse(text, 256, &full);
	/* A short err buffer: the message is cut, never the verdict. */
	r_small = parse(text, 12, &small);
	FUZZ_ASSERT(r == r_small);
	if (r == 0)
		FUZZ_ASSERT(memcmp(&full, &small, sizeof(full)) == 0);

	free(text);
	return 0;
}
