/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * identity.h - who is at the other end, proven, never taken on its word.
 *
 * A pid number is not an identity: it outlives its process, and in a pid
 * namespace it names another one.  zswapd binds each connection to the
 * peer's pidfd (SO_PEERPIDFD), which names one process for good, and binds
 * a uffd to the mm it serves by writing a nonce through the uffd and
 * reading it back through /proc/PID/mem of that process: the two are the
 * same mm only if the nonce comes back.  Both are re-checked where they
 * matter (docs/design.md, "Threat model").
 */
#ifndef ZSWAPD_IDENTITY_H
#define ZSWAPD_IDENTITY_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define IDENTITY_NONCE_LEN 16

/* The pidfd of the process at the other end of unix socket sock (pid: its SO_PEERCRED pid). */
int identity_peer_pidfd(int sock, pid_t pid);
/* Whether the process of pidfd still runs (a zombie does not). */
bool identity_alive(int pidfd);
/*
 * /proc/PID/mem of the process of pidfd, read-only: -ESRCH if that process
 * is not the one with pid (it exited, and pid may be another's).  Reads
 * through it stay with the mm it was opened on, whatever the pid does next.
 */
int identity_open_mem(pid_t pid, int pidfd);
/* A fresh random nonce. */
int identity_nonce(uint8_t nonce[IDENTITY_NONCE_LEN]);
/*
 * Maps a page that holds nonce at addr through uffd, which must have
 * nothing there (-EEXIST otherwise), waking whoever waits on it.
 */
int identity_plant(int uffd, uint64_t addr, const uint8_t nonce[IDENTITY_NONCE_LEN]);
/* 1 if the page at addr, read through memfd, holds nonce; 0 if not; -errno. */
int identity_check(int memfd, uint64_t addr, const uint8_t nonce[IDENTITY_NONCE_LEN]);
/*
 * The thread of process pid whose id is tid in that process's own pid
 * namespace (as its threads and its uffd's fault messages name it): its
 * id here in *ret_host_tid; -ESRCH if pid has no such thread.
 */
int identity_thread(pid_t pid, pid_t tid, pid_t *ret_host_tid);

/* The pid namespace of process pid, as its inode number; 0 if it cannot be read. */
uint64_t identity_pidns(pid_t pid);
/* The id of process pid in its own pid namespace (a container's view); -1 if unknown. */
pid_t identity_inner_pid(pid_t pid);

#endif
