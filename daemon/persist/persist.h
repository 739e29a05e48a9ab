/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * persist.h - what the rest of zswapd calls of daemon/persist/: state that
 * outlives this process.  The words, each its own file:
 *   persist   keeping what must outlive us in the fd store (persist.c),
 *             as a journal written as things change (journal.c) and read
 *             back (journal_read.c), one record per process
 *             (target_record.c)
 *   recover   a start after a zswapd died: taking over what it kept
 *   restart   a planned restart (systemd's, the keeper's): quiet, then the
 *             store handed over as it is
 *   upgrade   the binary replaced in place: the image (handover_save.c,
 *             handover_load.c) across an exec
 * The journal's own calls, made by the data path as pages move, are in
 * journal.h.
 */
#ifndef ZSWAPD_PERSIST_H
#define ZSWAPD_PERSIST_H

#include <stdbool.h>

#include "daemon.h"

struct signalfd_siginfo;

/* persist.c: everything that outlives our death into the store (survive_crash). */
void persist_init(struct daemon *d);
/* Everything into the store, and a journal: once set up, or a new binary took over. */
int persist_open(struct daemon *d);
/* Everything out of it: an upgrade's exec (the new binary puts it back). */
void persist_close(struct daemon *d);

/* recover.c: a start after a zswapd died, from what the fd store kept (journal.h). */
/* Before set-up: 1 if the store handed back a journal (the config follows it), 0 if not. */
int recover_prepare(struct daemon *d);
/* After set-up: every process, page and batch the dead zswapd had, served on. */
int recover_load(struct daemon *d);

/* handover_save.c, handover_load.c: the image an upgrade hands over (see upgrade.c). */
#define HANDOVER_VERSION 3 /* the image this binary writes */
#define HANDOVER_OLDEST 1  /* the oldest it reads */
#define ZSWAPD_HANDOVER_ENV "ZSWAPD_HANDOVER_FD" /* the image's descriptor, for the new binary */
/*
 * Writes the image into fd and clears FD_CLOEXEC on every descriptor it
 * names; < 0: nothing changed.  The daemon's state is left as it was:
 * if the exec fails, handover_cancel() makes those descriptors ours alone
 * again and zswapd goes on.
 */
int handover_save(struct daemon *d, int fd);
void handover_cancel(struct daemon *d);
/* The new binary: the image's header, over the config (compressor, swap file, socket). */
int handover_prepare(struct daemon *d, int fd);
/* --handover-versions (all) and --handover-version: the answer to upgrade.c's check. */
void handover_print_versions(bool all);
/* Then, once the daemon is set up: the pool, every entry, process and connection. */
int handover_load(struct daemon *d);

/* upgrade.c */
/*
 * Starts an upgrade: < 0, with *ret_why for the operator, if refused at
 * once; 0 if under way (its requesters, conns with upgrade_waiting, hear
 * how it ends).  The new binary is checked first, without stopping anything.
 */
int upgrade_begin(struct daemon *d, const char **ret_why);
/* Ends an upgrade under way, its check or its quiescing. */
void upgrade_end(struct daemon *d, const char *why);
bool upgrade_checking(const struct daemon *d);
void upgrade_step(struct daemon *d);
/* Step 2 alone: no new work, serving faults; and whether nothing is in flight. */
void upgrade_quiesce(struct daemon *d);
bool upgrade_quiet(struct daemon *d);

/* restart.c */
/* Test hook, for tests only: the address of systemd's bus, a stand-in's. */
#define ZSWAPD_SYSTEMD_BUS_ENV "ZSWAPD_SYSTEMD_BUS"
/* Whether the SIGTERM si asks for a restart (systemd's job, or the keeper's). */
bool restart_asked(struct daemon *d, const struct signalfd_siginfo *si);
void restart_begin(struct daemon *d);
/* True once quiet (or after 10 s): the loop ends, the store kept. */
bool restart_step(struct daemon *d);

#endif
