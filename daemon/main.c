// SPDX-License-Identifier: GPL-2.0-only
/*
 * main.c - zswapd: parse the command line, load the config, build the
 * daemon (taking over an upgrade's image, or what the fd store kept after
 * a crash), run the loop (loop.c) until the daemon stops, then leave as
 * the stop asks (main_serve()): every page back where it came from, or,
 * for a restart or a drain that gave up, kept in the store for the next
 * zswapd.  With --supervise, or without -f outside systemd, this process
 * becomes the keeper (keeper/keeper.c) and zswapd runs as its child.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "comp.h"
#include "daemon.h"
#include "persist/persist.h"
#include "persist/fdstore.h"
#include "keeper/keeper.h"
#include "listen.h"
#include "log.h"
#include "pool.h"

#define DEFAULT_CONFIG "/etc/zswapd/zswapd.conf"

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: zswapd [OPTIONS]\n"
		"Userspace compressed swap for processes started under libzswap.so.\n\n"
		"  -c, --config FILE        read FILE (default " DEFAULT_CONFIG " if it exists)\n"
		"  -s, --socket PATH        control socket (default: $ZSWAP_SOCKET, the config, "
		ZSWAP_DEFAULT_SOCKET ")\n"
		"  -f, --foreground         stay in the foreground (logs go to stderr either way)\n"
		"      --supervise          in the foreground, start zswapd as a child, keep the\n"
		"                           descriptors it stores and start it again if it dies\n"
		"                           (what running without -f does in the background)\n"
		"      --compressor NAME    lzo, lz4 or zstd (overrides the config)\n"
		"      --check-config       validate the configuration and exit\n"
		"      --handover-versions  the versions of the upgrade image this binary reads\n"
		"  -h, --help               this text\n");
}

struct args {
	const char *config;
	int handover_version; /* 1: --handover-version, 2: --handover-versions */
	const char *socket;
	const char *compressor;
	bool foreground;
	bool check_only;
	bool supervise;
};

/* What parse_args() puts in place of --supervise in argv: not for the keeper's child. */
static char supervise_arg[] = "--supervise";

static int parse_args(int argc, char **argv, struct args *a)
{
	enum {
		OPT_COMPRESSOR = 256,
		OPT_CHECK,
		OPT_HANDOVER_VERSION,
		OPT_HANDOVER_VERSIONS,
		OPT_SUPERVISE
	};
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "socket", required_argument, NULL, 's' },
		{ "foreground", no_argument, NULL, 'f' },
		{ "compressor", required_argument, NULL, OPT_COMPRESSOR },
		{ "check-config", no_argument, NULL, OPT_CHECK },
		{ "handover-version", no_argument, NULL, OPT_HANDOVER_VERSION },
		{ "handover-versions", no_argument, NULL, OPT_HANDOVER_VERSIONS },
		{ "supervise", no_argument, NULL, OPT_SUPERVISE },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	int c;

	while ((c = getopt_long(argc, argv, "c:s:fh", opts, NULL)) >= 0) {
		switch (c) {
		case 'c':
			a->config = optarg;
			break;
		case 's':
			a->socket = optarg;
			break;
		case 'f':
			a->foreground = true;
			break;
		case OPT_COMPRESSOR:
			a->compressor = optarg;
			break;
		case OPT_CHECK:
			a->check_only = true;
			break;
		case OPT_HANDOVER_VERSION:
			a->handover_version = 1;
			break;
		case OPT_HANDOVER_VERSIONS:
			a->handover_version = 2;
			break;
		case OPT_SUPERVISE:
			/* The element getopt just read, whatever its spelling
			 * ("--sup"), marked by its address, which stays the
			 * same if getopt moves it. */
			a->supervise = true;
			argv[optind - 1] = supervise_arg;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -EINVAL;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "zswapd: unexpected argument '%s'\n", argv[optind]);
		return -EINVAL;
	}
	return 0;
}

