#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""
kill_at_store.py - SIGKILLs zswapd at one exact moment of its work: as it
hands its fd store a descriptor whose name matches a pattern (sd_notify's
FDSTORE=1 with FDNAME=), before it does anything else.

Usage: kill_at_store.py [--before] PID REGEX [TIMEOUT]

zswapd has one thread.  This traces its system calls with ptrace: at the
entry of each sendmsg() it reads the message, and kills zswapd at the exit
of the first whose FDNAME= matches REGEX (the store has the descriptor),
or with --before at its entry (the store never gets it).  Prints "armed"
once it traces, "killed at NAME" when done, and exits 0; exits 1,
detached, if no such store comes within TIMEOUT seconds (default 30).

x86-64 only (the system call number and struct msghdr's layout).
"""
import ctypes
import os
import re
import signal
import struct
import sys
import time

SEIZE, INTERRUPT, SYSCALL, DETACH, GET_SYSCALL_INFO = 0x4206, 0x4207, 24, 17, 0x420E
O_TRACESYSGOOD = 1
EVENT_STOP = 128
INFO_ENTRY, INFO_EXIT = 1, 2
NR_SENDMSG = 46
WALL = 0x40000000

libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
libc.ptrace.restype = ctypes.c_long


def ptrace(req, pid, addr=0, data=0):
    if libc.ptrace(req, pid, addr, data) == -1:
        err = ctypes.get_errno()
        raise OSError(err, "ptrace %#x: %s" % (req, os.strerror(err)))


def syscall_info(pid):
    """(op, nr, args) of the system call pid is stopped in."""
    buf = ctypes.create_string_buffer(88)
    ptrace(GET_SYSCALL_INFO, pid, ctypes.sizeof(buf), ctypes.addressof(buf))
    op = buf.raw[0]
    nr, *args = struct.unpack_from("<7Q", buf.raw, 24)
    return op, nr, args


def stored_name(mem, msghdr):
    """FDNAME= of the sd_notify message at msghdr, or None."""
    try:
        iov, iovlen = struct.unpack("<QQ", os.pread(mem, 16, msghdr + 16))
        text = b""
        for i in range(min(iovlen, 4)):
            base, length = struct.unpack("<QQ", os.pread(mem, 16, iov + 16 * i))
            text += os.pread(mem, min(length, 4096), base)
    except OSError as e:
        return "(%s)" % e.strerror
    lines = text.decode(errors="replace").split("\n")
    if "FDSTORE=1" not in lines:
        return None
    return next((l[len("FDNAME="):] for l in lines if l.startswith("FDNAME=")), None)


def main():
    args = sys.argv[1:]
    before = args[:1] == ["--before"]
    if before:
        args = args[1:]
    pid, pattern = int(args[0]), re.compile(args[1])
    deadline = time.monotonic() + (float(args[2]) if len(args) > 2 else 30.0)
    mem = os.open("/proc/%d/mem" % pid, os.O_RDONLY)
    ptrace(SEIZE, pid, 0, O_TRACESYSGOOD)
    ptrace(INTERRUPT, pid)
    os.waitpid(pid, WALL)
    print("armed", flush=True)
    pending, sig, seen = None, 0, []
    while True:
        ptrace(SYSCALL, pid, 0, sig)
        sig = 0
        _, status = os.waitpid(pid, WALL)
        if not os.WIFSTOPPED(status):
            print("zswapd ended on its own", flush=True)
            return 1
        if os.WSTOPSIG(status) == signal.SIGTRAP | 0x80:
            op, nr, sargs = syscall_info(pid)
            if op == INFO_ENTRY:
                name = stored_name(mem, sargs[1]) if nr == NR_SENDMSG else None
                pending = name if name and pattern.search(name) else None
                if nr == NR_SENDMSG:
                    seen.append(name or "(not a store)")
                if pending and before:
                    break
            elif op == INFO_EXIT and pending:
                break
        elif status >> 16 != EVENT_STOP:
            sig = os.WSTOPSIG(status)  # a signal for zswapd: passed on
        if time.monotonic() > deadline:
            ptrace(DETACH, pid, 0, sig)
            print("no store matched %s; sendmsg() calls: %s" % (pattern.pattern, " ".join(seen)),
                  flush=True)
            return 1
    os.kill(pid, signal.SIGKILL)
    print("killed %s %s" % ("before" if before else "at", pending), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
