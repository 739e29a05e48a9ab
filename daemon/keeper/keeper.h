/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * keeper.h - zswapd's own file-descriptor store, for when systemd is not
 * there to be one (keeper.c): a parent that starts zswapd, keeps what it
 * stores with FDSTORE=1, and starts it again with them after a crash.
 */
#ifndef ZSWAPD_KEEPER_H
#define ZSWAPD_KEEPER_H

/*
 * Test hook, for tests only: the program the keeper starts instead of the
 * binary zswapd was started from, with the same arguments, so a test can
 * run the keeper against a fake daemon (tests/integration/keeper_test.py).
 */
#define KEEPER_EXEC_ENV "ZSWAPD_KEEPER_EXEC"

/*
 * The keeper's restart (its SIGUSR1): SIGTERM sent to zswapd with this
 * value (sigqueue), which tells it from a stop.  zswapd then exits leaving
 * its pool in the store (restart.c), and the keeper starts the next one.
 */
#define ZS_RESTART_SIGVAL 0x7a737274 /* "zsrt" */

/*
 * Runs the keeper until it is done: starts exe with argv (argv[0] first,
 * NULL-terminated; the daemon's own, -f among them) as its child, and
 * starts it again, with every descriptor it stored, each time it is killed
 * or fails after a READY=1.  ready_fd, if >= 0, is written one byte and
 * closed at the first READY=1 (the background parent's pipe); the keeper
 * owns it either way.
 *
 * Returns the exit code for the keeper's process: 0 once the child exited
 * 0 (it stopped cleanly), the child's code (128 + signal if killed) once it
 * exited after a SIGTERM or SIGINT, or failed to start before any READY=1;
 * -errno if the keeper could not set itself up (logged).
 */
int keeper_run(const char *exe, char *const argv[], int ready_fd);

#endif
