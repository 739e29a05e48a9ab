// SPDX-License-Identifier: GPL-2.0-only
/*
 * fakemanager SOCKET JOBFILE: a stand-in for systemd's private bus
 * (/run/systemd/private), for zswapd's restart test: what zswapd asks at a
 * SIGTERM, and no more.
 *
 *   GetUnitByPID(u) -> o     /org/freedesktop/systemd1/unit/zswapd_2eservice
 *   ListJobs() -> a(usssoo)  one job on that unit, of the type JOBFILE holds
 *                            ("restart", "stop"); none if it is empty.  With
 *                            more lines, a call answers the first and takes
 *                            it out of the file.
 *
 * Each call is printed on stdout.  Serves one connection after another,
 * until killed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <systemd/sd-bus.h>

#define UNIT_PATH "/org/freedesktop/systemd1/unit/zswapd_2eservice"

static const char *job_file;

static int get_unit_by_pid(sd_bus_message *m, void *userdata, sd_bus_error *err)
{
	uint32_t pid;
	int r;

	(void)userdata;
	(void)err;
	r = sd_bus_message_read(m, "u", &pid);
	if (r < 0)
		return r;
	printf("GetUnitByPID %u\n", pid);
	fflush(stdout);
	return sd_bus_reply_method_return(m, "o", UNIT_PATH);
}

static int list_jobs(sd_bus_message *m, void *userdata, sd_bus_error *err)
{
	sd_bus_message *reply = NULL;
	char type[32] = "";
	FILE *f;
	int r;

	(void)userdata;
	(void)err;
	f = fopen(job_file, "re");
	if (f) {
		char line[32], rest[4096];
		size_t n;

		if (fgets(line, sizeof(line), f) && sscanf(line, "%31s", type) != 1)
			type[0] = '\0';
		n = fread(rest, 1, sizeof(rest), f);
		fclose(f);
		if (n > 0 && (f = fopen(job_file, "we"))) {
			fwrite(rest, 1, n, f);
			fclose(f);
		}
	}
	printf("ListJobs %s\n", type[0] ? type : "(none)");
	fflush(stdout);
	r = sd_bus_message_new_method_return(m, &reply);
	if (r >= 0)
		r = sd_bus_message_open_container(reply, 'a', "(usssoo)");
	if (r >= 0 && type[0])
		r = sd_bus_message_append(reply, "(usssoo)", 42u, "zswapd.service", type, "running",
					  "/org/freedesktop/systemd1/job/42", UNIT_PATH);
	if (r >= 0)
		r = sd_bus_message_close_container(reply);
	if (r >= 0)
		r = sd_bus_send(NULL, reply, NULL);
	sd_bus_message_unref(reply);
	return r;
}

static const sd_bus_vtable manager_vtable[] = {
	SD_BUS_VTABLE_START(0),
	SD_BUS_METHOD("GetUnitByPID", "u", "o", get_unit_by_pid, 0),
	SD_BUS_METHOD("ListJobs", "", "a(usssoo)", list_jobs, 0),
	SD_BUS_VTABLE_END,
};

/* One client, until it hangs up. */
static void serve(int fd)
{
	sd_id128_t id;
	sd_bus *bus = NULL;
	int r;

	sd_id128_randomize(&id);
	r = sd_bus_new(&bus);
	if (r >= 0)
		r = sd_bus_set_fd(bus, fd, fd);
	if (r >= 0)
		r = sd_bus_set_server(bus, 1, id);
	if (r >= 0)
		r = sd_bus_add_object_vtable(bus, NULL, "/org/freedesktop/systemd1",
					     "org.freedesktop.systemd1.Manager", manager_vtable, NULL);
	if (r >= 0)
		r = sd_bus_start(bus);
	while (r >= 0) {
		r = sd_bus_process(bus, NULL);
		if (r == 0)
			r = sd_bus_wait(bus, UINT64_MAX);
	}
	if (r != -ECONNRESET && r != -ENOTCONN)
		fprintf(stderr, "fakemanager: %s\n", strerror(-r));
	if (bus)
		sd_bus_flush_close_unref(bus); /* closes fd */
	else
		close(fd);
}

int main(int argc, char **argv)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int lfd;

	if (argc != 3 || strlen(argv[1]) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "usage: fakemanager SOCKET JOBFILE\n");
		return 2;
	}
	job_file = argv[2];
	strcpy(sa.sun_path, argv[1]);
	unlink(sa.sun_path);
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(lfd, 8) < 0) {
		perror("fakemanager");
		return 1;
	}
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

		if (fd >= 0)
			serve(fd);
		else if (errno != EINTR)
			return 1;
	}
}