/* Config file, then environment, then command line: the most specific wins. */
static int load_config(struct daemon *d, const struct args *a)
{
	const char *path = a->config, *env;
	char err[512];
	int r;

	cfg_defaults(&d->cfg);
	if (!path && access(DEFAULT_CONFIG, F_OK) == 0)
		path = DEFAULT_CONFIG;
	if (path) {
		r = cfg_parse_file(&d->cfg, path, err, sizeof(err));
		if (r < 0) {
			fprintf(stderr, "zswapd: %s\n", err);
			return r;
		}
		d->file_cfg = d->cfg;
		snprintf(d->cfg_path, sizeof(d->cfg_path), "%s", path);
	}
	env = getenv(ZSWAP_SOCKET_ENV);
	if (a->socket || (env && *env)) {
		const char *s = a->socket ? a->socket : env;

		if (strlen(s) >= sizeof(d->cfg.socket)) {
			fprintf(stderr, "zswapd: socket path too long: %s\n", s);
			return -ENAMETOOLONG;
		}
		snprintf(d->cfg.socket, sizeof(d->cfg.socket), "%s", s);
	}
	if (a->compressor && comp_parse(a->compressor, &d->cfg.pool.compressor) < 0) {
		fprintf(stderr, "zswapd: unknown compressor '%s' (lzo, lz4, zstd)\n", a->compressor);
		return -EINVAL;
	}
	log_set_level(d->cfg.log_level);
	return 0;
}

static uint64_t mem_total_bytes(void)
{
	uint64_t kb = 0;

	FILE *f = fopen("/proc/meminfo", "re");
	if (f) {
		if (fscanf(f, "MemTotal: %lu kB", &kb) != 1)
			kb = 0;
		fclose(f);
	}
	return kb * 1024;
}

/* Binds the control socket, refusing to steal it from a running daemon. */
static int setup_listen(struct daemon *d)
{
	int n;

	if (d->listen_w.fd >= 0) { /* handed over by the binary we replaced, or kept */
		/* Again, so that a shim connecting from now on is told our pid
		 * (SO_PEERCRED), not that of the zswapd that listened first. */
		listen(d->listen_w.fd, 128);
		goto watch;
	}
	n = fdstore_take_listener(d, &d->listen_w.fd);
	if (n < 0)
		return log_error_errno(n, "The sockets systemd passed are not one listening "
					  "AF_UNIX SOCK_SEQPACKET socket");
	if (n == 1) {
		d->sd.socket_activated = true;
		fcntl(d->listen_w.fd, F_SETFL, fcntl(d->listen_w.fd, F_GETFL) | O_NONBLOCK);
		fcntl(d->listen_w.fd, F_SETFD, FD_CLOEXEC);
	} else {
		d->listen_w.fd = listen_open(&d->cfg);
		if (d->listen_w.fd < 0)
			return d->listen_w.fd;
	}
watch:
	d->listen_w.fn = conn_accept;
	return watch_add(d->epfd, &d->listen_w, EPOLLIN);
}

/* SIGHUP: re-read the config and apply what can change live. */
static void reload_config(struct daemon *d)
{
	const struct cfg *old = &d->file_cfg;
	struct cfg c;
	char err[512];

	if (!d->cfg_path[0]) {
		log_info("SIGHUP: no config file to re-read");
		return;
	}
	/* Over the defaults, as at start: a deleted line means the default. */
	cfg_defaults(&c);
	if (cfg_parse_file(&c, d->cfg_path, err, sizeof(err)) < 0) {
		log_error("SIGHUP: %s; keeping the running configuration", err);
		return;
	}
	/* Compared with what the file said before, not with the running values,
	 * which -s, $ZSWAP_SOCKET and --compressor may have overridden. */
	if (strcmp(c.socket, old->socket) || c.socket_mode != old->socket_mode ||
	    strcmp(c.socket_group, old->socket_group) || c.pool.compressor != old->pool.compressor ||
	    c.agent.evict_batch_pages != old->agent.evict_batch_pages || c.mlock != old->mlock ||
	    strcmp(c.swap.swap_file, old->swap.swap_file) || c.swap.swap_file_size != old->swap.swap_file_size ||
	    c.nice != old->nice || c.pool.recompressor != old->pool.recompressor)
		log_warning("SIGHUP: the socket, compressor, recompressor, evict_batch_pages, mlock, "
			    "nice and the swap file change only at restart");
	d->file_cfg = c;
	d->cfg.fault.fault_spin_usec = c.fault.fault_spin_usec;
	d->cfg.fault.fault_idle_poll_ms = c.fault.fault_idle_poll_ms;
	d->cfg.agent.agent_move = c.agent.agent_move;
	d->cfg.agent.agent_move_first = c.agent.agent_move_first;
	d->cfg.agent.agent_follow_app = c.agent.agent_follow_app;
	d->cfg.swap.readahead_pages = c.swap.readahead_pages;
	d->cfg.fault.prefetch_pages = c.fault.prefetch_pages;
	d->cfg.policy.hot_window_seconds = c.policy.hot_window_seconds;
	d->cfg.policy.idle_evict_seconds = c.policy.idle_evict_seconds;
	d->cfg.policy.proactive_refault_permille = c.policy.proactive_refault_permille;
	d->cfg.policy.proactive_stall_permille = c.policy.proactive_stall_permille;
	d->cfg.policy.follow_cgroup_limits = c.policy.follow_cgroup_limits;
	d->cfg.policy.cgroup_headroom_percent = c.policy.cgroup_headroom_percent;
	d->cfg.policy.default_limit_percent = c.policy.default_limit_percent;
	d->cfg.pool.recompress_seconds = c.pool.recompress_seconds;
	if (c.policy.pressure_stall_ms != d->cfg.policy.pressure_stall_ms) {
		d->cfg.policy.pressure_stall_ms = c.policy.pressure_stall_ms;
		pressure_close(d);
		if (pressure_open(d) < 0)
			log_warning("SIGHUP: host memory pressure events lost");
		group_rewatch(d);
	}
	d->cfg.pool.max_pool_percent = c.pool.max_pool_percent;
	d->cfg.pool.max_pool_bytes = c.pool.max_pool_bytes;
	d->cfg.pool.accept_threshold_percent = c.pool.accept_threshold_percent;
	d->cfg.pool.max_compressed_percent = c.pool.max_compressed_percent;
	d->cfg.pool.store_incompressible = c.pool.store_incompressible;
	d->cfg.users = c.users;
	d->cfg.log_level = c.log_level;
	log_set_level(c.log_level);
	d->pool_limit.bytes = cfg_pool_limit(&d->cfg, mem_total_bytes());
	log_info("SIGHUP: configuration re-read, pool limit %llu bytes",
		 (unsigned long long)d->pool_limit.bytes);
}

