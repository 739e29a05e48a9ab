#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""
keeper_test.py - the keeper (daemon/keeper/keeper.c), zswapd's stand-in for
systemd's file-descriptor store, against a fake zswapd.

Usage: python3 tests/integration/keeper_test.py build/zswapd

The fake zswapd is this script again, started by the keeper through its
test hook ZSWAPD_KEEPER_EXEC (keeper.h), so no working config, uffd or pool
is needed.  It connects to the test over a SOCK_SEQPACKET socket, reports
what it was started with (LISTEN_*, its descriptors and their files, its
signal mask), and does what the test says: store descriptors with
sd_notify's protocol, remove them, say READY=1, exit.  Whatever it sends
the keeper is sent before the test kills it, and the keeper reads
NOTIFY_SOCKET before it reaps a child, so no check waits on a timer.

Prints one line per check; exits 1 if any failed.
"""
import array
import ctypes
import fcntl
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time

CTL_ENV = "KEEPER_TEST_CTL"  # set: this process is the fake zswapd
TERM_CODE = 7  # the fake zswapd's exit code after a SIGTERM
TIMEOUT = 5.0
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR2)


# ---- the fake zswapd --------------------------------------------------------


def sd_notify(text, fds=(), addr=None):
    """sd_pid_notify_with_fds(0, 0, text, fds, n): one datagram to NOTIFY_SOCKET."""
    addr = addr or os.environ["NOTIFY_SOCKET"]
    if addr.startswith("@"):
        addr = "\0" + addr[1:]
    # Not socket.send_fds(): before 3.12 it drops its address argument.
    rights = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))] if fds else []
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
        s.sendmsg([text.encode()], rights, 0, addr)


def describe(fd):
    try:
        st = os.fstat(fd)
    except OSError as e:  # told to the test, which fails the check
        return {"fd": fd, "id": None, "sock": False, "cloexec": None, "error": str(e)}
    d = {"fd": fd, "id": [st.st_dev, st.st_ino], "sock": stat.S_ISSOCK(st.st_mode),
         "cloexec": bool(fcntl.fcntl(fd, fcntl.F_GETFD) & fcntl.FD_CLOEXEC)}
    if stat.S_ISREG(st.st_mode):
        d["data"] = os.pread(fd, 256, 0).decode()
    return d


def make_fds(cmd, keep):
    """The descriptors a "store" command asks for; what must stay open goes to keep."""
    fds = []
    for _ in range(cmd.get("count", 1)):
        kind = cmd["kind"]
        if kind == "memfd":
            fd = os.memfd_create(cmd.get("label", "kt"), os.MFD_CLOEXEC)
            os.write(fd, cmd["data"].encode())
        elif kind == "dead_peer":  # its peer closed: EPOLLHUP
            a, b = socket.socketpair()
            b.close()
            fd = a.detach()
        else:  # "fd": one we hold already (the store's, given back)
            fd = cmd["fd"]
        fds.append(fd)
    keep.extend(fds)
    return fds


def child_main():
    # What the keeper gave us, before anything of ours is open.
    blocked = sorted(int(s) for s in signal.pthread_sigmask(signal.SIG_BLOCK, []))
    listing = sorted(int(x) for x in os.listdir("/proc/self/fd"))  # with its own dirfd
    env = {k: os.environ.get(k) for k in ("LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES",
                                          "NOTIFY_SOCKET")}
    n = int(env["LISTEN_FDS"] or 0) if env["LISTEN_PID"] == str(os.getpid()) else 0
    with open("/proc/self/oom_score_adj") as f:
        oom = f.read().strip()
    hello = {"pid": os.getpid(), "ppid": os.getppid(), "args": sys.argv[2:], "env": env,
             "fds": [describe(3 + i) for i in range(n)], "blocked": blocked,
             "listing": listing, "oom": oom}

    ctl = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    ctl.connect(os.environ[CTL_ENV])

    def on_signal(sig, _frame):
        ctl.send(json.dumps({"event": signal.Signals(sig).name}).encode())
        if sig == signal.SIGTERM:
            os._exit(TERM_CODE)

    def on_sigterm():
        # As zswapd: one sent with sigqueue() (SI_QUEUE) is the keeper's restart,
        # answered by an exit 0 that leaves the store; any other, a stop.
        info = signal.sigwaitinfo({signal.SIGTERM})
        restart = info.si_code == -1 and info.si_pid == os.getppid()
        ctl.send(json.dumps({"event": "SIGTERM/restart" if restart else "SIGTERM"}).encode())
        os._exit(0 if restart else TERM_CODE)

    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGUSR2):
        signal.signal(sig, on_signal)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, set(FORWARDED) - {signal.SIGTERM})
    threading.Thread(target=on_sigterm, daemon=True).start()
    ctl.send(json.dumps(hello).encode())
    keep = []
    while True:
        raw = ctl.recv(65536)
        if not raw:  # the test is gone
            os._exit(0)
        cmd, reply = json.loads(raw), {}
        if cmd["op"] == "store":
            fds = make_fds(cmd, keep)
            text = "FDSTORE=1"
            if cmd.get("name") is not None:
                text += "\nFDNAME=" + cmd["name"]
            if not cmd.get("poll", True):
                text += "\nFDPOLL=0"
            sd_notify(text, fds)
            reply["ids"] = [[os.fstat(fd).st_dev, os.fstat(fd).st_ino] for fd in fds]
        elif cmd["op"] == "notify":
            sd_notify(cmd["text"])
        elif cmd["op"] == "exit":
            ctl.send(b"{}")
            os._exit(cmd["code"])
        ctl.send(json.dumps(reply).encode())


# ---- the test ---------------------------------------------------------------

class Failed(Exception):
    pass


class Checks:
    def __init__(self):
        self.failed = 0

    def __call__(self, ok, what, detail=""):
        print(("ok   " if ok else "FAIL ") + what + ("" if ok or not detail else ": " + detail),
              flush=True)
        self.failed += not ok
        return ok


class Child:
    """The fake zswapd, as the test talks to it."""

    def __init__(self, conn):
        self.conn = conn
        self.events = []
        self.hello = self.recv()
        self.pid = self.hello["pid"]

    def recv(self):
        self.conn.settimeout(TIMEOUT)
        raw = self.conn.recv(1 << 20)
        if not raw:
            raise Failed("the fake zswapd hung up")
        return json.loads(raw)

    def cmd(self, op, **kw):
        self.conn.send(json.dumps(dict(op=op, **kw)).encode())
        while True:
            m = self.recv()
            if "event" not in m:
                return m
            self.events.append(m["event"])

    def event(self, name):
        while name not in self.events:
            self.events.append(self.recv().get("event"))
        return True

    def store(self, name, kind="memfd", **kw):
        return self.cmd("store", name=name, kind=kind, **kw)["ids"]

    def names(self):
        s = self.hello["env"]["LISTEN_FDNAMES"]
        return s.split(":") if s is not None else []

    def kill(self):
        os.kill(self.pid, signal.SIGKILL)


class Run:
    """One zswapd started with the fake zswapd as what its keeper execs."""

    def __init__(self, t, args, env_extra=None):
        self.t = t
        self.log = tempfile.TemporaryFile(mode="w+", dir=t.tmp)
        # Its own: a fake zswapd left by a run that failed never talks to the next.
        ctl_path = os.path.join(t.tmp, "ctl-%d.sock" % len(t.runs))
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.listener.bind(ctl_path)
        self.listener.listen(16)
        self.children = []
        env = {k: v for k, v in os.environ.items() if k not in ("NOTIFY_SOCKET", "LISTEN_FDS",
                                                                   "LISTEN_PID", "LISTEN_FDNAMES")}
        env.update({"ZSWAPD_KEEPER_EXEC": t.fake, CTL_ENV: ctl_path,
                    "ZSWAP_SOCKET": os.path.join(t.tmp, "zswapd.sock")})
        env.update(env_extra or {})
        self.proc = subprocess.Popen([t.zswapd, "-c", t.conf] + args, env=env,
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=self.log)
        t.runs.append(self)

    def child(self):
        self.listener.settimeout(TIMEOUT)
        try:
            conn, _ = self.listener.accept()
        except socket.timeout:
            raise Failed("no fake zswapd started within %.0f s" % TIMEOUT)
        c = Child(conn)
        self.children.append(c)
        return c

    def stop(self):
        """Whatever of it still runs: killed (we started it), the keepers first."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for keeper in {c.hello["ppid"] for c in self.children} - {self.proc.pid}:
            try:  # a background keeper, ours as subreaper
                os.kill(keeper, signal.SIGKILL)
                os.waitpid(keeper, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
        for c in self.children:
            c.conn.close()  # a fake zswapd alive exits at that
            try:
                os.kill(c.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.listener.close()

    def wait(self):
        try:
            return self.proc.wait(TIMEOUT)
        except subprocess.TimeoutExpired:
            raise Failed("zswapd did not exit within %.0f s" % TIMEOUT)

    def text(self):
        self.log.seek(0)
        return self.log.read()


def wait_pid(pid):
    """The exit code of a process we reap as subreaper."""
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        got, status = os.waitpid(pid, os.WNOHANG)
        if got == pid:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.02)
    raise Failed("pid %d did not exit within %.0f s" % (pid, TIMEOUT))


CAP_SYS_RESOURCE = 24


def has_cap(cap):
    with open("/proc/self/status") as f:
        eff = next(l for l in f if l.startswith("CapEff:")).split()[1]
    return bool(int(eff, 16) >> cap & 1)


def fd_links(pid):
    try:
        return [os.readlink("/proc/%d/fd/%s" % (pid, f)) for f in os.listdir("/proc/%d/fd" % pid)]
    except PermissionError:
        return None


class Test:
    def __init__(self, zswapd):
        self.zswapd = os.path.abspath(zswapd)
        self.tmp = tempfile.mkdtemp(prefix="zswapd-keeper-")
        self.conf = os.path.join(self.tmp, "zswapd.conf")
        open(self.conf, "w").close()  # the defaults: the keeper never uses them
        # Started by the kernel as: python3 <this script> <fake> <zswapd's args>.
        self.fake = os.path.join(self.tmp, "fake-zswapd")
        with open(self.fake, "w") as f:
            f.write("#!%s %s\n" % (sys.executable, os.path.abspath(__file__)))
        os.chmod(self.fake, 0o755)
        self.runs = []
        self.check = Checks()
        with open("/proc/self/oom_score_adj") as f:
            self.oom = f.read().strip()
        # The background keeper outlives the zswapd we start: reap it ourselves.
        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER

    def cleanup(self):
        for run in self.runs:
            run.stop()
        for name in os.listdir(self.tmp):
            os.unlink(os.path.join(self.tmp, name))
        os.rmdir(self.tmp)

    def scenario(self, fn):
        first = len(self.runs)
        try:
            fn()
        except Failed as e:
            self.check(False, fn.__name__, str(e))
        except Exception as e:  # a broken scenario is a failure too, with its cause
            self.check(False, fn.__name__, "%s: %s" % (type(e).__name__, e))
        else:
            return
        for run in self.runs[first:]:  # what zswapd, the keeper and the fake said
            run.stop()
            sys.stdout.write(run.text())

    # ---- scenarios ----

    def test_restart(self):
        c_ = self.check
        run = Run(self, ["--supervise"],
                  {"LISTEN_FDS": "7", "LISTEN_PID": "1", "LISTEN_FDNAMES": "not:ours"})
        c1 = run.child()
        h = c1.hello
        c_(h["args"] == ["-f", "-c", self.conf], "--supervise: the child gets our arguments "
           "but --supervise, with -f", repr(h["args"]))
        c_(all(h["env"][k] is None for k in ("LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES")),
           "nothing stored: LISTEN_FDS, LISTEN_PID, LISTEN_FDNAMES unset", repr(h["env"]))
        ns = h["env"]["NOTIFY_SOCKET"] or ""
        d = os.path.dirname(ns)
        st = os.lstat(d) if d.startswith(("/run/zswapd-keeper.", "/tmp/zswapd-keeper.")) \
            else None
        c_(st is not None and stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and
           stat.S_IMODE(st.st_mode) == 0o700,
           "NOTIFY_SOCKET is a path in a directory of the keeper's that no one else may enter "
           "(an abstract name is anyone's to bind first)", repr(ns))
        want = sorted(int(s) for s in FORWARDED)
        c_(all(s in h["blocked"] for s in want) and int(signal.SIGCHLD) not in h["blocked"],
           "the child starts with SIGTERM, SIGINT, SIGHUP, SIGUSR2 blocked", repr(h["blocked"]))
        c_(h["listing"] == [0, 1, 2, 3], "the child gets no descriptor but its stdio",
           repr(h["listing"]))
        with open("/proc/%d/oom_score_adj" % run.proc.pid) as f:
            keeper_oom = f.read().strip()
        if has_cap(CAP_SYS_RESOURCE):
            c_(keeper_oom == "-1000" and h["oom"] == self.oom,
               "the keeper's oom_score_adj is -1000, the child's ours",
               "keeper %s, child %s, ours %s" % (keeper_oom, h["oom"], self.oom))
        else:
            print("SKIP the keeper's oom_score_adj is -1000: lowering it takes "
                  "CAP_SYS_RESOURCE, which we lack", flush=True)
            c_(h["oom"] == self.oom, "the child's oom_score_adj is ours",
               "child %s, ours %s" % (h["oom"], self.oom))

        c1.cmd("notify", text="READY=1\nSTATUS=serving")
        ids = c1.store("pool", data="pool-bytes", label="pool")
        ids += c1.store("pair", count=2, data="pair-bytes")
        ids += c1.store("conn", kind="dead_peer", poll=False)
        c1.store("gone", kind="dead_peer")  # polled: dropped
        ids += c1.store("bad:name", data="bad-bytes")  # invalid: stored as "stored"
        ids += c1.store("extra", data="extra-bytes")
        # From a process that is not the child: refused, its descriptor closed.
        intruder = os.memfd_create("kt-intruder")
        sd_notify("FDSTORE=1\nFDNAME=intruder", [intruder], h["env"]["NOTIFY_SOCKET"])
        os.close(intruder)
        c1.kill()

        c2 = run.child()
        h = c2.hello
        names = ["pool", "pair", "pair", "conn", "stored", "extra"]
        c_(h["env"]["LISTEN_PID"] == str(c2.pid) and h["env"]["LISTEN_FDS"] == str(len(names)),
           "after SIGKILL: restarted with LISTEN_PID = the new child, LISTEN_FDS = %d" % len(names),
           repr(h["env"]))
        c_(c2.names() == names, "the stored descriptors come back by name, in order of arrival",
           repr(c2.names()))
        c_([f["fd"] for f in h["fds"]] == list(range(3, 3 + len(names))) and
           not any(f["cloexec"] for f in h["fds"]),
           "as descriptors 3.. without FD_CLOEXEC", repr([(f["fd"], f["cloexec"]) for f in h["fds"]]))
        c_([f["id"] for f in h["fds"]] == ids,
           "the same open files: (st_dev, st_ino) as stored",
           "%r != %r" % ([f["id"] for f in h["fds"]], ids))
        c_(h["fds"] and h["fds"][0].get("data") == "pool-bytes" and
           h["fds"][4].get("data") == "bad-bytes",
           "a memfd's content comes back", repr([f.get("data") for f in h["fds"]]))
        c_("gone" not in c2.names(), "FDPOLL: a socket whose peer is closed is dropped")
        c_("conn" in c2.names() and h["fds"][3]["sock"],
           "FDPOLL=0: a socket whose peer is closed is kept")
        c_("intruder" not in c2.names(), "a datagram from another pid is refused")
        links = fd_links(run.proc.pid)
        if links is not None:
            c_(not any("intruder" in l for l in links),
               "the keeper closed the refused datagram's descriptor", repr(links))
        c_(h["listing"] == list(range(0, 3 + len(names) + 1)),
           "the child gets the store and its stdio, nothing else", repr(h["listing"]))
        c_("was killed by signal 9: starting it again with 6 stored descriptors" in run.text(),
           "the keeper says why and with what it restarted")

        c2.cmd("notify", text="FDSTOREREMOVE=1\nFDNAME=extra")
        c2.store("pool-again", kind="fd", fd=3)  # given back, stored again: kept once
        c2.cmd("exit", code=1)  # a failure after a READY=1: restarted

        c3 = run.child()
        names.remove("extra")
        c_(c3.names() == names, "FDSTOREREMOVE=1 closes that name; the same open file is "
           "not stored twice", repr(c3.names()))
        c_("exited with code 1: starting it again" in run.text(),
           "a non-zero exit after READY=1 is restarted")
        os.kill(run.proc.pid, signal.SIGHUP)
        c_(c3.event("SIGHUP"), "SIGHUP to the keeper is passed to the child")
        os.kill(run.proc.pid, signal.SIGTERM)
        c3.event("SIGTERM")
        rc = run.wait()
        c_(rc == TERM_CODE, "SIGTERM is passed on; the keeper exits with the child's code %d"
           % TERM_CODE, "exit code %s\n%s" % (rc, run.text()))

    def test_many(self):
        """The moves into 3.. with descriptor numbers out of order: those stored
        last reuse the numbers of those removed, below the ones kept."""
        run = Run(self, ["--supervise"])
        c = run.child()
        c.cmd("notify", text="READY=1")
        c.store("a", count=200, data="a")
        ids = c.store("b", count=100, data="b") + c.store("c", count=100, data="c")
        c.cmd("notify", text="FDSTOREREMOVE=1\nFDNAME=a")
        ids += c.store("d", count=150, data="d")
        c.kill()
        c = run.child()
        got = [f["id"] for f in c.hello["fds"]]
        self.check(c.names() == ["b"] * 100 + ["c"] * 100 + ["d"] * 150 and got == ids,
                   "350 descriptors stored out of numeric order come back in order",
                   "%d names, %d of %d ids in place" % (len(c.names()),
                                                       sum(a == b for a, b in zip(got, ids)),
                                                       len(ids)))
        c.cmd("exit", code=0)
        run.wait()

    def test_crash_loop(self):
        run = Run(self, ["--supervise"])
        c = run.child()
        c.cmd("notify", text="READY=1")
        c.store("pool", data="p")
        for _ in range(4):  # each ready, and dead well within 1 s of its start
            c.kill()
            c = run.child()
            c.cmd("notify", text="READY=1")
        self.check("quick deaths" not in run.text() and c.names() == ["pool"],
                   "one that was ready is started again at once, however soon it died",
                   run.text())
        for _ in range(4):  # the ready one, then three dead before they were ready
            c.kill()
            c = run.child()
        self.check("in 100 ms (3 quick deaths in a row)" in run.text() and c.names() == ["pool"],
                   "the third death before READY=1 in a row: started again after 100 ms, "
                   "with the store",
                   run.text())
        c.cmd("notify", text="FDSTOREREMOVE=1\nFDNAME=pool")  # else an exit 0 is a restart
        c.cmd("exit", code=0)
        run.wait()

    def test_restart_signal(self):
        run = Run(self, ["--supervise"])
        c = run.child()
        c.cmd("notify", text="READY=1")
        c.store("pool", data="p")
        os.kill(run.proc.pid, signal.SIGUSR1)
        c.event("SIGTERM/restart")
        c = run.child()
        self.check(c.names() == ["pool"] and "handed over for a restart" in run.text(),
                   "SIGUSR1: a SIGTERM sent with sigqueue(); an exit 0 leaving the pool in the "
                   "store starts the next at once, with the store",
                   "names %r\n%s" % (c.names(), run.text()))
        c.cmd("notify", text="READY=1")
        c.cmd("notify", text="FDSTOREREMOVE=1\nFDNAME=pool")
        c.cmd("exit", code=0)
        rc = run.wait()
        self.check(rc == 0 and "stopped cleanly" in run.text(),
                   "an exit 0 with no pool left in the store is a stop: the keeper ends with 0",
                   "exit code %s\n%s" % (rc, run.text()))

    def test_clean_exit(self):
        run = Run(self, ["--supervise"])
        c = run.child()
        c.cmd("notify", text="READY=1")
        c.store("journal", data="j")
        c.cmd("exit", code=0)
        rc = run.wait()
        self.check(rc == 0 and "stopped cleanly" in run.text(),
                   "the child's exit 0 (a clean stop) ends the keeper with 0",
                   "exit code %s\n%s" % (rc, run.text()))

    def test_start_failure(self):
        run = Run(self, ["--supervise"])
        run.child().cmd("exit", code=3)
        rc = run.wait()
        self.check(rc == 3 and "failed to start" in run.text(),
                   "exit 3 before any READY=1 (a failed start) ends the keeper with 3",
                   "exit code %s\n%s" % (rc, run.text()))

    def test_background(self):
        c_ = self.check
        run = Run(self, [])
        c = run.child()
        time.sleep(0.3)
        c_(run.proc.poll() is None, "without -f: zswapd does not return before READY=1")
        c_(c.hello["args"] == ["-f", "-c", self.conf] and c.hello["ppid"] != run.proc.pid,
           "the backgrounded child is the keeper, zswapd its child with -f",
           "args %r, ppid %d, zswapd %d" % (c.hello["args"], c.hello["ppid"], run.proc.pid))
        c.cmd("notify", text="READY=1")
        rc = run.wait()
        c_(rc == 0, "without -f: zswapd returns 0 once READY=1 came", "exit code %s" % rc)
        keeper = c.hello["ppid"]
        c.cmd("exit", code=0)
        rc = wait_pid(keeper)
        c_(rc == 0, "the background keeper exits 0 after a clean stop", "exit code %s" % rc)

    def test_background_failure(self):
        run = Run(self, [])
        c = run.child()
        keeper = c.hello["ppid"]
        c.cmd("exit", code=3)
        rc, krc = run.wait(), wait_pid(keeper)
        self.check(rc == 1 and krc == 3,
                   "without -f, a failed start: zswapd returns 1, its keeper 3",
                   "zswapd %s, keeper %s\n%s" % (rc, krc, run.text()))


def main():
    if os.environ.get(CTL_ENV):
        child_main()
        return 0
    if len(sys.argv) != 2:
        print("usage: %s path/to/zswapd" % sys.argv[0], file=sys.stderr)
        return 2
    t = Test(sys.argv[1])
    start = time.monotonic()
    try:
        for fn in (t.test_restart, t.test_many, t.test_crash_loop, t.test_restart_signal,
                   t.test_clean_exit, t.test_start_failure, t.test_background,
                   t.test_background_failure):
            t.scenario(fn)
        reports = [r.text() for r in t.runs if "Sanitizer" in r.text() or "runtime error" in r.text()]
        t.check(not reports, "no sanitizer report from zswapd or its keeper", "".join(reports))
    finally:
        t.cleanup()
    print("%s: %d failed, %.1f s" % ("FAIL" if t.check.failed else "PASS", t.check.failed,
                                     time.monotonic() - start))
    return 1 if t.check.failed else 0


if __name__ == "__main__":
    sys.exit(main())
