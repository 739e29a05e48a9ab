# zswapd - userspace compressed swap for opted-in processes.
#
#   make              build/zswapd, build/zswapctl, build/libzswap.so
#   make check        unit tests (Check) and integration tests (real daemon, real processes)
#   make asan / tsan  the same tests under AddressSanitizer+UBSan / ThreadSanitizer
#   make install      PREFIX=/usr/local DESTDIR=
#   make bench        every benchmark, side by side with kernel swap/zswap (~45 min)
#   make bench-quick  a short side-by-side benchmark (see tests/bench/run.sh)
#   V=1               show full commands

.DELETE_ON_ERROR:
.SUFFIXES:

BUILD ?= build
PREFIX ?= /usr/local
SBINDIR ?= $(PREFIX)/sbin
BINDIR ?= $(PREFIX)/bin
LIBDIR ?= $(PREFIX)/lib
SYSCONFDIR ?= /etc
UNITDIR ?= /lib/systemd/system
MANDIR ?= $(PREFIX)/share/man

CC ?= cc
CFLAGS ?= -O2 -g
override CFLAGS += -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Wformat-security \
	-Wstrict-prototypes -Wmissing-prototypes -fstack-protector-strong -fno-strict-aliasing \
	-Iinclude -Icommon -MMD -MP
ifneq ($(SANITIZE),)
override CFLAGS += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer
override LDFLAGS += -fsanitize=$(SANITIZE)
endif

PKGS_DAEMON = liburing lzo2 liblz4 libzstd libcap libsystemd
DAEMON_CFLAGS := $(shell pkg-config --cflags $(PKGS_DAEMON) 2>/dev/null)
DAEMON_LIBS := $(shell pkg-config --libs $(PKGS_DAEMON) 2>/dev/null)
CHECK_CFLAGS := $(shell pkg-config --cflags check 2>/dev/null)
CHECK_LIBS := $(shell pkg-config --libs check 2>/dev/null)

ifeq ($(V),1)
Q :=
else
Q := @
endif