static void signal_ready(struct daemon *d, struct watch *w, uint32_t events)
{
	struct signalfd_siginfo si;

	(void)events;
	while (read(w->fd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGHUP) {
			reload_config(d);
		} else if (si.ssi_signo == SIGUSR2) {
			const char *why;

			(void)upgrade_begin(d, &why); /* logged */
		} else if (restart_asked(d, &si)) {
			restart_begin(d);
		} else if (!d->restart.active) {
			upgrade_end(d, "asked to stop");
			drain_begin(d);
		}
	}
}

static int setup_signals(struct daemon *d)
{
	sigset_t mask;

	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGUSR2);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	d->signal_w.fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (d->signal_w.fd < 0)
		return log_error_errno(-errno, "Failed to create signalfd: %m");
	d->signal_w.fn = signal_ready;
	return watch_add(d->epfd, &d->signal_w, EPOLLIN);
}

/*
 * Every served process holds a connection and gives us a uffd and a pidfd:
 * three descriptors each.  The default soft limit of 1024 would stop us at
 * about 340 processes, so take the hard limit.
 */
static void raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
			log_warning_errno(-errno, "Cannot raise RLIMIT_NOFILE: %m, ignoring");
	}
}

static int daemon_setup(struct daemon *d)
{
	int r;

	raise_nofile();
	d->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (d->epfd < 0)
		return log_error_errno(-errno, "Failed to create epoll: %m");
	d->devuffd_fd = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);
	if (d->devuffd_fd < 0)
		return log_error_errno(-errno, "Failed to open /dev/userfaultfd: %m "
					       "(CONFIG_USERFAULTFD, and are we root?)");
	r = comp_new(d->cfg.pool.compressor, &d->comp);
	if (r < 0)
		return log_error_errno(r, "Failed to set up compressor %s: %m",
				       comp_name(d->cfg.pool.compressor));
	r = recomp_open(d);
	if (r < 0)
		return r;
	r = pool_new(&d->pool);
	if (r < 0)
		return log_error_errno(r, "Failed to create pool: %m");
	d->buf.page = aligned_alloc(ZS_PAGE_SIZE, ZS_PAGE_SIZE);
	d->buf.prefetch = aligned_alloc(ZS_PAGE_SIZE, (size_t)PREFETCH_MAX_PAGES * ZS_PAGE_SIZE);
	d->buf.comp = malloc(COMP_BOUND);
	if (!d->buf.page || !d->buf.prefetch || !d->buf.comp)
		return log_error_errno(-ENOMEM, "Out of memory");
	d->pool_limit.bytes = cfg_pool_limit(&d->cfg, mem_total_bytes());
	r = setup_signals(d);
	if (r < 0)
		return r;
	r = setup_listen(d);
	if (r < 0)
		return r;
	r = wb_open(d);
	if (r < 0)
		return r;
	r = pressure_open(d);
	if (r < 0)
		return r;
	/* Hazard 6 (docs/design.md): the pool must not itself be swapped
	 * out under the clients, and the daemon must never fault on its own
	 * memory while serving. */
	if (d->cfg.mlock && mlockall(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT) < 0)
		log_warning_errno(-errno, "mlockall failed: %m, continuing unlocked");
	idlepoll_open(d);
	/* Faults wait on us: served before the CPU-bound (cfg.c, nice).
	 * Lowering nice takes CAP_SYS_NICE, which caps_drop() then drops. */
	if (setpriority(PRIO_PROCESS, 0, d->cfg.nice) < 0)
		log_warning_errno(-errno, "Failed to set nice %d: %m, serving faults at nice %d",
				  d->cfg.nice, getpriority(PRIO_PROCESS, 0));
	return caps_drop();
}

