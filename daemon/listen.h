/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * listen.h - the control socket, when zswapd makes it itself (systemd's
 * socket unit makes its own: SocketMode=, SocketGroup=).
 */
#ifndef ZSWAPD_LISTEN_H
#define ZSWAPD_LISTEN_H

#include "cfg.h"

/* A listening socket at cfg->socket, of cfg->socket_mode and group; -errno, said. */
int listen_open(const struct cfg *cfg);

#endif
