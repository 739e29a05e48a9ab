// SPDX-License-Identifier: GPL-2.0-only
/*
 * fdstore.c - the file-descriptor store's protocol (fdstore.h): sd_notify
 * messages out, LISTEN_FDS in, through libsystemd's sd-daemon, which is
 * all a store must speak, systemd or the keeper.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <systemd/sd-daemon.h>

#include "daemon.h"
#include "persist.h"
#include "fdstore.h"
#include "log.h"

struct fdstore_fd {
	char *name;
	int fd; /* -1 once taken */
};

int fdstore_load(struct daemon *d)
{
	char **names = NULL;
	int n = sd_listen_fds_with_names(1, &names);

	if (n <= 0)
		return n;
	d->persist.handed = calloc((size_t)n, sizeof(*d->persist.handed));
	if (!d->persist.handed) {
		for (int i = 0; i < n; i++)
			free(names[i]);
		free(names);
		return -ENOMEM;
	}
	for (int i = 0; i < n; i++) {
		d->persist.handed[i].name = names[i];
		d->persist.handed[i].fd = SD_LISTEN_FDS_START + i;
		fcntl(d->persist.handed[i].fd, F_SETFD, FD_CLOEXEC);
	}
	d->persist.nhanded = (size_t)n;
	free(names);
	return n;
}

int fdstore_take(struct daemon *d, const char *name)
{
	for (size_t i = 0; i < d->persist.nhanded; i++) {
		int fd = d->persist.handed[i].fd;

		if (fd >= 0 && !strcmp(d->persist.handed[i].name, name)) {
			d->persist.handed[i].fd = -1;
			return fd;
		}
	}
	return -1;
}

int fdstore_take_listener(struct daemon *d, int *ret_fd)
{
	size_t found = d->persist.nhanded;

	for (size_t i = 0; i < d->persist.nhanded; i++) {
		if (d->persist.handed[i].fd < 0 ||
		    sd_is_socket_unix(d->persist.handed[i].fd, SOCK_SEQPACKET, 1, NULL, 0) <= 0)
			continue;
		if (found < d->persist.nhanded)
			return -EINVAL;
		found = i;
	}
	if (found == d->persist.nhanded)
		return 0;
	*ret_fd = d->persist.handed[found].fd;
	d->persist.handed[found].fd = -1;
	return 1;
}

void fdstore_each(struct daemon *d, const char *prefix,
		  void (*cb)(struct daemon *d, const char *name, int fd, void *arg), void *arg)
{
	size_t len = strlen(prefix);

	for (size_t i = 0; i < d->persist.nhanded; i++)
		if (d->persist.handed[i].fd >= 0 && !strncmp(d->persist.handed[i].name, prefix, len))
			cb(d, d->persist.handed[i].name, d->persist.handed[i].fd, arg);
}

void fdstore_forget_rest(struct daemon *d)
{
	for (size_t i = 0; i < d->persist.nhanded; i++) {
		if (d->persist.handed[i].fd >= 0) {
			log_debug("fd store: %s is not ours any more", d->persist.handed[i].name);
			fdstore_drop(d, d->persist.handed[i].name);
			close(d->persist.handed[i].fd);
		}
		free(d->persist.handed[i].name);
	}
	free(d->persist.handed);
	d->persist.handed = NULL;
	d->persist.nhanded = 0;
}

int fdstore_put(struct daemon *d, const char *name, int fd)
{
	char msg[128];
	int r;

	if (!d->persist.fdstore)
		return 0;
	/* One descriptor per name: a zswapd killed half-way through taking
	 * over may have stored this name already, for something else. */
	fdstore_drop(d, name);
	snprintf(msg, sizeof(msg), "FDSTORE=1\nFDNAME=%s\nFDPOLL=0", name);
	r = sd_pid_notify_with_fds(0, 0, msg, &fd, 1);
	if (r <= 0)
		return r < 0 ? r : -ENOTCONN;
	return 0;
}

void fdstore_drop(struct daemon *d, const char *name)
{
	char msg[128];

	if (!d->persist.fdstore)
		return;
	snprintf(msg, sizeof(msg), "FDSTOREREMOVE=1\nFDNAME=%s", name);
	sd_notify(0, msg);
}