/*
 * Without -f and outside systemd: detach, and let the parent exit only once
 * the daemon is ready (or failed), so "zswapd && zswapctl stats" works.  The
 * child becomes the keeper (supervise()), which writes to *ret_ready_fd at
 * the daemon's READY=1.  Returns 0 in the child, 1 in the parent after
 * success, -errno.
 */
static int background(int *ret_ready_fd)
{
	int p[2], devnull;
	char c;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid > 0) {
		close(p[1]);
		if (read(p[0], &c, 1) != 1) {
			fprintf(stderr, "zswapd: failed to start (see the messages above)\n");
			exit(1);
		}
		return 1;
	}
	close(p[0]);
	setsid();
	devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (devnull >= 0) {
		dup2(devnull, STDIN_FILENO);
		dup2(devnull, STDOUT_FILENO);
		close(devnull);
	}
	*ret_ready_fd = p[1];
	return 0;
}

/* Everything daemon_setup() made; what the loop made is gone by now. */
static void daemon_teardown(struct daemon *d)
{
	for (struct target *t = d->targets; t; t = t->next)
		target_kill(t, "zswapd exiting");
	for (struct conn *c = d->conns.list; c; c = c->next)
		c->doomed = "zswapd exiting";
	loop_reap(d);
	group_free_all(d);
	pressure_close(d);
	wb_close(d);
	pool_free(d->pool);
	recomp_close(d);
	comp_free(d->comp);
	free(d->buf.page);
	free(d->buf.prefetch);
	free(d->buf.comp);
	if (d->listen_w.fd >= 0)
		close(d->listen_w.fd);
	if (d->signal_w.fd >= 0)
		close(d->signal_w.fd);
	if (d->devuffd_fd >= 0)
		close(d->devuffd_fd);
	if (d->epfd >= 0)
		close(d->epfd);
}

/* The binary we run from, for an upgrade to exec again once replaced. */
static void remember_exe(struct daemon *d, char **argv)
{
	static const char deleted[] = " (deleted)";
	ssize_t n = readlink("/proc/self/exe", d->upgrade.exe_path, sizeof(d->upgrade.exe_path) - 1);
	size_t len = n > 0 ? (size_t)n : 0;

	d->upgrade.exe_path[len] = '\0';
	if (len > sizeof(deleted) - 1 && !strcmp(d->upgrade.exe_path + len - (sizeof(deleted) - 1), deleted))
		d->upgrade.exe_path[len - (sizeof(deleted) - 1)] = '\0';
	d->upgrade.argv = argv;
}

/*
 * This process becomes the keeper (keeper/keeper.c), a stand-in for systemd's
 * file-descriptor store, and zswapd runs as its child: with our arguments
 * but --supervise, in the foreground, from the binary we were started from
 * (remember_exe()), so that a binary replaced on disk is the one started
 * after a crash.  Returns our exit code.
 */
static int supervise(const struct daemon *d, int argc, char **argv, bool foreground, int ready_fd)
{
	const char *exe = getenv(KEEPER_EXEC_ENV); /* a test's fake daemon (keeper.h) */
	char **child_argv = calloc((size_t)argc + 2, sizeof(*child_argv));
	int n = 0, r;

	if (!child_argv) {
		if (ready_fd >= 0)
			close(ready_fd);
		log_error("Out of memory");
		return 1;
	}
	if (!exe || !*exe)
		exe = d->upgrade.exe_path[0] ? d->upgrade.exe_path : "/proc/self/exe";
	child_argv[n++] = argv[0];
	if (!foreground)
		child_argv[n++] = (char *)"-f"; /* first: after a "--" it would be no option */
	for (int i = 1; i < argc; i++)
		if (argv[i] != supervise_arg)
			child_argv[n++] = argv[i];
	r = keeper_run(exe, child_argv, ready_fd);
	free(child_argv);
	return r < 0 ? 1 : r;
}

