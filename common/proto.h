/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * proto.h - encoding, checking and moving messages of include/zswap_proto.h.
 * Linked into the daemon, zswapctl and the shim, so it uses libc only and
 * logs nothing.
 */
#ifndef ZSWAPD_PROTO_H
#define ZSWAPD_PROTO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "zswap_proto.h"

#define PROTO_MAX_FDS 2

/*
 * Validates one received datagram: header magic, version, len against the
 * datagram size, and the payload's shape for its type (fixed sizes, array
 * counts that match len, NUL-terminated strings, page-aligned run addresses,
 * runs of at least one page).  Returns 0 and points *ret_hdr at buf, or
 * -EBADMSG (-EPROTO for a wrong magic or version).
 *
 * buf must be 8-byte aligned (declare it uint64_t buf[ZS_MSG_MAX / 8]) so
 * the payload structs can be read in place; -EINVAL otherwise.
 */
int proto_check(const void *buf, size_t len, const struct zs_hdr **ret_hdr);

/* Payload of a checked message. */
static inline const void *proto_payload(const struct zs_hdr *h)
{
	return (const void *)(h + 1);
}

/*
 * Sends one message with up to PROTO_MAX_FDS descriptors attached
 * (SCM_RIGHTS).  MSG_NOSIGNAL: a dead peer is -EPIPE, not SIGPIPE.
 * Returns 0 or -errno; -EMSGSIZE if it would exceed ZS_MSG_MAX.
 */
int proto_send(int fd, uint16_t type, uint32_t seq, const void *payload, size_t len,
	       const int *fds, int nfds);

/*
 * Receives one datagram into buf (cap >= ZS_MSG_MAX, 8-byte aligned as for
 * proto_check(); -EINVAL otherwise) and checks it.  Any descriptors that
 * came with it are stored in fds[] (O_CLOEXEC) up to maxfds, their number
 * in *ret_nfds; extra ones are closed.  Returns the
 * datagram length, 0 on orderly shutdown, or -errno (-EAGAIN when
 * nonblocking and empty; -EMSGSIZE if it was truncated, -EBADMSG/-EPROTO as
 * proto_check).  On failure no descriptor is left open.
 */
ssize_t proto_recv(int fd, void *buf, size_t cap, int *fds, int maxfds, int *ret_nfds);

/* Sends ZS_ERROR {err, msg}; msg is cut short if it would not fit ZS_MSG_MAX. */
int proto_send_error(int fd, uint32_t seq, int err, const char *msg);

#endif
