// SPDX-License-Identifier: GPL-2.0-only
/*
 * listen.c - the control socket, made where nobody else can touch it.
 *
 * zswapd is root, and a path is only as safe as the directory it is in: in
 * one that another user may write, the socket could be swapped for a
 * symlink between our bind and a chmod, and the chmod would open whatever
 * it points to.  So the directory must be root's (ours) and writable by
 * nobody else, the socket is born with its mode (umask around bind, no
 * chmod), and its group is set without following a symlink.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "listen.h"
#include "log.h"

/* The socket's directory: made if missing, and refused if others may write it. */
static int listen_dir(const char *path)
{
	char dir[CFG_PATH_MAX], *slash;
	struct stat st;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash)
		return -EINVAL;
	if (slash == dir)
		slash[1] = '\0';
	else
		*slash = '\0';
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return log_error_errno(-errno, "Failed to create %s: %m", dir);
	if (lstat(dir, &st) < 0)
		return log_error_errno(-errno, "Failed to look at %s: %m", dir);
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022))
		return log_error_errno(-EPERM, "The socket's directory %s must be a directory of "
					       "uid %u that no one else may write into",
				       dir, (unsigned)geteuid());
	return 0;
}

/* The gid of cfg->socket_group; root's (said once) if there is no such group. */
static gid_t listen_gid(const struct cfg *cfg)
{
	char buf[4096];
	struct group gr, *res = NULL;

	if (getgrnam_r(cfg->socket_group, &gr, buf, sizeof(buf), &res) == 0 && res)
		return res->gr_gid;
	log_warning("group %s does not exist: the socket is root's alone (make install "
		    "creates it; socket_group in zswapd.conf)", cfg->socket_group);
	return 0;
}

int listen_open(const struct cfg *cfg)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *path = cfg->socket;
	int fd, probe, r;
	mode_t old;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	r = listen_dir(path);
	if (r < 0)
		return r;
	/* Non-blocking: a listener whose backlog is full says EAGAIN, not a wait. */
	probe = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (probe >= 0) {
		int busy = connect(probe, (struct sockaddr *)&sa, sizeof(sa)) == 0 || errno == EAGAIN;

		close(probe);
		if (busy)
			return log_error_errno(-EADDRINUSE, "Another zswapd is listening on %s", path);
	}
	unlink(path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return log_error_errno(-errno, "Failed to create socket: %m");
	old = umask(0777 & ~(mode_t)cfg->socket_mode);
	r = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (r < 0 || fchownat(AT_FDCWD, path, 0, listen_gid(cfg), AT_SYMLINK_NOFOLLOW) < 0 ||
	    listen(fd, 128) < 0) {
		r = -errno;
		close(fd);
		return log_error_errno(r, "Failed to listen on %s: %m", path);
	}
	return fd;
}
