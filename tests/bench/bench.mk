# SPDX-License-Identifier: GPL-2.0-only
#
# tests/bench/bench.mk - benchmark pieces, included from the top Makefile
# (`include tests/bench/bench.mk`).  The top Makefile keeps `bench` and
# `bench-quick` (BUILD=... tests/bench/run.sh [--quick]); run.sh compiles
# its own programs with cc, so those targets need nothing from here.  This
# adds only names of its own, all prefixed bench- / BENCH_:
#
#   make bench-progs          compile the benchmark programs with the project's
#                             CFLAGS (-Werror): a compile check for CI, no root
#   make bench-micro          only the per-page store/load micro benchmark
#   make bench-compare        only the side-by-side comparison (full size)
#   make bench-compare-quick  only the side-by-side comparison (quick size)

BENCH_DIR := tests/bench
BENCH_PROGS := $(BUILD)/bench/workload $(BUILD)/bench/micro

$(BUILD)/bench/%: $(BENCH_DIR)/%.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  BENCH-CC $<")
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $<

bench-progs: $(BENCH_PROGS)

bench-micro: all
	$(Q)BUILD=$(BUILD) $(BENCH_DIR)/run.sh --micro-only

bench-compare bench-compare-quick: all
	$(Q)BUILD=$(BUILD) $(BENCH_DIR)/run.sh --compare-only $(if $(filter bench-compare-quick,$@),--quick)

.PHONY: bench-progs bench-micro bench-compare bench-compare-quick