/* Started by an upgrade (upgrade.c): the image's descriptor; -1 if not. */
static int handover_fd_from_env(void)
{
	const char *s = getenv(ZSWAPD_HANDOVER_ENV);
	char *end;
	long fd;

	if (!s)
		return -1;
	fd = strtol(s, &end, 10);
	unsetenv(ZSWAPD_HANDOVER_ENV);
	return *end || fd < 0 || fd > 1 << 20 ? -1 : (int)fd;
}

/* Set up and ready: serves until stopped, then leaves as the way it stopped asks. */
static int main_serve(struct daemon *d)
{
	int r;

	fdstore_forget_rest(d);
	log_info("zswapd ready on %s: compressor %s, pool limit %llu MiB",
		 d->sd.socket_activated ? "the socket systemd passed" : d->cfg.socket,
		 comp_name(d->cfg.pool.compressor), (unsigned long long)(d->pool_limit.bytes >> 20));
	if (d->sd.notify)
		sd_notify(0, "READY=1");
	notify_status(d);
	r = loop_run(d);
	if (d->persist.fdstore && (r != 0 || d->restart.active)) {
		/* Pages still out, kept in the store for the next zswapd.  No
		 * teardown: releasing our entries would punch their pages out of
		 * the very memfds it takes over, and journal every process gone.
		 * We leave as a crash, or an upgrade's exec, would. */
		_exit(r);
	}
	if (r == 0)
		persist_close(d); /* every page is back: nothing to keep */
	if (!d->sd.socket_activated && r == 0)
		unlink(d->cfg.socket);
	daemon_teardown(d);
	return r;
}

int main(int argc, char **argv)
{
	struct daemon d = { .epfd = -1, .listen_w.fd = -1, .signal_w.fd = -1, .devuffd_fd = -1,
			    .pressure.w.fd = -1, .upgrade.handover_fd = -1, .upgrade.kept_swap_fd = -1,
			    .upgrade.check_w.fd = -1, .idlepoll.fd = -1 };
	struct args a = { 0 };
	int ready_fd = -1, handover_fd = handover_fd_from_env(), r;

	/* A core dump would hold every served process's evicted memory. */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	if (sysconf(_SC_PAGESIZE) != ZS_PAGE_SIZE) {
		fprintf(stderr, "zswapd: only 4 KiB pages are supported\n");
		return 1;
	}
	if (parse_args(argc, argv, &a) < 0)
		return 2;
	if (a.handover_version) {
		handover_print_versions(a.handover_version == 2);
		return 0;
	}
	remember_exe(&d, argv);
	if (load_config(&d, &a) < 0)
		return 1;
	if (handover_fd >= 0 && handover_prepare(&d, handover_fd) < 0)
		return 1;
	if (a.check_only) {
		printf("%s: OK\n", d.cfg_path[0] ? d.cfg_path : "(built-in defaults)");
		return 0;
	}
	d.sd.notify = getenv("NOTIFY_SOCKET") != NULL;
	if (a.supervise)
		return supervise(&d, argc, argv, a.foreground, -1);
	persist_init(&d);
	/* What the fd store kept for us: after a crash, what to take over. */
	if (handover_fd < 0 && recover_prepare(&d) < 0)
		return 1;
	if (!a.foreground && !d.sd.notify && !getenv("LISTEN_FDS") && handover_fd < 0) {
		r = background(&ready_fd);
		if (r != 0)
			return r < 0 ? 1 : 0;
		return supervise(&d, argc, argv, false, ready_fd);
	}
	if (sd_watchdog_enabled(0, &d.sd.watchdog_usec) <= 0)
		d.sd.watchdog_usec = 0;
	r = daemon_setup(&d);
	if (r == 0 && handover_fd >= 0)
		r = handover_load(&d);
	if (r == 0 && d.persist.recovery)
		r = recover_load(&d);
	else if (r == 0)
		persist_open(&d); /* a failure is said, and zswapd serves on without */
	if (r < 0) {
		/* What the store holds stays as it is, for the next try. */
		d.persist.fdstore = false;
		if (d.sd.notify)
			sd_notifyf(0, "ERRNO=%d", -r);
		daemon_teardown(&d);
		return 1;
	}
	return main_serve(&d);
}
