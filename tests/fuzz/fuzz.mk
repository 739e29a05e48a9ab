# SPDX-License-Identifier: GPL-2.0-only
#
# tests/fuzz/fuzz.mk - libFuzzer targets for the two parsers that read
# untrusted input: proto_check() (every datagram on the socket) and
# cfg_parse_text() (zswapd.conf, re-read at SIGHUP).  Included from the top
# Makefile; also usable alone: make -f Makefile -f tests/fuzz/fuzz.mk fuzz
#
#   make fuzz [FUZZ_SECONDS=60]  build both fuzzers, run each that long on a
#                                working copy of its corpus; fails on a crash
#   make fuzz-smoke              run each fuzzer once over the committed
#                                corpus only (seconds; fit for `make check`)
#   make fuzz-corpus             regenerate tests/fuzz/corpus/proto/ from
#                                include/zswap_proto.h (make_corpus.c)
#
# The fuzzers are compiled straight from the daemon's sources, not from
# libzswapd.a: they need clang's -fsanitize=fuzzer instrumentation, which the
# normal (gcc, -Werror) objects do not have.  Crash inputs are written to
# $(BUILD)/fuzz/artifacts-*/; reproduce one with
#   $(BUILD)/fuzz/fuzz_proto $(BUILD)/fuzz/artifacts-proto/crash-...

BUILD ?= build
FUZZ_SECONDS ?= 60
FUZZ_CC ?= clang
FUZZ_DIR := $(BUILD)/fuzz
# -fno-sanitize-recover: a UBSan finding must stop the run like an ASan one,
# not scroll past as a warning while the target "passes".
FUZZ_CFLAGS ?= -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	-std=c11 -D_GNU_SOURCE -Wall -Wextra -Iinclude -Icommon -Idaemon
# Deferred (=), so pkg-config runs only when a fuzzer is built.
FUZZ_COMP = $(shell pkg-config --cflags --libs lzo2 liblz4 libzstd)
FUZZ_HDRS := $(wildcard include/*.h common/*.h daemon/*.h)

FUZZ_PROTO_SRCS := tests/fuzz/fuzz_proto.c common/proto.c
FUZZ_CFG_SRCS := tests/fuzz/fuzz_cfg.c daemon/cfg.c daemon/comp.c daemon/log.c common/size.c

# One over ZS_MSG_MAX, so the oversize check is reachable.  The cfg fuzzer
# needs lines past CFG_LINE_MAX (4095) to reach the long-line error.
FUZZ_PROTO_OPTS := -max_len=65537
FUZZ_CFG_OPTS := -max_len=8192
FUZZ_ENV := ASAN_OPTIONS=abort_on_error=1:detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1

$(FUZZ_DIR)/fuzz_proto: $(FUZZ_PROTO_SRCS) $(FUZZ_HDRS)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $(FUZZ_PROTO_SRCS)

$(FUZZ_DIR)/fuzz_cfg: $(FUZZ_CFG_SRCS) $(FUZZ_HDRS)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $(FUZZ_CFG_SRCS) $(FUZZ_COMP)

$(FUZZ_DIR)/make_corpus: tests/fuzz/make_corpus.c common/proto.c $(FUZZ_HDRS)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -std=c11 -D_GNU_SOURCE -Wall -Wextra -Iinclude -Icommon -Idaemon -o $@ \
		tests/fuzz/make_corpus.c common/proto.c

fuzz-build: $(FUZZ_DIR)/fuzz_proto $(FUZZ_DIR)/fuzz_cfg

# Each fuzzer grows its own working copy, $(FUZZ_DIR)/corpus-NAME, seeded
# from the committed corpus; what earlier runs found stays there (libFuzzer
# names its finds by hash, so re-copying the seeds clobbers none of them),
# and runs build on each other.  The committed corpus is only read.  libFuzzer exits
# non-zero on a crash, leak, timeout or UBSan report, which fails the loop.
fuzz: fuzz-build
	@set -e; for f in proto cfg; do \
		mkdir -p $(FUZZ_DIR)/corpus-$$f $(FUZZ_DIR)/artifacts-$$f; \
		cp tests/fuzz/corpus/$$f/* $(FUZZ_DIR)/corpus-$$f/; \
		case $$f in proto) opts='$(FUZZ_PROTO_OPTS)';; cfg) opts='$(FUZZ_CFG_OPTS)';; esac; \
		echo "  FUZZ    $$f for $(FUZZ_SECONDS)s"; \
		$(FUZZ_ENV) $(FUZZ_DIR)/fuzz_$$f $$opts -max_total_time=$(FUZZ_SECONDS) \
			-timeout=10 -print_final_stats=1 \
			-artifact_prefix=$(FUZZ_DIR)/artifacts-$$f/ $(FUZZ_DIR)/corpus-$$f \
			|| { echo "fuzz_$$f failed: input in $(FUZZ_DIR)/artifacts-$$f/" >&2; exit 1; }; \
	done

# Files, not the directory, are passed: libFuzzer then only executes them
# and never writes into tests/fuzz/corpus/.
fuzz-smoke: fuzz-build
	@set -e; for f in proto cfg; do \
		mkdir -p $(FUZZ_DIR)/artifacts-$$f; \
		echo "  FUZZ    $$f corpus ($$(ls tests/fuzz/corpus/$$f | wc -l) inputs)"; \
		$(FUZZ_ENV) $(FUZZ_DIR)/fuzz_$$f -runs=0 -artifact_prefix=$(FUZZ_DIR)/artifacts-$$f/ \
			tests/fuzz/corpus/$$f/* >$(FUZZ_DIR)/smoke-$$f.log 2>&1 \
			|| { cat $(FUZZ_DIR)/smoke-$$f.log >&2; exit 1; }; \
	done

fuzz-corpus: $(FUZZ_DIR)/make_corpus
	mkdir -p tests/fuzz/corpus/proto
	$(FUZZ_DIR)/make_corpus tests/fuzz/corpus/proto
	cp conf/zswapd.conf tests/fuzz/corpus/cfg/zswapd.conf

.PHONY: fuzz fuzz-build fuzz-smoke fuzz-corpus