# common/ is built into all three; daemon/ keeps its parts in folders
# (persist/, keeper/), which only the daemon and its tests see.
COMMON_SRCS := $(wildcard common/*.c)
DAEMON_SRCS := $(filter-out daemon/main.c,$(wildcard daemon/*.c daemon/*/*.c)) $(COMMON_SRCS)
DAEMON_OBJS := $(DAEMON_SRCS:%.c=$(BUILD)/%.o)
SHIM_SRCS := $(wildcard shim/*.c) common/proto.c
SHIM_OBJS := $(SHIM_SRCS:%.c=$(BUILD)/pic/%.o)
CLIENT_OBJS := $(BUILD)/client/zswapctl.o $(BUILD)/common/proto.o $(BUILD)/common/size.o
UNIT_TESTS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(wildcard tests/unit/check_*.c))
ITEST_PROGS := $(patsubst tests/integration/%.c,$(BUILD)/tests/%,$(wildcard tests/integration/*.c))
# the bench workload too: the test of a process faulting at full speed runs it
ITEST_PROGS += $(BUILD)/tests/workload
# libraries the integration tests preload next to the shim
ITEST_PROGS += $(patsubst tests/integration/preload/%.c,$(BUILD)/tests/%.so,$(wildcard tests/integration/preload/*.c))

all: $(BUILD)/zswapd $(BUILD)/zswapctl $(BUILD)/libzswap.so

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(CFLAGS) $(DAEMON_CFLAGS) -c -o $@ $<

# The daemon's own headers are for the daemon and its tests alone.
$(BUILD)/daemon/%.o $(UNIT_TESTS): override CFLAGS += -Idaemon

# The shim is never built with a sanitizer: it is preloaded into programs that
# are not (stress-ng, any binary), where a sanitizer runtime cannot come first.
SHIM_CFLAGS = $(filter-out -fsanitize=%,$(CFLAGS)) -fPIC -fvisibility=hidden

$(BUILD)/pic/%.o: %.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC [pic] $<")
	$(Q)$(CC) $(SHIM_CFLAGS) -c -o $@ $<

# Made afresh: ar keeps members it is not given, and a file removed from
# daemon/ would go on defining its symbols from a stale member.
$(BUILD)/libzswapd.a: $(DAEMON_OBJS)
	$(Q)rm -f $@ && $(AR) rcs $@ $^

$(BUILD)/zswapd: $(BUILD)/daemon/main.o $(BUILD)/libzswapd.a
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(DAEMON_LIBS) -lpthread

$(BUILD)/zswapctl: $(CLIENT_OBJS)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^

$(BUILD)/libzswap.so: $(SHIM_OBJS) shim/libzswap.map
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(filter-out -fsanitize=%,$(LDFLAGS)) -shared -Wl,-z,defs -Wl,-z,now -Wl,-z,relro -Wl,--version-script=shim/libzswap.map \
		-o $@ $(SHIM_OBJS) -lpthread

$(BUILD)/tests/check_%: tests/unit/check_%.c $(BUILD)/libzswapd.a
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  TEST-CC $<")
	$(Q)$(CC) $(CFLAGS) $(CHECK_CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/libzswapd.a \
		$(CHECK_LIBS) $(DAEMON_LIBS) -lpthread

$(BUILD)/tests/workload: tests/bench/workload.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  TEST-CC $<")
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $<

$(BUILD)/tests/%: tests/integration/%.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  TEST-CC $<")
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< -lpthread

# The hostile client speaks the protocol itself, through common/proto.c.
$(BUILD)/tests/hostile: tests/integration/hostile.c common/proto.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  TEST-CC $<")
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ -lpthread

# systemd's bus, stood in for: sd-bus on both ends.
$(BUILD)/tests/fakemanager: tests/integration/fakemanager.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  TEST-CC $<")
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(shell pkg-config --libs libsystemd)

# Never sanitized, like the shim: preloaded ahead of everything.
$(BUILD)/tests/%.so: tests/integration/preload/%.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  TEST-CC $<")
	$(Q)$(CC) $(SHIM_CFLAGS) $(filter-out -fsanitize=%,$(LDFLAGS)) -shared -o $@ $< -ldl

check-unit: $(UNIT_TESTS)
	@fail=0; for t in $(UNIT_TESTS); do \
		CK_FORK=yes $$t || fail=1; \
	done; exit $$fail

check-integration: all $(ITEST_PROGS)
	$(Q)BUILD=$(BUILD) SANITIZE=$(SANITIZE) tests/integration/run.sh

# fuzz-smoke: both fuzzers over the committed corpus (seconds); SKIP without clang.
# Integration last, so its "N passed, N failed" line closes the output.
check: check-unit fuzz-smoke-if-clang check-integration

fuzz-smoke-if-clang:
	@if echo 'int LLVMFuzzerTestOneInput(const char *d, long n){(void)d;(void)n;return 0;}' | \
		clang -x c -fsanitize=fuzzer -o /dev/null - 2>/dev/null; then \
		$(MAKE) --no-print-directory fuzz-smoke; \
	else echo "fuzz-smoke: SKIP (clang with libFuzzer not installed)"; fi

# verify_asan_link_order=0: the (uninstrumented) shim is preloaded ahead of
# the ASan runtime of the instrumented test programs; it does not intercept
# malloc, so the order does not matter.
# CK_TIMEOUT_MULTIPLIER: the sanitizers make the unit tests 5-15x slower,
# and Check's 4 s per test then trips on a busy machine (loadlog under TSan).
asan:
	CK_TIMEOUT_MULTIPLIER=10 ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=1:abort_on_error=1 \
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	$(MAKE) BUILD=build-asan SANITIZE=address,undefined CFLAGS="-O1 -g" check

# die_after_fork=0: the shim starts a forked child's agent thread in its
# atfork handler, which TSan refuses by default.
tsan:
	CK_TIMEOUT_MULTIPLIER=10 TSAN_OPTIONS=die_after_fork=0 \
	$(MAKE) BUILD=build-tsan SANITIZE=thread CFLAGS="-O1 -g" check

bench-quick bench: all
	$(Q)BUILD=$(BUILD) tests/bench/run.sh $(if $(filter bench-quick,$@),--quick)

install: all
	install -d $(DESTDIR)$(SBINDIR) $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) \
		$(DESTDIR)$(SYSCONFDIR)/zswapd $(DESTDIR)$(UNITDIR)
	install -m 0755 $(BUILD)/zswapd $(DESTDIR)$(SBINDIR)/zswapd
	install -m 0755 $(BUILD)/zswapctl $(DESTDIR)$(BINDIR)/zswapctl
	install -m 0644 $(BUILD)/libzswap.so $(DESTDIR)$(LIBDIR)/libzswap.so
	test -e $(DESTDIR)$(SYSCONFDIR)/zswapd/zswapd.conf || \
		install -m 0644 conf/zswapd.conf $(DESTDIR)$(SYSCONFDIR)/zswapd/zswapd.conf
	sed -e 's|@SBINDIR@|$(SBINDIR)|g' systemd/zswapd.service.in > $(DESTDIR)$(UNITDIR)/zswapd.service
	install -m 0644 systemd/zswapd.socket $(DESTDIR)$(UNITDIR)/zswapd.socket
	@# The socket's group (socket_group, SocketGroup=): root and its members
	@# may connect.  Only on the machine itself, not into a DESTDIR.
	@if [ -z "$(DESTDIR)" ] && ! getent group zswapd >/dev/null; then \
		groupadd --system zswapd && echo "created group zswapd: usermod -aG zswapd USER"; fi
	install -d $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man8
	install -m 0644 man/zswapd.8 man/zswapctl.8 $(DESTDIR)$(MANDIR)/man8/
	install -m 0644 man/zswapd.conf.5 $(DESTDIR)$(MANDIR)/man5/

# Installs and starts the daemon with the repo's default config: through
# systemd where it runs the machine, else as a background process.  If the
# installed zswapd runs already, it is upgraded in place (SIGUSR2): the new
# binary takes over every evicted page without faulting one back.
LOGFILE ?= /var/log/zswapd.log
start: install
	@if [ -d /run/systemd/system ]; then \
		systemctl daemon-reload && \
		if systemctl -q is-active zswapd.service; then \
			$(BUILD)/zswapctl upgrade; \
		else \
			systemctl enable --now zswapd.socket zswapd.service; \
		fi && \
		systemctl --no-pager status zswapd.service | head -n 5; \
	elif pid=$$(pgrep -of "^$(DESTDIR)$(SBINDIR)/zswapd "); then \
		$(BUILD)/zswapctl upgrade || { echo "zswapd (pid $$pid) did not upgrade; see $(LOGFILE)"; exit 1; }; \
	else \
		$(DESTDIR)$(SBINDIR)/zswapd -c $(DESTDIR)$(SYSCONFDIR)/zswapd/zswapd.conf 2>>$(LOGFILE) && \
		echo "zswapd started (no systemd here); log in $(LOGFILE)"; \
	fi
	@$(BUILD)/zswapctl stats | head -n 3

clean:
	rm -rf build build-asan build-tsan

.PHONY: all check check-unit check-integration fuzz-smoke-if-clang asan tsan bench bench-quick install start clean

include tests/fuzz/fuzz.mk

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
